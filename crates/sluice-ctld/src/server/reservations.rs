//! `scontrol`'s reservation requests: listing (anyone) and changes (operators only,
//! answered once on disk).

use std::collections::BTreeMap;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::reservations::ReservationChange;

use super::{error, execute, now, App, Peer};

/// `GET /v1/reservations`: every reservation, with its state and usage now.
pub(super) async fn list(State(app): State<App>) -> Response {
    Json(app.ctl.lock().expect("lock").reservation_records(now())).into_response()
}

/// The uids of the user names a request names (unknown names are left out; the
/// controller refuses them).
fn uids_of(req: &ReservationChange) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for item in req.users.iter().flat_map(|u| u.items.iter()) {
        let name = item.trim_start_matches('-');
        if let Ok(Some(u)) = nix::unistd::User::from_name(name) {
            out.insert(name.to_string(), u.uid.as_raw());
        } else if let Ok(uid) = name.parse::<u32>() {
            out.insert(name.to_string(), uid);
        }
    }
    out
}

/// `POST /v1/reservations`: create, update or delete; answered `{"name": NAME}` once
/// the record is on disk, or 400 with Slurm's message and nothing changed.
pub(super) async fn change(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<ReservationChange>,
) -> Response {
    let caller = app.caller(peer);
    let uids = tokio::task::spawn_blocking({
        let req = req.clone();
        move || uids_of(&req)
    })
    .await
    .unwrap_or_default();
    let result = app
        .ctl
        .lock()
        .expect("lock")
        .change_reservation(&req, &uids, &caller, now());
    match result {
        Ok((name, effects)) => {
            execute(&app, effects).await;
            app.wake.notify_one();
            Json(serde_json::json!({ "name": name })).into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}
