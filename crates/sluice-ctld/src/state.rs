//! The controller's state machine: job records around the scheduling core.
//!
//! Like the core, this module does no I/O: every method takes `now` and returns
//! [`Effect`]s (write this record, launch that job on that node) for the server loop to
//! carry out. The controller keeps each job as a typed [`Job`] (`state/job.rs`); a
//! `JobRecord` is built from it only at the boundaries — to answer, to launch, to write
//! to the store — and read back into a `Job` at start. The records in the store are the
//! durable truth; the core holds only what scheduling needs, and is rebuilt from them
//! after a restart.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dependency::DepState;
use sluice_conf::dependency::{parse_dependency, Dependency};
use sluice_conf::gres_conf::GresDevice;
use sluice_core::job::SwitchLimit;
use sluice_core::limits::JobAcct;
use sluice_core::partition_policy::NotAllowed;
use sluice_core::{
    Decision, EndSemantics, JobId, JobRequest, JobSpec, MemRequest, NodeAlloc, NodeId, NodeState,
    PartitionId, PendingReason, Policy, Scheduler, SubmitError, MAX_TIME_LIMIT,
};
use sluice_proto::pattern::{expand, PatternContext};
use sluice_proto::types::{
    ConfigInfo, DeviceFile, Hold, JobDescription, JobEnded, JobRecord, JobState, LaunchBatch,
    MemoryRequest, NodeInfo, PartitionInfo, StartPass, StepId, StepPlan, StepRecord, StepRequest,
};

use crate::accounts::{Accounts, Requester};
use crate::config::ClusterConfig;
use crate::priority::{PriorityEngine, KIND_USAGE};
use sluice_proto::accounts::{AccountsError, AccountsRequest, ActiveJob, ChangeOutcome};
use sluice_proto::diag::DiagReport;
use sluice_proto::error::{ApiError, ErrorCode, INVALID_JOB_ID, INVALID_USER_ID};
use sluice_store::AccountRow;

/// Something the server loop must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write a new submission's records (consecutive ids from the first), which
    /// moves the store's next id past them, and its script and environment (kept under
    /// the first id, see `state/script.rs`): before its submitter is answered, and
    /// before the job enters the queue.
    Insert {
        /// The jobs' records.
        records: Vec<JobRecord>,
        /// The submission's script and environment.
        script: Option<Box<BatchScript>>,
    },
    /// Write a job record (durably before any later effect of the same batch acts).
    Persist(Box<JobRecord>),
    /// Write a step record.
    PersistStep(Box<StepRecord>),
    /// Run a site's program (sluice.conf's `IdleGpuCommand`) with this environment,
    /// once the writes before it are durable; its end is not awaited.
    Notify {
        /// The program (an absolute path; no shell).
        command: String,
        /// Its environment, beside the controller's.
        env: Vec<(String, String)>,
    },
    /// Keep a requeued run's record (state `REQUEUED`) for `sacct -D`.
    PersistRun(Box<JobRecord>),
    /// Delete a job's record: an array task cancelled before it ever started, which
    /// Slurm never gives a record of its own.
    Forget(JobId),
    /// Run a job's batch script on its first node.
    Launch {
        /// The node whose agent runs it.
        node: String,
        /// What to run.
        order: Box<LaunchBatch>,
    },
    /// Signal a running job on its nodes.
    Signal {
        /// Its nodes.
        nodes: Vec<String>,
        /// Job id.
        job_id: JobId,
        /// Signal number.
        signal: i32,
        /// The batch shell only.
        batch_only: bool,
        /// One step's tasks only (SIGKILL: the step is cancelled).
        step: Option<u32>,
    },
    /// End a step on its nodes: SIGCONT and SIGTERM, SIGKILL after `kill_wait`; its
    /// srun is told why: it reached its own time limit (`srun -t`), or it was
    /// cancelled (`srun -K` once a task failed; Slurm's SIG_TERM_KILL).
    TerminateStep {
        /// Its nodes.
        nodes: Vec<String>,
        /// Job id.
        job_id: JobId,
        /// The step.
        step: u32,
        /// Seconds between SIGTERM and SIGKILL (KillWait).
        kill_wait: i64,
        /// At its time limit (else cancelled).
        time_limit: bool,
    },
    /// End a running job: SIGCONT + SIGTERM, SIGKILL after `KillWait`, reported as
    /// `state`.
    Terminate {
        /// Its nodes.
        nodes: Vec<String>,
        /// Job id.
        job_id: JobId,
        /// State to report (CANCELLED, TIMEOUT...).
        state: JobState,
    },
    /// End one run of a job on one node, reported as `state`: what an agent's
    /// registration listed that the controller no longer gives the node (a stale run,
    /// killed on the controller's word), or whose end the controller ordered while the
    /// agent was away.
    EndRun {
        /// The node whose agent runs it.
        node: String,
        /// Job id.
        job_id: JobId,
        /// The run (restart count).
        run: u32,
        /// State to report.
        state: JobState,
    },
    /// A node joined while the controller runs: orders to it go to its agent at
    /// `endpoint` from now on (see `state/node_changes.rs`).
    AddAgent {
        /// Node name.
        node: String,
        /// Where its agent listens ([`ClusterConfig::agent_endpoint`]).
        endpoint: String,
    },
    /// Write (`Some`) or forget (`None`) an operator's node state, durably before the
    /// request is answered.
    PersistNode {
        /// Node name.
        name: String,
        /// The serialised [`NodeOverride`].
        record: Option<String>,
    },
    /// Stop (`suspend`) or continue a running job's processes on its nodes.
    Suspend {
        /// Its nodes.
        nodes: Vec<String>,
        /// Job id.
        job_id: JobId,
        /// Stop them, or let them continue.
        suspend: bool,
    },
    /// Tell a running batch job's agent its new time limit.
    SetTimeLimit {
        /// The node whose agent runs the batch script.
        node: String,
        /// Job id.
        job_id: JobId,
        /// The run it applies to.
        run: u32,
        /// Seconds from the start; `None`: unlimited.
        time_limit: Option<i64>,
    },
    /// Write (or delete, `record: None`) account records (`sacctmgr`'s changes), in one
    /// transaction, durably before the change is acknowledged.
    PersistAccounts(Vec<AccountRow>),
    /// Write (`Some`) or delete (`None`) a reservation's record, durably before the
    /// change is acknowledged.
    PersistReservation {
        /// Reservation name.
        name: String,
        /// The serialised `ReservationRecord`.
        record: Option<String>,
    },
}

/// What the running jobs hold on each node (see [`Controller::node_usage`]).
pub(crate) struct NodeUsage {
    /// CPUs.
    pub cpus: Vec<u32>,
    /// Memory, MiB.
    pub mem: Vec<u64>,
    /// GRES counts, by the cluster's GRES slots.
    pub gres: Vec<[u64; sluice_core::tres::MAX_GRES]>,
    /// How many jobs' processes are being ended there (`COMPLETING`).
    pub completing: Vec<u32>,
}

/// What holding or releasing jobs did: its effects, the records named and not
/// refused, those refused (why), and the array tasks named that the array lacks.
struct Held {
    effects: Vec<Effect>,
    named: Vec<JobId>,
    refused: Vec<(JobId, String)>,
    missing: Vec<u32>,
}

/// Slurm's lines for array `job`'s tasks by group (`A_1-3,5: MESSAGE`): each group's
/// tasks sorted, each once, the groups in the order of their first task, empty ones
/// left out.
pub(super) fn task_groups(job: JobId, groups: Vec<(Vec<u32>, &str)>) -> Vec<String> {
    let mut lines: Vec<(u32, String)> = groups
        .into_iter()
        .filter_map(|(mut tasks, msg)| {
            tasks.sort_unstable();
            tasks.dedup();
            let first = *tasks.first()?;
            let shown = sluice_proto::types::compact_indices(&tasks);
            Some((first, format!("{job}_{shown}: {msg}")))
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

/// Who is asking (from the socket's peer credentials, never from the request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// uid.
    pub uid: u32,
    /// gid.
    pub gid: u32,
    /// May act on every job (root, or the controller's own user).
    pub admin: bool,
}

/// Slurm's refusal to requeue a heterogeneous job by a component other than its leader.
pub const NOT_HET_LEADER: &str = "Job not heterogeneous job leader";

/// Slurm's refusal to act on one component of a pending heterogeneous job.
pub const HET_COMPONENT: &str =
    "Operation not permitted on individual component of heterogeneous job";

/// A checked submission, ready to be made durable.
#[derive(Clone, Debug)]
pub struct Prepared {
    template: Job,
    tasks: Vec<u32>,
    throttle: Option<u32>,
    /// Its script and environment, taken out of the submission: for the store only.
    script: Option<BatchScript>,
    /// Warnings for the user.
    pub warnings: Vec<String>,
    /// A heterogeneous job's components after the first, each checked as a job.
    het: Vec<Prepared>,
}

impl Prepared {
    /// How many ids the submission needs (one per array task).
    pub fn ids(&self) -> u64 {
        self.tasks.len().max(1) as u64 + self.het.len() as u64
    }

    /// Its script and environment, for the store ([`Controller::inserted`]); the
    /// controller keeps neither.
    pub fn take_script(&mut self) -> Option<BatchScript> {
        self.script.take()
    }

    /// The jobs, given the first id, in id order.
    ///
    /// An array's tasks: in Slurm the array's id stays with its pending remainder and
    /// each task takes the next free id as it starts, but the last to start keeps the
    /// array's own. Tasks start in index order, so the last task holds the array's id
    /// (`first`, carrying the remainder) and the others the ids after it in index
    /// order: `--array=2-4` as 100 gives task 2 id 101, task 3 id 102 and task 4 id 100.
    /// (Slurm takes those ids only as the tasks start, so a job submitted in between
    /// may take one of them there; here they are the array's from its submission.)
    pub fn jobs(&self, first: JobId) -> Vec<Job> {
        if !self.het.is_empty() {
            // A heterogeneous job: the leader and its components, consecutive ids.
            let size = self.het.len() as u32 + 1;
            return std::iter::once(self)
                .chain(self.het.iter())
                .enumerate()
                .map(|(i, p)| {
                    let mut r = p.template.clone();
                    r.id = JobId(first.0 + i as u64);
                    r.het = Some(sluice_proto::types::HetJob {
                        job_id: first.0,
                        offset: i as u32,
                        size,
                    });
                    resolve_paths(&mut r, "%N");
                    r
                })
                .collect();
        }
        if self.tasks.is_empty() {
            let mut r = self.template.clone();
            r.id = first;
            resolve_paths(&mut r, "%N");
            return vec![r];
        }
        let n = self.tasks.len();
        (0..n)
            .map(|i| {
                let index = if i == 0 {
                    self.tasks[n - 1]
                } else {
                    self.tasks[i - 1]
                };
                let mut r = self.template.clone();
                r.id = JobId(first.0 + i as u64);
                r.array = Some((first, index));
                if i == 0 {
                    r.array_pending = Some(Box::new((self.tasks.clone(), self.throttle)));
                }
                resolve_paths(&mut r, "%N");
                r
            })
            .collect()
    }
}

/// Resolves the output patterns of a job (with `node` for `%N`).
fn resolve_paths(r: &mut Job, node: &str) {
    let (out, err, input) = job_paths(
        &r.desc,
        r.id.0,
        r.array.map(|(a, t)| (a.0, t)),
        &r.user,
        node,
    );
    let out: Arc<str> = out.into();
    // Standard error shares standard output's path when it is the same.
    r.stderr = if err == *out { out.clone() } else { err.into() };
    r.stdout = out;
    r.stdin = input.into();
}

/// The standard output, error and input paths of job `job_id` submitted as `desc`
/// (array task `array`: the array's id and the task's index, Slurm's 4294967294 for
/// an array's record standing for tasks not started), with `node` for `%N`: its
/// patterns (or Slurm's defaults) expanded, relative ones under its working directory.
pub fn job_paths(
    desc: &JobDescription,
    job_id: u64,
    array: Option<(u64, u32)>,
    user: &str,
    node: &str,
) -> (String, String, String) {
    let default_out = if array.is_some() {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let ctx = PatternContext {
        job_id,
        array,
        step: None,
        node,
        node_index: 0,
        task: 0,
        user,
        job_name: &desc.name,
    };
    let abs = |p: String| {
        if Path::new(&p).is_absolute() {
            p
        } else {
            format!("{}/{p}", desc.work_dir.trim_end_matches('/'))
        }
    };
    let out = abs(expand(desc.output.as_deref().unwrap_or(default_out), &ctx));
    let err = match desc.error.as_deref() {
        Some(e) => abs(expand(e, &ctx)),
        None => out.clone(),
    };
    let input = match desc.input.as_deref() {
        Some(i) => abs(expand(i, &ctx)),
        None => "/dev/null".into(),
    };
    (out, err, input)
}

/// The controller.
pub struct Controller {
    /// The configuration.
    pub conf: ClusterConfig,
    /// Running jobs being preempted, in their grace time (see `state/preempt.rs`).
    preempting: BTreeMap<JobId, preempt::Preempting>,
    /// When running batch jobs reach their time limit (checked when due: an entry may
    /// be stale), see `state/completing.rs`.
    deadlines: BTreeSet<(i64, JobId)>,
    /// When running steps reach their own time limit (`srun -t`; checked when due),
    /// see `state/step_limits.rs`.
    step_deadlines: BTreeSet<(i64, JobId, StepId)>,
    state_dir: PathBuf,
    sched: Scheduler,
    /// Each behind an `Arc` shared with the read snapshot (`state/job_table.rs`).
    jobs: job_table::JobTable,
    steps: BTreeMap<(JobId, StepId), StepRecord>,
    /// Pending jobs kept out of the core: held, waiting on a dependency, or beyond their
    /// array's throttle.
    outside: BTreeSet<JobId>,
    /// Something happened that may let a job of `outside` into the queue (a job started,
    /// ended or was released): the next pass looks at them again.
    outside_dirty: bool,
    /// When `after:ID+MIN` delays of outside jobs lapse (time, job): the controller
    /// looks at them again then.
    dep_due: BTreeSet<(i64, JobId)>,
    /// Agents that registered.
    agents_up: BTreeSet<String>,
    /// Registration and last busy times, resumed nodes awaiting an answer.
    liveness: liveness::Liveness,
    gpu_slot: Option<usize>,
    /// Running interactive allocations (salloc, srun outside a job): no agent watches
    /// their time limit, so the controller does (see [`Controller::expire_interactive`]).
    interactive: BTreeSet<JobId>,
    /// Inside [`Controller::expire_interactive`]: the passes its job ends run do not
    /// expire again (one pass, not one nested pass per expiring allocation).
    expiring: bool,
    /// Node states set by operators (`scontrol update NodeName=...`), by node name.
    node_overrides: BTreeMap<String, NodeOverride>,
    /// Accounts, users, associations and QOS (`sacctmgr`).
    accounts: Accounts,
    /// Counts changes of `accounts` (restored or changed by `sacctmgr`): the read
    /// snapshot takes its operators again when it moves.
    accounts_epoch: u64,
    /// Multifactor priority: fair-share usage and the decay thread.
    priority: PriorityEngine,
    /// Pending jobs' priorities must be recomputed (the accounts changed).
    priority_dirty: bool,
    /// Advance reservations' records (`scontrol create reservation`).
    resv_records: reservations::ResvRecords,
    /// The audit trail (see `state/audit.rs`).
    audit: audit::AuditBook,
    /// The last forecast of every pending job's start (see `state/forecast.rs`).
    forecasts: forecast::Forecasts,
    /// What jobs share rather than copy: each owner's last submission (which the next
    /// one shares if it is the same), the TRES last asked, one copy of each name.
    descs: Shared,
    /// The id the next accepted submission gets: allocated here, after a submission
    /// is checked, so that a refused one uses none; kept by the store with the jobs
    /// that used them, so that none is reused after a restart.
    next_job_id: u64,
    /// What `sdiag` reports (see `state/diag.rs`).
    diag: diag::Diag,
    /// What running steps use, as their agents last said (`sstat`; `sacct` once they end).
    usage: usage::LiveUsage,
    /// The running jobs' GPUs, watched for the idle-GPU check.
    idle: idle_gpus::IdleWatch,
    /// Nodes created or removed while the controller runs (see `state/node_changes.rs`).
    node_book: node_changes::NodeBook,
}

/// A job's priority (Slurm's `priority/basic`: earlier submissions first, `--nice`
/// lowering it): what the core orders the queue by and what squeue shows.
fn job_priority(r: &Job) -> u32 {
    let nice = r.desc.nice.unwrap_or(0).clamp(-10_000, 10_000);
    // An array's tasks all rank as the array (Slurm keeps them in one record).
    let id = r.list_key().0;
    let base = (u32::MAX / 2).saturating_sub((id.0 % (u32::MAX as u64 / 2)) as u32);
    (base as i64 - nice as i64).clamp(0, u32::MAX as i64) as u32
}

/// The signal number an OOM-killed step or job is recorded with (Slurm's `SIG_OOM`,
/// shown by sacct as `0:125`).
pub const OOM_SIGNAL: i32 = 125;

/// Core passes in one [`Controller::schedule`] call at most: another runs only when
/// the victims of a preemption left at once (no grace).
const MAX_PASSES: usize = 4;

/// The longest an agent that lost its controller waits between two attempts to
/// register again (`sluice_noded::MAX_RETRY_MS`, in seconds).
const AGENT_RETRY_SECS: i64 = 16;

/// Slurm's message for a partition that does not exist.
pub const BAD_PARTITION: &str = "Invalid partition name specified";
/// Slurm's message for a request no node set can satisfy.
pub const NODE_CONFIG: &str = "Requested node configuration is not available";
/// Slurm's message for an unknown job id.
pub const BAD_JOB: &str = "Invalid job id specified";

impl Controller {
    /// A controller over `conf`, restoring the records read from the store.
    pub fn new(
        conf: ClusterConfig,
        state_dir: &Path,
        jobs: Vec<JobRecord>,
        steps: Vec<StepRecord>,
        now: i64,
    ) -> Self {
        let policy = if conf.fifo {
            Policy::Fcfs
        } else {
            Policy::Backfill(conf.backfill.clone())
        };
        // The core knows every GPU (its type, links, cores and shards) and decides
        // which a job gets; starts name them (see `sluice_core::gpus`).
        let sched = Scheduler::with_end_semantics(
            conf.core_cluster(),
            policy,
            EndSemantics::HoldUntilReported,
        );
        let gpu_slot = conf.cluster.gres.find("gpu", None);
        let accounts = Accounts::new(&conf.cluster_name, &conf.accounting_tres);
        let mut priority = PriorityEngine::new(
            conf.priority.clone(),
            conf.priority_tres.clone(),
            conf.cluster.gres.clone(),
            priority::cluster_totals(&conf.cluster),
            conf.cluster
                .partitions
                .iter()
                .map(|p| p.priority_job_factor)
                .max()
                .unwrap_or(1),
        );
        priority.rebuild(&accounts);
        let mut c = Controller {
            conf,
            state_dir: state_dir.to_path_buf(),
            sched,
            jobs: Default::default(),
            steps: BTreeMap::new(),
            outside: BTreeSet::new(),
            outside_dirty: true,
            dep_due: BTreeSet::new(),
            preempting: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            step_deadlines: BTreeSet::new(),
            agents_up: BTreeSet::new(),
            liveness: Default::default(),
            gpu_slot,
            interactive: BTreeSet::new(),
            expiring: false,
            node_overrides: BTreeMap::new(),
            accounts,
            accounts_epoch: 0,
            priority,
            priority_dirty: true,
            resv_records: Default::default(),
            audit: Default::default(),
            forecasts: Default::default(),
            descs: Default::default(),
            next_job_id: 1,
            diag: diag::Diag::new(now),
            usage: usage::LiveUsage::default(),
            idle: idle_gpus::IdleWatch::default(),
            node_book: node_changes::NodeBook::default(),
        };
        for s in steps {
            c.note_step_deadline(&s);
            c.steps.insert((JobId(s.job_id), s.step), s);
        }
        let mut preempting = Vec::new();
        for mut r in jobs {
            if let Some(p) = r.preempting.take() {
                preempting.push((JobId(r.id), *p));
            }
            let mut r = Job::from_record(r, &c.conf);
            r.desc = c.descs.share(r.uid, &r.desc);
            r.tres_req = c.descs.share_tres(&r.tres_req);
            c.descs.names_of(&mut r);
            let id = r.id;
            match r.state {
                JobState::Running => {
                    let nodes = c.allocation_of(&r);
                    let spec = c.core_spec(&r);
                    let start = r.start_time.unwrap_or(now);
                    if r.desc.interactive {
                        c.interactive.insert(id);
                    }
                    let suspension = r.suspension.as_deref().copied();
                    let ending = r.ending_run.is_some();
                    c.jobs.insert(id, r);
                    if let (Ok(spec), Some(nodes)) = (spec, nodes) {
                        // Suspended by preemption: it holds nothing until it resumes.
                        let by_preemption =
                            suspension.and_then(|s| Some((s.since?, s.for_job?, s.secs)));
                        if let Some((since, by, secs)) = by_preemption {
                            let by = JobId(by);
                            let _ = c
                                .sched
                                .restore_suspended(spec, start, nodes, since, secs, by);
                        } else if c.sched.restore_running(spec, start, nodes, now).is_ok() {
                            if let Some(s) = suspension {
                                c.restore_suspension(id, s, now);
                            }
                        }
                    }
                    if ending {
                        c.sched.mark_ending(id);
                    } else {
                        c.note_deadline(id);
                    }
                }
                JobState::Pending => {
                    c.jobs.insert(id, r);
                    c.outside.insert(id);
                    c.audit_restored(id);
                }
                _ => {
                    c.jobs.insert(id, r);
                }
            }
        }
        c.restore_preempting(preempting);
        for i in 0..c.conf.cluster.nodes.len() {
            c.adopt_configured_state(NodeId(i as u32));
        }
        c
    }

    /// Restores the accounts from the store's rows; returns the rows to write (the
    /// defaults, for a fresh database).
    ///
    /// Errors: a row that does not parse.
    pub fn restore_accounts(&mut self, rows: &[AccountRow]) -> Result<Vec<AccountRow>, String> {
        let (usage, records): (Vec<AccountRow>, Vec<AccountRow>) = rows
            .iter()
            .cloned()
            .partition(|r| r.kind == KIND_USAGE || r.kind == priority::KIND_LIMIT_USAGE);
        let (accounts, fresh) = Accounts::restore(
            &self.conf.cluster_name,
            &self.conf.accounting_tres,
            &records,
        )?;
        self.accounts = accounts;
        self.accounts_epoch += 1;
        self.priority.rebuild(&self.accounts);
        self.priority.restore_usage(&usage);
        self.priority_dirty = true;
        self.refresh_limits(self.sched_time());
        self.restore_limit_usage(&usage, self.sched_time());
        Ok(fresh)
    }

    /// The accounts, users, associations and QOS (for lookups; change them through
    /// [`Controller::change_accounts`]).
    pub fn accounts(&self) -> &Accounts {
        &self.accounts
    }

    /// Counts the changes of [`Controller::accounts`] so far.
    pub fn accounts_epoch(&self) -> u64 {
        self.accounts_epoch
    }

    /// A `sacctmgr` change on behalf of `who`: checked (`commit: false`) or carried
    /// out, with the record writes to make durable before answering. Jobs pending or
    /// running keep their associations from being deleted.
    ///
    /// Errors: Slurm's refusals; nothing changed.
    pub fn change_accounts(
        &mut self,
        who: &Requester,
        request: &AccountsRequest,
        commit: bool,
    ) -> Result<(ChangeOutcome, Vec<Effect>), AccountsError> {
        let active: Vec<ActiveJob> = self
            .jobs
            .values()
            .filter(|j| !j.state.is_finished())
            .map(|j| ActiveJob {
                id: j.id.0,
                cluster: self.conf.cluster_name.clone(),
                account: j.account.to_string(),
                user: j.user.to_string(),
            })
            .collect();
        let (outcome, rows) = self.accounts.change(who, request, &active, commit)?;
        if commit && !rows.is_empty() {
            self.accounts_epoch += 1;
            self.refresh_limits(self.sched_time());
        }
        let effects = if rows.is_empty() {
            Vec::new()
        } else {
            // Shares, priorities or QOS may have changed: fair-share and every pending
            // job's priority follow at the next pass.
            self.priority.rebuild(&self.accounts);
            self.priority_dirty = true;
            vec![Effect::PersistAccounts(rows)]
        };
        Ok((outcome, effects))
    }

    /// The time of the core's last pass: "now" for changes that come without a clock.
    fn sched_time(&self) -> i64 {
        self.sched.last_pass()
    }

    /// The partitions job `r` may run in, when it was submitted to several (`-p a,b`):
    /// those the configuration has whose `AllowAccounts`/`DenyAccounts`/`AllowQos`/
    /// `DenyQos`/`AllowGroups` take its account, QOS and group.
    fn partition_list(&self, r: &Job) -> Option<Vec<PartitionId>> {
        let list = r.desc.partition.as_deref().filter(|l| l.contains(','))?;
        let takes = |p: PartitionId| {
            let groups = [r.group.to_string()];
            let access = self
                .conf
                .cluster
                .partition(p)
                .access
                .check(&r.account, &r.qos, &groups, false);
            access.is_ok()
        };
        Some(
            list.split(',')
                .filter_map(|n| self.partition_of(n))
                .filter(|&p| takes(p))
                .collect(),
        )
    }

    /// [`Controller::partition_list`] less the partitions whose nodes could never run
    /// the job, even idle. Those closed since it was submitted keep it.
    fn runnable_partitions(&self, r: &Job) -> Option<Vec<PartitionId>> {
        let list = self.partition_list(r)?;
        Some(
            list.into_iter()
                .filter(|&p| self.could_ever_run_in(r, &self.conf.cluster.partition(p).name, false))
                .collect(),
        )
    }

    /// Whether job `r`, were it in partition `name`, could ever run there: the core's
    /// check of a submission (shape, limits and, when `new`, that the partition takes
    /// new jobs; a partition the job already had keeps it when closed since).
    fn could_ever_run_in(&self, r: &Job, name: &str, new: bool) -> bool {
        let mut there = r.clone();
        there.partition = name.into();
        self.core_spec(&there).is_ok_and(|spec| {
            let spec = JobSpec {
                id: JobId(u64::MAX),
                ..spec
            };
            if new {
                self.sched.check(&spec).is_ok()
            } else {
                self.sched.check_readmit(&spec).is_ok()
            }
        })
    }

    /// Of several partitions, those closed to new jobs (DRAIN, INACTIVE) dropped while
    /// one stays open, as Slurm drops them when a job is given the list: the job never
    /// waits for them to reopen.
    fn drop_closed(&self, parts: Vec<PartitionId>) -> Vec<PartitionId> {
        let open = |p: &PartitionId| self.sched.cluster().partition(*p).takes_new_jobs();
        if parts.len() > 1 && parts.iter().any(open) {
            parts.into_iter().filter(open).collect()
        } else {
            parts
        }
    }

    /// `parts` as a `-p` list: `a,b`.
    fn partition_names(&self, parts: &[PartitionId]) -> String {
        let names: Vec<&str> = parts
            .iter()
            .map(|&p| &*self.conf.cluster.partition(p).name)
            .collect();
        names.join(",")
    }

    fn partition_of(&self, name: &str) -> Option<PartitionId> {
        self.conf.cluster.partition_by_name(name)
    }

    /// Checks a submission and resolves its defaults. `user`/`group` are the caller's
    /// names. Refused with Slurm's message; nothing is recorded either way, except
    /// that a job refused for depending on itself spends its id (see
    /// [`Controller::checked`]).
    pub fn prepare(
        &mut self,
        desc: JobDescription,
        caller: &Caller,
        user: &str,
        group: &str,
        now: i64,
    ) -> Result<Prepared, ApiError> {
        let (p, on_itself) = self.checked(desc, caller, user, group, now)?;
        if on_itself {
            // Slurm has numbered the job by then: the refused job's id is not given
            // again.
            self.next_job_id += 1;
            return Err(ApiError::invalid(dependency::PROBLEM));
        }
        Ok(p)
    }

    /// A submission checked and its defaults resolved, and whether it depends on
    /// itself: a job waiting on its own ids (the next ones, which a script can guess)
    /// would wait forever, and Slurm's circular check refuses it, finding the job it
    /// is creating.
    fn checked(
        &self,
        desc: JobDescription,
        caller: &Caller,
        user: &str,
        group: &str,
        now: i64,
    ) -> Result<(Prepared, bool), ApiError> {
        let p = self
            .check_submission(desc, caller, user, group, now)
            .map_err(ApiError::invalid)?;
        let own = self.next_job_id..self.next_job_id + p.ids();
        let on_itself = std::iter::once(&p.template)
            .chain(p.het.iter().map(|h| &h.template))
            .filter_map(|j| j.desc.dependency.as_deref())
            .any(|d| dependency::names_any(d, &own));
        Ok((p, on_itself))
    }

    fn check_submission(
        &self,
        mut desc: JobDescription,
        caller: &Caller,
        user: &str,
        group: &str,
        now: i64,
    ) -> Result<Prepared, String> {
        field_limits::check(&desc, self.conf.backfill.max_script_size)?;
        let components = std::mem::take(&mut desc.het_components);
        if !components.is_empty() && desc.array.is_some() {
            return Err("Job arrays not supported for heterogeneous jobs".into());
        }
        let het = components
            .into_iter()
            .map(|c| self.check_submission(c, caller, user, group, now))
            .collect::<Result<Vec<Prepared>, String>>()?;
        // Kept in the store, not in memory (see `state/script.rs`).
        let script = BatchScript::take(&mut desc);
        // `--switches`' wait is settled now, as Slurm's `_max_switch_wait` settles it:
        // the cluster's `max_switch_wait` where none was asked, and at most that.
        let max_wait = self.conf.backfill.max_switch_wait;
        desc.switches = desc
            .switches
            .map(|(count, wait)| (count, Some(wait.unwrap_or(max_wait).min(max_wait))));
        if self.jobs.len() >= self.conf.max_job_count {
            return Err("Resource temporarily unavailable (MaxJobCount reached)".into());
        }
        // `-p a,b`: the job may run in any of them; the first gives its defaults.
        // Empty names in the list are passed over, as Slurm's `strtok` does.
        let parts: Vec<PartitionId> =
            match &desc.partition {
                Some(p) => p
                    .split(',')
                    .filter(|n| !n.is_empty())
                    .map(|name| {
                        self.partition_of(name)
                            .ok_or_else(|| BAD_PARTITION.to_string())
                    })
                    .collect::<Result<_, _>>()?,
                None => vec![self.conf.cluster.default_partition().ok_or_else(|| {
                    "No partition specified or system default partition".to_string()
                })?],
            };
        // The list as kept: without empty names, nor closed partitions.
        let parts = self.drop_closed(parts);
        if desc.partition.as_deref().is_some_and(|l| l.contains(',')) {
            desc.partition = Some(self.partition_names(&parts));
        }
        let Some(&part) = parts.first() else {
            return Err(BAD_PARTITION.into());
        };
        if let Some((tasks, _)) = &desc.array {
            if tasks.iter().any(|&t| t >= self.conf.max_array_size) || tasks.is_empty() {
                return Err("Invalid job array specification".into());
            }
        }
        if let Some(dep) = &desc.dependency {
            parse_dependency(dep).map_err(|_| dependency::PROBLEM.to_string())?;
        }
        // A job that does not say takes the cluster's `JobRequeue=0`, as Slurm's
        // controller gives it at submission.
        if desc.requeue.is_none() && !self.conf.job_requeue {
            desc.requeue = Some(false);
        }
        if let Some(s) = &desc.service {
            self.check_service(s, desc.array.is_some())?;
            // A service goes elsewhere when its node dies (or it is preempted),
            // whatever `--no-requeue` said.
            desc.requeue = Some(true);
        }
        let p = self.conf.cluster.partition(part);
        // The account and QOS, checked against the associations as
        // AccountingStorageEnforce asks.
        let accounting = self
            .accounts
            .resolve_job(
                user,
                desc.account.as_deref(),
                &p.name,
                desc.qos.as_deref(),
                &self.conf.enforce,
            )
            .map_err(str::to_string)?;
        if let Some(r) = &desc.reservation {
            self.check_reservation(r, caller.uid, Some(&accounting.account))?;
        }
        // A partition the user's group may not use refuses the job; of several, when
        // none of them may be used (the others are where it may run).
        let group_denied = |q: &PartitionId| {
            self.conf.cluster.partition(*q).access.check(
                &accounting.account,
                &accounting.qos,
                &[group.to_string()],
                caller.admin,
            ) == Err(NotAllowed::Group)
        };
        if parts.iter().all(group_denied) {
            return Err("User's group not permitted to use this partition".into());
        }
        let limit = match desc.time_limit {
            Some(Some(t)) => Some(t),
            Some(None) => None,
            None => {
                // A service runs until it is ended: the partition's MaxTime bounds it,
                // its DefaultTime does not apply (COMPATIBILITY.md).
                let default = if desc.service.is_some() {
                    p.max_time
                } else {
                    p.default_time.or(p.max_time)
                };
                // As Slurm: no time asked, the job gets its QOS's or association's
                // MaxWall when that is shorter.
                let acct =
                    self.accounts
                        .job_acct(user, &accounting.account, &p.name, &accounting.qos);
                let db = self.sched.account_limits();
                let part_qos = db.partition_qos.get(part.index()).copied().flatten();
                match self.accounts.max_wall(&acct, db, part_qos) {
                    Some(w) if db.enforce.limits => Some(default.map_or(w, |d| d.min(w))),
                    _ => default,
                }
            }
        };
        // Sluice starts a job in a reservation only if it ends by the reservation's end:
        // one longer than the reservation could never start there.
        if let (Some(name), Some(l)) = (&desc.reservation, limit) {
            if let Some(r) = self.sched.reservation(name) {
                if !r.flags.flex && l > r.end - r.start {
                    return Err(
                        "Requested time limit is invalid (missing or exceeds some limit)".into(),
                    );
                }
            }
        }
        let max_nodes = desc.nodes.map_or(0, |n| n.1);
        let (listed, _) = self.node_lists(&desc)?;
        let (min_nodes, ntasks) = job_size(&desc, listed.len() as u32);
        let mut template = Job {
            id: JobId(0),
            array: None,
            array_pending: None,
            split: false,
            uid: caller.uid,
            gid: caller.gid,
            user: user.into(),
            group: group.into(),
            account: accounting.account.into(),
            partition: p.name.clone().into(),
            qos: accounting.qos.into(),
            state: JobState::Pending,
            reason: Reason::NONE,
            priority: 0,
            submit_time: now,
            start_time: None,
            end_time: None,
            planned_start: None,
            time_limit: limit,
            alloc: Vec::new(),
            mem_per_node: 0,
            // The partition's default, when the job asks for no memory of its own.
            mem_default: match (
                desc.memory,
                self.conf.def_mem.get(part.index()).copied().flatten(),
            ) {
                (None, Some(MemRequest::PerCpu(m))) => Some(MemoryRequest::PerCpu(m)),
                (None, Some(MemRequest::PerNode(m))) if m > 0 => Some(MemoryRequest::PerNode(m)),
                _ => None,
            },
            ntasks,
            cpus_per_task: desc.cpus_per_task.unwrap_or(1),
            min_nodes,
            exit_code: 0,
            signal: 0,
            restarts: 0,
            hold: desc.hold.then_some(Hold::User),
            cancelled_by: None,
            stdout: "".into(),
            stderr: "".into(),
            stdin: "".into(),
            desc: Arc::new(desc.clone()),
            next_step: 0,
            start_pass: None,
            ending_run: None,
            refused: None,
            tres_req: Arc::from([]),
            tres_alloc: Vec::new(),
            // Eligible at once unless held or waiting on a dependency (see `release`).
            accrue_time: (!desc.hold && desc.dependency.is_none())
                .then(|| desc.begin.unwrap_or(now).max(now)),
            idle_gpus: None,
            service: None,
            suspension: None,
            het: None,
        };
        if max_nodes > 0 && max_nodes < min_nodes {
            return Err(NODE_CONFIG.into());
        }
        let spec = self.core_spec(&template)?;
        self.check_shard_request(&spec.request)?;
        if self.conf.enforce_part_limits {
            // Of several partitions: refused when one of them would refuse it under
            // `ALL`, when every one would under `ANY` (Slurm's `_valid_job_part`).
            let checks: Vec<Result<(), String>> = parts
                .iter()
                .map(|&p| {
                    self.check_partition_limits(&JobSpec {
                        partition: p,
                        ..spec.clone()
                    })
                })
                .collect();
            let passed = if self.conf.enforce_part_limits_all {
                checks.iter().all(Result::is_ok)
            } else {
                checks.iter().any(Result::is_ok)
            };
            if !passed {
                // Slurm says why the first refused under `ALL` (it stops there), why
                // the last did under `ANY`.
                let mut refusals = checks.into_iter().filter(Result::is_err);
                let said = if self.conf.enforce_part_limits_all {
                    refusals.next()
                } else {
                    refusals.next_back()
                };
                said.expect("one refused")?;
            }
        }
        template.tres_req = self.conf.requested_tres(part, &spec.request).into();
        // Of several partitions, one that could ever run it is enough (Slurm's
        // `_select_nodes_parts`); the first's refusal is said when none could.
        let check = |p: PartitionId| {
            self.sched.check(&JobSpec {
                id: JobId(u64::MAX),
                partition: p,
                ..spec.clone()
            })
        };
        let checked = match check(part) {
            Err(e) if parts.len() > 1 => {
                if parts[1..].iter().any(|&p| check(p).is_ok()) {
                    Ok(())
                } else {
                    Err(e)
                }
            }
            other => other,
        };
        match checked {
            Ok(()) => {}
            Err(SubmitError::NodeConfigUnavailable) => return Err(NODE_CONFIG.into()),
            Err(SubmitError::PartitionClosed(_)) => {
                return Err("Required partition not available (inactive or drain)".into())
            }
            Err(e @ SubmitError::AccountingPolicy(reason)) => {
                // sbatch prints the limit's name on a line of its own first.
                return Err(format!("{reason}\n{e}"));
            }
            Err(e) => return Err(e.to_string()),
        }
        template.priority = 0;
        let (tasks, throttle) = desc.array.clone().unwrap_or_default();
        Ok(Prepared {
            template,
            tasks,
            throttle,
            script,
            warnings: Vec::new(),
            het,
        })
    }

    /// `-w` and `-x` as sorted node ids. Errors: Slurm's "Invalid node name specified"
    /// for a malformed expression or a node the configuration does not have.
    fn node_lists(&self, d: &JobDescription) -> Result<(Vec<NodeId>, Vec<NodeId>), String> {
        let ids = |expr: &Option<String>| -> Result<Vec<NodeId>, String> {
            let Some(expr) = expr.as_deref().filter(|e| !e.is_empty()) else {
                return Ok(Vec::new());
            };
            let invalid = || "Invalid node name specified".to_string();
            let mut ids = sluice_conf::hostlist::expand(expr)
                .map_err(|_| invalid())?
                .iter()
                .map(|n| self.conf.node_id(n).ok_or_else(invalid))
                .collect::<Result<Vec<NodeId>, String>>()?;
            ids.sort_unstable();
            ids.dedup();
            Ok(ids)
        };
        Ok((ids(&d.nodelist)?, ids(&d.exclude)?))
    }

    /// `EnforcePartLimits=ALL|ANY|YES`: a job over its partition's limits is refused
    /// at submission with Slurm's words, rather than left pending (`PartitionTimeLimit`,
    /// `PartitionNodeLimit`). Checked in Slurm 22.05's order (`_part_access_check`):
    /// processors, then nodes, then time.
    ///
    /// Errors: `More processors requested than permitted` for more CPUs than the
    /// partition has (counting at least one per requested node) or more CPUs per task
    /// than its largest node; `Node count specification invalid` for more nodes than
    /// the partition has or allows (`MaxNodes`), or fewer than `MinNodes`; `Requested
    /// time limit is invalid (missing or exceeds some limit)` over `MaxTime`.
    fn check_partition_limits(&self, spec: &JobSpec) -> Result<(), String> {
        let p = self.conf.cluster.partition(spec.partition);
        let req = &spec.request;
        let nodes = || p.nodes.iter().map(|n| &self.conf.cluster.nodes[n.index()]);
        let cpus: u64 = nodes().map(|n| u64::from(n.capacity.cpus)).sum();
        let widest = nodes().map(|n| n.capacity.cpus).max().unwrap_or(0);
        let min_cpus = (u64::from(req.ntasks.max(1)) * u64::from(req.cpus_per_task.max(1)))
            .max(u64::from(req.min_nodes));
        if min_cpus > cpus || req.cpus_per_task > widest {
            return Err("More processors requested than permitted".into());
        }
        let bad_count = req.min_nodes as usize > p.nodes.len()
            || p.max_nodes.is_some_and(|m| req.min_nodes > m)
            || req.min_nodes < p.min_nodes;
        if bad_count {
            return Err("Node count specification invalid".into());
        }
        if p.max_time.is_some_and(|m| spec.time_limit > m) {
            return Err("Requested time limit is invalid (missing or exceeds some limit)".into());
        }
        Ok(())
    }

    /// The core's view of a job (resource request, limit, priority).
    fn core_spec(&self, r: &Job) -> Result<JobSpec, String> {
        let d = &r.desc;
        let part = self
            .partition_of(&r.partition)
            .ok_or_else(|| BAD_PARTITION.to_string())?;
        let (min_nodes, max_nodes) = d.nodes.unwrap_or((1, 0));
        let (nodelist, exclude) = self.node_lists(d)?;
        let listed = nodelist.len() as u32;
        let mut req = JobRequest::procs(r.ntasks.max(1));
        req.min_nodes = min_nodes.max(listed).max(1);
        req.max_nodes = if max_nodes > 0 {
            max_nodes.max(listed)
        } else {
            r.ntasks.max(listed).max(1)
        };
        req.nodelist = nodelist;
        req.exclude = exclude;
        req.segment = d.segment;
        if let Some(sockets) = d.sockets_per_node {
            // `--sockets-per-node`: nodes with fewer sockets cannot take part.
            let few = (0..self.conf.cluster.nodes.len())
                .filter(|&i| self.conf.topology.get(i).is_some_and(|t| t.0 < sockets))
                .map(|i| NodeId(i as u32));
            req.exclude.extend(few);
            req.exclude.sort_unstable();
            req.exclude.dedup();
        }
        req.switches = d.switches.map(|(max, wait)| {
            let eligible = d.begin.unwrap_or(r.submit_time).max(r.submit_time);
            let wait = wait.unwrap_or(self.conf.backfill.max_switch_wait);
            SwitchLimit {
                max,
                until: eligible.saturating_add(wait),
            }
        });
        req.cpus_per_task = r.cpus_per_task.max(1);
        req.ntasks_per_node = d.ntasks_per_node;
        req.exclusive = d.exclusive;
        req.oversubscribe = d.oversubscribe;
        req.mem = match d.memory {
            None => self
                .conf
                .def_mem
                .get(part.index())
                .copied()
                .flatten()
                .unwrap_or(MemRequest::PerNode(0)),
            Some(MemoryRequest::PerNode(0)) => {
                let p = self.conf.cluster.partition(part);
                let min = p
                    .nodes
                    .iter()
                    .map(|n| self.conf.cluster.node(*n).capacity.mem_mib)
                    .min();
                MemRequest::PerNode(min.unwrap_or(0))
            }
            Some(MemoryRequest::PerNode(m)) => MemRequest::PerNode(m),
            Some(MemoryRequest::PerCpu(m)) => MemRequest::PerCpu(m),
            Some(MemoryRequest::PerGpu(m)) => {
                let gpus = d
                    .gpus_per_node
                    .as_ref()
                    .map(|g| g.1)
                    .or(d.gpus.as_ref().map(|g| g.1))
                    .or(d
                        .gpus_per_socket
                        .as_ref()
                        .map(|g| g.1.saturating_mul(d.sockets_per_node.unwrap_or(1))))
                    .unwrap_or(1);
                MemRequest::PerNode(m * gpus as u64)
            }
        };
        let table = &self.conf.cluster.gres;
        let invalid = || "Invalid generic resource (gres) specification".to_string();
        let mut add = |name: &str, gtype: Option<&str>, count: u32| -> Result<(), String> {
            let slot = match table.find(name, gtype) {
                Some(slot) => slot,
                // A type no node has, of a GRES the cluster has: no node could ever.
                None if table.find(name, None).is_some() => return Err(NODE_CONFIG.into()),
                None => return Err(invalid()),
            };
            req.gres_per_node[slot] = req.gres_per_node[slot]
                .checked_add(count)
                .ok_or_else(invalid)?;
            if let Some(parent) = table.parent(slot) {
                req.gres_per_node[parent] = req.gres_per_node[parent]
                    .checked_add(count)
                    .ok_or_else(invalid)?;
            }
            Ok(())
        };
        // A count of 0 asks for none: no node needs to have it.
        for g in d.gres.iter().filter(|g| g.count > 0) {
            add(&g.name, g.gres_type.as_deref(), g.count)?;
        }
        // The --gpus* options each say how many GPUs a node needs; given together they
        // are constraints on one allocation (as in Slurm), not amounts to add up: per
        // type, the most any of them asks.
        let mut gpus_per_node: Vec<(Option<String>, u32)> = Vec::new();
        let mut want = |t: Option<&str>, n: u32| match gpus_per_node
            .iter_mut()
            .find(|g| g.0.as_deref() == t)
        {
            Some(g) => g.1 = g.1.max(n),
            None => gpus_per_node.push((t.map(str::to_string), n)),
        };
        if let Some((t, n)) = &d.gpus_per_node {
            want(t.as_deref(), *n);
        }
        if let Some((t, n)) = &d.gpus {
            // Spread evenly: every node of the job gets the same count (a deviation:
            // Slurm may give the nodes different counts adding up to exactly N).
            want(t.as_deref(), n.div_ceil(req.min_nodes.max(1)));
        }
        if let Some((t, n)) = &d.gpus_per_socket {
            // GPUs per node: per socket, times the sockets the job asks of each node.
            let sockets = d.sockets_per_node.ok_or_else(|| {
                "--gpus-per-socket option requires --sockets-per-node specification".to_string()
            })?;
            want(t.as_deref(), n.saturating_mul(sockets));
        }
        if let Some((t, n)) = &d.gpus_per_task {
            let tasks_here = d
                .ntasks_per_node
                .unwrap_or(r.ntasks.div_ceil(req.min_nodes.max(1)));
            want(t.as_deref(), n.saturating_mul(tasks_here));
        }
        for (t, n) in gpus_per_node.into_iter().filter(|g| g.1 > 0) {
            add("gpu", t.as_deref(), n)?;
        }
        // CPUs and memory that come with each GPU: `--cpus-per-gpu`, else the
        // partition's `DefCpuPerGPU`; its `DefMemPerGPU` when no memory was asked for.
        if let Some(slot) = self.gpu_slot {
            let gpus = req.gres_per_node[slot];
            if gpus > 0 {
                let defaults = self
                    .conf
                    .gpu_defaults
                    .get(part.index())
                    .copied()
                    .unwrap_or_default();
                if d.cpus_per_task.is_none() {
                    if let Some(per_gpu) = d.cpus_per_gpu.or(defaults.cpus_per_gpu) {
                        let tasks_here = d
                            .ntasks_per_node
                            .unwrap_or(r.ntasks.div_ceil(req.min_nodes.max(1)))
                            .max(1);
                        req.cpus_per_task =
                            req.cpus_per_task.max((gpus * per_gpu).div_ceil(tasks_here));
                    }
                }
                if d.memory.is_none() {
                    if let Some(per_gpu) = defaults.mem_per_gpu_mib {
                        req.mem = MemRequest::PerNode(u64::from(gpus) * per_gpu);
                    }
                }
            }
        }
        if let Some(c) = &d.constraint {
            for f in c.split('|') {
                let i = self
                    .conf
                    .cluster
                    .features
                    .iter()
                    .position(|x| x == f.trim())
                    .ok_or_else(|| "Invalid feature specification".to_string())?;
                req.features_any |= 1 << i;
            }
        }
        let limit = r
            .time_limit
            .unwrap_or(MAX_TIME_LIMIT)
            .clamp(1, MAX_TIME_LIMIT);
        Ok(JobSpec {
            id: r.id,
            user: r.uid,
            partition: part,
            submit: r.submit_time,
            begin: d.begin.unwrap_or(r.submit_time).max(r.submit_time),
            request: req,
            time_limit: limit,
            priority: if self.priority.multifactor() {
                r.priority.max(1)
            } else {
                job_priority(r)
            },
            acct: self.job_acct(r, part),
        })
    }

    /// A job's association and QOS for the core's limits, and whether its partition
    /// allows its account and QOS (Slurm leaves a job it does not pending, with
    /// `EnforcePartLimits=NO`).
    fn job_acct(&self, r: &Job, part: PartitionId) -> JobAcct {
        let mut acct = self
            .accounts
            .job_acct(&r.user, &r.account, &r.partition, &r.qos);
        let p = self.conf.cluster.partition(part);
        acct.not_allowed = match p.access.check(&r.account, &r.qos, &[], true) {
            Err(NotAllowed::Group) | Ok(()) => None,
            Err(other) => Some(other),
        };
        acct
    }

    /// Gives the core the accounts' limits and cohorts again (at start, after a
    /// `sacctmgr` change), and every job its association and QOS ids, which a change may
    /// have created.
    fn refresh_limits(&mut self, now: i64) {
        let db = self
            .accounts
            .core_limits(&self.conf.cluster, &self.conf.enforce);
        self.sched.set_account_limits(db);
        if !self.conf.cohorts.members.is_empty() {
            // Checked when the configuration was read.
            let accounts = &self.accounts;
            let cohorts = crate::accounts::cohorts::core_cohorts(
                &self.conf.cohorts,
                &self.conf.cluster,
                |name| accounts.account_assoc(name),
            )
            .unwrap_or_default();
            self.sched.set_cohorts(cohorts);
        }
        let live: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| !j.state.is_finished())
            .map(|j| j.id)
            .collect();
        for id in live {
            let Ok(spec) = self.core_spec(&self.jobs[&id]) else {
                continue;
            };
            if !self.sched.set_job_acct(id, spec.acct, now) && self.outside.contains(&id) {
                self.sched.forget_waiting(id, now);
                self.sched.note_waiting(&spec);
            }
        }
    }

    /// Continues job ids from `next` (the store's next id at start-up), never going
    /// back.
    pub fn resume_ids(&mut self, next: u64) {
        self.next_job_id = self.next_job_id.max(next);
    }

    /// Allocates the ids of checked submission `p` and gives its jobs: consecutive
    /// ids, one per array task. Their records ([`Controller::inserted`]) are to be made
    /// durable, then the jobs [`Controller::accept`]ed.
    pub fn allocate(&mut self, p: &Prepared) -> Vec<Job> {
        let first = self.next_job_id;
        self.next_job_id += p.ids();
        let mut jobs = p.jobs(JobId(first));
        let desc = self.descs.share(p.template.uid, &p.template.desc);
        for j in &mut jobs {
            j.tres_req = self.descs.share_tres(&j.tres_req);
            self.descs.names_of(j);
            if j.het.is_some_and(|h| h.offset > 0) {
                continue; // a heterogeneous job's component keeps its own
            }
            j.desc = desc.clone();
        }
        // A dependency already satisfied (`singleton` alone under its name, `afterok`
        // of a job that completed): eligible at once, as a job without one, so that
        // its accrue time goes to disk with its record rather than in a write of its
        // own once it is accepted (see `accept`, should that change meanwhile). A
        // `singleton` array's tasks after its first wait for that one, which is queued
        // ahead of them under their name: not eligible, as `accept` would find them.
        for i in 0..jobs.len() {
            let j = &jobs[i];
            let Some(dep) = j.desc.dependency.as_deref() else {
                continue;
            };
            if j.hold.is_some() || j.accrue_time.is_some() {
                continue;
            }
            let sibling_first = || {
                jobs[..i]
                    .iter()
                    .any(|s| s.uid == j.uid && s.desc.name == j.desc.name)
            };
            if self.dependency_state(j, dep, j.submit_time) == DepState::Satisfied
                && !(parse_dependency(dep) == Ok(Dependency::Singleton) && sibling_first())
            {
                let j = &mut jobs[i];
                j.accrue_time = Some(j.desc.begin.unwrap_or(j.submit_time).max(j.submit_time));
            }
        }
        jobs
    }

    /// What the store writes of a new submission's jobs, with its `script`
    /// ([`Prepared::take_script`]), submitted at `now`: [`Effect::Insert`]. Their
    /// submission is recorded in the audit trail now, so that the trail goes to disk
    /// in the insert's transaction (the server writes an outcome's audit records with
    /// the submission it inserts): one commit for a submission, and a job on disk
    /// always has the record of its submission.
    pub fn inserted(&mut self, jobs: &[Job], script: Option<BatchScript>, now: i64) -> Effect {
        for j in jobs {
            self.audit_submitted(j, now);
        }
        Effect::Insert {
            records: jobs.iter().map(|j| self.stored(j)).collect(),
            script: script.map(Box::new),
        }
    }

    /// Takes the jobs of a durable submission ([`Controller::inserted`]) into the
    /// queue. Nothing more is written unless something changed since they were
    /// inserted (their dependency no longer satisfied).
    pub fn accept(&mut self, jobs: Vec<Job>, now: i64) -> Vec<Effect> {
        // Queued in task order: an array's tasks start in index order.
        let ids = in_list_order(jobs.iter());
        self.diag.roll(now);
        self.diag.jobs.submitted += jobs.len() as u32;
        for r in jobs {
            let id = r.id;
            self.audit_inserted(id);
            if let Ok(spec) = self.core_spec(&r) {
                // Counted for the submit limits while it waits outside the queue.
                self.sched.note_waiting(&spec);
            }
            self.jobs.insert(id, r);
            self.outside.insert(id);
        }
        // Only the new jobs: nothing else changed.
        let mut effects = self.release(ids.clone(), now);
        for id in ids {
            // Inserted eligible (`allocate`), its dependency waits again (another job
            // of its name came first for a `singleton`): it accrues from when it is
            // eligible, as any job waiting on a dependency.
            let r = self.jobs.get_mut(&id).expect("accepted");
            if matches!(
                r.reason,
                Reason::Dependency | Reason::DependencyNeverSatisfied
            ) && self.outside.contains(&id)
                && r.accrue_time.take().is_some()
            {
                effects.push(self.persist(id));
            }
        }
        effects
    }

    /// Moves pending jobs whose hold, dependency and throttle allow it into the core.
    fn release_outside(&mut self, now: i64) -> Vec<Effect> {
        let ids = in_list_order(self.outside.iter().map(|id| &self.jobs[id]));
        self.release(ids, now)
    }

    /// [`Controller::release_outside`] for the jobs `ids` only.
    fn release(&mut self, ids: Vec<JobId>, now: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        let mut het_leaders = Vec::new();
        for id in ids {
            // A heterogeneous job's components enter the queue together or not at all.
            let reason = self
                .blocked_reason(id, now)
                .or_else(|| self.het_blocked(id, now));
            let r = self.jobs.get_mut(&id).expect("outside jobs have records");
            if let Some(h) = r.het {
                if reason.is_none() && !het_leaders.contains(&h.job_id) {
                    het_leaders.push(h.job_id);
                }
            }
            match reason {
                Some(reason) => {
                    r.reason = reason;
                    if reason == Reason::Dependency {
                        if let Some(due) = self.dependency_due(&self.jobs[&id], now) {
                            self.dep_due.insert((due, id));
                        }
                    }
                }
                None => {
                    // Eligible from now on (or from its begin time): it accrues age.
                    let r = self.jobs.get_mut(&id).expect("exists");
                    if r.accrue_time.is_none() {
                        let begin = r.desc.begin.unwrap_or(r.submit_time).max(now);
                        r.accrue_time = Some(begin);
                        effects.push(self.persist(id));
                    }
                    if self.priority.multifactor() {
                        let r = &self.jobs[&id];
                        if let Ok(spec) = self.core_spec(r) {
                            let factors = self.job_factors(r, &spec);
                            let p = self.priority.priority(&factors, now).priority;
                            self.jobs.get_mut(&id).expect("exists").priority = p;
                        }
                    }
                    // A job of several partitions waits in the first of them that takes
                    // its account and QOS and could ever run it, whose association and
                    // defaults it has.
                    let list = self.runnable_partitions(&self.jobs[&id]);
                    if let Some(&p) = list.as_ref().and_then(|l| l.first()) {
                        let name = self.descs.name(&self.conf.cluster.partition(p).name);
                        self.jobs.get_mut(&id).expect("exists").partition = name;
                    }
                    let spec = self.core_spec(&self.jobs[&id]);
                    // Checked when it was submitted (or updated): a partition
                    // drained or made inactive since keeps it.
                    match spec.map(|s| self.sched.readmit(s, now)) {
                        Ok(Ok(())) => {
                            if let Some(list) = list {
                                self.sched.set_partitions(id, &list, now);
                            }
                            self.audit_queued(id);
                            self.outside.remove(&id);
                            self.bind_reservation(id, now);
                            let r = self.jobs.get_mut(&id).expect("exists");
                            r.reason = Reason::NONE;
                        }
                        Ok(Err(e)) => {
                            // The configuration changed under a queued job: it can never run.
                            self.outside.remove(&id);
                            let r = self.jobs.get_mut(&id).expect("exists");
                            let before = std::mem::replace(&mut r.reason, Reason::BadConstraints);
                            r.state = JobState::Failed;
                            r.end_time = Some(now);
                            r.refused = Some(e.to_string());
                            self.audit_refused(id, before, now);
                            effects.push(self.persist(id));
                        }
                        Err(e) => {
                            self.outside.remove(&id);
                            let r = self.jobs.get_mut(&id).expect("exists");
                            r.state = JobState::Failed;
                            r.end_time = Some(now);
                            r.refused = Some(e);
                            let before = r.reason;
                            self.audit_refused(id, before, now);
                            effects.push(self.persist(id));
                        }
                    }
                }
            }
        }
        for leader in het_leaders {
            self.link_het(JobId(leader));
        }
        effects
    }

    /// The ids of the components of `id`'s heterogeneous job, leader first (`id` alone
    /// for any other job).
    pub(crate) fn het_members(&self, id: JobId) -> Vec<JobId> {
        match self.jobs.get(&id).and_then(|r| r.het) {
            Some(h) => (0..h.size as u64)
                .map(|i| JobId(h.job_id + i))
                .filter(|m| self.jobs.get(m).is_some_and(|r| r.het.is_some()))
                .collect(),
            None => vec![id],
        }
    }

    /// Why another component of `id`'s heterogeneous job may not enter the queue yet:
    /// then neither may `id`.
    fn het_blocked(&self, id: JobId, now: i64) -> Option<Reason> {
        self.het_members(id)
            .into_iter()
            .filter(|&m| m != id && self.jobs[&m].state == JobState::Pending)
            .find_map(|m| self.blocked_reason(m, now))
    }

    /// Ties the components of heterogeneous job `leader` together in the core, once
    /// all of them are queued there.
    fn link_het(&mut self, leader: JobId) {
        let members = self.het_members(leader);
        if members
            .iter()
            .all(|m| self.jobs[m].state == JobState::Pending && !self.outside.contains(m))
        {
            self.sched.set_het_group(&members);
        }
    }

    /// Why a pending job may not enter the queue yet (Slurm's reason), if it may not.
    fn blocked_reason(&self, id: JobId, now: i64) -> Option<Reason> {
        let r = &self.jobs[&id];
        if let Some(hold) = &r.hold {
            return Some(Reason::of_hold(hold));
        }
        if r.ending_run.is_some() {
            // As a requeued job in Slurm, which may begin again only later.
            return Some(Reason::Core(PendingReason::BeginTime));
        }
        if let Some(dep) = r.desc.dependency.as_deref() {
            match self.dependency_state(r, dep, now) {
                DepState::Satisfied => {}
                DepState::Waiting => return Some(Reason::Dependency),
                DepState::Never => return Some(Reason::DependencyNeverSatisfied),
            }
        }
        if let Some((array, _)) = r.array {
            let throttle = self
                .jobs
                .get(&array)
                .and_then(|a| a.array_pending.as_ref())
                .and_then(|p| p.1);
            if let Some(t) = throttle {
                let running = self
                    .jobs
                    .range(array..)
                    .take_while(|(_, j)| j.array.is_some_and(|a| a.0 == array))
                    .filter(|(_, j)| {
                        j.state == JobState::Running
                            || (j.state == JobState::Pending && !self.outside.contains(&j.id))
                    })
                    .count();
                if running >= t as usize {
                    return Some(Reason::ArrayTaskLimit);
                }
            }
        }
        None
    }

    /// Runs a scheduling pass: jobs that may now enter the queue do, and the core starts
    /// what it can.
    pub fn schedule(&mut self, now: i64) -> Vec<Effect> {
        let mut effects = self.priority_pass(now);
        effects.extend(self.expire_interactive(now));
        effects.extend(self.time_limits_due(now));
        effects.extend(self.step_limits_due(now));
        effects.extend(self.preempt_due(now));
        let mut started = false;
        while let Some(&(due, id)) = self.dep_due.first() {
            if due > now {
                break;
            }
            self.dep_due.remove(&(due, id));
            self.outside_dirty = true;
        }
        // Another pass only when victims of a preemption left at once (no grace): their
        // preemptors start on what they freed.
        for _ in 0..MAX_PASSES {
            if std::mem::take(&mut self.outside_dirty) {
                effects.extend(self.release_outside(now));
            }
            let decisions = self.sched.schedule_observed(now, &mut self.diag.timer(now));
            self.audit_ranks(&decisions);
            let (decisions, preempted, victims_gone) = self.preempt_decisions(decisions, now);
            effects.extend(preempted);
            started |= !decisions.is_empty();
            // The processors held before this pass's starts, found once for them all.
            let starting: BTreeSet<NodeId> = decisions
                .iter()
                .filter_map(|d| match d {
                    Decision::Start { alloc, .. } => Some(alloc.nodes.iter().map(|a| a.node)),
                    _ => None,
                })
                .flatten()
                .collect();
            let mut held_cpus = if starting.is_empty() {
                BTreeMap::new()
            } else {
                self.held_cpu_ids(&starting)
            };
            for d in decisions {
                // Preemptions were carried out above (state/preempt.rs).
                match d {
                    Decision::Start {
                        job,
                        at,
                        alloc,
                        pass,
                    } => effects.extend(self.started(
                        job,
                        at,
                        &alloc.nodes,
                        pass.as_str(),
                        &mut held_cpus,
                    )),
                    // A job started in this pass and suspended at once (time-slicing).
                    Decision::Suspend { job, .. } => {
                        effects.extend(self.slice_suspended(job, now));
                    }
                    _ => {}
                }
            }
            if !victims_gone {
                break;
            }
        }
        if started {
            // A start may satisfy an `after:` dependency or fill an array's throttle.
            self.outside_dirty = true;
        }
        effects.extend(self.reservation_events());
        self.audit_sweep(now);
        effects
    }

    /// When the server loop should call [`Controller::schedule`] again at the latest.
    pub fn next_wakeup(&self) -> Option<i64> {
        [
            self.sched.next_wakeup(),
            self.priority.next_tick(),
            self.next_preempt_deadline(),
            self.next_time_limit(),
            self.next_step_time_limit(),
            self.dep_due.first().map(|d| d.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Ends interactive allocations that reached their time limit: state `TIMEOUT`, their
    /// steps' tasks terminated (SIGTERM, SIGKILL after `KillWait`, as for batch jobs).
    /// salloc and srun see the state and tell their user the allocation was revoked.
    pub fn expire_interactive(&mut self, now: i64) -> Vec<Effect> {
        if self.expiring {
            return Vec::new();
        }
        let jobs = &self.jobs;
        self.interactive
            .retain(|id| jobs.get(id).is_some_and(|r| r.state == JobState::Running));
        let due: Vec<JobId> = self
            .interactive
            .iter()
            .copied()
            .filter(|id| {
                let r = &self.jobs[id];
                r.time_limit
                    .is_some_and(|l| r.start_time.unwrap_or(now) + l <= now)
            })
            .collect();
        let mut effects = Vec::new();
        self.expiring = true;
        for id in due {
            let r = &self.jobs[&id];
            effects.push(Effect::Terminate {
                nodes: self.node_names(r),
                job_id: id,
                state: JobState::Timeout,
            });
            let report = JobEnded {
                job_id: id.0,
                run: r.restarts,
                node: String::new(),
                state: JobState::Timeout,
                exit_code: 0,
                signal: 0,
                end: now,
                usage: None,
            };
            effects.extend(self.job_ended(&report, now));
        }
        self.expiring = false;
        effects
    }

    /// The processors running, suspended or completing jobs hold on each of `nodes`:
    /// one pass over the jobs that hold processors for all the starts of a scheduling
    /// pass on those nodes (each start then adds its own, [`Controller::free_cpu_ids`]).
    fn held_cpu_ids(&mut self, nodes: &BTreeSet<NodeId>) -> BTreeMap<NodeId, BTreeSet<u32>> {
        let mut held: BTreeMap<NodeId, BTreeSet<u32>> = BTreeMap::new();
        for share in self
            .jobs
            .holding()
            .flat_map(|r| r.alloc.iter())
            .filter(|s| nodes.contains(&s.node))
        {
            held.entry(share.node)
                .or_default()
                .extend(share.cpu_ids.iter().copied());
        }
        held
    }

    /// The processors a job starting on `nodes` gets on each (see [`job::cpu_ids`]):
    /// the lowest none of `held` are, which then holds them too.
    fn free_cpu_ids(
        &self,
        nodes: &[NodeAlloc],
        held: &mut BTreeMap<NodeId, BTreeSet<u32>>,
    ) -> Vec<Vec<u32>> {
        nodes
            .iter()
            .map(|a| {
                let i = a.node.0 as usize;
                let node = self.conf.cluster.node(a.node);
                let total = node.capacity.cpus + node.spec_cpus;
                // The system's processors: those CpuSpecList names, else
                // CoreSpecCount's, the last ones.
                let listed = self.conf.cpu_spec_lists.get(i).map_or("", String::as_str);
                let reserved: BTreeSet<u32> = if listed.is_empty() {
                    (node.capacity.cpus..total).collect()
                } else {
                    job::index_list(listed)
                };
                let on_node = held.entry(a.node).or_default();
                let ids = job::cpu_ids(a.usage.cpus, total, on_node, &reserved);
                on_node.extend(ids.iter().copied());
                ids
            })
            .collect()
    }

    fn started(
        &mut self,
        id: JobId,
        at: i64,
        nodes: &[NodeAlloc],
        pass: &str,
        held_cpus: &mut BTreeMap<NodeId, BTreeSet<u32>>,
    ) -> Vec<Effect> {
        // A job of several partitions runs in the one the core started it in.
        if let Some(p) = self.sched.job(id).map(|j| j.spec.partition) {
            let name = &self.conf.cluster.partition(p).name;
            if let Some(r) = self.jobs.get_mut(&id).filter(|r| *r.partition != **name) {
                r.partition = self.descs.name(name);
            }
        }
        // What it asked, as it stands now (`scontrol update` may have changed it).
        let asked = self
            .jobs
            .get(&id)
            .and_then(|r| {
                let spec = self.core_spec(r).ok()?;
                Some(
                    self.conf
                        .requested_tres(spec.partition, &spec.request)
                        .into(),
                )
            })
            .map(|asked| self.descs.share_tres(&asked));
        self.diag.jobs.started += 1;
        let r = self.jobs.get_mut(&id).expect("started jobs have records");
        if let Some(asked) = asked {
            r.tres_req = asked;
        }
        let (tres, gpu_types) = self.conf.allocated_tres(&r.partition, nodes);
        let mut cpu_ids = self.free_cpu_ids(nodes, held_cpus);
        let r = self.jobs.get_mut(&id).expect("started jobs have records");
        r.state = JobState::Running;
        r.reason = Reason::NONE;
        r.start_time = Some(at);
        r.planned_start = Some(at);
        // The core chose the GPUs, and the shards of which GPU (see `sluice_core::gpus`).
        r.alloc = nodes
            .iter()
            .zip(gpu_types)
            .enumerate()
            .map(|(i, (a, gpu_types))| NodeShare {
                node: a.node,
                tasks: a.tasks,
                cpus: a.usage.cpus,
                cpu_ids: std::mem::take(&mut cpu_ids[i]),
                gpus: a.gpus.clone(),
                shards: a.shards.clone(),
                gpu_types,
            })
            .collect();
        r.mem_per_node = nodes.first().map_or(0, |a| a.usage.mem_mib);
        r.tres_alloc = tres;
        r.start_pass = Some(if pass == "backfill" {
            StartPass::Backfill
        } else {
            StartPass::Main
        });
        let first = r
            .first_node()
            .map(|n| self.conf.cluster.node(n).name.clone())
            .unwrap_or_default();
        resolve_paths(r, &first);
        self.descs.names_of(r);
        self.audit_started(id, pass, at);
        let r = &self.jobs[&id];
        let record = self.stored(r);
        tracing::info!(
            "{}: Allocate JobId={id} NodeList={} #CPUs={} Partition={}",
            if pass == "backfill" {
                "sched/backfill"
            } else {
                "sched"
            },
            sluice_conf::hostlist::compress(&record.nodes),
            record.cpus_per_node.iter().sum::<u32>(),
            record.partition
        );
        let mut effects = vec![Effect::Persist(Box::new(record.clone()))];
        if let Some((array, task)) = r.array {
            // The array's remainder shrinks as tasks start.
            if let Some(head) = self.jobs.get_mut(&array) {
                if let Some((rest, _)) = head.array_pending.as_deref_mut() {
                    rest.retain(|&t| t != task);
                    effects.push(self.persist(array));
                }
            }
        }
        if record.desc.interactive {
            self.interactive.insert(id);
        } else if let Some(h) = record.het {
            // A heterogeneous job's script runs on its leader's first node once every
            // component has started (they start in the same pass).
            let members = self.het_members(id);
            if members
                .iter()
                .all(|m| self.jobs[m].state == JobState::Running)
            {
                let leader = self.stored(&self.jobs[&JobId(h.job_id)]);
                let first = leader.nodes.first().cloned().unwrap_or_default();
                let node = self.conf.node_id(&first).map_or(0, |n| n.index());
                let mut environment = batch_environment(&leader, &self.conf, &self.state_dir);
                let records: Vec<JobRecord> =
                    members.iter().map(|m| self.stored(&self.jobs[m])).collect();
                environment.extend(het_variables(&records));
                environment.extend(het_default_memory(&records));
                let devices = self.conf.constrain_devices.then(|| {
                    device_files(
                        self.conf.gres_devices.get(node).map_or(&[], Vec::as_slice),
                        &gpu_env::gpus_on_node(&leader, 0),
                        &leader.desc,
                    )
                });
                effects.push(Effect::Launch {
                    node: first,
                    order: Box::new(LaunchBatch {
                        job: leader,
                        environment,
                        kill_wait: self.conf.kill_wait,
                        incarnation: String::new(),
                        devices,
                    }),
                });
            }
        } else {
            self.note_deadline(id);
            let environment = batch_environment(&record, &self.conf, &self.state_dir);
            let devices = self.conf.constrain_devices.then(|| {
                let node = nodes.first().map_or(0, |a| a.node.index());
                device_files(
                    self.conf.gres_devices.get(node).map_or(&[], Vec::as_slice),
                    &gpu_env::gpus_on_node(&record, 0),
                    &record.desc,
                )
            });
            effects.push(Effect::Launch {
                node: first,
                order: Box::new(LaunchBatch {
                    job: record,
                    environment,
                    kill_wait: self.conf.kill_wait,
                    incarnation: String::new(),
                    devices,
                }),
            });
        }
        effects
    }

    /// Sets the typed GPU counts of `gres` (a job's GRES counts on `node`) from the GPU
    /// indices `held` it holds there, when their types account for all its GPUs: a job
    /// restored after a restart counts against the types it holds, not those an
    /// untyped request would take on an idle node.
    fn count_held_gpus(&self, node: NodeId, held: &[u32], gres: &mut [u32]) {
        let Some(slot) = self.gpu_slot else { return };
        if held.is_empty() || held.len() != gres[slot] as usize {
            return;
        }
        let table = &self.conf.cluster.gres;
        let gpus = self.sched.cluster().gpus_of(node);
        let type_of = |i: &u32| gpus.get(*i as usize).map(|g| g.gpu_type.as_deref());
        if held.iter().any(|i| type_of(i).is_none()) {
            return;
        }
        let counts: Vec<(usize, u32)> = table
            .children(slot)
            .map(|child| {
                let name = table.name(child);
                let t = name.split_once(':').map(|(_, t)| t);
                let n = held.iter().filter(|i| type_of(i) == Some(t)).count();
                (child, n as u32)
            })
            .collect();
        let untyped = held.iter().filter(|i| type_of(i) == Some(None)).count() as u32;
        if counts.iter().map(|(_, n)| n).sum::<u32>() + untyped == gres[slot] {
            for (child, n) in counts {
                gres[child] = n;
            }
        }
    }

    /// The end of interactive allocation `id` (`salloc`'s shell or `srun` outside a
    /// job), as its owner's command reports it: `exit_code` and `signal` decide its
    /// state. A batch job ends when its agent says so, not when someone claims it did.
    ///
    /// Errors: an unknown job, another user's job, a batch job; nothing changed.
    pub fn complete_allocation(
        &mut self,
        id: JobId,
        exit_code: i32,
        signal: i32,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let r = self.job_for(id, caller)?;
        if !r.desc.interactive {
            return Err(ApiError::invalid(
                "Only interactive allocations are completed this way",
            ));
        }
        let state = if exit_code == 0 && signal == 0 {
            JobState::Completed
        } else if exit_code == 0 && signal == OOM_SIGNAL {
            JobState::OutOfMemory
        } else {
            JobState::Failed
        };
        let report = JobEnded {
            job_id: id.0,
            run: r.restarts,
            node: String::new(),
            state,
            exit_code,
            signal,
            end: now,
            usage: None,
        };
        Ok(self.job_ended(&report, now))
    }

    /// A job's batch script (or allocation) ended, as its agent (or srun/salloc) reports.
    pub fn job_ended(&mut self, report: &JobEnded, now: i64) -> Vec<Effect> {
        // Ends, cancellations and releases may let held-back jobs in.
        self.outside_dirty = true;
        let id = JobId(report.job_id);
        let Some(r) = self.jobs.get(&id) else {
            return Vec::new();
        };
        if let Some(u) = &report.usage {
            self.usage
                .last(id, report.run, StepId::Batch, &report.node, u);
        }
        if r.restarts != report.run {
            // A requeued job's previous run: nothing of it is left on its batch
            // script's node (its supervisor reports the script's end only then).
            let node = self.conf.node_id(&report.node).or_else(|| {
                r.ending_run
                    .as_ref()
                    .filter(|e| e.run == report.run)
                    .and_then(|e| e.nodes.first().copied())
            });
            return match node {
                Some(node) => self.node_gone(id, report.run, node, now),
                None => Vec::new(),
            };
        }
        if r.state != JobState::Running {
            return Vec::new(); // stale (already accounted)
        }
        let mut preempted = false;
        if let Some(effects) = self.preempted_run_ended(id, report.run, now, &mut preempted) {
            return effects;
        }
        // Nothing of the run is left on its batch script's node; on its other nodes
        // (those told to end with it, or those that ran its steps) processes may be,
        // and what the run holds stays held until they are gone (`completing.rs`).
        let r = &self.jobs[&id];
        let batch = r.first_node();
        let told = self.told_to_end(id);
        let waiting: Vec<NodeId> = if r.desc.interactive {
            Vec::new()
        } else if told {
            let e = r.ending_run.as_ref().expect("told to end");
            e.nodes
                .iter()
                .copied()
                .filter(|n| Some(*n) != batch)
                .collect()
        } else {
            self.step_nodes(id, report.run, batch)
        };
        self.diag.roll(now);
        self.diag.jobs.completed += 1;
        let r = self.jobs.get_mut(&id).expect("checked");
        // Told to end: its end is when it was (as Slurm's `EndTime`).
        let ended_at = match r.end_time.filter(|_| told) {
            Some(t) => t,
            None => report.end.min(now),
        };
        r.end_time = Some(ended_at.max(r.start_time.unwrap_or(now)));
        r.ending_run = (!waiting.is_empty()).then(|| {
            Box::new(RunEnding {
                run: report.run,
                nodes: waiting,
                told: None,
            })
        });
        if self.forget_silent_nodes(id) {
            self.jobs.get_mut(&id).expect("checked").ending_run = None;
        }
        let r = self.jobs.get_mut(&id).expect("checked");
        r.exit_code = report.exit_code;
        r.signal = report.signal;
        r.idle_gpus = None;
        r.state = match (report.state, &r.cancelled_by) {
            (JobState::Cancelled, _) | (_, Some(_)) => JobState::Cancelled,
            _ if preempted => JobState::Preempted,
            (s, None) => s,
        };
        // As slurmctld's `_job_complete`: a failed, timed-out, node-failed or
        // out-of-memory job shows why it ended; any other keeps its reason (`None`).
        if let Some(why) = Reason::ended(r.state, r.exit_code, r.signal) {
            r.reason = why;
        }
        self.audit_ended(id, now);
        let r = &self.jobs[&id];
        let (state, end_time) = (r.state, r.end_time);
        tracing::info!(
            "_job_complete: JobId={id} {} ExitCode={}:{} done",
            state.name(),
            r.exit_code,
            r.signal
        );
        let nodes: Vec<String> = r
            .node_ids()
            .map(|n| self.conf.cluster.node(n).name.clone())
            .collect();
        self.liveness.busy_until(&nodes, now);
        let mut effects = vec![self.persist(id)];
        if !r.desc.interactive {
            let step = StepRecord {
                time_limit: None,
                submit_line: None,
                timed_out: false,
                gpus: Vec::new(),
                srun: None,
                cancelled_by: None,
                job_id: id.0,
                step: StepId::Batch,
                name: "batch".into(),
                // As slurmstepd: a batch step ended at the time limit was cancelled,
                // unless its shell outlived the signal and exited with an error of its
                // own (a killed `srun` inside it), which is a failure.
                state: match state {
                    JobState::Timeout if r.exit_code != 0 => JobState::Failed,
                    JobState::Timeout => JobState::Cancelled,
                    s => s,
                },
                start: r.start_time.unwrap_or(now),
                end: end_time,
                exit_code: r.exit_code,
                signal: r.signal,
                nodes: nodes.into_iter().take(1).collect(),
                ntasks: 1,
                cpus: r.alloc.first().map_or(1, |s| s.cpus),
                held_cpus: Vec::new(),
                ended_on: Vec::new(),
                usage: self.usage.merged(id, StepId::Batch),
                run: r.restarts,
                // The batch step stood through every suspension of its job.
                suspended_secs: r.suspension.as_ref().map_or(0, |s| s.secs),
            };
            self.steps.insert((id, StepId::Batch), step.clone());
            effects.push(Effect::PersistStep(Box::new(step)));
        }
        // Steps still marked running end with their job.
        let open: Vec<(JobId, StepId)> = self
            .steps
            .range((id, StepId::Batch)..=(id, StepId::LAST))
            .filter(|(_, s)| s.state == JobState::Running)
            .map(|(k, _)| *k)
            .collect();
        for k in open {
            let s = self.steps.get_mut(&k).expect("listed");
            s.state = match state {
                JobState::Completed | JobState::Timeout => JobState::Cancelled,
                st => st,
            };
            // Its tasks were terminated at the time limit (SIGTERM), their srun
            // gone before it could say so.
            if state == JobState::Timeout && s.exit_code == 0 && s.signal == 0 {
                s.signal = 15;
            }
            s.end = end_time;
            if let Some(u) = self.usage.merged(id, k.1) {
                s.usage = Some(u);
            }
            effects.push(Effect::PersistStep(Box::new(s.clone())));
        }
        self.usage.job_ended(id, now);
        self.idle.forget(id);
        effects.extend(self.het_components_ended(id, now));
        let r = &self.jobs[&id];
        match &r.ending_run {
            Some(e) => {
                if !told {
                    // Ended by itself: what its steps left on other nodes goes too.
                    self.sched.mark_ending(id);
                    effects.push(Effect::Terminate {
                        nodes: e
                            .nodes
                            .iter()
                            .map(|&n| self.conf.cluster.node(n).name.clone())
                            .collect(),
                        job_id: id,
                        state,
                    });
                }
                tracing::info!(
                    "JobId={id} is COMPLETING until its processes are gone on {}",
                    e.nodes
                        .iter()
                        .map(|&n| self.conf.cluster.node(n).name.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                );
            }
            None => {
                self.sched.job_ended(id, now);
            }
        }
        effects.extend(self.schedule(now));
        effects
    }

    /// After heterogeneous job `leader`'s batch script ended: its other components,
    /// which run no script of their own, end with it, in its state and with its exit
    /// code (slurmctld's `job_complete` completes every component), as Slurm 22.05
    /// shows them. Steps still running in a component (an `srun --het-group` the script
    /// left behind) are ended on its nodes and recorded as slurmstepd records a step
    /// killed at its job's end: CANCELLED by SIGTERM.
    fn het_components_ended(&mut self, leader: JobId, now: i64) -> Vec<Effect> {
        let Some(h) = self.jobs.get(&leader).and_then(|r| r.het) else {
            return Vec::new();
        };
        if h.offset != 0 {
            return Vec::new();
        }
        let (state, end, exit_code, signal, cancelled_by) = {
            let r = &self.jobs[&leader];
            (r.state, r.end_time, r.exit_code, r.signal, r.cancelled_by)
        };
        let mut effects = Vec::new();
        for m in self.het_members(leader).into_iter().skip(1) {
            if self.jobs[&m].state != JobState::Running {
                continue;
            }
            self.sched.job_ended(m, now);
            let r = self.jobs.get_mut(&m).expect("a member");
            r.state = state;
            r.end_time = end;
            r.exit_code = exit_code;
            r.signal = signal;
            r.cancelled_by = r.cancelled_by.or(cancelled_by);
            if let Some(why) = Reason::ended(state, exit_code, signal) {
                r.reason = why;
            }
            self.audit_ended(m, now);
            let nodes: Vec<String> = self.jobs[&m]
                .node_ids()
                .map(|n| self.conf.cluster.node(n).name.clone())
                .collect();
            self.liveness.busy_until(&nodes, now);
            effects.push(self.persist(m));
            effects.extend(self.end_component_steps(m, state, end, now));
            self.usage.job_ended(m, now);
        }
        effects
    }

    /// The steps of component `m` still running when its heterogeneous job ended in
    /// `state` at `end`: recorded ended, and their processes ended on the component's
    /// nodes (no script of the component's is there to take them with it).
    fn end_component_steps(
        &mut self,
        m: JobId,
        state: JobState,
        end: Option<i64>,
        now: i64,
    ) -> Vec<Effect> {
        let run = self.jobs[&m].restarts;
        let open: Vec<(JobId, StepId)> = self
            .steps
            .range((m, StepId::Number(0))..=(m, StepId::LAST))
            .filter(|(_, s)| s.state == JobState::Running && s.run == run)
            .map(|(k, _)| *k)
            .collect();
        let mut effects = Vec::new();
        if open.is_empty() {
            return effects;
        }
        for k in open {
            let usage = self.usage.merged(m, k.1);
            let s = self.steps.get_mut(&k).expect("listed");
            s.state = match state {
                JobState::Completed | JobState::Failed | JobState::Timeout => JobState::Cancelled,
                st => st,
            };
            if s.state == JobState::Cancelled && s.exit_code == 0 && s.signal == 0 {
                s.signal = 15;
            }
            s.end = end.or(Some(now));
            if usage.is_some() {
                s.usage = usage;
            }
            effects.push(Effect::PersistStep(Box::new(s.clone())));
        }
        effects.push(Effect::Terminate {
            nodes: self.node_names(&self.jobs[&m]),
            job_id: m,
            state,
        });
        effects
    }

    /// Job and step allocations as the core saw them (for restore and release).
    fn allocation_of(&self, r: &Job) -> Option<Vec<NodeAlloc>> {
        let spec = self.core_spec(r).ok()?;
        if r.alloc.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for share in &r.alloc {
            let node = share.node;
            let tasks = share.tasks;
            let cap = self.conf.cluster.node(node).capacity;
            let mut usage = sluice_core::select::usage_on_node(
                &spec.request,
                tasks,
                &cap,
                &cap,
                &self.conf.cluster.gres,
            );
            self.count_held_gpus(node, &share.gpus, &mut usage.gres);
            let mut a = NodeAlloc::new(node, tasks, usage);
            // The GPUs it holds, for the core to take back (see `sluice_core::gpus`).
            a.gpus = share.gpus.clone();
            a.shards = share.shards.clone();
            out.push(a);
        }
        Some(out)
    }

    fn may_touch(caller: &Caller, r: &Job) -> bool {
        caller.admin || caller.uid == r.uid
    }

    /// Job `id`, for a request of `caller` that may touch only their own jobs (or any,
    /// as an operator).
    ///
    /// Errors: Slurm's `Invalid job id specified`, `Access/permission denied`.
    fn job_for(&self, id: JobId, caller: &Caller) -> Result<&Job, ApiError> {
        let r = self.jobs.get(&id).ok_or_else(ApiError::invalid_job)?;
        if !Self::may_touch(caller, r) {
            return Err(ApiError::access_denied());
        }
        Ok(r)
    }

    /// The record of task `task` of array `job`, while the controller remembers it (a
    /// task cancelled before it started: its array's one record for such tasks, whose
    /// history is theirs, as Slurm's meta record's).
    pub fn task_record(&self, job: JobId, task: u32) -> Option<JobId> {
        self.select(job, Some(task)).first().copied()
    }

    /// Whether `job` is an array's id (its task records carry it, or it is the record
    /// of its tasks cancelled before they started).
    fn is_array(&self, job: JobId) -> bool {
        self.jobs
            .get(&job)
            .and_then(|h| h.array)
            .is_some_and(|(array, _)| array == job)
            || self.folded_tasks(job).is_some()
    }

    /// Ids a request names (`123` all of an array, `123_4` one task).
    fn select(&self, job: JobId, task: Option<u32>) -> Vec<JobId> {
        match task {
            Some(t) => {
                let found: Vec<JobId> = self
                    .jobs
                    .values()
                    .filter(|j| j.array == Some((job, t)))
                    .map(|j| j.id)
                    .collect();
                // A task cancelled before it started, in its array's one record.
                match self.folded_tasks(job) {
                    Some(folded) if found.is_empty() && folded.binary_search(&t).is_ok() => {
                        vec![job]
                    }
                    _ => found,
                }
            }
            None => {
                let head = self.jobs.get(&job);
                if self.is_array(job) {
                    // Its tasks, and the record of those cancelled before they started.
                    self.jobs
                        .values()
                        .filter(|j| j.id == job || j.array.is_some_and(|a| a.0 == job))
                        .map(|j| j.id)
                        .collect()
                } else if head.and_then(|h| h.het).is_some_and(|h| h.offset == 0) {
                    // A heterogeneous job's leader stands for all its components.
                    self.het_members(job)
                } else {
                    head.map(|h| vec![h.id]).unwrap_or_default()
                }
            }
        }
    }

    /// `scontrol hold` / `release`. The tasks of an array that refuse it are passed
    /// over ([`Controller::hold_verb`] says which).
    pub fn set_hold(
        &mut self,
        job: JobId,
        task: Option<u32>,
        hold: bool,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let tasks = task.as_ref().map(std::slice::from_ref);
        Ok(self.hold_as(job, tasks, hold, false, caller, now)?.effects)
    }

    /// `scontrol uhold`: a hold its owner may release even when an operator set it
    /// (`JobHeldUser`); `scontrol hold` by an operator is an admin hold (`JobHeldAdmin`)
    /// only operators release.
    pub fn user_hold(
        &mut self,
        job: JobId,
        task: Option<u32>,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let tasks = task.as_ref().map(std::slice::from_ref);
        Ok(self.hold_as(job, tasks, true, true, caller, now)?.effects)
    }

    /// Holds or releases job `job`, or `tasks` of array `job`: the records named, the
    /// tasks refused and the tasks the array lacks come with the effects. A refusal of
    /// a job changes nothing; of tasks (named, or a whole array's), each task is
    /// answered for on its own, as Slurm does.
    fn hold_as(
        &mut self,
        job: JobId,
        tasks: Option<&[u32]>,
        hold: bool,
        user_hold: bool,
        caller: &Caller,
        now: i64,
    ) -> Result<Held, ApiError> {
        // Ends, cancellations and releases may let held-back jobs in.
        self.outside_dirty = true;
        let (mut ids, missing) = self.select_tasks(job, tasks);
        if ids.is_empty() {
            return Err(ApiError::invalid_job());
        }
        // In Slurm's order (`_update_job`): finished, then whose it is.
        // A job told to end (cancelled, still COMPLETING) has finished for Slurm.
        let done =
            |r: &Job| r.state.is_finished() || (r.state == JobState::Running && r.told_to_end());
        let refusal = |r: &Job| {
            if done(r) {
                return Some(ApiError::invalid("Job has already finished"));
            }
            if !Self::may_touch(caller, r) {
                return Some(ApiError::new(ErrorCode::AccessDenied, INVALID_USER_ID));
            }
            if !hold && !caller.admin && r.hold.as_ref().is_some_and(|h| !h.owners()) {
                return Some(ApiError::access_denied());
            }
            None
        };
        let mut refused = Vec::new();
        if tasks.is_some() || self.is_array(job) {
            // Tasks, or a whole array: each task is answered for (Slurm's
            // `update_job_str`, one answer per task).
            ids.retain(|id| match refusal(&self.jobs[id]) {
                Some(e) => {
                    refused.push((*id, e.message));
                    false
                }
                None => true,
            });
        } else {
            // A job (a heterogeneous job's every component): every record is checked
            // before any changes, and a refusal changes nothing.
            if let Some(e) = ids.iter().find_map(|id| refusal(&self.jobs[id])) {
                return Err(e);
            }
        }
        // Tasks named apart from the array's pending record, unless they are all of it
        // (refused ones too: Slurm splits them before it looks).
        let alone = tasks.is_some_and(|t| !self.covers_array_record(job, t));
        let mut effects = if alone {
            let ids: Vec<JobId> = refused.iter().map(|r| r.0).collect();
            self.split_named(&ids)
        } else {
            Vec::new()
        };
        for &id in &ids {
            let r = &self.jobs[&id];
            let pending = r.state == JobState::Pending;
            // Held already (only an operator changes a hold's kind), or released and
            // never held: nothing changes, but a pending task named is apart from its
            // array's record, as Slurm splits it before looking.
            let unchanged = (hold && !caller.admin && r.hold.is_some())
                || (!hold && !pending && r.hold.is_none());
            if unchanged {
                if alone {
                    effects.extend(self.split_named(&[id]));
                }
                continue;
            }
            self.audit_hold(id, hold, hold && caller.admin && !user_hold, caller, now);
            if pending && hold && !self.outside.contains(&id) {
                self.sched.cancel_pending(id, now);
                self.outside.insert(id);
            }
            let r = self.jobs.get_mut(&id).expect("exists");
            r.hold = match (hold, &r.hold) {
                (false, _) => None,
                (true, Some(h)) => Some(h.by_operator(user_hold)),
                (true, None) if caller.admin && !user_hold => Some(Hold::Admin),
                (true, None) => Some(Hold::User),
            };
            if hold && pending {
                // A held job is not eligible: it accrues no age until released.
                r.accrue_time = None;
            }
            if !pending {
                // A running job held goes on running, as in Slurm: with priority 0 and
                // the hold as its reason (kept when it ends without a reason of its
                // own), and requeued, it comes back held. Released, it has no reason.
                r.reason = match &r.hold {
                    Some(h) => Reason::of_hold(h),
                    None if matches!(r.reason, Reason::HeldAdmin | Reason::HeldUser) => {
                        Reason::NONE
                    }
                    None => r.reason,
                };
            }
            if alone {
                r.changed_alone();
            }
            effects.push(self.persist(id));
        }
        effects.extend(self.schedule(now));
        Ok(Held {
            effects,
            named: ids,
            refused,
            missing,
        })
    }

    /// The records `tasks` of array `job` name (none: [`Controller::select`] of `job`),
    /// each once, and the tasks the array lacks (in order, each once). One look at
    /// every job, whatever the number of tasks.
    pub(super) fn select_tasks(&self, job: JobId, tasks: Option<&[u32]>) -> (Vec<JobId>, Vec<u32>) {
        let Some(tasks) = tasks else {
            return (self.select(job, None), Vec::new());
        };
        let wanted: BTreeSet<u32> = tasks.iter().copied().collect();
        let mut found = BTreeSet::new();
        let mut ids: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| match j.array {
                Some((a, t)) if a == job && wanted.contains(&t) => {
                    found.insert(t);
                    true
                }
                _ => false,
            })
            .map(|j| j.id)
            .collect();
        // Tasks cancelled before they started, in the array's one record.
        if let Some(folded) = self.folded_tasks(job) {
            let before = found.len();
            found.extend(folded.iter().filter(|t| wanted.contains(t)));
            if found.len() > before {
                ids.push(job);
            }
        }
        (ids, wanted.difference(&found).copied().collect())
    }

    /// Slurm's lines for a job verb on several tasks of array `job`, when any was
    /// refused or is missing: the tasks `done` (`No error`), each refusal's tasks, and
    /// those `missing`, a line per group in task order; none otherwise.
    fn task_lines(
        &self,
        job: JobId,
        done: &[JobId],
        refused: &[(JobId, String)],
        missing: &[u32],
    ) -> Vec<String> {
        if refused.is_empty() && missing.is_empty() {
            return Vec::new();
        }
        // A record's tasks: its own, or those of an array's record cancelled whole,
        // every one of them (Slurm answers for the record, whichever task was named).
        let tasks_of = |id: &JobId| match self.jobs[id].array {
            Some((_, t)) => vec![t],
            None => self.folded_tasks(*id).map_or(vec![0], <[u32]>::to_vec),
        };
        let mut groups: Vec<(Vec<u32>, &str)> =
            vec![(done.iter().flat_map(tasks_of).collect(), "No error")];
        for (id, msg) in refused {
            match groups.iter_mut().find(|(_, m)| m == msg) {
                Some((tasks, _)) => tasks.extend(tasks_of(id)),
                None => groups.push((tasks_of(id), msg)),
            }
        }
        groups.push((missing.to_vec(), INVALID_JOB_ID));
        task_groups(job, groups)
    }

    /// The answer to a job verb naming `tasks` of `job` (none: the job itself) that
    /// [`Controller::select`] did not find: for tasks, Slurm's line for them (whether
    /// `job` is an array, a job or none; the command says it and fails, without its
    /// own error line); otherwise `Invalid job id specified`.
    fn missing_tasks(&self, job: JobId, tasks: &[u32]) -> Result<Vec<String>, ApiError> {
        if tasks.is_empty() {
            return Err(ApiError::invalid_job());
        }
        Ok(task_groups(job, vec![(tasks.to_vec(), INVALID_JOB_ID)]))
    }

    /// `scontrol hold|uhold|release` as a command sees it: [`Controller::set_hold`] or
    /// [`Controller::user_hold`] of job `job` or of `tasks` of array `job` in one
    /// request, and for tasks the array lacks, Slurm's lines (those done, those
    /// missing).
    pub fn hold_verb(
        &mut self,
        job: JobId,
        tasks: Option<&[u32]>,
        hold: bool,
        user_hold: bool,
        caller: &Caller,
        now: i64,
    ) -> Result<(Vec<Effect>, Vec<String>), ApiError> {
        match self.hold_as(job, tasks, hold, user_hold && hold, caller, now) {
            // Nothing selected (the only such refusal).
            Err(e) if e.code == ErrorCode::InvalidJobId => self
                .missing_tasks(job, tasks.unwrap_or_default())
                .map(|l| (Vec::new(), l)),
            Err(e) => Err(e),
            Ok(h) => {
                let lines = self.task_lines(job, &h.named, &h.refused, &h.missing);
                Ok((h.effects, lines))
            }
        }
    }

    /// Puts job `id` back in the queue under its id (`scontrol requeue`, preemption):
    /// its current run, if any, is kept for `sacct -D` as `ended_as`, its resources are
    /// released, and with `terminate` its processes are ended (the job waits until that
    /// end is reported). A pending job is left alone.
    fn requeue_run(
        &mut self,
        id: JobId,
        ended_as: JobState,
        terminate: bool,
        now: i64,
    ) -> Vec<Effect> {
        let mut effects = Vec::new();
        let r = &self.jobs[&id];
        let state = r.state;
        if state == JobState::Pending {
            return effects;
        }
        // The run that ends here, as sacct --duplicates shows it.
        let mut run = r.to_record(&self.conf, self.reason_text(r, r.reason), r.listed_desc());
        run.state = ended_as;
        run.end_time = Some(r.end_time.unwrap_or(now));
        effects.push(Effect::PersistRun(Box::new(run)));
        let lost_with_node = ended_as == JobState::NodeFail;
        // A heterogeneous job's component other than the leader runs no batch script:
        // it has no batch step, and no end of one to wait for.
        let scripted = !r.desc.interactive && r.het.is_none_or(|h| h.offset == 0);
        // A launch that no agent took (requeued as `Requeued` by `node_failed_job`)
        // started no script.
        let launched = self.audit.failing != Some((id, JobState::Requeued));
        if state == JobState::Running && scripted && launched {
            // Its batch step, killed with it (requeued by an operator or by itself,
            // preempted), as Slurm keeps it for `sacct -D`: CANCELLED by SIGTERM, under
            // that run (lost with a node: CANCELLED, as slurmctld completes the steps of
            // a requeued job, whichever signal ended it).
            effects.push(Effect::PersistStep(Box::new(StepRecord {
                time_limit: None,
                submit_line: None,
                timed_out: false,
                gpus: Vec::new(),
                srun: None,
                cancelled_by: None,
                job_id: id.0,
                step: StepId::Batch,
                name: "batch".into(),
                state: JobState::Cancelled,
                start: r.start_time.unwrap_or(now),
                end: Some(now),
                exit_code: 0,
                signal: if lost_with_node { 0 } else { 15 },
                nodes: self.node_names(r).into_iter().take(1).collect(),
                ntasks: 1,
                cpus: r.alloc.first().map_or(1, |s| s.cpus),
                held_cpus: Vec::new(),
                ended_on: Vec::new(),
                usage: self.usage.merged(id, StepId::Batch),
                run: r.restarts,
                // The batch step stood through every suspension of its job.
                suspended_secs: r.suspension.as_ref().map_or(0, |s| s.secs),
            })));
        }
        if state == JobState::Running {
            effects.extend(self.cancel_open_steps(id, lost_with_node, now));
            let r = &self.jobs[&id];
            // The run is over once nothing of it is left on any of its nodes: its batch
            // script's (unless the script has ended: a victim that left in its grace)
            // and those its steps ran on. Until then it keeps what it holds, and the
            // job waits (`completing.rs`). A heterogeneous job's other components run
            // no script of their own.
            let batch = r.first_node().filter(|_| scripted);
            let told = self.told_to_end(id);
            let mut nodes: Vec<NodeId> = match &r.ending_run {
                Some(e) if told => e.nodes.clone(),
                _ if terminate => batch.into_iter().collect(),
                _ => Vec::new(),
            };
            if !told {
                nodes.extend(self.step_nodes(id, r.restarts, batch));
            }
            if !r.desc.interactive && !nodes.is_empty() {
                // A run already told to end (cancelled, then requeued, as Slurm takes
                // a COMPLETING job) is not told again: its processes had their SIGTERM.
                if !told {
                    let to: Vec<String> = if terminate {
                        self.node_names(r)
                    } else {
                        nodes
                            .iter()
                            .map(|&n| self.conf.cluster.node(n).name.clone())
                            .collect()
                    };
                    effects.push(Effect::Terminate {
                        nodes: to,
                        job_id: id,
                        state: JobState::Requeued,
                    });
                }
                let ending = RunEnding {
                    run: r.restarts,
                    nodes,
                    told: None,
                };
                self.sched.mark_ending(id);
                self.jobs.get_mut(&id).expect("exists").ending_run = Some(Box::new(ending));
            } else {
                self.jobs.get_mut(&id).expect("exists").ending_run = None;
                self.sched.job_ended(id, now);
            }
        }
        let r = self.jobs.get_mut(&id).expect("exists");
        r.state = JobState::Pending;
        r.reason = Reason::NONE;
        r.restarts += 1;
        if let Some(st) = r.service.as_deref_mut() {
            service::requeued(st);
        }
        Arc::make_mut(&mut r.desc).append = true;
        r.alloc.clear();
        r.tres_alloc.clear();
        r.start_time = None;
        r.end_time = None;
        r.accrue_time = None;
        r.exit_code = 0;
        r.signal = 0;
        r.cancelled_by = None;
        r.next_step = 0;
        effects.push(self.persist(id));
        self.outside.insert(id);
        effects
    }

    /// The `srun` steps of job `id`'s current run still running when that run is requeued
    /// end with it, CANCELLED at `now`, as slurmctld completes a requeued job's steps
    /// (their srun, killed with the run or lost with its node, never reports them; they
    /// stayed RUNNING in `sacct -D` for ever). Killed with the run, by the SIGTERM that
    /// ends it (`0:15`, as Slurm 22.05 records them); lost with their node, by no
    /// signal (as the run's batch step).
    fn cancel_open_steps(&mut self, id: JobId, lost_with_node: bool, now: i64) -> Vec<Effect> {
        let run = self.jobs[&id].restarts;
        let open: Vec<(JobId, StepId)> = self
            .steps
            .range((id, StepId::Number(0))..=(id, StepId::LAST))
            .filter(|(_, s)| s.state == JobState::Running && s.run == run)
            .map(|(k, _)| *k)
            .collect();
        let mut effects = Vec::new();
        for k in open {
            let usage = self.usage.merged(id, k.1);
            let s = self.steps.get_mut(&k).expect("listed");
            s.state = JobState::Cancelled;
            s.end = Some(now);
            if !lost_with_node {
                s.signal = 15;
            }
            if usage.is_some() {
                s.usage = usage;
            }
            effects.push(Effect::PersistStep(Box::new(s.clone())));
        }
        effects
    }

    /// CPUs the running steps of job `job`'s current run (started at `run_start`) hold
    /// on node `node`. Steps of an earlier run (a requeued job's, whose srun was killed
    /// before it could report their end) hold nothing.
    fn held_by_steps(&self, job: JobId, run_start: i64, node: &str) -> u32 {
        self.steps
            .range((job, StepId::Batch)..)
            .take_while(|((j, _), _)| *j == job)
            .filter(|(_, s)| s.state == JobState::Running && s.start >= run_start)
            .flat_map(|(_, s)| s.nodes.iter().zip(&s.held_cpus))
            .filter(|(n, _)| n.as_str() == node)
            .map(|(_, c)| *c)
            .sum()
    }

    /// The GPUs a step gets on each of the job's nodes `usable` (indices into the
    /// allocation, `names` theirs), where it runs `tasks` tasks each: asking for some
    /// (`srun --gres=gpu:N`, `--gpus-per-node`, `--gpus` spread over those nodes,
    /// `--gpus-per-task` times its tasks there), the first of the job's there that its
    /// running steps do not hold; asking for none, all of the job's whole GPUs there,
    /// as Slurm copies the job's request to such a step. A step that overlaps takes
    /// them whatever others hold. None for a job without whole GPUs (a shard job's
    /// steps share its shards). Errors: more than the job has there (refused), or than
    /// are free (srun asks again).
    fn step_gpus(
        &self,
        r: &Job,
        req: &StepRequest,
        usable: &[usize],
        tasks: &[u32],
        names: &[String],
    ) -> Result<Option<Vec<Vec<u32>>>, ApiError> {
        let whole = |i: usize| r.alloc.get(i).map_or(0, |s| s.gpus.len()) as u32;
        let nodes = usable.len().max(1) as u32;
        let wanted: Vec<u32> = match (req.gpus_per_node, req.gpus, req.gpus_per_task) {
            (Some(n), _, _) => vec![n; usable.len()],
            (None, Some(total), _) => (0..nodes)
                .map(|k| total / nodes + u32::from(k < total % nodes))
                .collect(),
            (None, None, Some(n)) => tasks.iter().map(|t| t.saturating_mul(n)).collect(),
            (None, None, None) if usable.iter().any(|&i| whole(i) > 0) => {
                usable.iter().map(|&i| whole(i)).collect()
            }
            (None, None, None) => return Ok(None),
        };
        let job = r.id;
        let mut out = Vec::with_capacity(usable.len());
        for (&i, &n) in usable.iter().zip(&wanted) {
            let all = r.gpus_on_node(i);
            if all.len() < n as usize {
                return Err(ApiError::invalid(format!(
                    "Unable to create step for job {job}: Invalid generic resource (gres) specification"
                )));
            }
            let held = if req.overlap {
                Vec::new()
            } else {
                self.gpus_held_by_steps(job, r.start_time.unwrap_or(i64::MIN), &names[i])
            };
            let free: Vec<u32> = all.into_iter().filter(|g| !held.contains(g)).collect();
            if free.len() < n as usize {
                return Err(nodes_busy(job));
            }
            out.push(free[..n as usize].to_vec());
        }
        Ok(Some(out))
    }

    /// The GPUs on `node` that job `job`'s running steps of this run (started from
    /// `run_start`) hold: those that do not overlap.
    fn gpus_held_by_steps(&self, job: JobId, run_start: i64, node: &str) -> Vec<u32> {
        self.steps
            .range((job, StepId::Batch)..)
            .take_while(|((j, _), _)| *j == job)
            .filter(|(_, s)| {
                s.state == JobState::Running && s.start >= run_start && !s.held_cpus.is_empty()
            })
            .flat_map(|(_, s)| s.nodes.iter().zip(&s.gpus))
            .filter(|(n, _)| n.as_str() == node)
            .flat_map(|(_, g)| g.iter().copied())
            .collect()
    }

    /// The id of job `job`'s next step: a heterogeneous job's components number their
    /// steps as one (the next after the highest any of them took), so that a step id
    /// names the same step in every component it runs in (`N+0.S`, `N+1.S`).
    fn next_step_of(&self, job: JobId) -> u32 {
        self.het_members(job)
            .iter()
            .filter_map(|m| self.jobs.get(m))
            .map(|r| r.next_step)
            .max()
            .unwrap_or(0)
    }

    /// A step request from srun inside job `job`: where its tasks run.
    pub fn start_step(
        &mut self,
        job: JobId,
        req: &StepRequest,
        caller: &Caller,
        now: i64,
    ) -> Result<(StepPlan, Vec<Effect>), ApiError> {
        let r = self.job_for(job, caller)?;
        if r.state != JobState::Running || self.told_to_end(job) {
            return Err(ApiError::invalid(format!(
                "Unable to create step for job {job}: Job/step already completing or completed"
            )));
        }
        // As slurmctld (`ESLURM_DISABLED` for a suspended job): srun asks again until
        // the job is resumed.
        if r.suspended() {
            return Err(ApiError::new(
                ErrorCode::Busy,
                format!("Job {job} step creation temporarily disabled, retrying (Requested operation is presently disabled)"),
            ));
        }
        let job_nodes = self.node_names(r);
        // The allocation's nodes the step may use, in the allocation's order: `-w` ones
        // (all of them, first), then the others not `-x`-ed.
        let names = |e: &Option<String>| -> Result<Vec<String>, String> {
            match e.as_deref().filter(|e| !e.is_empty()) {
                None => Ok(Vec::new()),
                Some(e) => sluice_conf::hostlist::expand(e)
                    .map_err(|_| "Invalid node name specified".to_string()),
            }
        };
        let (wanted, unwanted) = (
            names(&req.nodelist).map_err(ApiError::invalid)?,
            names(&req.exclude).map_err(ApiError::invalid)?,
        );
        if wanted
            .iter()
            .any(|w| !job_nodes.contains(w) || unwanted.contains(w))
        {
            return Err(ApiError::invalid(format!(
                "Unable to create step for job {job}: Requested node configuration is not available"
            )));
        }
        let mut usable: Vec<usize> = (0..job_nodes.len())
            .filter(|&i| wanted.contains(&job_nodes[i]))
            .collect();
        usable.extend(
            (0..job_nodes.len())
                .filter(|&i| !wanted.contains(&job_nodes[i]) && !unwanted.contains(&job_nodes[i])),
        );
        let usable_nodes = usable.len() as u32;
        if usable_nodes == 0 {
            return Err(ApiError::invalid(format!(
                "Unable to create step for job {job}: Requested node configuration is not available"
            )));
        }
        let default_nodes = if wanted.is_empty() {
            usable_nodes
        } else {
            wanted.len() as u32
        };
        let mut nodes = req
            .nodes
            .unwrap_or(default_nodes)
            .max(wanted.len() as u32)
            .min(usable_nodes)
            .max(1);
        // Fewer tasks than the allocation's nodes, without -N: one node per task (srun
        // warns "can't run 1 processes on 2 nodes, setting nnodes to 1").
        if let (None, Some(n)) = (req.nodes, req.ntasks) {
            nodes = nodes.min(n.max(wanted.len() as u32)).max(1);
        }
        let usable = &usable[..nodes as usize];
        let ntasks = req.ntasks.unwrap_or_else(|| {
            req.ntasks_per_node
                .map(|n| n * nodes)
                .unwrap_or(if req.nodes.is_some() { nodes } else { r.ntasks })
        });
        let cpt = req.cpus_per_task.unwrap_or(r.cpus_per_task).max(1);
        let cpus: Vec<u32> = usable
            .iter()
            .map(|&i| r.alloc.get(i).map_or(0, |s| s.cpus))
            .collect();
        let too_many = || {
            format!("Unable to create step for job {job}: More processors requested than permitted")
        };
        if ntasks < nodes {
            return Err(ApiError::invalid(too_many()));
        }
        // Block distribution over `room` CPUs per node: fill each node up to what its
        // CPUs hold, in order, after one task each; `None` when they cannot hold it.
        let distribute = |room: &[u32]| -> Option<Vec<u32>> {
            let mut per_node: Vec<u32> = vec![1; nodes as usize];
            let mut left = ntasks - nodes;
            if let Some(n) = req.ntasks_per_node {
                if n * nodes != ntasks {
                    return None;
                }
                per_node = vec![n; nodes as usize];
                left = 0;
            }
            for (i, c) in room.iter().enumerate() {
                let more = (c / cpt).saturating_sub(per_node[i]).min(left);
                per_node[i] += more;
                left -= more;
            }
            (left == 0 && per_node.iter().zip(room).all(|(t, c)| t * cpt <= *c)).then_some(per_node)
        };
        if distribute(&cpus).is_none() {
            return Err(ApiError::invalid(too_many()));
        }
        // What the job's running steps hold is not this step's, unless it overlaps
        // them: then it waits (srun asks again) until they end, as in Slurm.
        let free: Vec<u32> = if req.overlap {
            cpus.clone()
        } else {
            usable
                .iter()
                .zip(&cpus)
                .map(|(&i, c)| {
                    c.saturating_sub(self.held_by_steps(
                        job,
                        r.start_time.unwrap_or(i64::MIN),
                        &job_nodes[i],
                    ))
                })
                .collect()
        };
        let Some(per_node) = distribute(&free) else {
            return Err(nodes_busy(job));
        };
        let step_gpus = self.step_gpus(r, req, usable, &per_node, &job_nodes)?;
        let bind = req
            .gpu_bind
            .as_deref()
            .map(sluice_conf::options::GpuBind::parse)
            .transpose()
            .map_err(ApiError::invalid)?;
        let step = match req.step_id {
            Some(s) => {
                let taken = match req.part {
                    Some(p) => self.steps.contains_key(&(job, StepId::Part(s, p))),
                    None => self.steps.contains_key(&(job, StepId::Number(s))),
                };
                if taken {
                    return Err(ApiError::invalid(format!(
                        "Unable to create step for job {job}: Duplicate job step id"
                    )));
                }
                s
            }
            None => self.next_step_of(job),
        };
        // A part of a heterogeneous step in this allocation: `S+P`.
        let step_key = match req.part {
            Some(p) => StepId::Part(step, p),
            None => StepId::Number(step),
        };
        let mut next_task = 0u32;
        let mut plan_nodes = Vec::new();
        let mut task_gpus = Vec::new();
        for (k, n) in per_node.iter().enumerate() {
            let i = usable[k];
            let name = job_nodes[i].clone();
            let ids: Vec<u32> = (next_task..next_task + n).collect();
            next_task += n;
            let per_task = gpu_env::task_gpus(
                step_gpus.as_ref().map_or(&r.gpus_on_node(i), |g| &g[k]),
                ids.len(),
                req.gpus_per_task,
                bind.as_ref(),
                self.conf.constrain_devices,
                &gpu_env::affinity(&self.conf, &name),
            );
            task_gpus.push(per_task);
            plan_nodes.push((
                name.clone(),
                self.conf.agent_endpoint(&name, &self.state_dir),
                ids,
            ));
        }
        // The step's CPUs on each node: all of the job's there, as its count says, or
        // (`--exact`, `-c`) those its tasks ask for.
        let on_node: Vec<u32> = if req.exact || req.cpus_per_task.is_some() {
            per_node.iter().map(|t| t * cpt).collect()
        } else {
            cpus.clone()
        };
        let record = StepRecord {
            time_limit: req.time_limit,
            submit_line: req.submit_line.clone(),
            timed_out: false,
            srun: req.srun.clone(),
            cancelled_by: None,
            job_id: job.0,
            step: step_key,
            name: req.name.clone(),
            state: JobState::Running,
            start: now,
            end: None,
            exit_code: 0,
            signal: 0,
            nodes: plan_nodes.iter().map(|n| n.0.clone()).collect(),
            ntasks,
            cpus: step_cpus(&cpus, ntasks * cpt, req),
            // None for a step that overlaps.
            held_cpus: if req.overlap {
                Vec::new()
            } else {
                on_node.clone()
            },
            ended_on: Vec::new(),
            usage: None,
            run: self.jobs[&job].restarts,
            suspended_secs: 0,
            gpus: step_gpus.unwrap_or_default(),
        };
        self.note_step_deadline(&record);
        self.steps.insert((job, step_key), record.clone());
        let r = self.jobs.get_mut(&job).expect("checked");
        r.next_step = r.next_step.max(step + 1);
        let effects = vec![self.persist(job), Effect::PersistStep(Box::new(record))];
        Ok((
            StepPlan {
                job_id: job.0,
                step,
                nodes: plan_nodes,
                ntasks,
                task_gpus,
                cpus: on_node,
            },
            effects,
        ))
    }

    /// srun reports a step's end (its highest task exit code, or a signal).
    pub fn end_step(
        &mut self,
        job: JobId,
        step: impl Into<StepId>,
        exit_code: i32,
        signal: i32,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let r = self.job_for(job, caller)?;
        // Its tasks signalled because the job reached its time limit: slurmstepd records
        // such a step CANCELLED, as one scancel ended.
        let past_limit = r
            .time_limit
            .is_some_and(|l| r.start_time.is_some_and(|t| t + l <= now));
        let s = self
            .steps
            .get_mut(&(job, step.into()))
            .ok_or_else(|| ApiError::invalid("Invalid job step id"))?;
        let step = s.step;
        if s.state != JobState::Running {
            return Ok(Vec::new());
        }
        if let Some(u) = self.usage.merged(job, step) {
            s.usage = Some(u);
        }
        s.end = Some(now);
        s.exit_code = exit_code;
        s.signal = signal;
        s.state = if s.timed_out {
            // Ended at its own time limit (`srun -t`), as Slurm records such a step.
            JobState::Timeout
        } else if signal == OOM_SIGNAL && exit_code == 0 {
            JobState::OutOfMemory
        } else if signal != 0 && (exit_code == 0 || past_limit) {
            // As slurmdbd records a step: a wait status that says "signalled" (no
            // task's exit code above it) is CANCELLED, whichever signal it was.
            JobState::Cancelled
        } else if exit_code != 0 || signal != 0 {
            JobState::Failed
        } else {
            JobState::Completed
        };
        Ok(vec![Effect::PersistStep(Box::new(s.clone()))])
    }

    /// An agent says every task of a step on its node has ended. Once every node of the
    /// step has, the step ends as srun would have ended it (as Slurm records it from
    /// its nodes, [`ExitReport::of_nodes`]; out of memory anywhere: `0:125`), so that a step whose srun was
    /// killed, or whose host went away, frees the job's CPUs for its next steps rather
    /// than holding them until the job ends. A step srun already ended is left as it is.
    ///
    /// Errors: the caller is not an agent (root or the SlurmUser), an unknown step, or a
    /// node the step does not run on.
    pub fn step_ended_on(
        &mut self,
        report: &sluice_proto::types::StepEnded,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::access_denied());
        }
        let job = JobId(report.job);
        // A step of an earlier run of a requeued job (its numbers start again at 0).
        if self
            .jobs
            .get(&job)
            .is_some_and(|r| r.restarts != report.run)
        {
            return Ok(Vec::new());
        }
        // The step, or the part of a heterogeneous step that runs on the node (each
        // part runs on nodes of its own).
        let key = self
            .steps
            .range((job, StepId::Part(report.step, 0))..=(job, StepId::Part(report.step, u32::MAX)))
            .find(|(_, s)| s.nodes.contains(&report.node))
            .map_or((job, StepId::Number(report.step)), |(k, _)| *k);
        let s = self
            .steps
            .get_mut(&key)
            .ok_or_else(|| ApiError::invalid("Invalid job step id"))?;
        if !s.nodes.contains(&report.node) {
            return Err(ApiError::new(
                ErrorCode::InvalidNodeName,
                sluice_proto::error::INVALID_NODE_NAME,
            ));
        }
        if let Some(u) = &report.usage {
            self.usage.last(job, report.run, key.1, &report.node, u);
            // Final figures that came after their job's end go when those kept from
            // before it would have ([`usage::KEEP_AFTER_END`] later), not never.
            let runs = self
                .jobs
                .get(&job)
                .is_some_and(|r| matches!(r.state, JobState::Running | JobState::Suspended));
            if !runs {
                self.usage.job_ended(job, now);
            }
            // The step's record takes the node's final figures, also when the step
            // has already ended (its srun said so first, or the job ended).
            s.usage = self.usage.merged(job, key.1);
            if s.state != JobState::Running {
                return Ok(vec![Effect::PersistStep(Box::new(s.clone()))]);
            }
        }
        if s.state != JobState::Running {
            return Ok(Vec::new());
        }
        s.ended_on.retain(|(n, _, _)| *n != report.node);
        s.ended_on
            .push((report.node.clone(), report.exit_code, report.signal));
        if s.nodes
            .iter()
            .any(|n| !s.ended_on.iter().any(|e| e.0 == *n))
        {
            // Kept, so that a restart of the controller before the other nodes' word
            // does not lose this one's.
            return Ok(vec![Effect::PersistStep(Box::new(s.clone()))]);
        }
        // As Slurm records a step from its nodes ([`ExitReport::of_nodes`]).
        let (exit_code, signal) = if s.ended_on.iter().any(|e| e.2 == OOM_SIGNAL) {
            (0, OOM_SIGNAL)
        } else {
            let r =
                sluice_proto::types::ExitReport::of_nodes(s.ended_on.iter().map(|e| (e.1, e.2)));
            (r.exit_code, r.signal)
        };
        tracing::info!(
            "StepId={}.{} ended on all its nodes without word from its srun: exit code {exit_code}, signal {signal}",
            report.job,
            report.step
        );
        self.end_step(job, key.1, exit_code, signal, caller, now)
    }

    /// An agent registered (started, or came back): its node takes work; jobs the
    /// controller believes run there but the agent does not know ended `NODE_FAIL`, or
    /// go back to the queue when they may be requeued; the runs it lists are
    /// reconciled ([`Controller::reconcile_runs`]).
    pub fn agent_registered(
        &mut self,
        node: &str,
        running: &[(JobId, u32)],
        now: i64,
    ) -> Vec<Effect> {
        let reg = Registration {
            node: node.to_string(),
            running: running.to_vec(),
            ..Registration::default()
        };
        self.register_agent(&reg, now).unwrap_or_default()
    }

    /// [`Controller::agent_registered`] for a registration with its address, resources
    /// and slurm.conf digest: checked first ([`Controller::check_registration`]), its
    /// node's state then decided as Slurm's `validate_node_specs` does (too few
    /// resources drain it; `ReturnToService` says whether a DOWN node comes back).
    ///
    /// Errors: an unknown node, or a name another answering agent holds.
    pub fn register_agent(
        &mut self,
        reg: &Registration,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let nid = self.check_registration(reg)?;
        let node = reg.node.as_str();
        let running = reg.running.as_slice();
        let mut effects = Vec::new();
        effects.extend(self.future_node_registered(node));
        self.node_book.quiet.remove(node);
        self.agents_up.insert(node.to_string());
        self.liveness.registered(node, now, reg.from.as_deref());
        effects.extend(self.registration_state(reg, nid, now));
        // Back to its configured state, or the one an operator, the controller or its
        // slurm.conf line set (a DOWN one back in service as `ReturnToService` says).
        self.sched.set_node_state(nid, self.node_state(nid));
        tracing::info!(
            "Node {node} now responding: agent registered with {} job(s) running, state set to {}",
            running.len(),
            match self.node_state(nid) {
                NodeState::Up => "IDLE",
                NodeState::Drain => "DRAIN",
                NodeState::Down => "DOWN",
            }
        );
        let lost: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running && !j.desc.interactive)
            // A heterogeneous job's other components run no script of their own.
            .filter(|j| j.het.is_none_or(|h| h.offset == 0))
            .filter(|j| j.first_node() == Some(nid))
            .filter(|j| !running.contains(&(j.id, j.restarts)))
            .map(|j| j.id)
            .collect();
        for id in lost {
            effects.extend(self.lost_on(id, nid, now));
        }
        effects.extend(self.runs_gone(nid, running, now));
        effects.extend(self.reconcile_runs(node, nid, running));
        effects.extend(self.schedule(now));
        Ok(effects)
    }

    /// What becomes of each run a registering agent lists, as Slurm's
    /// `validate_jobs_on_node`: a run the controller still gives the node goes on (its
    /// batch script's current time limit is sent again: a change made while the agent
    /// was away never reached it); one whose end the controller ordered (a cancel, a
    /// requeue, a preemption) is ended again, the order may not have reached it; any
    /// other is stale (the job ended, was requeued, or runs elsewhere now) and is killed
    /// on the controller's word. Jobs outlive their agent (each runs under a supervisor
    /// of its own), so a restarted agent's list is what runs there.
    fn reconcile_runs(&self, node: &str, nid: NodeId, running: &[(JobId, u32)]) -> Vec<Effect> {
        let mut effects = Vec::new();
        for &(id, run) in running {
            let end = |state: JobState| Effect::EndRun {
                node: node.to_string(),
                job_id: id,
                run,
                state,
            };
            let Some(j) = self.jobs.get(&id) else {
                tracing::warn!("Node {node} runs unknown JobId={id}; killing it");
                effects.push(end(JobState::NodeFail));
                continue;
            };
            if j.restarts != run
                && j.ending_run
                    .as_ref()
                    .is_some_and(|e| e.run == run && e.nodes.contains(&nid))
            {
                effects.push(end(JobState::Requeued));
                continue;
            }
            let ours = j.state == JobState::Running && j.restarts == run && j.on_node(nid);
            if !ours {
                tracing::warn!(
                    "Node {node} runs JobId={id} (run {run}), which the controller no longer \
                     gives it; killing it"
                );
                effects.push(end(JobState::NodeFail));
            } else if j.cancelled_by.is_some() {
                effects.push(end(JobState::Cancelled));
            } else if self
                .preempting
                .get(&id)
                .is_some_and(|p| p.run == run && p.ending)
            {
                effects.push(end(JobState::Preempted));
            } else if !j.desc.interactive && j.first_node() == Some(nid) {
                effects.push(Effect::SetTimeLimit {
                    node: node.to_string(),
                    job_id: id,
                    run,
                    time_limit: j.time_limit,
                });
            }
        }
        effects
    }

    /// A requeued job's previous run has ended: the job may run again.
    fn requeued_run_ended(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        self.run_over(id, now)
    }

    /// Jobs whose ending run `node` has not reported gone, and which is not among
    /// `running` there (its agent restarted without it, or is lost): nothing of that
    /// run is left there.
    fn runs_gone(&mut self, node: NodeId, running: &[(JobId, u32)], now: i64) -> Vec<Effect> {
        let gone: Vec<(JobId, u32)> = self
            .jobs
            .values()
            .filter_map(|j| {
                let e = j.ending_run.as_ref()?;
                (e.nodes.contains(&node) && !running.iter().any(|r| r.0 == j.id && r.1 == e.run))
                    .then_some((j.id, e.run))
            })
            .collect();
        gone.into_iter()
            .flat_map(|(id, run)| {
                let r = &self.jobs[&id];
                if r.state == JobState::Running && r.restarts == run {
                    // Its batch script's end was lost with the node: the node's death
                    // ends it (`node_failed_job`), not this.
                    if r.first_node() == Some(node) {
                        return Vec::new();
                    }
                }
                self.node_gone(id, run, node, now)
            })
            .collect()
    }

    /// Takes no new work to nodes whose agents have not registered with this controller
    /// (started at `now`) yet: after a restart the agents still know the one before, and
    /// would refuse its launches. Their registration gives each node back its state.
    ///
    /// As in Slurm, a node that was up is meanwhile `UNKNOWN` and not responding
    /// (`unk*`): it keeps its jobs, and waiting jobs keep the reasons they would have
    /// with it up (`Resources`, `Priority`, `BeginTime`), not one of nodes that are down
    /// ([`sluice_core::Scheduler::await_node`]). An agent that has not registered within
    /// `SlurmdTimeout` never will as far as the controller knows: its node goes DOWN
    /// ([`Controller::silent_expired`], Reason=`Not responding`), its jobs are requeued
    /// or fail, and jobs needing it say so. A drained node's agent is awaited too: it
    /// goes DOWN beneath its drain (`DOWN+DRAIN`, its operator's reason kept) and its
    /// jobs are lost likewise. Nodes DOWN, FUTURE or powered off (cloud) are not
    /// expected to answer and stay as they are.
    pub fn await_agents(&mut self, now: i64) {
        // Nodes where recovered jobs run. Their agents may have lost the previous
        // controller long ago and retry only every AGENT_RETRY_SECS: they are given
        // that much (and a few seconds) before their jobs are given up, whatever a
        // shorter SlurmdTimeout says.
        let busy: BTreeSet<NodeId> = self
            .jobs
            .values()
            .filter(|j| matches!(j.state, JobState::Running | JobState::Suspended))
            .flat_map(|j| j.alloc.iter().map(|s| s.node))
            .collect();
        let grace = (AGENT_RETRY_SECS + 4 - self.conf.net.slurmd_timeout).max(0);
        for i in 0..self.conf.cluster.nodes.len() {
            let nid = NodeId(i as u32);
            let name = self.conf.cluster.node(nid).name.clone();
            if name.is_empty() || self.agents_up.contains(&name) {
                continue;
            }
            let now = if busy.contains(&nid) {
                now + grace
            } else {
                now
            };
            self.await_agent_as_at_start(nid, now);
        }
    }

    /// Node `nid`, whose agent has not registered, waits for it from `now` as at a start:
    /// one that may take work is `UNKNOWN` ([`Controller::await_agent`]); a drained (or
    /// draining) one takes no work either way, but its agent is awaited as well, and it
    /// goes DOWN beneath its drain if it has not registered within SlurmdTimeout
    /// (Slurm's DOWN+DRAIN), its jobs lost; any other (DOWN, FUTURE, CLOUD) is DOWN
    /// until its agent registers.
    pub(crate) fn await_agent_as_at_start(&mut self, nid: NodeId, now: i64) {
        let name = self.conf.cluster.node(nid).name.clone();
        let awaited = !self.node_future(&name) && !self.node_cloud(&name);
        match self.node_state(nid) {
            NodeState::Up if awaited => self.await_agent(nid, now),
            NodeState::Drain if awaited => {
                self.liveness.awaited(&name, now);
                tracing::info!("node {name} is drained and awaits its agent");
            }
            _ => {
                self.sched.set_node_state(nid, NodeState::Down);
                tracing::info!("node {name} is DOWN until its agent registers");
            }
        }
    }

    /// Node `nid` awaits its agent's first registration from `now` on (see
    /// [`Controller::await_agents`]): `UNKNOWN` and not responding, no new work, DOWN
    /// if its agent has not registered within `SlurmdTimeout`.
    pub(crate) fn await_agent(&mut self, nid: NodeId, now: i64) {
        let name = self.conf.cluster.node(nid).name.clone();
        self.sched.await_node(nid);
        self.liveness.awaited(&name, now);
        tracing::info!(
            "node {name} is UNKNOWN until its agent registers (DOWN if it has not within \
             SlurmdTimeout={}s)",
            self.conf.net.slurmd_timeout
        );
    }

    /// Whether node `name` has had no word from its agent since this controller started
    /// (see [`Controller::await_agents`]).
    pub(crate) fn node_awaited(&self, name: &str) -> bool {
        !self.agents_up.contains(name) && self.liveness.is_awaited(name)
    }

    /// Whether the agent of any node is still awaited since this controller started:
    /// neither registered nor given up (see [`Controller::await_agents`]).
    pub fn agents_awaited(&self) -> bool {
        self.liveness.awaiting_any()
    }

    /// Run `run` of job `id` could not be launched on `node`, whose agent did not take
    /// the order: the job is requeued, or ends `NODE_FAIL` when it may not be. Should the
    /// agent have started it after all (an answer that came too late), that run is
    /// ended there.
    pub fn launch_unreachable(&mut self, node: &str, id: JobId, run: u32, now: i64) -> Vec<Effect> {
        self.diag.jobs.failed += 1;
        let mut effects = vec![Effect::EndRun {
            node: node.to_string(),
            job_id: id,
            run,
            state: JobState::NodeFail,
        }];
        effects.extend(self.launch_refused(id, run, now));
        effects
    }

    /// An agent refused to launch run `run` of job `id` (it is registered with another
    /// controller incarnation, which cannot be this one for long): that run never
    /// starts, so the job is requeued, or ends `NODE_FAIL` when it may not be.
    pub fn launch_refused(&mut self, id: JobId, run: u32, now: i64) -> Vec<Effect> {
        self.diag.jobs.failed += 1;
        match self.jobs.get(&id) {
            // The run never started: it is no node failure for the accounting.
            Some(r) if r.state == JobState::Running && r.restarts == run => {
                self.node_failed_job(id, JobState::Requeued, now)
            }
            _ => Vec::new(),
        }
    }

    /// A node's agent is gone (its socket refuses connections: the agent stopped,
    /// crashed or is being upgraded). Its jobs run on under their supervisors, so
    /// nothing of them changes; the node takes no new work and shows as not responding
    /// (`idle*`, `mix*`, `alloc*`) until its agent registers again, or goes DOWN after
    /// `SlurmdTimeout` ([`Controller::silent_expired`]), as in Slurm.
    pub fn agent_silent(&mut self, node: &str, now: i64) {
        self.not_responding(node, now, "its agent is gone");
    }

    /// `node` is not responding from `now`, for the reason `why` (logged).
    pub(crate) fn not_responding(&mut self, node: &str, now: i64, why: &str) {
        let Some(nid) = self.conf.node_id(node) else {
            return;
        };
        if !self.liveness.silent(node, now) {
            return;
        }
        self.sched.set_node_state(nid, NodeState::Drain);
        self.outside_dirty = true;
        tracing::warn!(
            "Node {node} not responding ({why}); its jobs run on, DOWN after \
             SlurmdTimeout={}s",
            self.conf.net.slurmd_timeout
        );
    }

    /// Nodes silent for `SlurmdTimeout` (0: never) go DOWN, their jobs ending
    /// `NODE_FAIL` or requeued ([`Controller::agent_lost`]).
    pub fn silent_expired(&mut self, now: i64) -> Vec<Effect> {
        self.silent_due(now)
            .into_iter()
            .flat_map(|node| self.agent_lost(&node, now))
            .collect()
    }

    /// The nodes [`Controller::silent_expired`] sets DOWN at `now`. Among them may be
    /// nodes no agent message names (awaited since the start, never pinged): the
    /// listings read them again.
    pub fn silent_due(&self, now: i64) -> Vec<String> {
        let timeout = self.conf.net.slurmd_timeout;
        if timeout <= 0 {
            return Vec::new();
        }
        self.liveness.silent_since(now - timeout)
    }

    /// An agent stopped answering: its node is DOWN and its jobs fail (or requeue).
    pub fn agent_lost(&mut self, node: &str, now: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        let Some(nid) = self.conf.node_id(node) else {
            return effects;
        };
        self.agents_up.remove(node);
        self.liveness.settled(node);
        self.liveness.heard(node);
        self.sched.set_node_state(nid, NodeState::Down);
        tracing::warn!("Nodes {node} not responding, setting DOWN");
        // Slurm's `set_node_down_ptr(node, "Not responding")`: the reason is the
        // controller's (SlurmUser), unless an operator's stands; kept across restarts,
        // and lifted at registration as `ReturnToService` says. A drained node goes
        // DOWN beneath its drain (`DOWN+DRAIN`), the operator's reason kept; one
        // drained by its slurm.conf line without a `Reason=` takes Slurm's.
        let drained = match self.node_overrides.get(node) {
            Some(o) => o.state == "DRAIN" || o.state == DOWN_DRAIN,
            None => self.conf.cluster.node(nid).state == NodeState::Drain,
        };
        let down = if drained { DOWN_DRAIN } else { "DOWN" };
        match self.node_overrides.get(node) {
            None => effects.push(self.set_override(node, down, NOT_RESPONDING, now)),
            Some(o) if o.reason.is_empty() || o.reason.starts_with(NOT_RESPONDING) => {
                effects.push(self.set_override(node, down, NOT_RESPONDING, now))
            }
            Some(o) if o.state == "DRAIN" => {
                let mut o = o.clone();
                o.state = DOWN_DRAIN.into();
                effects.push(self.put_override(node, o));
            }
            Some(_) => {}
        }
        let lost: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running && j.on_node(nid))
            .map(|j| j.id)
            .collect();
        for id in lost {
            effects.extend(self.lost_on(id, nid, now));
        }
        effects.extend(self.runs_gone(nid, &[], now));
        effects
    }

    /// Running job `id` lost what it ran on `node` (the node is declared down, or its
    /// agent came back without it): requeued or failed (`NODE_FAIL`); one already told
    /// to end (`COMPLETING`) ends as it was told, nothing of it being left there.
    fn lost_on(&mut self, id: JobId, node: NodeId, now: i64) -> Vec<Effect> {
        if !self.told_to_end(id) {
            return self.node_failed_job(id, JobState::NodeFail, now);
        }
        let r = &self.jobs[&id];
        let run = r.restarts;
        if r.first_node() != Some(node) {
            return self.node_gone(id, run, node, now);
        }
        // Its batch script's end will not be reported: it ends now, as it was told.
        let report = JobEnded {
            job_id: id.0,
            run,
            node: String::new(),
            state: JobState::NodeFail,
            exit_code: 0,
            signal: 0,
            end: now,
            usage: None,
        };
        self.job_ended(&report, now)
    }

    /// Job `id` lost its node: requeued when it may be (its run recorded as
    /// `ended_as` for `sacct -D`), else ended `NODE_FAIL`.
    fn node_failed_job(&mut self, id: JobId, ended_as: JobState, now: i64) -> Vec<Effect> {
        // A heterogeneous job's component lost with its node takes the whole job with
        // it: the leader (whose script ends every component) is requeued or ended, and
        // with it every component (once only, when several lose nodes).
        let id = match self.jobs[&id].het {
            Some(h) if h.offset > 0 && self.jobs.contains_key(&JobId(h.job_id)) => JobId(h.job_id),
            _ => id,
        };
        let r = &self.jobs[&id];
        if r.state != JobState::Running {
            return Vec::new();
        }
        let requeue = r.desc.requeue.unwrap_or(true) && !r.desc.interactive;
        let run = r.restarts;
        if requeue {
            self.audit.failing = Some((id, ended_as));
            let mut effects = self.requeue_record(id, now).unwrap_or_default();
            self.audit.failing = None;
            // A run that started (`ended_as` NODE_FAIL) is ended on the nodes whose
            // agents are up, as Slurm kills a job on all its nodes before it runs again
            // (a multi-node job whose second node died still runs its batch script on
            // the first, its ranks there hung on their dead peers); the lost nodes get no
            // order. A launch that never happened leaves nothing to end.
            let started = ended_as == JobState::NodeFail;
            for e in &mut effects {
                if let Effect::Terminate { nodes, .. } = e {
                    nodes.retain(|n| started && self.agents_up.contains(n));
                }
            }
            effects.retain(|e| !matches!(e, Effect::Terminate { nodes, .. } if nodes.is_empty()));
            // The job runs again once its nodes report that copy gone; those with no
            // agent up to report it are not waited for, and with no copy, nothing is.
            // (A registering agent that does not list the run is done with by
            // `runs_gone`.)
            let ending = self.jobs[&id].ending_run.is_some();
            if ending && (!started || self.forget_silent_nodes(id)) {
                effects.extend(self.requeued_run_ended(id, now));
            }
            return effects;
        }
        tracing::warn!(
            "Killing JobId={id} on failed node {}",
            self.node_names(&self.jobs[&id]).join(",")
        );
        let report = JobEnded {
            job_id: id.0,
            run,
            node: String::new(),
            state: JobState::NodeFail,
            exit_code: 0,
            signal: 0,
            end: now,
            usage: None,
        };
        self.job_ended(&report, now)
    }

    /// Job `id`'s record, with its pending reason and planned start as the core has them
    /// now.
    pub fn job(&self, id: JobId) -> Option<JobRecord> {
        self.jobs
            .get(&id)
            .map(|r| self.record(r, JobDescription::clone(&r.desc)))
    }

    /// The names of `r`'s nodes, in allocation order.
    fn node_names(&self, r: &Job) -> Vec<String> {
        r.node_ids()
            .map(|n| self.conf.cluster.node(n).name.clone())
            .collect()
    }

    /// Reason `reason` of job `r` as a record prints it: Slurm's code, or for a
    /// partition's access lists Slurm's words naming the list.
    fn reason_text(&self, r: &Job, reason: Reason) -> String {
        self.reason_shown(r, reason).into_owned()
    }

    /// [`Controller::reason_text`] without a copy of the fixed texts (every pending
    /// job's listing entry keeps one).
    fn reason_shown(&self, r: &Job, reason: Reason) -> Cow<'static, str> {
        if reason == Reason::Core(PendingReason::NamedNodesUnavailable) {
            // Slurm's words, then the nodes it names that it could not have; the code
            // alone once the scheduler no longer holds the job (cancelled while it
            // waited), whose nodes are not kept.
            let names = self.unavailable_named(r.id);
            if names.is_empty() {
                return Cow::Borrowed(PendingReason::ReqNodeNotAvail.as_str());
            }
            return Cow::Owned(format!("{}{names}", reason.as_str()));
        }
        let which = match reason {
            Reason::Core(PendingReason::AccountNotAllowed) => NotAllowed::Account,
            Reason::Core(PendingReason::QosNotAllowed) => NotAllowed::Qos,
            other => return Cow::Borrowed(other.as_str()),
        };
        match self.partition_of(&r.partition) {
            Some(p) => {
                let part = self.conf.cluster.partition(p);
                Cow::Owned(part.access.describe(&part.name, which, &r.account, &r.qos))
            }
            None => Cow::Borrowed(reason.as_str()),
        }
    }

    /// The nodes queued job `id` names that the last main pass could not give it, as a
    /// host list (empty when none).
    pub(crate) fn unavailable_named(&self, id: JobId) -> String {
        let names: Vec<&str> = self
            .sched
            .job(id)
            .map(|j| {
                j.unavailable_nodes
                    .iter()
                    .map(|&n| self.conf.cluster.node(n).name.as_str())
                    .collect()
            })
            .unwrap_or_default();
        sluice_conf::hostlist::compress(&names)
    }

    /// Job `r`'s record as the store keeps it: what it holds, with the reason the
    /// controller last set.
    fn stored(&self, r: &Job) -> JobRecord {
        let mut record = r.to_record(
            &self.conf,
            self.reason_text(r, r.reason),
            JobDescription::clone(&r.desc),
        );
        record.preempting = self.preempting_run(r);
        // Accounting shows the state a job was told to end in at once, as Slurm's
        // (`CANCELLED`, `TIMEOUT`, ... with its `End`), while it completes.
        if let Some(told) = r
            .ending_run
            .as_ref()
            .filter(|e| e.run == r.restarts && r.state == JobState::Running)
            .and_then(|e| e.told)
        {
            record.state = told;
        }
        record
    }

    /// [`Effect::Persist`] of job `id` as it stands.
    fn persist(&self, id: JobId) -> Effect {
        Effect::Persist(Box::new(self.stored(&self.jobs[&id])))
    }

    /// The reason pending job `r` waits for now: the core's, while the core queues it.
    fn live_reason(&self, r: &Job) -> Reason {
        if r.state == JobState::Pending && r.ending_run.is_some() {
            // Requeued, its last run still COMPLETING: Slurm shows no reason yet.
            return Reason::NONE;
        }
        match self.sched.job(r.id) {
            Some(j)
                if r.state == JobState::Pending && j.state == sluice_core::JobState::Pending =>
            {
                self.shown_core_reason(j)
            }
            _ => r.reason,
        }
    }

    /// The core's reason for queued job `j` as shown: a job waiting for `Resources` (or
    /// for nodes it names) that asks (`-w`) for a FUTURE node waits as Slurm's does,
    /// `ReqNodeNotAvail, May be reserved for other job`.
    fn shown_core_reason(&self, j: &sluice_core::Job) -> Reason {
        let future = || {
            j.spec.request.nodelist.iter().any(|&n| {
                let name = &self.conf.cluster.node(n).name;
                self.node_future(name) || self.node_cloud(name)
            })
        };
        if matches!(
            j.reason,
            PendingReason::Resources | PendingReason::NamedNodesUnavailable
        ) && future()
        {
            return Reason::Core(PendingReason::ReservedForOther);
        }
        Reason::Core(j.reason)
    }

    /// Job `r`'s record as it is shown (with `desc` as its submission), with the fields
    /// read from elsewhere than the job ([`listing::Live`]): they change on every pass,
    /// and copying them into every job after each pass would cost time in the queue's
    /// length per event.
    fn record(&self, r: &Job, desc: JobDescription) -> JobRecord {
        listing::build(&self.conf, r, &self.live(r), desc)
    }

    /// What job `r`'s record shows that is not the job's own: the core's reason,
    /// expected start and nodes for a queued job, its dependency's status, the
    /// priority shown, a running job's preemption.
    pub(crate) fn live(&self, r: &Job) -> listing::Live {
        let core = self.core_view(r);
        let sched_nodes = if core.expects_nodes {
            self.expected_nodes(r.id)
        } else {
            None
        };
        let (reason, planned_start) = (core.reason, core.planned_start);
        listing::Live {
            core,
            reason: self.reason_shown(r, reason),
            dependency_status: self.dependency_display(r, self.sched.last_pass()),
            // The priority the core orders it by (held jobs: 0, as Slurm shows); a
            // finished job keeps the last one it had, as in Slurm.
            priority: match r.state {
                // Suspended: 0 until resumed, as Slurm shows it.
                JobState::Running if r.suspended() => 0,
                JobState::Pending | JobState::Running
                    if self.priority.multifactor() && !r.held() =>
                {
                    r.priority
                }
                JobState::Pending | JobState::Running if !r.held() => job_priority(r),
                JobState::Pending | JobState::Running => 0,
                _ if r.held() => 0,
                _ if self.priority.multifactor() => r.priority,
                _ => job_priority(r),
            },
            preemption: if r.state == JobState::Running {
                self.preemption_of(r)
            } else {
                None
            },
            planned_start,
            sched_nodes,
        }
    }

    /// What pending job `r`'s record shows from the core, without building text: the
    /// core's reason and expected start while it queues the job (the job's own
    /// otherwise), and whether the forecast names its nodes.
    pub(crate) fn core_view(&self, r: &Job) -> listing::CoreView {
        let mut view = listing::CoreView {
            reason: r.reason,
            planned_start: r.planned_start,
            expects_nodes: false,
        };
        if r.state == JobState::Pending && r.ending_run.is_some() {
            // Requeued, its last run still COMPLETING: Slurm shows no reason yet, but a
            // hold's (`requeuehold`, a job held while it ran).
            view.reason = r.hold.as_ref().map_or(Reason::NONE, Reason::of_hold);
            return view;
        }
        if r.state == JobState::Pending {
            if let Some(j) = self.sched.job(r.id) {
                if j.state == sluice_core::JobState::Pending {
                    view.reason = self.shown_core_reason(j);
                    // As Slurm: a job waiting for its `--begin` time that nothing else
                    // starts yet is shown starting then.
                    let begin = (j.spec.begin > self.sched.last_pass()).then_some(j.spec.begin);
                    view.planned_start = self.expected_start(r.id, j.planned_start).or(begin);
                    view.expects_nodes = self.expects_nodes(r.id);
                }
            }
        }
        view
    }

    /// Forgets jobs that finished at least `MinJobAge` seconds ago, with their steps, as
    /// slurmctld purges its records: they stay in the database (`sacct`), no longer in
    /// memory, `squeue` or `scontrol show job`, and no longer count towards
    /// `MaxJobCount`. An array's record that still carries unstarted tasks is kept.
    /// Returns how many were forgotten. Costs a look at every job in memory: call it
    /// now and then, not on every event.
    pub fn purge(&mut self, now: i64) -> usize {
        let age = self.conf.min_job_age;
        let aged = |j: &Job| {
            j.state.is_finished()
                // A COMPLETING job stays: the core holds its nodes until it is over.
                && j.ending_run.is_none()
                && j.end_time.is_some_and(|e| e + age <= now)
                && j.array_pending.as_ref().is_none_or(|p| p.0.is_empty())
        };
        if !self.jobs.values().any(&aged) {
            return 0;
        }
        // Kept while a pending job's dependency names them (the dependency's outcome
        // is read from them), and an array's tasks all together: its id stands for all
        // of them (scancel, hold, afterok:ARRAY).
        let mut named: BTreeSet<JobId> = BTreeSet::new();
        for j in self.jobs.values().filter(|j| j.state == JobState::Pending) {
            if let Some(Ok(Dependency::All(c) | Dependency::Any(c))) =
                j.desc.dependency.as_deref().map(parse_dependency)
            {
                named.extend(c.iter().flat_map(|c| c.jobs.iter().map(|t| JobId(t.job))));
            }
        }
        let live_arrays: BTreeSet<JobId> = self
            .jobs
            .values()
            .filter(|j| !aged(j))
            .filter_map(|j| j.array.map(|a| a.0))
            .collect();
        let old: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| aged(j))
            .filter(|j| !named.contains(&j.id))
            .filter(|j| match j.array {
                Some((a, _)) => !named.contains(&a) && !live_arrays.contains(&a),
                None => true,
            })
            .map(|j| j.id)
            .collect();
        for id in &old {
            self.jobs.remove(id);
            self.outside.remove(id);
            self.sched.forget_waiting(*id, now);
            let steps: Vec<(JobId, StepId)> = self
                .steps
                .range((*id, StepId::Batch)..)
                .take_while(|(k, _)| k.0 == *id)
                .map(|(k, _)| *k)
                .collect();
            for k in steps {
                self.steps.remove(&k);
            }
        }
        old.len()
    }

    /// Jobs `squeue` shows: pending, running, and those finished less than `MinJobAge`
    /// ago; without their scripts and environments (a job's own record has them), which
    /// are most of a record's size and no listing needs. In
    /// [`JobRecord::list_key`] order: by id, an array's tasks together by index.
    pub fn visible_jobs(&self, now: i64) -> Vec<JobRecord> {
        let mut jobs: Vec<JobRecord> = self
            .jobs
            .values()
            .filter(|j| {
                !j.state.is_finished()
                    || j.end_time.is_some_and(|e| now - e < self.conf.min_job_age)
            })
            .map(|r| self.record(r, r.listed_desc()))
            .collect();
        jobs.sort_by_key(JobRecord::list_key);
        jobs
    }

    /// What `sdiag` shows of the scheduler and the jobs (the server adds the requests
    /// it served).
    pub fn diag_report(&mut self, now: i64) -> DiagReport {
        self.diag.roll(now);
        let count = |state: JobState| self.jobs.values().filter(|j| j.state == state).count();
        DiagReport {
            now,
            since: self.diag.since,
            jobs: self.diag.jobs,
            states_at: now,
            pending: count(JobState::Pending) as u32,
            running: count(JobState::Running) as u32,
            main: self.diag.main,
            backfill: self.diag.backfill,
            ..Default::default()
        }
    }

    /// Clears `sdiag`'s counters (`sdiag -r`).
    pub fn reset_diag(&mut self, now: i64) {
        self.diag.reset(now, true);
    }

    /// Every job and step (for `sacct`), as the store keeps them.
    pub fn accounting(&self) -> (Vec<JobRecord>, Vec<StepRecord>) {
        (
            self.jobs.values().map(|j| self.stored(j)).collect(),
            self.steps.values().cloned().collect(),
        )
    }

    /// What the running jobs hold on each node: CPUs, memory (MiB) and GRES counts,
    /// by node index.
    pub(crate) fn node_usage(&self) -> NodeUsage {
        let n = self.conf.cluster.nodes.len();
        let mut u = NodeUsage {
            cpus: vec![0u32; n],
            mem: vec![0u64; n],
            gres: vec![[0u64; sluice_core::tres::MAX_GRES]; n],
            completing: vec![0; n],
        };
        for j in self.jobs.values() {
            self.count_usage(&mut u, j, true);
        }
        u
    }

    /// Adds (`add`) or takes away what job `j` holds to `u`, if it runs, and the nodes
    /// it is completing on (what [`Controller::node_usage`] counts).
    pub(crate) fn count_usage(&self, u: &mut NodeUsage, j: &Job, add: bool) {
        for node in j.ending_run.iter().flat_map(|e| &e.nodes) {
            let c = &mut u.completing[node.index()];
            *c = if add { *c + 1 } else { *c - 1 };
        }
        if j.state != JobState::Running {
            return;
        }
        let table = &self.conf.cluster.gres;
        let change = |v: &mut u64, by: u64| *v = if add { *v + by } else { *v - by };
        for share in &j.alloc {
            let n = share.node.index();
            u.cpus[n] = if add {
                u.cpus[n] + share.cpus
            } else {
                u.cpus[n] - share.cpus
            };
            change(&mut u.mem[n], j.mem_per_node);
            let gres = &mut u.gres[n];
            if let Some(gpu) = self.gpu_slot {
                change(&mut gres[gpu], share.gpus.len() as u64);
            }
            for (t, count) in &share.gpu_types {
                if let Some(slot) = table.find("gpu", Some(t)) {
                    change(&mut gres[slot], u64::from(*count));
                }
            }
        }
    }

    /// Node `i`'s state as `sinfo` words it, `used` of its CPUs allocated, `maint` the
    /// nodes in a maintenance reservation now.
    pub(crate) fn node_state_word(
        &self,
        i: usize,
        used: u32,
        maint: &BTreeSet<NodeId>,
        completing: bool,
    ) -> &'static str {
        let n = &self.conf.cluster.nodes[i];
        if self.node_future(&n.name) {
            return "future";
        }
        if self.node_cloud(&n.name) {
            return "cloud";
        }
        match self.node_state(NodeId(i as u32)) {
            // As Slurm's node COMPLETING flag, which `sinfo` shows before the rest.
            NodeState::Up if completing && self.agents_up.contains(&n.name) => "completing",
            NodeState::Up if used == 0 && maint.contains(&NodeId(i as u32)) => "maint",
            // DOWN beneath its drain: shown drained, as Slurm's `sinfo` does.
            NodeState::Down if self.node_down_drained(&n.name) => "drained",
            NodeState::Down => "down",
            NodeState::Drain if used > 0 => "draining",
            NodeState::Drain => "drained",
            // Resumed from FUTURE: idle, awaiting its agent (Slurm's IDLE*).
            NodeState::Up
                if !self.agents_up.contains(&n.name)
                    && used == 0
                    && self.node_book.resumed.contains(&n.name) =>
            {
                "idle"
            }
            // Awaiting its agent's first registration (Slurm's UNKNOWN).
            NodeState::Up if self.node_awaited(&n.name) => "unknown",
            NodeState::Up if !self.agents_up.contains(&n.name) => "down",
            NodeState::Up if used == 0 => "idle",
            NodeState::Up if used >= n.capacity.cpus => "allocated",
            NodeState::Up => "mixed",
        }
    }

    /// Whether node `name` is DOWN by an operator's or the controller's say (beneath
    /// its drain or not).
    pub(crate) fn node_overridden_down(&self, name: &str) -> bool {
        self.node_overrides
            .get(name)
            .is_some_and(|o| o.state == "DOWN" || o.state == DOWN_DRAIN)
    }

    /// Whether node `name` is DOWN beneath its drain (see [`DOWN_DRAIN`]).
    pub(crate) fn node_down_drained(&self, name: &str) -> bool {
        self.node_overrides
            .get(name)
            .is_some_and(|o| o.state == DOWN_DRAIN)
    }

    /// Whether node `name`'s agent answers (`sinfo` marks those that do not with `*`).
    pub(crate) fn node_responding(&self, name: &str) -> bool {
        self.agents_up.contains(name)
            && !self.liveness.awaiting(name)
            && !self.liveness.is_silent(name)
    }

    /// Nodes as `sinfo` shows them.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        let usage = self.node_usage();
        let maint = self.maint_nodes();
        (0..self.conf.cluster.nodes.len())
            .filter(|&i| !self.conf.cluster.nodes[i].name.is_empty())
            .map(|i| self.node_info(i, &usage, &maint))
            .collect()
    }

    /// Node `i` as `sinfo` shows it, `usage` what the running jobs hold, `maint` the
    /// nodes in a maintenance reservation now.
    pub(crate) fn node_info(
        &self,
        i: usize,
        usage: &NodeUsage,
        maint: &BTreeSet<NodeId>,
    ) -> NodeInfo {
        let (alloc_cpus, alloc_mem, alloc_gres) = (&usage.cpus, &usage.mem, &usage.gres);
        let n = &self.conf.cluster.nodes[i];
        let cpus = n.capacity.cpus;
        let used = alloc_cpus[i].min(cpus);
        let state = self.node_state_word(i, used, maint, usage.completing[i] > 0);
        let topo = self.conf.topology.get(i).copied().unwrap_or((1, cpus, 1));
        let address = self.conf.node_addresses.get(i);
        // A node's TRES: no `node=` entry; billing only in the configured ones.
        let node_tres =
            |cpus: u64, mem: u64, gres: &[u64; sluice_core::tres::MAX_GRES], billing: bool| {
                let mut t = self.conf.tres(None, cpus, mem, 0, gres);
                t.retain(|(name, _)| billing || name != "billing");
                sluice_proto::types::tres_string(&t)
            };
        let cap_gres = n.capacity.gres.map(u64::from);
        NodeInfo {
            cfg_tres: node_tres(u64::from(cpus), n.capacity.mem_mib, &cap_gres, true),
            alloc_tres: node_tres(u64::from(used), alloc_mem[i], &alloc_gres[i], false),
            name: n.name.clone(),
            state: state.into(),
            // A state without a reason (a line's `State=DRAIN` without `Reason=`, a
            // dynamic node's) shows none, as Slurm's.
            reason: self
                .node_overrides
                .get(&n.name)
                .filter(|o| !o.reason.is_empty())
                .map(|o| o.reason.clone())
                .or_else(|| {
                    // A FUTURE node is not expected to answer (Slurm gives it no reason).
                    // Nor an awaited one, until SlurmdTimeout sets it DOWN.
                    (!self.agents_up.contains(&n.name) && state != "future" && state != "unknown")
                        .then(|| NOT_RESPONDING.into())
                }),
            down: self.node_down_drained(&n.name),
            cpus,
            cpus_alloc: used,
            spec_cpus: n.spec_cpus,
            core_spec_count: self.conf.core_spec_count(i),
            cpu_spec_list: self.conf.cpu_spec_lists.get(i).cloned().unwrap_or_default(),
            memory: n.capacity.mem_mib,
            memory_alloc: alloc_mem[i],
            gres: self.conf.node_gres.get(i).cloned().unwrap_or_default(),
            partitions: self
                .conf
                .cluster
                .partitions
                .iter()
                .filter(|p| p.nodes.contains(&NodeId(i as u32)))
                .map(|p| p.name.clone())
                .collect(),
            sockets: topo.0,
            cores_per_socket: topo.1,
            threads_per_core: topo.2,
            features: self
                .conf
                .cluster
                .features
                .iter()
                .enumerate()
                .filter(|(b, _)| n.features & (1 << b) != 0)
                .map(|(_, f)| f.clone())
                .collect(),
            weight: n.weight,
            agent_up: self.node_responding(&n.name) || self.node_book.quiet.contains(&n.name),
            reason_set: self
                .node_overrides
                .get(&n.name)
                .filter(|o| !o.reason.is_empty())
                .map(|o| (o.uid, o.time)),
            node_addr: address.map_or_else(|| n.name.clone(), |a| a.addr.clone()),
            node_hostname: address.map_or_else(|| n.name.clone(), |a| a.hostname.clone()),
            port: address.and_then(|a| a.port),
            agent_start: self.liveness.registered_at(&n.name),
            last_busy: self.liveness.last_busy(&n.name),
            dynamic: self.node_book.dynamic.contains(&n.name),
        }
    }

    /// Partitions.
    pub fn partitions(&self) -> Vec<PartitionInfo> {
        self.conf
            .cluster
            .partitions
            .iter()
            .enumerate()
            .map(|(pi, p)| PartitionInfo {
                name: p.name.clone(),
                default: p.is_default,
                state: format!("{:?}", p.state).to_ascii_uppercase(),
                max_time: p.max_time,
                default_time: p.default_time,
                nodes: p
                    .nodes
                    .iter()
                    .map(|n| self.conf.cluster.node(*n).name.clone())
                    .collect(),
                max_nodes: p.max_nodes,
                priority_tier: p.priority_tier,
                access: {
                    let a = &p.access;
                    let all =
                        |l: &Option<Vec<String>>| l.as_ref().map_or("ALL".into(), |l| l.join(","));
                    let pick = |allow: &Option<Vec<String>>, deny: &Vec<String>, what: &str| {
                        if allow.is_none() && !deny.is_empty() {
                            (format!("Deny{what}"), deny.join(","))
                        } else {
                            (format!("Allow{what}"), all(allow))
                        }
                    };
                    vec![
                        ("AllowGroups".into(), all(&a.allow_groups)),
                        pick(&a.allow_accounts, &a.deny_accounts, "Accounts"),
                        pick(&a.allow_qos, &a.deny_qos, "Qos"),
                    ]
                },
                qos: p.qos.clone(),
                min_nodes: p.min_nodes,
                exclusive_user: p.exclusive_user,
                oversubscribe: p.oversubscribe.as_string(),
                priority_job_factor: p.priority_job_factor,
                grace_time: p.grace_time,
                preempt_mode: p
                    .preempt_mode
                    .unwrap_or(self.conf.cluster.preempt.mode)
                    .as_str()
                    .to_string(),
                def_mem: self
                    .conf
                    .own_def_mem
                    .get(pi)
                    .copied()
                    .flatten()
                    .map(|m| match m {
                        MemRequest::PerCpu(m) => MemoryRequest::PerCpu(m),
                        MemRequest::PerNode(m) => MemoryRequest::PerNode(m),
                    }),
                tres: {
                    let mut gres = [0u64; sluice_core::tres::MAX_GRES];
                    let (mut cpus, mut mem) = (0u64, 0u64);
                    for n in &p.nodes {
                        let c = self.conf.cluster.node(*n).capacity;
                        cpus += u64::from(c.cpus);
                        mem += c.mem_mib;
                        for (t, g) in gres.iter_mut().zip(c.gres) {
                            *t += u64::from(g);
                        }
                    }
                    let part = PartitionId(pi as u16);
                    let t = self
                        .conf
                        .tres(Some(part), cpus, mem, p.nodes.len() as u64, &gres);
                    sluice_proto::types::tres_string(&t)
                },
            })
            .collect()
    }

    /// Configuration for `scontrol show config`.
    pub fn config(&self) -> ConfigInfo {
        let mut entries = vec![
            ("ClusterName".to_string(), self.conf.cluster_name.clone()),
            ("KillWait".into(), format!("{} sec", self.conf.kill_wait)),
            ("MaxArraySize".into(), self.conf.max_array_size.to_string()),
            ("MaxJobCount".into(), self.conf.max_job_count.to_string()),
            ("MinJobAge".into(), format!("{} sec", self.conf.min_job_age)),
            (
                "SchedulerType".into(),
                if self.conf.fifo {
                    "sched/builtin".into()
                } else {
                    "sched/backfill".into()
                },
            ),
            (
                "StateSaveLocation".into(),
                self.state_dir.display().to_string(),
            ),
        ];
        // Shown even when not set, upper-cased, as Slurm shows it.
        let enforce = self
            .conf
            .settings
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("EnforcePartLimits"))
            .map(|(_, v)| v.to_ascii_uppercase())
            .unwrap_or_else(|| {
                if self.conf.enforce_part_limits {
                    "ALL"
                } else {
                    "NO"
                }
                .into()
            });
        entries.push(("EnforcePartLimits".into(), enforce));
        // Shown even when not set, as Slurm shows them: numbers srun reads.
        let number = |key: &str| {
            self.conf
                .settings
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .and_then(|(_, v)| v.trim().parse::<u32>().ok())
                .unwrap_or(0)
        };
        entries.push(("KillOnBadExit".into(), number("KillOnBadExit").to_string()));
        entries.push(("WaitTime".into(), format!("{} sec", number("WaitTime"))));
        for (k, v) in &self.conf.settings {
            if !entries.iter().any(|(e, _)| e.eq_ignore_ascii_case(k)) {
                entries.push((k.clone(), v.clone()));
            }
        }
        entries.sort_by_key(|e| e.0.to_ascii_lowercase());
        ConfigInfo {
            cluster_name: self.conf.cluster_name.clone(),
            entries,
        }
    }

    /// Forgets jobs finished long ago from the working set (they stay in the database).
    pub fn trim(&mut self, now: i64, keep_secs: i64) {
        let old: Vec<JobId> = self
            .jobs
            .values()
            .filter(|j| j.state.is_finished() && j.end_time.is_some_and(|e| now - e > keep_secs))
            .map(|j| j.id)
            .collect();
        for id in old {
            self.jobs.remove(&id);
        }
    }
}

/// The ids of `records` in [`Job::list_key`] order: an array's tasks by index
/// (whatever ids they hold), other jobs by id.
fn in_list_order<'a>(records: impl Iterator<Item = &'a Job>) -> Vec<JobId> {
    let mut keyed: Vec<((JobId, u32), JobId)> = records.map(|r| (r.list_key(), r.id)).collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, id)| id).collect()
}

/// The CPUs a step holds: as Slurm 22.05 gives them, all of the job's CPUs on the
/// nodes it runs on (`on_nodes`), unless it asks for `--exact` (or for
/// `--cpus-per-task`, which implies it), when it holds what its tasks ask (`asked`).
fn step_cpus(on_nodes: &[u32], asked: u32, req: &StepRequest) -> u32 {
    if req.exact || req.cpus_per_task.is_some() {
        asked
    } else {
        on_nodes.iter().sum::<u32>().max(asked)
    }
}

/// Slurm's answer to a step that does not fit beside its job's running steps now
/// (srun asks again).
fn nodes_busy(job: JobId) -> ApiError {
    ApiError::new(
        ErrorCode::Busy,
        format!(
            "Job {job} step creation temporarily disabled, retrying (Requested nodes are busy)"
        ),
    )
}

/// Slurm's `SLURM_TASKS_PER_NODE` form: `8(x2),4`.
pub fn tasks_per_node_string(counts: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let mut j = i;
        while j + 1 < counts.len() && counts[j + 1] == counts[i] {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}(x{})", counts[i], j - i + 1)
        } else {
            counts[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The variables that describe an allocation, as both a batch script and salloc's
/// command see them: ids, name, nodes (a compressed hostlist), CPUs and tasks per node
/// (`2(x3)` form), partition, account, QOS, where it was submitted from, the cluster,
/// and what was asked per node and task when it was.
pub fn allocation_variables(r: &JobRecord, cluster_name: &str) -> Vec<(String, String)> {
    let nodelist = sluice_conf::hostlist::compress(&r.nodes);
    let id = r.id.to_string();
    let mut v: Vec<(&str, String)> = vec![
        ("SLURM_CLUSTER_NAME", cluster_name.to_string()),
        ("SLURM_JOB_ID", id.clone()),
        ("SLURM_JOBID", id),
        ("SLURM_JOB_NAME", r.desc.name.clone()),
        ("SLURM_JOB_NODELIST", nodelist.clone()),
        ("SLURM_NODELIST", nodelist),
        ("SLURM_JOB_NUM_NODES", r.nodes.len().to_string()),
        ("SLURM_NNODES", r.nodes.len().to_string()),
        (
            "SLURM_JOB_CPUS_PER_NODE",
            tasks_per_node_string(&r.cpus_per_node),
        ),
        (
            "SLURM_TASKS_PER_NODE",
            tasks_per_node_string(&r.tasks_per_node),
        ),
        ("SLURM_JOB_PARTITION", r.partition.clone()),
        ("SLURM_JOB_ACCOUNT", r.account.clone()),
        ("SLURM_JOB_QOS", r.qos.clone()),
        ("SLURM_SUBMIT_DIR", r.desc.submit_dir().to_string()),
        ("SLURM_SUBMIT_HOST", r.desc.submit_host.clone()),
    ];
    if let Some(n) = r.desc.ntasks_per_node {
        v.push(("SLURM_NTASKS_PER_NODE", n.to_string()));
    }
    if let Some(c) = r.desc.cpus_per_task {
        v.push(("SLURM_CPUS_PER_TASK", c.to_string()));
    }
    // The memory asked (salloc sets nothing for a partition's default).
    if let Some(var) = memory_variable(r.desc.memory, r) {
        v.push(var);
    }
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `SLURM_MEM_PER_CPU` or `SLURM_MEM_PER_NODE` for a job with memory request `asked`.
/// A heterogeneous job's variables for each of its components (`records`, in offset
/// order), as Slurm 22.05 sets them in the batch job's environment: each name with
/// `_HET_GROUP_n` and, for the older spelling, `_PACK_GROUP_n`; and the size as
/// `SLURM_HET_SIZE` and `SLURM_PACK_SIZE`.
pub fn het_variables(records: &[JobRecord]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (n, r) in records.iter().enumerate() {
        let mut one: Vec<(&str, String)> = vec![
            ("SLURM_JOB_ACCOUNT", r.account.clone()),
            (
                "SLURM_JOB_CPUS_PER_NODE",
                tasks_per_node_string(&r.cpus_per_node),
            ),
            ("SLURM_JOB_ID", r.id.to_string()),
            ("SLURM_JOB_NAME", r.desc.name.clone()),
            (
                "SLURM_JOB_NODELIST",
                sluice_conf::hostlist::compress(&r.nodes),
            ),
            ("SLURM_JOB_NUM_NODES", r.nodes.len().to_string()),
            ("SLURM_JOB_PARTITION", r.partition.clone()),
            ("SLURM_JOB_QOS", r.qos.clone()),
        ];
        if let Some(resv) = &r.desc.reservation {
            one.push(("SLURM_JOB_RESERVATION", resv.clone()));
        }
        if let Some((name, value)) = memory_variable(r.desc.memory, r) {
            one.push((name, value));
        }
        one.push((
            "SLURM_TASKS_PER_NODE",
            tasks_per_node_string(&r.tasks_per_node),
        ));
        // What sbatch passes on for each component it was given.
        if let Some(c) = r.desc.cpus_per_task {
            one.push(("SLURM_CPUS_PER_TASK", c.to_string()));
        }
        if r.desc.ntasks.is_some() || r.desc.ntasks_per_node.is_some() {
            one.push(("SLURM_NTASKS", r.ntasks.to_string()));
            one.push(("SLURM_NPROCS", r.ntasks.to_string()));
        }
        for (name, value) in one {
            v.push((format!("{name}_PACK_GROUP_{n}"), value.clone()));
            v.push((format!("{name}_HET_GROUP_{n}"), value));
        }
    }
    v.push(("SLURM_PACK_SIZE".into(), records.len().to_string()));
    v.push(("SLURM_HET_SIZE".into(), records.len().to_string()));
    v
}

/// The default memory that applied to each component of a heterogeneous batch job
/// that asked for none (DefMemPerCPU: `SLURM_MEM_PER_CPU_HET_GROUP_n`), as Slurm 22.05
/// passes it to the script.
pub fn het_default_memory(records: &[JobRecord]) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for (n, r) in records.iter().enumerate() {
        if r.desc.memory.is_some() {
            continue;
        }
        if let Some((name, value)) = memory_variable(r.mem_default, r) {
            v.push((format!("{name}_PACK_GROUP_{n}"), value.clone()));
            v.push((format!("{name}_HET_GROUP_{n}"), value));
        }
    }
    v
}

fn memory_variable(asked: Option<MemoryRequest>, r: &JobRecord) -> Option<(&'static str, String)> {
    match asked? {
        MemoryRequest::PerCpu(m) => Some(("SLURM_MEM_PER_CPU", m.to_string())),
        _ if r.mem_per_node > 0 => Some(("SLURM_MEM_PER_NODE", r.mem_per_node.to_string())),
        _ => None,
    }
}

/// The GRES device files of a node (`devices`, its gres.conf devices), each marked with
/// whether a job holding GPUs `gpus` there (indices, as in `gpus_per_node`) may open it,
/// for `ConstrainDevices=yes`. GPU `i` is the `i`-th GPU unit of `devices` in order, as
/// the indices are handed out. The controller tracks only counts of other GRES, not
/// which of their devices a job holds: their files are allowed to a job that asked for
/// that GRES (`--gres=NAME...`) and denied otherwise. A file named by several devices
/// (a shared GRES such as `shard` spreads over the GPUs' files) is listed once, allowed
/// if any of them allows it.
impl Controller {
    /// The GRES device files of running job `id` on its node `node`, with which of them
    /// the job may open (as its batch launch carries them), for agents confining the
    /// job's srun steps on nodes that did not launch its batch script, and in
    /// interactive allocations. `None` without `ConstrainDevices=yes`, or when the job
    /// does not run on that node.
    pub fn job_devices_on(&self, id: JobId, node: &str) -> Option<Vec<DeviceFile>> {
        if !self.conf.constrain_devices {
            return None;
        }
        let r = self.jobs.get(&id)?;
        let nid = self.conf.node_id(node)?;
        let i = r.node_ids().position(|n| n == nid)?;
        Some(device_files(
            self.conf
                .gres_devices
                .get(nid.index())
                .map_or(&[], Vec::as_slice),
            &r.gpus_on_node(i),
            &r.desc,
        ))
    }
}

fn device_files(devices: &[GresDevice], gpus: &[u32], desc: &JobDescription) -> Vec<DeviceFile> {
    // Which GPU each GPU device file belongs to, in the node's GPU order.
    let mut gpu_of: BTreeMap<&str, u32> = BTreeMap::new();
    let mut next_gpu = 0u32;
    for d in devices.iter().filter(|d| d.name == "gpu") {
        for path in &d.files {
            gpu_of.entry(path.as_str()).or_insert(next_gpu);
        }
        next_gpu = next_gpu.saturating_add(u32::try_from(d.count).unwrap_or(u32::MAX));
    }
    let mut files: Vec<DeviceFile> = Vec::new();
    for d in devices {
        for path in &d.files {
            if files.iter().any(|f| f.path == *path) {
                continue;
            }
            // A GPU's file is the job's only with that GPU (whole, or its shards come
            // from it): asking for a GRES spread over the GPUs' files (`shard`) by name
            // opens none of them. Other GRES files go with the GRES's name.
            let gpu = gpu_of.get(path.as_str()).copied();
            let allowed = match gpu {
                Some(i) => gpus.contains(&i),
                None => desc.gres.iter().any(|g| g.name == d.name && g.count > 0),
            };
            files.push(DeviceFile {
                path: path.clone(),
                gpu,
                allowed,
            });
        }
    }
    files
}

/// `SLURM_WORKING_CLUSTER` as slurmctld sets it for a batch job:
/// `CLUSTER:CONTROLLER_ADDR:PORT:PROTOCOL:SELECT`, with Slurm 22.05's protocol version
/// (9728) and the number of `select/cons_tres` (109), whose allocations Sluice's are.
pub fn working_cluster(conf: &ClusterConfig) -> String {
    let host = conf
        .net
        .controllers
        .first()
        .map_or_else(crate::config::this_host, |c| c.addr.clone());
    format!(
        "{}:{host}:{}:9728:109",
        conf.cluster_name, conf.net.slurmctld_port
    )
}

/// The environment of a job's batch script (Slurm's variables, on top of the
/// submitter's exported environment: the record's, which the controller's records
/// leave empty, so that a launch order leaves the controller with Slurm's variables
/// only, completed by [`BatchScript::complete`]).
pub fn batch_environment(
    r: &JobRecord,
    conf: &ClusterConfig,
    state_dir: &Path,
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let first = r.nodes.first().cloned().unwrap_or_default();
    env.extend(allocation_variables(r, &conf.cluster_name));
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    // A batch job also has the partition's default memory that applied to it
    // (DefMemPerCPU: `SLURM_MEM_PER_CPU`), as slurmd passes the job's memory on.
    if r.desc.memory.is_none() {
        if let Some((k, v)) = memory_variable(r.mem_default, r) {
            set(k, v);
        }
    }
    // Only for a task count asked (`-n`, or `--ntasks-per-node` times the nodes), as
    // sbatch passes it on; a job given neither has none.
    if r.desc.ntasks.is_some() || r.desc.ntasks_per_node.is_some() {
        set("SLURM_NTASKS", r.ntasks.to_string());
        set("SLURM_NPROCS", r.ntasks.to_string());
    }
    set(
        "SLURM_CPUS_ON_NODE",
        r.cpus_per_node.first().copied().unwrap_or(1).to_string(),
    );
    set("SLURM_JOB_UID", r.uid.to_string());
    set("SLURM_JOB_USER", r.user.clone());
    set("SLURM_JOB_GID", r.gid.to_string());
    set("SLURM_NODEID", "0".into());
    set("SLURM_PROCID", "0".into());
    set("SLURM_LOCALID", "0".into());
    set("SLURM_GTIDS", "0".into());
    set("SLURM_TOPOLOGY_ADDR", first.clone());
    set("SLURM_TOPOLOGY_ADDR_PATTERN", "node".into());
    set("SLURMD_NODENAME", first.clone());
    // What slurmd sets for every batch script, over the submitter's.
    set("ENVIRONMENT", "BATCH".into());
    set("HOSTNAME", first);
    // Node aliases exist only for cloud nodes, which Sluice does not have.
    set("SLURM_NODE_ALIASES", "(null)".into());
    set("SLURM_WORKING_CLUSTER", working_cluster(conf));
    set(
        "SLURM_JOB_START_TIME",
        r.start_time.unwrap_or(0).to_string(),
    );
    if let Some(limit) = r.time_limit {
        set(
            "SLURM_JOB_END_TIME",
            (r.start_time.unwrap_or(0) + limit).to_string(),
        );
    }
    if r.restarts > 0 {
        set("SLURM_RESTART_COUNT", r.restarts.to_string());
    }
    if let Some((array, task)) = r.array {
        set("SLURM_ARRAY_JOB_ID", array.to_string());
        set("SLURM_ARRAY_TASK_ID", task.to_string());
        let tasks = r
            .desc
            .array
            .as_ref()
            .map(|a| a.0.clone())
            .unwrap_or_default();
        set("SLURM_ARRAY_TASK_COUNT", tasks.len().to_string());
        set(
            "SLURM_ARRAY_TASK_MIN",
            tasks.first().copied().unwrap_or(task).to_string(),
        );
        set(
            "SLURM_ARRAY_TASK_MAX",
            tasks.last().copied().unwrap_or(task).to_string(),
        );
        if let Some(step) = r.desc.array.as_ref().and_then(|a| {
            (a.0.len() > 1).then(|| a.0.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(1))
        }) {
            set("SLURM_ARRAY_TASK_STEP", step.to_string());
        }
    }
    // `--gpus` and `--gpus-per-task` as asked: `2`, or `a100:2` (srun inside the job
    // takes its default `--gpus-per-task` from the latter).
    for (name, asked) in [
        ("SLURM_GPUS", &r.desc.gpus),
        ("SLURM_GPUS_PER_TASK", &r.desc.gpus_per_task),
    ] {
        if let Some((gtype, n)) = asked {
            set(
                name,
                gtype.as_ref().map_or(n.to_string(), |t| format!("{t}:{n}")),
            );
        }
    }
    let gpus = r.gpus_per_node.first().cloned().unwrap_or_default();
    if !gpus.is_empty() {
        let list = gpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        set("SLURM_JOB_GPUS", list.clone());
        set("SLURM_GPUS_ON_NODE", gpus.len().to_string());
        set("CUDA_VISIBLE_DEVICES", list.clone());
        set("ROCR_VISIBLE_DEVICES", list.clone());
        set("GPU_DEVICE_ORDINAL", list.clone());
        set("ZE_AFFINITY_MASK", list);
    }
    for (k, v) in gpu_env::shard_variables(r) {
        set(k, v);
    }
    set(
        sluice_proto::paths::STATE_DIR_ENV,
        state_dir.display().to_string(),
    );
    launch_environment(r.desc.environment.clone(), env.into_iter().collect())
}

mod arrays;
pub(crate) mod audit;
mod cancel;
mod completing;
mod dependency;
mod diag;
pub mod explain;
mod explain_text;
mod field_limits;
mod forecast;
pub mod gpu_env;
mod idle_gpus;
mod job;
mod job_table;
pub mod listing;
mod liveness;
mod metrics;
pub mod node_changes;
mod partition_update;
mod preempt;
mod priority;
mod reason;
mod requeue;
pub mod reservations;
mod running_steps;
mod script;
mod service;
mod shards;
mod step_limits;
mod suspend;

/// A job's least node count and its tasks, as its description asks them: at least one
/// node, and every node `-w` lists; the tasks asked (`-n`, else `--ntasks-per-node`
/// times the nodes, else one a node), never fewer than the nodes.
pub(crate) fn job_size(desc: &JobDescription, listed: u32) -> (u32, u32) {
    let min_nodes = desc.nodes.map_or(1, |n| n.0).max(listed);
    let ntasks = desc
        .ntasks
        .or_else(|| desc.ntasks_per_node.map(|n| n * min_nodes))
        .unwrap_or(min_nodes)
        .max(min_nodes);
    (min_nodes, ntasks)
}

#[cfg(test)]
pub(crate) mod tests;
mod update;
mod usage;

pub use cancel::{CancelOutcome, TRANSITION};
pub use forecast::ForecastWork;
pub use job::{Job, NodeShare, RunEnding, Shared};
pub use liveness::{Registration, NOT_RESPONDING};
pub use reason::Reason;
pub use script::{launch_environment, script_key, BatchScript};
pub use update::{NodeOverride, BAD_LIMIT, DOWN_DRAIN, REASON_NEEDED};

#[cfg(test)]
mod device_tests {
    use super::*;
    use sluice_conf::gres_conf;
    use sluice_proto::types::GresRequest;

    /// The devices of one node: three GPUs of two types, shards over the first two
    /// GPUs' files, and a NIC.
    fn devices() -> Vec<GresDevice> {
        let slurm = sluice_conf::slurm_conf::parse_str(
            "ClusterName=c\nGresTypes=gpu,shard,nic\n\
             NodeName=n1 CPUs=8 Gres=gpu:a100:2,gpu:h100:1,shard:4,nic:1\n\
             PartitionName=p Nodes=n1 Default=YES\n",
            Path::new("slurm.conf"),
        )
        .unwrap();
        let gres = gres_conf::parse_str(
            "Name=gpu Type=a100 File=/dev/nvidia[0-1]\n\
             Name=gpu Type=h100 File=/dev/nvidia2\n\
             Name=shard Count=4 File=/dev/nvidia[0-1]\n\
             Name=nic File=/dev/infiniband/uverbs0\n",
            Path::new("gres.conf"),
        )
        .unwrap();
        gres_conf::resolve(&slurm, &gres).unwrap().nodes.remove(0)
    }

    fn file(path: &str, gpu: Option<u32>, allowed: bool) -> DeviceFile {
        DeviceFile {
            path: path.into(),
            gpu,
            allowed,
        }
    }

    #[test]
    fn a_job_may_open_the_files_of_its_gpus_only() {
        let devices = devices();
        assert_eq!(
            device_files(&devices, &[1, 2], &JobDescription::default()),
            [
                file("/dev/nvidia0", Some(0), false),
                file("/dev/nvidia1", Some(1), true),
                file("/dev/nvidia2", Some(2), true),
                file("/dev/infiniband/uverbs0", None, false),
            ]
        );
        // No GPUs: every file denied.
        assert!(device_files(&devices, &[], &JobDescription::default())
            .iter()
            .all(|f| !f.allowed));
    }

    /// A shard job opens the file of the GPU its shards come from, never the other GPUs'
    /// (which `shard`'s own gres.conf line also names); a NIC's file goes with asking
    /// for the NIC.
    #[test]
    fn other_gres_files_are_allowed_to_jobs_that_asked_for_that_gres() {
        let devices = devices();
        let desc = JobDescription {
            gres: vec![
                GresRequest {
                    name: "shard".into(),
                    gres_type: None,
                    count: 1,
                },
                GresRequest {
                    name: "nic".into(),
                    gres_type: None,
                    count: 1,
                },
            ],
            ..JobDescription::default()
        };
        let allowed = |gpus: &[u32]| -> Vec<String> {
            device_files(&devices, gpus, &desc)
                .into_iter()
                .filter(|f| f.allowed)
                .map(|f| f.path)
                .collect()
        };
        assert_eq!(allowed(&[]), ["/dev/infiniband/uverbs0"]);
        assert_eq!(allowed(&[1]), ["/dev/nvidia1", "/dev/infiniband/uverbs0"]);
    }

    /// A controller over one node `n1` of slurm.conf's `gres` with gres.conf `gres_conf`.
    fn controller(gres: &str, gres_conf: &str) -> Controller {
        let slurm = sluice_conf::slurm_conf::parse_str(
            &format!(
                "ClusterName=c\nGresTypes=gpu\nNodeName=n1 CPUs=8 RealMemory=1000 Gres={gres}\n\
                 PartitionName=p Nodes=n1 Default=YES MaxTime=1:00:00\n"
            ),
            Path::new("slurm.conf"),
        )
        .unwrap();
        let mut conf = ClusterConfig::from_slurm_conf(&slurm, &[]);
        let gres = gres_conf::parse_str(gres_conf, Path::new("gres.conf")).unwrap();
        conf.gres_devices = gres_conf::resolve(&slurm, &gres).unwrap().nodes;
        Controller::new(conf, Path::new("/s"), vec![], vec![], 0)
    }

    /// Submits a one-task job asking `--gres=gpu[:TYPE]:N` and runs a pass; its id.
    fn gpu_job(c: &mut Controller, gpu_type: Option<&str>, n: u32, next: &mut u64) -> JobId {
        let d = JobDescription {
            name: "job".into(),
            ntasks: Some(1),
            time_limit: Some(Some(60)),
            work_dir: "/home/alice".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            gres: vec![GresRequest {
                name: "gpu".into(),
                gres_type: gpu_type.map(str::to_string),
                count: n,
            }],
            ..JobDescription::default()
        };
        let caller = Caller {
            uid: 1000,
            gid: 1000,
            admin: false,
        };
        let p = c.prepare(d, &caller, "alice", "alice", 0).unwrap();
        let id = JobId(*next);
        *next += p.ids();
        c.accept(p.jobs(id), 0);
        c.schedule(0);
        id
    }

    fn gpus_of(c: &Controller, id: JobId) -> (JobState, Vec<Vec<u32>>) {
        let r = c.job(id).unwrap();
        (r.state, r.gpus_per_node)
    }

    /// Indices 0-1 are a100, 2-3 v100: typed requests get their type's indices, an
    /// untyped one the core's first type with a GPU free.
    #[test]
    fn typed_requests_get_gpus_of_their_type() {
        let mut c = controller(
            "gpu:a100:2,gpu:v100:2",
            "Name=gpu Type=a100 File=/dev/nvidia[0-1]\nName=gpu Type=v100 File=/dev/nvidia[2-3]\n",
        );
        let mut next = 1;
        let v100 = gpu_job(&mut c, Some("v100"), 1, &mut next);
        assert_eq!(gpus_of(&c, v100), (JobState::Running, vec![vec![2]]));
        let any = gpu_job(&mut c, None, 1, &mut next);
        assert_eq!(gpus_of(&c, any), (JobState::Running, vec![vec![0]]));
        let a100 = gpu_job(&mut c, Some("a100"), 1, &mut next);
        assert_eq!(gpus_of(&c, a100), (JobState::Running, vec![vec![1]]));
        // Both a100 taken: an untyped job gets the v100 left.
        let last = gpu_job(&mut c, None, 1, &mut next);
        assert_eq!(gpus_of(&c, last), (JobState::Running, vec![vec![3]]));
    }

    /// NVLinked pairs (0,2) and (1,3): a 2-GPU job gets a linked pair; with GPU 2 held
    /// by a 1-GPU job, the next 1-GPU job takes 0, its broken pair's other half.
    #[test]
    fn gpus_are_chosen_by_nvlink() {
        let links = "Name=gpu File=/dev/nvidia0 Links=-1,0,2,0\n\
                     Name=gpu File=/dev/nvidia1 Links=0,-1,0,2\n\
                     Name=gpu File=/dev/nvidia2 Links=2,0,-1,0\n\
                     Name=gpu File=/dev/nvidia3 Links=0,2,0,-1\n";
        let mut c = controller("gpu:4", links);
        let mut next = 1;
        let pair = gpu_job(&mut c, None, 2, &mut next);
        assert_eq!(gpus_of(&c, pair), (JobState::Running, vec![vec![0, 2]]));

        let mut c = controller("gpu:4", links);
        let mut next = 1;
        // All free: the first one-GPU job breaks pair (0,2) at its lowest index...
        let one = gpu_job(&mut c, None, 1, &mut next);
        assert_eq!(gpus_of(&c, one), (JobState::Running, vec![vec![0]]));
        // ...the second completes that pair's use, leaving (1,3) whole.
        let two = gpu_job(&mut c, None, 1, &mut next);
        assert_eq!(gpus_of(&c, two), (JobState::Running, vec![vec![2]]));
        let pair = gpu_job(&mut c, None, 2, &mut next);
        assert_eq!(gpus_of(&c, pair), (JobState::Running, vec![vec![1, 3]]));
    }

    /// An untyped job that got a v100 (the a100s were busy) still counts as a v100
    /// after a restart, when a fresh choice on the idle node would count an a100.
    #[test]
    fn a_restored_job_counts_against_the_type_it_holds() {
        let gres_conf =
            "Name=gpu Type=a100 File=/dev/nvidia[0-1]\nName=gpu Type=v100 File=/dev/nvidia[2-3]\n";
        let mut c = controller("gpu:a100:2,gpu:v100:2", gres_conf);
        let mut next = 1;
        let both = gpu_job(&mut c, Some("a100"), 2, &mut next);
        let any = gpu_job(&mut c, None, 1, &mut next);
        assert_eq!(gpus_of(&c, both).1, vec![vec![0, 1]]);
        assert_eq!(gpus_of(&c, any).1, vec![vec![2]]);
        // Restart with only the untyped job running.
        let record = c.job(any).unwrap();
        let fresh = controller("gpu:a100:2,gpu:v100:2", gres_conf);
        let mut c = Controller::new(fresh.conf, Path::new("/s"), vec![record], vec![], 0);
        let mut next = any.0 + 1;
        // Both a100 are free; one v100 is, not two.
        let a100s = gpu_job(&mut c, Some("a100"), 2, &mut next);
        assert_eq!(gpus_of(&c, a100s), (JobState::Running, vec![vec![0, 1]]));
        let v100s = gpu_job(&mut c, Some("v100"), 2, &mut next);
        assert_eq!(gpus_of(&c, v100s), (JobState::Pending, vec![]));
    }

    #[test]
    fn node_gpus_number_units_as_device_files_do() {
        let gpus = crate::config::node_gpus(&devices(), 4);
        let types: Vec<Option<&str>> = gpus.iter().map(|g| g.gpu_type.as_deref()).collect();
        assert_eq!(types, [Some("a100"), Some("a100"), Some("h100"), None]);
    }

    #[test]
    fn count_only_gpus_take_their_indices_without_files() {
        let slurm = sluice_conf::slurm_conf::parse_str(
            "ClusterName=c\nGresTypes=gpu\nNodeName=n1 CPUs=8 Gres=gpu:2\n\
             PartitionName=p Nodes=n1 Default=YES\n",
            Path::new("slurm.conf"),
        )
        .unwrap();
        let devices = gres_conf::GresLayout::from_slurm_conf(&slurm)
            .nodes
            .remove(0);
        assert_eq!(
            device_files(&devices, &[0, 1], &JobDescription::default()),
            []
        );
    }
}
