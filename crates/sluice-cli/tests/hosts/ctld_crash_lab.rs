//! The controller SIGKILLed while a user's jobs run on three hosts: on a lab of
//! `head01` and `node01`–`node03` (the seeds' slurm.conf), `slurmctld` is killed
//! outright while one job runs on each node, a two-node job's srun step crosses
//! node02 and node03, and one more job waits in the queue for node01. The job on
//! node01 ends while the controller is away. Started again from its state, the controller loses nothing: the
//! end that came meanwhile is reported (its agent retried), the running jobs run on to
//! their ends, the waiting job starts, each with its state, exit code and output.

use std::time::Duration;

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, job_ended, job_state, lay_out, read, start_cluster, start_controller, submit,
    wait_for, Daemons, WORK,
};

/// A script line waiting for gate `name` in the user's directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {WORK}/gates/{name} ]; do sleep 0.2; done")
}

#[test]
fn the_controller_killed_and_restarted_loses_none_of_the_jobs_on_three_hosts() {
    let Some(h) = Hosts::up_or_skip(
        "the_controller_killed_and_restarted_loses_none_of_the_jobs_on_three_hosts",
        &["head01", "node[01-03]"],
    ) else {
        return;
    };
    lay_out(&h, "");
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node02", "node03"]);
    let gates = here(&h, WORK).join("gates");
    std::fs::create_dir_all(&gates).unwrap();

    // One job on node01, one on node02 (64 CPUs each), the step's job on node02 and
    // node03 (a CPU on each).
    let one = |node: &str, body: &str| {
        submit(
            &h,
            "node01",
            &format!("-w {node} -n 64 -o {WORK}/job-%j.out --wrap '{body}'"),
        )
    };
    let a = one(
        "node01",
        &format!("echo a on $(hostname); {}; echo a done", gate("early")),
    );
    let b = one(
        "node02",
        &format!("echo b on $(hostname); {}; exit 3", gate("go")),
    );
    let step = submit(
        &h,
        "node01",
        &format!(
            "-N 2 -n 2 -w node02,node03 -o {WORK}/job-%j.out --wrap \"srun -l bash -c \
             'echo s \\$(hostname); {}; echo e'; echo srun exited \\$?\"",
            gate("go")
        ),
    );
    let out = |job: u64| read(&here(&h, WORK).join(format!("job-{job}.out")));
    wait_for(Duration::from_secs(60), "the jobs to start", || {
        let s = out(step);
        (out(a) == "a on node01\n"
            && out(b) == "b on node02\n"
            && s.contains("0: s node02\n")
            && s.contains("1: s node03\n"))
        .then_some(())
    });
    // The fourth asks all of node01's 128 CPUs: it waits for a.
    let waiting = submit(
        &h,
        "node01",
        &format!("-N1 -w node01 -n 128 -o {WORK}/job-%j.out --wrap 'echo w on $(hostname)'"),
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        job_state(&h, waiting),
        "PENDING|0:0",
        "{}",
        as_root(
            &h,
            "head01",
            "sacct",
            &["-o", "JobID,AllocCPUS,NodeList,State,Start,End"]
        )
        .stdout
    );

    // The controller is killed outright; a job ends while it is away.
    let o = h.sh("head01", "kill -KILL $(cat /var/run/slurmctld.pid)");
    assert_eq!(o.code, 0, "{}", o.stderr);
    std::fs::write(gates.join("early"), "").unwrap();
    wait_for(
        Duration::from_secs(20),
        "job a's end while no controller runs",
        || (out(a) == "a on node01\na done\n").then_some(()),
    );
    let o = as_root(&h, "node02", "squeue", &[]);
    assert_ne!(
        o.code, 0,
        "squeue answered with no controller: {}",
        o.stdout
    );

    // Started again from its saved state: nothing lost.
    start_controller(&h);
    assert_eq!(job_ended(&h, a, Duration::from_secs(30)), "COMPLETED|0:0");
    assert_eq!(job_state(&h, b), "RUNNING|0:0");
    assert_eq!(job_state(&h, step), "RUNNING|0:0");
    std::fs::write(gates.join("go"), "").unwrap();
    assert_eq!(job_ended(&h, b, Duration::from_secs(30)), "FAILED|3:0");
    assert_eq!(
        job_ended(&h, step, Duration::from_secs(30)),
        "COMPLETED|0:0"
    );
    assert_eq!(
        job_ended(&h, waiting, Duration::from_secs(30)),
        "COMPLETED|0:0"
    );
    assert_eq!(out(b), "b on node02\n");
    assert_eq!(out(waiting), "w on node01\n");
    let s = out(step);
    let mut lines: Vec<&str> = s.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "0: e",
            "0: s node02",
            "1: e",
            "1: s node03",
            "srun exited 0"
        ],
        "{s}"
    );
    let o = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,NodeList,State,ExitCode",
            "-j",
            &format!("{a},{b},{step},{waiting}"),
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{a}|node01|COMPLETED|0:0\n{a}.batch|node01|COMPLETED|0:0\n\
             {b}|node02|FAILED|3:0\n{b}.batch|node02|FAILED|3:0\n\
             {step}|node[02-03]|COMPLETED|0:0\n{step}.batch|node02|COMPLETED|0:0\n\
             {step}.0|node[02-03]|COMPLETED|0:0\n\
             {waiting}|node01|COMPLETED|0:0\n{waiting}.batch|node01|COMPLETED|0:0\n"
        ),
        "{}",
        o.stderr
    );
    let log = read(&h.spool("head01").join("slurmctld/slurmctld.log"));
    assert!(log.contains("Node node03 now responding"), "{log}");
    drop(daemons);
    h.down().unwrap();
}
