//! A standby controller's listener (`SlurmctldHost` listed more than once): while
//! another controller is active, this one answers every request on the controller's
//! port with Slurm's `ESLURM_IN_STANDBY_MODE` ([`ErrorCode::InStandby`], marked with
//! [`STANDBY_HEADER`] so that clients pass on to the next controller), after reading
//! its body; `scontrol ping` counts that answer as `UP`. One request it serves:
//! `POST /v1/takeover` from an operator (`scontrol takeover`), signed as any request
//! over TCP, which has the daemon ask the active controller to hand over to it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use sluice_proto::client::STANDBY_HEADER;
use sluice_proto::error::{ApiError, ErrorCode};
use sluice_proto::types::ErrorReply;
use tokio::sync::mpsc::UnboundedSender;

use super::tcp::{verify_signed, TcpGate};
use super::{now, refuse, Peer};

/// Serves the standby's answers on `listen` until `stop` completes; each operator's
/// takeover request is sent on `takeover`. `admin_uid` is the daemon's own user (root
/// is one too).
///
/// Errors: the address cannot be bound.
pub async fn serve(
    listen: SocketAddr,
    auth: &sluice_proto::auth::Scheme,
    admin_uid: u32,
    takeover: UnboundedSender<()>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let gate = Arc::new(TcpGate {
        gate: auth.gate(now()),
        metrics: false,
        open_metrics: false,
    });
    let signed = Router::new()
        .route(
            "/v1/takeover",
            post(move |ConnectInfo(peer): ConnectInfo<Peer>| async move {
                if peer.uid != 0 && peer.uid != admin_uid {
                    return refuse(ApiError::new(
                        ErrorCode::AccessDenied,
                        "Access/permission denied",
                    ));
                }
                let _ = takeover.send(());
                Json(serde_json::json!({})).into_response()
            }),
        )
        .layer(axum::middleware::from_fn_with_state(gate, verify_signed));
    let app = signed.fallback(|request: axum::extract::Request| async move {
        // Read before refusing: a refused client would otherwise see its write fail.
        let _ = axum::body::to_bytes(request.into_body(), 64 << 20).await;
        in_standby()
    });
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(stop)
    .await
}

/// Slurm's answer of a standby controller.
pub fn in_standby() -> Response {
    let mut r = (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(ErrorReply {
            error: "Controller is in standby mode".into(),
            code: Some(ErrorCode::InStandby),
        }),
    )
        .into_response();
    r.headers_mut()
        .insert(STANDBY_HEADER, HeaderValue::from_static("1"));
    r
}
