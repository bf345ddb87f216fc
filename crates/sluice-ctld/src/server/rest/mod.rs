//! Slurm's REST API (`/slurm/v0.0.44/...`, the shapes of Slurm 25.11's data parser
//! v0.0.44), served by the controller itself on its socket and TCP listener: what
//! slurmrestd serves, without a daemon in between.
//!
//! Handlers are thin, as the controller's own routes: they read the published
//! snapshot ([`crate::state::listing`]) or ask the loop, with the caller from the
//! connection (the socket's peer, or the token or credential the TCP listener
//! admitted), never from a body field, and answer in Slurm's envelope
//! ([`envelope`]). One file per resource.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{any, get, post, MethodRouter};
use axum::Router;
use serde_json::{Map, Value};

use super::{App, Peer};
use envelope::{errno, Client, Error};

mod changes;
mod db;
mod db_accounts;
mod db_associations;
mod db_clusters;
mod db_jobs;
mod db_qos;
mod db_step_usage;
mod db_tres;
mod db_users;
mod diag;
pub(super) mod envelope;
mod job_update;
mod jobs;
mod jobs_kill;
mod node_update;
mod nodes;
pub mod openapi;
mod partitions;
mod ping;
mod reservations;
mod shared_list;
mod shares;
mod submit;

/// Largest body read, bytes (as the TCP listener's limit for signed requests).
const MAX_BODY: usize = 8 << 20;

/// Every route of the API; any other path under `/slurm/` is unknown.
pub(super) fn router() -> Router<App> {
    routes().router.method_not_allowed_fallback(wrong_method)
}

/// The paths the router serves (for the check that the OpenAPI document lists each).
#[cfg(test)]
fn route_paths() -> Vec<&'static str> {
    routes().paths
}

/// A router that remembers the paths it was given.
#[derive(Default)]
struct Routes {
    router: Router<App>,
    paths: Vec<&'static str>,
}

impl Routes {
    /// These routes with `more`'s added (another file's routes).
    fn then(self, more: impl FnOnce(Routes) -> Routes) -> Routes {
        more(self)
    }

    fn route(mut self, path: &'static str, method: MethodRouter<App>) -> Routes {
        self.router = self.router.route(path, method);
        self.paths.push(path);
        self
    }
}

fn routes() -> Routes {
    let mut r = Routes::default();
    for path in openapi::PATHS {
        r = r.route(path, get(openapi::serve));
    }
    r.route("/slurm/v0.0.44/ping", get(ping::ping))
        .route("/slurm/v0.0.44/diag", get(diag::diag))
        .route(
            "/slurm/v0.0.44/jobs",
            get(jobs::list).delete(jobs_kill::kill),
        )
        .route("/slurm/v0.0.44/job/submit", post(submit::submit))
        .route(
            "/slurm/v0.0.44/job/{id}",
            get(jobs::one).delete(jobs::cancel).post(job_update::update),
        )
        .route("/slurm/v0.0.44/nodes", get(nodes::list))
        .route(
            "/slurm/v0.0.44/node/{name}",
            get(nodes::one).post(node_update::update),
        )
        .route("/slurm/v0.0.44/partitions", get(partitions::list))
        .route("/slurm/v0.0.44/partition/{name}", get(partitions::one))
        .route("/slurm/v0.0.44/reservations", get(reservations::list))
        .route("/slurm/v0.0.44/reservation/{name}", get(reservations::one))
        .route("/slurm/v0.0.44/shares", get(shares::list))
        .route("/slurm/{*rest}", any(unknown))
        .then(db::routes)
}

/// What every handler knows of its request: the cluster and the caller.
pub(super) struct Ctx {
    app: App,
    peer: Peer,
    client: Client,
}

impl FromRequestParts<App> for Ctx {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<Peer>>()
            .map(|c| c.0)
            // No connection information: nobody.
            .unwrap_or(Peer {
                uid: u32::MAX - 1,
                gid: u32::MAX - 1,
            });
        let source = parts
            .extensions
            .get::<ConnectInfo<std::net::SocketAddr>>()
            .map_or_else(|| "unix socket".to_string(), |a| a.0.to_string());
        let (user, group) = super::user_and_group(peer.uid, peer.gid);
        Ok(Ctx {
            app: app.clone(),
            peer,
            client: Client {
                source,
                user,
                group,
            },
        })
    }
}

impl Ctx {
    /// An answer with the resource's `fields`.
    fn ok(&self, fields: Map<String, Value>) -> Response {
        envelope::answer(&self.app.cluster_name, &self.client, fields, &[], &[])
    }

    /// An answer with `fields` and `warnings`.
    fn ok_warned(&self, fields: Map<String, Value>, warnings: &[String]) -> Response {
        envelope::answer(&self.app.cluster_name, &self.client, fields, &[], warnings)
    }

    /// A refusal: the resource's (empty) `fields` and the error.
    fn fail(&self, fields: Map<String, Value>, e: Error) -> Response {
        envelope::answer(&self.app.cluster_name, &self.client, fields, &[e], &[])
    }
}

/// `{key: value}` as the resource's fields.
fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The body as JSON.
///
/// Errors: larger than [`MAX_BODY`] (413), or not JSON (400), as Slurm numbers them.
async fn json_body(body: axum::body::Body, source: &str) -> Result<Value, Error> {
    use axum::body::HttpBody;
    let too_large = || {
        Error::new(
            errno::HTTP_CONTENT_LENGTH_TOO_LARGE,
            format!("Request body larger than {MAX_BODY} bytes"),
            source,
        )
    };
    // Refused from its announced length, before a byte of it is read.
    if body.size_hint().lower() > MAX_BODY as u64 {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| too_large())?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::new(
            errno::REST_INVALID_QUERY,
            "Rejecting request. Request body is empty.",
            source,
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            errno::REST_FAIL_PARSING,
            format!("Failure parsing request body as JSON: {e}"),
            source,
        )
    })
}

/// Any path under `/slurm/` that is not the API's: Slurm's `Invalid or unknown URL path`
/// (a version other than v0.0.44 among them).
async fn unknown(State(app): State<App>, uri: axum::http::Uri) -> Response {
    envelope::failure(
        &app.cluster_name,
        StatusCode::NOT_FOUND,
        Error::new(
            errno::URL_INVALID_PATH,
            format!("Unable to find path {}", uri.path()),
            "operations_router",
        ),
    )
}

/// A method the path does not take (`PUT jobs`): Slurm's 405.
async fn wrong_method(
    State(app): State<App>,
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response {
    envelope::failure(
        &app.cluster_name,
        StatusCode::METHOD_NOT_ALLOWED,
        Error::new(
            errno::REST_UNKNOWN_URL_METHOD,
            format!("Unsupported HTTP method requested: {method} {}", uri.path()),
            "operations_router",
        ),
    )
}
