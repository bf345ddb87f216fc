//! Memory limits, as Slurm's `task/cgroup` enforces them (`ConstrainRAMSpace=yes`,
//! `ConstrainSwapSpace=yes`): a job that goes past its `--mem` has a process killed by the
//! kernel and ends `OUT_OF_MEMORY` with `ExitCode` `0:125`, and slurmstepd's line in its
//! stderr; a job within its memory completes. Needs a writable memory cgroup (root, not
//! a locked-down container): without one the agents run jobs unlimited, and this test
//! says so and passes.

use crate::harness::Cluster;

const CONF: &str = "ClusterName=memory
SlurmctldHost=localhost
NodeName=n1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

/// A command that touches `mib` MiB of memory, then exits 0.
fn allocate(mib: u64) -> String {
    format!("python3 -c \"b = b'x' * ({mib} * 1024 * 1024)\"")
}

/// slurmstepd's line on node n1, which names its node as Slurm's does with one slurmd
/// per node name.
fn oom_line(step: &str) -> String {
    format!(
        "slurmstepd-n1: error: Detected 1 oom_kill event in StepId={step}. \
         Some of the step tasks have been OOM Killed."
    )
}

#[test]
fn a_job_past_its_memory_ends_out_of_memory_and_one_within_it_completes() {
    // Checked the way the agents check at start.
    let cgroups = match sluice_noded::cgroup::probe() {
        Ok(dir) => dir,
        Err(why) => {
            eprintln!("skipped: this host cannot limit job memory ({why})");
            return;
        }
    };
    let c = Cluster::start("memory", CONF);
    let node_dir = cgroups.join(sluice_noded::cgroup::node_dir_name(
        &c.dir.join("state"),
        "n1",
    ));
    assert!(node_dir.is_dir(), "{} exists", node_dir.display());

    // 200 MB in a 50 MB job; the same, with the script going on after its child was
    // killed (Slurm still reports the job OUT_OF_MEMORY); 50 MB in a 200 MB job.
    let over = c.sbatch(&["--mem=50M", "-e", "%j.err", "--wrap", &allocate(200)]);
    let survived = c.sbatch(&[
        "--mem=50M",
        "-e",
        "%j.err",
        "--wrap",
        &format!("{}; echo still here", allocate(200)),
    ]);
    let within = c.sbatch(&["--mem=200M", "-e", "%j.err", "--wrap", &allocate(50)]);
    let sacct = |job: u64, args: &[&str]| {
        let job = job.to_string();
        let mut all = vec!["-n", "-P", "-j", &job];
        all.extend_from_slice(args);
        c.run("sacct", &all).stdout
    };
    for job in [over, survived, within] {
        c.wait_ended(job);
    }
    for job in [over, survived] {
        assert_eq!(
            sacct(job, &["-X", "-o", "State,ExitCode"]),
            "OUT_OF_MEMORY|0:125\n",
            "job {job}"
        );
        assert_eq!(
            sacct(job, &["-o", "JobID,State,ExitCode"]),
            format!("{job}|OUT_OF_MEMORY|0:125\n{job}.batch|OUT_OF_MEMORY|0:125\n")
        );
        // squeue says why it ended, where its nodes would go (Slurm's `FAIL_OOM`).
        let q = c.run(
            "squeue",
            &["-h", "-t", "all", "-j", &job.to_string(), "-o", "%T %r %R"],
        );
        assert_eq!(
            q.stdout, "OUT_OF_MEMORY OutOfMemory (OutOfMemory)\n",
            "job {job}"
        );
        // The shell's own note of the kill comes first; slurmstepd's line ends the file.
        let err = std::fs::read_to_string(c.work().join(format!("{job}.err"))).unwrap();
        assert_eq!(
            err.lines().last(),
            Some(oom_line(&format!("{job}.batch")).as_str()),
            "stderr of job {job}: {err:?}"
        );
    }
    let out = std::fs::read_to_string(c.work().join(format!("slurm-{survived}.out"))).unwrap();
    assert_eq!(out, "still here\n");
    assert_eq!(
        sacct(within, &["-X", "-o", "State,ExitCode"]),
        "COMPLETED|0:0\n"
    );
    let err = std::fs::read_to_string(c.work().join(format!("{within}.err"))).unwrap();
    assert_eq!(err, "");

    // srun's tasks are limited too, and slurmstepd's line reaches srun's stderr before
    // srun's own report of the task.
    let o = c.run(
        "srun",
        &[
            "--mem=50M",
            "python3",
            "-c",
            "b = b'x' * (200 * 1024 * 1024)",
        ],
    );
    let job = within + 1;
    assert_eq!(
        (o.code, o.stderr),
        (
            137,
            format!(
                "{}\nsrun: error: n1: task 0: Out Of Memory\n",
                oom_line(&format!("{job}.0"))
            )
        )
    );
    // The step and the job srun made for it are accounted OUT_OF_MEMORY, as Slurm's.
    c.wait_for("the srun job to end", || c.state(job) != "RUNNING");
    assert_eq!(
        sacct(job, &["-o", "JobID,State,ExitCode"]),
        format!("{job}|OUT_OF_MEMORY|0:125\n{job}.0|OUT_OF_MEMORY|0:125\n")
    );

    // Every job's cgroup is gone once it has ended, and the node's with its agent.
    c.wait_for("the job cgroups to be removed", || only_files(&node_dir));
    drop(c);
    assert!(!node_dir.exists(), "{} is removed", node_dir.display());
}

/// True when `dir` (a cgroup) has no child cgroups.
fn only_files(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().all(|e| !e.path().is_dir()))
        .unwrap_or(false)
}
