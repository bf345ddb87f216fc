//! The daemons' logs: a small cluster's controller writes, with ids and Slurm's words,
//! each start, end, node state change, requeue, agent registration and loss to its log
//! file, and each agent writes its own, where slurm.conf says and as much as `sluice up
//! -v` raises the level to.

use crate::harness::{self, Cluster};

/// Whether `line` starts as Slurm's log lines do: `[2026-12-01T15:25:16.123] `.
fn stamped(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 26
        && b[0] == b'['
        && b[24] == b']'
        && b[25] == b' '
        && line[1..24].char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            19 => c == '.',
            _ => c.is_ascii_digit(),
        })
}

/// This host's short name, as `%h` expands.
fn host() -> String {
    let h = nix::unistd::gethostname().unwrap().into_string().unwrap();
    h.split('.').next().unwrap().to_string()
}

#[test]
fn the_controller_and_agents_log_what_they_decide_with_ids() {
    // The agents log where SlurmdLogFile says (`%n`, `%h` expanded), the controller
    // where it logs by default; SlurmctldDebug=error would hide the controller's info
    // lines, but `sluice up -v` raises it to info (and the agents' to verbose). A node
    // whose agent is gone is waited for five seconds (SlurmdTimeout) before it goes
    // down; the same timeout counts from the start for agents yet to register, so it
    // leaves a loaded machine's agents time to.
    let agent_logs =
        std::env::temp_dir().join(format!("sluice-t-{}-agentlogs", std::process::id()));
    let _ = std::fs::remove_dir_all(&agent_logs);
    let conf = format!(
        "{}SlurmctldDebug=error\nSlurmdTimeout=5\nSlurmdLogFile={}/%n@%h.log\n",
        crate::SMALL,
        agent_logs.display()
    );
    let c = Cluster::start_args("logs", &conf, &["-v"]);
    let me = nix::unistd::geteuid().as_raw();

    // A job that completes, one that fails.
    let ok = c.sbatch(&["-J", "ok", "--wrap", "true"]);
    let bad = c.sbatch(&["-J", "bad", "--wrap", "exit 3"]);
    assert_eq!(c.wait_ended(ok), "COMPLETED");
    assert_eq!(c.wait_ended(bad), "FAILED");

    // An operator drains n2 and resumes it; it takes work again once its agent answers.
    let sinfo = || c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout;
    let o = c.run(
        "scontrol",
        &["update", "NodeName=n2", "State=DRAIN", "Reason=new disks"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = c.run("scontrol", &["update", "NodeName=n2", "State=RESUME"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(c.settle("n1 idle\nn2 idle\n", sinfo), "n1 idle\nn2 idle\n");

    // Refused requests: a submission to no partition, a hold of no job.
    let o = c.run("sbatch", &["-p", "nosuch", "--wrap", "true"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let o = c.run("scontrol", &["hold", "999999"]);
    assert_ne!(o.code, 0, "{}", o.stderr);

    // A job on n1 is requeued by request, runs again, then its agent is killed.
    let long = format!("603.{}", std::process::id());
    let job = c.sbatch(&["-w", "n1", "--wrap", &format!("sleep {long}")]);
    c.wait_for("the job to run", || c.state(job) == "RUNNING");
    let script = ["sleep", long.as_str()];
    c.wait_for("its script", || harness::pids_running(&script).len() == 1);
    let first_run = harness::pids_running(&script);
    let o = c.run("scontrol", &["requeue", &job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_for("the requeued job to run again", || {
        let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
        show.contains("JobState=RUNNING") && show.contains(" Restarts=1 ")
    });
    // Running for the controller as soon as it is allocated: the agent has it once its
    // script runs again.
    c.wait_for("its script again", || {
        let now = harness::pids_running(&script);
        now.len() == 1 && now != first_run
    });
    let state = c.dir.join("state").display().to_string();
    let agent = harness::pids_of(&["agent", "--node", "n1", "--state-dir", &state]);
    assert_eq!(agent.len(), 1, "one agent for n1");
    // `sluice up` told it where to log and how much.
    let args = std::fs::read(format!("/proc/{}/cmdline", agent[0])).unwrap();
    let args: Vec<String> = args
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let n1_log = agent_logs.join(format!("n1@{}.log", host()));
    let told = |flag: &str, value: &str| args.windows(2).any(|w| w[0] == flag && w[1] == value);
    assert!(
        told("--log-file", &n1_log.display().to_string()) && told("--debug", "verbose"),
        "{args:?}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(
        c.settle("n1 down*\nn2 idle\n", sinfo),
        "n1 down*\nn2 idle\n"
    );

    // The controller's log, in the state directory by default.
    let log = std::fs::read_to_string(c.dir.join("state/logs/slurmctld.log")).unwrap();
    for line in log.lines() {
        assert!(stamped(line), "not a Slurm log line: {line:?}\n{log}");
    }
    let at = |text: &str| -> usize {
        log.lines()
            .position(|l| l[26..].starts_with(text))
            .unwrap_or_else(|| panic!("no line {text:?} in the controller's log:\n{log}"))
    };
    // Each agent's registration comes first.
    let registered = "now responding: agent registered with 0 job(s) running, state set to IDLE";
    let n1_up = at(&format!("Node n1 {registered}"));
    let n2_up = at(&format!("Node n2 {registered}"));
    // Starts with node, CPUs and partition; ends with state and exit code.
    let ok_start = at(&format!("sched: Allocate JobId={ok} NodeList=n"));
    assert!(log
        .lines()
        .nth(ok_start)
        .unwrap()
        .ends_with(" #CPUs=1 Partition=debug"));
    let ok_end = at(&format!(
        "_job_complete: JobId={ok} COMPLETED ExitCode=0:0 done"
    ));
    at(&format!("sched: Allocate JobId={bad} NodeList=n"));
    let bad_end = at(&format!(
        "_job_complete: JobId={bad} FAILED ExitCode=3:0 done"
    ));
    assert!(n1_up.max(n2_up) < ok_start && ok_start < ok_end, "{log}");
    // The operator's changes, with who and why, and the node back in service.
    let drain = at(&format!(
        "update_node: node n2 state set to DRAIN by uid {me}, reason set to: new disks"
    ));
    let resume = at(&format!(
        "update_node: node n2 state set to RESUME by uid {me}"
    ));
    let back = at("node n2 returned to service: its agent answers, state set to IDLE");
    assert!(bad_end < drain && drain < resume && resume < back, "{log}");
    // The refusals, with who asked and why.
    let refused_submit = at(&format!(
        "_slurm_rpc_submit_batch_job: uid={me} refused: Invalid partition name specified"
    ));
    let refused_hold = at(&format!(
        "hold of JobId=999999 from uid={me} refused: Invalid job id specified"
    ));
    assert!(
        back < refused_submit && refused_submit < refused_hold,
        "{log}"
    );
    // The requeue by request, the agent's loss (waited for SlurmdTimeout: its jobs
    // run on under their supervisors meanwhile) and the requeue it caused.
    let first = at(&format!("sched: Allocate JobId={job} NodeList=n1 #CPUs=1"));
    let requeued = at(&format!("Requeuing JobId={job} by uid {me}"));
    let silent = at(
        "warning: Node n1 not responding (its agent is gone); its jobs run on, DOWN after \
         SlurmdTimeout=5s",
    );
    let lost = at("warning: Nodes n1 not responding, setting DOWN");
    let failed = at(&format!("requeue JobId={job} due to failure of node n1"));
    assert!(
        first < requeued && requeued < silent && silent < lost && lost < failed,
        "{log}"
    );

    // Each agent's log where SlurmdLogFile says, none in the default place.
    let agent_log = |node: &str| {
        let path = agent_logs.join(format!("{node}@{}.log", host()));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let n2 = agent_log("n2");
    assert!(
        n2.lines()
            .any(|l| stamped(l) && l[26..].starts_with("n2: registered with the controller")),
        "{n2}"
    );
    let n1 = agent_log("n1");
    for line in n1.lines() {
        assert!(stamped(line), "not a Slurm log line: {line:?}\n{n1}");
    }
    for text in [
        "n1: registered with the controller".to_string(),
        format!("n1: Launching batch job {ok} for UID {me}"),
        format!("n1: [{ok}.batch] done with job: COMPLETED ExitCode=0:0"),
        // At verbose (-v over SlurmdDebug's default info), the debug lines too.
        format!("debug:  n1: job {job}: terminate order (REQUEUED)"),
    ] {
        assert!(
            n1.lines().any(|l| l[26..].starts_with(&text)),
            "no {text:?} in\n{n1}"
        );
    }
    assert!(!c.dir.join("state/logs/slurmd-n1.log").exists());
    drop(c);
    let _ = std::fs::remove_dir_all(&agent_logs);
}
