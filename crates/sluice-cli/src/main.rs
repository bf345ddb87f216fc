//! `sluice`: the Sluice command.
//!
//! One binary: `sluice up` runs a cluster, `sluice sim` replays workloads, and under the
//! names of Slurm's commands (`sbatch`, `squeue`, ... — links to this binary, made by
//! `sluice up` in the state directory's `bin/`) it is those commands.

mod audit;
mod explain;
mod report;
mod reservations;
mod sim;
mod sim_limits;
mod slurm;
mod up;

use clap::{Parser, Subcommand};

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
    /// billing-seconds per user and account).
    Report(report::ReportArgs),
    /// The audit trail: a job's story (`sluice audit JOBID`), who held a node's GPU
    /// when (`--node NODE --gpu INDEX`), JSON lines with `--json`.
    Audit(audit::AuditArgs),
    /// Advance reservations with reserved, used and idle node-hours and GPU-hours so
    /// far (`--idle`: only those with idle reserved capacity).
    Reservations(reservations::ReservationsArgs),
    /// Why a job waits, when it will start, and what would start it sooner (for a job
    /// that ran: when, where and by which pass it started).
    Explain(explain::ExplainArgs),
    /// Run one node's agent (started by `sluice up`).
    #[command(hide = true)]
    Agent(up::AgentArgs),
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(code) = slurm::dispatch(&name, args[1..].to_vec()) {
        std::process::exit(code);
    }
    // `sluice squeue ...` works too.
    if let Some(code) = args
        .get(1)
        .and_then(|cmd| slurm::dispatch(cmd, args[2..].to_vec()))
    {
        std::process::exit(code);
    }
    let cli = Cli::parse();
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
        Command::Reservations(args) => reservations::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Agent(args) => up::agent(args),
    };
    std::process::exit(code);
}
