//! The availability profile: free resources of every node as a step function of time.
//!
//! Running jobs hold their nodes until their *expected* end (start + time limit);
//! reservations (planned starts of pending jobs) hold nodes over their planned
//! interval. Everything not claimed is free. Intervals are half-open, `[start, end)`:
//! a job ending at `t` frees its resources for a job starting at `t`.
//!
//! The one question schedulers ask is [`Profile::earliest_start`]: the earliest time
//! at or after `t0` at which a request fits for its whole duration, and on which nodes.
//!
//! # Node classes
//!
//! Nodes with the same attributes (capacity, weight, features, partitions, whether they
//! take new work, processors kept for GPU jobs) and the same step function are kept
//! together in one *class*: an idle partition of 10,000 nodes is one class, the 64
//! nodes of a job that started together are one class. Queries work on classes, not nodes, so their cost follows the number
//! of distinct situations on the machine rather than its size. A claim moves its nodes
//! to the class of their new step function (found by hash, or created).
//!
//! # The query
//!
//! Per class, a sliding-window minimum over its steps gives how many tasks one of its
//! nodes can host over `[t, t + d)` as a function of `t`; merging those functions in
//! time order, weighted by class size, finds the first `t` at which the nodes together
//! hold the job. A query costs O(E log E) in the number E of class steps after `t0`,
//! never a rescan per candidate time.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap as HashMap, FxHasher};

use crate::cluster::{Cluster, NodeState};
use crate::ids::{NodeId, PartitionId};
use crate::job::{JobRequest, NodeAlloc};
use crate::placement::PlacementKey;
use crate::select::{choose_listed, max_tasks_on, node_allocs, Candidate, GpuReserve};
use crate::time::{Secs, Time, NEVER};
use crate::tres::Resources;

type ClassId = u32;
type AttrId = u32;

/// A step function: `steps[i].1` is free from `steps[i].0` until `steps[i + 1].0` (the
/// last step lasts forever). Times strictly increase; the first is at or before the
/// profile's origin.
type Steps = Vec<(Time, Resources)>;

/// What a node is, apart from what runs on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct NodeAttr {
    capacity: Resources,
    weight: u32,
    features: u64,
    partitions: Vec<PartitionId>,
    /// Up (not DOWN or DRAIN): takes new work.
    schedulable: bool,
    /// Leaf switch of a tree topology.
    leaf_switch: Option<u16>,
    /// Processors kept for GPU jobs.
    reserve: GpuReserve,
}

impl NodeAttr {
    fn of(cluster: &Cluster, node: NodeId) -> Self {
        let n = cluster.node(node);
        NodeAttr {
            capacity: n.capacity,
            weight: n.weight,
            features: n.features,
            partitions: cluster
                .partitions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.nodes.binary_search(&node).is_ok())
                .map(|(i, _)| PartitionId(i as u16))
                .collect(),
            schedulable: n.state == NodeState::Up,
            leaf_switch: n.leaf_switch,
            reserve: GpuReserve::of(cluster, node),
        }
    }
}

#[derive(Clone, Debug)]
struct Class {
    attr: AttrId,
    steps: Steps,
    members: BTreeSet<NodeId>,
    hash: u64,
}

/// Which nodes a query may use: the schedulable nodes of a partition, optionally only
/// those with one of some features.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeFilter {
    /// The job's partition.
    pub partition: PartitionId,
    /// Feature bits of which the node must have at least one; 0 for any node.
    pub features_any: u64,
}

/// Free resources of every node of a cluster as step functions of time.
#[derive(Clone, Debug)]
pub struct Profile {
    attrs: Vec<NodeAttr>,
    attr_of: Vec<AttrId>,
    class_of: Vec<ClassId>,
    classes: Vec<Class>,
    free_ids: Vec<ClassId>,
    lookup: HashMap<u64, Vec<ClassId>>,
    /// Nothing before this time is asked about again; older steps are dropped when a
    /// class is next changed, and in a periodic clean-up.
    origin: Time,
    advances: u32,
}

fn hash_of(attr: AttrId, steps: &Steps) -> u64 {
    let mut h = FxHasher::default();
    attr.hash(&mut h);
    steps.hash(&mut h);
    h.finish()
}

/// Index of the step in force at `t`. Queries ask about the present or the near future,
/// which after trimming sits in the first few steps: look there before bisecting.
fn index_at(steps: &Steps, t: Time) -> usize {
    for (i, w) in steps.windows(2).take(4).enumerate() {
        if w[1].0 > t {
            return i;
        }
    }
    steps.partition_point(|(at, _)| *at <= t) - 1
}

fn split_at(steps: &mut Steps, t: Time) -> usize {
    let i = index_at(steps, t);
    if steps[i].0 == t {
        return i;
    }
    let free = steps[i].1;
    steps.insert(i + 1, (t, free));
    i + 1
}

/// Drops steps that ended at or before `origin`.
fn trim(steps: &mut Steps, origin: Time) {
    let i = index_at(steps, origin);
    if i > 0 {
        steps.drain(..i);
    }
}

/// Whether a change takes resources (a claim) or gives them back (a release).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Claim,
    Release,
}

/// Applies a claim or a release of `usage` over `[start, end)`, then merges equal
/// neighbours.
fn change(steps: &mut Steps, start: Time, end: Time, usage: &Resources, how: Change) {
    let i = split_at(steps, start);
    let j = split_at(steps, end);
    for step in &mut steps[i..j] {
        step.1 = match how {
            Change::Claim => step.1.minus(usage),
            Change::Release => step.1.plus(usage),
        };
    }
    let hi = j.min(steps.len() - 1);
    let mut k = hi;
    while k >= i.max(1) {
        if steps[k].1 == steps[k - 1].1 {
            steps.remove(k);
        }
        k -= 1;
    }
}

impl Profile {
    /// A profile in which every node of `cluster` is wholly free forever.
    pub fn new(cluster: &Cluster) -> Self {
        let mut p = Profile {
            attrs: Vec::new(),
            attr_of: Vec::with_capacity(cluster.nodes.len()),
            class_of: Vec::new(),
            classes: Vec::new(),
            free_ids: Vec::new(),
            lookup: HashMap::default(),
            origin: -NEVER,
            advances: 0,
        };
        let mut attr_ids: HashMap<NodeAttr, AttrId> = HashMap::default();
        let mut members: Vec<Vec<NodeId>> = Vec::new();
        for i in 0..cluster.nodes.len() {
            let node = NodeId(i as u32);
            let attr = NodeAttr::of(cluster, node);
            let id = *attr_ids.entry(attr.clone()).or_insert_with(|| {
                p.attrs.push(attr);
                members.push(Vec::new());
                (p.attrs.len() - 1) as AttrId
            });
            p.attr_of.push(id);
            members[id as usize].push(node);
        }
        p.class_of = vec![0; cluster.nodes.len()];
        for (a, nodes) in members.into_iter().enumerate() {
            let steps = vec![(-NEVER, p.attrs[a].capacity)];
            let cid = p.find_or_create(a as AttrId, steps);
            for &n in &nodes {
                p.class_of[n.index()] = cid;
            }
            p.classes[cid as usize].members = nodes.into_iter().collect();
        }
        p
    }

    /// Re-reads a node's attributes (after its state changed) and moves it accordingly.
    pub fn refresh_node(&mut self, cluster: &Cluster, node: NodeId) {
        let attr = NodeAttr::of(cluster, node);
        let id = match self.attrs.iter().position(|a| *a == attr) {
            Some(i) => i as AttrId,
            None => {
                self.attrs.push(attr);
                (self.attrs.len() - 1) as AttrId
            }
        };
        self.attr_of[node.index()] = id;
        let old = self.class_of[node.index()];
        let steps = self.classes[old as usize].steps.clone();
        let new = self.find_or_create(id, steps);
        self.move_node(node, new);
        self.retire_if_empty(old);
    }

    /// A node joined `cluster` (the last of its nodes): wholly free forever.
    pub fn add_node(&mut self, cluster: &Cluster) {
        let node = NodeId(self.attr_of.len() as u32);
        let id = self.attr_id(NodeAttr::of(cluster, node));
        self.attr_of.push(id);
        let cid = self.find_or_create(id, vec![(-NEVER, self.attrs[id as usize].capacity)]);
        self.class_of.push(cid);
        self.classes[cid as usize].members.insert(node);
    }

    /// Node `node`, on which nothing is claimed, as `cluster` now describes it (its
    /// capacity may have changed): wholly free forever.
    pub fn reset_node(&mut self, cluster: &Cluster, node: NodeId) {
        let id = self.attr_id(NodeAttr::of(cluster, node));
        self.attr_of[node.index()] = id;
        let old = self.class_of[node.index()];
        let new = self.find_or_create(id, vec![(-NEVER, self.attrs[id as usize].capacity)]);
        self.move_node(node, new);
        self.retire_if_empty(old);
    }

    fn attr_id(&mut self, attr: NodeAttr) -> AttrId {
        match self.attrs.iter().position(|a| *a == attr) {
            Some(i) => i as AttrId,
            None => {
                self.attrs.push(attr);
                (self.attrs.len() - 1) as AttrId
            }
        }
    }

    fn find_or_create(&mut self, attr: AttrId, mut steps: Steps) -> ClassId {
        trim(&mut steps, self.origin);
        let hash = hash_of(attr, &steps);
        if let Some(ids) = self.lookup.get(&hash) {
            for &id in ids {
                let c = &self.classes[id as usize];
                if c.attr == attr && c.steps == steps {
                    return id;
                }
            }
        }
        let class = Class {
            attr,
            steps,
            members: BTreeSet::new(),
            hash,
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.classes[id as usize] = class;
                id
            }
            None => {
                self.classes.push(class);
                (self.classes.len() - 1) as ClassId
            }
        };
        self.lookup.entry(hash).or_default().push(id);
        id
    }

    fn move_node(&mut self, node: NodeId, to: ClassId) {
        let from = self.class_of[node.index()];
        if from == to {
            return;
        }
        self.classes[from as usize].members.remove(&node);
        self.classes[to as usize].members.insert(node);
        self.class_of[node.index()] = to;
    }

    fn retire_if_empty(&mut self, id: ClassId) {
        let c = &mut self.classes[id as usize];
        if !c.members.is_empty() || c.steps.is_empty() {
            return;
        }
        if let Some(ids) = self.lookup.get_mut(&c.hash) {
            ids.retain(|&x| x != id);
            if ids.is_empty() {
                self.lookup.remove(&c.hash);
            }
        }
        c.steps = Vec::new(); // marks the slot dead
        self.free_ids.push(id);
    }

    /// The earliest time still asked about (the last [`Profile::advance`]).
    pub fn origin(&self) -> Time {
        self.origin
    }

    /// Declares that no time before `now` will be asked about again.
    pub fn advance(&mut self, now: Time) {
        if now <= self.origin {
            return;
        }
        self.origin = now;
        self.advances += 1;
        if self.advances.is_multiple_of(512) {
            self.normalise();
        }
    }

    /// Trims every class to the origin and merges classes that became equal.
    fn normalise(&mut self) {
        let live: Vec<ClassId> = (0..self.classes.len() as ClassId)
            .filter(|&id| !self.classes[id as usize].steps.is_empty())
            .collect();
        self.lookup.clear();
        for id in live {
            let c = &mut self.classes[id as usize];
            trim(&mut c.steps, self.origin);
            c.hash = hash_of(c.attr, &c.steps);
            let (hash, attr) = (c.hash, c.attr);
            let twin = self.lookup.get(&hash).and_then(|ids| {
                ids.iter().copied().find(|&o| {
                    let oc = &self.classes[o as usize];
                    oc.attr == attr && oc.steps == self.classes[id as usize].steps
                })
            });
            match twin {
                Some(keep) => {
                    let members = std::mem::take(&mut self.classes[id as usize].members);
                    for &n in &members {
                        self.class_of[n.index()] = keep;
                    }
                    self.classes[keep as usize].members.extend(members);
                    self.classes[id as usize].steps = Vec::new();
                    self.free_ids.push(id);
                }
                None => self.lookup.entry(hash).or_default().push(id),
            }
        }
    }

    /// Claims or releases usage over `[start, end)` for every share of an allocation, moving each node once per distinct (class, usage).
    fn change_all(&mut self, allocs: &[NodeAlloc], start: Time, end: Time, how: Change) {
        // The past is trimmed away: a change reaching back before the origin (an
        // overrun stretched long after its end) starts there.
        let start = start.max(self.origin);
        if end <= start {
            return;
        }
        let whole = self.whole_classes(allocs);
        let mut done: Vec<(ClassId, Resources, ClassId)> = Vec::new();
        for a in allocs {
            let old = self.class_of[a.node.index()];
            let new = match done.iter().find(|(o, u, _)| *o == old && *u == a.usage) {
                Some(&(_, _, n)) => n,
                None => {
                    let mut steps = self.classes[old as usize].steps.clone();
                    trim(&mut steps, self.origin);
                    change(&mut steps, start, end, &a.usage, how);
                    let attr = self.classes[old as usize].attr;
                    // (Only while no other node joined it in this change.)
                    let in_place = whole
                        .get(&old)
                        .is_some_and(|&n| n == self.classes[old as usize].members.len());
                    let n = if in_place {
                        self.restep(old, steps)
                    } else {
                        self.find_or_create(attr, steps)
                    };
                    done.push((old, a.usage, n));
                    n
                }
            };
            self.move_node(a.node, new);
        }
        for (old, _, _) in done {
            self.retire_if_empty(old);
        }
    }

    /// The classes all of whose nodes `allocs` changes alike (each member once, with
    /// one usage), with their sizes. Such a class can change its steps where it is
    /// instead of moving its nodes one by one (a reservation over a whole partition).
    fn whole_classes(&self, allocs: &[NodeAlloc]) -> HashMap<ClassId, usize> {
        let mut whole = HashMap::default();
        if allocs.len() < 2 {
            return whole;
        }
        // Per class: the usage of its first share, whether all had it, its nodes.
        let mut seen: HashMap<ClassId, (Resources, bool, Vec<NodeId>)> = HashMap::default();
        for a in allocs {
            let e =
                seen.entry(self.class_of[a.node.index()])
                    .or_insert((a.usage, true, Vec::new()));
            e.1 &= e.0 == a.usage;
            e.2.push(a.node);
        }
        for (c, (_, alike, mut nodes)) in seen {
            let size = self.classes[c as usize].members.len();
            if !alike || size < 2 || nodes.len() != size {
                continue;
            }
            // A node named twice would leave another member out while the count matches.
            nodes.sort_unstable();
            nodes.dedup();
            if nodes.len() == size {
                whole.insert(c, size);
            }
        }
        whole
    }

    /// Class `id`, all of whose nodes change alike, now has `steps`: it keeps its
    /// members and changes in place, unless a class of the same attributes has those
    /// steps already (then that one, which the nodes join).
    fn restep(&mut self, id: ClassId, mut steps: Steps) -> ClassId {
        trim(&mut steps, self.origin);
        let attr = self.classes[id as usize].attr;
        let hash = hash_of(attr, &steps);
        if let Some(ids) = self.lookup.get(&hash) {
            for &other in ids {
                let c = &self.classes[other as usize];
                if other != id && c.attr == attr && c.steps == steps {
                    return other;
                }
            }
        }
        let old_hash = self.classes[id as usize].hash;
        if let Some(ids) = self.lookup.get_mut(&old_hash) {
            ids.retain(|&x| x != id);
            if ids.is_empty() {
                self.lookup.remove(&old_hash);
            }
        }
        let c = &mut self.classes[id as usize];
        c.steps = steps;
        c.hash = hash;
        self.lookup.entry(hash).or_default().push(id);
        id
    }

    /// Takes `usage` from `node` over `[start, end)`. The caller has checked that it fits
    /// (debug builds verify it: over-allocation is a bug).
    pub fn claim(&mut self, node: NodeId, start: Time, end: Time, usage: &Resources) {
        let a = NodeAlloc::new(node, 0, *usage);
        self.change_all(std::slice::from_ref(&a), start, end, Change::Claim);
    }

    /// Gives `usage` back to `node` over `[start, end)` (a job ended early, a
    /// reservation was withdrawn).
    pub fn release(&mut self, node: NodeId, start: Time, end: Time, usage: &Resources) {
        let a = NodeAlloc::new(node, 0, *usage);
        self.change_all(std::slice::from_ref(&a), start, end, Change::Release);
    }

    /// Claims every node share of an allocation over `[start, end)`.
    pub fn claim_all(&mut self, allocs: &[NodeAlloc], start: Time, end: Time) {
        self.change_all(allocs, start, end, Change::Claim);
    }

    /// Releases every node share of an allocation over `[start, end)`.
    pub fn release_all(&mut self, allocs: &[NodeAlloc], start: Time, end: Time) {
        self.change_all(allocs, start, end, Change::Release);
    }

    fn steps_of(&self, node: NodeId) -> &Steps {
        &self.classes[self.class_of[node.index()] as usize].steps
    }

    /// What `node` has free at time `t`.
    pub fn free_at(&self, node: NodeId, t: Time) -> Resources {
        let steps = self.steps_of(node);
        steps[index_at(steps, t)].1
    }

    /// How many of `req`'s tasks `node` can host throughout `[start, end)`: the least,
    /// over the steps of that window, of what each step's free resources allow (see
    /// [`crate::select::max_tasks_on`]). Not the same as hosting on
    /// [`Profile::free_during`]'s component-wise minimum when the node keeps processors
    /// for its free GPUs (`RestrictedCoresPerGPU`): fewer free GPUs would keep fewer.
    pub fn tasks_during(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        node: NodeId,
        start: Time,
        end: Time,
    ) -> u32 {
        let cap = cluster.node(node).capacity;
        let reserve = GpuReserve::of(cluster, node);
        let steps = self.steps_of(node);
        let mut i = index_at(steps, start);
        let mut k = max_tasks_on(req, &steps[i].1, &cap, reserve);
        i += 1;
        while i < steps.len() && steps[i].0 < end {
            k = k.min(max_tasks_on(req, &steps[i].1, &cap, reserve));
            i += 1;
        }
        k
    }

    /// How many distinct times the profile's steps begin at, over every node in use:
    /// the size of its table (what Slurm's backfill reports as its "table size").
    pub fn distinct_times(&self) -> usize {
        let used: BTreeSet<ClassId> = self.class_of.iter().copied().collect();
        let mut times: Vec<Time> = used
            .into_iter()
            .flat_map(|c| self.classes[c as usize].steps.iter().map(|s| s.0))
            .collect();
        times.sort_unstable();
        times.dedup();
        times.len()
    }

    /// The times in `(start, end)` at which what `node` has free changes, ascending.
    pub fn changes_between(&self, node: NodeId, start: Time, end: Time) -> Vec<Time> {
        let steps = self.steps_of(node);
        let i = index_at(steps, start);
        steps[i + 1..]
            .iter()
            .map(|s| s.0)
            .take_while(|&t| t < end)
            .filter(|&t| t > start)
            .collect()
    }

    /// What `node` has free throughout `[start, end)` (component-wise minimum).
    pub fn free_during(&self, node: NodeId, start: Time, end: Time) -> Resources {
        let steps = self.steps_of(node);
        let mut i = index_at(steps, start);
        let mut free = steps[i].1;
        i += 1;
        while i < steps.len() && steps[i].0 < end {
            free = free.min(&steps[i].1);
            i += 1;
        }
        free
    }

    /// Number of node classes in use (see the module documentation).
    pub fn classes(&self) -> usize {
        self.classes
            .iter()
            .filter(|c| !c.members.is_empty())
            .count()
    }

    /// True when no node has any claim after the origin.
    pub fn is_empty(&self) -> bool {
        self.classes
            .iter()
            .filter(|c| !c.members.is_empty())
            .all(|c| {
                let i = index_at(&c.steps, self.origin);
                c.steps[i..]
                    .iter()
                    .all(|s| s.1 == self.attrs[c.attr as usize].capacity)
            })
    }

    /// The earliest time `t` in `[t0, horizon]` at which `req` fits on the nodes `filter`
    /// admits for all of `[t, t + duration)`, with the node shares it would get; `None`
    /// when no such time exists up to `horizon` (pass [`NEVER`] for no horizon).
    ///
    /// The nodes chosen follow [`crate::select::choose_nodes`]: a job that fits on one
    /// node goes to the best fit (fewest free processors at `t`, then lower weight, then
    /// lower id); a wider job takes the best-fitting runs of consecutive nodes that can
    /// host its tasks over the whole window ([`crate::select::choose_by_runs`]). Duration
    /// is in seconds (at least 1).
    pub fn earliest_start(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        filter: NodeFilter,
        duration: Secs,
        t0: Time,
        horizon: Time,
    ) -> Option<(Time, Vec<NodeAlloc>)> {
        let d = duration.max(1);
        if let Some(limit) = req
            .switches
            .filter(|l| l.holds_at(t0) && !cluster.switches.is_empty())
        {
            // Within the limit until it lapses; from then on, anywhere.
            let before = horizon.min(limit.until - 1);
            if let Some(found) = self.earliest_start_shaped(cluster, req, filter, d, t0, before) {
                return Some(found);
            }
            if limit.until > horizon {
                return None;
            }
            let mut any = req.clone();
            any.switches = None;
            return self.earliest_start_shaped(cluster, &any, filter, d, limit.until, horizon);
        }
        self.earliest_start_shaped(cluster, req, filter, d, t0, horizon)
    }

    /// [`Profile::earliest_start`] with the job's `--switches` limit applied at every
    /// time tried (the caller handles its lapse).
    fn earliest_start_shaped(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        filter: NodeFilter,
        d: Secs,
        t0: Time,
        horizon: Time,
    ) -> Option<(Time, Vec<NodeAlloc>)> {
        if req.lists_nodes() {
            // Whatever fits the named nodes fits the partition, so the partition's
            // earliest start (found by classes, fast) is a lower bound; from then on the
            // job is placed node by node. (Even a placement that keeps off the excluded
            // nodes is no answer: an excluded node splits a run of free nodes, and the
            // job may fit a run better elsewhere.)
            let mut open = req.clone();
            open.nodelist.clear();
            open.exclude.clear();
            let (t, _) = self.earliest_start(cluster, &open, filter, d, t0, horizon)?;
            return self.earliest_start_listed(cluster, req, filter, d, t, horizon);
        }
        let admitted: Vec<bool> = self
            .attrs
            .iter()
            .map(|a| {
                a.schedulable
                    && a.partitions.contains(&filter.partition)
                    && (filter.features_any == 0 || a.features & filter.features_any != 0)
                    && could_ever_host(req, &a.capacity)
            })
            .collect();
        let classes: Vec<ClassId> = (0..self.classes.len() as ClassId)
            .filter(|&id| {
                let c = &self.classes[id as usize];
                !c.members.is_empty() && admitted[c.attr as usize]
            })
            .collect();
        if req.max_nodes == 1 {
            return self.earliest_on_one_node(cluster, req, &classes, d, t0, horizon);
        }
        // Each class's hosting at t0 goes straight into the sums; later changes are
        // merged lazily in time order, so a job placed early costs little more than
        // one look at every class.
        let min_nodes = req.min_nodes.max(1) as u64;
        let mut hosting = vec![0u32; classes.len()];
        let mut size = Vec::with_capacity(classes.len());
        let mut iters = Vec::with_capacity(classes.len());
        let mut heap = BinaryHeap::with_capacity(classes.len());
        // sum: tasks hostable in all; count: nodes hosting at least one task; whole:
        // nodes hosting all of them (what a one-node job needs).
        let (mut sum, mut count, mut whole) = (0u64, 0u64, 0u64);
        let ntasks = req.ntasks;
        let ready = |sum: u64, count: u64, whole: u64| {
            if req.max_nodes == 1 {
                whole > 0
            } else {
                sum >= ntasks as u64 && count >= min_nodes
            }
        };
        for (ci, &id) in classes.iter().enumerate() {
            let c = &self.classes[id as usize];
            let attr = &self.attrs[c.attr as usize];
            let m = c.members.len() as u64;
            let it = Hosting::new(&c.steps, req, t0, d, attr.capacity, attr.reserve);
            let k = it.current();
            hosting[ci] = k;
            sum += k as u64 * m;
            count += (k > 0) as u64 * m;
            whole += (k >= ntasks) as u64 * m;
            if let Some(t) = it.next_time().filter(|&t| t <= horizon) {
                heap.push(Reverse((t, ci as u32)));
            }
            size.push(m);
            iters.push(it);
        }
        let mut t = t0;
        loop {
            if ready(sum, count, whole) {
                if let Some(chosen) = self.choose(cluster, req, &classes, &hosting, t) {
                    let allocs =
                        node_allocs(req, &chosen, |n| self.free_during(n, t, t + d), cluster);
                    return Some((t, allocs));
                }
            }
            let Reverse((next, _)) = *heap.peek()?;
            t = next;
            while let Some(&Reverse((at, ci))) = heap.peek() {
                if at != t {
                    break;
                }
                heap.pop();
                let it = &mut iters[ci as usize];
                it.advance_to(t);
                let k = it.current();
                let m = size[ci as usize];
                let old = std::mem::replace(&mut hosting[ci as usize], k);
                sum = sum + k as u64 * m - old as u64 * m;
                count = count + (k > 0) as u64 * m - (old > 0) as u64 * m;
                whole = whole + (k >= ntasks) as u64 * m - (old >= ntasks) as u64 * m;
                if let Some(nt) = it.next_time().filter(|&nt| nt <= horizon) {
                    heap.push(Reverse((nt, ci)));
                }
            }
        }
    }

    /// [`Profile::earliest_start`] for a job confined to one node: the earliest time at
    /// which some node hosts all its tasks. Each class is scanned on its own up to the
    /// best time found so far (a later class can only win by being earlier, or equally
    /// early and a better fit), so no merge across classes is needed.
    fn earliest_on_one_node(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        classes: &[ClassId],
        d: Secs,
        t0: Time,
        horizon: Time,
    ) -> Option<(Time, Vec<NodeAlloc>)> {
        // (start, placement rank at start): the node choice order at equal starts.
        let mut best: Option<(Time, PlacementKey)> = None;
        for &id in classes {
            let c = &self.classes[id as usize];
            let attr = &self.attrs[c.attr as usize];
            let mut it = Hosting::new(&c.steps, req, t0, d, attr.capacity, attr.reserve);
            let mut t = t0;
            loop {
                if t > horizon || best.is_some_and(|b| t > b.0) {
                    break;
                }
                if it.current() >= req.ntasks {
                    let node = *c.members.iter().next().expect("live classes have members");
                    let key = (
                        t,
                        cluster.placement_key(node, &c.steps[index_at(&c.steps, t)].1),
                    );
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                    break;
                }
                match it.next_time() {
                    Some(next) => {
                        it.advance_to(next);
                        t = next;
                    }
                    None => break,
                }
            }
        }
        let (t, (_, _, _, node)) = best?;
        let chosen = [(node, req.ntasks)];
        Some((
            t,
            node_allocs(req, &chosen, |n| self.free_during(n, t, t + d), cluster),
        ))
    }

    /// Node choice at `t` among classes (with the tasks each of their nodes can host),
    /// in the order of [`crate::select::choose_nodes`].
    fn choose(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        classes: &[ClassId],
        hosting: &[u32],
        t: Time,
    ) -> Option<Vec<(NodeId, u32)>> {
        struct Cand<'a> {
            tasks: u32,
            rank: PlacementKey,
            members: &'a BTreeSet<NodeId>,
        }
        let cands: Vec<Cand> = classes
            .iter()
            .zip(hosting)
            .filter(|(_, k)| **k > 0)
            .map(|(&id, &tasks)| {
                let c = &self.classes[id as usize];
                let free = c.steps[index_at(&c.steps, t)].1;
                let first = *c.members.iter().next().expect("live classes have members");
                Cand {
                    tasks,
                    rank: cluster.placement_key(first, &free),
                    members: &c.members,
                }
            })
            .collect();
        if req.min_nodes <= 1 {
            let first = |c: &Cand| *c.members.iter().next().expect("live classes have members");
            let best = cands
                .iter()
                .filter(|c| c.tasks >= req.ntasks)
                .min_by_key(|c| c.rank);
            if let Some(c) = best {
                return Some(vec![(first(c), req.ntasks)]);
            }
            if req.max_nodes == 1 {
                return None;
            }
        }
        // A job spanning nodes: which nodes depends on where each lies (runs of
        // consecutive nodes, switches), so the choice is made node by node.
        let mut all = Vec::new();
        for (&id, &tasks) in classes.iter().zip(hosting).filter(|(_, k)| **k > 0) {
            let c = &self.classes[id as usize];
            let free = c.steps[index_at(&c.steps, t)].1;
            for &n in &c.members {
                all.push(Candidate {
                    node: n,
                    tasks,
                    free_cpus: free.cpus,
                    weight: self.attrs[c.attr as usize].weight,
                    rank: cluster.placement_key(n, &free),
                    switch: cluster.leaf_switch(n),
                });
            }
        }
        crate::select::choose_nodes_in(req, &all, t, cluster.blocks.as_ref(), cluster.placement)
    }

    /// [`Profile::earliest_start`] for a job that names nodes (`-w`/`-x`): node by node,
    /// trying `t0` and every later time at which one of the nodes it may use gains
    /// resources. Such jobs are few and their node lists short.
    fn earliest_start_listed(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        filter: NodeFilter,
        d: Secs,
        t0: Time,
        horizon: Time,
    ) -> Option<(Time, Vec<NodeAlloc>)> {
        let nodes: Vec<NodeId> = (0..self.attr_of.len() as u32)
            .map(NodeId)
            .filter(|n| {
                let a = &self.attrs[self.attr_of[n.index()] as usize];
                a.schedulable
                    && a.partitions.contains(&filter.partition)
                    && (filter.features_any == 0 || a.features & filter.features_any != 0)
                    && req.exclude.binary_search(n).is_err()
            })
            .collect();
        let mut times: Vec<Time> = vec![t0];
        for &n in &nodes {
            times.extend(
                self.steps_of(n)
                    .iter()
                    .map(|s| s.0)
                    .filter(|&t| t > t0 && t <= horizon),
            );
        }
        times.sort_unstable();
        times.dedup();
        for t in times {
            let candidates: Vec<Candidate> = nodes
                .iter()
                .map(|&n| Candidate {
                    node: n,
                    tasks: self.tasks_during(cluster, req, n, t, t + d),
                    free_cpus: self.free_at(n, t).cpus,
                    weight: cluster.node(n).weight,
                    rank: cluster.placement_key(n, &self.free_at(n, t)),
                    switch: cluster.leaf_switch(n),
                })
                .collect();
            if let Some(chosen) = choose_listed(
                req,
                &candidates,
                t,
                cluster.blocks.as_ref(),
                cluster.placement,
            ) {
                let allocs = node_allocs(req, &chosen, |n| self.free_during(n, t, t + d), cluster);
                return Some((t, allocs));
            }
        }
        None
    }

    /// True when `req` fits on the nodes `filter` admits from `now` for `duration`
    /// seconds; the shares it would get. [`Profile::earliest_start`] with the horizon at
    /// `now`.
    pub fn fits_now(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        filter: NodeFilter,
        duration: Secs,
        now: Time,
    ) -> Option<Vec<NodeAlloc>> {
        self.earliest_start(cluster, req, filter, duration, now, now)
            .map(|(_, a)| a)
    }
}

/// Whether a node of capacity `cap` could host one task of `req` when idle, judged by
/// what cannot depend on what else runs there (the GRES asked per node, memory per
/// node or per task, one task's processors). Free resources never exceed the capacity,
/// so a node failing this hosts no task at any time ([`max_tasks_on`] is 0): leaving
/// it out of a search changes no answer, and spares looking at its steps (on a busy
/// machine, every node is a class of its own).
fn could_ever_host(req: &JobRequest, cap: &Resources) -> bool {
    let cpt = req.cpus_per_task.max(1);
    let mem = match req.mem {
        crate::job::MemRequest::PerNode(m) => m,
        crate::job::MemRequest::PerCpu(m) => m.saturating_mul(u64::from(cpt)),
    };
    cpt <= cap.cpus
        && mem <= cap.mem_mib
        && req
            .gres_per_node
            .iter()
            .zip(&cap.gres)
            .all(|(need, have)| need <= have)
}

/// How many tasks of a job one node of a class can host over the window `[t, t + d)`,
/// as `t` moves forward from `t0`: the minimum over the steps the window covers.
///
/// The window covers steps `lo..=hi`. It changes when `t` passes the end of step `lo`
/// (the front leaves) or when `t + d` passes the start of step `hi + 1` (a step enters);
/// [`Hosting::next_time`] is the earlier of the two. The minimum is kept as the window
/// moves: a step entering lowers it at once, and only a step leaving that held it makes
/// the window be scanned again. A long job on a busy node covers many steps; rescanning
/// them at every move made its search quadratic in them.
struct Hosting<'a> {
    steps: &'a Steps,
    req: &'a JobRequest,
    capacity: Resources,
    reserve: GpuReserve,
    d: Secs,
    lo: usize,
    hi: usize,
    /// Tasks hostable over steps `lo..=hi`.
    min: u32,
}

impl<'a> Hosting<'a> {
    fn new(
        steps: &'a Steps,
        req: &'a JobRequest,
        t0: Time,
        d: Secs,
        capacity: Resources,
        reserve: GpuReserve,
    ) -> Self {
        let lo = index_at(steps, t0);
        let mut hi = lo;
        while hi + 1 < steps.len() && steps[hi + 1].0 < t0 + d {
            hi += 1;
        }
        let mut h = Hosting {
            steps,
            req,
            capacity,
            reserve,
            d,
            lo,
            hi,
            min: 0,
        };
        h.min = h.scan();
        h
    }

    /// Tasks hostable during step `i`.
    fn at(&self, i: usize) -> u32 {
        max_tasks_on(self.req, &self.steps[i].1, &self.capacity, self.reserve)
    }

    /// Tasks hostable over the window, by a scan of its steps.
    fn scan(&self) -> u32 {
        (self.lo..=self.hi).map(|i| self.at(i)).min().unwrap_or(0)
    }

    /// Tasks hostable over the current window.
    fn current(&self) -> u32 {
        self.min
    }

    /// When the window next changes, if ever.
    fn next_time(&self) -> Option<Time> {
        let n = self.steps.len();
        let front = if self.lo + 1 < n {
            self.steps[self.lo + 1].0
        } else {
            NEVER
        };
        let back = if self.hi + 1 < n {
            self.steps[self.hi + 1].0 - self.d + 1
        } else {
            NEVER
        };
        let t = front.min(back);
        (t < NEVER).then_some(t)
    }

    /// Moves the window to start at `t`.
    fn advance_to(&mut self, t: Time) {
        let n = self.steps.len();
        let mut rescan = false;
        while self.lo + 1 < n && self.steps[self.lo + 1].0 <= t {
            rescan |= self.lo <= self.hi && self.at(self.lo) == self.min;
            self.lo += 1;
        }
        let mut entered = u32::MAX;
        while self.hi + 1 < n && self.steps[self.hi + 1].0 - self.d < t {
            self.hi += 1;
            if self.hi >= self.lo {
                entered = entered.min(self.at(self.hi));
            }
        }
        self.hi = self.hi.max(self.lo);
        self.min = if rescan {
            self.scan()
        } else {
            self.min.min(entered)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cpus: u32) -> Cluster {
        Cluster::homogeneous("p", 1, cpus)
    }

    fn one_node_job(procs: u32) -> JobRequest {
        JobRequest::procs(procs).on_one_node()
    }

    const ALL: NodeFilter = NodeFilter {
        partition: PartitionId(0),
        features_any: 0,
    };

    #[test]
    fn a_job_waits_for_enough_processors_to_be_free_for_its_whole_length() {
        // 10 processors. [0,100): 6 busy. [50,80): 3 more busy (a reservation).
        let c = pool(10);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 0, 100, &Resources::cpus(6));
        p.claim(NodeId(0), 50, 80, &Resources::cpus(3));
        let at = |procs, d, t0| {
            p.earliest_start(&c, &one_node_job(procs), ALL, d, t0, NEVER)
                .map(|(t, _)| t)
        };
        assert_eq!(at(4, 50, 0), Some(0), "4 free on [0,50)");
        assert_eq!(
            at(4, 51, 0),
            Some(80),
            "[50,80) has only 1 free; 4 are free again from 80"
        );
        assert_eq!(at(1, 200, 0), Some(0));
        assert_eq!(at(2, 10, 55), Some(80));
        assert_eq!(at(10, 1, 0), Some(100));
        assert_eq!(at(11, 1, 0), None, "never fits");
    }

    #[test]
    fn horizon_bounds_the_search() {
        let c = pool(4);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 0, 100, &Resources::cpus(4));
        let r = one_node_job(1);
        assert_eq!(p.earliest_start(&c, &r, ALL, 10, 0, 99), None);
        assert_eq!(
            p.earliest_start(&c, &r, ALL, 10, 0, 100).map(|x| x.0),
            Some(100)
        );
        assert!(p.fits_now(&c, &r, ALL, 10, 0).is_none());
        assert!(p.fits_now(&c, &r, ALL, 10, 100).is_some());
    }

    #[test]
    fn release_restores_the_profile_exactly() {
        let c = pool(8);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 10, 20, &Resources::cpus(3));
        p.claim(NodeId(0), 20, 30, &Resources::cpus(3));
        assert_eq!(
            p.steps_of(NodeId(0)).len(),
            3,
            "adjacent equal claims merge into one step"
        );
        p.release(NodeId(0), 10, 30, &Resources::cpus(3));
        assert!(p.is_empty());
        assert_eq!(p.classes(), 1);
    }

    #[test]
    fn nodes_in_the_same_situation_share_a_class() {
        let c = Cluster::homogeneous("p", 100, 4);
        let mut p = Profile::new(&c);
        assert_eq!(p.classes(), 1, "an idle homogeneous machine is one class");
        let job: Vec<NodeAlloc> = (10..42)
            .map(|i| NodeAlloc::new(NodeId(i), 4, Resources::cpus(4)))
            .collect();
        p.claim_all(&job, 0, 100);
        assert_eq!(
            p.classes(),
            2,
            "the 32 nodes of one job form a second class"
        );
        p.claim(NodeId(0), 0, 50, &Resources::cpus(1));
        assert_eq!(p.classes(), 3);
        p.release_all(&job, 0, 100);
        p.release(NodeId(0), 0, 50, &Resources::cpus(1));
        assert_eq!(p.classes(), 1, "freed nodes rejoin the idle class");
    }

    #[test]
    fn a_multi_node_job_starts_when_enough_nodes_are_free_together() {
        // Four 1-CPU nodes: n0 busy until 50, n1 until 30, n2 free, n3 busy [10, 40).
        let c = Cluster::homogeneous("p", 4, 1);
        let mut p = Profile::new(&c);
        let one = Resources::cpus(1);
        p.claim(NodeId(0), 0, 50, &one);
        p.claim(NodeId(1), 0, 30, &one);
        p.claim(NodeId(3), 10, 40, &one);
        let at = |procs, d| {
            p.earliest_start(&c, &JobRequest::procs(procs), ALL, d, 0, NEVER)
                .map(|(t, a)| (t, a.iter().map(|x| x.node.0).collect::<Vec<_>>()))
        };
        assert_eq!(
            at(2, 10),
            Some((0, vec![2, 3])),
            "n2 and n3 are free on [0,10)"
        );
        assert_eq!(
            at(2, 11),
            Some((30, vec![1, 2])),
            "n3 is taken at 10; n1 frees at 30"
        );
        assert_eq!(at(3, 5), Some((40, vec![1, 2, 3])));
        assert_eq!(at(4, 5), Some((50, vec![0, 1, 2, 3])));
    }

    #[test]
    fn nodes_of_interleaved_kinds_keep_their_own_class() {
        let mut c = Cluster::homogeneous("p", 3, 4);
        c.nodes[1].capacity.cpus = 8;
        let p = Profile::new(&c);
        let cpus: Vec<u32> = (0..3).map(|i| p.free_at(NodeId(i), 0).cpus).collect();
        assert_eq!(cpus, [4, 8, 4]);
        assert_eq!(p.classes(), 2);
    }

    #[test]
    fn down_nodes_and_other_partitions_are_not_used() {
        let mut c = Cluster::homogeneous("p", 4, 2);
        c.partitions.push(crate::cluster::Partition::new(
            "q",
            vec![NodeId(2), NodeId(3)],
        ));
        let mut p = Profile::new(&c);
        c.nodes[3].state = NodeState::Down;
        p.refresh_node(&c, NodeId(3));
        let q = NodeFilter {
            partition: PartitionId(1),
            features_any: 0,
        };
        let r = JobRequest::procs(2).on_one_node();
        let got = p.fits_now(&c, &r, q, 10, 0).unwrap();
        assert_eq!(got[0].node, NodeId(2));
        let mut wide = JobRequest::procs(4);
        wide.min_nodes = 2;
        assert!(
            p.earliest_start(&c, &wide, q, 10, 0, NEVER).is_none(),
            "n3 is down"
        );
    }

    #[test]
    fn the_window_minimum_changes_exactly_where_steps_enter_and_leave() {
        let c = pool(10);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 10, 20, &Resources::cpus(4));
        p.claim(NodeId(0), 30, 40, &Resources::cpus(8));
        let req = JobRequest::procs(10).on_one_node();
        let mut it = Hosting::new(
            p.steps_of(NodeId(0)),
            &req,
            0,
            5,
            c.nodes[0].capacity,
            GpuReserve::NONE,
        );
        let mut seen = vec![(0, it.current())];
        while let Some(t) = it.next_time() {
            it.advance_to(t);
            let k = it.current();
            if seen.last().unwrap().1 != k {
                seen.push((t, k));
            }
        }
        // window [t, t+5): hits [10,20) from t=6, leaves it at t=20, hits [30,40) from 26.
        assert_eq!(seen, vec![(0, 10), (6, 6), (20, 10), (26, 2), (40, 10)]);
    }

    #[test]
    fn the_kept_window_minimum_equals_a_scan_of_the_window() {
        // Many claims of random sizes on one node, and windows of every length from
        // shorter than a step to longer than all of them: wherever the window moves,
        // the minimum kept equals the minimum of its steps.
        let c = pool(64);
        let mut seed = 11u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % m
        };
        for round in 0..20 {
            let mut p = Profile::new(&c);
            for _ in 0..40 + round {
                let start = next(1_000) as Time;
                let len = 1 + next(100) as Time;
                let cpus = 1 + next(16) as u32;
                if p.free_during(NodeId(0), start, start + len).cpus >= cpus {
                    p.claim(NodeId(0), start, start + len, &Resources::cpus(cpus));
                }
            }
            let req = JobRequest::procs(64).on_one_node();
            for d in [1, 3, 17, 60, 250, 2_000] {
                let mut it = Hosting::new(
                    p.steps_of(NodeId(0)),
                    &req,
                    0,
                    d,
                    c.nodes[0].capacity,
                    GpuReserve::NONE,
                );
                let mut moves = 0;
                loop {
                    assert_eq!(
                        it.current(),
                        it.scan(),
                        "round {round}, d {d}, move {moves}"
                    );
                    let Some(t) = it.next_time() else { break };
                    it.advance_to(t);
                    moves += 1;
                }
                assert!(moves > 10, "the window moved through the steps");
            }
        }
    }

    #[test]
    fn a_fuller_profile_and_a_longer_job_start_no_earlier_and_the_search_may_begin_there() {
        // What the backfill pass relies on to search from an earlier answer: after more
        // claims, the same request for as long or longer starts no earlier than before,
        // and searching from that earlier answer finds exactly what searching from the
        // beginning finds (time and nodes), one-node and wide jobs alike.
        let c = Cluster::homogeneous("p", 8, 16);
        let filter = NodeFilter {
            partition: PartitionId(0),
            features_any: 0,
        };
        let mut seed = 5u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % m
        };
        let mut compared = 0;
        for round in 0..200 {
            let mut p = Profile::new(&c);
            let claim = |p: &mut Profile, next: &mut dyn FnMut(u64) -> u64| {
                let node = NodeId(next(8) as u32);
                let start = next(500) as Time;
                let end = start + 1 + next(300) as Time;
                let cpus = 1 + next(16) as u32;
                if p.free_during(node, start, end).cpus >= cpus {
                    p.claim(node, start, end, &Resources::cpus(cpus));
                }
            };
            // Every node busy at first, for a while.
            for n in 0..8 {
                let end = 50 + next(400) as Time;
                p.claim(NodeId(n), 0, end, &Resources::cpus(8 + next(8) as u32));
            }
            for _ in 0..30 {
                claim(&mut p, &mut next);
            }
            let mut req = JobRequest::procs(8 + next(90) as u32);
            if round % 2 == 0 {
                req = JobRequest::procs(4 + next(12) as u32).on_one_node();
            }
            let d1 = 1 + next(200) as Secs;
            let first = p
                .earliest_start(&c, &req, filter, d1, 0, 2_000)
                .map(|f| f.0);
            for _ in 0..10 {
                claim(&mut p, &mut next);
            }
            let d2 = d1 + next(200) as Secs;
            let from_start = p.earliest_start(&c, &req, filter, d2, 0, 2_000);
            match first {
                None => assert_eq!(from_start, None, "round {round}"),
                Some(t1) => {
                    assert!(
                        from_start.as_ref().is_none_or(|f| f.0 >= t1),
                        "round {round}"
                    );
                    let from_bound = p.earliest_start(&c, &req, filter, d2, t1, 2_000);
                    assert_eq!(from_bound, from_start, "round {round}");
                    compared += usize::from(t1 > 0);
                }
            }
        }
        assert!(
            compared > 50,
            "most searches began after the start: {compared}"
        );
    }

    #[test]
    fn a_change_to_every_node_of_a_class_changes_the_class_where_it_is() {
        // A reservation over the whole machine: 1,000 idle nodes, one class, held and
        // let go on every pass. The class changes its steps in place; no node moves.
        let c = Cluster::homogeneous("p", 1000, 4);
        let mut p = Profile::new(&c);
        let class = p.class_of[0];
        let all: Vec<NodeAlloc> = (0..1000)
            .map(|i| NodeAlloc::new(NodeId(i), 0, Resources::cpus(4)))
            .collect();
        p.claim_all(&all, 100, 200);
        assert_eq!(p.classes(), 1);
        assert!(p.class_of.iter().all(|&k| k == class), "no node moved");
        assert_eq!(p.free_at(NodeId(999), 150), Resources::cpus(0));
        assert_eq!(p.free_at(NodeId(0), 200), Resources::cpus(4));
        p.release_all(&all, 100, 200);
        assert!(p.is_empty());
        assert_eq!(p.classes(), 1);
    }

    #[test]
    fn nodes_that_join_a_class_during_a_change_are_not_changed_twice() {
        // n0, n1 hold 1 CPU on [10, 20); n2, n3 are idle. One change claims 1 CPU on
        // [10, 20) on all four, n2 and n3 first: they then look as n0 and n1 did and
        // join their class, which must not carry them into its own change as well.
        let c = Cluster::homogeneous("p", 4, 4);
        let mut p = Profile::new(&c);
        let one = Resources::cpus(1);
        p.claim_all(
            &[
                NodeAlloc::new(NodeId(0), 0, one),
                NodeAlloc::new(NodeId(1), 0, one),
            ],
            10,
            20,
        );
        let order = [2, 3, 0, 1].map(|i| NodeAlloc::new(NodeId(i), 0, one));
        p.claim_all(&order, 10, 20);
        for (n, free) in [(0, 2), (1, 2), (2, 3), (3, 3)] {
            assert_eq!(p.free_at(NodeId(n), 15), Resources::cpus(free), "n{n}");
        }
        assert_eq!(p.classes(), 2);
        p.release_all(&order, 10, 20);
        p.release(NodeId(0), 10, 20, &one);
        p.release(NodeId(1), 10, 20, &one);
        assert!(p.is_empty());
        assert_eq!(p.classes(), 1);
    }
}
