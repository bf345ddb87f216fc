//! How each node of a pending job's partition stands for it now, nodes in the same
//! situation grouped ("node[02-03]: 4 of 8 GPUs free, needs 8").

use crate::cluster::NodeState;
use crate::ids::NodeId;
use crate::job::{Job, JobRequest};
use crate::profile::Profile;
use crate::reservation;
use crate::scheduler::Scheduler;
use crate::select::{max_tasks_on, usage_on_node, GpuReserve};
use crate::time::Time;
use crate::tres::{GresSlot, Resources};

/// A resource dimension of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dimension {
    /// Processors.
    Cpus,
    /// Memory (MiB).
    Memory,
    /// A GRES slot of the cluster's [`crate::GresTable`].
    Gres(GresSlot),
}

/// How one node stands for a pending job now. The job's *share* on a node is what it
/// needs there: its `--ntasks-per-node` tasks, else its tasks spread evenly over its
/// fewest nodes (all of them for a one-node job), with their memory and the GRES per
/// node (the whole node when it is exclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeVerdict {
    /// The node is DOWN.
    Down,
    /// The node awaits its agent's first registration with a controller that has just
    /// started ([`Scheduler::await_node`]): it takes no work until then.
    Awaited,
    /// The node is DRAIN(ED): its jobs finish, nothing new starts.
    Drain,
    /// The job excludes it (`-x`).
    Excluded,
    /// The job names its nodes (`-w`), enough of them, and not this one.
    NotListed,
    /// The job runs in its reservation (named), which does not hold this node.
    OutsideReservation(String),
    /// It has none of the features the job asks for (`--constraint`).
    NoFeature,
    /// Even idle it could not hold the job's share.
    TooSmall {
        /// Everything the node has.
        capacity: Resources,
        /// The job's share there.
        needs: Resources,
    },
    /// An advance reservation the job may not use holds it during the job's window
    /// (`now` to `now` plus its time limit), and it lacks room for the job outside it.
    Reserved(String),
    /// Too little is free on it for the job's whole time limit.
    Busy {
        /// What stays free on it throughout the job's window (the least at any time).
        free: Resources,
        /// The job's share there.
        needs: Resources,
        /// The dimensions where `free` falls short of `needs`, processors first.
        scarce: Vec<Dimension>,
    },
    /// It could hold the job's share now, for its whole time limit.
    Fits,
}

/// Nodes in the same situation for the job, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGroup {
    /// Their shared verdict.
    pub verdict: NodeVerdict,
    /// The nodes (the caller turns them into a hostlist).
    pub nodes: Vec<NodeId>,
}

/// Tasks of `req` one node must hold: see [`NodeVerdict`].
fn share(req: &JobRequest) -> u32 {
    match req.ntasks_per_node {
        Some(n) => n,
        None => req.ntasks.div_ceil(req.min_nodes.max(1)),
    }
    .max(1)
}

/// Where `free` falls short of `needs`.
fn scarce(free: &Resources, needs: &Resources) -> Vec<Dimension> {
    let mut out = Vec::new();
    if free.cpus < needs.cpus {
        out.push(Dimension::Cpus);
    }
    if free.mem_mib < needs.mem_mib {
        out.push(Dimension::Memory);
    }
    for (g, (f, n)) in free.gres.iter().zip(&needs.gres).enumerate() {
        if f < n {
            out.push(Dimension::Gres(g));
        }
    }
    out
}

/// Every node of `job`'s partition with its verdict at `now`, grouped.
pub(crate) fn group(sched: &Scheduler, job: &Job, now: Time) -> Vec<NodeGroup> {
    let own_resv = sched.job_reservation(job.id()).map(str::to_string);
    // A job of a reservation may use what its reservation holds: judge it on a profile
    // without that reservation's holds.
    let released;
    let profile: &Profile = match &own_resv {
        Some(name) => {
            let mut copy = sched.clone();
            reservation::release_one(&mut copy, name);
            released = copy;
            released.profile()
        }
        None => sched.profile(),
    };
    let mut groups: Vec<NodeGroup> = Vec::new();
    for &n in &sched.cluster().partition(job.spec.partition).nodes {
        let verdict = verdict(sched, profile, job, own_resv.as_deref(), n, now);
        match groups.iter_mut().find(|g| g.verdict == verdict) {
            Some(g) => g.nodes.push(n),
            None => groups.push(NodeGroup {
                verdict,
                nodes: vec![n],
            }),
        }
    }
    groups
}

fn verdict(
    sched: &Scheduler,
    profile: &Profile,
    job: &Job,
    own_resv: Option<&str>,
    n: NodeId,
    now: Time,
) -> NodeVerdict {
    let cluster = sched.cluster();
    let node = cluster.node(n);
    let req = &job.spec.request;
    match node.state {
        NodeState::Down if sched.awaited.contains(&n) => return NodeVerdict::Awaited,
        NodeState::Down => return NodeVerdict::Down,
        NodeState::Drain => return NodeVerdict::Drain,
        NodeState::Up => {}
    }
    if req.exclude.binary_search(&n).is_ok() {
        return NodeVerdict::Excluded;
    }
    if req.lists_nodes()
        && req.nodelist.len() >= req.min_nodes as usize
        && req.nodelist.binary_search(&n).is_err()
    {
        return NodeVerdict::NotListed;
    }
    if let Some(name) = own_resv {
        let holds_it = sched
            .reservations()
            .find(|r| r.name == name)
            .is_some_and(|r| r.held.iter().any(|(m, _)| *m == n));
        if !holds_it {
            return NodeVerdict::OutsideReservation(name.to_string());
        }
    }
    if req.features_any != 0 && node.features & req.features_any == 0 {
        return NodeVerdict::NoFeature;
    }
    let cap = node.capacity;
    let reserve = GpuReserve::of(cluster, n);
    let k = share(req);
    if max_tasks_on(req, &cap, &cap, reserve) < k {
        return NodeVerdict::TooSmall {
            capacity: cap,
            needs: usage_on_node(req, k, &cap, &cap, &cluster.gres),
        };
    }
    let end = now.saturating_add(job.spec.time_limit.max(1));
    if profile.tasks_during(cluster, req, n, now, end) >= k {
        return NodeVerdict::Fits;
    }
    let in_the_way = sched.reservations().find(|r| {
        Some(r.name.as_str()) != own_resv
            && r.start < end
            && now < r.end
            && r.held.iter().any(|(m, _)| *m == n)
    });
    if let Some(r) = in_the_way {
        return NodeVerdict::Reserved(r.name.clone());
    }
    let free = profile.free_during(n, now, end);
    let needs = usage_on_node(req, k, &cap, &cap, &cluster.gres);
    let mut short = scarce(&free, &needs);
    if short.is_empty() {
        // Enough of each, but not together: processors kept for the node's other GPUs
        // (`RestrictedCoresPerGPU`) are what is missing.
        short.push(Dimension::Cpus);
    }
    NodeVerdict::Busy {
        free,
        needs,
        scarce: short,
    }
}
