//! What a reservation set aside and what its jobs used of it, so far: the numbers
//! behind "this reservation sat idle" (`sluice reservations --idle`, the simulator's
//! report, the controller's log line).

use crate::ids::JobId;
use crate::job::JobState;
use crate::scheduler::Scheduler;
use crate::time::Time;

/// Reserved and used capacity of one reservation, accumulated over its windows up to
/// the last pass. Node-seconds count whole nodes of node reservations; GPU-seconds
/// count the GPUs it holds (all of its nodes' GPUs for a node reservation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResvUsage {
    /// Accounted up to this time (seconds).
    pub since: Time,
    /// Node-seconds reserved so far (nodes × seconds of window passed); 0 for a
    /// `TRES=` (GPU-only) reservation.
    pub reserved_node_s: u64,
    /// Node-seconds during which one of its nodes ran at least one of its jobs.
    pub used_node_s: u64,
    /// GPU-seconds reserved so far.
    pub reserved_gpu_s: u64,
    /// GPU-seconds its jobs used on its nodes (at most what it reserves).
    pub used_gpu_s: u64,
    /// Since when its window has been open with none of its jobs running; `None` while
    /// one runs or outside its window.
    pub idle_since: Option<Time>,
}

impl ResvUsage {
    /// Node-seconds reserved and not used.
    pub fn idle_node_s(&self) -> u64 {
        self.reserved_node_s.saturating_sub(self.used_node_s)
    }

    /// GPU-seconds reserved and not used.
    pub fn idle_gpu_s(&self) -> u64 {
        self.reserved_gpu_s.saturating_sub(self.used_gpu_s)
    }
}

/// (nodes of the reservation it runs on, GPUs it uses there) for a job of `name`.
fn job_share(s: &Scheduler, name: &str, id: JobId) -> (u64, u64) {
    let (Some(resv), Some(job)) = (s.resv.resvs.get(name), s.jobs.get(&id)) else {
        return (0, 0);
    };
    let gpu = s.cluster.gpu_slot();
    let Some(alloc) = job.alloc.as_ref() else {
        return (0, 0);
    };
    let mut nodes = 0;
    let mut gpus = 0u64;
    for a in &alloc.nodes {
        if let Some((_, held)) = resv.held.iter().find(|(n, _)| *n == a.node) {
            nodes += 1;
            if let Some(g) = gpu {
                gpus += a.usage.gres[g].min(held.gres[g]) as u64;
            }
        }
    }
    (nodes, gpus)
}

fn held_gpus(s: &Scheduler, name: &str) -> u64 {
    let gpu = s.cluster.gpu_slot();
    s.resv.resvs[name]
        .held
        .iter()
        .map(|(_, r)| gpu.map_or(0, |g| r.gres[g] as u64))
        .sum()
}

/// Charges the time from each reservation's last account to `now`.
pub(crate) fn account(s: &mut Scheduler, now: Time) {
    let names: Vec<String> = s.resv.resvs.keys().cloned().collect();
    for name in names {
        let r = &s.resv.resvs[&name];
        let (from, to) = (r.usage.since.max(r.start), now.min(r.end));
        let whole_nodes = r.gpus.is_none();
        let node_count = r.held.len() as u64;
        let gpus_held = held_gpus(s, &name);
        let mut used_nodes = 0u64;
        let mut used_gpus = 0u64;
        let mut running = false;
        for (&id, n) in &s.resv.bound {
            if *n != name {
                continue;
            }
            let Some(job) = s.jobs.get(&id).filter(|j| j.state == JobState::Running) else {
                continue;
            };
            let start = job.start.unwrap_or(from).max(from);
            if to > start {
                let (k, g) = job_share(s, &name, id);
                used_nodes += k * (to - start) as u64;
                used_gpus += g * (to - start) as u64;
            }
            running = true;
        }
        let r = s.resv.resvs.get_mut(&name).expect("listed");
        if to > from {
            let d = (to - from) as u64;
            if whole_nodes {
                r.usage.reserved_node_s += node_count * d;
                r.usage.used_node_s =
                    (r.usage.used_node_s + used_nodes).min(r.usage.reserved_node_s);
            }
            r.usage.reserved_gpu_s += gpus_held * d;
            r.usage.used_gpu_s = (r.usage.used_gpu_s + used_gpus).min(r.usage.reserved_gpu_s);
        }
        r.usage.since = r.usage.since.max(now);
        r.usage.idle_since = if running || !r.active_at(now) {
            None
        } else {
            Some(r.usage.idle_since.unwrap_or(from.min(now)))
        };
    }
}

/// Charges a job of a reservation that ends at `now` for its time since the last
/// account (the next [`account`] no longer sees it).
pub(crate) fn job_gone(s: &mut Scheduler, id: JobId, now: Time) {
    let Some(name) = s.resv.bound.get(&id).cloned() else {
        return;
    };
    let Some(r) = s.resv.resvs.get(&name) else {
        return;
    };
    let Some(job) = s.jobs.get(&id).filter(|j| j.state == JobState::Running) else {
        return;
    };
    let from = r.usage.since.max(r.start).max(job.start.unwrap_or(now));
    let to = now.min(r.end);
    let d = to.saturating_sub(from).max(0) as u64;
    let (k, g) = job_share(s, &name, id);
    let whole_nodes = r.gpus.is_none();
    let r = s.resv.resvs.get_mut(&name).expect("checked");
    // Idle from now on unless another of its jobs still runs (the next account says).
    r.usage.idle_since = Some(now);
    if whole_nodes {
        r.usage.used_node_s += k * d;
    }
    r.usage.used_gpu_s += g * d;
}
