//! What sreport's reports count, computed from the stored jobs to the second (Slurm
//! rolls its usage up by the hour; Sluice keeps no rollup and needs none).
//!
//! For one TRES (`cpu` unless `-T` names others) over a period:
//! - **Allocated**: each job run's allocated count times the seconds of its run inside
//!   the period (earlier runs of requeued jobs included; a run still going counts up
//!   to now).
//! - **Planned** (Slurm's reserved time): each job's requested count times the seconds
//!   it was eligible and waiting inside the period (from its eligible time, or its
//!   submission, to its start), as Slurm's rollup counts pending jobs.
//! - **Down**, **PLND Down**: nodes' down and powered-down time; Sluice's store keeps
//!   no history of node states, so both are 0.
//! - **Idle**: the rest of the cluster's capacity (its current count times the seconds
//!   of the period the cluster has records for); when the figures exceed the capacity,
//!   the excess is taken from the planned time and shown as over-committed (Slurm's
//!   `Over Comm`), as Slurm's rollup does.
//! - **Reported**: allocated + down + planned down + idle + planned.
//!
//! Users' and associations' usage is their jobs' allocated time.

use std::collections::BTreeMap;

use sluice_proto::types::{JobRecord, NodeInfo};

use super::period::Period;

/// One TRES's figures for the cluster over the period, in count × seconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterTres {
    /// The TRES's count (e.g. the cluster's CPUs).
    pub count: u64,
    /// Allocated to jobs.
    pub alloc: u64,
    /// Nodes down.
    pub down: u64,
    /// Nodes powered down (planned).
    pub pdown: u64,
    /// Nothing on it.
    pub idle: u64,
    /// Held for waiting jobs (Slurm's reserved, now planned).
    pub plan: u64,
    /// Allocated beyond the capacity.
    pub over: u64,
}

impl ClusterTres {
    /// Reported: everything accounted for.
    pub fn reported(&self) -> u64 {
        self.alloc + self.down + self.pdown + self.idle + self.plan
    }
}

/// Reads a count from a TRES string's value: `4`, or memory as `4000M`, `3.50G`,
/// `2T` (MiB).
fn tres_value(v: &str) -> u64 {
    let (num, mult) = match v.chars().last() {
        Some('K') => (&v[..v.len() - 1], 1.0 / 1024.0),
        Some('M') => (&v[..v.len() - 1], 1.0),
        Some('G') => (&v[..v.len() - 1], 1024.0),
        Some('T') => (&v[..v.len() - 1], 1024.0 * 1024.0),
        Some('P') => (&v[..v.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (v, 1.0),
    };
    num.parse::<f64>().map_or(0, |n| (n * mult).round() as u64)
}

/// The cluster's count of `tres` (`cpu`, `mem` in MiB, `node`, `gres/gpu`, ...): the
/// sum over its nodes as configured now.
pub fn cluster_count(nodes: &[NodeInfo], tres: &str) -> u64 {
    match tres {
        "cpu" => nodes.iter().map(|n| u64::from(n.cpus)).sum(),
        "node" => nodes.len() as u64,
        _ => nodes
            .iter()
            .flat_map(|n| n.cfg_tres.split(','))
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == tres)
            .map(|(_, v)| tres_value(v))
            .sum(),
    }
}

/// `job`'s allocated count of `tres` (`AllocTRES`; for records without it, CPUs,
/// nodes and GPUs from the allocation).
pub fn job_alloc(job: &JobRecord, tres: &str) -> u64 {
    if let Some((_, n)) = job.tres_alloc.iter().find(|(t, _)| t == tres) {
        return *n;
    }
    if !job.tres_alloc.is_empty() {
        return 0;
    }
    match tres {
        "cpu" => job.cpus_per_node.iter().map(|&c| u64::from(c)).sum(),
        "node" => job.nodes.len() as u64,
        "gres/gpu" => job.gpus_per_node.iter().map(|g| g.len() as u64).sum(),
        _ => 0,
    }
}

/// `job`'s requested count of `tres` (`ReqTRES`; for records without it, CPUs from the
/// request).
pub fn job_req(job: &JobRecord, tres: &str) -> u64 {
    if let Some((_, n)) = job.tres_req.iter().find(|(t, _)| t == tres) {
        return *n;
    }
    match tres {
        "cpu" if job.tres_req.is_empty() => {
            u64::from(job.ntasks.max(1)) * u64::from(job.cpus_per_task.max(1))
        }
        _ => 0,
    }
}

/// The seconds of `[from, to)` inside `p`.
fn inside(from: i64, to: i64, p: &Period) -> u64 {
    (to.min(p.end) - from.max(p.start)).max(0) as u64
}

/// The seconds `job`'s run spent inside `p` (up to `now` for one still going).
pub fn run_secs(job: &JobRecord, p: &Period, now: i64) -> u64 {
    match job.start_time {
        Some(s) => inside(s, job.end_time.unwrap_or(now), p),
        None => 0,
    }
}

/// The seconds `job` waited eligible inside `p`: from its eligible time (its
/// submission when not recorded) to its start (or its end, for a job that never
/// started, or now).
pub fn wait_secs(job: &JobRecord, p: &Period, now: i64) -> u64 {
    let eligible = job.accrue_time.unwrap_or(job.submit_time);
    let until = job.start_time.or(job.end_time).unwrap_or(now);
    inside(eligible, until, p)
}

/// The cluster's figures for `tres` over `p`: `runs` (every run of every job that
/// may touch the period), its `count`, and `around`, the seconds of the period the
/// cluster has records for.
pub fn cluster_tres(
    runs: &[&JobRecord],
    tres: &str,
    count: u64,
    around: u64,
    p: &Period,
    now: i64,
) -> ClusterTres {
    let mut c = ClusterTres {
        count,
        ..ClusterTres::default()
    };
    let total = count * around;
    for j in runs {
        c.alloc += job_alloc(j, tres) * run_secs(j, p, now);
        // A job's wait counts once, on its latest record (not on earlier runs).
        if j.state != sluice_proto::types::JobState::Requeued {
            c.plan += job_req(j, tres) * wait_secs(j, p, now);
        }
    }
    // As Slurm's rollup: what does not fit is taken from the planned time and shown
    // as over-committed (allocated time is never cut).
    let used = c.alloc + c.down + c.pdown;
    let idle = total as i64 - used as i64 - c.plan as i64;
    if idle < 0 {
        c.plan = (c.plan as i64 + idle).max(0) as u64;
        c.over = idle.unsigned_abs();
        c.idle = 0;
    } else {
        c.idle = idle as u64;
    }
    c
}

/// Allocated count × seconds of `tres` inside `p` per (account, user).
pub fn assoc_usage(
    runs: &[&JobRecord],
    tres: &str,
    p: &Period,
    now: i64,
) -> BTreeMap<(String, String), u64> {
    let mut by: BTreeMap<(String, String), u64> = BTreeMap::new();
    for j in runs {
        let used = job_alloc(j, tres) * run_secs(j, p, now);
        if used > 0 {
            *by.entry((j.account.clone(), j.user.clone())).or_default() += used;
        }
    }
    by
}
