//! Explanations tell the truth: for many generated pending situations, the predicted
//! start of a pending job, and the start of every change suggested to it, are checked
//! against an independent replay.
//!
//! Each seed builds a small random cluster (a few node shapes, some with GPUs and a
//! feature, one or two overlapping partitions), a random policy (Slurm's backfill with
//! its defaults or with a tight `bf_max_job_test`, EASY, conservative, FCFS), sometimes
//! an accounting limit on GPUs, and random jobs arriving over the first hour. The replay
//! below runs them to a random `now`, with every job ending at its time limit; then some
//! pending jobs are explained. The check replays the situation forward from `now` on a
//! copy, with no new arrivals and jobs ending at their expected ends (a pass at every
//! instant where something ends or the scheduler asks to be woken), using only the
//! scheduler's public API and none of the explain module's machinery:
//!
//! 1. the job starts exactly at the predicted time, on the predicted nodes (or does not
//!    start within the horizon when none is predicted);
//! 2. for each suggested change, the copy with the job changed
//!    (`Scheduler::update_pending`) starts it exactly at the suggested time and nodes,
//!    strictly before the unchanged prediction.
//!
//! A failure names the seed; `SEED=n cargo test -p sluice-sim --test explain_truth`
//! reruns one.

use std::collections::BTreeMap;

use sluice_core::explain::{explain, explain_with, forecast, Alternative, ExplainOptions, NoStart};
use sluice_core::limits::{AccountLimits, Assoc, AssocId, Enforce, JobAcct, Limits, TresKind};
use sluice_core::{
    BackfillParams, Cluster, Decision, EndSemantics, JobId, JobRequest, JobSpec, JobState, Node,
    NodeId, Partition, PartitionId, Policy, Scheduler, Time,
};

/// SplitMix64, seeded explicitly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.range(1, 100) <= percent
    }
}

const HORIZON: i64 = 14 * 86_400;

/// A situation: the scheduler and the jobs still to arrive.
struct World {
    sched: Scheduler,
    arrivals: Vec<JobSpec>,
}

fn cluster(rng: &mut Rng) -> Cluster {
    let mut c = Cluster::default();
    let gpu = c.gres.slot_for("gpu", None).unwrap();
    let big = c.feature_bit("big").unwrap();
    let shapes = [(16, 0), (32, 4), (64, 8), (32, 8)];
    let kinds = rng.range(2, 3) as usize;
    let first = rng.range(0, 3) as usize;
    let nodes = rng.range(3, 8);
    for i in 0..nodes {
        let (cpus, gpus) = shapes[(first + i as usize % kinds) % shapes.len()];
        let mut n = Node::new(format!("n{i:02}"), cpus, 128_000);
        n.capacity.gres[gpu] = gpus;
        if gpus == 8 && rng.chance(50) {
            n.features = big;
        }
        c.nodes.push(n);
    }
    let all: Vec<NodeId> = (0..nodes as u32).map(NodeId).collect();
    let mut batch = Partition::new("batch", all.clone());
    batch.is_default = true;
    c.partitions.push(batch);
    if rng.chance(50) {
        // An overlapping partition of the first half, sometimes of higher tier.
        let mut half = Partition::new("half", all[..all.len().div_ceil(2)].to_vec());
        half.priority_tier = if rng.chance(30) { 2 } else { 1 };
        c.partitions.push(half);
    }
    c
}

fn policy(rng: &mut Rng) -> Policy {
    match rng.range(0, 4) {
        0 => Policy::Backfill(BackfillParams::default()),
        1 => Policy::Backfill(BackfillParams {
            interval: 1,
            resolution: 1,
            max_job_test: 4,
            window: 6 * 3600,
            ..Default::default()
        }),
        2 => Policy::Easy,
        3 => Policy::Conservative,
        _ => Policy::Fcfs,
    }
}

/// `root` (1) over `lab` (2), users 1001 and 1002 in it (10, 11); `lab` may hold
/// `gpus` GPUs.
fn gpu_limit(gpus: u64) -> AccountLimits {
    let mut db = AccountLimits {
        enforce: Enforce {
            limits: true,
            safe: false,
        },
        ..Default::default()
    };
    for (id, parent, user) in [
        (1, None, false),
        (2, Some(1), false),
        (10, Some(2), true),
        (11, Some(2), true),
    ] {
        db.assocs.insert(
            AssocId(id),
            Assoc {
                parent: parent.map(AssocId),
                user,
                limits: Limits::default(),
            },
        );
    }
    db.assocs.get_mut(&AssocId(2)).unwrap().limits.grp_tres = vec![(TresKind::Gres(0), gpus)];
    db
}

fn job(rng: &mut Rng, id: u64, c: &Cluster) -> JobSpec {
    let max_gpus = c
        .nodes
        .iter()
        .map(|n| n.capacity.gres[0])
        .max()
        .unwrap_or(0);
    let mut r = JobRequest::procs(rng.range(1, 16) as u32).on_one_node();
    if rng.chance(20) {
        let n = rng.range(2, 3) as u32;
        r.min_nodes = n;
        r.max_nodes = n;
        r.ntasks = r.ntasks.max(n);
    }
    if max_gpus > 0 && rng.chance(60) {
        r.gres_per_node[0] = rng.range(1, u64::from(max_gpus)) as u32;
    }
    r.exclusive = rng.chance(10);
    if rng.chance(10) {
        r.features_any = 1;
    }
    let user = 1001 + rng.range(0, 1) as u32;
    JobSpec {
        id: JobId(id),
        user,
        partition: PartitionId(rng.range(0, c.partitions.len() as u64 - 1) as u16),
        submit: rng.range(0, 3600) as Time,
        begin: 0,
        request: r,
        time_limit: rng.range(5, 240) as i64 * 60,
        priority: rng.range(1, 100) as u32,
        acct: JobAcct {
            assoc: Some(AssocId(10 + user - 1001)),
            ..Default::default()
        },
    }
}

fn world(seed: u64) -> World {
    let mut rng = Rng(seed);
    let c = cluster(&mut rng);
    let policy = policy(&mut rng);
    let ends = if rng.chance(50) {
        EndSemantics::FreeAtExpectedEnd
    } else {
        EndSemantics::HoldUntilReported
    };
    let mut sched = Scheduler::with_end_semantics(c, policy, ends);
    if rng.chance(30) {
        sched.set_account_limits(gpu_limit(rng.range(4, 12)));
    }
    let n = rng.range(15, 35);
    let mut arrivals: Vec<JobSpec> = (1..=n).map(|i| job(&mut rng, i, sched.cluster())).collect();
    for a in &mut arrivals {
        a.begin = a.submit;
    }
    arrivals.sort_by_key(|j| (j.submit, j.id));
    World { sched, arrivals }
}

/// Runs `s` from `t` (ends due, arrivals due, one pass per instant) until `watch`
/// starts, returning when and where; or, without `watch`, up to (not including) `until`.
fn replay(
    s: &mut Scheduler,
    arrivals: &mut Vec<JobSpec>,
    mut t: Time,
    until: Time,
    watch: Option<JobId>,
) -> Option<(Time, Vec<NodeId>)> {
    loop {
        let mut due: Vec<(Time, JobId)> = s
            .jobs()
            .filter(|j| j.state == JobState::Running)
            .map(|j| (j.expected_end().unwrap(), j.id()))
            .filter(|(end, _)| *end <= t)
            .collect();
        due.sort();
        for (_, id) in due {
            s.job_ended(id, t);
        }
        while arrivals.first().is_some_and(|a| a.submit <= t) {
            let a = arrivals.remove(0);
            let _ = s.submit(a, t);
        }
        for d in s.schedule(t) {
            if let Decision::Start { job, alloc, .. } = d {
                if Some(job) == watch {
                    return Some((t, alloc.node_ids().collect()));
                }
            }
        }
        let next = s
            .jobs()
            .filter(|j| j.state == JobState::Running)
            .map(|j| j.expected_end().unwrap())
            .chain(arrivals.first().map(|a| a.submit))
            .chain(s.next_wakeup())
            .filter(|&x| x > t)
            .min()?;
        if next >= until {
            return None;
        }
        t = next;
    }
}

/// Checks the explanations of up to three pending jobs of seed `seed`; returns how many
/// predictions and suggestions were checked.
fn check_seed(seed: u64) -> (usize, usize) {
    let World {
        mut sched,
        mut arrivals,
    } = world(seed);
    let mut rng = Rng(seed ^ 0x5EED);
    let now = rng.range(600, 4000) as Time;
    replay(&mut sched, &mut arrivals, 0, now, None);
    if rng.chance(50) {
        sched.schedule(now); // sometimes the pass at `now` has run already
    }
    let alternatives: Vec<Alternative> = (0..sched.cluster().partitions.len() as u16)
        .map(|p| Alternative {
            partition: Some(PartitionId(p)),
            qos: None,
            priority: None,
        })
        .collect();
    let options = ExplainOptions {
        horizon: HORIZON,
        alternatives,
        max_passes: 100_000,
        counterfactual_passes: 1_000_000,
        ..Default::default()
    };
    let pending: Vec<JobId> = sched.pending().map(|j| j.id()).collect();
    let picks: Vec<JobId> = pending.iter().rev().step_by(3).take(3).copied().collect();
    let (mut predictions, mut suggestions) = (0, 0);
    let forward = |s: &Scheduler, id: JobId| {
        let mut copy = s.clone();
        replay(&mut copy, &mut Vec::new(), now, now + HORIZON + 1, Some(id))
    };
    // One forecast for the whole queue: every pending job's start in it is its start
    // in the replay, and explaining from it changes nothing.
    let whole = forecast(&sched, now, now + HORIZON, 100_000);
    for &id in &pending {
        let predicted = whole.start_of(&sched, id).expect("pending when made");
        let truth = forward(&sched, id);
        match predicted {
            Ok(p) => assert_eq!(
                truth,
                Some((p.at, p.nodes.clone())),
                "seed {seed}: forecast of job {id}"
            ),
            Err(NoStart::StillPending { .. }) => {
                assert_eq!(truth, None, "seed {seed}: forecast of job {id}")
            }
            Err(other) => panic!("seed {seed}: forecast of job {id}: {other:?}"),
        }
        predictions += 1;
    }
    for id in picks {
        let e = explain(&sched, id, now, &options).expect("pending job");
        let from_forecast = explain_with(&sched, id, now, &options, Some(&whole));
        assert_eq!(
            from_forecast.as_ref(),
            Some(&e),
            "seed {seed}: job {id} from the forecast"
        );
        let truth = forward(&sched, id);
        let unchanged = match &e.start {
            Ok(p) => {
                assert_eq!(
                    truth,
                    Some((p.at, p.nodes.clone())),
                    "seed {seed}: job {id} predicted at {} on {:?}",
                    p.at,
                    p.nodes
                );
                predictions += 1;
                Some(p.at)
            }
            Err(NoStart::StillPending { .. } | NoStart::NeverFits(_)) => {
                assert_eq!(truth, None, "seed {seed}: job {id} predicted not to start");
                predictions += 1;
                None
            }
            Err(NoStart::Budget { .. }) => panic!("seed {seed}: budget reached"),
        };
        for cf in &e.counterfactuals {
            let mut copy = sched.clone();
            copy.update_pending(cf.spec.clone(), now)
                .unwrap_or_else(|err| panic!("seed {seed}: {:?} refused: {err}", cf.change));
            let changed = forward(&copy, id);
            assert_eq!(
                changed,
                Some((cf.at, cf.nodes.clone())),
                "seed {seed}: job {id} with {:?} predicted at {}",
                cf.change,
                cf.at
            );
            assert!(
                unchanged.is_none_or(|u| cf.at < u),
                "seed {seed}: job {id}: {:?} at {} is no sooner than {unchanged:?}",
                cf.change,
                cf.at
            );
            suggestions += 1;
        }
    }
    (predictions, suggestions)
}

#[test]
fn predictions_and_suggestions_hold_when_replayed() {
    let seeds: Vec<u64> = match std::env::var("SEED") {
        Ok(s) => vec![s.parse().expect("SEED is a number")],
        Err(_) => (1..=120).collect(),
    };
    let mut totals = BTreeMap::new();
    for seed in seeds {
        let (p, s) = check_seed(seed);
        *totals.entry("predictions").or_insert(0) += p;
        *totals.entry("suggestions").or_insert(0) += s;
    }
    // The generator must really exercise both.
    if std::env::var("SEED").is_err() {
        assert!(totals["predictions"] >= 180, "{totals:?}");
        assert!(totals["suggestions"] >= 50, "{totals:?}");
    }
}
