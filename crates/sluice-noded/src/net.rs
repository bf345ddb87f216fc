//! An agent on a host of its own: its TCP listener, where only requests signed with the
//! cluster key pass (the controller's orders, `srun`'s tasks, vouched for by the
//! caller's own agent), and its vouching socket, where local callers get credentials
//! for their own uid (the munged model: see [`sluice_proto::auth`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::connect_info::{self, ConnectInfo};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use sluice_proto::auth::{AuthError, Gate, VouchRequest, AUTH_HEADER, VOUCH_PATH};
use sluice_proto::error::ErrorCode;
use tokio::net::UnixListener;

use crate::{error, now, Peer};

/// Largest request body the TCP listener reads, bytes (a step's order carries srun's
/// environment; a chunk of its input is at most 64 KiB).
const MAX_SIGNED_BODY: usize = 8 << 20;

/// The refusal of `peer`'s request, logged at most once a minute per peer.
fn refused(gate: &Gate, node: &str, peer: Option<SocketAddr>, e: AuthError) -> Response {
    let from = peer.map_or_else(|| "an unknown peer".to_string(), |p| p.ip().to_string());
    if gate.should_log(&from, now()) {
        tracing::warn!(
            "{node}: refused a request from {from}: Protocol authentication error ({e})"
        );
    }
    error(
        ErrorCode::Authentication,
        format!("Protocol authentication error ({e})"),
    )
}

/// The gate's state: the gate and whose agent it guards (for the log).
pub(crate) struct Guard {
    pub(crate) gate: Gate,
    pub(crate) node: String,
}

/// Admits a TCP request only with a valid, fresh, unused credential, and gives the
/// handlers its uid as the Unix socket gives the kernel's: a `ConnectInfo<Peer>`.
pub(crate) async fn verify_signed(
    State(guard): State<Arc<Guard>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
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
    if let Err(e) = guard.gate.precheck(header.as_deref(), now()) {
        return refused(&guard.gate, &guard.node, peer, e);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return error(ErrorCode::TooLarge, "request too large");
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let method = parts.method.as_str().to_string();
    let path = path.to_string();
    let admitted = if guard.gate.is_munge() {
        // munged decodes in a process of its own: not on the runtime's threads.
        let (g, b) = (guard.clone(), bytes.clone());
        tokio::task::spawn_blocking(move || {
            g.gate.admit(header.as_deref(), &method, &path, &b, now())
        })
        .await
        .unwrap_or_else(|e| Err(AuthError::Munge(e.to_string())))
    } else {
        guard
            .gate
            .admit(header.as_deref(), &method, &path, &bytes, now())
    };
    match admitted {
        Ok(c) => {
            parts.extensions.insert(ConnectInfo(Peer { uid: c.uid }));
            next.run(axum::extract::Request::from_parts(parts, bytes.into()))
                .await
        }
        Err(e) => refused(&guard.gate, &guard.node, peer, e),
    }
}

/// A local caller of the vouching socket, as the kernel says.
#[derive(Clone, Copy, Debug)]
struct Caller {
    uid: u32,
    gid: u32,
}

impl connect_info::Connected<axum::serve::IncomingStream<'_, UnixListener>> for Caller {
    fn connect_info(stream: axum::serve::IncomingStream<'_, UnixListener>) -> Self {
        match stream.io().peer_cred() {
            Ok(c) => Caller {
                uid: c.uid(),
                gid: c.gid(),
            },
            // Nobody: a credential for a uid that owns nothing.
            Err(_) => Caller {
                uid: u32::MAX - 1,
                gid: u32::MAX - 1,
            },
        }
    }
}

struct Voucher {
    key: Vec<u8>,
    node: String,
}

async fn credential(
    State(v): State<Arc<Voucher>>,
    ConnectInfo(caller): ConnectInfo<Caller>,
    Json(req): Json<VouchRequest>,
) -> Response {
    match sluice_proto::auth::vouch(&v.key, caller.uid, caller.gid, &req, now()) {
        Ok(c) => {
            tracing::debug!(
                "{}: vouched for uid {} gid {}: {} {}",
                v.node,
                caller.uid,
                caller.gid,
                req.method,
                req.path
            );
            Json(c).into_response()
        }
        Err(e) => error(ErrorCode::Invalid, e.to_string()),
    }
}

/// Whether a live process answers on Unix socket `path`.
fn answered(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// Serves the vouching socket at `path` for node `node`'s agent, signing with `key`,
/// until `stop`; `Ok(false)` without serving when another agent of this host already
/// does (several agents per host share one).
///
/// Errors: the socket cannot be made.
pub(crate) async fn serve_vouching(
    path: PathBuf,
    key: Vec<u8>,
    node: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<bool> {
    if answered(&path) {
        tracing::info!(
            "{node}: another agent of this host vouches for local callers at {}",
            path.display()
        );
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    use std::os::unix::fs::PermissionsExt;
    // Any local user may ask: who they are comes from the socket.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
    tracing::info!("{node}: vouching for local callers at {}", path.display());
    let app = Router::new()
        .route(VOUCH_PATH, post(credential))
        .with_state(Arc::new(Voucher {
            key,
            node: node.clone(),
        }));
    let mut stop = stop;
    let served = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<Caller>(),
    )
    .with_graceful_shutdown(async move {
        let _ = stop.wait_for(|s| *s).await;
    })
    .await;
    let _ = std::fs::remove_file(&path);
    served.map(|()| true)
}
