//! Accounting (`sacct`): what the database keeps of every job, long after the loop
//! forgot it (`MinJobAge`), read from disk off the loop.
//!
//! `POST /v1/accounting` takes sacct's selection ([`AccountingQuery`]) and has the
//! store select the jobs by index ([`sluice_store::JobQuery`]): only the rows that
//! match, with their steps, are read and decoded, so that `sacct -j ONE` costs one job
//! whatever the database's history. `GET /v1/accounting` answers everything (`sluice
//! report`). The keys the store indexes a job by are read from its record here
//! ([`job_keys`]), once per write.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::error::ApiError;
use sluice_proto::types::{Accounting, AccountingQuery, JobRecord, StepRecord};
use sluice_store::{JobKeys, JobQuery};

use super::routes::storage;
use super::{refuse, App};

/// What the store selects a job's row by, read from its record.
pub fn job_keys(r: &JobRecord) -> JobKeys {
    JobKeys {
        array_job: r.array.map(|a| a.0),
        array_task: r.array.map(|a| a.1),
        user: r.user.clone(),
        account: r.account.clone(),
        partition: r.partition.clone(),
        state: r.state.name().to_string(),
        name: r.desc.name.clone(),
        submit: r.submit_time,
        end: r.end_time,
    }
}

/// The keys of a stored record (a database written before the store kept them);
/// none for a record that cannot be read (it is found by its id only, and reported
/// at start).
pub fn keys_of_record(record: &str) -> JobKeys {
    match serde_json::from_str::<JobRecord>(record) {
        Ok(mut r) => {
            r.upgrade();
            job_keys(&r)
        }
        Err(_) => JobKeys::default(),
    }
}

/// `GET /v1/accounting`: every job, step and earlier run the database holds.
pub(super) async fn everything(State(app): State<App>) -> Response {
    read(
        app,
        JobQuery {
            runs: true,
            ..JobQuery::default()
        },
    )
    .await
}

/// `POST /v1/accounting`: the jobs `q` selects, with their steps (and earlier runs
/// with `duplicates`).
pub(super) async fn query(State(app): State<App>, Json(q): Json<AccountingQuery>) -> Response {
    let query = JobQuery {
        jobs: q.jobs,
        tasks: q.tasks,
        users: q.users,
        accounts: q.accounts,
        partitions: q.partitions,
        states: q.states.iter().map(|s| s.name().to_string()).collect(),
        names: q.names,
        ended_since: q.since,
        submitted_by: q.until,
        runs: q.duplicates,
    };
    match q.cluster {
        Some(c) if c != app.cluster_name => match select_in(&app, c, query).await {
            Ok(acct) => Json(acct).into_response(),
            Err(e) => refuse(e),
        },
        _ => read(app, query).await,
    }
}

/// Reads what `query` selects on a blocking thread and decodes it.
async fn read(app: App, query: JobQuery) -> Response {
    match select(&app, query).await {
        Ok(acct) => Json(acct).into_response(),
        Err(e) => refuse(e),
    }
}

/// The jobs, steps and earlier runs `query` selects, read by index on a blocking
/// thread and decoded: what `sacct` reads, and the REST API's `/slurmdb/` jobs.
///
/// Errors: the store could not be read.
pub(super) async fn select(app: &App, query: JobQuery) -> Result<Accounting, ApiError> {
    let store = app.store.clone();
    decode(tokio::task::spawn_blocking(move || store.query_jobs(&query)).await)
}

/// [`select`] among the jobs of cluster `cluster`, another than the controller's own
/// sharing its database (`sacct -M`, the REST API's `cluster` parameter): none for a
/// cluster the database does not hold.
///
/// Errors: the store could not be read.
pub(super) async fn select_in(
    app: &App,
    cluster: String,
    query: JobQuery,
) -> Result<Accounting, ApiError> {
    let store = app.store.clone();
    decode(tokio::task::spawn_blocking(move || store.query_cluster_jobs(&cluster, &query)).await)
}

/// The records found, decoded for `sacct`.
fn decode(
    found: Result<Result<sluice_store::Found, sluice_store::StoreError>, tokio::task::JoinError>,
) -> Result<Accounting, ApiError> {
    let found = match found {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => return Err(storage(e.to_string())),
        Err(e) => return Err(storage(e.to_string())),
    };
    let job = |record: &str| {
        serde_json::from_str::<JobRecord>(record).ok().map(|mut r| {
            r.upgrade();
            // sacct reports neither; they are most of a record.
            r.desc.environment = Vec::new();
            r.desc.script = String::new();
            r
        })
    };
    let jobs = found.jobs.iter().filter_map(|r| job(&r.record)).collect();
    let runs = found.runs.iter().filter_map(|r| job(&r.record)).collect();
    let steps = found
        .steps
        .iter()
        .filter_map(|r| serde_json::from_str::<StepRecord>(&r.record).ok())
        .collect();
    Ok(Accounting { jobs, steps, runs })
}

#[cfg(test)]
mod tests;
