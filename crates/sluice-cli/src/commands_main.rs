//! `sluice-commands`: Slurm's commands alone (`sbatch`, `squeue`, `scontrol`, ...), run
//! by their names (links to this binary) or as `sluice-commands squeue ...`.
//!
//! The same code as `sluice` under those names, without the daemons, the simulator and
//! the dashboard: a command is a short process, and most of its time is its own start
//! (the kernel mapping the binary, the dynamic loader's relocations), which grow with
//! the binary. `sluice up` links the commands to this binary when it is installed next
//! to `sluice`.

use sluice_cli::slurm;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, ran) = slurm::run_by_name(&args);
    if let Some(code) = ran {
        std::process::exit(code);
    }
    if args.get(1).map(String::as_str) == Some("--build-id") {
        println!("{}", sluice_cli::BUILD_ID);
        std::process::exit(0);
    }
    if let Some(code) = args
        .get(1)
        .and_then(|cmd| slurm::dispatch(cmd, args[2..].to_vec()))
    {
        std::process::exit(code);
    }
    eprintln!(
        "usage: {name} COMMAND [ARGS]..., or run by a command's name; the commands: {}",
        slurm::COMMANDS.join(" ")
    );
    std::process::exit(1);
}
