//! The machine: nodes, partitions and the names of their GRES and features.

use crate::ids::{NodeId, PartitionId};
use crate::partition_policy::{OverSubscribe, PartitionAccess};
use crate::placement::{Placement, PlacementKey};
use crate::time::Secs;
use crate::tres::{GresSlot, GresTable, Resources};

/// Whether a node may receive new work (Slurm's base node states, as far as the
/// scheduler cares; allocation states such as MIXED follow from the jobs on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeState {
    /// Up and schedulable.
    Up,
    /// Not responding or set DOWN: nothing runs or starts here.
    Down,
    /// DRAIN: running jobs finish, nothing new starts.
    Drain,
}

/// One GPU of a node, at its index in the node's list ([`Cluster::gpus_of`]): what
/// gres.conf says of it. The core tracks each GPU by this index, so that a start
/// decision names the GPUs (and the shards of which GPU) a job gets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gpu {
    /// Its type as slurm.conf spells it (`a100`); `None` for an untyped GPU.
    pub gpu_type: Option<String>,
    /// gres.conf's `Links=`: for each GPU of the node by index, the number of links
    /// (NVLinks) to it; -1 marks the GPU itself, 0 or less means none. `None`: no
    /// links known. The count between two GPUs is the larger of what either says.
    pub links: Option<Vec<i32>>,
    /// gres.conf's `Cores=`: the core indices near the GPU; `None`: every core.
    pub cores: Option<Vec<u32>>,
    /// Its shards (`gres/shard`): how many shards of jobs sharing it it holds; 0 when it
    /// is not shared.
    pub shards: u32,
}

/// One compute node.
#[derive(Clone, Debug)]
pub struct Node {
    /// Host name, as in `NodeName=`.
    pub name: String,
    /// Everything the node offers: CPUs, `RealMemory` (MiB) and GRES counts.
    pub capacity: Resources,
    /// Availability for new work.
    pub state: NodeState,
    /// Slurm's `Weight`: nodes of lower weight are preferred when several fit.
    pub weight: u32,
    /// Bit `i` set when the node has feature `i` of [`Cluster::features`].
    pub features: u64,
    /// The leaf switch the node hangs off (an index into [`Cluster::switches`]), in a
    /// tree topology (`topology.conf`); `None` without one.
    pub leaf_switch: Option<u16>,
    /// Processors kept for GPU jobs, per GPU of the node (Slurm's
    /// `RestrictedCoresPerGPU`, in processors: cores × `ThreadsPerCore`). A job may use
    /// those of the GPUs it takes, never those of the node's other free GPUs: a job
    /// without GPUs there finds at most its free processors less this many per free GPU
    /// (see [`crate::select::max_tasks_on`]). 0: none kept.
    pub restricted_cpus_per_gpu: u32,
    /// Processors kept for the system, never given to jobs (Slurm's `CoreSpecCount` or
    /// `CpuSpecList`: specialized cores with all their threads). `capacity` already
    /// leaves them out — it is what jobs can have (Slurm's `CPUEfctv`) — so the
    /// scheduler never looks at this; it says what the node holds besides (`CPUTot`).
    pub spec_cpus: u32,
    /// Its GPUs by index, as gres.conf describes them (types, links, cores, shards).
    /// Empty: as many plain GPUs as its `gpu` count (see [`Cluster::gpus_of`]).
    pub gpus: Vec<Gpu>,
}

impl Node {
    /// A node with `cpus` processors, `mem_mib` MiB of memory and no GRES.
    pub fn new(name: impl Into<String>, cpus: u32, mem_mib: u64) -> Self {
        Node {
            name: name.into(),
            capacity: Resources {
                cpus,
                mem_mib,
                ..Default::default()
            },
            state: NodeState::Up,
            weight: 1,
            features: 0,
            leaf_switch: None,
            restricted_cpus_per_gpu: 0,
            spec_cpus: 0,
            gpus: Vec::new(),
        }
    }
}

/// Whether a partition accepts and starts jobs (Slurm's `State=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionState {
    /// Accepts and starts jobs.
    Up,
    /// Accepts jobs, starts none.
    Down,
    /// Accepts no new jobs, starts those already queued.
    Drain,
    /// Neither accepts nor starts.
    Inactive,
}

/// A named pool of nodes with its own limits (`PartitionName=` in slurm.conf).
#[derive(Clone, Debug)]
pub struct Partition {
    /// Partition name.
    pub name: String,
    /// Member nodes, in ascending id order.
    pub nodes: Vec<NodeId>,
    /// Jobs that name no partition go to the default one.
    pub is_default: bool,
    /// `MaxTime` in seconds; `None` is UNLIMITED.
    pub max_time: Option<Secs>,
    /// `DefaultTime` in seconds, used when a job gives no `--time`; `None` means `max_time`.
    pub default_time: Option<Secs>,
    /// `PriorityTier`: jobs of a higher tier are considered before any job of a lower one.
    pub priority_tier: u16,
    /// `PriorityJobFactor`: the partition factor of multifactor priority is this over
    /// the largest of any partition.
    pub priority_job_factor: u16,
    /// `MaxNodes` per job; `None` is UNLIMITED.
    pub max_nodes: Option<u32>,
    /// `State=`.
    pub state: PartitionState,
    /// `MinNodes`: a job asking fewer nodes waits (`PartitionNodeLimit`); 0: none.
    pub min_nodes: u32,
    /// `OverSubscribe=` (`EXCLUSIVE`: every job gets whole nodes).
    pub oversubscribe: OverSubscribe,
    /// `ExclusiveUser=YES`: no other user's job may share a node with a job of this
    /// partition (Sluice gives such jobs whole nodes, which keeps even the same user's
    /// jobs apart).
    pub exclusive_user: bool,
    /// `AllowAccounts`, `DenyAccounts`, `AllowQos`, `DenyQos`, `AllowGroups`.
    pub access: PartitionAccess,
    /// `QOS=`: the partition QOS's name (its limits reach the core through
    /// [`crate::limits::AccountLimits::partition_qos`]).
    pub qos: Option<String>,
    /// `PreemptMode=`: what happens to this partition's jobs when they are preempted
    /// under `preempt/partition_prio`; `None` is the cluster's mode.
    pub preempt_mode: Option<crate::preempt::config::PreemptMode>,
    /// `GraceTime=`, seconds: how long a preempted job of this partition may run on
    /// after its signal (used when its QOS sets none).
    pub grace_time: Secs,
}

impl Partition {
    /// An UP partition over `nodes` without limits.
    pub fn new(name: impl Into<String>, nodes: Vec<NodeId>) -> Self {
        let mut nodes = nodes;
        nodes.sort();
        nodes.dedup();
        Partition {
            name: name.into(),
            nodes,
            is_default: false,
            max_time: None,
            default_time: None,
            priority_tier: 1,
            priority_job_factor: 1,
            max_nodes: None,
            state: PartitionState::Up,
            min_nodes: 0,
            oversubscribe: OverSubscribe::No,
            exclusive_user: false,
            access: PartitionAccess::default(),
            qos: None,
            preempt_mode: None,
            grace_time: 0,
        }
    }

    /// Whether it takes new jobs: not DRAIN or INACTIVE (jobs queued before it closed
    /// stay, and a DRAIN partition still runs them).
    pub fn takes_new_jobs(&self) -> bool {
        !matches!(self.state, PartitionState::Drain | PartitionState::Inactive)
    }
}

/// Everything static about the machine the scheduler places work on.
#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// All nodes, indexed by [`NodeId`].
    pub nodes: Vec<Node>,
    /// All partitions, indexed by [`PartitionId`].
    pub partitions: Vec<Partition>,
    /// Names of the GRES slots used in [`Resources::gres`].
    pub gres: GresTable,
    /// Names of node features, bit `i` of [`Node::features`] standing for `features[i]`.
    pub features: Vec<String>,
    /// How a one-node job chooses among the nodes that could take it (and, when least
    /// loaded, how a job spanning nodes does).
    pub placement: Placement,
    /// Names of the leaf switches of a tree topology, indexed by [`Node::leaf_switch`];
    /// empty without one. In a block topology, the names of the base blocks.
    pub switches: Vec<String>,
    /// A block topology (`topology/block`): which groups of [`Cluster::switches`] are
    /// blocks a job may be placed in. `None` for a tree or no topology.
    pub blocks: Option<BlockLayout>,
    /// `PreemptType`, `PreemptMode` and `PreemptExemptTime` (see [`crate::preempt`]).
    pub preempt: crate::preempt::config::PreemptConfig,
}

/// The blocks of a block topology (Slurm's `topology/block`, `topology.conf` with
/// `BlockName=` and `BlockSizes=`): base blocks are the groups of
/// [`Cluster::switches`], and aggregates are runs of consecutive base blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockLayout {
    /// Where a job without `--segment` may be placed, smallest first: each base block
    /// alone (`(i, i + 1)`), then the aggregates level by level, as half-open ranges of
    /// base block indices.
    pub aggregates: Vec<(u16, u16)>,
    /// Nodes per base block (the first `BlockSizes` value): the largest `--segment`.
    pub base_size: u32,
}

impl Cluster {
    /// A cluster of `nodes` nodes with `cpus_per_node` processors each, in one default
    /// partition named `name` (how a trace without a configuration is replayed).
    pub fn homogeneous(name: &str, nodes: u32, cpus_per_node: u32) -> Self {
        let width = nodes.saturating_sub(1).to_string().len().max(1);
        let nodes: Vec<Node> = (0..nodes)
            .map(|i| Node::new(format!("n{i:0width$}"), cpus_per_node, 0))
            .collect();
        let mut part = Partition::new(name, (0..nodes.len() as u32).map(NodeId).collect());
        part.is_default = true;
        Cluster {
            nodes,
            partitions: vec![part],
            ..Default::default()
        }
    }

    /// The node with this id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The partition with this id.
    pub fn partition(&self, id: PartitionId) -> &Partition {
        &self.partitions[id.index()]
    }

    /// The partition named `name`.
    pub fn partition_by_name(&self, name: &str) -> Option<PartitionId> {
        self.partitions
            .iter()
            .position(|p| p.name == name)
            .map(|i| PartitionId(i as u16))
    }

    /// The default partition: the one marked `Default=YES`, else the first.
    pub fn default_partition(&self) -> Option<PartitionId> {
        self.partitions
            .iter()
            .position(|p| p.is_default)
            .or(if self.partitions.is_empty() {
                None
            } else {
                Some(0)
            })
            .map(|i| PartitionId(i as u16))
    }

    /// The node named `name`.
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| NodeId(i as u32))
    }

    /// The bit for feature `name`, created if new. `None` past 64 features.
    pub fn feature_bit(&mut self, name: &str) -> Option<u64> {
        if let Some(i) = self.features.iter().position(|f| f == name) {
            return Some(1 << i);
        }
        if self.features.len() == 64 {
            return None;
        }
        self.features.push(name.to_string());
        Some(1 << (self.features.len() - 1))
    }

    /// `node`'s leaf switch when placement follows a tree topology (the cluster names
    /// its switches); `None` otherwise.
    pub fn leaf_switch(&self, node: NodeId) -> Option<u16> {
        if self.switches.is_empty() {
            None
        } else {
            self.node(node).leaf_switch
        }
    }

    /// The untyped `gpu` GRES slot, if the cluster has GPUs.
    pub fn gpu_slot(&self) -> Option<GresSlot> {
        self.gres.find("gpu", None)
    }

    /// The untyped `shard` GRES slot (`gres/shard`, GPUs shared by several jobs), if the
    /// cluster has shards.
    pub fn shard_slot(&self) -> Option<GresSlot> {
        self.gres.find("shard", None)
    }

    /// `node`'s GPUs by index: [`Node::gpus`] as described, as many as its `gpu` count
    /// (cut, or filled up with plain GPUs). A node that describes none has plain GPUs
    /// typed in the order of its typed `gpu` slots (`gpu:a100=2,gpu:v100=2`: two a100
    /// then two v100), its shards spread over them as Slurm spreads a `shard` count
    /// that names no files (each GPU in turn gets what is left divided by the GPUs
    /// left, rounded down: `Count=10` over four GPUs gives 2, 2, 3, 3).
    pub fn gpus_of(&self, node: NodeId) -> Vec<Gpu> {
        let n = self.node(node);
        let Some(gpu) = self.gpu_slot() else {
            return Vec::new();
        };
        let total = n.capacity.gres[gpu] as usize;
        if !n.gpus.is_empty() {
            let mut gpus = n.gpus.clone();
            gpus.resize(total, Gpu::default());
            return gpus;
        }
        let mut gpus = Vec::with_capacity(total);
        for child in self.gres.children(gpu) {
            let name = self.gres.name(child);
            let gpu_type = name.split_once(':').map(|(_, t)| t.to_string());
            for _ in 0..n.capacity.gres[child] {
                gpus.push(Gpu {
                    gpu_type: gpu_type.clone(),
                    ..Default::default()
                });
            }
        }
        gpus.resize(total, Gpu::default());
        if let Some(shard) = self.shard_slot() {
            let mut left = n.capacity.gres[shard];
            let count = gpus.len();
            for (i, g) in gpus.iter_mut().enumerate() {
                let share = left / (count - i) as u32;
                g.shards = share;
                left -= share;
            }
        }
        gpus
    }

    /// `node`'s rank under the cluster's [`Placement`] when it has `free` left.
    pub fn placement_key(&self, node: NodeId, free: &Resources) -> PlacementKey {
        self.placement
            .key(free, self.gpu_slot(), self.node(node).weight, node)
    }

    /// Total processors over all nodes.
    pub fn total_cpus(&self) -> u64 {
        self.nodes.iter().map(|n| n.capacity.cpus as u64).sum()
    }
}
