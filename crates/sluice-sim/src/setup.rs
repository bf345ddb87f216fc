//! From a trace to what the core schedules: the machine and the jobs.
//!
//! Two modes:
//! - **reference**: the textbook semantics the scheduling literature uses (and the
//!   Hebrew University simulator implements): one pool of `P` processors, jobs
//!   normalised as described in [`normalise_reference`];
//! - **full** (default): the same jobs placed on nodes, with the same core code the
//!   controller runs.

use sluice_core::{
    Cluster, JobId, JobRequest, JobSpec, MemRequest, Node, Partition, PartitionId, Secs, Time,
};

use crate::error::SimError;
use crate::trace::{TraceJob, Workload};

/// How the simulator interprets a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One processor pool, reference normalisation.
    Reference,
    /// Nodes, the controller's placement.
    Full,
}

/// A job ready for replay: what the core is told, and what only the simulator knows.
#[derive(Clone, Debug)]
pub struct SimJob {
    /// What is submitted to the core.
    pub spec: JobSpec,
    /// How long the job really runs if not killed (seconds).
    pub run: Secs,
    /// Processors it takes (for reports).
    pub procs: u32,
    /// GPUs it takes over all nodes (for GPU-seconds; shared GPUs count by thousandths).
    pub gpu_milli: u64,
    /// Group id (the account it charges when fair-share is simulated).
    pub group: u32,
}

/// Jobs the replay leaves out, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Jobs with no run time or no processors recorded (full mode), or that the trace
    /// says never ran.
    pub no_data: u64,
}

/// Where the machine comes from.
#[derive(Clone, Debug, Default)]
pub struct MachineSpec {
    /// `--procs N`: processors in all.
    pub procs: Option<u32>,
    /// `--nodes N`: how many nodes share those processors (full mode).
    pub nodes: Option<u32>,
    /// A cluster read from a slurm.conf.
    pub config: Option<Cluster>,
}

/// Normalises one SWF job for reference mode, with `p` processors in the machine.
/// Returns `(submit, run, estimate, procs)`.
///
/// - run time ≤ 0, allocated processors ≤ 0, or submit time < 0: a *tiny* job — run 1,
///   estimate 1, processors max(1, allocated), submit max(submit, 1);
/// - otherwise estimate = max(requested time, run time, 1), run = max(min(requested
///   time, run time), 1) (a job never runs past its estimate), processors =
///   max(min(allocated, p), 1).
pub fn normalise_reference(j: &TraceJob, p: u32) -> (Time, Secs, Secs, u32) {
    if j.run <= 0 || j.procs <= 0 || j.submit < 0 {
        let procs = j.procs.max(1).min(p as i64) as u32;
        return (j.submit.max(1), 1, 1, procs);
    }
    let est = j.requested_time.max(j.run).max(1);
    let run = j.requested_time.min(j.run).max(1);
    let procs = j.procs.min(p as i64).max(1) as u32;
    (j.submit, run, est, procs)
}

/// A trace's user id as a uid; unknown (-1) becomes [`UNKNOWN_USER`].
fn uid(user: i64) -> u32 {
    u32::try_from(user).unwrap_or(UNKNOWN_USER)
}

/// The uid recorded for jobs whose trace gives no user.
pub const UNKNOWN_USER: u32 = u32::MAX;

fn machine_error(msg: impl Into<String>) -> SimError {
    SimError::Machine(msg.into())
}

/// Builds the machine and the jobs for a replay.
///
/// Errors: no machine size (an SWF header without `MaxProcs` and no `--procs`), a
/// processor count that does not divide over the nodes, `--reference` with a GPU trace.
pub fn prepare(
    w: &Workload,
    mode: Mode,
    machine: &MachineSpec,
    trace_name: &std::path::Path,
) -> Result<(Cluster, Vec<SimJob>, Skipped), SimError> {
    let gpu_trace = !w.nodes.is_empty();
    let mut skipped = Skipped { no_data: w.not_run };
    let mut jobs = Vec::with_capacity(w.jobs.len());
    let priority = |i: usize| u32::MAX.saturating_sub(i as u32);
    if mode == Mode::Reference {
        if gpu_trace {
            return Err(machine_error(
                "--reference replays SWF traces on one processor pool; GPU traces need the full mode",
            ));
        }
        let p = machine.procs.or(w.max_procs).ok_or_else(|| {
            SimError::invalid(
                trace_name,
                "the header gives no MaxProcs; give the machine size with --procs N",
            )
        })?;
        let cluster = Cluster::homogeneous("batch", 1, p);
        for (i, j) in w.jobs.iter().enumerate() {
            let (submit, run, est, procs) = normalise_reference(j, p);
            jobs.push(SimJob {
                spec: JobSpec {
                    id: JobId(j.id),
                    user: uid(j.user),
                    partition: PartitionId(0),
                    submit,
                    begin: submit,
                    request: JobRequest::procs(procs).on_one_node(),
                    time_limit: est,
                    priority: priority(i),
                    acct: Default::default(),
                },
                run,
                procs,
                group: uid(j.group),
                gpu_milli: 0,
            });
        }
        return Ok((cluster, jobs, skipped));
    }
    let cluster = match (&machine.config, gpu_trace) {
        (Some(c), _) => c.clone(),
        (None, true) => gpu_cluster(w)?,
        (None, false) => swf_cluster(w, machine, trace_name)?,
    };
    let part = cluster
        .default_partition()
        .ok_or_else(|| machine_error("the configuration defines no partition"))?;
    let part_time = {
        let p = cluster.partition(part);
        p.default_time.or(p.max_time)
    };
    for (i, j) in w.jobs.iter().enumerate() {
        let procs = if j.procs > 0 {
            j.procs
        } else {
            j.requested_procs
        };
        if j.run <= 0 || procs <= 0 {
            skipped.no_data += 1;
            continue;
        }
        let limit = if j.requested_time > 0 {
            j.requested_time
        } else {
            part_time.unwrap_or(j.run)
        };
        let (request, gpu_milli) = match &j.gpu {
            None => (JobRequest::procs(procs.min(u32::MAX as i64) as u32), 0),
            Some(g) => gpu_request(&cluster, g),
        };
        let submit = j.submit.max(0);
        jobs.push(SimJob {
            procs: (request.min_cpus()).min(u32::MAX as u64) as u32,
            spec: JobSpec {
                id: JobId(j.id),
                user: uid(j.user),
                partition: part,
                submit,
                begin: submit,
                request,
                time_limit: limit.max(1),
                priority: priority(i),
                acct: Default::default(),
            },
            run: j.run,
            group: uid(j.group),
            gpu_milli,
        });
    }
    Ok((cluster, jobs, skipped))
}

fn swf_cluster(
    w: &Workload,
    m: &MachineSpec,
    trace: &std::path::Path,
) -> Result<Cluster, SimError> {
    let procs = m.procs.or(w.max_procs).ok_or_else(|| {
        SimError::invalid(
            trace,
            "the header gives no MaxProcs; give the machine size with --procs N",
        )
    })?;
    let nodes = match (m.nodes, m.procs) {
        (Some(n), _) => n,
        (None, Some(_)) => w.max_nodes.filter(|n| procs % n == 0).unwrap_or(procs),
        (None, None) => w.max_nodes.unwrap_or(procs),
    };
    if nodes == 0 || procs % nodes != 0 {
        return Err(machine_error(format!(
            "{procs} processors do not divide evenly over {nodes} nodes (choose --procs and --nodes so that they do)"
        )));
    }
    Ok(Cluster::homogeneous("batch", nodes, procs / nodes))
}

fn gpu_cluster(w: &Workload) -> Result<Cluster, SimError> {
    let mut c = Cluster::default();
    let sharing = w
        .jobs
        .iter()
        .any(|j| j.gpu.as_ref().is_some_and(|g| g.gpu_milli > 0));
    let gpu = c
        .gres
        .slot_for("gpu", None)
        .map_err(|e| machine_error(e.to_string()))?;
    let shard = if sharing {
        Some(
            c.gres
                .slot_for("shard", None)
                .map_err(|e| machine_error(e.to_string()))?,
        )
    } else {
        None
    };
    for n in &w.nodes {
        let mut node = Node::new(n.name.clone(), n.cpus, n.mem_mib);
        node.capacity.gres[gpu] = n.gpus;
        if let Some(s) = shard {
            node.capacity.gres[s] = n.gpus * 1000;
            node.gpus = vec![
                sluice_core::Gpu {
                    shards: 1000,
                    ..Default::default()
                };
                n.gpus as usize
            ];
        }
        if let Some(sw) = n.switch {
            let sw = u16::try_from(sw).map_err(|_| machine_error("more than 65,535 switches"))?;
            node.leaf_switch = Some(sw);
            while c.switches.len() <= sw as usize {
                let name = format!("s{}", c.switches.len());
                c.switches.push(name);
            }
        }
        if let Some(model) = &n.gpu_model {
            node.features = c
                .feature_bit(model)
                .ok_or_else(|| machine_error("more than 64 GPU models"))?;
        }
        c.nodes.push(node);
    }
    let mut part = Partition::new(
        "gpu",
        (0..c.nodes.len() as u32).map(sluice_core::NodeId).collect(),
    );
    part.is_default = true;
    c.partitions.push(part);
    Ok(c)
}

fn gpu_request(c: &Cluster, g: &crate::trace::GpuShape) -> (JobRequest, u64) {
    let mut r = JobRequest::procs(g.nodes.max(1));
    r.min_nodes = g.nodes.max(1);
    r.max_nodes = g.nodes.max(1);
    r.ntasks_per_node = Some(1);
    r.cpus_per_task = g.cpus_per_node.max(1);
    r.mem = MemRequest::PerNode(g.mem_per_node_mib);
    let shard = c.gres.find("shard", None);
    // Without a `shard` GRES to share GPUs by, a GPU-sharing job takes a whole GPU.
    let whole_gpus = if g.gpu_milli > 0 && shard.is_none() {
        1
    } else {
        g.gpus_per_node
    };
    if let Some(gpu) = c.gres.find("gpu", None) {
        r.gres_per_node[gpu] = whole_gpus;
    }
    // A sharing pod asks its thousandths of a GPU as shards; a whole-GPU pod asks GPUs
    // only (the core keeps a GPU used whole from lending its shards, see
    // `sluice_core::gpus`).
    if let (Some(shard), true) = (shard, g.gpu_milli > 0) {
        r.gres_per_node[shard] = g.gpu_milli;
    }
    for m in &g.gpu_models {
        if let Some(i) = c.features.iter().position(|f| f == m) {
            r.features_any |= 1 << i;
        }
    }
    if !g.gpu_models.is_empty() && r.features_any == 0 {
        // No node has any of the wanted models: a bit no node carries, so that the
        // submission is refused as unsatisfiable rather than run anywhere.
        r.features_any = 1 << 63;
    }
    let milli = if g.gpu_milli > 0 && shard.is_some() {
        g.gpu_milli as u64
    } else {
        whole_gpus as u64 * g.nodes.max(1) as u64 * 1000
    };
    (r, milli)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swf(submit: Time, run: Secs, procs: i64, req_time: Secs) -> TraceJob {
        TraceJob {
            id: 1,
            submit,
            run,
            procs,
            requested_procs: procs,
            requested_time: req_time,
            user: 3,
            group: 1,
            gpu: None,
        }
    }

    #[test]
    fn reference_normalisation_follows_the_rules() {
        assert_eq!(
            normalise_reference(&swf(0, 864895, -1, 43200), 128),
            (1, 1, 1, 1),
            "no processors: tiny"
        );
        assert_eq!(
            normalise_reference(&swf(500, 0, 8, 100), 128),
            (500, 1, 1, 8),
            "no run time: tiny"
        );
        assert_eq!(
            normalise_reference(&swf(5, 172830, 5, 172800), 128),
            (5, 172800, 172830, 5)
        );
        assert_eq!(
            normalise_reference(&swf(5, 100, 500, -1), 128),
            (5, 1, 100, 128),
            "run = max(min(-1, 100), 1): the rule as written"
        );
    }
}
