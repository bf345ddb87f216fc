//! What a scheduling pass tells whoever watches it, for statistics (`sdiag`): where its
//! phases begin and end, and how far each went into the queue.
//!
//! The core reads no clock: a controller that wants to time the main and the backfill
//! phases does so in these calls, while the simulator passes [`Unobserved`]. Nothing a
//! pass decides depends on its observer.

/// A phase of a scheduling pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Jobs in queue order while they fit (Slurm's main scheduler); under FCFS, EASY
    /// and conservative backfilling, the policy's whole pass.
    Main,
    /// The backfill phase of Slurm-style backfill, when it is due.
    Backfill,
}

/// How far a phase went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseFigures {
    /// Pending jobs in the queue when the phase began.
    pub queue_len: u32,
    /// Jobs the phase looked at.
    pub depth: u32,
    /// Of those, jobs it tried to place (eligible ones).
    pub tried: u32,
    /// Jobs it started.
    pub started: u32,
    /// Distinct times in the backfill plan when the phase ended (Slurm's "table
    /// size"); 0 for the main phase.
    pub plan_times: u32,
}

/// Watches a pass's phases.
pub trait PassObserver {
    /// `phase` begins.
    fn begin(&mut self, phase: Phase);
    /// `phase` ended, having gone as far as `figures` say.
    fn end(&mut self, phase: Phase, figures: PhaseFigures);
}

/// No one watches.
pub struct Unobserved;

impl PassObserver for Unobserved {
    fn begin(&mut self, _: Phase) {}
    fn end(&mut self, _: Phase, _: PhaseFigures) {}
}
