//! Preemption by suspension (`PreemptMode=SUSPEND,GANG`), as stories: the low job is
//! stopped where it stands, the high job runs on its resources at once, and the low
//! job goes on when they are free again, its time limit as much later as it stood
//! suspended.
//!
//! Unless a story says otherwise: partition 0 `low` (`PriorityTier=1`) and partition 1
//! `high` (`PriorityTier=10`) both over every node, `PreemptType=preempt/partition_prio`,
//! `PreemptMode=SUSPEND,GANG`, no exempt time.

mod common;

use common::*;
use sluice_core::{
    Cluster, Decision, JobId, JobState, Partition, PreemptConfig, PreemptMode, PreemptType,
    Scheduler, Time,
};

const LOW: u16 = 0;
const HIGH: u16 = 1;

/// `nodes` nodes of `cpus` processors in `low` and `high`, preempting by suspension.
fn tiers(nodes: u32, cpus: u32) -> Cluster {
    let mut c = cluster(nodes, cpus);
    c.partitions[0].name = "low".into();
    let mut high = Partition::new("high", c.partitions[0].nodes.clone());
    high.priority_tier = 10;
    c.partitions.push(high);
    c.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Suspend,
        exempt_time: 0,
        gang: true,
        time_slice: 0,
    };
    c
}

/// What a pass decided, in order, in a few words: `suspend 1 for 3`, `start 3 on
/// [0]`, `resume 1`.
fn story(d: &[Decision]) -> Vec<String> {
    d.iter()
        .map(|d| match d {
            Decision::Start { job, alloc, .. } => {
                let nodes: Vec<u32> = alloc.nodes.iter().map(|a| a.node.0).collect();
                format!("start {} on {nodes:?}", job.0)
            }
            Decision::Preempt {
                victim, by, mode, ..
            } => format!("{} {} for {}", mode.as_str(), victim.0, by.0),
            Decision::Resume { job, .. } => format!("resume {}", job.0),
            Decision::Suspend { job, .. } => format!("suspend {}", job.0),
        })
        .collect()
}

fn arrive(s: &mut Scheduler, j: JobBuilder, t: Time) -> Vec<String> {
    s.submit(j.submit(t).spec(), t).unwrap();
    story(&s.schedule(t))
}

fn end(s: &mut Scheduler, id: u64, t: Time) -> Vec<String> {
    assert!(s.job_ended(JobId(id), t).is_some(), "job {id} was not live");
    story(&s.schedule(t))
}

fn state(s: &Scheduler, id: u64) -> JobState {
    s.job(JobId(id)).unwrap().state
}

#[test]
fn a_high_job_suspends_the_low_job_runs_at_once_and_the_low_job_resumes_after_it() {
    for policy in [backfill(10_000), sluice_core::Policy::Easy] {
        // One node of 4 CPUs.
        // t=0   low job 1 takes it for 1000 s.
        // t=100 high job 2 wants the node: job 1 is suspended and job 2 starts in the
        //       same pass, on node 0.
        // t=150 low job 3 arrives: it waits (the node is job 2's; job 1 comes back
        //       first).
        // t=400 job 2 ends: job 1 resumes before anything else starts; job 3 waits.
        //       Job 1 stood suspended 300 s: it now ends at 1300, not 1000.
        let mut s = Scheduler::new(tiers(1, 4), policy);
        assert_eq!(
            arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0),
            ["start 1 on [0]"]
        );
        assert_eq!(
            arrive(&mut s, job(2).procs(4).partition(HIGH).time(500), 100),
            ["SUSPEND 1 for 2", "start 2 on [0]"]
        );
        assert_eq!(state(&s, 1), JobState::Suspended);
        assert_eq!(s.job(JobId(1)).unwrap().suspended, Some(100));
        assert_eq!(s.suspended_for(JobId(1)), Some(JobId(2)));
        assert_eq!(s.job(JobId(2)).unwrap().start, Some(100));

        assert!(arrive(&mut s, job(3).procs(4).partition(LOW).time(10), 150).is_empty());
        assert!(
            s.schedule(200).is_empty(),
            "nothing happens while job 2 runs"
        );

        assert_eq!(end(&mut s, 2, 400), ["resume 1"]);
        let j1 = s.job(JobId(1)).unwrap();
        assert_eq!(
            (j1.state, j1.suspended, j1.suspended_secs),
            (JobState::Running, None, 300)
        );
        assert_eq!(j1.expected_end(), Some(1300));
        assert_eq!(s.suspended_for(JobId(1)), None);
        assert_eq!(state(&s, 3), JobState::Pending);

        assert_eq!(end(&mut s, 1, 1300), ["start 3 on [0]"]);
    }
}

#[test]
fn a_suspended_job_that_is_cancelled_is_simply_gone() {
    // One node. Low job 1 runs; high job 2 suspends it at 10. Job 1 is cancelled at 20
    // (it held nothing); when job 2 ends at 50, low job 3 starts there.
    let mut s = Scheduler::new(tiers(1, 4), backfill(10_000));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(HIGH).time(100), 10);
    assert!(arrive(&mut s, job(3).procs(4).partition(LOW).time(100), 15).is_empty());
    assert_eq!(
        s.job_ended(JobId(1), 20).map(|j| j.state),
        Some(JobState::Suspended)
    );
    assert!(s.job(JobId(1)).is_none());
    assert!(s.schedule(20).is_empty());
    assert_eq!(end(&mut s, 2, 50), ["start 3 on [0]"]);
}

#[test]
fn suspension_takes_only_what_the_high_job_needs_and_the_youngest() {
    // Two nodes of 4 CPUs: low job 1 on node 0 from 0, low job 2 on node 1 from 50.
    // At 100 a one-node high job suspends job 2 (the younger) alone and runs on node 1;
    // job 1 runs on untouched.
    let mut s = Scheduler::new(tiers(2, 4), backfill(10_000));
    arrive(
        &mut s,
        job(1).procs(4).one_node().partition(LOW).time(1000),
        0,
    );
    arrive(
        &mut s,
        job(2).procs(4).one_node().partition(LOW).time(1000),
        50,
    );
    assert_eq!(
        arrive(
            &mut s,
            job(4).procs(4).one_node().partition(HIGH).time(100),
            100
        ),
        ["SUSPEND 2 for 4", "start 4 on [1]"]
    );
    assert_eq!(state(&s, 1), JobState::Running);
    assert_eq!(state(&s, 2), JobState::Suspended);
    assert_eq!(end(&mut s, 4, 200), ["resume 2"]);
    assert_eq!(s.job(JobId(2)).unwrap().expected_end(), Some(1150));
}

#[test]
fn an_operator_cannot_resume_a_job_suspended_by_preemption_nor_suspend_it_again() {
    let mut s = Scheduler::new(tiers(1, 4), backfill(10_000));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(HIGH).time(100), 10);
    assert!(!s.resume(JobId(1), 20), "its resources are job 2's");
    assert!(!s.suspend(JobId(1), 20));
    assert_eq!(state(&s, 1), JobState::Suspended);
}

#[test]
fn a_suspended_job_restored_after_a_restart_resumes_when_its_preemptor_ends() {
    // The caller restarted: high job 2 runs on node 0 (from 100), low job 1 (started at
    // 0) stands suspended for it since 100. Job 2 ends at 300: job 1 resumes, after
    // 200 s suspended, and ends at 1200.
    let mut s = Scheduler::new(tiers(1, 4), backfill(10_000));
    arrive(&mut s, job(2).procs(4).partition(HIGH).time(500), 100);
    let spec = job(1).procs(4).partition(LOW).time(1000).spec();
    let nodes = s.job(JobId(2)).unwrap().alloc.clone().unwrap().nodes;
    s.restore_suspended(spec, 0, nodes, 100, 0, JobId(2))
        .unwrap();
    assert_eq!(state(&s, 1), JobState::Suspended);
    assert!(s.schedule(150).is_empty());
    assert_eq!(end(&mut s, 2, 300), ["resume 1"]);
    assert_eq!(s.job(JobId(1)).unwrap().expected_end(), Some(1200));
}
