//! `GET /slurmdb/v0.0.44/associations[?ASSOC_CONDITION]`: the associations as
//! `sacctmgr show associations` lists them (inherited limits and QOS filled in), in
//! Slurm's `ASSOC` shape.

use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::{AccountsSnapshot, AssociationRecord, Shares};

use super::db::{self, limit, tres_map, Condition, Pairs};
use super::{fields, Ctx};

/// The source Slurm's errors name.
const HANDLER: &str = "op_handler_associations";

/// `ASSOC_CONDITION`'s keys; those Sluice selects by: `account`, `cluster`,
/// `default_qos`, `id`, `parent_account`, `partition`, `qos`, `user`.
const KNOWN: [&str; 11] = [
    "account",
    "cluster",
    "default_qos",
    "format",
    "id",
    "parent_account",
    "partition",
    "qos",
    "usage_end",
    "usage_start",
    "user",
];

/// Where an association sits: `/root/parent/account/`, and `0-user/` for a user's.
fn lineage(a: &AssociationRecord, snap: &AccountsSnapshot) -> String {
    let parent_of = |acct: &str| {
        snap.associations
            .iter()
            .find(|l| l.record.user.is_none() && l.record.account == acct)
            .and_then(|l| l.record.parent.clone())
    };
    let mut chain = vec![a.account.clone()];
    let mut at = a.account.clone();
    while let Some(p) = parent_of(&at) {
        if chain.contains(&p) {
            break;
        }
        chain.push(p.clone());
        at = p;
    }
    chain.reverse();
    let mut s = format!("/{}/", chain.join("/"));
    if let Some(u) = &a.user {
        s.push_str(&format!("0-{u}/"));
        if let Some(p) = &a.partition {
            s.push_str(&format!("{p}/"));
        }
    }
    s
}

/// An association in Slurm's `ASSOC` shape (v0.0.44).
pub(super) fn association(a: &AssociationRecord, snap: &AccountsSnapshot) -> Value {
    let t = &snap.tracked_tres;
    let l = &a.limits;
    let is_default = a.user.as_ref().is_some_and(|u| {
        snap.users
            .iter()
            .any(|r| &r.name == u && r.default_account.as_deref() == Some(a.account.as_str()))
    });
    let shares = match a.shares {
        Shares::Value(n) => n,
        // Slurm's SLURMDB_FS_USE_PARENT.
        Shares::Parent => 0x7fff_ffff,
    };
    json!({
        "accounting": [],
        "account": a.account,
        "cluster": a.cluster,
        "comment": "",
        "default": {"qos": a.default_qos.clone().unwrap_or_default()},
        "flags": [],
        "max": {
            "jobs": {
                "per": {
                    "count": limit(l.grp_jobs),
                    "accruing": limit(None),
                    "submitted": limit(l.grp_submit_jobs),
                    "wall_clock": limit(l.max_wall),
                },
                "active": limit(l.max_jobs),
                "accruing": limit(None),
                "total": limit(l.max_submit_jobs),
            },
            "tres": {
                "total": tres_map(&l.grp_tres, t),
                "group": {
                    "minutes": tres_map(&l.grp_tres_mins, t),
                    "active": tres_map(&l.grp_tres_run_mins, t),
                },
                "minutes": {
                    "total": [],
                    "per": {"job": tres_map(&l.max_tres_mins_per_job, t)},
                },
                "per": {
                    "job": tres_map(&l.max_tres_per_job, t),
                    "node": tres_map(&l.max_tres_per_node, t),
                },
            },
            "per": {"account": {"wall_clock": limit(l.grp_wall)}},
        },
        "id": a.id,
        "is_default": is_default,
        "lineage": lineage(a, snap),
        "min": {"priority_threshold": limit(None)},
        "parent_account": if a.user.is_none() { a.parent.clone().unwrap_or_default() } else { String::new() },
        "partition": a.partition.clone().unwrap_or_default(),
        "priority": limit(a.priority),
        "qos": a.qos.iter().flatten().collect::<Vec<_>>(),
        "shares_raw": shares,
        "user": a.user.clone().unwrap_or_default(),
    })
}

/// An association in Slurm's `ASSOC_SHORT` shape (accounts' and users' lists).
pub(super) fn short(a: &AssociationRecord) -> Value {
    json!({
        "account": a.account,
        "cluster": a.cluster,
        "partition": a.partition.clone().unwrap_or_default(),
        "user": a.user.clone().unwrap_or_default(),
        "id": a.id,
    })
}

/// Whether `a` passes `c`.
fn selected(a: &AssociationRecord, c: &Condition) -> bool {
    let opt = |key: &str, v: &Option<String>| {
        c.list(key).is_empty() || v.as_ref().is_some_and(|v| c.allows(key, v))
    };
    c.allows("account", &a.account)
        && c.allows("cluster", &a.cluster)
        && c.allows("id", &a.id.to_string())
        && opt("user", &a.user)
        && opt("partition", &a.partition)
        && opt("default_qos", &a.default_qos)
        && (c.list("parent_account").is_empty()
            || (a.user.is_none() && opt("parent_account", &a.parent)))
        && (c.list("qos").is_empty() || a.qos.iter().flatten().any(|q| c.allows("qos", q)))
}

/// `GET associations`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    let empty = || fields([("associations", json!([]))]);
    let pairs = match db::pairs(q, HANDLER) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let c = Condition::read(&pairs, &KNOWN, "ASSOC_CONDITION");
    let snap = match db::snapshot(&ctx).await {
        Ok(s) => s,
        Err(e) => return db::answer(&ctx, empty(), &[e], &[]),
    };
    let mine = db::visible_user(&ctx, &snap);
    let found: Vec<Value> = snap
        .associations
        .iter()
        .map(|l| &l.record)
        .filter(|a| selected(a, &c))
        .filter(|a| mine.as_ref().is_none_or(|u| a.user.as_ref() == Some(u)))
        .map(|a| association(a, &snap))
        .collect();
    let mut warnings = c.warnings;
    if found.is_empty() {
        warnings.push(db::found_nothing(
            "slurmdb_associations_get",
            "_dump_assoc_cond",
        ));
    }
    db::answer(
        &ctx,
        fields([("associations", Value::Array(found))]),
        &[],
        &warnings,
    )
}
