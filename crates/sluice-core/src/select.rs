//! Node selection: how many tasks a node can host, what they take there, and which
//! nodes a job gets. The same rules serve "does it fit now", backfill planning and
//! the simulator's full mode.

use crate::cluster::BlockLayout;
use crate::cluster::Cluster;
use crate::ids::NodeId;
use crate::job::{JobRequest, MemRequest, NodeAlloc};
use crate::placement::{Placement, PlacementKey};
use crate::time::Time;
use crate::tres::{GresSlot, GresTable, Resources, MAX_GRES};

/// Processors a node keeps for GPU jobs: Slurm's `RestrictedCoresPerGPU` (slurm.conf,
/// 24.11), "cores per GPU restricted for only GPU use", counted in processors.
///
/// Sluice counts processors and does not bind them, so the rule is kept as a count:
/// each free GPU of the node holds back [`GpuReserve::cpus_per_gpu`] of its free
/// processors. A job may use those of the GPUs it takes there and none of the others',
/// as in Slurm, where a job gets only restricted cores near its own GPUs. A job
/// without GPUs on the node therefore finds at most
/// `free processors − cpus_per_gpu × free GPUs` there; a job taking `g` GPUs at most
/// `free processors − cpus_per_gpu × (free GPUs − g)`. Since every job keeps to this,
/// the held-back processors are always free while their GPUs are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GpuReserve {
    /// Processors kept per GPU of the node; 0 when none are.
    pub cpus_per_gpu: u32,
    /// The cluster's untyped `gpu` slot, whose free count the reserve follows; `None`
    /// in a cluster without GPUs.
    pub gpu_slot: Option<GresSlot>,
}

impl GpuReserve {
    /// No processors kept.
    pub const NONE: GpuReserve = GpuReserve {
        cpus_per_gpu: 0,
        gpu_slot: None,
    };

    /// What `node` keeps for GPU jobs (its `RestrictedCoresPerGPU`), as node selection
    /// applies it.
    pub fn of(cluster: &Cluster, node: NodeId) -> GpuReserve {
        GpuReserve {
            cpus_per_gpu: cluster.node(node).restricted_cpus_per_gpu,
            gpu_slot: cluster.gpu_slot(),
        }
    }

    /// Processors out of `free` (what a node has left) that `req` may not use there:
    /// those kept for the free GPUs it does not take.
    pub fn withheld(&self, req: &JobRequest, free: &Resources) -> u32 {
        match self.gpu_slot {
            Some(g) if self.cpus_per_gpu > 0 => {
                let others = free.gres[g].saturating_sub(req.gres_per_node[g]);
                others.saturating_mul(self.cpus_per_gpu)
            }
            _ => 0,
        }
    }
}

/// How many of `req`'s tasks a node can host when `free` is what it has left
/// (its capacity being `cap`): 0 when the node cannot take part at all. For a node
/// that keeps no processors for GPU jobs; see [`max_tasks_on`].
pub fn max_tasks(req: &JobRequest, free: &Resources, cap: &Resources) -> u32 {
    max_tasks_on(req, free, cap, GpuReserve::NONE)
}

/// How many of `req`'s tasks a node can host when `free` is what it has left, its
/// capacity being `cap` and `reserve` what it keeps for GPU jobs
/// ([`crate::Cluster::gpu_reserve`]): 0 when the node cannot take part at all.
///
/// Rules: a task needs `cpus_per_task` processors (and with `--mem-per-cpu`, that much
/// memory per processor) out of the free processors the reserve leaves the job; the
/// node needs the per-node memory and GRES once; an exclusive job needs the node
/// wholly free; with `--ntasks-per-node` the node must host exactly that many; never
/// more than the job's task count.
pub fn max_tasks_on(
    req: &JobRequest,
    free: &Resources,
    cap: &Resources,
    reserve: GpuReserve,
) -> u32 {
    if req.exclusive && free != cap {
        return 0;
    }
    if !req
        .gres_per_node
        .iter()
        .zip(&free.gres)
        .all(|(d, f)| d <= f)
    {
        return 0;
    }
    let cpt = req.cpus_per_task.max(1);
    let mut k = free.cpus.saturating_sub(reserve.withheld(req, free)) / cpt;
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
    Resources {
        cpus,
        mem_mib,
        gres,
    }
}

/// A node that could take part in a job: how many of its tasks it can host over the
/// job's whole window, and its free processors at the start (the ranking key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// Tasks it can host over the job's window (≥ 1 to be useful).
    pub tasks: u32,
    /// Processors free on it when the job would start.
    pub free_cpus: u32,
    /// Its `Weight` (lower is preferred).
    pub weight: u32,
    /// Its rank under the cluster's [`crate::placement::Placement`] when the job would
    /// start (smallest first), for a job that fits on one node.
    pub rank: PlacementKey,
    /// Its leaf switch in a tree topology.
    pub switch: Option<u16>,
}

/// Order in which a job that fits on one node looks at nodes: the cluster's
/// [`crate::placement::Placement`] rank (by default best fit: fewest free GPUs, then
/// fewest free processors, keeping large holes for large jobs, then lower weight, then
/// lower id).
pub fn best_fit_key(c: &Candidate) -> PlacementKey {
    c.rank
}

/// Order in which a job spanning nodes takes them within a topology (switches, blocks)
/// and beyond the nodes it names with `-w`: roomiest first (fewest nodes), then lower
/// weight, then lower id.
pub fn roomiest_key(c: &Candidate) -> (std::cmp::Reverse<u32>, u32, NodeId) {
    (std::cmp::Reverse(c.free_cpus), c.weight, c.node)
}

/// Chooses nodes for `req` among `candidates` for a start at `at`, returning each chosen
/// node with its task count, in ascending node order, or `None` when they cannot hold
/// the job.
///
/// Policy: a job that may use a single node and fits on one goes to the first such node
/// in [`best_fit_key`] order. Otherwise the job takes the best-fitting runs of free
/// consecutive nodes, lightest first, as Slurm's `cons_tres` does ([`choose_by_runs`]),
/// until it has at least `min_nodes` nodes and room for all its tasks (at most
/// `max_nodes`); every node gets one task and the rest fill the nodes in the order
/// taken. In a tree topology the job spans as few leaf switches as it can (see
/// [`choose_by_switch`]); in a block topology it goes into the best-fitting block (see
/// [`choose_by_block`]).
pub fn choose_nodes(
    req: &JobRequest,
    candidates: &[Candidate],
    at: Time,
) -> Option<Vec<(NodeId, u32)>> {
    choose_nodes_in(req, candidates, at, None, Placement::default())
}

/// [`choose_nodes`] in a cluster whose groups of [`Candidate::switch`] are the base
/// blocks of `blocks` (a block topology): a job spanning nodes is placed by
/// [`choose_by_block`]. Under [`Placement::LeastLoaded`] (Slurm's `CR_LLN`) a job
/// spanning nodes outside a topology takes the nodes with room for the most tasks
/// first, the lightest first, as Slurm's least-loaded selection does.
pub fn choose_nodes_in(
    req: &JobRequest,
    candidates: &[Candidate],
    at: Time,
    blocks: Option<&BlockLayout>,
    placement: Placement,
) -> Option<Vec<(NodeId, u32)>> {
    if req.min_nodes <= 1 {
        let best = candidates
            .iter()
            .filter(|c| c.tasks >= req.ntasks)
            .min_by_key(|c| best_fit_key(c));
        if let Some(c) = best {
            return Some(vec![(c.node, req.ntasks)]);
        }
        if req.max_nodes == 1 {
            return None;
        }
    }
    let mut order: Vec<&Candidate> = candidates.iter().filter(|c| c.tasks > 0).collect();
    // Most tasks first: only then does taking nodes in order find room whenever some
    // set of at most `max_nodes` nodes has it. Free processors at the start can overstate
    // what a node hosts over the whole window (a reservation later on it).
    order.sort_by_key(|c| (std::cmp::Reverse(c.tasks), roomiest_key(c)));
    if let Some(blocks) = blocks {
        return choose_by_block(req, &order, blocks);
    }
    if order.iter().any(|c| c.switch.is_some()) {
        return choose_by_switch(req, &order, at);
    }
    if placement == Placement::LeastLoaded {
        order.sort_by_key(|c| (c.weight, std::cmp::Reverse(c.tasks), c.node));
        return take_in_order(req, order.into_iter().map(|c| (c.node, c.tasks)));
    }
    // Slurm's walk can miss room that a node-count limit leaves (`-N2 -n7` over nodes
    // with 1, 1, 4 and 4 processors free: it takes the first node, then none of the
    // others holds the remaining six). Rather than make the job wait, it then takes the
    // nodes that host the most tasks, which finds room whenever some nodes have it.
    choose_by_runs(req, candidates)
        .or_else(|| take_in_order(req, order.into_iter().map(|c| (c.node, c.tasks))))
}

/// A run of consecutive nodes of one weight that can all take part in a job, as
/// [`choose_by_runs`] cuts them.
struct Run {
    /// The nodes, in node order, each with the tasks it can host (0 once set aside) and
    /// whether the job names it (`-w`: taken already).
    nodes: Vec<(NodeId, u32, bool)>,
    /// Tasks its nodes not named can host together.
    tasks: u64,
    /// How many of its nodes are not named.
    free: usize,
    /// Where its first named node is, if it has one.
    named_at: Option<usize>,
    weight: u32,
}

/// Node choice for a job spanning nodes outside any topology, as Slurm 22.05's
/// `cons_tres` makes it: the nodes that can take part, in node order, are cut into runs
/// of consecutive nodes of one `Weight` (a node that cannot take part, or a change of
/// weight, ends a run). Then, until the job has its nodes and room for its tasks, it
/// takes the run that fits best among those left: the lightest, and among equally
/// light runs the first that can hold what the job still needs with the fewest tasks
/// to spare, or, while none can, the one with room for the most tasks. From that run
/// it takes nodes in order, as many as it still needs; when it needs one more node
/// only, the node of the run with the least room that holds the rest of the job, if
/// one does. The tasks fill the nodes in the order they were taken ([`spread_tasks`]).
///
/// So jobs pack into the smallest gaps between busy nodes and leave long runs of free
/// nodes to jobs that need them. Slurm's own quirk is kept: a run that cannot hold the
/// job but has room for more tasks is preferred to an equally light one that can (it
/// lacks nodes, not room).
pub fn choose_by_runs(req: &JobRequest, candidates: &[Candidate]) -> Option<Vec<(NodeId, u32)>> {
    let mut chosen = walk_runs(
        candidates,
        &[],
        req.ntasks as i64,
        req.min_nodes.max(1) as i64,
        req.max_nodes as u64,
    )?;
    if (req.ntasks as usize) < chosen.len() {
        return None;
    }
    spread_tasks(req.ntasks, &mut chosen);
    chosen.sort_by_key(|(n, _)| *n);
    Some(chosen)
}

/// The walk of [`choose_by_runs`] for what a job still needs (`rem_tasks` tasks,
/// `rem_nodes` nodes, at most `max_left` more) once the nodes it names, `named` (in
/// node order), are taken: the nodes it takes besides those, in the order taken, or
/// `None` when they cannot make up the rest. As in Slurm, a run holding a named node is
/// preferred to any other of its weight, and its nodes are taken from the first named
/// one onwards, then backwards from it.
fn walk_runs(
    candidates: &[Candidate],
    named: &[NodeId],
    mut rem_tasks: i64,
    mut rem_nodes: i64,
    mut max_left: u64,
) -> Option<Hosting> {
    let mut usable: Vec<&Candidate> = candidates.iter().filter(|c| c.tasks > 0).collect();
    usable.sort_by_key(|c| c.node);
    let mut runs: Vec<Run> = Vec::new();
    let mut prev: Option<&Candidate> = None;
    for c in usable {
        let joins = prev.is_some_and(|p| p.node.0 + 1 == c.node.0 && p.weight == c.weight);
        if !joins {
            runs.push(Run {
                nodes: Vec::new(),
                tasks: 0,
                free: 0,
                named_at: None,
                weight: c.weight,
            });
        }
        let run = runs.last_mut().expect("a run was just started");
        let is_named = named.binary_search(&c.node).is_ok();
        if is_named {
            run.named_at.get_or_insert(run.nodes.len());
        } else {
            run.tasks += c.tasks as u64;
            run.free += 1;
        }
        run.nodes.push((c.node, c.tasks, is_named));
        prev = Some(c);
    }
    runs.retain(|r| r.free > 0);
    let mut chosen: Hosting = Vec::new();
    while !runs.is_empty() && max_left > 0 && (rem_nodes > 0 || rem_tasks > 0) {
        let holds = |r: &Run| r.tasks as i64 >= rem_tasks && r.free as i64 >= rem_nodes;
        let mut best = 0;
        for i in 1..runs.len() {
            let (r, b) = (&runs[i], &runs[best]);
            let better = (b.named_at.is_none() && r.named_at.is_some())
                || r.weight < b.weight
                || (r.weight == b.weight
                    && match (holds(r), holds(b)) {
                        (true, false) => true,
                        (true, true) => r.tasks < b.tasks,
                        (false, _) => r.tasks > b.tasks,
                    });
            if better {
                best = i;
            }
        }
        let mut run = runs.remove(best);
        let order: Vec<usize> = match run.named_at {
            Some(at) => (at..run.nodes.len()).chain((0..at).rev()).collect(),
            None => {
                if rem_nodes <= 1 {
                    let single = run
                        .nodes
                        .iter()
                        .enumerate()
                        .filter(|(_, &(_, k, _))| k as i64 >= rem_tasks)
                        .min_by_key(|(i, &(_, k, _))| (k, *i))
                        .map(|(i, _)| i);
                    if let Some(keep) = single {
                        for (i, n) in run.nodes.iter_mut().enumerate() {
                            if i != keep {
                                n.1 = 0;
                            }
                        }
                    }
                }
                (0..run.nodes.len()).collect()
            }
        };
        for i in order {
            let (node, k, is_named) = run.nodes[i];
            if max_left == 0 || (rem_nodes <= 0 && rem_tasks <= 0) {
                break;
            }
            let last_too_small = run.named_at.is_none() && max_left == 1 && (k as i64) < rem_tasks;
            if is_named || k == 0 || last_too_small {
                continue;
            }
            chosen.push((node, k));
            rem_tasks -= k as i64;
            rem_nodes -= 1;
            max_left -= 1;
        }
    }
    if rem_tasks > 0 || rem_nodes > 0 {
        return None;
    }
    Some(chosen)
}

/// Nodes with the tasks each can host, in the order they would be taken.
type Hosting = Vec<(NodeId, u32)>;

/// Node choice for a job spanning nodes in a block topology, `ordered` being the
/// candidates in the order [`choose_nodes`] takes them (nodes in no block take no job
/// spanning nodes, as in Slurm's `topology/block`; one-node jobs may use them).
///
/// Without `--segment` the job goes into the smallest block or aggregate of blocks
/// that can hold it ([`BlockLayout::aggregates`], smallest first), the best-fitting one
/// (fewest hostable tasks, then first) at that size. With `--segment=N` it takes
/// `N`-node runs, each inside one base block, from the roomiest blocks first: `None`
/// when the blocks cannot supply enough whole runs.
pub fn choose_by_block(
    req: &JobRequest,
    ordered: &[&Candidate],
    blocks: &BlockLayout,
) -> Option<Vec<(NodeId, u32)>> {
    let mut groups: std::collections::BTreeMap<u16, Hosting> = std::collections::BTreeMap::new();
    for c in ordered {
        if let Some(b) = c.switch {
            groups.entry(b).or_default().push((c.node, c.tasks));
        }
    }
    let room = |g: &[(NodeId, u32)]| g.iter().map(|&(_, k)| k as u64).sum::<u64>();
    if let Some(seg) = req.segment.filter(|&s| s > 0) {
        let need = req.min_nodes.max(1) as usize;
        let mut by_room: Vec<(u16, &Hosting)> = groups.iter().map(|(b, g)| (*b, g)).collect();
        by_room.sort_by_key(|(b, g)| (std::cmp::Reverse(room(g)), *b));
        let mut chosen: Hosting = Vec::with_capacity(need);
        for (_, g) in by_room {
            let runs = g.len() / seg as usize;
            let take = (runs * seg as usize).min(need - chosen.len());
            chosen.extend_from_slice(&g[..take]);
            if chosen.len() == need {
                let mut exact = req.clone();
                exact.min_nodes = need as u32;
                exact.max_nodes = need as u32;
                return take_in_order(&exact, chosen.into_iter());
            }
        }
        return None;
    }
    let mut best: Option<(u16, u64, Hosting)> = None;
    for &(start, end) in &blocks.aggregates {
        let size = end - start;
        if best.as_ref().is_some_and(|b| size > b.0) {
            break;
        }
        let members: Hosting = ordered
            .iter()
            .filter(|c| c.switch.is_some_and(|b| b >= start && b < end))
            .map(|c| (c.node, c.tasks))
            .collect();
        if let Some(chosen) = take_in_order(req, members.iter().copied()) {
            let r = room(&members);
            if best.as_ref().is_none_or(|b| r < b.1) {
                best = Some((size, r, chosen));
            }
        }
    }
    best.map(|b| b.2)
}

/// Node choice for a job spanning nodes in a tree topology, `ordered` being the
/// candidates in the order [`choose_nodes`] takes them.
///
/// As Slurm's `topology/tree`: if the nodes of one leaf switch can hold the job, it gets
/// those of the best-fitting such switch (fewest hostable tasks, then lowest switch),
/// in the usual order. Otherwise it takes whole switches, the roomiest first, so that
/// it spans as few as possible. A job whose `--switches` limit still holds at `at`
/// (see [`crate::job::SwitchLimit`]) gets no allocation over more switches than the
/// limit: `None`, and it waits.
pub fn choose_by_switch(
    req: &JobRequest,
    ordered: &[&Candidate],
    at: Time,
) -> Option<Vec<(NodeId, u32)>> {
    let limit = req
        .switches
        .filter(|l| l.holds_at(at))
        .map(|l| l.max.max(1));
    let mut groups: std::collections::BTreeMap<Option<u16>, Hosting> =
        std::collections::BTreeMap::new();
    for c in ordered {
        groups.entry(c.switch).or_default().push((c.node, c.tasks));
    }
    let room = |g: &[(NodeId, u32)]| g.iter().map(|&(_, k)| k as u64).sum::<u64>();
    let best = groups
        .iter()
        .filter_map(|(s, g)| take_in_order(req, g.iter().copied()).map(|ch| (room(g), *s, ch)))
        .min_by_key(|(r, s, _)| (*r, *s));
    if let Some((_, _, chosen)) = best {
        return Some(chosen);
    }
    if limit == Some(1) {
        return None;
    }
    // The roomiest switches, one more at a time until their nodes hold the job: taken
    // switch by switch, roomiest first (the most of the job under one switch), or else
    // all together in the usual order (most tasks first, so that a node-count limit is
    // met where it can be).
    let mut by_room: Vec<(Option<u16>, u64)> = groups.iter().map(|(s, g)| (*s, room(g))).collect();
    by_room.sort_by_key(|&(s, r)| (std::cmp::Reverse(r), s));
    let most = limit.map_or(by_room.len(), |m| (m as usize).min(by_room.len()));
    for k in 2..=most {
        let taken: Vec<Option<u16>> = by_room[..k].iter().map(|&(s, _)| s).collect();
        let by_switch = taken.iter().flat_map(|s| groups[s].iter().copied());
        if let Some(chosen) = take_in_order(req, by_switch) {
            return Some(chosen);
        }
        let nodes = ordered
            .iter()
            .filter(|c| taken.contains(&c.switch))
            .map(|c| (c.node, c.tasks));
        if let Some(chosen) = take_in_order(req, nodes) {
            return Some(chosen);
        }
    }
    None
}

/// [`choose_nodes`] for a job that names nodes (`-w`, `-x`). `candidates` are the nodes
/// it may use (excluded ones already left out), each with the tasks it can host.
///
/// Every `-w` node must host at least one task, and all of them are taken, first; more
/// nodes only when the job needs more nodes or room (Slurm: the allocation includes the
/// listed nodes and as many others as the node count asks), by Slurm's walk over the
/// runs of free nodes ([`choose_by_runs`]), where a run holding a named node comes first
/// among runs of its weight and gives its nodes onwards from the named one, then
/// backwards (in a topology, under `CR_LLN` or where the walk finds no room: the nodes
/// with room for the most tasks). The tasks fill the named nodes first, as far
/// as each has room, then the others ([`spread_tasks`]). Without `-w` it is
/// [`choose_nodes`].
///
/// In a block topology (`blocks`), a job that only excludes nodes is placed by
/// [`choose_by_block`] among the others; one that names nodes (`-w`) keeps to the named
/// nodes and takes any others it needs without regard to blocks.
pub fn choose_listed(
    req: &JobRequest,
    candidates: &[Candidate],
    at: Time,
    blocks: Option<&BlockLayout>,
    placement: Placement,
) -> Option<Vec<(NodeId, u32)>> {
    if req.nodelist.is_empty() {
        return choose_nodes_in(req, candidates, at, blocks, placement);
    }
    let mut required = Vec::with_capacity(req.nodelist.len());
    for n in &req.nodelist {
        let c = candidates.iter().find(|c| c.node == *n)?;
        if c.tasks == 0 {
            return None;
        }
        required.push((c.node, c.tasks));
    }
    let mut all_listed = req.clone();
    all_listed.min_nodes = req.min_nodes.max(req.nodelist.len() as u32);
    let topology = blocks.is_some() || candidates.iter().any(|c| c.switch.is_some());
    let walked = if topology || placement == Placement::LeastLoaded {
        None
    } else {
        // Slurm's walk over the runs of free nodes, the runs holding named nodes first.
        let named_tasks: i64 = required.iter().map(|&(_, k)| k as i64).sum();
        let named = required.len() as u64;
        (req.max_nodes as u64 >= named)
            .then(|| {
                walk_runs(
                    candidates,
                    &req.nodelist,
                    req.ntasks as i64 - named_tasks,
                    all_listed.min_nodes as i64 - named as i64,
                    req.max_nodes as u64 - named,
                )
            })
            .flatten()
            .map(|more| required.iter().copied().chain(more).collect::<Hosting>())
            .filter(|chosen| chosen.len() <= req.ntasks as usize)
    };
    let mut chosen = match walked {
        Some(chosen) => chosen,
        None => {
            let mut others: Vec<&Candidate> = candidates
                .iter()
                .filter(|c| c.tasks > 0 && req.nodelist.binary_search(&c.node).is_err())
                .collect();
            others.sort_by_key(|c| (std::cmp::Reverse(c.tasks), roomiest_key(c)));
            take_nodes(
                &all_listed,
                required
                    .into_iter()
                    .chain(others.into_iter().map(|c| (c.node, c.tasks))),
            )?
        }
    };
    // The named nodes fill first, then the others, each part in node order (Slurm:
    // `-w n3 -n6` over idle four-CPU nodes is n2 2 and n3 4).
    let listed = chosen.len().min(req.nodelist.len());
    chosen[listed..].sort_by_key(|(n, _)| *n);
    spread_tasks(req.ntasks, &mut chosen);
    chosen.sort_by_key(|(n, _)| *n);
    Some(chosen)
}

/// Takes nodes from `ordered` (node, tasks it can host ≥ 1) until the job has at least
/// `min_nodes` nodes and room for all its tasks, then spreads the tasks over them as
/// [`spread_tasks`] does. `None` if the nodes run out or `max_nodes` is exceeded first.
pub fn take_in_order(
    req: &JobRequest,
    ordered: impl Iterator<Item = (NodeId, u32)>,
) -> Option<Vec<(NodeId, u32)>> {
    let mut chosen = take_nodes(req, ordered)?;
    chosen.sort_by_key(|(n, _)| *n);
    spread_tasks(req.ntasks, &mut chosen);
    Some(chosen)
}

/// The nodes [`take_in_order`] takes, each with the tasks it can host, in the order
/// taken.
fn take_nodes(
    req: &JobRequest,
    ordered: impl Iterator<Item = (NodeId, u32)>,
) -> Option<Vec<(NodeId, u32)>> {
    let min_nodes = req.min_nodes.max(1) as usize;
    let mut chosen: Vec<(NodeId, u32)> = Vec::new();
    let mut total: u64 = 0;
    for (node, k) in ordered {
        if chosen.len() >= min_nodes && total >= req.ntasks as u64 {
            break;
        }
        if chosen.len() as u64 >= req.max_nodes as u64 {
            return None;
        }
        chosen.push((node, k));
        total += k as u64;
    }
    if total < req.ntasks as u64 || chosen.len() < min_nodes || (req.ntasks as usize) < chosen.len()
    {
        return None;
    }
    Some(chosen)
}

/// Spreads `ntasks` tasks over `nodes` (each with the tasks it can host ≥ 1, together
/// at least `ntasks`, and no more nodes than tasks), as Slurm's `cons_tres` does: every
/// node gets one task, and the rest fill the nodes in the order given, each as far as
/// it has room. Callers give the nodes in node order, so that the first nodes are the
/// fullest: `-N2 -n5` over two idle four-CPU nodes is `4,1`; with one processor of the
/// first node busy, `3,2`.
pub fn spread_tasks(ntasks: u32, nodes: &mut [(NodeId, u32)]) {
    let mut left = ntasks - nodes.len() as u32;
    for c in nodes.iter_mut() {
        let more = (c.1 - 1).min(left);
        left -= more;
        c.1 = 1 + more;
    }
    debug_assert_eq!(left, 0);
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
            NodeAlloc::new(
                node,
                tasks,
                usage_on_node(req, tasks, &free_of(node), &cap, &cluster.gres),
            )
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
        let cap = Resources {
            cpus: 16,
            mem_mib: 64_000,
            ..Default::default()
        };
        let free = Resources {
            cpus: 10,
            mem_mib: 8_000,
            ..Default::default()
        };
        let mut r = req(100);
        r.cpus_per_task = 4;
        assert_eq!(max_tasks(&r, &free, &cap), 2);
        r.mem = MemRequest::PerCpu(1_000);
        assert_eq!(
            max_tasks(&r, &free, &cap),
            2,
            "8 GB / (4 CPUs x 1 GB) = 2 tasks"
        );
        r.mem = MemRequest::PerCpu(1_500);
        assert_eq!(max_tasks(&r, &free, &cap), 1);
        r.mem = MemRequest::PerNode(9_000);
        assert_eq!(max_tasks(&r, &free, &cap), 0);
        r.mem = MemRequest::PerNode(0);
        r.exclusive = true;
        assert_eq!(
            max_tasks(&r, &free, &cap),
            0,
            "exclusive needs an idle node"
        );
        assert_eq!(max_tasks(&r, &cap, &cap), 4);
        r.exclusive = false;
        r.ntasks_per_node = Some(3);
        assert_eq!(
            max_tasks(&r, &free, &cap),
            0,
            "cannot host exactly 3 tasks of 4 CPUs"
        );
        r.ntasks_per_node = Some(2);
        assert_eq!(max_tasks(&r, &free, &cap), 2);
    }

    /// Slurm's own example (its RestrictedCoresPerGPU test): 12 cores, 4 GPUs, 2 cores
    /// kept per GPU. A job without GPUs gets at most the 4 others; a 1-GPU job those 4
    /// and its GPU's 2; a 4-GPU job all 12.
    #[test]
    fn cpus_kept_for_gpus_are_out_of_reach_of_other_jobs() {
        let gpu = 0;
        let mut cap = Resources::cpus(12);
        cap.gres[gpu] = 4;
        let reserve = GpuReserve {
            cpus_per_gpu: 2,
            gpu_slot: Some(gpu),
        };
        let tasks = |r: &JobRequest, free: &Resources| max_tasks_on(r, free, &cap, reserve);
        let mut r = req(100);
        assert_eq!(tasks(&r, &cap), 4);
        assert_eq!(max_tasks(&r, &cap, &cap), 12, "no reserve, all 12");
        r.gres_per_node[gpu] = 1;
        assert_eq!(tasks(&r, &cap), 6);
        r.gres_per_node[gpu] = 4;
        assert_eq!(tasks(&r, &cap), 12);
        // 9 processors and 2 GPUs free.
        let mut free = Resources::cpus(9);
        free.gres[gpu] = 2;
        r.gres_per_node[gpu] = 0;
        assert_eq!(tasks(&r, &free), 5);
        r.gres_per_node[gpu] = 2;
        assert_eq!(tasks(&r, &free), 9);
        // More GPUs asked than free: nothing, as ever.
        r.gres_per_node[gpu] = 3;
        assert_eq!(tasks(&r, &free), 0);
        // A reserve larger than what is free leaves nothing, without underflow.
        let mut crowded = Resources::cpus(3);
        crowded.gres[gpu] = 2;
        r.gres_per_node[gpu] = 0;
        assert_eq!(tasks(&r, &crowded), 0);
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
        assert_eq!(
            (u.gres[gpu], u.gres[a100], u.gres[v100]),
            (2, 1, 1),
            "one typed v100 + one untyped from a100"
        );
    }

    #[test]
    fn a_small_job_goes_to_the_tightest_node_and_a_wide_one_to_the_first_nodes() {
        let cand = |n: u32, free: u32| Candidate {
            node: NodeId(n),
            tasks: free,
            free_cpus: free,
            weight: 1,
            rank: (0, free, 1, NodeId(n)),
            switch: None,
        };
        let cands = [cand(0, 8), cand(1, 3), cand(2, 2), cand(3, 5)];
        // k is capped at the job's task count, but best fit ranks by free processors.
        let capped = |ntasks: u32| -> Vec<Candidate> {
            cands
                .iter()
                .map(|c| Candidate {
                    tasks: c.tasks.min(ntasks),
                    ..*c
                })
                .collect()
        };
        assert_eq!(
            choose_nodes(&req(2), &capped(2), 0),
            Some(vec![(NodeId(2), 2)])
        );
        assert_eq!(
            choose_nodes(&req(3), &capped(3), 0),
            Some(vec![(NodeId(1), 3)])
        );
        // Too wide for any one node: the nodes in order until there is room.
        assert_eq!(
            choose_nodes(&req(10), &capped(10), 0),
            Some(vec![(NodeId(0), 8), (NodeId(1), 2)])
        );
        assert_eq!(choose_nodes(&req(19), &capped(19), 0), None);
        assert_eq!(choose_nodes(&req(9).on_one_node(), &capped(9), 0), None);
        let mut two = req(2);
        two.min_nodes = 2;
        two.max_nodes = 2;
        assert_eq!(
            choose_nodes(&two, &capped(2), 0),
            Some(vec![(NodeId(0), 1), (NodeId(1), 1)])
        );
        let mut heavy = cands;
        heavy[2].weight = 5;
        let tied = [
            Candidate {
                free_cpus: 3,
                rank: (0, 3, 5, NodeId(2)),
                ..heavy[2]
            },
            heavy[1],
        ];
        assert_eq!(
            choose_nodes(&req(2), &tied, 0),
            Some(vec![(NodeId(1), 2)]),
            "equal room: lower weight wins"
        );
    }

    /// Slurm 22.05 (`cons_tres`) lays a job's tasks out over its nodes in node order:
    /// one task on every node, then the rest filling the first nodes as far as each
    /// has room, whichever node has the most room.
    #[test]
    fn tasks_fill_the_chosen_nodes_in_node_order_one_each_first() {
        // Nodes of four processors, each with `free[n]` of them free.
        let nodes = |free: &[u32]| -> Vec<Candidate> {
            (0..free.len() as u32)
                .map(|n| Candidate {
                    node: NodeId(n),
                    tasks: free[n as usize],
                    free_cpus: free[n as usize],
                    weight: 1,
                    rank: (0, free[n as usize], 1, NodeId(n)),
                    switch: None,
                })
                .collect()
        };
        let on = |nodes: u32, ntasks: u32| {
            let mut r = req(ntasks);
            r.min_nodes = nodes;
            r.max_nodes = nodes;
            r
        };
        let layout = |r: &JobRequest, free: &[u32]| -> Vec<(u32, u32)> {
            choose_nodes(r, &nodes(free), 0)
                .expect("room")
                .into_iter()
                .map(|(n, k)| (n.0, k))
                .collect()
        };
        // Idle: `-N2 -n5` is 4,1 and `-N3 -n7` 4,2,1, the first nodes the fullest.
        assert_eq!(layout(&on(2, 5), &[4, 4]), [(0, 4), (1, 1)]);
        assert_eq!(layout(&on(3, 7), &[4, 4, 4]), [(0, 4), (1, 2), (2, 1)]);
        // A job still holds one processor of n1: `-N2 -n3` puts two tasks on n1 all
        // the same (it has room for them), and `-N2 -n5` gives n1 the three it has
        // room for and n2 the other two, although n2 is the roomier.
        assert_eq!(layout(&on(2, 3), &[3, 4]), [(0, 2), (1, 1)]);
        assert_eq!(layout(&on(2, 5), &[3, 4]), [(0, 3), (1, 2)]);
        assert_eq!(layout(&on(3, 8), &[3, 4, 4]), [(0, 3), (1, 4), (2, 1)]);
        // Two busy on n1 and one on n2: `-N3 -n6` is 2,3,1.
        assert_eq!(layout(&on(3, 6), &[2, 3, 4]), [(0, 2), (1, 3), (2, 1)]);
        // A node named with `-w` fills first: on two idle nodes, `-w n2 -n6` puts four
        // tasks on n2 and the other two on n1, `-w n2 -N2 -n5` one on n1 and four on n2.
        let named = |r: &JobRequest, free: &[u32]| -> Vec<(u32, u32)> {
            choose_listed(r, &nodes(free), 0, None, Placement::default())
                .expect("room")
                .into_iter()
                .map(|(n, k)| (n.0, k))
                .collect()
        };
        let mut w = on(1, 6);
        w.max_nodes = 6;
        w.nodelist = vec![NodeId(1)];
        assert_eq!(named(&w, &[4, 4]), [(0, 2), (1, 4)]);
        let mut w = on(2, 5);
        w.nodelist = vec![NodeId(1)];
        assert_eq!(named(&w, &[4, 4]), [(0, 1), (1, 4)]);
        w.nodelist = vec![NodeId(0)];
        assert_eq!(named(&w, &[3, 4]), [(0, 3), (1, 2)]);
    }

    /// Nodes of four processors in one partition, `free[n]` of them free on node `n`
    /// (0: busy), with weights `weight[n]`.
    fn row(free: &[u32], weight: &[u32]) -> Vec<Candidate> {
        (0..free.len())
            .map(|n| Candidate {
                node: NodeId(n as u32),
                tasks: free[n],
                free_cpus: free[n],
                weight: weight[n],
                rank: (0, free[n], weight[n], NodeId(n as u32)),
                switch: None,
            })
            .collect()
    }

    /// The nodes (index, tasks) a job of `ntasks` tasks over `nodes` nodes (0: any
    /// number) gets.
    fn placed(cands: &[Candidate], nodes: u32, ntasks: u32) -> Option<Vec<(u32, u32)>> {
        let mut r = req(ntasks);
        if nodes > 0 {
            r.min_nodes = nodes;
            r.max_nodes = nodes;
        }
        choose_nodes(&r, cands, 0).map(|c| c.into_iter().map(|(n, k)| (n.0, k)).collect())
    }

    /// Slurm 22.05's `cons_tres`: the free nodes in node order fall into runs between
    /// busy ones, and a job spanning nodes goes into the smallest run that can hold it,
    /// leaving the long runs to wide jobs; one that no run can hold takes the longest
    /// run first, then the best fit for the rest.
    #[test]
    fn a_job_spanning_nodes_takes_the_run_of_free_nodes_that_fits_it_best() {
        // n0 and n3 busy: runs n[1-2] and n[4-6].
        let cands = row(&[0, 4, 4, 0, 4, 4, 4], &[1; 7]);
        assert_eq!(placed(&cands, 2, 2), Some(vec![(1, 1), (2, 1)]));
        assert_eq!(
            placed(&cands, 3, 3),
            Some(vec![(4, 1), (5, 1), (6, 1)]),
            "n[1-2] is too short: the three-node run, not n1, n2 and n4"
        );
        assert_eq!(placed(&cands, 0, 6), Some(vec![(1, 4), (2, 2)]));
        assert_eq!(
            placed(&cands, 0, 10),
            Some(vec![(4, 4), (5, 4), (6, 2)]),
            "ten tasks fit in n[4-6] only"
        );
        assert_eq!(
            placed(&cands, 4, 4),
            Some(vec![(1, 1), (4, 1), (5, 1), (6, 1)]),
            "the longest run, then one node of the other"
        );
        // Two processors of n1 busy too: n[1-2] still holds a two-node job, and the
        // last node a job needs is the tightest that holds the rest of it.
        let cands = row(&[0, 2, 4, 0, 4, 4, 4], &[1; 7]);
        assert_eq!(placed(&cands, 2, 5), Some(vec![(1, 2), (2, 3)]));
        assert_eq!(
            placed(&cands, 4, 4),
            Some(vec![(1, 1), (4, 1), (5, 1), (6, 1)])
        );
        assert_eq!(placed(&cands, 0, 7), Some(vec![(4, 4), (5, 3)]));
        assert_eq!(
            placed(&cands, 0, 14),
            Some(vec![(1, 2), (4, 4), (5, 4), (6, 4)]),
            "n[4-6], then the tightest node that holds the last two tasks"
        );
        assert_eq!(placed(&cands, 6, 6), None, "only five nodes have room");
    }

    /// A node's `Weight` comes first: the lightest nodes are taken even where heavier
    /// ones have more room, and a change of weight ends a run.
    #[test]
    fn a_job_spanning_nodes_takes_the_lightest_nodes_first() {
        // n0, n1 weigh 20; n2, n3 weigh 10 and n2 has two processors busy.
        let cands = row(&[4, 4, 2, 4], &[20, 20, 10, 10]);
        assert_eq!(placed(&cands, 2, 2), Some(vec![(2, 1), (3, 1)]));
        assert_eq!(placed(&cands, 2, 5), Some(vec![(2, 2), (3, 3)]));
        assert_eq!(
            placed(&cands, 0, 7),
            Some(vec![(0, 1), (2, 2), (3, 4)]),
            "the light run first, the rest from the heavy one"
        );
        assert_eq!(placed(&cands, 3, 3), Some(vec![(0, 1), (2, 1), (3, 1)]));
        // The runs of one weight are cut where the weight changes even on adjacent
        // nodes: n[0-1] and n[2-3] are two runs, the light one taken first.
        let cands = row(&[4, 4, 4, 4], &[1, 1, 2, 2]);
        assert_eq!(placed(&cands, 2, 2), Some(vec![(0, 1), (1, 1)]));
        assert_eq!(placed(&cands, 3, 3), Some(vec![(0, 1), (1, 1), (2, 1)]));
    }

    /// Where Slurm's walk would find no room within a node-count limit although some
    /// nodes have it, the job takes the nodes with room for the most tasks rather than
    /// wait.
    #[test]
    fn a_job_limited_in_nodes_finds_the_room_the_walk_misses() {
        // `-N2 -n7` over nodes with 1, 1, 4 and 4 free: the walk takes n0 first and
        // then no one node holds the other six.
        let cands = row(&[1, 1, 4, 4], &[1; 4]);
        assert_eq!(
            choose_by_runs(
                &{
                    let mut r = req(7);
                    r.min_nodes = 2;
                    r.max_nodes = 2;
                    r
                },
                &cands
            ),
            None
        );
        assert_eq!(placed(&cands, 2, 7), Some(vec![(2, 4), (3, 3)]));
    }

    /// A job naming a node with `-w` that needs more nodes takes them from the run of
    /// free nodes around the named one, onwards from it first, as Slurm does.
    #[test]
    fn a_job_naming_a_node_takes_the_others_from_its_run() {
        // n0 and n3 busy: runs n[1-2] and n[4-6].
        let cands = row(&[0, 4, 4, 0, 4, 4, 4], &[1; 7]);
        let named = |nodes: u32, ntasks: u32, list: &[u32]| {
            let mut r = req(ntasks);
            r.min_nodes = nodes;
            r.max_nodes = nodes;
            r.nodelist = list.iter().map(|&n| NodeId(n)).collect();
            choose_listed(&r, &cands, 0, None, Placement::default())
                .map(|c| c.into_iter().map(|(n, k)| (n.0, k)).collect::<Vec<_>>())
        };
        assert_eq!(named(3, 3, &[5]), Some(vec![(4, 1), (5, 1), (6, 1)]));
        assert_eq!(
            named(2, 2, &[5]),
            Some(vec![(5, 1), (6, 1)]),
            "onwards first"
        );
        assert_eq!(
            named(2, 2, &[6]),
            Some(vec![(5, 1), (6, 1)]),
            "then backwards"
        );
        // A run that can hold the rest wins over the named node's run that cannot.
        assert_eq!(named(3, 3, &[2]), Some(vec![(2, 1), (4, 1), (5, 1)]));
    }

    /// Under `CR_LLN` (least loaded) a job spanning nodes takes the nodes with the most
    /// room instead, the lightest first, whatever runs they lie in.
    #[test]
    fn least_loaded_placement_spreads_a_job_spanning_nodes_over_the_roomiest_nodes() {
        let cands = row(&[4, 2, 4, 0, 3, 4], &[1; 6]);
        let mut r = req(2);
        r.min_nodes = 2;
        r.max_nodes = 2;
        let lln = choose_nodes_in(&r, &cands, 0, None, Placement::LeastLoaded);
        assert_eq!(lln, Some(vec![(NodeId(0), 1), (NodeId(2), 1)]));
        assert_eq!(
            choose_nodes(&r, &cands, 0),
            Some(vec![(NodeId(4), 1), (NodeId(5), 1)]),
            "best fit: the smaller run n[4-5]"
        );
    }

    /// Slurm lays the tasks out over the nodes in the order it takes them: a job over
    /// two runs fills the run it took first.
    #[test]
    fn tasks_fill_the_run_taken_first() {
        // n0 with two processors free, n1 busy, n2 idle: `-N2 -n3` takes n2 (the
        // larger run) first and puts two tasks there.
        let cands = row(&[2, 0, 4], &[1; 3]);
        assert_eq!(placed(&cands, 2, 3), Some(vec![(0, 1), (2, 2)]));
    }
}
