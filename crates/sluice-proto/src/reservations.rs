//! Advance reservations on the wire: what `scontrol create|update|delete reservation`
//! sends, and the records the controller keeps (in its store) and lists.

use serde::{Deserialize, Serialize};

/// How a list field changes: `Users=a,b` sets it, `Users+=c` adds, `Users-=c` removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListOp {
    /// `=`.
    Set,
    /// `+=`.
    Add,
    /// `-=`.
    Remove,
}

/// A change to a list field (users, accounts, flags), items as written (a leading `-`
/// in `Users=-alice` means "all but").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListChange {
    /// Set, add or remove.
    pub op: ListOp,
    /// The items.
    pub items: Vec<String>,
}

/// What the request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReservationOp {
    /// `scontrol create reservation`.
    Create,
    /// `scontrol update reservation`.
    Update,
    /// `scontrol delete reservation`.
    Delete,
}

/// `scontrol create|update|delete reservation KEY=VALUE...`, parsed by the command
/// (times are Unix seconds, durations seconds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationChange {
    /// What to do (absent: create).
    pub op: Option<ReservationOp>,
    /// `ReservationName` (created as `USER_N` when absent).
    pub name: Option<String>,
    /// `StartTime`.
    pub start: Option<i64>,
    /// `EndTime`.
    pub end: Option<i64>,
    /// `Duration`, seconds.
    pub duration: Option<i64>,
    /// `Nodes` (a hostlist, or `ALL`).
    pub nodes: Option<String>,
    /// `NodeCnt`.
    pub node_count: Option<u32>,
    /// `TRES=gres/gpu=N`.
    pub gpus: Option<u32>,
    /// `PartitionName`.
    pub partition: Option<String>,
    /// `Users`.
    pub users: Option<ListChange>,
    /// `Accounts`.
    pub accounts: Option<ListChange>,
    /// `Flags`.
    pub flags: Option<ListChange>,
}

/// Capacity a reservation set aside and what its jobs used, so far (seconds of nodes
/// and of GPUs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationUsage {
    /// Node-seconds reserved (whole-node reservations).
    pub reserved_node_s: u64,
    /// Node-seconds used by its jobs.
    pub used_node_s: u64,
    /// GPU-seconds reserved.
    pub reserved_gpu_s: u64,
    /// GPU-seconds used by its jobs.
    pub used_gpu_s: u64,
    /// Since when it has been open with none of its jobs running (Unix seconds).
    pub idle_since: Option<i64>,
}

/// A reservation as stored and listed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationRecord {
    /// `ReservationName`.
    pub name: String,
    /// Slurm's reservation id (the `N` of generated names).
    pub id: u32,
    /// Start of the current window, Unix seconds.
    pub start: i64,
    /// End of the current window, Unix seconds.
    pub end: i64,
    /// Reserved nodes, ascending.
    pub nodes: Vec<String>,
    /// For `TRES=gres/gpu=N`: GPUs held on each node of `nodes`; empty for whole nodes.
    #[serde(default)]
    pub gpus_per_node: Vec<u32>,
    /// `TRES=gres/gpu=N` as asked.
    pub gpus: Option<u32>,
    /// `PartitionName`.
    pub partition: Option<String>,
    /// `Users`, as names (`-name` when negated).
    pub users: Vec<String>,
    /// uids of `users` (without the `-`), same order.
    pub user_ids: Vec<u32>,
    /// `Accounts` (`-name` when negated).
    pub accounts: Vec<String>,
    /// Flags as Slurm names them (`MAINT`, `FLEX`, `IGNORE_JOBS`, `DAILY`, `WEEKLY`,
    /// `PURGE_COMP`); `SPEC_NODES` when the nodes were named.
    pub flags: Vec<String>,
    /// `PURGE_COMP=` delay, seconds.
    pub purge_after: Option<i64>,
    /// Whether a job has been submitted to it.
    #[serde(default)]
    pub had_jobs: bool,
    /// Processors of its nodes (Slurm's `CoreCnt`), filled in when listed.
    #[serde(default)]
    pub cores: u32,
    /// `ACTIVE` or `INACTIVE`, filled in when listed.
    #[serde(default)]
    pub state: String,
    /// Reserved and used capacity so far.
    #[serde(default)]
    pub usage: ReservationUsage,
}

impl ReservationRecord {
    /// Whether flag `f` (Slurm's name) is set.
    pub fn has_flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }
}
