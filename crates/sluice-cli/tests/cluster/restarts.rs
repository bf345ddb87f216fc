//! Jobs outlive their agent: each job runs under a supervisor of its own (slurmstepd's
//! role, `slurmstepd stepd DIR`), in a session of its own, which owns the job's
//! processes, time limit and exit status. An agent killed outright (SIGKILL) or stopped
//! (SIGTERM) leaves its jobs running; the next agent of the node adopts their
//! supervisors, and the ends that came meanwhile are reported once it is back. The
//! controller's restarts disturb nothing either. Only `sluice up` stopping (SIGINT to
//! its agents) ends jobs with their agent.
//!
//! Agents are killed by pid, found by their own command line (`agent --node N
//! --state-dir S`), never by a broad name.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::{self, Cluster};

/// Two nodes of 4 CPUs; KillWait of one second, so that a time limit's SIGKILL comes
/// quickly.
const CONF: &str = "ClusterName=restarts
SlurmctldHost=localhost
KillWait=1
NodeName=n[1-2] CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

/// The pid of node `node`'s agent in cluster `c` (exactly one). A child it has just
/// forked (to start a job's supervisor) has its command line until it execs: not it.
fn agent_pid(c: &Cluster, node: &str) -> i32 {
    let state = c.dir.join("state").display().to_string();
    let pids = harness::pids_of(&["agent", "--node", node, "--state-dir", &state]);
    let parent = |pid: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let agents: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&p| parent(p).is_none_or(|pp| !pids.contains(&pp)))
        .collect();
    assert_eq!(agents.len(), 1, "one agent for {node}: {agents:?}");
    agents[0]
}

/// Sends `signal` to node `node`'s agent and waits until it is gone.
fn stop_agent(c: &Cluster, node: &str, signal: Signal) {
    let pid = agent_pid(c, node);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
    c.wait_for("the agent to be gone", || {
        // (A zombie until its parent waits for it: gone all the same.)
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')').next().is_some_and(|r| r.starts_with(" Z"))
        })
    });
}

/// A gate jobs wait for: a file in the work directory, made by [`open`].
fn gate(c: &Cluster, name: &str) -> PathBuf {
    std::fs::create_dir_all(c.work().join("gates")).unwrap();
    c.work().join("gates").join(name)
}

fn open(path: &PathBuf) {
    std::fs::write(path, "").unwrap();
}

/// A script line that waits for gate `name` (see [`gate`]).
fn wait_for_gate(name: &str) -> String {
    format!("while [ ! -e gates/{name} ]; do sleep 0.1; done")
}

fn output(c: &Cluster, job: u64) -> String {
    std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap_or_default()
}

/// Each node and its state, a line each.
fn sinfo(c: &Cluster) -> String {
    c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout
}

fn sacct(c: &Cluster, job: u64, fields: &str) -> String {
    c.run(
        "sacct",
        &["-n", "-X", "-P", "-o", fields, "-j", &job.to_string()],
    )
    .stdout
}

#[test]
fn jobs_run_on_while_their_agent_is_killed_and_end_as_they_would_have_once_it_is_back() {
    let mut c = Cluster::start_with("restart", CONF, &["n1", "n2"]);
    let me = nix::unistd::geteuid().as_raw();
    let tag = std::process::id();
    // Four jobs on n1: one ends after the agent is back (exit 3), one while it is away
    // (exit 0), one reaches its time limit while it is away, one is cancelled while it
    // is away.
    let (go, early) = (gate(&c, "go"), gate(&c, "early"));
    let later = c.sbatch(&[
        "-w",
        "n1",
        "--wrap",
        &format!("echo one; {}; echo two; exit 3", wait_for_gate("go")),
    ]);
    let meanwhile = c.sbatch(&[
        "-w",
        "n1",
        "--wrap",
        &format!("echo a; {}; echo b", wait_for_gate("early")),
    ]);
    let (slow, victim) = (format!("611.{tag}"), format!("612.{tag}"));
    let timed = c.sbatch(&[
        "-w",
        "n1",
        "-t",
        "0:04",
        "--wrap",
        &format!("echo t; sleep {slow}"),
    ]);
    let cancelled = c.sbatch(&["-w", "n1", "--wrap", &format!("echo c; sleep {victim}")]);
    let all = [later, meanwhile, timed, cancelled];
    c.wait_for("the jobs to run", || {
        all.iter().all(|&j| c.state(j) == "RUNNING")
            && output(&c, later) == "one\n"
            && output(&c, meanwhile) == "a\n"
            && output(&c, timed) == "t\n"
            && output(&c, cancelled) == "c\n"
    });
    let starts: Vec<String> = all.iter().map(|&j| sacct(&c, j, "Start")).collect();

    // The agent is killed outright: the jobs run on, and n1 is not responding (but not
    // down: SlurmdTimeout is 300 s); once the 4-second job reaches its limit, it is
    // told to end and n1 is completing (`comp*`) until its agent is back to say so.
    stop_agent(&c, "n1", Signal::SIGKILL);
    assert_eq!(
        c.settle("n1 comp*\nn2 idle\n", || sinfo(&c)),
        "n1 comp*\nn2 idle\n"
    );
    // One job ends meanwhile: nobody can report it yet.
    open(&early);
    c.wait_for("the job to end while its agent is away", || {
        output(&c, meanwhile) == "a\nb\n"
    });
    // The time limit fires without the agent: the job's supervisor enforces it.
    c.wait_for(
        "the time limit to end the job while its agent is away",
        || harness::pids_of(&["sleep", &slow]).is_empty(),
    );
    // A cancel cannot reach the node meanwhile: the job runs on until the agent is back.
    assert_eq!(c.run("scancel", &[&cancelled.to_string()]).code, 0);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(harness::pids_of(&["sleep", &victim]).len(), 1);
    // Accounting has the states they were told to end in (as Slurm's); the two told
    // to end are COMPLETING until the agent is back to say their processes are gone.
    let me_cancelled = format!("CANCELLED by {me}");
    for (j, want) in [
        (later, "RUNNING"),
        (meanwhile, "RUNNING"),
        (timed, "TIMEOUT"),
        (cancelled, me_cancelled.as_str()),
    ] {
        assert_eq!(c.state(j), want, "job {j}");
    }

    // A new agent adopts the supervisors: the ends that came meanwhile are reported,
    // the cancel is carried out, and the job still running ends when it ends.
    c.add_agent("n1");
    assert_eq!(c.wait_ended(meanwhile), "COMPLETED");
    assert_eq!(c.wait_ended(timed), "TIMEOUT");
    assert_eq!(c.wait_ended(cancelled), format!("CANCELLED by {me}"));
    assert!(harness::pids_of(&["sleep", &victim]).is_empty());
    assert_eq!(c.state(later), "RUNNING");
    open(&go);
    assert_eq!(c.wait_ended(later), "FAILED");
    assert_eq!(sacct(&c, later, "ExitCode"), "3:0\n");
    assert_eq!(sacct(&c, meanwhile, "ExitCode"), "0:0\n");

    // Their output is whole, with slurmstepd's notices of the ends they did not choose.
    assert_eq!(output(&c, later), "one\ntwo\n");
    assert_eq!(output(&c, meanwhile), "a\nb\n");
    let t = output(&c, timed);
    assert!(
        t.starts_with("t\nslurmstepd-n1: error: *** JOB ")
            && t.contains(&format!(" {timed} ON n1 CANCELLED AT "))
            && t.ends_with(" DUE TO TIME LIMIT ***\n"),
        "{t}"
    );
    let k = output(&c, cancelled);
    assert!(
        k.starts_with("c\nslurmstepd-n1: error: *** JOB ")
            && k.contains(&format!(" {cancelled} ON n1 CANCELLED AT ")),
        "{k}"
    );
    // Never restarted: each kept its first start.
    let now: Vec<String> = all.iter().map(|&j| sacct(&c, j, "Start")).collect();
    assert_eq!(now, starts);
    assert_eq!(
        c.settle("n1 idle\nn2 idle\n", || sinfo(&c)),
        "n1 idle\nn2 idle\n"
    );
    // Every supervisor has left once its end was acknowledged.
    let state = c.dir.join("state");
    c.wait_for("the supervisors to leave", || {
        harness::supervisors_of(&state).is_empty()
    });
}

#[test]
fn restarting_the_controller_and_an_agent_together_disturbs_no_job() {
    let mut c = Cluster::start_with("restart2", CONF, &["n1", "n2"]);
    // A job on each node waiting for a gate; one more on n2 that ends while both the
    // controller and n2's agent are away.
    let (go, early) = (gate(&c, "go"), gate(&c, "early"));
    let on1 = c.sbatch(&[
        "-w",
        "n1",
        "--wrap",
        &format!("echo 1; {}; echo 1 done; exit 4", wait_for_gate("go")),
    ]);
    let on2 = c.sbatch(&[
        "-w",
        "n2",
        "--wrap",
        &format!("echo 2; {}; echo 2 done", wait_for_gate("go")),
    ]);
    let gone = c.sbatch(&[
        "-w",
        "n2",
        "--wrap",
        &format!("echo 3; {}; echo 3 done", wait_for_gate("early")),
    ]);
    c.wait_for("the jobs to run", || {
        [on1, on2, gone].iter().all(|&j| c.state(j) == "RUNNING")
            && output(&c, on1) == "1\n"
            && output(&c, on2) == "2\n"
            && output(&c, gone) == "3\n"
    });
    // The controller is killed outright; n2's agent is stopped (SIGTERM: a restart or
    // an upgrade, which leaves jobs running) while it is away; one job ends then; n2's
    // agent starts again before the controller does.
    c.crash_controller();
    stop_agent(&c, "n2", Signal::SIGTERM);
    open(&early);
    c.wait_for("the job to end with nobody to tell", || {
        output(&c, gone) == "3\n3 done\n"
    });
    c.add_agent("n2");
    std::thread::sleep(Duration::from_millis(500));
    c.restart_controller();
    // The end that came meanwhile is reported; the others run on and end normally.
    assert_eq!(c.wait_ended(gone), "COMPLETED");
    for j in [on1, on2] {
        assert_eq!(c.state(j), "RUNNING", "job {j}");
    }
    open(&go);
    assert_eq!(c.wait_ended(on1), "FAILED");
    assert_eq!(sacct(&c, on1, "ExitCode"), "4:0\n");
    assert_eq!(c.wait_ended(on2), "COMPLETED");
    assert_eq!(output(&c, on1), "1\n1 done\n");
    assert_eq!(output(&c, on2), "2\n2 done\n");
    for j in [on1, on2, gone] {
        let show = c.run("scontrol", &["show", "job", &j.to_string()]).stdout;
        assert!(show.contains(" Restarts=0 "), "{show}");
    }
}

/// Each job's state and reason as `squeue` shows them (`ID ST REASON`), by job id.
fn reasons(c: &Cluster) -> String {
    let o = c.run("squeue", &["-h", "-o", "%i %t %r"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut lines: Vec<&str> = o.stdout.lines().collect();
    lines.sort_by_key(|l| l.split(' ').next().and_then(|id| id.parse::<u64>().ok()));
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// `scontrol show node NODE`'s `State=` and `Reason=` (without who set it and when).
fn node_state(c: &Cluster, node: &str) -> String {
    let show = c.run("scontrol", &["show", "node", node]).stdout;
    let field = |key: &str| {
        show.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or("")
            .to_string()
    };
    let reason = show
        .split_once(" Reason=")
        .map(|(_, r)| r.split(" [").next().unwrap_or("").trim().to_string())
        .unwrap_or_default();
    format!("{} {reason}", field("State="))
}

#[test]
fn a_restarted_controller_keeps_the_reasons_of_waiting_jobs_while_its_agents_come_back() {
    let mut c = Cluster::start_with("restart_reasons", CONF, &["n1", "n2"]);
    // A job holds every CPU of both nodes until its gate opens; one waits for room, one
    // for its begin time an hour away.
    let go = gate(&c, "go");
    let big = c.sbatch(&["-n", "8", "--wrap", &wait_for_gate("go")]);
    c.wait_for("the big job to run", || c.state(big) == "RUNNING");
    let room = c.sbatch(&["-n", "2", "--wrap", "true"]);
    let later = c.sbatch(&["--begin", "now+1hour", "--wrap", "true"]);
    let before = format!("{big} R None\n{room} PD Resources\n{later} PD BeginTime\n");
    assert_eq!(c.settle(&before, || reasons(&c)), before);

    // The controller restarts while both agents are away (stopped: the big job runs on
    // under its supervisor). Until they come back the nodes are UNKNOWN and not
    // responding, and take no work, yet the waiting jobs still wait for room and for
    // their begin time, not for nodes that are down (as Slurm's: a node not heard from
    // is given up only after SlurmdTimeout, 300 s here).
    c.crash_controller();
    stop_agent(&c, "n1", Signal::SIGTERM);
    stop_agent(&c, "n2", Signal::SIGTERM);
    c.restart_controller();
    c.wait_for("the controller to answer", || {
        c.run("squeue", &["-h"]).code == 0
    });
    assert_eq!(sinfo(&c), "n1 unk*\nn2 unk*\n");
    assert_eq!(node_state(&c, "n2"), "UNKNOWN+NOT_RESPONDING ");
    // A few scheduling passes (one a second).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(reasons(&c), before);
    let show = c
        .run("scontrol", &["show", "job", &later.to_string()])
        .stdout;
    assert!(show.contains(" Reason=BeginTime "), "{show}");

    // The agents come back: the big job ran on all along, and the waiting one runs once
    // it ends.
    c.add_agent("n1");
    c.add_agent("n2");
    c.wait_for("the nodes to be back", || {
        sinfo(&c) == "n1 alloc\nn2 alloc\n"
    });
    assert_eq!(reasons(&c), before);
    open(&go);
    assert_eq!(c.wait_ended(big), "COMPLETED");
    assert_eq!(c.wait_ended(room), "COMPLETED");
    assert_eq!(c.run("scancel", &[&later.to_string()]).code, 0);
}

#[test]
fn an_agent_that_never_returns_after_a_restart_has_its_node_down_after_slurmd_timeout() {
    // SlurmdTimeout=4; ReturnToService=1, so that an agent slow to register again
    // under load only delays its node.
    let conf = format!("SlurmdTimeout=4\nReturnToService=1\n{CONF}");
    let mut c = Cluster::start_with("restart_never", &conf, &["n1", "n2"]);
    // A job runs on n2 until its gate opens; one that needs both nodes waits for room.
    let go = gate(&c, "go");
    let on2 = c.sbatch(&["-w", "n2", "-n", "4", "--wrap", &wait_for_gate("go")]);
    c.wait_for("the job on n2 to run", || c.state(on2) == "RUNNING");
    let both = c.sbatch(&["-N", "2", "-n", "8", "--wrap", "true"]);
    let before = format!("{on2} R None\n{both} PD Resources\n");
    assert_eq!(c.settle(&before, || reasons(&c)), before);

    // The controller restarts; n2's agent is gone for good (its job runs on under its
    // supervisor). n1's agent registers again; n2 is UNKNOWN and not responding, and
    // the waiting job still waits for room.
    c.crash_controller();
    stop_agent(&c, "n2", Signal::SIGTERM);
    c.restart_controller();
    c.wait_for("the controller to answer", || {
        c.run("squeue", &["-h"]).code == 0
    });
    assert_eq!(node_state(&c, "n2"), "UNKNOWN+NOT_RESPONDING ");
    // (Once the new controller's first pass has given each its reason.)
    assert_eq!(c.settle(&before, || reasons(&c)), before);

    // 20 s after the restart (SlurmdTimeout, but at least the 16 s an agent that lost
    // its controller may wait between attempts, and a few seconds: a job runs there)
    // n2 is DOWN, for not responding; its job is requeued, and the waiting job now
    // waits for nodes that are down.
    c.wait_for("n2 to be down", || sinfo(&c) == "n1 idle\nn2 down*\n");
    assert_eq!(node_state(&c, "n2"), "DOWN+NOT_RESPONDING Not responding");
    let sinfo_r = c.run("sinfo", &["-h", "-R", "-o", "%E|%N"]).stdout;
    assert_eq!(sinfo_r, "Not responding|n2\n");
    c.wait_for("the job on n2 requeued", || {
        c.run("squeue", &["-h", "-j", &on2.to_string(), "-o", "%t"])
            .stdout
            == "PD\n"
    });
    let down = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher \
                priority partitions";
    let squeue = || {
        c.run("squeue", &["-h", "-j", &both.to_string(), "-o", "%t %r"])
            .stdout
    };
    let expected = format!("PD {down}\n");
    assert_eq!(c.settle(&expected, squeue), expected);

    // Its agent back at last, n2 returns to service (ReturnToService=1): the stale run
    // is killed, the requeued job runs there again, and the waiting one after it.
    c.add_agent("n2");
    open(&go);
    assert_eq!(c.wait_ended(on2), "COMPLETED");
    assert_eq!(c.wait_ended(both), "COMPLETED");
}

#[test]
fn a_node_drained_in_slurm_conf_whose_agent_never_registers_goes_down_beneath_its_drain() {
    // n2's line drains it; its agent never comes. SlurmdTimeout=4.
    let conf = "ClusterName=restarts
SlurmctldHost=localhost
SlurmdTimeout=4
NodeName=n1 CPUs=4 RealMemory=4000 State=UNKNOWN
NodeName=n2 CPUs=4 RealMemory=4000 State=DRAIN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";
    let c = Cluster::start_with("drained_never", conf, &["n1"]);
    // Given up SlurmdTimeout after the start, it is DOWN beneath its drain, as Slurm's
    // `set_node_down_ptr` leaves it: `drain*` to sinfo, Slurm's reason.
    c.wait_for("n2 to be given up", || {
        node_state(&c, "n2").starts_with("DOWN")
    });
    assert_eq!(
        node_state(&c, "n2"),
        "DOWN+DRAIN+NOT_RESPONDING Not responding"
    );
    assert_eq!(sinfo(&c), "n1 idle\nn2 drain*\n");
    // Nothing starts there.
    let job = c.sbatch(&["-w", "n2", "--wrap", "true"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.state(job), "PENDING");
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
}

#[test]
fn an_agent_away_past_slurmd_timeout_fails_or_requeues_its_jobs_and_its_return_kills_the_stale_runs(
) {
    // One node of 2 CPUs whose agent is waited for two seconds (SlurmdTimeout), two
    // jobs on it; its agent is killed outright. (Before jobs outlived their agent, a
    // killed agent's jobs died with it and its node went down at once; now they run on
    // under their supervisors, and the node waits for its agent SlurmdTimeout long, as
    // Slurm's does.)
    // ReturnToService=1: the node, DOWN for not responding, comes back when its agent
    // registers again (Slurm's default 0 would keep it DOWN until resumed).
    let conf = format!(
        "SlurmdTimeout=2\nReturnToService=1\n{}",
        crate::SMALL.replace("n[1-2]", "n1")
    );
    let mut c = Cluster::start("agentkill", &conf);
    // Durations unique to this run, to find its processes among all.
    let (long1, long2) = (
        format!("601.{}", std::process::id()),
        format!("602.{}", std::process::id()),
    );
    let keep = c.sbatch(&[
        "-J",
        "keep",
        "--no-requeue",
        "--wrap",
        &format!("sleep {long1}"),
    ]);
    let again = c.sbatch(&["-J", "again", "--wrap", &format!("sleep {long2}")]);
    c.wait_for("both jobs' processes running", || {
        harness::pids_of(&["sleep", &long1]).len() == 1
            && harness::pids_of(&["sleep", &long2]).len() == 1
    });
    stop_agent(&c, "n1", Signal::SIGKILL);

    // Past SlurmdTimeout the node is down: the job that may not be requeued ends
    // NODE_FAIL, the other waits for its node.
    assert_eq!(c.wait_ended(keep), "NODE_FAIL");
    // Why it ended is Slurm's `FAIL_DOWN_NODE`; squeue shows its nodes, not the reason.
    let ended = c.run(
        "squeue",
        &["-h", "-t", "all", "-j", &keep.to_string(), "-o", "%T %r %R"],
    );
    assert_eq!(ended.stdout, "NODE_FAIL NodeDown n1\n");
    let expected = format!(
        "{again} again PD (Nodes required for job are DOWN, DRAINED or reserved for jobs in \
         higher priority partitions)\n"
    );
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t %R"]).stdout;
    assert_eq!(c.settle(&expected, squeue), expected);
    assert_eq!(c.settle("n1 down*\n", || sinfo(&c)), "n1 down*\n");
    // The agent does not kill jobs on its own, and none is there: both still run.
    assert_eq!(harness::pids_of(&["sleep", &long1]).len(), 1);
    assert_eq!(harness::pids_of(&["sleep", &long2]).len(), 1);

    // A new agent for n1 adopts them and lists them in its registration; the controller
    // no longer gives n1 those runs, and they are killed on its word; the requeued job
    // runs again on n1, its second run, alone.
    c.add_agent("n1");
    c.wait_for("the stale runs to end", || {
        harness::pids_of(&["sleep", &long1]).is_empty()
    });
    c.wait_for("the requeued job to run again", || {
        c.state(again) == "RUNNING"
    });
    let show = c
        .run("scontrol", &["show", "job", &again.to_string()])
        .stdout;
    assert!(show.contains(" Restarts=1 "), "{show}");
    c.wait_for("the new run's process, and only it", || {
        harness::pids_of(&["sleep", &long2]).len() == 1
    });
    assert_eq!(c.state(keep), "NODE_FAIL");

    // Stopped (SIGTERM: a restart, an upgrade), the agent leaves its job running; the
    // next one adopts it; stopped as the cluster stops (SIGINT), it ends it.
    let first = harness::pids_of(&["sleep", &long2]);
    stop_agent(&c, "n1", Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(harness::pids_of(&["sleep", &long2]), first);
    c.add_agent("n1");
    assert_eq!(c.settle("n1 mix\n", || sinfo(&c)), "n1 mix\n");
    assert_eq!(c.state(again), "RUNNING");
    assert_eq!(harness::pids_of(&["sleep", &long2]), first);
    stop_agent(&c, "n1", Signal::SIGINT);
    assert!(harness::pids_of(&["sleep", &long2]).is_empty());
}

#[test]
fn an_srun_steps_tasks_and_output_survive_a_restart_of_their_agents() {
    // A two-node step: task 0 on n1 (where the batch script and srun run), task 1 on
    // n2. Both agents are killed while the tasks run, and the tasks end while the
    // agents are away; once the agents are back, srun gets the rest of the step's
    // output from where its streams broke and the tasks' exit codes.
    let mut c = Cluster::start_with("restart3", CONF, &["n1", "n2"]);
    let step = gate(&c, "step");
    let job = c.sbatch(&[
        "-N",
        "2",
        "-n",
        "2",
        "--wrap",
        &format!(
            "srun -l bash -c 'echo start; {}; echo end; exit $SLURM_PROCID'; \
             echo srun exited $?",
            wait_for_gate("step")
        ),
    ]);
    c.wait_for("both tasks to start", || {
        let out = output(&c, job);
        out.contains("0: start\n") && out.contains("1: start\n")
    });
    stop_agent(&c, "n1", Signal::SIGKILL);
    stop_agent(&c, "n2", Signal::SIGKILL);
    open(&step);
    // The tasks end with nobody to tell: srun still waits for them.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!output(&c, job).contains("end"), "{}", output(&c, job));
    assert_eq!(c.state(job), "RUNNING");
    c.add_agent("n2");
    c.add_agent("n1");
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let out = output(&c, job);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "0: end",
            "0: start",
            "1: end",
            "1: start",
            "srun exited 1",
            "srun: error: n2: task 1: Exited with exit code 1",
        ],
        "{out}"
    );
    assert!(out.ends_with("srun exited 1\n"), "{out}");
    let steps = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    assert!(
        steps.stdout.contains(&format!("{job}.0|FAILED|1:0\n")),
        "{}",
        steps.stdout
    );
    // Every supervisor leaves once srun has all of its step's events.
    let state = c.dir.join("state");
    c.wait_for("the supervisors to leave", || {
        harness::supervisors_of(&state).is_empty()
    });
}

/// `sluice audit JOB`'s requeue lines (what follows the time).
fn requeues(c: &Cluster, job: u64) -> Vec<String> {
    let o = c.run("sluice", &["audit", &job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(_, rest)| rest.to_string()))
        .filter(|rest| rest.starts_with("requeued "))
        .collect()
}

#[test]
fn a_clean_stop_of_the_cluster_requeues_its_jobs_as_stopped_and_a_crash_as_a_node_failure() {
    let mut c = Cluster::start("shutdown", CONF);
    let job = c.sbatch(&[
        "-w",
        "n1",
        "--wrap",
        "touch run-${SLURM_RESTART_COUNT:-0}; sleep 300",
    ]);
    let work = c.work();
    let started = |run: u32| work.join(format!("run-{run}")).exists();
    // Its processes, not merely its allocation: an agent stopped while a launch is
    // still on its way leaves that run to the next agent.
    c.wait_for("the job to run", || started(0));
    // Ctrl-C: the agents end the job; the next start puts it back in the queue.
    c.stop_up();
    c.start_up_again();
    c.wait_for("the job to be requeued", || requeues(&c, job).len() == 1);
    assert!(
        requeues(&c, job)[0]
            .contains("the cluster was stopped; run 0 kept as NODE_FAIL; released n1"),
        "{:?}",
        requeues(&c, job)
    );
    c.wait_for("the job to run again", || started(1));
    // A crash leaves no mark: the same loss is a node failure.
    c.kill_up();
    c.start_up_again();
    c.wait_for("the job to be requeued again", || {
        requeues(&c, job).len() == 2
    });
    assert!(
        requeues(&c, job)[1].contains("its node failed; run 1 kept as NODE_FAIL; released n1"),
        "{:?}",
        requeues(&c, job)
    );
}

#[test]
fn an_srun_step_whose_launch_fails_on_one_node_is_aborted_on_every_node() {
    // n2's agent is gone when the job's batch script (on n1) starts a step on both
    // nodes: the launch on n2 fails. As Slurm's srun, it says so, kills the step's
    // task on n1 (which would otherwise wait for its peer forever) and exits non-zero
    // once it is gone.
    let c = Cluster::start("srun-abort", CONF);
    let go = gate(&c, "go");
    let job = c.sbatch(&[
        "-N",
        "2",
        "--wrap",
        &format!(
            "{}; srun -N2 bash -c 'echo up; exec sleep 6301'; echo \"srun exit $?\"",
            wait_for_gate("go")
        ),
    ]);
    c.wait_for("the job running", || c.state(job) == "RUNNING");
    stop_agent(&c, "n2", Signal::SIGKILL);
    open(&go);
    c.wait_for("srun's end", || output(&c, job).contains("srun exit"));
    let out = output(&c, job);
    for line in [
        format!("srun: error: Task launch for StepId={job}.0 failed on node n2: "),
        "srun: error: Application launch failed: ".to_string(),
        "srun: Job step aborted: Waiting up to 3 seconds for job step to finish.\n".to_string(),
        "srun exit 1\n".to_string(),
    ] {
        assert!(out.contains(&line), "no {line:?} in\n{out}");
    }
    assert_eq!(harness::pids_running(&["sleep", "6301"]), Vec::<i32>::new());
    let _ = c.run("scancel", &[&job.to_string()]);
}

#[test]
fn a_supervisor_killed_outright_has_its_jobs_processes_ended_and_the_job_failed_as_on_a_failed_node(
) {
    // A job's supervisor dies (SIGKILL) while its agent lives: nobody can report the
    // job's end any more, so the agent ends the process groups the supervisor
    // remembered in its directory (as attributes of it, or files), and the job ends
    // NODE_FAIL (it may not be requeued). A second job, whose supervisor lives, runs on.
    let c = Cluster::start_with("stepdkill", CONF, &["n1", "n2"]);
    let me = nix::unistd::geteuid().as_raw();
    let tag = std::process::id();
    let (victim, other) = (format!("614.{tag}"), format!("615.{tag}"));
    let job = c.sbatch(&[
        "-w",
        "n1",
        "--no-requeue",
        "--wrap",
        &format!("sleep {victim}"),
    ]);
    let lives = c.sbatch(&["-w", "n1", "--wrap", &format!("sleep {other}")]);
    c.wait_for("both jobs' processes running", || {
        harness::pids_of(&["sleep", &victim]).len() == 1
            && harness::pids_of(&["sleep", &other]).len() == 1
    });
    let dir = c
        .dir
        .join("state")
        .join("agents")
        .join("n1.jobs")
        .join(format!("{job}.0"));
    c.wait_for("the supervisor to remember the job's process group", || {
        remembers_a_group(&dir)
    });
    let dir = dir.display().to_string();
    let supervisor = harness::pids_of(&["stepd", &dir]);
    assert_eq!(
        supervisor.len(),
        1,
        "one supervisor of {dir}: {supervisor:?}"
    );
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(supervisor[0]), Signal::SIGKILL).unwrap();

    assert_eq!(c.wait_ended(job), "NODE_FAIL");
    c.wait_for("the job's process to be ended", || {
        harness::pids_of(&["sleep", &victim]).is_empty()
    });
    c.wait_for("its directory and script to be removed", || {
        !std::path::Path::new(&dir).exists() && !std::path::Path::new(&format!("{dir}.sh")).exists()
    });
    assert_eq!(sacct(&c, job, "State,ExitCode"), "NODE_FAIL|0:0\n");
    // The other job's supervisor was left alone.
    assert_eq!(c.state(lives), "RUNNING");
    assert_eq!(harness::pids_of(&["sleep", &other]).len(), 1);
    c.run("scancel", &[&lives.to_string()]);
    assert_eq!(c.wait_ended(lives), format!("CANCELLED by {me}"));
}

/// Whether a supervisor's directory remembers a process group: an extended attribute
/// of it, or a `*.pgid` file in it (where its file system takes no attributes).
fn remembers_a_group(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut names = vec![0u8; 4096];
    // SAFETY: a NUL-terminated path and a writable buffer of `names.len()` bytes.
    let n = unsafe { libc::listxattr(path.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    names.truncate(usize::try_from(n).unwrap_or(0));
    names
        .split(|b| *b == 0)
        .any(|a| a.starts_with(b"user.sluice.") && a.ends_with(b".pgid"))
        || std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "pgid"))
}
