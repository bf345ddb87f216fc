//! `cohorts.conf` (Sluice's own file, next to slurm.conf): cohorts of accounts that
//! lend each other their unused GPU or CPU quota (beyond Slurm; see the README's
//! "Borrowing between accounts" and `sluice_core::borrow`).
//!
//! Read the way [`crate::slurm_conf`] reads slurm.conf (`#` comments, `\`
//! continuations, `Include FILE`, case-insensitive keys). One member account per line:
//!
//! ```text
//! Cohort=ml Account=vision Quota=gres/gpu=8 BorrowLimit=gres/gpu=4 GraceTime=60
//! Cohort=ml Account=nlp    Quota=gres/gpu=8,cpu=128
//! ```
//!
//! - `Cohort=`, `Account=` and `Quota=` are required; an account is a member of one
//!   cohort at most (account names are compared in lower case, as sacctmgr keeps them).
//! - `Quota=` and `BorrowLimit=` are TRES lists: `cpu=N`, `mem=SIZE` (`64G`), `node=N`,
//!   `billing=N`, `gres/NAME=N`, `gres/NAME:TYPE=N`.
//! - No `BorrowLimit`: the account may borrow all its cohort's unused quota;
//!   `BorrowLimit=0`: it borrows nothing; a TRES the list leaves out may be borrowed
//!   without limit. `BorrowLimit` names only TRES of the line's `Quota`.
//! - `GraceTime=` (seconds, default 0): how long the account's borrowed jobs run on after
//!   their signal when their owners take the capacity back.
//!
//! This module only reads and checks the file; which TRES exist on the cluster and which
//! accounts exist are checked by the controller and the simulator.

use std::path::{Path, PathBuf};

use crate::reader::ConfReader;
use crate::slurm_conf::ConfError;

/// One member account's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberLine {
    /// `Cohort=`: the cohort's name.
    pub cohort: String,
    /// `Account=`, lower case.
    pub account: String,
    /// `Quota=`: `(TRES name, count)`, names in lower case (memory in MiB).
    pub quota: Vec<(String, u64)>,
    /// `BorrowLimit=`: as `quota`; empty without one.
    pub borrow_limit: Vec<(String, u64)>,
    /// `GraceTime=`, seconds.
    pub grace_time: i64,
    /// Where the line is (for messages).
    pub path: PathBuf,
    /// Its 1-based line number.
    pub line: usize,
}

/// A parsed cohorts.conf.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CohortsConf {
    /// Member lines, in file order.
    pub members: Vec<MemberLine>,
}

impl CohortsConf {
    /// The cohorts' names, in order of their first line.
    pub fn cohorts(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for m in &self.members {
            if !out.contains(&m.cohort.as_str()) {
                out.push(&m.cohort);
            }
        }
        out
    }
}

/// Reads and parses a cohorts.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, and what [`parse_str`] refuses.
pub fn read(path: &Path) -> Result<CohortsConf, ConfError> {
    let mut p = Parser::default();
    p.read_file(path, 0)?;
    Ok(p.out)
}

/// Parses cohorts.conf text; `path` is used for messages and relative `Include`s.
///
/// Errors, each with file and line: an unknown key or one given twice on a line; a line
/// without `Cohort=`, `Account=` or `Quota=`; an empty name; an account listed twice; a
/// TRES list that is empty or malformed (`name=count`, known names only, counts whole
/// numbers, sizes for `mem`) or names a TRES twice; `BorrowLimit` naming a TRES its
/// `Quota` does not; a `GraceTime` that is not a whole number of seconds.
pub fn parse_str(text: &str, path: &Path) -> Result<CohortsConf, ConfError> {
    let mut p = Parser::default();
    p.parse_text(text, path, 0)?;
    Ok(p.out)
}

#[derive(Default)]
struct Parser {
    out: CohortsConf,
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = |message: String| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut fields: [Option<String>; 5] = Default::default();
        const KEYS: [&str; 5] = ["Cohort", "Account", "Quota", "BorrowLimit", "GraceTime"];
        for (k, v) in kv {
            let Some(i) = KEYS.iter().position(|n| n.eq_ignore_ascii_case(&k)) else {
                return Err(err(format!("unknown key '{k}'")));
            };
            if fields[i].replace(v).is_some() {
                return Err(err(format!("{} given twice", KEYS[i])));
            }
        }
        let [cohort, account, quota, borrow, grace] = fields;
        let need = |v: Option<String>, key: &str| match v {
            Some(v) if !v.trim().is_empty() => Ok(v),
            _ => Err(err(format!("a member line needs {key}="))),
        };
        let cohort = need(cohort, "Cohort")?;
        let account = need(account, "Account")?.to_ascii_lowercase();
        let quota = parse_tres(&need(quota, "Quota")?).map_err(|m| err(format!("Quota: {m}")))?;
        let borrow_limit = match borrow {
            None => Vec::new(),
            Some(v) if v.trim() == "0" => quota.iter().map(|(n, _)| (n.clone(), 0)).collect(),
            Some(v) => parse_tres(&v).map_err(|m| err(format!("BorrowLimit: {m}")))?,
        };
        if let Some((n, _)) = borrow_limit
            .iter()
            .find(|(n, _)| !quota.iter().any(|(q, _)| q == n))
        {
            return Err(err(format!("BorrowLimit: {n} is not in Quota")));
        }
        let grace_time = match grace {
            None => 0,
            Some(v) => v
                .parse::<u32>()
                .map(i64::from)
                .map_err(|_| err(format!("GraceTime: '{v}' is not a number of seconds")))?,
        };
        if let Some(prev) = self.out.members.iter().find(|m| m.account == account) {
            return Err(err(format!(
                "account {account} is already a member of cohort {} (line {})",
                prev.cohort, prev.line
            )));
        }
        self.out.members.push(MemberLine {
            cohort,
            account,
            quota,
            borrow_limit,
            grace_time,
            path: path.to_path_buf(),
            line,
        });
        Ok(())
    }
}

/// A TRES list: `cpu=64,mem=256G,gres/gpu=8`.
fn parse_tres(s: &str) -> Result<Vec<(String, u64)>, String> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for item in s.split(',') {
        let Some((name, value)) = item.split_once('=') else {
            return Err(format!("'{item}' is not NAME=COUNT"));
        };
        let name = name.trim().to_ascii_lowercase();
        let known = matches!(name.as_str(), "cpu" | "mem" | "node" | "billing")
            || name
                .strip_prefix("gres/")
                .is_some_and(|g| !g.is_empty() && !g.starts_with(':') && !g.ends_with(':'));
        if !known {
            return Err(format!("unknown TRES '{name}'"));
        }
        let n = if name == "mem" {
            crate::duration::parse_mem_mib(value)
                .map_err(|_| format!("'{value}' is not a memory size"))?
        } else {
            value
                .parse::<u64>()
                .map_err(|_| format!("'{value}' is not a count of {name}"))?
        };
        if out.iter().any(|(o, _)| *o == name) {
            return Err(format!("{name} given twice"));
        }
        out.push((name, n));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CohortsConf, String> {
        parse_str(text, Path::new("/etc/slurm/cohorts.conf")).map_err(|e| e.to_string())
    }

    #[test]
    fn member_lines_with_quotas_limits_and_grace() {
        let c = parse(
            "# ML cohort\n\
             Cohort=ml Account=Vision Quota=gres/gpu=8 BorrowLimit=gres/gpu=4 GraceTime=60\n\
             cohort=ml account=nlp quota=gres/gpu:a100=8,cpu=128,mem=1G\n\
             Cohort=ml Account=audio Quota=gres/gpu=2 BorrowLimit=0\n\
             Cohort=hpc Account=cfd Quota=cpu=512\n",
        )
        .unwrap();
        assert_eq!(c.cohorts(), vec!["ml", "hpc"]);
        let m = &c.members;
        assert_eq!(
            (m[0].account.as_str(), m[0].line, m[0].grace_time),
            ("vision", 2, 60)
        );
        assert_eq!(m[0].quota, vec![("gres/gpu".to_string(), 8)]);
        assert_eq!(m[0].borrow_limit, vec![("gres/gpu".to_string(), 4)]);
        assert_eq!(
            m[1].quota,
            vec![
                ("gres/gpu:a100".to_string(), 8),
                ("cpu".to_string(), 128),
                ("mem".to_string(), 1024)
            ]
        );
        assert_eq!((m[1].borrow_limit.len(), m[1].grace_time), (0, 0));
        assert_eq!(m[2].borrow_limit, vec![("gres/gpu".to_string(), 0)]);
    }

    #[test]
    fn bad_lines_say_where_and_why() {
        let f = "/etc/slurm/cohorts.conf";
        let cases = [
            (
                "Cohort=ml Account=a Quota=gres/gpu=8 Colour=red\n",
                "1: unknown key 'Colour'",
            ),
            ("\nCohort=ml Account=a\n", "2: a member line needs Quota="),
            ("Account=a Quota=cpu=1\n", "1: a member line needs Cohort="),
            (
                "Cohort=ml Account=a Quota=gres/gpu=x\n",
                "1: Quota: 'x' is not a count of gres/gpu",
            ),
            (
                "Cohort=ml Account=a Quota=licence=1\n",
                "1: Quota: unknown TRES 'licence'",
            ),
            (
                "Cohort=ml Account=a Quota=gpu\n",
                "1: Quota: 'gpu' is not NAME=COUNT",
            ),
            (
                "Cohort=ml Account=a Quota=cpu=1,cpu=2\n",
                "1: Quota: cpu given twice",
            ),
            (
                "Cohort=ml Account=a Quota=cpu=1 BorrowLimit=gres/gpu=1\n",
                "1: BorrowLimit: gres/gpu is not in Quota",
            ),
            (
                "Cohort=ml Account=a Quota=cpu=1 GraceTime=1m\n",
                "1: GraceTime: '1m' is not a number of seconds",
            ),
            (
                "Cohort=ml Account=a Quota=cpu=1\nCohort=hpc Account=A Quota=cpu=1\n",
                "2: account a is already a member of cohort ml (line 1)",
            ),
            (
                "Cohort=ml Cohort=x Account=a Quota=cpu=1\n",
                "1: Cohort given twice",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err(), format!("{f}:{want}"), "{text}");
        }
    }
}
