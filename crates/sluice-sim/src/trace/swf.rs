//! The Standard Workload Format (Feitelson et al., Parallel Workloads Archive):
//! one job per line, 18 whitespace-separated integers; `;` lines are the header.

use std::io::BufRead;
use std::path::Path;

use sluice_core::{MAX_TIME, MAX_TIME_LIMIT};

use super::{open_lines, TraceJob, Workload};
use crate::error::SimError;

/// Names of the 18 SWF fields, for error messages.
const FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
];

/// Reads an SWF trace (plain or `.gz`). Header lines are kept; `MaxProcs` and
/// `MaxNodes` are read from them.
///
/// Errors: the file cannot be read; a job line without 18 integer fields
/// (`FILE:LINE: ...`); no job at all.
pub fn read(path: &Path) -> Result<Workload, SimError> {
    let mut w = Workload::default();
    let lines = open_lines(path)?;
    for (n, line) in BufRead::lines(lines).enumerate() {
        let lineno = n + 1;
        let line = line.map_err(|e| SimError::read(path, lineno, e))?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix(';') {
            header_field(&mut w, path, lineno, comment)?;
            w.header.push(line);
            continue;
        }
        let mut f = [0i64; 18];
        let mut count = 0;
        for (i, tok) in trimmed.split_whitespace().enumerate() {
            if i < 18 {
                f[i] = parse_field(path, lineno, i, tok)?;
            }
            count = i + 1;
        }
        if count != 18 {
            return Err(SimError::parse(
                path,
                lineno,
                format!("expected 18 fields, found {count}"),
            ));
        }
        if f[0] < 0 {
            return Err(SimError::parse(
                path,
                lineno,
                "job number must not be negative",
            ));
        }
        w.jobs.push(TraceJob {
            id: f[0] as u64,
            submit: f[1],
            run: f[3],
            procs: f[4],
            requested_procs: f[7],
            requested_time: f[8],
            user: f[11],
            group: f[12],
            gpu: None,
        });
    }
    if w.jobs.is_empty() {
        return Err(SimError::invalid(path, "no jobs in trace"));
    }
    Ok(w)
}

/// Fields the simulator uses: they must be whole numbers, -1 (unknown) or in range.
/// The others may be decimals (some archive files write average CPU time that way).
fn limit_of(i: usize) -> Option<i64> {
    match i {
        // job number, submit time
        0 | 1 => Some(MAX_TIME),
        // run time, requested time
        3 | 8 => Some(MAX_TIME_LIMIT),
        // processors allocated and requested, user id, group id
        4 | 7 | 11 | 12 => Some(i32::MAX as i64),
        _ => None,
    }
}

fn parse_field(path: &Path, line: usize, i: usize, tok: &str) -> Result<i64, SimError> {
    let bad = |what: &str| {
        SimError::parse(
            path,
            line,
            format!("field {} ({}) {what}: '{tok}'", i + 1, FIELDS[i]),
        )
    };
    match limit_of(i) {
        Some(max) => {
            let v: i64 = tok.parse().map_err(|_| bad("is not a whole number"))?;
            if v < -1 {
                return Err(bad("is negative (only -1, unknown, may be)"));
            }
            if v > max {
                return Err(bad("is out of range"));
            }
            Ok(v)
        }
        None => match tok.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v.round() as i64),
            _ => Err(bad("is not a number")),
        },
    }
}

fn header_field(w: &mut Workload, path: &Path, line: usize, comment: &str) -> Result<(), SimError> {
    let Some((key, value)) = comment.split_once(':') else {
        return Ok(());
    };
    let slot = match key.trim() {
        "MaxProcs" => &mut w.max_procs,
        "MaxNodes" => &mut w.max_nodes,
        _ => return Ok(()),
    };
    let value = value.trim();
    match value.parse::<u32>() {
        Ok(v) if v > 0 => {
            *slot = Some(v);
            Ok(())
        }
        _ => Err(SimError::parse(
            path,
            line,
            format!(
                "{}: expected a positive integer, found '{value}'",
                key.trim()
            ),
        )),
    }
}
