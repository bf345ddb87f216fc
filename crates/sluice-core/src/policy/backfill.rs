//! Slurm-style scheduling: a main pass in priority order on every event, and a periodic
//! backfill pass that plans ahead (Slurm's `sched/backfill`, see `slurm.conf(5)`,
//! `SchedulerParameters`).
//!
//! Main pass: jobs in priority order (partition `PriorityTier` first); a job that fits
//! now starts; a job that does not blocks its partition and keeps its nodes (or only
//! the nodes it names, `-w`), so that no lower-priority job of that partition or of an
//! overlapping one starts ahead of it there (reason `Resources` for it, `Priority` for
//! those behind in its partition; see [`crate::kept`]).
//!
//! Backfill pass, every `bf_interval` seconds: a fresh plan of the running jobs, their
//! expected ends rounded up to `bf_resolution`; then the pending jobs in priority order,
//! at most `bf_max_job_test` of them: each starts now if it fits in the plan now for its
//! whole time limit, and otherwise gets a reservation in the plan at its earliest fit
//! within `bf_window` — so no job ever delays the planned start of a job ahead of it.
//! A job an accounting limit holds is skipped (it blocks nothing and gets no
//! reservation), and a job of a `NoReserve` QOS may start now but is never reserved.

use crate::decision::{Decision, Pass};
use crate::observe::{PassObserver, Phase, PhaseFigures};
use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::cluster::Cluster;
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::{JobRequest, JobState, NodeAlloc, PendingReason};
use crate::kept::Kept;
use crate::policy::BackfillParams;
use crate::profile::NodeFilter;
use crate::profile::Profile;
use crate::reservation;
use crate::scheduler::{QueueKey, Scheduler};
use crate::side_claims;
use crate::time::{round_up, Secs, Time, NEVER};

/// Backfill state carried between passes.
///
/// The plan (the availability profile the backfill pass works on, with running jobs'
/// ends rounded up to `bf_resolution`) is kept up to date as jobs start and end, so a
/// pass costs what its own reservations cost, not a rebuild of the whole machine.
/// Between passes it holds running jobs only: reservations live for one pass.
#[derive(Clone, Debug)]
pub(crate) struct State {
    plan: Option<Profile>,
    resolution: Secs,
    /// End of each running job's claim on the plan.
    plan_end: BTreeMap<JobId, Time>,
    /// When the next backfill pass is due.
    pub(crate) next_pass: Time,
    /// With `bf_continue`: where the interrupted pass stopped.
    cursor: Option<QueueKey>,
    /// With `bf_continue`: jobs already planned by the interrupted pass.
    retained: Vec<JobId>,
    /// Something changed (a job arrived or ended, a node changed) since the last
    /// backfill pass. As in Slurm, a pass with nothing new to consider is skipped:
    /// without a change no job that could not start before can start now.
    pub(crate) dirty: bool,
}

impl Default for State {
    fn default() -> Self {
        State {
            plan: None,
            resolution: 1,
            plan_end: BTreeMap::new(),
            next_pass: -NEVER,
            cursor: None,
            retained: Vec::new(),
            dirty: true,
        }
    }
}

impl State {
    /// Starts keeping a plan for `cluster` (the backfill policy is in force).
    pub(crate) fn enable(&mut self, cluster: &Cluster, params: &BackfillParams) {
        self.plan = Some(Profile::new(cluster));
        self.resolution = params.resolution.max(1);
    }

    /// A node changed state.
    pub(crate) fn refresh_node(&mut self, cluster: &Cluster, node: NodeId) {
        if let Some(plan) = &mut self.plan {
            plan.refresh_node(cluster, node);
        }
    }

    /// A node joined the cluster (the last of its nodes).
    pub(crate) fn add_node(&mut self, cluster: &Cluster) {
        if let Some(plan) = &mut self.plan {
            plan.add_node(cluster);
        }
    }

    /// Node `node`, on which nothing runs, changed capacity.
    pub(crate) fn reset_node(&mut self, cluster: &Cluster, node: NodeId) {
        if let Some(plan) = &mut self.plan {
            plan.reset_node(cluster, node);
        }
    }

    /// A job started at `now` and is expected to end at `end`.
    pub(crate) fn on_start(&mut self, id: JobId, nodes: &[NodeAlloc], now: Time, end: Time) {
        if let Some(plan) = &mut self.plan {
            let plan_end = round_up(end, self.resolution);
            plan.claim_all(nodes, now, plan_end);
            self.plan_end.insert(id, plan_end);
        }
    }

    /// A running job's resources are free from `now` on (it ended, or its expected end
    /// came under [`crate::EndSemantics::FreeAtExpectedEnd`]).
    pub(crate) fn on_free(&mut self, id: JobId, nodes: &[NodeAlloc], now: Time) {
        if let Some(plan) = &mut self.plan {
            if let Some(end) = self.plan_end.get_mut(&id) {
                if now < *end {
                    plan.advance(now);
                    plan.release_all(nodes, now, *end);
                }
                *end = now.min(*end);
            }
        }
    }

    /// A running job ended.
    pub(crate) fn on_end(&mut self, id: JobId, nodes: &[NodeAlloc], now: Time) {
        self.on_free(id, nodes, now);
        self.plan_end.remove(&id);
    }

    /// A running job's claim now ends earlier, at `end` (its time limit was lowered).
    pub(crate) fn on_shorten(&mut self, id: JobId, nodes: &[NodeAlloc], end: Time) {
        if let Some(plan) = &mut self.plan {
            if let Some(old) = self.plan_end.get_mut(&id) {
                let new = round_up(end, self.resolution);
                if new < *old {
                    plan.release_all(nodes, new, *old);
                    *old = new;
                }
            }
        }
    }

    /// The GPU book's side claim `usage` on `node` (see [`crate::gpus`]) now lasts until
    /// `new` instead of `old` (`None`: not held), from `now` on; on the plan it ends,
    /// like a job's claim, at the next multiple of `bf_resolution`.
    pub(crate) fn move_side(
        &mut self,
        node: NodeId,
        usage: &crate::tres::Resources,
        old: Option<Time>,
        new: Option<Time>,
        now: Time,
    ) {
        let Some(plan) = &mut self.plan else {
            return;
        };
        let old = old.map_or(now, |t| round_up(t, self.resolution).max(now));
        let new = new.map_or(now, |t| round_up(t, self.resolution).max(now));
        if new > old {
            plan.claim(node, old, new, usage);
        } else if new < old {
            plan.advance(now);
            plan.release(node, new, old, usage);
        }
    }

    /// A running job's claim was stretched to `end` (it outlived its limit).
    pub(crate) fn on_extend(&mut self, id: JobId, nodes: &[NodeAlloc], end: Time) {
        if let Some(plan) = &mut self.plan {
            if let Some(old) = self.plan_end.get_mut(&id) {
                let new = round_up(end, self.resolution);
                if new > *old {
                    plan.claim_all(nodes, *old, new);
                    *old = new;
                }
            }
        }
    }
}

/// Runs the main pass, and the backfill pass when it is due, telling `observer` where
/// each begins and ends.
pub(crate) fn pass(
    s: &mut Scheduler,
    now: Time,
    params: &BackfillParams,
    out: &mut Vec<Decision>,
    observer: &mut dyn PassObserver,
) {
    observer.begin(Phase::Main);
    let queue_len = s.queue.len() as u32;
    let before = out.len();
    let (depth, tried) = main_pass(s, now, out);
    observer.end(
        Phase::Main,
        PhaseFigures {
            queue_len,
            depth,
            tried,
            started: (out.len() - before) as u32,
            plan_times: 0,
        },
    );
    if now >= s.backfill.next_pass && s.backfill.dirty && !s.queue.is_empty() {
        observer.begin(Phase::Backfill);
        let queue_len = s.queue.len() as u32;
        let before = out.len();
        s.backfill.dirty = false;
        let (depth, tried) = backfill_pass(s, now, params, out);
        s.backfill.next_pass = now + params.interval.max(1);
        let plan_times = s.backfill.plan.as_ref().map_or(0, Profile::distinct_times);
        observer.end(
            Phase::Backfill,
            PhaseFigures {
                queue_len,
                depth,
                tried,
                started: (out.len() - before) as u32,
                plan_times: plan_times as u32,
            },
        );
    }
}

/// The main pass; returns how many jobs it looked at and how many of those it tried
/// to place.
fn main_pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) -> (u32, u32) {
    let mut kept = Kept::default();
    let partitions = s.cluster.partitions.len();
    let mut cursor = None;
    let (mut depth, mut tried) = (0, 0);
    while let Some((key, id)) = s.next_in_queue(cursor) {
        cursor = Some(key);
        depth += 1;
        let open = crate::partitions::open(s, id, now);
        if !s.eligible(id, now) {
            continue;
        }
        if open.is_some() {
            tried += u32::from(crate::partitions::start_now(s, id, now, &mut kept, out));
            if kept.all_blocked(partitions) {
                break;
            }
            continue;
        }
        let part = s.jobs[&id].spec.partition;
        if kept.blocks(part) {
            s.set_reason(id, PendingReason::Priority);
            continue;
        }
        tried += 1;
        match crate::kept::fit_now(s, id, now, &mut kept) {
            Ok(nodes) => s.start(id, now, nodes, Pass::Main, false, out),
            Err(reason) => {
                s.set_reason(id, reason);
                kept.keep_for(s, id, part, reason);
                if kept.all_blocked(partitions) {
                    break;
                }
            }
        }
    }
    (depth, tried)
}

/// The backfill pass; returns how many jobs it looked at and how many of those it tried
/// to place.
fn backfill_pass(
    s: &mut Scheduler,
    now: Time,
    params: &BackfillParams,
    out: &mut Vec<Decision>,
) -> (u32, u32) {
    let res = s.backfill.resolution;
    let mut plan = s
        .backfill
        .plan
        .take()
        .expect("the backfill policy keeps a plan");
    plan.advance(now);
    // Advance reservations, as blocked capacity for this pass.
    let mut holds = reservation::claim_on_plan(s, &mut plan, now);
    // Reservations made in this pass, withdrawn at its end.
    let mut reserved: Vec<(Vec<NodeAlloc>, Time, Time)> = Vec::new();
    let resume = if params.continue_pass {
        s.backfill.cursor.take()
    } else {
        None
    };
    let mut retained = Vec::new();
    if resume.is_some() {
        for id in std::mem::take(&mut s.backfill.retained) {
            let Some(job) = s.jobs.get(&id) else { continue };
            let (Some(t), Some(alloc)) = (job.planned_start, job.alloc.as_ref()) else {
                continue;
            };
            if job.state != JobState::Pending || t < now {
                continue;
            }
            let end = round_up(t + job.spec.time_limit, res);
            // Its resources are still free, and so are its tasks' processors apart from
            // those kept for GPUs it does not take (RestrictedCoresPerGPU).
            let still_fits = alloc.nodes.iter().all(|a| {
                a.usage.fits_in(&plan.free_during(a.node, t, end))
                    && plan.tasks_during(&s.cluster, &job.spec.request, a.node, t, end) >= a.tasks
            });
            if still_fits {
                plan.claim_all(&alloc.nodes, t, end);
                reserved.push((alloc.nodes.clone(), t, end));
                retained.push(id);
            }
        }
    }
    let horizon = now + params.window;
    let mut bounds = StartBounds::default();
    let mut tested = 0usize;
    let mut depth = 0u32;
    let mut cursor = resume;
    let mut stopped_at = None;
    while let Some((key, id)) = s.next_in_queue(cursor) {
        if tested >= params.max_job_test {
            stopped_at = cursor;
            break;
        }
        cursor = Some(key);
        depth += 1;
        let open = crate::partitions::open(s, id, now);
        if !s.eligible(id, now) {
            // Skipped, as Slurm's backfill skips a job a limit holds: it blocks
            // nothing and keeps no reservation.
            if matches!(s.jobs[&id].reason, PendingReason::Limit(_)) {
                s.set_planned(id, None);
                s.jobs
                    .get_mut(&id)
                    .map(Arc::make_mut)
                    .expect("queued job exists")
                    .alloc = None;
            }
            continue;
        }
        tested += 1;
        if s.het.is_leader(id) {
            // A heterogeneous job: planned as one, every component where it fits beside
            // the others, started together or reserved together.
            match crate::het::plan(s, &plan, id, now, horizon, res) {
                Some((t, parts)) if t == now => {
                    bounds = StartBounds::default();
                    reservation::release_on_plan(&mut plan, holds);
                    s.backfill.plan = Some(plan);
                    for (m, nodes) in parts {
                        s.start_alone(m, now, nodes, Pass::Backfill, false, out);
                    }
                    plan = s.backfill.plan.take().expect("put back above");
                    holds = reservation::claim_on_plan(s, &mut plan, now);
                }
                Some((t, parts)) if s.may_reserve(id) => {
                    for (m, nodes) in parts {
                        let end = round_up(t + s.jobs[&m].spec.time_limit, res);
                        plan.claim_all(&nodes, t, end);
                        reserved.push((nodes.clone(), t, end));
                        s.set_planned(m, Some(t));
                        let job = s
                            .jobs
                            .get_mut(&m)
                            .map(Arc::make_mut)
                            .expect("queued job exists");
                        job.alloc = Some(crate::job::Allocation { nodes });
                        retained.push(m);
                    }
                }
                _ => {
                    for &m in s.het.group(id).cloned().expect("a leader").iter() {
                        s.set_planned(m, None);
                        s.jobs
                            .get_mut(&m)
                            .map(Arc::make_mut)
                            .expect("queued job exists")
                            .alloc = None;
                    }
                }
            }
            continue;
        }
        let limit = s.jobs[&id].spec.time_limit;
        let found = match open {
            // Of several partitions: the earliest start of them, the first tried at
            // equal times.
            Some(open) if open.len() > 1 => {
                let mut best: Option<(PartitionId, (Time, Vec<NodeAlloc>))> = None;
                for &p in &open {
                    s.move_to(id, p, now);
                    if let Some(f) = probe(s, &plan, &mut bounds, id, now, horizon) {
                        if best.as_ref().is_none_or(|(_, (t, _))| f.0 < *t) {
                            best = Some((p, f));
                        }
                    }
                }
                let home = best.as_ref().map_or(open[0], |(p, _)| *p);
                s.move_to(id, home, now);
                best.map(|(_, f)| f)
            }
            _ => probe(s, &plan, &mut bounds, id, now, horizon),
        };
        match found {
            Some((t, nodes)) if t == now => {
                bounds = StartBounds::default();
                // The plan's claim runs to the rounded end: the holds step aside for it.
                reservation::release_on_plan(&mut plan, holds);
                s.backfill.plan = Some(plan);
                s.start(id, now, nodes, Pass::Backfill, false, out);
                plan = s.backfill.plan.take().expect("put back above");
                holds = reservation::claim_on_plan(s, &mut plan, now);
            }
            Some((t, nodes)) if s.may_reserve(id) => {
                let end = round_up(t + limit, res);
                plan.claim_all(&nodes, t, end);
                reserved.push((nodes.clone(), t, end));
                s.set_planned(id, Some(t));
                let job = s
                    .jobs
                    .get_mut(&id)
                    .map(Arc::make_mut)
                    .expect("queued job exists");
                job.alloc = Some(crate::job::Allocation { nodes });
                retained.push(id);
            }
            // No fit in the window, or a `NoReserve` QOS: no reservation.
            _ => {
                s.set_planned(id, None);
                s.jobs
                    .get_mut(&id)
                    .map(Arc::make_mut)
                    .expect("queued job exists")
                    .alloc = None;
            }
        }
    }
    for (nodes, t, end) in reserved {
        plan.release_all(&nodes, t, end);
    }
    reservation::release_on_plan(&mut plan, holds);
    s.backfill.plan = Some(plan);
    if params.continue_pass && stopped_at.is_some() {
        s.backfill.dirty = true; // the rest of the queue is still to be examined
        s.backfill.cursor = stopped_at;
        s.backfill.retained = retained;
    } else {
        s.backfill.cursor = None;
        s.backfill.retained.clear();
    }
    (depth, tested as u32)
}

/// When and where job `id` could start in the plan, in the partition it is in: the
/// earliest start within `horizon`, its GPUs' side claims included when that is now.
fn probe(
    s: &mut Scheduler,
    plan: &Profile,
    bounds: &mut StartBounds,
    id: JobId,
    now: Time,
    horizon: Time,
) -> Option<(Time, Vec<NodeAlloc>)> {
    let res = s.backfill.resolution;
    let job = &s.jobs[&id];
    let filter = s.filter_for(job);
    let d = round_up(job.spec.time_limit, res);
    let found = bounds
        .lower(&job.spec.request, filter, d, now)
        .and_then(|from| {
            plan.earliest_start(&s.cluster, &job.spec.request, filter, d, from, horizon)
        });
    bounds.found(&job.spec.request, filter, d, found.as_ref().map(|f| f.0));
    // Starting now also takes the job's GPUs, whose side claims (see `crate::gpus`)
    // must fit the plan too; when they do not, it gets no reservation this pass.
    match found {
        Some((t, nodes)) if t == now => {
            side_claims::place(s, id, nodes, now, Some((plan, res)), false)
                .or_else(|| elsewhere_now(s, id, plan, now, d))
                .map(|nodes| (t, nodes))
        }
        other => other,
    }
}

/// Where one-node job `id`, whose GPUs cannot be had on the node the plan chose, could
/// start now for `d` seconds on another node of its partition, in placement order: the
/// first whose GPUs' side claims fit the plan too (see `crate::gpus`). `None` for a
/// job spanning nodes.
fn elsewhere_now(
    s: &Scheduler,
    id: JobId,
    plan: &Profile,
    now: Time,
    d: Secs,
) -> Option<Vec<NodeAlloc>> {
    let job = &s.jobs[&id];
    let req = &job.spec.request;
    if req.max_nodes > 1 || req.lists_nodes() {
        return None;
    }
    let end = now + d;
    s.free_now
        .by_rank(job.spec.partition)
        .iter()
        .find_map(|key| {
            let n = key.3;
            let node = s.cluster.node(n);
            if req.features_any != 0 && node.features & req.features_any == 0 {
                return None;
            }
            if plan.tasks_during(&s.cluster, req, n, now, end) < req.ntasks {
                return None;
            }
            let nodes = crate::select::node_allocs(
                req,
                &[(n, req.ntasks)],
                |n| plan.free_during(n, now, end),
                &s.cluster,
            );
            side_claims::place(
                s,
                id,
                nodes,
                now,
                Some((plan, s.backfill.resolution)),
                false,
            )
        })
}

/// What earlier searches of one backfill pass tell about later ones. Within a pass the
/// plan only fills up (reservations are added; a job started now restarts the
/// bounds), so a request that fitted no earlier than `t` for `d` seconds fits no
/// earlier than `t` for `d` or more, and one that did not fit within the window for
/// `d` does not fit for longer either.
#[derive(Default)]
struct StartBounds {
    /// Per request and node filter, the answers found.
    seen: FxHashMap<(JobRequest, NodeFilter), Answers>,
}

/// Searches' answers for one request: (duration in seconds, earliest start found, or
/// `None` for no fit within the window).
type Answers = Vec<(Secs, Option<Time>)>;

impl StartBounds {
    /// The earliest time worth searching from for `req` on `filter` for `d` seconds,
    /// not before `now`; `None` when it cannot fit in the window at all.
    fn lower(&self, req: &JobRequest, filter: NodeFilter, d: Secs, now: Time) -> Option<Time> {
        if req.switches.is_some() {
            return Some(now);
        }
        let Some(found) = self.seen.get(&(req.clone(), filter)) else {
            return Some(now);
        };
        let mut from = now;
        for &(seen_d, t) in found {
            if seen_d <= d {
                from = from.max(t?);
            }
        }
        Some(from)
    }

    /// Records a search's answer.
    fn found(&mut self, req: &JobRequest, filter: NodeFilter, d: Secs, t: Option<Time>) {
        if req.switches.is_none() {
            self.seen
                .entry((req.clone(), filter))
                .or_default()
                .push((d, t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_bounds_use_only_answers_for_the_same_request_and_no_longer_durations() {
        let filter = NodeFilter {
            partition: PartitionId(0),
            features_any: 0,
        };
        let other = NodeFilter {
            features_any: 1,
            ..filter
        };
        let four = JobRequest::procs(4);
        let eight = JobRequest::procs(8);
        let mut b = StartBounds::default();
        assert_eq!(b.lower(&four, filter, 60, 10), Some(10));
        b.found(&four, filter, 60, Some(100));
        // As long or longer: from 100; shorter, another request or filter: from now.
        assert_eq!(b.lower(&four, filter, 60, 10), Some(100));
        assert_eq!(b.lower(&four, filter, 120, 10), Some(100));
        assert_eq!(b.lower(&four, filter, 30, 10), Some(10));
        assert_eq!(b.lower(&eight, filter, 60, 10), Some(10));
        assert_eq!(b.lower(&four, other, 60, 10), Some(10));
        // A later answer for a longer job raises the bound for longer ones only.
        b.found(&four, filter, 300, Some(400));
        assert_eq!(b.lower(&four, filter, 200, 10), Some(100));
        assert_eq!(b.lower(&four, filter, 300, 10), Some(400));
        // No fit in the window for 600 s: none for longer either.
        b.found(&four, filter, 600, None);
        assert_eq!(b.lower(&four, filter, 900, 10), None);
        assert_eq!(b.lower(&four, filter, 500, 10), Some(400));
    }
}
