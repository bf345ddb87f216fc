//! `GET jobs`, `GET job/{id}` (from the published snapshot, without the loop) and
//! `DELETE job/{id}` (`scancel`'s cancel or signal, as the caller): jobs in Slurm's
//! `JOB_INFO` shape.

use axum::extract::{Path, Query};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};
use sluice_core::JobId;
use sluice_proto::listing::JobQuery;
use sluice_proto::types::{CancelRequest, JobRecord, JobState, MemoryRequest};

use super::changes;
use super::envelope::{self, errno, infinite, maybe, number, unset, Error};
use super::shared_list::SharedLists;
use super::{fields, Ctx};
use crate::state::listing::Listing;
use sluice_proto::error::ApiError;

/// `GET jobs[?update_time=T]`: every job the controller holds (finished ones until
/// `MinJobAge`); none, with a warning, when no job changed since `T`.
pub(super) async fn list(
    ctx: Ctx,
    query: Result<Query<changes::ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let since = match changes::since(query, "op_handler_jobs") {
        Ok(t) => t,
        Err(e) => return ctx.fail(fields([("jobs", json!([]))]), e),
    };
    let listing = ctx.app.listing.latest();
    let now = crate::server::now();
    let updated = listing.updated();
    if changes::unchanged(since, updated) {
        return ctx.ok_warned(
            fields([
                ("jobs", json!([])),
                ("last_backfill", number(now)),
                ("last_update", number(updated)),
            ]),
            &[changes::warning("job", since.unwrap_or_default())],
        );
    }
    let q = JobQuery {
        owner_only: ctx.app.owner_only(&listing, ctx.peer),
        ..Default::default()
    };
    // Written once for every caller with the same view of this snapshot this second.
    static SHARED: std::sync::LazyLock<SharedLists<Listing>> =
        std::sync::LazyLock::new(Default::default);
    let cluster = &ctx.app.cluster_name;
    let written = SHARED.get_or_write(&listing, q.owner_only, now, || {
        let mut jobs = listing.jobs(&q, now);
        jobs.sort_by_key(|j| (j.id, j.array.map(|a| a.1)));
        let jobs: Vec<Value> = jobs.iter().map(|j| job(j, cluster)).collect();
        serde_json::to_string(&jobs).expect("JSON values serialise")
    });
    envelope::answer_with_raw(
        cluster,
        &ctx.client,
        fields([
            ("last_backfill", number(now)),
            ("last_update", number(updated)),
        ]),
        "jobs",
        &written,
    )
}

/// A job id in a path: `123`, or an array task `123_4`.
///
/// Errors: anything else, as Slurm refuses it.
pub(super) fn job_id(text: &str) -> Result<(u64, Option<u32>), Error> {
    let bad = || {
        Error::new(
            errno::REST_INVALID_QUERY,
            "Rejecting request. Failure parsing parameters",
            "op_handler_job",
        )
    };
    let (id, task) = match text.split_once('_') {
        Some((id, task)) => (id, Some(task.parse::<u32>().map_err(|_| bad())?)),
        None => (text, None),
    };
    let id: u64 = id.parse().map_err(|_| bad())?;
    if id == 0 || id >= 0x0400_0000 {
        return Err(Error::new(
            errno::INVALID_JOB_ID,
            format!("Invalid JobID={id} rejected"),
            "op_handler_job",
        ));
    }
    Ok((id, task))
}

/// The records of job `id` (each task of an array job), or of one array task. To be
/// shown (`private`), another user's job is not found under `PrivateData=jobs`, as
/// Slurm hides it; to be signalled, it is (and refused as Slurm refuses it).
pub(super) fn records(ctx: &Ctx, id: u64, task: Option<u32>, private: bool) -> Vec<JobRecord> {
    let listing = ctx.app.listing.latest();
    let owner_only = if private {
        ctx.app.owner_only(&listing, ctx.peer)
    } else {
        None
    };
    let q = JobQuery {
        jobs: Some(match task {
            Some(t) => format!("{id}_{t}"),
            None => id.to_string(),
        }),
        owner_only,
        ..Default::default()
    };
    let mut found = listing.jobs(&q, crate::server::now());
    if found.is_empty() && task.is_none() {
        found.extend(
            listing
                .job(JobId(id))
                .filter(|r| owner_only.is_none_or(|uid| r.uid == uid)),
        );
    }
    found
}

/// `GET job/{id}`.
pub(super) async fn one(ctx: Ctx, Path(id): Path<String>) -> Response {
    let empty = || fields([("jobs", json!([]))]);
    let (id, task) = match job_id(&id) {
        Ok(v) => v,
        Err(e) => return ctx.fail(empty(), e),
    };
    let found = records(&ctx, id, task, true);
    if found.is_empty() {
        let shown = task.map_or(id.to_string(), |t| format!("{id}_{t}"));
        return ctx.fail(
            empty(),
            Error::new(
                errno::INVALID_JOB_ID,
                format!("Unable to query JobId={shown}"),
                "_handle_job_get",
            ),
        );
    }
    let now = crate::server::now();
    let cluster = ctx.app.cluster_name.clone();
    let jobs: Vec<Value> = found.iter().map(|j| job(j, &cluster)).collect();
    let updated = ctx.app.listing.latest().updated();
    ctx.ok(fields([
        ("jobs", Value::Array(jobs)),
        ("last_backfill", number(now)),
        ("last_update", number(updated)),
    ]))
}

/// `DELETE job/{id}`'s query.
#[derive(Deserialize)]
pub(super) struct DeleteQuery {
    /// A signal name (`SIGTERM`, `TERM`) or number; absent: `SIGKILL`, which cancels.
    signal: Option<String>,
    /// Slurm's `KILL_JOB_FLAGS` (`BATCH_JOB`, `FULL_JOB`, ...), comma separated.
    flags: Option<String>,
}

/// A signal by name (`SIGUSR1`, `USR1`) or number.
pub(super) fn signal_number(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let name = text.to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    nix::sys::signal::Signal::iterator()
        .find(|s| s.as_str().strip_prefix("SIG") == Some(name))
        .map(|s| s as i32)
}

/// `DELETE job/{id}[?signal=S]`: cancels the job (no signal, or `SIGKILL`) or sends
/// it the signal, as its owner or an operator may.
pub(super) async fn cancel(
    ctx: Ctx,
    Path(id): Path<String>,
    query: Result<Query<DeleteQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let empty = || fields([("status", json!([]))]);
    let source = "slurm_kill_jobs()";
    let Ok(Query(q)) = query else {
        return ctx.fail(
            empty(),
            Error::new(
                errno::REST_INVALID_QUERY,
                "Rejecting request. Failure parsing query.",
                "_parse_job_delete",
            ),
        );
    };
    let (id, task) = match job_id(&id) {
        Ok(v) => v,
        Err(e) => return ctx.fail(empty(), e),
    };
    let signal = match q.signal.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match signal_number(s) {
            Some(9) => None,
            Some(n) => Some(n),
            None => {
                return ctx.fail(
                    empty(),
                    Error::new(
                        errno::DATA_PARSE_BAD_INPUT,
                        format!("Unknown signal {s}"),
                        "_parse_job_delete",
                    ),
                )
            }
        },
    };
    let flags = q.flags.unwrap_or_default().to_ascii_uppercase();
    let batch = flags.split(',').any(|f| f.trim() == "BATCH_JOB");
    // As scancel: an unknown job is refused before anything is asked.
    if records(&ctx, id, task, false).is_empty() {
        return ctx.fail(
            empty(),
            Error::new(errno::INVALID_JOB_ID, "Signal request failed", source),
        );
    }
    let req = CancelRequest {
        jobs: vec![(id, task)],
        signal,
        batch,
        ..Default::default()
    };
    let caller = ctx.app.operator_caller(ctx.peer);
    let done = ctx
        .app
        .ask(|reply| crate::server::input::Request::Cancel {
            req: Box::new(req),
            caller,
            reply,
        })
        .await
        .and_then(|r| r)
        .and_then(|done| match done.refused.into_iter().next() {
            // One job, refused on its own: its error is the request's.
            Some(r) => Err(ApiError::new(r.code, r.error)),
            None => Ok(()),
        });
    let shown = task.map_or(id.to_string(), |t| format!("{id}_{t}"));
    let status = |code: i32, message: &str| {
        json!([{
            "error": {"string": super::envelope::strerror(code), "code": code, "message": message},
            "step_id": shown,
            "job_id": number(id as i64),
            "federation": {"sibling": ""},
        }])
    };
    match done {
        Ok(()) => ctx.ok(fields([("status", status(0, ""))])),
        Err(e) => {
            let err = Error::from_api(&e, source);
            if err.number == errno::ALREADY_DONE {
                let name = signal.map_or("SIGKILL".to_string(), |n| {
                    nix::sys::signal::Signal::try_from(n)
                        .map_or(n.to_string(), |s| s.as_str().to_string())
                });
                return ctx.ok_warned(
                    fields([("status", status(0, ""))]),
                    &[format!("Job was already sent signal {name}")],
                );
            }
            let body = fields([("status", status(err.number, &e.message))]);
            ctx.fail(
                body,
                Error::new(err.number, "Signal request failed", source),
            )
        }
    }
}

/// Slurm's `state_reason` and `state_description` for a job (`None` unless pending; a
/// reason that is a sentence is Slurm's description of a code).
fn reasons(j: &JobRecord) -> (String, String) {
    if j.state != JobState::Pending {
        return ("None".into(), String::new());
    }
    if j.reason.starts_with("Nodes required for job") {
        return ("Resources".into(), j.reason.clone());
    }
    match j.reason.split_once(", ") {
        Some((code, _)) => (code.to_string(), j.reason.clone()),
        None => (j.reason.clone(), String::new()),
    }
}

/// A job in Slurm's `JOB_INFO` shape (v0.0.44): the fields Sluice keeps, numbers as
/// `{set, infinite, number}`, `job_state` as a list of flags.
pub(super) fn job(j: &JobRecord, cluster: &str) -> Value {
    let d = &j.desc;
    let (reason, description) = reasons(j);
    let mut state = vec![j.state.name()];
    if j.completing() {
        state.push("COMPLETING");
    }
    let cpus: u32 = if j.cpus_per_node.is_empty() {
        j.ntasks.max(1) * j.cpus_per_task.max(1)
    } else {
        j.cpus_per_node.iter().sum()
    };
    let node_count = if j.nodes.is_empty() {
        j.min_nodes.max(1)
    } else {
        j.nodes.len() as u32
    };
    let time_limit = match j.time_limit {
        Some(s) => number(s.div_euclid(60) + i64::from(s.rem_euclid(60) > 0)),
        None => infinite(),
    };
    let (array_job, array_task) = match j.array {
        Some((a, t)) => (number(a as i64), number(t)),
        None => (number(0), unset()),
    };
    let exit_status = if j.signal != 0 {
        "SIGNALED"
    } else if j.exit_code != 0 {
        "ERROR"
    } else if j.state.is_finished() {
        "SUCCESS"
    } else {
        "PENDING"
    };
    let memory = |m: Option<&MemoryRequest>| match m {
        Some(MemoryRequest::PerNode(n)) => (number(*n as i64), unset()),
        Some(MemoryRequest::PerCpu(n)) => (unset(), number(*n as i64)),
        _ => (unset(), unset()),
    };
    let (mem_node, mem_cpu) = memory(d.memory.as_ref());
    let mut v = json!({
        "account": j.account,
        "accrue_time": unset(),
        "array_job_id": array_job,
        "array_task_id": array_task,
        "array_task_string": "",
        "batch_flag": !d.interactive,
        "cluster": cluster,
        "command": d.command,
        "comment": d.comment.clone().unwrap_or_default(),
        "cpus": number(cpus),
        "cpus_per_task": number(j.cpus_per_task.max(1)),
        "current_working_directory": d.work_dir,
        "dependency": d.dependency.clone().unwrap_or_default(),
        "end_time": number(j.end_time.unwrap_or(0)),
        "exit_code": {
            "status": [exit_status],
            "return_code": number(j.exit_code),
            "signal": {"id": maybe((j.signal != 0).then_some(j.signal)), "name": ""},
        },
        "group_id": j.gid,
        "group_name": j.group,
        "hold": j.held(),
        "job_id": j.id,
        "job_state": state,
        "memory_per_cpu": mem_cpu,
        "memory_per_node": mem_node,
        "name": d.name,
        "node_count": number(node_count),
        "nodes": sluice_conf::hostlist::compress(&j.nodes),
        "partition": j.partition,
        "priority": number(j.priority),
        "qos": j.qos,
        "requeue": d.requeue.unwrap_or(true),
        "restart_cnt": j.restarts,
        "start_time": number(j.start_time.or(j.planned_start).unwrap_or(0)),
        "state_description": description,
        "state_reason": reason,
        "standard_error": j.stderr,
        "standard_input": j.stdin,
        "standard_output": j.stdout,
        "submit_time": number(j.submit_time),
        "tasks": number(j.ntasks.max(1)),
        "time_limit": time_limit,
        "user_id": j.uid,
        "user_name": j.user,
    });
    // A heterogeneous job's component: its leader, offset and the job's ids.
    v["het_job_id"] = number(j.het.map_or(0, |h| h.job_id as i64));
    v["het_job_id_set"] = json!(j.het.map_or(String::new(), |h| h.id_set()));
    v["het_job_offset"] = j.het.map_or(unset(), |h| number(h.offset));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_in_paths() {
        assert_eq!(job_id("42").unwrap(), (42, None));
        assert_eq!(job_id("42_3").unwrap(), (42, Some(3)));
        assert_eq!(job_id("abc").unwrap_err().number, errno::REST_INVALID_QUERY);
        assert_eq!(
            job_id("42_x").unwrap_err().number,
            errno::REST_INVALID_QUERY
        );
        assert_eq!(job_id("0").unwrap_err().number, errno::INVALID_JOB_ID);
    }

    #[test]
    fn signals_by_name_or_number() {
        assert_eq!(signal_number("SIGTERM"), Some(15));
        assert_eq!(signal_number("usr1"), Some(10));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("SIGNOPE"), None);
        assert_eq!(signal_number("0"), None);
    }

    #[test]
    fn a_job_in_slurms_shape() {
        let j = JobRecord {
            id: 7,
            state: JobState::Pending,
            reason: "Priority".into(),
            time_limit: Some(90),
            ntasks: 2,
            cpus_per_task: 1,
            user: "alice".into(),
            ..Default::default()
        };
        let v = job(&j, "c1");
        assert_eq!(v["job_id"], 7);
        assert_eq!(v["job_state"], json!(["PENDING"]));
        assert_eq!(v["state_reason"], "Priority");
        assert_eq!(v["time_limit"], number(2));
        assert_eq!(v["cpus"], number(2));
        assert_eq!(v["array_task_id"]["set"], false);
        assert_eq!(v["cluster"], "c1");
        let unlimited = JobRecord {
            time_limit: None,
            ..j
        };
        assert_eq!(job(&unlimited, "c1")["time_limit"]["infinite"], true);
    }
}
