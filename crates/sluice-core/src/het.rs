//! Heterogeneous jobs (Slurm's hetjobs): components, each a job of its own shape and
//! partition, that start together or not at all.
//!
//! The caller submits every component as a job ([`crate::Scheduler::submit`]) and then
//! ties them together ([`crate::Scheduler::set_het_group`]), leader (offset 0) first.
//! From then on only the leader takes a place in the passes: the other components are
//! never eligible on their own. The leader is eligible when every component is
//! pending and eligible; it fits now when the components fit one after the other, each
//! beside those before it ([`fit_now`], tried in place and undone, so that nothing is
//! claimed unless all fit), and its start starts them all in the same
//! decision list ([`start_rest`]). The backfill pass plans the group as one: the
//! earliest time at which every component fits, each beside the others, reserved for
//! all of them ([`plan`]).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::decision::{Decision, Pass};
use crate::ids::JobId;
use crate::job::{JobState, NodeAlloc};
use crate::profile::Profile;
use crate::scheduler::Scheduler;
use crate::side_claims;
use crate::time::{round_up, Secs, Time};

/// Every live component's group: its components in offset order (the leader first).
#[derive(Clone, Debug, Default)]
pub(crate) struct Book {
    groups: FxHashMap<JobId, Arc<[JobId]>>,
}

impl Book {
    /// Ties `members` (leader first) together.
    pub(crate) fn link(&mut self, members: &[JobId]) {
        let group: Arc<[JobId]> = members.into();
        for &m in members {
            self.groups.insert(m, group.clone());
        }
    }

    /// The components of `id`'s group, leader first; `None` for a job of no group.
    pub(crate) fn group(&self, id: JobId) -> Option<&Arc<[JobId]>> {
        self.groups.get(&id)
    }

    /// Whether `id` is a component other than its group's leader.
    pub(crate) fn is_follower(&self, id: JobId) -> bool {
        self.groups.get(&id).is_some_and(|g| g[0] != id)
    }

    /// Whether `id` leads a group.
    pub(crate) fn is_leader(&self, id: JobId) -> bool {
        self.groups.get(&id).is_some_and(|g| g[0] == id)
    }

    /// Forgets `id` (ended or cancelled).
    pub(crate) fn forget(&mut self, id: JobId) {
        self.groups.remove(&id);
    }
}

/// Whether the group `leader` leads may start as far as time, partition and limits go:
/// every component pending and eligible on its own. When one is not, the leader takes
/// that component's reason. Components other than the leader are never eligible.
pub(crate) fn eligible(s: &mut Scheduler, id: JobId, now: Time) -> bool {
    let Some(group) = s.het.group(id).cloned() else {
        return true;
    };
    if group[0] != id {
        // A follower waits as its leader does.
        s.copy_reason(id, group[0]);
        return false;
    }
    for &m in &group[1..] {
        let pending = s.jobs.get(&m).is_some_and(|j| j.state == JobState::Pending);
        if !pending {
            // A component not (yet) in the queue: the group waits for it.
            return false;
        }
        if !s.eligible_as_job(m, now) || s.resv.of_job(m).is_some() {
            s.copy_reason(id, m);
            return false;
        }
    }
    true
}

/// Where the components of the group `leader` leads would start right now, each beside
/// those before it: the leader's nodes when all of them fit, else `None` (and the
/// leader's reason says `Resources`). Tried in place: each component that fits takes
/// its share on the profile, the free-node index and the GPU book as a start would,
/// and every share is given back, in reverse order, before returning — nothing is
/// copied and nothing stays claimed. [`start_rest`] then finds the same places.
pub(crate) fn fit_now(s: &mut Scheduler, id: JobId, now: Time) -> Option<Vec<NodeAlloc>> {
    let group = s.het.group(id)?.clone();
    let nodes = s.fit_now_alone(id, now)?;
    // Each alone first: cheap, and enough to refuse most groups that do not fit.
    for &m in &group[1..] {
        s.fit_now_alone(m, now)?;
    }
    let mut taken: Vec<(JobId, Vec<NodeAlloc>)> = Vec::with_capacity(group.len());
    trial_take(s, id, nodes.clone(), now, &mut taken);
    let mut fits = true;
    for &m in &group[1..] {
        match s.fit_now_alone(m, now) {
            Some(alloc) => trial_take(s, m, alloc, now, &mut taken),
            None => {
                fits = false;
                break;
            }
        }
    }
    for (m, alloc) in taken.into_iter().rev() {
        trial_give_back(s, m, &alloc, now);
    }
    fits.then_some(nodes)
}

/// Component `m` takes `nodes` from `now` for its time limit, as a start takes them
/// (profile, free-node index, claim end, GPU book), for [`fit_now`]'s trial.
fn trial_take(
    s: &mut Scheduler,
    m: JobId,
    nodes: Vec<NodeAlloc>,
    now: Time,
    taken: &mut Vec<(JobId, Vec<NodeAlloc>)>,
) {
    let end = now + s.jobs[&m].spec.time_limit;
    s.profile.claim_all(&nodes, now, end);
    s.free_now.take(&s.cluster, &nodes);
    s.claim_end.insert(m, end);
    side_claims::take(s, m, &nodes, now);
    taken.push((m, nodes));
}

/// Undoes [`trial_take`].
fn trial_give_back(s: &mut Scheduler, m: JobId, nodes: &[NodeAlloc], now: Time) {
    let end = s.claim_end.remove(&m).expect("taken for the trial");
    side_claims::give_back(s, m, nodes, now);
    s.free_now.give_back(&s.cluster, nodes);
    s.profile.release_all(nodes, now, end);
}

/// The first component of `id`'s group (in offset order) that does not fit now beside
/// those before it, while the group is pending; `None` when all of them fit, or `id`
/// belongs to no pending group. What an explanation names as the component a
/// heterogeneous job waits for.
pub(crate) fn waiting_on(s: &Scheduler, id: JobId, now: Time) -> Option<JobId> {
    let group = s.het.group(id)?.clone();
    if group
        .iter()
        .any(|m| s.jobs.get(m).is_none_or(|j| j.state != JobState::Pending))
    {
        return None;
    }
    let mut trial = s.clone();
    let mut out = Vec::new();
    for &m in group.iter() {
        match trial.fit_now_alone(m, now) {
            Some(alloc) => trial.start_alone(m, now, alloc, Pass::Main, false, &mut out),
            None => return Some(m),
        }
    }
    None
}

/// After the leader `id` started at `now`: starts the other components of its group,
/// each where it fits beside those before it (what [`fit_now`] checked).
pub(crate) fn start_rest(
    s: &mut Scheduler,
    id: JobId,
    now: Time,
    pass: Pass,
    out: &mut Vec<Decision>,
) {
    let Some(group) = s.het.group(id).cloned() else {
        return;
    };
    if group[0] != id {
        return;
    }
    for &m in &group[1..] {
        if s.jobs.get(&m).map(|j| &j.state) != Some(&JobState::Pending) {
            continue;
        }
        match s.fit_now_alone(m, now) {
            Some(nodes) => s.start_alone(m, now, nodes, pass, false, out),
            None => {
                // Only a caller that started the leader without asking `fit_now` (a
                // reservation of the leader alone coming due) gets here: the component
                // is started where its request fits at all, never left behind.
                let job = &s.jobs[&m];
                let d = job.spec.time_limit.max(1);
                if let Some((_, nodes)) = s.profile.earliest_start(
                    &s.cluster,
                    &job.spec.request,
                    s.filter_for(job),
                    d,
                    now,
                    now + 1,
                ) {
                    s.start_alone(m, now, nodes, pass, false, out);
                }
            }
        }
    }
}

/// Each component with the nodes it is planned on, in offset order.
pub(crate) type Placed = Vec<(JobId, Vec<NodeAlloc>)>;

/// The backfill plan for the group `id` leads: the earliest time from `now` (before
/// `horizon`) at which every component fits on `plan`, each beside those before it,
/// with each component's nodes in offset order. The components' durations are rounded
/// up to `res`.
pub(crate) fn plan(
    s: &Scheduler,
    plan: &Profile,
    id: JobId,
    now: Time,
    horizon: Time,
    res: Secs,
) -> Option<(Time, Placed)> {
    let group = s.het.group(id)?.clone();
    let mut from = now;
    // Each round either places every component at `from` or moves `from` later to
    // where a component first fits; the profile has finitely many step times.
    for _ in 0..64 {
        let mut trial = plan.clone();
        let mut placed = Vec::with_capacity(group.len());
        let mut later = None;
        for &m in group.iter() {
            let job = &s.jobs[&m];
            let d = round_up(job.spec.time_limit, res).max(1);
            let (t, nodes) = trial.earliest_start(
                &s.cluster,
                &job.spec.request,
                s.filter_for(job),
                d,
                from,
                horizon,
            )?;
            if t > from {
                later = Some(t);
                break;
            }
            trial.claim_all(&nodes, t, t + d);
            placed.push((m, nodes));
        }
        match later {
            None => return Some((from, placed)),
            Some(t) => from = t,
        }
    }
    None
}

/// Gives every pending component its leader's reason: the group waits as one.
pub(crate) fn share_reasons(s: &mut Scheduler) {
    let leaders: Vec<JobId> = s
        .het
        .groups
        .iter()
        .filter(|(id, g)| g[0] == **id)
        .filter_map(|(id, _)| {
            let j = s.jobs.get(id)?;
            (j.state == JobState::Pending).then_some(*id)
        })
        .collect();
    for leader in leaders {
        let group = s.het.group(leader).cloned().expect("listed above");
        for &m in &group[1..] {
            if s.jobs.get(&m).is_some_and(|j| j.state == JobState::Pending) {
                s.copy_reason(m, leader);
            }
        }
    }
}
