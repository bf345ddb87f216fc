//! cohorts.conf as the scheduling core takes it ([`sluice_core::Cohort`]): account
//! associations for account names, TRES kinds for TRES names. Built at start and again
//! whenever the accounts change (like the limits), by the controller and the simulator.

use sluice_conf::cohorts_conf::CohortsConf;
use sluice_conf::slurm_conf::ConfError;
use sluice_core::limits::{AssocId, TresLimits};
use sluice_core::{Cluster, Cohort, CohortMember};

use super::limits::tres_kind;

/// The cohorts of `conf` on `cluster`, with each account's association from
/// `account_id`. A member whose account does not exist (yet) is left out: it borrows and
/// lends nothing until it does.
///
/// Errors, with file and line: a TRES the cluster does not have (a GRES no node has).
pub fn core_cohorts(
    conf: &CohortsConf,
    cluster: &Cluster,
    account_id: impl Fn(&str) -> Option<AssocId>,
) -> Result<Vec<Cohort>, ConfError> {
    let mut out: Vec<Cohort> = Vec::new();
    for name in conf.cohorts() {
        let mut cohort = Cohort {
            name: name.to_string(),
            members: Vec::new(),
        };
        for m in conf.members.iter().filter(|m| m.cohort == name) {
            let tres = |list: &[(String, u64)]| -> Result<TresLimits, ConfError> {
                list.iter()
                    .map(|(n, c)| {
                        tres_kind(cluster, n)
                            .map(|k| (k, *c))
                            .ok_or_else(|| ConfError {
                                path: m.path.clone(),
                                line: m.line,
                                message: format!("TRES {n}: no node of the cluster has it"),
                            })
                    })
                    .collect()
            };
            let quota = tres(&m.quota)?;
            let borrow_limit = tres(&m.borrow_limit)?;
            let Some(account) = account_id(&m.account) else {
                continue;
            };
            cohort.members.push(CohortMember {
                account,
                quota,
                borrow_limit,
                grace_time: m.grace_time,
            });
        }
        out.push(cohort);
    }
    Ok(out)
}

impl super::Accounts {
    /// The association of account `name` (not a user's), if it exists.
    pub fn account_assoc(&self, name: &str) -> Option<AssocId> {
        self.associations()
            .find(|a| a.user.is_none() && a.account.eq_ignore_ascii_case(name))
            .map(|a| AssocId(a.id))
    }
}
