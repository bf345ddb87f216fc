//! The Tiresias trace format (Gu et al., NSDI 2019): a job list and a one-line cluster
//! spec (`num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node`, memory
//! in GB).
//!
//! Mapping: a job asking `num_gpu` GPUs spans `ceil(num_gpu / GPUs per node)` nodes with
//! an even share of GPUs on each, one processor per GPU (the trace gives no CPU demand).
//! Run time is `duration`; with no user estimates, the time limit is the run time.

use std::io::BufRead;
use std::path::Path;

use super::{csv_fields, csv_int, open_lines, GpuShape, TraceJob, TraceNode, Workload};
use crate::error::SimError;

const JOB_COLUMNS: [&str; 7] = [
    "job_id",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "interval",
];
const SPEC_COLUMNS: [&str; 5] = [
    "num_switch",
    "num_node_p_switch",
    "num_gpu_p_node",
    "num_cpu_p_node",
    "mem_p_node",
];

/// Reads a Tiresias job list and its cluster spec.
///
/// Errors: unreadable files, unexpected columns, malformed rows (`FILE:LINE: ...`), a
/// job wanting more GPUs than the cluster has.
pub fn read(jobs: &Path, spec: &Path) -> Result<Workload, SimError> {
    let nodes = read_spec(spec)?;
    let gpus_per_node = nodes[0].gpus.max(1);
    let total_gpus: u32 = nodes.iter().map(|n| n.gpus).sum();
    let mut w = Workload {
        nodes,
        ..Default::default()
    };
    let mut lines = BufRead::lines(open_lines(jobs)?).enumerate();
    let header = match lines.next() {
        Some((_, h)) => h.map_err(|e| SimError::io(jobs, e))?,
        None => return Err(SimError::invalid(jobs, "empty file")),
    };
    if csv_fields(&header) != JOB_COLUMNS {
        return Err(SimError::parse(
            jobs,
            1,
            format!(
                "expected columns {}, found {}",
                JOB_COLUMNS.join(","),
                header.trim()
            ),
        ));
    }
    for (n, line) in lines {
        let lineno = n + 1;
        let line = line.map_err(|e| SimError::read(jobs, lineno, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let f = csv_fields(&line);
        if f.len() != JOB_COLUMNS.len() {
            return Err(SimError::parse(
                jobs,
                lineno,
                format!("expected {} columns, found {}", JOB_COLUMNS.len(), f.len()),
            ));
        }
        let int = |i: usize| csv_int(jobs, lineno, JOB_COLUMNS[i], f[i]);
        let (id, gpus, submit, duration) = (int(0)?, int(1)?, int(2)?, int(5)?);
        if id < 0 || gpus < 1 || submit < 0 || duration < 1 {
            return Err(SimError::parse(
                jobs,
                lineno,
                "job_id, num_gpu, submit_time and duration must be positive",
            ));
        }
        let gpus = gpus as u32;
        if gpus > total_gpus {
            return Err(SimError::parse(
                jobs,
                lineno,
                format!("job wants {gpus} GPUs; the cluster has {total_gpus}"),
            ));
        }
        let nodes = gpus.div_ceil(gpus_per_node);
        let per_node = gpus.div_ceil(nodes);
        w.jobs.push(TraceJob {
            id: id as u64,
            submit,
            run: duration,
            procs: gpus as i64,
            requested_procs: gpus as i64,
            requested_time: duration,
            user: -1,
            group: -1,
            gpu: Some(GpuShape {
                nodes,
                cpus_per_node: per_node,
                mem_per_node_mib: 0,
                gpus_per_node: per_node,
                gpu_milli: 0,
                gpu_models: Vec::new(),
            }),
        });
    }
    if w.jobs.is_empty() {
        return Err(SimError::invalid(jobs, "no jobs in trace"));
    }
    Ok(w)
}

fn read_spec(path: &Path) -> Result<Vec<TraceNode>, SimError> {
    let mut lines = BufRead::lines(open_lines(path)?);
    let header = lines
        .next()
        .transpose()
        .map_err(|e| SimError::io(path, e))?
        .unwrap_or_default();
    if csv_fields(&header) != SPEC_COLUMNS {
        return Err(SimError::parse(
            path,
            1,
            format!(
                "expected columns {}, found {}",
                SPEC_COLUMNS.join(","),
                header.trim()
            ),
        ));
    }
    let row = lines
        .next()
        .transpose()
        .map_err(|e| SimError::io(path, e))?
        .ok_or_else(|| SimError::invalid(path, "no cluster line after the header"))?;
    let f = csv_fields(&row);
    if f.len() != SPEC_COLUMNS.len() {
        return Err(SimError::parse(
            path,
            2,
            format!("expected 5 columns, found {}", f.len()),
        ));
    }
    let mut v = [0i64; 5];
    for i in 0..5 {
        v[i] = csv_int(path, 2, SPEC_COLUMNS[i], f[i])?;
        if v[i] < 1 {
            return Err(SimError::parse(
                path,
                2,
                format!("{} must be positive", SPEC_COLUMNS[i]),
            ));
        }
    }
    let mut nodes = Vec::new();
    for sw in 0..v[0] {
        for i in 0..v[1] {
            nodes.push(TraceNode {
                name: format!("s{sw}n{i:02}"),
                cpus: v[3] as u32,
                mem_mib: v[4] as u64 * 1024,
                gpus: v[2] as u32,
                gpu_model: None,
                switch: Some(sw as u32),
            });
        }
    }
    Ok(nodes)
}
