//! `GET shares[?accounts=A,B&users=U]`: every association's fair-share figures, as
//! `sshare` reads them (the controller's one shares computation), in Slurm's
//! `SHARES_RESP_MSG` shape (`shares.shares[]`, `shares.total_shares`).

use axum::extract::Query;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};
use sluice_proto::priority::{ShareRow, SharesReport};

use super::envelope::{errno, infinite, number, unset, Error};
use super::{fields, Ctx};
use crate::server::input::Request;

/// Slurm's `SLURMDB_FS_USE_PARENT`: `RawShares=parent`.
const USE_PARENT: i64 = 0x7fff_ffff;

/// `GET shares`' query: Slurm's `accounts` and `users`, comma separated.
#[derive(Debug, Default, Deserialize)]
pub(super) struct SharesQuery {
    accounts: Option<String>,
    users: Option<String>,
}

/// A float that is set.
fn float(f: f64) -> Value {
    if f.is_infinite() {
        infinite()
    } else {
        json!({"set": true, "infinite": false, "number": f})
    }
}

/// A TRES string (`cpu=4,mem=100`) as Slurm's list of `{name, value}`, each value
/// times `scale`.
fn tres(s: &str, scale: f64) -> Value {
    Value::Array(
        s.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| {
                let n: f64 = v.trim().parse().unwrap_or(0.0);
                json!({"name": k.trim(), "value": number((n * scale).round() as i64)})
            })
            .collect(),
    )
}

/// The rows in Slurm's `ASSOC_SHARES_OBJ_WRAP` shape: each with its parent (the
/// account above it, from the tree's depth-first order).
pub(super) fn shares(report: &SharesReport, cluster: &str) -> Vec<Value> {
    // The account at each depth on the way down.
    let mut path: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for r in &report.rows {
        let depth = r.depth as usize;
        let (name, parent) = match &r.user {
            Some(u) => (u.clone(), r.account.clone()),
            None => {
                path.truncate(depth);
                let parent = depth
                    .checked_sub(1)
                    .and_then(|d| path.get(d))
                    .cloned()
                    .unwrap_or_default();
                path.push(r.account.clone());
                (r.account.clone(), parent)
            }
        };
        out.push(row(r, name, parent, cluster));
    }
    out
}

fn row(r: &ShareRow, name: String, parent: String, cluster: &str) -> Value {
    let raw_shares = match r.raw_shares.as_deref() {
        None => unset(),
        Some("parent") => number(USE_PARENT),
        Some(n) => n.parse::<i64>().map_or_else(|_| unset(), number),
    };
    json!({
        "id": r.assoc_id.unwrap_or(0),
        "cluster": cluster,
        "name": name,
        "parent": parent,
        "partition": "",
        "shares_normalized": float(r.norm_shares),
        "shares": raw_shares,
        "tres": {
            "run_seconds": tres(&r.tres_run_mins, 60.0),
            "group_minutes": tres(&r.grp_tres_mins, 1.0),
            "usage": tres(&r.grp_tres_raw, 60.0),
        },
        "effective_usage": float(r.effective_usage),
        "usage_normalized": r.norm_usage.map_or_else(unset, float),
        "usage": r.raw_usage.round() as i64,
        "fairshare": {
            "factor": r.fairshare.map_or_else(unset, float),
            "level": r.level_fs.map_or_else(unset, float),
        },
        "type": [if r.user.is_some() { "USER" } else { "ASSOCIATION" }],
    })
}

/// `GET shares`.
pub(super) async fn list(
    ctx: Ctx,
    query: Result<Query<SharesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let empty = || fields([("shares", json!({"shares": [], "total_shares": 0}))]);
    let Ok(Query(q)) = query else {
        return ctx.fail(
            empty(),
            Error::new(
                errno::REST_INVALID_QUERY,
                "Rejecting request. Failure parsing query.",
                "_dump_shares",
            ),
        );
    };
    let split = |s: &Option<String>| -> Vec<String> {
        s.iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let (accounts, users) = (split(&q.accounts), split(&q.users));
    let report = match ctx.app.ask(Request::Shares).await {
        Ok(r) => r,
        Err(e) => {
            return ctx.fail(
                empty(),
                Error::from_api(&e, "slurm_associations_get_shares()"),
            )
        }
    };
    let cluster = ctx.app.cluster_name.clone();
    let all = shares(&report, &cluster);
    // As sshare's filters: a user's rows by `users`, an account's by `accounts`.
    let kept: Vec<Value> = report
        .rows
        .iter()
        .zip(all)
        .filter(|(r, _)| {
            let account_ok = accounts.is_empty() || accounts.contains(&r.account);
            let user_ok = users.is_empty() || r.user.as_ref().is_some_and(|u| users.contains(u));
            account_ok && user_ok
        })
        .map(|(_, v)| v)
        .collect();
    // The total of the raw shares of the associations listed (Slurm's `tot_shares`).
    let total: i64 = report
        .rows
        .iter()
        .filter(|r| r.depth == 1)
        .filter_map(|r| r.raw_shares.as_deref()?.parse::<i64>().ok())
        .sum();
    ctx.ok(fields([(
        "shares",
        json!({"shares": kept, "total_shares": total}),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_their_parents() {
        let row = |depth, account: &str, user: Option<&str>, raw: Option<&str>| ShareRow {
            depth,
            account: account.into(),
            user: user.map(String::from),
            raw_shares: raw.map(String::from),
            norm_shares: 0.5,
            tres_run_mins: "cpu=2".into(),
            ..Default::default()
        };
        let report = SharesReport {
            fair_tree: true,
            rows: vec![
                row(0, "root", None, None),
                row(1, "root", Some("root"), Some("1")),
                row(1, "physics", None, Some("3")),
                row(2, "physics", Some("alice"), Some("parent")),
                row(1, "chem", None, Some("1")),
            ],
        };
        let v = shares(&report, "c1");
        let names: Vec<(&str, &str, &str)> = v
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap(),
                    r["parent"].as_str().unwrap(),
                    r["type"][0].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("root", "", "ASSOCIATION"),
                ("root", "root", "USER"),
                ("physics", "root", "ASSOCIATION"),
                ("alice", "physics", "USER"),
                ("chem", "root", "ASSOCIATION")
            ]
        );
        assert_eq!(v[0]["shares"]["set"], false);
        assert_eq!(v[2]["shares"], number(3));
        assert_eq!(v[3]["shares"], number(USE_PARENT));
        assert_eq!(
            v[3]["tres"]["run_seconds"],
            json!([{"name": "cpu", "value": number(120)}])
        );
    }
}
