//! One forward simulation for the whole queue: when every pending job is predicted to
//! start, computed once and read by many.
//!
//! [`forecast`] runs the simulation of [`super::forward`] on a copy of the scheduler
//! (no new arrivals, running jobs ending at the ends of their claims, a pass at every
//! instant where something ends or the scheduler asks to be woken) without stopping at
//! any one job: it goes on until every job pending at `now` has started, the horizon
//! passes, nothing is left to happen, or the pass budget runs out. Each job's predicted
//! start is then exactly what [`super::explain`]'s own simulation of that job finds
//! with the same budget: the two runs make the same passes up to the job's start (the
//! per-job run only leaves out, under FCFS, jobs that provably change nothing).
//!
//! What it is for: a controller makes one forecast after its state changes, off its
//! event loop, and answers `explain` and `squeue --start` from it in microseconds while
//! [`Forecast::holds_for`] says it still applies, instead of simulating again for each
//! question. A forecast costs what the passes it simulates cost: on a busy 1,000-node
//! machine with 10,000 jobs queued, a few seconds for a few hundred passes.

use std::collections::BTreeSet;

use crate::decision::Pass;
use crate::ids::JobId;
use crate::job::NodeAlloc;
use crate::scheduler::Scheduler;
use crate::time::Time;

use super::forward::{self, NoStart, PredictedStart, Run, Started};

/// A job's start in the forecast, with how many jobs had ended before it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Start {
    at: Time,
    nodes: Box<[NodeAlloc]>,
    pass: Pass,
    /// The first this many of [`Forecast::ended`] ended before it.
    ended: usize,
}

/// The predicted starts of every job pending in a scheduler at one moment (see the
/// module docs). Times are the scheduler's seconds.
#[derive(Clone, Debug)]
pub struct Forecast {
    /// The scheduler's [`Scheduler::generation`] it was made from.
    pub generation: u64,
    /// When it was made (the simulation's first pass).
    pub now: Time,
    /// The simulation's first step after `now`, if any: the forecast applies before it
    /// (see [`Forecast::holds_for`]).
    pub next_step: Option<Time>,
    /// Passes simulated.
    pub passes: u32,
    starts: ById<Start>,
    /// Every job that ended in the simulation, and when, in order.
    ended: Vec<(JobId, Time)>,
    /// Why jobs still pending at the end did not start.
    not_started: ById<NoStart>,
}

/// Entries by job id, read-only once made: a sorted slice, searched by halves, which
/// holds a forecast of a long queue in a third of a map's memory (a map's nodes,
/// filled out of id order, stay half empty).
#[derive(Clone, Debug)]
struct ById<T>(Box<[(JobId, T)]>);

impl<T> ById<T> {
    fn new(mut entries: Vec<(JobId, T)>) -> Self {
        entries.sort_unstable_by_key(|(id, _)| *id);
        ById(entries.into_boxed_slice())
    }

    fn get(&self, id: &JobId) -> Option<&T> {
        let i = self.0.binary_search_by_key(id, |(k, _)| *k).ok()?;
        Some(&self.0[i].1)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn values(&self) -> impl Iterator<Item = &T> {
        self.0.iter().map(|(_, v)| v)
    }
}

/// Forecasts every job pending in `sched` from `now`, looking no further than
/// `horizon` (an absolute time), running at most `max_passes` passes (at least one).
/// Pure: `sched` is only read.
pub fn forecast(sched: &Scheduler, now: Time, horizon: Time, max_passes: u32) -> Forecast {
    forecast_owned(sched.clone(), now, horizon, max_passes)
}

/// [`forecast`] on a scheduler the caller gives up (a copy already made): the
/// simulation runs on it, with no second copy.
pub fn forecast_owned(sched: Scheduler, now: Time, horizon: Time, max_passes: u32) -> Forecast {
    let mut waiting: usize = sched.pending_count();
    // The jobs pending now not started yet in the simulation.
    let mut pending: BTreeSet<JobId> = sched.pending().map(|j| j.id()).collect();
    let generation = sched.generation();
    let mut starts = Vec::with_capacity(pending.len());
    let run: Run = forward::simulate(
        sched,
        now,
        horizon,
        max_passes,
        |id, at, nodes, pass, ended| {
            // Only a job's first start counts (a preempted job may start again).
            if pending.remove(&id) {
                let start = Start {
                    at,
                    nodes: nodes.into(),
                    pass,
                    ended: ended.len(),
                };
                starts.push((id, start));
                waiting -= 1;
            }
            waiting == 0
        },
    );
    let not_started = pending.iter().map(|&id| (id, run.no_start(id))).collect();
    Forecast {
        generation,
        now,
        next_step: run.second_step,
        passes: run.passes,
        starts: ById::new(starts),
        ended: run.ended,
        not_started: ById::new(not_started),
    }
}

impl Forecast {
    /// Whether this forecast still answers for `sched` at `now`: `sched` has not
    /// changed since (same [`Scheduler::generation`]), and `now` has not reached the
    /// forecast's first step after its own `now` (when something it expected to happen
    /// should have happened). Otherwise it is stale, and [`super::explain`] simulates
    /// again.
    pub fn holds_for(&self, sched: &Scheduler, now: Time) -> bool {
        self.generation == sched.generation()
            && now >= self.now
            && self.next_step.is_none_or(|n| now < n)
    }

    /// The predicted start of `job`, or why there is none; `None` when `job` was not
    /// pending when the forecast was made. `sched` must be the scheduler it was made
    /// from (for the running jobs it waits for).
    pub fn start_of(
        &self,
        sched: &Scheduler,
        job: JobId,
    ) -> Option<Result<PredictedStart, NoStart>> {
        if let Some(no) = self.not_started.get(&job) {
            return Some(Err(no.clone()));
        }
        let s = self.starts.get(&job)?;
        let started = Started {
            at: s.at,
            nodes: s.nodes.to_vec(),
            pass: s.pass,
            ended: self.ended[..s.ended].to_vec(),
        };
        Some(Ok(forward::predicted(sched, job, &started)))
    }

    /// The predicted start time of `job`, if it starts in the forecast.
    pub fn start_time(&self, job: JobId) -> Option<Time> {
        self.starts.get(&job).map(|s| s.at)
    }

    /// The nodes `job` is predicted to start on, ascending, if it starts in the forecast.
    pub fn start_nodes(&self, job: JobId) -> Option<Vec<crate::ids::NodeId>> {
        self.starts
            .get(&job)
            .map(|s| s.nodes.iter().map(|a| a.node).collect())
    }

    /// The processors `job` is predicted to start with, if it starts in the forecast.
    pub fn start_cpus(&self, job: JobId) -> Option<u32> {
        self.starts
            .get(&job)
            .map(|s| s.nodes.iter().map(|a| a.usage.cpus).sum())
    }

    /// How many jobs are predicted to start, and how many not.
    pub fn counts(&self) -> (usize, usize) {
        (self.starts.len(), self.not_started.len())
    }

    /// How the simulation ended: `true` when it ran out of passes before every job
    /// started (the jobs left have [`NoStart::Budget`]).
    pub fn cut_short(&self) -> bool {
        self.not_started
            .values()
            .any(|n| matches!(n, NoStart::Budget { .. }))
    }
}
