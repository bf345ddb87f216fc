//! `sacctmgr`'s requests: listing (anyone) and changes (as the caller's admin level
//! allows, answered once durable).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::accounts::{AccountsError, ChangeOutcome, ChangeRequest};

use super::input::Request;
use super::routes::reply;
use super::{user_and_group, App, Peer};
use crate::accounts::Requester;

/// `GET /v1/accounts`: everything `sacctmgr show` lists.
pub(super) async fn list(State(app): State<App>) -> Response {
    reply(app.ask(Request::Accounts).await)
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
