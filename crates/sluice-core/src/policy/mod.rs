//! Scheduling policies. Each is a pass over the queue that the [`crate::Scheduler`] runs.
//!
//! - [`Policy::Fcfs`]: first come, first served; the queue stops at the first job that
//!   does not fit.
//! - [`Policy::Easy`]: EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001): only the
//!   head of the queue holds a reservation; later jobs may start now if they do not
//!   delay it.
//! - [`Policy::Conservative`]: conservative backfilling (Mu'alem & Feitelson 2001): every
//!   job gets a reservation on arrival; reservations only ever move earlier.
//! - [`Policy::Backfill`]: Slurm's `sched/backfill`: a main pass in priority order on
//!   every event, plus a periodic backfill pass that plans every job it tests
//!   (reservations for all of them, as Slurm does) within `bf_window`, at
//!   `bf_resolution`, up to `bf_max_job_test` jobs.

pub(crate) mod backfill;
pub(crate) mod conservative;
pub(crate) mod easy;
pub(crate) mod fcfs;

use crate::time::Secs;

/// Slurm's backfill parameters (`SchedulerParameters=` in slurm.conf), with Slurm's
/// defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackfillParams {
    /// `bf_interval`: seconds between backfill passes (default 30).
    pub interval: Secs,
    /// `bf_window`: how far ahead, in seconds, jobs are planned (default 1440 min = 1 day).
    pub window: Secs,
    /// `bf_resolution`: planned end times are rounded up to a multiple of this many
    /// seconds (default 60).
    pub resolution: Secs,
    /// `bf_max_job_test`: jobs examined per pass at most (default 500).
    pub max_job_test: usize,
    /// `bf_continue`: when a pass stops at `bf_max_job_test`, the next pass resumes after
    /// the last job examined (keeping the reservations already planned for the jobs
    /// before it) instead of starting again from the top of the queue. Slurm's option
    /// resumes a pass after it yields its locks; in a core without locks the pass is
    /// bounded by the test budget instead, and this is the same idea: deep queues get
    /// examined over successive passes.
    pub continue_pass: bool,
    /// `max_switch_wait`: seconds a job with `--switches` but no max-time waits for its
    /// switch count (default 300).
    pub max_switch_wait: Secs,
    /// `max_script_size`: the largest batch script the controller accepts, in bytes
    /// (default 4 MiB). Not used in scheduling.
    pub max_script_size: usize,
}

impl Default for BackfillParams {
    fn default() -> Self {
        BackfillParams {
            interval: 30,
            window: 1440 * 60,
            resolution: 60,
            max_job_test: 500,
            continue_pass: false,
            max_switch_wait: 300,
            max_script_size: 4 * 1024 * 1024,
        }
    }
}

/// The scheduling policy a [`crate::Scheduler`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// First come, first served.
    Fcfs,
    /// EASY backfilling (submission order).
    Easy,
    /// Conservative backfilling (submission order).
    Conservative,
    /// Slurm-style priority scheduling with periodic backfill.
    Backfill(BackfillParams),
}

impl Policy {
    /// The policy's command-line name: `fcfs`, `easy`, `conservative`, `backfill`.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Easy => "easy",
            Policy::Conservative => "conservative",
            Policy::Backfill(_) => "backfill",
        }
    }

    /// True for policies that order the queue by priority rather than submission.
    pub fn uses_priority(&self) -> bool {
        matches!(self, Policy::Backfill(_))
    }
}
