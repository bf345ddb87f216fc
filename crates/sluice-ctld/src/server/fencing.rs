//! A controller that finds it is no longer the active one steps down: its store's
//! write was refused for a newer fencing epoch, an agent refused its order for one, or
//! it lost its lease (see `sluice_store::lease`). What stepping down is — the daemon
//! starting again as a standby — is the daemon's, set once with [`on_step_down`];
//! without it (one controller, `sluice up`) the event is only logged.

use std::sync::{Arc, OnceLock};

/// What the daemon does to step down, given why.
pub type StepDown = Arc<dyn Fn(&str) + Send + Sync>;

static STEP_DOWN: OnceLock<StepDown> = OnceLock::new();

/// Sets what stepping down does (once per process; later calls change nothing).
pub fn on_step_down(f: StepDown) {
    let _ = STEP_DOWN.set(f);
}

/// This controller is no longer the active one, for `why`.
pub fn step_down(why: &str) {
    match STEP_DOWN.get() {
        Some(f) => f(why),
        None => tracing::error!("another controller is active ({why})"),
    }
}

/// Whether this controller is one of several (a daemon set [`on_step_down`]).
pub fn has_backups() -> bool {
    STEP_DOWN.get().is_some()
}

static HAND_OVER: OnceLock<tokio::sync::Notify> = OnceLock::new();

/// An operator asked this (active) controller to hand over to a backup (`scontrol
/// takeover`): the daemon stops it cleanly ([`hand_over_requested`]).
pub fn request_hand_over() {
    HAND_OVER.get_or_init(Default::default).notify_one();
}

/// Completes once a hand-over is asked for.
pub async fn hand_over_requested() {
    HAND_OVER.get_or_init(Default::default).notified().await
}

/// `POST /v1/step-down`: a super user's (or a backup's, for `scontrol takeover`) request
/// that this active controller stop cleanly — its writes flushed, its lease given up —
/// and stand by.
pub(super) async fn step_down_route(
    axum::extract::State(app): axum::extract::State<super::App>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<super::Peer>,
    // Read whole before answering, so that a refusal never meets a client still sending.
    _body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    use sluice_proto::error::ApiError;
    if !app.super_caller(peer).admin {
        return super::refuse(ApiError::not_super_user());
    }
    if !has_backups() {
        return super::refuse(ApiError::invalid(
            "This controller has no backup (SlurmctldHost is listed once)",
        ));
    }
    tracing::info!("asked to hand over to a backup controller");
    request_hand_over();
    axum::Json(serde_json::json!({})).into_response()
}

/// `POST /v1/takeover` at the active controller (`scontrol takeover` naming it): it is
/// active already, nothing to do.
pub(super) async fn already_active(
    axum::extract::State(app): axum::extract::State<super::App>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<super::Peer>,
    _body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !app.super_caller(peer).admin {
        return super::refuse(sluice_proto::error::ApiError::not_super_user());
    }
    axum::Json(serde_json::json!({})).into_response()
}
