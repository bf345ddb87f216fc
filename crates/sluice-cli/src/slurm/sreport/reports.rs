//! sreport's three reports: `cluster Utilization`, `cluster AccountUtilizationByUser`
//! and `user TopUsage`, each from its conditions (`start=`, `end=`, `users=`,
//! `accounts=`, `format=`, ...) and the stored jobs, in Slurm 22.05's layout.

use std::collections::{BTreeMap, BTreeSet};

use sluice_proto::accounts::AssociationListing;
use sluice_proto::time::timestamp;
use sluice_proto::types::{JobRecord, NodeInfo};

use super::period::{parse_report_time, report_period, Period};
use super::print::{banner, header, ncase_eq, row, usage_width, Column, Layout, TimeFormat, Value};
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

/// The conditions a report takes.
#[derive(Clone, Debug, Default)]
struct Conds {
    start: i64,
    end: i64,
    clusters: Vec<String>,
    users: Vec<String>,
    accounts: Vec<String>,
    format: Vec<String>,
    tree: bool,
    group: bool,
    top: u32,
}

/// Which report's conditions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cluster,
    Assoc,
    User,
}

/// A condition's comma-separated list, lower-cased as Slurm's list parser stores
/// names (users, accounts, clusters and fields alike).
fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Parses a report's conditions as sreport's `_set_*_cond` do: `key=value` words by a
/// key prefix, a bare word a cluster (cluster reports) or a user name; anything else
/// is an unknown condition (said, and the report printed anyway).
fn conditions(args: &[String], kind: Kind, now: i64, out: &mut Output) -> Conds {
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

/// What a cluster report's column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CField {
    /// `Account`.
    Acct,
    /// `Allocated`.
    Alloc,
    /// `Cluster`.
    Cluster,
    /// `Down`.
    Down,
    /// `Idle`.
    Idle,
    /// `Login`.
    Login,
    /// `Over Comm`.
    Over,
    /// `PLND Down`.
    PlanDown,
    /// `Proper Name`.
    Proper,
    /// `Reported`.
    Reported,
    /// `Planned`.
    Plan,
    /// `TRES Count`.
    Count,
    /// `TRES Name`.
    TresName,
    /// `Used`.
    Used,
    /// `WCKey`.
    WcKey,
    /// `Energy`.
    Energy,
}

/// Splits `Name%12` into the name and its width (0: the default).
fn with_width(spec: &str) -> (&str, i32) {
    match spec.split_once('%') {
        Some((n, w)) => (n, w.parse().unwrap_or(0)),
        None => (spec, 0),
    }
}

/// A cluster report's column, matched as sreport matches it (the first name `spec`
/// begins, in its order); `None`: an unknown field.
fn cluster_column(spec: &str, format: TimeFormat, tree: bool) -> Option<Column<CField>> {
    let (name, width) = with_width(spec);
    let n = name.len();
    let is = |full: &str, min: usize| ncase_eq(full, name, n.max(min));
    let per = format.with_percent();
    let w = |plain: i32, with: i32| if per { with } else { plain };
    let (kind, header, len) = if is("Accounts", 2) {
        (CField::Acct, "Account", if tree { -20 } else { 15 })
    } else if is("allocated", 2) {
        (CField::Alloc, "Allocated", w(12, 20))
    } else if is("Cluster", 2) {
        (CField::Cluster, "Cluster", 9)
    } else if is("down", 1) {
        (CField::Down, "Down", w(10, 18))
    } else if is("idle", 1) {
        (CField::Idle, "Idle", w(12, 20))
    } else if is("Login", 1) {
        (CField::Login, "Login", 9)
    } else if is("overcommitted", 1) {
        (CField::Over, "Over Comm", w(9, 18))
    } else if is("PlannedDown", 2) {
        (CField::PlanDown, "PLND Down", w(10, 18))
    } else if is("Proper", 2) {
        (CField::Proper, "Proper Name", 15)
    } else if is("reported", 3) {
        (CField::Reported, "Reported", w(12, 20))
    } else if is("reserved", 3) || is("planned", 4) {
        (CField::Plan, "Planned", w(9, 18))
    } else if is("TresCount", 5) || is("cpucount", 2) || is("count", 2) {
        (CField::Count, "TRES Count", 10)
    } else if is("TresName", 5) {
        (CField::TresName, "TRES Name", 14)
    } else if is("Used", 1) {
        (CField::Used, "Used", w(10, 18))
    } else if is("WCKey", 2) {
        (CField::WcKey, "WCKey", if tree { 20 } else { 15 })
    } else if is("Energy", 1) {
        (CField::Energy, "Energy", w(10, 18))
    } else {
        return None;
    };
    Some(Column {
        kind,
        name: header,
        len: if width != 0 { width } else { len },
    })
}

/// The columns of `format` (or `default`), unknown fields said on stderr.
fn columns<K>(
    format: &[String],
    default: &str,
    out: &mut Output,
    make: impl Fn(&str) -> Option<Column<K>>,
) -> Vec<Column<K>> {
    let specs: Vec<String> = if format.is_empty() {
        split_list(default)
    } else {
        format.to_vec()
    };
    let mut cols = Vec::new();
    for s in specs {
        match make(&s) {
            Some(c) => cols.push(c),
            None => {
                out.code = 1;
                out.stderr.push_str(&format!(" Unknown field '{s}'\n"));
            }
        }
    }
    cols
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
    format!("{} - {}", timestamp(p.start), timestamp(p.end - 1))
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

/// An association row: depth in the tree, account, user (`None`: the account's own).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AssocRow {
    depth: u32,
    account: String,
    user: Option<String>,
}

/// The association tree to report on: the listing (one row per account and user,
/// whatever the partitions), then accounts that only jobs name (deleted since), under
/// `root`, with their users.
fn assoc_rows(
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
fn under(account: &str, ancestor: &str, parent: &BTreeMap<String, String>) -> bool {
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

/// What a `user TopUsage` column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UField {
    /// `Account`.
    Acct,
    /// `Cluster`.
    Cluster,
    /// `Energy`.
    Energy,
    /// `Login`.
    Login,
    /// `Proper Name`.
    Proper,
    /// `TRES Name`.
    TresName,
    /// `Used`.
    Used,
}

fn user_column(spec: &str, format: TimeFormat) -> Option<Column<UField>> {
    let (name, width) = with_width(spec);
    let n = name.len();
    let is = |full: &str, min: usize| ncase_eq(full, name, n.max(min));
    let w = if format.with_percent() { 18 } else { 10 };
    let (kind, header, len) = if is("Accounts", 1) {
        (UField::Acct, "Account", 15)
    } else if is("Cluster", 1) {
        (UField::Cluster, "Cluster", 9)
    } else if is("Energy", 1) {
        (UField::Energy, "Energy", w)
    } else if is("Login", 1) {
        (UField::Login, "Login", 9)
    } else if is("Proper", 1) {
        (UField::Proper, "Proper Name", 15)
    } else if is("TresName", 5) {
        (UField::TresName, "TRES Name", 14)
    } else if is("Used", 1) {
        (UField::Used, "Used", w)
    } else {
        return None;
    };
    Some(Column {
        kind,
        name: header,
        len: if width != 0 { width } else { len },
    })
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
