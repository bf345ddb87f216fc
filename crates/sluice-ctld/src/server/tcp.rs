//! The TCP listener's gate: only requests signed with the cluster key pass, and they
//! reach the handlers with the credential's uid and gid as the Unix socket gives the
//! kernel's.

use std::sync::Mutex;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::Response;
use sluice_proto::error::{ApiError, ErrorCode};

use super::{now, refuse, Peer};

/// The TCP listener's key and the credentials it has accepted.
pub(super) struct Signed {
    key: Vec<u8>,
    /// The replay guard: the only state of the gate, its own (not the controller's).
    seen: Mutex<sluice_proto::auth::ReplayGuard>,
    /// When this controller started (Unix seconds): credentials made before are refused,
    /// since the replay guard of an earlier run is gone.
    started: i64,
}

impl Signed {
    /// The gate for `key`, for a controller started at `started`.
    pub(super) fn new(key: Vec<u8>, started: i64) -> Self {
        Signed {
            key,
            seen: Mutex::new(sluice_proto::auth::ReplayGuard::default()),
            started,
        }
    }
}

/// Largest request body the TCP listener reads, bytes (Slurm's default largest batch
/// script is 4 MiB; a submission also carries its environment).
const MAX_SIGNED_BODY: usize = 8 << 20;

fn refused(e: sluice_proto::auth::AuthError) -> Response {
    tracing::warn!("refused a TCP request: {e}");
    refuse(ApiError::new(
        ErrorCode::Authentication,
        format!("Protocol authentication error ({e})"),
    ))
}

/// Admits a TCP request only with a valid, fresh, unused credential, and gives the
/// handlers its uid and gid as the Unix socket gives the kernel's: a `ConnectInfo<Peer>`.
pub(super) async fn verify_signed(
    State(signed): State<std::sync::Arc<Signed>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let header = parts
        .headers
        .get(sluice_proto::auth::AUTH_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Before reading a byte of the body: a request without a fresh credential from this
    // controller's lifetime costs nothing but its headers.
    let time = match header.as_deref().map(sluice_proto::auth::credential_time) {
        None => return refused(sluice_proto::auth::AuthError::Missing),
        Some(Err(e)) => return refused(e),
        Some(Ok(t)) => t,
    };
    if (time - now()).abs() > sluice_proto::auth::MAX_SKEW || time < signed.started {
        return refused(sluice_proto::auth::AuthError::Expired);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return refuse(ApiError::new(ErrorCode::TooLarge, "request too large"));
    };
    let header = header.as_deref();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let checked = header
        .ok_or(sluice_proto::auth::AuthError::Missing)
        .and_then(|h| {
            sluice_proto::auth::verify(&signed.key, h, parts.method.as_str(), path, &bytes, now())
        })
        .and_then(|c| {
            signed
                .seen
                .lock()
                .expect("the replay guard's lock is never held across a panic")
                .check(&c, now())
                .map(|()| c)
        });
    match checked {
        Ok(c) => {
            parts.extensions.insert(ConnectInfo(Peer {
                uid: c.uid,
                gid: c.gid,
            }));
            next.run(axum::extract::Request::from_parts(parts, bytes.into()))
                .await
        }
        Err(e) => refused(e),
    }
}
