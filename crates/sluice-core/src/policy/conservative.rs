//! Conservative backfilling (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).
//!
//! Every job gets a reservation when it arrives: the earliest time at which it fits for
//! its whole time limit, given the running jobs and all reservations made before it. It
//! starts when that time comes. When a job ends — whether before its time limit or at
//! it — every job not yet started is, in submission order, taken out of the profile and
//! put back at its earliest fit, which is never later than before, so no reservation is
//! ever delayed.
//!
//! Two rules make the result exactly that of the reference simulator (Feitelson's
//! group's), and are kept for every trace:
//!
//! - **Every end compresses.** One compression is not a fixed point: a job put back
//!   earlier frees its old place, which a job submitted before it (already put back in
//!   that compression) could have used. So a job ending at its time limit, which frees
//!   nothing itself, still lets reservations move, and two jobs ending at the same
//!   instant compress twice, each after its own end.
//! - **Ties in start time keep the order in which reservations were made.** Jobs whose
//!   reservations come due at the same instant start in the order their reservations
//!   were last set (a reservation put back at the time it already had keeps its place),
//!   and before any job placed at that instant by the pass itself. Their starting order
//!   is the order of their ends when those tie too, and so of the compressions that
//!   follow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
    /// Reserved jobs by planned start, then by the order in which their reservations
    /// were set.
    planned: BTreeSet<(Time, u64, QueueKey)>,
    /// Each reserved job's place in that order.
    order: BTreeMap<QueueKey, u64>,
    /// The last place given.
    last_order: u64,
    /// A job ended (or a reservation was withdrawn) since the last pass: reservations
    /// may move earlier.
    pub(crate) ended_early: bool,
}

impl State {
    /// Records `key`'s reservation at `t`, at `order` (a reservation put back at the
    /// time it had keeps its place) or after every reservation made so far.
    fn plan(&mut self, t: Time, key: QueueKey, order: Option<u64>) {
        let order = order.unwrap_or_else(|| {
            self.last_order += 1;
            self.last_order
        });
        self.order.insert(key, order);
        self.planned.insert((t, order, key));
    }

    /// Drops `key`'s reservation at `t`; returns its place, or `None` when it had none.
    fn unplan(&mut self, t: Time, key: QueueKey) -> Option<u64> {
        let order = self.order.remove(&key)?;
        self.planned.remove(&(t, order, key)).then_some(order)
    }

    /// The earliest planned start, if any job holds a reservation.
    pub(crate) fn next_start(&self) -> Option<Time> {
        self.planned.first().map(|&(t, _, _)| t)
    }
}

/// Drops what a cancelled pending job held.
pub(crate) fn forget(s: &mut Scheduler, job: &Job, key: QueueKey) {
    s.conservative.unplanned.remove(&key);
    if let (Some(t), Some(alloc)) = (job.planned_start, &job.alloc) {
        if s.conservative.unplan(t, key).is_some() {
            s.profile
                .release_all(&alloc.nodes, t, t + job.spec.time_limit);
            s.conservative.ended_early = true;
        }
    }
}

/// Withdraws the reservations that use any of `nodes` during `[from, to)`, leaving
/// their jobs to be planned again in queue order.
pub(crate) fn withdraw_conflicting(s: &mut Scheduler, nodes: &[NodeAlloc], from: Time, to: Time) {
    let clashing: Vec<(Time, u64, QueueKey)> = s
        .conservative
        .planned
        .iter()
        .take_while(|(t, _, _)| *t < to)
        .filter(|(t, _, key)| {
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
    for (_, _, key) in clashing {
        let id = s.queue[&key];
        withdraw(s, id, key);
        s.conservative.unplanned.insert(key);
    }
}

/// Withdraws `id`'s reservation from the profile; returns its time and place in the
/// order of reservations, if it had one.
fn withdraw(s: &mut Scheduler, id: JobId, key: QueueKey) -> Option<(Time, u64)> {
    s.note(id);
    let job = s
        .jobs
        .get_mut(&id)
        .map(Arc::make_mut)
        .expect("queued job exists");
    let (Some(t), Some(alloc)) = (job.planned_start.take(), job.alloc.take()) else {
        return None;
    };
    s.profile
        .release_all(&alloc.nodes, t, t + job.spec.time_limit);
    s.conservative.unplan(t, key).map(|order| (t, order))
}

/// Gives `id` a reservation at its earliest fit, starting it at once if that is `now`.
/// `before`: the reservation it had, whose place it keeps if it is put back at the
/// same time.
fn place(
    s: &mut Scheduler,
    id: JobId,
    key: QueueKey,
    now: Time,
    before: Option<(Time, u64)>,
    out: &mut Vec<Decision>,
) {
    if s.het.is_follower(id) {
        // A heterogeneous job's component: started with its leader.
        return;
    }
    if s.het.is_leader(id) {
        // A heterogeneous job starts when all of it fits now; it holds no reservation.
        let ready = s.jobs[&id].spec.begin <= now;
        match ready.then(|| s.fit_now(id, now)).flatten() {
            Some(nodes) => s.start(id, now, nodes, Pass::Main, false, out),
            None => {
                s.set_reason(id, PendingReason::Resources);
                s.conservative.unplanned.insert(key);
            }
        }
        return;
    }
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
            s.note(id);
            let job = s
                .jobs
                .get_mut(&id)
                .map(Arc::make_mut)
                .expect("queued job exists");
            job.planned_start = Some(t);
            job.alloc = Some(Allocation { nodes });
            job.reason = if job.spec.begin > now {
                PendingReason::BeginTime
            } else {
                PendingReason::Resources
            };
            job.unavailable_nodes.clear();
            let order = before.filter(|&(was, _)| was == t).map(|(_, o)| o);
            s.conservative.plan(t, key, order);
        }
        None => {
            s.set_reason(id, PendingReason::Resources);
            s.conservative.unplanned.insert(key);
        }
    }
}

/// Runs one conservative pass at `now`: the reservations coming due start first, in
/// the order they were made; then, after a job ended, every reservation is put back in
/// submission order; then jobs without one are placed.
pub(crate) fn pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    start_due(s, now, out);
    if std::mem::take(&mut s.conservative.ended_early) {
        let mut waiting: Vec<QueueKey> = s
            .conservative
            .planned
            .iter()
            .filter(|(t, _, _)| *t > now)
            .map(|&(_, _, k)| k)
            .collect();
        waiting.sort();
        for key in waiting {
            let id = s.queue[&key];
            let before = withdraw(s, id, key);
            place(s, id, key, now, before, out);
        }
    }
    // New jobs, and reservations withdrawn for a start above.
    for key in std::mem::take(&mut s.conservative.unplanned) {
        let id = s.queue[&key];
        place(s, id, key, now, None, out);
    }
}

/// Starts the jobs whose reservations have come due, in the order of their planned
/// starts and, at equal times, of the reservations' making.
fn start_due(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    while let Some(&(t, order, key)) = s.conservative.planned.first() {
        if t > now {
            break;
        }
        s.conservative.planned.remove(&(t, order, key));
        s.conservative.order.remove(&key);
        let id = s.queue[&key];
        let job = s
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .expect("queued job exists");
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
            s.set_planned(id, None);
            s.profile.release_all(&alloc.nodes, t, t + limit);
            s.set_reason(id, PendingReason::Resources);
            s.conservative.unplanned.insert(key);
        } else {
            // Called late: the reservation slid into the past. Re-plan from now.
            s.set_planned(id, None);
            s.profile.release_all(&alloc.nodes, t, t + limit);
            place(s, id, key, now, None, out);
        }
    }
}
