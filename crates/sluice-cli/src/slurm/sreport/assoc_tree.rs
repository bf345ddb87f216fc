//! The association tree `cluster AccountUtilizationByUser` walks: the accounts and
//! their users in `sacctmgr show assoc` order, and which accounts lie under which.

use std::collections::{BTreeMap, BTreeSet};

use super::reports::Data;

/// An association row: depth in the tree, account, user (`None`: the account's own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AssocRow {
    /// Depth in the tree (0: `root`).
    pub(super) depth: u32,
    /// The account.
    pub(super) account: String,
    /// The user; `None` for the account's own line.
    pub(super) user: Option<String>,
}

/// The association tree to report on: the listing (one row per account and user,
/// whatever the partitions), then accounts that only jobs name (deleted since), under
/// `root`, with their users.
pub(super) fn assoc_rows(
    data: &Data,
    used: &BTreeMap<(String, String), u64>,
) -> (Vec<AssocRow>, BTreeMap<String, String>) {
    let mut rows: Vec<AssocRow> = Vec::new();
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut seen: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    for a in &data.assocs {
        let r = &a.record;
        if r.user.is_none() {
            if let Some(p) = &r.parent {
                parent.insert(r.account.clone(), p.clone());
            }
        }
        if seen.insert((r.account.clone(), r.user.clone())) {
            rows.push(AssocRow {
                depth: a.depth,
                account: r.account.clone(),
                user: r.user.clone(),
            });
        }
    }
    if rows.is_empty() {
        rows.push(AssocRow {
            depth: 0,
            account: "root".into(),
            user: None,
        });
    }
    let mut extra: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (acct, user) in used.keys() {
        if !seen.contains(&(acct.clone(), Some(user.clone()))) {
            extra.entry(acct).or_default().push(user);
        }
    }
    for (acct, users) in extra {
        if !seen.contains(&(acct.to_string(), None)) {
            parent.insert(acct.to_string(), "root".into());
            rows.push(AssocRow {
                depth: 1,
                account: acct.into(),
                user: None,
            });
        }
        let depth = rows
            .iter()
            .find(|r| r.account == acct && r.user.is_none())
            .map_or(1, |r| r.depth);
        let at = rows
            .iter()
            .rposition(|r| r.account == acct)
            .map_or(rows.len(), |i| i + 1);
        for (k, u) in users.into_iter().enumerate() {
            rows.insert(
                at + k,
                AssocRow {
                    depth: depth + 1,
                    account: acct.into(),
                    user: Some(u.into()),
                },
            );
        }
    }
    (rows, parent)
}

/// Whether `account` is `ancestor` or below it.
pub(super) fn under(account: &str, ancestor: &str, parent: &BTreeMap<String, String>) -> bool {
    let mut a = account;
    for _ in 0..64 {
        if a == ancestor {
            return true;
        }
        match parent.get(a) {
            Some(p) => a = p,
            None => return ancestor == "root",
        }
    }
    false
}
