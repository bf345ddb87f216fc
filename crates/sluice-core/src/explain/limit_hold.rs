//! The accounting limits (and cohort borrowing rules) that keep a pending job from
//! starting, with the numbers: the limit, what its scope uses, the user's own part.

use crate::job::{Job, JobState};
use crate::limits::alloc_tres;
use crate::limits::check::{self, Hold, Measure};
use crate::limits::usage::Scope;
use crate::scheduler::{view, Scheduler};
use crate::time::Time;

/// One limit holding a job, with its numbers in the unit of its [`Measure`] (jobs,
/// a TRES's own unit, TRES-minutes rounded down, seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitHold {
    /// Slurm's reason name (`AssocGrpGRES`, `QOSMaxJobsPerUserLimit`, ...), or Sluice's
    /// `CohortBorrowLimit`/`CohortQuota` (see [`crate::borrow`]).
    pub reason: &'static str,
    /// Whose usage counts: an association with its subtree, a QOS, one user's or one
    /// account's jobs in a QOS. `None` for a limit on the job alone and for cohorts.
    pub scope: Option<Scope>,
    /// What is counted.
    pub measure: Measure,
    /// The limit's value (for a cohort: the member's quota plus its `BorrowLimit`, or
    /// the cohort's quotas together).
    pub limit: u64,
    /// What the scope uses now (0 for a limit on the job alone).
    pub in_use: u64,
    /// How much of `in_use` is the job's owner's own (their running jobs charged to
    /// the scope; for used TRES-minutes, what their association in the job's account or
    /// their use of the QOS has used). `None` for a limit on the job alone and for
    /// cohorts.
    pub own: Option<u64>,
    /// What the job would add (for a limit on the job alone: what it asks for).
    pub job: u64,
}

impl LimitHold {
    /// Whether the job alone exceeds the limit, so that it can never pass it however
    /// much of the scope's usage goes away: what it adds is more than the limit. Used
    /// TRES-minutes are the exception (they decay, and the job does not add them until
    /// it runs). Slurm keeps such a job pending for ever.
    pub fn never_passes(&self) -> bool {
        self.job > self.limit && !matches!(self.measure, Measure::TresMins(_))
    }
}

/// Every limit holding `job` at `now`, in Slurm's precedence, then the cohort rule.
pub(crate) fn holds(sched: &Scheduler, job: &Job, now: Time) -> Vec<LimitHold> {
    let mut all = check::holds(
        sched.account_limits(),
        sched.limit_usage(),
        view(&job.spec),
        now,
    );
    all.extend(crate::borrow::hold(sched, job.id()));
    all.into_iter()
        .map(|h| LimitHold {
            own: own_part(sched, job, &h, now),
            reason: h.reason,
            scope: h.scope,
            measure: h.measure,
            limit: h.limit,
            in_use: h.in_use,
            job: h.job,
        })
        .collect()
}

/// The owner's part of what `h`'s scope uses.
fn own_part(sched: &Scheduler, job: &Job, h: &Hold, now: Time) -> Option<u64> {
    let scope = h.scope?;
    let user = job.spec.user;
    let usage = sched.limit_usage();
    let mine: Vec<&Job> = sched
        .jobs()
        .filter(|j| j.spec.user == user && usage.scopes_of(j.id()).contains(&scope))
        .collect();
    let running = || mine.iter().filter(|j| j.state == JobState::Running);
    let held = |k: usize| -> u64 {
        running()
            .map(|j| alloc_tres(&j.alloc.as_ref().expect("running").nodes)[k])
            .sum()
    };
    let run_mins = |k: usize| -> u64 {
        let secs: i128 = running()
            .map(|j| {
                let t = alloc_tres(&j.alloc.as_ref().expect("running").nodes)[k];
                let end = j.expected_end().unwrap_or(now).max(now);
                i128::from(t) * i128::from(end - now)
            })
            .sum();
        (secs / 60) as u64
    };
    Some(match h.measure {
        Measure::RunningJobs => running().count() as u64,
        Measure::SubmittedJobs => mine.len() as u64,
        Measure::Tres(kind) => held(kind.index()),
        Measure::TresRunMins(kind) => run_mins(kind.index()),
        Measure::TresMins(kind) => {
            let k = kind.index();
            // Used minutes are kept per scope, not per job: the user's own scope.
            let own_scope = match scope {
                Scope::Assoc(_) => job.spec.acct.assoc.map(Scope::Assoc),
                Scope::Qos(q) | Scope::QosUser(q, _) | Scope::QosAccount(q, _) => {
                    Some(Scope::QosUser(q, user))
                }
            };
            let used = own_scope
                .and_then(|s| usage.counter(s))
                .map_or(0.0, |c| c.used_mins(k, now));
            let safe = sched.account_limits().enforce.safe;
            (used.max(0.0).floor() as u64) + if safe { run_mins(k) } else { 0 }
        }
        Measure::TresPerNode(_) | Measure::WallSeconds => return None,
    })
}
