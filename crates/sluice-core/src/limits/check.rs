//! The limit checks: whether a job may start now ([`hold_reason`]) and whether it may
//! be submitted at all ([`submit_violation`]), in Slurm's order of precedence (see the
//! module docs of [`crate::limits`]).

use crate::ids::{JobId, PartitionId};
use crate::job::JobRequest;
use crate::time::{Secs, Time};

use super::reason::{self, TresLimitKind as K};
use super::usage::{account_of, qos_order, Counter, Scope, Usage};
use super::{request_tres, tres_limit, AccountLimits, AssocId, JobAcct, Limits, TresCounts};

/// A job as the checks see it.
#[derive(Clone, Copy, Debug)]
pub struct JobView<'a> {
    /// Its id (a job already charged is not counted twice).
    pub id: JobId,
    /// Owner's uid.
    pub user: u32,
    /// Its association and QOS.
    pub acct: JobAcct,
    /// Its partition.
    pub partition: PartitionId,
    /// Its time limit, seconds.
    pub time_limit: Secs,
    /// What it asks for.
    pub request: &'a JobRequest,
}

/// How usage is read: the real counts (may the job start now?), or none at all (could
/// the job ever run within the limits, on an idle cluster with no usage?).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Now,
    Alone,
}

struct Ctx<'a> {
    db: &'a AccountLimits,
    usage: &'a Usage,
    job: JobView<'a>,
    tres: TresCounts,
    per_node: TresCounts,
    mode: Mode,
    now: Time,
    /// Whether the job is already counted in the usage (then it is not added again).
    counted: bool,
}

impl Ctx<'_> {
    fn counter(&self, scope: Scope) -> Option<&Counter> {
        match self.mode {
            Mode::Now => self.usage.counter(scope),
            Mode::Alone => None,
        }
    }

    fn running(&self, scope: Scope) -> u32 {
        self.counter(scope).map_or(0, |c| c.running)
    }

    fn submitted(&self, scope: Scope) -> u32 {
        self.counter(scope).map_or(0, |c| c.submitted)
    }

    fn held(&self, scope: Scope, k: usize) -> u64 {
        self.counter(scope).map_or(0, |c| c.tres[k])
    }

    /// The job's TRES-minutes of TRES `k` over its whole time limit.
    fn job_mins(&self, k: usize) -> f64 {
        self.tres[k] as f64 * self.job.time_limit as f64 / 60.0
    }

    /// `GrpJobs` of one scope.
    fn grp_jobs(&self, l: &Limits, mask: &Limits, scope: Scope) -> bool {
        mask.grp_jobs.is_none() && l.grp_jobs.is_some_and(|n| self.running(scope) + 1 > n)
    }

    /// `GrpTRESMins`, `GrpTRES` and `GrpTRESRunMins` of one scope.
    fn grp_tres(
        &self,
        l: &Limits,
        mask: &Limits,
        scope: Scope,
        name: fn(super::TresKind, K) -> &'static str,
    ) -> Option<&'static str> {
        for &(kind, lim) in &l.grp_tres_mins {
            if tres_limit(&mask.grp_tres_mins, kind).is_some() {
                continue;
            }
            let k = kind.index();
            let (used, run) = self.counter(scope).map_or((0.0, 0.0), |c| {
                (c.used_mins(k, self.now), c.run_mins(k, self.now))
            });
            let over = if self.db.enforce.safe {
                self.tres[k] > 0 && used + run + self.job_mins(k) > lim as f64
            } else {
                self.tres[k] > 0 && (used >= lim as f64 || self.job_mins(k) > lim as f64)
            };
            if over {
                return Some(name(kind, K::GrpMins));
            }
        }
        for &(kind, lim) in &l.grp_tres {
            if tres_limit(&mask.grp_tres, kind).is_some() {
                continue;
            }
            let k = kind.index();
            if self.tres[k] > 0 && self.held(scope, k) + self.tres[k] > lim {
                return Some(name(kind, K::Grp));
            }
        }
        for &(kind, lim) in &l.grp_tres_run_mins {
            if tres_limit(&mask.grp_tres_run_mins, kind).is_some() {
                continue;
            }
            let k = kind.index();
            let run = self.counter(scope).map_or(0.0, |c| c.run_mins(k, self.now));
            if self.tres[k] > 0 && run + self.job_mins(k) > lim as f64 {
                return Some(name(kind, K::GrpRunMins));
            }
        }
        None
    }

    /// `MaxTRESMinsPerJob`, `MaxTRESPerJob` and `MaxTRESPerNode`.
    fn per_job_tres(
        &self,
        l: &Limits,
        mask: &Limits,
        name: fn(super::TresKind, K) -> &'static str,
    ) -> Option<&'static str> {
        for &(kind, lim) in &l.max_tres_mins_per_job {
            if tres_limit(&mask.max_tres_mins_per_job, kind).is_none()
                && self.job_mins(kind.index()) > lim as f64
            {
                return Some(name(kind, K::MaxMinsPerJob));
            }
        }
        for &(kind, lim) in &l.max_tres_per_job {
            if tres_limit(&mask.max_tres_per_job, kind).is_none() && self.tres[kind.index()] > lim {
                return Some(name(kind, K::MaxPerJob));
            }
        }
        for &(kind, lim) in &l.max_tres_per_node {
            if tres_limit(&mask.max_tres_per_node, kind).is_none()
                && self.per_node[kind.index()] > lim
            {
                return Some(name(kind, K::MaxPerNode));
            }
        }
        None
    }
}

/// The limits of the association chain with the `Max*` ones inherited: the nearest
/// association (from the job's own up) that sets each wins.
fn effective_max(db: &AccountLimits, chain: &[AssocId]) -> Limits {
    let mut e = Limits::default();
    for a in chain {
        let l = &db.assocs[a].limits;
        let only_max = Limits {
            max_jobs: l.max_jobs,
            max_submit_jobs: l.max_submit_jobs,
            max_wall: l.max_wall,
            max_tres_per_job: l.max_tres_per_job.clone(),
            max_tres_per_node: l.max_tres_per_node.clone(),
            max_tres_mins_per_job: l.max_tres_mins_per_job.clone(),
            ..Limits::default()
        };
        e.cover(&only_max);
    }
    e
}

/// What the QOS limits decided hides of the association's: the same limits, and
/// `MaxJobsPerUser`/`MaxSubmitJobsPerUser` for `MaxJobs`/`MaxSubmitJobs`.
fn assoc_mask(qos_mask: &Limits) -> Limits {
    let mut m = qos_mask.clone();
    m.max_jobs = m.max_jobs.or(m.max_jobs_per_user);
    m.max_submit_jobs = m.max_submit_jobs.or(m.max_submit_jobs_per_user);
    m
}

fn run(ctx: &Ctx, submit: bool) -> Option<&'static str> {
    let db = ctx.db;
    let job = ctx.job;
    let part_qos = db
        .partition_qos
        .get(job.partition.index())
        .copied()
        .flatten();
    let qos = qos_order(db, &job.acct, part_qos);
    let chain = job.acct.assoc.map(|a| db.chain(a)).unwrap_or_default();
    let account = job.acct.assoc.map(|a| account_of(db, a));
    let add = u32::from(!ctx.counted);

    // Submit limits.
    if submit {
        let mut mask = Limits::default();
        for &q in &qos {
            let l = &db.qos[&q].limits;
            if mask.grp_submit_jobs.is_none()
                && l.grp_submit_jobs
                    .is_some_and(|n| ctx.submitted(Scope::Qos(q)) + add > n)
            {
                return Some(reason::QOS_GRP_SUBMIT);
            }
            if mask.max_submit_jobs_per_user.is_none()
                && l.max_submit_jobs_per_user
                    .is_some_and(|n| ctx.submitted(Scope::QosUser(q, job.user)) + add > n)
            {
                return Some(reason::QOS_MAX_SUBMIT_PER_USER);
            }
            if let Some(acc) = account {
                if mask.max_submit_jobs_per_account.is_none()
                    && l.max_submit_jobs_per_account
                        .is_some_and(|n| ctx.submitted(Scope::QosAccount(q, acc)) + add > n)
                {
                    return Some(reason::QOS_MAX_SUBMIT_PER_ACCOUNT);
                }
            }
            mask.cover(l);
        }
        let mask = assoc_mask(&mask);
        for (i, a) in chain.iter().enumerate() {
            let l = &db.assocs[a].limits;
            if mask.grp_submit_jobs.is_none()
                && l.grp_submit_jobs
                    .is_some_and(|n| ctx.submitted(Scope::Assoc(*a)) + add > n)
            {
                return Some(reason::ASSOC_GRP_SUBMIT);
            }
            if i == 0
                && mask.max_submit_jobs.is_none()
                && effective_max(db, &chain)
                    .max_submit_jobs
                    .is_some_and(|n| ctx.submitted(Scope::Assoc(*a)) + add > n)
            {
                return Some(reason::ASSOC_MAX_SUBMIT);
            }
        }
        return None;
    }

    // Running jobs and wall time ("pre-select"): the QOS, then the association.
    let mut mask = Limits::default();
    for &q in &qos {
        let l = &db.qos[&q].limits;
        if ctx.grp_jobs(l, &mask, Scope::Qos(q)) {
            return Some(reason::QOS_GRP_JOBS);
        }
        if mask.max_jobs_per_user.is_none()
            && l.max_jobs_per_user
                .is_some_and(|n| ctx.running(Scope::QosUser(q, job.user)) + 1 > n)
        {
            return Some(reason::QOS_MAX_JOBS_PER_USER);
        }
        if let Some(acc) = account {
            if mask.max_jobs_per_account.is_none()
                && l.max_jobs_per_account
                    .is_some_and(|n| ctx.running(Scope::QosAccount(q, acc)) + 1 > n)
            {
                return Some(reason::QOS_MAX_JOBS_PER_ACCOUNT);
            }
        }
        if mask.max_wall.is_none() && l.max_wall.is_some_and(|w| job.time_limit > w) {
            return Some(reason::QOS_MAX_WALL);
        }
        mask.cover(l);
    }
    let qos_mask = mask.clone();
    let amask = assoc_mask(&qos_mask);
    let max = effective_max(db, &chain);
    for (i, a) in chain.iter().enumerate() {
        let l = &db.assocs[a].limits;
        if ctx.grp_jobs(l, &amask, Scope::Assoc(*a)) {
            return Some(reason::ASSOC_GRP_JOBS);
        }
        if i == 0 {
            if amask.max_jobs.is_none()
                && max
                    .max_jobs
                    .is_some_and(|n| ctx.running(Scope::Assoc(*a)) + 1 > n)
            {
                return Some(reason::ASSOC_MAX_JOBS);
            }
            if amask.max_wall.is_none() && max.max_wall.is_some_and(|w| job.time_limit > w) {
                return Some(reason::ASSOC_MAX_WALL);
            }
        }
    }

    // TRES ("post-select"): the QOS, then the association.
    let mut mask = Limits::default();
    for &q in &qos {
        let l = &db.qos[&q].limits;
        if let Some(r) = ctx.grp_tres(l, &mask, Scope::Qos(q), reason::qos_tres) {
            return Some(r);
        }
        if let Some(r) = ctx.per_job_tres(l, &mask, reason::qos_tres) {
            return Some(r);
        }
        for &(kind, lim) in &l.max_tres_per_user {
            let k = kind.index();
            if tres_limit(&mask.max_tres_per_user, kind).is_none()
                && ctx.tres[k] > 0
                && ctx.held(Scope::QosUser(q, job.user), k) + ctx.tres[k] > lim
            {
                return Some(reason::qos_tres(kind, K::MaxPerUser));
            }
        }
        if let Some(acc) = account {
            for &(kind, lim) in &l.max_tres_per_account {
                let k = kind.index();
                if tres_limit(&mask.max_tres_per_account, kind).is_none()
                    && ctx.tres[k] > 0
                    && ctx.held(Scope::QosAccount(q, acc), k) + ctx.tres[k] > lim
                {
                    return Some(reason::qos_tres(kind, K::MaxPerAccount));
                }
            }
        }
        for &(kind, lim) in &l.min_tres_per_job {
            if tres_limit(&mask.min_tres_per_job, kind).is_none() && ctx.tres[kind.index()] < lim {
                return Some(reason::qos_tres(kind, K::Min));
            }
        }
        mask.cover(l);
    }
    let amask = assoc_mask(&mask);
    for (i, a) in chain.iter().enumerate() {
        let l = &db.assocs[a].limits;
        if let Some(r) = ctx.grp_tres(l, &amask, Scope::Assoc(*a), reason::assoc_tres) {
            return Some(r);
        }
        if i == 0 {
            if let Some(r) = ctx.per_job_tres(&max, &amask, reason::assoc_tres) {
                return Some(r);
            }
        }
    }
    None
}

fn ctx<'a>(
    db: &'a AccountLimits,
    usage: &'a Usage,
    job: JobView<'a>,
    mode: Mode,
    now: Time,
) -> Ctx<'a> {
    let (tres, per_node) = request_tres(job.request);
    Ctx {
        db,
        usage,
        job,
        tres,
        per_node,
        mode,
        now,
        counted: usage.is_charged(job.id),
    }
}

/// Why `job` may not start at `now` under the limits, as Slurm's reason name; `None`
/// when it may (or when limits are not enforced).
pub fn hold_reason(
    db: &AccountLimits,
    usage: &Usage,
    job: JobView<'_>,
    now: Time,
) -> Option<&'static str> {
    if !db.enforce.limits {
        return None;
    }
    run(&ctx(db, usage, job, Mode::Now, now), false)
}

/// Why `job` may not be submitted, as Slurm's reason name: a submit limit reached
/// (always), or, when one of its QOS has `DenyOnLimit`, a limit it could never run
/// within. `None` when it may.
pub fn submit_violation(
    db: &AccountLimits,
    usage: &Usage,
    job: JobView<'_>,
    now: Time,
) -> Option<&'static str> {
    if !db.enforce.limits {
        return None;
    }
    let c = ctx(db, usage, job, Mode::Now, now);
    if !c.counted {
        if let Some(r) = run(&c, true) {
            return Some(r);
        }
    }
    let part_qos = db
        .partition_qos
        .get(job.partition.index())
        .copied()
        .flatten();
    let deny = qos_order(db, &job.acct, part_qos)
        .iter()
        .any(|q| db.qos[q].flags.deny_on_limit);
    if deny {
        return run(&ctx(db, usage, job, Mode::Alone, now), false);
    }
    None
}

/// Whether the backfill pass may plan a reservation for a job of `acct` in `partition`:
/// not when one of its QOS has `NoReserve`.
pub fn may_reserve(db: &AccountLimits, acct: &JobAcct, partition: PartitionId) -> bool {
    let part_qos = db.partition_qos.get(partition.index()).copied().flatten();
    !qos_order(db, acct, part_qos)
        .iter()
        .any(|q| db.qos[q].flags.no_reserve)
}
