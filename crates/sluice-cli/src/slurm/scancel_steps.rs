//! `scancel JOB.STEP`: one step cancelled (its srun told, its tasks killed, recorded
//! `CANCELLED by UID`) or signalled, as Slurm's scancel and job_step_signal do it.

use sluice_proto::error::ErrorCode;
use sluice_proto::types::CancelRequest;
use sluice_proto::{Client, ClientError};

use super::common::describe;
use super::scancel_live::{display, held, listed, Asked, Held, ALREADY_DONE, BAD_JOB};

/// Cancels (or with a signal, signals) `steps`, each `((job, array task), step)`;
/// returns scancel's exit status for them. As Slurm's: a step of a job that is not
/// live is `Invalid job id specified` (exit 1, said unless `-Q`, `level` below 0); one
/// the controller no longer runs is the same in the job's name (exit 225, its
/// ESLURM_INVALID_JOB_ID truncated); one already ending is said with `-v` only.
pub(crate) fn cancel(
    client: &Client,
    asked: &Asked,
    steps: &[((u64, Option<u32>), u32)],
    level: i32,
) -> i32 {
    let jobs: Vec<(u64, Option<u32>)> = steps.iter().map(|s| s.0).collect();
    let records = listed(client, &jobs);
    let mut rc = 0;
    let mut live = Vec::new();
    for &(job, step) in steps {
        let named = format!("{}.{step}", display(job));
        if held(records.as_deref(), job) != Held::Live {
            if level >= 0 {
                eprintln!("scancel: error: Kill job error on job step id {named}: {BAD_JOB}");
            }
            rc = 1;
            continue;
        }
        if level > 0 {
            asked.say_step(&named);
        }
        live.push((job.0, job.1, step));
    }
    if live.is_empty() {
        return rc;
    }
    let req = CancelRequest {
        steps: live,
        signal: asked.signal,
        ..Default::default()
    };
    match client.post::<_, serde_json::Value>("/v1/cancel", &req) {
        Ok(_) => rc,
        Err(e) => {
            let msg = describe(&e);
            if msg.ends_with(ALREADY_DONE) {
                if level > 0 {
                    eprintln!("scancel: error: {msg}");
                }
                return rc;
            }
            eprintln!("scancel: error: {msg}");
            let code = match e {
                ClientError::Status {
                    code: ErrorCode::InvalidJobId,
                    ..
                } => 2017 % 256,
                _ => 1,
            };
            rc.max(code)
        }
    }
}
