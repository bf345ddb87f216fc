//! `GET /v1/jobs/{id}/explain[?task=N][&suggest=false]`: what `sluice explain` prints.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use super::{error, now, App, Peer};

/// The optional array task, and whether to search for suggestions (default: yes).
#[derive(Deserialize, Default)]
pub(super) struct ExplainQuery {
    #[serde(default)]
    task: Option<u32>,
    #[serde(default)]
    suggest: Option<bool>,
}

/// The explanation of a job for the caller (whose uid comes from the socket); 404 with
/// Slurm's `Invalid job id specified` for a job the caller may not see.
pub(super) async fn explain(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Query(q): Query<ExplainQuery>,
) -> Response {
    let caller = app.caller(peer);
    // Forward simulations run on a copy of the scheduler: off the async threads, and
    // without the controller's lock.
    let result = tokio::task::spawn_blocking(move || {
        let work = app
            .ctl
            .lock()
            .expect("lock")
            .explain_begin(id, q.task, &caller, now(), q.suggest.unwrap_or(true))?
            .compute();
        Ok::<_, String>(app.ctl.lock().expect("lock").explain_finish(work, &caller))
    })
    .await
    .expect("explain does not panic");
    match result {
        Ok(e) => Json(e).into_response(),
        Err(m) => error(StatusCode::NOT_FOUND, m),
    }
}
