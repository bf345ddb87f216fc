//! Tokens at the controller's door: `scontrol token` asks for one here, and the TCP
//! listener admits requests that carry one (see [`crate::token`]).
//!
//! A token speaks for the user its `sun` claim names, resolved to a uid and gid on the
//! controller's host; nothing in a request's body or query says who the caller is. A
//! token of root or the SlurmUser may speak for another user named in
//! `X-SLURM-USER-NAME` (as slurmrestd does for its clients); any other token only for
//! its own user.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use sluice_proto::error::{ApiError, ErrorCode, INVALID_TIME_LIMIT, INVALID_USER_ID};
use sluice_proto::token::{TokenReply, TokenRequest};

use super::rest::envelope;
use super::{now, routes::reply, App, Peer};
use crate::token::{TokenError, DEFAULT_LIFESPAN};

/// Marks a request the token gate admitted: the signed-request gate lets it pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct TokenAdmitted;

/// `X-SLURM-USER-TOKEN`.
const USER_TOKEN: &str = "x-slurm-user-token";
/// `X-SLURM-USER-NAME`.
const USER_NAME: &str = "x-slurm-user-name";

/// The longest lifespan asked for that is still a time (`lifespan=infinite`).
const INFINITE_LIFESPAN: i64 = i32::MAX as i64 - 1;

/// `scontrol token`: a token for the caller, or (for root and the SlurmUser) for the
/// user named, good for the lifespan asked (default 1800 s).
pub(super) async fn make(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<TokenRequest>,
) -> Response {
    reply(mint(&app, peer, req))
}

fn mint(app: &App, peer: Peer, req: TokenRequest) -> Result<TokenReply, ApiError> {
    let admin = app.caller(peer).admin;
    let Some(tokens) = &app.tokens else {
        return Err(ApiError::new(
            ErrorCode::PluginNotLoaded,
            sluice_proto::error::PLUGIN_NOT_LOADED,
        ));
    };
    if tokens.disable_creation && !admin {
        tracing::error!(
            "attempt to retrieve a token while token creation disabled UID={}",
            peer.uid
        );
        return Err(ApiError::access_denied());
    }
    let own = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(peer.uid))
        .ok()
        .flatten()
        .map(|u| u.name);
    let user = match (req.username, own) {
        (Some(u), _) if admin => u,
        (Some(u), Some(own)) if u == own => u,
        (Some(u), _) => {
            tracing::error!(
                "attempt to retrieve a token for a different user={u} by UID={}",
                peer.uid
            );
            return Err(ApiError::new(ErrorCode::InvalidUserId, INVALID_USER_ID));
        }
        (None, Some(own)) => own,
        (None, None) => {
            tracing::error!(
                "attempt to retrieve a token for a missing username by UID={}",
                peer.uid
            );
            return Err(ApiError::new(ErrorCode::InvalidUserId, INVALID_USER_ID));
        }
    };
    let lifespan = match req.lifespan.filter(|l| *l != 0) {
        Some(l) => l,
        None => tokens
            .max_lifespan
            .map_or(DEFAULT_LIFESPAN, |m| m.min(DEFAULT_LIFESPAN)),
    };
    if !(0..=INFINITE_LIFESPAN).contains(&lifespan) {
        return Err(ApiError::invalid(format!(
            "cannot issue token: requested lifespan {lifespan}s not supported"
        )));
    }
    if !admin && tokens.max_lifespan.is_some_and(|m| lifespan > m) {
        tracing::error!(
            "rejecting token lifespan {lifespan} for user:{user}[{}] requested, exceeds limit",
            peer.uid
        );
        return Err(ApiError::new(ErrorCode::Invalid, INVALID_TIME_LIMIT));
    }
    Ok(TokenReply {
        token: tokens.make(&user, lifespan, now()),
    })
}

/// The token a request carries: `X-SLURM-USER-TOKEN`, else `Authorization: Bearer`.
fn carried(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(USER_TOKEN)
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
        })
        .map(str::trim)
}

/// The second a refusal was last logged: refusals are logged at most once a second, so
/// that a stream of bad tokens cannot fill the log.
static LAST_LOGGED: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// A token's refusal: HTTP 401 with Slurm's error.
fn refused(app: &App, e: TokenError, why: &str) -> Response {
    let t = now();
    let last = LAST_LOGGED.load(std::sync::atomic::Ordering::Relaxed);
    if t > last
        && LAST_LOGGED
            .compare_exchange(
                last,
                t,
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_ok()
    {
        tracing::warn!("refused a token: {why}");
    }
    envelope::failure(
        &app.cluster_name,
        StatusCode::UNAUTHORIZED,
        envelope::Error::new(e.errno(), e.to_string(), "auth/jwt"),
    )
}

/// Admits a TCP request that carries a valid token, as the user it speaks for; one
/// without a token goes on to the signed-request gate.
pub(super) async fn admit(
    State(app): State<App>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // A service's stable address: an `Authorization` header there is the service's
    // (an API key), never a Slurm token (`services.rs`).
    if super::services::is_forwarded(request.uri().path()) {
        return next.run(request).await;
    }
    let Some(token) = carried(request.headers()).map(str::to_string) else {
        return next.run(request).await;
    };
    let Some(tokens) = &app.tokens else {
        return refused(&app, TokenError::Invalid, "auth/jwt is not configured");
    };
    let verified = match tokens.verify(&token, now()) {
        Ok(v) => v,
        Err(e) => return refused(&app, e, &e.to_string()),
    };
    let named = request
        .headers()
        .get(USER_NAME)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let lookup = |name: &str| nix::unistd::User::from_name(name).ok().flatten();
    let Some(holder) = lookup(&verified.user) else {
        return refused(
            &app,
            TokenError::Invalid,
            &format!("no user {} on this host", verified.user),
        );
    };
    let user = match named {
        Some(name) if name != verified.user => {
            let privileged = holder.uid.is_root() || holder.uid.as_raw() == app.own_uid;
            if !privileged {
                return refused(
                    &app,
                    TokenError::Invalid,
                    &format!(
                        "attempt to authenticate as alternate user {name} from non-SlurmUser {}",
                        verified.user
                    ),
                );
            }
            match lookup(&name) {
                Some(u) => u,
                None => {
                    return refused(&app, TokenError::Invalid, &format!("no user {name}"));
                }
            }
        }
        _ => holder,
    };
    request.extensions_mut().insert(ConnectInfo(Peer {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }));
    request.extensions_mut().insert(TokenAdmitted);
    next.run(request).await
}
