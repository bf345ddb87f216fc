//! Who may use a partition and how its nodes are shared (slurm.conf's `AllowAccounts`,
//! `DenyAccounts`, `AllowQos`, `DenyQos`, `AllowGroups`, `OverSubscribe`).
//!
//! The lists hold names; the caller, who knows a job's account, QOS and its owner's
//! groups, asks [`PartitionAccess::check`] at submission. As in Slurm, a group not
//! allowed refuses the submission outright, while an account or QOS not allowed refuses
//! it only under `EnforcePartLimits` and otherwise leaves the job pending with reason
//! `AccountNotAllowed` or `QOSNotAllowed` (the caller passes that on in
//! [`crate::limits::JobAcct::not_allowed`]).

/// A partition's access lists. `None` for an `Allow*` list means `ALL`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionAccess {
    /// `AllowAccounts`.
    pub allow_accounts: Option<Vec<String>>,
    /// `DenyAccounts`.
    pub deny_accounts: Vec<String>,
    /// `AllowQos`.
    pub allow_qos: Option<Vec<String>>,
    /// `DenyQos`.
    pub deny_qos: Vec<String>,
    /// `AllowGroups` (group names).
    pub allow_groups: Option<Vec<String>>,
}

/// Why a partition does not take a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotAllowed {
    /// None of the owner's groups is in `AllowGroups`.
    Group,
    /// The job's account is not in `AllowAccounts`, or is in `DenyAccounts`.
    Account,
    /// The job's QOS is not in `AllowQos`, or is in `DenyQos`.
    Qos,
}

impl NotAllowed {
    /// Slurm's pending reason for a job accepted anyway (`EnforcePartLimits=NO`).
    pub fn reason(self) -> &'static str {
        match self {
            NotAllowed::Group => "PartitionConfig",
            NotAllowed::Account => "AccountNotAllowed",
            NotAllowed::Qos => "QOSNotAllowed",
        }
    }
}

fn has(list: &[String], name: &str) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(name))
}

impl PartitionAccess {
    /// Whether a job of `account` and `qos`, owned by a member of `groups` (or by the
    /// superuser, whom `AllowGroups` never stops), may use the partition: the first
    /// thing that stops it, groups first.
    pub fn check(
        &self,
        account: &str,
        qos: &str,
        groups: &[String],
        superuser: bool,
    ) -> Result<(), NotAllowed> {
        if let Some(allowed) = &self.allow_groups {
            if !superuser && !groups.iter().any(|g| has(allowed, g)) {
                return Err(NotAllowed::Group);
            }
        }
        let account_ok = self.allow_accounts.as_ref().is_none_or(|a| has(a, account))
            && !has(&self.deny_accounts, account);
        if !account_ok {
            return Err(NotAllowed::Account);
        }
        let qos_ok =
            self.allow_qos.as_ref().is_none_or(|a| has(a, qos)) && !has(&self.deny_qos, qos);
        if !qos_ok {
            return Err(NotAllowed::Qos);
        }
        Ok(())
    }
}

/// `OverSubscribe=`: whether jobs share a partition's nodes.
///
/// The core shares a node between jobs by its resources (CPUs, memory, GRES); so `NO`,
/// `YES` and `FORCE` schedule the same way, except that under `PreemptMode=GANG`
/// `FORCE:N` lets up to N jobs be allocated the same CPUs and time-slices them (see
/// [`crate::timeslice`]); `EXCLUSIVE` gives every job whole nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverSubscribe {
    /// `NO` (the default): jobs share nodes by resources.
    #[default]
    No,
    /// `EXCLUSIVE`: every job gets whole nodes, as with `--exclusive`.
    Exclusive,
    /// `YES[:count]`.
    Yes(u16),
    /// `FORCE[:count]`.
    Force(u16),
}

impl OverSubscribe {
    /// Parses slurm.conf's value (`NO`, `EXCLUSIVE`, `YES`, `YES:4`, `FORCE`,
    /// `FORCE:4`; any case; the count defaults to 4 as in Slurm).
    ///
    /// Errors: anything else.
    pub fn parse(s: &str) -> Result<OverSubscribe, String> {
        let up = s.trim().to_ascii_uppercase();
        let (word, count) = match up.split_once(':') {
            Some((w, c)) => (
                w.to_string(),
                Some(
                    c.parse::<u16>()
                        .map_err(|_| format!("invalid OverSubscribe count '{c}'"))?,
                ),
            ),
            None => (up.clone(), None),
        };
        match (word.as_str(), count) {
            ("NO", None) => Ok(OverSubscribe::No),
            ("EXCLUSIVE", None) => Ok(OverSubscribe::Exclusive),
            ("YES", c) => Ok(OverSubscribe::Yes(c.unwrap_or(4))),
            ("FORCE", c) => Ok(OverSubscribe::Force(c.unwrap_or(4))),
            _ => Err(format!(
                "expected NO, EXCLUSIVE, YES[:count] or FORCE[:count], found '{s}'"
            )),
        }
    }

    /// As `scontrol show partition` prints it: `NO`, `EXCLUSIVE`, `YES:4`, `FORCE:4`.
    pub fn as_string(self) -> String {
        match self {
            OverSubscribe::No => "NO".into(),
            OverSubscribe::Exclusive => "EXCLUSIVE".into(),
            OverSubscribe::Yes(n) => format!("YES:{n}"),
            OverSubscribe::Force(n) => format!("FORCE:{n}"),
        }
    }
}

impl PartitionAccess {
    /// The pending reason Slurm 22.05 shows for a job `check` found not allowed (its
    /// own words, naming the list): `Job's account not permitted to use this partition
    /// (debug allows phys not chem)`, `... (debug denies chem including chem)`, and the
    /// same for QOS. `partition` is the partition's name.
    pub fn describe(&self, partition: &str, which: NotAllowed, account: &str, qos: &str) -> String {
        let (what, allow, deny, name) = match which {
            NotAllowed::Group => return which.reason().to_string(),
            NotAllowed::Account => (
                "account",
                &self.allow_accounts,
                &self.deny_accounts,
                account,
            ),
            NotAllowed::Qos => ("QOS", &self.allow_qos, &self.deny_qos, qos),
        };
        let detail = match allow {
            Some(list) if !has(list, name) => format!("allows {} not {name}", list.join(",")),
            _ => format!("denies {} including {name}", deny.join(",")),
        };
        format!("Job's {what} not permitted to use this partition ({partition} {detail})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn groups_come_first_then_accounts_then_qos() {
        let p = PartitionAccess {
            allow_accounts: names(&["phys"]),
            deny_qos: vec!["low".into()],
            allow_groups: names(&["hpc"]),
            ..Default::default()
        };
        let hpc = ["hpc".to_string()];
        assert_eq!(p.check("chem", "low", &[], false), Err(NotAllowed::Group));
        assert_eq!(p.check("chem", "low", &[], true), Err(NotAllowed::Account));
        assert_eq!(p.check("phys", "low", &hpc, false), Err(NotAllowed::Qos));
        assert_eq!(p.check("PHYS", "normal", &hpc, false), Ok(()));
    }

    #[test]
    fn reasons_name_the_list_as_slurm_does() {
        let p = PartitionAccess {
            allow_accounts: names(&["limb"]),
            deny_qos: vec!["limq".into()],
            ..Default::default()
        };
        assert_eq!(
            p.describe("allowacct", NotAllowed::Account, "lima", "normal"),
            "Job's account not permitted to use this partition (allowacct allows limb not lima)"
        );
        assert_eq!(
            p.describe("denyqos", NotAllowed::Qos, "limb", "limq"),
            "Job's QOS not permitted to use this partition (denyqos denies limq including limq)"
        );
    }

    #[test]
    fn oversubscribe_round_trips() {
        for s in ["NO", "EXCLUSIVE", "YES:4", "FORCE:2"] {
            assert_eq!(OverSubscribe::parse(s).unwrap().as_string(), s);
        }
        assert_eq!(OverSubscribe::parse("yes"), Ok(OverSubscribe::Yes(4)));
        assert!(OverSubscribe::parse("sometimes").is_err());
    }
}
