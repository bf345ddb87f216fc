//! `scontrol update` requests: nodes and partitions (super users: root, `SlurmUser`,
//! administrators) and jobs (owners and operators).

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use axum::Json;
use sluice_proto::types::{JobUpdate, NodeUpdate, PartitionUpdate};

use super::input::Change;
use super::routes::change;
use super::{App, Peer};
use sluice_core::JobId;

/// `POST /v1/nodes/update`: answered once the new state is on disk.
pub(super) async fn update_nodes(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(u): Json<NodeUpdate>,
) -> Response {
    change(app, peer, Change::UpdateNodes(u)).await
}

/// `POST /v1/partitions/update`.
pub(super) async fn update_partition(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(u): Json<PartitionUpdate>,
) -> Response {
    change(app, peer, Change::UpdatePartition(u)).await
}

/// `POST /v1/jobs/{id}/update`.
pub(super) async fn update_job(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(update): Json<JobUpdate>,
) -> Response {
    let id = JobId(id);
    change(app, peer, Change::UpdateJob { id, update }).await
}
