//! Tree topology stories: multi-node jobs span as few leaf switches as they can, and a
//! job with `--switches` waits for such an allocation until its wait runs out.
//!
//! The machine in every story: eight 4-CPU nodes, n0–n3 under leaf switch s0 and n4–n7
//! under s1. Jobs ask whole nodes (`-N k`, 4 tasks per node).

mod common;

use common::*;

fn machine() -> sluice_core::Cluster {
    with_switches(cluster(8, 4), 4)
}

/// t=0 job 1 takes two nodes, t=1 job 2 asks three. Without a topology job 2 takes the
/// lowest free nodes, n2–n4, straddling both switches; with one it takes three nodes of
/// s1, the only switch with room for it.
#[test]
fn a_job_goes_to_one_switch_when_one_can_hold_it() {
    let jobs = [
        job(1).procs(8).nodes(2),
        job(2).procs(12).nodes(3).submit(1),
    ];
    let flat = replay(cluster(8, 4), backfill(1000), &jobs);
    assert_eq!((flat.nodes(1), flat.nodes(2)), (vec![0, 1], vec![2, 3, 4]));
    let tree = replay(machine(), backfill(1000), &jobs);
    assert_eq!((tree.nodes(1), tree.nodes(2)), (vec![0, 1], vec![4, 5, 6]));
}

/// Nodes n0, n1 (s0) and n4 (s1) are busy until 100. At t=1 a 4-node job asks for one
/// switch: five nodes are free, but no switch has four, so it waits for s0 to empty
/// and starts at 100 on n0–n3. The same job allowed to wait only 20 s starts when its
/// wait ends, at 21, on the roomiest switch first (n5–n7) and one node of s0 (n2).
/// A job that may span any number of switches starts at 1, switches filled roomiest
/// first as well.
#[test]
fn switches_limit_waits_for_one_switch_until_its_wait_runs_out() {
    let busy = [
        job(1).procs(8).nodes(2).on(&[0, 1]),
        job(2).procs(4).nodes(1).on(&[4]),
    ];
    let story = |third: JobBuilder| {
        let mut jobs = busy.to_vec();
        jobs.push(third);
        replay(machine(), backfill(1000), &jobs)
    };
    let patient = story(job(3).procs(16).nodes(4).submit(1).switches(1, 300));
    assert_eq!(
        (patient.start(3), patient.nodes(3)),
        (100, vec![0, 1, 2, 3])
    );
    let hurried = story(job(3).procs(16).nodes(4).submit(1).switches(1, 20));
    assert_eq!((hurried.start(3), hurried.nodes(3)), (21, vec![2, 5, 6, 7]));
    let free = story(job(3).procs(16).nodes(4).submit(1));
    assert_eq!((free.start(3), free.nodes(3)), (1, vec![2, 5, 6, 7]));
}

/// Eight 4-CPU nodes in base blocks of two (b0 = n0–n1 ... b3 = n6–n7), with the
/// aggregates b0–b1 and b2–b3 (four nodes) and b0–b3 (all) above them. n1 and n4 are
/// busy until 100.
fn blocks_story(third: JobBuilder) -> Replay {
    let c = with_blocks(cluster(8, 4), 2, &[(0, 2), (2, 4), (0, 4)]);
    let jobs = [
        job(1).procs(4).nodes(1).on(&[1]),
        job(2).procs(4).nodes(1).on(&[4]),
        third,
    ];
    replay(c, backfill(1000), &jobs)
}

/// A two-node job fits in one base block: b1 (n2–n3), the first of the two whole free
/// blocks. A three-node job fits in no base block; of the two-block aggregates, b0–b1
/// (three free nodes) fits it more tightly than b2–b3 (five).
#[test]
fn a_job_goes_into_the_smallest_block_or_aggregate_that_holds_it() {
    let two = blocks_story(job(3).procs(8).nodes(2).submit(1));
    assert_eq!((two.start(3), two.nodes(3)), (1, vec![2, 3]));
    let three = blocks_story(job(3).procs(12).nodes(3).submit(1));
    assert_eq!((three.start(3), three.nodes(3)), (1, vec![0, 2, 3]));
}

/// Four nodes without `--segment`: no two-block aggregate has four free nodes (b0–b1
/// and b2–b3 have three each), so the job takes the whole machine's, roomiest nodes
/// first by node order: n0, n2, n3, n5. With `--segment=2` it is two whole pairs, each
/// inside one base block: b1 and b3. A segment that does not divide the node count, or
/// one larger than a base block, is refused at submission.
#[test]
fn segments_keep_each_run_of_nodes_inside_one_block() {
    let plain = blocks_story(job(3).procs(16).nodes(4).submit(1));
    assert_eq!((plain.start(3), plain.nodes(3)), (1, vec![0, 2, 3, 5]));
    let paired = blocks_story(job(3).procs(16).nodes(4).segment(2).submit(1));
    assert_eq!((paired.start(3), paired.nodes(3)), (1, vec![2, 3, 6, 7]));
    for (nodes, segment) in [(3, 2), (3, 3)] {
        let refused = blocks_story(job(3).procs(4 * nodes).nodes(nodes).segment(segment));
        assert_eq!(
            refused.rejected,
            vec![(3, sluice_core::SubmitError::NodeConfigUnavailable)],
            "-N {nodes} --segment={segment}"
        );
    }
}

/// Four 4-CPU nodes under s0 and one 12-CPU node under s1; a job of 16 tasks on at most
/// two nodes fits no single switch. Taking whole switches roomiest first would fill the
/// two-node limit with s0's small nodes; taking the two switches' nodes most tasks first
/// starts it at once on the big node and one small one.
#[test]
fn spanning_switches_still_meets_a_node_count_limit() {
    let mut c = cluster(5, 4);
    c.nodes[4].capacity.cpus = 12;
    let c = with_switches(c, 4);
    let mut wide = job(1).procs(16);
    wide.request.min_nodes = 1;
    wide.request.max_nodes = 2;
    let r = replay(c, backfill(1000), &[wide]);
    assert_eq!((r.start(1), r.nodes(1)), (0, vec![0, 4]));
}

/// Blocks of two nodes (b0 = n0–n1 ... b3 = n6–n7), n1 busy until 100. A four-node job
/// in segments of two that may not use n2 or n6 finds one whole free pair (b2) at first;
/// it waits until n1 frees b0 at 100, and excluding nodes never splits a segment across
/// blocks. A job larger than the largest aggregate is refused.
#[test]
fn excluded_nodes_keep_segments_inside_blocks_and_oversized_jobs_are_refused() {
    let c = || with_blocks(cluster(8, 4), 2, &[(0, 2), (2, 4), (0, 4)]);
    let jobs = [
        job(1).procs(4).nodes(1).on(&[1]),
        job(2)
            .procs(16)
            .nodes(4)
            .segment(2)
            .except(&[2, 6])
            .submit(1),
    ];
    let r = replay(c(), backfill(1000), &jobs);
    assert_eq!((r.start(2), r.nodes(2)), (100, vec![0, 1, 4, 5]));
    let mut small = c();
    small.blocks.as_mut().unwrap().aggregates = vec![(0, 1), (1, 2), (2, 3), (3, 4), (0, 2)];
    let too_big = replay(small, backfill(1000), &[job(1).procs(20).nodes(5)]);
    assert_eq!(
        too_big.rejected,
        vec![(1, sluice_core::SubmitError::NodeConfigUnavailable)]
    );
}
