//! Gang time-slicing (`PreemptMode=GANG` with a partition's `OverSubscribe=FORCE:N`, or
//! `YES:N` for jobs that ask `--oversubscribe`): up to N jobs of the partition are
//! allocated the same processors; only those that fit together run at once, and every
//! `SchedulerTimeSlice` seconds the ones that ran are suspended and the waiting ones
//! resumed. Under `YES:N` a job that did not ask `--oversubscribe` shares its
//! processors with nobody: it is not in the list, and keeps what it holds.
//!
//! The rules, after Slurm 22.05's gang scheduler (`src/slurmctld/gang.c`):
//!
//! - Each such partition keeps its started jobs in a list, in the order they started.
//!   Each is *active* (chosen at the last slice), a *filler* (running because it fit
//!   beside the active ones when it started or when a job ended) or *waiting*
//!   (suspended).
//! - A pending job of the partition waiting for resources that does not fit in what is
//!   free, but would if the partition's running jobs were not there, starts at once
//!   ([`Decision::Start`]) and is suspended in the same pass ([`Decision::Suspend`]) —
//!   provided no node would then carry more than N times its processors in the
//!   partition's jobs. It joins the list's end, waiting.
//! - At every slice ([`cycle`]): the active jobs move to the list's end (in their order),
//!   every job is marked waiting, and the list is walked from its front: each job whose
//!   processors fit beside those already chosen (per node, within the node's processors)
//!   becomes active. Running jobs not chosen are suspended, then suspended jobs chosen are
//!   resumed. A partition whose jobs all run is left alone.
//! - When one of its jobs ends (and before every pass, [`refill`]), the jobs still running
//!   keep running and the waiting ones that now fit beside them resume, in list order, as
//!   fillers.
//! - A resumed job's time limit runs out as much later as it stood suspended (its
//!   `suspended_secs`), as for a suspension by preemption or by an operator.
//!
//! Who runs in a slice is a function of the list alone ([`cycle`], [`refill`]: pure, no
//! clock); the slices come every [`crate::PreemptConfig::slice_secs`] from the first
//! time the scheduler saw a partition's jobs waiting, on the caller's clock (the
//! controller's wake-ups, the simulator's virtual time) through
//! [`crate::Scheduler::next_wakeup`].
//!
//! Deviations from Slurm, on purpose or for now:
//! - Jobs share by processor counts per node (Slurm's `GS_CPU`), not by core bitmaps; a
//!   job fits beside others when the processors they use on each node add up to no more
//!   than the node has. Memory and GPUs are not oversubscribed: they are held only by
//!   running jobs (a suspended job gives everything back, see `preempt-suspend-resources`
//!   in COMPATIBILITY.md), so a waiting job resumes only where all it was allocated is
//!   free again.
//! - Heterogeneous jobs are left out, as in Slurm.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::decision::{Decision, Pass};
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::{JobState, NodeAlloc, PendingReason};
use crate::partition_policy::OverSubscribe;
use crate::policy::conservative;
use crate::scheduler::Scheduler;
use crate::side_claims;
use crate::time::Time;

/// Where a job stands in its partition's active row (Slurm's `row_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// Chosen at the last slice.
    Active,
    /// Running beside the active jobs (started or resumed between slices).
    Filler,
    /// Not in the active row: suspended.
    Waiting,
}

impl Row {
    /// Whether the job runs.
    pub fn runs(self) -> bool {
        self != Row::Waiting
    }
}

/// A started job of a time-sliced partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The job.
    pub id: JobId,
    /// Its place in the active row.
    pub row: Row,
    /// Processors it was allocated, per node.
    pub cpus: Vec<(NodeId, u32)>,
}

/// Processors in use per node by the running members.
fn in_use(members: &[Member]) -> BTreeMap<NodeId, u32> {
    let mut used = BTreeMap::new();
    for m in members.iter().filter(|m| m.row.runs()) {
        for &(n, c) in &m.cpus {
            *used.entry(n).or_insert(0) += c;
        }
    }
    used
}

/// Whether `m` fits beside `used` on nodes of `capacity` processors.
fn fits(m: &Member, used: &BTreeMap<NodeId, u32>, capacity: &dyn Fn(NodeId) -> u32) -> bool {
    m.cpus
        .iter()
        .all(|&(n, c)| used.get(&n).copied().unwrap_or(0) + c <= capacity(n))
}

/// One slice (Slurm's `_cycle_job_list`): the active members move to the end of the
/// list, keeping their order; then, walking the list from its front, each member that
/// fits beside those already chosen becomes active, the others waiting. Pure: the new
/// list and rows depend only on the old ones and `capacity` (processors per node).
pub fn cycle(members: &mut Vec<Member>, capacity: &dyn Fn(NodeId) -> u32) {
    let (mut front, back): (Vec<Member>, Vec<Member>) =
        members.drain(..).partition(|m| m.row != Row::Active);
    front.extend(back);
    let mut used = BTreeMap::new();
    for m in &mut front {
        m.row = Row::Waiting;
        if fits(m, &used, capacity) {
            for &(n, c) in &m.cpus {
                *used.entry(n).or_insert(0) += c;
            }
            m.row = Row::Active;
        }
    }
    *members = front;
}

/// Between slices (Slurm's `_update_active_row`): running members keep running; each
/// waiting member that fits beside them, in list order, runs as a filler. Returns the
/// members to resume. `may_resume` says whether a member's resources are free now.
pub fn refill(
    members: &mut [Member],
    capacity: &dyn Fn(NodeId) -> u32,
    may_resume: &mut dyn FnMut(JobId) -> bool,
) -> Vec<JobId> {
    let mut used = in_use(members);
    let mut resumed = Vec::new();
    for m in members.iter_mut().filter(|m| m.row == Row::Waiting) {
        if fits(m, &used, capacity) && may_resume(m.id) {
            for &(n, c) in &m.cpus {
                *used.entry(n).or_insert(0) += c;
            }
            m.row = Row::Filler;
            resumed.push(m.id);
        }
    }
    resumed
}

/// Time-sliced partitions' jobs.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Each time-sliced partition's started jobs, in list order.
    lists: BTreeMap<PartitionId, Vec<Member>>,
    /// Since when each waiting member stands suspended.
    since: BTreeMap<JobId, Time>,
    /// When the next slice is due (set while some partition has waiting members).
    next: Option<Time>,
}

impl State {
    /// Whether `id` stands suspended by time-slicing.
    pub(crate) fn waiting(&self, id: JobId) -> bool {
        self.since.contains_key(&id)
    }

    /// When the next slice is due, if one is.
    pub(crate) fn next_slice(&self) -> Option<Time> {
        self.next
    }
}

/// N of the partition's `OverSubscribe=FORCE:N` (or `YES:N`, for a job that asked
/// `--oversubscribe`) when job `id` time-slices: under `PreemptMode=GANG`, N above 1,
/// not a heterogeneous job's component.
fn sharing(s: &Scheduler, id: JobId) -> Option<u32> {
    if !s.cluster.preempt.gang || s.het_group(id).is_some() {
        return None;
    }
    let job = &s.jobs[&id];
    match s.cluster.partition(job.spec.partition).oversubscribe {
        OverSubscribe::Force(n) if n > 1 => Some(u32::from(n)),
        OverSubscribe::Yes(n) if n > 1 && job.spec.request.oversubscribe => Some(u32::from(n)),
        _ => None,
    }
}

fn member_of(s: &Scheduler, id: JobId, row: Row) -> Member {
    let nodes = &s.jobs[&id].alloc.as_ref().expect("started").nodes;
    Member {
        id,
        row,
        cpus: nodes.iter().map(|a| (a.node, a.usage.cpus)).collect(),
    }
}

/// A job started (any pass): a job of a time-sliced partition joins its list, running
/// as a filler.
pub(crate) fn started(s: &mut Scheduler, id: JobId) {
    let p = s.jobs[&id].spec.partition;
    if sharing(s, id).is_none() {
        return;
    }
    let m = member_of(s, id, Row::Filler);
    s.slices.lists.entry(p).or_default().push(m);
}

/// A job restored suspended by time-slicing since `since` (a controller restart): it
/// joins its partition's list, waiting. A job of a partition that no longer
/// time-slices resumes as a job suspended by preemption would, once its resources are
/// free.
pub(crate) fn restored(s: &mut Scheduler, id: JobId, since: Time) {
    let p = s.jobs[&id].spec.partition;
    if sharing(s, id).is_none() {
        crate::gang::restored(s, id, id, since);
        return;
    }
    let m = member_of(s, id, Row::Waiting);
    s.slices.lists.entry(p).or_default().push(m);
    s.slices.since.insert(id, since);
}

/// A job left (ended, requeued): it leaves its list. Returns true when it stood
/// suspended by time-slicing (it holds nothing then).
pub(crate) fn left(s: &mut Scheduler, id: JobId) -> bool {
    let p = match s.jobs.get(&id) {
        Some(j) => j.spec.partition,
        None => return false,
    };
    if let Some(list) = s.slices.lists.get_mut(&p) {
        list.retain(|m| m.id != id);
        if list.is_empty() {
            s.slices.lists.remove(&p);
        }
    }
    s.slices.since.remove(&id).is_some()
}

/// Suspends running job `id` at `now`: it gives back all it holds.
fn suspend(s: &mut Scheduler, id: JobId, now: Time) {
    crate::gang::stop_and_give_back(s, id, now);
    s.slices.since.insert(id, now);
}

/// Resumes suspended member `id` at `now` on its allocation (free: checked).
fn resume(s: &mut Scheduler, id: JobId, now: Time) {
    let since = s.slices.since.remove(&id).expect("waiting");
    let job = s
        .jobs
        .get_mut(&id)
        .map(Arc::make_mut)
        .expect("members exist");
    job.state = JobState::Running;
    job.suspended = None;
    job.suspended_secs += (now - since).max(0);
    let start = job.start.expect("started");
    let end = (start + job.spec.time_limit + job.suspended_secs).max(now + 1);
    let nodes = job.alloc.as_ref().expect("started").nodes.clone();
    conservative::withdraw_conflicting(s, &nodes, now, end);
    s.profile.claim_all(&nodes, now, end);
    s.free_now.take(&s.cluster, &nodes);
    s.backfill.on_start(id, &nodes, now, end);
    s.backfill.dirty = true;
    s.claims_end.insert((end, id));
    s.claim_end.insert(id, end);
    side_claims::take(s, id, &nodes, now);
    s.usage.retime(id, end);
}

/// Whether all of suspended member `id`'s allocation is free now.
fn free_for(s: &Scheduler, id: JobId) -> bool {
    crate::gang::free_for(s, &s.jobs[&id].alloc.as_ref().expect("started").nodes)
}

/// Processors of node `n`.
fn capacity(s: &Scheduler) -> impl Fn(NodeId) -> u32 + '_ {
    |n| s.cluster.node(n).capacity.cpus
}

/// Keeps the next slice due while some partition has waiting members.
fn arm(s: &mut Scheduler, now: Time) {
    let waiting = !s.slices.since.is_empty();
    match (waiting, s.slices.next) {
        (true, None) => s.slices.next = Some(now + s.cluster.preempt.slice_secs()),
        (false, Some(_)) => s.slices.next = None,
        _ => {}
    }
}

/// Before every pass at `now`: the slice, if it is due, else the waiting members that
/// fit beside the running ones resume ([`refill`]).
pub(crate) fn before_pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    if s.slices.lists.is_empty() {
        s.slices.next = None;
        return;
    }
    if s.slices.next.is_some_and(|at| at <= now) {
        s.slices.next = Some(now + s.cluster.preempt.slice_secs());
        slice(s, now, out);
    } else {
        let parts: Vec<PartitionId> = s.slices.lists.keys().copied().collect();
        for p in parts {
            let mut list = std::mem::take(s.slices.lists.get_mut(&p).expect("listed"));
            let resumed = {
                let cap = capacity(s);
                refill(&mut list, &cap, &mut |id| free_for(s, id))
            };
            s.slices.lists.insert(p, list);
            for id in resumed {
                resume(s, id, now);
                out.push(Decision::Resume { job: id, at: now });
            }
        }
    }
    arm(s, now);
}

/// A slice at `now`: every partition with waiting members turns ([`cycle`]).
fn slice(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    let parts: Vec<PartitionId> = s.slices.lists.keys().copied().collect();
    for p in parts {
        let mut list = s.slices.lists[&p].clone();
        if list.iter().all(|m| m.row.runs()) {
            continue;
        }
        cycle(&mut list, &capacity(s));
        // Suspend first, then resume: what the first give back the others take.
        for m in &list {
            if m.row == Row::Waiting && s.jobs[&m.id].state == JobState::Running {
                suspend(s, m.id, now);
                out.push(Decision::Suspend { job: m.id, at: now });
            }
        }
        for m in &mut list {
            if m.row == Row::Active && s.slices.since.contains_key(&m.id) {
                if free_for(s, m.id) {
                    resume(s, m.id, now);
                    out.push(Decision::Resume { job: m.id, at: now });
                } else {
                    // Something else took part of its allocation meanwhile.
                    m.row = Row::Waiting;
                }
            }
        }
        s.slices.lists.insert(p, list);
    }
}

/// After a pass at `now`: pending jobs of time-sliced partitions that wait for
/// resources start on those of the partition's running jobs, within N jobs per
/// processor, and are suspended at once.
pub(crate) fn admit(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    // Only where a time-sliced partition has jobs (no look at the queue otherwise).
    if !s.cluster.preempt.gang || s.slices.lists.is_empty() {
        return;
    }
    let waiting: Vec<JobId> = s
        .queue
        .values()
        .copied()
        .filter(|id| {
            let j = &s.jobs[id];
            matches!(j.reason, PendingReason::Resources | PendingReason::Priority)
                && sharing(s, *id).is_some()
                && s.resv.of_job(*id).is_none()
                && !s.preempt.preempts(*id)
        })
        .take(crate::preempt::MAX_PREEMPTORS)
        .collect();
    for id in waiting {
        if !s.eligible(id, now) {
            continue;
        }
        let p = s.jobs[&id].spec.partition;
        let n = sharing(s, id).expect("checked");
        let running: Vec<JobId> = s
            .slices
            .lists
            .get(&p)
            .map(|l| l.iter().filter(|m| m.row.runs()).map(|m| m.id).collect())
            .unwrap_or_default();
        // A job that fits in what is free was held back by the pass (a reservation, a
        // job ahead of it): it does not share either.
        if running.is_empty() || s.fit_now(id, now).is_some() {
            continue;
        }
        let Some(nodes) = fit_beside(s, id, &running, now) else {
            continue;
        };
        // Within N jobs' worth of processors on each node.
        let mut load: BTreeMap<NodeId, u32> = BTreeMap::new();
        for m in s.slices.lists.get(&p).into_iter().flatten() {
            for &(node, c) in &m.cpus {
                *load.entry(node).or_insert(0) += c;
            }
        }
        let within = nodes.iter().all(|a| {
            load.get(&a.node).copied().unwrap_or(0) + a.usage.cpus
                <= n * s.cluster.node(a.node).capacity.cpus
        });
        if !within {
            continue;
        }
        // Start it where the running jobs are, then suspend it at once.
        with_released(s, &running, now, |s| {
            s.start(id, now, nodes, Pass::Main, false, out);
            let list = s.slices.lists.get_mut(&p).expect("it joined");
            list.last_mut().expect("it joined").row = Row::Waiting;
            suspend(s, id, now);
        });
        out.push(Decision::Suspend { job: id, at: now });
    }
    arm(s, now);
}

/// Where job `id` would start at `now` if the jobs `running` were not there.
fn fit_beside(
    s: &mut Scheduler,
    id: JobId,
    running: &[JobId],
    now: Time,
) -> Option<Vec<NodeAlloc>> {
    let mut found = None;
    with_released(s, running, now, |s| found = s.fit_now(id, now));
    found
}

/// Runs `f` with the resources of the running jobs `running` given back, then takes
/// them again.
fn with_released(s: &mut Scheduler, running: &[JobId], now: Time, f: impl FnOnce(&mut Scheduler)) {
    let gone: Vec<(JobId, Vec<NodeAlloc>, Time)> = running
        .iter()
        .map(|&v| {
            let nodes = s.jobs[&v].alloc.as_ref().expect("running").nodes.clone();
            (v, nodes, s.claim_end[&v])
        })
        .collect();
    for (v, nodes, end) in &gone {
        if now < *end {
            s.profile.release_all(nodes, now, *end);
        }
        s.free_now.give_back(&s.cluster, nodes);
        side_claims::give_back(s, *v, nodes, now);
        s.backfill.on_end(*v, nodes, now);
    }
    f(s);
    for (v, nodes, end) in gone.iter().rev() {
        side_claims::take(s, *v, nodes, now);
        if now < *end {
            s.profile.claim_all(nodes, now, *end);
        }
        s.free_now.take(&s.cluster, nodes);
        s.backfill.on_start(*v, nodes, now, *end);
    }
}

/// The members of partition `p`'s list, in order (for tests and explanations).
pub(crate) fn list(s: &Scheduler, p: PartitionId) -> Vec<(JobId, Row)> {
    s.slices
        .lists
        .get(&p)
        .map(|l| l.iter().map(|m| (m.id, m.row)).collect())
        .unwrap_or_default()
}
