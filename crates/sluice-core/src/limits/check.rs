//! The limit checks: whether a job may start now ([`hold_reason`], [`holds`]) and
//! whether it may be submitted at all ([`submit_violation`]), in Slurm's order of
//! precedence (see the module docs of [`crate::limits`]).
//!
//! Every check reports a [`Hold`]: Slurm's reason name with the numbers behind it (the
//! limit, what its scope uses, what the job would add), so that the pending reason and
//! its explanation come from one place.

use crate::ids::{JobId, PartitionId};
use crate::job::JobRequest;
use crate::time::{Secs, Time};

use super::reason::{self, TresLimitKind as K};
use super::usage::{account_of, qos_order, Counter, Scope, Usage};
use super::{
    request_tres, tres_limit, AccountLimits, AssocId, JobAcct, Limits, TresCounts, TresKind,
};

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

/// What a limit counts, and so the unit of a [`Hold`]'s numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Running jobs (`GrpJobs`, `MaxJobs`, `MaxJobsPerUser`, `MaxJobsPerAccount`).
    RunningJobs,
    /// Pending and running jobs (the submit limits).
    SubmittedJobs,
    /// A TRES in its own unit (processors, MiB, nodes, devices, billing units): held by
    /// the scope's running jobs (`GrpTRES`, `MaxTRESPerUser`, `MaxTRESPerAccount`) or
    /// asked by the job alone (`MaxTRESPerJob`, `MinTRESPerJob`).
    Tres(TresKind),
    /// A TRES on one node, as the job asks it (`MaxTRESPerNode`).
    TresPerNode(TresKind),
    /// TRES-minutes: used so far, decayed, plus with `safe` what running jobs still have
    /// to run (`GrpTRESMins`); or the job's TRES × time limit (`MaxTRESMinsPerJob`).
    TresMins(TresKind),
    /// TRES-minutes running jobs still have to run (`GrpTRESRunMins`).
    TresRunMins(TresKind),
    /// Seconds of time limit (`MaxWallDurationPerJob`).
    WallSeconds,
}

/// One limit that holds a job back (or refuses it), with the numbers behind it.
///
/// A job is held when `in_use + job > limit` (for `MinTRESPerJob`: when
/// `job < limit`; for `GrpTRESMins` without `safe`: when `in_use ≥ limit` or
/// `job > limit`). TRES-minutes are rounded down to whole minutes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// Slurm's reason name (`AssocGrpGRES`, `QOSMaxJobsPerUserLimit`, ...).
    pub reason: &'static str,
    /// Whose usage the limit counts: an association (with its subtree), a QOS, one
    /// user's or one account's jobs in a QOS. `None` for a limit on the job alone
    /// (`MaxTRESPerJob`, `MaxWall`, ...).
    pub scope: Option<Scope>,
    /// What is counted, in which unit.
    pub measure: Measure,
    /// The limit's value.
    pub limit: u64,
    /// What the scope uses now (0 for a limit on the job alone).
    pub in_use: u64,
    /// What the job would add to it (for a limit on the job alone: what it asks).
    pub job: u64,
}

/// Collects holds: the first only (what a pass needs), or all of them (explanations).
struct Sink {
    all: bool,
    found: Vec<Hold>,
}

impl Sink {
    /// Records a hold; true when the checks should stop.
    fn hit(&mut self, h: Hold) -> bool {
        self.found.push(h);
        !self.all
    }
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

fn hold(
    reason: &'static str,
    scope: Option<Scope>,
    measure: Measure,
    limit: u64,
    in_use: u64,
    job: u64,
) -> Hold {
    Hold {
        reason,
        scope,
        measure,
        limit,
        in_use,
        job,
    }
}

/// Whole minutes of a float count of minutes.
fn mins(m: f64) -> u64 {
    m.max(0.0).floor() as u64
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
    fn grp_jobs(
        &self,
        l: &Limits,
        mask: &Limits,
        scope: Scope,
        name: &'static str,
        sink: &mut Sink,
    ) -> bool {
        match l.grp_jobs {
            Some(n) if mask.grp_jobs.is_none() && self.running(scope) + 1 > n => sink.hit(hold(
                name,
                Some(scope),
                Measure::RunningJobs,
                n.into(),
                self.running(scope).into(),
                1,
            )),
            _ => false,
        }
    }

    /// `GrpTRESMins`, `GrpTRES` and `GrpTRESRunMins` of one scope.
    fn grp_tres(
        &self,
        l: &Limits,
        mask: &Limits,
        scope: Scope,
        name: fn(TresKind, K) -> &'static str,
        sink: &mut Sink,
    ) -> bool {
        for &(kind, lim) in &l.grp_tres_mins {
            if tres_limit(&mask.grp_tres_mins, kind).is_some() {
                continue;
            }
            let k = kind.index();
            let (used, run) = self.counter(scope).map_or((0.0, 0.0), |c| {
                (c.used_mins(k, self.now), c.run_mins(k, self.now))
            });
            let (over, in_use) = if self.db.enforce.safe {
                let in_use = used + run;
                (
                    self.tres[k] > 0 && in_use + self.job_mins(k) > lim as f64,
                    in_use,
                )
            } else {
                (
                    self.tres[k] > 0 && (used >= lim as f64 || self.job_mins(k) > lim as f64),
                    used,
                )
            };
            if over
                && sink.hit(hold(
                    name(kind, K::GrpMins),
                    Some(scope),
                    Measure::TresMins(kind),
                    lim,
                    mins(in_use),
                    mins(self.job_mins(k)),
                ))
            {
                return true;
            }
        }
        for &(kind, lim) in &l.grp_tres {
            if tres_limit(&mask.grp_tres, kind).is_some() {
                continue;
            }
            let k = kind.index();
            if self.tres[k] > 0
                && self.held(scope, k) + self.tres[k] > lim
                && sink.hit(hold(
                    name(kind, K::Grp),
                    Some(scope),
                    Measure::Tres(kind),
                    lim,
                    self.held(scope, k),
                    self.tres[k],
                ))
            {
                return true;
            }
        }
        for &(kind, lim) in &l.grp_tres_run_mins {
            if tres_limit(&mask.grp_tres_run_mins, kind).is_some() {
                continue;
            }
            let k = kind.index();
            let run = self.counter(scope).map_or(0.0, |c| c.run_mins(k, self.now));
            if self.tres[k] > 0
                && run + self.job_mins(k) > lim as f64
                && sink.hit(hold(
                    name(kind, K::GrpRunMins),
                    Some(scope),
                    Measure::TresRunMins(kind),
                    lim,
                    mins(run),
                    mins(self.job_mins(k)),
                ))
            {
                return true;
            }
        }
        false
    }

    /// `MaxTRESMinsPerJob`, `MaxTRESPerJob` and `MaxTRESPerNode`.
    fn per_job_tres(
        &self,
        l: &Limits,
        mask: &Limits,
        name: fn(TresKind, K) -> &'static str,
        sink: &mut Sink,
    ) -> bool {
        for &(kind, lim) in &l.max_tres_mins_per_job {
            if tres_limit(&mask.max_tres_mins_per_job, kind).is_none()
                && self.job_mins(kind.index()) > lim as f64
                && sink.hit(hold(
                    name(kind, K::MaxMinsPerJob),
                    None,
                    Measure::TresMins(kind),
                    lim,
                    0,
                    mins(self.job_mins(kind.index())),
                ))
            {
                return true;
            }
        }
        for &(kind, lim) in &l.max_tres_per_job {
            if tres_limit(&mask.max_tres_per_job, kind).is_none()
                && self.tres[kind.index()] > lim
                && sink.hit(hold(
                    name(kind, K::MaxPerJob),
                    None,
                    Measure::Tres(kind),
                    lim,
                    0,
                    self.tres[kind.index()],
                ))
            {
                return true;
            }
        }
        for &(kind, lim) in &l.max_tres_per_node {
            if tres_limit(&mask.max_tres_per_node, kind).is_none()
                && self.per_node[kind.index()] > lim
                && sink.hit(hold(
                    name(kind, K::MaxPerNode),
                    None,
                    Measure::TresPerNode(kind),
                    lim,
                    0,
                    self.per_node[kind.index()],
                ))
            {
                return true;
            }
        }
        false
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

/// A count limit of one scope: held when `count + add > limit`.
fn count_hold(
    reason: &'static str,
    scope: Scope,
    measure: Measure,
    limit: Option<u32>,
    count: u32,
    add: u32,
) -> Option<Hold> {
    let n = limit?;
    (count + add > n).then(|| {
        hold(
            reason,
            Some(scope),
            measure,
            n.into(),
            count.into(),
            add.into(),
        )
    })
}

/// The submit limits, QOS first, then the association chain.
fn run_submit(ctx: &Ctx, sink: &mut Sink) {
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
    let jobs = Measure::SubmittedJobs;
    let mut mask = Limits::default();
    for &q in &qos {
        let l = &db.qos[&q].limits;
        let mut found = Vec::new();
        if mask.grp_submit_jobs.is_none() {
            let s = Scope::Qos(q);
            found.extend(count_hold(
                reason::QOS_GRP_SUBMIT,
                s,
                jobs,
                l.grp_submit_jobs,
                ctx.submitted(s),
                add,
            ));
        }
        if mask.max_submit_jobs_per_user.is_none() {
            let s = Scope::QosUser(q, job.user);
            found.extend(count_hold(
                reason::QOS_MAX_SUBMIT_PER_USER,
                s,
                jobs,
                l.max_submit_jobs_per_user,
                ctx.submitted(s),
                add,
            ));
        }
        if let Some(acc) = account {
            if mask.max_submit_jobs_per_account.is_none() {
                let s = Scope::QosAccount(q, acc);
                found.extend(count_hold(
                    reason::QOS_MAX_SUBMIT_PER_ACCOUNT,
                    s,
                    jobs,
                    l.max_submit_jobs_per_account,
                    ctx.submitted(s),
                    add,
                ));
            }
        }
        for h in found {
            if sink.hit(h) {
                return;
            }
        }
        mask.cover(l);
    }
    let mask = assoc_mask(&mask);
    for (i, a) in chain.iter().enumerate() {
        let l = &db.assocs[a].limits;
        let s = Scope::Assoc(*a);
        let mut found = Vec::new();
        if mask.grp_submit_jobs.is_none() {
            found.extend(count_hold(
                reason::ASSOC_GRP_SUBMIT,
                s,
                jobs,
                l.grp_submit_jobs,
                ctx.submitted(s),
                add,
            ));
        }
        if i == 0 && mask.max_submit_jobs.is_none() {
            found.extend(count_hold(
                reason::ASSOC_MAX_SUBMIT,
                s,
                jobs,
                effective_max(db, &chain).max_submit_jobs,
                ctx.submitted(s),
                add,
            ));
        }
        for h in found {
            if sink.hit(h) {
                return;
            }
        }
    }
}

/// The limits on starting: running jobs and wall time, then TRES; the QOS first, then
/// the association chain, each level masking what the one before it set.
fn run_start(ctx: &Ctx, sink: &mut Sink) {
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
    let jobs = Measure::RunningJobs;
    let wall = |reason, limit: Secs| {
        hold(
            reason,
            None,
            Measure::WallSeconds,
            limit.max(0) as u64,
            0,
            job.time_limit.max(0) as u64,
        )
    };

    // Running jobs and wall time ("pre-select"): the QOS, then the association.
    let mut mask = Limits::default();
    for &q in &qos {
        let l = &db.qos[&q].limits;
        if ctx.grp_jobs(l, &mask, Scope::Qos(q), reason::QOS_GRP_JOBS, sink) {
            return;
        }
        let mut found = Vec::new();
        if mask.max_jobs_per_user.is_none() {
            let s = Scope::QosUser(q, job.user);
            found.extend(count_hold(
                reason::QOS_MAX_JOBS_PER_USER,
                s,
                jobs,
                l.max_jobs_per_user,
                ctx.running(s),
                1,
            ));
        }
        if let Some(acc) = account {
            if mask.max_jobs_per_account.is_none() {
                let s = Scope::QosAccount(q, acc);
                found.extend(count_hold(
                    reason::QOS_MAX_JOBS_PER_ACCOUNT,
                    s,
                    jobs,
                    l.max_jobs_per_account,
                    ctx.running(s),
                    1,
                ));
            }
        }
        if mask.max_wall.is_none() {
            if let Some(w) = l.max_wall.filter(|&w| job.time_limit > w) {
                found.push(wall(reason::QOS_MAX_WALL, w));
            }
        }
        for h in found {
            if sink.hit(h) {
                return;
            }
        }
        mask.cover(l);
    }
    let qos_mask = mask.clone();
    let amask = assoc_mask(&qos_mask);
    let max = effective_max(db, &chain);
    for (i, a) in chain.iter().enumerate() {
        let l = &db.assocs[a].limits;
        let s = Scope::Assoc(*a);
        if ctx.grp_jobs(l, &amask, s, reason::ASSOC_GRP_JOBS, sink) {
            return;
        }
        if i == 0 {
            let mut found = Vec::new();
            if amask.max_jobs.is_none() {
                found.extend(count_hold(
                    reason::ASSOC_MAX_JOBS,
                    s,
                    jobs,
                    max.max_jobs,
                    ctx.running(s),
                    1,
                ));
            }
            if amask.max_wall.is_none() {
                if let Some(w) = max.max_wall.filter(|&w| job.time_limit > w) {
                    found.push(wall(reason::ASSOC_MAX_WALL, w));
                }
            }
            for h in found {
                if sink.hit(h) {
                    return;
                }
            }
        }
    }

    // TRES ("post-select"): the QOS, then the association.
    let mut mask = Limits::default();
    for &q in &qos {
        let l = &db.qos[&q].limits;
        if ctx.grp_tres(l, &mask, Scope::Qos(q), reason::qos_tres, sink) {
            return;
        }
        if ctx.per_job_tres(l, &mask, reason::qos_tres, sink) {
            return;
        }
        for &(kind, lim) in &l.max_tres_per_user {
            let k = kind.index();
            let s = Scope::QosUser(q, job.user);
            if tres_limit(&mask.max_tres_per_user, kind).is_none()
                && ctx.tres[k] > 0
                && ctx.held(s, k) + ctx.tres[k] > lim
                && sink.hit(hold(
                    reason::qos_tres(kind, K::MaxPerUser),
                    Some(s),
                    Measure::Tres(kind),
                    lim,
                    ctx.held(s, k),
                    ctx.tres[k],
                ))
            {
                return;
            }
        }
        if let Some(acc) = account {
            for &(kind, lim) in &l.max_tres_per_account {
                let k = kind.index();
                let s = Scope::QosAccount(q, acc);
                if tres_limit(&mask.max_tres_per_account, kind).is_none()
                    && ctx.tres[k] > 0
                    && ctx.held(s, k) + ctx.tres[k] > lim
                    && sink.hit(hold(
                        reason::qos_tres(kind, K::MaxPerAccount),
                        Some(s),
                        Measure::Tres(kind),
                        lim,
                        ctx.held(s, k),
                        ctx.tres[k],
                    ))
                {
                    return;
                }
            }
        }
        for &(kind, lim) in &l.min_tres_per_job {
            if tres_limit(&mask.min_tres_per_job, kind).is_none()
                && ctx.tres[kind.index()] < lim
                && sink.hit(hold(
                    reason::qos_tres(kind, K::Min),
                    None,
                    Measure::Tres(kind),
                    lim,
                    0,
                    ctx.tres[kind.index()],
                ))
            {
                return;
            }
        }
        mask.cover(l);
    }
    let amask = assoc_mask(&mask);
    for (i, a) in chain.iter().enumerate() {
        let l = &db.assocs[a].limits;
        if ctx.grp_tres(l, &amask, Scope::Assoc(*a), reason::assoc_tres, sink) {
            return;
        }
        if i == 0 && ctx.per_job_tres(&max, &amask, reason::assoc_tres, sink) {
            return;
        }
    }
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

/// The first hold of `ctx` by the start limits, in Slurm's precedence.
fn first_start_hold(ctx: &Ctx) -> Option<Hold> {
    let mut sink = Sink {
        all: false,
        found: Vec::new(),
    };
    run_start(ctx, &mut sink);
    sink.found.into_iter().next()
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
    first_start_hold(&ctx(db, usage, job, Mode::Now, now)).map(|h| h.reason)
}

/// Every limit that would keep `job` from starting at `now`, in Slurm's precedence (the
/// first is the one [`hold_reason`] names), with its numbers; empty when none does (or
/// when limits are not enforced). A limit the job's QOS sets hides the same limit of
/// its association, as in [`hold_reason`].
pub fn holds(db: &AccountLimits, usage: &Usage, job: JobView<'_>, now: Time) -> Vec<Hold> {
    if !db.enforce.limits {
        return Vec::new();
    }
    let mut sink = Sink {
        all: true,
        found: Vec::new(),
    };
    run_start(&ctx(db, usage, job, Mode::Now, now), &mut sink);
    sink.found
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
        let mut sink = Sink {
            all: false,
            found: Vec::new(),
        };
        run_submit(&c, &mut sink);
        if let Some(h) = sink.found.into_iter().next() {
            return Some(h.reason);
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
        return first_start_hold(&ctx(db, usage, job, Mode::Alone, now)).map(|h| h.reason);
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
