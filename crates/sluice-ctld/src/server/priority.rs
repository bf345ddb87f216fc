//! What `sprio` and `sshare` read (anyone may ask, as in Slurm without `PrivateData`).

use axum::extract::State;
use axum::response::Response;

use super::input::Request;
use super::routes::reply;
use super::App;

/// `GET /v1/priority`: the weights and every pending job's priority with its factors.
pub(super) async fn jobs(State(app): State<App>) -> Response {
    reply(app.ask(Request::Priority).await)
}

/// `GET /v1/shares`: every association's fair-share figures.
pub(super) async fn shares(State(app): State<App>) -> Response {
    reply(app.ask(Request::Shares).await)
}
