//! Nodes that join, change or leave the cluster between passes (`scontrol reconfigure`
//! with an edited slurm.conf, `scontrol create node`, `scontrol delete node`).
//!
//! A node's id is its place in [`crate::Cluster::nodes`], and ids are never reused while the
//! scheduler lives: a new node takes the next place, and a removed one keeps its place,
//! in no partition and DOWN, so that it takes no work again. A node may change or leave
//! only while no job runs on it; reservations of pending jobs on it (conservative
//! backfilling) are withdrawn and planned again at the next pass.

use crate::cluster::{Node, NodeState};
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::NodeAlloc;
use crate::policy::conservative;
use crate::reservation;
use crate::scheduler::{node_configs_of, Scheduler};
use crate::time::{Time, MAX_TIME, NEVER};
use crate::tres::Resources;

impl Scheduler {
    /// Node `node` joins the cluster at `now`, a member of `partitions`; returns its id
    /// (the next place in [`crate::Cluster::nodes`]). Its feature bits and GRES slots must be
    /// the cluster's (see [`crate::Cluster::feature_bit`]). Pending jobs may start on it from
    /// the next pass.
    pub fn add_node(&mut self, node: Node, partitions: &[PartitionId], now: Time) -> NodeId {
        let id = NodeId(self.cluster.nodes.len() as u32);
        self.cluster.nodes.push(node);
        for p in partitions {
            let members = &mut self.cluster.partitions[p.index()].nodes;
            members.push(id);
            members.sort();
            members.dedup();
        }
        reservation::release_holds(self);
        self.profile.add_node(&self.cluster);
        self.backfill.add_node(&self.cluster);
        self.free_now.set_idle(&self.cluster, id);
        self.gpus.add_node(&self.cluster);
        reservation::claim_holds(self, now);
        self.after_node_change();
        id
    }

    /// Node `id` is now `node` (its CPUs, memory, GRES, features or weight changed) at
    /// `now`. Refused, changing nothing, while jobs run on it: returns them.
    pub fn replace_node(&mut self, id: NodeId, node: Node, now: Time) -> Result<(), Vec<JobId>> {
        let busy = self.jobs_running_on(id);
        if !busy.is_empty() {
            return Err(busy);
        }
        self.withdraw_reservations_on(id);
        reservation::release_holds(self);
        self.cluster.nodes[id.index()] = node;
        self.profile.reset_node(&self.cluster, id);
        self.backfill.reset_node(&self.cluster, id);
        self.free_now.set_idle(&self.cluster, id);
        self.gpus.reset_node(&self.cluster, id);
        reservation::claim_holds(self, now);
        self.after_node_change();
        Ok(())
    }

    /// Node `id` leaves the cluster at `now`: out of every partition and DOWN for good
    /// (its id is not reused). Refused, changing nothing, while jobs run on it: returns
    /// them. Pending jobs that asked for it by name wait for ever, as for a node that
    /// is down.
    pub fn remove_node(&mut self, id: NodeId, now: Time) -> Result<(), Vec<JobId>> {
        let busy = self.jobs_running_on(id);
        if !busy.is_empty() {
            return Err(busy);
        }
        self.withdraw_reservations_on(id);
        reservation::release_holds(self);
        for p in &mut self.cluster.partitions {
            p.nodes.retain(|&n| n != id);
        }
        self.cluster.nodes[id.index()].state = NodeState::Down;
        self.awaited.remove(&id);
        self.profile.refresh_node(&self.cluster, id);
        self.backfill.refresh_node(&self.cluster, id);
        self.free_now.set_members(&self.cluster);
        reservation::claim_holds(self, now);
        self.after_node_change();
        Ok(())
    }

    /// The bit of feature `name` (see [`crate::Cluster::feature_bit`]), created if new,
    /// for a node about to join or change. `None` past 64 features.
    pub fn feature_bit(&mut self, name: &str) -> Option<u64> {
        self.cluster.feature_bit(name)
    }

    /// The running jobs that hold some of node `id`, by id.
    pub fn jobs_running_on(&self, id: NodeId) -> Vec<JobId> {
        self.jobs
            .values()
            .filter(|j| !self.keys.contains_key(&j.spec.id))
            .filter(|j| {
                j.alloc
                    .as_ref()
                    .is_some_and(|a| a.nodes.iter().any(|n| n.node == id))
            })
            .map(|j| j.spec.id)
            .collect()
    }

    /// Conservative backfilling's reservations on node `id`, withdrawn: their jobs are
    /// planned again at the next pass.
    fn withdraw_reservations_on(&mut self, id: NodeId) {
        let all = [NodeAlloc::new(id, 0, Resources::default())];
        conservative::withdraw_conflicting(self, &all, -NEVER, MAX_TIME);
    }

    /// What depends on the list of nodes, taken anew; reservations may move earlier
    /// (onto a new node).
    fn after_node_change(&mut self) {
        self.conservative.ended_early = true;
        self.node_configs = (0..self.cluster.partitions.len())
            .map(|i| node_configs_of(&self.cluster, &self.cluster.partitions[i].nodes))
            .collect();
        self.free_now.set_members(&self.cluster);
        self.generation += 1;
        self.backfill.dirty = true;
        self.node_epoch += 1;
    }
}
