//! GPU placement stories: which node a one-node job gets decides whether the next GPU
//! job finds its GPUs together. Each story runs under two placement rules with exact
//! expected nodes and start times.

mod common;

use common::*;
use sluice_core::{Cluster, Placement};

fn with(mut c: Cluster, placement: Placement) -> Cluster {
    c.placement = placement;
    c
}

/// node0: 32 CPUs, 4 GPUs; node1: 16 CPUs, 4 GPUs.
/// t=0  job 1 takes 3 GPUs and 4 CPUs of node0 (`-w node0`) until 100 (node0: 28 CPUs,
///      1 GPU free).
/// t=1  job 2 asks 1 GPU and 2 CPUs for 50 s. Both nodes can take it.
/// t=2  job 3 asks 4 GPUs on one node for 10 s.
///
/// Best fit counts GPUs first: job 2 goes to node0's lone free GPU and job 3 finds
/// node1's four together at once. Best fit on CPUs alone sends job 2 to node1 (16 free
/// CPUs < 28), splitting its GPUs: job 3 waits until job 2 ends at 51.
#[test]
fn a_one_gpu_job_takes_the_lone_free_gpu_and_leaves_a_whole_node_for_a_four_gpu_job() {
    let nodes = [(32, 4), (16, 4)];
    let jobs = [
        job(1).procs(4).one_node().gpus(3).time(100).on(&[0]),
        job(2).procs(2).one_node().gpus(1).time(50).submit(1),
        job(3).procs(1).one_node().gpus(4).time(10).submit(2),
    ];
    let r = replay(
        with(gpu_cluster(&nodes), Placement::BestFit),
        backfill(1000),
        &jobs,
    );
    assert_eq!((r.nodes(2), r.start(2)), (vec![0], 1));
    assert_eq!((r.nodes(3), r.start(3)), (vec![1], 2));

    let r = replay(
        with(gpu_cluster(&nodes), Placement::CpuBestFit),
        backfill(1000),
        &jobs,
    );
    assert_eq!((r.nodes(2), r.start(2)), (vec![1], 1));
    assert_eq!((r.nodes(3), r.start(3)), (vec![1], 51));
}

/// node0: 8 CPUs, 2 GPUs; node1: 16 CPUs, no GPU.
/// t=0  job 1, CPU only, asks 8 CPUs for 100 s.
/// t=1  job 2 asks 2 GPUs and 8 CPUs for 10 s.
///
/// Best fit keeps the GPU node's cores for GPU work: job 1 goes to node1 and job 2
/// starts at once. On CPUs alone node0 is the tighter fit, job 1 takes all its cores,
/// and job 2 waits until 100 although both GPUs sit idle.
#[test]
fn a_cpu_only_job_leaves_the_gpu_node_to_gpu_jobs() {
    let nodes = [(8, 2), (16, 0)];
    let jobs = [
        job(1).procs(8).one_node().time(100),
        job(2).procs(8).one_node().gpus(2).time(10).submit(1),
    ];
    let r = replay(
        with(gpu_cluster(&nodes), Placement::BestFit),
        backfill(1000),
        &jobs,
    );
    assert_eq!((r.nodes(1), r.nodes(2), r.start(2)), (vec![1], vec![0], 1));

    let r = replay(
        with(gpu_cluster(&nodes), Placement::CpuBestFit),
        backfill(1000),
        &jobs,
    );
    assert_eq!(
        (r.nodes(1), r.nodes(2), r.start(2)),
        (vec![0], vec![0], 100)
    );
}

/// Four idle 8-CPU nodes; jobs of 2 CPUs arrive one per second and run 100 s.
/// First fit fills node0 before touching node1; least loaded spreads them, one per node.
#[test]
fn first_fit_packs_and_least_loaded_spreads() {
    let jobs: Vec<_> = (1..=4)
        .map(|i| job(i).procs(2).one_node().submit(i as i64))
        .collect();
    let r = replay(
        with(cluster(4, 8), Placement::FirstFit),
        backfill(1000),
        &jobs,
    );
    assert_eq!(
        (1..=4).map(|i| r.nodes(i)[0]).collect::<Vec<_>>(),
        vec![0, 0, 0, 0]
    );
    let r = replay(
        with(cluster(4, 8), Placement::LeastLoaded),
        backfill(1000),
        &jobs,
    );
    assert_eq!(
        (1..=4).map(|i| r.nodes(i)[0]).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

/// node0: 2 CPUs, 1 GPU; node1: 16 CPUs, 1 GPU. A 4-CPU job fits only node1, which
/// ranks after node0's level-1 entry: the search for a node that fits now must not skip
/// past node1 on its way (under FCFS, which has no backfill pass to catch it).
#[test]
fn a_job_finds_the_roomy_node_of_a_level_whose_first_node_is_too_small() {
    let nodes = [(2, 1), (16, 1)];
    let jobs = [job(1).procs(4).one_node()];
    let r = replay(
        with(gpu_cluster(&nodes), Placement::BestFit),
        sluice_core::Policy::Fcfs,
        &jobs,
    );
    assert_eq!((r.start(1), r.nodes(1)), (0, vec![1]));
}
