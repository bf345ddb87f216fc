//! `sacctmgr`'s requests: listing (anyone) and changes (as the caller's admin level
//! allows, answered once durable).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::accounts::{AccountsError, ChangeOutcome, ChangeRequest, ClusterRecord};

use super::{user_and_group, App, Peer};
use crate::accounts::Requester;
use crate::state::Effect;

/// `GET /v1/accounts`: everything `sacctmgr show` lists.
pub(super) async fn list(State(app): State<App>) -> Response {
    let cluster = {
        let ctl = app.ctl.lock().expect("lock");
        ClusterRecord {
            name: ctl.conf.cluster_name.clone(),
            control_host: app.listen.map(|a| a.ip().to_string()).unwrap_or_default(),
            control_port: app.listen.map(|a| a.port()).unwrap_or(0),
            rpc: 0,
        }
    };
    Json(app.ctl.lock().expect("lock").accounts().snapshot(cluster)).into_response()
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
    let result = app
        .ctl
        .lock()
        .expect("lock")
        .change_accounts(&who, &req.request, req.commit);
    let reply: Result<ChangeOutcome, AccountsError> = match result {
        Ok((outcome, effects)) => {
            // Acknowledged only once on disk; a failed write is reported.
            let mut saved = Ok(());
            for e in effects {
                if let Effect::PersistAccounts(rows) = e {
                    let rx = app.store.put_accounts(rows);
                    saved = match tokio::task::spawn_blocking(move || rx.recv()).await {
                        Ok(Ok(r)) => r.map_err(|e| e.to_string()),
                        _ => Err("the state store has shut down".to_string()),
                    };
                }
            }
            saved
                .map(|()| outcome)
                .map_err(|e| AccountsError::Other(format!("Unable to save the change: {e}")))
        }
        Err(e) => Err(e),
    };
    Json(reply).into_response()
}
