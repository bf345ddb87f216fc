//! What the core hands back: decisions for the caller to carry out.

use crate::ids::JobId;
use crate::job::Allocation;
use crate::preempt::config::PreemptMode;
use crate::time::{Secs, Time};

/// Which part of the scheduler made a decision (for explanations and the audit trail).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// The main pass: jobs in queue order while they fit.
    Main,
    /// The backfill pass: a lower-priority job that fits without delaying the
    /// reservations of those ahead of it.
    Backfill,
    /// A planned start coming due (conservative backfilling).
    Reservation,
    /// A preemptor starting on what its victims freed.
    Preempt,
}

impl Pass {
    /// Lower-case name, as printed in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Pass::Main => "main",
            Pass::Backfill => "backfill",
            Pass::Reservation => "reservation",
            Pass::Preempt => "preempt",
        }
    }
}

/// A decision the caller must carry out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start `job` at `at` on `alloc`. The core already counts the resources as taken.
    Start {
        /// The job.
        job: JobId,
        /// Start time (always the `now` of the call that decided it).
        at: Time,
        /// Nodes and per-node shares.
        alloc: Allocation,
        /// The pass that started it.
        pass: Pass,
    },
    /// Preempt the running job `victim` for the pending job `by`: signal it now
    /// (SIGTERM, or its `--signal`), and end it `grace` seconds later at the latest, then
    /// cancel or requeue it as `mode` says. Report its end with
    /// [`crate::Scheduler::job_ended`] as usual: until `by` starts, what `victim` frees
    /// is held for `by` alone. With [`PreemptMode::Suspend`], stop `victim`'s processes
    /// instead: the core has already suspended it (state
    /// [`crate::JobState::Suspended`]) and given its resources to `by`; a
    /// [`Decision::Resume`] follows when they are free again.
    Preempt {
        /// The job to preempt (running).
        victim: JobId,
        /// The pending job it makes room for.
        by: JobId,
        /// When it was decided (the `now` of the pass).
        at: Time,
        /// Cancel or requeue (never [`PreemptMode::Off`]).
        mode: PreemptMode,
        /// Seconds between the signal and the kill.
        grace: Secs,
        /// `victim` runs on capacity borrowed from `by`'s cohort, which `by` takes back
        /// (see [`crate::borrow`]).
        reclaim: bool,
    },
    /// Stop `job`'s processes at `at` (gang time-slicing, see [`crate::timeslice`]): the
    /// core has suspended it (state [`crate::JobState::Suspended`]) and counts what it
    /// held as free; a [`Decision::Resume`] follows at a later slice. A job started in
    /// the same pass is suspended right after its [`Decision::Start`].
    Suspend {
        /// The job (suspended now).
        job: JobId,
        /// When (the `now` of the pass).
        at: Time,
    },
    /// Continue `job`, suspended by preemption or time-slicing (a [`Decision::Preempt`] with
    /// [`PreemptMode::Suspend`]), at `at`: its resources are its own again (see
    /// [`crate::gang`]).
    Resume {
        /// The job (now running again).
        job: JobId,
        /// When (the `now` of the pass).
        at: Time,
    },
}
