//! Small scenarios the tests of this crate and of `sluice sim` share (feature
//! `testing`): not part of the simulator.

use sluice_core::{
    BackfillParams, Cluster, JobId, JobRequest, JobSpec, Partition, PartitionId, Policy,
    PreemptConfig, PreemptMode, PreemptType,
};

use crate::setup::SimJob;

/// Job `id` of user 1000 (group 7) in partition `part`: 4 processors on each of
/// `nodes` nodes, submitted at `submit`, running `run_for` seconds under a `limit`.
pub fn job(id: u64, part: u16, nodes: u32, submit: i64, run_for: i64, limit: i64) -> SimJob {
    let procs = 4 * nodes;
    let mut request = JobRequest::procs(procs);
    request.min_nodes = nodes;
    request.max_nodes = nodes;
    SimJob {
        spec: JobSpec {
            id: JobId(id),
            user: 1000,
            partition: PartitionId(part),
            submit,
            begin: submit,
            request,
            time_limit: limit,
            priority: 0,
            acct: Default::default(),
        },
        run: run_for,
        procs,
        gpu_milli: 0,
        group: 7,
    }
}

/// Slurm's backfill with a pass every second on a one-second grid.
pub fn backfill_every_second() -> Policy {
    Policy::Backfill(BackfillParams {
        interval: 1,
        resolution: 1,
        ..Default::default()
    })
}

/// One 4-CPU node `n0` in partitions `low` (PriorityTier=1, GraceTime=10) and `high`
/// (PriorityTier=10), under `PreemptType=preempt/partition_prio` and
/// `PreemptMode=REQUEUE`.
pub fn low_and_high() -> Cluster {
    let mut c = Cluster::homogeneous("low", 1, 4);
    c.partitions[0].grace_time = 10;
    c.partitions[0].priority_tier = 1;
    let mut high = Partition::new("high", c.partitions[0].nodes.clone());
    high.priority_tier = 10;
    c.partitions.push(high);
    c.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Requeue,
        exempt_time: 0,
        gang: false,
        time_slice: 0,
    };
    c
}
