//! Synthetic workloads: large, reproducible job streams for scale runs.
//!
//! The mix follows what large HPC/AI systems see (see the Parallel Workloads Archive's
//! logs): many small single-node jobs sharing nodes, fewer wide whole-node jobs that
//! hold most of the processor-time, run times spread log-uniformly from a minute to a
//! day, users over-estimating their run times, a few jobs killed at their limit, and
//! Poisson arrivals at a chosen offered load.
//!
//! Randomness comes from SplitMix64 (Steele et al., 2014) seeded explicitly, so a given
//! set of parameters always yields the same workload, on every platform and version.

use sluice_core::{Cluster, JobId, JobRequest, JobSpec, PartitionId};

use crate::setup::SimJob;

/// Shape of a synthetic workload.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthParams {
    /// Number of jobs.
    pub jobs: u64,
    /// Number of nodes.
    pub nodes: u32,
    /// Processors per node.
    pub cpus_per_node: u32,
    /// Offered load: processor-seconds asked per processor-second of the machine.
    pub load: f64,
    /// Seed of the random stream.
    pub seed: u64,
}

impl Default for SynthParams {
    fn default() -> Self {
        SynthParams {
            jobs: 100_000,
            nodes: 1_000,
            cpus_per_node: 64,
            load: 0.9,
            seed: 1,
        }
    }
}

/// SplitMix64: a tiny, fast, well-studied generator with a fixed output for a seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [lo, hi].
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Builds the machine (one partition `batch` of identical nodes) and the jobs.
///
/// Job mix: 70 % single-node jobs of 1 to all processors of a node (powers of two),
/// 20 % whole-node jobs on 2 to 64 nodes (`--exclusive`), 10 % one whole node. Run times
/// log-uniform in [60 s, 86 400 s]; time limits 1–4× the run time rounded up to 5
/// minutes, except 3 % that ask for less than they need and are killed at the limit.
/// Users: 500, with a skewed share of the jobs. Arrivals: exponential gaps chosen so
/// that the offered load is `load`.
pub fn generate(p: &SynthParams) -> (Cluster, Vec<SimJob>) {
    let cluster = Cluster::homogeneous("batch", p.nodes, p.cpus_per_node);
    let mut rng = SplitMix64(p.seed);
    let mut jobs = Vec::with_capacity(p.jobs as usize);
    let max_width = 64.min(p.nodes.max(1)) as u64;
    let log_lo = 60f64.ln();
    let log_hi = 86_400f64.ln();
    let mut work = 0f64;
    // First draw shapes and run times, then space arrivals to reach the load.
    for i in 0..p.jobs {
        let kind = rng.unit();
        let request = if kind < 0.7 {
            let max_pow = 31 - p.cpus_per_node.max(1).leading_zeros();
            let cpus = 1u32 << rng.range(0, max_pow as u64);
            JobRequest::procs(cpus.min(p.cpus_per_node)).on_one_node()
        } else if kind < 0.9 && max_width >= 2 {
            let n = rng.range(2, max_width) as u32;
            let mut r = JobRequest::procs(n);
            r.min_nodes = n;
            r.max_nodes = n;
            r.exclusive = true;
            r
        } else {
            let mut r = JobRequest::procs(1).on_one_node();
            r.exclusive = true;
            r
        };
        let run = (log_lo + rng.unit() * (log_hi - log_lo)).exp().round() as i64;
        let limit = if rng.unit() < 0.03 {
            (run as f64 * (0.5 + 0.4 * rng.unit())).max(60.0) as i64
        } else {
            let f = 1.0 + 3.0 * rng.unit();
            (((run as f64 * f) / 300.0).ceil() * 300.0) as i64
        };
        let procs = if request.exclusive {
            request.min_nodes.max(1) * p.cpus_per_node
        } else {
            request.ntasks
        };
        work += procs as f64 * run.min(limit) as f64;
        // Skewed users: the square of a uniform draw favours low user ids.
        let user = (rng.unit().powi(2) * 500.0) as u32;
        jobs.push(SimJob {
            spec: JobSpec {
                id: JobId(i + 1),
                user,
                partition: PartitionId(0),
                submit: 0,
                begin: 0,
                request,
                time_limit: limit,
                priority: u32::MAX.saturating_sub(i as u32),
                acct: Default::default(),
            },
            run,
            procs,
            gpu_milli: 0,
            group: user / 10,
        });
    }
    let capacity = p.nodes as f64 * p.cpus_per_node as f64;
    let span = work / (capacity * p.load.max(1e-6));
    let mean_gap = span / p.jobs.max(1) as f64;
    let mut t = 0f64;
    for j in &mut jobs {
        t += -mean_gap * (1.0 - rng.unit()).ln();
        j.spec.submit = t as i64;
        j.spec.begin = j.spec.submit;
    }
    (cluster, jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_workload() {
        let p = SynthParams {
            jobs: 1000,
            nodes: 100,
            ..Default::default()
        };
        let (_, a) = generate(&p);
        let (_, b) = generate(&p);
        let key = |j: &SimJob| {
            (
                j.spec.submit,
                j.run,
                j.spec.time_limit,
                j.procs,
                j.spec.user,
            )
        };
        assert_eq!(
            a.iter().map(key).collect::<Vec<_>>(),
            b.iter().map(key).collect::<Vec<_>>()
        );
        let (_, c) = generate(&SynthParams { seed: 2, ..p });
        assert_ne!(
            a.iter().map(key).collect::<Vec<_>>(),
            c.iter().map(key).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_offered_load_is_what_was_asked() {
        let p = SynthParams {
            jobs: 20_000,
            nodes: 200,
            cpus_per_node: 32,
            load: 0.8,
            seed: 7,
        };
        let (cluster, jobs) = generate(&p);
        let work: f64 = jobs
            .iter()
            .map(|j| j.procs as f64 * j.run.min(j.spec.time_limit) as f64)
            .sum();
        let span = jobs.last().unwrap().spec.submit as f64;
        let load = work / (cluster.total_cpus() as f64 * span);
        assert!((load - 0.8).abs() < 0.03, "offered load {load}");
        let killed =
            jobs.iter().filter(|j| j.run > j.spec.time_limit).count() as f64 / jobs.len() as f64;
        assert!(
            (killed - 0.03).abs() < 0.01,
            "share killed at the limit {killed}"
        );
        assert!(jobs
            .windows(2)
            .all(|w| w[0].spec.submit <= w[1].spec.submit));
    }
}
