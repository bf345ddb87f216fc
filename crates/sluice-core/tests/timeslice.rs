//! Gang time-slicing (`PreemptMode=GANG`, `OverSubscribe=FORCE:N`), as stories: jobs
//! that share the same processors take turns, every `SchedulerTimeSlice` seconds the
//! ones that ran are suspended and the waiting ones resumed, in Slurm's order.
//!
//! Unless a story says otherwise: one partition `shared` over every node with
//! `OverSubscribe=FORCE:2`, `PreemptMode=GANG`, `SchedulerTimeSlice=10`.

mod common;

use common::*;
use sluice_core::partition_policy::OverSubscribe;
use sluice_core::timeslice::{cycle, refill, Member, Row};
use sluice_core::{
    Cluster, Decision, JobId, JobState, NodeId, PartitionId, PendingReason, PreemptConfig,
    Scheduler, Time,
};

/// `nodes` nodes of `cpus` processors, shared `FORCE:n`, slices of 10 s.
fn shared(nodes: u32, cpus: u32, n: u16) -> Cluster {
    let mut c = cluster(nodes, cpus);
    c.partitions[0].name = "shared".into();
    c.partitions[0].oversubscribe = OverSubscribe::Force(n);
    c.preempt = PreemptConfig {
        gang: true,
        time_slice: 10,
        ..Default::default()
    };
    c
}

/// What a pass decided, in order, in a few words: `start 2 on [0]`, `suspend 2`,
/// `resume 1`.
fn story(d: &[Decision]) -> Vec<String> {
    d.iter()
        .map(|d| match d {
            Decision::Start { job, alloc, .. } => {
                let nodes: Vec<u32> = alloc.nodes.iter().map(|a| a.node.0).collect();
                format!("start {} on {nodes:?}", job.0)
            }
            Decision::Suspend { job, .. } => format!("suspend {}", job.0),
            Decision::Resume { job, .. } => format!("resume {}", job.0),
            Decision::Preempt { victim, .. } => format!("preempt {}", victim.0),
        })
        .collect()
}

fn arrive(s: &mut Scheduler, j: JobBuilder, t: Time) -> Vec<String> {
    s.submit(j.submit(t).spec(), t).unwrap();
    story(&s.schedule(t))
}

fn at(s: &mut Scheduler, t: Time) -> Vec<String> {
    story(&s.schedule(t))
}

fn state(s: &Scheduler, id: u64) -> JobState {
    s.job(JobId(id)).unwrap().state
}

#[test]
fn two_jobs_on_one_node_take_turns_every_slice() {
    for policy in [backfill(10_000), sluice_core::Policy::Easy] {
        // One node of 4 CPUs, FORCE:2.
        // t=0  job 1 (4 CPUs, 100 s) starts.
        // t=1  job 2 (4 CPUs) is allocated the same CPUs: it starts and is suspended at
        //      once; the first slice is due 10 s later.
        // t=11 first slice: job 1 started running (a filler), so it is not moved back:
        //      it stays first, and runs on (Slurm's order); nothing changes.
        // t=21 job 1 ran this slice: it goes to the back; job 2 runs, job 1 waits.
        // t=31 and back.
        let mut s = Scheduler::new(shared(1, 4, 2), policy);
        assert_eq!(
            arrive(&mut s, job(1).procs(4).time(100), 0),
            ["start 1 on [0]"]
        );
        assert_eq!(
            arrive(&mut s, job(2).procs(4).time(100), 1),
            ["start 2 on [0]", "suspend 2"]
        );
        assert_eq!(state(&s, 2), JobState::Suspended);
        assert!(s.time_sliced(JobId(2)));
        assert_eq!(s.job(JobId(2)).unwrap().start, Some(1));
        assert_eq!(s.next_wakeup(), Some(11));

        assert!(at(&mut s, 5).is_empty(), "nothing between slices");
        assert!(at(&mut s, 11).is_empty(), "a filler is not moved back");
        assert_eq!(
            s.slice_list(PartitionId(0)),
            [(JobId(1), Row::Active), (JobId(2), Row::Waiting)]
        );
        assert_eq!(s.next_wakeup(), Some(21));

        assert_eq!(at(&mut s, 21), ["suspend 1", "resume 2"]);
        assert_eq!(
            (state(&s, 1), state(&s, 2)),
            (JobState::Suspended, JobState::Running)
        );
        let j2 = s.job(JobId(2)).unwrap();
        assert_eq!(j2.suspended_secs, 20, "suspended from 1 to 21");
        assert_eq!(j2.expected_end(), Some(121), "its limit moved on by that");

        assert_eq!(at(&mut s, 31), ["suspend 2", "resume 1"]);
        let j1 = s.job(JobId(1)).unwrap();
        assert_eq!((j1.suspended_secs, j1.expected_end()), (10, Some(110)));
        assert_eq!(at(&mut s, 41), ["suspend 1", "resume 2"]);
    }
}

#[test]
fn no_more_than_n_jobs_share_a_processor_and_a_waiting_job_resumes_when_the_runner_ends() {
    // One node of 4 CPUs, FORCE:2. Jobs 1 and 2 share it (2 waits). Job 3 would be a
    // third on the same CPUs: it stays pending (Resources). At 15 job 1 ends: job 2
    // resumes at once (it fits now), and job 3 is then allocated beside it, suspended.
    let mut s = Scheduler::new(shared(1, 4, 2), backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(100), 0);
    arrive(&mut s, job(2).procs(4).time(100), 1);
    assert!(arrive(&mut s, job(3).procs(4).time(100), 2).is_empty());
    let j3 = s.job(JobId(3)).unwrap();
    assert_eq!(
        (j3.state, j3.reason),
        (JobState::Pending, PendingReason::Resources)
    );

    assert!(s.job_ended(JobId(1), 15).is_some());
    assert_eq!(at(&mut s, 15), ["resume 2", "start 3 on [0]", "suspend 3"]);
    assert_eq!(state(&s, 2), JobState::Running);
    assert_eq!(s.job(JobId(2)).unwrap().suspended_secs, 14);
    // The next slice (due at 21) hands the node to job 3.
    assert!(at(&mut s, 21).is_empty());
    assert_eq!(at(&mut s, 31), ["suspend 2", "resume 3"]);
}

#[test]
fn jobs_that_fit_together_run_together() {
    // Two nodes of 4 CPUs, FORCE:2. Job 1 takes node 0 and job 2 node 1 (4 CPUs each);
    // job 3 wants both nodes (8 CPUs): allocated over both, suspended. At a slice where
    // job 3 runs, both 1 and 2 wait; at the next, 1 and 2 run together again.
    let mut s = Scheduler::new(shared(2, 4, 2), backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(1000), 0);
    arrive(&mut s, job(2).procs(4).time(1000), 0);
    assert_eq!(
        arrive(&mut s, job(3).procs(8).time(1000), 1),
        ["start 3 on [0, 1]", "suspend 3"]
    );
    assert!(at(&mut s, 11).is_empty());
    assert_eq!(at(&mut s, 21), ["suspend 1", "suspend 2", "resume 3"]);
    assert_eq!(at(&mut s, 31), ["suspend 3", "resume 1", "resume 2"]);
    // A suspended job that is cancelled is simply gone, and holds nothing.
    assert!(s.job_ended(JobId(3), 35).is_some());
    assert!(at(&mut s, 41).is_empty());
    assert_eq!(s.next_wakeup(), None, "no slices with nobody waiting");
}

#[test]
fn without_gang_a_forced_partition_does_not_time_slice() {
    let mut c = shared(1, 4, 2);
    c.preempt.gang = false;
    let mut s = Scheduler::new(c, backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(100), 0);
    assert!(arrive(&mut s, job(2).procs(4).time(100), 1).is_empty());
    assert_eq!(state(&s, 2), JobState::Pending);
    assert_eq!(s.next_wakeup(), None);
}

fn m(id: u64, row: Row, cpus: &[(u32, u32)]) -> Member {
    Member {
        id: JobId(id),
        row,
        cpus: cpus.iter().map(|&(n, c)| (NodeId(n), c)).collect(),
    }
}

fn rows(l: &[Member]) -> Vec<(u64, Row)> {
    l.iter().map(|m| (m.id.0, m.row)).collect()
}

#[test]
fn a_slice_moves_the_active_jobs_back_and_fills_the_row_from_the_front() {
    // Nodes of 4 CPUs. 1 and 2 were active (sharing node 0 by halves), 3 (all of node
    // 0) and 4 (node 1) waited, 5 was a filler on node 1.
    let cap = |_| 4;
    let mut l = vec![
        m(1, Row::Active, &[(0, 2)]),
        m(2, Row::Active, &[(0, 2)]),
        m(3, Row::Waiting, &[(0, 4)]),
        m(4, Row::Waiting, &[(1, 4)]),
        m(5, Row::Filler, &[(1, 4)]),
    ];
    cycle(&mut l, &cap);
    // Order: 3, 4, 5 (kept in place), then 1, 2. 3 and 4 fit; 5 does not beside 4;
    // 1 and 2 do not beside 3.
    assert_eq!(
        rows(&l),
        [
            (3, Row::Active),
            (4, Row::Active),
            (5, Row::Waiting),
            (1, Row::Waiting),
            (2, Row::Waiting)
        ]
    );
    // Job 3 ends: 1 and 2 fit in its place, as fillers; 5 still does not.
    l.remove(0);
    let resumed = refill(&mut l, &cap, &mut |_| true);
    assert_eq!(resumed, [JobId(1), JobId(2)]);
    assert_eq!(
        rows(&l),
        [
            (4, Row::Active),
            (5, Row::Waiting),
            (1, Row::Filler),
            (2, Row::Filler)
        ]
    );
}

#[test]
fn a_job_an_operator_suspends_leaves_the_rotation_until_resumed() {
    // One node of 4 CPUs, FORCE:2; jobs 1 and 2 share it, 2 waiting. At 5 an operator
    // suspends job 1: it keeps the node, leaves the rotation, and the slices pass
    // without touching it (job 2 cannot run beside it). Resumed at 30, it rejoins at the
    // list's end, running, behind job 2 — which the next slice (31) puts first.
    let mut s = Scheduler::new(shared(1, 4, 2), backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(1000), 0);
    arrive(&mut s, job(2).procs(4).time(1000), 1);
    assert!(s.suspend(JobId(1), 5));
    assert_eq!(s.slice_list(PartitionId(0)), [(JobId(2), Row::Waiting)]);
    assert!(at(&mut s, 11).is_empty());
    assert!(at(&mut s, 21).is_empty());
    assert_eq!(state(&s, 2), JobState::Suspended);
    assert!(s.resume(JobId(1), 30));
    assert_eq!(
        s.slice_list(PartitionId(0)),
        [(JobId(2), Row::Waiting), (JobId(1), Row::Filler)]
    );
    assert_eq!(at(&mut s, 31), ["suspend 1", "resume 2"]);
    assert_eq!(at(&mut s, 41), ["suspend 2", "resume 1"]);
}

#[test]
fn under_yes_n_only_jobs_that_ask_to_oversubscribe_share_and_take_turns() {
    // One node of 4 CPUs, OverSubscribe=YES:2. Job 1 asks no sharing: job 2, which
    // asks --oversubscribe, waits pending for its CPUs. Once job 1 has ended, job 3
    // (--oversubscribe) runs; job 2 is cancelled and job 5, which asks
    // --oversubscribe, is allocated job 3's CPUs and suspended; a later slice swaps
    // them. Job 4, without --oversubscribe, waits.
    let mut c = shared(1, 4, 2);
    c.partitions[0].oversubscribe = OverSubscribe::Yes(2);
    let mut s = Scheduler::new(c, backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(100), 0);
    assert!(arrive(&mut s, job(2).procs(4).time(100).oversubscribe(), 1).is_empty());
    assert_eq!(state(&s, 2), JobState::Pending);
    assert_eq!(s.next_wakeup(), None);

    assert!(s.job_ended(JobId(1), 5).is_some());
    s.cancel_pending(JobId(2), 5);
    assert_eq!(
        arrive(&mut s, job(3).procs(4).time(100).oversubscribe(), 6),
        ["start 3 on [0]"]
    );
    assert_eq!(
        arrive(&mut s, job(5).procs(4).time(100).oversubscribe(), 7),
        ["start 5 on [0]", "suspend 5"]
    );
    assert!(arrive(&mut s, job(4).procs(4).time(100), 8).is_empty());
    assert_eq!(state(&s, 4), JobState::Pending);
    assert!(at(&mut s, 17).is_empty());
    assert_eq!(at(&mut s, 27), ["suspend 3", "resume 5"]);
}

#[test]
fn a_job_held_back_by_the_pass_on_free_cpus_does_not_share_instead() {
    // Two nodes of 4 CPUs in `shared` (FORCE:2) and in `other` (no sharing), EASY.
    // Job 1 (shared) runs on node 0 until 100. Job 2 (other, 8 CPUs) waits for both
    // nodes, reserved from 100. Job 3 (shared, 4 CPUs, 1000 s) would fit on node 1 now
    // but would delay job 2: the pass holds it back, and time-slicing does not start it
    // either (it would run on node 1 at the next pass, beside nobody).
    let mut c = shared(2, 4, 2);
    let other = sluice_core::Partition::new("other", c.partitions[0].nodes.clone());
    c.partitions.push(other);
    let mut s = Scheduler::new(c, sluice_core::Policy::Easy);
    assert_eq!(
        arrive(&mut s, job(1).procs(4).one_node().time(100), 0),
        ["start 1 on [0]"]
    );
    assert!(arrive(&mut s, job(2).procs(8).partition(1).time(100), 1).is_empty());
    assert!(arrive(&mut s, job(3).procs(4).one_node().time(1000), 2).is_empty());
    assert!(at(&mut s, 3).is_empty());
    assert_eq!(state(&s, 3), JobState::Pending);
    assert_eq!(s.next_wakeup(), None, "nobody waits for a turn");
}

#[test]
fn a_job_being_ended_leaves_the_rotation_and_keeps_its_cpus_until_gone() {
    // One node of 4 CPUs, FORCE:2; jobs 1 and 2 share it, 2 waiting. Job 1 is being
    // ended (cancelled, its processes not all gone) at 15: the slice at 21 does not
    // suspend it, and job 2 waits for its CPUs until job 1 is reported ended at 25.
    let mut s = Scheduler::new(shared(1, 4, 2), backfill(10_000));
    arrive(&mut s, job(1).procs(4).time(100), 0);
    arrive(&mut s, job(2).procs(4).time(100), 1);
    assert!(s.mark_ending(JobId(1)));
    assert!(at(&mut s, 11).is_empty());
    assert!(at(&mut s, 21).is_empty());
    assert_eq!(state(&s, 1), JobState::Running);
    assert!(s.job_ended(JobId(1), 25).is_some());
    assert_eq!(at(&mut s, 25), ["resume 2"]);
}
