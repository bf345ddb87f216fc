//! Which GPUs, and which shards of which GPU, a job gets: stories with the exact
//! indices every start decision names (the core decides them; see `src/gpus.rs`).
//! Every story runs under both end semantics (`replay_both`), which must agree on
//! start times, nodes and indices.

mod common;

use common::*;
use sluice_core::{Cluster, Gpu};

/// A node's GPUs: how many, shards per GPU, NVLinked pairs.
type GpuNode<'a> = (u32, u32, &'a [(u32, u32)]);

/// One node per `(gpus, shards per GPU, NVLinked pairs)`, 16 CPUs each, in one default
/// partition `batch`; GRES slot 0 is `gpu`, slot 1 `shard`.
fn machine(nodes: &[GpuNode]) -> Cluster {
    let mut c = cluster(nodes.len() as u32, 16);
    let gpu = c.gres.slot_for("gpu", None).unwrap();
    let shard = c.gres.slot_for("shard", None).unwrap();
    assert_eq!((gpu, shard), (0, 1));
    for (node, &(gpus, shards, pairs)) in c.nodes.iter_mut().zip(nodes) {
        node.capacity.gres[gpu] = gpus;
        node.capacity.gres[shard] = gpus * shards;
        node.gpus = (0..gpus)
            .map(|i| Gpu {
                links: (!pairs.is_empty()).then(|| {
                    (0..gpus)
                        .map(|j| {
                            if i == j {
                                -1
                            } else if pairs.contains(&(i, j)) || pairs.contains(&(j, i)) {
                                4
                            } else {
                                0
                            }
                        })
                        .collect()
                }),
                shards,
                ..Gpu::default()
            })
            .collect();
    }
    c
}

/// One node, 4 GPUs NVLinked crosswise: 0 with 2, 1 with 3.
/// t=0  jobs 1 and 2 ask 2 GPUs each.
///
/// Each gets a linked pair, not the two lowest indices: job 1 GPUs 0 and 2, job 2 GPUs
/// 1 and 3.
#[test]
fn two_gpu_jobs_get_the_nvlinked_pairs() {
    let jobs = [job(1).one_node().gpus(2), job(2).one_node().gpus(2)];
    let r = replay_both(machine(&[(4, 0, &[(0, 2), (1, 3)])]), backfill(1000), &jobs);
    assert_eq!((r.start(1), r.gpus(1)), (0, vec![vec![0, 2]]));
    assert_eq!((r.start(2), r.gpus(2)), (0, vec![vec![1, 3]]));
}

/// One node, 4 GPUs in linked pairs 0–1 and 2–3.
/// t=0  jobs 1 and 2 ask one GPU each, job 3 two.
///
/// Job 2 takes GPU 1, the other half of the pair job 1 broke, rather than breaking the
/// intact pair 2–3, which job 3 then gets whole.
#[test]
fn one_gpu_jobs_leave_linked_pairs_intact() {
    let jobs = [
        job(1).one_node().gpus(1),
        job(2).one_node().gpus(1),
        job(3).one_node().gpus(2),
    ];
    let r = replay_both(machine(&[(4, 0, &[(0, 1), (2, 3)])]), backfill(1000), &jobs);
    assert_eq!(r.gpus(1), vec![vec![0]]);
    assert_eq!(r.gpus(2), vec![vec![1]]);
    assert_eq!((r.start(3), r.gpus(3)), (0, vec![vec![2, 3]]));
}

/// One node, 4 GPUs of 4 shards each.
/// t=0    shard jobs 1 (2 shards), 2 and 3 (1 shard each), until 100.
/// t=1    job 4 asks 3 whole GPUs; t=2 job 5 one.
/// t=100  the shard jobs end.
///
/// The shard jobs all share GPU 0 (a shared GPU with room first), so job 4 finds GPUs
/// 1–3 whole at once. Job 5 waits: GPU 0 is shared until the last shard job is gone,
/// then it gets GPU 0.
#[test]
fn shard_jobs_pack_onto_one_gpu_and_leave_the_others_whole() {
    let jobs = [
        job(1).one_node().shards(2),
        job(2).one_node().shards(1),
        job(3).one_node().shards(1),
        job(4).one_node().gpus(3).time(200).submit(1),
        job(5).one_node().gpus(1).time(10).submit(2),
    ];
    let r = replay_both(machine(&[(4, 4, &[])]), backfill(1000), &jobs);
    for id in 1..=3 {
        assert_eq!(r.gpus(id), vec![vec![]]);
    }
    assert_eq!(r.shards(1), vec![vec![(0, 2)]]);
    assert_eq!(r.shards(2), vec![vec![(0, 1)]]);
    assert_eq!(r.shards(3), vec![vec![(0, 1)]]);
    assert_eq!((r.start(4), r.gpus(4)), (1, vec![vec![1, 2, 3]]));
    assert_eq!((r.start(5), r.gpus(5)), (100, vec![vec![0]]));
}

/// Node 0 has 2 GPUs of 10 shards, node 1 one GPU of 10 shards; every job runs 100 s.
/// t=0  shard jobs 1 (8 shards), 2 (5) and 3 (9) break a GPU each: node 1's GPU 0
///      (2 shards left), node 0's GPU 0 (5 left), node 0's GPU 1 (1 left). Then jobs
///      4 (1 shard), 5 (2) and 6 (5) arrive.
///
/// A sharing job goes to the shared GPU, cluster-wide, whose room it fills most
/// tightly, not to the node whose roomiest GPU is tightest: job 4 fills node 0's GPU 1
/// (room 1, on the node whose roomiest GPU has 5), job 5 fills node 1's GPU 0 (room
/// 2), and the 5 shards left on node 0's GPU 0 stay in one piece for job 6, which
/// starts at once. Ranking nodes by their roomiest GPU would have put job 4 on node 1
/// and job 5 on node 0's GPU 0, leaving rooms of 3, 1 and 1, where job 6 waits.
#[test]
fn a_shard_job_fills_the_tightest_shared_gpu_of_the_cluster() {
    let jobs = [
        job(1).one_node().shards(8).time(100),
        job(2).one_node().shards(5).time(100),
        job(3).one_node().shards(9).time(100),
        job(4).one_node().shards(1).time(100),
        job(5).one_node().shards(2).time(100),
        job(6).one_node().shards(5).time(100),
    ];
    let r = replay_both(
        machine(&[(2, 10, &[]), (1, 10, &[])]),
        backfill(1000),
        &jobs,
    );
    let placed = |id| (r.start(id), r.nodes(id), r.shards(id));
    assert_eq!(placed(1), (0, vec![1], vec![vec![(0, 8)]]));
    assert_eq!(placed(2), (0, vec![0], vec![vec![(0, 5)]]));
    assert_eq!(placed(3), (0, vec![0], vec![vec![(1, 9)]]));
    assert_eq!(placed(4), (0, vec![0], vec![vec![(1, 1)]]));
    assert_eq!(placed(5), (0, vec![1], vec![vec![(0, 2)]]));
    assert_eq!(placed(6), (0, vec![0], vec![vec![(0, 5)]]));
}

/// Node 0 has 2 GPUs of 10 shards, node 1 one GPU of 10 shards; every job runs 100 s.
/// t=0  shard jobs 1 (8 shards), 2 (5) and 3 (8) break a GPU each: node 1's GPU 0
///      (2 shards left), node 0's GPU 0 (5 left), node 0's GPU 1 (2 left). Then job 4
///      (2 shards) arrives.
///
/// Two shared GPUs fit job 4 as tightly, one on each node: it goes to node 1's, whose
/// node has no roomier shared GPU, rather than to node 0's, beside a GPU with 5 shards
/// free. The node full of sharing jobs fills up; the room left stays on one node.
#[test]
fn between_shared_gpus_as_tight_a_shard_job_fills_the_fuller_node() {
    let jobs = [
        job(1).one_node().shards(8).time(100),
        job(2).one_node().shards(5).time(100),
        job(3).one_node().shards(8).time(100),
        job(4).one_node().shards(2).time(100),
    ];
    let r = replay_both(
        machine(&[(2, 10, &[]), (1, 10, &[])]),
        backfill(1000),
        &jobs,
    );
    let placed = |id| (r.start(id), r.nodes(id), r.shards(id));
    assert_eq!(placed(1), (0, vec![1], vec![vec![(0, 8)]]));
    assert_eq!(placed(2), (0, vec![0], vec![vec![(0, 5)]]));
    assert_eq!(placed(3), (0, vec![0], vec![vec![(1, 8)]]));
    assert_eq!(placed(4), (0, vec![1], vec![vec![(0, 2)]]));
}

/// One node, 2 GPUs of 4 shards each.
/// t=0   job 1 takes GPU 0 whole until 100.
/// t=1   shard job 2 (1 shard) until 51: the last free GPU, GPU 1, becomes shared.
/// t=2   job 3 asks one whole GPU for 10 s; t=3 shard job 4 asks 4 shards.
/// t=51  job 2 ends: job 3 gets GPU 1.
/// t=61  job 3 ends: job 4 gets all 4 shards of GPU 1.
///
/// A GPU with shards in use is not given whole, and a GPU used whole lends no shards:
/// job 3 waits for job 2 although one GPU's worth of `gpu` is "free" in a count that
/// forgets the shards, and job 4 waits for job 3 although 4 shards of GPU 1 exist.
#[test]
fn a_whole_gpu_job_waits_while_shards_hold_the_last_free_gpu() {
    let jobs = [
        job(1).one_node().gpus(1),
        job(2).one_node().shards(1).time(50).submit(1),
        job(3).one_node().gpus(1).time(10).submit(2),
        job(4).one_node().shards(4).time(10).submit(3),
    ];
    let r = replay_both(machine(&[(2, 4, &[])]), backfill(1000), &jobs);
    assert_eq!(r.gpus(1), vec![vec![0]]);
    assert_eq!((r.start(2), r.shards(2)), (1, vec![vec![(1, 1)]]));
    assert_eq!((r.start(3), r.gpus(3)), (51, vec![vec![1]]));
    assert_eq!((r.start(4), r.shards(4)), (61, vec![vec![(1, 4)]]));
}

/// One node, 1 GPU of 4 shards.
/// t=0   shard jobs 1 (limit 100, but done at 20) and 2 (until 50) share GPU 0.
/// t=1   job 3 asks the GPU whole.
/// t=20  job 1 ends early: job 2 still holds shards, the GPU stays shared.
/// t=50  job 2 ends: job 3 gets GPU 0.
#[test]
fn a_shared_gpu_is_whole_again_only_when_its_last_shard_job_ends() {
    let jobs = [
        job(1).one_node().shards(2).time(100).run(20),
        job(2).one_node().shards(2).time(50),
        job(3).one_node().gpus(1).time(10).submit(1),
    ];
    let r = replay_both(machine(&[(1, 4, &[])]), backfill(1000), &jobs);
    assert_eq!(r.shards(1), vec![vec![(0, 2)]]);
    assert_eq!(r.shards(2), vec![vec![(0, 2)]]);
    assert_eq!((r.start(3), r.gpus(3)), (50, vec![vec![0]]));
}

/// One node, 4 GPUs, no links.
/// t=0   job 1 takes 2 GPUs until 10, job 2 one until 100.
/// t=1   job 3 asks 2 GPUs: only GPU 3 is free.
/// t=10  job 1 ends: its GPUs 0 and 1 are free again, and job 3 gets them.
#[test]
fn gpus_freed_by_an_end_are_given_again() {
    let jobs = [
        job(1).one_node().gpus(2).time(10),
        job(2).one_node().gpus(1),
        job(3).one_node().gpus(2).time(10).submit(1),
    ];
    let r = replay_both(machine(&[(4, 0, &[])]), backfill(1000), &jobs);
    assert_eq!(r.gpus(1), vec![vec![0, 1]]);
    assert_eq!(r.gpus(2), vec![vec![2]]);
    assert_eq!((r.start(3), r.gpus(3)), (10, vec![vec![0, 1]]));
}

/// One node, 2 GPUs of 4 shards.
/// t=0    job 1 takes GPU 0 until 100.
/// t=1    job 2 asks both GPUs for 50 s: it is planned at 100.
/// t=2    shard job 3 asks 1 shard for 200 s. The counts now have a free GPU and free
///        shards, but sharing GPU 1 would hold it until 202, past job 2's planned start.
/// t=100  job 2 starts on GPUs 0 and 1; t=150 job 3 starts on GPU 0.
///
/// The backfill pass does not start a job whose GPUs' side claims would delay a job
/// ahead of it, although its own request fits the plan.
#[test]
fn a_shard_job_is_not_backfilled_onto_a_gpu_a_job_ahead_is_planned_on() {
    let jobs = [
        job(1).one_node().gpus(1),
        job(2).one_node().gpus(2).time(50).submit(1),
        job(3).one_node().shards(1).time(200).submit(2),
    ];
    let r = replay_both(machine(&[(2, 4, &[])]), backfill(1000), &jobs);
    assert_eq!((r.start(2), r.gpus(2)), (100, vec![vec![0, 1]]));
    assert_eq!((r.start(3), r.shards(3)), (150, vec![vec![(0, 1)]]));
}

/// One node, 2 GPUs of 4 shards. An exclusive job holds every GPU whole (its usage is
/// the whole node, shards included); a shard job then waits for it.
#[test]
fn an_exclusive_job_holds_every_gpu() {
    let jobs = [
        job(1).exclusive().time(10),
        job(2).one_node().shards(1).time(10).submit(1),
    ];
    let r = replay_both(machine(&[(2, 4, &[])]), backfill(1000), &jobs);
    assert_eq!((r.gpus(1), r.shards(1)), (vec![vec![0, 1]], vec![vec![]]));
    assert_eq!((r.start(2), r.shards(2)), (10, vec![vec![(0, 1)]]));
}

/// One node with GPUs 0–1 of type a100 and 2–3 of type v100 (slots `gpu:a100`,
/// `gpu:v100`). A v100 job gets the first v100; an untyped 2-GPU job gets the types in
/// slot order (the a100s); the next v100 job the other v100.
#[test]
fn typed_requests_get_gpus_of_their_type() {
    let mut c = machine(&[(4, 0, &[])]);
    let a100 = c.gres.slot_for("gpu", Some("a100")).unwrap();
    let v100 = c.gres.slot_for("gpu", Some("v100")).unwrap();
    let n = &mut c.nodes[0];
    n.capacity.gres[a100] = 2;
    n.capacity.gres[v100] = 2;
    for (i, g) in n.gpus.iter_mut().enumerate() {
        g.gpu_type = Some(if i < 2 { "a100" } else { "v100" }.into());
    }
    let v = |id| {
        let mut j = job(id).one_node().gpus(1);
        j.request.gres_per_node[v100] = 1;
        j
    };
    let jobs = [v(1), job(2).one_node().gpus(2), v(3)];
    let r = replay_both(c, backfill(1000), &jobs);
    assert_eq!(r.gpus(1), vec![vec![2]]);
    assert_eq!(r.gpus(2), vec![vec![0, 1]]);
    assert_eq!(r.gpus(3), vec![vec![3]]);
}
