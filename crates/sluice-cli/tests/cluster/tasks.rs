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

#[test]
fn step_tasks_get_their_nodes_variables_even_from_a_stripped_srun() {
    // Snakemake's jobstep plugin runs srun with none of the job's SLURM_* variables but
    // its id. As slurmstepd, the agent still gives every task its node's CPU count and
    // the job's owner; and on a job's second node, that node's count, not the batch
    // node's that srun's environment carries.
    let c = Cluster::start("step-env", SMALL);
    let script = "#!/bin/bash\n\
                  show='echo $SLURMD_NODENAME $SLURM_CPUS_ON_NODE $SLURM_JOB_USER $SLURM_JOB_UID $SLURM_JOB_GID'\n\
                  env -i PATH=\"$PATH\" SLUICE_STATE_DIR=\"$SLUICE_STATE_DIR\" SLURM_JOB_ID=$SLURM_JOB_ID \\\n\
                      srun -N 2 -n 2 -l bash -c \"$show\" | sort > stripped.txt\n\
                  srun -N 2 -n 2 -l bash -c \"$show\" | sort > full.txt\n\
                  srun -N 1 -n 1 -c 1 bash -c 'echo $SLURM_CPUS_ON_NODE' > asked.txt\n";
    std::fs::write(c.work().join("env.sh"), script).unwrap();
    let job = c.sbatch(&["-N", "2", "-n", "3", "env.sh"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let user = crate::commands::user();
    let expected = format!("0: n1 2 {user} {uid} {gid}\n1: n2 1 {user} {uid} {gid}\n");
    for file in ["stripped.txt", "full.txt"] {
        let got = std::fs::read_to_string(c.work().join(file)).unwrap();
        assert_eq!(got, expected, "{file}");
    }
    // A step asking for fewer CPUs (`-c`, `--exact`) counts its own, as slurmd counts
    // the step's cores in the credential: 1 of the job's 2 on n1.
    assert_eq!(
        std::fs::read_to_string(c.work().join("asked.txt")).unwrap(),
        "1\n"
    );
}
