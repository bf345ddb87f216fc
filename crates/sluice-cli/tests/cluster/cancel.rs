//! `scancel`: by id, name, user and state; signals to the steps, the batch shell (`-b`)
//! or both (`-f`); unknown ids.

use crate::commands::user;
use crate::harness::{self, Cluster};
use crate::limits::is_notice;
use crate::SMALL;

#[test]
fn scancel_picks_jobs_by_id_name_user_and_state() {
    let c = Cluster::start("scancel", SMALL);
    let me = user();
    // Both nodes busy; four jobs wait behind.
    let busy = c.occupy("busy");
    let a1 = c.sbatch(&["-J", "a", "--wrap", "true"]);
    let a2 = c.sbatch(&["-J", "a", "--wrap", "true"]);
    let b = c.sbatch(&["-J", "b", "--wrap", "true"]);
    let d = c.sbatch(&["-J", "d", "--wrap", "true"]);
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t"]).stdout;
    let expected = format!("{a1} a PD\n{a2} a PD\n{b} b PD\n{d} d PD\n{busy} busy R\n");
    assert_eq!(c.settle(&expected, squeue), expected);

    let ok = |args: &[&str]| {
        let o = c.run("scancel", args);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (0, "", ""),
            "scancel {args:?}"
        );
    };
    ok(&[&d.to_string()]);
    let expected = format!("{a1} a PD\n{a2} a PD\n{b} b PD\n{busy} busy R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    ok(&["-n", "a"]);
    let expected = format!("{b} b PD\n{busy} busy R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    ok(&["--state=PENDING", "-u", &me]);
    let expected = format!("{busy} busy R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    ok(&["-u", &me]);
    assert_eq!(c.settle("", squeue), "");
    let uid = nix::unistd::getuid();
    let o = c.run(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "-o",
            "JobID,JobName,State,ExitCode,AllocCPUS,NodeList",
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{busy}|busy|CANCELLED by {uid}|0:0|4|n[1-2]\n\
             {a1}|a|CANCELLED by {uid}|0:0|0|None assigned\n\
             {a2}|a|CANCELLED by {uid}|0:0|0|None assigned\n\
             {b}|b|CANCELLED by {uid}|0:0|0|None assigned\n\
             {d}|d|CANCELLED by {uid}|0:0|0|None assigned\n"
        )
    );

    // An unknown or finished id is no error; signalling an unknown one is.
    ok(&["999999"]);
    ok(&[&busy.to_string()]);
    let o = c.run("scancel", &["-s", "USR1", "999999"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scancel: error: Kill job error on job id 999999: Invalid job id specified\n",
            1
        )
    );
}

#[test]
fn scancel_signal_kill_cancels_the_job() {
    // simple-slurm's signal_job sends `--signal=TERM`, then `--signal=KILL`. In Slurm
    // SIGKILL (with or without -b/-f) cancels the job: CANCELLED, not the FAILED of a
    // script whose step was killed.
    let c = Cluster::start("scancel-kill", SMALL);
    let uid = nix::unistd::getuid();
    for opts in [
        &["--signal=KILL"][..],
        &["-b", "-s", "KILL"],
        &["-f", "-s", "9"],
    ] {
        let job = c.sbatch(&[
            "-t",
            "5",
            "--wrap",
            "srun bash -c 'trap \"\" TERM; echo started; sleep 600'",
        ]);
        let path = c.work().join(format!("slurm-{job}.out"));
        c.wait_for("the step to start", || {
            std::fs::read_to_string(&path).unwrap_or_default() == "started\n"
        });
        let id = job.to_string();
        assert_eq!(c.run("scancel", &["--signal=TERM", &id]).code, 0);
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert_eq!(c.state(job), "RUNNING", "SIGTERM is ignored by the step");
        let mut args = opts.to_vec();
        args.push(&id);
        assert_eq!(c.run("scancel", &args).code, 0);
        assert_eq!(c.wait_ended(job), format!("CANCELLED by {uid}"), "{opts:?}");
    }
}

#[test]
fn step_tasks_left_when_the_batch_script_ends_are_ended_with_the_job() {
    // As slurmd: what the job's steps still run when its batch script is gone (the
    // script ended, or died of a cancel's SIGTERM) gets SIGTERM, then SIGKILL after
    // KillWait, even a task that ignores SIGTERM; and the agent can still stop.
    let conf = format!("KillWait=2\n{SMALL}");
    let c = Cluster::start("step-leftovers", &conf);
    let uid = nix::unistd::getuid();
    // A task that ignores SIGTERM, its job cancelled.
    let job = c.sbatch(&[
        "-t",
        "5",
        "--wrap",
        "srun bash -c 'trap \"\" TERM; echo started; exec sleep 6001'",
    ]);
    let path = c.work().join(format!("slurm-{job}.out"));
    c.wait_for("the step to start", || {
        std::fs::read_to_string(&path).unwrap_or_default() == "started\n"
    });
    assert_eq!(harness::pids_running(&["sleep", "6001"]).len(), 1);
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    assert_eq!(c.wait_ended(job), format!("CANCELLED by {uid}"));
    c.wait_for("the task's SIGKILL", || {
        harness::pids_running(&["sleep", "6001"]).is_empty()
    });
    // A step in the background of a script that ends: the job completes, the task
    // gets SIGTERM.
    let job = c.sbatch(&["-t", "5", "--wrap", "srun sleep 6002 & sleep 1; echo bye"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    c.wait_for("the task's SIGTERM", || {
        harness::pids_running(&["sleep", "6002"]).is_empty()
    });
}

#[test]
fn scancel_signals_the_steps_the_batch_shell_or_both_then_cancels() {
    let c = Cluster::start("scancelsig", SMALL);
    std::fs::write(
        c.work().join("traps.sh"),
        "#!/bin/bash\n\
         trap 'echo batch got USR1' USR1\n\
         trap 'echo batch got USR2' USR2\n\
         echo start\n\
         srun bash -c 'trap \"echo step got USR1; exit 0\" USR1; echo step started; \
         sleep 600 & wait'\n\
         echo step ended\n\
         while true; do sleep 0.1; done\n",
    )
    .unwrap();
    let job = c.sbatch(&["-t", "5", "traps.sh"]);
    let path = c.work().join(format!("slurm-{job}.out"));
    let out = || std::fs::read_to_string(&path).unwrap_or_default();
    c.wait_for("the step to start", || out() == "start\nstep started\n");
    let id = job.to_string();

    // By default the steps get the signal; the batch shell does not.
    assert_eq!(c.run("scancel", &["-s", "USR1", &id]).code, 0);
    c.wait_for("the step to end", || out().ends_with("step ended\n"));
    assert_eq!(out(), "start\nstep started\nstep got USR1\nstep ended\n");
    // -b: the batch shell; -f with no step left: the batch shell too; by number.
    assert_eq!(c.run("scancel", &["-b", "-s", "USR1", &id]).code, 0);
    c.wait_for("the shell's trap", || out().ends_with("batch got USR1\n"));
    assert_eq!(c.run("scancel", &["--full", "--signal=12", &id]).code, 0);
    c.wait_for("the shell's second trap", || {
        out().ends_with("batch got USR2\n")
    });
    assert_eq!(c.state(job), "RUNNING");

    // Cancelled: slurmstepd's notice closes the output.
    assert_eq!(c.run("scancel", &[&id]).code, 0);
    let uid = nix::unistd::getuid();
    assert_eq!(c.wait_ended(job), format!("CANCELLED by {uid}"));
    let text = out();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..lines.len() - 1],
        [
            "start",
            "step started",
            "step got USR1",
            "step ended",
            "batch got USR1",
            "batch got USR2"
        ]
    );
    assert!(is_notice(lines[lines.len() - 1], job, "n1", ""), "{text}");
    let o = c.run(
        "sacct",
        &["-P", "-o", "JobID,JobName,State,ExitCode", "-j", &id],
    );
    assert_eq!(
        o.stdout,
        format!(
            "JobID|JobName|State|ExitCode\n\
             {job}|traps.sh|CANCELLED by {uid}|0:0\n\
             {job}.batch|batch|CANCELLED|0:15\n\
             {job}.0|bash|COMPLETED|0:0\n"
        )
    );
}

#[test]
fn scancel_interactive_asks_before_each_job_and_cancels_only_what_is_confirmed() {
    let c = Cluster::start("scancel-i", SMALL);
    let a = c.sbatch(&["-H", "-J", "keep", "--wrap", "true"]);
    let b = c.sbatch(&["-H", "-J", "drop", "--wrap", "true"]);
    // `scancel -i A B` with the answers on its standard input.
    let ask = |answers: &str| {
        use std::io::Write;
        let bin = c.dir.join("state").join("bin");
        let mut child = std::process::Command::new(bin.join("scancel"))
            .args(["-i", &a.to_string(), &b.to_string()])
            .env("SLUICE_STATE_DIR", c.dir.join("state"))
            .env_remove("SLURM_CONF")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(answers.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            o.status.code(),
        )
    };
    // No to both (the end of the input is no too): nothing is cancelled.
    let (out, code) = ask("n\n");
    assert_eq!(
        (out.as_str(), code),
        (
            format!(
                "Cancel job_id={a} name=keep partition=debug [y/n]? \
                 Cancel job_id={b} name=drop partition=debug [y/n]? \n"
            )
            .as_str(),
            Some(0)
        )
    );
    let states = || c.run("squeue", &["-h", "-o", "%i %t", "-t", "all"]).stdout;
    // Both held: the latest first, as Slurm's squeue lists jobs without a start time.
    assert_eq!(states(), format!("{b} PD\n{a} PD\n"));
    // Something else is asked again; then no to the first, yes to the second.
    let (_, code) = ask("what?\nno\ny\n");
    assert_eq!(code, Some(0));
    assert_eq!(states(), format!("{b} CA\n{a} PD\n"));
    // A job that ended (b) or never was is not asked about: Slurm's error, exit 1.
    let o = c.run("scancel", &["-i", &b.to_string(), "99999"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            format!(
                "scancel: error: Kill job error on job id {b}: Invalid job id specified\n\
                 scancel: error: Kill job error on job id 99999: Invalid job id specified\n"
            )
            .as_str(),
            1
        )
    );
    assert_eq!(states(), format!("{b} CA\n{a} PD\n"));
}

/// `scancel JOB.STEP` cancels that step alone: its srun says so, the batch script goes
/// on, and the step is recorded cancelled by whom; a filter beside it chooses no jobs
/// of its own. `.batch` is no step id to scancel.
#[test]
fn a_step_is_cancelled_alone_and_the_job_runs_on() {
    let c = Cluster::start("scancel-step", SMALL);
    let job = c.sbatch(&[
        "-o",
        "%j.out",
        "--wrap",
        "srun sleep 600; echo srun=$?; srun true; echo after=$?",
    ]);
    c.wait_for("the step to run", || {
        c.run(
            "sacct",
            &["-n", "-P", "-j", &job.to_string(), "-o", "JobID,State"],
        )
        .stdout
        .contains(&format!("{job}.0|RUNNING"))
    });
    let o = c.run("scancel", &[&format!("{job}.batch")]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("scancel: error: Invalid job id {job}.batch\n").as_str()
        )
    );
    // With a filter, the step is still the only thing named: the user's other job
    // stays.
    let other = c.sbatch(&["-H", "--wrap", "true"]);
    let o = c.run("scancel", &["--me", &format!("{job}.0")]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(c.state(other), "PENDING");
    c.run("scancel", &[&other.to_string()]);
    let out = std::fs::read_to_string(c.work().join(format!("{job}.out"))).unwrap();
    assert!(
        out.contains("srun: Job step aborted: Waiting up to")
            && out.contains(&format!("error: *** STEP {job}.0 ON "))
            && out.ends_with("srun=137\nafter=0\n"),
        "{out}"
    );
    let uid = nix::unistd::getuid();
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-j",
            &job.to_string(),
            "-o",
            "JobID,State,ExitCode",
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{job}|COMPLETED|0:0\n{job}.batch|COMPLETED|0:0\n\
             {job}.0|CANCELLED by {uid}|0:9\n{job}.1|COMPLETED|0:0\n"
        )
    );
}

#[test]
fn a_users_filter_refuses_each_job_of_another_user_and_cancels_their_own() {
    // Needs a second user: root runs the test, `nobody` (65534) is the other.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run commands as a second user");
        return;
    }
    let c = Cluster::start("scancel-others", SMALL);
    let roots = c.sbatch(&["-H", "--wrap", "true"]);
    let o = c.run_as(
        65534,
        "sbatch",
        &[
            "--parsable",
            "-H",
            "-D",
            "/tmp",
            "-o",
            "/dev/null",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(o.code, 0, "{o:?}");
    let theirs: u64 = o.stdout.trim().parse().unwrap();
    // As Slurm's scancel: the filter chooses among every job nobody may see; root's is
    // refused on its own (the error's number, 2002, as the status), nobody's goes.
    let o = c.run_as(65534, "scancel", &["-v", "-t", "PENDING"]);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(
        (o.code, lines),
        (
            210,
            vec![
                format!("scancel: Terminating job {roots}").as_str(),
                format!(
                    "scancel: error: Kill job error on job id {roots}: Access/permission denied"
                )
                .as_str(),
                format!("scancel: Terminating job {theirs}").as_str(),
            ]
        )
    );
    let states = c.run(
        "squeue",
        &[
            "-h",
            "-t",
            "all",
            "-o",
            "%i %T",
            "-j",
            &format!("{roots},{theirs}"),
        ],
    );
    let mut states: Vec<&str> = states.stdout.lines().collect();
    states.sort();
    assert_eq!(
        states,
        [format!("{roots} PENDING"), format!("{theirs} CANCELLED")]
    );
}
