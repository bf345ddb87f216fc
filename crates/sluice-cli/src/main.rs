//! `sluice`: the Sluice command.
//!
//! Everything in one binary: `sluice up` runs a cluster, `sluice sim` replays workloads,
//! and under the names of Slurm's commands (`sbatch`, `squeue`, ...) it is those commands
//! (`sluice up` links their names in the state directory's `bin/` to `sluice-commands`,
//! the commands alone, where it is installed beside this binary). Under the names of
//! Slurm's daemons (`slurmctld`, `slurmd`; also `sluice ctld`, `sluice agent`) it runs
//! them with Slurm's flags, for a cluster of several machines (`daemons.rs`).

use sluice_cli::{
    audit, daemons, db, explain, metrics, report, reservations, restd, sim, slurm, ui, up,
};

use clap::{Parser, Subcommand};

/// Subcommands that talk to the cluster as the Slurm commands do, and exit 1 on a usage
/// error as they do (clap's own code is 2).
const EXIT_1_ON_USAGE: [&str; 2] = ["audit", "explain"];

/// Sluice: a Slurm-compatible workload manager for GPU and HPC clusters.
#[derive(Parser, Debug)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start a cluster on this machine (controller and node agents) in the foreground.
    Up(up::UpArgs),
    /// Replay a workload trace through the scheduling core on a virtual clock.
    Sim(Box<sim::SimArgs>),
    /// Usage reports from the job database (`sluice report gpu`: GPU-seconds and
    /// billing-seconds per user and account; `sluice report efficiency`: how well jobs
    /// used their CPUs, memory, GPUs and time).
    Report(report::ReportArgs),
    /// The audit trail: a job's story (`sluice audit JOBID`), who held a node's GPU
    /// when (`--node NODE --gpu INDEX`), JSON lines with `--json`.
    Audit(audit::AuditArgs),
    /// The state database: `sluice db migrate --from FILE --to URL` moves a site's
    /// SQLite state and history to PostgreSQL.
    Db(db::DbArgs),
    /// Advance reservations with reserved, used and idle node-hours and GPU-hours so
    /// far (`--idle`: only those with idle reserved capacity).
    Reservations(reservations::ReservationsArgs),
    /// Why a job waits, when it will start, and what would start it sooner (for a job
    /// that ran: when, where and by which pass it started).
    Explain(explain::ExplainArgs),
    /// The controller's metrics (`MetricsType=metrics/openmetrics`) as Prometheus reads
    /// them: `jobs`, `nodes`, `partitions`, `scheduler`, `jobs-users-accts`, `sluice`.
    Metrics(metrics::MetricsArgs),
    /// The web dashboard for you, on this host: the queue with each pending job's
    /// reason and forecast start, nodes with a map of their GPUs, each job's page, the
    /// fair-share tree. Open the address it prints.
    Ui(ui::UiArgs),
    /// The controller of a cluster of several machines, as `slurmctld` (Slurm's flags:
    /// -D, -f FILE, -L FILE, -v).
    #[command(disable_help_flag = true)]
    Ctld {
        /// slurmctld's flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// One node's agent, as `slurmd` (Slurm's flags: -D, -f FILE, -N NAME, -L FILE, -v).
    #[command(disable_help_flag = true)]
    Agent {
        /// slurmd's flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, ran) = slurm::run_by_name(&args);
    if let Some(code) = ran {
        std::process::exit(code);
    }
    // What `sluice-commands` and `sluice-stepd` are compared by (`build.rs`).
    if args.get(1).map(String::as_str) == Some("--build-id") {
        println!("{}", sluice_cli::BUILD_ID);
        std::process::exit(0);
    }
    match name.as_str() {
        "slurmctld" => std::process::exit(daemons::ctld(args[1..].to_vec())),
        "slurmd" => std::process::exit(daemons::agent(args[1..].to_vec())),
        "slurmrestd" => std::process::exit(restd::main(args[1..].to_vec())),
        _ => {}
    }
    // The daemons read their flags as Slurm's do (getopt), not as clap would. A job's
    // supervisor (`slurmstepd stepd DIR`, as an agent starts it) is no command of its
    // own: hidden.
    match args.get(1).map(String::as_str) {
        Some("ctld") => std::process::exit(daemons::ctld(args[2..].to_vec())),
        Some("agent") => std::process::exit(daemons::agent(args[2..].to_vec())),
        Some("stepd") => std::process::exit(daemons::stepd(args[2..].to_vec())),
        _ => {}
    }
    // `sluice squeue ...` works too.
    if let Some(code) = args
        .get(1)
        .and_then(|cmd| slurm::dispatch(cmd, args[2..].to_vec()))
    {
        std::process::exit(code);
    }
    let cli = Cli::try_parse().unwrap_or_else(|e| usage_error(e, args.get(1)));
    let code = match cli.command {
        Command::Sim(args) => match sim::run(*args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sluice sim: error: {e}");
                1
            }
        },
        Command::Up(args) => up::run(args),
        Command::Report(args) => report::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Db(args) => db::run(args),
        Command::Reservations(args) => reservations::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Metrics(args) => metrics::run(args),
        Command::Ui(args) => ui::run(args),
        Command::Ctld { args } => daemons::ctld(args),
        Command::Agent { args } => daemons::agent(args),
    };
    std::process::exit(code);
}

/// Reports command-line error `e` (clap's message on stderr; help and version on
/// stdout, exit 0) and exits: 1 for a usage error of a subcommand in
/// [`EXIT_1_ON_USAGE`] (`subcommand`: the first argument), clap's 2 for the others.
fn usage_error(e: clap::Error, subcommand: Option<&String>) -> ! {
    if e.use_stderr() && subcommand.is_some_and(|s| EXIT_1_ON_USAGE.contains(&s.as_str())) {
        let _ = e.print();
        std::process::exit(1);
    }
    e.exit()
}
