//! The controller's forecast: every pending job's predicted start, from one forward
//! simulation of the whole queue (`sluice_core::explain::forecast`), made off the event
//! loop after the state changes and read by `sluice explain` and `squeue --start`.
//!
//! One forecast is made at a time, on a copy of the scheduler taken under the lock;
//! while the state keeps changing, the next is made once the last is done and a pause
//! four times as long as it took has passed (at least a second), so that forecasting
//! a long queue takes at most a fifth of a core from everything else. A
//! forecast answers while [`Forecast::holds_for`] says so (the scheduler's generation
//! unchanged, its next step not reached); `explain` otherwise simulates the job itself
//! (on a copy, off the lock), and `squeue --start` shows the last forecast's start, or
//! the backfill plan's where the forecast has none.

use std::sync::Arc;

use sluice_core::explain::{ExplainOptions, Forecast};
use sluice_core::{JobId, Scheduler};
use sluice_proto::error::ApiError;
use sluice_proto::types::{JobDescription, WillRunReply};

use super::Controller;

/// The controller's forecast and whether one is being made.
#[derive(Default)]
pub(super) struct Forecasts {
    /// The last forecast made.
    last: Option<Arc<Forecast>>,
    /// A forecast is being made.
    making: bool,
    /// When the last one was begun, and when it was done.
    began: i64,
    done: i64,
    /// Forecasts made so far (what the read snapshot compares).
    made: u64,
}

/// The pause after a forecast, as a multiple of the time it took.
const PAUSE: i64 = 4;

/// A forecast to make: the scheduler as it was, when, and how many passes it may take.
pub struct ForecastWork {
    sched: Scheduler,
    now: i64,
    passes: u32,
}

impl ForecastWork {
    /// Makes the forecast (seconds on a big, busy cluster: call it off the event loop).
    /// It looks as far ahead as `explain` does, running sluice.conf's `ForecastPasses`.
    pub fn make(self) -> Forecast {
        let horizon = self.now.saturating_add(ExplainOptions::default().horizon);
        // The copy is this work's own: the simulation runs on it, not on a second one.
        sluice_core::explain::forecast_owned(self.sched, self.now, horizon, self.passes)
    }
}

impl Controller {
    /// A forecast to make now, when none is being made, jobs are queued and the last
    /// one no longer holds; the controller then counts one as being made until
    /// [`Controller::forecast_made`].
    pub fn forecast_wanted(&mut self, now: i64) -> Option<ForecastWork> {
        self.forecast_wanted_copying(now, Scheduler::clone)
    }

    /// [`Controller::forecast_wanted`], the scheduler's copy made by `copy` (the
    /// server makes it on a thread of its own, so that the copy's memory does not mix
    /// with the event loop's).
    pub fn forecast_wanted_copying(
        &mut self,
        now: i64,
        copy: impl FnOnce(&Scheduler) -> Scheduler,
    ) -> Option<ForecastWork> {
        let f = &self.forecasts;
        let passes = self.conf.site.forecast_passes;
        let pause = ((f.done - f.began) * PAUSE).max(1);
        if f.making
            || passes == 0
            || (f.last.is_some() && now < f.done + pause)
            || self.sched.pending_count() == 0
            || f.last
                .as_ref()
                .is_some_and(|l| l.holds_for(&self.sched, now))
        {
            return None;
        }
        self.forecasts.making = true;
        self.forecasts.began = now;
        Some(ForecastWork {
            sched: copy(&self.sched),
            now,
            passes,
        })
    }

    /// Keeps a forecast made from [`Controller::forecast_wanted`]'s copy.
    pub fn forecast_made(&mut self, forecast: Forecast, now: i64) {
        self.forecasts.making = false;
        self.forecasts.done = now;
        self.forecasts.last = Some(Arc::new(forecast));
        self.forecasts.made += 1;
    }

    /// `sbatch --test-only`: when and where `desc` would start if submitted now. It is
    /// checked as a submission ([`Controller::prepare`], refused with the same
    /// message), then forecast on a copy of the scheduler with it queued under the
    /// next id, which it does not take (an array: its first task). Nothing changes.
    ///
    /// The forecast runs here, on the event loop: a test-only submission is rare, and
    /// its simulation as long as one `squeue --start` forecast.
    pub fn will_run(
        &self,
        desc: JobDescription,
        caller: &super::Caller,
        user: &str,
        group: &str,
        now: i64,
    ) -> Result<WillRunReply, ApiError> {
        let (prepared, on_itself) = self.checked(desc, caller, user, group, now)?;
        if on_itself {
            return Err(ApiError::invalid(super::dependency::PROBLEM));
        }
        let id = JobId(self.next_job_id);
        let mut job = prepared.jobs(id).swap_remove(0);
        job.id = id;
        job.accrue_time = Some(job.desc.begin.unwrap_or(now).max(now));
        let mut spec = self.core_spec(&job).map_err(ApiError::invalid)?;
        if self.priority.multifactor() {
            let factors = self.job_factors(&job, &spec);
            spec.priority = self.priority.priority(&factors, now).priority;
        }
        let mut sched = self.sched.clone();
        sched
            .submit(spec, now)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        let horizon = now.saturating_add(ExplainOptions::default().horizon);
        let passes = self.conf.site.forecast_passes.max(1);
        let f = sluice_core::explain::forecast(&sched, now, horizon, passes);
        let (Some(start), Some(nodes), Some(cpus)) =
            (f.start_time(id), f.start_nodes(id), f.start_cpus(id))
        else {
            return Err(ApiError::invalid(
                "Requested node configuration is not available",
            ));
        };
        Ok(WillRunReply {
            job_id: id.0,
            start: start.max(now),
            cpus,
            nodes: self.hostlist(&nodes),
            partition: job.partition.to_string(),
        })
    }

    /// The last forecast, when it still holds at `now`.
    pub(super) fn forecast_at(&self, now: i64) -> Option<Arc<Forecast>> {
        self.forecasts
            .last
            .clone()
            .filter(|f| f.holds_for(&self.sched, now))
    }

    /// The nodes `squeue --start` shows (SCHEDNODES) for pending job `id`: where the
    /// last forecast starts it, unless that start has passed.
    pub(super) fn expected_nodes(&self, id: JobId) -> Option<String> {
        let f = self.forecasts.last.as_ref()?;
        f.start_time(id).filter(|&t| t >= self.sched.last_pass())?;
        Some(self.hostlist(&f.start_nodes(id)?))
    }

    /// Whether the last forecast starts pending job `id` no earlier than the last pass
    /// (it then names its nodes, [`Controller::expected_nodes`]).
    pub(super) fn expects_nodes(&self, id: JobId) -> bool {
        self.forecasts
            .last
            .as_ref()
            .and_then(|f| f.start_time(id))
            .is_some_and(|t| t >= self.sched.last_pass())
    }

    /// Pending job `id`'s start in the last forecast, whenever it is.
    pub(super) fn forecast_start(&self, id: JobId) -> Option<i64> {
        self.forecasts.last.as_ref().and_then(|f| f.start_time(id))
    }

    /// How many forecasts were made: it changes when a new forecast comes.
    pub(super) fn forecasts_made(&self) -> u64 {
        self.forecasts.made
    }

    /// What `squeue --start` shows for pending job `id`: its start in the last
    /// forecast (unless that time has passed), else the start the last backfill pass
    /// planned.
    pub(super) fn expected_start(&self, id: JobId, planned: Option<i64>) -> Option<i64> {
        self.forecasts
            .last
            .as_ref()
            .and_then(|f| f.start_time(id))
            .filter(|&t| t >= self.sched.last_pass())
            .or(planned)
    }
}
