//! `scancel JOB.STEP`: one step cancelled (its srun told, its tasks killed, recorded
//! `CANCELLED by UID`) or signalled, as Slurm's scancel and job_step_signal do it.

use sluice_proto::error::ErrorCode;
use sluice_proto::types::CancelRequest;
use sluice_proto::{Client, ClientError};

use super::common::describe;
use sluice_proto::listing::ListedJob;

/// Slurm's error numbers (the exit status is the number's low byte): ESLURM_INVALID_JOB_ID
/// and ESLURM_USER_ID_MISSING.
const INVALID_JOB_ID: i32 = 2017;
const USER_ID_MISSING: i32 = 2010;

use super::scancel_live::{display, held, listed, names, Asked, Held, ALREADY_DONE, BAD_JOB};

/// Cancels (or with a signal, signals) `steps`, each `((job, array task), step)`;
/// returns scancel's exit status for them. As Slurm's: a step of a job that is not
/// live is `Invalid job id specified` (exit 1, said unless `-Q`, `level` below 0); one
/// the controller no longer runs is the same in the job's name (exit 225, its
/// ESLURM_INVALID_JOB_ID truncated); one already ending is said with `-v` only; another
/// user's is refused as Slurm's (`Invalid user id`, exit 218).
pub(crate) fn cancel(
    client: &Client,
    asked: &Asked,
    steps: &[((u64, Option<u32>), u32)],
    level: i32,
    keep: &dyn Fn(&ListedJob) -> bool,
) -> i32 {
    let mut steps = steps.to_vec();
    // A step named twice is asked for once.
    steps.sort_unstable();
    steps.dedup();
    let jobs: Vec<(u64, Option<u32>)> = steps.iter().map(|s| s.0).collect();
    let records = listed(client, &jobs);
    let mut rc = 0;
    // As Slurm's scancel: each step on its own, one refusal leaving the others.
    for (job, step) in steps {
        let live = records.as_deref().map(|l| {
            l.iter()
                .filter(|j| names(j, job) && !j.state.is_finished())
                .collect::<Vec<_>>()
        });
        let named = format!("{}.{step}", display(job));
        if held(records.as_deref(), job) != Held::Live {
            if level >= 0 {
                eprintln!("scancel: error: Kill job error on job step id {named}: {BAD_JOB}");
            }
            rc = rc.max(1);
            continue;
        }
        // A job the filters leave out is left alone without a word.
        if live.as_ref().is_some_and(|l| !l.iter().any(|j| keep(j))) {
            continue;
        }
        if level > 0 {
            // An array's task by its own id, as Slurm's scancel names it.
            let own = live
                .as_ref()
                .and_then(|l| l.first().filter(|_| job.1.is_some()).map(|j| j.id));
            asked.say_step(&own.map_or(named.clone(), |id| format!("{id}.{step}")));
        }
        let req = CancelRequest {
            steps: vec![(job.0, job.1, step)],
            signal: asked.signal,
            ..Default::default()
        };
        if let Err(e) = client.post::<_, serde_json::Value>("/v1/cancel", &req) {
            let msg = describe(&e);
            if msg.ends_with(ALREADY_DONE) {
                if level > 0 {
                    eprintln!("scancel: error: {msg}");
                }
                continue;
            }
            let code = match e {
                ClientError::Status {
                    code: ErrorCode::InvalidJobId,
                    ..
                } => INVALID_JOB_ID % 256,
                // Another user's step: Slurm's step signal refuses it as an unknown
                // user (ESLURM_USER_ID_MISSING).
                ClientError::Status {
                    code: ErrorCode::AccessDenied,
                    ..
                } => USER_ID_MISSING % 256,
                _ => 1,
            };
            eprintln!("scancel: error: {msg}");
            rc = rc.max(code);
        }
    }
    rc
}
