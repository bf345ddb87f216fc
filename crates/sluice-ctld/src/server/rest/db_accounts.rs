//! `GET /slurmdb/v0.0.44/accounts[?ACCOUNT_CONDITION]` and `account/{name}`: the
//! accounts as `sacctmgr show accounts` lists them, in Slurm's `ACCOUNT` shape (with
//! their associations when asked, `with_assocs`). Under `PrivateData=accounts` a user
//! who is not an operator sees only the accounts they have an association in.

use axum::extract::Path;
use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::{AccountRecord, AccountsSnapshot};

use super::db::{self, Condition, Pairs};
use super::db_associations::short;
use super::envelope::Error;
use super::{fields, Ctx};

/// `ACCOUNT_CONDITION`'s keys.
const KNOWN: [&str; 6] = [
    "association",
    "description",
    "with_assocs",
    "with_coords",
    "with_deleted",
    "format",
];

/// An account in Slurm's `ACCOUNT` shape; its associations with `with_assocs`.
fn account(a: &AccountRecord, snap: &AccountsSnapshot, with_assocs: bool) -> Value {
    let assocs: Vec<Value> = if with_assocs {
        snap.associations
            .iter()
            .filter(|l| l.record.account == a.name)
            .map(|l| short(&l.record))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "associations": assocs,
        "coordinators": [],
        "description": a.description,
        "name": a.name,
        "organization": a.organization,
        "flags": [],
    })
}

/// The accounts `c` selects that the caller may see (`name`: that one alone).
async fn accounts(
    ctx: &Ctx,
    c: &Condition,
    name: Option<&str>,
    handler: &str,
) -> Result<Vec<Value>, Vec<Error>> {
    let with_assocs = c.flag("with_assocs", handler)?;
    c.flag("with_coords", handler)?;
    c.flag("with_deleted", handler)?;
    let snap = db::snapshot(ctx).await.map_err(|e| vec![e])?;
    let private = ctx.app.listing.latest().private_data().accounts && !db::privileged(ctx, &snap);
    let mine = |acct: &str| {
        snap.associations
            .iter()
            .any(|l| l.record.account == acct && l.record.user.as_deref() == Some(&ctx.client.user))
    };
    Ok(snap
        .accounts
        .iter()
        .filter(|a| name.is_none_or(|n| a.name == n))
        .filter(|a| c.allows("description", &a.description))
        .filter(|a| !private || mine(&a.name))
        .map(|a| account(a, &snap, with_assocs))
        .collect())
}

/// The answer: `accounts[]`, with Slurm's warning when none is found.
async fn answer(ctx: Ctx, q: Pairs, name: Option<String>, handler: &str) -> Response {
    let empty = || fields([("accounts", json!([]))]);
    let pairs = match db::pairs(q, handler) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let c = Condition::read(&pairs, &KNOWN, "ACCOUNT_CONDITION");
    match accounts(&ctx, &c, name.as_deref(), handler).await {
        Ok(found) => {
            let mut warnings = c.warnings;
            if found.is_empty() {
                warnings.push(db::found_nothing("slurmdb_accounts_get", "_dump_accounts"));
            }
            db::answer(
                &ctx,
                fields([("accounts", Value::Array(found))]),
                &[],
                &warnings,
            )
        }
        Err(e) => db::answer(&ctx, empty(), &e, &[]),
    }
}

/// `GET accounts`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    answer(ctx, q, None, "op_handler_accounts").await
}

/// `GET account/{name}`.
pub(super) async fn one(ctx: Ctx, Path(name): Path<String>, q: Pairs) -> Response {
    answer(
        ctx,
        q,
        Some(name.to_ascii_lowercase()),
        "op_handler_account",
    )
    .await
}
