//! The scheduling core of Sluice.
//!
//! Pure and deterministic: no I/O, no clock, no threads, no unseeded randomness, no
//! iteration over hash maps where order matters. Time enters only as an argument
//! (`now`). The live controller drives it with the wall clock; the simulator drives
//! the very same code with a virtual clock over real workload traces.
//!
//! The entry point is [`Scheduler`]: feed it jobs ([`Scheduler::submit`]), tell it when
//! jobs end ([`Scheduler::job_ended`]), ask it to decide ([`Scheduler::schedule`]) and
//! when to be asked again ([`Scheduler::next_wakeup`]).

pub mod borrow;
pub mod cluster;
pub mod decision;
pub mod explain;
pub mod fairshare;
mod free_now;
pub mod gang;
pub mod gpu_pick;
pub mod gpus;
mod het;
pub mod ids;
pub mod job;
mod kept;
pub mod limits;
pub mod multifactor;
mod node_changes;
pub mod observe;
pub mod partition_policy;
mod partitions;
pub mod placement;
pub mod policy;
pub mod preempt;
pub mod profile;
pub mod reservation;
pub mod scheduler;
pub mod select;
mod side_claims;
pub mod time;
pub mod timeslice;
pub mod tres;
mod unavailable;

pub use borrow::{Cohort, CohortMember};
pub use cluster::{BlockLayout, Cluster, Gpu, Node, NodeState, Partition, PartitionState};
pub use decision::{Decision, Pass};
pub use explain::{explain, ExplainOptions, Explanation};
pub use ids::{JobId, NodeId, PartitionId};
pub use job::{
    Allocation, Job, JobRequest, JobSpec, JobState, MemRequest, NodeAlloc, PendingReason,
};
pub use placement::Placement;
pub use policy::{BackfillParams, Policy};
pub use preempt::{PreemptConfig, PreemptMode, PreemptType};
pub use profile::Profile;
pub use reservation::{
    AccessList, Reservation, ReservationRequest, ResvError, ResvEvent, ResvFlags, ResvUsage,
};
pub use scheduler::{EndSemantics, Scheduler, SubmitError};
pub use time::{Secs, Time, MAX_TIME, MAX_TIME_LIMIT, NEVER};
pub use tres::{GresTable, Resources};
