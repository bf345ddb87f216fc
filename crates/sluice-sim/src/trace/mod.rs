//! Workload traces: what was submitted, when, asking for what, and how long it ran.
//!
//! Readers turn each format into a [`Workload`]: the Standard Workload Format of the
//! Parallel Workloads Archive ([`swf`]), and GPU-cluster traces ([`alibaba`] openb pod
//! and node lists, [`tiresias`] job list and cluster spec).

pub mod alibaba;
pub mod swf;
pub mod tiresias;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use sluice_core::{Secs, Time};

use crate::error::SimError;

/// A job's resource shape as a GPU trace describes it (SWF jobs only count processors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuShape {
    /// Nodes the job spans.
    pub nodes: u32,
    /// Processors per node.
    pub cpus_per_node: u32,
    /// Memory per node, MiB.
    pub mem_per_node_mib: u64,
    /// Whole GPUs per node.
    pub gpus_per_node: u32,
    /// Thousandths of one GPU, for a job that shares a GPU (`gpus_per_node` is 0 then).
    pub gpu_milli: u32,
    /// Acceptable GPU models (any of them); empty for any.
    pub gpu_models: Vec<String>,
}

/// One job of a trace, as recorded. `-1` means unknown, as in SWF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceJob {
    /// Job number.
    pub id: u64,
    /// Submission time, seconds from the start of the trace.
    pub submit: Time,
    /// Actual run time, seconds.
    pub run: Secs,
    /// Processors allocated (SWF field 5).
    pub procs: i64,
    /// Processors requested (SWF field 8).
    pub requested_procs: i64,
    /// Requested time (the user's estimate, the job's time limit), seconds.
    pub requested_time: Secs,
    /// User id.
    pub user: i64,
    /// Group id (SWF field 13; -1 when unknown).
    pub group: i64,
    /// Resource shape from a GPU trace.
    pub gpu: Option<GpuShape>,
}

/// A node of a GPU trace's machine description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceNode {
    /// Host name.
    pub name: String,
    /// Processors.
    pub cpus: u32,
    /// Memory, MiB.
    pub mem_mib: u64,
    /// GPUs.
    pub gpus: u32,
    /// GPU model, if any.
    pub gpu_model: Option<String>,
    /// Switch (for traces that give a tree), if known; kept for topology-aware replays.
    pub switch: Option<u32>,
}

/// A whole trace: its jobs in file order and what it says about the machine.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// Jobs in file order.
    pub jobs: Vec<TraceJob>,
    /// `MaxProcs` from an SWF header.
    pub max_procs: Option<u32>,
    /// `MaxNodes` from an SWF header.
    pub max_nodes: Option<u32>,
    /// The machine, for traces that describe it node by node.
    pub nodes: Vec<TraceNode>,
    /// Header comment lines, verbatim (they carry the trace's copyright notice).
    pub header: Vec<String>,
    /// Records the reader left out because the job never ran (e.g. pods never scheduled).
    pub not_run: u64,
}

/// Opens a file for reading lines, decompressing it when its name ends in `.gz`.
pub(crate) fn open_lines(path: &Path) -> Result<Box<dyn BufRead>, SimError> {
    let file = std::fs::File::open(path).map_err(|e| SimError::io(path, e))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 16, reader)))
}

/// The trace formats `sluice sim` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Standard Workload Format (`.swf`, `.swf.gz`).
    Swf,
    /// Alibaba GPU cluster trace (openb pod list CSV plus node list CSV).
    Alibaba,
    /// Tiresias job list CSV (plus cluster spec CSV).
    Tiresias,
}

/// Guesses a trace's format from its first line: a CSV header names its columns.
pub fn detect_format(path: &Path) -> Result<Format, SimError> {
    let mut lines = open_lines(path)?;
    let mut first = String::new();
    lines
        .read_line(&mut first)
        .map_err(|e| SimError::io(path, e))?;
    let first = first.trim();
    if first.starts_with("name,") && first.contains("num_gpu") {
        Ok(Format::Alibaba)
    } else if first.starts_with("job_id,") && first.contains("num_gpu") {
        Ok(Format::Tiresias)
    } else if first.contains(',') && !first.starts_with(';') {
        Err(SimError::invalid(
            path,
            "unrecognised CSV trace (expected an Alibaba openb pod list or a Tiresias job list)",
        ))
    } else {
        Ok(Format::Swf)
    }
}

/// Splits a CSV line on commas (these traces quote nothing).
pub(crate) fn csv_fields(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

/// Parses a CSV field as an integer, with a message naming the column.
pub(crate) fn csv_int(
    path: &Path,
    line: usize,
    column: &str,
    value: &str,
) -> Result<i64, SimError> {
    value.parse::<i64>().map_err(|_| {
        SimError::parse(
            path,
            line,
            format!("column {column}: expected an integer, found '{value}'"),
        )
    })
}
