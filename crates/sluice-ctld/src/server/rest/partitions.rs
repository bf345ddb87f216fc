//! `GET partitions` and `GET partition/{name}`: the partitions as `scontrol show
//! partition` sees them, in Slurm's `PARTITION_INFO` shape.

use axum::extract::{Path, Query};
use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::types::PartitionInfo;

use super::changes;
use super::envelope::{errno, infinite, number, Error};
use super::{fields, Ctx};

/// Minutes, rounded up, as Slurm keeps time limits; unlimited as infinite.
fn minutes(secs: Option<i64>) -> Value {
    match secs {
        Some(s) => number((s + 59).div_euclid(60)),
        None => infinite(),
    }
}

/// A partition in Slurm's `PARTITION_INFO` shape (v0.0.44), the fields Sluice keeps.
fn partition(p: &PartitionInfo, cluster: &str) -> Value {
    let mut state = vec![p.state.to_ascii_uppercase()];
    if p.default {
        state.push("DEFAULT".into());
    }
    json!({
        "name": p.name,
        "cluster": cluster,
        "nodes": {
            "configured": sluice_conf::hostlist::compress(&p.nodes),
            "total": p.nodes.len(),
            "allowed_allocation": "",
        },
        "partition": {"state": [p.state.to_ascii_uppercase()]},
        "flags": if p.default { json!(["DEFAULT"]) } else { json!([]) },
        "maximums": {
            "time": minutes(p.max_time),
            "nodes": p.max_nodes.map_or_else(infinite, number),
        },
        "minimums": {"nodes": p.min_nodes},
        "defaults": {"time": minutes(p.default_time)},
        "priority": {"job_factor": p.priority_job_factor, "tier": p.priority_tier},
        "qos": {"assigned": p.qos.clone().unwrap_or_default()},
        "tres": {"configured": p.tres},
        "grace_time": p.grace_time,
        "preemption_mode": [p.preempt_mode.to_ascii_uppercase()],
        "state": state,
    })
}

/// The partitions, from the published snapshot.
async fn partitions(ctx: &Ctx) -> Result<Vec<PartitionInfo>, Error> {
    Ok(ctx
        .app
        .listing
        .latest()
        .node_listing()
        .partitions()
        .to_vec())
}

/// `GET partitions[?update_time=T]` (none, with a warning, when none changed since
/// `T`).
pub(super) async fn list(
    ctx: Ctx,
    query: Result<Query<changes::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let now = crate::server::now();
    let since = match changes::since(query, "_partitions_get") {
        Ok(t) => t,
        Err(e) => return ctx.fail(fields([("partitions", json!([]))]), e),
    };
    let cluster = ctx.app.cluster_name.clone();
    match partitions(&ctx).await {
        Ok(all) => {
            let shown = Value::Array(all.iter().map(|p| partition(p, &cluster)).collect());
            let updated = changes::last_change(&ctx.app.incarnation, "partitions", &shown, now);
            if changes::unchanged(since, updated) {
                return ctx.ok_warned(
                    fields([("partitions", json!([])), ("last_update", number(updated))]),
                    &[changes::warning("partition", since.unwrap_or_default())],
                );
            }
            ctx.ok(fields([
                ("partitions", shown),
                ("last_update", number(updated)),
            ]))
        }
        Err(e) => ctx.fail(fields([("partitions", json!([]))]), e),
    }
}

/// `GET partition/{name}`.
pub(super) async fn one(ctx: Ctx, Path(name): Path<String>) -> Response {
    let now = crate::server::now();
    let cluster = ctx.app.cluster_name.clone();
    let found = partitions(&ctx).await.map(|all| {
        let shown = Value::Array(all.iter().map(|p| partition(p, &cluster)).collect());
        let updated = changes::last_change(&ctx.app.incarnation, "partitions", &shown, now);
        (all.into_iter().find(|p| p.name == name), updated)
    });
    match found {
        Ok((Some(p), updated)) => ctx.ok(fields([
            ("partitions", json!([partition(&p, &cluster)])),
            ("last_update", number(updated)),
        ])),
        Ok((None, _)) => ctx.fail(
            fields([("partitions", json!([]))]),
            Error::new(
                errno::INVALID_PARTITION_NAME,
                format!("Unable to find partition {name}"),
                "slurm_load_partitions()",
            ),
        ),
        Err(e) => ctx.fail(fields([("partitions", json!([]))]), e),
    }
}
