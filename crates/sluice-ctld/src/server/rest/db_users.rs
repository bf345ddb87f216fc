//! `GET /slurmdb/v0.0.44/users[?USER_CONDITION]`: the users as `sacctmgr show users`
//! lists them, in Slurm's `USER` shape (with their associations when asked,
//! `with_assocs`). Under `PrivateData=users` a user who is not an operator sees only
//! themselves.

use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::{AccountsSnapshot, AdminLevel, UserRecord};

use super::db::{self, Condition, Pairs};
use super::db_associations::short;
use super::envelope::Error;
use super::{fields, Ctx};

/// The source Slurm's errors name.
const HANDLER: &str = "op_handler_users";

/// `USER_CONDITION`'s keys.
const KNOWN: [&str; 9] = [
    "admin_level",
    "association",
    "default_account",
    "default_wckey",
    "with_assocs",
    "with_coords",
    "with_deleted",
    "with_wckeys",
    "without_defaults",
];

/// A user in Slurm's `USER` shape; its associations with `with_assocs`.
fn user(u: &UserRecord, snap: &AccountsSnapshot, with_assocs: bool) -> Value {
    let assocs: Vec<Value> = if with_assocs {
        snap.associations
            .iter()
            .filter(|l| l.record.user.as_deref() == Some(u.name.as_str()))
            .map(|l| short(&l.record))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "administrator_level": [u.admin_level.name()],
        "associations": assocs,
        "coordinators": [],
        "default": {
            "account": u.default_account.clone().unwrap_or_default(),
            "wckey": "",
            "qos": 0,
        },
        "flags": [],
        "name": u.name,
        "old_name": "",
        "wckeys": [],
    })
}

/// The users `c` selects that the caller may see.
async fn users(ctx: &Ctx, c: &Condition) -> Result<Vec<Value>, Vec<Error>> {
    let with_assocs = c.flag("with_assocs", HANDLER)?;
    for f in [
        "with_coords",
        "with_deleted",
        "with_wckeys",
        "without_defaults",
    ] {
        c.flag(f, HANDLER)?;
    }
    let mut levels = Vec::new();
    for l in c.list("admin_level") {
        let level = AdminLevel::parse(l).ok_or_else(|| {
            db::bad_parameter("admin_level", format!("Unknown admin level {l}"), HANDLER)
        })?;
        levels.push(level);
    }
    let snap = db::snapshot(ctx).await.map_err(|e| vec![e])?;
    let mine = db::visible_user(ctx, &snap);
    let mut found: Vec<&UserRecord> = snap
        .users
        .iter()
        .filter(|u| levels.is_empty() || levels.contains(&u.admin_level))
        .filter(|u| {
            c.list("default_account").is_empty()
                || u.default_account
                    .as_ref()
                    .is_some_and(|a| c.allows("default_account", a))
        })
        .filter(|u| mine.as_ref().is_none_or(|m| *m == u.name))
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found
        .into_iter()
        .map(|u| user(u, &snap, with_assocs))
        .collect())
}

/// `GET users`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    let empty = || fields([("users", json!([]))]);
    let pairs = match db::pairs(q, HANDLER) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let c = Condition::read(&pairs, &KNOWN, "USER_CONDITION");
    match users(&ctx, &c).await {
        Ok(found) => {
            let mut warnings = c.warnings;
            if found.is_empty() {
                warnings.push(db::found_nothing("slurmdb_users_get", "_dump_users"));
            }
            db::answer(
                &ctx,
                fields([("users", Value::Array(found))]),
                &[],
                &warnings,
            )
        }
        Err(e) => db::answer(&ctx, empty(), &e, &[]),
    }
}
