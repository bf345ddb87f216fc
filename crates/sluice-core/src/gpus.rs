//! The GPU book: which GPUs, and which shards of which GPU, every running job holds.
//!
//! Node selection and the availability profile count GPUs by type and shards by node,
//! which keeps them fast (nodes in the same situation share a class). Which GPU a job
//! gets matters only when it starts, and is decided here at that moment
//! ([`GpuBook::choices`], tried in order by the scheduler):
//!
//! - **Whole GPUs**: among the node's free GPUs (used neither whole nor by shards), the
//!   set [`crate::gpu_pick::pick_gpus`] chooses: the types counted for the job there,
//!   the most NVLinks inside the set, linked groups left intact for others.
//! - **Shards** (`gres/shard`): from GPUs already shared whenever they have room
//!   (Slurm's default, busy sharing devices first, which keeps whole GPUs whole): one
//!   such GPU when one has room — the one whose sharing lasts past the job's end
//!   anyway, then the one with the fewest shards left (best fit) — else the room left
//!   on several of them; only then a free GPU, the one `pick_gpus` would give a
//!   one-GPU job (so that an intact linked pair stays intact), and, when no GPU has
//!   room alone, several GPUs. Slurm would keep a job no single GPU has room for
//!   waiting; here the counts that let it start are the node's, not a GPU's. Under
//!   the GPU-aware best fit, a one-node job asking only shards goes first to the node
//!   of the shared GPU, cluster-wide, whose room it fills most tightly
//!   ([`GpuBook::shared_room`]), so that the room left elsewhere stays in one piece.
//! - **An exclusive job**: every GPU of the node, whole.
//!
//! **What keeps the counts true.** A GPU used whole cannot lend its shards, and a GPU
//! with shards in use cannot be given whole. So a GPU in use carries, beyond what its
//! jobs asked, a *side claim* ([`GpuBook::side`]): a GPU used whole holds its shards, a
//! shared GPU its `gpu` unit (and its `gpu:TYPE` one), from the moment it is taken until
//! the last of its jobs' claims ends. With those on the profile, the backfill plan and
//! the free-node index (`side_claims.rs` keeps them there), a node's free `gpu` count
//! is exactly its GPUs nobody uses, and its free `shard` count exactly the free shards
//! of the GPUs not used whole: whatever fits the counts now finds its GPUs. Plans of
//! pending jobs do not know which GPU they will get and carry no side claims; a start
//! checks that its own fit, as they may collide with planned starts of other jobs.
//!
//! Architecture invariant: data and choices only. The book never touches the profile
//! or the free-node index; the scheduler does, from what the book says.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Cluster, Gpu};
use crate::gpu_pick::{pick_gpus, GpuDemand};
use crate::ids::{JobId, NodeId};
use crate::job::NodeAlloc;
use crate::time::Time;
use crate::tres::{GresSlot, Resources};

/// How one GPU is used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Use {
    /// Nobody uses it.
    #[default]
    Free,
    /// One job uses it whole. `side`: its shards are held on the job's account beyond
    /// its own usage (not for an exclusive job, whose usage is the whole node).
    Whole { job: JobId, side: bool },
    /// Jobs hold shards of it: how many each.
    Shared(BTreeMap<JobId, u32>),
}

/// One node's GPUs.
#[derive(Clone, Debug, Default)]
struct NodeGpus {
    /// By index, as [`Cluster::gpus_of`] lists them.
    devices: Vec<Gpu>,
    /// Per GPU, the `gpu:TYPE` slot of its type.
    typed: Vec<Option<GresSlot>>,
    uses: Vec<Use>,
}

/// One way to place a job's GPUs on a node: whole GPUs, and (GPU, shards).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) gpus: Vec<u32>,
    pub(crate) shards: Vec<(u32, u32)>,
}

/// Every node's GPUs and who uses them, with the side claims held for them.
#[derive(Clone, Debug, Default)]
pub(crate) struct GpuBook {
    /// The untyped `gpu` slot, if the cluster has GPUs.
    gpu: Option<GresSlot>,
    /// The `shard` slot, if the cluster has shards.
    shard: Option<GresSlot>,
    /// The typed `gpu:TYPE` slots, with their type names.
    types: Vec<(GresSlot, String)>,
    /// Per node, by [`NodeId`].
    nodes: Vec<NodeGpus>,
    /// Side claims held now, per (node, GPU): what they hold and until when (see the
    /// module docs). Kept by the scheduler (`side_claims.rs`).
    pub(crate) held: BTreeMap<(NodeId, u32), (Resources, Time)>,
    /// Per node, the most free shards on one of its shared GPUs, and on all of them
    /// together (0: none has any)...
    room: Vec<(u32, u32)>,
    /// ... and the nodes with some, by the second: where a shard job fits on several
    /// shared GPUs together ([`GpuBook::shared_room`]).
    by_total: BTreeSet<(u32, NodeId)>,
    /// Every shared GPU with free shards, by those shards, then by the room of its
    /// node's roomiest shared GPU: (free shards, node's room, node, GPU). Best fit on
    /// one GPU's room, cluster-wide, on the fullest node ([`GpuBook::shared_room`]).
    by_gpu_room: BTreeSet<(u32, u32, NodeId, u32)>,
    /// Per node, per GPU: its entry of `by_gpu_room` (0: none).
    gpu_room: Vec<Vec<u32>>,
}

impl GpuBook {
    /// The GPUs of `cluster`'s nodes, all free.
    pub(crate) fn new(cluster: &Cluster) -> Self {
        let gpu = cluster.gpu_slot();
        let types = gpu
            .map(|g| {
                cluster
                    .gres
                    .children(g)
                    .map(|c| {
                        let name = cluster.gres.name(c);
                        let t = name.split_once(':').map_or("", |(_, t)| t).to_string();
                        (c, t)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let nodes: Vec<NodeGpus> = (0..cluster.nodes.len() as u32)
            .map(|i| node_gpus(cluster, i))
            .collect();
        let room = vec![(0, 0); nodes.len()];
        let gpu_room = nodes.iter().map(|n| vec![0; n.devices.len()]).collect();
        GpuBook {
            gpu,
            shard: cluster.shard_slot(),
            types,
            nodes,
            held: BTreeMap::new(),
            room,
            by_total: BTreeSet::new(),
            by_gpu_room: BTreeSet::new(),
            gpu_room,
        }
    }

    /// A node joined `cluster` (the last of its nodes): its GPUs, all free.
    pub(crate) fn add_node(&mut self, cluster: &Cluster) {
        let i = self.nodes.len() as u32;
        self.nodes.push(node_gpus(cluster, i));
        self.room.push((0, 0));
        self.gpu_room
            .push(vec![0; self.nodes[i as usize].devices.len()]);
    }

    /// Node `node`'s GPUs as `cluster` now describes them (nothing runs there).
    pub(crate) fn reset_node(&mut self, cluster: &Cluster, node: NodeId) {
        self.nodes[node.index()] = node_gpus(cluster, node.0);
        let node_room = self.room[node.index()].0;
        for (g, r) in std::mem::take(&mut self.gpu_room[node.index()])
            .into_iter()
            .enumerate()
        {
            self.by_gpu_room.remove(&(r, node_room, node, g as u32));
        }
        self.gpu_room[node.index()] = vec![0; self.nodes[node.index()].devices.len()];
        self.update_room(node);
    }

    /// Whether a job taking `usage` on a node (`exclusive`: the whole node) needs GPUs
    /// chosen there.
    pub(crate) fn involved(&self, node: NodeId, usage: &Resources, exclusive: bool) -> bool {
        let n = &self.nodes[node.index()];
        if n.devices.is_empty() {
            return false;
        }
        exclusive
            || self.gpu.is_some_and(|g| usage.gres[g] > 0)
            || self.shard.is_some_and(|s| usage.gres[s] > 0)
    }

    /// Shards of GPU `g` of `node` not held by anyone (0 for a GPU used whole).
    fn free_shards(&self, node: NodeId, g: usize) -> u32 {
        let n = &self.nodes[node.index()];
        match &n.uses[g] {
            Use::Free => n.devices[g].shards,
            Use::Whole { .. } => 0,
            Use::Shared(m) => n.devices[g].shards.saturating_sub(m.values().sum()),
        }
    }

    /// The ways a job taking `usage` on `node` could get its GPUs there now, best
    /// first (see the module docs); empty when it cannot (the node's free GPUs do not
    /// match the counts, which the side claims keep from happening).
    pub(crate) fn choices(
        &self,
        node: NodeId,
        usage: &Resources,
        exclusive: bool,
        end: Time,
    ) -> Vec<Choice> {
        let n = &self.nodes[node.index()];
        if exclusive {
            if n.uses.iter().any(|u| *u != Use::Free) {
                return Vec::new();
            }
            return vec![Choice {
                gpus: (0..n.devices.len() as u32).collect(),
                shards: Vec::new(),
            }];
        }
        let whole = self.gpu.map_or(0, |g| usage.gres[g]);
        let mut gpus = Vec::new();
        if whole > 0 {
            let free: Vec<u32> = (0..n.devices.len() as u32)
                .filter(|&g| n.uses[g as usize] == Use::Free)
                .collect();
            match pick_gpus(&n.devices, &free, &self.demand(usage), None) {
                Some(set) => gpus = set,
                // The node's GPU types disagree with its counts (devices unlike
                // slurm.conf's): the lowest free indices, as many as counted.
                None if free.len() >= whole as usize => gpus = free[..whole as usize].to_vec(),
                None => return Vec::new(),
            }
        }
        let want = self.shard.map_or(0, |s| usage.gres[s]);
        if want == 0 {
            return vec![Choice {
                gpus,
                shards: Vec::new(),
            }];
        }
        self.shard_choices(node, want, &gpus, end)
            .into_iter()
            .map(|shards| Choice {
                gpus: gpus.clone(),
                shards,
            })
            .collect()
    }

    /// Where `want` shards of a job claiming until `end` could come from on `node`,
    /// best first, leaving `taken` (GPUs the same job uses whole) alone.
    fn shard_choices(
        &self,
        node: NodeId,
        want: u32,
        taken: &[u32],
        end: Time,
    ) -> Vec<Vec<(u32, u32)>> {
        let n = &self.nodes[node.index()];
        let count = n.devices.len();
        let usable = |g: usize| !taken.contains(&(g as u32)) && self.free_shards(node, g) > 0;
        let shared = |g: usize| matches!(n.uses[g], Use::Shared(_));
        // Shared GPUs with room: first those shared until the job's end anyway (it keeps
        // no GPU from being whole again any longer), then the tightest (best fit: what
        // is left stays in one piece for a larger job), then by index.
        let mut room: Vec<usize> = (0..count)
            .filter(|&g| usable(g) && shared(g) && self.free_shards(node, g) >= want)
            .collect();
        room.sort_by_key(|&g| {
            (
                !self.shared_until(node, g as u32, end),
                self.free_shards(node, g),
                g,
            )
        });
        let mut out: Vec<Vec<(u32, u32)>> =
            room.into_iter().map(|g| vec![(g as u32, want)]).collect();
        // The room left on several shared GPUs, the roomiest first: the job breaks no
        // whole GPU.
        let mut gaps: Vec<usize> = (0..count).filter(|&g| usable(g) && shared(g)).collect();
        gaps.sort_by_key(|&g| (std::cmp::Reverse(self.free_shards(node, g)), g));
        if out.is_empty() {
            out.extend(self.spread(node, want, &gaps));
        }
        let fresh: Vec<u32> = (0..count)
            .filter(|&g| usable(g) && !shared(g) && self.free_shards(node, g) >= want)
            .map(|g| g as u32)
            .collect();
        let one = GpuDemand {
            typed: Vec::new(),
            any: 1,
        };
        if let Some(g) = pick_gpus(&n.devices, &fresh, &one, None).and_then(|s| s.first().copied())
        {
            out.push(vec![(g, want)]);
        }
        if out.is_empty() {
            // No GPU has room alone: shared GPUs first, then free ones, by index.
            let mut order = gaps;
            order.extend((0..count).filter(|&g| usable(g) && !shared(g)));
            out.extend(self.spread(node, want, &order));
        }
        out
    }

    /// `want` shards taken from the GPUs `order` lists, in that order, as many from each
    /// as it has free; `None` when they do not have that many.
    fn spread(&self, node: NodeId, want: u32, order: &[usize]) -> Option<Vec<(u32, u32)>> {
        let mut left = want;
        let mut spread = Vec::new();
        for &g in order {
            if left == 0 {
                break;
            }
            let take = self.free_shards(node, g).min(left);
            spread.push((g as u32, take));
            left -= take;
        }
        spread.sort_unstable();
        (left == 0).then_some(spread)
    }

    /// The GPUs of each type `usage` counts (in which node selection has already turned
    /// an untyped request into typed counts): each typed slot's count, and what the
    /// untyped `gpu` slot counts beyond them as untyped GPUs.
    fn demand(&self, usage: &Resources) -> GpuDemand {
        let mut typed = Vec::new();
        let mut counted = 0u32;
        for (slot, name) in &self.types {
            let n = usage.gres[*slot];
            if n > 0 {
                typed.push((Some(name.clone()), n));
                counted = counted.saturating_add(n);
            }
        }
        let rest = self
            .gpu
            .map_or(0, |g| usage.gres[g])
            .saturating_sub(counted);
        if rest > 0 {
            typed.push((None, rest));
        }
        GpuDemand { typed, any: 0 }
    }

    /// Whether `choice` could be taken on `node` now: its whole GPUs free, its shards
    /// free on GPUs not used whole (a restored job's placement, from the caller's
    /// records).
    pub(crate) fn can_take(&self, node: NodeId, choice: &Choice) -> bool {
        let n = &self.nodes[node.index()];
        let count = n.devices.len();
        choice
            .gpus
            .iter()
            .all(|&g| (g as usize) < count && n.uses[g as usize] == Use::Free)
            && choice.shards.iter().all(|&(g, k)| {
                (g as usize) < count
                    && !choice.gpus.contains(&g)
                    && self.free_shards(node, g as usize) >= k
            })
    }

    /// Whether GPU `g` of `node` is shared, and its side claim lasts until `end` anyway.
    fn shared_until(&self, node: NodeId, g: u32, end: Time) -> bool {
        matches!(self.nodes[node.index()].uses[g as usize], Use::Shared(_))
            && self
                .held
                .get(&(node, g))
                .is_some_and(|&(_, until)| until >= end)
    }

    /// The nodes where `want` shards of a job claiming until `end` fit on GPUs already
    /// shared, breaking no whole GPU, best first: first those with a GPU that has room,
    /// shared until `end` anyway, then those with any GPU that has room, each by the
    /// room of the tightest such GPU, cluster-wide (best fit on one GPU's room: the
    /// room left stays in one piece for a larger job; among GPUs as tight, the one on
    /// the node whose roomiest shared GPU has least room, then by node); then those where
    /// their shared GPUs have room together, by that room, the tightest first. Each
    /// node once.
    pub(crate) fn shared_room(&self, want: u32, end: Time) -> impl Iterator<Item = NodeId> + '_ {
        let gpus = move || {
            self.by_gpu_room
                .range((want, 0, NodeId(0), 0)..)
                .map(|&(_, _, n, g)| (n, g))
        };
        let lasting = gpus()
            .filter(move |&(n, g)| self.shared_until(n, g, end))
            .map(|(n, _)| n);
        let others = gpus()
            .filter(move |&(n, g)| !self.shared_until(n, g, end))
            .map(|(n, _)| n);
        let together = self
            .by_total
            .range((want, NodeId(0))..)
            .map(|&(_, n)| n)
            .filter(move |n| self.room[n.index()].0 < want);
        let mut seen = BTreeSet::new();
        lasting
            .chain(others)
            .chain(together)
            .filter(move |&n| seen.insert(n))
    }

    /// Brings `node`'s entries of [`GpuBook::shared_room`] up to date.
    fn update_room(&mut self, node: NodeId) {
        let n = &self.nodes[node.index()];
        // Free shards per GPU (none on a GPU not shared).
        let per_gpu: Vec<u32> = (0..n.devices.len())
            .map(|g| {
                if matches!(n.uses[g], Use::Shared(_)) {
                    self.free_shards(node, g)
                } else {
                    0
                }
            })
            .collect();
        let room = (
            per_gpu.iter().copied().max().unwrap_or(0),
            per_gpu.iter().sum::<u32>(),
        );
        let old = std::mem::replace(&mut self.room[node.index()], room);
        for (g, &r) in per_gpu.iter().enumerate() {
            let was = std::mem::replace(&mut self.gpu_room[node.index()][g], r);
            if was != r || old.0 != room.0 {
                self.by_gpu_room.remove(&(was, old.0, node, g as u32));
                if r > 0 {
                    self.by_gpu_room.insert((r, room.0, node, g as u32));
                }
            }
        }
        if old.1 != room.1 {
            self.by_total.remove(&(old.1, node));
            if room.1 > 0 {
                self.by_total.insert((room.1, node));
            }
        }
    }

    /// Records that `job` holds what `a` names on its node.
    pub(crate) fn take(&mut self, job: JobId, a: &NodeAlloc, exclusive: bool) {
        let n = &mut self.nodes[a.node.index()];
        for &g in &a.gpus {
            debug_assert_eq!(n.uses[g as usize], Use::Free, "GPU {g} taken twice");
            n.uses[g as usize] = Use::Whole {
                job,
                side: !exclusive,
            };
        }
        for &(g, k) in &a.shards {
            let u = &mut n.uses[g as usize];
            match u {
                Use::Shared(m) => {
                    m.insert(job, k);
                }
                _ => {
                    debug_assert_eq!(*u, Use::Free, "GPU {g} used whole and shared");
                    *u = Use::Shared(BTreeMap::from([(job, k)]));
                }
            }
        }
        if !a.shards.is_empty() {
            self.update_room(a.node);
        }
    }

    /// Records that `job` no longer holds what `a` names on its node.
    pub(crate) fn release(&mut self, job: JobId, a: &NodeAlloc) {
        let n = &mut self.nodes[a.node.index()];
        for &g in &a.gpus {
            if matches!(n.uses[g as usize], Use::Whole { job: j, .. } if j == job) {
                n.uses[g as usize] = Use::Free;
            }
        }
        for &(g, _) in &a.shards {
            if let Use::Shared(m) = &mut n.uses[g as usize] {
                m.remove(&job);
                if m.is_empty() {
                    n.uses[g as usize] = Use::Free;
                }
            }
        }
        if !a.shards.is_empty() {
            self.update_room(a.node);
        }
    }

    /// What GPU `g` of `node` holds beyond its jobs' own usage, and which jobs hold it;
    /// `None` when it holds nothing (free, or used whole by an exclusive job or without
    /// shards).
    pub(crate) fn side(&self, node: NodeId, g: u32) -> Option<(Resources, Vec<JobId>)> {
        let n = &self.nodes[node.index()];
        let mut side = Resources::default();
        let jobs = match &n.uses[g as usize] {
            Use::Free => return None,
            Use::Whole { job, side: true } => {
                let (Some(s), k) = (self.shard, n.devices[g as usize].shards) else {
                    return None;
                };
                if k == 0 {
                    return None;
                }
                side.gres[s] = k;
                vec![*job]
            }
            Use::Whole { .. } => return None,
            Use::Shared(m) => {
                let g_slot = self.gpu?;
                side.gres[g_slot] = 1;
                if let Some(t) = n.typed[g as usize] {
                    side.gres[t] = 1;
                }
                m.keys().copied().collect()
            }
        };
        Some((side, jobs))
    }

    /// What the side claim of GPU `g` of `node` would hold once `choice` (not taken yet)
    /// uses it: its shards if it takes the GPU whole (and is not `exclusive`), its
    /// `gpu` unit if it is the first to share it; `None` if nothing new.
    pub(crate) fn side_if_taken(
        &self,
        node: NodeId,
        g: u32,
        choice: &Choice,
        exclusive: bool,
    ) -> Option<Resources> {
        let n = &self.nodes[node.index()];
        if n.uses[g as usize] != Use::Free {
            return None;
        }
        let mut side = Resources::default();
        if choice.gpus.contains(&g) {
            let s = self.shard.filter(|_| !exclusive)?;
            let k = n.devices[g as usize].shards;
            if k == 0 {
                return None;
            }
            side.gres[s] = k;
        } else {
            side.gres[self.gpu?] = 1;
            if let Some(t) = n.typed[g as usize] {
                side.gres[t] = 1;
            }
        }
        Some(side)
    }
}

/// Node `i`'s GPUs as `cluster` describes them, all free.
fn node_gpus(cluster: &Cluster, i: u32) -> NodeGpus {
    let devices = cluster.gpus_of(NodeId(i));
    let typed = devices
        .iter()
        .map(|d| {
            d.gpu_type
                .as_deref()
                .and_then(|t| cluster.gres.find("gpu", Some(t)))
        })
        .collect();
    let uses = vec![Use::Free; devices.len()];
    NodeGpus {
        devices,
        typed,
        uses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Node;

    /// One node of `gpus` plain GPUs with `shards` shards each.
    fn book(gpus: u32, shards: u32) -> (GpuBook, GresSlot, GresSlot) {
        let mut c = Cluster::default();
        let g = c.gres.slot_for("gpu", None).unwrap();
        let s = c.gres.slot_for("shard", None).unwrap();
        let mut n = Node::new("n", 8, 0);
        n.capacity.gres[g] = gpus;
        n.capacity.gres[s] = gpus * shards;
        c.nodes.push(n);
        (GpuBook::new(&c), g, s)
    }

    fn usage(slot: GresSlot, k: u32) -> Resources {
        let mut r = Resources::default();
        r.gres[slot] = k;
        r
    }

    fn on(gpus: Vec<u32>, shards: Vec<(u32, u32)>) -> NodeAlloc {
        let mut a = NodeAlloc::new(NodeId(0), 1, Resources::default());
        a.gpus = gpus;
        a.shards = shards;
        a
    }

    /// Shards go to a shared GPU with room before a free one, and to several only when
    /// none has room alone; a GPU partly shared is never given whole.
    #[test]
    fn shards_fill_shared_gpus_first_and_whole_gpus_skip_them() {
        let (mut b, g, s) = book(2, 4);
        let n = NodeId(0);
        assert_eq!(b.choices(n, &usage(s, 3), false, 0)[0].shards, vec![(0, 3)]);
        b.take(JobId(1), &on(vec![], vec![(0, 3)]), false);
        let c = b.choices(n, &usage(s, 1), false, 0);
        assert_eq!(c[0].shards, vec![(0, 1)], "the shared GPU first");
        assert_eq!(c[1].shards, vec![(1, 1)], "then a free one");
        assert_eq!(b.choices(n, &usage(s, 2), false, 0)[0].shards, vec![(1, 2)]);
        assert_eq!(b.choices(n, &usage(g, 1), false, 0)[0].gpus, vec![1]);
        assert!(b.choices(n, &usage(g, 2), false, 0).is_empty());
        b.take(JobId(2), &on(vec![], vec![(1, 3)]), false);
        assert_eq!(
            b.choices(n, &usage(s, 2), false, 0)[0].shards,
            vec![(0, 1), (1, 1)],
            "no GPU has room alone"
        );
        assert_eq!(
            b.side(n, 0),
            Some((usage(g, 1), vec![JobId(1)])),
            "a shared GPU holds its gpu unit"
        );
        b.release(JobId(1), &on(vec![], vec![(0, 3)]));
        assert_eq!(b.side(n, 0), None);
        b.take(JobId(3), &on(vec![0], vec![]), false);
        assert_eq!(
            b.side(n, 0),
            Some((usage(s, 4), vec![JobId(3)])),
            "a GPU used whole holds its shards"
        );
    }
}
