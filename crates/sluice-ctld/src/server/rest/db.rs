//! slurmdbd's side of the REST API (`/slurmdb/v0.0.44/...`, Slurm 25.11's openapi
//! plugin `slurmdbd`), served by the controller from its own store: what sacct reads
//! ([`super::db_jobs`]) and what `sacctmgr show` reads ([`super::db_accounts`] and its
//! siblings). This file holds what they share: the routes, the envelope with slurmdbd's
//! `meta.plugin`, the query-string parsing Slurm's data parser does for `*_CONDITION`s,
//! and TRES lists.

use axum::response::Response;
use axum::routing::{any, get};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

use sluice_proto::accounts::{AccountsSnapshot, AdminLevel, Tres};

use super::envelope::{self, errno, Error};
use super::{db_accounts, db_associations, db_clusters, db_jobs, db_qos, db_tres, db_users};
use super::{Ctx, Routes};
use crate::server::input::Request;

/// The `/slurmdb/` routes; any other path under `/slurmdb/` is unknown (Slurm's 404).
pub(super) fn routes(r: Routes) -> Routes {
    r.route("/slurmdb/v0.0.44/jobs", get(db_jobs::list))
        .route("/slurmdb/v0.0.44/job/{id}", get(db_jobs::one))
        .route("/slurmdb/v0.0.44/accounts", get(db_accounts::list))
        .route("/slurmdb/v0.0.44/account/{name}", get(db_accounts::one))
        .route("/slurmdb/v0.0.44/associations", get(db_associations::list))
        .route("/slurmdb/v0.0.44/qos", get(db_qos::list))
        .route("/slurmdb/v0.0.44/users", get(db_users::list))
        .route("/slurmdb/v0.0.44/tres", get(db_tres::list))
        .route("/slurmdb/v0.0.44/clusters", get(db_clusters::list))
        .route("/slurmdb/{*rest}", any(super::unknown))
}

/// An answer from slurmdbd's plugin: `fields`, `errors` and `warnings` (description,
/// source).
pub(super) fn answer(
    ctx: &Ctx,
    fields: Map<String, Value>,
    errors: &[Error],
    warnings: &[(String, String)],
) -> Response {
    envelope::answer_of(
        envelope::SLURMDBD,
        &ctx.app.cluster_name,
        &ctx.client,
        fields,
        errors,
        warnings,
    )
}

/// A query string's pairs, in order (as the handlers take them).
pub(super) type Pairs =
    Result<axum::extract::Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// The pairs of a query string, or Slurm's refusal of one that does not parse.
pub(super) fn pairs(q: Pairs, handler: &str) -> Result<Vec<(String, String)>, Vec<Error>> {
    q.map(|axum::extract::Query(v)| v).map_err(|e| {
        vec![Error::new(
            errno::REST_INVALID_QUERY,
            format!("Rejecting request. Failure parsing query parameters: {e}"),
            handler,
        )]
    })
}

/// A refusal of a query parameter, as Slurm's data parser words it, followed by the
/// handler's own refusal (`Rejecting request. Failure parsing query parameters`).
pub(super) fn bad_parameter(key: &str, why: String, handler: &str) -> Vec<Error> {
    vec![
        Error::new(errno::DATA_PARSE_BAD_INPUT, why, format!("#/{key}")),
        Error::new(
            errno::REST_INVALID_QUERY,
            "Rejecting request. Failure parsing query parameters",
            handler,
        ),
    ]
}

/// Slurm's warning for a query parameter its parser does not know (it is ignored).
pub(super) fn unknown_parameter(key: &str, value: &str, condition: &str) -> (String, String) {
    let kind = if value.is_empty() { "null" } else { "string" };
    (
        format!("Ignoring unknown field \"{key}\" of type {kind} in {condition}"),
        format!("#/{key}"),
    )
}

/// A comma separated list, empty items left out.
pub(super) fn csv(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// What `sacctmgr show` reads: the accounts database's snapshot.
pub(super) async fn snapshot(ctx: &Ctx) -> Result<AccountsSnapshot, Error> {
    ctx.app
        .ask(Request::Accounts)
        .await
        .map_err(|e| Error::from_api(&e, "slurmdb_connection_get()"))
}

/// Whether the caller may see every user's records whatever `PrivateData` says: root,
/// the controller's user, or an operator in the accounts database.
pub(super) fn privileged(ctx: &Ctx, snap: &AccountsSnapshot) -> bool {
    ctx.peer.uid == 0
        || ctx.peer.uid == ctx.app.own_uid
        || snap
            .users
            .iter()
            .any(|u| u.name == ctx.client.user && u.admin_level >= AdminLevel::Operator)
}

/// The only user whose records (users, associations) the caller sees:
/// `PrivateData=users` for a caller who is not [`privileged`]; `None` sees everyone's.
pub(super) fn visible_user(ctx: &Ctx, snap: &AccountsSnapshot) -> Option<String> {
    let private = ctx.app.listing.latest().private_data();
    (private.users && !privileged(ctx, snap)).then(|| ctx.client.user.clone())
}

/// Slurm's fixed TRES ids; others are numbered from 1001 in the order accounting
/// tracks them.
const FIXED_TRES: [(&str, u32); 8] = [
    ("cpu", 1),
    ("mem", 2),
    ("energy", 3),
    ("node", 4),
    ("billing", 5),
    ("fs/disk", 6),
    ("vmem", 7),
    ("pages", 8),
];

/// The id of TRES `name` among those `tracked`.
pub(super) fn tres_id(name: &str, tracked: &[String]) -> u32 {
    if let Some((_, id)) = FIXED_TRES.iter().find(|(n, _)| *n == name) {
        return *id;
    }
    let mut next = 1001;
    for t in tracked {
        if FIXED_TRES.iter().any(|(n, _)| n == t) {
            continue;
        }
        if t == name {
            return next;
        }
        next += 1;
    }
    next
}

/// TRES `name` (`gres/gpu:a100`) as Slurm's `type` (`gres`) and `name` (`gpu:a100`).
pub(super) fn tres_parts(name: &str) -> (&str, &str) {
    name.split_once('/').unwrap_or((name, ""))
}

/// A TRES list in Slurm's `TRES_STR` shape: `[{type, name, id, count}]`, counts of 0
/// left out, memory in MiB.
pub(super) fn tres_list(list: &[(String, u64)], tracked: &[String]) -> Value {
    Value::Array(
        list.iter()
            .filter(|(_, n)| *n > 0)
            .map(|(t, n)| {
                let (kind, name) = tres_parts(t);
                json!({"type": kind, "name": name, "id": tres_id(t, tracked), "count": n})
            })
            .collect(),
    )
}

/// A TRES map (limits) in Slurm's `TRES_STR` shape.
pub(super) fn tres_map(t: &Tres, tracked: &[String]) -> Value {
    let list: Vec<(String, u64)> = t.iter().map(|(k, v)| (k.clone(), *v)).collect();
    tres_list(&list, tracked)
}

/// A limit as slurmdbd keeps one: a number, or unlimited (`INFINITE`) when unset.
pub(super) fn limit(v: Option<u32>) -> Value {
    match v {
        Some(n) => envelope::number(n),
        None => json!({"set": false, "infinite": true, "number": 0}),
    }
}

/// A `*_CONDITION` read from a query: each known key's values (comma separated lists
/// joined, an empty one selecting by nothing; a flag such as `with_assocs` with its
/// value, `true` when bare), and Slurm's warnings for the keys its parser does not know.
pub(super) struct Condition {
    /// Known keys and their values.
    pub values: BTreeMap<String, Vec<String>>,
    /// Warnings (description, source).
    pub warnings: Vec<(String, String)>,
}

impl Condition {
    /// Reads `pairs` as `condition` (Slurm's name, for warnings) with its `known` keys.
    pub fn read(pairs: &[(String, String)], known: &[&str], condition: &str) -> Condition {
        let mut c = Condition {
            values: BTreeMap::new(),
            warnings: Vec::new(),
        };
        for (k, v) in pairs {
            if known.contains(&k.as_str()) {
                let e = c.values.entry(k.clone()).or_default();
                if v.is_empty() && k.starts_with("with") {
                    // A bare flag: `?with_assocs`.
                    e.push("true".into());
                } else {
                    e.extend(csv(v));
                }
            } else {
                c.warnings.push(unknown_parameter(k, v, condition));
            }
        }
        c
    }

    /// The values of `key` (none when absent).
    pub fn list(&self, key: &str) -> &[String] {
        self.values.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether `v` passes `key`'s list (any value when the key is absent).
    pub fn allows(&self, key: &str, v: &str) -> bool {
        let l = self.list(key);
        l.is_empty() || l.iter().any(|x| x == v)
    }

    /// Flag `key` (`with_assocs=true`, bare `with_assocs`).
    ///
    /// Errors: a value other than `true`/`false`, as Slurm's parser refuses it.
    pub fn flag(&self, key: &str, handler: &str) -> Result<bool, Vec<Error>> {
        match self.list(key) {
            [] => Ok(false),
            [v] if v.eq_ignore_ascii_case("true") || v == "1" => Ok(true),
            [v] if v.eq_ignore_ascii_case("false") || v == "0" => Ok(false),
            v => Err(bad_parameter(
                key,
                format!("Expected a boolean for {key} but got \"{}\"", v.join(",")),
                handler,
            )),
        }
    }
}

/// Slurm's warning when a query finds nothing (`slurmdb_..._get() found nothing`).
pub(super) fn found_nothing(getter: &str, handler: &str) -> (String, String) {
    (format!("{getter}() found nothing"), handler.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(csv("a,,b ,"), vec!["a", "b"]);
    }

    #[test]
    fn conditions_keep_known_keys_and_warn_of_others() {
        let pairs: Vec<(String, String)> = [
            ("account", "a,b"),
            ("account", "c"),
            ("user", ""),
            ("with_assocs", ""),
            ("with_coords", "maybe"),
            ("colour", "blue"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let known = ["account", "user", "with_assocs", "with_coords"];
        let c = Condition::read(&pairs, &known, "ASSOC_CONDITION");
        assert_eq!(c.list("account"), ["a", "b", "c"]);
        assert!(c.allows("account", "b") && !c.allows("account", "d"));
        // An empty list selects by nothing.
        assert!(c.allows("user", "anyone"));
        assert_eq!(c.flag("with_assocs", "h"), Ok(true));
        assert_eq!(c.flag("absent", "h"), Ok(false));
        let e = c.flag("with_coords", "h").unwrap_err();
        assert_eq!(
            e.iter().map(|e| e.number).collect::<Vec<_>>(),
            [errno::DATA_PARSE_BAD_INPUT, errno::REST_INVALID_QUERY]
        );
        assert_eq!(
            c.warnings,
            [(
                "Ignoring unknown field \"colour\" of type string in ASSOC_CONDITION".to_string(),
                "#/colour".to_string()
            )]
        );
    }

    #[test]
    fn unset_limits_are_unlimited_as_slurmdbd_keeps_them() {
        assert_eq!(limit(Some(7)), envelope::number(7));
        assert_eq!(
            limit(None),
            json!({"set": false, "infinite": true, "number": 0})
        );
    }

    #[test]
    fn tres_are_numbered_and_named_as_slurm_does() {
        let tracked: Vec<String> = ["cpu", "mem", "energy", "node", "billing", "gres/gpu"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(tres_id("cpu", &tracked), 1);
        assert_eq!(tres_id("node", &tracked), 4);
        assert_eq!(tres_id("gres/gpu", &tracked), 1001);
        assert_eq!(tres_parts("gres/gpu:a100"), ("gres", "gpu:a100"));
        assert_eq!(tres_parts("cpu"), ("cpu", ""));
        let l = tres_list(&[("cpu".into(), 2), ("gres/gpu".into(), 0)], &tracked);
        assert_eq!(l, json!([{"type": "cpu", "name": "", "id": 1, "count": 2}]));
    }
}
