//! Slurm's metrics endpoints (`GET /metrics`, `/metrics/jobs`, `/metrics/nodes`,
//! `/metrics/partitions`, `/metrics/scheduler`, `/metrics/jobs-users-accts`) and
//! Sluice's own (`/metrics/sluice`), served where slurmctld serves them: on the
//! controller's own port (and its Unix socket), as plain `text/plain` answers to HTTP
//! GETs. The text is built by [`crate::metrics`].
//!
//! Who may read them is slurmctld's rule (`src/slurmctld/http.c`,
//! `_check_metrics_authorized`): with `MetricsType` set and no `MetricsAuthUsers`,
//! `PrivateData`, anyone who reaches the port, without a credential (the TCP
//! listener's gate lets exactly these GETs through, `tcp.rs`; nothing else). With
//! `MetricsAuthUsers`, or `PrivateData` (unless `MetricsParameters=ignore_private_data`),
//! a request must say who makes it, as every other request over TCP does (the cluster
//! key or munge credential; on the Unix socket, the peer's uid): root and the
//! controller's user may read them, and the users `MetricsAuthUsers` names. Anyone
//! else is refused (403, Slurm's `Operation not permitted`); a request without a
//! credential never gets past the gate (401). The index (`GET /metrics`) names the
//! endpoints and no figure: anyone may read it, as slurmctld's. Without `MetricsType`
//! the endpoints are off (404) and, over TCP, as closed as the rest.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::input::Request;
use super::{App, Peer};
use crate::metrics::{self, MetricSet, PartStats, UsersAccounts};

/// The type of every answer, as slurmctld's (`MIME_TYPE_TEXT`).
const TEXT: &str = "text/plain";

/// A caller, when the request says who (the Unix socket's peer, a TCP credential).
type Who = Option<Extension<ConnectInfo<Peer>>>;

/// A text answer.
fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, TEXT)], body).into_response()
}

/// slurmctld's refusal text for `path` failing with `why`.
fn failed(status: StatusCode, path: &str, why: &str) -> Response {
    text(
        status,
        format!("slurmctld HTTP server request for 'GET {path}':\nFailed: {why}\n"),
    )
}

/// The refusal when the caller may not read `path`.
fn refusal(app: &App, who: &Who, path: &str) -> Option<Response> {
    let m = &app.metrics;
    if !m.enabled {
        return Some(failed(
            StatusCode::NOT_FOUND,
            path,
            "metrics are off (slurm.conf sets no MetricsType=metrics/openmetrics)",
        ));
    }
    if !m.auth {
        return None;
    }
    let Some(Extension(ConnectInfo(peer))) = who else {
        return Some(failed(
            StatusCode::UNAUTHORIZED,
            path,
            "Protocol authentication error (request not signed)",
        ));
    };
    let caller = app.caller(*peer);
    let name = (!caller.admin && m.auth_users.is_some())
        .then(|| {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(peer.uid))
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .flatten();
    (!m.allows(caller.admin, name.as_deref()))
        .then(|| failed(StatusCode::FORBIDDEN, path, "Operation not permitted"))
}

/// The text of `set`.
fn answer(set: MetricSet) -> Response {
    text(StatusCode::OK, set.render())
}

/// The text `f` makes, made off the async workers when there are many jobs to look
/// at.
async fn off_loop(many: bool, f: impl FnOnce() -> MetricSet + Send + 'static) -> Response {
    if !many {
        return answer(f());
    }
    match tokio::task::spawn_blocking(move || f().render()).await {
        Ok(body) => text(StatusCode::OK, body),
        Err(e) => failed(
            StatusCode::INTERNAL_SERVER_ERROR,
            "/metrics",
            &e.to_string(),
        ),
    }
}

/// The loop's figures, or why not (the controller is stopping).
async fn loop_figures(app: &App, sluice: bool) -> Result<metrics::LoopFigures, String> {
    app.ask(|reply| Request::Metrics { sluice, reply })
        .await
        .map_err(|e| e.message)
}

/// The answer to `path` when the loop cannot give its figures.
fn unavailable(path: &str, why: &str) -> Response {
    failed(StatusCode::SERVICE_UNAVAILABLE, path, why)
}

/// Whether a listing of `n` jobs is worth a blocking thread.
fn many(n: usize) -> bool {
    n >= 1000
}

/// `GET /metrics`: the index, to whoever reaches it (as slurmctld's, which checks
/// nothing: it names the endpoints, no figure).
pub(super) async fn index() -> Response {
    text(StatusCode::OK, metrics::INDEX.to_string())
}

/// `GET /metrics/jobs`: from the snapshot, without the loop.
pub(super) async fn jobs(State(app): State<App>, who: Who) -> Response {
    if let Some(r) = refusal(&app, &who, "/metrics/jobs") {
        return r;
    }
    let listing = app.listing.latest();
    let now = super::now();
    off_loop(many(listing.len()), move || {
        let mut s = metrics::JobStats::default();
        listing.each_job_facts(now, |j| s.add(j));
        metrics::slurm::jobs(&s)
    })
    .await
}

/// `GET /metrics/jobs-users-accts`: from the snapshot, without the loop.
pub(super) async fn users_accounts(State(app): State<App>, who: Who) -> Response {
    if let Some(r) = refusal(&app, &who, "/metrics/jobs-users-accts") {
        return r;
    }
    let listing = app.listing.latest();
    let now = super::now();
    off_loop(many(listing.len()), move || {
        let mut ua = UsersAccounts::default();
        listing.each_job_facts(now, |j| ua.add(j));
        metrics::slurm::users_accounts(&ua)
    })
    .await
}

/// `GET /metrics/nodes`.
pub(super) async fn nodes(State(app): State<App>, who: Who) -> Response {
    let path = "/metrics/nodes";
    if let Some(r) = refusal(&app, &who, path) {
        return r;
    }
    match loop_figures(&app, false).await {
        Ok(f) => answer(metrics::slurm::nodes(&f.nodes)),
        Err(why) => unavailable(path, &why),
    }
}

/// `GET /metrics/partitions`: the nodes from the loop, the jobs from the snapshot.
pub(super) async fn partitions(State(app): State<App>, who: Who) -> Response {
    let path = "/metrics/partitions";
    if let Some(r) = refusal(&app, &who, path) {
        return r;
    }
    let figures = match loop_figures(&app, false).await {
        Ok(f) => f,
        Err(why) => return unavailable(path, &why),
    };
    let listing = app.listing.latest();
    let now = super::now();
    off_loop(many(listing.len()), move || {
        let mut parts: Vec<PartStats> = figures
            .partitions
            .iter()
            .map(|p| PartStats::new(p, &figures.nodes))
            .collect();
        let index: std::collections::HashMap<&str, usize> = figures
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        listing.each_job_facts(now, |j| {
            if let Some(&i) = index.get(j.partition) {
                parts[i].add_job(j);
            }
        });
        metrics::slurm::partitions(&parts)
    })
    .await
}

/// `GET /metrics/scheduler`: `sdiag`'s report.
pub(super) async fn scheduler(State(app): State<App>, who: Who) -> Response {
    let path = "/metrics/scheduler";
    if let Some(r) = refusal(&app, &who, path) {
        return r;
    }
    match app.ask(Request::Diag).await {
        Ok(r) => answer(metrics::slurm::scheduler(&super::diag::complete(&app, r))),
        Err(e) => unavailable(path, &e.message),
    }
}

/// `GET /metrics/sluice`: Sluice's own.
pub(super) async fn sluice(State(app): State<App>, who: Who) -> Response {
    let path = "/metrics/sluice";
    if let Some(r) = refusal(&app, &who, path) {
        return r;
    }
    match loop_figures(&app, true).await {
        Ok(f) => answer(metrics::sluice::metrics(&f)),
        Err(why) => unavailable(path, &why),
    }
}
