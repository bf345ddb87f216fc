//! `GET /v1/jobs/{id}/explain[?task=N][&suggest=false]`: what `sluice explain` prints.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path as UrlPath, Query, State};
use axum::response::Response;
use sluice_proto::explain::ExplainQuery;

use super::input::Request;
use super::routes::reply;
use super::{App, Peer};
use sluice_core::JobId;

/// The explanation of a job for the caller (whose uid comes from the socket); 404 with
/// Slurm's `Invalid job id specified` for a job the caller may not see. The loop
/// gathers what the controller knows; the core's simulations run off it, on a copy.
pub(super) async fn explain(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Query(q): Query<ExplainQuery>,
) -> Response {
    // What `PrivateData` hides an explanation does not hide from an operator by
    // `AdminLevel` either (it changes nothing: only sight depends on `admin` here).
    let caller = app.operator_caller(peer);
    let r = app
        .ask(|reply| Request::Explain {
            id: JobId(id),
            task: q.task,
            suggest: q.suggest.unwrap_or(true),
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}
