//! What the controller's loop takes: a closed set of inputs.
//!
//! Every change to the controller's state enters here, as one value of [`Input`]: a
//! request from a command (with the channel its answer goes back on), an agent's
//! report, a timer tick, the store's acknowledgement of a submission, or the result of
//! work done off the loop (a forecast, an explanation's simulations, a check of the
//! agents). The loop ([`super::owner`]) handles them one at a time, in the order they
//! arrive; nothing else touches the state.

use std::collections::BTreeMap;

use sluice_core::explain::Forecast;
use sluice_core::JobId;
use sluice_proto::accounts::{
    AccountsError, AccountsRequest, AccountsSnapshot, AdminLevel, ChangeOutcome,
};
use sluice_proto::diag::DiagReport;
use sluice_proto::error::ApiError;
use sluice_proto::explain::Explanation;
use sluice_proto::priority::{PriorityReport, SharesReport};
use sluice_proto::reservations::{ReservationChange, ReservationRecord};
use sluice_proto::types::{
    CancelRequest, Cancelled, ConfigInfo, DeviceFile, JobDescription, JobEnded, JobUpdate,
    NodeInfo, NodeUpdate, PartitionInfo, PartitionUpdate, StepId, StepPlan, StepRequest,
    SubmitReply, WillRunReply,
};
use tokio::sync::oneshot;

use crate::accounts::Requester;
use crate::config::PrivateData;
use crate::state::explain::ExplainWork;
use crate::state::listing::NodesTouched;
use crate::state::{Caller, Job, Prepared};

/// Where an answer goes: the request's handler waits on the other end.
pub type Reply<T> = oneshot::Sender<T>;

/// One input of the loop.
pub enum Input {
    /// A command's request, answered on its own channel.
    Request(Request),
    /// A submission's records are on disk: its jobs enter the queue, and its submitter
    /// is answered with the first one's id.
    Committed {
        /// The checked submission.
        prepared: Box<Prepared>,
        /// Its jobs, as written.
        jobs: Vec<Job>,
        /// Where the id goes.
        reply: Reply<Result<SubmitReply, ApiError>>,
    },
    /// An explanation's simulations are done (off the loop): the loop words it.
    Explained {
        /// The work, computed.
        work: Box<ExplainWork>,
        /// Who asked.
        caller: Caller,
        /// Where it goes.
        reply: Reply<Result<Explanation, ApiError>>,
    },
    /// A forecast of every pending job's start, made off the loop on a copy.
    Forecast(Forecast),
    /// The agents were pinged: these answered, these are gone (their sockets refuse).
    AgentsChecked {
        /// Nodes whose agents answered.
        answered: Vec<String>,
        /// Nodes whose agents are gone.
        gone: Vec<String>,
        /// Nodes whose agents did not answer in time over TCP.
        unanswered: Vec<String>,
    },
    /// An agent refused to launch run `run` of job `job` (it is registered with
    /// another incarnation of the controller).
    LaunchRefused {
        /// Job id.
        job: JobId,
        /// The run.
        run: u32,
        /// The agent's message.
        why: String,
    },
    /// A launch could not reach a node's agent: that run never starts, and the
    /// node's agent is gone.
    Unreachable {
        /// The node.
        node: String,
        /// The job launched.
        job: JobId,
        /// Its run.
        run: u32,
        /// Why.
        why: String,
    },
    /// A second has passed, or a wake-up the scheduler asked for is due.
    Tick,
}

/// A request from a command, a tool or an agent (who asks comes from the socket).
pub enum Request {
    /// `sbatch`, `salloc`, `srun`: a new job, answered with its id once durable.
    Submit {
        /// The job.
        desc: Box<JobDescription>,
        /// Who submits.
        caller: Caller,
        /// The caller's user name.
        user: String,
        /// The caller's group name.
        group: String,
        /// Where the id goes.
        reply: Reply<Result<SubmitReply, ApiError>>,
    },
    /// `sbatch --test-only`: a submission checked as [`Request::Submit`] and
    /// forecast, nothing queued and no id taken.
    WillRun {
        /// The job.
        desc: Box<JobDescription>,
        /// Who submits.
        caller: Caller,
        /// The caller's user name.
        user: String,
        /// The caller's group name.
        group: String,
        /// Where the answer goes.
        reply: Reply<Result<WillRunReply, ApiError>>,
    },
    /// The device files of a running job on one of its nodes (`None`: unknown job).
    JobDevices {
        /// Job id.
        id: JobId,
        /// The node.
        node: String,
        /// Where they go.
        reply: Reply<Option<Option<Vec<DeviceFile>>>>,
    },
    /// `sstat`: a running job's steps with what they used so far.
    JobUsage {
        /// Job id.
        id: JobId,
        /// Under `PrivateData=jobs`, the only owner the caller may see.
        hidden: Option<u32>,
        /// Where they go.
        reply: Reply<Result<Vec<sluice_proto::types::StepRecord>, ApiError>>,
    },
    /// `squeue -s`, `scontrol show step`: the running steps of every job the caller
    /// may see.
    Steps {
        /// Under `PrivateData=jobs`, the only owner the caller may see.
        hidden: Option<u32>,
        /// Where they go.
        reply: Reply<Vec<sluice_proto::steps::ListedStep>>,
    },
    /// An agent's word on a running service: its restarts in place and health.
    ServiceReport {
        /// The report.
        report: sluice_proto::service::ServiceReport,
        /// Who reports (an agent).
        caller: Caller,
        /// Where the answer goes.
        reply: Reply<Result<(), ApiError>>,
    },
    /// An agent's periodic figures of a job run's steps on its node.
    UsageReport {
        /// The figures.
        report: sluice_proto::usage::UsageReport,
        /// Who reports (an agent).
        caller: Caller,
        /// Answered once taken (kept in memory only).
        reply: Reply<Result<(), ApiError>>,
    },
    /// `sluice explain`: its first step (the loop's part).
    Explain {
        /// Job id.
        id: JobId,
        /// Array task.
        task: Option<u32>,
        /// Search for suggestions.
        suggest: bool,
        /// Who asks.
        caller: Caller,
        /// Where it goes.
        reply: Reply<Result<Explanation, ApiError>>,
    },
    /// A change to jobs or nodes, answered `Ok` once durable.
    Change {
        /// What to change.
        change: Change,
        /// Who asks.
        caller: Caller,
        /// Where the answer goes: Slurm's lines for an array's tasks, if any.
        reply: Reply<Result<Vec<String>, ApiError>>,
    },
    /// `scancel` (and the REST API's `DELETE`): answered once durable, with the jobs
    /// refused one by one.
    Cancel {
        /// What to cancel or signal.
        req: Box<CancelRequest>,
        /// Who asks.
        caller: Caller,
        /// Where the answer goes.
        reply: Reply<Result<Cancelled, ApiError>>,
    },
    /// `srun` inside an allocation: a new step.
    StartStep {
        /// Job id.
        id: JobId,
        /// The step.
        req: Box<StepRequest>,
        /// Who asks.
        caller: Caller,
        /// Where the plan goes.
        reply: Reply<Result<StepPlan, ApiError>>,
    },
    /// A step ended.
    EndStep {
        /// Job id.
        id: JobId,
        /// The step (or the part of a heterogeneous step).
        step: StepId,
        /// Exit code.
        exit_code: i32,
        /// Signal.
        signal: i32,
        /// Who reports.
        caller: Caller,
        /// Where the answer goes.
        reply: Reply<Result<(), ApiError>>,
    },
    /// An interactive allocation ended (`salloc`'s shell, `srun` outside a job).
    Complete {
        /// Job id.
        id: JobId,
        /// Exit code.
        exit_code: i32,
        /// Signal.
        signal: i32,
        /// Who reports.
        caller: Caller,
        /// Where the answer goes.
        reply: Reply<Result<(), ApiError>>,
    },
    /// Every node (`sinfo`, `scontrol show node`).
    Nodes(Reply<Vec<NodeInfo>>),
    /// Every partition.
    Partitions(Reply<Vec<PartitionInfo>>),
    /// What the metrics endpoints need of the loop (`crate::metrics::LoopFigures`).
    Metrics {
        /// Sluice's own figures too (`/metrics/sluice`).
        sluice: bool,
        /// Where the answer goes.
        reply: Reply<crate::metrics::LoopFigures>,
    },
    /// The configuration (`scontrol show config`).
    Config(Reply<ConfigInfo>),
    /// An agent registered (answered with nothing; the handler adds the incarnation).
    AgentRegistered {
        /// Its node, runs, address, resources and slurm.conf digest.
        registration: crate::state::Registration,
        /// A dynamic node's line (`slurmd -Z`) and the node it describes, read off
        /// the loop (or why it does not read): created first if the controller does
        /// not know the node.
        dynamic: Option<Result<Box<(String, crate::config::ClusterConfig)>, ApiError>>,
        /// Answered once its effects are durable; refused for an unknown node or a
        /// name another answering agent holds.
        reply: Reply<Result<(), ApiError>>,
    },
    /// `scontrol reconfigure`: the configuration slurm.conf now describes.
    Reconfigure {
        /// As read again.
        conf: Box<crate::config::ClusterConfig>,
        /// The digest of the file read ([`super::conf_hash`]).
        conf_hash: String,
        /// Who asks.
        caller: Caller,
        /// Answered once taken.
        reply: Reply<Result<(), ApiError>>,
    },
    /// `scontrol create nodename=...`: dynamic nodes join.
    CreateNodes {
        /// The node line as written.
        line: String,
        /// The line read as a slurm.conf of its own.
        conf: Box<crate::config::ClusterConfig>,
        /// Who asks.
        caller: Caller,
        /// Answered once durable.
        reply: Reply<Result<(), ApiError>>,
    },
    /// `scontrol delete nodename=...`: nodes leave.
    DeleteNodes {
        /// The node names (a host list).
        names: String,
        /// Who asks.
        caller: Caller,
        /// Answered once durable: the nodes that could not be deleted, and why.
        reply: Reply<Result<sluice_proto::types::NodesDeleted, ApiError>>,
    },
    /// An agent reports that a step's tasks on its node have all ended.
    StepEndedOn {
        /// The report.
        report: sluice_proto::types::StepEnded,
        /// Who reports (an agent).
        caller: Caller,
        /// Answered once durable.
        reply: Reply<Result<(), ApiError>>,
    },
    /// An agent reports that nothing of a job's run is left on its node.
    RunGone {
        /// The report.
        report: sluice_proto::types::RunGone,
        /// Who reports (an agent).
        caller: Caller,
        /// Answered once durable.
        reply: Reply<Result<(), ApiError>>,
    },
    /// An agent reports a job's end.
    AgentEnded {
        /// The report.
        report: JobEnded,
        /// Answered once durable.
        reply: Reply<()>,
    },
    /// The registered agents not heard from lately: what the agent watch pings
    /// (`Controller::agents_to_ping`).
    AgentsToPing(Reply<Vec<String>>),
    /// A registered agent's heartbeat; answered whether it counted (`false`: the agent
    /// registers again) and when the next one is due.
    AgentHeartbeat {
        /// Its node.
        node: String,
        /// Over TCP, the peer's IP address; `None` on the Unix socket.
        from: Option<String>,
        /// Whether the controller counts it as its node's registered agent, and the
        /// seconds until its next heartbeat (`Controller::heartbeat_secs`).
        reply: Reply<(bool, u64)>,
    },
    /// Everything `sacctmgr show` lists.
    Accounts(Reply<AccountsSnapshot>),
    /// A `sacctmgr` change, checked or carried out.
    ChangeAccounts {
        /// Who asks, and their admin level.
        who: Requester,
        /// The change.
        request: Box<AccountsRequest>,
        /// Carry it out (else only check it).
        commit: bool,
        /// Answered once durable.
        reply: Reply<Result<ChangeOutcome, AccountsError>>,
    },
    /// `sprio`'s figures.
    Priority(Reply<PriorityReport>),
    /// `sshare`'s figures.
    Shares(Reply<SharesReport>),
    /// Every advance reservation.
    Reservations(Reply<Vec<ReservationRecord>>),
    /// `scontrol create|update|delete reservation`.
    ChangeReservation {
        /// The change.
        req: Box<ReservationChange>,
        /// The uids of the user names it names.
        uids: BTreeMap<String, u32>,
        /// Who asks.
        caller: Caller,
        /// Answered with the reservation's name once durable.
        reply: Reply<Result<String, ApiError>>,
    },
    /// What `GET /v1/audit` needs from the controller before it reads the trail.
    AuditScope {
        /// Who asks (for the admin level).
        who: Requester,
        /// An array task to resolve: (array job, task).
        task: Option<(JobId, u32)>,
        /// A node asked about.
        node: Option<String>,
        /// Where it goes.
        reply: Reply<AuditScope>,
    },
    /// `sdiag`: the scheduler's and the jobs' counters.
    Diag(Reply<DiagReport>),
    /// `sdiag -r`: clears them (operators only).
    DiagReset {
        /// Who asks.
        caller: Caller,
        /// Where the answer goes.
        reply: Reply<Result<(), ApiError>>,
    },
}

/// A change to jobs or nodes on behalf of a caller.
pub enum Change {
    /// `scontrol hold` (`user`: `uhold`) of a job or array tasks.
    Hold {
        /// Job id.
        id: JobId,
        /// Array tasks (none: the job, or the whole array).
        tasks: Option<Vec<u32>>,
        /// A user hold.
        user: bool,
    },
    /// `scontrol release`.
    Release {
        /// Job id.
        id: JobId,
        /// Array tasks (none: the job, or the whole array).
        tasks: Option<Vec<u32>>,
    },
    /// `scontrol requeue` and `requeuehold`.
    Requeue {
        /// Job id.
        id: JobId,
        /// Array tasks (none: the job, or the whole array).
        tasks: Option<Vec<u32>>,
        /// How the job is requeued.
        flags: sluice_proto::types::RequeueFlags,
    },
    /// `scontrol suspend` (`suspend`) or `scontrol resume`.
    Suspend {
        /// Job id.
        id: JobId,
        /// Suspend, or resume.
        suspend: bool,
        /// The caller's login name (from the socket's uid), for its `AdminLevel`:
        /// Operators may suspend and resume, as in Slurm.
        user: String,
    },
    /// `scontrol update JobId=...`.
    UpdateJob {
        /// Job id.
        id: JobId,
        /// The changes.
        update: JobUpdate,
    },
    /// `scontrol update NodeName=...`.
    UpdateNodes(NodeUpdate),
    /// `scontrol update PartitionName=...`.
    UpdatePartition(PartitionUpdate),
}

/// The controller's part of an audit query.
#[derive(Debug)]
pub struct AuditScope {
    /// slurm.conf's `PrivateData`.
    pub private: PrivateData,
    /// The caller's admin level.
    pub level: AdminLevel,
    /// The record of the array task asked about (`Some(None)`: no such task).
    pub task_record: Option<Option<JobId>>,
    /// The node's GPU count (`Some(None)`: no such node).
    pub node_gpus: Option<Option<u32>>,
}

impl Input {
    /// Which nodes, as `sinfo` shows them, this input may change other than through
    /// jobs (the snapshot follows those itself): an agent's message its node, a
    /// question or a job's report none, anything else (an operator's change, a
    /// reconfiguration, a launch that failed) all of them.
    pub fn nodes_touched(&self) -> NodesTouched {
        match self {
            Input::Committed { .. }
            | Input::Explained { .. }
            | Input::Forecast(_)
            | Input::Tick => NodesTouched::None,
            Input::AgentsChecked {
                answered,
                gone,
                unanswered,
            } => NodesTouched::Named(
                answered
                    .iter()
                    .chain(gone)
                    .chain(unanswered)
                    .cloned()
                    .collect(),
            ),
            Input::Unreachable { node, .. } => NodesTouched::Named(vec![node.clone()]),
            Input::LaunchRefused { .. } => NodesTouched::All,
            Input::Request(r) => match r {
                Request::Submit { .. }
                | Request::WillRun { .. }
                | Request::JobDevices { .. }
                | Request::JobUsage { .. }
                | Request::Steps { .. }
                | Request::ServiceReport { .. }
                | Request::UsageReport { .. }
                | Request::Explain { .. }
                | Request::StartStep { .. }
                | Request::EndStep { .. }
                | Request::Complete { .. }
                | Request::Nodes(_)
                | Request::Partitions(_)
                | Request::Metrics { .. }
                | Request::Config(_)
                | Request::StepEndedOn { .. }
                | Request::AgentsToPing(_)
                | Request::Accounts(_)
                | Request::Priority(_)
                | Request::Shares(_)
                | Request::Reservations(_)
                | Request::AuditScope { .. }
                | Request::Diag(_)
                | Request::DiagReset { .. } => NodesTouched::None,
                // A dynamic node may join: the node list is taken again.
                Request::AgentRegistered {
                    dynamic: Some(_), ..
                } => NodesTouched::All,
                Request::AgentRegistered { registration, .. } => {
                    NodesTouched::Named(vec![registration.node.clone()])
                }
                Request::AgentHeartbeat { node, .. } => NodesTouched::Named(vec![node.clone()]),
                // (When the node last ran a job moves even for a run already requeued.)
                Request::AgentEnded { report, .. } => {
                    NodesTouched::Named(vec![report.node.clone()])
                }
                Request::RunGone { report, .. } => NodesTouched::Named(vec![report.node.clone()]),
                Request::Change { .. }
                | Request::Cancel { .. }
                | Request::CreateNodes { .. }
                | Request::DeleteNodes { .. }
                | Request::Reconfigure { .. }
                | Request::ChangeAccounts { .. }
                | Request::ChangeReservation { .. } => NodesTouched::All,
            },
        }
    }
}
