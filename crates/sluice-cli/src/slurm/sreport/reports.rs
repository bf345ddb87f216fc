//! sreport's three reports: `cluster Utilization`, `cluster AccountUtilizationByUser`
//! and `user TopUsage`, each from its conditions (`start=`, `end=`, `users=`,
//! `accounts=`, `format=`, ...) and the stored jobs, in Slurm 22.05's layout.

use std::collections::{BTreeMap, BTreeSet};

use sluice_proto::accounts::AssociationListing;
use sluice_proto::time;
use sluice_proto::types::{JobRecord, NodeInfo};

use super::assoc_tree::{assoc_rows, under, AssocRow};
use super::columns::{cluster_column, columns, user_column, CField, UField};
use super::conditions::{conditions, Conds, Kind};
use super::period::{report_period, Period};
use super::print::{banner, header, row, usage_width, Layout, TimeFormat, Value};
use super::usage::{assoc_usage, cluster_count, cluster_tres, ClusterTres};

/// What every report reads.
pub struct Data {
    /// `ClusterName`.
    pub cluster: String,
    /// Every run of every job that may touch the period (earlier runs included).
    pub runs: Vec<JobRecord>,
    /// Since when the cluster has records (its first job's submission); `None`: none
    /// up to the period's end.
    pub around: Option<i64>,
    /// The nodes as configured now.
    pub nodes: Vec<NodeInfo>,
    /// Associations in `sacctmgr show assoc` order (empty without accounting).
    pub assocs: Vec<AssociationListing>,
    /// Now.
    pub now: i64,
}

/// The command line's settings.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `-t`.
    pub format: TimeFormat,
    /// `-p`, `-P`, `-n`.
    pub layout: Layout,
    /// `-T`: the TRES asked for (empty: `cpu` alone, named `CPU`).
    pub tres: Vec<String>,
    /// `-M`: the clusters to report on (empty: this one), lower-cased.
    pub clusters: Vec<String>,
}

impl Settings {
    fn tres_list(&self) -> Vec<String> {
        if self.tres.is_empty() {
            vec!["cpu".to_string()]
        } else {
            self.tres.clone()
        }
    }

    fn tres_words(&self) -> &'static str {
        if self.tres.is_empty() {
            "CPU"
        } else {
            "TRES"
        }
    }
}

/// What a report printed and its exit status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status (1 after an unknown condition or field; the report is printed
    /// anyway, as sreport does).
    pub code: i32,
}

/// The full name of a user (the GECOS field up to its first comma), as sreport's
/// `Proper Name`.
fn proper_name(user: &str) -> Option<String> {
    let u = nix::unistd::User::from_name(user).ok().flatten()?;
    let gecos = u.gecos.to_string_lossy().into_owned();
    Some(gecos.split(',').next().unwrap_or_default().to_string())
}

/// The period's title: `START - END` (the last second).
fn span(p: &Period) -> String {
    format!("{} - {}", time::shown(p.start), time::shown(p.end - 1))
}

/// The seconds of `p` the cluster has records for: from its first record, up to
/// now (a period rounded up past now has no figures beyond it).
fn around(data: &Data, p: &Period) -> u64 {
    match data.around {
        Some(since) => (p.end.min(data.now) - since.max(p.start)).max(0) as u64,
        None => 0,
    }
}

/// Whether the cluster shows in a report for `p` and these conditions: it has records
/// in the period and is among the clusters named (if any).
fn shown(data: &Data, s: &Settings, c: &Conds, p: &Period) -> bool {
    let name = data.cluster.to_lowercase();
    around(data, p) > 0
        && (c.clusters.is_empty() || c.clusters.contains(&name))
        && (s.clusters.is_empty() || s.clusters.contains(&name))
}

/// The cluster's figures per TRES asked (each with its name).
fn cluster_figures(data: &Data, s: &Settings, p: &Period) -> Vec<(String, ClusterTres)> {
    let runs: Vec<&JobRecord> = data.runs.iter().collect();
    let secs = around(data, p);
    // A TRES the cluster has none of (energy, without a power meter) has no figures.
    s.tres_list()
        .into_iter()
        .filter_map(|t| {
            let count = cluster_count(&data.nodes, &t);
            (count > 0).then(|| {
                let figures = cluster_tres(&runs, &t, count, secs, p, data.now);
                (t, figures)
            })
        })
        .collect()
}

/// `sreport cluster Utilization`.
pub fn utilization(args: &[String], data: &Data, s: &Settings) -> Output {
    let mut out = Output::default();
    let c = conditions(args, Kind::Cluster, data.now, &mut out);
    let p = report_period(c.start, c.end, data.now);
    if s.layout.header {
        out.stdout.push_str(&banner(
            &format!("Cluster Utilization {}", span(&p)),
            s.format,
            s.tres_words(),
        ));
    }
    let default = if s.tres.is_empty() {
        "Cl,al,d,planned,i,res,rep"
    } else {
        "Cl,TresName,al,d,planned,i,res,rep"
    };
    let mut cols = columns(&c.format, default, &mut out, |f| {
        cluster_column(f, s.format, false)
    });
    let figures = if shown(data, s, &c, &p) {
        cluster_figures(data, s, &p)
    } else {
        Vec::new()
    };
    let max = |f: fn(&ClusterTres) -> u64| figures.iter().map(|(_, x)| f(x)).max().unwrap_or(0);
    for col in &mut cols {
        let m = match col.kind {
            CField::Alloc | CField::Energy => max(|x| x.alloc),
            CField::Down => max(|x| x.down),
            CField::Idle => max(|x| x.idle),
            CField::Plan => max(|x| x.plan),
            CField::Over => max(|x| x.over),
            CField::PlanDown => max(|x| x.pdown),
            CField::Reported => max(ClusterTres::reported),
            _ => continue,
        };
        col.len = usage_width(m, s.format);
    }
    out.stdout.push_str(&header(&cols, &s.layout));
    let total_time = p.secs() as u64;
    for (name, x) in &figures {
        let reported = x.reported();
        let t = |v: u64| Value::Time(s.format.show(v, reported));
        let values = cols
            .iter()
            .map(|col| match col.kind {
                CField::Cluster => Value::Str(Some(data.cluster.clone())),
                CField::Count => Value::Uint(x.count),
                CField::Alloc => t(x.alloc),
                CField::Down => t(x.down),
                CField::Idle => t(x.idle),
                CField::Plan => t(x.plan),
                CField::Over => t(x.over),
                CField::PlanDown => t(x.pdown),
                CField::Reported => Value::Time(s.format.show(reported, total_time * x.count)),
                CField::Energy => Value::Time(s.format.show(0, 0)),
                CField::TresName => Value::Str(Some(name.clone())),
                _ => Value::Str(None),
            })
            .collect();
        out.stdout.push_str(&row(&cols, values, &s.layout));
    }
    out
}

/// `sreport cluster AccountUtilizationByUser`.
pub fn account_by_user(args: &[String], data: &Data, s: &Settings) -> Output {
    let mut out = Output::default();
    let c = conditions(args, Kind::Assoc, data.now, &mut out);
    let p = report_period(c.start, c.end, data.now);
    let default = if s.tres.is_empty() {
        "Cluster,Ac,Login,Proper,Used,Energy"
    } else {
        "Cluster,Ac,Login,Proper,TresName,Used"
    };
    let mut cols = columns(&c.format, default, &mut out, |f| {
        cluster_column(f, s.format, c.tree)
    });
    if s.layout.header {
        out.stdout.push_str(&banner(
            &format!(
                "Cluster/Account/User Utilization {} ({} secs)",
                span(&p),
                p.secs()
            ),
            s.format,
            s.tres_words(),
        ));
    }
    let figures = if shown(data, s, &c, &p) {
        cluster_figures(data, s, &p)
    } else {
        Vec::new()
    };
    if figures.is_empty() {
        // sreport sizes the usage columns even with nothing to show.
        for col in &mut cols {
            if matches!(col.kind, CField::Used | CField::Energy) {
                col.len = usage_width(0, s.format);
            }
        }
        out.stdout.push_str(&header(&cols, &s.layout));
        return out;
    }
    let runs: Vec<&JobRecord> = data.runs.iter().collect();
    let tres: Vec<&str> = figures.iter().map(|(t, _)| t.as_str()).collect();
    let per_tres: Vec<BTreeMap<(String, String), u64>> = tres
        .iter()
        .map(|t| assoc_usage(&runs, t, &p, data.now))
        .collect();
    let (rows, parent) = assoc_rows(data, &per_tres[0]);
    let usage = |r: &AssocRow, i: usize| -> u64 {
        per_tres[i]
            .iter()
            .filter(|((acct, user), _)| match &r.user {
                Some(u) => acct == &r.account && user == u,
                None => under(acct, &r.account, &parent),
            })
            .map(|(_, v)| *v)
            .sum()
    };
    let selected: Vec<&AssocRow> = rows
        .iter()
        .filter(|r| match &r.user {
            Some(u) => c.users.is_empty() || c.users.contains(u),
            None => c.users.is_empty(),
        })
        .filter(|r| {
            c.accounts.is_empty() || c.accounts.iter().any(|a| under(&r.account, a, &parent))
        })
        .filter(|r| (0..tres.len()).any(|i| usage(r, i) > 0))
        .collect();
    // The first row is the largest (the tree's top).
    let widest = selected.first().map_or(0, |r| {
        (0..tres.len()).map(|i| usage(r, i)).max().unwrap_or(0)
    });
    for col in &mut cols {
        match col.kind {
            CField::Used => col.len = usage_width(widest, s.format),
            CField::Energy => col.len = usage_width(0, s.format),
            _ => {}
        }
    }
    out.stdout.push_str(&header(&cols, &s.layout));
    for r in selected {
        for (i, (name, x)) in figures.iter().enumerate() {
            let total = x.reported();
            let values = cols
                .iter()
                .map(|col| match col.kind {
                    CField::Cluster => Value::Str(Some(data.cluster.clone())),
                    CField::Acct => {
                        // Indented by depth: a user's line one deeper than its
                        // account's.
                        let a = if c.tree {
                            format!("{}{}", " ".repeat(r.depth as usize), r.account)
                        } else {
                            r.account.clone()
                        };
                        Value::Str(Some(a))
                    }
                    CField::Login => Value::Str(r.user.clone()),
                    CField::Proper => Value::Str(r.user.as_deref().and_then(proper_name)),
                    CField::Used => Value::Time(s.format.show(usage(r, i), total)),
                    CField::Energy => Value::Time(s.format.show(0, 0)),
                    CField::TresName => Value::Str(Some(name.clone())),
                    _ => Value::Str(None),
                })
                .collect();
            out.stdout.push_str(&row(&cols, values, &s.layout));
        }
    }
    out
}

/// `sreport user TopUsage`.
pub fn top_usage(args: &[String], data: &Data, s: &Settings) -> Output {
    let mut out = Output::default();
    let c = conditions(args, Kind::User, data.now, &mut out);
    let p = report_period(c.start, c.end, data.now);
    let default = if s.tres.is_empty() {
        "Cl,L,P,A,U,Energy"
    } else {
        "Cl,L,P,A,TresName,Used"
    };
    let mut cols = columns(&c.format, default, &mut out, |f| user_column(f, s.format));
    if s.layout.header {
        out.stdout.push_str(&banner(
            &format!("Top {} Users {} ({} secs)", c.top, span(&p), p.secs()),
            s.format,
            s.tres_words(),
        ));
    }
    let figures = if shown(data, s, &c, &p) {
        cluster_figures(data, s, &p)
    } else {
        Vec::new()
    };
    if figures.is_empty() {
        // sreport sizes the usage columns even with nothing to show.
        for col in &mut cols {
            if matches!(col.kind, UField::Used | UField::Energy) {
                col.len = usage_width(0, s.format);
            }
        }
        out.stdout.push_str(&header(&cols, &s.layout));
        return out;
    }
    let runs: Vec<&JobRecord> = data.runs.iter().collect();
    let tres: Vec<&str> = figures.iter().map(|(t, _)| t.as_str()).collect();
    // Accounts in the association tree's order (then by name).
    let order = |acct: &str| {
        data.assocs
            .iter()
            .position(|a| a.record.account == acct && a.record.user.is_none())
            .unwrap_or(usize::MAX)
    };
    let per_tres: Vec<BTreeMap<(String, String), u64>> = tres
        .iter()
        .map(|t| assoc_usage(&runs, t, &p, data.now))
        .collect();
    // One line per user and account, or per user with `group`.
    struct Line {
        user: String,
        accounts: Vec<String>,
        used: Vec<u64>,
    }
    let mut lines: Vec<Line> = Vec::new();
    let mut keys: Vec<(String, String)> = per_tres
        .iter()
        .flat_map(|m| m.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|(a, u)| {
            (c.users.is_empty() || c.users.contains(u))
                && (c.accounts.is_empty() || c.accounts.contains(a))
        })
        .collect();
    keys.sort_by(|a, b| (order(&a.0), &a.0).cmp(&(order(&b.0), &b.0)));
    for (acct, user) in keys {
        let used: Vec<u64> = per_tres
            .iter()
            .map(|m| m.get(&(acct.clone(), user.clone())).copied().unwrap_or(0))
            .collect();
        match lines.iter_mut().find(|l| c.group && l.user == user) {
            Some(l) => {
                l.accounts.push(acct);
                for (x, y) in l.used.iter_mut().zip(used) {
                    *x += y;
                }
            }
            None => lines.push(Line {
                user,
                accounts: vec![acct],
                used,
            }),
        }
    }
    lines.sort_by(|a, b| b.used[0].cmp(&a.used[0]).then_with(|| a.user.cmp(&b.user)));
    lines.truncate(c.top as usize);
    let widest = lines
        .first()
        .map_or(0, |l| l.used.iter().copied().max().unwrap_or(0));
    for col in &mut cols {
        match col.kind {
            UField::Used => col.len = usage_width(widest, s.format),
            UField::Energy => col.len = usage_width(0, s.format),
            _ => {}
        }
    }
    out.stdout.push_str(&header(&cols, &s.layout));
    for l in &lines {
        for (i, (name, x)) in figures.iter().enumerate() {
            let total = x.reported();
            let values = cols
                .iter()
                .map(|col| match col.kind {
                    UField::Cluster => Value::Str(Some(data.cluster.clone())),
                    UField::Login => Value::Str(Some(l.user.clone())),
                    UField::Proper => Value::Str(proper_name(&l.user)),
                    UField::Acct => Value::Str(Some(l.accounts.join(", "))),
                    UField::Used => Value::Time(s.format.show(l.used[i], total)),
                    UField::Energy => Value::Time(s.format.show(0, 0)),
                    UField::TresName => Value::Str(Some(name.clone())),
                })
                .collect();
            out.stdout.push_str(&row(&cols, values, &s.layout));
        }
    }
    out
}
