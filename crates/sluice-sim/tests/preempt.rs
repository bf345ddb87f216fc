//! Preemption on virtual time: a preempted job's work is lost, it is requeued and runs
//! its full time again; the replay counts preemptions and lost processor-seconds.

use sluice_core::{
    BackfillParams, Cluster, JobId, JobRequest, JobSpec, Partition, PartitionId, Policy,
    PreemptConfig, PreemptMode, PreemptType,
};
use sluice_sim::replay::{run, ReplayOptions};
use sluice_sim::setup::SimJob;

fn job(id: u64, part: u16, submit: i64, run_for: i64) -> SimJob {
    let mut request = JobRequest::procs(4);
    request.min_nodes = 1;
    request.max_nodes = 1;
    SimJob {
        spec: JobSpec {
            id: JobId(id),
            user: 1000,
            partition: PartitionId(part),
            submit,
            begin: submit,
            request,
            time_limit: run_for,
            priority: 0,
            acct: Default::default(),
        },
        run: run_for,
        procs: 4,
        gpu_milli: 0,
        group: 0,
    }
}

#[test]
fn a_requeued_victim_runs_its_full_time_again_after_the_preemptor() {
    // One 4-CPU node; low (tier 1, GraceTime=10) and high (tier 10). Low job 1 runs
    // from 0 for 100 s. High job 2 (50 s) arrives at 30: job 1 is signalled at 30,
    // killed at 40 (40 s x 4 CPUs = 160 processor-seconds lost), job 2 runs 40-90,
    // job 1 runs again 90-190.
    let mut c = Cluster::homogeneous("low", 1, 4);
    c.partitions[0].grace_time = 10;
    let mut high = Partition::new("high", c.partitions[0].nodes.clone());
    high.priority_tier = 10;
    c.partitions.push(high);
    c.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Requeue,
        exempt_time: 0,
    };
    let policy = Policy::Backfill(BackfillParams {
        interval: 1,
        resolution: 1,
        ..Default::default()
    });
    let jobs = vec![job(1, 0, 0, 100), job(2, 1, 30, 50)];
    let r = run(c, policy, jobs, ReplayOptions::default(), &mut |_, _| {});
    let runs: Vec<(u64, i64, i64, i64)> = r
        .records
        .iter()
        .map(|j| (j.id, j.submit, j.start, j.finish))
        .collect();
    assert_eq!(runs, vec![(2, 30, 40, 90), (1, 0, 90, 190)]);
    assert_eq!(r.preemptions, 1);
    assert_eq!(r.lost_proc_seconds, 160);
}
