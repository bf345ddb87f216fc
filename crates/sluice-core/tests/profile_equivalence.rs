//! The profile answers "earliest start" over node classes with a lazy sweep. This checks
//! it against the plainest possible reading of the rules: try every time at which
//! anything changes, compute every node's window by hand, and let `choose_nodes_in` pick.

use proptest::prelude::*;
use sluice_core::profile::NodeFilter;
use sluice_core::select::{choose_listed, choose_nodes_in, max_tasks, Candidate};
use sluice_core::{Cluster, JobRequest, NodeId, PartitionId, Profile, Resources, Time, NEVER};

#[derive(Clone, Debug)]
struct Claim {
    node: u32,
    start: Time,
    len: Time,
    cpus: u32,
}

/// A node-choice rule of `sluice_core::select`, in a cluster (its placement rule).
type Chooser = fn(&Cluster, &JobRequest, &[Candidate], Time) -> Option<Vec<(NodeId, u32)>>;

/// Every time at which anything changes (and `t0`), in order: at each, every node's
/// window computed by hand, and `choose` picks among the nodes the job may use.
fn brute_force(
    p: &Profile,
    c: &Cluster,
    req: &JobRequest,
    d: Time,
    t0: Time,
    times: &[Time],
    choose: Chooser,
) -> Option<(Time, Vec<(NodeId, u32)>)> {
    let mut cands: Vec<Time> = times.iter().copied().filter(|&t| t > t0).collect();
    cands.push(t0);
    cands.sort();
    cands.dedup();
    for t in cands {
        let nodes: Vec<Candidate> = (0..c.nodes.len() as u32)
            .map(NodeId)
            .filter(|n| req.exclude.binary_search(n).is_err())
            .map(|n| Candidate {
                node: n,
                tasks: max_tasks(req, &p.free_during(n, t, t + d), &c.node(n).capacity),
                free_cpus: p.free_at(n, t).cpus,
                weight: c.node(n).weight,
                rank: c.placement_key(n, &p.free_at(n, t)),
                switch: c.leaf_switch(n),
            })
            .collect();
        if let Some(chosen) = choose(c, req, &nodes, t) {
            return Some((t, chosen));
        }
    }
    None
}

/// A cluster of nodes with `cpus` processors each, and a profile holding the `claims`
/// that fit (the profile refuses over-allocation), advanced to `t0`; with the times at
/// which claims begin and end.
fn setup(cpus: &[u32], claims: &[Claim], t0: Time) -> (Cluster, Profile, Vec<Time>) {
    let mut c = Cluster::homogeneous("p", cpus.len() as u32, 1);
    for (node, &n) in c.nodes.iter_mut().zip(cpus) {
        node.capacity.cpus = n;
    }
    let mut p = Profile::new(&c);
    let mut times = Vec::new();
    for cl in claims {
        let n = NodeId(cl.node);
        let free = p.free_during(n, cl.start, cl.start + cl.len);
        if cl.cpus <= free.cpus {
            p.claim(n, cl.start, cl.start + cl.len, &Resources::cpus(cl.cpus));
            times.push(cl.start);
            times.push(cl.start + cl.len);
        }
    }
    p.advance(t0);
    (c, p, times)
}

/// Nodes of different sizes (interleaved, as real configurations have them) and claims.
fn workload() -> impl Strategy<Value = (Vec<u32>, Vec<Claim>)> {
    proptest::collection::vec(1u32..9, 1..7).prop_flat_map(|cpus| {
        let nodes = cpus.len() as u32;
        let claim =
            (0..nodes, 0i64..60, 1i64..40, 1u32..9).prop_map(|(node, start, len, c)| Claim {
                node,
                start,
                len,
                cpus: c,
            });
        (Just(cpus), proptest::collection::vec(claim, 0..25))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn earliest_start_matches_a_node_by_node_search(
        (cpus, claims) in workload(),
        procs in 1u32..20,
        one_node in any::<bool>(),
        exclusive in any::<bool>(),
        min_nodes in 1u32..4,
        d in 1i64..50,
        t0 in 0i64..40,
        placement in 0usize..4,
    ) {
        let (mut c, p, times) = setup(&cpus, &claims, t0);
        c.placement = sluice_core::Placement::ALL[placement];
        let mut req = JobRequest::procs(procs.max(min_nodes));
        if one_node {
            req = req.on_one_node();
        } else {
            req.min_nodes = min_nodes;
        }
        req.exclusive = exclusive;
        let filter = NodeFilter { partition: PartitionId(0), features_any: 0 };
        let got = p
            .earliest_start(&c, &req, filter, d, t0, NEVER)
            .map(|(t, a)| (t, a.iter().map(|x| (x.node, x.tasks)).collect::<Vec<_>>()));
        let want = brute_force(&p, &c, &req, d, t0, &times, |c, r, cands, t| {
            choose_nodes_in(r, cands, t, None, c.placement)
        });
        prop_assert_eq!(got, want);
    }

    #[test]
    fn jobs_naming_nodes_start_when_a_node_by_node_search_says(
        (cpus, claims) in workload(),
        procs in 1u32..20,
        min_nodes in 1u32..4,
        excluded in 0u32..128,
        listed in 0u32..128,
        d in 1i64..50,
        t0 in 0i64..40,
    ) {
        let (c, p, times) = setup(&cpus, &claims, t0);
        let n = cpus.len() as u32;
        let mut req = JobRequest::procs(procs.max(min_nodes));
        req.min_nodes = min_nodes;
        // Bit i of `excluded` excludes node i; `listed` names nodes (a third of the
        // cases), never excluded ones; the node count covers the list, as the
        // controller sets it.
        req.exclude = (0..n).filter(|i| excluded & (1 << i) != 0).map(NodeId).collect();
        if listed % 3 == 0 {
            req.nodelist = (0..n)
                .filter(|i| listed & (2 << i) != 0 && excluded & (1 << i) == 0)
                .map(NodeId)
                .collect();
        }
        req.min_nodes = req.min_nodes.max(req.nodelist.len() as u32);
        req.ntasks = req.ntasks.max(req.min_nodes);
        let filter = NodeFilter { partition: PartitionId(0), features_any: 0 };
        let got = p
            .earliest_start(&c, &req, filter, d, t0, NEVER)
            .map(|(t, a)| (t, a.iter().map(|x| (x.node, x.tasks)).collect::<Vec<_>>()));
        let want = brute_force(&p, &c, &req, d, t0, &times, |c, r, cands, t| {
            choose_listed(r, cands, t, None, c.placement)
        });
        prop_assert_eq!(got, want);
    }
}
