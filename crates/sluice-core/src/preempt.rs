//! Preemption: a pending job that cannot start takes the place of running jobs it
//! outranks (Slurm's `PreemptType=preempt/partition_prio` and `preempt/qos`).
//!
//! After every pass, each pending job that waits for resources (reason `Resources` or
//! `Priority`, eligible in every other way) looks for running jobs it may preempt:
//!
//! - `preempt/partition_prio`: jobs of partitions with a lower `PriorityTier`;
//! - `preempt/qos`: jobs whose QOS is in its own QOS's `Preempt` list;
//!
//! in both cases only jobs on nodes of its partition, whose mode (their QOS's
//! `PreemptMode` under `preempt/qos`, their partition's under `partition_prio`, else the
//! cluster's) is not `OFF`, running for at least `PreemptExemptTime`, and not already
//! being preempted. It preempts the fewest of them that let it start now for its whole
//! time limit; among sets of that size, the one with the least run time in total (the
//! youngest jobs, least work lost); never a job more than needed. Each victim gets a
//! [`Decision::Preempt`] with its mode and grace time (its QOS's `GraceTime`, else its
//! partition's, else 0).
//!
//! The victims keep their resources until the caller reports them ended. What each
//! frees is then *held* for the preemptor (claimed on the profile and the free-node
//! index, so no other job takes it), and once the last victim is gone the preemptor
//! starts there, ahead of every pass ([`Pass::Preempt`]). A preemptor that starts
//! elsewhere first, is cancelled, or becomes ineligible gives its holds back at the next
//! pass.
//!
//! Borrowed jobs (see [`crate::borrow`]) are candidates too, even under
//! `preempt/none`: a pending job within its account's cohort quota may preempt the
//! borrowed jobs of the other members of its cohort (always `REQUEUE`, with the
//! borrowing member's `GraceTime`). Among all its candidates, a set of borrowed jobs
//! alone is chosen whenever one lets it start, by the same rule.
//!
//! Victims whose mode is `SUSPEND` are suspended in the same pass and their preemptor
//! starts at once on what they held; they resume when it is free again (see
//! [`crate::gang`]).
//!
//! Deviations from Slurm, on purpose or for now:
//! - The victims are chosen by the rule above (fewest jobs, then least run time), not by
//!   Slurm's `preempt_youngest_first`/priority ordering; the result is the same
//!   youngest-first choice in the common cases and never preempts more than needed.
//! - At most [`MAX_PREEMPTORS`] pending jobs look for victims in one pass, and the
//!   exact search for the smallest set is bounded ([`SEARCH_BUDGET`] trial fits), after
//!   which victims are added youngest first and the surplus removed.
//! - The caller persists preemptions under way and hands them back after a restart
//!   ([`Scheduler::restore_preemption`]); what ended victims had freed before the
//!   restart is not held again (the preemptor competes for it in the next pass).

pub mod config;

use std::collections::BTreeMap;

use crate::decision::{Decision, Pass};
use crate::ids::JobId;
use crate::job::{Job, JobState, NodeAlloc, PendingReason};
use crate::policy::conservative;
use crate::reservation;
use crate::scheduler::Scheduler;
use crate::side_claims;
use crate::time::{Secs, Time, MAX_TIME, MAX_TIME_LIMIT};

pub use config::{PreemptConfig, PreemptMode, PreemptType};

/// Pending jobs that look for victims in one pass, at most.
pub const MAX_PREEMPTORS: usize = 100;

/// Trial fits the exact search for the smallest set of victims may make for one job.
pub const SEARCH_BUDGET: usize = 512;

/// Holds last until released; this is later than any claim a job can make.
const HOLD_END: Time = MAX_TIME + 2 * MAX_TIME_LIMIT;

/// A preemptor waiting for its victims.
#[derive(Clone, Debug, Default)]
struct Waiting {
    /// Victims still running.
    running: Vec<JobId>,
    /// What the ended victims freed, held for the preemptor: (victim, nodes, since).
    held: Vec<(JobId, Vec<NodeAlloc>, Time)>,
}

/// Preemptions under way.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// By preemptor.
    waiting: BTreeMap<JobId, Waiting>,
    /// Each victim still running, with its preemptor.
    victim_of: BTreeMap<JobId, JobId>,
}

impl State {
    /// The preemptor `victim` is being preempted for, if any.
    pub(crate) fn preemptor_of(&self, victim: JobId) -> Option<JobId> {
        self.victim_of.get(&victim).copied()
    }

    /// Whether pending job `by` waits for victims of its own.
    pub(crate) fn preempts(&self, by: JobId) -> bool {
        self.waiting.contains_key(&by)
    }
}

/// The key under which a hold sits in the backfill plan (ids in the top half are
/// never jobs').
fn hold_key(victim: JobId) -> JobId {
    JobId(victim.0 | 1 << 63)
}

/// A victim ended at `now` (after [`Scheduler::job_ended`] released it): what it held is
/// held for its preemptor, if that is still pending. `expired`: its resources were
/// already counted free at its expected end (the simulator's rule), and others may have
/// them: nothing is held then.
pub(crate) fn victim_ended(
    s: &mut Scheduler,
    victim: JobId,
    nodes: &[NodeAlloc],
    expired: bool,
    now: Time,
) {
    let Some(by) = s.preempt.victim_of.remove(&victim) else {
        return;
    };
    let pending = s.keys.contains_key(&by);
    let Some(w) = s.preempt.waiting.get_mut(&by) else {
        return;
    };
    w.running.retain(|&v| v != victim);
    if !pending || expired {
        return;
    }
    w.held.push((victim, nodes.to_vec(), now));
    reservation::release_holds(s);
    conservative::withdraw_conflicting(s, nodes, now, HOLD_END);
    s.profile.claim_all(nodes, now, HOLD_END);
    s.free_now.take(&s.cluster, nodes);
    s.backfill.on_start(hold_key(victim), nodes, now, HOLD_END);
    reservation::claim_holds(s, now);
}

/// See [`Scheduler::restore_preemption`].
pub(crate) fn restore(s: &mut Scheduler, by: JobId, victims: &[JobId]) {
    let running: Vec<JobId> = victims
        .iter()
        .copied()
        .filter(|v| s.jobs.get(v).is_some_and(|j| j.state == JobState::Running))
        .filter(|v| !s.preempt.victim_of.contains_key(v))
        .collect();
    if running.is_empty() {
        return;
    }
    let state = &mut s.preempt;
    let w = state.waiting.entry(by).or_default();
    for v in running {
        state.victim_of.insert(v, by);
        w.running.push(v);
    }
}

/// Gives back what is held for `by` at `now`.
fn release(s: &mut Scheduler, held: Vec<(JobId, Vec<NodeAlloc>, Time)>, now: Time) {
    if held.is_empty() {
        return;
    }
    reservation::release_holds(s);
    for (victim, nodes, since) in held {
        s.profile.release_all(&nodes, since.max(now), HOLD_END);
        s.free_now.give_back(&s.cluster, &nodes);
        s.backfill.on_end(hold_key(victim), &nodes, now);
    }
    reservation::claim_holds(s, now);
    s.conservative.ended_early = true;
    s.backfill.dirty = true;
}

/// Before every pass: preemptors whose victims are all gone start on what they freed;
/// preemptors no longer pending give their holds back.
pub(crate) fn start_ready(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    let mut ready: Vec<_> = s
        .preempt
        .waiting
        .iter()
        .filter(|(by, w)| w.running.is_empty() || !s.keys.contains_key(by))
        .map(|(&by, _)| by)
        .collect();
    ready.sort_by_key(|by| s.keys.get(by).copied());
    for by in ready {
        let w = s.preempt.waiting.remove(&by).expect("listed above");
        for v in &w.running {
            s.preempt.victim_of.remove(v);
        }
        release(s, w.held, now);
        if !s.keys.contains_key(&by) || !s.eligible(by, now) {
            continue;
        }
        if let Some(nodes) = s.fit_now(by, now) {
            s.start(by, now, nodes, Pass::Preempt, false, out);
        }
    }
}

/// A running job `by` may preempt.
#[derive(Clone, Copy, Debug)]
struct Cand {
    start: Time,
    id: JobId,
    mode: PreemptMode,
    grace: Secs,
    /// A borrowed job taken back (see [`crate::borrow`]).
    reclaim: bool,
}

/// After every pass: pending jobs waiting for resources preempt what they may.
pub(crate) fn pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    let cohorts = s.borrow.active();
    if (s.cluster.preempt.kind == PreemptType::None && !cohorts) || s.running_count() == 0 {
        return;
    }
    let waiting: Vec<JobId> = s
        .queue
        .values()
        .copied()
        .filter(|id| {
            matches!(
                s.jobs[id].reason,
                PendingReason::Resources | PendingReason::Priority
            ) && !s.preempt.waiting.contains_key(id)
                && s.resv.of_job(*id).is_none()
        })
        .take(MAX_PREEMPTORS)
        .collect();
    let mut suspended = false;
    for by in waiting {
        if !s.eligible(by, now) {
            continue;
        }
        let mut cands = candidates(s, by, now);
        if cands.is_empty() {
            continue;
        }
        // Youngest first: latest start, then latest id.
        cands.sort_by_key(|c| std::cmp::Reverse((c.start, c.id)));
        // Borrowed jobs first: a set of them alone, if one lets `by` start.
        let borrowed: Vec<Cand> = cands.iter().copied().filter(|c| c.reclaim).collect();
        let mut chosen = None;
        if !borrowed.is_empty() && borrowed.len() < cands.len() {
            chosen = choose(s, by, &borrowed, now).map(|set| pick(&borrowed, set));
        }
        if chosen.is_none() {
            chosen = choose(s, by, &cands, now).map(|set| pick(&cands, set));
        }
        let Some(chosen) = chosen else {
            continue;
        };
        let mut w = Waiting::default();
        for c in &chosen {
            s.preempt.victim_of.insert(c.id, by);
            w.running.push(c.id);
            out.push(Decision::Preempt {
                victim: c.id,
                by,
                at: now,
                mode: c.mode,
                grace: c.grace,
                reclaim: c.reclaim,
            });
        }
        s.preempt.waiting.insert(by, w);
        s.set_reason(by, PendingReason::Resources);
        // Victims suspended give their resources to `by` at once (see `crate::gang`).
        for c in chosen.iter().filter(|c| c.mode == PreemptMode::Suspend) {
            crate::gang::suspend(s, c.id, by, now);
            suspended = true;
        }
    }
    if suspended {
        start_ready(s, now, out);
    }
}

/// The candidates at `set`'s indices.
fn pick(cands: &[Cand], set: Vec<usize>) -> Vec<Cand> {
    set.into_iter().map(|i| cands[i]).collect()
}

/// Every running job `by` may preempt at `now`: borrowed jobs it reclaims (see
/// [`crate::borrow`]) and jobs `PreemptType` lets it preempt.
fn candidates(s: &Scheduler, by: JobId, now: Time) -> Vec<Cand> {
    let bjob = &s.jobs[&by];
    let reclaims = crate::borrow::reclaims(s, bjob);
    s.jobs
        .values()
        .filter(|v| preemptible(s, bjob, v, now))
        .filter_map(|v| {
            let start = v.start?;
            let id = v.id();
            if let Some(grace) = reclaims
                .then(|| crate::borrow::may_reclaim(s, bjob, v))
                .flatten()
            {
                let mode = PreemptMode::Requeue;
                return Some(Cand {
                    start,
                    id,
                    mode,
                    grace,
                    reclaim: true,
                });
            }
            let (mode, grace) = may_preempt(s, bjob, v)?;
            Some(Cand {
                start,
                id,
                mode,
                grace,
                reclaim: false,
            })
        })
        .collect()
}

/// Whether `victim` may be preempted at all at `now`, for `by`: running for at least
/// `PreemptExemptTime`, not already being preempted or ended, a user's job, on a node
/// of `by`'s partition.
fn preemptible(s: &Scheduler, by: &Job, victim: &Job, now: Time) -> bool {
    let Some(start) = victim.start else {
        return false;
    };
    if victim.state != JobState::Running
        || s.preempt.victim_of.contains_key(&victim.id())
        || s.expired.contains(&victim.id())
        || s.ending.contains(&victim.id())
        || now - start < s.cluster.preempt.exempt_time
    {
        return false;
    }
    let ours = &s.cluster.partition(by.spec.partition).nodes;
    victim
        .alloc
        .as_ref()
        .is_some_and(|a| a.nodes.iter().any(|a| ours.binary_search(&a.node).is_ok()))
}

/// Whether `by` may preempt `victim` (found [`preemptible`]) under `PreemptType`, and
/// if so with which mode and grace.
fn may_preempt(s: &Scheduler, by: &Job, victim: &Job) -> Option<(PreemptMode, Secs)> {
    let cfg = s.cluster.preempt;
    let vpart = s.cluster.partition(victim.spec.partition);
    let vqos = victim
        .spec
        .acct
        .qos
        .and_then(|q| s.accounts.qos.get(&q).map(|r| (q, r)));
    let mode = match cfg.kind {
        PreemptType::None => return None,
        PreemptType::PartitionPrio => {
            let bpart = s.cluster.partition(by.spec.partition);
            if vpart.priority_tier >= bpart.priority_tier {
                return None;
            }
            vpart.preempt_mode.unwrap_or(cfg.mode)
        }
        PreemptType::Qos => {
            let (vq, vrec) = vqos?;
            let brec = s.accounts.qos.get(&by.spec.acct.qos?)?;
            brec.preempt.binary_search(&vq).ok()?;
            vrec.preempt_mode.unwrap_or(cfg.mode)
        }
    };
    if mode == PreemptMode::Off {
        return None;
    }
    let grace = match vqos {
        Some((_, r)) if r.grace_time > 0 => r.grace_time,
        _ => vpart.grace_time,
    };
    Some((mode, grace))
}

/// Whether `by` could start at `now` if the jobs `set` (indices into `cands`) were gone.
fn fits_without(s: &mut Scheduler, by: JobId, cands: &[Cand], set: &[usize], now: Time) -> bool {
    let gone: Vec<(Vec<NodeAlloc>, Time)> = set
        .iter()
        .map(|&i| {
            let v = cands[i].id;
            let nodes = s.jobs[&v].alloc.as_ref().expect("running").nodes.clone();
            (nodes, s.claim_end[&v])
        })
        .collect();
    for (&i, (nodes, end)) in set.iter().zip(&gone) {
        if now < *end {
            s.profile.release_all(nodes, now, *end);
        }
        s.free_now.give_back(&s.cluster, nodes);
        side_claims::give_back(s, cands[i].id, nodes, now);
    }
    let fits = s.fit_now(by, now).is_some();
    for (&i, (nodes, end)) in set.iter().zip(&gone).rev() {
        side_claims::take(s, cands[i].id, nodes, now);
        if now < *end {
            s.profile.claim_all(nodes, now, *end);
        }
        s.free_now.take(&s.cluster, nodes);
    }
    fits
}

/// The victims to preempt for `by` (indices into `cands`, youngest first): the fewest
/// that let it start, with the least run time in total among sets of that size; `None`
/// when even all of them would not.
fn choose(s: &mut Scheduler, by: JobId, cands: &[Cand], now: Time) -> Option<Vec<usize>> {
    let all: Vec<usize> = (0..cands.len()).collect();
    if !fits_without(s, by, cands, &all, now) {
        return None;
    }
    let mut budget = SEARCH_BUDGET;
    for k in 1..=cands.len() {
        if combinations(cands.len(), k) > budget as u128 {
            break;
        }
        budget -= combinations(cands.len(), k) as usize;
        // Run time in total (lower is better), then the set itself (determinism).
        let mut best: Option<(Time, Vec<usize>)> = None;
        let mut set: Vec<usize> = (0..k).collect();
        loop {
            let run: Time = set.iter().map(|&i| now - cands[i].start).sum();
            if best.as_ref().is_none_or(|(r, _)| run < *r) && fits_without(s, by, cands, &set, now)
            {
                best = Some((run, set.clone()));
            }
            if !next_combination(&mut set, cands.len()) {
                break;
            }
        }
        if let Some((_, set)) = best {
            return Some(set);
        }
    }
    // Too many to search: the youngest until it fits, then drop any not needed (oldest
    // first).
    let mut set = Vec::new();
    for i in 0..cands.len() {
        set.push(i);
        if fits_without(s, by, cands, &set, now) {
            break;
        }
    }
    for pos in (0..set.len()).rev() {
        let mut fewer = set.clone();
        fewer.remove(pos);
        if !fewer.is_empty() && fits_without(s, by, cands, &fewer, now) {
            set = fewer;
        }
    }
    Some(set)
}

/// n choose k (saturating).
fn combinations(n: usize, k: usize) -> u128 {
    let mut c: u128 = 1;
    for i in 0..k as u128 {
        c = c.saturating_mul(n as u128 - i) / (i + 1);
    }
    c
}

/// The next k-subset of 0..n in lexicographic order; false after the last.
fn next_combination(set: &mut [usize], n: usize) -> bool {
    let k = set.len();
    for i in (0..k).rev() {
        if set[i] < n - k + i {
            set[i] += 1;
            for j in i + 1..k {
                set[j] = set[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_in_order() {
        let mut set = vec![0, 1];
        let mut all = vec![set.clone()];
        while next_combination(&mut set, 4) {
            all.push(set.clone());
        }
        assert_eq!(
            all,
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
        assert_eq!(combinations(4, 2), 6);
        assert_eq!(combinations(50, 3), 19_600);
    }
}
