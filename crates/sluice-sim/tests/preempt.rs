//! Preemption on virtual time: a preempted job's work is lost, it is requeued and runs
//! its full time again; the replay counts preemptions and lost processor-seconds.

use sluice_sim::replay::{run, ReplayOptions};
use sluice_sim::testing::{backfill_every_second, job, low_and_high};

#[test]
fn a_requeued_victim_runs_its_full_time_again_after_the_preemptor() {
    // One 4-CPU node; low (tier 1, GraceTime=10) and high (tier 10). Low job 1 runs
    // from 0 for 100 s. High job 2 (50 s) arrives at 30: job 1 is signalled at 30,
    // killed at 40 (40 s x 4 CPUs = 160 processor-seconds lost), job 2 runs 40-90,
    // job 1 runs again 90-190.
    let c = low_and_high();
    let policy = backfill_every_second();
    let jobs = vec![job(1, 0, 1, 0, 100, 100), job(2, 1, 1, 30, 50, 50)];
    let r = run(c, policy, jobs, ReplayOptions::default(), &mut |_, _| {});
    let runs: Vec<(u64, i64, i64, i64)> = r
        .records
        .iter()
        .map(|j| (j.id, j.submit, j.start, j.finish))
        .collect();
    assert_eq!(runs, vec![(2, 30, 40, 90), (1, 0, 90, 190)]);
    assert_eq!(r.preemptions, 1);
    assert_eq!(r.lost_proc_seconds, 160);
}

#[test]
fn a_suspended_victim_goes_on_after_the_preemptor_and_loses_nothing() {
    // The same node under PreemptMode=SUSPEND,GANG. Low job 1 runs from 0 for 100 s.
    // High job 2 (50 s) arrives at 30: job 1 is suspended at 30 (30 s done) and job 2
    // runs at once, 30-80; job 1 resumes at 80 and runs its remaining 70 s, to 150.
    // Its record's run time is its 100 s of work; nothing is lost.
    let mut c = low_and_high();
    c.preempt.mode = sluice_core::PreemptMode::Suspend;
    c.preempt.gang = true;
    let policy = backfill_every_second();
    let jobs = vec![job(1, 0, 1, 0, 100, 200), job(2, 1, 1, 30, 50, 50)];
    let r = run(c, policy, jobs, ReplayOptions::default(), &mut |_, _| {});
    let runs: Vec<(u64, i64, i64, i64, i64)> = r
        .records
        .iter()
        .map(|j| (j.id, j.submit, j.start, j.finish, j.run))
        .collect();
    assert_eq!(runs, vec![(2, 30, 30, 80, 50), (1, 0, 0, 150, 100)]);
    assert_eq!(
        (r.preemptions, r.lost_proc_seconds, r.suspensions),
        (0, 0, 1)
    );
}

#[test]
fn time_sliced_jobs_take_turns_on_virtual_time_and_each_does_its_whole_work() {
    // One 4-CPU node, OverSubscribe=FORCE:2, PreemptMode=GANG, SchedulerTimeSlice=10.
    // Job 1 (30 s of work) starts at 0; job 2 (30 s) arrives at 1 and is allocated the
    // same CPUs, suspended at once. The slice at 11 leaves job 1 running (it started as
    // a filler); at 21 job 2 gets the node (job 1 has done 21 s), at 31 job 1 again
    // (job 2 has done 10 s): job 1 ends at 40 and job 2 resumes then, ending at 60.
    let mut c = sluice_core::Cluster::homogeneous("shared", 1, 4);
    c.partitions[0].oversubscribe = sluice_core::partition_policy::OverSubscribe::Force(2);
    c.preempt.gang = true;
    c.preempt.time_slice = 10;
    let policy = backfill_every_second();
    let jobs = vec![job(1, 0, 1, 0, 30, 100), job(2, 0, 1, 1, 30, 100)];
    let r = run(c, policy, jobs, ReplayOptions::default(), &mut |_, _| {});
    let runs: Vec<(u64, i64, i64, i64)> = r
        .records
        .iter()
        .map(|j| (j.id, j.start, j.finish, j.run))
        .collect();
    assert_eq!(runs, vec![(1, 0, 40, 30), (2, 1, 60, 30)]);
    assert_eq!((r.preemptions, r.suspensions), (0, 3));
}
