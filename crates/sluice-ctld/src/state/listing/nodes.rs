//! The nodes and partitions of the snapshot (`sinfo`, `scontrol show node` and
//! `partition`: `GET /v1/nodes`, `GET /v1/partitions`), published with the jobs so that
//! they are read without a round trip through the loop.
//!
//! Each node is its own `Arc<NodeInfo>` in a persistent vector, so that publishing
//! costs the nodes that changed: a job that starts, ends or is suspended changes the
//! nodes it holds (what the running jobs hold is kept here and changed by the job's
//! share, [`Controller::count_usage`]); an agent's message changes its node; a pass
//! changes the nodes whose maintenance reservation began or ended; anything else the
//! loop cannot tell (an operator's `scontrol update`, a reconfiguration) builds every
//! node again. Invariant: after every publication the nodes equal
//! [`Controller::nodes`] and the partitions [`Controller::partitions`] (checked after
//! every publication in debug builds of small clusters with small queues, and after every step of the
//! story in `server/tests.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;

use imbl::Vector;
use serde::ser::{Serialize, Serializer};
use sluice_core::NodeId;
use sluice_proto::listing::ListedNode;
use sluice_proto::types::{JobState, NodeInfo, PartitionInfo};

use crate::state::job::Job;
use crate::state::{Controller, NodeUsage};

/// Which nodes an input may change other than through the jobs (whose changes the
/// snapshot follows itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodesTouched {
    /// None: it changes jobs only, or nothing.
    None,
    /// Those named (an agent's message).
    Named(Vec<String>),
    /// Any of them, and the partitions.
    All,
}

/// The nodes and partitions as readers see them.
#[derive(Clone, Default)]
pub struct NodeListing {
    nodes: Vector<Arc<NodeInfo>>,
    partitions: Arc<Vec<PartitionInfo>>,
}

impl NodeListing {
    /// The nodes, in slurm.conf's order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        // (A node removed by a reconfiguration keeps its place, nameless.)
        self.nodes
            .iter()
            .map(|n| &**n)
            .filter(|n| !n.name.is_empty())
    }

    /// The partitions, in slurm.conf's order.
    pub fn partitions(&self) -> &[PartitionInfo] {
        &self.partitions
    }

    /// The nodes as `GET /v1/nodes` answers them (a JSON array); `brief`: as
    /// [`ListedNode`]s (`?brief=true`, what `sinfo` reads).
    pub fn nodes_json(&self, brief: bool) -> serde_json::Result<Vec<u8>> {
        if brief {
            serde_json::to_vec(&BriefNodes(&self.nodes))
        } else {
            serde_json::to_vec(&AllNodes(&self.nodes))
        }
    }
}

/// Serializes the nodes as one sequence of [`ListedNode`]s.
struct BriefNodes<'a>(&'a Vector<Arc<NodeInfo>>);

impl Serialize for BriefNodes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .iter()
                .filter(|n| !n.name.is_empty())
                .map(|n| ListedNode::of(n)),
        )
    }
}

/// Serializes the nodes as one sequence, without copying them.
struct AllNodes<'a>(&'a Vector<Arc<NodeInfo>>);

impl Serialize for AllNodes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|n| &**n).filter(|n| !n.name.is_empty()))
    }
}

/// What the publisher keeps to change the nodes by what changed.
#[derive(Default)]
pub(super) struct NodesPublisher {
    /// What the running jobs hold, as published.
    usage: Option<NodeUsage>,
    /// The nodes in a maintenance reservation, as published.
    maint: BTreeSet<NodeId>,
    /// Nodes to build again at the next publication.
    dirty: BTreeSet<usize>,
    /// Everything to build again at the next publication.
    all: bool,
}

impl NodesPublisher {
    /// A publisher that builds everything at its first publication.
    pub(super) fn new() -> Self {
        NodesPublisher {
            all: true,
            ..NodesPublisher::default()
        }
    }

    /// An input may have changed `touched` besides jobs.
    pub(super) fn touch(&mut self, ctl: &Controller, touched: NodesTouched) {
        match touched {
            NodesTouched::None => {}
            NodesTouched::Named(names) => self.dirty.extend(
                names
                    .iter()
                    .filter_map(|n| ctl.conf.node_id(n))
                    .map(|n| n.index()),
            ),
            NodesTouched::All => self.all = true,
        }
    }

    /// Job `old` (as published) became `new` (as the controller has it; none: it is
    /// gone): what it holds moves.
    pub(super) fn job_changed(&mut self, ctl: &Controller, old: Option<&Job>, new: Option<&Job>) {
        let Some(usage) = self.usage.as_mut().filter(|_| !self.all) else {
            return;
        };
        for (job, add) in [(old, false), (new, true)] {
            let Some(job) = job.filter(|j| j.state == JobState::Running || j.ending_run.is_some())
            else {
                continue;
            };
            ctl.count_usage(usage, job, add);
            self.dirty
                .extend(job.alloc.iter().map(|share| share.node.index()));
            self.dirty.extend(
                job.ending_run
                    .iter()
                    .flat_map(|e| &e.nodes)
                    .map(|n| n.index()),
            );
        }
    }

    /// Brings `listing` up to date with `ctl` after a pass (`passed`) or an input;
    /// whether anything changed.
    pub(super) fn publish(
        &mut self,
        ctl: &Controller,
        listing: &mut NodeListing,
        passed: bool,
    ) -> bool {
        let count = ctl.conf.cluster.nodes.len();
        if passed || self.all {
            let maint = ctl.maint_nodes();
            if maint != self.maint {
                self.dirty
                    .extend(maint.symmetric_difference(&self.maint).map(|n| n.index()));
                self.maint = maint;
            }
        }
        let kept = (self.usage.as_ref()).filter(|_| !self.all && listing.nodes.len() == count);
        let changed = match kept {
            Some(usage) => {
                let mut changed = false;
                for i in std::mem::take(&mut self.dirty) {
                    if i >= count {
                        continue;
                    }
                    let node = ctl.node_info(i, usage, &self.maint);
                    if *listing.nodes[i] != node {
                        listing.nodes.set(i, Arc::new(node));
                        changed = true;
                    }
                }
                changed
            }
            None => {
                let usage = ctl.node_usage();
                listing.nodes = (0..count)
                    .map(|i| Arc::new(ctl.node_info(i, &usage, &self.maint)))
                    .collect();
                listing.partitions = Arc::new(ctl.partitions());
                self.usage = Some(usage);
                self.all = false;
                self.dirty.clear();
                true
            }
        };
        // (A small cluster's only: it costs every node and every job.)
        if cfg!(debug_assertions) && count <= 64 && ctl.jobs.len() <= 5_000 {
            debug_assert!(
                listing.nodes().eq(ctl.nodes().iter()),
                "the published nodes are not the controller's"
            );
            debug_assert!(listing.partitions() == ctl.partitions().as_slice());
        }
        changed
    }
}
