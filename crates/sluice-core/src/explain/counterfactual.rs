//! What would start a pending job sooner: the job changed on a copy of the scheduler
//! ([`Scheduler::update_pending`]: same place in the queue, new request) and the
//! forward simulation run again. A change is reported only when its predicted start is
//! strictly earlier than the job's unchanged one (or when the unchanged job does not
//! start at all); each simulation stops once it can no longer beat that, so a change
//! costs at most what the unchanged prediction cost. All the simulations together run
//! at most [`ExplainOptions::counterfactual_passes`] passes; once they are spent the
//! search stops (what was found holds; fewer changes are reported).
//!
//! The changes tried, each on its own, in this order (which matters only when the
//! budget runs out):
//!
//! - a shorter `--time`: the largest whole number of minutes with which the job starts
//!   as early as with one minute (found by bisection; the value reported is one that was
//!   simulated, so it holds even where shorter is not always sooner);
//! - each [`Alternative`] partition or QOS the caller lists;
//! - fewer GPUs per node, fewer nodes (with proportionally fewer tasks), fewer CPUs
//!   (fewer CPUs per task, else fewer tasks): halving step by step, the largest that
//!   helps (the smallest is tried first, and when even it does not help the others are
//!   not tried);
//! - without `--exclusive`; without `--constraint`.
//!
//! The other parts of the request stay as they are (a job asking fewer GPUs keeps its
//! processors and memory: the caller's defaults per GPU are not applied again).

use std::cell::Cell;

use crate::ids::NodeId;
use crate::job::JobSpec;
use crate::scheduler::Scheduler;
use crate::time::Time;

use super::forward::{self, NoStart, PredictedStart, Started};
use super::options::{Alternative, ExplainOptions};

/// One change to a pending job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// `--time` of this many minutes (Slurm's unit).
    TimeLimit {
        /// The new time limit, in minutes.
        minutes: i64,
    },
    /// This many GPUs per node (`--gpus-per-node`; for a typed request, of its type).
    GpusPerNode {
        /// GPUs per node.
        gpus: u32,
    },
    /// This many nodes, with this many tasks.
    Nodes {
        /// Nodes (`-N`).
        nodes: u32,
        /// Tasks (`-n`).
        ntasks: u32,
    },
    /// Fewer processors: this many tasks of this many CPUs each.
    Cpus {
        /// Tasks (`-n`).
        ntasks: u32,
        /// CPUs per task (`-c`).
        cpus_per_task: u32,
    },
    /// Another partition and/or QOS.
    Alternative(Alternative),
    /// Without `--exclusive`.
    NotExclusive,
    /// Without `--constraint`.
    NoConstraint,
}

/// A change that would start the job strictly earlier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterfactual {
    /// What to change.
    pub change: Change,
    /// The job as changed, exactly as simulated (for the caller to show, or apply with
    /// [`Scheduler::update_pending`]).
    pub spec: JobSpec,
    /// Its predicted start (the scheduler's seconds).
    pub at: Time,
    /// Its predicted nodes, ascending.
    pub nodes: Vec<NodeId>,
}

/// Where the changed jobs are simulated, the last start worth reporting, and the passes
/// left to spend.
struct Search<'a> {
    sched: &'a Scheduler,
    now: Time,
    /// A change must start by this time to be reported.
    bound: Time,
    max_passes: u32,
    /// Passes the simulations may still run together.
    left: Cell<u32>,
    /// A simulation was refused or stopped by a pass budget: changes not found may
    /// still help.
    cut: Cell<bool>,
}

impl Search<'_> {
    /// The start of the job changed to `spec`, if it starts by `by` within the budget.
    fn start(&self, spec: &JobSpec, by: Time) -> Option<Started> {
        let left = self.left.get();
        if left == 0 {
            self.cut.set(true);
            return None;
        }
        let mut copy = self.sched.clone();
        copy.update_pending(spec.clone(), self.now).ok()?;
        let budget = self.max_passes.min(left);
        let (started, used) = forward::run_counted(copy, spec.id, self.now, by, budget);
        self.left.set(left.saturating_sub(used));
        if matches!(started, Err(NoStart::Budget { .. })) {
            self.cut.set(true);
        }
        started.ok()
    }

    fn found(&self, change: Change, spec: JobSpec, s: Started) -> Counterfactual {
        Counterfactual {
            change,
            spec,
            at: s.at,
            nodes: s.nodes.iter().map(|a| a.node).collect(),
        }
    }

    /// The largest of `tries` (given largest first) that starts in time. The smallest is
    /// tried first: when even it does not help, the others are not tried.
    fn largest_that_helps(&self, tries: Vec<(Change, JobSpec)>) -> Option<Counterfactual> {
        let (last_change, last_spec) = tries.last()?.clone();
        let smallest = self.start(&last_spec, self.bound)?;
        for (change, spec) in &tries[..tries.len() - 1] {
            if let Some(s) = self.start(spec, self.bound) {
                return Some(self.found(change.clone(), spec.clone(), s));
            }
        }
        Some(self.found(last_change, last_spec, smallest))
    }
}

/// Halving steps below `n`: `n/2, n/4, ..., 1`.
fn halves(n: u32) -> impl Iterator<Item = u32> {
    std::iter::successors(Some(n / 2), |&k| Some(k / 2)).take_while(|&k| k >= 1)
}

/// Every change that starts `spec`'s job strictly earlier than `unchanged`, and whether
/// the search was cut short by its pass budgets (then changes not listed may still
/// help).
pub(crate) fn search(
    sched: &Scheduler,
    spec: &JobSpec,
    now: Time,
    horizon: Time,
    unchanged: &Result<PredictedStart, NoStart>,
    options: &ExplainOptions,
) -> (Vec<Counterfactual>, bool) {
    let bound = match unchanged {
        Ok(p) if p.at <= now => return (Vec::new(), false), // nothing starts earlier than now
        Ok(p) => p.at - 1,
        // Not started by `at`: whatever starts by then starts earlier.
        Err(NoStart::Budget { at }) => *at,
        Err(_) => horizon,
    };
    let search = Search {
        sched,
        now,
        bound,
        max_passes: options.max_passes,
        left: Cell::new(options.counterfactual_passes),
        cut: Cell::new(false),
    };
    let mut out = Vec::new();
    out.extend(shorter_time(&search, spec));
    for alt in &options.alternatives {
        let mut s = spec.clone();
        if let Some(p) = alt.partition {
            s.partition = p;
        }
        if let Some(q) = alt.qos {
            s.acct.qos = Some(q);
        }
        if let Some(p) = alt.priority {
            s.priority = p;
        }
        if s.partition == spec.partition && s.acct.qos == spec.acct.qos {
            continue;
        }
        s.acct.not_allowed = None;
        out.extend(search.largest_that_helps(vec![(Change::Alternative(alt.clone()), s)]));
    }
    out.extend(search.largest_that_helps(fewer_gpus(sched, spec).collect()));
    out.extend(search.largest_that_helps(fewer_nodes(spec).collect()));
    out.extend(search.largest_that_helps(fewer_cpus(spec).collect()));
    if spec.request.exclusive {
        let mut s = spec.clone();
        s.request.exclusive = false;
        out.extend(search.largest_that_helps(vec![(Change::NotExclusive, s)]));
    }
    if spec.request.features_any != 0 {
        let mut s = spec.clone();
        s.request.features_any = 0;
        out.extend(search.largest_that_helps(vec![(Change::NoConstraint, s)]));
    }
    (out, search.cut.get())
}

/// The largest whole number of minutes, below the job's limit, with which it starts as
/// early as with one minute — when that is in time.
fn shorter_time(search: &Search, spec: &JobSpec) -> Option<Counterfactual> {
    let with = |minutes: i64| {
        let mut s = spec.clone();
        s.time_limit = minutes * 60;
        s
    };
    let most = (spec.time_limit - 1) / 60;
    if most < 1 {
        return None;
    }
    let first = search.start(&with(1), search.bound)?;
    let target = first.at;
    let (mut lo, mut hi, mut best) = (1i64, most, first);
    while lo < hi {
        let mid = lo + (hi - lo + 1) / 2;
        match search.start(&with(mid), target) {
            Some(s) => {
                lo = mid;
                best = s;
            }
            None => hi = mid - 1,
        }
    }
    Some(search.found(Change::TimeLimit { minutes: lo }, with(lo), best))
}

/// Halving the GPUs per node (the untyped `gpu` count and the typed one with it).
fn fewer_gpus<'a>(
    sched: &Scheduler,
    spec: &'a JobSpec,
) -> impl Iterator<Item = (Change, JobSpec)> + 'a {
    let cluster = sched.cluster();
    let gpu = cluster.gpu_slot();
    let typed: Vec<usize> = gpu
        .map(|g| cluster.gres.children(g).collect())
        .unwrap_or_default();
    let have = gpu.map_or(0, |g| spec.request.gres_per_node[g]);
    halves(have).map(move |k| {
        let mut s = spec.clone();
        let g = gpu.expect("asks for GPUs");
        s.request.gres_per_node[g] = k;
        for &t in &typed {
            if s.request.gres_per_node[t] > 0 {
                s.request.gres_per_node[t] = k;
            }
        }
        (Change::GpusPerNode { gpus: k }, s)
    })
}

/// Halving the node count, with proportionally fewer tasks.
fn fewer_nodes(spec: &JobSpec) -> impl Iterator<Item = (Change, JobSpec)> + '_ {
    let r = &spec.request;
    let n = r.min_nodes;
    halves(if n > 1 { n } else { 0 })
        .filter(move |&k| k as usize >= r.nodelist.len())
        .map(move |k| {
            let mut s = spec.clone();
            let q = &mut s.request;
            q.ntasks = match q.ntasks_per_node {
                Some(t) => t * k,
                None => (u64::from(q.ntasks) * u64::from(k))
                    .div_ceil(u64::from(n))
                    .max(u64::from(k)) as u32,
            };
            if q.max_nodes == n {
                q.max_nodes = k;
            }
            q.min_nodes = k;
            (
                Change::Nodes {
                    nodes: k,
                    ntasks: q.ntasks,
                },
                s,
            )
        })
}

/// Halving the CPUs per task, or else the tasks (with `--ntasks-per-node`, it too).
fn fewer_cpus(spec: &JobSpec) -> Box<dyn Iterator<Item = (Change, JobSpec)> + '_> {
    let r = &spec.request;
    if r.cpus_per_task > 1 {
        return Box::new(halves(r.cpus_per_task).map(move |c| {
            let mut s = spec.clone();
            s.request.cpus_per_task = c;
            let change = Change::Cpus {
                ntasks: s.request.ntasks,
                cpus_per_task: c,
            };
            (change, s)
        }));
    }
    let nodes = r.min_nodes.max(1);
    let per_node = r.ntasks_per_node;
    Box::new(
        halves(r.ntasks)
            .filter(move |&n| n >= nodes && per_node.is_none_or(|_| n.is_multiple_of(nodes)))
            .map(move |n| {
                let mut s = spec.clone();
                s.request.ntasks = n;
                if per_node.is_some() {
                    s.request.ntasks_per_node = Some(n / nodes);
                }
                let change = Change::Cpus {
                    ntasks: n,
                    cpus_per_task: s.request.cpus_per_task,
                };
                (change, s)
            }),
    )
}
