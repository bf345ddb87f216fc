//! Scheduling scenarios, each a short story with exact expected start times.
//!
//! Conventions: `job(id).procs(p).time(limit).run(actual).submit(t)`; a job runs to its
//! limit unless `run` says otherwise. All times are in seconds. Expected values are
//! worked out by hand from the rules in the module docs of `sluice_core::policy`.

mod common;

use std::collections::BTreeMap;

use common::*;
use sluice_core::{
    Decision, JobId, JobState, NodeId, Partition, Pass, Policy, Scheduler, SubmitError, Time,
};

/// Every distinct planned start a job had while pending, in order, observed after each
/// `schedule` call.
fn planned_history(
    cluster: sluice_core::Cluster,
    policy: Policy,
    jobs: &[JobBuilder],
) -> (Replay, BTreeMap<u64, Vec<Time>>) {
    let mut history: BTreeMap<u64, Vec<Time>> = BTreeMap::new();
    let replay = Harness::new(cluster, policy).run_observed(jobs, |_, _, s| {
        for j in s.pending() {
            if let Some(t) = j.planned_start {
                let h = history.entry(j.id().0).or_default();
                if h.last() != Some(&t) {
                    h.push(t);
                }
            }
        }
    });
    (replay, history)
}

#[test]
fn fcfs_blocks_behind_a_wide_head_job() {
    // One node, 8 CPUs.
    // t=0   job 1 takes 4 CPUs until 100.
    // t=10  job 2 wants all 8: it waits for job 1, until 100.
    // t=20  job 3 wants 2 CPUs for 10 s. Four CPUs are idle, but FCFS never passes the
    //       head: job 3 waits behind job 2 and starts when it ends, at 150.
    let jobs = [
        job(1).procs(4).time(100),
        job(2).procs(8).time(50).submit(10),
        job(3).procs(2).time(10).submit(20),
    ];
    let r = replay_both(cluster(1, 8), Policy::Fcfs, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 150)]);
    assert_eq!(r.finish(3), 160);
    assert!(r.jobs.values().all(|o| o.pass == Pass::Main));
}

#[test]
fn easy_backfills_a_short_job_into_the_hole_and_refuses_one_that_would_delay_the_head() {
    // One node, 8 CPUs.
    // t=0   job 1 takes 4 CPUs until 100.
    // t=10  job 2 (head) wants all 8 for 50 s: its shadow time is 100.
    // t=20  job 3 wants 2 CPUs for 80 s: it ends at 100, no later than the shadow time,
    //       so it is backfilled at once.
    // t=30  job 4 wants 2 CPUs for 90 s: 2 CPUs are idle, but it would end at 120 and
    //       hold CPUs the head needs at 100. Refused; it starts when job 2 ends, at 150.
    // t=100 jobs 1 and 3 end; job 2 starts right on its reservation.
    let jobs = [
        job(1).procs(4).time(100),
        job(2).procs(8).time(50).submit(10),
        job(3).procs(2).time(80).submit(20),
        job(4).procs(2).time(90).submit(30),
    ];
    let mut head_reservation = Vec::new();
    let r = Harness::new(cluster(1, 8), Policy::Easy).run_observed(&jobs, |now, _, s| {
        if let Some(j) = s.job(JobId(2)).filter(|j| j.state == JobState::Pending) {
            head_reservation.push((now, j.planned_start));
        }
    });
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 20), (4, 150)]);
    assert_eq!(r.get(3).pass, Pass::Backfill);
    assert_eq!((r.finish(3), r.finish(4)), (100, 240));
    assert_eq!(
        &head_reservation[..3],
        &[(10, Some(100)), (20, Some(100)), (30, Some(100))],
        "the head holds its shadow time of 100 throughout"
    );
    // The same workload under FCFS: job 3 cannot pass the head.
    let fcfs = replay_both(cluster(1, 8), Policy::Fcfs, &jobs);
    assert_eq!(fcfs.starts(), vec![(1, 0), (2, 100), (3, 150), (4, 150)]);
}

#[test]
fn easy_lets_a_long_narrow_job_use_processors_the_head_does_not_need() {
    // One node, 8 CPUs.
    // t=0   job 1 takes 4 CPUs until 100.
    // t=10  job 2 (head) wants 5 CPUs: shadow time 100, when 8 are free, 3 to spare.
    // t=20  job 3 wants 2 CPUs for 500 s. It runs far past the shadow time, but at 100
    //       there are still 8 - 2 = 6 >= 5 CPUs for the head: backfilled at 20.
    // t=30  job 4 wants 2 CPUs for 500 s. Two CPUs are idle, but with it the head would
    //       find only 4 at 100. Refused.
    // t=100 job 1 ends; job 2 starts on time. t=150 job 2 ends; job 4 starts.
    let jobs = [
        job(1).procs(4).time(100),
        job(2).procs(5).time(50).submit(10),
        job(3).procs(2).time(500).submit(20),
        job(4).procs(2).time(500).submit(30),
    ];
    let r = replay_both(cluster(1, 8), Policy::Easy, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 20), (4, 150)]);
    assert_eq!(r.get(3).pass, Pass::Backfill);
    assert_eq!(r.finish(3), 520);
}

#[test]
fn conservative_reserves_for_every_job_and_moves_reservations_earlier_when_a_job_ends_early() {
    // One node, 8 CPUs.
    // t=0   job 1 takes all 8 with a limit of 100, but really runs 30 s.
    // t=10  job 2 (8 CPUs, 50 s): reserved at 100, after job 1's limit.
    // t=20  job 3 (4 CPUs, 30 s): reserved at 150, after job 2.
    // t=25  job 4 (4 CPUs, 200 s): reserved at 150 too, beside job 3 (4 + 4 = 8).
    // t=30  job 1 ends 70 s early. Every reservation is redone in submission order:
    //       job 2 fits now and starts (30..80); job 3 moves to 80; job 4 to 80 as well.
    // t=80  job 2 ends; jobs 3 and 4 start on their reservations.
    let jobs = [
        job(1).procs(8).time(100).run(30),
        job(2).procs(8).time(50).submit(10),
        job(3).procs(4).time(30).submit(20),
        job(4).procs(4).time(200).submit(25),
    ];
    let (r, history) = planned_history(cluster(1, 8), Policy::Conservative, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 30), (3, 80), (4, 80)]);
    assert_eq!(r.finish(1), 30);
    assert_eq!(
        (r.get(3).pass, r.get(4).pass),
        (Pass::Reservation, Pass::Reservation)
    );
    let expected: BTreeMap<u64, Vec<Time>> =
        [(2, vec![100]), (3, vec![150, 80]), (4, vec![150, 80])].into();
    assert_eq!(history, expected, "reservations only ever move earlier");
}

#[test]
fn conservative_never_moves_a_reservation_later() {
    // One node, 8 CPUs.
    // t=0   job 1 takes 4 CPUs with a limit of 100 (really 10 s); job 2 the other 4
    //       until 500.
    // t=1   job 3 wants all 8 for 50 s: reserved at 500, when job 2 ends.
    // t=2   job 4 wants 4 CPUs for 80 s: reserved at 100 (after job 1's limit), ending
    //       at 180, well before job 3's reservation.
    // t=10  job 1 ends early. Job 3 is re-placed first: job 2 still holds 4 CPUs until
    //       500, so it stays at 500 (never later). Then job 4 fits now and starts.
    let jobs = [
        job(1).procs(4).time(100).run(10),
        job(2).procs(4).time(500),
        job(3).procs(8).time(50).submit(1),
        job(4).procs(4).time(80).submit(2),
    ];
    let (r, history) = planned_history(cluster(1, 8), Policy::Conservative, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 0), (3, 500), (4, 10)]);
    let expected: BTreeMap<u64, Vec<Time>> = [(3, vec![500]), (4, vec![100])].into();
    assert_eq!(history, expected);
    assert_eq!(r.get(3).pass, Pass::Reservation);
}

/// The jobs `decisions` start, in the order they start.
fn started(decisions: &[Decision]) -> Vec<u64> {
    decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Start { job, .. } => Some(job.0),
            _ => None,
        })
        .collect()
}

#[test]
fn conservative_compresses_at_every_end_even_one_at_the_time_limit() {
    // One node, 4 CPUs.
    // t=0   job 1 (2 CPUs, limit 100, really 10 s) and job 2 (2 CPUs, 50 s) start.
    // t=1   job 3 (4 CPUs, 100 s): reserved at 100, when both have ended.
    // t=2   job 4 (2 CPUs, 50 s): reserved at 50 on job 2's CPUs, ahead of job 3.
    // t=10  job 1 ends early. Compression in submission order: job 3 first, while job 4
    //       still holds 50..100 — it stays at 100; then job 4 fits now and starts
    //       (10..60), leaving free the place it held.
    // t=50  job 2 ends exactly at its limit: it frees nothing of its claim, but its end
    //       compresses again and job 3 moves to 60, when job 4 ends. (Compressing only
    //       after early ends, job 3 would wait for 100.)
    // t=60  job 4 ends; job 3 starts.
    let mut s = Scheduler::new(cluster(1, 4), Policy::Conservative);
    let planned = |s: &Scheduler, id| s.job(JobId(id)).unwrap().planned_start;
    s.submit(job(1).procs(2).time(100).spec(), 0).unwrap();
    s.submit(job(2).procs(2).time(50).spec(), 0).unwrap();
    assert_eq!(started(&s.schedule(0)), vec![1, 2]);
    s.submit(job(3).procs(4).time(100).spec(), 1).unwrap();
    assert!(s.schedule(1).is_empty());
    s.submit(job(4).procs(2).time(50).spec(), 2).unwrap();
    assert!(s.schedule(2).is_empty());
    assert_eq!((planned(&s, 3), planned(&s, 4)), (Some(100), Some(50)));
    s.job_ended(JobId(1), 10).unwrap();
    assert_eq!(started(&s.schedule(10)), vec![4]);
    assert_eq!(
        planned(&s, 3),
        Some(100),
        "job 4's old place was taken then"
    );
    s.job_ended(JobId(2), 50).unwrap();
    assert!(s.schedule(50).is_empty());
    assert_eq!(
        planned(&s, 3),
        Some(60),
        "an end at the limit compresses too"
    );
    s.job_ended(JobId(4), 60).unwrap();
    assert_eq!(started(&s.schedule(60)), vec![3]);
}

#[test]
fn conservative_starts_older_reservations_first_at_an_instant() {
    // One node, 4 CPUs.
    // t=0   job 1 (2 CPUs, limit 100, really 50 s) and job 2 (2 CPUs, 50 s) start.
    // t=1   job 3 (2 CPUs, 100 s): reserved at 50 on job 2's CPUs.
    // t=2   job 4 (2 CPUs, 100 s): reserved at 100 on job 1's.
    // t=50  jobs 1 and 2 end. Job 3's reservation comes due, and the compression puts
    //       job 4 at 50 too: job 3 starts first, its reservation being the older, then
    //       job 4. The order matters: it is the order of their ends when those tie
    //       (both at 150 here), and every end compresses the reservations again.
    let mut s = Scheduler::new(cluster(1, 4), Policy::Conservative);
    s.submit(job(1).procs(2).time(100).spec(), 0).unwrap();
    s.submit(job(2).procs(2).time(50).spec(), 0).unwrap();
    assert_eq!(started(&s.schedule(0)), vec![1, 2]);
    s.submit(job(3).procs(2).time(100).spec(), 1).unwrap();
    s.submit(job(4).procs(2).time(100).spec(), 2).unwrap();
    assert!(s.schedule(2).is_empty());
    let planned = |s: &Scheduler, id| s.job(JobId(id)).unwrap().planned_start;
    assert_eq!((planned(&s, 3), planned(&s, 4)), (Some(50), Some(100)));
    s.job_ended(JobId(1), 50).unwrap();
    s.job_ended(JobId(2), 50).unwrap();
    assert_eq!(started(&s.schedule(50)), vec![3, 4]);
}

#[test]
fn conservative_reservation_put_back_at_its_time_keeps_its_place() {
    // One node, 10 CPUs.
    // t=0   job 1 (3 CPUs, limit 200, really 10 s) and job 2 (7 CPUs, 100 s) start.
    // t=1   job 3 (3 CPUs, 80 s): reserved at 100.
    // t=2   job 4 (6 CPUs, 50 s): reserved at 180 (only 4 free beside job 3 at 100).
    // t=3   job 5 (4 CPUs, 50 s): reserved at 100, beside job 3.
    // t=10  job 1 ends early. Compression: job 3 starts now (10..90); job 4 moves to
    //       100; job 5 is put back at 100, the time it had, keeping its place before
    //       job 4's newer reservation.
    // t=90  job 3 ends at its limit: both are put back at 100, both keep their places.
    // t=100 job 2 ends: job 5 starts before job 4, though submitted after it.
    let mut s = Scheduler::new(cluster(1, 10), Policy::Conservative);
    let planned = |s: &Scheduler, id| s.job(JobId(id)).unwrap().planned_start;
    s.submit(job(1).procs(3).time(200).spec(), 0).unwrap();
    s.submit(job(2).procs(7).time(100).spec(), 0).unwrap();
    assert_eq!(started(&s.schedule(0)), vec![1, 2]);
    s.submit(job(3).procs(3).time(80).spec(), 1).unwrap();
    s.submit(job(4).procs(6).time(50).spec(), 2).unwrap();
    s.submit(job(5).procs(4).time(50).spec(), 3).unwrap();
    assert!(s.schedule(3).is_empty());
    let plans = |s: &Scheduler| (planned(s, 4), planned(s, 5));
    assert_eq!(planned(&s, 3), Some(100));
    assert_eq!(plans(&s), (Some(180), Some(100)));
    s.job_ended(JobId(1), 10).unwrap();
    assert_eq!(started(&s.schedule(10)), vec![3]);
    assert_eq!(plans(&s), (Some(100), Some(100)));
    s.job_ended(JobId(3), 90).unwrap();
    assert!(s.schedule(90).is_empty());
    s.job_ended(JobId(2), 100).unwrap();
    assert_eq!(started(&s.schedule(100)), vec![5, 4]);
}

#[test]
fn slurm_backfill_starts_a_lower_priority_job_that_does_not_delay_a_higher_one() {
    // One node, 8 CPUs; backfill every second, planning to the second.
    // t=0   job 1 (prio 10) takes 6 CPUs until 100.
    // t=5   job 2 (prio 1) wants all 8 for 10 s: waits.
    // t=10  job 3 (prio 100) wants all 8 for 50 s: it goes ahead of job 2 in the queue;
    //       the backfill plan reserves 100 for job 3 and 150 for job 2.
    // t=20  job 4 (prio 1, 2 CPUs, 80 s) ends at 100, just when job 3's reservation
    //       begins: the backfill pass starts it at once.
    //       job 5 (prio 1, 2 CPUs, 81 s) would end at 101 and delay job 3: it waits
    //       for jobs 3 and 2 and starts at 160.
    // t=100 jobs 1 and 4 end; job 3 starts (main pass). t=150 job 2. t=160 job 5.
    let jobs = [
        job(1).procs(6).time(100).priority(10),
        job(2).procs(8).time(10).priority(1).submit(5),
        job(3).procs(8).time(50).priority(100).submit(10),
        job(4).procs(2).time(80).priority(1).submit(20),
        job(5).procs(2).time(81).priority(1).submit(20),
    ];
    let (r, history) = planned_history(cluster(1, 8), backfill(10_000), &jobs);
    assert_eq!(
        r.starts(),
        vec![(1, 0), (2, 150), (3, 100), (4, 20), (5, 160)]
    );
    assert_eq!(r.get(4).pass, Pass::Backfill);
    assert_eq!(r.get(3).pass, Pass::Main);
    assert_eq!(
        history[&3][0], 100,
        "job 3 planned at 100 from the first pass"
    );
    assert_eq!(
        history[&2][..2],
        [100, 150],
        "job 2 is pushed back once by job 3"
    );
    // FCFS order would have started job 2 first.
    let fcfs = replay_both(cluster(1, 8), Policy::Fcfs, &jobs);
    assert_eq!(
        fcfs.starts(),
        vec![(1, 0), (2, 100), (3, 110), (4, 160), (5, 160)]
    );
}

#[test]
fn slurm_backfill_serves_a_higher_partition_tier_first() {
    // One node, 8 CPUs, in two partitions: `batch` (tier 1, default) and `high` (tier 2).
    // t=0   job 1 (batch) takes all 8 until 100.
    // t=10  job 2 (batch, priority 1000) wants all 8.
    // t=20  job 3 (high, priority 1) wants all 8. Its partition's tier beats job 2's
    //       priority: job 3 starts at 100, job 2 at 150.
    let mut c = cluster(1, 8);
    let mut high = Partition::new("high", vec![NodeId(0)]);
    high.priority_tier = 2;
    c.partitions.push(high);
    let jobs = [
        job(1).procs(8).time(100),
        job(2).procs(8).time(50).priority(1000).submit(10),
        job(3).procs(8).time(50).priority(1).partition(1).submit(20),
    ];
    let (r, history) = planned_history(c.clone(), backfill(10_000), &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 150), (3, 100)]);
    assert_eq!(history[&3], vec![100]);
    assert_eq!(history[&2], vec![100, 150]);
    // Without a tier difference, priority decides: job 2 first.
    c.partitions[1].priority_tier = 1;
    let r = replay_both(c, backfill(10_000), &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 150)]);
}

#[test]
fn slurm_backfill_leaves_jobs_beyond_bf_window_unplanned() {
    // One node, 8 CPUs; bf_window = 100 s.
    // t=0   job 1 takes all 8 until 300.
    // t=10  job 2 (8 CPUs, 50 s) could start at 300: beyond now + 100, so no plan.
    // t=20  job 3 (4 CPUs, 30 s) could start at 350, after job 2: no plan either.
    // t=220 job 4 (1 CPU, 10 s) arrives; the window now reaches 320: job 2 is planned
    //       at 300; job 3 (350) and job 4 (350, beside job 3, which holds no plan) are
    //       still beyond it.
    // t=300 job 1 ends; job 2 starts. t=350 job 2 ends; jobs 3 and 4 start.
    let jobs = [
        job(1).procs(8).time(300),
        job(2).procs(8).time(50).submit(10),
        job(3).procs(4).time(30).submit(20),
        job(4).procs(1).time(10).submit(220),
    ];
    let mut plans: BTreeMap<Time, Vec<(u64, Option<Time>)>> = BTreeMap::new();
    let r = Harness::new(cluster(1, 8), backfill(100)).run_observed(&jobs, |now, _, s| {
        if [20, 220].contains(&now) {
            plans.insert(
                now,
                s.pending().map(|j| (j.id().0, j.planned_start)).collect(),
            );
        }
    });
    assert_eq!(plans[&20], vec![(2, None), (3, None)]);
    assert_eq!(plans[&220], vec![(2, Some(300)), (3, None), (4, None)]);
    assert_eq!(r.starts(), vec![(1, 0), (2, 300), (3, 350), (4, 350)]);
}

#[test]
fn a_multi_node_job_gets_distinct_nodes() {
    // Three nodes of 4 CPUs.
    // t=0   job 1: 6 tasks on exactly 2 nodes: the roomiest, n0 and n1; n0 filled
    //       first (4 tasks), the other 2 on n1.
    //       job 2: 2 tasks on exactly 2 nodes: n1 and n2 have room, one task each.
    //       job 3: 12 tasks, the whole machine: waits until job 1 ends at 100
    //       (job 2 ends at 50), then takes 4 tasks on each of n0, n1, n2.
    let jobs = [
        job(1).procs(6).nodes(2).time(100),
        job(2).procs(2).nodes(2).time(50),
        job(3).procs(12).time(10),
    ];
    let r = replay_both(cluster(3, 4), Policy::Fcfs, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 0), (3, 100)]);
    let tasks = |id| -> Vec<(u32, u32)> {
        r.get(id)
            .alloc
            .nodes
            .iter()
            .map(|a| (a.node.0, a.tasks))
            .collect()
    };
    assert_eq!(tasks(1), vec![(0, 4), (1, 2)]);
    assert_eq!(tasks(2), vec![(1, 1), (2, 1)]);
    assert_eq!(tasks(3), vec![(0, 4), (1, 4), (2, 4)]);
}

#[test]
fn jobs_naming_nodes_wait_for_those_nodes_and_never_get_excluded_ones() {
    // Three nodes of 4 CPUs.
    // t=0   job 1: 4 CPUs for 100 s, best fit among equals: n0.
    //       job 2: 1 CPU on n0 (-w n0): n0 is full; it waits for job 1, until 100,
    //       though n1 and n2 are idle.
    //       job 3: 2 tasks, not on n1 (-x n1): n2 (n0 is full).
    //       job 4: 2 tasks on n1 and n2 (-w n[1-2]): one task on each, at once.
    //       job 5: 1 CPU, not on n1 or n2: only n0 is left; behind job 2, it starts
    //       at 100 beside it (n0 then has 4 CPUs free for both).
    let jobs = [
        job(1).procs(4).time(100),
        job(2).procs(1).on(&[0]).time(10),
        job(3).procs(2).except(&[1]).time(50),
        job(4).procs(2).on(&[1, 2]).time(50),
        job(5).procs(1).except(&[1, 2]).time(10),
    ];
    for policy in [Policy::Fcfs, Policy::Easy, Policy::Conservative] {
        let r = replay_both(cluster(3, 4), policy.clone(), &jobs);
        let name = policy.name();
        if policy == Policy::Fcfs {
            // FCFS stops at job 2, the blocked head: the rest waits with it.
            assert_eq!(
                r.starts(),
                vec![(1, 0), (2, 100), (3, 100), (4, 100), (5, 100)],
                "{name}"
            );
            continue;
        }
        assert_eq!(
            r.starts(),
            vec![(1, 0), (2, 100), (3, 0), (4, 0), (5, 100)],
            "{name}"
        );
        assert_eq!(
            (r.nodes(2), r.nodes(3), r.nodes(4), r.nodes(5)),
            (vec![0], vec![2], vec![1, 2], vec![0]),
            "{name}"
        );
    }
    // A node list no idle machine could satisfy is refused at submission.
    let mut s = Scheduler::new(cluster(2, 4), Policy::Easy);
    for j in [
        job(1).procs(5).on(&[0]).one_node(),   // 5 CPUs on one node of 4
        job(1).procs(1).except(&[0, 1]),       // no node left
        job(1).procs(1).on(&[0]).except(&[0]), // listed and excluded
    ] {
        assert_eq!(
            s.submit(j.spec(), 0),
            Err(SubmitError::NodeConfigUnavailable)
        );
    }
    s.submit(job(1).procs(5).on(&[0]).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1, "5 tasks: 4 on n0 and 1 on n1");
}

#[test]
fn changing_a_running_jobs_time_limit_moves_the_reservations_behind_it() {
    // One node of 4 CPUs.
    // t=0   job 1 takes it for 100 s.
    // t=5   job 2 wants it too: planned at 100.
    // t=10  job 1's limit is lowered to 50: job 2 is planned at 50.
    // t=20  raised to 200: job 2 moves to 200.
    // t=30  lowered below what has already run (10 s): the claim ends at 31.
    for policy in [Policy::Easy, Policy::Conservative, backfill(86_400)] {
        let name = policy.name();
        let mut s = Scheduler::new(cluster(1, 4), policy);
        s.submit(job(1).procs(4).time(100).spec(), 0).unwrap();
        assert_eq!(s.schedule(0).len(), 1);
        s.submit(job(2).procs(4).time(10).spec(), 5).unwrap();
        assert!(s.schedule(5).is_empty());
        let planned = |s: &Scheduler| s.job(JobId(2)).unwrap().planned_start;
        assert_eq!(planned(&s), Some(100), "{name}");
        assert!(s.set_time_limit(JobId(1), 50, 10));
        assert!(s.schedule(10).is_empty());
        assert_eq!(planned(&s), Some(50), "{name}");
        assert!(s.set_time_limit(JobId(1), 200, 20));
        assert!(s.schedule(20).is_empty());
        assert_eq!(planned(&s), Some(200), "{name}");
        assert!(s.set_time_limit(JobId(1), 10, 30));
        assert!(s.schedule(30).is_empty());
        assert_eq!(planned(&s), Some(31), "{name}");
        assert!(!s.set_time_limit(JobId(2), 10, 30), "job 2 is not running");
    }
}

#[test]
fn an_exclusive_job_waits_for_a_whole_idle_node() {
    // Two nodes of 4 CPUs.
    // t=0   job 1: one CPU for 100 s, on n0 (best fit; ties go to the lower id).
    // t=10  job 2, exclusive: n1 is idle, it takes all of n1 until 60.
    // t=20  job 3, exclusive, one task: n0 has 3 idle CPUs but is not idle; it waits
    //       until job 2 ends and takes n1 at 60.
    let jobs = [
        job(1).procs(1).time(100),
        job(2).procs(1).exclusive().time(50).submit(10),
        job(3).procs(1).exclusive().time(20).submit(20),
    ];
    for policy in [Policy::Fcfs, Policy::Easy, Policy::Conservative] {
        let r = replay_both(cluster(2, 4), policy.clone(), &jobs);
        assert_eq!(
            r.starts(),
            vec![(1, 0), (2, 10), (3, 60)],
            "{}",
            policy.name()
        );
        assert_eq!(
            (r.nodes(1), r.nodes(2), r.nodes(3)),
            (vec![0], vec![1], vec![1])
        );
        assert_eq!(
            r.get(2).alloc.cpus(),
            4,
            "an exclusive job holds the whole node"
        );
        assert_eq!(r.get(3).alloc.cpus(), 4);
    }
}

#[test]
fn a_job_that_can_never_fit_is_refused_and_nothing_changes() {
    // Two nodes of 4 CPUs. Job 1 runs; then four requests no empty machine could hold.
    let mut s = Scheduler::new(cluster(2, 4), Policy::Easy);
    s.submit(job(1).procs(2).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    let impossible = [
        job(2).procs(9),                        // 9 CPUs on a machine of 8
        job(2).procs(5).one_node(),             // 5 CPUs on one node of 4
        job(2).procs(3).nodes(3),               // 3 nodes of 2
        job(2).procs(5).one_node().exclusive(), // a whole node is 4 CPUs
    ];
    let mut no_such_feature = job(2).procs(1);
    no_such_feature.request.features_any = 1; // no node has feature bit 0
    for j in impossible.into_iter().chain([no_such_feature]) {
        assert_eq!(
            s.submit(j.spec(), 5),
            Err(SubmitError::NodeConfigUnavailable),
            "{:?}",
            j.request
        );
        assert!(s.job(JobId(2)).is_none());
        assert_eq!((s.pending_count(), s.running_count()), (0, 1));
        assert!(s.schedule(5).is_empty());
        assert_eq!(s.next_wakeup(), None);
    }
    // The id was never taken: a request that fits is accepted under it.
    s.submit(job(2).procs(6).spec(), 5).unwrap();
    assert_eq!(s.schedule(5).len(), 1);

    // In a replay the refused job simply does not exist: the others are unaffected.
    let jobs = [
        job(1).procs(8).time(100),
        job(2).procs(9).submit(10),
        job(3).procs(4).time(10).submit(20),
    ];
    let r = replay_both(cluster(2, 4), Policy::Easy, &jobs);
    assert_eq!(r.rejected, vec![(2, SubmitError::NodeConfigUnavailable)]);
    assert_eq!(r.starts(), vec![(1, 0), (3, 100)]);
}

#[test]
fn a_job_that_outruns_its_time_limit_ends_at_the_limit() {
    // One node, 4 CPUs.
    // t=0   job 1 (4 CPUs, limit 50) would run 80 s: the harness kills it at 50.
    //       job 2 (4 CPUs, limit 10) would run 5 s: it ends early, at 55.
    //       job 3 (4 CPUs, limit 10) starts when job 2 ends, at 55.
    let jobs = [
        job(1).procs(4).time(50).run(80),
        job(2).procs(4).time(10).run(5),
        job(3).procs(4).time(10),
    ];
    for policy in [
        Policy::Fcfs,
        Policy::Easy,
        Policy::Conservative,
        backfill(10_000),
    ] {
        let r = replay_both(cluster(1, 4), policy.clone(), &jobs);
        assert_eq!(
            r.starts(),
            vec![(1, 0), (2, 50), (3, 55)],
            "{}",
            policy.name()
        );
        let finishes: Vec<Time> = (1..=3).map(|id| r.finish(id)).collect();
        assert_eq!(finishes, vec![50, 55, 65], "{}", policy.name());
    }
}

#[test]
fn jobs_ending_at_their_limit_hand_over_their_nodes_at_that_instant() {
    // Two nodes of 4 CPUs. Jobs 1 and 2 each fill a node until exactly 100.
    // t=5   job 3 wants both nodes for 10 s: it waits for 100 (conservative and
    //       backfill reserve 100 for it).
    // t=100 job 4 (4 CPUs) is submitted, then job 1 ends, then job 2 ends, one pass
    //       after each. Whether the core counts nodes free from their job's expected
    //       end (simulator) or only once it is reported ended (controller), job 3 starts
    //       at 100 and job 4 after it, at 110 — and never on a node still counted busy
    //       (the harness checks both rules agree; the core's own checks catch any
    //       double booking).
    let jobs = [
        job(1).procs(4).time(100),
        job(2).procs(4).time(100),
        job(3).procs(8).time(10).submit(5),
        job(4).procs(4).time(10).submit(100),
    ];
    for policy in [
        Policy::Fcfs,
        Policy::Easy,
        Policy::Conservative,
        backfill(10_000),
    ] {
        let r = replay_both(cluster(2, 4), policy.clone(), &jobs);
        assert_eq!(
            r.starts(),
            vec![(1, 0), (2, 0), (3, 100), (4, 110)],
            "{}",
            policy.name()
        );
        assert_eq!(
            (r.nodes(1), r.nodes(2), r.nodes(3)),
            (vec![0], vec![1], vec![0, 1])
        );
    }
}

#[test]
fn every_pending_job_gets_a_reason_even_when_the_pass_stops_early() {
    // One node, 2 CPUs, Slurm's backfill. At t=0 jobs 1 and 2 take both CPUs.
    // Job 3 wants a CPU: it is the first that cannot start (Resources), and the main
    // pass stops there. Job 4, behind it, waits on Priority; job 5 asked to begin at
    // t=3600 (BeginTime). Nothing is left without a reason.
    use sluice_core::PendingReason;
    let mut s = Scheduler::new(cluster(1, 2), backfill(10_000));
    for j in [job(1).procs(1).time(600), job(2).procs(1).time(600)] {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    s.submit(job(3).procs(1).time(180).spec(), 1).unwrap();
    s.submit(job(4).procs(1).time(180).spec(), 1).unwrap();
    let mut later = job(5).procs(1).time(180).spec();
    later.begin = 3600;
    s.submit(later, 1).unwrap();
    s.schedule(1);
    let reason = |id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(3), PendingReason::Resources);
    assert_eq!(reason(4), PendingReason::Priority);
    assert_eq!(reason(5), PendingReason::BeginTime);
}

#[test]
fn a_job_whose_nodes_are_kept_for_a_higher_priority_partition_says_so() {
    // Slurm 22.05's compat scenario 069: nodes n0 and n1 of 4 CPUs; partition `batch`
    // holds both, `short` only n0. Job 1 takes both nodes whole. Job 2 (batch, 4 tasks)
    // is the first that cannot start (Resources), job 3 behind it in batch waits on
    // Priority. Job 4 (short, 4 tasks) could run on n0 once it is free, but n0 is kept
    // for job 2's partition: its nodes are "reserved for jobs in higher priority
    // partitions". Job 5, behind it in short, waits on Priority.
    use sluice_core::PendingReason;
    let mut c = cluster(2, 4);
    c.partitions.push(Partition::new("short", vec![NodeId(0)]));
    let mut s = Scheduler::new(c, backfill(10_000));
    s.submit(job(1).procs(8).nodes(2).exclusive().time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    s.submit(job(2).procs(4).time(60).spec(), 1).unwrap();
    s.submit(job(3).procs(4).time(60).spec(), 1).unwrap();
    s.submit(job(4).procs(4).time(60).partition(1).spec(), 1)
        .unwrap();
    s.submit(job(5).procs(1).time(60).partition(1).spec(), 1)
        .unwrap();
    s.schedule(1);
    let reason = |id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(2), PendingReason::Resources);
    assert_eq!(reason(3), PendingReason::Priority);
    assert_eq!(reason(4), PendingReason::NodesUnavailable);
    assert_eq!(
        reason(4).as_str(),
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority \
         partitions"
    );
    assert_eq!(reason(5), PendingReason::Priority);
}

#[test]
fn a_waiting_partition_keeps_its_nodes_from_lower_priority_jobs_of_other_partitions() {
    // Slurm 22.05's compat scenario 293: nodes n0 and n1 of 4 CPUs; partition `batch`
    // holds both, `short` only n0. Job 1 holds n1 whole for 600 s. Job 2 (batch) needs
    // both nodes whole: it waits for n1 and the main pass keeps both nodes for it. Job 3
    // (short, lower priority, 1800 s) would fit on n0 now, but starting it would push
    // job 2 back by 20 minutes: it waits, its one node reserved for a higher priority
    // partition.
    use sluice_core::PendingReason;
    let mut c = cluster(2, 4);
    c.partitions.push(Partition::new("short", vec![NodeId(0)]));
    let mut s = Scheduler::new(c, backfill(10_000));
    s.submit(job(1).procs(4).on(&[1]).time(600).spec(), 0)
        .unwrap();
    assert_eq!(started(&s.schedule(0)), [1]);
    s.submit(job(2).procs(8).nodes(2).time(600).priority(100).spec(), 1)
        .unwrap();
    s.submit(
        job(3).procs(1).time(1800).partition(1).priority(10).spec(),
        1,
    )
    .unwrap();
    assert_eq!(started(&s.schedule(1)), Vec::<u64>::new());
    let reason = |s: &Scheduler, id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(&s, 2), PendingReason::Resources);
    assert_eq!(reason(&s, 3), PendingReason::NodesUnavailable);

    // Job 4 (short, 300 s) ends before job 1 does: backfilled on n0, it delays nothing.
    s.submit(
        job(4).procs(1).time(300).partition(1).priority(10).spec(),
        2,
    )
    .unwrap();
    let d = s.schedule(2);
    assert_eq!(started(&d), [4]);
    assert!(matches!(
        d[0],
        Decision::Start {
            pass: Pass::Backfill,
            ..
        }
    ));

    // A job of batch behind job 2 waits on Priority, though n0 could hold it now.
    s.submit(job(5).procs(1).time(1800).priority(10).spec(), 3)
        .unwrap();
    assert_eq!(started(&s.schedule(3)), Vec::<u64>::new());
    assert_eq!(reason(&s, 5), PendingReason::Priority);

    // Jobs 1 and 4 end: job 2 starts on both nodes at once, as planned.
    s.job_ended(JobId(4), 300);
    s.job_ended(JobId(1), 400);
    assert_eq!(started(&s.schedule(400)), [2]);
}

#[test]
fn a_waiting_job_that_names_its_node_keeps_only_that_node() {
    // Nodes n0 and n1 of 4 CPUs, one partition. Job 1 holds n1 whole; job 2 asks for
    // n1 by name (`-w`) and waits. Slurm's main pass keeps only n1 for it and does not
    // block the partition: job 3, behind it, starts on n0 in the same pass.
    let mut s = Scheduler::new(cluster(2, 4), backfill(10_000));
    s.submit(job(1).procs(4).on(&[1]).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    s.submit(job(2).procs(1).on(&[1]).time(600).priority(100).spec(), 1)
        .unwrap();
    s.submit(job(3).procs(4).time(1800).priority(10).spec(), 1)
        .unwrap();
    let decisions = s.schedule(1);
    let main: Vec<(u64, Pass, NodeId)> = decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Start {
                job, alloc, pass, ..
            } => Some((job.0, *pass, alloc.nodes[0].node)),
            _ => None,
        })
        .collect();
    assert_eq!(main, [(3, Pass::Main, NodeId(0))]);
    assert_eq!(
        s.job(JobId(2)).unwrap().reason,
        sluice_core::PendingReason::Resources
    );
}

#[test]
fn a_job_naming_a_node_kept_or_drained_says_which_of_its_nodes_it_cannot_have() {
    // Slurm 22.05's compat scenario 295. Nodes n0 and n1 of 4 CPUs, one partition; job 1
    // holds both whole. Job 2 names n0 (all of it) and waits for Resources, keeping n0;
    // job 3 names n0 too and finds it kept: `ReqNodeNotAvail, UnavailableNodes:n0`.
    // Job 4, naming nothing, finds n1 busy and waits for Resources.
    use sluice_core::{NodeState, PendingReason};
    let mut s = Scheduler::new(cluster(2, 4), backfill(10_000));
    s.submit(job(1).procs(8).nodes(2).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    s.submit(job(2).procs(4).on(&[0]).time(600).priority(100).spec(), 1)
        .unwrap();
    s.submit(job(3).procs(1).on(&[0]).time(600).priority(50).spec(), 1)
        .unwrap();
    s.submit(job(4).procs(1).time(600).priority(10).spec(), 1)
        .unwrap();
    assert_eq!(started(&s.schedule(1)), Vec::<u64>::new());
    let why = |s: &Scheduler, id: u64| {
        let j = s.job(JobId(id)).unwrap();
        (j.reason, j.unavailable_nodes.clone())
    };
    assert_eq!(why(&s, 2), (PendingReason::Resources, vec![]));
    assert_eq!(
        why(&s, 3),
        (PendingReason::NamedNodesUnavailable, vec![NodeId(0)])
    );
    assert_eq!(why(&s, 4), (PendingReason::Resources, vec![]));

    // Job 1 ends and n1 is drained: job 2 starts on n0. Job 5, ahead of job 3, names
    // the drained n1 and cannot have it; job 3, naming n0, waits for job 2 (Resources)
    // and keeps n0; job 4 has no usable node left that is not kept.
    s.job_ended(JobId(1), 10);
    s.set_node_state(NodeId(1), NodeState::Drain);
    s.submit(job(5).procs(1).on(&[1]).time(600).priority(100).spec(), 10)
        .unwrap();
    assert_eq!(started(&s.schedule(10)), [2]);
    assert_eq!(
        why(&s, 5),
        (PendingReason::NamedNodesUnavailable, vec![NodeId(1)])
    );
    assert_eq!(why(&s, 3), (PendingReason::Resources, vec![]));
    assert_eq!(why(&s, 4), (PendingReason::NodesUnavailable, vec![]));
}

#[test]
fn a_job_naming_a_drained_node_blocks_nothing() {
    // Three nodes of 4 CPUs, n0 drained. Job 1 names n0 and asks for two nodes: it
    // cannot have n0. Slurm's select says so (`ReqNodeNotAvail, UnavailableNodes:n0`)
    // and blocks nothing: job 2, behind it, starts in the same main pass.
    use sluice_core::{NodeState, PendingReason};
    let mut s = Scheduler::new(cluster(3, 4), backfill(10_000));
    s.set_node_state(NodeId(0), NodeState::Drain);
    s.submit(
        job(1)
            .procs(2)
            .nodes(2)
            .on(&[0])
            .time(600)
            .priority(100)
            .spec(),
        0,
    )
    .unwrap();
    s.submit(job(2).procs(1).time(600).priority(10).spec(), 0)
        .unwrap();
    let d = s.schedule(0);
    let starts: Vec<(u64, Pass)> = d
        .iter()
        .filter_map(|d| match d {
            Decision::Start { job, pass, .. } => Some((job.0, *pass)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [(2, Pass::Main)]);
    let j = s.job(JobId(1)).unwrap();
    assert_eq!(
        (j.reason, j.unavailable_nodes.clone()),
        (PendingReason::NamedNodesUnavailable, vec![NodeId(0)])
    );
}

#[test]
fn nodes_awaiting_their_agents_take_no_work_but_leave_waiting_jobs_their_reasons() {
    // Two nodes of 4 CPUs; job 1 holds both, job 2 (4 tasks) waits for Resources and
    // job 3 for its begin time an hour away.
    use sluice_core::{NodeState, PendingReason};
    let mut s = Scheduler::new(cluster(2, 4), Policy::Fcfs);
    s.submit(job(1).procs(8).nodes(2).time(600).spec(), 0)
        .unwrap();
    s.schedule(0);
    s.submit(job(2).procs(4).time(60).spec(), 1).unwrap();
    let mut later = job(3).procs(1).time(60).spec();
    later.begin = 3600;
    s.submit(later, 1).unwrap();
    s.schedule(1);
    let reason = |s: &Scheduler, id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(&s, 2), PendingReason::Resources);

    // The controller restarts: both nodes await their agents. Job 1 ends meanwhile;
    // nothing starts on nodes whose agents have not answered, yet job 2 still waits
    // for Resources and job 3 for its begin time, not for nodes that are down.
    s.await_node(NodeId(0));
    s.await_node(NodeId(1));
    s.job_ended(JobId(1), 2);
    assert_eq!(started(&s.schedule(2)), Vec::<u64>::new());
    assert_eq!(reason(&s, 2), PendingReason::Resources);
    assert_eq!(reason(&s, 3), PendingReason::BeginTime);

    // n0's agent answers: job 2 runs there.
    s.set_node_state(NodeId(0), NodeState::Up);
    assert_eq!(started(&s.schedule(3)), [2]);

    // n1's agent never does: the controller gives it up (DOWN). Job 4, which needs
    // both nodes, now waits for nodes that are down; job 3 for its begin time still.
    s.set_node_state(NodeId(1), NodeState::Down);
    s.submit(job(4).procs(8).nodes(2).time(60).spec(), 4)
        .unwrap();
    s.schedule(4);
    assert_eq!(reason(&s, 4), PendingReason::NodesUnavailable);
    assert_eq!(reason(&s, 3), PendingReason::BeginTime);
}

#[test]
fn a_job_its_up_nodes_could_never_hold_says_its_nodes_are_down_or_drained() {
    // Two nodes of 4 CPUs, n1 drained, n0 busy with job 1. Job 2 wants both nodes:
    // the one node left could not hold it even idle. Job 3, wanting one node, waits
    // for Resources (n0 will free up). With n0 drained too, a one-node job has no node.
    use sluice_core::{NodeState, PendingReason};
    let mut s = Scheduler::new(cluster(2, 4), Policy::Fcfs);
    s.set_node_state(NodeId(1), NodeState::Drain);
    s.submit(job(1).procs(4).time(600).spec(), 0).unwrap();
    s.schedule(0);
    s.submit(job(2).procs(2).nodes(2).time(60).spec(), 1)
        .unwrap();
    s.schedule(1);
    let reason = |s: &Scheduler, id: u64| s.job(JobId(id)).unwrap().reason;
    assert_eq!(reason(&s, 2), PendingReason::NodesUnavailable);
    s.cancel_pending(JobId(2), 2).unwrap();
    s.submit(job(3).procs(1).time(60).spec(), 2).unwrap();
    s.schedule(2);
    assert_eq!(reason(&s, 3), PendingReason::Resources);
    s.set_node_state(NodeId(0), NodeState::Drain);
    s.schedule(3);
    assert_eq!(reason(&s, 3), PendingReason::NodesUnavailable);
    // A job whose begin time has not come says so, though no node could take it.
    let mut later = job(4).procs(1).time(60).spec();
    later.begin = 3600;
    s.submit(later, 4).unwrap();
    s.schedule(4);
    assert_eq!(reason(&s, 4), PendingReason::BeginTime);
}

#[test]
fn a_job_whose_begin_time_comes_while_others_wait_gets_priority_and_a_plan() {
    // One node, 2 CPUs, Slurm's backfill with a pass every 30 s. Jobs 1 and 2 hold both
    // CPUs until 7200; job 3 waits for one (Resources); job 4 may begin at 3600. When
    // that time comes the main pass stops at job 3, before job 4: job 4 waits on
    // Priority now, not BeginTime, and the backfill pass of that instant (its begin is
    // something new to consider) plans it with job 3 at 7200.
    use sluice_core::{BackfillParams, PendingReason};
    let params = BackfillParams {
        interval: 30,
        resolution: 1,
        ..Default::default()
    };
    let mut s = Scheduler::new(cluster(1, 2), Policy::Backfill(params));
    for j in [job(1).procs(1).time(7200), job(2).procs(1).time(7200)] {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    s.submit(job(3).procs(1).time(180).spec(), 1).unwrap();
    let mut later = job(4).procs(1).time(180).spec();
    later.begin = 3600;
    s.submit(later, 1).unwrap();
    s.schedule(1);
    let seen = |s: &Scheduler, id: u64| {
        let j = s.job(JobId(id)).unwrap();
        (j.reason, j.planned_start)
    };
    assert_eq!(seen(&s, 4), (PendingReason::BeginTime, None));
    assert_eq!(s.next_wakeup(), Some(3600));
    s.schedule(3600);
    assert_eq!(seen(&s, 3), (PendingReason::Resources, Some(7200)));
    assert_eq!(seen(&s, 4), (PendingReason::Priority, Some(7200)));
}

#[test]
fn an_operator_changes_a_partition_and_the_queue_follows() {
    // Two nodes of 4 CPUs; partition `batch` holds only n0 at first (n1 is in none).
    // t=0  job 1 (4 CPUs, 600 s) starts on n0.
    // t=1  the operator sets the partition DOWN: job 2 (2 CPUs) waits, PartitionDown,
    //      although nothing else stops it but n0 being full.
    // t=2  UP again with MaxTime 100: job 2 asks 60 s, job 3 asks 300 s; n0 is full,
    //      so job 2 waits for Resources and job 3 for PartitionTimeLimit.
    // t=3  n1 joins the partition: job 2 starts on it at once; job 3 still may not.
    // t=4  MaxTime UNLIMITED: job 3 starts beside job 2 on n1.
    use sluice_core::{PartitionId, PartitionState, PendingReason};
    let mut c = cluster(2, 4);
    c.partitions[0].nodes = vec![NodeId(0)];
    let mut s = Scheduler::new(c, Policy::Fcfs);
    let part = |s: &Scheduler| s.cluster().partitions[0].clone();
    let reason = |s: &Scheduler, id: u64| s.job(JobId(id)).unwrap().reason;
    let nodes_of = |s: &Scheduler, id: u64| {
        s.job(JobId(id))
            .unwrap()
            .alloc
            .as_ref()
            .map(|a| a.nodes.iter().map(|n| n.node.0).collect::<Vec<_>>())
    };
    s.submit(job(1).procs(4).time(600).spec(), 0).unwrap();
    s.schedule(0);
    assert_eq!(nodes_of(&s, 1), Some(vec![0]));

    let mut p = part(&s);
    p.state = PartitionState::Down;
    s.set_partition(PartitionId(0), p);
    s.submit(job(2).procs(2).time(60).spec(), 1).unwrap();
    s.schedule(1);
    assert_eq!(reason(&s, 2), PendingReason::PartitionDown);

    let mut p = part(&s);
    p.state = PartitionState::Up;
    p.max_time = Some(100);
    s.set_partition(PartitionId(0), p);
    s.submit(job(3).procs(2).time(300).spec(), 2).unwrap();
    s.schedule(2);
    assert_eq!(reason(&s, 2), PendingReason::Resources);
    assert_eq!(reason(&s, 3), PendingReason::PartitionTimeLimit);

    let mut p = part(&s);
    p.nodes = vec![NodeId(0), NodeId(1)];
    s.set_partition(PartitionId(0), p);
    s.schedule(3);
    assert_eq!(nodes_of(&s, 2), Some(vec![1]));
    assert_eq!(reason(&s, 3), PendingReason::PartitionTimeLimit);

    let mut p = part(&s);
    p.max_time = None;
    s.set_partition(PartitionId(0), p);
    s.schedule(4);
    assert_eq!(nodes_of(&s, 3), Some(vec![1]));
    assert_eq!(s.running_count(), 3);
}

#[test]
fn a_partition_given_a_larger_node_takes_jobs_only_that_node_could_hold() {
    // n0 has 4 CPUs, n1 8; the partition holds n0 only: a one-node job of 8 CPUs could
    // never run there and is refused. With n1 added it is taken and starts on n1; with
    // n1 taken away again, it is refused again.
    use sluice_core::PartitionId;
    let mut c = cluster(2, 4);
    c.nodes[1].capacity.cpus = 8;
    c.partitions[0].nodes = vec![NodeId(0)];
    let mut s = Scheduler::new(c, Policy::Fcfs);
    let wide = || job(1).procs(8).one_node().time(60).spec();
    assert!(s.submit(wide(), 0).is_err());
    let mut p = s.cluster().partitions[0].clone();
    p.nodes = vec![NodeId(0), NodeId(1)];
    s.set_partition(PartitionId(0), p);
    s.submit(wide(), 1).unwrap();
    s.schedule(1);
    assert_eq!(s.running_count(), 1);
    let mut p = s.cluster().partitions[0].clone();
    p.nodes = vec![NodeId(0)];
    s.set_partition(PartitionId(0), p);
    assert!(s
        .submit(job(2).procs(8).one_node().time(60).spec(), 2)
        .is_err());
}
