//! Properties every policy must keep on random small workloads, checked over whole
//! replays driven by the test harness.

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use sluice_core::{BackfillParams, Cluster, EndSemantics, JobId, JobState, Policy, Time};

const BOTH: [EndSemantics; 2] = [
    EndSemantics::FreeAtExpectedEnd,
    EndSemantics::HoldUntilReported,
];

/// A random machine and workload: 1-6 nodes of 1-8 CPUs, 1-40 jobs, each of which an
/// empty machine could hold.
#[derive(Clone, Debug)]
struct Workload {
    nodes: u32,
    cpus: u32,
    jobs: Vec<JobBuilder>,
}

impl Workload {
    fn cluster(&self) -> Cluster {
        cluster(self.nodes, self.cpus)
    }
}

/// The shape of a request.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `-n procs`, any number of nodes.
    Procs,
    /// All on one node.
    OneNode,
    /// On exactly `k` nodes.
    Nodes(u32),
}

fn a_job(id: u64, nodes: u32, cpus: u32) -> impl Strategy<Value = JobBuilder> {
    let shape = prop_oneof![
        6 => Just(Shape::Procs),
        2 => Just(Shape::OneNode),
        2 => (1..=nodes).prop_map(Shape::Nodes),
    ];
    (
        shape,
        0..100u32,
        prop::bool::weighted(0.15),
        0..200i64,
        1..100i64,
        1..120i64,
        0..4u32,
    )
        .prop_map(move |(shape, p, exclusive, submit, time, run, priority)| {
            let (lo, hi) = match shape {
                Shape::Procs => (1, nodes * cpus),
                Shape::OneNode => (1, cpus),
                Shape::Nodes(k) => (k, k * cpus),
            };
            let procs = lo + p % (hi - lo + 1);
            let mut j = job(id)
                .procs(procs)
                .submit(submit)
                .time(time)
                .run(run)
                .priority(priority);
            j = match shape {
                Shape::Procs => j,
                Shape::OneNode => j.one_node(),
                Shape::Nodes(k) => j.nodes(k),
            };
            if exclusive {
                j = j.exclusive();
            }
            j
        })
}

fn workload() -> impl Strategy<Value = Workload> {
    (1..=6u32, 1..=8u32, 1..=40usize).prop_flat_map(|(nodes, cpus, n)| {
        let jobs: Vec<_> = (1..=n as u64).map(|id| a_job(id, nodes, cpus)).collect();
        jobs.prop_map(move |jobs| Workload { nodes, cpus, jobs })
    })
}

fn backfill_params() -> impl Strategy<Value = BackfillParams> {
    (1..30i64, 20..2000i64, 1..60i64, 1..50usize, any::<bool>()).prop_map(
        |(interval, window, resolution, max_job_test, continue_pass)| BackfillParams {
            interval,
            window,
            resolution,
            max_job_test,
            continue_pass,
            ..BackfillParams::default()
        },
    )
}

/// Checks what holds under every policy: no refusals, every job starts (not before its
/// submission) and ends as the harness said, allocations match requests, and no node
/// is ever over-allocated.
fn check_replay(w: &Workload, r: &Replay) -> Result<(), TestCaseError> {
    prop_assert!(r.rejected.is_empty(), "refused: {:?}", r.rejected);
    prop_assert_eq!(r.jobs.len(), w.jobs.len(), "the queue did not drain");
    let c = w.cluster();
    for j in &w.jobs {
        let o = r.get(j.id);
        prop_assert!(
            o.start >= j.submit,
            "job {} started at {} before its submission",
            j.id,
            o.start
        );
        prop_assert_eq!(o.finish, o.start + j.ran_for());
        let req = &j.request;
        let tasks: u32 = o.alloc.nodes.iter().map(|a| a.tasks).sum();
        prop_assert_eq!(
            tasks,
            req.ntasks,
            "job {} got the wrong number of tasks",
            j.id
        );
        let n = o.alloc.nodes.len() as u32;
        prop_assert!(
            n >= req.min_nodes && n <= req.max_nodes,
            "job {} on {} nodes",
            j.id,
            n
        );
        let ids = o.nodes();
        prop_assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "job {} nodes not distinct: {:?}",
            j.id,
            ids
        );
        for a in &o.alloc.nodes {
            prop_assert!(a.tasks >= 1 && a.usage.cpus >= a.tasks);
            if req.exclusive {
                prop_assert_eq!(
                    a.usage,
                    c.node(a.node).capacity,
                    "exclusive job {} shares a node",
                    j.id
                );
            }
        }
    }
    // Usage only grows when a job starts, so checking every start instant covers it all.
    for o in r.jobs.values() {
        let t = o.start;
        for a in &o.alloc.nodes {
            let used: u64 = r
                .jobs
                .values()
                .filter(|x| x.start <= t && t < x.finish)
                .flat_map(|x| x.alloc.nodes.iter().filter(|b| b.node == a.node))
                .map(|b| b.usage.cpus as u64)
                .sum();
            let cap = c.node(a.node).capacity.cpus as u64;
            prop_assert!(
                used <= cap,
                "node {} holds {} CPUs of {} at {}",
                a.node,
                used,
                cap,
                t
            );
        }
    }
    Ok(())
}

/// Replays under EASY, recording for each job the planned start it held when it first
/// stood at the head of the queue (the first pending job in submission order).
fn replay_easy(w: &Workload, ends: EndSemantics) -> (Replay, BTreeMap<u64, Time>) {
    let mut head_plan: BTreeMap<u64, Time> = BTreeMap::new();
    let mut h = Harness::with_end_semantics(w.cluster(), Policy::Easy, ends);
    let r = h.run_observed(&w.jobs, |_, _, s| {
        if let Some(head) = s.pending().next() {
            if let Some(t) = head.planned_start {
                head_plan.entry(head.id().0).or_insert(t);
            }
        }
    });
    (r, head_plan)
}

/// Replays under conservative backfilling, recording each job's planned start right
/// after the pass that followed its submission, and checking that no planned start
/// ever moves later.
fn replay_conservative(
    w: &Workload,
    ends: EndSemantics,
) -> (Replay, BTreeMap<u64, Time>, Vec<String>) {
    let mut at_submit: BTreeMap<u64, Time> = BTreeMap::new();
    let mut last: BTreeMap<u64, Time> = BTreeMap::new();
    let mut later = Vec::new();
    let mut h = Harness::with_end_semantics(w.cluster(), Policy::Conservative, ends);
    let r = h.run_observed(&w.jobs, |now, e, s| {
        if let Event::Submitted(id) = e {
            let j = s.job(id).expect("accepted");
            if let Some(t) = j.planned_start {
                at_submit.insert(id.0, t);
            }
        }
        for j in s.pending() {
            if let Some(t) = j.planned_start {
                if let Some(&before) = last.get(&j.id().0) {
                    if t > before {
                        later.push(format!(
                            "at {now}: job {} moved from {before} to {t}",
                            j.id()
                        ));
                    }
                }
                last.insert(j.id().0, t);
            }
        }
    });
    (r, at_submit, later)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fcfs_keeps_the_invariants(w in workload()) {
        for ends in BOTH {
            let r = Harness::with_end_semantics(w.cluster(), Policy::Fcfs, ends).run(&w.jobs);
            check_replay(&w, &r)?;
            // FCFS starts jobs in submission order.
            let mut order: Vec<&JobBuilder> = w.jobs.iter().collect();
            order.sort_by_key(|j| j.submit);
            for pair in order.windows(2) {
                prop_assert!(r.start(pair[0].id) <= r.start(pair[1].id));
            }
        }
    }

    // The two reservation guarantees below assume that running jobs end by their
    // expected end, which the harness ensures. Under `HoldUntilReported` a job at its
    // limit whose end is reported later in the same instant looks, to the passes in
    // between, like a job overrunning its limit, and the guarantees need not hold then:
    // under that rule only the safety invariants are checked.

    #[test]
    fn easy_never_starts_the_head_after_its_reservation(w in workload()) {
        let (r, head_plan) = replay_easy(&w, EndSemantics::FreeAtExpectedEnd);
        check_replay(&w, &r)?;
        for (id, planned) in &head_plan {
            prop_assert!(
                r.start(*id) <= *planned,
                "job {} reserved {} as head, started {}", id, planned, r.start(*id)
            );
        }
        let (r, _) = replay_easy(&w, EndSemantics::HoldUntilReported);
        check_replay(&w, &r)?;
    }

    #[test]
    fn conservative_never_starts_a_job_after_its_first_reservation(w in workload()) {
        let (r, at_submit, later) = replay_conservative(&w, EndSemantics::FreeAtExpectedEnd);
        check_replay(&w, &r)?;
        prop_assert!(later.is_empty(), "{:?}", later);
        // Every job got a planned start at submission, even one started at once.
        prop_assert_eq!(at_submit.len(), w.jobs.len());
        for (id, planned) in &at_submit {
            prop_assert!(
                r.start(*id) <= *planned,
                "job {} planned {} at submission, started {}", id, planned, r.start(*id)
            );
        }
        let (r, _, _) = replay_conservative(&w, EndSemantics::HoldUntilReported);
        check_replay(&w, &r)?;
    }

    #[test]
    fn slurm_backfill_keeps_the_invariants(w in workload(), params in backfill_params()) {
        for ends in BOTH {
            let r = Harness::with_end_semantics(w.cluster(), Policy::Backfill(params.clone()), ends)
                .run(&w.jobs);
            check_replay(&w, &r)?;
        }
    }

    #[test]
    fn replays_are_deterministic(w in workload(), params in backfill_params()) {
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Conservative, Policy::Backfill(params)] {
            let a = replay(w.cluster(), policy.clone(), &w.jobs);
            let b = replay(w.cluster(), policy, &w.jobs);
            prop_assert_eq!(a.jobs, b.jobs);
        }
    }
}

#[test]
fn a_job_started_at_once_under_conservative_has_its_start_as_planned_start() {
    let w = Workload {
        nodes: 1,
        cpus: 4,
        jobs: vec![job(1).procs(4).time(10), job(2).procs(2).time(10).submit(3)],
    };
    let (r, at_submit, _) = replay_conservative(&w, EndSemantics::FreeAtExpectedEnd);
    assert_eq!(r.starts(), vec![(1, 0), (2, 10)]);
    assert_eq!(at_submit, [(1, 0), (2, 10)].into());
    // And a running job keeps it.
    let mut h = Harness::new(w.cluster(), Policy::Conservative);
    h.sched.submit(w.jobs[0].spec(), 0).unwrap();
    h.sched.schedule(0);
    let j = h.sched.job(JobId(1)).unwrap();
    assert_eq!(
        (j.state, j.start, j.planned_start),
        (JobState::Running, Some(0), Some(0))
    );
}

/// A random GPU machine and workload: 1-3 nodes of 8 CPUs with 1-4 GPUs each of 0-4
/// shards (GRES slot 0 `gpu`, slot 1 `shard`), and 1-30 one-node jobs asking whole
/// GPUs, shards or neither, now and then exclusive.
#[derive(Clone, Debug)]
struct GpuWorkload {
    gpus: u32,
    shards: u32,
    nodes: u32,
    jobs: Vec<JobBuilder>,
}

impl GpuWorkload {
    fn cluster(&self) -> Cluster {
        let mut c = cluster(self.nodes, 8);
        let gpu = c.gres.slot_for("gpu", None).unwrap();
        let shard = c.gres.slot_for("shard", None).unwrap();
        for n in &mut c.nodes {
            n.capacity.gres[gpu] = self.gpus;
            n.capacity.gres[shard] = self.gpus * self.shards;
        }
        c
    }
}

fn gpu_workload() -> impl Strategy<Value = GpuWorkload> {
    (1..=3u32, 1..=4u32, 0..=4u32, 1..=30usize).prop_flat_map(|(nodes, gpus, shards, n)| {
        let jobs: Vec<_> = (1..=n as u64)
            .map(move |id| {
                (
                    0..3u32,
                    1..=gpus,
                    1..=shards.max(1),
                    prop::bool::weighted(0.1),
                )
                    .prop_flat_map(move |(kind, k, s, exclusive)| {
                        (0..100i64, 1..60i64, 1..80i64, 1..=4u32).prop_map(
                            move |(submit, time, run, procs)| {
                                let mut j = job(id)
                                    .procs(procs)
                                    .one_node()
                                    .submit(submit)
                                    .time(time)
                                    .run(run);
                                j = match kind {
                                    0 => j.gpus(k),
                                    1 if shards > 0 => j.shards(s),
                                    _ => j,
                                };
                                if exclusive {
                                    j = j.exclusive();
                                }
                                j
                            },
                        )
                    })
            })
            .collect();
        jobs.prop_map(move |jobs| GpuWorkload {
            gpus,
            shards,
            nodes,
            jobs,
        })
    })
}

/// Every job starts, with the GPUs and shards it asked for; at no instant is a GPU
/// used whole by two jobs, used whole and shared, or shared beyond its shards.
fn check_gpu_replay(w: &GpuWorkload, r: &Replay) -> Result<(), TestCaseError> {
    prop_assert!(r.rejected.is_empty(), "refused: {:?}", r.rejected);
    prop_assert_eq!(r.jobs.len(), w.jobs.len(), "the queue did not drain");
    for j in &w.jobs {
        let a = &r.get(j.id).alloc.nodes[0];
        let (gpus, shards) = if j.request.exclusive {
            ((0..w.gpus).collect(), 0)
        } else {
            let whole: Vec<u32> = a.gpus.clone();
            prop_assert_eq!(whole.len() as u32, j.request.gres_per_node[0]);
            (whole, j.request.gres_per_node[1])
        };
        prop_assert_eq!(&a.gpus, &gpus, "job {} whole GPUs", j.id);
        prop_assert_eq!(a.shards.iter().map(|s| s.1).sum::<u32>(), shards);
    }
    for o in r.jobs.values() {
        let t = o.start;
        let node = o.alloc.nodes[0].node;
        let live: Vec<_> = r
            .jobs
            .values()
            .filter(|x| x.start <= t && t < x.finish)
            .flat_map(|x| x.alloc.nodes.iter().filter(|b| b.node == node))
            .collect();
        for g in 0..w.gpus {
            let whole = live.iter().filter(|b| b.gpus.contains(&g)).count();
            let shared: u32 = live
                .iter()
                .flat_map(|b| b.shards.iter().filter(|s| s.0 == g))
                .map(|s| s.1)
                .sum();
            prop_assert!(
                whole <= 1 && (whole == 0 || shared == 0) && shared <= w.shards,
                "GPU {} of node {} at {}: {} whole, {} shards",
                g,
                node,
                t,
                whole,
                shared
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn gpus_and_shards_are_never_given_twice(w in gpu_workload(), params in backfill_params()) {
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Conservative, Policy::Backfill(params)] {
            for ends in BOTH {
                let r = Harness::with_end_semantics(w.cluster(), policy.clone(), ends).run(&w.jobs);
                check_gpu_replay(&w, &r)?;
            }
        }
    }
}
