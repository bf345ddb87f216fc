//! `sluice sim`: replay a trace (or a generated workload) and report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use sluice_core::{BackfillParams, Cluster, Placement, Policy};
use sluice_sim::audit::JsonLines;
use sluice_sim::fairshare::{AccountFigures, FairShareOptions, FairnessReport, UserFigures};
use sluice_sim::metrics::{self, Metrics};
use sluice_sim::setup::{self, MachineSpec, Mode, SimJob};
use sluice_sim::synth::{self, SynthParams};
use sluice_sim::trace::{self, Format, TraceJob};
use sluice_sim::{output, plot, replay, SimError};

/// Scheduling policy names on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyName {
    /// First come, first served.
    Fcfs,
    /// EASY backfilling.
    Easy,
    /// Conservative backfilling.
    Conservative,
    /// Slurm's priority scheduling with periodic backfill (sched/backfill).
    Backfill,
}

/// Options of `sluice sim`.
#[derive(Args, Debug)]
pub struct SimArgs {
    /// The trace: SWF (`.swf`, `.swf.gz`), an Alibaba openb pod list or a Tiresias job list (CSV).
    #[arg(long, value_name = "FILE", required_unless_present = "synthetic")]
    pub trace: Option<PathBuf>,
    /// Replay a generated workload instead of a trace, e.g.
    /// `jobs=1000000,nodes=10000,cpus=64,load=0.9,seed=1` (all keys optional).
    #[arg(
        long,
        value_name = "LIST",
        conflicts_with_all = ["trace", "reference", "config", "procs", "nodes", "node_list", "cluster_spec"]
    )]
    pub synthetic: Option<String>,
    /// Node list for an Alibaba pod list (`openb_node_list_*.csv`).
    #[arg(long, value_name = "FILE")]
    pub node_list: Option<PathBuf>,
    /// Cluster spec for a Tiresias job list (`cluster_spec.csv`).
    #[arg(long, value_name = "FILE")]
    pub cluster_spec: Option<PathBuf>,
    /// Scheduling policy [default: backfill, or fcfs with a --config whose
    /// SchedulerType is sched/builtin].
    #[arg(long, value_enum)]
    pub policy: Option<PolicyName>,
    /// Reference mode: one processor pool and the reference normalisation of the
    /// scheduling literature (SWF traces only).
    #[arg(long, conflicts_with_all = ["config", "nodes"])]
    pub reference: bool,
    /// Machine size in processors (default: the SWF header's MaxProcs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "config")]
    pub procs: Option<u32>,
    /// Number of nodes the processors are spread over (full mode; default: MaxNodes).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "config")]
    pub nodes: Option<u32>,
    /// Take the machine (nodes, partitions, SchedulerParameters) from a slurm.conf.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Backfill parameters in slurm.conf syntax, e.g. `bf_window=2880,bf_resolution=300`
    /// (applied after any from --config).
    #[arg(long, value_name = "LIST")]
    pub scheduler_parameters: Option<String>,
    /// Print the metrics as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write one row per job (`id submit start finish run est procs`) to this TSV file.
    #[arg(long, value_name = "FILE.tsv")]
    pub jobs_out: Option<PathBuf>,
    /// Draw queue length and utilisation over time into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// How a one-node job chooses among the nodes that could take it: best-fit
    /// (fewest free GPUs, then processors), cpu-best-fit, first-fit or least-loaded
    /// [default: best-fit, or least-loaded with a --config that sets CR_LLN].
    #[arg(long, value_name = "RULE", value_parser = parse_placement)]
    pub placement: Option<Placement>,
    /// Divide every submission time by F, so that the same jobs arrive F times as
    /// densely (offered load × F); run times are unchanged.
    #[arg(long, value_name = "F", value_parser = parse_load_factor)]
    pub load_factor: Option<f64>,
    /// Submit every job of the trace K times (copies get new ids), as the workload
    /// inflation of GPU-sharing studies does to fill a cluster the trace alone leaves
    /// mostly idle.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..1001))]
    pub inflate: Option<u32>,
    /// Simulate fair-share: accounts from the trace's groups (or --accounts), usage
    /// decayed with PriorityDecayHalfLife, and jobs ordered by multifactor priority
    /// (the --config's Priority* settings, or fair-share weight 10000 and age weight
    /// 1000). On by default with a --config whose PriorityType is priority/multifactor.
    #[arg(long)]
    pub fairshare: bool,
    /// Map users to accounts for --fairshare: one `UID ACCOUNT` pair per line (`#`
    /// starts a comment); users not listed charge account `g<GID>` of their group.
    #[arg(long, value_name = "FILE")]
    pub accounts: Option<PathBuf>,
    /// Advance reservations to make during the replay, one per line:
    /// `NAME START DURATION nodes=N|gpus=N users=UIDS|accounts=NAMES FLAGS` (START in
    /// seconds after the first submission; see the README). The report states the
    /// reserved and the idle reserved capacity.
    #[arg(long, value_name = "FILE")]
    pub reservations: Option<PathBuf>,
    /// Enforce accounting limits on the trace's accounts and users, as
    /// `AccountingStorageEnforce=limits` does: lines `account NAME [parent=A]
    /// [LIMIT=VALUE...]` and `user UID [account=A] [LIMIT=VALUE...]` in sacctmgr's words
    /// (GrpTRES, GrpJobs, MaxJobs, MaxWall, ...), and `enforce safe`. Accounts are named
    /// as --accounts or the trace's groups (`g<GID>`) name them.
    #[arg(long, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// Let accounts borrow each other's unused quota (beyond Slurm): a cohorts.conf
    /// file (`Cohort=ml Account=g100 Quota=gres/gpu=8 BorrowLimit=gres/gpu=4
    /// GraceTime=60`), accounts named as --accounts or the trace's groups (`g<GID>`)
    /// name them. The report states the runs started borrowed and the reclaims.
    #[arg(long, value_name = "FILE")]
    pub cohorts: Option<PathBuf>,
    /// Write per-user fair-share figures (account, jobs, CPU-hours, usage share,
    /// normalized share, mean wait, final fair-share factor) to this TSV file.
    #[arg(long, value_name = "FILE.tsv")]
    pub fairness_out: Option<PathBuf>,
    /// Draw Jain's fairness index and the largest accounts' usage share over time into
    /// this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub fairness_plot: Option<PathBuf>,
    /// Write the replay's scheduling decisions to this file as JSON lines, in the
    /// format of `sluice audit --json` (one event per line, in time order, `seq` from
    /// 1): submitted, started (pass, priority, nodes), preempting/preempted, requeued,
    /// ended. Filled as the controller would: `user` is the trace's user id, `account`
    /// the one fair-share charges (--accounts, else `g<GID>`), `qos` `normal`; `rank` is
    /// null and GPU lists are empty (the simulator picks no GPU indices); pending
    /// reasons and planned starts are not recorded.
    #[arg(long, value_name = "FILE")]
    pub audit_out: Option<PathBuf>,
    /// Place jobs as if there were no switch topology (a Tiresias cluster spec's
    /// switches, or a --config with TopologyPlugin), to measure what it is worth.
    #[arg(long)]
    pub ignore_topology: bool,
}

fn parse_placement(s: &str) -> Result<Placement, String> {
    Placement::parse(s)
}

fn parse_load_factor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("'{s}' is not a positive number")),
    }
}

/// What `--json` prints: what was replayed, how, and the metrics.
#[derive(Serialize)]
struct Report<'a> {
    /// The trace file, or `synthetic ...`.
    trace: &'a str,
    /// Policy name.
    policy: &'a str,
    /// `reference` or `full`.
    mode: &'a str,
    /// Jobs left out before the replay (no run time or processors, or never ran).
    jobs_skipped: u64,
    /// How jobs were ordered: `multifactor` (fair-share) or `submission`.
    priority: &'a str,
    /// GPU-seconds in hours.
    gpu_hours: f64,
    #[serde(flatten)]
    metrics: &'a Metrics,
    /// Fair-share figures (with --fairshare or fairness outputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    fairness: Option<FairnessJson<'a>>,
    /// Advance reservations (with --reservations).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reservations: Vec<ResvJson>,
    /// Borrowing between accounts (with --cohorts).
    #[serde(skip_serializing_if = "Option::is_none")]
    borrowing: Option<BorrowJson>,
}

/// Borrowing figures in `--json`.
#[derive(Serialize)]
struct BorrowJson {
    /// Runs started above their account's quota.
    borrowed_starts: u64,
    /// Preemptions that took borrowed capacity back.
    reclaim_preemptions: u64,
}

/// One reservation in `--json`.
#[derive(Serialize)]
struct ResvJson {
    name: String,
    jobs: u64,
    reserved_node_hours: f64,
    idle_node_hours: f64,
    reserved_gpu_hours: f64,
    idle_gpu_hours: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<String>,
}

/// The reservations part of the table: reserved and idle node-hours and GPU-hours.
fn render_reservations(rs: &[sluice_sim::reservations::ResvReport]) -> String {
    let mut s = String::from(
        "reservations (reserved / idle):
",
    );
    for r in rs {
        match &r.refused {
            Some(why) => {
                let _ = writeln!(s, "  {}: refused: {why}", r.name);
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {}: {} jobs, {:.2} / {:.2} node-hours, {:.2} / {:.2} GPU-hours",
                    r.name,
                    r.jobs,
                    r.reserved_node_s as f64 / 3600.0,
                    r.idle_node_s() as f64 / 3600.0,
                    r.reserved_gpu_s as f64 / 3600.0,
                    r.idle_gpu_s() as f64 / 3600.0
                );
            }
        }
    }
    s
}

/// The fairness part of `--json`.
#[derive(Serialize)]
struct FairnessJson<'a> {
    /// Jain's index over accounts of usage share / normalized share.
    jain_index: f64,
    accounts: &'a [AccountFigures],
    users: &'a [UserFigures],
}

/// How fair-share is simulated: the `--config`'s multifactor settings (`from_config`),
/// else the defaults when `--fairshare`, `--accounts` or a fairness output asks for it
/// (ordering jobs only with `--fairshare`), with `--accounts` read in. `None`: not at all.
fn fairshare_options(
    args: &SimArgs,
    from_config: Option<FairShareOptions>,
) -> Result<Option<FairShareOptions>, SimError> {
    let wanted = args.fairshare
        || args.accounts.is_some()
        || args.fairness_out.is_some()
        || args.fairness_plot.is_some();
    let Some(mut o) = from_config.or_else(|| {
        wanted.then(|| FairShareOptions {
            priority: args.fairshare,
            ..Default::default()
        })
    }) else {
        return Ok(None);
    };
    if let Some(path) = &args.accounts {
        o.accounts = read_accounts(path)?;
    }
    Ok(Some(o))
}

/// Warns about `--limits` lines that concern no job (most likely a typo).
fn warn_unused_limits(
    path: &Path,
    limits: &sluice_sim::limits::SimLimits,
    jobs: &[sluice_sim::setup::SimJob],
    user_accounts: &BTreeMap<u32, String>,
) {
    let charged: std::collections::BTreeSet<String> = jobs
        .iter()
        .map(|j| sluice_sim::limits::account_name(user_accounts, j))
        .collect();
    let parents: std::collections::BTreeSet<&String> = limits
        .accounts
        .iter()
        .filter_map(|a| a.parent.as_ref())
        .collect();
    for a in &limits.accounts {
        if !charged.contains(&a.name) && !parents.contains(&a.name) {
            eprintln!(
                "sluice sim: warning: {}: no job charges account {}",
                path.display(),
                a.name
            );
        }
    }
    for u in &limits.users {
        if !jobs.iter().any(|j| j.spec.user == u.uid) {
            eprintln!(
                "sluice sim: warning: {}: no job of user {}",
                path.display(),
                u.uid
            );
        }
    }
}

/// Reads a `UID ACCOUNT` mapping (see `--accounts`).
fn read_accounts(path: &Path) -> Result<BTreeMap<u32, String>, SimError> {
    let text = std::fs::read_to_string(path).map_err(|e| SimError::io(path, e))?;
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(uid), Some(account), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(SimError::parse(path, i + 1, "expected `UID ACCOUNT`"));
        };
        let uid: u32 = uid
            .parse()
            .map_err(|_| SimError::parse(path, i + 1, format!("'{uid}' is not a user id")))?;
        map.insert(uid, account.to_string());
    }
    Ok(map)
}

/// The fairness section of the table report.
fn render_fairness(f: &FairnessReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fair-share: Jain's index of usage/share over accounts {:.4}",
        f.jain
    );
    let shown = f.accounts.len().min(10);
    let _ = writeln!(
        s,
        "per account ({shown} largest of {}; per user with --fairness-out or --json)",
        f.accounts.len()
    );
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "account",
        "jobs",
        "share",
        "usage",
        "avg wait (min)",
    ]);
    for a in &f.accounts[..shown] {
        t.add_row(vec![
            Cell::new(&a.account),
            Cell::new(a.jobs).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.4}", a.norm_shares)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.4}", a.usage_share)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.2}", a.mean_wait / 60.0)).set_alignment(CellAlignment::Right),
        ]);
    }
    let _ = writeln!(s, "{t}");
    s
}

/// Output files, created before the replay so that a bad path fails at once. Those that
/// did not exist before are removed again if the run fails, so no partial results are
/// left behind; a path that existed (a file being replaced, `/dev/null`) is never
/// removed.
struct Outputs {
    created: Vec<PathBuf>,
    done: bool,
}

impl Outputs {
    fn create(paths: &[&Option<PathBuf>]) -> Result<Self, SimError> {
        let mut out = Outputs {
            created: Vec::new(),
            done: false,
        };
        for path in paths.iter().copied().flatten() {
            let existed = std::fs::symlink_metadata(path).is_ok();
            File::create(path).map_err(|e| SimError::io(path, e))?;
            if !existed {
                out.created.push(path.clone());
            }
        }
        Ok(out)
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        if !self.done {
            for p in &self.created {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Runs `sluice sim`.
pub fn run(args: SimArgs) -> Result<(), SimError> {
    let mut params = BackfillParams::default();
    let Some(trace_path) = args.trace.clone() else {
        let list = args.synthetic.clone().unwrap_or_default();
        let synth = parse_synthetic(&list)?;
        apply_parameters(&mut params, &args)?;
        let (mut cluster, jobs) = synth::generate(&synth);
        if let Some(p) = args.placement {
            cluster.placement = p;
        }
        let name = format!("synthetic {list}");
        let fairshare = fairshare_options(&args, None)?;
        return replay_and_report(
            &args,
            cluster,
            jobs,
            0,
            &name,
            &params,
            PolicyName::Backfill,
            fairshare,
        );
    };
    let format = trace::detect_format(&trace_path)?;
    let invalid = |message: &str| SimError::Invalid {
        path: trace_path.clone(),
        message: message.to_string(),
    };
    if args.node_list.is_some() && format != Format::Alibaba {
        return Err(invalid(
            "--node-list goes with an Alibaba pod list, not this trace",
        ));
    }
    if args.cluster_spec.is_some() && format != Format::Tiresias {
        return Err(invalid(
            "--cluster-spec goes with a Tiresias job list, not this trace",
        ));
    }
    if format != Format::Swf && (args.procs.is_some() || args.nodes.is_some()) {
        return Err(invalid(
            "--procs and --nodes size SWF traces; a GPU trace lists its own nodes",
        ));
    }
    let mut workload = match format {
        Format::Swf => trace::swf::read(&trace_path)?,
        Format::Alibaba => {
            let nodes = args.node_list.as_ref().ok_or_else(|| {
                invalid("an Alibaba pod list needs its node list: --node-list FILE")
            })?;
            trace::alibaba::read(&trace_path, nodes)?
        }
        Format::Tiresias => {
            let spec = args.cluster_spec.as_ref().ok_or_else(|| {
                invalid("a Tiresias job list needs its cluster spec: --cluster-spec FILE")
            })?;
            trace::tiresias::read(&trace_path, spec)?
        }
    };
    if let Some(k) = args.inflate.filter(|&k| k > 1) {
        let stride = workload.jobs.iter().map(|j| j.id).max().unwrap_or(0) + 1;
        let original = workload.jobs.clone();
        for copy in 1..k as u64 {
            workload.jobs.extend(original.iter().map(|j| TraceJob {
                id: j.id + copy * stride,
                ..j.clone()
            }));
        }
    }
    if let Some(f) = args.load_factor {
        for j in &mut workload.jobs {
            j.submit = (j.submit as f64 / f).round() as i64;
        }
    }
    let mut default_policy = PolicyName::Backfill;
    let mut fairshare: Option<FairShareOptions> = None;
    let mut machine = MachineSpec {
        procs: args.procs,
        nodes: args.nodes,
        config: None,
    };
    if let Some(path) = &args.config {
        let conf =
            sluice_conf::slurm_conf::read(path).map_err(|e| SimError::Machine(e.to_string()))?;
        for w in &conf.warnings {
            eprintln!("sluice sim: warning: {w}");
        }
        let prio = sluice_conf::priority_conf::priority_settings(&conf, &conf.cluster.gres)
            .map_err(|e| SimError::Machine(e.to_string()))?;
        if prio.multifactor {
            fairshare = Some(FairShareOptions {
                priority: true,
                params: prio.params.clone(),
                algorithm: prio.algorithm,
                half_life: prio.half_life,
                calc_period: prio.calc_period,
                ..Default::default()
            });
        }
        params = conf.backfill.clone();
        if conf.scheduler_type == "sched/builtin" {
            default_policy = PolicyName::Fcfs;
        }
        machine.config = Some(conf.cluster);
    }
    apply_parameters(&mut params, &args)?;
    let mode = if args.reference {
        Mode::Reference
    } else {
        Mode::Full
    };
    let (mut cluster, jobs, skipped) = setup::prepare(&workload, mode, &machine, &trace_path)?;
    if let Some(p) = args.placement {
        cluster.placement = p;
    }
    if args.ignore_topology {
        // Nodes keep their switch, so that the report still measures locality.
        cluster.switches.clear();
    }
    let name = trace_path.display().to_string();
    let fairshare = fairshare_options(&args, fairshare)?;
    replay_and_report(
        &args,
        cluster,
        jobs,
        skipped.no_data,
        &name,
        &params,
        default_policy,
        fairshare,
    )
}

fn apply_parameters(params: &mut BackfillParams, args: &SimArgs) -> Result<(), SimError> {
    if let Some(list) = &args.scheduler_parameters {
        let unknown = sluice_conf::slurm_conf::apply_scheduler_parameters(params, list)
            .map_err(|e| SimError::Machine(format!("--scheduler-parameters: {e}")))?;
        for u in unknown {
            eprintln!(
                "sluice sim: warning: --scheduler-parameters: unknown option '{u}' (ignored)"
            );
        }
    }
    Ok(())
}

fn make_policy(name: PolicyName, params: &BackfillParams) -> Policy {
    match name {
        PolicyName::Fcfs => Policy::Fcfs,
        PolicyName::Easy => Policy::Easy,
        PolicyName::Conservative => Policy::Conservative,
        PolicyName::Backfill => Policy::Backfill(params.clone()),
    }
}

/// Parses `--synthetic jobs=...,nodes=...,cpus=...,load=...,seed=...`.
fn parse_synthetic(list: &str) -> Result<SynthParams, SimError> {
    let mut p = SynthParams::default();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || {
            SimError::Machine(format!(
                "--synthetic: cannot use '{item}' (keys: jobs 1-100000000, nodes 1-1000000, \
                 cpus 1-4096, load 0.01-100, seed)"
            ))
        };
        let (k, v) = item.split_once('=').ok_or_else(bad)?;
        match k {
            "jobs" => {
                p.jobs = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100_000_000).contains(n))
                    .ok_or_else(bad)?
            }
            "nodes" => {
                p.nodes = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=1_000_000).contains(n))
                    .ok_or_else(bad)?
            }
            "cpus" => {
                p.cpus_per_node = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(bad)?
            }
            "load" => {
                p.load = v
                    .parse()
                    .ok()
                    .filter(|x: &f64| (0.01..=100.0).contains(x))
                    .ok_or_else(bad)?
            }
            "seed" => p.seed = v.parse().map_err(|_| bad())?,
            _ => return Err(bad()),
        }
    }
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
fn replay_and_report(
    args: &SimArgs,
    cluster: Cluster,
    jobs: Vec<SimJob>,
    skipped: u64,
    name: &str,
    params: &BackfillParams,
    default_policy: PolicyName,
    fairshare: Option<FairShareOptions>,
) -> Result<(), SimError> {
    let mut outputs = Outputs::create(&[
        &args.jobs_out,
        &args.plot,
        &args.fairness_out,
        &args.fairness_plot,
        &args.audit_out,
    ])?;
    let policy = make_policy(args.policy.unwrap_or(default_policy), params);
    let last_submit = jobs.iter().map(|j| j.spec.submit).max().unwrap_or(0);
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} replaying [{bar:40}] {pos}/{len} jobs ({per_sec}, {eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let ordered_by_fairshare = fairshare.as_ref().is_some_and(|f| f.priority);
    if let Some(f) = fairshare.as_ref().filter(|f| f.priority) {
        let w = &f.params.weights;
        if w.fairshare == 0 && w.age == 0 && w.job_size == 0 && w.tres.is_empty() {
            eprintln!(
                "sluice sim: warning: multifactor priority with all weights 0 (Slurm's default) orders jobs by submission; set PriorityWeightFairshare"
            );
        }
    }
    let reservations = match &args.reservations {
        Some(path) => sluice_sim::reservations::read(path)?,
        None => Vec::new(),
    };
    // Users' accounts: for reservations that admit accounts, and the audit trail.
    let user_accounts = match &args.accounts {
        Some(a) => read_accounts(a)?,
        None => BTreeMap::new(),
    };
    let mut jobs = jobs;
    let cohorts_conf = match &args.cohorts {
        Some(path) => Some(
            sluice_conf::cohorts_conf::read(path).map_err(|e| SimError::Machine(e.to_string()))?,
        ),
        None => None,
    };
    let mut cohorts = Vec::new();
    let limits = if args.limits.is_some() || cohorts_conf.is_some() {
        let (lines, path) = match &args.limits {
            Some(path) => {
                let lines = crate::sim_limits::read(path, &cluster)?;
                warn_unused_limits(path, &lines, &jobs, &user_accounts);
                (lines, path.clone())
            }
            None => Default::default(),
        };
        let (mut db, accts, ids) = lines
            .build_named(&jobs, &user_accounts)
            .map_err(|e| SimError::Machine(format!("{}: {e}", path.display())))?;
        db.partition_qos = vec![None; cluster.partitions.len()];
        for (j, a) in jobs.iter_mut().zip(accts) {
            j.spec.acct = a;
        }
        if let Some(conf) = &cohorts_conf {
            cohorts = sluice_ctld::accounts::cohorts::core_cohorts(conf, &cluster, |name| {
                ids.get(name).copied()
            })
            .map_err(|e| SimError::Machine(e.to_string()))?;
        }
        Some(db)
    } else {
        None
    };
    let options = replay::ReplayOptions {
        samples: args.plot.is_some(),
        fairshare,
        reservations,
        accounts: user_accounts,
        limits,
        cohorts,
    };
    let mut progress = |done, _| bar.set_position(done);
    let result = match &args.audit_out {
        Some(path) => {
            let f = File::create(path).map_err(|e| SimError::io(path, e))?;
            let mut sink = JsonLines::new(BufWriter::new(f));
            let result = replay::run_audited(
                cluster,
                policy.clone(),
                jobs,
                options,
                &mut progress,
                Some(&mut sink),
            );
            sink.finish().map_err(|e| SimError::io(path, e))?;
            result
        }
        None => replay::run(cluster, policy.clone(), jobs, options, &mut progress),
    };
    bar.finish_and_clear();
    let m = metrics::compute(&result, last_submit);
    if let Some(path) = &args.jobs_out {
        let f = File::create(path).map_err(|e| SimError::io(path, e))?;
        output::write_jobs(BufWriter::new(f), &result.records)
            .map_err(|e| SimError::io(path, e))?;
    }
    if let Some(path) = &args.plot {
        plot::draw(path, &result, name, policy.name())?;
    }
    if let Some(report) = &result.fairness {
        if let Some(path) = &args.fairness_out {
            let f = File::create(path).map_err(|e| SimError::io(path, e))?;
            output::write_fairness(BufWriter::new(f), report).map_err(|e| SimError::io(path, e))?;
        }
        if let Some(path) = &args.fairness_plot {
            plot::draw_fairness(path, report, name)?;
        }
    }
    let mode = if args.reference { "reference" } else { "full" };
    let order = if ordered_by_fairshare {
        "multifactor priority with fair-share"
    } else {
        "priority by submission"
    };
    let text = if args.json {
        let report = Report {
            trace: name,
            policy: policy.name(),
            mode,
            jobs_skipped: skipped,
            priority: if ordered_by_fairshare {
                "multifactor"
            } else {
                "submission"
            },
            gpu_hours: m.gpu_seconds / 3600.0,
            metrics: &m,
            fairness: result.fairness.as_ref().map(|f| FairnessJson {
                jain_index: f.jain,
                accounts: &f.accounts,
                users: &f.users,
            }),
            reservations: result
                .reservations
                .iter()
                .map(|r| ResvJson {
                    name: r.name.clone(),
                    jobs: r.jobs,
                    reserved_node_hours: r.reserved_node_s as f64 / 3600.0,
                    idle_node_hours: r.idle_node_s() as f64 / 3600.0,
                    reserved_gpu_hours: r.reserved_gpu_s as f64 / 3600.0,
                    idle_gpu_hours: r.idle_gpu_s() as f64 / 3600.0,
                    refused: r.refused.clone(),
                })
                .collect(),
            borrowing: args.cohorts.as_ref().map(|_| BorrowJson {
                borrowed_starts: result.borrowed_starts,
                reclaim_preemptions: result.reclaims,
            }),
        };
        serde_json::to_string_pretty(&report).expect("metrics serialise") + "\n"
    } else {
        let mut text = render_table(&m, name, mode, &policy, skipped, order);
        if let Some(f) = &result.fairness {
            text.push_str(&render_fairness(f));
        }
        if !result.reservations.is_empty() {
            text.push_str(&render_reservations(&result.reservations));
        }
        if args.cohorts.is_some() {
            let _ = writeln!(
                text,
                "borrowing: {} runs started borrowed, {} reclaim preemptions",
                result.borrowed_starts, result.reclaims
            );
        }
        text
    };
    outputs.done = true;
    print_out(&text)
}

/// Writes to standard output; a closed pipe (`sluice sim ... | head`) ends quietly.
fn print_out(text: &str) -> Result<(), SimError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(SimError::io(Path::new("standard output"), e)),
    }
}

fn render_table(
    m: &Metrics,
    name: &str,
    mode: &str,
    policy: &Policy,
    skipped: u64,
    order: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{name} — policy {} — {mode} mode — {order}",
        policy.name()
    );
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["metric", "value"]);
    let mut rows: Vec<(&str, String)> = vec![
        ("jobs finished", m.jobs_finished.to_string()),
        ("jobs rejected", m.jobs_rejected.to_string()),
        ("jobs never started", m.jobs_never_started.to_string()),
        (
            "jobs skipped (no run time or processors)",
            skipped.to_string(),
        ),
        ("jobs counted", m.jobs_counted.to_string()),
        ("average wait (min)", format!("{:.4}", m.avg_wait_min)),
        ("median wait (min)", format!("{:.4}", m.median_wait_min)),
        (
            "95th percentile wait (min)",
            format!("{:.4}", m.p95_wait_min),
        ),
        (
            "average response (min)",
            format!("{:.4}", m.avg_response_min),
        ),
        (
            "average bounded slowdown (τ=10s)",
            format!("{:.4}", m.avg_bounded_slowdown),
        ),
        ("utilisation", format!("{:.4}", m.utilization)),
        ("makespan (s)", m.makespan_s.to_string()),
        (
            "jobs backfilled (started ahead of an earlier job)",
            m.jobs_backfilled.to_string(),
        ),
        ("jobs killed at time limit", m.jobs_timed_out.to_string()),
    ];
    if m.preemptions > 0 {
        rows.push(("runs preempted", m.preemptions.to_string()));
        rows.push((
            "processor-seconds lost to preemption",
            m.lost_proc_seconds.to_string(),
        ));
    }
    if m.suspensions > 0 {
        rows.push((
            "suspensions (preemption, time slices)",
            m.suspensions.to_string(),
        ));
    }
    if m.gpu_seconds > 0.0 {
        rows.push(("GPU-hours", format!("{:.1}", m.gpu_seconds / 3600.0)));
        rows.push(("GPU utilisation", format!("{:.4}", m.gpu_utilization)));
        rows.push((
            "GPU-hours idle while GPU jobs waited",
            format!("{:.1}", m.idle_gpu_seconds_while_waiting / 3600.0),
        ));
        rows.push((
            "  of which fragmented",
            format!("{:.1}", m.fragmented_gpu_seconds / 3600.0),
        ));
        rows.push(("multi-GPU jobs", m.multi_gpu_jobs.to_string()));
        rows.push((
            "  on the fewest nodes possible",
            format!("{:.4}", m.multi_gpu_fewest_nodes),
        ));
        if m.multi_node_jobs_in_topology > 0 {
            rows.push(("multi-node jobs", m.multi_node_jobs_in_topology.to_string()));
            rows.push((
                "  under one leaf switch",
                format!("{:.4}", m.multi_node_one_switch),
            ));
        }
    }
    for (k, v) in rows {
        t.add_row(vec![
            Cell::new(k),
            Cell::new(v).set_alignment(CellAlignment::Right),
        ]);
    }
    let _ = writeln!(s, "{t}");
    for (what, by_reason) in [
        ("rejected", &m.rejected_by_reason),
        ("never started", &m.never_started_by_reason),
    ] {
        for (reason, n) in by_reason {
            let _ = writeln!(s, "{n} jobs {what}: {reason}");
        }
    }
    if m.per_user.len() > 1 {
        let mut users: Vec<_> = m.per_user.iter().collect();
        users.sort_by_key(|u| (std::cmp::Reverse(u.jobs), u.user));
        let shown = users.len().min(10);
        let _ = writeln!(
            s,
            "per user ({shown} with the most jobs of {}; all in --json)",
            users.len()
        );
        let mut u = Table::new();
        u.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "user",
            "jobs",
            "avg wait (min)",
            "avg bounded slowdown",
        ]);
        for x in &users[..shown] {
            let user = if x.user < 0 {
                "unknown".to_string()
            } else {
                x.user.to_string()
            };
            u.add_row(vec![
                Cell::new(user),
                Cell::new(x.jobs).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}", x.avg_wait_min)).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}", x.avg_bounded_slowdown))
                    .set_alignment(CellAlignment::Right),
            ]);
        }
        let _ = writeln!(s, "{u}");
    }
    s
}

#[cfg(test)]
mod tests;
