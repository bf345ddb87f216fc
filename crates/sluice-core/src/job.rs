//! Jobs as the scheduler sees them: who, what shape, how long, and where they stand.

use crate::ids::{JobId, NodeId, PartitionId};
use crate::limits::acct::JobAcct;
use crate::time::{Secs, Time};
use crate::tres::{GresCounts, Resources};

/// Memory requested by a job (Slurm's `--mem` or `--mem-per-cpu`), in MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemRequest {
    /// `--mem`: this much on every node of the allocation (0: none asked).
    PerNode(u64),
    /// `--mem-per-cpu`: this much per allocated processor.
    PerCpu(u64),
}

/// The shape of a job's resource request, already normalised by the caller
/// (command-line parsing fills in Slurm's defaults before the core sees it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobRequest {
    /// Fewest nodes the job accepts (`-N min[-max]`), at least 1.
    pub min_nodes: u32,
    /// Most nodes the job accepts; `u32::MAX` when unconstrained.
    pub max_nodes: u32,
    /// Tasks to place (`-n`), at least `min_nodes`: every allocated node gets a task.
    pub ntasks: u32,
    /// Processors per task (`-c`), at least 1.
    pub cpus_per_task: u32,
    /// `--ntasks-per-node`: exactly this many tasks on each allocated node.
    pub ntasks_per_node: Option<u32>,
    /// Memory per node or per processor.
    pub mem: MemRequest,
    /// GRES per node (`--gres`), by slot; a typed request counts in its typed slot and
    /// in the untyped parent slot.
    pub gres_per_node: GresCounts,
    /// `--exclusive`: whole nodes only.
    pub exclusive: bool,
    /// `-s/--oversubscribe`: in a partition with `OverSubscribe=YES:N`, the job may be
    /// allocated CPUs other such jobs have (time-sliced, see [`crate::timeslice`]).
    pub oversubscribe: bool,
    /// `--constraint` as a bit mask of features: the node must have at least one of them
    /// (Slurm's `a|b`); 0 means no constraint.
    pub features_any: u64,
    /// `-w/--nodelist`: nodes the allocation must include, ascending. The job then gets
    /// at least this many nodes (Slurm raises the node count to the list's length).
    pub nodelist: Vec<NodeId>,
    /// `-x/--exclude`: nodes the job must not get, ascending.
    pub exclude: Vec<NodeId>,
    /// `--switches=count[@max-time]`: the most leaf switches the allocation may span,
    /// until the limit lapses.
    pub switches: Option<SwitchLimit>,
    /// `--segment=N` in a block topology: the allocation is made of runs of `N` nodes,
    /// each inside one base block; the node count is a multiple of `N`.
    pub segment: Option<u32>,
}

/// A job's `--switches=count@max-time` (Slurm): it waits for an allocation on at most
/// `max` leaf switches of the tree topology until `until`, and takes any allocation
/// after that.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SwitchLimit {
    /// Most leaf switches, at least 1.
    pub max: u32,
    /// When the wait ends: the job's eligible time plus its max-time (Slurm's default
    /// max-time is `max_switch_wait`, 300 s).
    pub until: Time,
}

impl SwitchLimit {
    /// Whether the limit still holds for an allocation starting at `t`.
    pub fn holds_at(&self, t: Time) -> bool {
        t < self.until
    }
}

impl JobRequest {
    /// `procs` single-processor tasks on as many nodes as it takes: how a trace job asks.
    pub fn procs(procs: u32) -> Self {
        JobRequest {
            min_nodes: 1,
            max_nodes: u32::MAX,
            ntasks: procs.max(1),
            cpus_per_task: 1,
            ntasks_per_node: None,
            mem: MemRequest::PerNode(0),
            gres_per_node: [0; crate::tres::MAX_GRES],
            exclusive: false,
            oversubscribe: false,
            features_any: 0,
            nodelist: Vec::new(),
            exclude: Vec::new(),
            switches: None,
            segment: None,
        }
    }

    /// The same tasks confined to exactly one node.
    pub fn on_one_node(mut self) -> Self {
        self.min_nodes = 1;
        self.max_nodes = 1;
        self
    }

    /// Whether the job names nodes (`-w` or `-x`): such a job is placed node by node
    /// rather than by node class (see [`crate::select::choose_listed`]).
    pub fn lists_nodes(&self) -> bool {
        !self.nodelist.is_empty() || !self.exclude.is_empty()
    }

    /// Total processors this request needs at least (tasks × CPUs per task).
    pub fn min_cpus(&self) -> u64 {
        self.ntasks as u64 * self.cpus_per_task as u64
    }
}

/// Everything the core needs to know to queue a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// The job's id (allocated by the caller; must be unique among live jobs).
    pub id: JobId,
    /// Owner's uid.
    pub user: u32,
    /// Partition the job runs in.
    pub partition: PartitionId,
    /// Submission time.
    pub submit: Time,
    /// Earliest start (`--begin`); the submission time when not given.
    pub begin: Time,
    /// Resources wanted.
    pub request: JobRequest,
    /// Time limit in seconds (`--time`): the job is killed when it reaches it, and the
    /// scheduler plans with it as the job's expected run time.
    pub time_limit: Secs,
    /// Priority (Slurm's 32-bit job priority; higher starts first under the
    /// `backfill` policy). Ignored by the textbook policies, which keep submission order.
    pub priority: u32,
    /// Its association and QOS, for accounting limits ([`crate::limits`]); the default
    /// (none) is subject to no limit but its partition QOS's.
    pub acct: JobAcct,
}

/// Where a job stands in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the queue.
    Pending,
    /// Holding resources since `start`.
    Running,
    /// Started, then suspended by preemption: its processes are stopped and it holds
    /// nothing until it resumes (see [`crate::gang`]).
    Suspended,
}

/// How Slurm's reason for a job whose named nodes cannot be had begins; the nodes'
/// names follow.
pub const NAMED_NODES_UNAVAILABLE: &str = "ReqNodeNotAvail, UnavailableNodes:";

/// Slurm's pending reason codes, as `squeue` prints them in `%r`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PendingReason {
    /// Not yet examined by a scheduling pass.
    None,
    /// Higher-priority jobs come first.
    Priority,
    /// Not enough free resources for it now.
    Resources,
    /// Its `--begin` time has not come.
    BeginTime,
    /// Its partition is DOWN.
    PartitionDown,
    /// Its partition is INACTIVE.
    PartitionInactive,
    /// Its time limit exceeds the partition's `MaxTime` (Slurm leaves such a job pending
    /// unless `EnforcePartLimits` refuses it at submission).
    PartitionTimeLimit,
    /// It asks for more nodes than the partition's `MaxNodes`.
    PartitionNodeLimit,
    /// Its reservation is gone (`--reservation` of one deleted since).
    ReqNodeNotAvail,
    /// Its partition's nodes that are up, and not kept for a waiting job of a
    /// higher-priority partition, could not hold it even if idle (all of them DOWN or
    /// DRAIN, say): Slurm's `Nodes required for job are DOWN, DRAINED or reserved for
    /// jobs in higher priority partitions` (see the `unavailable` module).
    NodesUnavailable,
    /// It would fit now but for an advance reservation on the nodes (Slurm:
    /// `ReqNodeNotAvail, May be reserved for other job`).
    ReservedForOther,
    /// Nodes it names (`-w`) could not be had in the last main pass: down, drained, or
    /// kept for a job ahead of it ([`Job::unavailable_nodes`] says which). Slurm prints
    /// `ReqNodeNotAvail, UnavailableNodes:` followed by them.
    NamedNodesUnavailable,
    /// It was submitted to a reservation (`--reservation`) whose window has not begun,
    /// or has too little time left for its time limit.
    Reservation,
    /// Its partition does not allow its account (`AllowAccounts`, `DenyAccounts`).
    AccountNotAllowed,
    /// Its partition does not allow its QOS (`AllowQos`, `DenyQos`).
    QosNotAllowed,
    /// An accounting limit of its association or QOS holds it: Slurm's name for that
    /// limit (`AssocGrpGRES`, `QOSMaxJobsPerUserLimit`, ... see
    /// [`crate::limits::reason`]).
    Limit(&'static str),
}

impl PendingReason {
    /// The code exactly as Slurm prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReason::None => "None",
            PendingReason::Priority => "Priority",
            PendingReason::Resources => "Resources",
            PendingReason::BeginTime => "BeginTime",
            PendingReason::PartitionDown => "PartitionDown",
            PendingReason::PartitionInactive => "PartitionInactive",
            PendingReason::PartitionTimeLimit => "PartitionTimeLimit",
            PendingReason::PartitionNodeLimit => "PartitionNodeLimit",
            PendingReason::ReqNodeNotAvail => "ReqNodeNotAvail",
            PendingReason::NodesUnavailable => {
                "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher \
                 priority partitions"
            }
            PendingReason::ReservedForOther => "ReqNodeNotAvail, May be reserved for other job",
            PendingReason::NamedNodesUnavailable => NAMED_NODES_UNAVAILABLE,
            PendingReason::Reservation => "Reservation",
            PendingReason::AccountNotAllowed => "AccountNotAllowed",
            PendingReason::QosNotAllowed => "QOSNotAllowed",
            PendingReason::Limit(name) => name,
        }
    }

    /// Every reason other than a limit's, each with a code of its own.
    pub const FIXED: [PendingReason; 15] = [
        PendingReason::None,
        PendingReason::Priority,
        PendingReason::Resources,
        PendingReason::BeginTime,
        PendingReason::PartitionDown,
        PendingReason::PartitionTimeLimit,
        PendingReason::PartitionNodeLimit,
        PendingReason::ReqNodeNotAvail,
        PendingReason::NodesUnavailable,
        PendingReason::ReservedForOther,
        PendingReason::NamedNodesUnavailable,
        PendingReason::Reservation,
        PendingReason::AccountNotAllowed,
        PendingReason::QosNotAllowed,
        PendingReason::PartitionInactive,
    ];

    /// The reason whose code is `text` exactly, other than a limit's
    /// ([`crate::limits::reason::named`] reads those): how a reason printed into a
    /// record comes back (with its nodes after it, [`PendingReason::NamedNodesUnavailable`]).
    /// `None` for any other text.
    pub fn named(text: &str) -> Option<PendingReason> {
        if text.starts_with(NAMED_NODES_UNAVAILABLE) {
            return Some(PendingReason::NamedNodesUnavailable);
        }
        PendingReason::FIXED
            .into_iter()
            .find(|r| r.as_str() == text)
    }
}

/// What one node gives a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAlloc {
    /// The node.
    pub node: NodeId,
    /// Tasks placed on it.
    pub tasks: u32,
    /// Resources taken on it (whole node when exclusive), GPUs as counts by type.
    pub usage: Resources,
    /// The GPUs it uses whole there, by index ([`crate::Cluster::gpus_of`]),
    /// ascending. Chosen when the job starts ([`crate::Decision::Start`]); empty in a
    /// plan, and for a job without whole GPUs.
    pub gpus: Vec<u32>,
    /// The shards (`gres/shard`) it holds there: (GPU index, shards), by GPU. Chosen
    /// when the job starts, like [`NodeAlloc::gpus`].
    pub shards: Vec<(u32, u32)>,
}

impl NodeAlloc {
    /// `tasks` tasks taking `usage` on `node`, no GPU chosen yet.
    pub fn new(node: NodeId, tasks: u32, usage: Resources) -> Self {
        NodeAlloc {
            node,
            tasks,
            usage,
            gpus: Vec::new(),
            shards: Vec::new(),
        }
    }

    /// The GPUs it touches there, whole or through shards, ascending.
    pub fn gpus_touched(&self) -> Vec<u32> {
        let mut all = self.gpus.clone();
        all.extend(self.shards.iter().map(|&(g, _)| g));
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// A job's resources: which nodes, how much of each.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Allocation {
    /// Per-node shares, in ascending node order.
    pub nodes: Vec<NodeAlloc>,
}

impl Allocation {
    /// Processors over all nodes.
    pub fn cpus(&self) -> u64 {
        self.nodes.iter().map(|n| n.usage.cpus as u64).sum()
    }

    /// The allocated node ids.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.iter().map(|n| n.node)
    }
}

/// A job the core is tracking (pending or running).
#[derive(Clone, Debug)]
pub struct Job {
    /// What was submitted.
    pub spec: JobSpec,
    /// Pending or running.
    pub state: JobState,
    /// Why it waits (meaningful while pending).
    pub reason: PendingReason,
    /// The nodes it names that it could not have, while its reason is
    /// [`PendingReason::NamedNodesUnavailable`]; empty otherwise.
    pub unavailable_nodes: Vec<NodeId>,
    /// Start time once running.
    pub start: Option<Time>,
    /// Where it runs, once running; where it is planned, under conservative backfilling.
    pub alloc: Option<Allocation>,
    /// Planned start from the last pass that planned it (a reservation), if any.
    pub planned_start: Option<Time>,
    /// While an operator has it suspended (`scontrol suspend`): since when.
    pub suspended: Option<Time>,
    /// Seconds it spent suspended in suspensions that are over: its time limit runs
    /// this much later (Slurm extends a resumed job's end by its suspension).
    pub suspended_secs: Secs,
}

impl Job {
    /// The job's id.
    pub fn id(&self) -> JobId {
        self.spec.id
    }

    /// When the job is expected to end (start + time limit + the time it spent
    /// suspended), once started. A job suspended now is taken to resume now.
    pub fn expected_end(&self) -> Option<Time> {
        self.start
            .map(|s| s + self.spec.time_limit + self.suspended_secs)
    }
}
