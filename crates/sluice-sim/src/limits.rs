//! Accounting limits in a replay (`sluice sim --limits`): the same core limits the
//! live controller enforces (`AccountingStorageEnforce=limits`), on accounts and users
//! of the trace.
//!
//! Accounts are named as fair-share names them ([`account_name`]: the `--accounts`
//! mapping, else `g<gid>`), each under `root` unless a line gives it a parent; every
//! user has an association in its account. A job the limits hold waits (with Slurm's
//! reason, in the core), and a submit limit refuses it (counted as rejected).

use std::collections::BTreeMap;

use sluice_core::limits::{AccountLimits, Assoc, AssocId, Enforce, JobAcct, Limits};

use crate::setup::SimJob;

/// One account's line: its parent (`None`: `root`) and its own limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountLimitsLine {
    /// Account name.
    pub name: String,
    /// Parent account; `None` for `root`.
    pub parent: Option<String>,
    /// Its limits.
    pub limits: Limits,
}

/// One user's line: the user's own limits, in one account or in all of theirs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserLimitsLine {
    /// User id.
    pub uid: u32,
    /// The account (`None`: every account the user's jobs charge).
    pub account: Option<String>,
    /// Its limits.
    pub limits: Limits,
}

/// The limits of a replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimLimits {
    /// Accounts, in file order (a parent before its children).
    pub accounts: Vec<AccountLimitsLine>,
    /// Users.
    pub users: Vec<UserLimitsLine>,
    /// `AccountingStorageEnforce=safe`.
    pub safe: bool,
}

/// The account a job charges: its user's in `accounts`, else its group's (`g<gid>`).
pub fn account_name(accounts: &BTreeMap<u32, String>, job: &SimJob) -> String {
    match accounts.get(&job.spec.user) {
        Some(a) => a.clone(),
        None => format!("g{}", job.group),
    }
}

impl SimLimits {
    /// The database the core enforces, and each job's place in it (in `jobs` order).
    ///
    /// Errors: a parent account that is not listed before its child.
    pub fn build(
        &self,
        jobs: &[SimJob],
        accounts: &BTreeMap<u32, String>,
    ) -> Result<(AccountLimits, Vec<JobAcct>), String> {
        self.build_named(jobs, accounts)
            .map(|(db, accts, _)| (db, accts))
    }

    /// [`SimLimits::build`], with every account's association by name (for
    /// `--cohorts`).
    ///
    /// Errors: as [`SimLimits::build`].
    #[allow(clippy::type_complexity)]
    pub fn build_named(
        &self,
        jobs: &[SimJob],
        accounts: &BTreeMap<u32, String>,
    ) -> Result<(AccountLimits, Vec<JobAcct>, BTreeMap<String, AssocId>), String> {
        const ROOT: AssocId = AssocId(0);
        let mut db = AccountLimits {
            enforce: Enforce {
                limits: true,
                safe: self.safe,
            },
            ..Default::default()
        };
        db.assocs.insert(ROOT, Assoc::default());
        let mut ids: BTreeMap<String, AssocId> = BTreeMap::new();
        // Associations get ids in the order they are made, after root's 0.
        let push = |db: &mut AccountLimits, parent: AssocId, user: bool, limits: Limits| {
            let id = AssocId(db.assocs.len() as u32);
            let parent = Some(parent);
            db.assocs.insert(
                id,
                Assoc {
                    parent,
                    user,
                    limits,
                },
            );
            id
        };
        for a in &self.accounts {
            let parent = match &a.parent {
                None => ROOT,
                Some(p) => *ids.get(p).ok_or_else(|| {
                    format!("account {}: parent {p} is not listed before it", a.name)
                })?,
            };
            let id = push(&mut db, parent, false, a.limits.clone());
            ids.insert(a.name.clone(), id);
        }
        let mut users: BTreeMap<(AssocId, u32), AssocId> = BTreeMap::new();
        let mut out = Vec::with_capacity(jobs.len());
        for j in jobs {
            let name = account_name(accounts, j);
            let account = match ids.get(&name) {
                Some(a) => *a,
                None => {
                    let id = push(&mut db, ROOT, false, Limits::default());
                    ids.insert(name.clone(), id);
                    id
                }
            };
            let uid = j.spec.user;
            let user = match users.get(&(account, uid)) {
                Some(u) => *u,
                None => {
                    let limits = self
                        .users
                        .iter()
                        .find(|u| u.uid == uid && u.account.as_ref().is_none_or(|a| *a == name))
                        .map(|u| u.limits.clone())
                        .unwrap_or_default();
                    let id = push(&mut db, account, true, limits);
                    users.insert((account, uid), id);
                    id
                }
            };
            out.push(JobAcct {
                assoc: Some(user),
                ..Default::default()
            });
        }
        Ok((db, out, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::limits::TresKind;
    use sluice_core::{JobId, JobRequest, JobSpec, PartitionId};

    fn job(id: u64, user: u32, group: u32) -> SimJob {
        SimJob {
            spec: JobSpec {
                id: JobId(id),
                user,
                partition: PartitionId(0),
                submit: 0,
                begin: 0,
                request: JobRequest::procs(1),
                time_limit: 60,
                priority: 0,
                acct: JobAcct::default(),
            },
            run: 60,
            procs: 1,
            gpu_milli: 0,
            group,
        }
    }

    #[test]
    fn accounts_and_users_get_their_lines_limits_and_jobs_their_user_association() {
        let limits = SimLimits {
            accounts: vec![
                AccountLimitsLine {
                    name: "physics".into(),
                    parent: None,
                    limits: Limits {
                        grp_tres: vec![(TresKind::Cpu, 8)],
                        ..Default::default()
                    },
                },
                AccountLimitsLine {
                    name: "g7".into(),
                    parent: Some("physics".into()),
                    limits: Limits::default(),
                },
            ],
            users: vec![UserLimitsLine {
                uid: 1,
                account: None,
                limits: Limits {
                    max_jobs: Some(2),
                    ..Default::default()
                },
            }],
            safe: false,
        };
        let map: BTreeMap<u32, String> = [(1, "physics".to_string())].into();
        let jobs = [job(1, 1, 5), job(2, 2, 7), job(3, 1, 5), job(4, 3, 9)];
        let (db, accts) = limits.build(&jobs, &map).unwrap();
        // root 0, physics 1, g7 2 (under physics), user 1 in physics 3, user 2 in g7 4,
        // g9 5 (not listed: under root), user 3 in g9 6.
        let assoc = |i: usize| accts[i].assoc.unwrap();
        assert_eq!(
            (assoc(0), assoc(1), assoc(2), assoc(3)),
            (AssocId(3), AssocId(4), AssocId(3), AssocId(6))
        );
        assert_eq!(
            db.chain(AssocId(4)),
            vec![AssocId(4), AssocId(2), AssocId(1), AssocId(0)]
        );
        assert_eq!(db.assocs[&AssocId(3)].limits.max_jobs, Some(2));
        assert_eq!(
            db.assocs[&AssocId(1)].limits.grp_tres,
            vec![(TresKind::Cpu, 8)]
        );
        assert_eq!(
            db.chain(AssocId(6)),
            vec![AssocId(6), AssocId(5), AssocId(0)]
        );
        let bad = SimLimits {
            accounts: vec![AccountLimitsLine {
                name: "a".into(),
                parent: Some("b".into()),
                limits: Limits::default(),
            }],
            ..Default::default()
        };
        assert_eq!(
            bad.build(&jobs, &map).unwrap_err(),
            "account a: parent b is not listed before it"
        );
    }
}
