//! Preemption by suspension (`PreemptMode=SUSPEND,GANG`): a victim whose mode is
//! `SUSPEND` is not ended but stopped where it stands, and its preemptor runs on what
//! it held; once that is free again, the victim resumes on the very same resources.
//!
//! The rules, after Slurm 22.05's gang scheduler (`src/slurmctld/gang.c`) and
//! `preempt/partition_prio`:
//!
//! - When [`crate::preempt`] picks a victim whose mode is `SUSPEND`, the victim is
//!   suspended in the same pass ([`suspend`]): its state becomes
//!   [`JobState::Suspended`], it gives back everything it holds (its claim, its GPUs),
//!   and what it freed is held for its preemptor, which starts in that same pass once
//!   no victim it waits for is still running.
//! - Before every pass ([`resume_ready`]), suspended jobs resume, longest suspended
//!   first, each when every resource of its allocation is free now (in practice: when
//!   its preemptor has ended). Resuming comes before any other start, so the resources
//!   a preemptor gives back go to the job it suspended.
//! - A resumed job's time limit runs out as much later as it stood suspended (its
//!   `suspended_secs`), as after an operator's `scontrol resume`.
//! - A suspended job that ends (cancelled, its node failed) is simply gone
//!   ([`job_ended`]): it held nothing.
//!
//! Deviations from Slurm, on purpose or for now:
//! - Slurm keeps a suspended job's resources allocated to it and lets only the
//!   preemptor overcommit them; Sluice gives them back, so what the preemptor does not
//!   use may go to other jobs meanwhile, and the victim then waits for those too.
//! - Time-slicing of jobs that oversubscribe the same processors
//!   (`OverSubscribe=FORCE:N`, every `SchedulerTimeSlice`) is [`crate::timeslice`]'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::decision::Decision;
use crate::ids::JobId;
use crate::job::{Job, JobState, NodeAlloc};
use crate::policy::conservative;
use crate::scheduler::Scheduler;
use crate::side_claims;
use crate::time::Time;

/// A job suspended by preemption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// The preemptor it was suspended for.
    by: JobId,
    /// When it was suspended.
    since: Time,
}

/// Jobs suspended by preemption, by id.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    suspended: BTreeMap<JobId, Entry>,
}

impl State {
    /// The preemptor `id` was suspended for, if it stands suspended by preemption.
    pub(crate) fn suspended_for(&self, id: JobId) -> Option<JobId> {
        self.suspended.get(&id).map(|e| e.by)
    }
}

/// Suspends the running job `victim` for `by` at `now`: it gives back what it holds,
/// which is then held for `by` (see [`crate::preempt`]).
pub(crate) fn suspend(s: &mut Scheduler, victim: JobId, by: JobId, now: Time) {
    let nodes = stop_and_give_back(s, victim, now);
    s.gang.suspended.insert(victim, Entry { by, since: now });
    crate::preempt::victim_ended(s, victim, &nodes, false, now);
}

/// Marks running job `id` suspended at `now` and gives back all it holds (its claim
/// on the profile, its free-node and GPU share, its place in backfill's plan), as its
/// end would; the nodes it held. For a suspension by preemption and a time slice's.
pub(crate) fn stop_and_give_back(s: &mut Scheduler, id: JobId, now: Time) -> Vec<NodeAlloc> {
    s.profile.advance(now);
    let job = s
        .jobs
        .get_mut(&id)
        .map(Arc::make_mut)
        .expect("suspended jobs exist");
    job.state = JobState::Suspended;
    job.suspended = Some(now);
    let nodes = job.alloc.as_ref().expect("running").nodes.clone();
    let end = s.claim_end.remove(&id).expect("running jobs have a claim");
    s.claims_end.remove(&(end, id));
    if now < end {
        s.profile.release_all(&nodes, now, end);
    }
    if !s.expired.remove(&id) {
        s.free_now.give_back(&s.cluster, &nodes);
        side_claims::give_back(s, id, &nodes, now);
    }
    s.backfill.on_end(id, &nodes, now);
    s.backfill.dirty = true;
    s.conservative.ended_early = true;
    nodes
}

/// Before a pass at `now`: suspended jobs whose resources are all free again resume
/// there, longest suspended first, each with a [`Decision::Resume`].
pub(crate) fn resume_ready(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    if s.gang.suspended.is_empty() {
        return;
    }
    let mut order: Vec<(Time, JobId)> = s
        .gang
        .suspended
        .iter()
        .map(|(&id, e)| (e.since, id))
        .collect();
    order.sort_unstable();
    for (since, id) in order {
        let by = s.gang.suspended[&id].by;
        if s.keys.contains_key(&by) {
            // Its preemptor still waits for other victims: what it freed is held.
            continue;
        }
        let nodes = s.jobs[&id].alloc.as_ref().expect("started").nodes.clone();
        if !free_for(s, &nodes) {
            continue;
        }
        s.gang.suspended.remove(&id);
        let job = s
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .expect("suspended jobs exist");
        job.state = JobState::Running;
        job.suspended = None;
        job.suspended_secs += (now - since).max(0);
        let start = job.start.expect("started");
        let end = (start + job.spec.time_limit + job.suspended_secs).max(now + 1);
        conservative::withdraw_conflicting(s, &nodes, now, end);
        s.profile.claim_all(&nodes, now, end);
        s.free_now.take(&s.cluster, &nodes);
        s.backfill.on_start(id, &nodes, now, end);
        s.backfill.dirty = true;
        s.claims_end.insert((end, id));
        s.claim_end.insert(id, end);
        side_claims::take(s, id, &nodes, now);
        s.usage.retime(id, end);
        out.push(Decision::Resume { job: id, at: now });
    }
}

/// Whether every share of `nodes` (a suspended job's allocation, GPUs included) is
/// free now.
pub(crate) fn free_for(s: &Scheduler, nodes: &[NodeAlloc]) -> bool {
    nodes.iter().all(|a| {
        let choice = crate::gpus::Choice {
            gpus: a.gpus.clone(),
            shards: a.shards.clone(),
        };
        a.usage.fits_in(&s.free_now.node(a.node))
            && (choice == crate::gpus::Choice::default() || s.gpus.can_take(a.node, &choice))
    })
}

/// A suspended job ended (cancelled, or lost with its node): it holds nothing, so it is
/// only forgotten. `None` when `id` is not suspended by preemption.
pub(crate) fn job_ended(s: &mut Scheduler, id: JobId, now: Time) -> Option<Job> {
    s.gang.suspended.remove(&id)?;
    Some(forget(s, id, now))
}

/// Forgets suspended job `id`, which holds nothing (by preemption or time-slicing).
pub(crate) fn forget(s: &mut Scheduler, id: JobId, now: Time) -> Job {
    let job = Arc::unwrap_or_clone(s.jobs.remove(&id).expect("suspended jobs exist"));
    s.forget_partitions(id);
    s.usage.remove(id, now);
    s.het.forget(id);
    crate::borrow::ended(s, id);
    job
}

/// See [`Scheduler::restore_suspended`]: `job` (already in the map, state
/// [`JobState::Suspended`]) was suspended for `by` since `since`.
pub(crate) fn restored(s: &mut Scheduler, id: JobId, by: JobId, since: Time) {
    s.gang.suspended.insert(id, Entry { by, since });
}
