//! sreport's report conditions (`start=`, `end=`, `users=`, `accounts=`, `format=`,
//! `tree`, `group`, `TopCount=`, ...), matched by key prefix as sreport matches them.

use super::period::parse_report_time;
use super::print::ncase_eq;
use super::reports::Output;

/// The conditions a report takes.
#[derive(Clone, Debug, Default)]
pub(super) struct Conds {
    /// `start=` (0: not given).
    pub(super) start: i64,
    /// `end=`, no later than now (0: not given).
    pub(super) end: i64,
    /// `clusters=` (or bare words, in cluster reports).
    pub(super) clusters: Vec<String>,
    /// `users=` (or bare words, in association and user reports).
    pub(super) users: Vec<String>,
    /// `accounts=`.
    pub(super) accounts: Vec<String>,
    /// `format=`: the columns.
    pub(super) format: Vec<String>,
    /// `tree`: accounts indented by depth.
    pub(super) tree: bool,
    /// `group`: one line per user, whatever the accounts.
    pub(super) group: bool,
    /// `TopCount=` (default 10).
    pub(super) top: u32,
}

/// Which report's conditions.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `cluster Utilization`.
    Cluster,
    /// `cluster AccountUtilizationByUser`.
    Assoc,
    /// `user TopUsage`.
    User,
}

/// A condition's comma-separated list, lower-cased as Slurm's list parser stores
/// names (users, accounts, clusters and fields alike).
pub(super) fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Parses a report's conditions as sreport's `_set_*_cond` do: `key=value` words by a
/// key prefix, a bare word a cluster (cluster reports) or a user name; anything else
/// is an unknown condition (said, and the report printed anyway).
pub(super) fn conditions(args: &[String], kind: Kind, now: i64, out: &mut Output) -> Conds {
    let mut c = Conds {
        top: 10,
        ..Conds::default()
    };
    let time = |v: &str, out: &mut Output| match parse_report_time(v, now) {
        Some(t) => t,
        None => {
            out.stderr
                .push_str(&format!("Invalid time specification (pos=0): {v}\n"));
            0
        }
    };
    for a in args {
        let (key, value, has) = match a.split_once('=') {
            Some((k, v)) => (k, v.strip_prefix('=').unwrap_or(v), true),
            None => (a.as_str(), a.as_str(), false),
        };
        let n = key.len();
        let is = |name: &str, min: usize| ncase_eq(key, name, n.max(min));
        if !has && is("all_clusters", 1) {
            continue;
        }
        if kind == Kind::Assoc && !has && is("Tree", 4) {
            c.tree = true;
            continue;
        }
        if kind == Kind::User && !has && is("group", 1) {
            c.group = true;
            continue;
        }
        match kind {
            Kind::Cluster if !has || is("Clusters", 1) => {
                c.clusters.extend(split_list(value));
                continue;
            }
            Kind::Assoc | Kind::User if !has || is("Users", 1) => {
                c.users.extend(split_list(value));
                continue;
            }
            _ => {}
        }
        if kind != Kind::Cluster && (is("Accounts", 2) || is("Acct", 4)) {
            c.accounts.extend(split_list(value));
        } else if kind != Kind::Cluster && is("Clusters", 1) {
            c.clusters.extend(split_list(value));
        } else if is("End", 1) {
            c.end = time(value, out).min(now);
        } else if is("Format", 1) {
            c.format.extend(split_list(value));
        } else if kind == Kind::Assoc && is("QosLevel", 1) {
            // Accepted: Sluice reports association usage over every QOS.
        } else if is("Start", 1) {
            c.start = time(value, out);
        } else if kind == Kind::User && is("TopCount", 1) {
            // C's strtol: the leading number ("5x" is 5); none at all is an error, a
            // negative one no limit.
            let digits: String = value
                .trim_start()
                .chars()
                .enumerate()
                .take_while(|(i, ch)| ch.is_ascii_digit() || (*i == 0 && "+-".contains(*ch)))
                .map(|(_, ch)| ch)
                .collect();
            match digits.parse::<i64>() {
                Ok(v) if v < 0 => c.top = u32::MAX,
                Ok(v) => c.top = v.min(i64::from(u32::MAX)) as u32,
                Err(_) if value.is_empty() => c.top = 0,
                Err(_) => {
                    out.stderr.push_str(&format!(
                        "sreport: error: Invalid value for TopCount ({value})\n"
                    ));
                    out.code = 1;
                }
            }
        } else {
            out.code = 1;
            out.stderr.push_str(&format!(
                " Unknown condition: {a}\nUse keyword set to modify value\n"
            ));
        }
    }
    c
}
