//! `GET nodes` and `GET node/{name}`: the nodes as `scontrol show node` sees them, in
//! Slurm's `NODE` shape (`state` a list of flags: `IDLE`, `MIXED`, `ALLOCATED`,
//! `DOWN`, `IDLE`+`DRAIN`, ...).

use axum::extract::{Path, Query};
use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::types::NodeInfo;

use super::changes;
use super::envelope::{errno, maybe, number, Error};
use super::{fields, Ctx};

/// Slurm's state flags for a node's base state (see `NodeInfo::state`).
fn state(n: &NodeInfo) -> Vec<&'static str> {
    match n.state.as_str() {
        "idle" => vec!["IDLE"],
        "mixed" => vec!["MIXED"],
        "allocated" => vec!["ALLOCATED"],
        "down" => vec!["DOWN"],
        "drained" if n.down => vec!["DOWN", "DRAIN"],
        "drained" => vec!["IDLE", "DRAIN"],
        "draining" => vec!["MIXED", "DRAIN"],
        "maint" => vec!["IDLE", "MAINTENANCE", "RESERVED"],
        "completing" if n.cpus_alloc == 0 => vec!["IDLE", "COMPLETING"],
        "completing" => vec!["MIXED", "COMPLETING"],
        _ => vec!["UNKNOWN"],
    }
}

/// A node in Slurm's `NODE` shape (v0.0.44), the fields Sluice keeps.
fn node(n: &NodeInfo) -> Value {
    json!({
        "name": n.name,
        "hostname": n.node_hostname,
        "address": n.node_addr,
        "port": n.port.unwrap_or(6818),
        "state": state(n),
        "reason": n.reason.clone().unwrap_or_default(),
        "reason_set_by_user": n.reason_set.map(|r| crate::server::user_and_group(r.0, r.0).0).unwrap_or_default(),
        "reason_changed_at": number(n.reason_set.map_or(0, |r| r.1)),
        "cpus": n.cpus,
        "alloc_cpus": n.cpus_alloc,
        "alloc_idle_cpus": n.cpus.saturating_sub(n.cpus_alloc),
        "sockets": n.sockets,
        "cores": n.cores_per_socket,
        "threads": n.threads_per_core,
        "real_memory": n.memory,
        "alloc_memory": n.memory_alloc,
        "free_mem": maybe(None::<i64>),
        "gres": n.gres,
        "gres_used": "",
        "partitions": n.partitions,
        "features": n.features,
        "active_features": n.features,
        "weight": n.weight,
        "tres": n.cfg_tres,
        "tres_used": n.alloc_tres,
        "boot_time": number(n.agent_start.unwrap_or(0)),
        "slurmd_start_time": number(n.agent_start.unwrap_or(0)),
        "last_busy": number(n.last_busy.unwrap_or(0)),
    })
}

/// The nodes, from the published snapshot.
pub(super) async fn nodes(ctx: &Ctx) -> Result<Vec<NodeInfo>, Error> {
    Ok(ctx
        .app
        .listing
        .latest()
        .node_listing()
        .nodes()
        .cloned()
        .collect())
}

/// `GET nodes[?update_time=T]` (none, with a warning, when none changed since `T`).
pub(super) async fn list(
    ctx: Ctx,
    query: Result<Query<changes::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let now = crate::server::now();
    let since = match changes::since(query, "_dump_nodes") {
        Ok(t) => t,
        Err(e) => return ctx.fail(fields([("nodes", json!([]))]), e),
    };
    match nodes(&ctx).await {
        Ok(all) => {
            let shown = Value::Array(all.iter().map(node).collect());
            let updated = changes::last_change(&ctx.app.incarnation, "nodes", &shown, now);
            if changes::unchanged(since, updated) {
                return ctx.ok_warned(
                    fields([("nodes", json!([])), ("last_update", number(updated))]),
                    &[changes::warning("node", since.unwrap_or_default())],
                );
            }
            ctx.ok(fields([("nodes", shown), ("last_update", number(updated))]))
        }
        Err(e) => ctx.fail(fields([("nodes", json!([]))]), e),
    }
}

/// `GET node/{name}`.
pub(super) async fn one(ctx: Ctx, Path(name): Path<String>) -> Response {
    let now = crate::server::now();
    let found = nodes(&ctx).await.map(|all| {
        let shown = Value::Array(all.iter().map(node).collect());
        let updated = changes::last_change(&ctx.app.incarnation, "nodes", &shown, now);
        (all.into_iter().find(|n| n.name == name), updated)
    });
    match found {
        Ok((Some(n), updated)) => ctx.ok(fields([
            ("nodes", json!([node(&n)])),
            ("last_update", number(updated)),
        ])),
        Ok((None, _)) => ctx.fail(
            fields([("nodes", json!([]))]),
            Error::new(
                errno::INVALID_NODE_NAME,
                format!("Unable to query node {name}"),
                "slurm_load_node_single()",
            ),
        ),
        Err(e) => ctx.fail(fields([("nodes", json!([]))]), e),
    }
}
