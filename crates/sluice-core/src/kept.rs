//! What the main pass keeps for the jobs it could not start, so that later (lower
//! priority) jobs of the same pass do not take it from them.
//!
//! When a job cannot start now, its partition is *blocked*: the later jobs of that
//! partition wait with `Priority`, and the partition's nodes are *kept* from every later
//! job of another partition. Such a job starts on its own partition's other nodes, or
//! waits with `Nodes required for job are DOWN, DRAINED or reserved for jobs in higher
//! priority partitions` when fewer of them are up than it needs nodes (its partition is
//! then blocked too). A job that names its nodes (`-w`, at least as many as it needs)
//! keeps only those nodes and blocks nothing. This is Slurm 22.05's main scheduler (its
//! failed partitions and the nodes it takes out of its available set); the backfill
//! pass, which plans every job in time, then starts what delays none of them.
//!
//! A heterogeneous job is started by the main pass only where nothing is kept in any
//! of its components' partitions (Slurm starts them from its backfill pass alone).

use crate::cluster::NodeState;
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::PendingReason;
use crate::scheduler::Scheduler;
use crate::time::Time;
use crate::NodeAlloc;

/// The partitions blocked and the nodes kept so far in one pass.
#[derive(Clone, Debug, Default)]
pub(crate) struct Kept {
    parts: Vec<PartitionId>,
    /// Per node, whether it is kept; empty while none is.
    held: Vec<bool>,
    /// The kept nodes, ascending (made when first asked after a change).
    list: Option<Vec<NodeId>>,
    /// Per partition: how many of its nodes are kept, and how many are usable (up, or
    /// awaited after a restart) and not kept. Counted when first asked, then kept up to
    /// date as nodes are kept.
    counts: Vec<Option<(u32, u32)>>,
    /// Changes with every node newly kept (an order-independent hash of the kept set),
    /// for answers remembered across passes.
    fingerprint: u64,
}

impl Kept {
    /// Whether partition `p` is blocked.
    pub(crate) fn blocks(&self, p: PartitionId) -> bool {
        self.parts.contains(&p)
    }

    /// Whether every one of `partitions` partitions is blocked (nothing more can start).
    pub(crate) fn all_blocked(&self, partitions: usize) -> bool {
        self.parts.len() == partitions
    }

    /// Whether node `n` is kept.
    pub(crate) fn holds(&self, n: NodeId) -> bool {
        self.held.get(n.index()).copied().unwrap_or(false)
    }

    /// A value that differs between different sets of kept nodes (0 for none).
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Whether some node of partition `p` is kept.
    pub(crate) fn touches(&mut self, s: &Scheduler, p: PartitionId) -> bool {
        !self.held.is_empty() && self.counts(s, p).0 > 0
    }

    /// Blocks partition `p` and keeps its nodes.
    pub(crate) fn block(&mut self, s: &Scheduler, p: PartitionId) {
        if !self.parts.contains(&p) {
            self.parts.push(p);
            self.keep(s, &s.cluster.partition(p).nodes);
        }
    }

    /// After job `id` could not start in partition `p`, for `reason`: keeps only the
    /// nodes the job names when it names at least as many as it needs; else blocks `p`,
    /// unless some of its named nodes could not be had at all
    /// ([`PendingReason::NamedNodesUnavailable`], which blocks nothing in Slurm).
    pub(crate) fn keep_for(
        &mut self,
        s: &Scheduler,
        id: JobId,
        p: PartitionId,
        reason: PendingReason,
    ) {
        let req = &s.jobs[&id].spec.request;
        if !req.nodelist.is_empty() && req.nodelist.len() as u64 >= u64::from(req.min_nodes) {
            self.keep(s, &req.nodelist);
        } else if reason != PendingReason::NamedNodesUnavailable {
            self.block(s, p);
        }
    }

    fn keep(&mut self, s: &Scheduler, nodes: &[NodeId]) {
        if self.held.is_empty() && !nodes.is_empty() {
            self.held = vec![false; s.cluster.nodes.len()];
        }
        for &n in nodes {
            if std::mem::replace(&mut self.held[n.index()], true) {
                continue;
            }
            self.list = None;
            self.fingerprint ^= mix(n);
            let usable = usable(s, n);
            for (p, c) in self.counts.iter_mut().enumerate() {
                let Some((kept, free)) = c else { continue };
                if s.cluster.partitions[p].nodes.binary_search(&n).is_ok() {
                    *kept += 1;
                    *free -= u32::from(usable);
                }
            }
        }
    }

    /// The kept nodes, ascending.
    fn list(&mut self) -> &[NodeId] {
        let held = &self.held;
        self.list.get_or_insert_with(|| {
            (0..held.len() as u32)
                .map(NodeId)
                .filter(|n| held[n.index()])
                .collect()
        })
    }

    /// Partition `p`'s kept nodes and its usable nodes not kept.
    fn counts(&mut self, s: &Scheduler, p: PartitionId) -> (u32, u32) {
        if self.counts.len() <= p.index() {
            self.counts.resize(p.index() + 1, None);
        }
        if let Some(c) = self.counts[p.index()] {
            return c;
        }
        let (mut kept, mut free) = (0, 0);
        for &n in &s.cluster.partition(p).nodes {
            if self.holds(n) {
                kept += 1;
            } else if usable(s, n) {
                free += 1;
            }
        }
        self.counts[p.index()] = Some((kept, free));
        (kept, free)
    }
}

/// Whether node `n` can take work in this pass as far as its state goes.
pub(crate) fn usable(s: &Scheduler, n: NodeId) -> bool {
    s.cluster.node(n).state == NodeState::Up || s.awaited.contains(&n)
}

/// Spreads a node id over 64 bits (SplitMix64's finaliser).
fn mix(n: NodeId) -> u64 {
    let mut z = u64::from(n.0).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Where job `id`, of the partition it is in and not blocked, starts now on nodes not
/// kept; else why it waits. When fewer of its partition's usable nodes are left than it
/// needs, it waits with [`PendingReason::NodesUnavailable`] and the partition is
/// blocked.
pub(crate) fn fit_now(
    s: &mut Scheduler,
    id: JobId,
    now: Time,
    kept: &mut Kept,
) -> Result<Vec<NodeAlloc>, PendingReason> {
    let part = s.jobs[&id].spec.partition;
    if kept.counts(s, part).1 < s.jobs[&id].spec.request.min_nodes.max(1) {
        kept.block(s, part);
        return Err(PendingReason::NodesUnavailable);
    }
    let found = if s.het.is_leader(id) {
        let group = s.het.group(id).cloned().unwrap_or_default();
        let clear = group.iter().all(|m| {
            let p = s.jobs[m].spec.partition;
            !kept.blocks(p) && !kept.touches(s, p)
        });
        if clear {
            s.fit_now(id, now)
        } else {
            None
        }
    } else if !kept.touches(s, part) {
        s.fit_now(id, now)
    } else {
        // The usual choice when it uses no kept node (the best node of the partition
        // is then the best of those left); else a search that keeps off them.
        match s.fit_now(id, now) {
            Some(nodes) if nodes.iter().all(|a| !kept.holds(a.node)) => Some(nodes),
            Some(_) => {
                let off = kept.list().to_vec();
                s.fit_now_off(id, now, &kept.held, &off)
            }
            None => None,
        }
    };
    found.ok_or_else(|| {
        // Of the nodes it names, those kept or down: Slurm's select finds them missing
        // from its available set first.
        let named = &s.jobs[&id].spec.request.nodelist;
        let nodes = &s.cluster.partition(part).nodes;
        let missing: Vec<NodeId> = named
            .iter()
            .copied()
            .filter(|&n| nodes.binary_search(&n).is_ok() && (kept.holds(n) || !usable(s, n)))
            .collect();
        if missing.is_empty() {
            crate::unavailable::reason(s, id, kept)
        } else {
            s.set_nodes_unavailable(id, missing);
            PendingReason::NamedNodesUnavailable
        }
    })
}
