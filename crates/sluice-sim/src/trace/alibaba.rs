//! The Alibaba GPU cluster trace (cluster-trace-gpu-v2023, "openb"): a pod list and a
//! node list, both CSV.
//!
//! Mapping: a pod is a one-node job asking `ceil(cpu_milli / 1000)` processors,
//! `memory_mib` MiB and `num_gpu` GPUs; a pod with `num_gpu = 1` and `gpu_milli < 1000`
//! shares a GPU and asks that many thousandths of one (the `shard` GRES; every GPU is
//! 1000 shards, and a GPU used whole lends none). `gpu_spec` (`A|B`)
//! restricts the pod to nodes whose GPU model is one of those. Run time is
//! `deletion_time - scheduled_time`; the trace has no user estimates, so the time limit
//! is the run time. Pods that were never scheduled (no `scheduled_time`) never ran and
//! are left out.

use std::io::BufRead;
use std::path::Path;

use super::{csv_fields, csv_int, open_lines, GpuShape, TraceJob, TraceNode, Workload};
use crate::error::SimError;

const POD_COLUMNS: [&str; 11] = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];
const NODE_COLUMNS: [&str; 5] = ["sn", "cpu_milli", "memory_mib", "gpu", "model"];

fn check_header(path: &Path, header: &str, want: &[&str]) -> Result<(), SimError> {
    let got = csv_fields(header);
    if got != want {
        return Err(SimError::parse(
            path,
            1,
            format!(
                "expected columns {}, found {}",
                want.join(","),
                header.trim()
            ),
        ));
    }
    Ok(())
}

/// Reads a pod list and the node list it ran on.
///
/// Errors: unreadable files, a header other than the expected columns, a malformed
/// row (`FILE:LINE: ...`), no nodes or no pods that ran.
pub fn read(pods: &Path, nodes: &Path) -> Result<Workload, SimError> {
    let mut w = Workload {
        nodes: read_nodes(nodes)?,
        ..Default::default()
    };
    let mut lines = BufRead::lines(open_lines(pods)?).enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(SimError::invalid(pods, "empty file"));
    };
    check_header(
        pods,
        &header.map_err(|e| SimError::io(pods, e))?,
        &POD_COLUMNS,
    )?;
    for (n, line) in lines {
        let lineno = n + 1;
        let line = line.map_err(|e| SimError::read(pods, lineno, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let f = csv_fields(&line);
        if f.len() != POD_COLUMNS.len() {
            return Err(SimError::parse(
                pods,
                lineno,
                format!("expected {} columns, found {}", POD_COLUMNS.len(), f.len()),
            ));
        }
        let int = |i: usize| csv_int(pods, lineno, POD_COLUMNS[i], f[i]);
        let (cpu_milli, mem, num_gpu, gpu_milli) = (int(1)?, int(2)?, int(3)?, int(4)?);
        let creation = int(8)?;
        if f[10].is_empty() {
            w.not_run += 1; // never scheduled, never ran
            continue;
        }
        let (deletion, scheduled) = (int(9)?, int(10)?);
        if cpu_milli < 0 || mem < 0 || num_gpu < 0 || gpu_milli < 0 || deletion < scheduled {
            return Err(SimError::parse(
                pods,
                lineno,
                "negative resource or deletion before scheduling",
            ));
        }
        let id = f[0]
            .rsplit('-')
            .next()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(n as u64);
        let sharing = num_gpu == 1 && gpu_milli > 0 && gpu_milli < 1000;
        let run = (deletion - scheduled).max(1);
        w.jobs.push(TraceJob {
            id,
            submit: creation,
            run,
            procs: (cpu_milli + 999) / 1000,
            requested_procs: (cpu_milli + 999) / 1000,
            requested_time: run,
            user: -1,
            group: -1,
            gpu: Some(GpuShape {
                nodes: 1,
                cpus_per_node: ((cpu_milli + 999) / 1000) as u32,
                mem_per_node_mib: mem as u64,
                gpus_per_node: if sharing { 0 } else { num_gpu as u32 },
                gpu_milli: if sharing { gpu_milli as u32 } else { 0 },
                gpu_models: f[5]
                    .split('|')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            }),
        });
    }
    if w.jobs.is_empty() {
        return Err(SimError::invalid(pods, "no pod in the list ever ran"));
    }
    Ok(w)
}

fn read_nodes(path: &Path) -> Result<Vec<TraceNode>, SimError> {
    let mut lines = BufRead::lines(open_lines(path)?).enumerate();
    let Some((_, header)) = lines.next() else {
        return Err(SimError::invalid(path, "empty file"));
    };
    check_header(
        path,
        &header.map_err(|e| SimError::io(path, e))?,
        &NODE_COLUMNS,
    )?;
    let mut nodes = Vec::new();
    for (n, line) in lines {
        let lineno = n + 1;
        let line = line.map_err(|e| SimError::read(path, lineno, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let f = csv_fields(&line);
        if f.len() != NODE_COLUMNS.len() {
            return Err(SimError::parse(
                path,
                lineno,
                format!("expected {} columns, found {}", NODE_COLUMNS.len(), f.len()),
            ));
        }
        let int = |i: usize| csv_int(path, lineno, NODE_COLUMNS[i], f[i]);
        let (cpu_milli, mem, gpus) = (int(1)?, int(2)?, int(3)?);
        if cpu_milli <= 0 || mem < 0 || gpus < 0 {
            return Err(SimError::parse(
                path,
                lineno,
                "a node needs processors and no negative counts",
            ));
        }
        nodes.push(TraceNode {
            name: f[0].to_string(),
            cpus: (cpu_milli / 1000) as u32,
            mem_mib: mem as u64,
            gpus: gpus as u32,
            gpu_model: (!f[4].is_empty() && f[4] != "nan").then(|| f[4].to_string()),
            switch: None,
        });
    }
    if nodes.is_empty() {
        return Err(SimError::invalid(path, "no nodes"));
    }
    Ok(nodes)
}
