//! The availability profile: free resources of every node as a step function of time.
//!
//! Running jobs hold their nodes until their *expected* end (start + time limit);
//! reservations (planned starts of pending jobs) hold nodes over their planned
//! interval. Everything not claimed is free. Intervals are half-open, `[start, end)`:
//! a job ending at `t` frees its resources for a job starting at `t`.
//!
//! The one question schedulers ask is [`Profile::earliest_start`]: the earliest time
//! at or after `t0` at which a request fits for its whole duration, and on which nodes.
//! It is answered in one sweep over the steps of the candidate nodes — per node, a
//! sliding-window minimum gives how many tasks the node can host over `[t, t + d)` as a
//! function of `t`; merging those functions in time order finds the first `t` at which
//! the nodes together hold the job — so a query costs O(E log E) in the number E of
//! steps after `t0`, never a rescan of the profile per candidate time.

use std::collections::VecDeque;

use crate::cluster::Cluster;
use crate::ids::NodeId;
use crate::job::{JobRequest, NodeAlloc};
use crate::select::{choose_nodes, max_tasks, node_allocs, Candidate};
use crate::time::{Secs, Time, NEVER};
use crate::tres::Resources;

/// Free resources of one node over time: `steps[i].1` is free from `steps[i].0` until
/// `steps[i + 1].0` (the last step lasts forever). Steps are strictly increasing in time.
#[derive(Clone, Debug)]
struct Timeline {
    steps: Vec<(Time, Resources)>,
}

impl Timeline {
    fn new(capacity: Resources) -> Self {
        Timeline {
            steps: vec![(-NEVER, capacity)],
        }
    }

    /// Index of the step in force at `t`.
    fn index_at(&self, t: Time) -> usize {
        self.steps.partition_point(|(at, _)| *at <= t) - 1
    }

    /// Makes a step start exactly at `t`, returning its index.
    fn split_at(&mut self, t: Time) -> usize {
        let i = self.index_at(t);
        if self.steps[i].0 == t {
            return i;
        }
        let free = self.steps[i].1;
        self.steps.insert(i + 1, (t, free));
        i + 1
    }

    /// Merges each step in `lo..=hi` (clamped) with its predecessor when they are equal.
    fn coalesce(&mut self, lo: usize, hi: usize) {
        let hi = hi.min(self.steps.len() - 1);
        let lo = lo.max(1);
        let mut i = hi;
        while i >= lo {
            if self.steps[i].1 == self.steps[i - 1].1 {
                self.steps.remove(i);
            }
            i -= 1;
        }
    }

    /// Drops steps that ended at or before `origin`, keeping the one in force then.
    fn trim(&mut self, origin: Time) {
        let i = self.index_at(origin);
        if i > 0 {
            self.steps.drain(..i);
        }
    }
}

/// Free resources of every node of a cluster as step functions of time.
#[derive(Clone, Debug)]
pub struct Profile {
    timelines: Vec<Timeline>,
    /// Nothing before this time is ever asked about again; older steps are dropped
    /// lazily, when a node's timeline is next changed.
    origin: Time,
}

impl Profile {
    /// A profile in which every node of `cluster` is wholly free forever.
    pub fn new(cluster: &Cluster) -> Self {
        Profile {
            timelines: cluster
                .nodes
                .iter()
                .map(|n| Timeline::new(n.capacity))
                .collect(),
            origin: -NEVER,
        }
    }

    /// Declares that no time before `now` will be asked about again.
    pub fn advance(&mut self, now: Time) {
        self.origin = self.origin.max(now);
    }

    /// Takes `usage` from `node` over `[start, end)`. The caller has checked that it fits
    /// (debug builds verify it: over-allocation is a bug).
    pub fn claim(&mut self, node: NodeId, start: Time, end: Time, usage: &Resources) {
        if end <= start {
            return;
        }
        let origin = self.origin;
        let tl = &mut self.timelines[node.index()];
        tl.trim(origin);
        let i = tl.split_at(start);
        let j = tl.split_at(end);
        for step in &mut tl.steps[i..j] {
            step.1 = step.1.minus(usage);
        }
        tl.coalesce(i, j);
    }

    /// Gives `usage` back to `node` over `[start, end)` (a job ended early, a
    /// reservation was withdrawn).
    pub fn release(&mut self, node: NodeId, start: Time, end: Time, usage: &Resources) {
        if end <= start {
            return;
        }
        let origin = self.origin;
        let tl = &mut self.timelines[node.index()];
        tl.trim(origin);
        let i = tl.split_at(start);
        let j = tl.split_at(end);
        for step in &mut tl.steps[i..j] {
            step.1 = step.1.plus(usage);
        }
        tl.coalesce(i, j);
    }

    /// Claims every node share of an allocation over `[start, end)`.
    pub fn claim_all(&mut self, allocs: &[NodeAlloc], start: Time, end: Time) {
        for a in allocs {
            self.claim(a.node, start, end, &a.usage);
        }
    }

    /// Releases every node share of an allocation over `[start, end)`.
    pub fn release_all(&mut self, allocs: &[NodeAlloc], start: Time, end: Time) {
        for a in allocs {
            self.release(a.node, start, end, &a.usage);
        }
    }

    /// What `node` has free at time `t`.
    pub fn free_at(&self, node: NodeId, t: Time) -> Resources {
        let tl = &self.timelines[node.index()];
        tl.steps[tl.index_at(t)].1
    }

    /// What `node` has free throughout `[start, end)` (component-wise minimum).
    pub fn free_during(&self, node: NodeId, start: Time, end: Time) -> Resources {
        let tl = &self.timelines[node.index()];
        let mut i = tl.index_at(start);
        let mut free = tl.steps[i].1;
        i += 1;
        while i < tl.steps.len() && tl.steps[i].0 < end {
            free = free.min(&tl.steps[i].1);
            i += 1;
        }
        free
    }

    /// Number of steps over all nodes (a measure of the profile's size).
    pub fn len(&self) -> usize {
        self.timelines.iter().map(|t| t.steps.len()).sum()
    }

    /// True when no node has any claim.
    pub fn is_empty(&self) -> bool {
        self.timelines.iter().all(|t| t.steps.len() == 1)
    }

    /// The earliest time `t` in `[t0, horizon]` at which `req` fits on `candidates` for
    /// all of `[t, t + duration)`, with the node shares it would get; `None` when no
    /// such time exists up to `horizon` (pass [`NEVER`] for no horizon).
    ///
    /// Candidate nodes must be distinct; the choice among nodes that fit follows
    /// [`choose_nodes`]. Duration is in seconds, at least 1 is assumed.
    pub fn earliest_start(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        candidates: &[NodeId],
        duration: Secs,
        t0: Time,
        horizon: Time,
    ) -> Option<(Time, Vec<NodeAlloc>)> {
        let d = duration.max(1);
        let mut events: Vec<(Time, u32, u32)> = Vec::new();
        for (ci, &node) in candidates.iter().enumerate() {
            let cap = cluster.node(node).capacity;
            let tl = &self.timelines[node.index()];
            hosting_over_time(
                tl,
                t0,
                d,
                horizon,
                |free| max_tasks(req, free, &cap),
                |t, k| events.push((t, ci as u32, k)),
            );
        }
        events.sort_unstable();
        let min_nodes = req.min_nodes.max(1) as usize;
        let mut hosting = vec![0u32; candidates.len()];
        let (mut sum, mut count) = (0u64, 0usize);
        let mut i = 0;
        while i < events.len() {
            let t = events[i].0;
            while i < events.len() && events[i].0 == t {
                let (_, ci, k) = events[i];
                let old = std::mem::replace(&mut hosting[ci as usize], k);
                sum = sum + k as u64 - old as u64;
                count = count + (k > 0) as usize - (old > 0) as usize;
                i += 1;
            }
            if sum < req.ntasks as u64 || count < min_nodes {
                continue;
            }
            let cands: Vec<Candidate> = candidates
                .iter()
                .zip(&hosting)
                .filter(|(_, k)| **k > 0)
                .map(|(&node, &tasks)| Candidate {
                    node,
                    tasks,
                    free_cpus: self.free_at(node, t).cpus,
                    weight: cluster.node(node).weight,
                })
                .collect();
            if let Some(chosen) = choose_nodes(req, &cands) {
                let allocs = node_allocs(req, &chosen, |n| self.free_during(n, t, t + d), cluster);
                return Some((t, allocs));
            }
        }
        None
    }

    /// True when `req` fits on `candidates` from `now` for `duration` seconds; the shares
    /// it would get. Shorthand for [`Profile::earliest_start`] with the horizon at `now`.
    pub fn fits_now(
        &self,
        cluster: &Cluster,
        req: &JobRequest,
        candidates: &[NodeId],
        duration: Secs,
        now: Time,
    ) -> Option<Vec<NodeAlloc>> {
        self.earliest_start(cluster, req, candidates, duration, now, now)
            .map(|(_, a)| a)
    }
}

/// For one node, reports through `emit(t, k)` every change of `k(t)` = the minimum of
/// `tasks(free)` over the window `[t, t + d)`, for `t` from `t0` up to `horizon`
/// (the first report is at `t0`). A monotone deque gives the sliding minimum, so the
/// cost is linear in the number of steps the windows cover.
fn hosting_over_time(
    tl: &Timeline,
    t0: Time,
    d: Secs,
    horizon: Time,
    tasks: impl Fn(&Resources) -> u32,
    mut emit: impl FnMut(Time, u32),
) {
    let steps = &tl.steps;
    let n = steps.len();
    let at = |i: usize| steps[i].0;
    let mut lo = tl.index_at(t0);
    let mut hi = lo;
    let mut window: VecDeque<(usize, u32)> = VecDeque::new();
    let push = |window: &mut VecDeque<(usize, u32)>, i: usize| {
        let g = tasks(&steps[i].1);
        while window.back().is_some_and(|&(_, v)| v >= g) {
            window.pop_back();
        }
        window.push_back((i, g));
    };
    push(&mut window, lo);
    while hi + 1 < n && at(hi + 1) < t0 + d {
        hi += 1;
        push(&mut window, hi);
    }
    let mut last = window.front().map(|w| w.1).unwrap_or(0);
    emit(t0, last);
    loop {
        let next_front = if lo + 1 < n { at(lo + 1) } else { NEVER };
        let next_back = if hi + 1 < n {
            at(hi + 1) - d + 1
        } else {
            NEVER
        };
        let t = next_front.min(next_back);
        if t >= NEVER || t > horizon {
            return;
        }
        while lo + 1 < n && at(lo + 1) <= t {
            lo += 1;
        }
        while hi + 1 < n && at(hi + 1) - d < t {
            hi += 1;
            push(&mut window, hi);
        }
        while window.front().is_some_and(|&(i, _)| i < lo) {
            window.pop_front();
        }
        let m = window.front().map(|w| w.1).unwrap_or(0);
        if m != last {
            emit(t, m);
            last = m;
        }
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

    #[test]
    fn a_job_waits_for_enough_processors_to_be_free_for_its_whole_length() {
        // 10 processors. [0,100): 6 busy. [50,80): 3 more busy (a reservation).
        let c = pool(10);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 0, 100, &Resources::cpus(6));
        p.claim(NodeId(0), 50, 80, &Resources::cpus(3));
        let at = |procs, d, t0| {
            p.earliest_start(&c, &one_node_job(procs), &[NodeId(0)], d, t0, NEVER)
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
        assert_eq!(p.earliest_start(&c, &r, &[NodeId(0)], 10, 0, 99), None);
        assert_eq!(
            p.earliest_start(&c, &r, &[NodeId(0)], 10, 0, 100)
                .map(|x| x.0),
            Some(100)
        );
        assert!(p.fits_now(&c, &r, &[NodeId(0)], 10, 0).is_none());
        assert!(p.fits_now(&c, &r, &[NodeId(0)], 10, 100).is_some());
    }

    #[test]
    fn release_restores_the_profile_exactly() {
        let c = pool(8);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 10, 20, &Resources::cpus(3));
        p.claim(NodeId(0), 20, 30, &Resources::cpus(3));
        assert_eq!(p.len(), 3, "adjacent equal claims merge into one step");
        p.release(NodeId(0), 10, 30, &Resources::cpus(3));
        assert!(p.is_empty());
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
        let all: Vec<NodeId> = (0..4).map(NodeId).collect();
        let at = |procs, d| {
            p.earliest_start(&c, &JobRequest::procs(procs), &all, d, 0, NEVER)
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
    fn the_sliding_minimum_reports_every_change() {
        let c = pool(10);
        let mut p = Profile::new(&c);
        p.claim(NodeId(0), 10, 20, &Resources::cpus(4));
        p.claim(NodeId(0), 30, 40, &Resources::cpus(8));
        let tl = &p.timelines[0];
        let mut seen = vec![];
        hosting_over_time(tl, 0, 5, NEVER, |f| f.cpus, |t, k| seen.push((t, k)));
        // window [t, t+5): hits [10,20) from t=6, leaves it at t=20, hits [30,40) from 26.
        assert_eq!(seen, vec![(0, 10), (6, 6), (20, 10), (26, 2), (40, 10)]);
    }
}
