//! Whether a request can ever be met in its partition: judged on every node of the
//! partition whatever its state, at full capacity, and on the partition's limits.

use std::fmt;

use crate::cluster::Cluster;
use crate::ids::NodeId;
use crate::job::{JobRequest, JobSpec, MemRequest};
use crate::scheduler::Scheduler;
use crate::select::{max_tasks_on, GpuReserve};
use crate::time::{format_duration, Secs};

/// Why a request can never be met in its partition, with the numbers. Per-node figures
/// are over the partition's nodes that have a wanted feature and are not excluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NeverFits {
    /// Its time limit exceeds the partition's `MaxTime` (both in seconds).
    TimeLimit {
        /// The job's time limit.
        limit: Secs,
        /// The partition's `MaxTime`.
        max_time: Secs,
    },
    /// It asks for more nodes than the partition's `MaxNodes`.
    MaxNodes {
        /// Its fewest nodes.
        wanted: u32,
        /// The partition's `MaxNodes`.
        max_nodes: u32,
    },
    /// It asks for fewer nodes than the partition's `MinNodes`.
    MinNodes {
        /// Its fewest nodes.
        wanted: u32,
        /// The partition's `MinNodes`.
        min_nodes: u32,
    },
    /// No node of the partition has any of the features it asks for (`--constraint`).
    Features {
        /// The features it asks for (any one of them would do).
        wanted: Vec<String>,
    },
    /// No node has this many GPUs (untyped `gpu` GRES) per node.
    Gpus {
        /// GPUs per node it asks for.
        wanted: u32,
        /// The most any node has.
        largest: u32,
    },
    /// No node has this many of another GRES (`gpu:a100`, `shard`, ...) per node.
    Gres {
        /// The GRES's name, as in `gres.conf` (`gpu:a100`).
        name: String,
        /// How many per node it asks for.
        wanted: u32,
        /// The most any node has.
        largest: u32,
    },
    /// No node (among those with enough GPUs, when it asks for GPUs) has the processors
    /// its share of tasks on one node needs.
    Cpus {
        /// Processors one node must give it.
        wanted: u32,
        /// The most any such node can give it.
        largest: u32,
        /// The GPUs per node it asks for, when only nodes with that many count.
        with_gpus: Option<u32>,
    },
    /// No node (with the GPUs and processors it needs) has the memory its share on one
    /// node needs, in MiB.
    Memory {
        /// MiB one node must give it.
        wanted_mib: u64,
        /// The most any such node has.
        largest_mib: u64,
    },
    /// Too few nodes could take part at all.
    Nodes {
        /// Its fewest nodes.
        wanted: u32,
        /// Nodes of the partition that could host at least one of its tasks.
        available: u32,
    },
    /// Its tasks do not fit on the nodes it may have (at most its `--nodes` maximum),
    /// in processors.
    TotalCpus {
        /// Processors it asks for in all.
        wanted: u64,
        /// Processors the nodes it may have could give it together.
        available: u64,
    },
    /// No set of the partition's nodes can hold the request for another reason (the
    /// nodes it names, its topology constraints).
    Shape,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl fmt::Display for NeverFits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NeverFits::TimeLimit { limit, max_time } => write!(
                f,
                "its time limit ({}) exceeds the partition's MaxTime ({})",
                format_duration(*limit),
                format_duration(*max_time)
            ),
            NeverFits::MaxNodes { wanted, max_nodes } => write!(
                f,
                "it asks for {}; the partition's MaxNodes is {max_nodes}",
                plural((*wanted).into(), "node", "nodes")
            ),
            NeverFits::MinNodes { wanted, min_nodes } => write!(
                f,
                "it asks for {}; the partition's MinNodes is {min_nodes}",
                plural((*wanted).into(), "node", "nodes")
            ),
            NeverFits::Features { wanted } => write!(
                f,
                "no node of the partition has the feature {}",
                wanted.join("|")
            ),
            NeverFits::Gpus { wanted, largest } => write!(
                f,
                "no node has {}; the largest has {largest}",
                plural((*wanted).into(), "GPU", "GPUs")
            ),
            NeverFits::Gres {
                name,
                wanted,
                largest,
            } => write!(f, "no node has {wanted} {name}; the largest has {largest}"),
            NeverFits::Cpus {
                wanted,
                largest,
                with_gpus,
            } => match with_gpus {
                Some(g) => write!(
                    f,
                    "no node with {} has {}; the largest has {largest}",
                    plural((*g).into(), "GPU", "GPUs"),
                    plural((*wanted).into(), "CPU", "CPUs")
                ),
                None => write!(
                    f,
                    "no node has {}; the largest has {largest}",
                    plural((*wanted).into(), "CPU", "CPUs")
                ),
            },
            NeverFits::Memory {
                wanted_mib,
                largest_mib,
            } => write!(
                f,
                "no node has {wanted_mib} MiB of memory; the largest has {largest_mib} MiB"
            ),
            NeverFits::Nodes { wanted, available } => write!(
                f,
                "it needs {}; only {available} of the partition's could take part",
                plural((*wanted).into(), "node", "nodes")
            ),
            NeverFits::TotalCpus { wanted, available } => write!(
                f,
                "it needs {} in all; the nodes it may have give at most {available}",
                plural(*wanted, "CPU", "CPUs")
            ),
            NeverFits::Shape => write!(f, "no set of the partition's nodes can hold the request"),
        }
    }
}

/// Tasks one node must host for `req`: `--ntasks-per-node`, all of them for a one-node
/// job, else one.
fn tasks_per_node_min(req: &JobRequest) -> u32 {
    match req.ntasks_per_node {
        Some(n) => n,
        None if req.max_nodes == 1 => req.ntasks,
        None => 1,
    }
}

/// Why `spec` can never run in its partition, or `None` when it can (on some set of
/// the partition's nodes, all idle).
pub(crate) fn check(sched: &Scheduler, spec: &JobSpec) -> Option<NeverFits> {
    let cluster = sched.cluster();
    let part = cluster.partitions.get(spec.partition.index())?;
    let req = &spec.request;
    if let Some(m) = part.max_time.filter(|&m| spec.time_limit > m) {
        return Some(NeverFits::TimeLimit {
            limit: spec.time_limit,
            max_time: m,
        });
    }
    if let Some(m) = part.max_nodes.filter(|&m| req.min_nodes > m) {
        return Some(NeverFits::MaxNodes {
            wanted: req.min_nodes,
            max_nodes: m,
        });
    }
    if req.min_nodes < part.min_nodes {
        return Some(NeverFits::MinNodes {
            wanted: req.min_nodes,
            min_nodes: part.min_nodes,
        });
    }
    let mut nodes: Vec<NodeId> = part
        .nodes
        .iter()
        .copied()
        .filter(|n| req.exclude.binary_search(n).is_err())
        .filter(|&n| req.features_any == 0 || cluster.node(n).features & req.features_any != 0)
        .collect();
    if nodes.is_empty() && req.features_any != 0 {
        let wanted = (0..64)
            .filter(|b| req.features_any & (1u64 << b) != 0)
            .filter_map(|b| cluster.features.get(b).cloned())
            .collect();
        return Some(NeverFits::Features { wanted });
    }
    if let Some(n) = per_node(cluster, req, &mut nodes) {
        return Some(n);
    }
    let tasks_min = tasks_per_node_min(req).max(1);
    let mut hosts: Vec<u32> = nodes
        .iter()
        .map(|&n| {
            let cap = cluster.node(n).capacity;
            max_tasks_on(req, &cap, &cap, GpuReserve::of(cluster, n))
        })
        .filter(|&k| k >= tasks_min)
        .collect();
    if (hosts.len() as u64) < u64::from(req.min_nodes) {
        return Some(NeverFits::Nodes {
            wanted: req.min_nodes,
            available: hosts.len() as u32,
        });
    }
    hosts.sort_unstable_by(|a, b| b.cmp(a));
    let max_nodes = req.max_nodes.min(part.max_nodes.unwrap_or(u32::MAX)) as usize;
    let tasks: u64 = hosts.iter().take(max_nodes).map(|&k| u64::from(k)).sum();
    if tasks < u64::from(req.ntasks) {
        let cpt = u64::from(req.cpus_per_task.max(1));
        return Some(NeverFits::TotalCpus {
            wanted: u64::from(req.ntasks) * cpt,
            available: tasks * cpt,
        });
    }
    if !sched.could_ever_fit(spec.partition, req) {
        return Some(NeverFits::Shape);
    }
    None
}

/// The per-node dimensions in turn — GRES, processors, memory — each over the nodes
/// that passed the ones before, so that the answer names a node that exists. Leaves in
/// `nodes` those that pass them all.
fn per_node(cluster: &Cluster, req: &JobRequest, nodes: &mut Vec<NodeId>) -> Option<NeverFits> {
    let gpu = cluster.gpu_slot();
    // The untyped `gpu` slot first, then the others (types, shards) in slot order.
    let mut slots: Vec<usize> = (0..cluster.gres.len())
        .filter(|&s| req.gres_per_node[s] > 0)
        .collect();
    slots.sort_by_key(|&s| (Some(s) != gpu, s));
    let before = nodes.len();
    for s in slots {
        let wanted = req.gres_per_node[s];
        let largest = nodes
            .iter()
            .map(|&n| cluster.node(n).capacity.gres[s])
            .max()
            .unwrap_or(0);
        if largest < wanted {
            return Some(if Some(s) == gpu {
                NeverFits::Gpus { wanted, largest }
            } else {
                NeverFits::Gres {
                    name: cluster.gres.name(s),
                    wanted,
                    largest,
                }
            });
        }
        nodes.retain(|&n| cluster.node(n).capacity.gres[s] >= wanted);
    }
    let tasks = tasks_per_node_min(req).max(1);
    let cpt = req.cpus_per_task.max(1);
    let wanted = tasks.saturating_mul(cpt);
    let usable = |n: NodeId| {
        let node = cluster.node(n);
        let cap = node.capacity;
        cap.cpus
            .saturating_sub(GpuReserve::of(cluster, n).withheld(req, &cap))
    };
    let largest = nodes.iter().map(|&n| usable(n)).max().unwrap_or(0);
    if largest < wanted {
        let with_gpus = gpu
            .map(|g| req.gres_per_node[g])
            .filter(|&g| g > 0 && nodes.len() < before);
        return Some(NeverFits::Cpus {
            wanted,
            largest,
            with_gpus,
        });
    }
    nodes.retain(|&n| usable(n) >= wanted);
    let wanted_mib = match req.mem {
        MemRequest::PerNode(m) => m,
        MemRequest::PerCpu(m) => m.saturating_mul(u64::from(wanted)),
    };
    let largest_mib = nodes
        .iter()
        .map(|&n| cluster.node(n).capacity.mem_mib)
        .max()
        .unwrap_or(0);
    if largest_mib < wanted_mib {
        return Some(NeverFits::Memory {
            wanted_mib,
            largest_mib,
        });
    }
    nodes.retain(|&n| cluster.node(n).capacity.mem_mib >= wanted_mib);
    None
}
