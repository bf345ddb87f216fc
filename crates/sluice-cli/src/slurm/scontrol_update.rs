//! `scontrol update`: `NodeName=LIST State=... Reason=...` for operators, and
//! `JobId=N KEY=VALUE...` for a job's owner (or an operator).

use sluice_proto::types::{JobUpdate, NodeUpdate};
use sluice_proto::{Client, ClientError};

use super::common::{describe, now, parse_begin};

/// Runs `scontrol update WORDS` (the words after `update`); the exit status.
///
/// Prints nothing on success, as Slurm's does; on failure `slurm_update error: MESSAGE`
/// and exit 1.
pub fn run(client: &Client, words: &[String]) -> i32 {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k, v)) => pairs.push((k.to_string(), v.to_string())),
            None => {
                eprintln!("scontrol: error: Invalid input: {w}");
                eprintln!("Request aborted");
                return 1;
            }
        }
    }
    let find = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    };
    if let Some(nodes) = find("NodeName") {
        let state = find("State").unwrap_or_default();
        let reason = find("Reason");
        let draining = ["DRAIN", "FAIL", "DOWN"]
            .iter()
            .any(|s| state.eq_ignore_ascii_case(s));
        if draining && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
            eprintln!("{}", sluice_ctld::state::REASON_NEEDED);
            return 1;
        }
        let body = NodeUpdate {
            nodes,
            state,
            reason,
        };
        return answer(client.post::<_, serde_json::Value>("/v1/nodes/update", &body));
    }
    let Some(job) = find("JobId").or_else(|| find("Job")) else {
        eprintln!("scontrol: error: No valid entity in update command");
        eprintln!("Input line must include \"NodeName\", \"PartitionName\", \"Reservation=name\", or \"JobId\"");
        return 1;
    };
    let (id, task) = match job.split_once('_') {
        Some((a, t)) => (a.parse::<u64>().ok(), t.parse::<u32>().ok().map(Some)),
        None => (job.parse::<u64>().ok(), Some(None)),
    };
    let (Some(id), Some(task)) = (id, task) else {
        eprintln!("slurm_update error: Invalid job id specified");
        return 1;
    };
    let mut changes = Vec::new();
    for (k, v) in &pairs {
        if k.eq_ignore_ascii_case("JobId") || k.eq_ignore_ascii_case("Job") {
            continue;
        }
        let v = if k.eq_ignore_ascii_case("StartTime") || k.eq_ignore_ascii_case("BeginTime") {
            match parse_begin(v, now()) {
                Some(t) => t.to_string(),
                None => {
                    eprintln!("scontrol: error: Invalid input: {k}={v}");
                    return 1;
                }
            }
        } else {
            v.clone()
        };
        let key = if k.eq_ignore_ascii_case("BeginTime") {
            "StartTime".to_string()
        } else {
            k.clone()
        };
        changes.push((key, v));
    }
    let body = JobUpdate { task, changes };
    answer(client.post::<_, serde_json::Value>(&format!("/v1/jobs/{id}/update"), &body))
}

fn answer(r: Result<serde_json::Value, ClientError>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("slurm_update error: {}", describe(&e));
            1
        }
    }
}
