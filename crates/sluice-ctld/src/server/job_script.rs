//! `GET /v1/jobs/{id}/script` (`scontrol write batch_script`): a batch job's script as
//! submitted, while the controller has the job (until `MinJobAge` after its end), for
//! its owner or an operator (root, `SlurmUser`, `AdminLevel` Operator or above; under
//! `PrivateData=jobs` another user's job is no job at all, where Slurm, which applies no
//! `PrivateData` here, says `Invalid user id`). The controller does not keep scripts in memory
//! (`state/script.rs`): it is read back from the store on a blocking thread.

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use sluice_core::JobId;
use sluice_proto::error::{ApiError, ErrorCode};
use sluice_proto::types::JobScript;

use super::routes::reply;
use super::{App, Peer};
use crate::state::{script_key, BatchScript};

/// Slurm's `ESLURM_JOB_SCRIPT_MISSING`: an allocation (`salloc`, `srun`) has none.
const SCRIPT_MISSING: &str = "Job script not specified";

/// Slurm's `ESLURM_USER_ID_MISSING`, its answer to a user asking for another's script.
const NOT_YOURS: &str = "Invalid user id";

pub(super) async fn job_script(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
) -> Response {
    reply(script_of(&app, peer, JobId(id)).await)
}

/// The script of job `id`, as `peer` may read it.
async fn script_of(app: &App, peer: Peer, id: JobId) -> Result<JobScript, ApiError> {
    // Root, `SlurmUser` and operators by `AdminLevel` read any job's script.
    let caller = app.operator_caller(peer);
    let listing = app.listing.latest();
    // `PrivateData=jobs`: another user's job is no job at all.
    let hidden = app.owner_only(&listing, peer);
    let job = listing
        .job(id)
        .filter(|r| hidden.is_none_or(|uid| r.uid == uid))
        .ok_or_else(ApiError::invalid_job)?;
    if !(caller.admin || caller.uid == job.uid) {
        return Err(ApiError::new(ErrorCode::InvalidUserId, NOT_YOURS));
    }
    let missing = || ApiError::invalid(SCRIPT_MISSING);
    if job.desc.interactive {
        return Err(missing());
    }
    if !job.desc.script.is_empty() {
        return Ok(JobScript {
            script: job.desc.script,
        });
    }
    let key = script_key(id, job.array.map(|(a, t)| (JobId(a), t)));
    let store = app.store.clone();
    let kept = tokio::task::spawn_blocking(move || store.script(key))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(|e| ApiError::new(ErrorCode::Storage, e.to_string()))?
        .ok_or_else(missing)?;
    let s = BatchScript::from_store(kept).map_err(|e| ApiError::new(ErrorCode::Internal, e))?;
    if s.script.is_empty() {
        return Err(missing());
    }
    Ok(JobScript { script: s.script })
}
