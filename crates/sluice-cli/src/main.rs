//! `sluice`: the Sluice command.
//!
//! Today it replays workload traces (`sluice sim`); the cluster daemons and the Slurm
//! commands (`sbatch`, `squeue`, ... as links to this binary) join it as they arrive.

mod sim;

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
    /// Replay a workload trace through the scheduling core on a virtual clock.
    Sim(sim::SimArgs),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Sim(args) => match sim::run(args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sluice sim: error: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}
