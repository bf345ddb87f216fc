//! Preemption stories: the machine and its partitions (or QOS), the running jobs, the
//! job that arrives, and the exact victims, times and starts — driven the way the
//! controller drives the core: every job is reported ended by the caller, preempted
//! ones after their grace time.
//!
//! Unless a story says otherwise: partition 0 `low` (`PriorityTier=1`) and partition 1
//! `high` (`PriorityTier=10`) both over every node, `PreemptType=preempt/partition_prio`,
//! `PreemptMode=REQUEUE`, no grace, no exempt time.

mod common;

use common::*;
use sluice_core::limits::{AccountLimits, Qos, QosId};
use sluice_core::{
    Cluster, Decision, JobId, Partition, Pass, PendingReason, PreemptConfig, PreemptMode,
    PreemptType, Scheduler, Secs, Time,
};

const LOW: u16 = 0;
const HIGH: u16 = 1;

/// `nodes` nodes of `cpus` processors in `low` and `high`.
fn tiers(nodes: u32, cpus: u32) -> Cluster {
    let mut c = cluster(nodes, cpus);
    c.partitions[0].name = "low".into();
    let mut high = Partition::new("high", c.partitions[0].nodes.clone());
    high.priority_tier = 10;
    c.partitions.push(high);
    c.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Requeue,
        exempt_time: 0,
        gang: false,
        time_slice: 0,
    };
    c
}

fn sched(c: Cluster) -> Scheduler {
    Scheduler::new(c, backfill(10_000))
}

/// Submits `j` at `t` and runs a pass; returns its decisions.
fn arrive(s: &mut Scheduler, j: JobBuilder, t: Time) -> Vec<Decision> {
    s.submit(j.submit(t).spec(), t).unwrap();
    s.schedule(t)
}

/// Reports `id` ended at `t` and runs a pass; returns its decisions.
fn end(s: &mut Scheduler, id: u64, t: Time) -> Vec<Decision> {
    assert!(
        s.job_ended(JobId(id), t).is_some(),
        "job {id} was not running"
    );
    s.schedule(t)
}

/// The preemptions among `d`: (victim, by, mode, grace).
fn preemptions(d: &[Decision]) -> Vec<(u64, u64, PreemptMode, Secs)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Preempt {
                victim,
                by,
                mode,
                grace,
                ..
            } => Some((victim.0, by.0, *mode, *grace)),
            _ => None,
        })
        .collect()
}

/// The starts among `d`: (job, pass, nodes).
fn starts(d: &[Decision]) -> Vec<(u64, Pass, Vec<u32>)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start {
                job, alloc, pass, ..
            } => Some((job.0, *pass, alloc.nodes.iter().map(|a| a.node.0).collect())),
            _ => None,
        })
        .collect()
}

fn reason(s: &Scheduler, id: u64) -> PendingReason {
    s.job(JobId(id)).unwrap().reason
}

const RQ: PreemptMode = PreemptMode::Requeue;

#[test]
fn a_high_tier_job_requeues_the_youngest_low_job_and_takes_its_node() {
    // Two 4-CPU nodes. Low job 1 fills node 0 at 0, low job 2 fills node 1 at 50.
    // At 100 a 4-CPU high job arrives: job 2 (the younger) is preempted; the high job
    // waits (Resources) until job 2 is reported gone, then starts on node 1.
    let mut s = sched(tiers(2, 4));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(LOW).time(1000), 50);
    let d = arrive(&mut s, job(3).procs(4).one_node().partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(2, 3, RQ, 0)]);
    assert!(starts(&d).is_empty());
    assert_eq!(reason(&s, 3), PendingReason::Resources);
    assert_eq!(s.preemptor_of(JobId(2)), Some(JobId(3)));
    // A second pass during the drain preempts nothing more.
    assert!(s.schedule(101).is_empty());
    let d = end(&mut s, 2, 102);
    assert_eq!(starts(&d), vec![(3, Pass::Preempt, vec![1])]);
    assert_eq!(s.job(JobId(3)).unwrap().start, Some(102));
}

#[test]
fn a_preemption_handed_back_after_a_restart_is_carried_on_not_chosen_again() {
    // Two 4-CPU nodes, low jobs 1 (node 0, from 0) and 2 (node 1, from 50). Before the
    // restart high job 3 had chosen job 1 (whatever the rule would choose now); the
    // restarted caller hands that back before job 3 is queued again at 100.
    let mut s = sched(tiers(2, 4));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(LOW).time(1000), 50);
    s.restore_preemption(JobId(3), &[JobId(1)]);
    // Job 3 preempts nothing more: it waits for job 1.
    let d = arrive(&mut s, job(3).procs(4).one_node().partition(HIGH), 100);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(reason(&s, 3), PendingReason::Resources);
    assert_eq!(s.preemptor_of(JobId(1)), Some(JobId(3)));
    assert_eq!(s.preemptor_of(JobId(2)), None);
    // Job 1 gone at 110: job 3 starts on node 0, what job 1 freed.
    let d = end(&mut s, 1, 110);
    assert_eq!(starts(&d), vec![(3, Pass::Preempt, vec![0])]);
    // A victim no longer running is not handed back.
    s.restore_preemption(JobId(9), &[JobId(1)]);
    assert_eq!(s.preemptor_of(JobId(1)), None);
}

#[test]
fn a_job_being_ended_keeps_its_node_and_is_nobodys_victim() {
    // Two 4-CPU nodes. Low job 1 fills node 0 at 0, low job 2 fills node 1 at 50. At
    // 60 job 2 is cancelled: its processes are told to end (COMPLETING), and it holds
    // node 1 until they are gone. At 100 a 4-CPU high job arrives: it preempts job 1,
    // the only running job not already ending, although job 2 is the younger. Job 2's
    // processes are gone at 105: the high job starts there, on node 1; job 1 is still
    // being drained for it and its end at 110 frees node 0 for nobody waiting.
    let mut s = sched(tiers(2, 4));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(LOW).time(1000), 50);
    assert!(s.mark_ending(JobId(2)));
    assert!(s.is_ending(JobId(2)));
    assert!(s.schedule(60).is_empty());
    let d = arrive(&mut s, job(3).procs(4).one_node().partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(1, 3, RQ, 0)]);
    assert!(starts(&d).is_empty(), "node 1 is still job 2's");
    let d = end(&mut s, 2, 105);
    assert!(!s.is_ending(JobId(2)));
    assert_eq!(starts(&d), vec![(3, Pass::Main, vec![1])]);
    assert!(end(&mut s, 1, 110).is_empty());
    // Only a running job can be marked.
    assert!(!s.mark_ending(JobId(2)));
}

#[test]
fn equal_tiers_and_mode_off_preempt_nothing() {
    let mut c = tiers(1, 4);
    c.partitions[HIGH as usize].priority_tier = 1;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(4).partition(LOW), 0);
    let d = arrive(&mut s, job(2).procs(4).partition(HIGH), 10);
    assert!(d.is_empty());

    let mut c = tiers(1, 4);
    c.partitions[LOW as usize].preempt_mode = Some(PreemptMode::Off);
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(4).partition(LOW), 0);
    let d = arrive(&mut s, job(2).procs(4).partition(HIGH), 10);
    assert!(d.is_empty());
    assert_eq!(reason(&s, 2), PendingReason::Resources);
}

#[test]
fn the_victims_partition_sets_mode_and_grace() {
    // low: PreemptMode=CANCEL, GraceTime=30.
    let mut c = tiers(1, 4);
    c.partitions[LOW as usize].preempt_mode = Some(PreemptMode::Cancel);
    c.partitions[LOW as usize].grace_time = 30;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(4).partition(LOW), 0);
    let d = arrive(&mut s, job(2).procs(4).partition(HIGH), 10);
    assert_eq!(preemptions(&d), vec![(1, 2, PreemptMode::Cancel, 30)]);
}

#[test]
fn grace_holds_what_the_victims_free_for_the_preemptor() {
    // One 4-CPU node, low GraceTime=30. Low jobs 1 and 2 (2 CPUs each) run from 0; low
    // job 4 (1 CPU) waits from 5. At 10 a 4-CPU high job needs both victims. Job 1
    // catches its signal and leaves at 20: its 2 CPUs are held, job 4 does not get
    // them. Job 2 is killed at its grace's end, 40: job 3 starts at 40.
    let mut c = tiers(1, 4);
    c.partitions[LOW as usize].grace_time = 30;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(2).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(2).partition(LOW).time(1000), 0);
    arrive(&mut s, job(4).procs(1).partition(LOW).time(1000), 5);
    assert_eq!(reason(&s, 4), PendingReason::Resources);
    let d = arrive(&mut s, job(3).procs(4).partition(HIGH), 10);
    assert_eq!(preemptions(&d), vec![(2, 3, RQ, 30), (1, 3, RQ, 30)]);
    let d = end(&mut s, 1, 20);
    assert!(d.is_empty(), "nothing starts on held CPUs: {d:?}");
    assert_eq!(s.job(JobId(4)).unwrap().start, None);
    assert!(s.schedule(30).is_empty());
    let d = end(&mut s, 2, 40);
    assert_eq!(starts(&d), vec![(3, Pass::Preempt, vec![0])]);
    // Job 4 waits for the high job's end.
    let d = end(&mut s, 3, 140);
    assert_eq!(starts(&d), vec![(4, Pass::Main, vec![0])]);
}

#[test]
fn a_preemptor_cancelled_during_the_grace_gives_the_held_resources_back() {
    let mut c = tiers(1, 4);
    c.partitions[LOW as usize].grace_time = 30;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(2).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(2).partition(LOW).time(1000), 0);
    let d = arrive(&mut s, job(3).procs(4).partition(HIGH), 10);
    assert_eq!(preemptions(&d).len(), 2);
    assert!(end(&mut s, 1, 15).is_empty());
    s.cancel_pending(JobId(3), 16);
    // The next pass gives job 1's CPUs back: job 4 starts there.
    let d = arrive(&mut s, job(4).procs(2).partition(LOW), 17);
    assert_eq!(starts(&d), vec![(4, Pass::Main, vec![0])]);
}

#[test]
fn the_fewest_victims_win_over_younger_ones() {
    // Node 0: low jobs 1 (from 0) and 2 (from 10), 2 CPUs each. Node 1: low job 3
    // (from 5), 4 CPUs. A 4-CPU one-node high job at 100 preempts job 3 alone rather
    // than the two younger-on-average jobs 1 and 2.
    let mut s = sched(tiers(2, 4));
    arrive(
        &mut s,
        job(1).procs(2).on(&[0]).partition(LOW).time(1000),
        0,
    );
    arrive(
        &mut s,
        job(3).procs(4).on(&[1]).partition(LOW).time(1000),
        5,
    );
    arrive(
        &mut s,
        job(2).procs(2).on(&[0]).partition(LOW).time(1000),
        10,
    );
    let d = arrive(&mut s, job(4).procs(4).one_node().partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(3, 4, RQ, 0)]);
    let d = end(&mut s, 3, 100);
    assert_eq!(starts(&d), vec![(4, Pass::Preempt, vec![1])]);
}

#[test]
fn never_more_victims_than_needed_and_the_youngest_of_them() {
    // One 4-CPU node with four 1-CPU low jobs started at 0, 10, 20 and 30. A 2-CPU high
    // job preempts the two youngest (4 and 3) and no more.
    let mut s = sched(tiers(1, 4));
    for (id, t) in [(1, 0), (2, 10), (3, 20), (4, 30)] {
        arrive(&mut s, job(id).partition(LOW).time(1000), t);
    }
    let d = arrive(&mut s, job(5).procs(2).partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(4, 5, RQ, 0), (3, 5, RQ, 0)]);
}

#[test]
fn jobs_running_less_than_the_exempt_time_are_spared() {
    // PreemptExemptTime=60. Job 2 (from 50) has run 50 s at 100: job 1 goes instead.
    let mut c = tiers(2, 4);
    c.preempt.exempt_time = 60;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(LOW).time(1000), 50);
    let d = arrive(&mut s, job(3).procs(4).one_node().partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(1, 3, RQ, 0)]);
    // Had both been younger than 60 s, nothing would have been preempted.
    let mut c = tiers(2, 4);
    c.preempt.exempt_time = 60;
    let mut s = sched(c);
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    arrive(&mut s, job(2).procs(4).partition(LOW).time(1000), 50);
    assert!(arrive(&mut s, job(3).procs(4).one_node().partition(HIGH), 59).is_empty());
}

#[test]
fn only_jobs_on_the_preemptors_nodes_are_victims_in_overlapping_partitions() {
    // low over nodes 0-1, high over node 1 only. Job 1 (node 1, from 0) is older than
    // job 2 (node 0, from 10), but only job 1 stands on high's node.
    let mut c = tiers(2, 4);
    c.partitions[HIGH as usize].nodes = vec![sluice_core::NodeId(1)];
    let mut s = sched(c);
    arrive(
        &mut s,
        job(1).procs(4).on(&[1]).partition(LOW).time(1000),
        0,
    );
    arrive(
        &mut s,
        job(2).procs(4).on(&[0]).partition(LOW).time(1000),
        10,
    );
    let d = arrive(&mut s, job(3).procs(4).partition(HIGH), 100);
    assert_eq!(preemptions(&d), vec![(1, 3, RQ, 0)]);
    let d = end(&mut s, 1, 100);
    assert_eq!(starts(&d), vec![(3, Pass::Preempt, vec![1])]);
}

#[test]
fn a_job_that_would_not_fit_even_with_every_victim_gone_preempts_nothing() {
    // Two 4-CPU nodes: low job 1 on node 0, high job 2 on node 1 (not preemptable). An
    // 8-CPU high job could not start with job 1 gone: job 1 keeps running.
    let mut s = sched(tiers(2, 4));
    arrive(&mut s, job(1).procs(4).on(&[0]).partition(LOW), 0);
    arrive(&mut s, job(2).procs(4).on(&[1]).partition(HIGH), 0);
    let d = arrive(&mut s, job(3).procs(8).partition(HIGH), 10);
    assert!(d.is_empty());
}

#[test]
fn qos_preempt_lists_choose_the_victims() {
    // preempt/qos. QOS 1 `normal`, 2 `urgent` (Preempt=scavenger), 3 `scavenger`
    // (PreemptMode=CANCEL, GraceTime=20). One 4-CPU node: job 1 (normal) and job 2
    // (scavenger), 2 CPUs each. An urgent 2-CPU job preempts job 2 only; an urgent
    // 4-CPU job could not start even so, and preempts nothing.
    let mut c = tiers(1, 4);
    c.partitions.truncate(1);
    c.preempt.kind = PreemptType::Qos;
    let mut db = AccountLimits::default();
    db.qos.insert(QosId(1), Qos::default());
    db.qos.insert(
        QosId(2),
        Qos {
            preempt: vec![QosId(3)],
            ..Qos::default()
        },
    );
    db.qos.insert(
        QosId(3),
        Qos {
            preempt_mode: Some(PreemptMode::Cancel),
            grace_time: 20,
            ..Qos::default()
        },
    );
    let mut s = sched(c.clone());
    s.set_account_limits(db.clone());
    arrive(&mut s, job(1).procs(2).acct(None, Some(1)).time(1000), 0);
    arrive(&mut s, job(2).procs(2).acct(None, Some(3)).time(1000), 0);
    assert!(arrive(&mut s, job(5).procs(4).acct(None, Some(2)), 5).is_empty());
    s.cancel_pending(JobId(5), 6);
    let d = arrive(&mut s, job(3).procs(2).acct(None, Some(2)), 10);
    assert_eq!(preemptions(&d), vec![(2, 3, PreemptMode::Cancel, 20)]);
    // A normal job may preempt no one.
    let mut s = sched(c);
    s.set_account_limits(db);
    arrive(&mut s, job(1).procs(4).acct(None, Some(3)).time(1000), 0);
    assert!(arrive(&mut s, job(2).procs(4).acct(None, Some(1)), 10).is_empty());
}

#[test]
fn a_requeued_victim_comes_back_under_its_id_and_runs_after_the_preemptor() {
    let mut s = sched(tiers(1, 4));
    arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 0);
    let d = arrive(&mut s, job(2).procs(4).partition(HIGH).time(100), 10);
    assert_eq!(preemptions(&d), vec![(1, 2, RQ, 0)]);
    let d = end(&mut s, 1, 11);
    assert_eq!(starts(&d), vec![(2, Pass::Preempt, vec![0])]);
    // The caller queues job 1 again, same id: it waits, then runs its full time.
    let d = arrive(&mut s, job(1).procs(4).partition(LOW).time(1000), 11);
    assert!(d.is_empty());
    let d = end(&mut s, 2, 111);
    assert_eq!(starts(&d), vec![(1, Pass::Main, vec![0])]);
}
