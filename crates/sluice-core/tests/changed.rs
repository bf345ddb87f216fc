//! The jobs a pass changed: a pending job whose reason or planned start a pass writes
//! anew is in [`Scheduler::take_changed`], so that what is built from those (listings,
//! forecasts) is looked at again for those jobs only, not for the whole queue. Debug
//! builds check every pass against a comparison of the whole queue.

mod common;

use std::collections::BTreeSet;

use common::*;
use sluice_core::{BackfillParams, JobId, PendingReason, Policy, Scheduler};

fn backfill() -> Policy {
    Policy::Backfill(BackfillParams {
        interval: 30,
        resolution: 1,
        ..Default::default()
    })
}

fn ids(v: &[u64]) -> BTreeSet<JobId> {
    v.iter().map(|&i| JobId(i)).collect()
}

#[test]
fn a_job_given_a_reason_and_a_start_is_changed_and_a_quiet_pass_changes_nothing() {
    // One node of 4 CPUs. Job 1 takes it for an hour.
    let mut s = Scheduler::new(cluster(1, 4), backfill());
    s.submit(job(1).procs(4).time(3600).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    // A started job is no pending job whose record shows a reason.
    assert_eq!(s.take_changed(), ids(&[]));

    // Job 2 needs the whole node: it waits for Resources, planned at job 1's end.
    s.submit(job(2).procs(4).time(600).spec(), 1).unwrap();
    assert!(s.schedule(1).is_empty());
    let j2 = s.job(JobId(2)).unwrap();
    assert_eq!(
        (j2.reason, j2.planned_start),
        (PendingReason::Resources, Some(3600))
    );
    assert_eq!(s.take_changed(), ids(&[2]));

    // Nothing arrives or ends: the next passes write the same reason and plan again,
    // which changes nothing, and the generation stays.
    let generation = s.generation();
    assert!(s.schedule(2).is_empty());
    assert!(s.schedule(40).is_empty());
    assert_eq!(s.take_changed(), ids(&[]));
    assert_eq!(s.generation(), generation);

    // Job 1 ends early: job 2 starts, and is no longer among the changed.
    s.job_ended(JobId(1), 100).unwrap();
    assert_eq!(s.schedule(100).len(), 1);
    assert_eq!(s.take_changed(), ids(&[]));
}

#[test]
fn only_the_jobs_whose_prospects_moved_are_changed() {
    // Two nodes of 4 CPUs. Job 1 holds node 0 for an hour, job 2 node 1 for two hours.
    let mut s = Scheduler::new(cluster(2, 4), backfill());
    s.submit(job(1).procs(4).time(3600).spec(), 0).unwrap();
    s.submit(job(2).procs(4).time(7200).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 2);
    // Job 3 (one node) is planned at job 1's end; job 4 (two nodes) at job 2's end.
    s.submit(job(3).procs(4).time(600).spec(), 1).unwrap();
    s.submit(job(4).procs(8).time(600).spec(), 1).unwrap();
    assert!(s.schedule(1).is_empty());
    assert_eq!(s.job(JobId(3)).unwrap().planned_start, Some(3600));
    assert_eq!(s.job(JobId(4)).unwrap().planned_start, Some(7200));
    assert_eq!(s.take_changed(), ids(&[3, 4]));

    // Job 2 is cut short to end at 5000 (an operator lowers its time limit): job 4's
    // plan moves, job 3's does not.
    s.set_time_limit(JobId(2), 5000, 40);
    assert!(s.schedule(40).is_empty());
    assert_eq!(s.job(JobId(3)).unwrap().planned_start, Some(3600));
    assert_eq!(s.job(JobId(4)).unwrap().planned_start, Some(5000));
    assert_eq!(s.take_changed(), ids(&[4]));
}

#[test]
fn a_job_whose_begin_time_comes_is_changed_then() {
    // One node of 4 CPUs, busy for an hour with job 1. Job 2 may begin at 100 only.
    let mut s = Scheduler::new(cluster(1, 4), backfill());
    s.submit(job(1).procs(4).time(3600).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    let mut later = job(2).procs(4).time(600).spec();
    later.begin = 100;
    s.submit(later, 1).unwrap();
    assert!(s.schedule(1).is_empty());
    assert_eq!(s.job(JobId(2)).unwrap().reason, PendingReason::BeginTime);
    assert_eq!(s.take_changed(), ids(&[2]));

    // Before its time nothing moves.
    assert!(s.schedule(50).is_empty());
    assert_eq!(s.take_changed(), ids(&[]));

    // At 100 it waits for job 1's node instead.
    assert!(s.schedule(100).is_empty());
    assert_ne!(s.job(JobId(2)).unwrap().reason, PendingReason::BeginTime);
    assert_eq!(s.take_changed(), ids(&[2]));
}
