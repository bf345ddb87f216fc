//! Heterogeneous jobs: components that start together, or none of them.

mod common;

use common::*;
use sluice_core::{Decision, JobId, JobState, PendingReason, Policy, Scheduler, Time};

use sluice_core::Cluster;

/// The jobs `decisions` start, with their first node, in decision order.
fn started(decisions: &[Decision]) -> Vec<(u64, u32)> {
    decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Start { job, alloc, .. } => Some((job.0, alloc.nodes[0].node.0)),
            _ => None,
        })
        .collect()
}

fn submit_all(s: &mut Scheduler, jobs: &[JobBuilder], now: Time) {
    for j in jobs {
        s.submit(j.spec(), now).expect("accepted");
    }
}

fn state(s: &Scheduler, id: u64) -> Option<(JobState, PendingReason)> {
    s.job(JobId(id)).map(|j| (j.state, j.reason))
}

#[test]
fn a_hetjob_starts_whole_or_not_at_all() {
    // Two nodes of 4 CPUs, Slurm's backfill.
    // t=0   job 1 takes all of node 0 until 100.
    // t=0   hetjob 2+3: component 2 wants 2 CPUs, component 3 wants 4 CPUs on one node.
    //       Component 2 alone would fit on node 1 at once, but then component 3 would
    //       not fit anywhere: neither starts, and both wait for Resources.
    // t=100 job 1 ends: both components start in the same pass, on different nodes.
    for policy in [
        backfill(3600),
        Policy::Fcfs,
        Policy::Easy,
        Policy::Conservative,
    ] {
        let mut s = Scheduler::new(cluster(2, 4), policy.clone());
        submit_all(&mut s, &[job(1).procs(4).one_node().time(100)], 0);
        assert_eq!(started(&s.schedule(0)), vec![(1, 0)]);
        submit_all(
            &mut s,
            &[
                job(2).procs(2).one_node().time(50),
                job(3).procs(4).one_node().time(50),
            ],
            0,
        );
        s.set_het_group(&[JobId(2), JobId(3)]);
        assert_eq!(started(&s.schedule(1)), vec![], "{policy:?}");
        assert_eq!(s.schedule(2).len(), 0, "{policy:?}");
        assert_eq!(
            state(&s, 2),
            Some((JobState::Pending, PendingReason::Resources)),
            "{policy:?}"
        );
        assert_eq!(
            state(&s, 3),
            Some((JobState::Pending, PendingReason::Resources)),
            "{policy:?}"
        );

        s.job_ended(JobId(1), 100);
        let now = started(&s.schedule(100));
        assert_eq!(now.len(), 2, "{policy:?}: {now:?}");
        assert_eq!(now[0].0, 2, "the leader first");
        assert_eq!(now[1].0, 3);
        assert_ne!(now[0].1, now[1].1, "4 + 2 CPUs need both nodes");
    }
}

#[test]
fn a_ready_hetjob_starts_at_once_with_every_component() {
    // Two idle nodes of 4 CPUs: a hetjob of three components (4, 2 and 2 CPUs) starts
    // at its first pass, all three together.
    let mut s = Scheduler::new(cluster(2, 4), backfill(3600));
    submit_all(
        &mut s,
        &[
            job(1).procs(4).one_node(),
            job(2).procs(2).one_node(),
            job(3).procs(2).one_node(),
        ],
        0,
    );
    s.set_het_group(&[JobId(1), JobId(2), JobId(3)]);
    let now = started(&s.schedule(0));
    assert_eq!(now.iter().map(|s| s.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(
        now[1].1, now[2].1,
        "the two small ones share the other node"
    );
    assert_ne!(now[0].1, now[1].1);
}

#[test]
fn backfill_reserves_for_every_component_and_keeps_later_jobs_out_of_the_way() {
    // Two nodes of 4 CPUs, Slurm's backfill.
    // t=0   job 1 takes 6 CPUs (all of one node, two of the other) until 100.
    // t=1   hetjob 2+3 (4 CPUs on one node each, 100 s): reserved at 100, on both nodes.
    // t=2   job 4 (2 CPUs, 50 s) ends before 100: backfilled into the two free CPUs.
    //       job 5 (2 CPUs, 200 s) would hold CPUs a component is planned on: it waits.
    // t=100 job 1 ends: both components start; job 5 starts when they end, at 200.
    let mut s = Scheduler::new(cluster(2, 4), backfill(3600));
    submit_all(&mut s, &[job(1).procs(6).time(100)], 0);
    assert_eq!(started(&s.schedule(0)).len(), 1);
    submit_all(
        &mut s,
        &[
            job(2).procs(4).one_node().time(100).submit(1),
            job(3).procs(4).one_node().time(100).submit(1),
        ],
        1,
    );
    s.set_het_group(&[JobId(2), JobId(3)]);
    s.schedule(1);
    assert_eq!(s.job(JobId(2)).unwrap().planned_start, Some(100));
    assert_eq!(s.job(JobId(3)).unwrap().planned_start, Some(100));
    submit_all(
        &mut s,
        &[
            job(4).procs(2).one_node().time(50).submit(2),
            job(5).procs(2).one_node().time(200).submit(2),
        ],
        2,
    );
    let now = started(&s.schedule(2));
    assert_eq!(now.iter().map(|s| s.0).collect::<Vec<_>>(), vec![4]);
    s.job_ended(JobId(4), 52);
    assert_eq!(started(&s.schedule(52)), vec![]);
    s.job_ended(JobId(1), 100);
    let now = started(&s.schedule(100));
    assert_eq!(now.iter().map(|s| s.0).collect::<Vec<_>>(), vec![2, 3]);
    s.job_ended(JobId(2), 200);
    s.job_ended(JobId(3), 200);
    let now = started(&s.schedule(200));
    assert_eq!(now.iter().map(|s| s.0).collect::<Vec<_>>(), vec![5]);
}

#[test]
fn a_component_cancelled_with_its_group_leaves_nothing_behind() {
    let mut s = Scheduler::new(cluster(1, 4), backfill(3600));
    submit_all(&mut s, &[job(1).procs(4).time(100)], 0);
    s.schedule(0);
    submit_all(&mut s, &[job(2).procs(1), job(3).procs(1)], 1);
    s.set_het_group(&[JobId(2), JobId(3)]);
    s.schedule(1);
    assert_eq!(s.het_group(JobId(3)), Some(&[JobId(2), JobId(3)][..]));
    s.cancel_pending(JobId(2), 2);
    s.cancel_pending(JobId(3), 2);
    assert_eq!(s.het_group(JobId(2)), None);
    assert_eq!(s.pending_count(), 0);
}

/// A story on `cluster`: job 1 (`first`) starts; hetjob 2+3 (`a`, `b`), each of which
/// fits alone now but not beside the other, waits; job 4 (`small`, ending before job 1)
/// is submitted next. Returns the jobs the pass after job 4's submission starts.
fn trial_story(
    cluster: Cluster,
    policy: Policy,
    first: JobBuilder,
    a: JobBuilder,
    b: JobBuilder,
    small: JobBuilder,
) -> Vec<u64> {
    let mut s = Scheduler::new(cluster, policy.clone());
    submit_all(&mut s, &[first], 0);
    assert_eq!(started(&s.schedule(0)).len(), 1, "{policy:?}");
    submit_all(&mut s, &[a, b], 1);
    s.set_het_group(&[JobId(2), JobId(3)]);
    assert_eq!(started(&s.schedule(1)), vec![], "{policy:?}");
    assert_eq!(
        state(&s, 3),
        Some((JobState::Pending, PendingReason::Resources)),
        "{policy:?}"
    );
    submit_all(&mut s, &[small], 2);
    started(&s.schedule(2)).iter().map(|j| j.0).collect()
}

#[test]
fn trying_a_hetjob_that_does_not_fit_together_leaves_nothing_claimed() {
    // Two nodes of 4 CPUs.
    // t=0  job 1 takes 2 CPUs of node 0 until 100: node 0 has 2 CPUs left, node 1 all 4.
    // t=1  hetjob 2+3, 4 CPUs on one node each: each alone fits on node 1, together
    //      they do not. The pass tries the group (component 2 placed on node 1, then
    //      component 3 finds no room) and gives everything back: neither starts.
    // t=2  job 4 (4 CPUs on one node, 50 s, done before job 1 ends) starts on node 1 at
    //      once: nothing of the failed try stayed claimed there.
    for policy in [backfill(3600), Policy::Easy, Policy::Conservative] {
        let now = trial_story(
            cluster(2, 4),
            policy.clone(),
            job(1).procs(2).one_node().time(100),
            job(2).procs(4).one_node().time(100).submit(1),
            job(3).procs(4).one_node().time(100).submit(1),
            job(4).procs(4).one_node().time(50).submit(2),
        );
        assert_eq!(now, vec![4], "{policy:?}");
    }
}

#[test]
fn trying_a_hetjob_gives_back_the_gpus_it_tried() {
    // The same story with GPUs: two nodes of 4 CPUs and 2 GPUs. Job 1 holds one GPU of
    // node 0 until 100; components 2 and 3 want both GPUs of one node each (each fits
    // alone on node 1, not together); job 4 wants both GPUs of one node for 50 s and
    // starts on node 1 at once: the GPUs the try chose for component 2 were given back.
    for policy in [backfill(3600), Policy::Easy, Policy::Conservative] {
        let now = trial_story(
            gpu_cluster(&[(4, 2), (4, 2)]),
            policy.clone(),
            job(1).procs(1).one_node().gpus(1).time(100),
            job(2).procs(1).one_node().gpus(2).time(100).submit(1),
            job(3).procs(1).one_node().gpus(2).time(100).submit(1),
            job(4).procs(1).one_node().gpus(2).time(50).submit(2),
        );
        assert_eq!(now, vec![4], "{policy:?}");
    }
}

#[test]
fn a_hetjob_takes_no_node_kept_for_a_waiting_job_of_another_partition() {
    // Nodes n0 and n1 of 4 CPUs; partition 0 holds both, `short` only n0. Job 1 holds
    // n1 whole for 600 s; job 2 (partition 0, both nodes whole) waits for it, and the
    // main pass keeps both nodes for it. Hetjob 3+4, of `short`, lower priority and
    // 1800 s long, would fit on n0 now: it starts neither in the main pass (n0 is kept)
    // nor by backfilling (it would delay job 2).
    let mut c = cluster(2, 4);
    c.partitions.push(sluice_core::Partition::new(
        "short",
        vec![sluice_core::NodeId(0)],
    ));
    let mut s = Scheduler::new(c, backfill(10_000));
    submit_all(&mut s, &[job(1).procs(4).on(&[1]).time(600)], 0);
    assert_eq!(started(&s.schedule(0)), vec![(1, 1)]);
    submit_all(
        &mut s,
        &[
            job(2).procs(8).nodes(2).time(600).priority(100),
            job(3)
                .procs(1)
                .one_node()
                .time(1800)
                .partition(1)
                .priority(10),
            job(4)
                .procs(1)
                .one_node()
                .time(1800)
                .partition(1)
                .priority(10),
        ],
        1,
    );
    s.set_het_group(&[JobId(3), JobId(4)]);
    assert_eq!(started(&s.schedule(1)), vec![]);
    assert_eq!(
        state(&s, 2),
        Some((JobState::Pending, PendingReason::Resources))
    );
    assert_eq!(state(&s, 3).map(|(st, _)| st), Some(JobState::Pending));
    // Job 1 ends: job 2 takes both nodes first.
    s.job_ended(JobId(1), 300);
    assert_eq!(started(&s.schedule(300)), vec![(2, 0)]);
}
