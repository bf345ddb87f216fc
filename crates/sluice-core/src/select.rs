//! Node selection: how many tasks a node can host, what they take there, and which
//! nodes a job gets. The same rules serve "does it fit now", backfill planning and
//! the simulator's full mode.

use crate::cluster::{Cluster, Node};
use crate::ids::NodeId;
use crate::job::{MemRequest, NodeAlloc, JobRequest};
use crate::tres::{GresTable, Resources, MAX_GRES};

/// How many of `req`'s tasks a node can host when `free` is what it has left
/// (its capacity being `cap`): 0 when the node cannot take part at all.
///
/// Rules: a task needs `cpus_per_task` processors (and with `--mem-per-cpu`, that much
/// memory per processor); the node needs the per-node memory and GRES once; an
/// exclusive job needs the node wholly free; with `--ntasks-per-node` the node must
/// host exactly that many; never more than the job's task count.
pub fn max_tasks(req: &JobRequest, free: &Resources, cap: &Resources) -> u32 {
    if req.exclusive && free != cap {
        return 0;
    }
    if !req.gres_per_node.iter().zip(&free.gres).all(|(d, f)| d <= f) {
        return 0;
    }
    let cpt = req.cpus_per_task.max(1);
    let mut k = free.cpus / cpt;
    match req.mem {
        MemRequest::PerNode(m) => {
            if m > free.mem_mib {
                return 0;
            }
        }
        MemRequest::PerCpu(m) if m > 0 => {
            let per_task = m.saturating_mul(cpt as u64);
            k = k.min((free.mem_mib / per_task).min(u32::MAX as u64) as u32);
        }
        MemRequest::PerCpu(_) => {}
    }
    k = k.min(req.ntasks);
    if let Some(n) = req.ntasks_per_node {
        if k < n {
            return 0;
        }
        k = n;
    }
    k
}

/// What `tasks` tasks of `req` take on a node with capacity `cap` and `free` left.
///
/// Untyped GRES demand (`--gres=gpu:2` on a node with `gpu:a100` and `gpu:v100`) is
/// turned into concrete typed counts here, taking types in slot order, so that the
/// typed and untyped counts of a node always agree.
pub fn usage_on_node(
    req: &JobRequest,
    tasks: u32,
    free: &Resources,
    cap: &Resources,
    table: &GresTable,
) -> Resources {
    if req.exclusive {
        return *cap;
    }
    let cpus = tasks * req.cpus_per_task.max(1);
    let mem_mib = match req.mem {
        MemRequest::PerNode(m) => m,
        MemRequest::PerCpu(m) => m * cpus as u64,
    };
    let mut gres = req.gres_per_node;
    for parent in 0..table.len().min(MAX_GRES) {
        if table.parent(parent).is_some() {
            continue;
        }
        let typed: u32 = table.children(parent).map(|c| req.gres_per_node[c]).sum();
        let mut untyped = req.gres_per_node[parent].saturating_sub(typed);
        for child in table.children(parent) {
            if untyped == 0 {
                break;
            }
            let spare = free.gres[child].saturating_sub(gres[child]);
            let take = spare.min(untyped);
            gres[child] += take;
            untyped -= take;
        }
    }
    Resources { cpus, mem_mib, gres }
}

/// True when `node` may run `req` at all, judged by its capacity (not by what is free):
/// the feature constraint, and at least one task fitting on an empty node.
pub fn node_can_ever_host(req: &JobRequest, node: &Node) -> bool {
    (req.features_any == 0 || node.features & req.features_any != 0)
        && max_tasks(req, &node.capacity, &node.capacity) > 0
}

/// Chooses nodes for `req` among `candidates` (node, tasks it can host now, ≥ 1),
/// returning each chosen node with its task count, in ascending node order, or
/// `None` when they cannot hold the job.
///
/// Policy: use as few nodes as possible (at least `min_nodes`, at most `max_nodes`).
/// A job that fits on one node goes to the *best fit*: the node that can host the
/// fewest tasks while still holding them all (ties: lower weight, then lower id), which
/// keeps large holes for large jobs. A job spanning nodes takes the roomiest nodes
/// (ties: lower weight, then lower id) and packs its tasks onto them in that order.
pub fn choose_nodes(
    req: &JobRequest,
    candidates: &[(NodeId, u32)],
    cluster: &Cluster,
) -> Option<Vec<(NodeId, u32)>> {
    let usable = candidates.iter().filter(|(_, k)| *k > 0).count();
    let min_nodes = req.min_nodes.max(1) as usize;
    if usable < min_nodes {
        return None;
    }
    let weight = |n: NodeId| cluster.node(n).weight;
    if min_nodes == 1 {
        let best = candidates
            .iter()
            .filter(|(_, k)| *k >= req.ntasks)
            .min_by_key(|(n, k)| (*k, weight(*n), *n));
        if let Some(&(n, _)) = best {
            return Some(vec![(n, req.ntasks)]);
        }
        if req.max_nodes == 1 {
            return None;
        }
    }
    let mut order: Vec<(NodeId, u32)> = candidates.iter().copied().filter(|(_, k)| *k > 0).collect();
    order.sort_by_key(|(n, k)| (std::cmp::Reverse(*k), weight(*n), *n));
    let mut total: u64 = 0;
    let mut take = 0usize;
    for (_, k) in &order {
        if take >= min_nodes && total >= req.ntasks as u64 {
            break;
        }
        total += *k as u64;
        take += 1;
    }
    if total < req.ntasks as u64 || take > req.max_nodes as usize || take < min_nodes {
        return None;
    }
    if (req.ntasks as usize) < take {
        return None;
    }
    // Every node gets one task, then the rest fill nodes in order.
    let chosen = &order[..take];
    let mut tasks: Vec<u32> = vec![1; take];
    let mut left = req.ntasks - take as u32;
    for (i, (_, k)) in chosen.iter().enumerate() {
        let more = (k - 1).min(left);
        tasks[i] += more;
        left -= more;
    }
    debug_assert_eq!(left, 0);
    let mut out: Vec<(NodeId, u32)> = chosen.iter().map(|(n, _)| *n).zip(tasks).collect();
    out.sort_by_key(|(n, _)| *n);
    Some(out)
}

/// Builds the per-node shares for a choice made by [`choose_nodes`].
pub fn node_allocs(
    req: &JobRequest,
    chosen: &[(NodeId, u32)],
    free_of: impl Fn(NodeId) -> Resources,
    cluster: &Cluster,
) -> Vec<NodeAlloc> {
    chosen
        .iter()
        .map(|&(node, tasks)| {
            let cap = cluster.node(node).capacity;
            NodeAlloc {
                node,
                tasks,
                usage: usage_on_node(req, tasks, &free_of(node), &cap, &cluster.gres),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cluster;

    fn req(ntasks: u32) -> JobRequest {
        JobRequest::procs(ntasks)
    }

    #[test]
    fn a_node_hosts_as_many_tasks_as_its_cpus_and_memory_allow() {
        let cap = Resources { cpus: 16, mem_mib: 64_000, ..Default::default() };
        let free = Resources { cpus: 10, mem_mib: 8_000, ..Default::default() };
        let mut r = req(100);
        r.cpus_per_task = 4;
        assert_eq!(max_tasks(&r, &free, &cap), 2);
        r.mem = MemRequest::PerCpu(1_000);
        assert_eq!(max_tasks(&r, &free, &cap), 2, "8 GB / (4 CPUs x 1 GB) = 2 tasks");
        r.mem = MemRequest::PerCpu(1_500);
        assert_eq!(max_tasks(&r, &free, &cap), 1);
        r.mem = MemRequest::PerNode(9_000);
        assert_eq!(max_tasks(&r, &free, &cap), 0);
        r.mem = MemRequest::PerNode(0);
        r.exclusive = true;
        assert_eq!(max_tasks(&r, &free, &cap), 0, "exclusive needs an idle node");
        assert_eq!(max_tasks(&r, &cap, &cap), 4);
        r.exclusive = false;
        r.ntasks_per_node = Some(3);
        assert_eq!(max_tasks(&r, &free, &cap), 0, "cannot host exactly 3 tasks of 4 CPUs");
        r.ntasks_per_node = Some(2);
        assert_eq!(max_tasks(&r, &free, &cap), 2);
    }

    #[test]
    fn untyped_gpus_are_taken_from_the_types_a_node_has_free() {
        let mut cluster = Cluster::homogeneous("p", 1, 8);
        let gpu = cluster.gres.slot_for("gpu", None).unwrap();
        let a100 = cluster.gres.slot_for("gpu", Some("a100")).unwrap();
        let v100 = cluster.gres.slot_for("gpu", Some("v100")).unwrap();
        let mut free = Resources::cpus(8);
        free.gres[gpu] = 3;
        free.gres[a100] = 1;
        free.gres[v100] = 2;
        let mut r = req(1);
        r.gres_per_node[gpu] = 2;
        let u = usage_on_node(&r, 1, &free, &free, &cluster.gres);
        assert_eq!((u.gres[gpu], u.gres[a100], u.gres[v100]), (2, 1, 1));
        r.gres_per_node[v100] = 1;
        let u = usage_on_node(&r, 1, &free, &free, &cluster.gres);
        assert_eq!((u.gres[gpu], u.gres[a100], u.gres[v100]), (2, 1, 1), "one typed v100 + one untyped from a100");
    }

    #[test]
    fn a_small_job_goes_to_the_tightest_node_and_a_wide_one_to_the_roomiest() {
        let cluster = Cluster::homogeneous("p", 4, 8);
        let cands = [(NodeId(0), 8), (NodeId(1), 3), (NodeId(2), 2), (NodeId(3), 5)];
        assert_eq!(choose_nodes(&req(2), &cands, &cluster), Some(vec![(NodeId(2), 2)]));
        assert_eq!(choose_nodes(&req(3), &cands, &cluster), Some(vec![(NodeId(1), 3)]));
        assert_eq!(
            choose_nodes(&req(10), &cands, &cluster),
            Some(vec![(NodeId(0), 8), (NodeId(3), 2)])
        );
        assert_eq!(choose_nodes(&req(19), &cands, &cluster), None);
        assert_eq!(choose_nodes(&req(9).on_one_node(), &cands, &cluster), None);
        let mut two = req(2);
        two.min_nodes = 2;
        two.max_nodes = 2;
        assert_eq!(
            choose_nodes(&two, &cands, &cluster),
            Some(vec![(NodeId(0), 1), (NodeId(3), 1)])
        );
    }
}
