//! Slurm's `priority/multifactor`: a job's priority as a weighted sum of factors.
//!
//! From <https://slurm.schedmd.com/priority_multifactor.html>:
//!
//! ```text
//! priority = site_factor
//!          + PriorityWeightAge       × age_factor
//!          + PriorityWeightAssoc     × assoc_factor
//!          + PriorityWeightFairshare × fair-share_factor
//!          + PriorityWeightJobSize   × job_size_factor
//!          + PriorityWeightPartition × partition_factor
//!          + PriorityWeightQOS       × QOS_factor
//!          + Σ PriorityWeightTRES[t] × TRES_factor[t]
//!          − nice
//! ```
//!
//! Every factor is between 0 and 1. The result is truncated to an integer, at least 1
//! (0 is kept for held jobs) and at most 2³² − 1.
//!
//! - age: time eligible (since the job's accrue time) over `PriorityMaxAge`, at most 1;
//! - job size: (nodes / cluster nodes + CPUs / cluster CPUs) / 2, or with
//!   `PriorityFavorSmall` its complement; with `PriorityFlags=SMALL_RELATIVE_TO_TIME`,
//!   max(CPUs, nodes × average CPUs per node) / time limit in minutes / cluster CPUs;
//! - partition: the partition's `PriorityJobFactor` over the largest one's;
//! - QOS and association: their `Priority` over the largest one's;
//! - TRES: the job's count of each TRES over the cluster's.

use crate::time::{Secs, Time};
use crate::tres::{Resources, MAX_GRES};

/// `PriorityWeight*` of slurm.conf. All 0 by default, as in Slurm.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Weights {
    /// `PriorityWeightAge`.
    pub age: u32,
    /// `PriorityWeightAssoc`.
    pub assoc: u32,
    /// `PriorityWeightFairshare`.
    pub fairshare: u32,
    /// `PriorityWeightJobSize`.
    pub job_size: u32,
    /// `PriorityWeightPartition`.
    pub partition: u32,
    /// `PriorityWeightQOS`.
    pub qos: u32,
    /// `PriorityWeightTRES`: weights per TRES.
    pub tres: TresWeights,
}

/// Per-TRES weights (`PriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=3000`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TresWeights {
    /// Weight of `cpu`.
    pub cpu: f64,
    /// Weight of `mem`.
    pub mem: f64,
    /// Weight of `node`.
    pub node: f64,
    /// Weights of GRES slots (`gres/gpu`, `gres/gpu:a100`), by the cluster's
    /// [`GresTable`](crate::tres::GresTable) slot.
    pub gres: [f64; MAX_GRES],
}

impl TresWeights {
    /// True when no TRES has a weight.
    pub fn is_empty(&self) -> bool {
        self.cpu == 0.0
            && self.mem == 0.0
            && self.node == 0.0
            && self.gres.iter().all(|w| *w == 0.0)
    }
}

/// How the factors are computed (slurm.conf's `Priority*` settings).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Factor weights.
    pub weights: Weights,
    /// `PriorityMaxAge` in seconds (default 7 days): the age at which the age factor
    /// reaches 1.
    pub max_age: Secs,
    /// `PriorityFavorSmall=YES`: small jobs get the larger job-size factor.
    pub favor_small: bool,
    /// `PriorityFlags=SMALL_RELATIVE_TO_TIME`.
    pub small_relative_to_time: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            weights: Weights::default(),
            max_age: 7 * 86_400,
            favor_small: false,
            small_relative_to_time: false,
        }
    }
}

/// What the cluster has in total, for the job-size and TRES factors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClusterTotals {
    /// Nodes configured.
    pub nodes: u32,
    /// CPUs, memory (MiB) and GRES configured.
    pub resources: Resources,
}

/// One job's inputs to the priority.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobFactors {
    /// Since when the job accrues age (eligible: begin time reached, not held, no
    /// unmet dependency); `None` while it is not eligible.
    pub accrue_since: Option<Time>,
    /// Nodes asked (the minimum).
    pub nodes: u32,
    /// CPUs, memory (MiB) and GRES asked, over all nodes.
    pub resources: Resources,
    /// Time limit in seconds (for `SMALL_RELATIVE_TO_TIME`).
    pub time_limit: Secs,
    /// The association's fair-share factor (0 to 1).
    pub fairshare: f64,
    /// Partition's `PriorityJobFactor` over the largest of any partition (0 to 1).
    pub partition: f64,
    /// QOS `Priority` over the largest of any QOS (0 to 1).
    pub qos: f64,
    /// Association `Priority` over the largest of any association (0 to 1).
    pub assoc: f64,
    /// `--nice` (may be negative, for operators).
    pub nice: i64,
    /// Site factor (`scontrol update job SiteFactor=`).
    pub site: i64,
}

/// A job's priority with its weighted factors, as `sprio -l` shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Priority {
    /// The job's priority.
    pub priority: u32,
    /// `SITE`.
    pub site: f64,
    /// `AGE`: weight × age factor.
    pub age: f64,
    /// `ASSOC`.
    pub assoc: f64,
    /// `FAIRSHARE`.
    pub fairshare: f64,
    /// `JOBSIZE`.
    pub job_size: f64,
    /// `PARTITION`.
    pub partition: f64,
    /// `QOS`.
    pub qos: f64,
    /// `TRES` (sum over TRES).
    pub tres: f64,
    /// `NICE`.
    pub nice: i64,
}

/// The age factor at `now`: time accrued over `max_age`, at most 1.
pub fn age_factor(accrue_since: Option<Time>, max_age: Secs, now: Time) -> f64 {
    match accrue_since {
        Some(t) if now > t && max_age > 0 => ((now - t) as f64 / max_age as f64).min(1.0),
        Some(t) if now > t => 1.0,
        _ => 0.0,
    }
}

/// The job-size factor (see the module documentation), between 0 and 1.
pub fn job_size_factor(p: &Params, totals: &ClusterTotals, job: &JobFactors) -> f64 {
    let cluster_cpus = totals.resources.cpus.max(1) as f64;
    let cluster_nodes = totals.nodes.max(1) as f64;
    let nodes = job.nodes.max(1) as f64;
    let cpus = job.resources.cpus as f64;
    let f = if p.small_relative_to_time {
        let size = (nodes * cluster_cpus / cluster_nodes).max(cpus);
        let minutes = (job.time_limit / 60).max(1) as f64;
        let f = size / minutes / cluster_cpus;
        if p.favor_small {
            1.0 - f
        } else {
            f
        }
    } else if p.favor_small {
        let mut f = (cluster_nodes - nodes) / cluster_nodes;
        if cpus > 0.0 {
            f = (f + (cluster_cpus - cpus) / cluster_cpus) / 2.0;
        }
        f
    } else {
        let mut f = nodes / cluster_nodes;
        if cpus > 0.0 {
            f = (f + cpus / cluster_cpus) / 2.0;
        }
        f
    };
    f.clamp(0.0, 1.0)
}

/// Which TRES a [`TresTerm`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TresKind {
    /// CPUs.
    Cpu,
    /// Memory.
    Mem,
    /// Nodes.
    Node,
    /// A GRES slot of the cluster's GRES table.
    Gres(usize),
}

/// One TRES's part of the priority: `sprio`'s `TRES` column lists them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TresTerm {
    /// The TRES.
    pub kind: TresKind,
    /// The job's count over the cluster's (0 to 1).
    pub factor: f64,
    /// Its `PriorityWeightTRES` weight times the factor.
    pub weighted: f64,
}

/// The TRES with a non-zero weight, in Slurm's TRES order (CPU, memory, node, then
/// GRES), each with the job's share of the cluster's count and its weighted value.
pub fn tres_terms(w: &TresWeights, totals: &ClusterTotals, job: &JobFactors) -> Vec<TresTerm> {
    let ratio = |have: f64, total: f64| if total > 0.0 { have / total } else { 0.0 };
    let r = &job.resources;
    let t = &totals.resources;
    let mut terms = vec![
        (TresKind::Cpu, w.cpu, ratio(r.cpus as f64, t.cpus as f64)),
        (
            TresKind::Mem,
            w.mem,
            ratio(r.mem_mib as f64, t.mem_mib as f64),
        ),
        (
            TresKind::Node,
            w.node,
            ratio(job.nodes as f64, totals.nodes as f64),
        ),
    ];
    for s in 0..MAX_GRES {
        terms.push((
            TresKind::Gres(s),
            w.gres[s],
            ratio(r.gres[s] as f64, t.gres[s] as f64),
        ));
    }
    terms
        .into_iter()
        .filter(|(_, weight, _)| *weight != 0.0)
        .map(|(kind, weight, factor)| TresTerm {
            kind,
            factor,
            weighted: weight * factor,
        })
        .collect()
}

/// The TRES part: Σ weight × (job's count / cluster's count).
pub fn tres_part(w: &TresWeights, totals: &ClusterTotals, job: &JobFactors) -> f64 {
    tres_terms(w, totals, job).iter().map(|t| t.weighted).sum()
}

/// A job's priority at `now`, with its weighted factors.
pub fn priority(p: &Params, totals: &ClusterTotals, job: &JobFactors, now: Time) -> Priority {
    let w = &p.weights;
    let mut out = Priority {
        site: job.site as f64,
        age: w.age as f64 * age_factor(job.accrue_since, p.max_age, now),
        assoc: w.assoc as f64 * job.assoc,
        fairshare: w.fairshare as f64 * job.fairshare,
        job_size: if w.job_size > 0 {
            w.job_size as f64 * job_size_factor(p, totals, job)
        } else {
            0.0
        },
        partition: w.partition as f64 * job.partition,
        qos: w.qos as f64 * job.qos,
        tres: tres_part(&w.tres, totals, job),
        nice: job.nice,
        priority: 0,
    };
    let sum = out.site
        + out.age
        + out.assoc
        + out.fairshare
        + out.job_size
        + out.partition
        + out.qos
        + out.tres
        - job.nice as f64;
    out.priority = if sum < 1.0 {
        1
    } else if sum >= u32::MAX as f64 {
        u32::MAX
    } else {
        sum as u32
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_node(cpus: u32) -> ClusterTotals {
        ClusterTotals {
            nodes: 1,
            resources: Resources::cpus(cpus),
        }
    }

    #[test]
    fn slurms_sample_with_qos_association_nice_and_tres_weights() {
        // Real Slurm 22.05 (crates/sluice-cli/tests/samples/sprio/sprio_l.txt): one
        // node, 2 CPUs and 1000 MiB here; weights age 1000 (PriorityMaxAge 1 day),
        // assoc 500, fairshare 10000, job size 1000, partition 1000, QOS 2000,
        // TRES CPU=100,Mem=10; every job eligible for 49 s. The factors are sprio -n's.
        let p = Params {
            weights: Weights {
                age: 1000,
                assoc: 500,
                fairshare: 10_000,
                job_size: 1000,
                partition: 1000,
                qos: 2000,
                tres: TresWeights {
                    cpu: 100.0,
                    mem: 10.0,
                    ..Default::default()
                },
            },
            max_age: 86_400,
            ..Default::default()
        };
        let totals = ClusterTotals {
            nodes: 1,
            resources: Resources {
                cpus: 2,
                mem_mib: 1000,
                ..Default::default()
            },
        };
        let now = 1_000_049;
        let job = |cpus, mem_mib, assoc, fairshare, qos, nice| JobFactors {
            accrue_since: Some(1_000_000),
            nodes: 1,
            resources: Resources {
                cpus,
                mem_mib,
                ..Default::default()
            },
            fairshare,
            partition: 1.0,
            qos,
            assoc,
            nice,
            ..Default::default()
        };
        // Job 98: alice in phys (assoc priority 5 of 20, fair-share 0.25), QOS high.
        let j98 = priority(&p, &totals, &job(1, 40, 0.25, 0.25, 1.0, 0), now);
        assert_eq!(j98.priority, 6425);
        assert_eq!(
            (j98.assoc, j98.fairshare, j98.job_size, j98.qos),
            (125.0, 2500.0, 750.0, 2000.0)
        );
        assert!((j98.age - 0.567).abs() < 0.001, "{}", j98.age);
        // Job 99: bob, 2 CPUs, QOS low (10 of 100).
        assert_eq!(
            priority(&p, &totals, &job(2, 80, 1.0, 1.0, 0.1, 0), now).priority,
            12801
        );
        // Job 100: bob, --nice=100, --mem=100M of a large node: mem factor 0.
        assert_eq!(
            priority(&p, &totals, &job(1, 0, 1.0, 1.0, 0.0, 100), now).priority,
            12200
        );
        // Job 101: alice in theory (no association priority, fair-share 0.5).
        let j101 = priority(&p, &totals, &job(1, 40, 0.0, 0.5, 0.0, 0), now);
        assert_eq!(j101.priority, 6800);
        let terms = tres_terms(&p.weights.tres, &totals, &job(1, 40, 0.0, 0.5, 0.0, 0));
        assert_eq!(
            terms
                .iter()
                .map(|t| (t.kind, t.factor, t.weighted))
                .collect::<Vec<_>>(),
            vec![(TresKind::Cpu, 0.5, 50.0), (TresKind::Mem, 0.04, 0.4)]
        );
    }

    #[test]
    fn slurms_sample_whole_node_and_half_node_jobs() {
        // Real Slurm 22.05, one 2-CPU node, weights fairshare 10000, job size 1000,
        // partition 1000, no usage: sprio shows 12000 for a 2-CPU job and 11750 for a
        // 1-CPU job (JOBSIZE 1000 and 750).
        let p = Params {
            weights: Weights {
                fairshare: 10_000,
                job_size: 1000,
                partition: 1000,
                ..Default::default()
            },
            ..Default::default()
        };
        let job = |cpus| JobFactors {
            nodes: 1,
            resources: Resources::cpus(cpus),
            fairshare: 1.0,
            partition: 1.0,
            ..Default::default()
        };
        let whole = priority(&p, &one_node(2), &job(2), 0);
        assert_eq!((whole.priority, whole.job_size), (12_000, 1000.0));
        let half = priority(&p, &one_node(2), &job(1), 0);
        assert_eq!((half.priority, half.job_size), (11_750, 750.0));
    }

    #[test]
    fn age_grows_linearly_to_max_age_then_stops() {
        let p = Params {
            weights: Weights {
                age: 1000,
                ..Default::default()
            },
            max_age: 1000,
            ..Default::default()
        };
        let job = JobFactors {
            accrue_since: Some(100),
            ..Default::default()
        };
        let totals = one_node(4);
        assert_eq!(priority(&p, &totals, &job, 100).age, 0.0);
        assert_eq!(priority(&p, &totals, &job, 350).age, 250.0);
        assert_eq!(priority(&p, &totals, &job, 5000).age, 1000.0);
        // Not eligible: no age; the floor is 1.
        let held = JobFactors::default();
        assert_eq!(priority(&p, &totals, &held, 5000).priority, 1);
    }

    #[test]
    fn favor_small_turns_the_job_size_factor_around() {
        let totals = ClusterTotals {
            nodes: 4,
            resources: Resources::cpus(16),
        };
        let p = Params {
            favor_small: true,
            ..Default::default()
        };
        let one = JobFactors {
            nodes: 1,
            resources: Resources::cpus(4),
            ..Default::default()
        };
        // ((4-1)/4 + (16-4)/16) / 2 = 0.75
        assert_eq!(job_size_factor(&p, &totals, &one), 0.75);
        let large = Params::default();
        // (1/4 + 4/16) / 2 = 0.25
        assert_eq!(job_size_factor(&large, &totals, &one), 0.25);
        // Relative to time: 4 CPUs for 60 minutes on 16 CPUs: 4/60/16.
        let rel = Params {
            small_relative_to_time: true,
            ..Default::default()
        };
        let timed = JobFactors {
            time_limit: 3600,
            ..one
        };
        assert!((job_size_factor(&rel, &totals, &timed) - 4.0 / 60.0 / 16.0).abs() < 1e-12);
    }

    #[test]
    fn tres_weights_nice_and_site_add_up() {
        let mut gres = [0u32; MAX_GRES];
        gres[0] = 8;
        let totals = ClusterTotals {
            nodes: 2,
            resources: Resources {
                cpus: 64,
                mem_mib: 1 << 20,
                gres,
            },
        };
        let mut w = TresWeights {
            cpu: 1000.0,
            ..Default::default()
        };
        w.gres[0] = 4000.0;
        let p = Params {
            weights: Weights {
                tres: w,
                qos: 2000,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut jg = [0u32; MAX_GRES];
        jg[0] = 2;
        let job = JobFactors {
            nodes: 1,
            resources: Resources {
                cpus: 16,
                mem_mib: 0,
                gres: jg,
            },
            qos: 0.5,
            nice: 100,
            site: 7,
            ..Default::default()
        };
        let pr = priority(&p, &totals, &job, 0);
        // TRES: 1000 × 16/64 + 4000 × 2/8 = 1250; QOS 1000; site 7; nice −100.
        assert_eq!(pr.tres, 1250.0);
        assert_eq!(pr.priority, 1250 + 1000 + 7 - 100);
    }
}
