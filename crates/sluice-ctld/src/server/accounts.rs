//! `sacctmgr`'s requests: listing (anyone) and changes (as the caller's admin level
//! allows, answered once durable).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::accounts::{
    AccountsError, AccountsSnapshot, ChangeOutcome, ChangeRequest, ClusterRecord,
};
use sluice_proto::error::ApiError;

use super::input::Request;
use super::routes::{reply, storage};
use super::{user_and_group, App, Peer};
use crate::accounts::Requester;

/// `GET /v1/accounts`: everything `sacctmgr show` lists, with the other clusters
/// sharing the database ([`with_other_clusters`]).
pub(super) async fn list(State(app): State<App>) -> Response {
    let snap = match app.ask(Request::Accounts).await {
        Ok(s) => s,
        Err(e) => return reply::<AccountsSnapshot>(Err(e)),
    };
    reply(with_other_clusters(&app, snap).await)
}

/// `snap` with the other clusters the database's registry keeps (read off the loop:
/// a PostgreSQL database shared by several clusters; none for SQLite).
///
/// Errors: the database cannot be read.
pub(in crate::server) async fn with_other_clusters(
    app: &App,
    mut snap: AccountsSnapshot,
) -> Result<AccountsSnapshot, ApiError> {
    let store = app.store.clone();
    let rows = match tokio::task::spawn_blocking(move || store.clusters()).await {
        Ok(Ok(rows)) => rows,
        Ok(Err(e)) => return Err(storage(e.to_string())),
        Err(e) => return Err(storage(e.to_string())),
    };
    snap.other_clusters = rows
        .into_iter()
        .filter(|c| c.name != snap.cluster.name)
        .map(|c| ClusterRecord {
            name: c.name,
            control_host: c.control_host,
            control_port: c.control_port,
            rpc: 0,
        })
        .collect();
    Ok(snap)
}

/// `POST /v1/accounts`: a change, checked or carried out; answered with
/// `{"Ok": outcome}` once on disk, or `{"Err": reason}` with nothing changed.
pub(super) async fn change(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<ChangeRequest>,
) -> Response {
    let caller = app.caller(peer);
    let (name, _) = user_and_group(peer.uid, peer.gid);
    let who = Requester {
        name,
        superuser: caller.admin,
    };
    let r = app
        .ask(|reply| Request::ChangeAccounts {
            who,
            request: Box::new(req.request),
            commit: req.commit,
            reply,
        })
        .await;
    let answer: Result<ChangeOutcome, AccountsError> = match r {
        Ok(a) => a,
        Err(e) => Err(AccountsError::Other(e.message)),
    };
    Json(answer).into_response()
}
