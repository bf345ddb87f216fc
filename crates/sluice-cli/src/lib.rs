//! The `sluice` command's code, shared by its three binaries.
//!
//! `sluice` (`main.rs`) is everything: `sluice up` runs a cluster, `sluice sim` replays
//! workloads, and under the names of Slurm's daemons (`slurmctld`, `slurmd`,
//! `slurmrestd`) it runs them. `sluice-commands` (`commands_main.rs`) is only Slurm's
//! commands (`sbatch`, `squeue`, ...): a binary a fraction of the size, which starts in
//! half the time, and which `sluice up` links those names to (both answer to them).
//! `sluice-stepd` (`stepd_main.rs`) is only a job's supervisor, which agents start for
//! each job.

/// `eprintln!` as one write of the whole line, as Slurm's commands write their
/// messages: two commands writing to one file (two sruns in a batch script) never
/// interleave pieces of their lines. Shadows the standard macro in this crate.
macro_rules! eprintln {
    () => {{
        use std::io::Write as _;
        let _ = std::io::stderr().write_all(b"\n");
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut line = format!($($arg)*);
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}

/// What this build was made from (`build.rs`): `sluice` starts `sluice-commands` and
/// `sluice-stepd` only when they answer `--build-id` with the same.
pub const BUILD_ID: &str = env!("SLUICE_BUILD_ID");

pub mod audit;
pub mod daemon_log;
pub mod daemons;
pub mod db;
pub mod efficiency;
pub mod explain;
pub mod metrics;
pub mod report;
pub mod report_efficiency;
pub mod reservations;
pub mod restd;
pub mod sim;
pub mod sim_limits;
pub mod slurm;
pub mod standby;
pub mod ui;
pub mod up;
