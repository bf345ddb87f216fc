//! Jobs outlive their agent on hosts of their own: on a lab of `head01`, `node01` and
//! `node02` (the seeds' slurm.conf, KillWait of two seconds), node02's `slurmd` is
//! killed outright while a user's jobs run there (one alone, one ending while the agent
//! is away, one whose srun step has a task there from a batch script on node01), and
//! started again: each job runs on, the end that came meanwhile is reported once the
//! agent is back, and the step's srun (on node01) gets its task's output and exit from
//! node02's new agent over the network.

use std::time::Duration;

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, job_ended, job_state, lay_out, read, wait_for, Daemons, BIN, ETC, USER, WORK,
};

/// A script line waiting for gate `name` in the user's directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {WORK}/gates/{name} ]; do sleep 0.2; done")
}

#[test]
fn an_agent_killed_and_restarted_on_node02_keeps_its_jobs_and_steps() {
    let Some(h) = Hosts::up_or_skip(
        "an_agent_killed_and_restarted_on_node02_keeps_its_jobs_and_steps",
        &["head01", "node01", "node02"],
    ) else {
        return;
    };
    lay_out(&h, "KillWait=2\n");
    let daemons = Daemons(&h);
    let conf = format!("{ETC}/slurm.conf");
    let o = h.run("head01", &[&format!("{BIN}/slurmctld"), "-f", &conf]);
    assert_eq!(o.code, 0, "slurmctld: {}{}", o.stdout, o.stderr);
    let key = here(&h, ETC).join("cluster.key");
    wait_for(Duration::from_secs(30), "the controller's key", || {
        key.exists().then_some(())
    });
    let slurmd = |node: &str| {
        let o = h.run(node, &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", node]);
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    };
    slurmd("node01");
    slurmd("node02");
    let sinfo = || {
        let o = as_root(
            &h,
            "head01",
            "sinfo",
            &[
                "-h",
                "-N",
                "-p",
                "train",
                "-n",
                "node[01-02]",
                "-o",
                "%N %t",
            ],
        );
        eprintln!("stderr {}", o.stderr);
        o.stdout
    };
    wait_for(Duration::from_secs(60), "node01 and node02 idle", || {
        let s = sinfo();
        eprintln!("sinfo: {s:?}");
        (s == "node01 idle\nnode02 idle\n").then_some(())
    });
    let gates = here(&h, WORK).join("gates");
    std::fs::create_dir_all(&gates).unwrap();

    // The user's three jobs, submitted on node01.
    let submit = |args: &str| -> u64 {
        let cmd = format!(
            "cd {WORK} && export PATH={BIN}:$PATH SLURM_CONF={conf} && sbatch --parsable \
             -o {WORK}/job-%j.out {args}"
        );
        let o = h.run_as("node01", USER, &["bash", "-c", &cmd]);
        assert_eq!(o.code, 0, "sbatch {args}: {}", o.stderr);
        o.stdout.trim().parse().expect("a job id")
    };
    let alone = submit(&format!(
        "-w node02 --wrap 'echo start on $(hostname); {}; echo end; exit 5'",
        gate("go")
    ));
    let early = submit(&format!(
        "-w node02 --wrap 'echo b; {}; echo b done'",
        gate("early")
    ));
    let step = submit(&format!(
        "-N 2 -n 2 -w node01,node02 --wrap \"srun -l bash -c 'echo s \\$(hostname); {}; \
         echo e; exit \\$SLURM_PROCID'; echo srun exited \\$?\"",
        gate("go")
    ));
    let out = |job: u64| read(&here(&h, WORK).join(format!("job-{job}.out")));
    wait_for(Duration::from_secs(60), "the jobs to start", || {
        let s = out(step);
        (out(alone) == "start on node02\n"
            && out(early) == "b\n"
            && s.contains("0: s node01\n")
            && s.contains("1: s node02\n"))
        .then_some(())
    });

    // node02's agent is killed outright: its jobs run on, and the node is not
    // responding (not down: SlurmdTimeout is 300 s).
    let o = h.sh("node02", "kill -KILL $(cat /var/run/slurmd.pid)");
    assert_eq!(o.code, 0, "{}", o.stderr);
    wait_for(Duration::from_secs(30), "node02 not responding", || {
        (sinfo() == "node01 mix\nnode02 mix*\n").then_some(())
    });
    std::fs::write(gates.join("early"), "").unwrap();
    wait_for(
        Duration::from_secs(30),
        "a job to end while its agent is away",
        || (out(early) == "b\nb done\n").then_some(()),
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(job_state(&h, early), "RUNNING|0:0");

    // Started again, the agent adopts the jobs' supervisors: the end that came meanwhile
    // is reported, the others run on to their ends.
    slurmd("node02");
    assert_eq!(
        job_ended(&h, early, Duration::from_secs(60)),
        "COMPLETED|0:0"
    );
    assert_eq!(job_state(&h, alone), "RUNNING|0:0");
    std::fs::write(gates.join("go"), "").unwrap();
    assert_eq!(job_ended(&h, alone, Duration::from_secs(60)), "FAILED|5:0");
    assert_eq!(
        job_ended(&h, step, Duration::from_secs(60)),
        "COMPLETED|0:0"
    );
    assert_eq!(out(alone), "start on node02\nend\n");
    let s = out(step);
    let mut lines: Vec<&str> = s.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "0: e",
            "0: s node01",
            "1: e",
            "1: s node02",
            "srun exited 1",
            "srun: error: node02: task 1: Exited with exit code 1",
        ],
        "{s}"
    );
    wait_for(Duration::from_secs(30), "node02 back in service", || {
        (sinfo() == "node01 idle\nnode02 idle\n").then_some(())
    });
    let agent_log = read(&h.spool("node02").join("slurmd/slurmd.log"));
    for text in [
        format!("node02: adopted job {alone} (run 0): its slurmstepd runs on"),
        format!("node02: adopted job {step} (run 0), srun tasks only"),
    ] {
        assert!(agent_log.contains(&text), "no {text:?} in\n{agent_log}");
    }
    drop(daemons);
    h.down().unwrap();
}
