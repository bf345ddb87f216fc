//! What travels between the commands, the controller and the node agents.
//!
//! These are wire types: plain data, serialised as JSON. The scheduling core has its own
//! types and converts; nothing here is used for scheduling decisions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A job's state, with Slurm's names.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Waiting.
    #[default]
    Pending,
    /// Holding resources.
    Running,
    /// Ended with exit code 0.
    Completed,
    /// Ended with a non-zero exit code or a signal.
    Failed,
    /// Cancelled by a user or administrator.
    Cancelled,
    /// Killed at its time limit.
    Timeout,
    /// Its node failed under it.
    NodeFail,
    /// Preempted.
    Preempted,
    /// Killed for exceeding its memory.
    OutOfMemory,
    /// Put back in the queue (a record of an earlier run).
    Requeued,
    /// Running, its processes stopped by an operator (`scontrol suspend`). Only a
    /// record says so: the controller keeps such a job `Running`, with its
    /// [`Suspension`].
    Suspended,
}

impl JobState {
    /// Slurm's long name (`squeue -t`, `sacct`).
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Requeued => "REQUEUED",
            JobState::Suspended => "SUSPENDED",
        }
    }

    /// Slurm's compact name (`squeue` `%t`).
    pub fn short(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Cancelled => "CA",
            JobState::Timeout => "TO",
            JobState::NodeFail => "NF",
            JobState::Preempted => "PR",
            JobState::OutOfMemory => "OOM",
            JobState::Requeued => "RQ",
            JobState::Suspended => "S",
        }
    }

    /// Parses a long or compact name, any case.
    pub fn parse(s: &str) -> Option<JobState> {
        let u = s.to_ascii_uppercase();
        [
            JobState::Pending,
            JobState::Running,
            JobState::Completed,
            JobState::Failed,
            JobState::Cancelled,
            JobState::Timeout,
            JobState::NodeFail,
            JobState::Preempted,
            JobState::OutOfMemory,
            JobState::Requeued,
            JobState::Suspended,
        ]
        .into_iter()
        .find(|st| st.name() == u || st.short() == u)
    }

    /// True once the job will never run again (under this id's current run).
    pub fn is_finished(self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Suspended
        )
    }

    /// Running, suspended or not: it holds its allocation and its processes exist.
    pub fn is_running(self) -> bool {
        matches!(self, JobState::Running | JobState::Suspended)
    }
}

/// A run's suspensions, by operators (`scontrol suspend`/`resume`) or by preemption
/// (`PreemptMode=SUSPEND`), as Slurm keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    /// Suspended now: since when (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// When it was last suspended or resumed (`SuspendTime=`).
    pub changed: i64,
    /// Seconds it had run when last suspended (`SecsPreSuspend=`).
    pub pre_secs: i64,
    /// Seconds spent suspended in suspensions that are over.
    pub secs: i64,
    /// Suspended now by preemption (`PreemptMode=SUSPEND`), for this job — the job's
    /// own id when suspended by gang time-slicing (waiting for its turn); `None` when
    /// not suspended or suspended by an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_job: Option<u64>,
}

impl Suspension {
    /// Seconds spent suspended up to `t`, the present suspension's part included.
    pub fn secs_at(&self, t: i64) -> i64 {
        self.secs + self.since.map_or(0, |s| (t - s).max(0))
    }
}

/// Memory asked, as sent: `--mem` (per node), `--mem-per-cpu` or `--mem-per-gpu`, MiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryRequest {
    /// MiB per node; 0 means all of each node's memory.
    PerNode(u64),
    /// MiB per allocated CPU.
    PerCpu(u64),
    /// MiB per allocated GPU.
    PerGpu(u64),
}

/// A GRES request per node: name, optional type, count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GresRequest {
    /// `gpu`, `shard`, ...
    pub name: String,
    /// Type, e.g. `a100`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gres_type: Option<String>,
    /// Count per node.
    pub count: u32,
}

/// A job as submitted: what `sbatch`, `srun` or `salloc` sends, after resolving what only
/// the client can (script, environment, working directory, `--begin`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobDescription {
    /// Job name (default: the script's file name, or `wrap`, or the command).
    pub name: String,
    /// Partition (default: the default partition).
    pub partition: Option<String>,
    /// Account.
    pub account: Option<String>,
    /// `--reservation`: the advance reservation to run in.
    #[serde(default)]
    pub reservation: Option<String>,
    /// QOS.
    pub qos: Option<String>,
    /// Tasks (`-n`).
    pub ntasks: Option<u32>,
    /// Nodes (`-N min-max`).
    pub nodes: Option<(u32, u32)>,
    /// CPUs per task (`-c`).
    pub cpus_per_task: Option<u32>,
    /// Tasks per node.
    pub ntasks_per_node: Option<u32>,
    /// Time limit in seconds; `Some(None)` is UNLIMITED; `None` is the partition default.
    /// On the wire UNLIMITED is `null` and the default an absent field.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub time_limit: Option<Option<i64>>,
    /// Memory.
    pub memory: Option<MemoryRequest>,
    /// GRES per node.
    #[serde(default)]
    pub gres: Vec<GresRequest>,
    /// GPUs per job (`--gpus`), per node, per task: (type, count).
    #[serde(default)]
    pub gpus: Option<(Option<String>, u32)>,
    /// `--gpus-per-node`.
    #[serde(default)]
    pub gpus_per_node: Option<(Option<String>, u32)>,
    /// `--gpus-per-task`.
    #[serde(default)]
    pub gpus_per_task: Option<(Option<String>, u32)>,
    /// `--gpus-per-socket`: (type, GPUs per socket); the GPUs per node are this count
    /// times [`JobDescription::sockets_per_node`].
    #[serde(default)]
    pub gpus_per_socket: Option<(Option<String>, u32)>,
    /// `--sockets-per-node`: sockets each allocated node must have (and, with
    /// `--gpus-per-socket`, the sockets whose GPUs are counted).
    #[serde(default)]
    pub sockets_per_node: Option<u32>,
    /// `--cpus-per-gpu`.
    #[serde(default)]
    pub cpus_per_gpu: Option<u32>,
    /// `--exclusive`.
    #[serde(default)]
    pub exclusive: bool,
    /// `-s/--oversubscribe`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oversubscribe: bool,
    /// `--constraint`.
    pub constraint: Option<String>,
    /// `-w/--nodelist`: a hostlist expression of nodes the job must include.
    #[serde(default)]
    pub nodelist: Option<String>,
    /// `-x/--exclude`: a hostlist expression of nodes the job must not get.
    #[serde(default)]
    pub exclude: Option<String>,
    /// `--switches=count[@max-time]`: most leaf switches, and the wait for them in
    /// seconds (`None`: the cluster's `max_switch_wait`).
    #[serde(default)]
    pub switches: Option<(u32, Option<i64>)>,
    /// `--segment=N` (block topology): runs of N nodes, each inside one base block.
    #[serde(default)]
    pub segment: Option<u32>,
    /// Requeue on node failure or `scontrol requeue` (Slurm's default: yes).
    pub requeue: Option<bool>,
    /// Output file pattern (`%j` etc.), relative to `work_dir`.
    pub output: Option<String>,
    /// Error file pattern.
    pub error: Option<String>,
    /// Input file pattern.
    pub input: Option<String>,
    /// Append to output files instead of truncating.
    #[serde(default)]
    pub append: bool,
    /// Working directory (absolute).
    pub work_dir: String,
    /// Where the job was submitted from (absolute; `SLURM_SUBMIT_DIR`), where `-D`
    /// named another working directory; `work_dir` where absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_dir: Option<String>,
    /// The batch script (empty for `srun`/`salloc` allocations).
    #[serde(default)]
    pub script: String,
    /// The batch script's arguments (`sbatch SCRIPT ARGS...`), its `$1`...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_args: Vec<String>,
    /// Environment of the job (after `--export`).
    #[serde(default)]
    pub environment: Vec<(String, String)>,
    /// Array task indices and throttle.
    pub array: Option<(Vec<u32>, Option<u32>)>,
    /// Dependency as given (`afterok:12`), checked by the controller.
    pub dependency: Option<String>,
    /// Earliest start, Unix seconds.
    pub begin: Option<i64>,
    /// Signal before the limit: (signal number, seconds before, batch shell only).
    pub signal: Option<(i32, i64, bool)>,
    /// Submitted held.
    #[serde(default)]
    pub hold: bool,
    /// Comment.
    pub comment: Option<String>,
    /// `--acctg-freq` as given (checked by the command): the job's own
    /// `JobAcctGatherFrequency`, whose task frequency its supervisors sample at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acctg_freq: Option<String>,
    /// WCKey.
    pub wckey: Option<String>,
    /// Nice value.
    pub nice: Option<i32>,
    /// Host the submission came from.
    pub submit_host: String,
    /// Command line shown by `scontrol show job` (`Command=`) and `squeue`'s `%o`: a
    /// batch script's path and arguments, an `srun` allocation's program, `(null)` for
    /// `--wrap` and `salloc`.
    pub command: String,
    /// The command line that submitted it (`sbatch -p short job.sh`), words joined by
    /// blanks as Slurm joins them: `sacct`'s `SubmitLine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_line: Option<String>,
    /// An interactive allocation (`srun`/`salloc` outside a job): no batch script runs.
    #[serde(default)]
    pub interactive: bool,
    /// A service job (`--restart`, `--health-*`, `--port`): kept alive and reachable at a
    /// stable address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::service::ServiceSpec>,
    /// A heterogeneous job's components after the first (`sbatch ... : ...`, `#SBATCH
    /// hetjob`), each its own request; this description is the first component's
    /// (the leader, where the batch script runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub het_components: Vec<JobDescription>,
}

impl JobDescription {
    /// Where it was submitted from: `SLURM_SUBMIT_DIR`, which `-D` does not change.
    pub fn submit_dir(&self) -> &str {
        self.submit_dir.as_deref().unwrap_or(&self.work_dir)
    }
}

/// Identifies a step of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepId {
    /// The batch script.
    Batch,
    /// The `extern` step (processes outside srun).
    Extern,
    /// An srun step, numbered from 0.
    Number(u32),
    /// One part of a heterogeneous step run in an allocation of one component
    /// (`srun OPTS CMD : OPTS CMD`): the step's number and the part (`S+P`, as Slurm
    /// names it); the parts share the number and run on nodes of their own.
    Part(u32, u32),
}

impl From<u32> for StepId {
    fn from(n: u32) -> StepId {
        StepId::Number(n)
    }
}

impl StepId {
    /// The last step id of a job, in order (a range's end over all its steps).
    pub const LAST: StepId = StepId::Part(u32::MAX, u32::MAX);

    /// Slurm's number for the batch step (`SLURM_BATCH_SCRIPT`).
    pub const SLURM_BATCH: u32 = 0xFFFF_FFFB;
    /// Slurm's number for the extern step (`SLURM_EXTERN_CONT`).
    pub const SLURM_EXTERN: u32 = 0xFFFF_FFFC;

    /// The step's number as Slurm numbers steps, which orders them: srun steps by
    /// their number (a part by its step's), then the batch step, then the extern step.
    pub fn slurm_number(self) -> u32 {
        match self {
            StepId::Number(n) | StepId::Part(n, _) => n,
            StepId::Batch => StepId::SLURM_BATCH,
            StepId::Extern => StepId::SLURM_EXTERN,
        }
    }

    /// The step's number, for an srun step or a part of one.
    pub fn number(self) -> Option<u32> {
        match self {
            StepId::Number(n) | StepId::Part(n, _) => Some(n),
            StepId::Batch | StepId::Extern => None,
        }
    }
}

impl std::fmt::Display for StepId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepId::Batch => f.write_str("batch"),
            StepId::Extern => f.write_str("extern"),
            StepId::Number(n) => write!(f, "{n}"),
            StepId::Part(n, p) => write!(f, "{n}+{p}"),
        }
    }
}

/// A step's record (for `sacct`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Job id.
    pub job_id: u64,
    /// Step id.
    pub step: StepId,
    /// Name (the command, or `batch`).
    pub name: String,
    /// State.
    pub state: JobState,
    /// Start, Unix seconds.
    pub start: i64,
    /// End, Unix seconds.
    pub end: Option<i64>,
    /// Exit code and signal.
    pub exit_code: i32,
    /// Terminating signal (0: none).
    pub signal: i32,
    /// Nodes.
    pub nodes: Vec<String>,
    /// Tasks.
    pub ntasks: u32,
    /// CPUs.
    pub cpus: u32,
    /// While it runs, the CPUs it holds on each of its nodes (in `nodes`' order), which
    /// a later step of the job waits for; empty for a step that overlaps others
    /// (`--overlap`) and for the batch step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_cpus: Vec<u32>,
    /// While it runs, the nodes whose agents said its tasks there have all ended, with
    /// their worst exit code and signal ([`StepEnded`]): when every node has, the step
    /// has ended even if its srun never says so (killed, or its host lost).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended_on: Vec<(String, i32, i32)>,
    /// What its tasks used, merged over its nodes (`sacct`'s `MaxRSS`, `TotalCPU`, ...):
    /// the agents' last figures, final once the step has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::usage::StepUsage>>,
    /// The job's run it belongs to (its restart count then): a requeued job's earlier
    /// runs keep their steps, which `sacct -D` shows under each run.
    #[serde(default, skip_serializing_if = "run_zero")]
    pub run: u32,
    /// Seconds it stood suspended with its job in suspensions that are over (one under
    /// way is the job's: see [`StepRecord::suspended_secs_at`]).
    #[serde(default, skip_serializing_if = "secs_zero")]
    pub suspended_secs: i64,
    /// Who cancelled it on its own (`scancel JOB.STEP`): sacct's `CANCELLED by UID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<u32>,
    /// The host (short name) and process id of the srun that started it
    /// (`scontrol show step`'s `SrunHost:Pid`); none for the batch step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srun: Option<(String, u32)>,
    /// Its own time limit, seconds (`srun -t` in an allocation); none: its job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<i64>,
    /// The srun command line that started it (`sacct`'s `SubmitLine`); none for the
    /// batch step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_line: Option<String>,
    /// It was ended at its own time limit: recorded `TIMEOUT`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// The GPUs it asked for and was given, by index, on each of its nodes (in
    /// `nodes`' order): held while it runs unless it overlaps. Empty for a step that
    /// asked for none (it sees all of its job's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<Vec<u32>>,
}

fn run_zero(run: &u32) -> bool {
    *run == 0
}

fn secs_zero(secs: &i64) -> bool {
    *secs == 0
}

impl StepRecord {
    /// Seconds this step stood suspended by `t` (by its end, once it ended): its own
    /// suspensions that are over, and the part of its job's present suspension (`job`)
    /// since it started. A step started after a suspension never counts it.
    pub fn suspended_secs_at(&self, job: Option<&Suspension>, t: i64) -> i64 {
        let now = job.and_then(|s| s.since).map_or(0, |since| {
            (self.end.unwrap_or(t) - since.max(self.start)).max(0)
        });
        self.suspended_secs + now
    }
}

/// Reads a field that is there, `null` included, as `Some`: with `#[serde(default)]`
/// an absent field stays `None`, so `Option<Option<T>>` keeps its three cases.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A job as the controller records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Job id.
    pub id: u64,
    /// For array tasks: the array's job id and this task's index.
    pub array: Option<(u64, u32)>,
    /// For an array's unstarted remainder: the indices still to run and the throttle.
    #[serde(default)]
    pub array_pending: Option<(Vec<u32>, Option<u32>)>,
    /// An unstarted array task changed on its own, which Slurm splits from the
    /// array's record (`squeue --array-unique` lists it apart).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split: bool,
    /// Owner's uid and gid.
    pub uid: u32,
    /// Owner's group.
    pub gid: u32,
    /// Owner's name.
    pub user: String,
    /// Group name.
    pub group: String,
    /// Account.
    pub account: String,
    /// Partition.
    pub partition: String,
    /// QOS.
    pub qos: String,
    /// State.
    pub state: JobState,
    /// Pending reason (Slurm's code), `None` otherwise.
    pub reason: String,
    /// The dependency as `squeue %E` and `scontrol show job` print it: each job still
    /// waited for `kind:id(unfulfilled)`, each that can no longer satisfy it
    /// `kind:id(failed)`; `None` once nothing is left (`(null)`). Filled in by the
    /// controller when it shows a record, never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_status: Option<String>,
    /// Priority.
    pub priority: u32,
    /// Submission time, Unix seconds.
    pub submit_time: i64,
    /// Start time (latest run).
    pub start_time: Option<i64>,
    /// End time.
    pub end_time: Option<i64>,
    /// Expected start, from the scheduler's plan.
    pub planned_start: Option<i64>,
    /// The nodes it is expected to start on (a hostlist, what `squeue --start` shows as
    /// SCHEDNODES), when the controller's forecast starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_nodes: Option<String>,
    /// Time limit, seconds; `None` is UNLIMITED.
    pub time_limit: Option<i64>,
    /// Allocated nodes, in order.
    pub nodes: Vec<String>,
    /// Tasks per allocated node.
    pub tasks_per_node: Vec<u32>,
    /// CPUs per allocated node.
    pub cpus_per_node: Vec<u32>,
    /// The processors it holds on each allocated node, by index (`scontrol show job
    /// -d`'s `CPU_IDs`): numbered by the controller when the job starts, the lowest
    /// not held by another job there. Empty for a job that has not started, or one
    /// started before jobs carried them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_ids_per_node: Vec<Vec<u32>>,
    /// Memory per node, MiB.
    pub mem_per_node: u64,
    /// The partition's default memory (`DefMemPerCPU`, `DefMemPerNode`) when the
    /// submission asked for none and one applies: what [`JobRecord::memory_request`]
    /// gives then. `None` when the job asked for memory, or no default applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_default: Option<MemoryRequest>,
    /// GPUs allocated per node: device indices.
    #[serde(default)]
    pub gpus_per_node: Vec<Vec<u32>>,
    /// Shards (`gres/shard`) allocated per node: (GPU index, as in
    /// [`JobRecord::gpus_per_node`], shards of that GPU), in GPU order. Empty for a job
    /// without shards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards_per_node: Vec<Vec<(u32, u32)>>,
    /// Tasks, CPUs per task, node count (resolved).
    pub ntasks: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// Nodes asked (min).
    pub min_nodes: u32,
    /// Exit code of the batch script / allocation.
    pub exit_code: i32,
    /// Terminating signal.
    pub signal: i32,
    /// Times the job was requeued.
    pub restarts: u32,
    /// Who holds it back while it is pending, if anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
    /// Who cancelled it (uid).
    pub cancelled_by: Option<u32>,
    /// Resolved standard output path.
    pub stdout: String,
    /// Resolved standard error path.
    pub stderr: String,
    /// Resolved standard input path.
    pub stdin: String,
    /// The submission.
    pub desc: JobDescription,
    /// Steps started (next step number).
    #[serde(default)]
    pub next_step: u32,
    /// The scheduler pass that started its latest run (`scontrol show job`'s
    /// `Scheduler=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_pass: Option<StartPass>,
    /// The run whose processes are still being ended (the job is `COMPLETING`): a
    /// job told to end (cancelled, timed out, preempted) or ended, whose nodes have not
    /// all reported its processes gone, or a requeued job's previous run, which it
    /// waits for (`BeginTime`) before it may run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending_run: Option<Box<EndingRun>>,
    /// Why the job could never run, when it failed on entering the queue (the
    /// configuration changed under it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// A running job in its preemption grace time: when it may be preempted, when it
    /// was, and when its grace ends. Filled in when the job is shown, never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<Box<PreemptionTimes>>,
    /// A running job chosen as a preemption victim, as the store keeps it: a
    /// restarted controller (or a backup taking over) carries the preemption on — the
    /// victim ended at the same grace's end, its preemptor started on what it frees —
    /// instead of choosing again. Written with the job, never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempting: Option<Box<PreemptingRun>>,
    /// Records written before these fields were typed: `held` and the `details` map.
    /// Read once by [`JobRecord::upgrade`], never written.
    #[serde(default, rename = "held", skip_serializing)]
    pub legacy_held: bool,
    /// See [`JobRecord::legacy_held`].
    #[serde(default, rename = "details", skip_serializing)]
    pub legacy_details: Option<Box<BTreeMap<String, String>>>,
    /// Trackable resources asked, as accounting records them (`sacct`'s `ReqTRES`,
    /// `scontrol show job`'s `TRES=` while pending): `(TRES, count)` in Slurm's TRES
    /// order — `cpu` (CPUs), `mem` (MiB), `node` (nodes), `billing` (billable units,
    /// see slurm.conf's `TRESBillingWeights`), then the tracked GRES (`gres/gpu`,
    /// `gres/gpu:a100`: devices) in `AccountingStorageTRES` order. Set at submission;
    /// empty in records written before Sluice kept it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tres_req: Vec<(String, u64)>,
    /// Trackable resources allocated (`AllocTRES`), as [`JobRecord::tres_req`]; set when
    /// the job starts, empty before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tres_alloc: Vec<(String, u64)>,
    /// GPUs allocated per node by type, in the order of [`JobRecord::nodes`]: `(type,
    /// count)` as slurm.conf spells the type; GPUs without a type are not listed.
    /// Recorded whether or not accounting tracks the type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_types_per_node: Vec<Vec<(String, u32)>>,
    /// Since when the job accrues age for its priority (`AccrueTime`, Unix seconds):
    /// when it became eligible (begin time reached, not held, dependencies met); `None`
    /// while it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accrue_time: Option<i64>,
    /// Its latest run's suspensions by operators, if it was ever suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,
    /// A running job whose GPUs have stayed idle (sluice.conf's `IdleGpuThreshold` for
    /// `IdleGpuTime`): how many, since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_gpus: Option<crate::usage::IdleGpus>,
    /// A service job's restarts in place and health (`desc.service`), as its agent
    /// reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_state: Option<crate::service::ServiceState>,
    /// A service job's stable address (`http://HOST:PORT/services/NAME/`), when it
    /// declares a port and the controller listens on TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_url: Option<String>,
    /// Its plain TCP address (`HOST:PORT`), when sluice.conf's `ServiceTcpPorts`
    /// holds its port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tcp: Option<String>,
    /// A heterogeneous job's component: its leader, offset and the job's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub het: Option<HetJob>,
}

/// Who holds a pending job back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    /// Its owner (`scontrol hold` by the owner, `uhold`, `sbatch -H`): `JobHeldUser`;
    /// the owner may release it.
    User,
    /// An operator (`scontrol hold` by root or the controller's user): `JobHeldAdmin`;
    /// only an operator may release it.
    Admin,
    /// Its reservation was deleted while it waited: `ReservationDeleted`, released as
    /// an operator's hold.
    ReservationDeleted(String),
    /// Requeued held (`scontrol requeuehold`): `job requeued in held state`, which its
    /// owner may release.
    Requeued,
    /// Requeued held in the state `SPECIAL_EXIT` (`scontrol requeuehold
    /// State=SpecialExit`), as [`Hold::Requeued`] otherwise.
    SpecialExit,
    /// [`Hold::Requeued`], then held by an operator (`scontrol hold`): it still says
    /// `job requeued in held state`, and only an operator releases it.
    RequeuedAdmin,
    /// [`Hold::SpecialExit`], then held by an operator, as [`Hold::RequeuedAdmin`].
    SpecialExitAdmin,
}

impl Hold {
    /// Whether the job's owner may release it (Slurm's `WAIT_HELD_USER`), not only an
    /// operator.
    pub fn owners(&self) -> bool {
        matches!(self, Hold::User | Hold::Requeued | Hold::SpecialExit)
    }

    /// Whether it came with a requeue (`job requeued in held state`).
    pub fn requeued(&self) -> bool {
        matches!(
            self,
            Hold::Requeued | Hold::SpecialExit | Hold::RequeuedAdmin | Hold::SpecialExitAdmin
        )
    }

    /// Whether its job waits in the state `SPECIAL_EXIT`.
    pub fn special_exit(&self) -> bool {
        matches!(self, Hold::SpecialExit | Hold::SpecialExitAdmin)
    }

    /// This hold as an operator sets it on a job held already: an admin hold, or
    /// with `uhold` (`user`) one its owner may release. As Slurm keeps the state's
    /// description, a requeued job's hold still says it was requeued.
    pub fn by_operator(&self, user: bool) -> Hold {
        match (self.special_exit(), self.requeued(), user) {
            (true, _, true) => Hold::SpecialExit,
            (true, _, false) => Hold::SpecialExitAdmin,
            (false, true, true) => Hold::Requeued,
            (false, true, false) => Hold::RequeuedAdmin,
            (false, false, true) => Hold::User,
            (false, false, false) => Hold::Admin,
        }
    }
}

/// The scheduler pass that started a job (Slurm's `Scheduler=Main|Backfill`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartPass {
    /// The main pass (or a reservation's, or a preemptor's start).
    Main,
    /// The backfill pass.
    Backfill,
}

impl StartPass {
    /// As `scontrol show job` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            StartPass::Main => "Main",
            StartPass::Backfill => "Backfill",
        }
    }
}

/// A job's run whose processes are still being ended (the job is `COMPLETING`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndingRun {
    /// The run (its restart count).
    pub run: u32,
    /// The first of the nodes it still runs on (a record from before `nodes` names the
    /// batch script's node only).
    pub node: String,
    /// Every node that has not yet reported the run's processes gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

/// A running job's run being preempted, as the store keeps it (see
/// [`JobRecord::preempting`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptingRun {
    /// The run being preempted (its restart count).
    pub run: u32,
    /// The pending job it is preempted for.
    pub by: u64,
    /// `PreemptMode=REQUEUE` (else `CANCEL`).
    pub requeue: bool,
    /// When it was chosen (`PreemptTime`), controller seconds.
    pub at: i64,
    /// When its grace ends.
    pub deadline: i64,
    /// Its grace is over and its end was ordered (a `CANCEL` victim being terminated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ending: bool,
}

/// A running job being preempted, as `scontrol show job` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptionTimes {
    /// When it became preemptable (its start plus `PreemptExemptTime`).
    pub eligible: Option<i64>,
    /// When it was chosen as a victim.
    pub at: i64,
    /// When its grace time ends (its `EndTime` meanwhile).
    pub grace_end: i64,
}

impl JobRecord {
    /// Seconds its latest run spent suspended by `t` (by its end, once it ended).
    pub fn suspended_secs(&self, t: i64) -> i64 {
        self.suspension
            .map_or(0, |s| s.secs_at(self.end_time.unwrap_or(t)))
    }

    /// Seconds its latest run has run by `t` (by its end, once it ended), its
    /// suspensions left out as Slurm leaves them out (`RunTime`, `Elapsed`).
    pub fn run_secs(&self, t: i64) -> i64 {
        match self.start_time {
            Some(s) => (self.end_time.unwrap_or(t) - s - self.suspended_secs(t)).max(0),
            None => 0,
        }
    }

    /// When a running job's time limit runs out: its start, its limit and the
    /// suspensions that are over (one under way is not counted until it is, as Slurm
    /// shows `EndTime`).
    pub fn limit_end(&self) -> Option<i64> {
        let over = self.suspension.map_or(0, |s| s.secs);
        Some(self.start_time? + self.time_limit? + over)
    }

    /// Whether the job is `COMPLETING` (`CG`): its run's processes are being ended and
    /// not yet gone on every node. Slurm shows the flag in place of the state
    /// (`squeue`'s `%T`, `scontrol show job`'s `JobState`); accounting keeps the state.
    pub fn completing(&self) -> bool {
        self.ending_run.is_some()
    }

    /// The state as `squeue` and `scontrol show job` name it: `COMPLETING` while
    /// [`JobRecord::completing`], else the state's own name.
    pub fn shown_state(&self) -> &'static str {
        if self.completing() {
            "COMPLETING"
        } else if self.special_exit() {
            "SPECIAL_EXIT"
        } else {
            self.state.name()
        }
    }

    /// The compact state (`squeue`'s `%t`): `CG` while [`JobRecord::completing`].
    pub fn shown_state_short(&self) -> &'static str {
        if self.completing() {
            "CG"
        } else if self.special_exit() {
            "SE"
        } else {
            self.state.short()
        }
    }

    /// The nodes squeue lists for it: its own, or while a requeued job's last run is
    /// still ending (`COMPLETING`, back in the queue), those that run has not yet
    /// left, as Slurm keeps them on the job until they have.
    pub fn listed_nodes(&self) -> &[String] {
        match &self.ending_run {
            Some(e) if self.nodes.is_empty() && self.state == JobState::Pending => &e.nodes,
            _ => &self.nodes,
        }
    }

    /// Whether it waits requeued in the state `SPECIAL_EXIT`.
    pub fn special_exit(&self) -> bool {
        self.state == JobState::Pending && self.hold.as_ref().is_some_and(Hold::special_exit)
    }

    /// Whether someone holds it back.
    pub fn held(&self) -> bool {
        self.hold.is_some()
    }

    /// Reads what a record written before its control fields were typed kept in
    /// `held` and `details` into the typed fields, and drops the old ones.
    pub fn upgrade(&mut self) {
        let details = self.legacy_details.take().map(|d| *d).unwrap_or_default();
        if std::mem::take(&mut self.legacy_held) && self.hold.is_none() {
            self.hold = Some(
                match (
                    details.get("reservation_deleted"),
                    details.get("admin_hold"),
                ) {
                    (Some(name), _) => Hold::ReservationDeleted(name.clone()),
                    (None, Some(_)) => Hold::Admin,
                    (None, None) => Hold::User,
                },
            );
        }
        if self.start_pass.is_none() {
            self.start_pass = details.get("scheduler").map(|s| {
                if s == "Backfill" {
                    StartPass::Backfill
                } else {
                    StartPass::Main
                }
            });
        }
        if self.ending_run.is_none() {
            self.ending_run = details.get("ending_run").and_then(|e| {
                let (run, node) = e.split_once('@')?;
                Some(Box::new(EndingRun {
                    run: run.parse().ok()?,
                    node: node.to_string(),
                    nodes: Vec::new(),
                }))
            });
        }
        if self.refused.is_none() {
            self.refused = details.get("refused").cloned();
        }
    }

    /// The memory the job asked for, or the partition's default that applied to it
    /// (MiB per node, per CPU or per GPU); `None` when neither (the job may use all of
    /// each node's memory). What `scontrol show job` prints as
    /// `MinMemoryCPU`/`MinMemoryNode` and `squeue`'s `%m`.
    pub fn memory_request(&self) -> Option<MemoryRequest> {
        self.desc.memory.or(self.mem_default)
    }

    /// The key records are listed by: the id, except that an array's tasks sort
    /// together by task index under the array's id (`(array id, index)`), whatever ids
    /// they took — the task that runs last holds the array's own id, as in Slurm.
    pub fn list_key(&self) -> (u64, u32) {
        self.array.unwrap_or((self.id, 0))
    }

    /// For an array's own record: its last task still there once others have left it
    /// (started, or cancelled on their own), when Slurm's record becomes that task
    /// (`A_5`). None with more left, or for an array of one task from the start (still
    /// the array, `A_[7]`).
    pub fn last_task_left(&self) -> Option<u32> {
        match (&self.array_pending, &self.desc.array) {
            (Some((rest, _)), Some((submitted, _))) if rest.len() == 1 && submitted.len() > 1 => {
                Some(rest[0])
            }
            _ => None,
        }
    }

    /// The id as `squeue` shows it: `123`, `123_4`, or `123_[5-9%2]` for a remainder.
    pub fn display_id(&self) -> String {
        match (&self.array, &self.array_pending) {
            (Some((array, task)), _) => format!("{array}_{task}"),
            (None, Some((rest, throttle))) => {
                let mut s = format!("{}_[{}", self.id, compact_indices(rest));
                if let Some(t) = throttle {
                    s.push_str(&format!("%{t}"));
                }
                s.push(']');
                s
            }
            _ => match self.het {
                Some(h) => format!("{}+{}", h.job_id, h.offset),
                None => self.id.to_string(),
            },
        }
    }
}

/// A heterogeneous job's component (Slurm's hetjob): the leader's id, which the whole
/// job goes by, this component's offset (0 for the leader) and how many components
/// the job has. Components have consecutive ids, the leader's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HetJob {
    /// The leader's id (`HetJobId`).
    pub job_id: u64,
    /// This component's offset (`HetJobOffset`).
    pub offset: u32,
    /// Components in the job.
    pub size: u32,
}

impl HetJob {
    /// The ids of every component, as Slurm's `HetJobIdSet` prints them (`12-13`).
    pub fn id_set(&self) -> String {
        if self.size <= 1 {
            self.job_id.to_string()
        } else {
            format!("{}-{}", self.job_id, self.job_id + self.size as u64 - 1)
        }
    }
}

/// Compact index ranges: `0-3,7`.
pub fn compact_indices(indices: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            indices[i].to_string()
        } else {
            format!("{}-{}", indices[i], indices[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// A TRES list as `scontrol show job` prints it (`TRES=`): `name=count` in the order
/// given, counts of 0 left out, memory (MiB) as [`tres_mib`] writes it (`1500M`, `3G`,
/// `3.50G`).
pub fn tres_string(tres: &[(String, u64)]) -> String {
    tres.iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| match t.as_str() {
            "mem" => format!("mem={}", tres_mib(*n)),
            _ => format!("{t}={n}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A TRES list as `sacct` prints it (`AllocTRES`, `ReqTRES`): as [`tres_string`], its
/// entries sorted as text — `billing=6,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=3G,node=1`.
pub fn tres_string_sorted(tres: &[(String, u64)]) -> String {
    let full = tres_string(tres);
    let mut parts: Vec<&str> = full.split(',').filter(|p| !p.is_empty()).collect();
    parts.sort_unstable();
    parts.join(",")
}

/// MiB as Slurm prints memory in TRES strings (`scontrol show job`'s `TRES=`, a node's
/// `CfgTRES`/`AllocTRES`, sacct's `AllocTRES`): the next unit up (1024 times larger) is
/// taken while the amount is at least 1024 and a whole multiple of 512 of the current
/// unit, so that halves count as exact; a whole result is printed bare (`3G`, `100G`),
/// any other with two decimals (`3584` MiB is `3.50G`); `1500` MiB stays `1500M`.
pub fn tres_mib(mib: u64) -> String {
    const UNITS: [&str; 5] = ["M", "G", "T", "P", "E"];
    if mib == 0 {
        return "0".into();
    }
    let mut n = mib as f64;
    let mut unit = 0;
    // Slurm tests the whole part only, once a halving has made the amount fractional.
    while n >= 1024.0 && (n as u64).is_multiple_of(512) && unit + 1 < UNITS.len() {
        n /= 1024.0;
        unit += 1;
    }
    if n.fract() == 0.0 {
        format!("{}{}", n as u64, UNITS[unit])
    } else {
        format!("{n:.2}{}", UNITS[unit])
    }
}

impl NodeInfo {
    /// Every CPU of the node, those kept for the system included (Slurm's `CPUTot`,
    /// sinfo's `%c`).
    pub fn cpus_total(&self) -> u32 {
        self.cpus + self.spec_cpus
    }
}

/// MiB in the largest unit that divides them exactly: `1500M`, `3G`, `1T`.
pub fn exact_mib(mut n: u64) -> String {
    const UNITS: [&str; 5] = ["M", "G", "T", "P", "E"];
    let mut unit = 0;
    while n > 0 && n.is_multiple_of(1024) && unit + 1 < UNITS.len() {
        n /= 1024;
        unit += 1;
    }
    format!("{n}{}", UNITS[unit])
}

/// A node as `sinfo` and `scontrol show node` see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    /// `CfgTRES` as `scontrol show node` prints it (`cpu=2,mem=24105M,billing=2,
    /// gres/gpu=4`, GRES as `AccountingStorageTRES` tracks them); empty from an older
    /// controller.
    #[serde(default)]
    pub cfg_tres: String,
    /// `AllocTRES` as `scontrol show node` prints it (empty when nothing is allocated).
    #[serde(default)]
    pub alloc_tres: String,
    /// Name.
    pub name: String,
    /// Base state: `idle`, `mixed`, `allocated`, `down`, `drained`, `draining`.
    pub state: String,
    /// Reason for DOWN/DRAIN.
    pub reason: Option<String>,
    /// The CPUs jobs can have (Slurm's `CPUEfctv`): the node's, less those kept for
    /// the system (`spec_cpus`).
    pub cpus: u32,
    /// Allocated CPUs.
    pub cpus_alloc: u32,
    /// CPUs kept for the system (`CoreSpecCount`, `CpuSpecList`), besides `cpus`.
    #[serde(default)]
    pub spec_cpus: u32,
    /// How many cores those are (`CoreSpecCount=`).
    #[serde(default)]
    pub core_spec_count: u32,
    /// Which CPUs those are, as `scontrol show node` shows them (`CPUSpecList=`).
    #[serde(default)]
    pub cpu_spec_list: String,
    /// Memory MiB total and allocated.
    pub memory: u64,
    /// Allocated memory.
    pub memory_alloc: u64,
    /// GRES as configured, e.g. `gpu:rtxpro6000:8`.
    pub gres: String,
    /// Partitions it belongs to.
    pub partitions: Vec<String>,
    /// Sockets, cores per socket, threads per core.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Threads per core.
    pub threads_per_core: u32,
    /// Features.
    pub features: Vec<String>,
    /// Weight.
    pub weight: u32,
    /// Is its agent connected.
    pub agent_up: bool,
    /// A `drained` node gone DOWN beneath its drain, its agent silent `SlurmdTimeout`
    /// long (Slurm's `DOWN+DRAIN`; `sinfo` shows it `drain*` as it does a drained
    /// one).
    #[serde(default)]
    pub down: bool,
    /// Who set the reason (uid) and when (Unix seconds), for an operator's DRAIN or
    /// DOWN.
    #[serde(default)]
    pub reason_set: Option<(u32, i64)>,
    /// `NodeAddr` as configured (default: the host name).
    #[serde(default)]
    pub node_addr: String,
    /// `NodeHostname` as configured (default: the node's name).
    #[serde(default)]
    pub node_hostname: String,
    /// `Port` as configured, if any.
    #[serde(default)]
    pub port: Option<u16>,
    /// When its agent registered, Unix seconds (Slurm's `SlurmdStartTime`).
    #[serde(default)]
    pub agent_start: Option<i64>,
    /// When it last ran a job (or its agent registered), Unix seconds
    /// (`LastBusyTime`).
    #[serde(default)]
    pub last_busy: Option<i64>,
    /// A dynamic node (`scontrol create node`, or an agent that registered itself):
    /// Slurm's `DYNAMIC_NORM` state flag.
    #[serde(default)]
    pub dynamic: bool,
}

/// A partition as `sinfo` and `scontrol show partition` see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionInfo {
    /// Name.
    pub name: String,
    /// Default partition.
    pub default: bool,
    /// `UP`, `DOWN`, `DRAIN`, `INACTIVE`.
    pub state: String,
    /// MaxTime seconds (`None` UNLIMITED).
    pub max_time: Option<i64>,
    /// DefaultTime seconds.
    pub default_time: Option<i64>,
    /// Nodes (names).
    pub nodes: Vec<String>,
    /// MaxNodes.
    pub max_nodes: Option<u32>,
    /// PriorityTier.
    pub priority_tier: u16,
    /// The access lists as `scontrol show partition` prints them, in its order:
    /// `("AllowGroups", "ALL")`, `("AllowAccounts", "phys")` or `("DenyAccounts",
    /// "chem")`, `("AllowQos", "ALL")` or `("DenyQos", "low")`.
    #[serde(default)]
    pub access: Vec<(String, String)>,
    /// The partition QOS (`QOS=`), if any.
    #[serde(default)]
    pub qos: Option<String>,
    /// `MinNodes`.
    #[serde(default)]
    pub min_nodes: u32,
    /// `ExclusiveUser=YES`.
    #[serde(default)]
    pub exclusive_user: bool,
    /// `OverSubscribe` as printed: `NO`, `EXCLUSIVE`, `YES:4`, `FORCE:4` (empty: `NO`).
    #[serde(default)]
    pub oversubscribe: String,
    /// `PriorityJobFactor` (1 from an older controller that did not send it).
    #[serde(default = "one")]
    pub priority_job_factor: u16,
    /// `GraceTime`, seconds.
    #[serde(default)]
    pub grace_time: i64,
    /// `PreemptMode` in force: its own, else the cluster's (`OFF`, `CANCEL`,
    /// `REQUEUE`); empty from an older controller.
    #[serde(default)]
    pub preempt_mode: String,
    /// Its own `DefMemPerCPU` or `DefMemPerNode`, MiB (`None`: the global default,
    /// which `scontrol show partition` shows as `DefMemPerNode=UNLIMITED`).
    #[serde(default)]
    pub def_mem: Option<MemoryRequest>,
    /// `TRES` of all its nodes (`cpu=8,mem=8000M,node=2,billing=8`); empty from an
    /// older controller.
    #[serde(default)]
    pub tres: String,
}

fn one() -> u16 {
    1
}

/// The cluster's configuration as `scontrol show config` prints it: key, value pairs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigInfo {
    /// Cluster name.
    pub cluster_name: String,
    /// Ordered `(key, value)` lines.
    pub entries: Vec<(String, String)>,
}

/// Reply to a submission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitReply {
    /// The new job's id.
    pub job_id: u64,
    /// Warnings to show the user (`sbatch: warning: ...`).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// Reply to a test-only submission (`sbatch --test-only`): when and where the job
/// would start now, nothing queued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WillRunReply {
    /// The id the job would take: the next one, not taken.
    pub job_id: u64,
    /// When it would start (seconds since the epoch).
    pub start: i64,
    /// The processors it would take.
    pub cpus: u32,
    /// The nodes, as a hostlist.
    pub nodes: String,
    /// The partition.
    pub partition: String,
}

/// A request to signal or cancel jobs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CancelRequest {
    /// Job ids, with optional array task (`123`, `123_4`). With the filters below,
    /// those of these jobs that pass them; empty, every job that passes them.
    pub jobs: Vec<(u64, Option<u32>)>,
    /// Signal number (None: cancel).
    pub signal: Option<i32>,
    /// Signal the batch shell only (`-b`), or both (`-f`).
    pub batch: bool,
    /// Also the steps when `batch` (`--full`).
    pub full: bool,
    /// Only jobs of this user name.
    pub user: Option<String>,
    /// Only jobs with this name.
    pub name: Option<String>,
    /// Only jobs in this partition.
    pub partition: Option<String>,
    /// Only jobs in these states.
    pub states: Vec<JobState>,
    /// Records already chosen by their own ids (a task's own id, an array's head for
    /// its unstarted rest), as a filter chooses them: what the REST API's `DELETE
    /// jobs` chose with Slurm's filters, or what scancel asks about again after a
    /// refusal. With `jobs` empty, instead of the filters. One that has ended since is
    /// refused as done (`AlreadyDone`), one no longer known as unknown: the caller
    /// decides what they are worth (nothing, for a cancel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<u64>,
    /// With `steps` and no signal: cancel them by SIGCONT and SIGTERM, then SIGKILL
    /// after KillWait, as Slurm's SIG_TERM_KILL (srun's `-K` once a task failed),
    /// instead of SIGKILL at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
    /// Steps to cancel or signal on their own (`scancel JOB.STEP`): job, array task,
    /// step. The steps of running jobs only; with them, `jobs` is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<(u64, Option<u32>, u32)>,
}

/// An error reply: Slurm's message and what went wrong (see [`crate::error`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// The message.
    pub error: String,
    /// What went wrong; absent from peers that predate codes (then the HTTP status
    /// tells, [`crate::error::ErrorCode::from_http_status`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<crate::error::ErrorCode>,
}

impl From<crate::error::ApiError> for ErrorReply {
    fn from(e: crate::error::ApiError) -> Self {
        ErrorReply {
            error: e.message,
            code: Some(e.code),
        }
    }
}

/// `scontrol update NodeName=...`: a request to change nodes' state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeUpdate {
    /// A hostlist expression of node names.
    pub nodes: String,
    /// `DRAIN`, `FAIL`, `DOWN`, `RESUME`, `UNDRAIN` or `IDLE`.
    pub state: String,
    /// Why (required for DRAIN, FAIL and DOWN).
    pub reason: Option<String>,
}

/// `scontrol update PartitionName=...`: a request to change a partition (operators).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionUpdate {
    /// The partition's name.
    pub name: String,
    /// `(key, value)` in order, keys as Slurm names them (`State`, `MaxTime`,
    /// `DefaultTime`, `MaxNodes`, `MinNodes`, `Default`, `PriorityTier`,
    /// `PriorityJobFactor`, `GraceTime`, `Nodes`, ...).
    pub changes: Vec<(String, String)>,
}

/// `scontrol update JobId=...`: a request to change a job (or one array task).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobUpdate {
    /// The array task, when one task is meant.
    pub task: Option<u32>,
    /// Several of the array's tasks in one request (`JobId=4_[1-3]`), answered
    /// together; taken before `task`, which then names the first of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<u32>,
    /// `(key, value)` pairs in Slurm's spelling (`TimeLimit`, `JobName`, ...).
    pub changes: Vec<(String, String)>,
}

/// A controller-to-agent order: signal a running job (its steps, or with
/// `batch_only` its batch shell).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignalOrder {
    /// Job id.
    pub job_id: u64,
    /// Signal number.
    pub signal: i32,
    /// The batch shell only.
    #[serde(default)]
    pub batch_only: bool,
    /// One step's tasks only; with SIGKILL the step is cancelled (its srun told so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// With `step`: the step reached its own time limit, and `signal` (SIGTERM) is
    /// followed by SIGKILL this many seconds later (KillWait); its srun is told why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_kill_wait: Option<i64>,
    /// With `step`: the step is cancelled by SIGCONT and SIGTERM, then SIGKILL this
    /// many seconds later (KillWait), as Slurm's SIG_TERM_KILL (`srun -K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate_kill_wait: Option<i64>,
}

/// A controller-to-agent order: stop (`suspend`) or continue a running job's processes
/// on the node (`scontrol suspend`/`resume`). Its time limit does not run while they
/// are stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuspendOrder {
    /// Job id.
    pub job_id: u64,
    /// Stop them (true) or let them continue (false).
    pub suspend: bool,
}

/// A controller-to-agent order: end a running job (SIGCONT and SIGTERM, SIGKILL after
/// `kill_wait`), reporting it as `state`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerminateOrder {
    /// Job id.
    pub job_id: u64,
    /// The state to report (CANCELLED, TIMEOUT...).
    pub state: JobState,
    /// slurm.conf's `KillWait`, seconds (Slurm's default, 30, when absent).
    #[serde(default = "default_kill_wait")]
    pub kill_wait: i64,
    /// Only this run of the job (restart count): a run the registration of a restarted
    /// agent listed that the controller no longer gives the node, or whose end it
    /// ordered while the agent was away. `None`: whichever run the agent has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
}

fn default_kill_wait() -> i64 {
    30
}

/// An agent's registration with the controller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Register {
    /// Its node.
    pub node: String,
    /// Jobs it is running (or whose end it is still reporting), with their run (restart
    /// count): a job requeued since is not the one the agent has.
    pub running: Vec<(u64, u32)>,
    /// What the agent found on its host (slurmd's registration: CPUs, sockets, cores,
    /// threads, memory, GRES), checked against slurm.conf's node line unless
    /// `SlurmdParameters=config_overrides`. `None`: nothing to check (`sluice up`'s
    /// agents, virtual nodes all on one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<NodeHardware>,
    /// A digest of the agent's slurm.conf (Slurm's `hash_val`): the controller warns
    /// when it differs from its own. `None`: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conf_hash: Option<String>,
    /// A dynamic node's line (`NodeName=N CPUs=... RealMemory=...`, slurmd's `-Z`): a
    /// node the controller does not know is created from it (it is kept across
    /// restarts); one it knows registers as any other. `None`: a configured node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<String>,
}

/// The resources an agent found on its host, as slurmd reports them at registration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeHardware {
    /// Online CPUs (hardware threads).
    pub cpus: u32,
    /// Boards.
    pub boards: u32,
    /// Sockets, all boards together.
    pub sockets: u32,
    /// Cores per socket.
    pub cores: u32,
    /// Threads per core.
    pub threads: u32,
    /// Memory, MiB (`RealMemory`).
    pub real_memory: u64,
    /// GRES found, by name (`gpu`), with their counts; a GRES the agent cannot count
    /// is left out (not checked).
    #[serde(default)]
    pub gres: Vec<(String, u64)>,
}

/// The controller's answer to a registration, and to a ping.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Incarnation {
    /// Names this run of the controller: an agent registers again when it changes.
    pub incarnation: String,
}

/// How often a registered agent tells the controller it is alive, seconds, until the
/// controller names another interval in its answer (Slurm's controller pings each node
/// every `SlurmdTimeout/3`; here the agents speak first, so that a controller with many
/// idle agents only listens). The controller pings an agent only once it has not heard
/// from it for two intervals. A large cluster's controller asks for less
/// ([`HeartbeatReply::every_secs`]).
pub const HEARTBEAT_SECS: u64 = 2;

/// How many heartbeats a second a controller lets its agents send at most (a cluster
/// of more than `HEARTBEAT_SECS` times as many nodes is asked to send them less often).
pub const HEARTBEATS_PER_SEC: u64 = 500;

/// A registered agent's heartbeat (`POST /v1/agent/heartbeat`): it is alive, and knows
/// the controller as `incarnation`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Its node.
    pub node: String,
    /// The controller incarnation it registered with.
    pub incarnation: String,
}

/// The controller's answer to a heartbeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    /// This run of the controller: another than the agent's means it restarted.
    pub incarnation: String,
    /// Whether the controller counts the agent as its node's, registered with this
    /// incarnation and answering; `false`: it must register again (a restarted
    /// controller, or a node given up as gone or DOWN), as Slurm's controller asks a
    /// node that responds again to register.
    pub registered: bool,
    /// Seconds until the agent's next heartbeat (`None`, from an older controller:
    /// [`HEARTBEAT_SECS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_secs: Option<u64>,
}

/// A step's or an interactive allocation's end, as `srun`/`salloc` report it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitReport {
    /// Exit code.
    pub exit_code: i32,
    /// Signal.
    pub signal: i32,
}

impl ExitReport {
    /// A step's end from its nodes' ends (each a highest exit code and a highest
    /// signal), as Slurm records it: on a node a task ended by a signal outweighs the
    /// others' exit codes (slurmstepd's wait status); across nodes the largest wait
    /// status wins, so that any exit code outweighs another node's signal.
    pub fn of_nodes(nodes: impl IntoIterator<Item = (i32, i32)>) -> ExitReport {
        let raw = |(code, signal): (i32, i32)| {
            if signal != 0 {
                i64::from(signal)
            } else {
                i64::from(code) << 8
            }
        };
        nodes
            .into_iter()
            .map(|(code, signal)| if signal != 0 { (0, signal) } else { (code, 0) })
            .max_by_key(|&n| raw(n))
            .map_or_else(ExitReport::default, |(exit_code, signal)| ExitReport {
                exit_code,
                signal,
            })
    }
}

#[cfg(test)]
mod exit_report_tests {
    use super::ExitReport;

    #[test]
    fn a_steps_end_is_its_nodes_largest_wait_status() {
        let of = |n: &[(i32, i32)]| {
            let r = ExitReport::of_nodes(n.iter().copied());
            (r.exit_code, r.signal)
        };
        // On one node, a signal outweighs an exit code.
        assert_eq!(of(&[(2, 15)]), (0, 15));
        // Across nodes, an exit code outweighs another node's signal.
        assert_eq!(of(&[(3, 0), (0, 9)]), (3, 0));
        assert_eq!(of(&[(0, 9), (1, 15)]), (0, 15));
        assert_eq!(of(&[(1, 0), (4, 0)]), (4, 0));
        assert_eq!(of(&[]), (0, 0));
    }
}

/// `GET /v1/jobs/{id}/script`'s answer (`scontrol write batch_script`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobScript {
    /// The batch script as submitted.
    pub script: String,
}

/// `scontrol hold|uhold|release|requeue|requeuehold`'s body: the array tasks named, if
/// any, and how a requeue takes the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSelection {
    /// The array task, when one is named.
    #[serde(default)]
    pub task: Option<u32>,
    /// Several of the array's tasks in one request (`scontrol requeue 4_1-3`), answered
    /// together; taken before `task`, which then names the first of them (so that a
    /// controller that does not know this field acts on that one task, not on the
    /// whole array).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<u32>,
    /// `scontrol uhold`: a user hold even when an operator sets it.
    #[serde(default)]
    pub user: bool,
    /// How a requeue takes the job (ignored by the other verbs).
    #[serde(default)]
    pub requeue: RequeueFlags,
}

impl TaskSelection {
    /// Names `tasks` of an array (none: the job, or the whole array).
    pub fn of_tasks(tasks: Vec<u32>) -> TaskSelection {
        TaskSelection {
            task: tasks.first().copied(),
            tasks: if tasks.len() > 1 { tasks } else { Vec::new() },
            ..Default::default()
        }
    }

    /// The array tasks named (`tasks`, else `task`); None for the job (or the whole
    /// array).
    pub fn named(&self) -> Option<Vec<u32>> {
        if !self.tasks.is_empty() {
            return Some(self.tasks.clone());
        }
        self.task.map(|t| vec![t])
    }
}

/// `scontrol requeue`'s flags and `requeuehold`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequeueFlags {
    /// `Incomplete`: only a job still running or suspended; any other is left as it is,
    /// without an error.
    #[serde(default)]
    pub incomplete: bool,
    /// `requeuehold`: the job waits held (`job requeued in held state`) until released.
    #[serde(default)]
    pub hold: bool,
    /// `requeuehold State=SpecialExit`: held, in the state `SPECIAL_EXIT`.
    #[serde(default)]
    pub special_exit: bool,
}

/// The answer to a job verb (`scontrol hold|release|requeue`) on an array's tasks:
/// Slurm's line for each group of tasks alike (`1234_1-3: Job is pending execution`,
/// `1234_4: No error`) when any task was refused, or for a task the array lacks
/// (`1234_9: Invalid job id specified`). Empty: all was done.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    /// The lines, in task order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
}

/// What `sacct` asks of the accounting records (`POST /v1/accounting`): the jobs
/// matching every criterion given (an empty list, `None`: any), answered with their
/// steps as an [`Accounting`]. The controller selects them in the database, by index.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountingQuery {
    /// `-j ID`: these jobs, each by its id or, for an array, every task of the array.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<u64>,
    /// `-j ID_TASK`: these array tasks, as (array job id, index).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<(u64, u32)>,
    /// `-u`: owned by one of these users (names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// `-A`: charged to one of these accounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
    /// `-r`: in one of these partitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<String>,
    /// `-s`: in one of these states.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<JobState>,
    /// `--name`: named one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// `-S`: ended at or after this time (Unix seconds), or not ended yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// `-E`: submitted at or before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<i64>,
    /// `-D`: the earlier runs of requeued jobs too.
    #[serde(default)]
    pub duplicates: bool,
    /// `-M NAME`: the jobs of this cluster (one sharing the controller's database)
    /// rather than the controller's own; an unknown cluster has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// What `sacct` reads: jobs and their steps (all the database holds for `GET`, those
/// an [`AccountingQuery`] selects for `POST`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    /// Jobs.
    pub jobs: Vec<JobRecord>,
    /// Steps.
    pub steps: Vec<StepRecord>,
    /// Earlier runs of requeued jobs (state `REQUEUED`), by job then run.
    #[serde(default)]
    pub runs: Vec<JobRecord>,
}

/// The answer to a reservation change: the reservation's name (generated for a new one
/// without `ReservationName`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationName {
    /// The name.
    pub name: String,
}

/// An empty answer: the request was carried out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {}

/// The answer to a cancel (`scancel`): what it asked of the jobs it chose was done,
/// except for these, each refused on its own as Slurm's controller refuses one job: a
/// job a filter chose that the caller may not touch, a signal to a job not running.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancelled {
    /// The jobs refused, in the order Slurm's scancel asks about them (pending ones
    /// first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<CancelRefusal>,
}

/// One job a cancel left alone, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelRefusal {
    /// The record's id.
    pub job: u64,
    /// The job as Slurm's scancel names it (`123`, `123_4`, `123_[5-9]`).
    pub named: String,
    /// Slurm's words for why (`Access/permission denied`).
    pub error: String,
    /// What went wrong: `AccessDenied`, or `Busy` for a job that cannot take a signal
    /// now (pending or suspended: ask again).
    pub code: crate::error::ErrorCode,
    /// The other records refused with it, one job in Slurm: an array's unstarted
    /// tasks, a heterogeneous job's other components. Asked about again with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<u64>,
}

/// `scontrol delete nodename=...`'s answer: the nodes that could be deleted were;
/// those that could not, and why (Slurm's message for the first of them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodesDeleted {
    /// The nodes not deleted, as a host list (empty: all were).
    pub failed: String,
    /// Why (`Requested nodes are busy`, `Invalid node name specified`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A controller-to-agent order: a running job's time limit changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeLimitOrder {
    /// Job id.
    pub job_id: u64,
    /// The run it applies to.
    pub run: u32,
    /// Seconds from the job's start; `None`: unlimited.
    pub time_limit: Option<i64>,
}

/// A controller-to-agent order to run a job's batch script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchBatch {
    /// The job.
    pub job: JobRecord,
    /// Environment for the script (Slurm variables included).
    pub environment: Vec<(String, String)>,
    /// KillWait, seconds.
    pub kill_wait: i64,
    /// The sending controller's incarnation (see `/v1/ping`). An agent refuses orders
    /// from an incarnation other than the one it registered with: a launch sent just
    /// before a controller died must not start a run the restarted controller has
    /// already given up for lost. Empty: not checked.
    #[serde(default)]
    pub incarnation: String,
    /// Device confinement, with cgroup.conf's `ConstrainDevices=yes`: every GRES device
    /// file of the node the order goes to (gres.conf's `File=`), each marked with whether
    /// the job may open it. The agent denies the job's processes there (its batch script
    /// and its steps' tasks) every device that is not allowed; a step is further held to
    /// its own GPUs. `None`: devices are not confined (`ConstrainDevices=no`, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceFile>>,
}

/// One GRES device file of a node, and whether a job may open it (see
/// [`LaunchBatch::devices`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFile {
    /// The path, as gres.conf's `File=` names it (`/dev/nvidia0`).
    pub path: String,
    /// The GPU it belongs to: its index on the node, as in
    /// [`JobRecord::gpus_per_node`] and `CUDA_VISIBLE_DEVICES`. `None` for a file of
    /// another GRES.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// The job may open it.
    pub allowed: bool,
}

/// An agent's report that every task of a step on its node has ended: the worst exit
/// code and the highest signal of those tasks (a task the memory limit killed: exit 0
/// and signal 125, as srun reports it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEnded {
    /// The job.
    pub job: u64,
    /// Its run (`SLURM_RESTART_COUNT`): a requeued job numbers its steps from 0 again.
    #[serde(default)]
    pub run: u32,
    /// The step.
    pub step: u32,
    /// The node.
    pub node: String,
    /// The worst exit code of its tasks there.
    pub exit_code: i32,
    /// The highest signal that ended one of them.
    pub signal: i32,
    /// What its tasks used on this node, to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::usage::StepUsage>>,
}

/// An agent's report that nothing of a job's run is left on its node: the run's
/// supervisor there has left, its processes (every one its steps started, in whatever
/// process group or session) gone — or the node never ran it. Once every node of a run
/// being ended has said so (its batch script's node by the script's end), the job is no
/// longer `COMPLETING` and what it held is free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGone {
    /// The job.
    pub job_id: u64,
    /// Its run (restart count); `None`: no run of the job is here at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    /// The node.
    pub node: String,
}

/// An agent's report that a job's batch script (or allocation) ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobEnded {
    /// Job id.
    pub job_id: u64,
    /// The run (restart count) it belongs to.
    pub run: u32,
    /// The node.
    pub node: String,
    /// Final state.
    pub state: JobState,
    /// Exit code.
    pub exit_code: i32,
    /// Terminating signal.
    pub signal: i32,
    /// End time, Unix seconds.
    pub end: i64,
    /// What the batch script used, to the end (the `batch` step's figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<crate::usage::StepUsage>>,
}

/// A step's start request from srun (inside an allocation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    /// Tasks (`-n`; default: the job's).
    pub ntasks: Option<u32>,
    /// Nodes (`-N`; default: the job's).
    pub nodes: Option<u32>,
    /// Tasks per node.
    pub ntasks_per_node: Option<u32>,
    /// CPUs per task.
    pub cpus_per_task: Option<u32>,
    /// GPUs per task (`--gpus-per-task`, or its job's): without a count of its own
    /// above, the step holds that many for each of its tasks on a node.
    pub gpus_per_task: Option<u32>,
    /// `--gpu-bind` as given (`closest`, `single:N`, `map_gpu:LIST`, `mask_gpu:LIST`,
    /// `none`, `per_task:N`, each with an optional `verbose,`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_bind: Option<String>,
    /// The command line.
    pub argv: Vec<String>,
    /// Step name (the command's base name).
    pub name: String,
    /// `-w`: the allocation's nodes the step must run on (a hostlist expression).
    #[serde(default)]
    pub nodelist: Option<String>,
    /// `-x`: the allocation's nodes the step must not use.
    #[serde(default)]
    pub exclude: Option<String>,
    /// `--exact`: the step gets only the CPUs its tasks ask for; without it, all of the
    /// job's CPUs on the nodes it runs on (Slurm 22.05's default).
    #[serde(default)]
    pub exact: bool,
    /// `--overlap`: the step may use CPUs the job's running steps hold, and holds none
    /// that a later step must wait for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overlap: bool,
    /// The step id to take: a heterogeneous step's in every component after the first
    /// (one step id across the components, as Slurm's). None: the job's next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<u32>,
    /// A part of a heterogeneous step in an allocation of one component: which part
    /// (0, 1, ...); the step is recorded as `S+P`. None: an ordinary step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<u32>,
    /// The host (short name) and process id of the srun asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srun: Option<(String, u32)>,
    /// `-t`: the step's own time limit, seconds; none: its job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<i64>,
    /// The srun command line (`sacct`'s `SubmitLine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_line: Option<String>,
    /// GPUs the step asks for on each of its nodes (`--gres=gpu:N`,
    /// `--gpus-per-node`): that many of its job's there, which it holds while it runs.
    /// None, with neither `gpus` nor `gpus_per_task`: it sees all of its job's and
    /// holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<u32>,
    /// `--gpus=N`: N GPUs over the nodes the step gets, spread evenly (the first nodes
    /// one more where they do not divide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
}

/// Where a step's tasks run: per node, the global task ids.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    /// Job id.
    pub job_id: u64,
    /// Step number.
    pub step: u32,
    /// Per node: name, agent socket path, task ids (`SLURM_PROCID`) in order.
    pub nodes: Vec<(String, String, Vec<u32>)>,
    /// Total tasks.
    pub ntasks: u32,
    /// Per node: GPU indices for each of its tasks (empty without GPUs).
    #[serde(default)]
    pub task_gpus: Vec<Vec<Vec<u32>>>,
    /// Per node: the step's CPUs there (`SLURM_CPUS_ON_NODE`: all of the job's, or with
    /// `--exact` or `-c` what its tasks ask); empty from a controller that did not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
}

/// srun-to-agent order to run tasks of a step on one node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchTasks {
    /// The job (for ownership and environment).
    pub job_id: u64,
    /// Step number.
    pub step: u32,
    /// Node index in the step (`SLURM_NODEID`).
    pub node_index: u32,
    /// Global task ids here.
    pub tasks: Vec<u32>,
    /// GPU indices per task here.
    #[serde(default)]
    pub task_gpus: Vec<Vec<u32>>,
    /// The step's CPUs here (`SLURM_CPUS_ON_NODE`); None: the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Command line.
    pub argv: Vec<String>,
    /// Environment (the caller's, with the step's variables).
    pub environment: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: String,
    /// Tasks here read their standard input from srun (sent with [`StdinChunk`]s):
    /// those [`LaunchTasks::stdin_task`] names; without this, every task reads
    /// `/dev/null`.
    #[serde(default)]
    pub stdin: bool,
    /// With [`LaunchTasks::stdin`]: the one task here that reads srun's input
    /// (`srun --input=N`), the others reading `/dev/null`; `None`: every task here
    /// reads it (Slurm's default, `--input=all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_task: Option<u32>,
    /// `srun --pty`: task 0, when it runs here, gets a pseudo-terminal of this size as
    /// its standard input, output and error (and controlling terminal); its output
    /// comes back as it is written, not line by line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<WindowSize>,
}

/// A terminal's size in characters (`struct winsize`'s rows and columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowSize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// srun's request to follow a step's events on one node again, after the stream it
/// had broke (the node's agent was restarted): the events from the `from`-th on (srun
/// has the ones before), as the agent streamed them the first time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksAttach {
    /// Job id.
    pub job_id: u64,
    /// Step number.
    pub step: u32,
    /// How many of the step's events on this node srun has received.
    pub from: u64,
}

/// srun has every event of a step's tasks on one node (their exits included): the
/// node may forget them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksDone {
    /// Job id.
    pub job_id: u64,
    /// Step number.
    pub step: u32,
}

/// srun aborts a step (a launch on another node of it failed): a signal to the step's
/// tasks on one node (`POST /v1/tasks/signal`), from the step's owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TasksSignal {
    /// Job id.
    pub job_id: u64,
    /// Step number.
    pub step: u32,
    /// Signal number.
    pub signal: i32,
}

/// srun's standard input for the tasks of a step on one node, in order: each of them
/// that reads srun's input gets every chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StdinChunk {
    /// Job id.
    pub job_id: u64,
    /// Step number.
    pub step: u32,
    /// Bytes to write.
    #[serde(default)]
    pub data: Vec<u8>,
    /// The input ended: close the tasks' standard input after `data`.
    #[serde(default)]
    pub eof: bool,
    /// srun's terminal was resized (`srun --pty`): the task's pseudo-terminal takes
    /// the new size, which sends its foreground processes SIGWINCH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowSize>,
}

/// One event of a running step, streamed by the agent to srun as JSON lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEvent {
    /// Output from a task: task id, stream (1 stdout, 2 stderr), bytes as UTF-8 (lossy).
    Output {
        /// Global task id.
        task: u32,
        /// 1 or 2.
        stream: u8,
        /// Text.
        data: String,
    },
    /// A task ended.
    Exit {
        /// Global task id.
        task: u32,
        /// Exit code.
        code: i32,
        /// Terminating signal.
        signal: i32,
    },
    /// The kernel killed processes of the step on this node for exceeding its memory
    /// (sent after the tasks' exits, before the stream ends).
    OutOfMemory {
        /// The first task on the node.
        task: u32,
        /// How many OOM kills.
        kills: u32,
    },
    /// The agent could not start the tasks.
    Error {
        /// Why.
        message: String,
    },
    /// The step was cancelled (`scancel JOB.STEP`): its tasks here are being killed.
    /// srun says the step is aborted, and slurmstepd's notice for the node.
    Cancelled {
        /// The node.
        node: String,
        /// When, Unix seconds.
        at: i64,
        /// Ended at its own time limit (`srun -t`), not by scancel.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        time_limit: bool,
    },
    /// The step's last event on this node has been sent: nothing follows. (A stream
    /// that ends without it broke: the node's agent went, and srun asks the next one
    /// for the rest.) Not counted among the step's events.
    End,
}

#[cfg(test)]
mod tres_tests {
    use super::*;

    #[test]
    fn tres_lists_print_as_scontrol_and_sacct_print_them() {
        // Real Slurm 22.05.8, a job with two typed GPUs tracked.
        let tres: Vec<(String, u64)> = [
            ("cpu", 2),
            ("mem", 3072),
            ("node", 1),
            ("billing", 6),
            ("gres/gpu", 2),
            ("gres/gpu:a100", 2),
        ]
        .iter()
        .map(|(t, n)| (t.to_string(), *n))
        .collect();
        assert_eq!(
            tres_string(&tres),
            "cpu=2,mem=3G,node=1,billing=6,gres/gpu=2,gres/gpu:a100=2"
        );
        assert_eq!(
            tres_string_sorted(&tres),
            "billing=6,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=3G,node=1"
        );
        let mem = |m: u64| tres_string(&[("mem".to_string(), m), ("energy".to_string(), 0)]);
        assert_eq!(
            [mem(1500), mem(24105), mem(1024), mem(1 << 20), mem(0)],
            ["mem=1500M", "mem=24105M", "mem=1G", "mem=1T", ""]
        );
    }

    #[test]
    fn tres_memory_takes_halves_as_exact_and_prints_two_decimals() {
        // Real Slurm 22.05.8's scontrol show job TRES= for --mem of these sizes.
        assert_eq!(
            [500, 1000, 1023, 1024, 1025, 3000, 3072, 3584, 100 * 1024].map(tres_mib),
            ["500M", "1000M", "1023M", "1G", "1025M", "3000M", "3G", "3.50G", "100G"]
        );
        // 2.5 TiB: 2560 GiB is a multiple of 512 GiB, one unit up again.
        assert_eq!(tres_mib(2560 * 1024), "2.50T");
        // 1536.5 GiB: only its whole part is tested, as Slurm does.
        assert_eq!(tres_mib(1536 * 1024 + 512), "1.50T");
        assert_eq!(tres_mib(0), "0");
    }
}

#[cfg(test)]
mod wire_tests {
    use super::*;

    #[test]
    fn a_time_limit_keeps_unlimited_apart_from_the_partition_default() {
        // `-t UNLIMITED` once arrived as the default (the partition's MaxTime).
        for limit in [None, Some(None), Some(Some(600))] {
            let d = JobDescription {
                time_limit: limit,
                ..Default::default()
            };
            let back: JobDescription =
                serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
            assert_eq!(back.time_limit, limit);
        }
    }
}
