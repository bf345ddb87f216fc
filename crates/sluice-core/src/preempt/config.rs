//! Preemption settings, as data: which jobs may preempt which (`PreemptType`), what
//! happens to a victim (`PreemptMode`) and the cluster's defaults. A leaf module: the
//! cluster description, QOS records and decisions carry these types, and the
//! behaviour that uses them ([`crate::preempt`]) sits above the scheduler they feed.

use crate::time::Secs;

/// Which jobs may preempt which (`PreemptType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreemptType {
    /// `preempt/none`: no preemption.
    #[default]
    None,
    /// `preempt/partition_prio`: jobs of a higher-`PriorityTier` partition preempt
    /// jobs of lower ones on the nodes they share.
    PartitionPrio,
    /// `preempt/qos`: a QOS's jobs preempt the jobs of the QOS in its `Preempt` list.
    Qos,
}

/// What happens to a preempted job (`PreemptMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PreemptMode {
    /// Never preempted.
    #[default]
    Off,
    /// Signalled, then ended after its grace time (state `PREEMPTED`).
    Cancel,
    /// Signalled, ended after its grace time, and queued again under its id.
    Requeue,
    /// Stopped where it stands (its processes suspended) while the preemptor runs on
    /// its resources, and resumed once they are free again (see [`crate::gang`]).
    Suspend,
}

impl PreemptMode {
    /// Slurm's upper-case name (`OFF`, `CANCEL`, `REQUEUE`, `SUSPEND`).
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptMode::Off => "OFF",
            PreemptMode::Cancel => "CANCEL",
            PreemptMode::Requeue => "REQUEUE",
            PreemptMode::Suspend => "SUSPEND",
        }
    }
}

/// The cluster's preemption settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreemptConfig {
    /// `PreemptType`.
    pub kind: PreemptType,
    /// `PreemptMode`: the mode of jobs whose partition (or QOS) sets none.
    pub mode: PreemptMode,
    /// `PreemptExemptTime`, seconds: a job running for less is never preempted.
    pub exempt_time: Secs,
    /// `GANG` in `PreemptMode`: the gang scheduler resumes jobs suspended by
    /// preemption (Slurm requires it with `SUSPEND`).
    pub gang: bool,
    /// `SchedulerTimeSlice`, seconds between two slices of gang time-slicing (see
    /// [`crate::timeslice`]); 0 means Slurm's default, 30.
    pub time_slice: Secs,
}

impl PreemptConfig {
    /// Seconds between two slices: `SchedulerTimeSlice`, else 30.
    pub fn slice_secs(&self) -> Secs {
        if self.time_slice > 0 {
            self.time_slice
        } else {
            30
        }
    }
}
