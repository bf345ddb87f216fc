//! `sacctmgr show`: the columns, their default widths and order as Slurm 22.05 prints
//! them, `format=` with `%N` widths, `-P`/`-p`/`-n`, `withassoc` and `tree`.

use sluice_conf::duration::{format_minutes, format_time};
use sluice_proto::accounts::{
    format_tres, AccountRecord, AccountsSnapshot, AssociationListing, AssociationRecord,
    ClusterRecord, Limits, QosRecord, Tres, UserRecord,
};

use super::parse::{is, Entity, Opts, Pair, Spec};

/// A column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Cluster,
    ControlHost,
    ControlPort,
    Rpc,
    Account,
    User,
    Partition,
    Share,
    Priority,
    GrpJobs,
    GrpTres,
    GrpSubmit,
    GrpWall,
    GrpTresMins,
    GrpTresRunMins,
    MaxJobs,
    MaxTres,
    MaxTresPerNode,
    MaxSubmit,
    MaxWall,
    MaxTresMins,
    Qos,
    DefQos,
    ParentName,
    Id,
    DefAcct,
    Admin,
    Descr,
    Org,
    GrpNodes,
    GrpCpus,
    GrpMem,
    GrpCpuMins,
    MaxNodes,
    MaxCpus,
    MaxCpuMins,
    Name,
    GraceTime,
    Preempt,
    PreemptExemptTime,
    PreemptMode,
    Flags,
    UsageThres,
    UsageFactor,
    MaxTresPu,
    MaxJobsPu,
    MaxSubmitPu,
    MaxTresPa,
    MaxJobsPa,
    MaxSubmitPa,
    MinTres,
}

/// A column's header, default width and the names `format=` knows it by.
struct Def {
    col: Col,
    header: &'static str,
    width: usize,
    names: &'static [&'static str],
}

#[rustfmt::skip]
const DEFS: &[Def] = &[
    Def { col: Col::Cluster, header: "Cluster", width: 10, names: &["cluster"] },
    Def { col: Col::ControlHost, header: "ControlHost", width: 15, names: &["controlhost"] },
    Def { col: Col::ControlPort, header: "ControlPort", width: 12, names: &["controlport"] },
    Def { col: Col::Rpc, header: "RPC", width: 5, names: &["rpc"] },
    Def { col: Col::Account, header: "Account", width: 10, names: &["account", "acct"] },
    Def { col: Col::User, header: "User", width: 10, names: &["user"] },
    Def { col: Col::Partition, header: "Partition", width: 10, names: &["partition"] },
    Def { col: Col::Share, header: "Share", width: 9, names: &["share", "shares", "fairshare"] },
    Def { col: Col::Priority, header: "Priority", width: 10, names: &["priority"] },
    Def { col: Col::GrpJobs, header: "GrpJobs", width: 7, names: &["grpjobs"] },
    Def { col: Col::GrpTres, header: "GrpTRES", width: 13, names: &["grptres"] },
    Def { col: Col::GrpSubmit, header: "GrpSubmit", width: 9, names: &["grpsubmit", "grpsubmitjobs"] },
    Def { col: Col::GrpWall, header: "GrpWall", width: 11, names: &["grpwall"] },
    Def { col: Col::GrpTresMins, header: "GrpTRESMins", width: 13, names: &["grptresmins"] },
    Def { col: Col::GrpTresRunMins, header: "GrpTRESRunMins", width: 13, names: &["grptresrunmins", "grptresrunmin"] },
    Def { col: Col::MaxJobs, header: "MaxJobs", width: 7, names: &["maxjobs"] },
    Def { col: Col::MaxTres, header: "MaxTRES", width: 13, names: &["maxtres", "maxtresperjob", "maxtrespj"] },
    Def { col: Col::MaxTresPerNode, header: "MaxTRESPerNode", width: 14, names: &["maxtrespernode", "maxtrespn"] },
    Def { col: Col::MaxSubmit, header: "MaxSubmit", width: 9, names: &["maxsubmit", "maxsubmitjobs"] },
    Def { col: Col::MaxWall, header: "MaxWall", width: 11, names: &["maxwall", "maxwalldurationperjob"] },
    Def { col: Col::MaxTresMins, header: "MaxTRESMins", width: 13, names: &["maxtresmins", "maxtresminsperjob"] },
    Def { col: Col::Qos, header: "QOS", width: 20, names: &["qos", "qoslevel"] },
    Def { col: Col::DefQos, header: "Def QOS", width: 9, names: &["defaultqos", "defqos"] },
    Def { col: Col::ParentName, header: "ParentName", width: 10, names: &["parentname", "parent"] },
    Def { col: Col::Id, header: "ID", width: 6, names: &["id"] },
    Def { col: Col::DefAcct, header: "Def Acct", width: 10, names: &["defaultaccount", "defacct"] },
    Def { col: Col::Admin, header: "Admin", width: 9, names: &["adminlevel", "admin"] },
    Def { col: Col::Descr, header: "Descr", width: 20, names: &["description", "descr"] },
    Def { col: Col::Org, header: "Org", width: 20, names: &["organization", "org"] },
    Def { col: Col::GrpNodes, header: "GrpNodes", width: 8, names: &["grpnodes"] },
    Def { col: Col::GrpCpus, header: "GrpCPUs", width: 8, names: &["grpcpus"] },
    Def { col: Col::GrpMem, header: "GrpMem", width: 7, names: &["grpmem"] },
    Def { col: Col::GrpCpuMins, header: "GrpCPUMins", width: 11, names: &["grpcpumins"] },
    Def { col: Col::MaxNodes, header: "MaxNodes", width: 8, names: &["maxnodes"] },
    Def { col: Col::MaxCpus, header: "MaxCPUs", width: 8, names: &["maxcpus"] },
    Def { col: Col::MaxCpuMins, header: "MaxCPUMins", width: 11, names: &["maxcpumins"] },
    Def { col: Col::Name, header: "Name", width: 10, names: &["name"] },
    Def { col: Col::GraceTime, header: "GraceTime", width: 10, names: &["gracetime"] },
    Def { col: Col::Preempt, header: "Preempt", width: 10, names: &["preempt"] },
    Def { col: Col::PreemptExemptTime, header: "PreemptExemptTime", width: 19, names: &["preemptexempttime"] },
    Def { col: Col::PreemptMode, header: "PreemptMode", width: 11, names: &["preemptmode"] },
    Def { col: Col::Flags, header: "Flags", width: 40, names: &["flags"] },
    Def { col: Col::UsageThres, header: "UsageThres", width: 10, names: &["usagethres", "usagethreshold"] },
    Def { col: Col::UsageFactor, header: "UsageFactor", width: 11, names: &["usagefactor"] },
    Def { col: Col::MaxTresPu, header: "MaxTRESPU", width: 13, names: &["maxtrespu", "maxtresperuser"] },
    Def { col: Col::MaxJobsPu, header: "MaxJobsPU", width: 9, names: &["maxjobspu", "maxjobsperuser"] },
    Def { col: Col::MaxSubmitPu, header: "MaxSubmitPU", width: 11, names: &["maxsubmitpu", "maxsubmitjobsperuser"] },
    Def { col: Col::MaxTresPa, header: "MaxTRESPA", width: 13, names: &["maxtrespa", "maxtresperaccount"] },
    Def { col: Col::MaxJobsPa, header: "MaxJobsPA", width: 9, names: &["maxjobspa", "maxjobsperaccount"] },
    Def { col: Col::MaxSubmitPa, header: "MaxSubmitPA", width: 11, names: &["maxsubmitpa", "maxsubmitjobsperaccount"] },
    Def { col: Col::MinTres, header: "MinTRES", width: 13, names: &["mintres", "mintresperjob"] },
];

fn def(col: Col) -> &'static Def {
    DEFS.iter()
        .find(|d| d.col == col)
        .expect("every column has a definition")
}

use Col::*;

const ASSOC_DEFAULT: &[Col] = &[
    Cluster,
    Account,
    User,
    Partition,
    Share,
    Priority,
    GrpJobs,
    GrpTres,
    GrpSubmit,
    GrpWall,
    GrpTresMins,
    MaxJobs,
    MaxTres,
    MaxTresPerNode,
    MaxSubmit,
    MaxWall,
    MaxTresMins,
    Qos,
    DefQos,
    GrpTresRunMins,
];
const USER_DEFAULT: &[Col] = &[User, DefAcct, Admin];
const USER_ASSOC: &[Col] = &[
    Cluster, Account, Partition, Share, Priority, MaxJobs, MaxNodes, MaxCpus, MaxSubmit, MaxWall,
    MaxCpuMins, Qos, DefQos,
];
const ACCOUNT_DEFAULT: &[Col] = &[Account, Descr, Org];
const ACCOUNT_ASSOC: &[Col] = &[
    Cluster, ParentName, User, Share, Priority, GrpJobs, GrpNodes, GrpCpus, GrpMem, GrpSubmit,
    GrpWall, GrpCpuMins, MaxJobs, MaxNodes, MaxCpus, MaxSubmit, MaxWall, MaxCpuMins, Qos, DefQos,
];
const QOS_DEFAULT: &[Col] = &[
    Name,
    Priority,
    GraceTime,
    Preempt,
    PreemptExemptTime,
    PreemptMode,
    Flags,
    UsageThres,
    UsageFactor,
    GrpTres,
    GrpTresMins,
    GrpTresRunMins,
    GrpJobs,
    GrpSubmit,
    GrpWall,
    MaxTres,
    MaxTresPerNode,
    MaxTresMins,
    MaxWall,
    MaxTresPu,
    MaxJobsPu,
    MaxSubmitPu,
    MaxTresPa,
    MaxJobsPa,
    MaxSubmitPa,
    MinTres,
];
const CLUSTER_DEFAULT: &[Col] = &[
    Cluster,
    ControlHost,
    ControlPort,
    Rpc,
    Share,
    GrpJobs,
    GrpTres,
    GrpSubmit,
    MaxJobs,
    MaxTres,
    MaxSubmit,
    MaxWall,
    Qos,
    DefQos,
];

/// A column to print: which, how wide, justified left or right.
#[derive(Clone, Copy, Debug)]
struct Column {
    col: Col,
    width: usize,
    left: bool,
}

fn columns(cols: &[Col]) -> Vec<Column> {
    cols.iter()
        .map(|c| Column {
            col: *c,
            width: def(*c).width,
            left: false,
        })
        .collect()
}

/// `format=a,b%20,c%-8`: the columns, or the field name not known.
fn format_columns(spec: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, Some(w)),
            None => (item, None),
        };
        let lname = name.to_ascii_lowercase();
        let d = DEFS
            .iter()
            .find(|d| d.names.contains(&lname.as_str()))
            .or_else(|| {
                DEFS.iter()
                    .find(|d| d.names.iter().any(|n| is(&lname, n, lname.len().max(3))))
            })
            .ok_or_else(|| name.to_string())?;
        let (width, left) = match width.map(|w| w.parse::<i64>()) {
            Some(Ok(w)) if w < 0 => (w.unsigned_abs() as usize, true),
            Some(Ok(w)) => (w as usize, false),
            _ => (d.width, false),
        };
        out.push(Column {
            col: d.col,
            width,
            left,
        });
    }
    Ok(out)
}

/// What one printed row describes.
#[derive(Default, Clone, Copy)]
struct Row<'a> {
    cluster: Option<&'a ClusterRecord>,
    assoc: Option<&'a AssociationRecord>,
    user: Option<&'a UserRecord>,
    account: Option<&'a AccountRecord>,
    qos: Option<&'a QosRecord>,
    /// The Account column with its tree indentation.
    tree_depth: Option<u32>,
    /// `show user withassoc` for a user without associations: Slurm prints an empty
    /// association (zero counts).
    blank_assoc: bool,
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn one(t: &Tres, name: &str) -> String {
    opt(t.get(name))
}

impl Row<'_> {
    fn limits(&self) -> Option<&Limits> {
        self.qos
            .map(|q| &q.limits)
            .or(self.assoc.map(|a| &a.limits))
    }

    fn value(&self, col: Col) -> String {
        if self.blank_assoc {
            match col {
                Share | MaxJobs | MaxNodes | MaxCpus | MaxSubmit | MaxCpuMins => return "0".into(),
                MaxWall => return "00:00:00".into(),
                User | DefAcct | Admin => {}
                _ => return String::new(),
            }
        }
        let a = self.assoc;
        let l = self.limits();
        let lim = |f: &dyn Fn(&Limits) -> String| l.map(f).unwrap_or_default();
        match col {
            Cluster => self
                .cluster
                .map(|c| c.name.clone())
                .or(a.map(|a| a.cluster.clone()))
                .unwrap_or_default(),
            ControlHost => opt(self.cluster.map(|c| c.control_host.clone())),
            ControlPort => opt(self.cluster.map(|c| c.control_port)),
            Rpc => opt(self.cluster.map(|c| c.rpc)),
            Account => {
                let name = a
                    .map(|a| a.account.clone())
                    .or(self.account.map(|x| x.name.clone()))
                    .unwrap_or_default();
                match self.tree_depth {
                    Some(d) => format!("{}{name}", " ".repeat(d as usize)),
                    None => name,
                }
            }
            User => a
                .and_then(|a| a.user.clone())
                .or(self.user.map(|u| u.name.clone()))
                .unwrap_or_default(),
            Partition => opt(a.and_then(|a| a.partition.clone())),
            Share => opt(a.map(|a| a.shares)),
            Priority => match self.qos {
                Some(q) => q.priority.to_string(),
                None => opt(a.and_then(|a| a.priority)),
            },
            GrpJobs => lim(&|l| opt(l.grp_jobs)),
            GrpTres => lim(&|l| format_tres(&l.grp_tres)),
            GrpSubmit => lim(&|l| opt(l.grp_submit_jobs)),
            GrpWall => lim(&|l| opt(l.grp_wall.map(format_minutes))),
            GrpTresMins => lim(&|l| format_tres(&l.grp_tres_mins)),
            GrpTresRunMins => lim(&|l| format_tres(&l.grp_tres_run_mins)),
            MaxJobs => lim(&|l| opt(l.max_jobs)),
            MaxTres => lim(&|l| format_tres(&l.max_tres_per_job)),
            MaxTresPerNode => lim(&|l| format_tres(&l.max_tres_per_node)),
            MaxSubmit => lim(&|l| opt(l.max_submit_jobs)),
            MaxWall => lim(&|l| opt(l.max_wall.map(format_minutes))),
            MaxTresMins => lim(&|l| format_tres(&l.max_tres_mins_per_job)),
            Qos => a
                .and_then(|a| a.qos.as_ref())
                .map(|q| q.iter().cloned().collect::<Vec<_>>().join(","))
                .unwrap_or_default(),
            DefQos => opt(a.and_then(|a| a.default_qos.clone())),
            ParentName => match a {
                Some(a) if a.user.is_none() => opt(a.parent.clone()),
                _ => String::new(),
            },
            Id => opt(a.map(|a| a.id).or(self.qos.map(|q| q.id))),
            DefAcct => opt(self.user.and_then(|u| u.default_account.clone())),
            Admin => opt(self.user.map(|u| u.admin_level.name())),
            Descr => match self.qos {
                Some(q) => q.description.clone(),
                None => opt(self.account.map(|x| x.description.clone())),
            },
            Org => opt(self.account.map(|x| x.organization.clone())),
            GrpNodes => lim(&|l| one(&l.grp_tres, "node")),
            GrpCpus => lim(&|l| one(&l.grp_tres, "cpu")),
            GrpMem => lim(&|l| one(&l.grp_tres, "mem")),
            GrpCpuMins => lim(&|l| one(&l.grp_tres_mins, "cpu")),
            MaxNodes => lim(&|l| one(&l.max_tres_per_job, "node")),
            MaxCpus => lim(&|l| one(&l.max_tres_per_job, "cpu")),
            MaxCpuMins => lim(&|l| one(&l.max_tres_mins_per_job, "cpu")),
            Name => opt(self.qos.map(|q| q.name.clone())),
            GraceTime => opt(self.qos.map(|q| format_time(Some(i64::from(q.grace_time))))),
            Preempt => opt(self
                .qos
                .map(|q| q.preempt.iter().cloned().collect::<Vec<_>>().join(","))),
            PreemptMode => opt(self.qos.map(|q| q.preempt_mode.name())),
            Flags => opt(self.qos.map(|q| {
                q.flags
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(",")
            })),
            UsageFactor => opt(self.qos.map(|q| format!("{:.6}", q.usage_factor))),
            MaxTresPu => lim(&|l| format_tres(&l.max_tres_per_user)),
            MaxJobsPu => lim(&|l| opt(l.max_jobs_per_user)),
            MaxSubmitPu => lim(&|l| opt(l.max_submit_jobs_per_user)),
            MinTres => lim(&|l| format_tres(&l.min_tres_per_job)),
            PreemptExemptTime | UsageThres | MaxTresPa | MaxJobsPa | MaxSubmitPa => String::new(),
        }
    }
}

/// Prints a table: header (unless `-n`), dashes (unless parsable), rows.
fn table(out: &mut Vec<String>, cols: &[Column], rows: &[Row], opts: &Opts, tree: bool) {
    let cols: Vec<Column> = cols
        .iter()
        .map(|c| {
            if tree && c.col == Account {
                Column {
                    col: Account,
                    width: 20,
                    left: true,
                }
            } else {
                *c
            }
        })
        .collect();
    let cell = |text: &str, c: &Column, header: bool| -> String {
        let n = text.chars().count();
        let text: String = if n > c.width {
            if header {
                text.chars().take(c.width).collect()
            } else {
                let mut t: String = text.chars().take(c.width.saturating_sub(1)).collect();
                t.push('+');
                t
            }
        } else {
            text.to_string()
        };
        if c.left {
            format!("{text:<w$}", w = c.width)
        } else {
            format!("{text:>w$}", w = c.width)
        }
    };
    let line = |cells: Vec<String>| -> String {
        match opts.parsable {
            Some(true) => cells.iter().map(|c| format!("{c}|")).collect(),
            Some(false) => cells.join("|"),
            None => cells.iter().map(|c| format!("{c} ")).collect(),
        }
    };
    if !opts.noheader {
        match opts.parsable {
            Some(_) => out.push(line(
                cols.iter().map(|c| def(c.col).header.to_string()).collect(),
            )),
            None => {
                out.push(line(
                    cols.iter()
                        .map(|c| cell(def(c.col).header, c, true))
                        .collect(),
                ));
                out.push(line(cols.iter().map(|c| "-".repeat(c.width)).collect()));
            }
        }
    }
    for r in rows {
        let cells = cols
            .iter()
            .map(|c| {
                let v = r.value(c.col);
                match opts.parsable {
                    Some(_) => v,
                    None => cell(&v, c, false),
                }
            })
            .collect();
        out.push(line(cells));
    }
}

/// Conditions of a `show`: names and `where` pairs by key.
struct Filter {
    users: Vec<String>,
    accounts: Vec<String>,
    partitions: Vec<String>,
    clusters: Vec<String>,
    names: Vec<String>,
}

fn matches(list: &[String], v: &str) -> bool {
    list.is_empty() || list.iter().any(|x| x == v)
}

/// Runs `show ENTITY SPEC` over `snap`; the lines to print, or the error lines.
pub fn show(
    entity: Entity,
    spec: &Spec,
    opts: &Opts,
    snap: &AccountsSnapshot,
) -> Result<Vec<String>, Vec<String>> {
    let mut format = None;
    let mut f = Filter {
        users: Vec::new(),
        accounts: Vec::new(),
        partitions: Vec::new(),
        clusters: Vec::new(),
        names: spec.names.clone(),
    };
    let all: Vec<&Pair> = spec.head.iter().chain(spec.conditions.iter()).collect();
    for p in all {
        let v = super::parse::list(&p.value);
        match p.key.as_str() {
            "format" => format = Some(p.value.clone()),
            "user" | "users" => f.users.extend(v),
            "account" | "accounts" | "acct" => f.accounts.extend(v),
            "partition" | "partitions" => f.partitions.extend(v),
            "cluster" | "clusters" => f.clusters.extend(v),
            "name" | "names" => f.names.extend(v),
            _ => return Err(vec![format!(" Unknown condition: {}", p.word)]),
        }
    }
    let lower = |v: &mut Vec<String>| {
        for x in v.iter_mut() {
            *x = x.to_ascii_lowercase();
        }
    };
    lower(&mut f.accounts);
    lower(&mut f.clusters);
    let withassoc = opts.withassoc || spec.keywords.iter().any(|k| k == "withassoc");
    let tree = spec.keywords.iter().any(|k| k == "tree");
    let cluster_ok = matches(&f.clusters, &snap.cluster.name);
    let assocs: Vec<&AssociationListing> = if cluster_ok {
        snap.associations.iter().collect()
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let (defaults, rows): (Vec<Col>, Vec<Row>) = match entity {
        Entity::Association => {
            let rows = assocs
                .iter()
                .filter(|l| {
                    let a = &l.record;
                    (f.users.is_empty() || a.user.as_ref().is_some_and(|u| f.users.contains(u)))
                        && matches(&f.accounts, &a.account)
                        && (f.partitions.is_empty()
                            || a.partition
                                .as_ref()
                                .is_some_and(|p| f.partitions.contains(p)))
                })
                .map(|l| Row {
                    cluster: Some(&snap.cluster),
                    assoc: Some(&l.record),
                    tree_depth: tree.then_some(l.depth),
                    ..Row::default()
                })
                .collect();
            (ASSOC_DEFAULT.to_vec(), rows)
        }
        Entity::User => {
            let mut names = f.names.clone();
            names.extend(f.users.iter().cloned());
            let users: Vec<&UserRecord> = snap
                .users
                .iter()
                .filter(|u| matches(&names, &u.name))
                .collect();
            let mut rows = Vec::new();
            for u in users {
                if !withassoc {
                    rows.push(Row {
                        user: Some(u),
                        ..Row::default()
                    });
                    continue;
                }
                let mine: Vec<&&AssociationListing> = assocs
                    .iter()
                    .filter(|l| l.record.user.as_deref() == Some(u.name.as_str()))
                    .filter(|l| matches(&f.accounts, &l.record.account))
                    .collect();
                if mine.is_empty() && f.accounts.is_empty() {
                    rows.push(Row {
                        user: Some(u),
                        blank_assoc: true,
                        ..Row::default()
                    });
                }
                for l in mine {
                    rows.push(Row {
                        cluster: Some(&snap.cluster),
                        user: Some(u),
                        assoc: Some(&l.record),
                        ..Row::default()
                    });
                }
            }
            let mut cols = USER_DEFAULT.to_vec();
            if withassoc {
                cols.extend_from_slice(USER_ASSOC);
            }
            (cols, rows)
        }
        Entity::Account => {
            let mut names: Vec<String> = f.names.iter().map(|n| n.to_ascii_lowercase()).collect();
            names.extend(f.accounts.iter().cloned());
            let mut rows = Vec::new();
            for acct in snap.accounts.iter().filter(|a| matches(&names, &a.name)) {
                if !withassoc {
                    rows.push(Row {
                        account: Some(acct),
                        ..Row::default()
                    });
                    continue;
                }
                let mut mine: Vec<&&AssociationListing> = assocs
                    .iter()
                    .filter(|l| l.record.account == acct.name)
                    .filter(|l| {
                        f.users.is_empty()
                            || l.record.user.as_ref().is_some_and(|u| f.users.contains(u))
                    })
                    .collect();
                mine.sort_by_key(|l| (l.record.user.is_some(), l.lft));
                for l in mine {
                    rows.push(Row {
                        cluster: Some(&snap.cluster),
                        account: Some(acct),
                        assoc: Some(&l.record),
                        ..Row::default()
                    });
                }
            }
            let mut cols = ACCOUNT_DEFAULT.to_vec();
            if withassoc {
                cols.extend_from_slice(ACCOUNT_ASSOC);
            }
            (cols, rows)
        }
        Entity::Qos => {
            let names: Vec<String> = f.names.iter().map(|n| n.to_ascii_lowercase()).collect();
            let rows = snap
                .qos
                .iter()
                .filter(|q| matches(&names, &q.name))
                .map(|q| Row {
                    qos: Some(q),
                    ..Row::default()
                })
                .collect();
            (QOS_DEFAULT.to_vec(), rows)
        }
        Entity::Cluster => {
            let mut names: Vec<String> = f.names.iter().map(|n| n.to_ascii_lowercase()).collect();
            names.extend(f.clusters.iter().cloned());
            let root = snap
                .associations
                .iter()
                .find(|l| l.record.user.is_none() && l.record.account == "root");
            // The controller's own cluster with its root association's settings, and
            // the clusters sharing its database (their settings are their own
            // controllers'), by name.
            let mut rows: Vec<Row> = std::iter::once(Row {
                cluster: Some(&snap.cluster),
                assoc: root.map(|l| &l.record),
                ..Row::default()
            })
            .chain(snap.other_clusters.iter().map(|c| Row {
                cluster: Some(c),
                ..Row::default()
            }))
            .filter(|r| r.cluster.is_some_and(|c| matches(&names, &c.name)))
            .collect();
            rows.sort_by(|a, b| a.cluster.map(|c| &c.name).cmp(&b.cluster.map(|c| &c.name)));
            (CLUSTER_DEFAULT.to_vec(), rows)
        }
    };
    let cols = match format {
        Some(spec) => {
            format_columns(&spec).map_err(|name| vec![format!("Unknown field '{name}'")])?
        }
        None => columns(&defaults),
    };
    table(
        &mut out,
        &cols,
        &rows,
        opts,
        tree && entity == Entity::Association,
    );
    Ok(out)
}
