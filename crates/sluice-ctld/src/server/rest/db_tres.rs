//! `GET /slurmdb/v0.0.44/tres`: the TRES accounting tracks (slurm.conf's defaults and
//! `AccountingStorageTRES`), in Slurm's `TRES` shape.

use axum::response::Response;
use serde_json::{json, Value};

use super::db::{self, tres_id, tres_parts};
use super::{fields, Ctx};

/// `GET tres`.
pub(super) async fn list(ctx: Ctx) -> Response {
    let snap = match db::snapshot(&ctx).await {
        Ok(s) => s,
        Err(e) => return db::answer(&ctx, fields([("TRES", json!([]))]), &[e], &[]),
    };
    let t = &snap.tracked_tres;
    let mut found: Vec<(u32, Value)> = t
        .iter()
        .map(|name| {
            let (kind, sub) = tres_parts(name);
            let id = tres_id(name, t);
            (id, json!({"type": kind, "name": sub, "id": id, "count": 0}))
        })
        .collect();
    found.sort_by_key(|(id, _)| *id);
    let found: Vec<Value> = found.into_iter().map(|(_, v)| v).collect();
    db::answer(&ctx, fields([("TRES", Value::Array(found))]), &[], &[])
}
