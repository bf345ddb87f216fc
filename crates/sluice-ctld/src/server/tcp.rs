//! The TCP listener's gate: only requests signed with the cluster key (or carrying an
//! auth/jwt token, admitted before by `token.rs`) pass (commands on
//! other hosts, vouched for by their agents; the agents themselves), and they reach the
//! handlers with the credential's uid and gid as the Unix socket gives the kernel's.
//!
//! One exception, slurmctld's: with `MetricsType` set and nothing restricting who may
//! read them (no `MetricsAuthUsers`, no `PrivateData`, or `ignore_private_data`), a
//! `GET` of one of the metrics endpoints, by its exact path, passes without a
//! credential (a Prometheus scraping the controller's port); restricted, only the
//! index (`GET /metrics`, which names the endpoints and no figure) does. Sluice's
//! own: services' stable addresses (`/services/...`, `services.rs`) pass without one.
//! Any other method or path, and the figures when restricted, still need one.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::Response;
use sluice_proto::auth::{AuthError, Gate, AUTH_HEADER};
use sluice_proto::error::{ApiError, ErrorCode};

use super::{now, refuse, Peer};

/// Largest request body the TCP listener reads, bytes (Slurm's default largest batch
/// script is 4 MiB; a submission also carries its environment).
const MAX_SIGNED_BODY: usize = 8 << 20;

/// The refusal of `peer`'s request, logged at most once a minute per peer.
fn refused(gate: &Gate, peer: Option<SocketAddr>, e: AuthError) -> Response {
    let from = peer.map_or_else(|| "an unknown peer".to_string(), |p| p.ip().to_string());
    if gate.should_log(&from, now()) {
        tracing::warn!("refused a request from {from}: Protocol authentication error ({e})");
    }
    refuse(ApiError::new(
        ErrorCode::Authentication,
        format!("Protocol authentication error ({e})"),
    ))
}

/// The gate's state: the credential check, and whether the metrics are open.
pub(super) struct TcpGate {
    /// Checks credentials.
    pub gate: Gate,
    /// `MetricsType` is set: `GET /metrics` (the index) passes without a credential.
    pub metrics: bool,
    /// ...and nothing restricts who reads them: every metrics `GET` does.
    pub open_metrics: bool,
}

/// Whether `method` on `path` is a metrics read (the endpoints' exact paths).
pub(super) fn is_metrics_read(method: &axum::http::Method, path: &str) -> bool {
    method == axum::http::Method::GET && crate::metrics::is_endpoint(path)
}

/// Admits a TCP request only with a valid, fresh, unused credential, and gives the
/// handlers its uid and gid as the Unix socket gives the kernel's: a `ConnectInfo<Peer>`.
/// A metrics read passes without one when the metrics are open (no `Peer` then).
pub(super) async fn verify_signed(
    State(tcp): State<Arc<TcpGate>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // Admitted by its token (`token.rs`), with its user as the peer.
    if request
        .extensions()
        .get::<super::token::TokenAdmitted>()
        .is_some()
    {
        return next.run(request).await;
    }
    let path = request.uri().path();
    // A service's stable address: its clients hold no credential (`services.rs`).
    if super::services::is_forwarded(path) {
        return next.run(request).await;
    }
    if is_metrics_read(request.method(), path)
        && (tcp.open_metrics || (tcp.metrics && path == "/metrics"))
    {
        return next.run(request).await;
    }
    let gate = &tcp.gate;
    let (mut parts, body) = request.into_parts();
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let header = parts
        .headers
        .get(AUTH_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Before reading a byte of the body: a request without a fresh credential from this
    // controller's lifetime costs nothing but its headers.
    if let Err(e) = gate.precheck(header.as_deref(), now()) {
        return refused(gate, peer, e);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return refuse(ApiError::new(ErrorCode::TooLarge, "request too large"));
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let method = parts.method.as_str().to_string();
    let path = path.to_string();
    let admitted = if gate.is_munge() {
        // munged decodes in a process of its own: not on the runtime's threads.
        let (t, b) = (tcp.clone(), bytes.clone());
        tokio::task::spawn_blocking(move || {
            t.gate.admit(header.as_deref(), &method, &path, &b, now())
        })
        .await
        .unwrap_or_else(|e| Err(AuthError::Munge(e.to_string())))
    } else {
        gate.admit(header.as_deref(), &method, &path, &bytes, now())
    };
    match admitted {
        Ok(c) => {
            parts.extensions.insert(ConnectInfo(Peer {
                uid: c.uid,
                gid: c.gid,
            }));
            next.run(axum::extract::Request::from_parts(parts, bytes.into()))
                .await
        }
        Err(e) => refused(gate, peer, e),
    }
}
