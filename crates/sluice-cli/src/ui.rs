//! The web dashboard, served two ways with the same pages:
//!
//! - by the controller on its TCP port (`/ui`), when tokens are on
//!   (`AuthAltTypes=auth/jwt`): each browser logs in with a token and every page is asked
//!   of the controller with it;
//! - by `sluice ui`, a small web server for the user who starts it, on this host
//!   (`127.0.0.1:8087` by default), asking as that user over the connection the Slurm
//!   commands use; whoever can reach its port could act as that user, so every request
//!   must carry the secret printed at start.
//!
//! Either way a page shows exactly what that user's `squeue`, `sinfo` and `sshare` would
//! (`PrivateData` included): the controller decides, from the token or the connection.
//! Pages are rendered on the server — no frontend toolchain, one line of script. Who may
//! open them is [`access`].

mod access;
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
use access::{Access, Session};
use sluice_proto::Client;

/// Options of `sluice ui`.
#[derive(Args, Debug)]
pub struct UiArgs {
    /// Where to listen (`ADDRESS:PORT`).
    #[arg(long, default_value = "127.0.0.1:8087")]
    pub listen: SocketAddr,
}

struct Ui {
    /// Who may open the pages, and as whom they ask.
    access: Access,
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn failure(status: StatusCode, who: &str, path: &str, message: &str) -> Response {
    let body = page::frame(
        "Error",
        path,
        who,
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
    session: Session,
    title: &str,
    path: &str,
    ask: impl FnOnce(&Client) -> Result<T, sluice_proto::ClientError> + Send + 'static,
    render: impl FnOnce(T) -> String,
) -> Response {
    let client = session.client;
    match blocking(move || ask(&client)).await {
        Ok(v) => html(page::frame(title, path, &session.who, &render(v))),
        Err(e) => refused(ui, &session.who, path, &e),
    }
}

/// The page for the controller's refusal `e`: the login form again when the browser's
/// token no longer opens it, else an error page.
fn refused(ui: &Ui, who: &str, path: &str, e: &sluice_proto::ClientError) -> Response {
    if ui.access.must_log_in_again(e) {
        return access::login_page(
            access::safe_next(path),
            Some("Your token was refused (it may have expired): log in again."),
        );
    }
    failure(StatusCode::BAD_GATEWAY, who, path, &describe(e))
}

/// Admits a request, or answers it (see [`Access::admit`]).
macro_rules! admit {
    ($ui:expr, $headers:expr, $uri:expr, $key:expr) => {
        match $ui.access.admit(&$headers, &$uri, $key) {
            Ok(s) => s,
            Err(r) => return *r,
        }
    };
}

async fn queue_page(
    State(ui): State<Arc<Ui>>,
    headers: HeaderMap,
    uri: Uri,
    Query(f): Query<queue::Filters>,
    Query(k): Query<KeyOnly>,
) -> Response {
    let session = admit!(ui, headers, uri, k.key.as_deref());
    serve_page(
        &ui,
        session,
        "Queue",
        "/ui",
        |c| c.get::<Vec<JobRecord>>("/v1/jobs?states=PENDING,RUNNING"),
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
    let session = admit!(ui, headers, uri, k.key.as_deref());
    serve_page(
        &ui,
        session,
        "Nodes and GPUs",
        "/ui/nodes",
        |c| {
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
    let session = admit!(ui, headers, uri, k.key.as_deref());
    serve_page(
        &ui,
        session,
        "Fair share",
        "/ui/shares",
        |c| c.get::<sluice_proto::priority::SharesReport>("/v1/shares"),
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
    let session = admit!(ui, headers, uri, k.key.as_deref());
    serve_page(
        &ui,
        session,
        "Reservations",
        "/ui/reservations",
        |c| c.get::<Vec<sluice_proto::reservations::ReservationRecord>>("/v1/reservations"),
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
    let session = admit!(ui, headers, uri, k.key.as_deref());
    let t = now();
    serve_page(
        &ui,
        session,
        "Last day",
        "/ui/history",
        move |c| {
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
    let session = admit!(ui, headers, uri, k.key.as_deref());
    // A job or one array task (`123_4`), as the commands take them.
    let Some(ids) =
        crate::slurm::common::parse_job_arg(&id).filter(|ids| ids.len() == 1 && !id.contains('.'))
    else {
        return failure(
            StatusCode::NOT_FOUND,
            &session.who,
            &path,
            &format!("Invalid job id specified: {id}"),
        );
    };
    let (job, task) = ids[0];
    let c = session.client;
    let answer = blocking(move || {
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
            &session.who,
            &job::render(&record, &explanation, &story),
        )),
        Ok(None) => failure(
            StatusCode::NOT_FOUND,
            &session.who,
            &path,
            &format!("Invalid job id specified: {id}"),
        ),
        Err(e) => refused(&ui, &session.who, &path, &e),
    }
}

#[derive(serde::Deserialize)]
struct Login {
    token: String,
    #[serde(default)]
    next: String,
}

/// `POST /ui/login` (the controller's dashboard): the token is tried on the controller,
/// which answers with its user's name; then the browser keeps both in cookies.
async fn login(State(ui): State<Arc<Ui>>, axum::Form(form): axum::Form<Login>) -> Response {
    let Access::Tokens { controller } = &ui.access else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let next = access::safe_next(&form.next).to_string();
    let Some(token) = access::pasted_token(&form.token).map(str::to_string) else {
        return access::login_page(&next, Some("That is not a token."));
    };
    let client = access::token_client(controller, &token);
    let answer = blocking(move || client.get::<serde_json::Value>("/slurm/v0.0.44/ping")).await;
    match answer {
        Ok(v) => {
            let user = v["meta"]["client"]["user"]
                .as_str()
                .filter(|u| !u.is_empty() && u.bytes().all(|b| b.is_ascii_graphic() && b != b';'))
                .unwrap_or("?")
                .to_string();
            let cookies = access::login_cookies(&token, &user);
            (axum::response::AppendHeaders(cookies), Redirect::to(&next)).into_response()
        }
        Err(sluice_proto::ClientError::Status { status: 401, .. }) => access::login_page(
            &next,
            Some("The controller refused that token (altered, of another cluster, or expired)."),
        ),
        Err(e) => failure(StatusCode::BAD_GATEWAY, "?", "/ui/login", &describe(&e)),
    }
}

/// `/ui/logout`: the cookies are forgotten.
async fn logout() -> Response {
    let cookies = access::logout_cookies();
    (axum::response::AppendHeaders(cookies), Redirect::to("/ui")).into_response()
}

/// The pages' routes for `ui`.
fn pages(ui: Arc<Ui>) -> axum::Router {
    axum::Router::new()
        .route("/ui", get(queue_page))
        .route("/ui/nodes", get(nodes_page))
        .route("/ui/shares", get(shares_page))
        .route("/ui/history", get(history_page))
        .route("/ui/reservations", get(reservations_page))
        .route("/ui/job/{id}", get(job_page))
        .route("/ui/login", axum::routing::post(login))
        .route("/ui/logout", get(logout))
        .with_state(ui)
}

/// The dashboard as the controller serves it on its TCP port (`/ui`), each browser
/// logged in with a token; the pages ask the controller at `controller` (its own
/// address) with that token.
pub fn controller_pages(controller: std::net::SocketAddr) -> axum::Router {
    // Asked on this host: the loopback address when the controller listens on all.
    let ip = if controller.ip().is_unspecified() {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        controller.ip()
    };
    let ui = Arc::new(Ui {
        access: Access::Tokens {
            controller: std::net::SocketAddr::new(ip, controller.port()).to_string(),
        },
    });
    pages(ui)
}

/// Runs `sluice ui` until interrupted.
pub fn run(args: UiArgs) -> i32 {
    // The controller must answer this user before a page is promised.
    if let Err(e) = controller().get::<serde_json::Value>("/v1/ping") {
        eprintln!("sluice ui: error: {}", describe(&e));
        return 1;
    }
    let who = crate::audit::user_name(nix::unistd::getuid().as_raw());
    let key = access::new_key();
    let ui = Arc::new(Ui {
        access: Access::Key {
            key: key.clone(),
            who: who.clone(),
        },
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
        println!("Sluice dashboard for {who}: http://{addr}/ui?key={key}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let app = pages(ui).route("/", get(|| async { Redirect::to("/ui") }));
        match axum::serve(listener, app)
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
