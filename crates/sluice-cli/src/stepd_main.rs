//! `sluice-stepd`: a job's supervisor alone (slurmstepd's role), as an agent starts it
//! (`slurmstepd stepd DIR --lock-fd 0`, see `sluice_noded::supervisors`).
//!
//! The same code as `sluice stepd`, without the controller, the simulator and the
//! commands: one supervisor starts for every job a node runs, and a binary a fraction
//! of the size starts faster and holds less memory for the whole of the job. An agent
//! starts this binary when it is installed next to its own, and itself otherwise.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stepd") => std::process::exit(sluice_cli::daemons::stepd(args[2..].to_vec())),
        Some("--build-id") => println!("{}", sluice_cli::BUILD_ID),
        _ => {
            eprintln!("usage: slurmstepd stepd DIR [--lock-fd N] (started by a node's agent)");
            std::process::exit(1);
        }
    }
}
