//! `scontrol update PartitionName=...`: administrators change a partition while the
//! controller runs — its state (`UP`, `DOWN`, `DRAIN`, `INACTIVE`), its limits and its
//! nodes. As in Slurm (without `ReconfigFlags=KeepPartInfo`), a change lasts until the
//! controller restarts, which reads slurm.conf again.

use sluice_conf::duration::parse_time;
use sluice_core::cluster::PartitionState;
use sluice_core::PartitionId;
use sluice_proto::error::{ApiError, ErrorCode, INVALID_NODE_NAME};
use sluice_proto::types::PartitionUpdate;

use super::*;

/// A partition with one change applied, or why it cannot be.
fn apply(
    conf: &ClusterConfig,
    p: &mut sluice_core::Partition,
    key: &str,
    value: &str,
) -> Result<(), ApiError> {
    let bad = |what: &str| ApiError::invalid(format!("Invalid {what} value: {value}"));
    let number = |what: &str| -> Result<Option<u32>, ApiError> {
        let v = value.trim();
        if v.eq_ignore_ascii_case("UNLIMITED") || v.eq_ignore_ascii_case("INFINITE") {
            return Ok(None);
        }
        v.parse::<u32>().map(Some).map_err(|_| bad(what))
    };
    match key {
        "State" => {
            p.state = match value.to_ascii_uppercase().as_str() {
                "UP" => PartitionState::Up,
                "DOWN" => PartitionState::Down,
                "DRAIN" => PartitionState::Drain,
                "INACTIVE" => PartitionState::Inactive,
                _ => return Err(bad("State")),
            }
        }
        "MaxTime" => p.max_time = parse_time(value).map_err(|_| bad("MaxTime"))?,
        "DefaultTime" => p.default_time = parse_time(value).map_err(|_| bad("DefaultTime"))?,
        "MaxNodes" => p.max_nodes = number("MaxNodes")?,
        "MinNodes" => p.min_nodes = number("MinNodes")?.unwrap_or(0),
        "PriorityTier" => {
            p.priority_tier = value.trim().parse().map_err(|_| bad("PriorityTier"))?
        }
        "PriorityJobFactor" => {
            p.priority_job_factor = value.trim().parse().map_err(|_| bad("PriorityJobFactor"))?
        }
        "GraceTime" => p.grace_time = value.trim().parse().map_err(|_| bad("GraceTime"))?,
        "Default" => {
            p.is_default = match value.to_ascii_uppercase().as_str() {
                "YES" => true,
                "NO" => false,
                _ => return Err(bad("Default")),
            }
        }
        "Nodes" => {
            let invalid = || ApiError::new(ErrorCode::InvalidNodeName, INVALID_NODE_NAME);
            let mut nodes = if value.trim().eq_ignore_ascii_case("ALL") {
                (0..conf.cluster.nodes.len() as u32)
                    .map(NodeId)
                    .filter(|&n| !conf.cluster.node(n).name.is_empty())
                    .collect()
            } else if value.trim().is_empty() {
                Vec::new()
            } else {
                sluice_conf::hostlist::expand(value)
                    .map_err(|_| invalid())?
                    .iter()
                    .map(|n| conf.node_id(n).ok_or_else(invalid))
                    .collect::<Result<Vec<_>, _>>()?
            };
            nodes.sort();
            nodes.dedup();
            p.nodes = nodes;
        }
        other => {
            return Err(ApiError::invalid(format!(
                "Update of this parameter is not supported by Sluice: {other}={value}"
            )))
        }
    }
    Ok(())
}

impl Controller {
    /// `scontrol update PartitionName=P KEY=VALUE...`: super users only (root, `SlurmUser`,
    /// `AdminLevel` Administrator); every change is checked before any is made, so a
    /// refused request changes nothing. `Default=YES` takes the default from the partition
    /// that had it.
    ///
    /// Errors (Slurm's): "Invalid user id" (not a super user), "Invalid partition name specified",
    /// "Invalid node name specified", `Invalid KEY value: VALUE`; and limits that would
    /// keep every job waiting (a `DefaultTime` over `MaxTime`, `MinNodes` over
    /// `MaxNodes`).
    pub fn update_partition(
        &mut self,
        u: &PartitionUpdate,
        caller: &Caller,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::not_super_user());
        }
        let pid: PartitionId = self
            .conf
            .cluster
            .partition_by_name(&u.name)
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidPartitionName, BAD_PARTITION))?;
        let mut p = self.conf.cluster.partition(pid).clone();
        for (key, value) in &u.changes {
            apply(&self.conf, &mut p, key, value)?;
        }
        // Limits that contradict each other would keep every job waiting: refused
        // (Slurm's slurmctld logs and ignores such a DefaultTime, and takes such
        // MinNodes).
        if let (Some(d), Some(m)) = (p.default_time, p.max_time) {
            if d > m {
                return Err(ApiError::invalid(format!(
                    "DefaultTime would exceed MaxTime for partition {}",
                    u.name
                )));
            }
        }
        if p.max_nodes.is_some_and(|m| p.min_nodes > m) {
            return Err(ApiError::invalid(format!(
                "MinNodes would exceed MaxNodes for partition {}",
                u.name
            )));
        }
        if p.is_default {
            for (i, other) in self.conf.cluster.partitions.iter_mut().enumerate() {
                if i != pid.index() && other.is_default {
                    other.is_default = false;
                    self.sched
                        .set_partition(PartitionId(i as u16), other.clone());
                }
            }
        }
        let changes: Vec<String> = u.changes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        tracing::info!(
            "update_partition: partition {} changed by uid {}: {}",
            u.name,
            caller.uid,
            changes.join(" ")
        );
        self.conf.cluster.partitions[pid.index()] = p.clone();
        self.sched.set_partition(pid, p);
        Ok(Vec::new())
    }
}

impl Controller {
    /// `scontrol reconfigure`: slurm.conf read again at `now`. Its nodes join, change
    /// or leave (see `state/node_changes.rs`); its partitions replace the ones in force
    /// (what `scontrol update` changed is slurm.conf's again, as in Slurm), each keeping
    /// the dynamic nodes it had. The same partitions in the same order, each with its
    /// QOS: adding, removing or reordering partitions, or changing a partition's QOS,
    /// needs a restart. Everything is checked before anything changes.
    ///
    /// Errors: "Invalid user id" (not a super user), a node to change or remove that runs jobs,
    /// or what needs a restart.
    pub fn reconfigure_partitions(
        &mut self,
        new: Box<ClusterConfig>,
        conf_hash: String,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::not_super_user());
        }
        let partitions = new.cluster.partitions.clone();
        for p in &partitions {
            if let (Some(d), Some(m)) = (p.default_time, p.max_time) {
                if d > m {
                    return Err(ApiError::invalid(format!(
                        "DefaultTime would exceed MaxTime for partition {}",
                        p.name
                    )));
                }
            }
        }
        let current: Vec<(&str, Option<&str>)> = self
            .conf
            .cluster
            .partitions
            .iter()
            .map(|p| (p.name.as_str(), p.qos.as_deref()))
            .collect();
        let then: Vec<(&str, Option<&str>)> = partitions
            .iter()
            .map(|p| (p.name.as_str(), p.qos.as_deref()))
            .collect();
        if current != then {
            return Err(ApiError::invalid(
                "adding, removing or reordering partitions, or changing a partition's QOS, needs a restart of the controller",
            ));
        }
        // The nodes, then the partitions over them by this controller's ids.
        let (ids, effects) = self.reconfigure_nodes(&new, now)?;
        for (i, mut p) in partitions.into_iter().enumerate() {
            let dynamic = self.conf.cluster.partitions[i]
                .nodes
                .iter()
                .copied()
                .filter(|&n| {
                    self.node_book
                        .dynamic
                        .contains(&self.conf.cluster.node(n).name)
                });
            let mut nodes: Vec<NodeId> = p.nodes.iter().map(|n| ids[n.index()]).collect();
            nodes.extend(dynamic);
            nodes.sort();
            nodes.dedup();
            p.nodes = nodes;
            self.conf.cluster.partitions[i] = p.clone();
            self.sched.set_partition(PartitionId(i as u16), p);
        }
        // What slurm.conf says of each partition beside the core's view of it.
        self.conf.gpu_defaults = new.gpu_defaults;
        self.conf.def_mem = new.def_mem;
        self.conf.own_def_mem = new.own_def_mem;
        self.conf.billing_weights = new.billing_weights;
        self.conf.future_nodes = new.future_nodes;
        self.conf.all_nodes_partitions = new.all_nodes_partitions;
        self.conf.max_node_count = new.max_node_count;
        // Agents that start from now on read the new file: it is the one they match.
        if self.liveness.conf_hash.is_some() {
            self.liveness.conf_hash = Some(conf_hash);
        }
        tracing::info!("reconfigure: slurm.conf read again by uid {}", caller.uid);
        Ok(effects)
    }
}

#[cfg(test)]
mod closed_story;
