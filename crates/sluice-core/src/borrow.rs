//! Borrowing between accounts (beyond Slurm; in the spirit of Kueue's cohorts): an
//! account may run above its guaranteed quota on capacity the other accounts of its
//! *cohort* are not using, and what it borrows is taken back first when they need it.
//!
//! The caller describes the cohorts ([`crate::Scheduler::set_cohorts`]): each member is
//! an account association with a `Quota` (its guarantee), a `BorrowLimit` (how far above
//! its quota it may go) and a `GraceTime`. A job belongs to the first member in its
//! association's chain (its account, or the nearest parent account that is a member); a
//! job of no member is not concerned by anything here. Only the TRES a member's quota
//! names count for it: a member neither lends nor borrows a TRES its quota leaves out.
//!
//! A job of member `A` asking `r` (counted as the limits count a request, see
//! [`crate::limits::request_tres`]), where `used` is what `A`'s running jobs asked:
//!
//! - **within its guarantee** when `used + r ≤ Quota` for every TRES of `A`'s quota;
//! - else it **borrows**, and may start only if, for every TRES it would exceed its
//!   quota on, `used + r ≤ Quota + BorrowLimit` (else it waits with reason
//!   `CohortBorrowLimit`) and the cohort's members together use, with `r`, at most the
//!   sum of their quotas of that TRES (else `CohortQuota`: nobody has unused quota to
//!   lend). A TRES absent from `BorrowLimit` may be borrowed up to the cohort's unused
//!   quota. A job held so is skipped by every pass, as a job held by a limit.
//!
//! A job that starts beyond its member's quota is *borrowed*
//! ([`crate::Scheduler::borrowed`]). A pending job within its guarantee that waits for
//! resources *reclaims* (see [`crate::preempt`]): it may preempt borrowed jobs of the *other*
//! members of its cohort whose member still runs above its quota, with `REQUEUE` and the
//! borrowing member's `GraceTime`, even under `PreemptType=preempt/none`. When it may
//! preempt other jobs as well (partition tiers or QOS), a set of borrowed jobs alone is
//! chosen whenever one lets it start; never more jobs than needed.
//!
//! Choices of our own (there is no Slurm behaviour to match):
//! - Jobs count by what they ask, not by what their allocation holds (an `--exclusive`
//!   job's whole nodes count as its request).
//! - A member's guarantee is against its cohort's borrowing only: jobs of accounts in no
//!   cohort are never reclaimed from (partitions or QOS preemption do that).
//! - The borrowed mark is given once, at the start; a borrowed job is reclaimed only
//!   while its member is still above its quota.
//! - `PreemptExemptTime` spares young borrowed jobs too.

#![allow(clippy::needless_range_loop)] // TRES vectors are added index by index

use std::collections::BTreeMap;

use crate::ids::JobId;
use crate::job::{Job, JobState};
use crate::limits::check::{Hold, Measure};
use crate::limits::{request_tres, AssocId, TresCounts, TresLimits, NTRES};
use crate::scheduler::Scheduler;
use crate::time::Secs;

/// One member account of a cohort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CohortMember {
    /// The account's association.
    pub account: AssocId,
    /// `Quota`: the TRES guaranteed to it (only these TRES count for it).
    pub quota: TresLimits,
    /// `BorrowLimit`: how much of each TRES it may run above its quota; a TRES absent
    /// here may be borrowed up to what the cohort leaves unused.
    pub borrow_limit: TresLimits,
    /// `GraceTime`, seconds: how long its borrowed jobs run on after the signal when
    /// reclaimed.
    pub grace_time: Secs,
}

/// A cohort: accounts that lend each other their unused quota.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cohort {
    /// Its name (for messages).
    pub name: String,
    /// Its members (an account is a member of one cohort at most).
    pub members: Vec<CohortMember>,
}

/// What a running job of a member counts for.
#[derive(Clone, Debug)]
struct Charged {
    member: AssocId,
    tres: TresCounts,
    borrowed: bool,
}

/// The cohorts and what their members' running jobs use.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Members by account, with their cohort's index.
    members: BTreeMap<AssocId, (usize, CohortMember)>,
    /// Each cohort's member accounts.
    cohorts: Vec<Vec<AssocId>>,
    /// What each member's running jobs asked.
    used: BTreeMap<AssocId, TresCounts>,
    /// Running jobs of members.
    jobs: BTreeMap<JobId, Charged>,
}

impl State {
    /// Whether any cohort is configured.
    pub(crate) fn active(&self) -> bool {
        !self.members.is_empty()
    }

    /// Whether running job `id` started borrowed.
    pub(crate) fn borrowed(&self, id: JobId) -> bool {
        self.jobs.get(&id).is_some_and(|c| c.borrowed)
    }

    fn used(&self, m: AssocId) -> TresCounts {
        self.used.get(&m).copied().unwrap_or([0; NTRES])
    }

    /// Whether `m` asking `r` more stays within its quota.
    fn within(&self, m: AssocId, r: &TresCounts) -> bool {
        let (_, member) = &self.members[&m];
        let used = self.used(m);
        member
            .quota
            .iter()
            .all(|&(k, q)| used[k.index()] + r[k.index()] <= q)
    }

    /// Whether `m` runs above its quota on some TRES.
    fn above(&self, m: AssocId) -> bool {
        let (_, member) = &self.members[&m];
        let used = self.used(m);
        member.quota.iter().any(|&(k, q)| used[k.index()] > q)
    }
}

/// The member a job counts for: the first member in its association's chain.
fn member_of(s: &Scheduler, job: &Job) -> Option<AssocId> {
    let assoc = job.spec.acct.assoc?;
    s.accounts
        .chain(assoc)
        .into_iter()
        .chain(std::iter::once(assoc))
        .find(|a| s.borrow.members.contains_key(a))
}

/// Replaces the cohorts and counts the running jobs afresh (borrowed marks are kept).
pub(crate) fn set(s: &mut Scheduler, cohorts: Vec<Cohort>) {
    let mut st = State::default();
    for (i, c) in cohorts.into_iter().enumerate() {
        let mut accounts = Vec::new();
        for m in c.members {
            accounts.push(m.account);
            st.members.insert(m.account, (i, m));
        }
        st.cohorts.push(accounts);
    }
    let old = std::mem::replace(&mut s.borrow, st);
    recount_with(s, &old);
}

/// Counts the running jobs afresh (the accounts changed).
pub(crate) fn recount(s: &mut Scheduler) {
    let marks = State {
        jobs: std::mem::take(&mut s.borrow.jobs),
        ..State::default()
    };
    recount_with(s, &marks);
}

fn recount_with(s: &mut Scheduler, old: &State) {
    s.borrow.used.clear();
    s.borrow.jobs.clear();
    if !s.borrow.active() {
        return;
    }
    let running: Vec<JobId> = s
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running)
        .map(|j| j.id())
        .collect();
    for id in running {
        charge(s, id, Some(old.borrowed(id)));
    }
}

/// Charges running job `id` to its member; `mark`: its borrowed mark, or `None` to
/// decide it now (a start).
fn charge(s: &mut Scheduler, id: JobId, mark: Option<bool>) {
    let job = &s.jobs[&id];
    let Some(m) = member_of(s, job) else {
        return;
    };
    let tres = request_tres(&job.spec.request).0;
    let borrowed = mark.unwrap_or_else(|| !s.borrow.within(m, &tres));
    let used = s.borrow.used.entry(m).or_insert([0; NTRES]);
    for k in 0..NTRES {
        used[k] += tres[k];
    }
    s.borrow.jobs.insert(
        id,
        Charged {
            member: m,
            tres,
            borrowed,
        },
    );
}

/// A job's association changed: it counts for its (new) member, keeping its mark.
pub(crate) fn rejoin(s: &mut Scheduler, id: JobId) {
    let mark = s.borrow.borrowed(id);
    ended(s, id);
    if s.borrow.active()
        && s.jobs
            .get(&id)
            .is_some_and(|j| j.state == JobState::Running)
    {
        charge(s, id, Some(mark));
    }
}

/// A job started (or was restored running).
pub(crate) fn started(s: &mut Scheduler, id: JobId) {
    if s.borrow.active() {
        charge(s, id, None);
    }
}

/// A running job ended.
pub(crate) fn ended(s: &mut Scheduler, id: JobId) {
    let Some(c) = s.borrow.jobs.remove(&id) else {
        return;
    };
    if let Some(used) = s.borrow.used.get_mut(&c.member) {
        for k in 0..NTRES {
            used[k] = used[k].saturating_sub(c.tres[k]);
        }
    }
}

/// Why pending job `id` may not start now as far as borrowing goes: `CohortBorrowLimit`
/// or `CohortQuota` (see the module docs); `None` when it may.
pub(crate) fn hold_reason(s: &Scheduler, id: JobId) -> Option<&'static str> {
    hold(s, id).map(|h| h.reason)
}

/// [`hold_reason`] with its numbers: the TRES over quota, the limit (quota plus
/// `BorrowLimit` for `CohortBorrowLimit`, the members' quotas together for
/// `CohortQuota`), what the member (or the whole cohort) uses and what the job asks.
/// Its scope is `None`: cohorts are not accounting scopes.
pub(crate) fn hold(s: &Scheduler, id: JobId) -> Option<Hold> {
    if !s.borrow.active() {
        return None;
    }
    let job = &s.jobs[&id];
    let m = member_of(s, job)?;
    let st = &s.borrow;
    let r = request_tres(&job.spec.request).0;
    let (cohort, member) = &st.members[&m];
    let used = st.used(m);
    for &(k, q) in &member.quota {
        let k_i = k.index();
        let want = used[k_i] + r[k_i];
        if want <= q {
            continue;
        }
        let limit = crate::limits::tres_limit(&member.borrow_limit, k);
        if let Some(l) = limit.filter(|&l| want > q.saturating_add(l)) {
            return Some(Hold {
                reason: BORROW_LIMIT,
                scope: None,
                measure: Measure::Tres(k),
                limit: q.saturating_add(l),
                in_use: used[k_i],
                job: r[k_i],
            });
        }
        let (mut total_q, mut total_u) = (0u64, r[k_i]);
        for other in &st.cohorts[*cohort] {
            let (_, o) = &st.members[other];
            if let Some(oq) = crate::limits::tres_limit(&o.quota, k) {
                total_q += oq;
                total_u += st.used(*other)[k_i];
            }
        }
        if total_u > total_q {
            return Some(Hold {
                reason: COHORT_QUOTA,
                scope: None,
                measure: Measure::Tres(k),
                limit: total_q,
                in_use: total_u - r[k_i],
                job: r[k_i],
            });
        }
    }
    None
}

/// The reason of a job that would borrow beyond its member's `BorrowLimit`.
pub const BORROW_LIMIT: &str = "CohortBorrowLimit";

/// The reason of a job that would borrow more than its cohort's members leave unused.
pub const COHORT_QUOTA: &str = "CohortQuota";

/// Whether pending job `by` reclaims: its member would stay within its quota with it.
pub(crate) fn reclaims(s: &Scheduler, by: &Job) -> bool {
    if !s.borrow.active() {
        return false;
    }
    let Some(m) = member_of(s, by) else {
        return false;
    };
    s.borrow.within(m, &request_tres(&by.spec.request).0)
}

/// The grace time with which `by` (which reclaims) may preempt running `victim`: a
/// borrowed job of another member of its cohort that still runs above its quota.
pub(crate) fn may_reclaim(s: &Scheduler, by: &Job, victim: &Job) -> Option<Secs> {
    let st = &s.borrow;
    let c = st.jobs.get(&victim.id()).filter(|c| c.borrowed)?;
    let m = member_of(s, by)?;
    let (cohort, _) = &st.members[&m];
    let (vcohort, vmember) = &st.members[&c.member];
    (c.member != m && cohort == vcohort && st.above(c.member)).then_some(vmember.grace_time)
}
