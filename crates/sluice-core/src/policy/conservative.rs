//! Conservative backfilling (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).
//!
//! Every job gets a reservation when it arrives: the earliest time at which it fits for
//! its whole time limit, given the running jobs and all reservations made before it. It
//! starts when that time comes. When a job ends before its time limit, every job not yet
//! started is, in submission order, taken out of the profile and put back at its
//! earliest fit — which is never later than before, so no reservation is ever delayed.

use std::collections::BTreeSet;

use crate::decision::{Decision, Pass};
use crate::ids::JobId;
use crate::job::{Allocation, Job, NodeAlloc, PendingReason};
use crate::scheduler::{QueueKey, Scheduler};
use crate::side_claims;
use crate::time::{Time, NEVER};

/// Reservations of the conservative policy.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Queued jobs without a reservation yet (new, or no nodes available at all).
    pub(crate) unplanned: BTreeSet<QueueKey>,
    /// Reserved jobs by planned start.
    pub(crate) planned: BTreeSet<(Time, QueueKey)>,
    /// A job ended before its time limit (or a reservation was withdrawn) since the last
    /// pass: reservations may move earlier.
    pub(crate) ended_early: bool,
}

/// Drops what a cancelled pending job held.
pub(crate) fn forget(s: &mut Scheduler, job: &Job, key: QueueKey) {
    s.conservative.unplanned.remove(&key);
    if let (Some(t), Some(alloc)) = (job.planned_start, &job.alloc) {
        if s.conservative.planned.remove(&(t, key)) {
            s.profile
                .release_all(&alloc.nodes, t, t + job.spec.time_limit);
            s.conservative.ended_early = true;
        }
    }
}

/// Withdraws the reservations that use any of `nodes` during `[from, to)`, leaving
/// their jobs to be planned again in queue order.
pub(crate) fn withdraw_conflicting(s: &mut Scheduler, nodes: &[NodeAlloc], from: Time, to: Time) {
    let clashing: Vec<(Time, QueueKey)> = s
        .conservative
        .planned
        .iter()
        .take_while(|(t, _)| *t < to)
        .filter(|(t, key)| {
            let job = &s.jobs[&s.queue[key]];
            *t + job.spec.time_limit > from
                && job.alloc.as_ref().is_some_and(|a| {
                    a.nodes
                        .iter()
                        .any(|x| nodes.iter().any(|n| n.node == x.node))
                })
        })
        .copied()
        .collect();
    for (_, key) in clashing {
        let id = s.queue[&key];
        withdraw(s, id, key);
        s.conservative.unplanned.insert(key);
    }
}

/// Withdraws `id`'s reservation from the profile.
fn withdraw(s: &mut Scheduler, id: JobId, key: QueueKey) {
    let job = s.jobs.get_mut(&id).expect("queued job exists");
    if let (Some(t), Some(alloc)) = (job.planned_start.take(), job.alloc.take()) {
        s.conservative.planned.remove(&(t, key));
        s.profile
            .release_all(&alloc.nodes, t, t + job.spec.time_limit);
    }
}

/// Gives `id` a reservation at its earliest fit, starting it at once if that is `now`.
fn place(s: &mut Scheduler, id: JobId, key: QueueKey, now: Time, out: &mut Vec<Decision>) {
    let job = &s.jobs[&id];
    let filter = s.filter_for(job);
    let limit = job.spec.time_limit;
    let t0 = now.max(job.spec.begin);
    let found = s
        .profile
        .earliest_start(&s.cluster, &job.spec.request, filter, limit, t0, NEVER);
    // Starting now also takes the job's GPUs (see `crate::gpus`); when their side
    // claims collide with a reservation, it is planned again at the next pass.
    let found = match found {
        Some((t, nodes)) if t == now => match side_claims::place(s, id, nodes, now, None, false) {
            Some(nodes) => Some((t, nodes)),
            None => {
                s.set_reason(id, PendingReason::Resources);
                s.conservative.unplanned.insert(key);
                return;
            }
        },
        other => other,
    };
    match found {
        Some((t, nodes)) if t == now => s.start(id, now, nodes, Pass::Main, false, out),
        Some((t, nodes)) => {
            s.profile.claim_all(&nodes, t, t + limit);
            let job = s.jobs.get_mut(&id).expect("queued job exists");
            job.planned_start = Some(t);
            job.alloc = Some(Allocation { nodes });
            job.reason = if job.spec.begin > now {
                PendingReason::BeginTime
            } else {
                PendingReason::Resources
            };
            s.conservative.planned.insert((t, key));
        }
        None => {
            s.set_reason(id, PendingReason::Resources);
            s.conservative.unplanned.insert(key);
        }
    }
}

/// Runs one conservative pass at `now`.
pub(crate) fn pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    if std::mem::take(&mut s.conservative.ended_early) {
        let mut waiting: Vec<QueueKey> = s
            .conservative
            .planned
            .iter()
            .filter(|(t, _)| *t > now)
            .map(|(_, k)| *k)
            .collect();
        waiting.sort();
        for key in waiting {
            let id = s.queue[&key];
            withdraw(s, id, key);
            place(s, id, key, now, out);
        }
    }
    for key in std::mem::take(&mut s.conservative.unplanned) {
        let id = s.queue[&key];
        place(s, id, key, now, out);
    }
    while let Some(&(t, key)) = s.conservative.planned.iter().next() {
        if t > now {
            break;
        }
        s.conservative.planned.remove(&(t, key));
        let id = s.queue[&key];
        let job = s.jobs.get_mut(&id).expect("queued job exists");
        let alloc = job.alloc.take().expect("planned jobs have nodes");
        let limit = job.spec.time_limit;
        let placed = if t == now {
            side_claims::place(s, id, alloc.nodes.clone(), now, None, true).or_else(|| {
                // Plans carry no side claims (which GPU a job gets is decided at its
                // start), so two reservations may count on the same GPU, one whole and
                // one for shards: the one coming due starts, and the reservations its
                // GPUs collide with are planned again.
                withdraw_conflicting(s, &alloc.nodes, now, now + limit);
                side_claims::place(s, id, alloc.nodes.clone(), now, None, true)
            })
        } else {
            None
        };
        if let Some(nodes) = placed {
            s.start(id, now, nodes, Pass::Reservation, true, out);
        } else if t == now {
            // Its GPUs' side claims collide with something that is not a reservation
            // (an advance reservation's hold): planned again next pass.
            let job = s.jobs.get_mut(&id).expect("queued job exists");
            job.planned_start = None;
            s.profile.release_all(&alloc.nodes, t, t + limit);
            s.set_reason(id, PendingReason::Resources);
            s.conservative.unplanned.insert(key);
        } else {
            // Called late: the reservation slid into the past. Re-plan from now.
            let job = s.jobs.get_mut(&id).expect("queued job exists");
            job.planned_start = None;
            s.profile.release_all(&alloc.nodes, t, t + limit);
            place(s, id, key, now, out);
        }
    }
    // Reservations withdrawn for a start above are planned again at once.
    for key in std::mem::take(&mut s.conservative.unplanned) {
        let id = s.queue[&key];
        place(s, id, key, now, out);
    }
}
