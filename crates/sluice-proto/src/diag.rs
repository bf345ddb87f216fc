//! The controller's statistics, as `sdiag` shows them (`GET /v1/diag`; `POST
//! /v1/diag/reset` clears them, operators only).
//!
//! The figures are Slurm's (`slurmctld`'s `diag_stats`): counters since the last reset
//! (at midnight UTC, or by `sdiag -r`), the main scheduling phase's and the backfill
//! phase's cycles in microseconds, and the requests served, by kind and by user.

use serde::{Deserialize, Serialize};

/// Everything `sdiag` prints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiagReport {
    /// When the report was made (Unix seconds).
    pub now: i64,
    /// When the counters were last reset (or the controller started).
    pub since: i64,
    /// Requests being served, this one included.
    pub server_threads: u32,
    /// Jobs counted since `since`.
    pub jobs: JobCounters,
    /// When `pending` and `running` were counted.
    pub states_at: i64,
    /// Jobs pending now.
    pub pending: u32,
    /// Jobs running now.
    pub running: u32,
    /// The main scheduling phase.
    pub main: MainStats,
    /// The backfill phase.
    pub backfill: BackfillStats,
    /// Microseconds the controller took to read the clock 1,000 times.
    pub clock_latency_us: u32,
    /// Requests served, by kind (Slurm's message type).
    pub by_type: Vec<RpcCount>,
    /// Requests served, by the uid that made them.
    pub by_user: Vec<RpcCount>,
}

/// Jobs counted since the last reset, as Slurm counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounters {
    /// Jobs submitted (an array counts each of its tasks).
    pub submitted: u32,
    /// Job runs started.
    pub started: u32,
    /// Job runs whose end was reported (whatever their exit status).
    pub completed: u32,
    /// Jobs cancelled.
    pub canceled: u32,
    /// Launches that failed on their node.
    pub failed: u32,
}

/// Cycles of the main scheduling phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainStats {
    /// The last cycle, microseconds (not cleared by a reset, as in Slurm).
    pub last_us: u32,
    /// The longest cycle.
    pub max_us: u32,
    /// Cycles.
    pub cycles: u32,
    /// Sum of the cycles' times.
    pub sum_us: u64,
    /// Sum over the cycles of the jobs each looked at.
    pub depth_sum: u64,
    /// Jobs in the queue at the last cycle.
    pub queue_len: u32,
}

/// Cycles of the backfill phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillStats {
    /// Jobs started by backfill since the controller started (cleared only by
    /// `sdiag -r`).
    pub backfilled_total: u32,
    /// Jobs started by backfill since the last reset.
    pub backfilled: u32,
    /// Cycles.
    pub cycles: u32,
    /// When the last cycle ran (Unix seconds), if any has.
    pub last_when: Option<i64>,
    /// The last cycle, microseconds.
    pub last_us: u32,
    /// The longest cycle.
    pub max_us: u32,
    /// Sum of the cycles' times.
    pub sum_us: u64,
    /// Jobs the last cycle looked at.
    pub last_depth: u32,
    /// Of those, the jobs it tried to place.
    pub last_depth_try: u32,
    /// Sums over the cycles of those two.
    pub depth_sum: u64,
    /// See `depth_sum`.
    pub depth_try_sum: u64,
    /// Jobs in the queue at the last cycle.
    pub queue_len: u32,
    /// Sum over the cycles of the queue's length.
    pub queue_len_sum: u64,
    /// Distinct times in the plan after the last cycle.
    pub table_size: u32,
    /// Sum over the cycles of that.
    pub table_size_sum: u64,
}

/// Requests of one kind, or of one user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcCount {
    /// Slurm's name of the message type (`REQUEST_JOB_INFO`), or empty for a user.
    pub name: String,
    /// The message type's number, or the uid.
    pub id: u32,
    /// Requests.
    pub count: u32,
    /// Their total time, microseconds.
    pub total_us: u64,
}

impl RpcCount {
    /// Their mean time, microseconds.
    pub fn ave_us(&self) -> u64 {
        self.total_us
            .checked_div(u64::from(self.count))
            .unwrap_or(0)
    }
}
