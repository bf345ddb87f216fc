//! `GET /slurmdb/v0.0.44/clusters`: the cluster as `sacctmgr show clusters` lists it,
//! in Slurm's `CLUSTER_REC` shape.

use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::ClusterRecord;

use super::db::{self, Condition, Pairs};
use super::db_associations::short;
use super::{fields, Ctx};

/// `CLUSTER_CONDITION`'s keys.
const KNOWN: [&str; 10] = [
    "classification",
    "cluster",
    "federation",
    "flags",
    "format",
    "rpc_version",
    "usage_end",
    "usage_start",
    "with_deleted",
    "with_usage",
];

/// `GET clusters`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    let handler = "op_handler_clusters";
    let empty = || fields([("clusters", json!([]))]);
    let pairs = match db::pairs(q, handler) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let c = Condition::read(&pairs, &KNOWN, "CLUSTER_CONDITION");
    let snap = match db::snapshot(&ctx).await {
        Ok(s) => s,
        Err(e) => return db::answer(&ctx, empty(), &[e], &[]),
    };
    let snap = match crate::server::accounts::with_other_clusters(&ctx.app, snap).await {
        Ok(s) => s,
        Err(e) => {
            return db::answer(
                &ctx,
                empty(),
                &[super::envelope::Error::from_api(
                    &e,
                    "slurmdb_clusters_get()",
                )],
                &[],
            )
        }
    };
    let root = snap
        .associations
        .iter()
        .find(|l| l.record.user.is_none() && l.record.account == "root")
        .map(|l| short(&l.record))
        .unwrap_or_else(|| json!({}));
    // The controller's own cluster, with its root association, and the clusters
    // sharing its database (their associations are their controllers'), by name.
    let mut all: Vec<(&ClusterRecord, Value)> =
        std::iter::once((&snap.cluster, json!({"root": root})))
            .chain(snap.other_clusters.iter().map(|c| (c, json!({}))))
            .collect();
    all.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let found: Vec<Value> = all
        .into_iter()
        .filter(|(cl, _)| {
            c.allows("cluster", &cl.name) && c.allows("rpc_version", &cl.rpc.to_string())
        })
        .map(|(cl, associations)| {
            json!({
                "controller": {"host": cl.control_host, "port": cl.control_port},
                "flags": [],
                "name": cl.name,
                "nodes": "",
                "associations": associations,
                "rpc_version": cl.rpc,
                "tres": [],
            })
        })
        .collect();
    let mut warnings = c.warnings;
    if found.is_empty() {
        warnings.push(db::found_nothing("slurmdb_clusters_get", "_dump_clusters"));
    }
    db::answer(
        &ctx,
        fields([("clusters", Value::Array(found))]),
        &[],
        &warnings,
    )
}
