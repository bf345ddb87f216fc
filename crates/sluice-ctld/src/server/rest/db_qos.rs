//! `GET /slurmdb/v0.0.44/qos[?QOS_CONDITION]`: the QOS as `sacctmgr show qos` lists
//! them, in Slurm's `QOS` shape.

use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::{PreemptMode, QosFlag, QosRecord};

use super::db::{self, limit, tres_map, Condition, Pairs};
use super::envelope::number;
use super::{fields, Ctx};

/// `QOS_CONDITION`'s keys.
const KNOWN: [&str; 6] = [
    "description",
    "flags",
    "id",
    "format",
    "name",
    "preempt_mode",
];

/// A flag as Slurm's REST API names it.
fn flag(f: QosFlag) -> &'static str {
    match f {
        QosFlag::DenyOnLimit => "DENY_LIMIT",
        QosFlag::EnforceUsageThreshold => "ENFORCE_USAGE_THRESHOLD",
        QosFlag::NoReserve => "NO_RESERVE",
        QosFlag::PartitionMaxNodes => "PARTITION_MAXIMUM_NODE",
        QosFlag::PartitionMinNodes => "PARTITION_MINIMUM_NODE",
        QosFlag::OverPartQOS => "OVERRIDE_PARTITION_QOS",
        QosFlag::PartitionTimeLimit => "PARTITION_TIME_LIMIT",
        QosFlag::RequiresReservation => "REQUIRED_RESERVATION",
        QosFlag::NoDecay => "NO_DECAY",
        QosFlag::UsageFactorSafe => "USAGE_FACTOR_SAFE",
        QosFlag::Relative => "RELATIVE",
    }
}

/// A preemption mode as Slurm's REST API names it.
fn mode(m: PreemptMode) -> &'static str {
    match m {
        PreemptMode::Cluster | PreemptMode::Off => "DISABLED",
        PreemptMode::Cancel => "CANCEL",
        PreemptMode::Requeue => "REQUEUE",
        PreemptMode::Suspend => "SUSPEND",
    }
}

/// A QOS in Slurm's `QOS` shape (v0.0.44).
fn qos(q: &QosRecord, tracked: &[String]) -> Value {
    let l = &q.limits;
    let t = tracked;
    let float = |v: f64| json!({"set": true, "infinite": false, "number": v});
    json!({
        "description": q.description,
        "flags": q.flags.iter().map(|f| flag(*f)).collect::<Vec<_>>(),
        "id": q.id,
        "limits": {
            "grace_time": q.grace_time,
            "max": {
                "active_jobs": {"accruing": limit(None), "count": limit(l.grp_jobs)},
                "jobs": {
                    "count": limit(l.grp_submit_jobs),
                    "active_jobs": {"per": {"account": limit(None), "user": limit(l.max_jobs_per_user)}},
                    "per": {"account": limit(None), "user": limit(l.max_submit_jobs_per_user)},
                },
                "tres": {
                    "total": tres_map(&l.grp_tres, t),
                    "minutes": {
                        "total": tres_map(&l.grp_tres_mins, t),
                        "per": {
                            "qos": tres_map(&l.grp_tres_run_mins, t),
                            "job": tres_map(&l.max_tres_mins_per_job, t),
                            "account": [],
                            "user": [],
                        },
                    },
                    "per": {
                        "account": [],
                        "job": tres_map(&l.max_tres_per_job, t),
                        "node": tres_map(&l.max_tres_per_node, t),
                        "user": tres_map(&l.max_tres_per_user, t),
                    },
                },
                "wall_clock": {"per": {"qos": limit(l.grp_wall), "job": limit(l.max_wall)}},
                "accruing": {"per": {"account": limit(None), "user": limit(None)}},
            },
            "factor": json!({"set": false, "infinite": false, "number": 0.0}),
            "min": {
                "priority_threshold": limit(None),
                "tres": {"per": {"job": tres_map(&l.min_tres_per_job, t)}},
            },
        },
        "name": q.name,
        "preempt": {
            "list": q.preempt.iter().collect::<Vec<_>>(),
            "mode": [mode(q.preempt_mode)],
            "exempt_time": limit(None),
        },
        "priority": number(q.priority),
        "usage_factor": float(q.usage_factor),
        "usage_threshold": json!({"set": false, "infinite": false, "number": 0.0}),
    })
}

/// `GET qos`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    let handler = "op_handler_multi_qos";
    let empty = || fields([("qos", json!([]))]);
    let pairs = match db::pairs(q, handler) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let c = Condition::read(&pairs, &KNOWN, "QOS_CONDITION");
    let snap = match db::snapshot(&ctx).await {
        Ok(s) => s,
        Err(e) => return db::answer(&ctx, empty(), &[e], &[]),
    };
    let names: Vec<String> = c
        .list("name")
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect();
    let found: Vec<Value> = snap
        .qos
        .iter()
        .filter(|q| names.is_empty() || names.contains(&q.name))
        .filter(|q| c.allows("id", &q.id.to_string()))
        .filter(|q| c.allows("description", &q.description))
        .filter(|q| {
            c.list("preempt_mode").is_empty()
                || c.list("preempt_mode")
                    .iter()
                    .any(|m| m.eq_ignore_ascii_case(mode(q.preempt_mode)))
        })
        .map(|q| qos(q, &snap.tracked_tres))
        .collect();
    let mut warnings = c.warnings;
    if found.is_empty() {
        warnings.push(db::found_nothing("slurmdb_qos_get", "_op_handler_qos"));
    }
    db::answer(&ctx, fields([("qos", Value::Array(found))]), &[], &warnings)
}
