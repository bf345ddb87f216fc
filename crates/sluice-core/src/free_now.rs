//! What every node has free *now* (capacity minus running jobs), with per-partition
//! totals that answer "could this job possibly start now?" in constant time.
//!
//! The answer is a necessary condition only: a job that passes still goes through the
//! exact check against the availability profile. On a loaded cluster most passes start
//! nothing, and this filter lets them say so without looking at every node.

use std::collections::BTreeSet;

use crate::cluster::{Cluster, NodeState};
use crate::ids::{NodeId, PartitionId};
use crate::job::{JobRequest, NodeAlloc};
use crate::placement::PlacementKey;
use crate::tres::{Resources, MAX_GRES};

#[derive(Clone, Debug, Default)]
struct PartitionTotals {
    /// Σ free processors over the partition's schedulable nodes.
    cpus: u64,
    /// Σ free GRES per slot.
    gres: [u64; MAX_GRES],
    /// Schedulable nodes with nothing running.
    idle_nodes: u32,
    /// Schedulable nodes.
    up_nodes: u32,
    /// Schedulable nodes by their [`PlacementKey`]: the order in which node selection
    /// looks at them.
    by_rank: BTreeSet<PlacementKey>,
    /// The most free processors on one schedulable node, as a multiset (count per value).
    roomiest: std::collections::BTreeMap<u32, u32>,
}

/// Free resources now, per node and per partition.
#[derive(Clone, Debug)]
pub(crate) struct FreeNow {
    free: Vec<Resources>,
    node_partitions: Vec<Vec<PartitionId>>,
    totals: Vec<PartitionTotals>,
}

impl FreeNow {
    /// Everything free: no job runs yet.
    pub(crate) fn new(cluster: &Cluster) -> Self {
        let mut f = FreeNow {
            free: cluster.nodes.iter().map(|n| n.capacity).collect(),
            node_partitions: Self::members(cluster),
            totals: vec![PartitionTotals::default(); cluster.partitions.len()],
        };
        f.recount(cluster);
        f
    }

    /// Each node's partitions.
    fn members(cluster: &Cluster) -> Vec<Vec<PartitionId>> {
        let mut node_partitions = vec![Vec::new(); cluster.nodes.len()];
        for (pi, p) in cluster.partitions.iter().enumerate() {
            for n in &p.nodes {
                node_partitions[n.index()].push(PartitionId(pi as u16));
            }
        }
        node_partitions
    }

    /// A node joined `cluster` (the last of its nodes), or node `node`'s capacity
    /// changed while nothing ran there: all of it free.
    pub(crate) fn set_idle(&mut self, cluster: &Cluster, node: NodeId) {
        let cap = cluster.node(node).capacity;
        if node.index() == self.free.len() {
            self.free.push(cap);
        } else {
            self.free[node.index()] = cap;
        }
        self.set_members(cluster);
    }

    /// Takes the partitions' members anew (a partition's nodes changed) and recounts;
    /// what is free on each node stays.
    pub(crate) fn set_members(&mut self, cluster: &Cluster) {
        self.node_partitions = Self::members(cluster);
        self.recount(cluster);
    }

    /// Recomputes the partition totals from the per-node values (after node state changes).
    pub(crate) fn recount(&mut self, cluster: &Cluster) {
        for t in &mut self.totals {
            *t = PartitionTotals::default();
        }
        for (i, node) in cluster.nodes.iter().enumerate() {
            if node.state == NodeState::Up {
                self.add_node(cluster, NodeId(i as u32), 1);
                for p in &self.node_partitions[i] {
                    self.totals[p.index()].up_nodes += 1;
                }
            }
        }
    }

    fn add_node(&mut self, cluster: &Cluster, node: NodeId, sign: i64) {
        let free = self.free[node.index()];
        let idle = free == cluster.node(node).capacity;
        for p in &self.node_partitions[node.index()] {
            let t = &mut self.totals[p.index()];
            t.cpus = (t.cpus as i64 + sign * free.cpus as i64) as u64;
            for (g, f) in t.gres.iter_mut().zip(&free.gres) {
                *g = (*g as i64 + sign * *f as i64) as u64;
            }
            if idle {
                t.idle_nodes = (t.idle_nodes as i64 + sign) as u32;
            }
            let key = cluster.placement_key(node, &free);
            if sign > 0 {
                t.by_rank.insert(key);
                *t.roomiest.entry(free.cpus).or_default() += 1;
            } else {
                t.by_rank.remove(&key);
                if let std::collections::btree_map::Entry::Occupied(mut e) =
                    t.roomiest.entry(free.cpus)
                {
                    *e.get_mut() -= 1;
                    if *e.get() == 0 {
                        e.remove();
                    }
                }
            }
        }
    }

    fn change(&mut self, cluster: &Cluster, allocs: &[NodeAlloc], take: bool) {
        for a in allocs {
            let up = cluster.node(a.node).state == NodeState::Up;
            if up {
                self.add_node(cluster, a.node, -1);
            }
            let f = &mut self.free[a.node.index()];
            *f = if take {
                f.minus(&a.usage)
            } else {
                f.plus(&a.usage)
            };
            if up {
                self.add_node(cluster, a.node, 1);
            }
        }
    }

    /// A job started on `allocs`.
    pub(crate) fn take(&mut self, cluster: &Cluster, allocs: &[NodeAlloc]) {
        self.change(cluster, allocs, true);
    }

    /// A job on `allocs` ended.
    pub(crate) fn give_back(&mut self, cluster: &Cluster, allocs: &[NodeAlloc]) {
        self.change(cluster, allocs, false);
    }

    /// What `node` has free now.
    pub(crate) fn node(&self, node: NodeId) -> Resources {
        self.free[node.index()]
    }

    /// A partition's schedulable nodes by their [`PlacementKey`].
    pub(crate) fn by_rank(&self, partition: PartitionId) -> &BTreeSet<PlacementKey> {
        &self.totals[partition.index()].by_rank
    }

    /// Number of schedulable (up) nodes in `partition`.
    pub(crate) fn up_nodes(&self, partition: PartitionId) -> u32 {
        self.totals[partition.index()].up_nodes
    }

    /// False when `req` certainly cannot start now in `partition`; true when it might.
    pub(crate) fn might_fit(&self, partition: PartitionId, req: &JobRequest) -> bool {
        let t = &self.totals[partition.index()];
        let nodes = req.min_nodes.max(1) as u64;
        if t.cpus < req.min_cpus() {
            return false;
        }
        if req
            .gres_per_node
            .iter()
            .zip(&t.gres)
            .any(|(d, f)| (*d as u64) * nodes > *f)
        {
            return false;
        }
        if req.exclusive && (t.idle_nodes as u64) < nodes {
            return false;
        }
        let per_node = match req.ntasks_per_node {
            Some(n) => n as u64 * req.cpus_per_task as u64,
            None if req.max_nodes == 1 => req.min_cpus(),
            None => req.cpus_per_task as u64,
        };
        let roomiest = t.roomiest.keys().next_back().copied().unwrap_or(0);
        roomiest as u64 >= per_node
    }
}
