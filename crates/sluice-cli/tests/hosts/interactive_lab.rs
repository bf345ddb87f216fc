//! Steps and interactive work across hosts (issue 19, item 5): on a lab of `head01`,
//! `node01`, `node02` and `node04` (the seeds' slurm.conf; `node04`, the interactive
//! partition's only node, is where the user logs in), `srun` as a job of its own from
//! `node04` runs across `node01` and `node02` with its standard input forwarded, its
//! tasks' output labelled and in each task's order, its tasks' exit codes propagated
//! and a Ctrl-C handled as Slurm's srun does; `salloc` on `node01` runs `srun
//! hostname` inside its allocation. What each prints is what Slurm 22.05 prints.

use std::time::Duration;

use crate::harness::Hosts;
use crate::seeds_lab::{
    here, job_ended, lay_out, read, start_cluster, user_sh, wait_for, Daemons, ETC, USER,
    USER_PATH, WORK,
};

#[test]
fn srun_and_salloc_work_across_hosts_as_slurms_do() {
    let Some(h) = Hosts::up_or_skip(
        "srun_and_salloc_work_across_hosts_as_slurms_do",
        &["head01", "node01", "node02", "node04"],
    ) else {
        return;
    };
    lay_out(&h, "KillWait=2\n");
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node02", "node04"]);

    // Standard input reaches the task, on another host.
    let o = user_sh(&h, "node04", "echo data | srun -p train -N1 -w node02 cat");
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("data\n", "", 0)
    );

    // Four tasks on two hosts, labelled; each task's lines in its order.
    let o = user_sh(
        &h,
        "node04",
        "srun -p train -N2 --ntasks-per-node=2 -l bash -c 'for i in 1 2 3; do echo $SLURM_PROCID.$i $(hostname); done'",
    );
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    for task in 0..4u32 {
        let host = if task < 2 { "node01" } else { "node02" };
        let mine: Vec<&str> = o
            .stdout
            .lines()
            .filter(|l| l.starts_with(&format!("{task}: ")))
            .collect();
        let expected: Vec<String> = (1..=3)
            .map(|i| format!("{task}: {task}.{i} {host}"))
            .collect();
        assert_eq!(mine, expected, "{}", o.stdout);
    }
    assert_eq!(o.stdout.lines().count(), 12);

    // The highest exit code is srun's; each failed task is named with its host.
    let o = user_sh(
        &h,
        "node04",
        "srun -p train -N2 -n2 bash -c 'exit $((SLURM_PROCID + 3))'",
    );
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "srun: error: node01: task 0: Exited with exit code 3\n\
             srun: error: node02: task 1: Exited with exit code 4\n",
            4
        )
    );

    // salloc on node01: its command runs there, and srun inside it on both nodes.
    let o = user_sh(
        &h,
        "node01",
        "salloc -p train -N2 bash -c 'hostname; srun hostname | sort'",
    );
    let job: u64 = o
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("no grant in {:?}", o.stderr))
        .parse()
        .unwrap();
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "node01\nnode01\nnode02\n",
            format!(
                "salloc: Granted job allocation {job}\nsalloc: Relinquishing job allocation {job}\n"
            )
            .as_str(),
            0
        )
    );
    assert_eq!(job_ended(&h, job, Duration::from_secs(10)), "COMPLETED|0:0");

    // Ctrl-C: once, srun says how its tasks are and they run on; twice within a
    // second, it sends them Ctrl-C and they end.
    let cmd = format!(
        "cd {WORK} && export PATH={USER_PATH} SLURM_CONF={ETC}/slurm.conf && exec srun -p train \
         -N2 -n2 -l bash -c 'echo ready; exec sleep 60' > {WORK}/int.out 2> {WORK}/int.err"
    );
    let mut srun = h
        .command_as("node04", USER, &["bash", "-c", &cmd])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(srun.id() as i32);
    let work = here(&h, WORK);
    wait_for(Duration::from_secs(30), "both tasks ready", || {
        let out = read(&work.join("int.out"));
        (out.contains("0: ready\n") && out.contains("1: ready\n")).then_some(())
    });
    let o = crate::seeds_lab::as_root(&h, "head01", "squeue", &["-h", "-o", "%i", "-u", USER]);
    let job: u64 = o.stdout.trim().parse().expect("srun's job");
    let int = || nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = format!(
        "srun: interrupt (one more within 1 sec to abort)\n\
         srun: StepId={job}.0 tasks 0-1: running\n"
    );
    int();
    wait_for(Duration::from_secs(5), "the tasks' status", || {
        (read(&work.join("int.err")) == status).then_some(())
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        srun.try_wait().unwrap().is_none(),
        "srun ended on one Ctrl-C"
    );
    assert_eq!(read(&work.join("int.err")), status);
    int();
    std::thread::sleep(Duration::from_millis(200));
    int();
    let code = wait_for(Duration::from_secs(20), "srun's end", || {
        srun.try_wait().unwrap().map(|s| s.code())
    });
    assert_eq!(
        (read(&work.join("int.err")), code),
        (
            format!(
                "{status}{status}srun: sending Ctrl-C to StepId={job}.0\n\
                 srun: Job step aborted: Waiting up to 4 seconds for job step to finish.\n"
            ),
            Some(130)
        )
    );
    assert_eq!(read(&work.join("int.out")).lines().count(), 2);

    drop(daemons);
    h.down().unwrap();
}
