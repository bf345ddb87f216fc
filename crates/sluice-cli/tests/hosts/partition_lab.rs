//! A network partition: on a lab of `head01`, `node01` and `node02` (the seeds'
//! slurm.conf with `SlurmdTimeout=10`), the link of the host running a user's
//! requeueable job is cut for longer than `SlurmdTimeout`. The controller no longer
//! reaches its agent: the node is not responding, then DOWN, and the job runs again on
//! the other host. The first copy, cut off, runs on meanwhile (it writes to the shared
//! home, which a partition of the network does not cut here). When the link comes
//! back its agent registers again with that run, which the controller no longer gives
//! it (Slurm's `validate_jobs_on_node`), and it is killed within seconds: after that,
//! only the second copy writes. `sacct -D` shows both runs.

use std::time::{Duration, Instant, SystemTime};

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, job_state, lay_out, node_states, read, start_cluster, submit, wait_for, Daemons,
    WORK,
};

/// Seconds since the epoch, now.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The job's heartbeat lines: (time, host, run).
fn beats(text: &str) -> Vec<(f64, String, u32)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let t = w.next()?.parse().ok()?;
            let host = w.next()?.to_string();
            let run = w.next()?.parse().ok()?;
            Some((t, host, run))
        })
        .collect()
}

#[test]
fn a_cut_off_node_goes_down_its_job_runs_again_elsewhere_and_the_stale_copy_is_killed() {
    let Some(h) = Hosts::up_or_skip(
        "a_cut_off_node_goes_down_its_job_runs_again_elsewhere_and_the_stale_copy_is_killed",
        &["head01", "node01", "node02"],
    ) else {
        return;
    };
    lay_out(&h, "SlurmdTimeout=10\nKillWait=2\n");
    let daemons = Daemons(&h);
    start_cluster(&h, &["node01", "node02"]);

    // Every 0.2 s the job appends a timestamped line with its host and run.
    let log = here(&h, WORK).join("beats.txt");
    let job = submit(
        &h,
        "node01",
        &format!(
            "--requeue -N1 -o {WORK}/job-%j.out --wrap 'while :; do \
             echo $(date +%s.%N) $(hostname) ${{SLURM_RESTART_COUNT:-0}} >> {WORK}/beats.txt; \
             sleep 0.2; done'"
        ),
    );
    let first = wait_for(Duration::from_secs(30), "the first run's beats", || {
        beats(&read(&log)).first().map(|b| b.1.clone())
    });
    let second = if first == "node01" {
        "node02"
    } else {
        "node01"
    };

    // Cut off: the node is not responding at once, DOWN after SlurmdTimeout, and the
    // job runs again on the other host.
    let cut = Instant::now();
    h.cut(&first);
    wait_for(Duration::from_secs(10), "the node not responding", || {
        node_states(&h)
            .iter()
            .any(|(n, t)| *n == first && t.ends_with('*'))
            .then_some(())
    });
    let down = wait_for(Duration::from_secs(30), "the node down", || {
        node_states(&h)
            .iter()
            .any(|(n, t)| *n == first && t.starts_with("down"))
            .then(|| cut.elapsed())
    });
    assert!(
        down >= Duration::from_secs(10),
        "down {down:?} after the cut, before SlurmdTimeout"
    );
    wait_for(Duration::from_secs(20), "the second run's beats", || {
        beats(&read(&log))
            .iter()
            .any(|b| b.1 == second && b.2 == 1)
            .then_some(())
    });
    // The first copy, cut off, runs on meanwhile.
    std::thread::sleep(Duration::from_secs(1));
    let restored = now();
    let b = beats(&read(&log));
    assert!(
        b.iter()
            .any(|(t, host, run)| *host == first && *run == 0 && *t > restored - 1.0),
        "the cut-off copy stopped before its link came back:\n{}",
        read(&log)
    );

    // The link comes back: the stale copy is killed within seconds, and never writes
    // again; the second copy runs on.
    h.restore(&first);
    let stale_end = wait_for(Duration::from_secs(15), "the stale copy's end", || {
        let b = beats(&read(&log));
        let last = b
            .iter()
            .filter(|x| x.1 == first)
            .map(|x| x.0)
            .fold(0.0, f64::max);
        (now() - last > 2.0).then_some(last)
    });
    assert!(
        stale_end - restored < 6.0,
        "the stale copy ran on {:.1} s after its link came back",
        stale_end - restored
    );
    eprintln!(
        "{first} down {:.1} s after the cut; the stale copy's last line {:.1} s after the \
         link came back",
        down.as_secs_f64(),
        stale_end - restored
    );
    std::thread::sleep(Duration::from_secs(2));
    let b = beats(&read(&log));
    let last_first = b
        .iter()
        .filter(|x| x.1 == first)
        .map(|x| x.0)
        .fold(0.0, f64::max);
    assert_eq!(last_first, stale_end, "the stale copy wrote again");
    assert!(
        b.iter().all(|x| (x.1 == first) == (x.2 == 0)),
        "{}",
        read(&log)
    );
    let last_second = b
        .iter()
        .filter(|x| x.1 == second)
        .map(|x| x.0)
        .fold(0.0, f64::max);
    assert!(now() - last_second < 1.5, "the second copy stopped");
    assert_eq!(job_state(&h, job), "RUNNING|0:0");
    let ctld_log = read(&h.spool("head01").join("slurmctld/slurmctld.log"));
    for text in [
        format!("Node {first} not responding (its agent cannot be reached)"),
        format!("Nodes {first} not responding, setting DOWN"),
        format!("Node {first} runs JobId={job} (run 0), which the controller no longer gives it; killing it"),
    ] {
        assert!(ctld_log.contains(&text), "no {text:?} in\n{ctld_log}");
    }

    // Both runs in the accounting: the first ended by the node's failure.
    let o = as_root(&h, "head01", "scancel", &[&job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    wait_for(Duration::from_secs(20), "the cancel", || {
        job_state(&h, job).starts_with("CANCELLED").then_some(())
    });
    let o = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-D",
            "-X",
            "-P",
            "-o",
            "JobID,NodeList,State",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("JobID|NodeList|State\n{job}|{first}|NODE_FAIL\n{job}|{second}|CANCELLED by 0\n"),
        "{}",
        o.stderr
    );
    drop(daemons);
    h.down().unwrap();
}
