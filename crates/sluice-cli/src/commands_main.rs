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
    let usage = format!(
        "usage: sluice-commands COMMAND [ARGS]..., or run by a command's name (a link)\n\
         the commands: {}",
        slurm::COMMANDS.join(" ")
    );
    match args.get(1).map(String::as_str) {
        Some("--build-id") => println!("{}", sluice_cli::BUILD_ID),
        Some("--version" | "-V") => println!("sluice-commands {}", env!("CARGO_PKG_VERSION")),
        Some("--help" | "-h" | "help") => println!("{usage}"),
        Some(command) if name == "sluice-commands" => {
            if let Some(code) = slurm::dispatch(command, args[2..].to_vec()) {
                std::process::exit(code);
            }
            eprintln!("sluice-commands: {command} is not a Slurm command\n{usage}");
            std::process::exit(1);
        }
        _ if name == "sluice-commands" => {
            eprintln!("{usage}");
            std::process::exit(1);
        }
        _ => {
            // Linked under another name: a daemon's, or `sluice`'s.
            eprintln!(
                "{name}: not one of Slurm's commands, which is all this binary is: link \
                 {name} to sluice"
            );
            std::process::exit(1);
        }
    }
}
