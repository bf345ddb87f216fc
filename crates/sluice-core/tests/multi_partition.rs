//! Jobs submitted to several partitions (`sbatch -p short,batch`): stories of where
//! they start, what they wait for, and what they hold up.
//!
//! Unless a story says otherwise: nodes n0 and n1 of 4 CPUs; partition 0 `batch` holds
//! both, partition 1 `short` only n0; Slurm's backfill planning to the second.

mod common;

use common::*;
use sluice_core::{
    Cluster, Decision, JobId, NodeId, Partition, PartitionId, PendingReason, Policy, Scheduler,
    Time,
};

const BATCH: PartitionId = PartitionId(0);
const SHORT: PartitionId = PartitionId(1);

fn two_partitions() -> Cluster {
    let mut c = cluster(2, 4);
    c.partitions.push(Partition::new("short", vec![NodeId(0)]));
    c
}

/// The jobs `decisions` start, with the nodes each starts on.
fn started(decisions: &[Decision]) -> Vec<(u64, Vec<u32>)> {
    decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Start { job, alloc, .. } => Some((
                job.0,
                alloc.nodes.iter().map(|a| a.node.0).collect::<Vec<_>>(),
            )),
            _ => None,
        })
        .collect()
}

/// short's MaxTime is 30 s, and job 1 holds both nodes from 0 to 600.
fn full_and_short_30s() -> Scheduler {
    let mut c = two_partitions();
    c.partitions[1].max_time = Some(30);
    let mut s = Scheduler::new(c, backfill(10_000));
    s.submit(job(1).procs(8).nodes(2).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    s
}

/// Submits `j` at `t` to the partitions `list` (its own being the first).
fn submit_in(s: &mut Scheduler, j: JobBuilder, list: &[PartitionId], t: Time) {
    let id = j.spec().id;
    s.submit(j.spec(), t).unwrap();
    assert!(s.set_partitions(id, list, t));
}

fn partition(s: &Scheduler, id: u64) -> PartitionId {
    s.job(JobId(id)).unwrap().spec.partition
}

#[test]
fn a_job_of_two_partitions_starts_in_the_second_when_the_first_is_full() {
    // Job 1 fills n0, short's only node. Job 2 lists short first, then batch: it
    // starts at once on n1, in batch, and says so.
    let mut s = Scheduler::new(two_partitions(), backfill(10_000));
    s.submit(job(1).procs(4).time(600).partition(1).spec(), 0)
        .unwrap();
    assert_eq!(started(&s.schedule(0)), [(1, vec![0])]);
    s.submit(job(2).procs(4).time(60).partition(1).spec(), 1)
        .unwrap();
    assert!(s.set_partitions(JobId(2), &[SHORT, BATCH], 1));
    assert_eq!(s.partitions_of(JobId(2)), Some(&[SHORT, BATCH][..]));
    assert_eq!(started(&s.schedule(1)), [(2, vec![1])]);
    assert_eq!(partition(&s, 2), BATCH);
}

#[test]
fn a_job_that_fits_in_its_first_partition_starts_there() {
    // Both nodes idle: job 1 of `short,batch` starts in short (n0), as listed.
    let mut s = Scheduler::new(two_partitions(), backfill(10_000));
    submit_in(
        &mut s,
        job(1).procs(2).time(60).partition(1),
        &[SHORT, BATCH],
        0,
    );
    assert_eq!(started(&s.schedule(0)), [(1, vec![0])]);
    assert_eq!(partition(&s, 1), SHORT);
}

#[test]
fn a_job_fitting_nowhere_waits_in_its_first_partition_and_holds_up_both() {
    // Job 1 takes both nodes until 600. Job 2 (short,batch, 4 CPUs) fits nowhere:
    // it waits for Resources, in short as listed. Job 3 (batch, 1 CPU, 1000 s) behind
    // it would fit nowhere now either. Job 4 of batch and job 5 of short, submitted
    // after job 2, wait on Priority: job 2 blocks both of its partitions.
    let mut s = Scheduler::new(two_partitions(), Policy::Fcfs);
    s.submit(job(1).procs(8).nodes(2).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    submit_in(
        &mut s,
        job(2).procs(4).time(60).partition(1),
        &[SHORT, BATCH],
        1,
    );
    s.schedule(1);
    let reason = |s: &Scheduler, id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(&s, 2), PendingReason::Resources);
    assert_eq!(partition(&s, 2), SHORT);

    // Job 1 ends: job 2 starts in short, on n0, the first it lists.
    s.job_ended(JobId(1), 5);
    assert_eq!(started(&s.schedule(5)), [(2, vec![0])]);
}

#[test]
fn the_main_pass_blocks_every_partition_the_job_was_tried_in() {
    // Job 1 takes both nodes until 600. Job 2 of short,batch waits; job 3 of batch and
    // job 4 of short, behind it, wait on Priority (backfill is not due before 100 s).
    let mut s = Scheduler::new(two_partitions(), backfill(10_000));
    s.submit(job(1).procs(8).nodes(2).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    submit_in(
        &mut s,
        job(2).procs(4).time(60).partition(1),
        &[SHORT, BATCH],
        1,
    );
    s.submit(job(3).procs(4).time(60).spec(), 1).unwrap();
    s.submit(job(4).procs(4).time(60).partition(1).spec(), 1)
        .unwrap();
    s.schedule(1);
    let reason = |id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(2), PendingReason::Resources);
    assert_eq!(reason(3), PendingReason::Priority);
    assert_eq!(reason(4), PendingReason::Priority);
}

#[test]
fn backfill_reserves_a_job_of_two_partitions_where_it_starts_soonest() {
    // Job 1 holds n0 until 1000, job 2 holds n1 until 300. Job 3 (short,batch, 4
    // CPUs) can start at 300 on n1 in batch, long before n0 frees at 1000: the
    // backfill pass plans it there, and it starts there at 300.
    let mut s = Scheduler::new(two_partitions(), backfill(10_000));
    s.submit(job(1).procs(4).time(1000).partition(1).spec(), 0)
        .unwrap();
    s.submit(job(2).procs(4).time(300).spec(), 0).unwrap();
    assert_eq!(started(&s.schedule(0)), [(1, vec![0]), (2, vec![1])]);
    submit_in(
        &mut s,
        job(3).procs(4).time(60).partition(1),
        &[SHORT, BATCH],
        1,
    );
    s.schedule(1);
    let j3 = s.job(JobId(3)).unwrap();
    assert_eq!(j3.planned_start, Some(300));
    assert_eq!(j3.alloc.as_ref().map(|a| a.nodes[0].node), Some(NodeId(1)));
    s.job_ended(JobId(2), 300);
    assert_eq!(started(&s.schedule(300)), [(3, vec![1])]);
    assert_eq!(partition(&s, 3), BATCH);
}

#[test]
fn a_partition_whose_limits_refuse_the_job_is_passed_over() {
    // short's MaxTime is 30 s. Job 1 of short,batch asks for 60 s: short would leave
    // it pending on PartitionTimeLimit, so it runs in batch, on n0, the first node.
    let mut c = two_partitions();
    c.partitions[1].max_time = Some(30);
    let mut s = Scheduler::new(c, backfill(10_000));
    submit_in(
        &mut s,
        job(1).procs(1).time(60).partition(1),
        &[SHORT, BATCH],
        0,
    );
    assert_eq!(started(&s.schedule(0)), [(1, vec![0])]);
    assert_eq!(partition(&s, 1), BATCH);

    // When every partition refuses it, the job gets the reason of the last it was
    // tried in, as Slurm's last queue entry of the job leaves it: batch's MinNodes.
    let mut c = two_partitions();
    c.partitions[0].min_nodes = 2;
    c.partitions[1].max_time = Some(30);
    let mut s = Scheduler::new(c, backfill(10_000));
    submit_in(
        &mut s,
        job(2).procs(1).time(60).partition(1),
        &[SHORT, BATCH],
        0,
    );
    assert!(started(&s.schedule(0)).is_empty());
    let j = s.job(JobId(2)).unwrap();
    assert_eq!(j.reason, PendingReason::PartitionNodeLimit);
    assert_eq!(j.spec.partition, BATCH);
}

#[test]
fn a_job_waiting_on_resources_in_one_partition_and_refused_by_the_last_says_the_last() {
    // Slurm 22.05 (compat scenario 252): n0 and n1 full; job 3 of batch,short asks
    // for 60 s where short allows 30: it waits with short's PartitionTimeLimit.
    let mut s = full_and_short_30s();
    submit_in(&mut s, job(3).procs(1).time(60), &[BATCH, SHORT], 1);
    s.schedule(1);
    let j = s.job(JobId(3)).unwrap();
    assert_eq!(j.reason, PendingReason::PartitionTimeLimit);
    assert_eq!(j.spec.partition, BATCH);
}

#[test]
fn a_higher_tier_partition_is_tried_first_and_sets_the_queue_place() {
    // short has PriorityTier 10. Job 1 (batch) is submitted first, job 2 lists
    // batch,short: it takes short's tier, goes ahead of job 1 and is tried in short
    // first, so it gets n0; job 1 then starts on n1.
    let mut c = two_partitions();
    c.partitions[1].priority_tier = 10;
    let mut s = Scheduler::new(c, backfill(10_000));
    s.submit(job(1).procs(4).time(60).spec(), 1).unwrap();
    submit_in(&mut s, job(2).procs(4).time(60), &[BATCH, SHORT], 1);
    assert_eq!(started(&s.schedule(1)), [(2, vec![0]), (1, vec![1])]);
    assert_eq!(partition(&s, 2), SHORT);
}

#[test]
fn one_partition_undoes_the_list_and_a_gone_job_forgets_it() {
    let mut s = Scheduler::new(two_partitions(), backfill(10_000));
    submit_in(
        &mut s,
        job(1).procs(1).time(60).partition(1),
        &[SHORT, BATCH, SHORT],
        0,
    );
    assert_eq!(s.partitions_of(JobId(1)), Some(&[SHORT, BATCH][..]));
    s.set_partitions(JobId(1), &[BATCH], 0);
    assert_eq!(s.partitions_of(JobId(1)), None);
    s.set_partitions(JobId(1), &[BATCH, SHORT], 0);
    assert_eq!(partition(&s, 1), BATCH);
    s.cancel_pending(JobId(1), 0);
    assert_eq!(s.partitions_of(JobId(1)), None);
    assert!(!s.set_partitions(JobId(1), &[BATCH, SHORT], 0));
}

#[test]
fn a_job_the_main_pass_does_not_reach_gets_its_last_partitions_limit() {
    // Job 1 holds both nodes; job 2 of batch,short waits and blocks both partitions,
    // so the main pass stops before job 3 (batch,short, 60 s where short allows 30):
    // it says short's PartitionTimeLimit, not Priority, as Slurm 22.05 does. Job 2
    // itself, tried in short after batch kept both nodes, has none left there: Slurm
    // says its nodes are reserved for higher priority partitions (scenario 295).
    let mut s = full_and_short_30s();
    submit_in(&mut s, job(2).procs(1).time(20), &[BATCH, SHORT], 1);
    submit_in(&mut s, job(3).procs(1).time(60), &[BATCH, SHORT], 1);
    s.schedule(1);
    let reason = |id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(2), PendingReason::NodesUnavailable);
    assert_eq!(reason(3), PendingReason::PartitionTimeLimit);
}

#[test]
fn a_job_moved_to_an_exclusive_partition_takes_whole_nodes_there_only() {
    // short is OverSubscribe=EXCLUSIVE. Job 1 (1 CPU) runs on n1 in batch. Job 2 of
    // short,batch (1 CPU) fits nowhere in short (n0 is job 9's); it runs in batch
    // beside job 1, not as a whole-node job.
    use sluice_core::partition_policy::OverSubscribe;
    let mut c = two_partitions();
    c.partitions[1].oversubscribe = OverSubscribe::Exclusive;
    let mut s = Scheduler::new(c, backfill(10_000));
    s.submit(job(9).procs(1).time(600).partition(1).spec(), 0)
        .unwrap();
    assert_eq!(started(&s.schedule(0)), [(9, vec![0])]);
    assert!(s.job(JobId(9)).unwrap().spec.request.exclusive);
    s.submit(job(1).procs(1).time(600).spec(), 1).unwrap();
    assert_eq!(started(&s.schedule(1)), [(1, vec![1])]);
    s.submit(job(2).procs(1).time(60).partition(1).spec(), 2)
        .unwrap();
    assert!(s.job(JobId(2)).unwrap().spec.request.exclusive);
    s.set_partitions(JobId(2), &[SHORT, BATCH], 2);
    assert_eq!(started(&s.schedule(2)), [(2, vec![1])]);
    let j = s.job(JobId(2)).unwrap();
    assert_eq!((j.spec.partition, j.spec.request.exclusive), (BATCH, false));
}
