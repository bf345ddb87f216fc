//! `scontrol update` requests: nodes (operators) and jobs (owners and operators).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use axum::Json;
use sluice_proto::types::{JobUpdate, NodeUpdate};

use super::{act, App, Peer};

/// `POST /v1/nodes/update`: answered once the new state is on disk.
pub(super) async fn update_nodes(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(u): Json<NodeUpdate>,
) -> Response {
    act(app, peer, |c, who, now| {
        c.update_node(&u.nodes, &u.state, u.reason.as_deref(), who, now)
    })
    .await
}

/// `POST /v1/jobs/{id}/update`.
pub(super) async fn update_job(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(u): Json<JobUpdate>,
) -> Response {
    act(app, peer, |c, who, now| {
        c.update_job(id, u.task, &u.changes, who, now)
    })
    .await
}
