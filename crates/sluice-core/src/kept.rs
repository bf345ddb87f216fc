//! What the main pass keeps for the jobs it could not start, so that later (lower
//! priority) jobs of the same pass do not take it from them.
//!
//! When a job cannot start now, its partition is *blocked*: the later jobs of that
//! partition wait with `Priority`, and the partition's nodes are *kept* from every later
//! job of another partition. Such a job starts on its own partition's other nodes, or
//! waits with `Nodes required for job are DOWN, DRAINED or reserved for jobs in higher
//! priority partitions` when fewer of them remain than it needs (its partition is then
//! blocked too). A job that names its nodes (`-w`, at least as many as it needs) keeps
//! only those nodes and blocks nothing. This is Slurm 22.05's main scheduler (its failed
//! partitions and the nodes it takes out of its available set); the backfill pass, which
//! plans every job in time, then starts what delays none of them.

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
    /// Per partition, how many of its nodes are not kept (computed when first asked,
    /// forgotten when more is kept).
    free_in: Vec<Option<u32>>,
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

    /// Whether any node is kept.
    pub(crate) fn any(&self) -> bool {
        !self.held.is_empty()
    }

    /// The kept nodes, ascending.
    pub(crate) fn nodes(&self) -> Vec<NodeId> {
        self.held
            .iter()
            .enumerate()
            .filter(|(_, &h)| h)
            .map(|(i, _)| NodeId(i as u32))
            .collect()
    }

    /// The per-node flags, for remembering an answer that depended on them.
    pub(crate) fn flags(&self) -> &[bool] {
        &self.held
    }

    /// Blocks partition `p` and keeps its nodes.
    pub(crate) fn block(&mut self, s: &Scheduler, p: PartitionId) {
        if !self.parts.contains(&p) {
            self.parts.push(p);
            self.keep(s, &s.cluster.partition(p).nodes);
        }
    }

    /// After job `id` could not start in partition `p`: blocks `p`, or keeps only the
    /// nodes the job names when it names at least as many as it needs.
    pub(crate) fn keep_for(&mut self, s: &Scheduler, id: JobId, p: PartitionId) {
        let req = &s.jobs[&id].spec.request;
        if !req.nodelist.is_empty() && req.nodelist.len() as u64 >= u64::from(req.min_nodes) {
            let nodes = req.nodelist.clone();
            self.keep(s, &nodes);
        } else {
            self.block(s, p);
        }
    }

    fn keep(&mut self, s: &Scheduler, nodes: &[NodeId]) {
        if nodes.is_empty() {
            return;
        }
        if self.held.is_empty() {
            self.held = vec![false; s.cluster.nodes.len()];
        }
        for n in nodes {
            self.held[n.index()] = true;
        }
        self.free_in.clear();
    }

    /// How many nodes of partition `p` are not kept.
    fn free_in(&mut self, s: &Scheduler, p: PartitionId) -> u32 {
        if self.free_in.len() <= p.index() {
            self.free_in.resize(p.index() + 1, None);
        }
        if let Some(n) = self.free_in[p.index()] {
            return n;
        }
        let nodes = &s.cluster.partition(p).nodes;
        let n = nodes.iter().filter(|&&n| !self.holds(n)).count() as u32;
        self.free_in[p.index()] = Some(n);
        n
    }
}

/// Where job `id`, of the partition it is in and not blocked, starts now on nodes not
/// kept; else why it waits. When fewer nodes than it needs are left to its partition it
/// waits with [`PendingReason::NodesUnavailable`] and the partition is blocked.
pub(crate) fn fit_now(
    s: &mut Scheduler,
    id: JobId,
    now: Time,
    kept: &mut Kept,
) -> Result<Vec<NodeAlloc>, PendingReason> {
    let part = s.jobs[&id].spec.partition;
    let found = if !kept.any() {
        s.fit_now(id, now)
    } else {
        let free = kept.free_in(s, part);
        if free == s.cluster.partition(part).nodes.len() as u32 {
            s.fit_now(id, now)
        } else if free < s.jobs[&id].spec.request.min_nodes.max(1) {
            kept.block(s, part);
            return Err(PendingReason::NodesUnavailable);
        } else if s.het.is_leader(id) {
            s.fit_now(id, now)
                .filter(|nodes| nodes.iter().all(|a| !kept.holds(a.node)))
        } else {
            s.fit_now_off(id, now, &kept.nodes())
        }
    };
    found.ok_or_else(|| crate::unavailable::reason(s, id, kept))
}
