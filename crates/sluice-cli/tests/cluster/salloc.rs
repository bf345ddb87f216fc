//! `salloc`: an allocation, a command on this host inside it, and the allocation given
//! up when the command ends, revoked when its time is up or it is cancelled.

use crate::harness::Cluster;
use crate::SMALL;

/// The job id from salloc's "Granted job allocation N" line.
fn granted(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("no grant in {stderr:?}"))
        .parse()
        .unwrap()
}

#[test]
fn salloc_runs_its_command_inside_the_allocation_and_gives_it_up() {
    let c = Cluster::start("salloc", SMALL);
    // Two nodes; the command runs here and starts a step on both with srun.
    let o = c.run(
        "salloc",
        &[
            "-N",
            "2",
            "-J",
            "inter",
            "bash",
            "-c",
            "echo $SLURM_JOB_NAME $SLURM_JOB_NODELIST $SLURM_JOB_NUM_NODES $SLURM_TASKS_PER_NODE; \
             srun -l bash -c 'echo on $SLURMD_NODENAME' | sort",
        ],
    );
    let job = granted(&o.stderr);
    assert_eq!(
        (o.code, o.stderr.as_str(), o.stdout.as_str()),
        (
            0,
            format!(
                "salloc: Granted job allocation {job}\nsalloc: Relinquishing job allocation {job}\n"
            )
            .as_str(),
            "inter n[1-2] 2 1(x2)\n0: on n1\n1: on n2\n"
        )
    );
    let sacct = |job: u64| {
        c.run(
            "sacct",
            &[
                "-n",
                "-X",
                "-P",
                "-o",
                "JobName,State,ExitCode",
                "-j",
                &job.to_string(),
            ],
        )
        .stdout
    };
    assert_eq!(sacct(job), "inter|COMPLETED|0:0\n");

    // The command's exit status is salloc's, and the job's.
    let o = c.run("salloc", &["bash", "-c", "exit 3"]);
    let job = granted(&o.stderr);
    assert_eq!(o.code, 3);
    assert_eq!(sacct(job), "interactive|FAILED|3:0\n");
    // An exit code above 128 is an exit code, not a signal.
    let o = c.run("salloc", &["bash", "-c", "exit 130"]);
    let job = granted(&o.stderr);
    assert_eq!(o.code, 130);
    assert_eq!(sacct(job), "interactive|FAILED|130:0\n");
    // A command that does not exist: Slurm's message, the allocation given back.
    let o = c.run("salloc", &["nosuchcmd"]);
    let job = granted(&o.stderr);
    assert_eq!(
        (o.code, o.stderr),
        (
            1,
            format!(
                "salloc: Granted job allocation {job}\n\
                 salloc: error: _fork_command: Unable to find command \"nosuchcmd\"\n\
                 salloc: Relinquishing job allocation {job}\n"
            )
        )
    );
    assert_eq!(sacct(job), "interactive|FAILED|1:0\n");
    // --no-shell: the allocation outlives salloc until it is cancelled.
    let o = c.run("salloc", &["--no-shell"]);
    let job = granted(&o.stderr);
    assert_eq!(o.code, 0);
    assert_eq!(c.state(job), "RUNNING");
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    assert_eq!(
        c.wait_ended(job),
        format!("CANCELLED by {}", nix::unistd::getuid())
    );

    // Bad input changes nothing.
    let o = c.run("salloc", &["-t", "abc", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("salloc: error: Invalid --time specification\n", 255)
    );
    let o = c.run("salloc", &["-p", "nosuch", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "salloc: error: invalid partition specified: nosuch\n\
             salloc: error: Job submit/allocate failed: Invalid partition name specified\n",
            1
        )
    );
    let o = c.run("salloc", &["-N", "3", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "salloc: error: Job submit/allocate failed: Requested node configuration is not available\n",
            1
        )
    );
}

#[test]
fn salloc_waits_for_resources_and_loses_its_allocation_at_the_time_limit() {
    let c = Cluster::start("salloct", SMALL);
    // Both nodes busy for a few seconds: salloc says it waits, then gets them.
    let busy = c.sbatch(&["-N", "2", "--exclusive", "-t", "0:04", "--wrap", "sleep 3"]);
    c.wait_for("the busy job to run", || c.state(busy) == "RUNNING");
    // A five-second limit (MM:SS); the command would take a minute. With
    // --kill-command it is sent SIGTERM when the allocation is revoked (without it,
    // as in Slurm, the command would be left to finish).
    let o = c.run("salloc", &["-t", "0:05", "--kill-command", "sleep", "60"]);
    let job = busy + 1;
    assert_eq!(
        o.stderr,
        format!(
            "salloc: Pending job allocation {job}\n\
             salloc: job {job} queued and waiting for resources\n\
             salloc: job {job} has been allocated resources\n\
             salloc: Granted job allocation {job}\n\
             salloc: Job {job} has exceeded its time limit and its allocation has been revoked.\n"
        )
    );
    assert_eq!(
        o.code, 1,
        "sleep was terminated: salloc exits 1, as Slurm's"
    );
    assert_eq!(c.wait_ended(job), "TIMEOUT");
}

#[test]
fn an_interrupted_salloc_cancels_the_allocation_it_was_waiting_for() {
    let c = Cluster::start("sallocint", SMALL);
    let busy = c.occupy("busy");
    c.wait_for("the busy job to run", || c.state(busy) == "RUNNING");
    let mut child = std::process::Command::new(c.dir.join("state/bin/salloc"))
        .args(["true"])
        .current_dir(c.work())
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env_remove("SLURM_JOB_ID")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let job = busy + 1;
    // Once salloc says it waits, it is waiting (and handles Ctrl-C): the job's state in
    // the controller alone could come before salloc has printed that.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("queued and waiting for resources") {
        let before = said.len();
        std::io::BufRead::read_line(&mut stderr, &mut said).unwrap();
        assert!(said.len() > before, "salloc ended early: {said}");
    }
    assert_eq!(c.state(job), "PENDING");
    // Ctrl-C, as a user gives up waiting.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        (said, status.code()),
        (
            format!(
                "salloc: Pending job allocation {job}\n\
                 salloc: job {job} queued and waiting for resources\n\
                 salloc: Job allocation {job} has been revoked.\n\
                 salloc: Job aborted due to signal\n"
            ),
            Some(1)
        )
    );
    assert_eq!(
        c.wait_ended(job),
        format!("CANCELLED by {}", nix::unistd::getuid())
    );
    assert_eq!(c.state(busy), "RUNNING");
}
