//! What an explanation is asked for, as data: how far it looks and which alternatives
//! the owner has (see the parent module). The searches below take it without reaching
//! back up to [`super::explain`].

use crate::ids::PartitionId;
use crate::limits::acct::QosId;
use crate::time::Secs;

/// Another partition and/or QOS the job's owner may use, for the "submit it elsewhere"
/// counterfactual. The caller lists only what the user may use there (the core takes
/// the partition's access lists as satisfied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alternative {
    /// The partition to move to; `None` keeps the job's own.
    pub partition: Option<PartitionId>,
    /// The QOS to use; `None` keeps the job's own.
    pub qos: Option<QosId>,
    /// The priority the job would have there (multifactor's partition and QOS factors
    /// change with them); `None` keeps its priority.
    pub priority: Option<u32>,
}

/// What [`super::explain`] computes, and how far it looks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainOptions {
    /// How far past `now` the forward simulation looks, in seconds (default: 365 days).
    /// A job not started by then is reported as not starting ([`super::NoStart::StillPending`]).
    pub horizon: Secs,
    /// The most scheduler passes one forward simulation may run (default 100); the
    /// prediction stopped there reports [`super::NoStart::Budget`] (a lower bound on the
    /// start). Bounds the cost of explaining a job deep in a long queue: a simulated pass
    /// costs what the scheduler's own pass costs (on a busy 1,000-node machine with
    /// 10,000 jobs queued, about 20 ms for a backfill pass that plans 500 jobs, much less
    /// for a main pass). Passes are counted, never timed: the answer does not depend on
    /// the machine's speed.
    pub max_passes: u32,
    /// The most passes all the counterfactual simulations together may run (default
    /// 100); once spent, the search stops and reports what it found.
    pub counterfactual_passes: u32,
    /// Whether to look for [`super::Counterfactual`]s at all (default true).
    pub counterfactuals: bool,
    /// Other partitions and QOS the job's owner may use (for [`super::Change::Alternative`]).
    pub alternatives: Vec<Alternative>,
}

impl Default for ExplainOptions {
    fn default() -> Self {
        ExplainOptions {
            horizon: 365 * 86_400,
            max_passes: 100,
            counterfactual_passes: 100,
            counterfactuals: true,
            alternatives: Vec::new(),
        }
    }
}
