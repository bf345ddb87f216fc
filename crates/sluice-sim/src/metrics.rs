//! Metrics of a replay, with the literature's definitions.
//!
//! Which jobs count (as in the reference simulator): sort the finished jobs by finish
//! time (ties by id); skip the first 1 % of them (warm-up: ⌊N / 100⌋ positions of the
//! whole sorted list, tiny jobs included); of the rest, skip *tiny* jobs (estimate 1 s
//! and 1 processor) and stop at the first job finishing after the last submission
//! (cool-down). This is the reading that reproduces the reference results exactly
//! (SDSC-SP2: 49 positions holding 5 tiny jobs; KTH-SP2: 284 positions, none tiny).
//! For each counted job:
//! wait = start − submit; response = wait + run; bounded slowdown
//! = max(1, response / max(run, τ)) with τ = 10 s (Feitelson et al., "Theory and
//! practice in parallel job scheduling", 1997).

use std::collections::BTreeMap;

use serde::Serialize;
use sluice_core::Time;

use crate::replay::Replay;

/// τ of bounded slowdown, seconds.
pub const BSLD_TAU: f64 = 10.0;

/// Per-user averages over counted jobs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct UserMetrics {
    /// User id (-1: unknown).
    pub user: i64,
    /// Counted jobs of this user.
    pub jobs: u64,
    /// Average wait, minutes.
    pub avg_wait_min: f64,
    /// Average bounded slowdown.
    pub avg_bounded_slowdown: f64,
}

/// The metrics of one replay.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    /// Jobs that finished.
    pub jobs_finished: u64,
    /// Jobs refused at submission.
    pub jobs_rejected: u64,
    /// Jobs still waiting at the end, when nothing more could happen.
    pub jobs_never_started: u64,
    /// Jobs in the averages (see the module doc).
    pub jobs_counted: u64,
    /// Average wait, minutes.
    pub avg_wait_min: f64,
    /// Median wait, minutes.
    pub median_wait_min: f64,
    /// 95th-percentile wait (nearest rank), minutes.
    pub p95_wait_min: f64,
    /// Average response time (wait + run), minutes.
    pub avg_response_min: f64,
    /// Average bounded slowdown (τ = 10 s).
    pub avg_bounded_slowdown: f64,
    /// Busy processor-seconds over all finished jobs / (processors × makespan).
    pub utilization: f64,
    /// GPU-seconds held by jobs (whole GPUs; shared GPUs by fraction).
    pub gpu_seconds: f64,
    /// GPU-seconds / (GPUs × makespan); 0 without GPUs.
    pub gpu_utilization: f64,
    /// GPU-seconds idle on nodes too fragmented to host any waiting GPU job while all
    /// free GPUs together could have (see [`crate::fragmentation`]).
    pub fragmented_gpu_seconds: f64,
    /// GPU-seconds idle while some whole-GPU job waited.
    pub idle_gpu_seconds_while_waiting: f64,
    /// Finished jobs holding two or more whole GPUs.
    pub multi_gpu_jobs: u64,
    /// Share of [`Metrics::multi_gpu_jobs`] placed on as few nodes as their GPU count
    /// allows (`ceil(GPUs / most GPUs on one node)`); 1 when there are none.
    pub multi_gpu_fewest_nodes: f64,
    /// Finished jobs spanning two or more nodes in a tree topology.
    pub multi_node_jobs_in_topology: u64,
    /// Share of those whose nodes all hang off one leaf switch; 1 when there are none.
    pub multi_node_one_switch: f64,
    /// First submission to last finish, seconds.
    pub makespan_s: i64,
    /// Jobs killed at their time limit.
    pub jobs_timed_out: u64,
    /// Jobs that started while a job submitted before them was still waiting.
    pub jobs_backfilled: u64,
    /// Refusals by reason.
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// Jobs never started, by pending reason.
    pub never_started_by_reason: BTreeMap<String, u64>,
    /// Runs preempted (absent from JSON when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub preemptions: u64,
    /// Processor-seconds of work lost to preemption (absent from JSON when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub lost_proc_seconds: u64,
    /// Suspensions (by preemption or time-slicing), each resumed later (absent from JSON
    /// when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub suspensions: u64,
    /// Per-user averages, by user id.
    pub per_user: Vec<UserMetrics>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Computes the metrics of a replay. `last_submit` is the last submission time of the
/// trace (including refused jobs).
pub fn compute(replay: &Replay, last_submit: Time) -> Metrics {
    let mut by_finish: Vec<&crate::replay::JobRecord> = replay.records.iter().collect();
    by_finish.sort_by_key(|r| (r.finish, r.id));
    let warmup = by_finish.len() / 100;
    let counted: Vec<_> = by_finish
        .into_iter()
        .skip(warmup)
        .filter(|r| !(r.est == 1 && r.procs == 1))
        .take_while(|r| r.finish <= last_submit)
        .collect();
    let n = counted.len() as f64;
    let mut waits: Vec<i64> = counted.iter().map(|r| r.start - r.submit).collect();
    let bsld = |r: &crate::replay::JobRecord| {
        let response = (r.finish - r.submit) as f64;
        (response / (r.run as f64).max(BSLD_TAU)).max(1.0)
    };
    let avg = |sum: f64| if n > 0.0 { sum / n } else { 0.0 };
    let avg_wait_min = avg(waits.iter().sum::<i64>() as f64) / 60.0;
    let avg_response_min = avg(counted.iter().map(|r| (r.finish - r.submit) as f64).sum()) / 60.0;
    let avg_bounded_slowdown = avg(counted.iter().map(|r| bsld(r)).sum());
    waits.sort_unstable();
    let rank = |q: f64| -> f64 {
        if waits.is_empty() {
            return 0.0;
        }
        let k = ((q * waits.len() as f64).ceil() as usize).clamp(1, waits.len());
        waits[k - 1] as f64 / 60.0
    };
    let median_wait_min = if waits.is_empty() {
        0.0
    } else if waits.len() % 2 == 1 {
        waits[waits.len() / 2] as f64 / 60.0
    } else {
        (waits[waits.len() / 2 - 1] + waits[waits.len() / 2]) as f64 / 120.0
    };
    let first_submit = replay.records.iter().map(|r| r.submit).min().unwrap_or(0);
    let last_finish = replay.records.iter().map(|r| r.finish).max().unwrap_or(0);
    let makespan = (last_finish - first_submit).max(0);
    let busy: f64 = replay
        .records
        .iter()
        .map(|r| r.procs as f64 * r.run as f64)
        .sum();
    let utilization = if makespan > 0 && replay.total_cpus > 0 {
        busy / (replay.total_cpus as f64 * makespan as f64)
    } else {
        0.0
    };
    let gpu_seconds: f64 = replay
        .records
        .iter()
        .map(|r| r.gpu_milli as f64 / 1000.0 * r.run as f64)
        .sum();
    let gpu_utilization = if makespan > 0 && replay.total_gpu_milli > 0 {
        gpu_seconds / (replay.total_gpu_milli as f64 / 1000.0 * makespan as f64)
    } else {
        0.0
    };
    let multi: Vec<_> = replay.records.iter().filter(|r| r.gpus >= 2).collect();
    let fewest = multi
        .iter()
        .filter(|r| r.nodes <= r.gpus.div_ceil(replay.max_gpus_per_node.max(1)))
        .count();
    let multi_gpu_fewest_nodes = if multi.is_empty() {
        1.0
    } else {
        fewest as f64 / multi.len() as f64
    };
    let spanning: Vec<_> = replay
        .records
        .iter()
        .filter(|r| r.nodes >= 2 && r.switches > 0)
        .collect();
    let multi_node_one_switch = if spanning.is_empty() {
        1.0
    } else {
        spanning.iter().filter(|r| r.switches == 1).count() as f64 / spanning.len() as f64
    };
    let mut users: BTreeMap<u32, (u64, f64, f64)> = BTreeMap::new();
    for r in &counted {
        let e = users.entry(r.user).or_default();
        e.0 += 1;
        e.1 += (r.start - r.submit) as f64;
        e.2 += bsld(r);
    }
    Metrics {
        jobs_finished: replay.records.len() as u64,
        jobs_rejected: replay.rejected.len() as u64,
        jobs_never_started: replay.never_started.len() as u64,
        jobs_counted: counted.len() as u64,
        avg_wait_min,
        median_wait_min,
        p95_wait_min: rank(0.95),
        avg_response_min,
        avg_bounded_slowdown,
        utilization,
        gpu_seconds,
        gpu_utilization,
        fragmented_gpu_seconds: replay.fragmented_gpu_seconds,
        idle_gpu_seconds_while_waiting: replay.idle_gpu_seconds_while_waiting,
        multi_gpu_jobs: multi.len() as u64,
        multi_gpu_fewest_nodes,
        multi_node_jobs_in_topology: spanning.len() as u64,
        multi_node_one_switch,
        makespan_s: makespan,
        jobs_timed_out: replay.records.iter().filter(|r| r.timed_out).count() as u64,
        jobs_backfilled: replay.records.iter().filter(|r| r.backfilled).count() as u64,
        rejected_by_reason: count_by(replay.rejected.iter().map(|(_, why)| why.as_str())),
        never_started_by_reason: count_by(replay.never_started.iter().map(|(_, why)| *why)),
        preemptions: replay.preemptions,
        lost_proc_seconds: replay.lost_proc_seconds,
        suspensions: replay.suspensions,
        per_user: users
            .into_iter()
            .map(|(user, (k, w, b))| UserMetrics {
                user: if user == crate::setup::UNKNOWN_USER {
                    -1
                } else {
                    user as i64
                },
                jobs: k,
                avg_wait_min: w / k as f64 / 60.0,
                avg_bounded_slowdown: b / k as f64,
            })
            .collect(),
    }
}

fn count_by<'a>(reasons: impl Iterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for r in reasons {
        *m.entry(r.to_string()).or_insert(0) += 1;
    }
    m
}
