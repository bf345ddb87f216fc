//! GPU fragmentation over a replay: GPUs left idle, while GPU jobs wait, only because
//! they are scattered.
//!
//! At every instant at which whole-GPU jobs wait, let `g` be the smallest number of
//! GPUs per node any of them asks. A node with fewer than `g` whole GPUs free cannot
//! host any of them, whatever else it has free: its free GPUs are *fragmented* if the
//! free GPUs of all nodes together would hold `g` (they could have run a waiting job
//! had they been together). Integrated over time this gives fragmented GPU-seconds.
//! Idle GPUs on nodes that could host `g` GPUs are not fragmented: the job waits for
//! something else there (processors, memory, GPU model, its priority).
//!
//! A GPU counts as whole-free when no job holds it, nor any of its shards: the core's
//! count of a node's free GPUs, in which a shared GPU is taken (see
//! `sluice_core::gpus`). Jobs that ask only shards are left out of `g`.
//! This follows the spirit of Weng et al., "Beware of Fragmentation" (USENIX ATC 2023),
//! measured on the waiting queue rather than on a modelled workload distribution.

use std::collections::BTreeMap;

use sluice_core::{Cluster, NodeState, Profile, Time};

/// Tracks waiting GPU demand and integrates fragmented and idle GPU-seconds.
#[derive(Clone, Debug, Default)]
pub struct FragmentationWatch {
    gpu: Option<usize>,
    /// Waiting whole-GPU jobs by GPUs per node: count.
    waiting: BTreeMap<u32, u32>,
    /// Since when the current rates hold, and what they are (GPUs).
    since: Option<Time>,
    fragmented_now: u64,
    idle_waiting_now: u64,
    /// Fragmented GPU-seconds so far.
    pub fragmented_gpu_seconds: f64,
    /// GPU-seconds idle while some whole-GPU job waited.
    pub idle_gpu_seconds_while_waiting: f64,
}

impl FragmentationWatch {
    /// A watch for `cluster` (inert without a `gpu` GRES).
    pub fn new(cluster: &Cluster) -> Self {
        FragmentationWatch {
            gpu: cluster.gres.find("gpu", None),
            ..Default::default()
        }
    }

    /// A job asking `gpus_per_node` whole GPUs per node started waiting (0: ignored).
    pub fn waiting(&mut self, gpus_per_node: u32) {
        if gpus_per_node > 0 {
            *self.waiting.entry(gpus_per_node).or_default() += 1;
        }
    }

    /// A job asking `gpus_per_node` whole GPUs per node stopped waiting.
    pub fn not_waiting(&mut self, gpus_per_node: u32) {
        if let Some(n) = self.waiting.get_mut(&gpus_per_node) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&gpus_per_node);
            }
        }
    }

    /// Closes the interval up to `t` at the rates measured last, then measures the
    /// state at `t` (after the instant's decisions) from `profile`.
    pub fn observe(&mut self, t: Time, cluster: &Cluster, profile: &Profile) {
        self.advance(t);
        self.fragmented_now = 0;
        self.idle_waiting_now = 0;
        let (Some(gpu), Some(&g)) = (self.gpu, self.waiting.keys().next()) else {
            return;
        };
        let mut total = 0u64;
        let mut scattered = 0u64;
        for (i, node) in cluster.nodes.iter().enumerate() {
            if node.state != NodeState::Up || node.capacity.gres[gpu] == 0 {
                continue;
            }
            let whole = profile.free_at(sluice_core::NodeId(i as u32), t).gres[gpu];
            total += whole as u64;
            if whole < g {
                scattered += whole as u64;
            }
        }
        self.idle_waiting_now = total;
        if total >= g as u64 {
            self.fragmented_now = scattered;
        }
    }

    /// Accumulates the current rates up to `t`.
    pub fn advance(&mut self, t: Time) {
        if let Some(since) = self.since {
            let dt = (t - since).max(0) as f64;
            self.fragmented_gpu_seconds += self.fragmented_now as f64 * dt;
            self.idle_gpu_seconds_while_waiting += self.idle_waiting_now as f64 * dt;
        }
        self.since = Some(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_core::{Node, NodeId, Resources};

    fn cluster(gpus: &[u32]) -> Cluster {
        let mut c = Cluster::default();
        let gpu = c.gres.slot_for("gpu", None).unwrap();
        for (i, &g) in gpus.iter().enumerate() {
            let mut n = Node::new(format!("n{i}"), 8, 0);
            n.capacity.gres[gpu] = g;
            c.nodes.push(n);
        }
        c
    }

    fn gpus(n: u32) -> Resources {
        let mut r = Resources::default();
        r.gres[0] = n;
        r
    }

    /// Two 4-GPU nodes, 3 GPUs busy on each from 0 to 100: 2 GPUs free, scattered.
    /// A 2-GPU job waits from 10 to 60: fragmented 2 GPUs × 50 s. From 60 a 4-GPU job
    /// waits alone: 2 free GPUs cannot hold 4 even together, so nothing is fragmented
    /// (idle, yes).
    #[test]
    fn scattered_gpus_count_only_while_a_waiting_job_could_use_them_together() {
        let c = cluster(&[4, 4]);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 0, 100, &gpus(3));
        p.claim(NodeId(1), 0, 100, &gpus(3));
        let mut w = FragmentationWatch::new(&c);
        w.observe(0, &c, &p);
        w.waiting(2);
        w.observe(10, &c, &p);
        w.not_waiting(2);
        w.waiting(4);
        w.observe(60, &c, &p);
        w.advance(100);
        assert_eq!(w.fragmented_gpu_seconds, 100.0);
        assert_eq!(w.idle_gpu_seconds_while_waiting, 2.0 * 90.0);
    }
}
