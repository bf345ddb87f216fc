//! `sluice sim --limits FILE`: accounting limits for a replay, in sacctmgr's words.
//!
//! ```text
//! # account NAME [parent=ACCOUNT] [LIMIT=VALUE ...]
//! account physics grptres=cpu=256 maxjobs=8
//! account theory parent=physics grpjobs=4
//! # user UID [account=NAME] [LIMIT=VALUE ...]   (no account: in every account)
//! user 1234 account=physics maxjobs=2 maxwall=60
//! # AccountingStorageEnforce=safe for GrpTRESMins
//! enforce safe
//! ```
//!
//! Limits are sacctmgr's (`GrpTRES`, `GrpTRESMins`, `GrpTRESRunMins`, `GrpJobs`,
//! `GrpSubmitJobs`, `MaxTRES`, `MaxTRESPerNode`, `MaxTRESMins`, `MaxJobs`,
//! `MaxSubmitJobs`, `MaxWall` in minutes, and their older spellings), any case.

use std::path::Path;

use sluice_core::Cluster;
use sluice_proto::accounts::{AssocChange, Limits};
use sluice_sim::limits::{AccountLimitsLine, SimLimits, UserLimitsLine};
use sluice_sim::SimError;

use crate::slurm::sacctmgr::parse::{assoc_setting, spec, Known};

/// Reads a limits file for `cluster` (whose GRES name the TRES limits may use).
///
/// Errors: the file cannot be read; a line that is not `account`, `user` or `enforce
/// safe`, a limit sacctmgr would refuse, an unknown key (`FILE:LINE: message`).
pub fn read(path: &Path, cluster: &Cluster) -> Result<SimLimits, SimError> {
    let text = std::fs::read_to_string(path).map_err(|e| SimError::io(path, e))?;
    parse(&text, cluster)
        .map_err(|(line, m)| SimError::Machine(format!("{}:{line}: {m}", path.display())))
}

/// Parses a limits file's text; errors carry the line number.
pub fn parse(text: &str, cluster: &Cluster) -> Result<SimLimits, (usize, String)> {
    let mut tracked: Vec<String> = ["cpu", "mem", "energy", "node", "billing"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    tracked.extend((0..cluster.gres.len()).map(|s| format!("gres/{}", cluster.gres.name(s))));
    let qos = vec!["normal".to_string()];
    let known = Known {
        tracked: &tracked,
        qos: &qos,
    };
    let mut out = SimLimits::default();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        let kind = words[0].to_ascii_lowercase();
        if !matches!(kind.as_str(), "account" | "user" | "enforce") {
            return Err((
                n,
                format!("expected account, user or enforce, found '{}'", words[0]),
            ));
        }
        if kind == "enforce" {
            match words.get(1).map(|w| w.to_ascii_lowercase()).as_deref() {
                Some("safe") if words.len() == 2 => out.safe = true,
                _ => return Err((n, "expected 'enforce safe'".into())),
            }
            continue;
        }
        let s = spec(&words[1..]);
        let [name] = s.names.as_slice() else {
            return Err((n, format!("expected one {kind} name")));
        };
        let mut change = AssocChange::default();
        let mut account = None;
        for p in &s.head {
            if kind == "user" && p.key == "account" {
                account = Some(p.value.to_ascii_lowercase());
                continue;
            }
            match assoc_setting(p, &known, &mut change, kind == "account") {
                Ok(true) => {}
                Ok(false) => return Err((n, format!("unknown setting '{}'", p.word))),
                Err(bad) => {
                    let why: Vec<String> = bad
                        .errors
                        .iter()
                        .map(|e| {
                            let e = e.trim_start_matches("sacctmgr: error: ");
                            e.split_whitespace().collect::<Vec<_>>().join(" ")
                        })
                        .collect();
                    return Err((n, format!("'{}': {}", p.word, why.join("; "))));
                }
            }
        }
        if change.shares.is_some()
            || change.priority.is_some()
            || change.qos.is_some()
            || change.default_qos.is_some()
        {
            return Err((n, "only limits (and parent=) are simulated here".into()));
        }
        let mut limits = Limits::default();
        change.limits.apply(&mut limits);
        let limits = sluice_ctld::accounts::limits::core_limits(cluster, &limits);
        if let Some(parent) = &change.parent {
            if !out.accounts.iter().any(|a| a.name == *parent) {
                return Err((n, format!("parent {parent} is not listed before this line")));
            }
        }
        match kind.as_str() {
            "account" => out.accounts.push(AccountLimitsLine {
                name: name.to_ascii_lowercase(),
                parent: change.parent,
                limits,
            }),
            "user" => out.users.push(UserLimitsLine {
                uid: name
                    .parse()
                    .map_err(|_| (n, format!("a user is a numeric uid, not '{name}'")))?,
                account,
                limits,
            }),
            _ => unreachable!("checked above"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::limits::TresKind;
    use sluice_core::{Node, NodeId, Partition};

    fn cluster() -> Cluster {
        let mut c = Cluster::default();
        c.nodes.push(Node::new("n1", 4, 1000));
        c.partitions.push(Partition::new("p", vec![NodeId(0)]));
        c
    }

    #[test]
    fn accounts_users_and_safe_in_sacctmgrs_words() {
        let text = "# limits\n\
                    account physics GrpTRES=cpu=256 maxjobs=8\n\
                    account theory parent=physics grpjobs=4   # nested\n\
                    user 1234 account=physics MaxWall=60\n\
                    enforce safe\n";
        let l = parse(text, &cluster()).unwrap();
        assert!(l.safe);
        assert_eq!(l.accounts.len(), 2);
        assert_eq!(l.accounts[0].limits.grp_tres, vec![(TresKind::Cpu, 256)]);
        assert_eq!(l.accounts[0].limits.max_jobs, Some(8));
        assert_eq!(l.accounts[1].parent.as_deref(), Some("physics"));
        assert_eq!(l.accounts[1].limits.grp_jobs, Some(4));
        assert_eq!(
            (
                l.users[0].uid,
                l.users[0].account.as_deref(),
                l.users[0].limits.max_wall
            ),
            (1234, Some("physics"), Some(3600))
        );
    }

    #[test]
    fn bad_lines_say_where_and_why() {
        let c = cluster();
        let err = |t: &str| parse(t, &c).unwrap_err();
        assert_eq!(
            err("group x\n").1,
            "expected account, user or enforce, found 'group'"
        );
        assert_eq!(
            err("\naccount a colour=red\n"),
            (2, "unknown setting 'colour=red'".into())
        );
        assert_eq!(
            err("account a maxjobs=lots\n"),
            (1, "'maxjobs=lots': Invalid value for MaxJobs (lots)".into())
        );
        assert_eq!(
            err("user alice maxjobs=1\n").1,
            "a user is a numeric uid, not 'alice'"
        );
        assert_eq!(
            err("account a fairshare=5\n").1,
            "only limits (and parent=) are simulated here"
        );
        assert_eq!(err("enforce limits\n").1, "expected 'enforce safe'");
        assert_eq!(
            err("qos high maxjobs=1\n").1,
            "expected account, user or enforce, found 'qos'"
        );
        assert_eq!(
            err("account a\naccount b parent=c\n"),
            (2, "parent c is not listed before this line".into())
        );
        assert_eq!(
            err("account a,b maxjobs=1\n").1,
            "expected one account name"
        );
    }
}
