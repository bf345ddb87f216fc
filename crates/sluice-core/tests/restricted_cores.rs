//! `RestrictedCoresPerGPU` stories: a GPU node keeps some processors per GPU for GPU
//! jobs, so that CPU-only work cannot strand its GPUs. Exact start times, under both
//! end semantics.

mod common;

use common::*;
use sluice_core::{Cluster, SubmitError};

/// `gpu_cluster(nodes)` with node 0 keeping `kept` processors per GPU.
fn keeping(nodes: &[(u32, u32)], kept: u32) -> Cluster {
    let mut c = gpu_cluster(nodes);
    c.nodes[0].restricted_cpus_per_gpu = kept;
    c
}

/// node0: 16 CPUs, 4 GPUs, 2 CPUs kept per GPU (8 of its 16 for GPU jobs).
/// t=0  job 1, CPU only, asks 8 CPUs for 100 s: it gets the 8 the GPUs leave.
/// t=1  job 2, CPU only, asks 4 CPUs for 10 s. 8 CPUs are free, but they are the
///      GPUs': it waits for job 1's end at 100.
/// t=2  job 3 asks 4 GPUs and 8 CPUs for 10 s: its GPUs' CPUs are free, it starts at
///      once (and ends before job 2's planned start, so backfill may start it).
///
/// Without the restriction job 2 starts at 1 on half of the free CPUs and job 3, with
/// all four GPUs idle, waits until job 2 ends at 11.
#[test]
fn a_cpu_only_job_cannot_take_the_cores_kept_for_gpus() {
    let nodes = [(16, 4)];
    let jobs = [
        job(1).procs(8).one_node().time(100),
        job(2).procs(4).one_node().time(10).submit(1),
        job(3).procs(8).one_node().gpus(4).time(10).submit(2),
    ];
    let r = replay_both(keeping(&nodes, 2), backfill(1000), &jobs);
    assert_eq!(r.starts(), [(1, 0), (2, 100), (3, 2)]);

    let r = replay_both(keeping(&nodes, 0), backfill(1000), &jobs);
    assert_eq!(r.starts(), [(1, 0), (2, 1), (3, 11)]);
}

/// node0: 16 CPUs, 4 GPUs, 2 CPUs kept per GPU; node1: 16 CPUs, no GPU.
/// A request that could only ever fit in the kept CPUs is refused at submission, as
/// Slurm refuses it ("Requested node configuration is not available"):
/// - job 1, CPU only, 9 CPUs on node0 (8 at most);
/// - job 2, 1 GPU and 11 CPUs (8 + its GPU's 2 = 10 at most); job 3 with 10 starts;
/// - job 5, CPU only, 25 tasks over both nodes (16 + 8 at most); job 4 with 24 runs.
#[test]
fn requests_that_need_the_kept_cores_are_refused() {
    let nodes = [(16, 4), (16, 0)];
    let jobs = [
        job(1).procs(9).one_node().on(&[0]),
        job(2).procs(11).one_node().gpus(1),
        job(3).procs(10).one_node().gpus(1).time(10),
        job(4).procs(24).time(10).submit(10),
        job(5).procs(25).time(10).submit(10),
    ];
    let r = replay_both(keeping(&nodes, 2), backfill(1000), &jobs);
    assert_eq!(
        r.rejected,
        [
            (1, SubmitError::NodeConfigUnavailable),
            (2, SubmitError::NodeConfigUnavailable),
            (5, SubmitError::NodeConfigUnavailable),
        ]
    );
    assert_eq!(r.starts(), [(3, 0), (4, 10)]);
    assert_eq!((r.nodes(3), r.nodes(4)), (vec![0], vec![0, 1]));
}

/// node0: 16 CPUs, 4 GPUs, 2 CPUs kept per GPU.
/// t=0  job 1 takes all 4 GPUs and 2 CPUs until 50 (no GPU free: nothing is kept).
/// t=0  job 2, CPU only, takes 6 CPUs until 200.
/// t=1  job 3, CPU only, asks 8 CPUs for 100 s. Now 8 CPUs are free and no GPU, but at
///      50 the four GPUs come back and keep 8 CPUs: with job 3 on 8, only 0 would be
///      left for them. So it may not start before job 2 ends at 200 — the same answer
///      whether a pass looks for a node free now or plans the job.
#[test]
fn kept_cores_count_from_when_the_gpus_come_back() {
    let nodes = [(16, 4)];
    let jobs = [
        job(1).procs(2).one_node().gpus(4).time(50),
        job(2).procs(6).one_node().time(200),
        job(3).procs(8).one_node().time(100).submit(1),
    ];
    let r = replay_both(keeping(&nodes, 2), sluice_core::Policy::Fcfs, &jobs);
    assert_eq!(r.start(3), 200);
    let r = replay_both(keeping(&nodes, 2), backfill(1000), &jobs);
    assert_eq!(r.start(3), 200);
}
