//! A pending job's place in its partition's queue, in the order the scheduler
//! considers jobs (partition tier, priority, submission; submission alone under the
//! textbook policies).

use crate::ids::JobId;
use crate::job::{JobRequest, PendingReason};
use crate::scheduler::Scheduler;

/// What a set of jobs asks for together, by their requests (the fewest nodes each
/// accepts; an exclusive job counts the processors it asks, not whole nodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// Processors (tasks × CPUs per task).
    pub cpus: u64,
    /// GPUs (untyped `gpu` GRES per node × nodes).
    pub gpus: u64,
    /// Nodes.
    pub nodes: u64,
}

impl Demand {
    fn add(&mut self, req: &JobRequest, gpu: Option<usize>) {
        let nodes = u64::from(req.min_nodes.max(1));
        self.cpus += req.min_cpus();
        self.gpus += gpu.map_or(0, |g| u64::from(req.gres_per_node[g]) * nodes);
        self.nodes += nodes;
    }
}

/// Where a pending job stands among the pending jobs of its partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePosition {
    /// 1 for the first job of the partition's queue.
    pub rank: u32,
    /// Pending jobs of the partition in all.
    pub of: u32,
    /// Jobs ahead of it that compete with it now (`rank - 1 - waiting_ahead`).
    pub ahead: u32,
    /// Jobs ahead of it that wait on something of their own (an accounting limit,
    /// their `--begin` time, their partition's or reservation's limits): the scheduler
    /// passes over them, so they do not keep it waiting now.
    pub waiting_ahead: u32,
    /// What the competing jobs ahead of it ask for together.
    pub ahead_demand: Demand,
}

/// Whether a pending job with this reason is passed over by the scheduler for a cause
/// of its own, however many resources are free.
fn waits_on_its_own(reason: PendingReason) -> bool {
    matches!(
        reason,
        PendingReason::BeginTime
            | PendingReason::PartitionTimeLimit
            | PendingReason::PartitionNodeLimit
            | PendingReason::ReqNodeNotAvail
            | PendingReason::NamedNodesUnavailable
            | PendingReason::Reservation
            | PendingReason::AccountNotAllowed
            | PendingReason::QosNotAllowed
            | PendingReason::Limit(_)
    )
}

/// `job`'s position; `job` must be pending.
pub(crate) fn position(sched: &Scheduler, job: JobId) -> QueuePosition {
    let part = sched.job(job).expect("pending job").spec.partition;
    let gpu = sched.cluster().gpu_slot();
    let mut ahead = 0u32;
    let mut waiting = 0u32;
    let mut of = 0u32;
    let mut demand = Demand::default();
    let mut behind = false;
    for j in sched.pending().filter(|j| j.spec.partition == part) {
        of += 1;
        if j.id() == job {
            behind = true;
        } else if !behind && waits_on_its_own(j.reason) {
            waiting += 1;
        } else if !behind {
            ahead += 1;
            demand.add(&j.spec.request, gpu);
        }
    }
    QueuePosition {
        rank: ahead + waiting + 1,
        of,
        ahead,
        waiting_ahead: waiting,
        ahead_demand: demand,
    }
}
