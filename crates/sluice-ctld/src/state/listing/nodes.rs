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
use sluice_proto::listing::{ListedNode, ListedRun};
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
    /// [`ListedNode`]s (`?brief=true`); `runs`: as [`ListedRun`]s (`?runs=true`, what
    /// `sinfo` reads).
    pub fn nodes_json(&self, brief: bool, runs: bool) -> serde_json::Result<Vec<u8>> {
        if runs {
            serde_json::to_vec(&listed_runs(self.nodes()))
        } else if brief {
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

/// `nodes` as runs of neighbours alike but for their names. A run is kept only where its
/// host list expands to exactly its names, in order (a host list sorts and merges its
/// numbers): otherwise each of its nodes is a run of its own.
pub fn listed_runs<'a>(nodes: impl Iterator<Item = &'a NodeInfo>) -> Vec<ListedRun> {
    fn close(run: Option<(ListedNode, Vec<&str>)>, out: &mut Vec<ListedRun>) {
        let Some((node, names)) = run else { return };
        let list = sluice_conf::hostlist::compress(&names);
        let exact = sluice_conf::hostlist::expand(&list)
            .is_ok_and(|back| back.iter().map(String::as_str).eq(names.iter().copied()));
        if exact {
            out.push(ListedRun { names: list, node });
        } else {
            out.extend(names.iter().map(|name| ListedRun {
                names: sluice_conf::hostlist::compress(&[name]),
                node: node.clone(),
            }));
        }
    }
    let mut out = Vec::new();
    let mut run: Option<(ListedNode, Vec<&str>)> = None;
    for n in nodes {
        // (A listed node's address and host name are left out when they are its own
        // name, and given back from each name: alike either way.)
        let mut listed = ListedNode::of(n);
        listed.name = String::new();
        let alike = run.as_ref().is_some_and(|(r, _)| *r == listed);
        match &mut run {
            Some((_, names)) if alike => names.push(&n.name),
            _ => {
                close(run.take(), &mut out);
                run = Some((listed, vec![n.name.as_str()]));
            }
        }
    }
    close(run, &mut out);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, state: &str, addr: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            state: state.into(),
            cpus: 64,
            node_addr: addr.into(),
            node_hostname: name.into(),
            ..NodeInfo::default()
        }
    }

    /// Each run's names expanded, each with what the run shares: the nodes back.
    fn expanded(runs: &[ListedRun]) -> Vec<ListedNode> {
        runs.iter()
            .flat_map(|r| {
                sluice_conf::hostlist::expand(&r.names)
                    .unwrap()
                    .into_iter()
                    .map(|name| ListedNode {
                        name,
                        ..r.node.clone()
                    })
            })
            .collect()
    }

    #[test]
    fn alike_neighbours_are_one_run_and_give_every_node_back_in_order() {
        let mut nodes: Vec<NodeInfo> = (1..=10_000)
            .map(|i| {
                let name = format!("n{i:05}");
                node(&name, "idle", &name)
            })
            .collect();
        // One node drained in the middle, two sharing an address that is not their name.
        nodes[4_999].state = "drained".into();
        nodes[9_998].node_addr = "10.0.0.1".into();
        nodes[9_999].node_addr = "10.0.0.1".into();
        let runs = listed_runs(nodes.iter());
        let shape: Vec<&str> = runs.iter().map(|r| r.names.as_str()).collect();
        assert_eq!(
            shape,
            [
                "n[00001-04999]",
                "n05000",
                "n[05001-09998]",
                "n[09999-10000]"
            ]
        );
        assert_eq!(runs[1].node.state, "drained");
        assert_eq!(runs[3].node.node_addr.as_deref(), Some("10.0.0.1"));
        let listed: Vec<ListedNode> = nodes.iter().map(ListedNode::of).collect();
        assert_eq!(expanded(&runs), listed);
    }

    #[test]
    fn names_a_host_list_would_reorder_or_merge_are_runs_of_their_own() {
        // A host list sorts its numbers and merges repeats: `b2,b1` would come back as
        // `b[1-2]`, and `c1,c01` under one width.
        let names = ["a", "b2", "b1", "c1", "c01", "d7", "d8"];
        let nodes: Vec<NodeInfo> = names.iter().map(|n| node(n, "idle", n)).collect();
        let runs = listed_runs(nodes.iter());
        let listed: Vec<ListedNode> = nodes.iter().map(ListedNode::of).collect();
        assert_eq!(expanded(&runs), listed);
        assert_eq!(
            runs.iter().map(|r| r.names.as_str()).collect::<Vec<_>>(),
            ["a", "b2", "b1", "c1", "c01", "d7", "d8"]
        );
    }
}
