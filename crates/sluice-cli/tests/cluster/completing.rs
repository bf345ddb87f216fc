//! `COMPLETING`: a job told to end shows `CG` until its processes are gone on every
//! node; its next run (after a requeue) and the next job on its nodes start only then;
//! and nothing it started is left on any node, whatever session it made.

use crate::harness::{self, Cluster};
use crate::SMALL;

/// `squeue`'s state of `job` (long and compact), `""` once it is not listed.
fn squeue_state(c: &Cluster, job: u64) -> String {
    c.run(
        "squeue",
        &["-h", "-t", "all", "-j", &job.to_string(), "-o", "%T %t"],
    )
    .stdout
    .trim()
    .to_string()
}

/// Writes `text` as an executable script `name` in the cluster's working directory.
fn script(c: &Cluster, name: &str, text: &str) -> String {
    let path = c.work().join(name);
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The lines of `file` in the cluster's working directory.
fn lines(c: &Cluster, file: &str) -> Vec<String> {
    std::fs::read_to_string(c.work().join(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_cancelled_job_is_completing_until_its_steps_are_gone_on_every_node() {
    // A two-node job whose step ignores SIGTERM on both nodes: cancelled, it shows
    // COMPLETING (CG) with its EndTime from the cancel on, its nodes `comp`, until
    // SIGKILL after KillWait has ended the step everywhere; then it is CANCELLED and
    // its nodes idle, and none of the step's processes is left.
    let conf = format!("KillWait=3\n{SMALL}");
    let c = Cluster::start("completing-cancel", &conf);
    let job = c.sbatch(&[
        "-N",
        "2",
        "--wrap",
        "srun bash -c 'trap \"\" TERM; echo started; exec sleep 6101'",
    ]);
    let out = c.work().join(format!("slurm-{job}.out"));
    c.wait_for("the step to start on both nodes", || {
        std::fs::read_to_string(&out).unwrap_or_default() == "started\nstarted\n"
    });
    c.wait_for("both tasks", || {
        harness::pids_running(&["sleep", "6101"]).len() == 2
    });
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    // At once: completing, while the tasks (which ignore SIGTERM) still run; its
    // accounting says CANCELLED already.
    assert_eq!(squeue_state(&c, job), "COMPLETING CG");
    let uid = nix::unistd::getuid();
    assert_eq!(c.state(job), format!("CANCELLED by {uid}"));
    let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    assert!(show.contains("JobState=COMPLETING "), "{show}");
    assert!(!show.contains("EndTime=Unknown"), "{show}");
    let nodes = c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout;
    assert_eq!(nodes, "n1 comp\nn2 comp\n");
    // Listed by default, and by `-t CG`.
    let listed = c.run("squeue", &["-h", "-o", "%i %t"]).stdout;
    assert_eq!(listed, format!("{job} CG\n"));
    let cg = c.run("squeue", &["-h", "-t", "CG", "-o", "%i"]).stdout;
    assert_eq!(cg, format!("{job}\n"));
    assert_eq!(
        harness::pids_running(&["sleep", "6101"]).len(),
        2,
        "the tasks ignore SIGTERM until KillWait is over"
    );
    // The moment it is no longer completing, nothing of it is left.
    let mut state = String::new();
    c.wait_for("the job to leave COMPLETING", || {
        state = squeue_state(&c, job);
        state != "COMPLETING CG"
    });
    assert_eq!(state, "CANCELLED CA");
    assert_eq!(harness::pids_running(&["sleep", "6101"]), Vec::<i32>::new());
    let nodes = c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout;
    assert_eq!(nodes, "n1 idle\nn2 idle\n");
    assert_eq!(
        c.wait_ended(job),
        format!("CANCELLED by {}", nix::unistd::getuid())
    );
}

#[test]
fn a_requeued_job_runs_again_only_once_every_step_of_its_last_run_is_gone() {
    // The checkpointing pattern: a step on two nodes that traps SIGTERM to save its
    // state (two seconds) before it exits. `scontrol requeue` ends the batch script at
    // once; the job is COMPLETING until the step has saved on both nodes, and its next
    // run starts only after — the job's own trace file says in which order.
    let conf = format!("KillWait=5\n{SMALL}");
    let c = Cluster::start("completing-requeue", &conf);
    let step = script(
        &c,
        "step.sh",
        "#!/bin/bash\n\
         trap 'sleep 2; echo \"saved $SLURM_NODEID\" >> trace; exit 0' TERM\n\
         echo \"up $SLURM_NODEID\" >> trace\n\
         while :; do sleep 0.2; done\n",
    );
    let batch = script(
        &c,
        "job.sh",
        &format!(
            "#!/bin/bash\n\
             echo \"start ${{SLURM_RESTART_COUNT:-0}}\" >> trace\n\
             srun -N2 {step}\n"
        ),
    );
    let job = c.sbatch(&["-N", "2", &batch]);
    c.wait_for("the step on both nodes", || {
        let l = lines(&c, "trace");
        l.contains(&"up 0".to_string()) && l.contains(&"up 1".to_string())
    });
    assert_eq!(c.run("scontrol", &["requeue", &job.to_string()]).code, 0);
    assert_eq!(squeue_state(&c, job), "COMPLETING CG");
    c.wait_for("the second run", || {
        lines(&c, "trace").contains(&"start 1".to_string())
    });
    let trace = lines(&c, "trace");
    let at = |line: &str| trace.iter().position(|l| l == line);
    let second = at("start 1").unwrap();
    for node in ["saved 0", "saved 1"] {
        let saved = at(node).unwrap_or_else(|| panic!("{node} missing: {trace:?}"));
        assert!(
            saved < second,
            "the second run started before the first's step had saved: {trace:?}"
        );
    }
    let _ = c.run("scancel", &[&job.to_string()]);
}

#[test]
fn a_jobs_end_leaves_nothing_it_started_on_any_node_whatever_its_session() {
    // A step's task starts a process in a session of its own that ignores SIGTERM
    // (as `ray start` or a daemon does), on both nodes. Cancelled, or ended by
    // itself, the job is over only once those are gone too.
    let conf = format!("KillWait=2\n{SMALL}");
    let c = Cluster::start("completing-leftovers", &conf);
    let leftover = script(
        &c,
        "leftover.sh",
        "#!/bin/bash\n\
         setsid bash -c \"trap '' TERM; exec sleep $1\" > /dev/null 2>&1 < /dev/null &\n\
         echo launched\n",
    );
    // Cancelled while the step still runs.
    let job = c.sbatch(&[
        "-N",
        "2",
        "--wrap",
        &format!("srun -N2 bash -c '{leftover} 6201; exec sleep 6203'"),
    ]);
    c.wait_for("a leftover on each node", || {
        harness::pids_running(&["sleep", "6201"]).len() == 2
    });
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    let mut state = String::new();
    c.wait_for("the cancelled job to leave COMPLETING", || {
        state = squeue_state(&c, job);
        state != "COMPLETING CG"
    });
    assert_eq!(state, "CANCELLED CA");
    assert_eq!(harness::pids_running(&["sleep", "6201"]), Vec::<i32>::new());
    assert_eq!(harness::pids_running(&["sleep", "6203"]), Vec::<i32>::new());
    // Ended by itself: its step returned at once, its script a moment later.
    let job = c.sbatch(&[
        "-N",
        "2",
        "--wrap",
        &format!("srun -N2 {leftover} 6202; sleep 1; echo done"),
    ]);
    c.wait_for("a leftover on each node", || {
        harness::pids_running(&["sleep", "6202"]).len() == 2
    });
    c.wait_for("the finished job to leave COMPLETING", || {
        state = squeue_state(&c, job);
        !matches!(state.as_str(), "RUNNING R" | "COMPLETING CG")
    });
    assert_eq!(state, "COMPLETED CD");
    assert_eq!(harness::pids_running(&["sleep", "6202"]), Vec::<i32>::new());
    assert_eq!(c.wait_ended(job), "COMPLETED");
}

#[test]
fn a_requeued_jobs_ranks_all_resume_once_its_last_runs_ranks_are_gone() {
    // A rank per node that meets its peer at every step (a barrier over the working
    // directory, as a collective) and saves on SIGTERM (one second). Requeued, the
    // job's next run starts its ranks only once both of the first run's are gone: no
    // launch meets a step of the previous run, and both ranks of the second run come up
    // and step together again.
    let conf = format!("KillWait=5\n{SMALL}");
    let c = Cluster::start("completing-ranks", &conf);
    let rank = script(
        &c,
        "rank.sh",
        "#!/bin/bash\n\
         r=${SLURM_RESTART_COUNT:-0}\n\
         trap 'sleep 1; echo \"saved $r $SLURM_NODEID\" >> trace; exit 0' TERM\n\
         echo \"up $r $SLURM_NODEID\" >> trace\n\
         for i in $(seq 1 600); do\n\
           touch \"at-$r-$SLURM_NODEID-$i\"\n\
           while [ ! -e \"at-$r-$((1 - SLURM_NODEID))-$i\" ]; do sleep 0.05; done\n\
           [ \"$r\" = 1 ] && [ \"$i\" = 3 ] && echo \"stepped $r $SLURM_NODEID\" >> trace\n\
           sleep 0.1\n\
         done\n",
    );
    let batch = script(&c, "job.sh", &format!("#!/bin/bash\nsrun -N2 {rank}\n"));
    let job = c.sbatch(&["-N", "2", "--requeue", &batch]);
    c.wait_for("both ranks of the first run", || {
        let l = lines(&c, "trace");
        l.contains(&"up 0 0".to_string()) && l.contains(&"up 0 1".to_string())
    });
    assert_eq!(c.run("scontrol", &["requeue", &job.to_string()]).code, 0);
    c.wait_for("both ranks of the second run stepping together", || {
        let l = lines(&c, "trace");
        l.contains(&"stepped 1 0".to_string()) && l.contains(&"stepped 1 1".to_string())
    });
    let trace = lines(&c, "trace");
    let at = |line: &str| trace.iter().position(|l| l == line);
    let first_up = at("up 1 0").unwrap().min(at("up 1 1").unwrap());
    for saved in ["saved 0 0", "saved 0 1"] {
        let s = at(saved).unwrap_or_else(|| panic!("{saved} missing: {trace:?}"));
        assert!(
            s < first_up,
            "a rank of the second run started before the first run's were gone: {trace:?}"
        );
    }
    // No launch of the second run met the first's step on a node.
    let out = std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    assert!(!out.contains("srun: error"), "{out}");
    let _ = c.run("scancel", &[&job.to_string()]);
}
