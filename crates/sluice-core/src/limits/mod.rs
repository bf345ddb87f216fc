//! Accounting limits: association and QOS limits as Slurm enforces them
//! (`AccountingStorageEnforce=limits`, `safe`), and the usage they are checked against.
//!
//! The caller describes the accounting database once ([`AccountLimits`]: associations
//! with their parents and own limits, QOS with their limits and flags, each partition's
//! QOS) and again whenever it changes ([`crate::Scheduler::set_account_limits`]); each
//! job names its association and QOS ([`JobAcct`] in [`crate::JobSpec`]). The core
//! counts what every association, QOS, QOS user and QOS account has pending and
//! running, and the TRES-minutes they have used, and decides:
//!
//! - at submission ([`crate::Scheduler::check`]): the submit limits (`GrpSubmitJobs`,
//!   `MaxSubmitJobs`, `MaxSubmitJobsPerUser`, `MaxSubmitJobsPerAccount`) refuse a job;
//!   with a QOS flagged `DenyOnLimit`, so does a job that could never run within a
//!   `Max*` limit (per job, per node, wall time, or alone over a group or per-user
//!   limit);
//! - at every pass ([`check::hold_reason`]): a job that would break a limit if it started
//!   now stays pending with Slurm's reason (`AssocGrpGRES`, `QOSMaxJobsPerUserLimit`,
//!   ... see [`reason`]). Such a job is skipped: it blocks no lower-priority job and
//!   gets no backfill reservation.
//!
//! Precedence is Slurm's: the job's QOS and its partition's QOS first (the partition's
//! first unless the job's QOS has `OverPartQOS`), a limit set by the first hiding the
//! same limit of the second; then the association, whose limits count only where no QOS
//! set the same limit (per TRES for TRES limits). `Grp*` limits are checked at every
//! level up to `root`, each against its whole subtree's usage; `Max*` limits at the
//! job's own association, with the value it inherits from the nearest parent setting it.
//!
//! Deviations from Slurm, on purpose or for now:
//! - TRES are counted from the request (tasks × CPUs per task, memory, `min_nodes`
//!   nodes, GRES per node × nodes) when a job is checked, and from its allocation once it
//!   runs; Slurm checks a second time after node selection (a `--exclusive` job may get
//!   more than it asked). `billing` is the job's CPU count (Slurm's default without
//!   `TRESBillingWeights`), `energy` is never charged.
//! - `GrpWall` is not enforced, nor per-user `MaxTRESRunMinsPerUser`-style limits.
//! - Used TRES-minutes (for `GrpTRESMins`) accrue continuously from running jobs' held
//!   TRES and decay only when the caller says so ([`crate::Scheduler::decay_limit_usage`]),
//!   as Slurm's `usage_tres_raw`; QOS with `NoDecay` keep theirs.

pub mod acct;
pub mod check;
pub mod reason;
pub mod usage;

use std::collections::BTreeMap;

use crate::job::{JobRequest, MemRequest};
use crate::time::Secs;
use crate::tres::{GresSlot, MAX_GRES};

pub use acct::{AssocId, JobAcct, QosId};

/// A trackable resource as limits count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TresKind {
    /// Processors.
    Cpu,
    /// Memory, MiB.
    Mem,
    /// Energy, joules (never charged: no job reports any).
    Energy,
    /// Nodes.
    Node,
    /// Billing units (the CPU count, see the module docs).
    Billing,
    /// A GRES slot of the cluster's [`crate::GresTable`] (`gres/gpu`, `gres/gpu:a100`).
    Gres(GresSlot),
}

/// How many TRES kinds a [`TresCounts`] holds: five fixed ones and every GRES slot.
pub const NTRES: usize = 5 + MAX_GRES;

impl TresKind {
    /// The kind's index in a [`TresCounts`].
    pub fn index(self) -> usize {
        match self {
            TresKind::Cpu => 0,
            TresKind::Mem => 1,
            TresKind::Energy => 2,
            TresKind::Node => 3,
            TresKind::Billing => 4,
            TresKind::Gres(s) => 5 + s.min(MAX_GRES - 1),
        }
    }
}

/// A count of every TRES kind, indexed by [`TresKind::index`].
pub type TresCounts = [u64; NTRES];

/// Limits on some TRES: `(kind, count)`, at most one per kind. An absent kind is not
/// limited.
pub type TresLimits = Vec<(TresKind, u64)>;

/// The limit on `kind` in `l`, if any.
pub fn tres_limit(l: &TresLimits, kind: TresKind) -> Option<u64> {
    l.iter().find(|(k, _)| *k == kind).map(|(_, n)| *n)
}

/// Limits of an association or a QOS (Slurm's names; unset is `None` or an absent
/// TRES). Wall times are in seconds. The `*_per_user` and `*_per_account` ones exist
/// for QOS only; `max_jobs` and `max_submit_jobs` for associations only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `GrpTRES`: TRES that running jobs may hold together.
    pub grp_tres: TresLimits,
    /// `GrpTRESMins`: TRES-minutes all jobs may ever use (used minutes decay).
    pub grp_tres_mins: TresLimits,
    /// `GrpTRESRunMins`: TRES-minutes running jobs may still have to run, together.
    pub grp_tres_run_mins: TresLimits,
    /// `GrpJobs`: running jobs together.
    pub grp_jobs: Option<u32>,
    /// `GrpSubmitJobs`: pending and running jobs together.
    pub grp_submit_jobs: Option<u32>,
    /// `MaxTRESPerJob`.
    pub max_tres_per_job: TresLimits,
    /// `MaxTRESPerNode`.
    pub max_tres_per_node: TresLimits,
    /// `MaxTRESMinsPerJob`: TRES × time limit of one job.
    pub max_tres_mins_per_job: TresLimits,
    /// `MaxJobs` (associations): running jobs of the association.
    pub max_jobs: Option<u32>,
    /// `MaxSubmitJobs` (associations): pending and running jobs of the association.
    pub max_submit_jobs: Option<u32>,
    /// `MaxWallDurationPerJob`, seconds.
    pub max_wall: Option<Secs>,
    /// `MaxTRESPerUser` (QOS).
    pub max_tres_per_user: TresLimits,
    /// `MaxJobsPerUser` (QOS).
    pub max_jobs_per_user: Option<u32>,
    /// `MaxSubmitJobsPerUser` (QOS).
    pub max_submit_jobs_per_user: Option<u32>,
    /// `MaxTRESPerAccount` (QOS).
    pub max_tres_per_account: TresLimits,
    /// `MaxJobsPerAccount` (QOS).
    pub max_jobs_per_account: Option<u32>,
    /// `MaxSubmitJobsPerAccount` (QOS).
    pub max_submit_jobs_per_account: Option<u32>,
    /// `MinTRESPerJob` (QOS): TRES a job must ask at least.
    pub min_tres_per_job: TresLimits,
}

impl Limits {
    /// Adds to `self` every limit `other` sets that `self` does not: after it, `self`
    /// says which limits either sets (a mask of limits already decided).
    pub fn cover(&mut self, other: &Limits) {
        fn tres(a: &mut TresLimits, b: &TresLimits) {
            for &(k, n) in b {
                if tres_limit(a, k).is_none() {
                    a.push((k, n));
                }
            }
        }
        tres(&mut self.grp_tres, &other.grp_tres);
        tres(&mut self.grp_tres_mins, &other.grp_tres_mins);
        tres(&mut self.grp_tres_run_mins, &other.grp_tres_run_mins);
        tres(&mut self.max_tres_per_job, &other.max_tres_per_job);
        tres(&mut self.max_tres_per_node, &other.max_tres_per_node);
        tres(
            &mut self.max_tres_mins_per_job,
            &other.max_tres_mins_per_job,
        );
        tres(&mut self.max_tres_per_user, &other.max_tres_per_user);
        tres(&mut self.max_tres_per_account, &other.max_tres_per_account);
        tres(&mut self.min_tres_per_job, &other.min_tres_per_job);
        self.grp_jobs = self.grp_jobs.or(other.grp_jobs);
        self.grp_submit_jobs = self.grp_submit_jobs.or(other.grp_submit_jobs);
        self.max_jobs = self.max_jobs.or(other.max_jobs);
        self.max_submit_jobs = self.max_submit_jobs.or(other.max_submit_jobs);
        self.max_wall = self.max_wall.or(other.max_wall);
        self.max_jobs_per_user = self.max_jobs_per_user.or(other.max_jobs_per_user);
        self.max_submit_jobs_per_user = self
            .max_submit_jobs_per_user
            .or(other.max_submit_jobs_per_user);
        self.max_jobs_per_account = self.max_jobs_per_account.or(other.max_jobs_per_account);
        self.max_submit_jobs_per_account = self
            .max_submit_jobs_per_account
            .or(other.max_submit_jobs_per_account);
    }
}

/// Which parts of `AccountingStorageEnforce` concern limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Enforce {
    /// `limits`: association and QOS limits hold jobs.
    pub limits: bool,
    /// `safe`: with `GrpTRESMins`, a job starts only if its whole time limit fits in
    /// what remains.
    pub safe: bool,
}

/// One association: its place in the tree and its own limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assoc {
    /// The parent association (`None` for `root`).
    pub parent: Option<AssocId>,
    /// A user's association (not an account's).
    pub user: bool,
    /// Its own limits (the `Max*` ones are inherited from the nearest parent setting
    /// them; the core does the inheriting).
    pub limits: Limits,
}

/// The QOS flags that concern limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QosFlags {
    /// `DenyOnLimit`: a job over a `Max*` limit is refused at submission.
    pub deny_on_limit: bool,
    /// `NoReserve`: the backfill pass plans no reservation for the QOS's jobs.
    pub no_reserve: bool,
    /// `OverPartQOS`: the job's QOS limits come before its partition QOS's.
    pub over_part_qos: bool,
    /// `NoDecay`: used TRES-minutes never decay.
    pub no_decay: bool,
}

/// One QOS: its limits, flags and preemption settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qos {
    /// Its limits.
    pub limits: Limits,
    /// Its flags.
    pub flags: QosFlags,
    /// `Preempt`: the QOS whose jobs this QOS's jobs may preempt under `preempt/qos`,
    /// sorted.
    pub preempt: Vec<QosId>,
    /// `PreemptMode`: what happens to this QOS's jobs when preempted; `None` is the
    /// cluster's mode.
    pub preempt_mode: Option<crate::preempt::config::PreemptMode>,
    /// `GraceTime`, seconds a preempted job of this QOS may run on after its signal;
    /// 0: unset (its partition's `GraceTime` applies).
    pub grace_time: Secs,
}

/// The accounting database as the core needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountLimits {
    /// What is enforced; nothing by default.
    pub enforce: Enforce,
    /// Every association, by id.
    pub assocs: BTreeMap<AssocId, Assoc>,
    /// Every QOS, by id.
    pub qos: BTreeMap<QosId, Qos>,
    /// Each partition's QOS (`QOS=` in slurm.conf), by [`crate::PartitionId`] index.
    pub partition_qos: Vec<Option<QosId>>,
}

impl AccountLimits {
    /// `id` and its parents up to `root`, in that order (stops at an unknown id or a
    /// loop).
    pub fn chain(&self, id: AssocId) -> Vec<AssocId> {
        let mut out = Vec::new();
        let mut at = Some(id);
        while let Some(a) = at {
            let Some(rec) = self.assocs.get(&a) else {
                break;
            };
            if out.contains(&a) {
                break;
            }
            out.push(a);
            at = rec.parent;
        }
        out
    }
}

/// What a job asks for, as limits count it (see the module docs).
pub fn request_tres(req: &JobRequest) -> (TresCounts, TresCounts) {
    let nodes = u64::from(req.min_nodes.max(1));
    let cpus = req.min_cpus();
    let per_node_cpus = match req.ntasks_per_node {
        Some(n) => u64::from(n) * u64::from(req.cpus_per_task.max(1)),
        None => cpus.div_ceil(nodes),
    };
    let (mem, per_node_mem) = match req.mem {
        MemRequest::PerNode(m) => (m.saturating_mul(nodes), m),
        MemRequest::PerCpu(m) => (m.saturating_mul(cpus), m.saturating_mul(per_node_cpus)),
    };
    let mut total = [0u64; NTRES];
    let mut per_node = [0u64; NTRES];
    total[TresKind::Cpu.index()] = cpus;
    total[TresKind::Mem.index()] = mem;
    total[TresKind::Node.index()] = nodes;
    total[TresKind::Billing.index()] = cpus;
    per_node[TresKind::Cpu.index()] = per_node_cpus;
    per_node[TresKind::Mem.index()] = per_node_mem;
    per_node[TresKind::Node.index()] = 1;
    per_node[TresKind::Billing.index()] = per_node_cpus;
    for (slot, &n) in req.gres_per_node.iter().enumerate() {
        total[TresKind::Gres(slot).index()] = u64::from(n) * nodes;
        per_node[TresKind::Gres(slot).index()] = u64::from(n);
    }
    (total, per_node)
}

/// What an allocation holds, as limits count it.
pub fn alloc_tres(alloc: &[crate::job::NodeAlloc]) -> TresCounts {
    let mut t = [0u64; NTRES];
    for a in alloc {
        t[TresKind::Cpu.index()] += u64::from(a.usage.cpus);
        t[TresKind::Mem.index()] += a.usage.mem_mib;
        t[TresKind::Node.index()] += 1;
        t[TresKind::Billing.index()] += u64::from(a.usage.cpus);
        for (slot, &n) in a.usage.gres.iter().enumerate() {
            t[TresKind::Gres(slot).index()] += u64::from(n);
        }
    }
    t
}
