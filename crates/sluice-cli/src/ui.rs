//! `sluice ui`: the web dashboard. A small web server for the user who starts it, on
//! this host (`127.0.0.1:8087` by default): it asks the controller as that user, over
//! the same connection the Slurm commands use, so that a page shows exactly what that
//! user's `squeue`, `sinfo` and `sshare` would (`PrivateData` included), and renders
//! the pages on the server — no frontend toolchain, one line of script.
//!
//! Whoever can reach the port could act as that user, so every request must carry the
//! secret printed in the address at start (`?key=...`, then kept in a same-site,
//! HTTP-only cookie): another user of the host cannot borrow the identity.

mod history;
mod job;
mod nodes;
mod page;
mod queue;
mod reservations;
mod shares;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use clap::Args;
use sluice_proto::types::{JobRecord, NodeInfo};

use crate::slurm::common::{controller, describe};

/// Options of `sluice ui`.
#[derive(Args, Debug)]
pub struct UiArgs {
    /// Where to listen (`ADDRESS:PORT`).
    #[arg(long, default_value = "127.0.0.1:8087")]
    pub listen: SocketAddr,
}

/// The cookie that carries the secret.
const COOKIE: &str = "sluice_ui";

struct Ui {
    /// The secret every request must show.
    key: String,
    /// Whose identity the pages are asked with.
    who: String,
}

/// A fresh secret: 32 random bytes in hex.
fn new_key() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `headers` carry the secret in the cookie.
fn has_cookie(headers: &HeaderMap, key: &str) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(name, value)| name == COOKIE && constant_time_eq(value.as_bytes(), key.as_bytes()))
}

/// Compares without leaving the length of the common prefix in the time taken.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `uri` without its `key` parameter: where the browser goes once the key is a cookie.
fn without_key(uri: &Uri) -> String {
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("key="))
        .collect();
    if rest.is_empty() {
        uri.path().to_string()
    } else {
        format!("{}?{}", uri.path(), rest.join("&"))
    }
}

/// The refusal of a request, or `None` when it shows the cookie: a redirect that sets
/// the cookie when the address carries the key (to the same page, without the key),
/// else 401.
fn admit(ui: &Ui, headers: &HeaderMap, uri: &Uri, key: Option<&str>) -> Option<Response> {
    if let Some(k) = key {
        if constant_time_eq(k.as_bytes(), ui.key.as_bytes()) {
            let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", ui.key);
            let to = without_key(uri);
            return Some(([(header::SET_COOKIE, cookie)], Redirect::to(&to)).into_response());
        }
    }
    if has_cookie(headers, &ui.key) {
        return None;
    }
    Some((
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><title>Sluice</title><p>Open the address that <code>sluice ui</code> printed when it started: it carries the key to this dashboard.</p>\n",
    )
        .into_response())
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn failure(status: StatusCode, ui: &Ui, path: &str, message: &str) -> Response {
    let body = page::frame(
        "Error",
        path,
        &ui.who,
        &format!("<p class=\"error\">{}</p>", page::esc(message)),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Runs `f` (blocking requests to the controller) off the server's threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("a page's requests do not panic")
}

#[derive(serde::Deserialize)]
struct KeyOnly {
    key: Option<String>,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The page `title` at `path`: `render` makes its body from what `ask` gets from the
/// controller (off the server's threads); the controller's refusal becomes an error page.
async fn serve_page<T: Send + 'static>(
    ui: &Ui,
    title: &str,
    path: &str,
    ask: impl FnOnce() -> Result<T, sluice_proto::ClientError> + Send + 'static,
    render: impl FnOnce(T) -> String,
) -> Response {
    match blocking(ask).await {
        Ok(v) => html(page::frame(title, path, &ui.who, &render(v))),
        Err(e) => failure(StatusCode::BAD_GATEWAY, ui, path, &describe(&e)),
    }
}

async fn queue_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(f): Query<queue::Filters>,
    Query(k): Query<KeyOnly>,
) -> Response {
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    serve_page(
        &ui,
        "Queue",
        "/ui",
        || controller().get::<Vec<JobRecord>>("/v1/jobs?states=PENDING,RUNNING"),
        |jobs| queue::render(&jobs, &f, now()),
    )
    .await
}

async fn nodes_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(k): Query<KeyOnly>,
) -> Response {
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    serve_page(
        &ui,
        "Nodes and GPUs",
        "/ui/nodes",
        || {
            let c = controller();
            Ok((
                c.get::<Vec<NodeInfo>>("/v1/nodes")?,
                c.get::<Vec<JobRecord>>("/v1/jobs?states=PENDING,RUNNING")?,
            ))
        },
        |(nodes, jobs)| nodes::render(&nodes, &jobs),
    )
    .await
}

async fn shares_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(k): Query<KeyOnly>,
) -> Response {
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    serve_page(
        &ui,
        "Fair share",
        "/ui/shares",
        || controller().get::<sluice_proto::priority::SharesReport>("/v1/shares"),
        |r| shares::render(&r),
    )
    .await
}

async fn reservations_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(k): Query<KeyOnly>,
) -> Response {
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    serve_page(
        &ui,
        "Reservations",
        "/ui/reservations",
        || {
            controller()
                .get::<Vec<sluice_proto::reservations::ReservationRecord>>("/v1/reservations")
        },
        |r| reservations::render(&r, now()),
    )
    .await
}

async fn history_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(k): Query<KeyOnly>,
) -> Response {
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    let t = now();
    serve_page(
        &ui,
        "Last day",
        "/ui/history",
        move || {
            let c = controller();
            let query = sluice_proto::types::AccountingQuery {
                since: Some(t - history::SPAN),
                ..Default::default()
            };
            let acct: sluice_proto::types::Accounting = c.post("/v1/accounting", &query)?;
            let nodes: Vec<NodeInfo> = c.get("/v1/nodes")?;
            Ok((acct.jobs, nodes))
        },
        |(jobs, nodes)| {
            let cpus = nodes.iter().map(|n| n.cpus).sum();
            let gpus = nodes.iter().map(|n| nodes::gpu_total(&n.gres)).sum();
            history::render(&jobs, cpus, gpus, t)
        },
    )
    .await
}

async fn job_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Path(id): Path<String>,
    Query(k): Query<KeyOnly>,
) -> Response {
    let path = format!("/ui/job/{}", page::esc(&id));
    if let Some(r) = admit(&ui, &headers, &uri, k.key.as_deref()) {
        return r;
    }
    // A job or one array task (`123_4`), as the commands take them.
    let Some(ids) =
        crate::slurm::common::parse_job_arg(&id).filter(|ids| ids.len() == 1 && !id.contains('.'))
    else {
        return failure(
            StatusCode::NOT_FOUND,
            &ui,
            &path,
            &format!("Invalid job id specified: {id}"),
        );
    };
    let (job, task) = ids[0];
    let answer = blocking(move || {
        let c = controller();
        let query = match task {
            Some(t) => format!("{job}_{t}"),
            None => job.to_string(),
        };
        let records: Vec<JobRecord> = c.get(&format!("/v1/jobs?jobs={query}"))?;
        let Some(record) = records.into_iter().next() else {
            return Ok(None);
        };
        let explain_path = match task {
            Some(t) => format!("/v1/jobs/{job}/explain?task={t}&suggest=false"),
            None => format!("/v1/jobs/{job}/explain?suggest=false"),
        };
        let explanation = c
            .get::<sluice_proto::explain::Explanation>(&explain_path)
            .map(|e| {
                format!(
                    "{}{}",
                    crate::explain::render_head(&e),
                    crate::explain::render_history(&e)
                )
            })
            .unwrap_or_default();
        let audit = sluice_proto::audit::AuditQuery {
            job: Some(record.id),
            ..Default::default()
        };
        let story = c
            .get::<sluice_proto::audit::AuditReply>(&format!(
                "/v1/audit?{}",
                audit.to_query_string()
            ))
            .map(|r| crate::audit::story(&r, false, &crate::audit::user_name))
            .unwrap_or_default();
        Ok::<_, sluice_proto::ClientError>(Some((record, explanation, story)))
    })
    .await;
    match answer {
        Ok(Some((record, explanation, story))) => html(page::frame(
            &format!("Job {}", queue::display_id(&record)),
            &path,
            &ui.who,
            &job::render(&record, &explanation, &story),
        )),
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            &ui,
            &path,
            &format!("Invalid job id specified: {id}"),
        ),
        Err(e) => failure(StatusCode::BAD_GATEWAY, &ui, &path, &describe(&e)),
    }
}

/// The dashboard's routes for `ui`.
fn router(ui: Arc<Ui>) -> axum::Router {
    axum::Router::new()
        .route("/", get(|| async { Redirect::to("/ui") }))
        .route("/ui", get(queue_page))
        .route("/ui/nodes", get(nodes_page))
        .route("/ui/shares", get(shares_page))
        .route("/ui/history", get(history_page))
        .route("/ui/reservations", get(reservations_page))
        .route("/ui/job/{id}", get(job_page))
        .with_state(ui)
}

/// Runs `sluice ui` until interrupted.
pub fn run(args: UiArgs) -> i32 {
    // The controller must answer this user before a page is promised.
    if let Err(e) = controller().get::<serde_json::Value>("/v1/ping") {
        eprintln!("sluice ui: error: {}", describe(&e));
        return 1;
    }
    let who = crate::audit::user_name(nix::unistd::getuid().as_raw());
    let ui = Arc::new(Ui {
        key: new_key(),
        who,
    });
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("sluice ui: error: cannot listen on {}: {e}", args.listen);
                return 1;
            }
        };
        let addr = listener.local_addr().unwrap_or(args.listen);
        println!(
            "Sluice dashboard for {}: http://{addr}/ui?key={}",
            ui.who, ui.key
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match axum::serve(listener, router(ui))
            .with_graceful_shutdown(shutdown)
            .await
        {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sluice ui: error: {e}");
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ui() -> Ui {
        Ui {
            key: "k3y".into(),
            who: "alice".into(),
        }
    }

    #[test]
    fn only_the_printed_key_or_its_cookie_opens_the_dashboard() {
        let ui = ui();
        let mut headers = HeaderMap::new();
        let at = |u: &str| u.parse::<Uri>().unwrap();
        let refused = admit(&ui, &headers, &at("/ui"), None).unwrap();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let wrong = admit(&ui, &headers, &at("/ui?key=k3z"), Some("k3z")).unwrap();
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        let filtered = admit(
            &ui,
            &headers,
            &at("/ui?user=bob&key=k3y&partition=gpu"),
            Some("k3y"),
        );
        assert_eq!(
            filtered.unwrap().headers()[header::LOCATION],
            "/ui?user=bob&partition=gpu"
        );
        let welcomed = admit(&ui, &headers, &at("/ui/nodes?key=k3y"), Some("k3y")).unwrap();
        assert_eq!(welcomed.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            welcomed.headers()[header::LOCATION],
            "/ui/nodes",
            "the key leaves the address"
        );
        assert_eq!(
            welcomed.headers()[header::SET_COOKIE],
            "sluice_ui=k3y; HttpOnly; SameSite=Strict; Path=/"
        );
        headers.insert(header::COOKIE, "other=1; sluice_ui=k3y".parse().unwrap());
        assert!(admit(&ui, &headers, &at("/ui"), None).is_none());
        headers.insert(header::COOKIE, "sluice_ui=k3".parse().unwrap());
        assert!(admit(&ui, &headers, &at("/ui"), None).is_some());
    }

    #[test]
    fn keys_are_fresh_and_long() {
        let (a, b) = (new_key(), new_key());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
