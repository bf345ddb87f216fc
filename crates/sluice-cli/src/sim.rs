//! `sluice sim`: replay a trace and report.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressStyle};
use sluice_core::{BackfillParams, Policy};
use sluice_sim::metrics::{self, Metrics};
use sluice_sim::setup::{self, MachineSpec, Mode, SimJob};
use sluice_sim::synth::{self, SynthParams};
use sluice_sim::trace::{self, Format};
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
    #[arg(long, value_name = "LIST", conflicts_with_all = ["trace", "reference", "config"])]
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
    #[arg(long)]
    pub reference: bool,
    /// Machine size in processors (default: the SWF header's MaxProcs).
    #[arg(long, value_name = "N")]
    pub procs: Option<u32>,
    /// Number of nodes the processors are spread over (full mode; default: MaxNodes).
    #[arg(long, value_name = "N")]
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
}

/// Runs `sluice sim`.
pub fn run(args: SimArgs) -> Result<(), SimError> {
    let Some(trace_path) = args.trace.clone() else {
        let list = args.synthetic.clone().unwrap_or_default();
        let params = parse_synthetic(&list)?;
        let (cluster, jobs) = synth::generate(&params);
        let name = format!("synthetic {list}");
        return replay_and_report(
            &args,
            cluster,
            jobs,
            0,
            &name,
            BackfillParams::default(),
            PolicyName::Backfill,
        );
    };
    let format = trace::detect_format(&trace_path)?;
    let workload = match format {
        Format::Swf => trace::swf::read(&trace_path)?,
        Format::Alibaba => {
            let nodes = args.node_list.as_ref().ok_or_else(|| SimError::Invalid {
                path: trace_path.clone(),
                message: "an Alibaba pod list needs its node list: --node-list FILE".into(),
            })?;
            trace::alibaba::read(&trace_path, nodes)?
        }
        Format::Tiresias => {
            let spec = args
                .cluster_spec
                .as_ref()
                .ok_or_else(|| SimError::Invalid {
                    path: trace_path.clone(),
                    message: "a Tiresias job list needs its cluster spec: --cluster-spec FILE"
                        .into(),
                })?;
            trace::tiresias::read(&trace_path, spec)?
        }
    };
    let mut params = BackfillParams::default();
    let mut default_policy = PolicyName::Backfill;
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
        params = conf.backfill.clone();
        if conf.scheduler_type == "sched/builtin" {
            default_policy = PolicyName::Fcfs;
        }
        machine.config = Some(conf.cluster);
    }
    if let Some(list) = &args.scheduler_parameters {
        let unknown = sluice_conf::slurm_conf::apply_scheduler_parameters(&mut params, list)
            .map_err(|e| SimError::Machine(format!("--scheduler-parameters: {e}")))?;
        for u in unknown {
            eprintln!(
                "sluice sim: warning: --scheduler-parameters: unknown option '{u}' (ignored)"
            );
        }
    }
    let mode = if args.reference {
        Mode::Reference
    } else {
        Mode::Full
    };
    let policy = make_policy(args.policy.unwrap_or(default_policy), &params);
    let (cluster, jobs, skipped) = setup::prepare(&workload, mode, &machine, &policy, &trace_path)?;
    let name = trace_path.display().to_string();
    replay_and_report(
        &args,
        cluster,
        jobs,
        skipped.no_data,
        &name,
        params,
        default_policy,
    )
}

fn make_policy(name: PolicyName, params: &BackfillParams) -> Policy {
    match name {
        PolicyName::Fcfs => Policy::Fcfs,
        PolicyName::Easy => Policy::Easy,
        PolicyName::Conservative => Policy::Conservative,
        PolicyName::Backfill => Policy::Backfill(params.clone()),
    }
}

fn parse_synthetic(list: &str) -> Result<SynthParams, SimError> {
    let mut p = SynthParams::default();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || {
            SimError::Machine(format!(
                "--synthetic: cannot use '{item}' (keys: jobs, nodes, cpus, load, seed)"
            ))
        };
        let (k, v) = item.split_once('=').ok_or_else(bad)?;
        match k {
            "jobs" => p.jobs = v.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?,
            "nodes" => p.nodes = v.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?,
            "cpus" => p.cpus_per_node = v.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?,
            "load" => {
                p.load = v
                    .parse()
                    .ok()
                    .filter(|x: &f64| *x > 0.0 && x.is_finite())
                    .ok_or_else(bad)?
            }
            "seed" => p.seed = v.parse().map_err(|_| bad())?,
            _ => return Err(bad()),
        }
    }
    Ok(p)
}

fn replay_and_report(
    args: &SimArgs,
    cluster: sluice_core::Cluster,
    jobs: Vec<SimJob>,
    skipped: u64,
    name: &str,
    params: BackfillParams,
    default_policy: PolicyName,
) -> Result<(), SimError> {
    let policy = make_policy(args.policy.unwrap_or(default_policy), &params);
    let last_submit = jobs.iter().map(|j| j.spec.submit).max().unwrap_or(0);
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} replaying [{bar:40}] {pos}/{len} jobs ({per_sec}, {eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let options = replay::ReplayOptions {
        samples: args.plot.is_some(),
    };
    let result = replay::run(cluster, policy.clone(), jobs, options, &mut |done, _| {
        bar.set_position(done)
    });
    bar.finish_and_clear();
    let m = metrics::compute(&result, last_submit);
    if let Some(path) = &args.jobs_out {
        let f = File::create(path).map_err(|e| SimError::io_at(path, e))?;
        output::write_jobs(BufWriter::new(f), &result.records)
            .map_err(|e| SimError::io_at(path, e))?;
    }
    if let Some(path) = &args.plot {
        plot::draw(path, &result, name, policy.name())?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&m).expect("metrics serialise")
        );
    } else {
        print_table(&m, name, args.reference, &policy, skipped);
    }
    Ok(())
}

fn print_table(m: &Metrics, name: &str, reference: bool, policy: &Policy, skipped: u64) {
    let mode = if reference { "reference" } else { "full" };
    println!("{name} — policy {} — {mode} mode", policy.name());
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["metric", "value"]);
    let rows: Vec<(&str, String)> = vec![
        ("jobs finished", m.jobs_finished.to_string()),
        ("jobs rejected", m.jobs_rejected.to_string()),
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
        ("jobs backfilled", m.jobs_backfilled.to_string()),
        ("jobs killed at time limit", m.jobs_timed_out.to_string()),
    ];
    for (k, v) in rows {
        t.add_row(vec![
            Cell::new(k),
            Cell::new(v).set_alignment(CellAlignment::Right),
        ]);
    }
    if m.gpu_seconds > 0.0 {
        t.add_row(vec![
            Cell::new("GPU-hours"),
            Cell::new(format!("{:.1}", m.gpu_seconds / 3600.0)).set_alignment(CellAlignment::Right),
        ]);
        t.add_row(vec![
            Cell::new("GPU utilisation"),
            Cell::new(format!("{:.4}", m.gpu_utilization)).set_alignment(CellAlignment::Right),
        ]);
    }
    println!("{t}");
    if m.per_user.len() > 1 {
        let mut users: Vec<_> = m.per_user.iter().collect();
        users.sort_by_key(|u| (std::cmp::Reverse(u.jobs), u.user));
        let shown = users.len().min(10);
        println!(
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
            u.add_row(vec![
                Cell::new(x.user),
                Cell::new(x.jobs).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}", x.avg_wait_min)).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}", x.avg_bounded_slowdown))
                    .set_alignment(CellAlignment::Right),
            ]);
        }
        println!("{u}");
    }
}
