//! Which GPUs of a node a job gets, once the scheduler has decided how many of each
//! type it gets there.
//!
//! Node selection counts GPUs, per type ([`crate::select::usage_on_node`] turns an
//! untyped request into typed counts). The job, once started, needs device indices
//! (for `CUDA_VISIBLE_DEVICES` and device confinement): at the start the scheduler's
//! GPU book ([`crate::gpus`]) has [`pick_gpus`] choose them among the node's free GPUs, in the spirit of Slurm's GRES selection
//! (`gres_select`, `_pick_gres_topo`), which prefers GPUs whose `Cores=` lie near the
//! job's cores and, with `Links=`, the best-connected set.
//!
//! # Rules
//!
//! Among the sets of free GPUs that hold exactly the asked count of each type, the
//! chosen one is the best under these keys, each deciding only ties of the ones before:
//!
//! 1. **Links inside**: the most links (NVLinks, as gres.conf's `Links=` counts them)
//!    between pairs of chosen GPUs, so that a multi-GPU job talks over its fastest
//!    paths.
//! 2. **CPU locality**: the most overlap between the chosen GPUs' `Cores=` and the
//!    job's CPUs on the node, when those are known (a GPU without `Cores=` is near every
//!    core).
//! 3. **Links left**: the most links among the free GPUs the job leaves behind — best
//!    fit on link groups. A one-GPU job takes from a linked pair already broken rather
//!    than breaking an intact one, so that the next two-GPU job still finds a pair.
//! 4. **Lowest indices**: the lexicographically smallest list of indices.
//!
//! # Cost
//!
//! Every candidate set is scored when there are at most [`EXHAUSTIVE_LIMIT`] of them,
//! which covers every request on nodes of up to 16 GPUs. Beyond that a greedy seed
//! (GPU by GPU, the best under the same keys) is improved by single swaps while they
//! help, a bounded number of times: good, not guaranteed best.
//!
//! Architecture invariant: pure and deterministic, like the rest of the core. It does
//! not know which GPUs are free (the GPU book tracks indices) and does not change the
//! scheduler's counts.

/// Candidate sets scored one by one at most; above this [`pick_gpus`] searches greedily.
/// C(16, 8) = 12,870: every request on a node of 16 GPUs is searched exhaustively.
pub const EXHAUSTIVE_LIMIT: u64 = 20_000;

/// Improving swaps the greedy search makes at most.
const MAX_SWAPS: usize = 256;

pub use crate::cluster::Gpu;

/// How many GPUs of each type a job takes on one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuDemand {
    /// `(type, count)`: exactly `count` GPUs of that type (`None`: untyped GPUs). A
    /// type listed twice counts once, with its first count.
    pub typed: Vec<(Option<String>, u32)>,
    /// GPUs of any type, on top of `typed`.
    pub any: u32,
}

impl GpuDemand {
    /// GPUs asked in all.
    pub fn total(&self) -> u32 {
        let typed: u32 = self.classes().iter().map(|(_, n)| *n).sum();
        typed.saturating_add(self.any)
    }

    /// `typed` without repeated types.
    fn classes(&self) -> Vec<(&Option<String>, u32)> {
        let mut out: Vec<(&Option<String>, u32)> = Vec::new();
        for (t, n) in &self.typed {
            if !out.iter().any(|(u, _)| *u == t) {
                out.push((t, *n));
            }
        }
        out
    }
}

/// Chooses the GPUs a job gets on a node: `demand` among the `free` indices of `gpus`
/// (the node's GPUs, by index), knowing, where the caller does, the CPU (core) ids
/// `job_cpus` the job got on the node. See the [module](self) for the rules.
///
/// Returns the chosen indices in ascending order (empty for an empty demand), or
/// `None` when the free GPUs cannot meet the demand (too few of some type). Indices in
/// `free` past the end of `gpus` are ignored.
pub fn pick_gpus(
    gpus: &[Gpu],
    free: &[u32],
    demand: &GpuDemand,
    job_cpus: Option<&[u32]>,
) -> Option<Vec<u32>> {
    let k = demand.total() as usize;
    if k == 0 {
        return Some(Vec::new());
    }
    let mut free: Vec<usize> = free
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| i < gpus.len())
        .collect();
    free.sort_unstable();
    free.dedup();
    let node = Node::new(gpus, &free, demand, job_cpus);
    // The GPUs a job may get: those of a listed type, and with `any` every free one.
    let pool: Vec<usize> = free
        .iter()
        .copied()
        .filter(|&i| demand.any > 0 || node.class[i].is_some())
        .collect();
    if pool.len() < k
        || node
            .need
            .iter()
            .enumerate()
            .any(|(c, &n)| pool.iter().filter(|&&i| node.class[i] == Some(c)).count() < n)
    {
        return None;
    }
    let best = if binomial(pool.len() as u64, k as u64) <= EXHAUSTIVE_LIMIT {
        node.exhaustive(&pool, k)
    } else {
        node.greedy(&pool, k)
    }?;
    Some(best.into_iter().map(|i| i as u32).collect())
}

/// What the search knows about the node, precomputed.
struct Node {
    /// Links between GPUs `i` and `j`, symmetric, 0 on the diagonal.
    links: Vec<Vec<u64>>,
    /// Per GPU: how many of the job's CPUs are near it (0 for all when unknown).
    near: Vec<u64>,
    /// Per GPU: the index of its type in `need`, `None` when the demand lists it not.
    class: Vec<Option<usize>>,
    /// GPUs needed per listed type.
    need: Vec<usize>,
    /// The node's free GPUs, ascending.
    free: Vec<usize>,
}

/// A candidate set's score: (links inside, CPU locality, links left); larger is better.
type Score = (u64, u64, u64);

impl Node {
    fn new(gpus: &[Gpu], free: &[usize], demand: &GpuDemand, job_cpus: Option<&[u32]>) -> Self {
        let n = gpus.len();
        let said = |i: usize, j: usize| -> u64 {
            gpus[i]
                .links
                .as_ref()
                .and_then(|l| l.get(j))
                .map_or(0, |&v| v.max(0) as u64)
        };
        let links = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            0
                        } else {
                            said(i, j).max(said(j, i))
                        }
                    })
                    .collect()
            })
            .collect();
        let near = gpus
            .iter()
            .map(|g| match (job_cpus, &g.cores) {
                (None, _) => 0,
                (Some(cpus), None) => cpus.len() as u64,
                (Some(cpus), Some(cores)) => {
                    cpus.iter().filter(|c| cores.contains(c)).count() as u64
                }
            })
            .collect();
        let classes = demand.classes();
        let class = gpus
            .iter()
            .map(|g| classes.iter().position(|(t, _)| **t == g.gpu_type))
            .collect();
        Node {
            links,
            near,
            class,
            need: classes.iter().map(|(_, n)| *n as usize).collect(),
            free: free.to_vec(),
        }
    }

    /// Whether `set` holds at least the needed count of every listed type (its size
    /// being the demand's total, the rest is the `any` part).
    fn feasible(&self, set: &[usize]) -> bool {
        self.need
            .iter()
            .enumerate()
            .all(|(c, &n)| set.iter().filter(|&&i| self.class[i] == Some(c)).count() >= n)
    }

    fn score(&self, set: &[usize]) -> Score {
        let mut inside = 0;
        for (a, &i) in set.iter().enumerate() {
            for &j in &set[a + 1..] {
                inside += self.links[i][j];
            }
        }
        let near = set.iter().map(|&i| self.near[i]).sum();
        let rest: Vec<usize> = self
            .free
            .iter()
            .copied()
            .filter(|i| !set.contains(i))
            .collect();
        let mut left = 0;
        for (a, &i) in rest.iter().enumerate() {
            for &j in &rest[a + 1..] {
                left += self.links[i][j];
            }
        }
        (inside, near, left)
    }

    /// The best of all `k`-subsets of `pool` (ascending), visited in lexicographic
    /// order so that the first of equally good sets wins.
    fn exhaustive(&self, pool: &[usize], k: usize) -> Option<Vec<usize>> {
        let m = pool.len();
        let mut idx: Vec<usize> = (0..k).collect();
        let mut best: Option<(Score, Vec<usize>)> = None;
        let mut set = vec![0; k];
        loop {
            for (s, &p) in set.iter_mut().zip(&idx) {
                *s = pool[p];
            }
            if self.feasible(&set) {
                let score = self.score(&set);
                if best.as_ref().is_none_or(|(b, _)| score > *b) {
                    best = Some((score, set.clone()));
                }
            }
            // Next combination: the rightmost position that can move, then the rest
            // right behind it.
            let Some(p) = (0..k).rev().find(|&p| idx[p] < m - k + p) else {
                break;
            };
            idx[p] += 1;
            for q in p + 1..k {
                idx[q] = idx[q - 1] + 1;
            }
        }
        best.map(|(_, s)| s)
    }

    /// A greedy seed (GPU by GPU: most links to those chosen, nearest to the job's
    /// CPUs, fewest links to the free GPUs left, lowest index), then single swaps that
    /// improve the score, until none does or [`MAX_SWAPS`] were made.
    fn greedy(&self, pool: &[usize], k: usize) -> Option<Vec<usize>> {
        let mut set: Vec<usize> = Vec::with_capacity(k);
        let mut need = self.need.clone();
        while set.len() < k {
            let slack = k - set.len() - need.iter().sum::<usize>();
            let pick = pool
                .iter()
                .copied()
                .filter(|i| !set.contains(i))
                .filter(|&i| slack > 0 || self.class[i].is_some_and(|c| need[c] > 0))
                .max_by_key(|&i| {
                    let to_set: u64 = set.iter().map(|&j| self.links[i][j]).sum();
                    let to_rest: u64 = self
                        .free
                        .iter()
                        .filter(|j| !set.contains(j))
                        .map(|&j| self.links[i][j])
                        .sum();
                    (
                        to_set,
                        self.near[i],
                        std::cmp::Reverse(to_rest),
                        std::cmp::Reverse(i),
                    )
                })?;
            if let Some(c) = self.class[pick] {
                need[c] = need[c].saturating_sub(1);
            }
            set.push(pick);
        }
        set.sort_unstable();
        let mut score = self.score(&set);
        for _ in 0..MAX_SWAPS {
            let mut better = None;
            'search: for a in 0..set.len() {
                for &g in pool.iter().filter(|g| !set.contains(g)) {
                    let mut next = set.clone();
                    next[a] = g;
                    next.sort_unstable();
                    if !self.feasible(&next) {
                        continue;
                    }
                    let s = self.score(&next);
                    if s > score {
                        better = Some((s, next));
                        break 'search;
                    }
                }
            }
            match better {
                Some((s, next)) => {
                    score = s;
                    set = next;
                }
                None => break,
            }
        }
        Some(set)
    }
}

/// C(n, k), saturating at `u64::MAX`.
fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut c: u64 = 1;
    for i in 0..k {
        // c * (n - i) / (i + 1) stays exact: c is C(n, i) and C(n, i + 1) an integer.
        c = match c.checked_mul(n - i) {
            Some(v) => v / (i + 1),
            None => return u64::MAX,
        };
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(t: &str) -> Gpu {
        Gpu {
            gpu_type: Some(t.into()),
            ..Gpu::default()
        }
    }

    fn untyped(n: usize) -> Vec<Gpu> {
        vec![Gpu::default(); n]
    }

    /// `n` GPUs where each pair of `pairs` has `links` NVLinks (`Links=` rows).
    fn linked(n: usize, pairs: &[(usize, usize)], links: i32) -> Vec<Gpu> {
        (0..n)
            .map(|i| {
                let row = (0..n)
                    .map(|j| {
                        if i == j {
                            -1
                        } else if pairs.contains(&(i, j)) || pairs.contains(&(j, i)) {
                            links
                        } else {
                            0
                        }
                    })
                    .collect();
                Gpu {
                    links: Some(row),
                    ..Gpu::default()
                }
            })
            .collect()
    }

    fn of_type(t: Option<&str>, n: u32) -> GpuDemand {
        GpuDemand {
            typed: vec![(t.map(str::to_string), n)],
            any: 0,
        }
    }

    fn any(n: u32) -> GpuDemand {
        GpuDemand {
            typed: Vec::new(),
            any: n,
        }
    }

    fn pick(gpus: &[Gpu], free: &[u32], demand: &GpuDemand) -> Option<Vec<u32>> {
        pick_gpus(gpus, free, demand, None)
    }

    /// a100 at 0 and 1, v100 at 2 and 3: a job gets exactly the types it asked for.
    #[test]
    fn a_typed_request_gets_gpus_of_its_type_on_a_mixed_node() {
        let node = vec![typed("a100"), typed("a100"), typed("v100"), typed("v100")];
        let all = [0, 1, 2, 3];
        assert_eq!(pick(&node, &all, &of_type(Some("v100"), 1)), Some(vec![2]));
        assert_eq!(
            pick(&node, &all, &of_type(Some("v100"), 2)),
            Some(vec![2, 3])
        );
        assert_eq!(pick(&node, &all, &of_type(Some("a100"), 1)), Some(vec![0]));
        let both = GpuDemand {
            typed: vec![(Some("v100".into()), 1), (Some("a100".into()), 1)],
            any: 0,
        };
        assert_eq!(pick(&node, &all, &both), Some(vec![0, 2]));
        // One a100 busy, the other taken next; no v100 offered instead.
        assert_eq!(
            pick(&node, &[1, 2, 3], &of_type(Some("a100"), 1)),
            Some(vec![1])
        );
        assert_eq!(pick(&node, &[1, 2, 3], &of_type(Some("a100"), 2)), None);
        // This node has no untyped GPUs; "any" takes whatever is free.
        assert_eq!(pick(&node, &all, &of_type(None, 1)), None);
        assert_eq!(pick(&node, &[2, 3], &any(1)), Some(vec![2]));
        // Nothing asked, nothing given.
        assert_eq!(pick(&node, &all, &any(0)), Some(vec![]));
    }

    /// Pairs (0,2) and (1,3) are NVLinked: a 2-GPU job gets a linked pair, not the two
    /// lowest indices; with GPU 0 busy of pairs (0,1) and (2,3), it gets 2+3, not 1+2.
    #[test]
    fn a_two_gpu_job_gets_a_linked_pair() {
        let crossed = linked(4, &[(0, 2), (1, 3)], 4);
        assert_eq!(pick(&crossed, &[0, 1, 2, 3], &any(2)), Some(vec![0, 2]));
        let pairs = linked(4, &[(0, 1), (2, 3)], 4);
        assert_eq!(pick(&pairs, &[1, 2, 3], &any(2)), Some(vec![2, 3]));
        // More links beat fewer: 0-1 one link, 2-3 two.
        let mut uneven = linked(4, &[(0, 1)], 1);
        uneven[2].links = Some(vec![0, 0, -1, 2]);
        assert_eq!(pick(&uneven, &[0, 1, 2, 3], &any(2)), Some(vec![2, 3]));
        // Links said on one side only count as well.
        let mut one_sided = untyped(4);
        one_sided[3].links = Some(vec![0, 3, 0, -1]);
        assert_eq!(pick(&one_sided, &[0, 1, 2, 3], &any(2)), Some(vec![1, 3]));
    }

    /// Pairs (0,1) and (2,3); GPU 2 is busy. A 1-GPU job takes 3, the other half of
    /// the broken pair, and leaves 0+1 whole for a 2-GPU job.
    #[test]
    fn a_one_gpu_job_breaks_an_already_broken_pair() {
        let pairs = linked(4, &[(0, 1), (2, 3)], 4);
        assert_eq!(pick(&pairs, &[0, 1, 3], &any(1)), Some(vec![3]));
        assert_eq!(pick(&pairs, &[0, 1], &any(2)), Some(vec![0, 1]));
        // All free: every choice breaks a pair; the lowest index goes.
        assert_eq!(pick(&pairs, &[0, 1, 2, 3], &any(1)), Some(vec![0]));
        // Then the next one-GPU job completes the broken pair's use.
        assert_eq!(pick(&pairs, &[1, 2, 3], &any(1)), Some(vec![1]));
    }

    /// Two sockets: GPUs 0-1 near cores 0-15, GPUs 2-3 near cores 16-31. A job on the
    /// second socket's cores gets that socket's GPUs.
    #[test]
    fn gpus_near_the_jobs_cores_are_preferred() {
        let near = |cores: std::ops::Range<u32>| Gpu {
            cores: Some(cores.collect()),
            ..Gpu::default()
        };
        let node = vec![near(0..16), near(0..16), near(16..32), near(16..32)];
        let all = [0, 1, 2, 3];
        let second: Vec<u32> = (16..20).collect();
        let first: Vec<u32> = (0..4).collect();
        assert_eq!(
            pick_gpus(&node, &all, &any(1), Some(&second)),
            Some(vec![2])
        );
        assert_eq!(
            pick_gpus(&node, &all, &any(2), Some(&second)),
            Some(vec![2, 3])
        );
        assert_eq!(
            pick_gpus(&node, &all, &any(2), Some(&first)),
            Some(vec![0, 1])
        );
        // A job across both sockets: as many near GPUs either way; lowest indices.
        let both = [14, 15, 16, 17];
        assert_eq!(pick_gpus(&node, &all, &any(1), Some(&both)), Some(vec![0]));
        // Unknown CPUs (Sluice binds none yet): lowest indices.
        assert_eq!(pick_gpus(&node, &all, &any(1), None), Some(vec![0]));
        // GPU 2 busy: the job still gets its socket's other GPU.
        assert_eq!(
            pick_gpus(&node, &[0, 1, 3], &any(1), Some(&second)),
            Some(vec![3])
        );
        // Links come before locality: 1-2 linked, the job on the second socket.
        let mut linked_across = node.clone();
        linked_across[1].links = Some(vec![0, -1, 2, 0]);
        assert_eq!(
            pick_gpus(&linked_across, &all, &any(2), Some(&second)),
            Some(vec![1, 2])
        );
    }

    /// 24 GPUs in NVLinked pairs (2i, 2i+1): C(24, 12) sets are too many to score one
    /// by one; the greedy search still takes six whole pairs.
    #[test]
    fn large_requests_are_searched_greedily() {
        let pairs: Vec<(usize, usize)> = (0..12).map(|i| (2 * i, 2 * i + 1)).collect();
        let node = linked(24, &pairs, 2);
        let all: Vec<u32> = (0..24).collect();
        assert!(binomial(24, 12) > EXHAUSTIVE_LIMIT);
        assert_eq!(pick(&node, &all, &any(12)), Some((0..12).collect()));
        // GPU 0 busy: the seed takes its lone partner 1 and breaks pair 12+13; a swap
        // of 1 for 13 makes six whole pairs again.
        let free: Vec<u32> = (1..24).collect();
        assert_eq!(pick(&node, &free, &any(12)), Some((2..14).collect()));
    }

    #[test]
    fn the_demand_must_fit_the_free_gpus() {
        let node = untyped(4);
        assert_eq!(pick(&node, &[0, 1], &of_type(None, 3)), None);
        assert_eq!(pick(&node, &[0, 1, 9], &any(3)), None);
        assert_eq!(pick(&node, &[3, 1, 1], &of_type(None, 2)), Some(vec![1, 3]));
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial(16, 8), 12_870);
        assert_eq!(binomial(4, 0), 1);
        assert_eq!(binomial(3, 4), 0);
        assert_eq!(binomial(200, 100), u64::MAX);
    }
}
