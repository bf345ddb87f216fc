//! `scontrol`'s reservation requests: listing (anyone) and changes (operators only,
//! answered once on disk).

use std::collections::BTreeMap;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::State;
use axum::response::Response;
use axum::Json;
use sluice_proto::reservations::ReservationChange;
use sluice_proto::types::ReservationName;

use super::input::Request;
use super::routes::reply;
use super::{App, Peer};

/// `GET /v1/reservations`: every reservation, with its state and usage now.
pub(super) async fn list(State(app): State<App>) -> Response {
    reply(app.ask(Request::Reservations).await)
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
    let caller = app.operator_caller(peer);
    // User names are looked up off the loop (NSS may be slow).
    let uids = tokio::task::spawn_blocking({
        let req = req.clone();
        move || uids_of(&req)
    })
    .await
    .unwrap_or_default();
    let r = app
        .ask(|reply| Request::ChangeReservation {
            req: Box::new(req),
            uids,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|name| ReservationName { name }))
}
