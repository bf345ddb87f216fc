//! Explanations of pending jobs: why a job waits, when it will start, and what would
//! start it sooner (beyond Slurm, whose answer is one reason code).
//!
//! [`explain`] answers for one pending job at `now`, from a scheduler's state, without
//! changing it:
//!
//! - its pending reason ([`PendingReason`], what `squeue` shows);
//! - whether its request can *ever* be met in its partition ([`NeverFits`], with the
//!   numbers: "no node has 16 GPUs; the largest has 8");
//! - how each node of its partition stands for it now, nodes in the same situation
//!   grouped ([`NodeGroup`], [`NodeVerdict`]);
//! - the accounting limits that hold it, with the limit, the scope's usage and the
//!   user's own part of it ([`LimitHold`]);
//! - its place in its partition's queue and what the jobs ahead of it ask
//!   ([`QueuePosition`]);
//! - its predicted start and nodes ([`PredictedStart`]), from a forward simulation of a
//!   copy of the scheduler (see below);
//! - changes that would start it strictly sooner ([`Counterfactual`]), each checked by
//!   the same simulation on a copy with the job changed.
//!
//! # What the prediction assumes
//!
//! Nothing new arrives (no submissions, no node changes); every running job ends
//! exactly at the end of its claim (its start plus its time limit, or later when it has
//! overrun and is being killed, but never before `now`); a job preempted in the
//! simulation ends after its grace time (and is queued again under `REQUEUE`). At each
//! instant every job due to end then ends, then the scheduler runs one pass; it is
//! called again at its own wake-ups. The prediction is exactly what this scheduler would
//! do if the world behaved so. A job ending before its limit can only make it earlier
//! under conservative backfilling; under the other policies it usually does, but not
//! always (an earlier end may let a job of higher priority start first).
//!
//! # Cost
//!
//! A prediction costs the passes it simulates, each what the scheduler's own pass costs:
//! a few for a job near the head of its queue, as many as it takes for the jobs ahead to
//! start for a job deep in a long one, bounded by [`ExplainOptions::max_passes`] (then
//! [`NoStart::Budget`] gives a lower bound). The queue behind the job is taken out of
//! the copy only under FCFS, where that provably changes nothing; under the other
//! policies a job behind can change when the job starts, even under Slurm's backfill
//! with the job reserved (see the story
//! `under_backfill_a_job_behind_can_delay_the_job_so_the_simulation_keeps_it`), so the
//! simulation keeps it. On a busy 1,000-node machine with 10,000 jobs queued, a job that
//! starts within a few backfill intervals is explained in tens of milliseconds
//! (`cargo bench -p sluice-sim --bench explain`).
//!
//! Deviations and limits: preemptions already under way before `now` end their victims
//! at their claims' ends (the controller, not the core, knows their grace deadlines);
//! priorities do not change during the simulation (the caller recomputes multifactor
//! priority, the core does not).

mod counterfactual;
mod forecast;
mod forward;
mod limit_hold;
mod never_fits;
mod node_fit;
mod options;
mod queue;

#[cfg(test)]
mod tests;

pub use counterfactual::{Change, Counterfactual};
pub use forecast::{forecast, forecast_owned, Forecast};
pub use forward::{NoStart, PredictedStart, RunningEnd};
pub use limit_hold::LimitHold;
pub use never_fits::NeverFits;
pub use node_fit::{Dimension, NodeGroup, NodeVerdict};
pub use options::{Alternative, ExplainOptions};
pub use queue::{Demand, QueuePosition};

use crate::ids::JobId;
use crate::job::{JobState, PendingReason};
use crate::scheduler::Scheduler;
use crate::time::Time;

/// The whole answer to "why is this job pending, and what would start it sooner?".
///
/// Times are in the scheduler's seconds (the caller's epoch); resources per node in
/// [`crate::Resources`]' units (processors, MiB, GRES counts by slot of the cluster's
/// [`crate::GresTable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// The job.
    pub job: JobId,
    /// When the explanation holds.
    pub now: Time,
    /// Its pending reason as the last pass set it (Slurm's code, as `squeue` shows).
    pub reason: PendingReason,
    /// `Some` when the request can never be met in its partition, even with every node
    /// up and idle, and why.
    pub never_fits: Option<NeverFits>,
    /// Every node of its partition, grouped by how it stands for the job now, groups in
    /// order of their first node.
    pub nodes: Vec<NodeGroup>,
    /// Accounting limits that would keep it from starting now, in Slurm's precedence
    /// (the first is its reason when it is held by a limit); empty when none does.
    pub limits: Vec<LimitHold>,
    /// Its place in its partition's queue.
    pub queue: QueuePosition,
    /// When and where it is predicted to start, or why it is not.
    pub start: Result<PredictedStart, NoStart>,
    /// The start the last pass planned for it (a backfill or conservative reservation,
    /// EASY's shadow time for the head), if any: what Slurm's `squeue --start` shows. It
    /// may differ from `start`, which follows the passes to come.
    pub planned: Option<Time>,
    /// Changes that would start it strictly earlier than `start` (or at all, when it
    /// does not start), each with its own predicted start; empty when none helps.
    pub counterfactuals: Vec<Counterfactual>,
    /// Whether the search for [`Counterfactual`]s was cut short: a simulation ran out of
    /// passes ([`ExplainOptions::max_passes`], or what was left of
    /// [`ExplainOptions::counterfactual_passes`]) before it could tell whether its change
    /// helps, so changes not listed may still help. `false` when the search was complete
    /// or did not run.
    pub counterfactuals_cut: bool,
}

/// Explains pending job `job` at `now` (see the module docs); `None` when the scheduler
/// has no such pending job. Pure: the scheduler is only read (the simulations run on
/// copies).
pub fn explain(
    sched: &Scheduler,
    job: JobId,
    now: Time,
    options: &ExplainOptions,
) -> Option<Explanation> {
    explain_with(sched, job, now, options, None)
}

/// [`explain`], taking the predicted start from `forecast` when it still holds
/// ([`Forecast::holds_for`]) instead of simulating again. A forecast made with at least
/// [`ExplainOptions::max_passes`] passes gives the same start as the simulation would
/// (see [`forecast()`]), with at least as many passes behind a "not before"; one made
/// with fewer is used only for the jobs it starts.
pub fn explain_with(
    sched: &Scheduler,
    job: JobId,
    now: Time,
    options: &ExplainOptions,
    forecast: Option<&Forecast>,
) -> Option<Explanation> {
    let j = sched.job(job).filter(|j| j.state == JobState::Pending)?;
    let never_fits = never_fits::check(sched, &j.spec);
    let horizon = now.saturating_add(options.horizon.max(0));
    // A forecast cut by a smaller budget than ours leaves the job to our own run.
    let forecast = forecast.filter(|f| f.holds_for(sched, now)).and_then(|f| {
        f.start_of(sched, job)
            .filter(|s| f.passes >= options.max_passes || !matches!(s, Err(NoStart::Budget { .. })))
    });
    let start = match (&never_fits, forecast) {
        (Some(n), _) => Err(NoStart::NeverFits(n.clone())),
        (None, Some(start)) => start,
        (None, None) => forward::predict(sched, job, now, horizon, options.max_passes),
    };
    let (counterfactuals, counterfactuals_cut) = if options.counterfactuals {
        counterfactual::search(sched, &j.spec, now, horizon, &start, options)
    } else {
        (Vec::new(), false)
    };
    Some(Explanation {
        job,
        now,
        reason: j.reason,
        never_fits,
        nodes: node_fit::group(sched, j, now),
        limits: limit_hold::holds(sched, j, now),
        queue: queue::position(sched, job),
        start,
        planned: j.planned_start,
        counterfactuals,
        counterfactuals_cut,
    })
}
