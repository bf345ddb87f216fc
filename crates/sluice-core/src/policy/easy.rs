//! EASY backfilling (Lifka, "The ANL/IBM SP scheduling system", 1995; as evaluated by
//! Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).
//!
//! First as FCFS. Then the job left at the head gets a reservation at the earliest time
//! it fits given the running jobs' *expected* ends (its "shadow time"). Every later job
//! that fits now and, with the head's reservation in the profile, still fits for its
//! whole time limit, starts now: it either ends before the shadow time or uses only
//! resources the head will not need. The head's reservation is recomputed after each
//! backfilled job.

use crate::decision::{Decision, Pass};
use crate::ids::JobId;
use crate::job::{NodeAlloc, PendingReason};
use crate::scheduler::Scheduler;
use crate::time::{Time, NEVER};

/// The head job's temporary reservation: one claim, or one per component of a
/// heterogeneous job.
struct Shadow {
    start: Time,
    claims: Vec<(Vec<NodeAlloc>, Time)>,
}

fn reserve(s: &mut Scheduler, head: JobId, now: Time) -> Option<Shadow> {
    if s.het.is_leader(head) {
        // A heterogeneous job is reserved whole: the earliest time every component
        // fits beside the others, each on its own nodes.
        let (start, placed) = crate::het::plan(s, &s.profile, head, now, NEVER, 1)?;
        let claims: Vec<(Vec<NodeAlloc>, Time)> = placed
            .into_iter()
            .map(|(m, nodes)| (nodes, start + s.jobs[&m].spec.time_limit.max(1)))
            .collect();
        for (nodes, end) in &claims {
            s.profile.claim_all(nodes, start, *end);
        }
        return Some(Shadow { start, claims });
    }
    let job = &s.jobs[&head];
    let filter = s.filter_for(job);
    let limit = job.spec.time_limit;
    let (start, nodes) =
        s.profile
            .earliest_start(&s.cluster, &job.spec.request, filter, limit, now, NEVER)?;
    let end = start + limit;
    s.profile.claim_all(&nodes, start, end);
    Some(Shadow {
        start,
        claims: vec![(nodes, end)],
    })
}

fn unreserve(s: &mut Scheduler, shadow: Option<Shadow>) {
    if let Some(sh) = shadow {
        for (nodes, end) in sh.claims.iter().rev() {
            s.profile.release_all(nodes, sh.start, *end);
        }
    }
}

/// Runs one EASY pass at `now`.
pub(crate) fn pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    let Some((head_key, head)) = super::fcfs::pass(s, now, out) else {
        return;
    };
    let mut shadow = reserve(s, head, now);
    let mut cursor = Some(head_key);
    while let Some((key, id)) = s.next_in_queue(cursor) {
        cursor = Some(key);
        if !s.eligible(id, now) {
            continue;
        }
        match s.fit_now(id, now) {
            Some(nodes) => {
                s.start(id, now, nodes, Pass::Backfill, false, out);
                unreserve(s, shadow.take());
                shadow = reserve(s, head, now);
            }
            None => s.set_reason(id, PendingReason::Priority),
        }
    }
    let planned = shadow.as_ref().map(|sh| sh.start);
    unreserve(s, shadow);
    s.set_planned(head, planned);
}
