//! The forward simulation behind predicted starts: a copy of the scheduler run ahead
//! on its own, with no new arrivals and every running job ending at the end of its
//! claim, until the job of interest starts.
//!
//! Each step: every job due to end at `t` ends (in order of end, then id), the
//! scheduler runs one pass at `t`, and the next step is the earliest of the next end,
//! the end of a preempted job's grace, and the scheduler's own wake-up. The simulation
//! stops as soon as the job starts, at the horizon, when nothing is left to happen, or
//! after the pass budget.
//!
//! # Dropping the queue behind the job
//!
//! Under [`Policy::Fcfs`] the jobs queued behind the job are taken out of the copy
//! before it runs, when the job is eligible now in every way that could change without
//! an event: its `--begin` has come, it is not bound to an advance reservation, its
//! partition is up with nodes up, its time and node counts are within the partition's
//! limits, and neither accounting limits nor cohorts are in force (so no hold can
//! appear as other jobs start), nor preemption (`preempt/none`). Jobs bound to
//! reservations are kept. Why that changes nothing: an FCFS pass walks the queue in
//! order and returns at the first eligible job that does not fit; the job is eligible
//! at every pass until it starts, so every pass returns at it or before it and never
//! starts a job behind it. A job that never starts changes nothing for the others under
//! FCFS (no reservations, no limits counting pending jobs), so the copy with and without
//! those jobs makes the same decisions until the job starts.
//!
//! The other policies keep every job, because there a job behind can start first and
//! delay the job: under EASY only the head of the queue is protected; under Slurm's
//! backfill a job behind starts in the main pass when its partition is not blocked and
//! it fits on nodes not kept for the job (the job names its nodes, or the partitions
//! only overlap), and in a backfill pass when the job has no reservation in that pass (past
//! `bf_window`, beyond `bf_max_job_test`, `NoReserve`) — and even with one, the jobs
//! behind change which nodes the jobs ahead later choose. For instance, on nodes `z`,
//! `w`, `x` of 8 GPUs, with 4 GPUs of `z` and of `w` busy until 100 and `x` busy until
//! 200: job A (8 GPUs) is planned on `z` from 120 (`bf_resolution` 60), the job on `w`;
//! a 4-GPU, 110-second job behind it fits on `z` until then and starts. At 100 A finds
//! `z` half taken and starts on `w`, and the job waits for `z` until 110 — without the
//! job behind, A takes `z` and the job `w`, both at 100 (the story
//! `under_backfill_a_job_behind_can_delay_the_job_so_the_simulation_keeps_it`). And
//! since `bf_max_job_test` counts the jobs a pass examines, dropping any job reached
//! before the budget runs out changes which later jobs are examined. Under conservative
//! backfilling nothing behind can delay a reservation, but taking a job out re-plans
//! every reservation, and the copy without early ends never re-plans anyway (its cost is
//! small).
//!
//! So the cost of a prediction is the cost of the passes it simulates: a job near the
//! head of the queue costs a few passes, a job deep in a long queue as many as it takes
//! for the jobs ahead of it to start, up to [`super::ExplainOptions::max_passes`].

use std::collections::BTreeMap;

use crate::cluster::PartitionState;
use crate::decision::{Decision, Pass};
use crate::ids::{JobId, NodeId};
use crate::job::{JobState, NodeAlloc, PendingReason};
use crate::policy::Policy;
use crate::preempt::{PreemptMode, PreemptType};
use crate::scheduler::Scheduler;
use crate::time::Time;

use super::never_fits::NeverFits;

/// A running job whose end the predicted start waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningEnd {
    /// The running job.
    pub job: JobId,
    /// When it ends in the simulation: its claim's end (its start plus its time limit,
    /// later when it overruns, never before `now`), or its grace's end when preempted.
    pub end: Time,
}

/// A predicted start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PredictedStart {
    /// When (the scheduler's seconds).
    pub at: Time,
    /// On which nodes, ascending.
    pub nodes: Vec<NodeId>,
    /// Which pass would start it.
    pub pass: Pass,
    /// The jobs running now whose ends it waits for: those that end at or before `at`
    /// (at the end of their claims, or of their grace when the simulation preempts
    /// them) on a node it gets, by end then id.
    pub waits_for: Vec<RunningEnd>,
}

/// Why no start is predicted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoStart {
    /// The request can never be met in its partition.
    NeverFits(NeverFits),
    /// Still pending at `at` (the horizon, or the time after which nothing is left to
    /// happen), with this reason.
    StillPending {
        /// When the simulation stopped.
        at: Time,
        /// The job's pending reason then.
        reason: PendingReason,
    },
    /// The simulation ran out of passes ([`super::ExplainOptions::max_passes`]) at `at`
    /// without the job starting: it starts after `at`, if at all (a lower bound).
    Budget {
        /// Simulated time reached.
        at: Time,
    },
}

impl std::fmt::Display for NoStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoStart::NeverFits(n) => write!(f, "it can never start: {n}"),
            NoStart::StillPending { reason, .. } => {
                write!(
                    f,
                    "it does not start within the horizon ({})",
                    reason.as_str()
                )
            }
            NoStart::Budget { .. } => write!(
                f,
                "it does not start before the simulation's pass budget runs out (a lower bound)"
            ),
        }
    }
}

/// A start found by [`run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Started {
    pub(crate) at: Time,
    pub(crate) nodes: Vec<NodeAlloc>,
    pub(crate) pass: Pass,
    /// Every job that ended in the simulation before, and when.
    pub(crate) ended: Vec<(JobId, Time)>,
}

/// The predicted start of pending job `job` of `sched` from `now`, looking no further
/// than `horizon`.
pub(crate) fn predict(
    sched: &Scheduler,
    job: JobId,
    now: Time,
    horizon: Time,
    max_passes: u32,
) -> Result<PredictedStart, NoStart> {
    let started = run(sched.clone(), job, now, horizon, max_passes)?;
    Ok(predicted(sched, job, &started))
}

/// What a start of `job` found by a simulation of `sched` tells.
pub(crate) fn predicted(sched: &Scheduler, job: JobId, started: &Started) -> PredictedStart {
    PredictedStart {
        waits_for: waits_for(sched, job, started),
        at: started.at,
        nodes: started.nodes.iter().map(|a| a.node).collect(),
        pass: started.pass,
    }
}

/// The jobs running in `sched` that ended in the simulation before `started`, on its
/// nodes, after `job` could begin (a job waiting for its `--begin` time does not wait
/// for those that end before it).
fn waits_for(sched: &Scheduler, job: JobId, started: &Started) -> Vec<RunningEnd> {
    let begin = sched.job(job).map_or(Time::MIN, |j| j.spec.begin);
    let mut out: Vec<RunningEnd> = started
        .ended
        .iter()
        .filter_map(|&(id, end)| {
            let j = sched.job(id).filter(|j| j.state == JobState::Running)?;
            let alloc = j.alloc.as_ref()?;
            let shares = alloc
                .nodes
                .iter()
                .any(|a| started.nodes.iter().any(|b| b.node == a.node));
            let after_begin = end > begin || begin <= sched.last_pass();
            (end <= started.at && shares && after_begin).then_some(RunningEnd { job: id, end })
        })
        .collect();
    out.sort_by_key(|r| (r.end, r.job));
    out
}

/// Runs `s` (a copy) forward from `now` until `job` starts or `stop_after` passes (see
/// the module docs), running at most `max_passes` passes (at least one).
pub(crate) fn run(
    s: Scheduler,
    job: JobId,
    now: Time,
    stop_after: Time,
    max_passes: u32,
) -> Result<Started, NoStart> {
    run_counted(s, job, now, stop_after, max_passes).0
}

/// [`run`], with the number of passes it ran.
pub(crate) fn run_counted(
    mut s: Scheduler,
    job: JobId,
    now: Time,
    stop_after: Time,
    max_passes: u32,
) -> (Result<Started, NoStart>, u32) {
    drop_behind(&mut s, job, now);
    let mut started = None;
    let run = simulate(
        s,
        now,
        stop_after,
        max_passes,
        |id, at, alloc, pass, ended| {
            if id != job {
                return false;
            }
            started = Some(Started {
                at,
                nodes: alloc.to_vec(),
                pass,
                ended: ended.to_vec(),
            });
            true
        },
    );
    let result = match started {
        Some(st) => Ok(st),
        None => Err(run.no_start(job)),
    };
    (result, run.passes)
}

/// How a [`simulate`] run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The caller's `on_start` said it had seen enough, at this time.
    Done(Time),
    /// Out of passes, at this simulated time.
    Budget(Time),
    /// At this time nothing was left to happen before `stop_after` (the horizon, or the
    /// time after which nothing is left to happen at all).
    Pending(Time),
}

/// What a [`simulate`] run leaves.
pub(crate) struct Run {
    /// The copy, as the run left it.
    pub(crate) sched: Scheduler,
    /// Every job that ended in the run, and when, in order.
    pub(crate) ended: Vec<(JobId, Time)>,
    /// Passes run.
    pub(crate) passes: u32,
    /// The time of the run's second step (its first after `now`), if it got there.
    pub(crate) second_step: Option<Time>,
    pub(crate) stop: Stop,
}

impl Run {
    /// Why `job`, pending when the run began, did not start in it.
    pub(crate) fn no_start(&self, job: JobId) -> NoStart {
        match self.stop {
            Stop::Budget(at) => NoStart::Budget { at },
            Stop::Pending(at) | Stop::Done(at) => NoStart::StillPending {
                at,
                reason: self
                    .sched
                    .job(job)
                    .map_or(PendingReason::None, |j| j.reason),
            },
        }
    }
}

/// Runs `s` (a copy) forward from `now` (see the module docs) until `on_start` returns
/// true, `stop_after` passes, or `max_passes` passes (at least one) have run.
/// `on_start(job, at, nodes, pass, ended)` sees every start, with every job ended
/// before it.
pub(crate) fn simulate(
    mut s: Scheduler,
    now: Time,
    stop_after: Time,
    max_passes: u32,
    mut on_start: impl FnMut(JobId, Time, &[NodeAlloc], Pass, &[(JobId, Time)]) -> bool,
) -> Run {
    // Preempted jobs: when they end, and whether they come back.
    let mut preempted: BTreeMap<JobId, (Time, bool)> = BTreeMap::new();
    let mut ended = Vec::new();
    let mut t = now;
    let mut passes = 0u32;
    let mut second_step = None;
    let stop = 'run: loop {
        end_due(&mut s, &mut preempted, &mut ended, t);
        passes += 1;
        for d in s.schedule(t) {
            match d {
                Decision::Start {
                    job: id,
                    at,
                    alloc,
                    pass,
                } => {
                    if on_start(id, at, &alloc.nodes, pass, &ended) {
                        break 'run Stop::Done(t);
                    }
                }
                // Suspended victims and resumed jobs: the core has done it all; a
                // resumed job ends with its claim.
                Decision::Preempt {
                    mode: PreemptMode::Suspend,
                    ..
                }
                | Decision::Suspend { .. }
                | Decision::Resume { .. } => {}
                Decision::Preempt {
                    victim,
                    at,
                    mode,
                    grace,
                    ..
                } => {
                    let end = s.claim_end.get(&victim).copied().unwrap_or(at);
                    preempted.insert(
                        victim,
                        ((at + grace).min(end).max(t), mode == PreemptMode::Requeue),
                    );
                }
            }
        }
        // A victim preempted without grace ends at once: another step at `t`.
        let next = [s.claims_end.iter().next().map(|e| e.0), s.next_wakeup()]
            .into_iter()
            .flatten()
            .filter(|&x| x > t)
            .chain(preempted.values().map(|p| p.0))
            .min();
        match next {
            Some(n) if n <= stop_after => {
                if passes >= max_passes {
                    break Stop::Budget(t);
                }
                if n > now && second_step.is_none() {
                    second_step = Some(n);
                }
                t = n;
            }
            Some(_) => break Stop::Pending(stop_after),
            None => break Stop::Pending(t),
        }
    };
    Run {
        sched: s,
        ended,
        passes,
        second_step,
        stop,
    }
}

/// Ends every job due at `t`: claims ending by then, preempted jobs whose grace is over
/// (queued again under `REQUEUE`).
fn end_due(
    s: &mut Scheduler,
    preempted: &mut BTreeMap<JobId, (Time, bool)>,
    ended: &mut Vec<(JobId, Time)>,
    t: Time,
) {
    let mut due: Vec<(Time, JobId, bool)> = s
        .claims_end
        .iter()
        .take_while(|(end, _)| *end <= t)
        .map(|&(end, id)| (end, id, false))
        .collect();
    due.extend(
        preempted
            .iter()
            .filter(|(_, (end, _))| *end <= t)
            .map(|(&id, &(end, requeue))| (end, id, requeue)),
    );
    due.sort();
    for (_, id, requeue) in due {
        preempted.remove(&id);
        let Some(gone) = s.job_ended(id, t) else {
            continue;
        };
        ended.push((id, t));
        if requeue {
            let mut spec = gone.spec;
            spec.begin = spec.begin.max(t);
            // A refusal (its partition closed meanwhile) leaves it out, as it would be.
            let _ = s.submit(spec, t);
        }
    }
}

/// Takes the jobs queued behind `job` out of `s` where that provably changes nothing
/// for `job` (see the module docs).
fn drop_behind(s: &mut Scheduler, job: JobId, now: Time) {
    if s.policy != Policy::Fcfs
        || s.cluster.preempt.kind != PreemptType::None
        || s.accounts.enforce.limits
        || s.borrow.active()
        || s.resv.of_job(job).is_some()
    {
        return;
    }
    let Some(j) = s.jobs.get(&job) else {
        return;
    };
    let spec = &j.spec;
    let part = s.cluster.partition(spec.partition);
    let eligible = part.state == PartitionState::Up
        && s.free_now.up_nodes(spec.partition) > 0
        && part.max_time.is_none_or(|m| spec.time_limit <= m)
        && part.max_nodes.is_none_or(|m| spec.request.min_nodes <= m)
        && spec.request.min_nodes >= part.min_nodes
        && spec.acct.not_allowed.is_none()
        && spec.begin <= now;
    if !eligible {
        return;
    }
    let key = s.keys[&job];
    let behind: Vec<JobId> = s
        .queue
        .range(key..)
        .skip(1)
        .map(|(_, id)| *id)
        .filter(|id| s.resv.of_job(*id).is_none())
        .collect();
    for id in behind {
        s.cancel_pending(id, now);
    }
}
