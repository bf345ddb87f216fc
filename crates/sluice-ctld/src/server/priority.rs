//! What `sprio` and `sshare` read (anyone may ask, as in Slurm without `PrivateData`).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::{now, App};

/// `GET /v1/priority`: the weights and every pending job's priority with its factors.
pub(super) async fn jobs(State(app): State<App>) -> Response {
    Json(app.ctl.lock().expect("lock").priority_report(now())).into_response()
}

/// `GET /v1/shares`: every association's fair-share figures.
pub(super) async fn shares(State(app): State<App>) -> Response {
    Json(app.ctl.lock().expect("lock").shares_report(now())).into_response()
}
