//! A job's srun tasks end with it on every node: cancelled, or out of time in an
//! interactive allocation.

use std::process::{Command, Stdio};

use crate::harness::{pids_running, Cluster};
use crate::SMALL;

#[test]
fn a_jobs_tasks_end_with_it_on_every_node() {
    let c = Cluster::start("tasks", SMALL);
    // A batch job on both nodes whose script runs a step of two sleeps, one per node.
    let long = format!("700.{}", std::process::id());
    let job = c.sbatch(&["-N", "2", "--wrap", &format!("srun sleep {long}")]);
    c.wait_for("both tasks to run", || {
        pids_running(&["sleep", &long]).len() == 2
    });
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    c.wait_for("both tasks to end", || {
        pids_running(&["sleep", &long]).is_empty()
    });

    // salloc's allocation of both nodes runs out of time while its step still runs:
    // the tasks on both nodes end with it.
    let longer = format!("800.{}", std::process::id());
    let mut salloc = Command::new(c.dir.join("state/bin/salloc"))
        .args(["-N", "2", "-t", "0:04", "srun", "sleep", &longer])
        .current_dir(c.work())
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                c.dir.join("state/bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    c.wait_for("both tasks to run", || {
        pids_running(&["sleep", &longer]).len() == 2
    });
    c.wait_for("the time limit to end them", || {
        pids_running(&["sleep", &longer]).is_empty()
    });
    let _ = salloc.wait();
    assert_eq!(c.wait_ended(job + 1), "TIMEOUT");
}
