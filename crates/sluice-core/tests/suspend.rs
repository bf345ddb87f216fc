//! Suspension by an operator (`scontrol suspend`/`resume`), as stories: a suspended job
//! keeps what it holds, and its time limit runs out as much later as it stood suspended.

mod common;

use common::*;
use sluice_core::{JobId, Policy, Scheduler};

#[test]
fn a_suspended_job_keeps_its_node_and_ends_later_by_its_suspension() {
    // One node of 4 CPUs.
    // t=0   job 1 takes it for 100 s: its claim ends at 100.
    // t=5   job 2 wants it too: planned at 100.
    // t=20  job 1 is suspended: it keeps the node, and nobody can say when it ends —
    //       job 2 is no longer planned at 100, and does not start either.
    // t=100 its old end comes: job 2 still does not start.
    // t=130 job 1 is resumed after 110 s suspended: it now ends at 210, and job 2 is
    //       planned there.
    for policy in [Policy::Easy, Policy::Conservative, backfill(86_400)] {
        let name = policy.name();
        let mut s = Scheduler::new(cluster(1, 4), policy);
        s.submit(job(1).procs(4).time(100).spec(), 0).unwrap();
        assert_eq!(s.schedule(0).len(), 1);
        s.submit(job(2).procs(4).time(10).spec(), 5).unwrap();
        assert!(s.schedule(5).is_empty());
        let planned = |s: &Scheduler| s.job(JobId(2)).unwrap().planned_start;
        assert_eq!(planned(&s), Some(100), "{name}");

        assert!(s.suspend(JobId(1), 20));
        assert!(!s.suspend(JobId(1), 21), "{name}: already suspended");
        assert!(
            s.schedule(20).is_empty(),
            "{name}: the node is still job 1's"
        );
        assert!(
            planned(&s).is_none_or(|t| t > 1_000_000),
            "{name}: {planned:?}",
            planned = planned(&s)
        );
        assert!(s.schedule(100).is_empty(), "{name}: its old end is no end");
        assert_eq!(s.job(JobId(1)).unwrap().suspended, Some(20));

        assert!(s.resume(JobId(1), 130));
        assert!(!s.resume(JobId(1), 131), "{name}: not suspended any more");
        let j1 = s.job(JobId(1)).unwrap();
        assert_eq!((j1.suspended, j1.suspended_secs), (None, 110), "{name}");
        assert_eq!(j1.expected_end(), Some(210), "{name}");
        assert!(s.schedule(130).is_empty());
        assert_eq!(planned(&s), Some(210), "{name}");
    }
}

#[test]
fn only_a_running_job_can_be_suspended() {
    let mut s = Scheduler::new(cluster(1, 4), Policy::Easy);
    s.submit(job(1).procs(4).time(100).spec(), 0).unwrap();
    s.submit(job(2).procs(4).time(100).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    assert!(!s.suspend(JobId(2), 1), "job 2 is pending");
    assert!(!s.resume(JobId(2), 1), "job 2 is not suspended");
    assert!(!s.suspend(JobId(3), 1), "no job 3");
}

#[test]
fn a_time_limit_changed_while_suspended_still_counts_the_suspension() {
    // t=0 job 1 starts for 100 s; suspended 10..40 (30 s); at 60 its limit becomes
    // 200 s: it ends at 0 + 200 + 30 = 230, and a job behind it is planned there.
    let mut s = Scheduler::new(cluster(1, 4), Policy::Conservative);
    s.submit(job(1).procs(4).time(100).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    assert!(s.suspend(JobId(1), 10));
    assert!(s.resume(JobId(1), 40));
    assert!(s.set_time_limit(JobId(1), 200, 60));
    s.submit(job(2).procs(4).time(10).spec(), 61).unwrap();
    assert!(s.schedule(61).is_empty());
    assert_eq!(s.job(JobId(2)).unwrap().planned_start, Some(230));
}

#[test]
fn a_restored_suspension_holds_the_node_again() {
    // A controller restart at t=50 takes back job 1 (started at 0, 100 s), suspended
    // since 30 after 10 s suspended earlier: it holds the node with no end in sight;
    // resumed at 70, it ends at 0 + 100 + 10 + 40 = 150.
    let mut s = Scheduler::new(cluster(1, 4), Policy::Easy);
    let spec = job(1).procs(4).time(100).spec();
    let mut probe = Scheduler::new(cluster(1, 4), Policy::Easy);
    probe.submit(spec.clone(), 0).unwrap();
    let alloc = match probe.schedule(0).remove(0) {
        sluice_core::Decision::Start { alloc, .. } => alloc,
        other => panic!("{other:?}"),
    };
    s.restore_running(spec, 0, alloc.nodes, 50).unwrap();
    assert!(s.restore_suspension(JobId(1), Some(30), 10, 50));
    s.submit(job(2).procs(4).time(10).spec(), 50).unwrap();
    assert!(
        s.schedule(60).is_empty(),
        "still suspended: the node is job 1's"
    );
    assert!(s.resume(JobId(1), 70));
    assert_eq!(s.job(JobId(1)).unwrap().expected_end(), Some(150));
}
