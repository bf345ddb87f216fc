//! Advance reservations in a replay: the same core code as the controller's, on
//! virtual time, with the reserved and idle capacity reported.

use std::path::Path;

use sluice_core::{Cluster, JobId, JobRequest, JobSpec, PartitionId, Policy};
use sluice_sim::replay::{self, ReplayOptions};
use sluice_sim::reservations::parse;
use sluice_sim::setup::SimJob;

fn job(id: u64, user: u32, submit: i64, limit: i64, run: i64) -> SimJob {
    SimJob {
        spec: JobSpec {
            id: JobId(id),
            user,
            partition: PartitionId(0),
            submit,
            begin: submit,
            request: JobRequest::procs(4),
            time_limit: limit,
            priority: 0,
            acct: Default::default(),
        },
        run,
        procs: 4,
        gpu_milli: 0,
        group: 0,
    }
}

#[test]
fn a_replay_runs_jobs_in_their_reservation_and_reports_the_idle_part() {
    // One node of 4 CPUs. Reservation R for uid 7 over [1000, 2000) after the first
    // submission (at 0).
    // Job 1 (uid 7, 500 s limit, runs 300 s) goes into R and starts at its start,
    //   1000, although the node is idle at 0.
    // Job 2 (uid 1, 1500 s) would run into R: it waits until R's end, 2000.
    // R: 1000 node-seconds reserved, 300 used, 700 idle.
    let file = "# name start duration size who flags\nR 1000 1000 nodes=1 users=7 -\n";
    let lines = parse(file, Path::new("resv.txt")).unwrap();
    let jobs = vec![job(1, 7, 0, 500, 300), job(2, 1, 0, 1500, 1500)];
    let options = ReplayOptions {
        reservations: lines,
        ..Default::default()
    };
    let r = replay::run(
        Cluster::homogeneous("batch", 1, 4),
        Policy::Easy,
        jobs,
        options,
        &mut |_, _| {},
    );
    let mut starts: Vec<(u64, i64)> = r.records.iter().map(|j| (j.id, j.start)).collect();
    starts.sort();
    assert_eq!(starts, vec![(1, 1000), (2, 2000)]);
    assert_eq!(r.reservations.len(), 1);
    let rep = &r.reservations[0];
    assert_eq!((rep.name.as_str(), rep.jobs), ("R", 1));
    assert_eq!((rep.reserved_node_s, rep.used_node_s), (1000, 300));
    assert_eq!(rep.idle_node_s(), 700);
    assert_eq!(rep.refused, None);
}

#[test]
fn bad_reservation_lines_name_their_line() {
    let e = parse("R 0 10 cores=1 users=7 -\n", Path::new("f")).unwrap_err();
    assert_eq!(e.to_string(), "f:1: bad size 'cores=1' (nodes=N or gpus=N)");
    let e = parse("\nR 0 10 nodes=1 users=7 SOON\n", Path::new("f")).unwrap_err();
    assert_eq!(e.to_string(), "f:2: unknown flag 'SOON'");
    let e = parse("R 0 10\n", Path::new("f")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "f:1: expected 6 fields (name start duration size who flags), found 3"
    );
}

#[test]
fn a_daily_reservation_ends_with_the_replay_and_a_job_too_big_for_one_runs_outside() {
    // Two nodes of 4 CPUs; R holds one node for uid 7 every day from 1000 for 1000 s.
    // Job 1 (uid 7, 4 CPUs) goes into R at 1000. Job 2 (uid 7, 8 CPUs, 1500 s) is too big for R:
    // it runs outside, on both nodes, once R's window is over (2000). Then nothing is
    // left: the replay ends although R repeats every day.
    let file = "R 1000 1000 nodes=1 users=7 DAILY\n";
    let lines = parse(file, Path::new("resv.txt")).unwrap();
    let mut wide = job(2, 7, 0, 1500, 100);
    wide.spec.request = JobRequest::procs(8);
    wide.procs = 8;
    let jobs = vec![job(1, 7, 0, 500, 300), wide];
    let options = ReplayOptions {
        reservations: lines,
        ..Default::default()
    };
    let r = replay::run(
        Cluster::homogeneous("batch", 2, 4),
        Policy::Easy,
        jobs,
        options,
        &mut |_, _| {},
    );
    let mut starts: Vec<(u64, i64)> = r.records.iter().map(|j| (j.id, j.start)).collect();
    starts.sort();
    assert_eq!(starts, vec![(1, 1000), (2, 2000)]);
    assert_eq!(r.reservations[0].jobs, 1);
}
