//! The stable address of service jobs: `http://HOST:PORT/services/NAME/REST` on the
//! controller's TCP listener is forwarded to `http://NODE:SPORT/REST`, wherever the
//! live service named `NAME` runs now (its job's first node, the port it declared),
//! so that clients keep one URL across restarts and moves.
//!
//! ```text
//!  client ──► :6817 /services/NAME/REST ──► snapshot: NAME ─► (node address, port)
//!                 (no credential: outside the gate)        └─► NODE:SPORT /REST
//! ```
//!
//! Served beside the REST API and the dashboard, let through the commands' gates
//! without a credential ([`is_forwarded`]): a service's clients hold no cluster
//! credential. The routes are only `/services/...`; everything else on the port still
//! needs one. The service is looked up in the
//! snapshot the loop publishes, never by asking the loop. While the service runs
//! nowhere (restarting, requeued, moving) or its port does not answer, a request is
//! held up to [`HOLD`] for it to come back, then answered 503 with `Retry-After`; a
//! name no job carries is answered 404.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use crate::state::listing::{Listing, ServiceAt, ServiceTarget};

mod forward;
mod headers;
mod path;
mod tcp;

pub(super) use tcp::serve_tcp_ports;

/// How long a request waits for its service to come back.
pub const HOLD: Duration = Duration::from_secs(5);

/// How often the snapshot is read again while waiting.
const POLL: Duration = Duration::from_millis(100);

/// A connection attempt's longest wait (a node that does not answer at all).
const CONNECT: Duration = Duration::from_secs(1);

/// What a 503 tells the client to wait before asking again, seconds.
const RETRY_AFTER: &str = "5";

/// The routes of the stable addresses, for the TCP listener.
pub(super) fn router(app: super::App) -> axum::Router {
    axum::Router::new()
        .route("/services", any(forward_request))
        .route("/services/", any(forward_request))
        .route("/services/{*rest}", any(forward_request))
        .with_state(app)
}

/// Whether a request for `path` is one of the stable addresses': the TCP gates
/// (`tcp.rs`, `token.rs`) let these through without a credential, and with any
/// `Authorization` header (a service's API key is no Slurm token).
pub(super) fn is_forwarded(path: &str) -> bool {
    path == "/services" || path.starts_with(path::PREFIX)
}

/// Where the stable addresses start (`http://HOST:PORT`) for a controller listening on
/// `listen`: its address, or, listening on every address, the first `SlurmctldHost`'s
/// name (else this host's).
pub(super) fn base(listen: SocketAddr, net: &sluice_conf::net_conf::NetConf) -> String {
    let ip = listen.ip();
    let host = if !ip.is_unspecified() {
        match ip {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        }
    } else if let Some(c) = net.controllers.first() {
        c.name.clone()
    } else {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into())
    };
    format!("http://{host}:{}", listen.port())
}

fn plain(status: StatusCode, text: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text + "\n",
    )
        .into_response()
}

fn unavailable(name: &str, why: &str) -> Response {
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("service {name}: {why}"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER));
    r
}

/// Forwards one request to the service its path names.
async fn forward_request(State(app): State<super::App>, req: Request) -> Response {
    let client = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let (name, target) = match path::map(req.uri().path(), req.uri().query()) {
        path::Mapped::NoName => {
            return plain(
                StatusCode::NOT_FOUND,
                "no service named: use /services/NAME/".into(),
            )
        }
        path::Mapped::AddSlash(to) => {
            return (StatusCode::PERMANENT_REDIRECT, [(header::LOCATION, to)]).into_response()
        }
        path::Mapped::Forward { name, target } => (name.to_string(), target),
    };
    let Some((to, stream)) = reach(&app, |l| l.service(&name)).await else {
        return match app.listing.latest().service(&name) {
            ServiceAt::Unknown => plain(StatusCode::NOT_FOUND, format!("no service {name}")),
            ServiceAt::NoPort => plain(
                StatusCode::NOT_FOUND,
                format!("service {name} declares no port it is forwarded to (--port)"),
            ),
            ServiceAt::Ended => unavailable(&name, "ended"),
            ServiceAt::Away => unavailable(&name, "not running now"),
            ServiceAt::Live(_) => unavailable(&name, "its port does not answer"),
        };
    };
    let authority = if to.host.contains(':') {
        format!("[{}]:{}", to.host, to.port)
    } else {
        format!("{}:{}", to.host, to.port)
    };
    let (mut parts, body) = req.into_parts();
    let Ok(uri) = Uri::builder().path_and_query(target).build() else {
        return plain(StatusCode::BAD_REQUEST, "bad request target".into());
    };
    parts.uri = uri;
    parts.version = axum::http::Version::HTTP_11;
    parts.headers = headers::to_service(
        std::mem::take(&mut parts.headers),
        client,
        &authority,
        &path::prefix_of(&name),
    );
    match forward::exchange(stream, Request::from_parts(parts, body)).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!("service {name} (job {}): {e}", to.job);
            plain(
                StatusCode::BAD_GATEWAY,
                format!("service {name}: no answer ({e})"),
            )
        }
    }
}

/// A connection to the service `find` finds where it runs now, waiting up to [`HOLD`]
/// for it to run somewhere and answer; `None` when it does not (or never will: an
/// unknown name, an ended service, no port).
async fn reach(
    app: &Arc<super::Shared>,
    find: impl Fn(&Listing) -> ServiceAt,
) -> Option<(ServiceTarget, tokio::net::TcpStream)> {
    let deadline = Instant::now() + HOLD;
    loop {
        let found = find(&app.listing.latest());
        match found {
            ServiceAt::Live(to) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if let Some(s) = forward::connect(&to.host, to.port, left.min(CONNECT)).await {
                    return Some((to, s));
                }
            }
            ServiceAt::Away => {}
            ServiceAt::Unknown | ServiceAt::Ended | ServiceAt::NoPort => return None,
        }
        if Instant::now() + POLL >= deadline {
            return None;
        }
        tokio::time::sleep(POLL).await;
    }
}
