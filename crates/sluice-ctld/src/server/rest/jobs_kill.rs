//! `DELETE jobs`: Slurm's `kill_jobs_msg` (`jobs`, `signal`, `flags` and the filters
//! `user_name`, `user_id`, `account`, `partition`, `qos`, `reservation`, `wckey`,
//! `job_name`, `job_state`, `nodes`), answered with a `status` entry for each job that
//! could not be signalled (every job with `flags: ["VERBOSE"]`), as `slurm_kill_jobs`.
//!
//! The jobs are chosen from the published snapshot, as slurmctld filters them: a named
//! job that is unknown, finished or does not match the filters gets its error; a
//! job of another user is refused (`Access/permission denied`) unless the caller is an
//! operator, and under `PrivateData=jobs` is not among a filter's matches. The others
//! are cancelled or signalled through the controller's one cancel path
//! ([`Request::Cancel`], as `scancel`), as the caller; a job the controller refuses on
//! its own (a signal to a pending job) gets its error among the statuses.

use axum::response::Response;
use serde_json::{json, Map, Value};
use sluice_proto::types::{CancelRequest, JobRecord, JobState};

use super::envelope::{errno, number, strerror, Error};
use super::jobs::{job_id, signal_number};
use super::{fields, json_body, Ctx};
use crate::server::input::Request;
use sluice_proto::error::{ApiError, ErrorCode};

/// What a request asks.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Kill {
    /// Named jobs (`123`, `123_4`), as named.
    jobs: Vec<(String, u64, Option<u32>)>,
    /// The signal; `None`: cancel (`SIGKILL`, the default).
    signal: Option<i32>,
    /// `BATCH_JOB`.
    batch: bool,
    /// `FULL_JOB`.
    full: bool,
    /// `VERBOSE`: a status for every job signalled.
    verbose: bool,
    user_name: Option<String>,
    user_id: Option<u32>,
    /// `user_id` given as a name, to resolve.
    user_id_name: Option<String>,
    account: Option<String>,
    partition: Option<String>,
    qos: Option<String>,
    reservation: Option<String>,
    wckey: Option<String>,
    job_name: Option<String>,
    state: Option<JobState>,
    nodes: Option<Vec<String>>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn bad(k: &str, message: String) -> Error {
    Error::new(errno::DATA_PARSE_BAD_INPUT, message, format!("#/{k}"))
}

fn string(k: &str, v: &Value) -> Result<Option<String>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(bad(k, format!("Expected string but got {}", kind(v)))),
    }
}

/// Strings, as a list or comma separated.
fn strings(k: &str, v: &Value) -> Result<Vec<String>, Error> {
    let split = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(split(s)),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => out.extend(split(s)),
                    Value::Number(n) => out.push(n.to_string()),
                    _ => return Err(bad(k, format!("Expected string but got {}", kind(item)))),
                }
            }
            Ok(out)
        }
        _ => Err(bad(k, format!("Expected array but got {}", kind(v)))),
    }
}

/// A job state by Slurm's name.
fn state(name: &str) -> Option<JobState> {
    [
        JobState::Pending,
        JobState::Running,
        JobState::Completed,
        JobState::Cancelled,
        JobState::Failed,
        JobState::Timeout,
        JobState::NodeFail,
        JobState::Preempted,
        JobState::OutOfMemory,
        JobState::Requeued,
    ]
    .into_iter()
    .find(|s| s.name().eq_ignore_ascii_case(name))
}

/// The request a body asks.
///
/// Errors: a field of the wrong type, an unknown field, signal, state or flag (each at
/// its path).
pub(super) fn parse(body: &Map<String, Value>) -> Result<Kill, Vec<Error>> {
    let mut k = Kill::default();
    let mut errors = Vec::new();
    for (key, v) in body {
        let r: Result<(), Error> = (|| {
            match key.as_str() {
                "jobs" => {
                    for text in strings(key, v)? {
                        let (id, task) = job_id(&text).map_err(|e| {
                            bad(key, format!("Invalid job id {text}: {}", e.description))
                        })?;
                        k.jobs.push((text, id, task));
                    }
                }
                "signal" => {
                    let text = match v {
                        Value::Number(n) => Some(n.to_string()),
                        _ => string(key, v)?,
                    };
                    if let Some(s) = text {
                        match signal_number(s.trim()) {
                            Some(9) => k.signal = None,
                            Some(n) => k.signal = Some(n),
                            None => return Err(bad(key, format!("Unknown signal {s}"))),
                        }
                    }
                }
                "flags" => {
                    for f in strings(key, v)? {
                        match f.to_ascii_uppercase().as_str() {
                            "BATCH_JOB" => k.batch = true,
                            "FULL_JOB" => k.full = true,
                            "VERBOSE" => k.verbose = true,
                            // What Sluice's jobs always are, or have no meaning here.
                            "ARRAY_TASK" | "NO_SIBLING_JOBS" | "HURRY" => {}
                            _ => return Err(bad(key, format!("Unknown flag {f}"))),
                        }
                    }
                }
                "user_name" => k.user_name = string(key, v)?,
                "user_id" => {
                    let text = match v {
                        Value::Number(n) => Some(n.to_string()),
                        _ => string(key, v)?,
                    };
                    // A name is resolved with `user_name`'s, off the async workers.
                    match text.map(|t| t.parse::<u32>().map_err(|_| t)) {
                        None => {}
                        Some(Ok(uid)) => k.user_id = Some(uid),
                        Some(Err(name)) => k.user_id_name = Some(name),
                    }
                }
                "account" => k.account = string(key, v)?,
                "partition" => k.partition = string(key, v)?,
                "qos" => k.qos = string(key, v)?,
                "reservation" => k.reservation = string(key, v)?,
                "wckey" => k.wckey = string(key, v)?,
                "job_name" => k.job_name = string(key, v)?,
                "job_state" => {
                    let names = strings(key, v)?;
                    if let Some(name) = names.first() {
                        k.state = Some(
                            state(name)
                                .ok_or_else(|| bad(key, format!("Unknown job state {name}")))?,
                        );
                    }
                }
                "nodes" => {
                    let mut all = Vec::new();
                    for expr in strings(key, v)? {
                        all.extend(
                            sluice_conf::hostlist::expand(&expr)
                                .map_err(|_| bad(key, format!("Invalid hostlist {expr}")))?,
                        );
                    }
                    k.nodes = Some(all);
                }
                _ => return Err(bad(key, format!("Unknown field {key}"))),
            }
            Ok(())
        })();
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(k)
    } else {
        Err(errors)
    }
}

impl Kill {
    /// Whether job `j` passes the filters (not the named jobs).
    fn matches(&self, j: &JobRecord) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
        eq(&self.user_name, &j.user)
            && self.user_id.is_none_or(|u| u == j.uid)
            && eq(&self.account, &j.account)
            && eq(&self.partition, &j.partition)
            && eq(&self.qos, &j.qos)
            && eq(&self.job_name, &j.desc.name)
            && eq(
                &self.reservation,
                j.desc.reservation.as_deref().unwrap_or_default(),
            )
            && eq(&self.wckey, j.desc.wckey.as_deref().unwrap_or_default())
            && self.state.is_none_or(|s| s == j.state)
            && self
                .nodes
                .as_ref()
                .is_none_or(|n| j.nodes.iter().any(|x| n.contains(x)))
    }

    fn has_filter(&self) -> bool {
        self.user_name.is_some()
            || self.user_id.is_some()
            || self.user_id_name.is_some()
            || self.account.is_some()
            || self.partition.is_some()
            || self.qos.is_some()
            || self.reservation.is_some()
            || self.wckey.is_some()
            || self.job_name.is_some()
            || self.state.is_some()
            || self.nodes.is_some()
    }
}

/// One `status` entry: the job (as named, or its own id) and its error (0: none).
fn status(shown: &str, id: u64, code: i32, message: &str) -> Value {
    json!({
        "error": {"string": strerror(code), "code": code, "message": message},
        "step_id": shown,
        "job_id": number(id as i64),
        "federation": {"sibling": ""},
    })
}

fn shown_id(j: &JobRecord) -> String {
    match j.array {
        Some((a, t)) => format!("{a}_{t}"),
        None => j.id.to_string(),
    }
}

/// `DELETE jobs`.
pub(super) async fn kill(ctx: Ctx, body: axum::body::Body) -> Response {
    let empty = || fields([("status", json!([]))]);
    let source = "_signal_jobs";
    let body = match json_body(body, source).await {
        Ok(Value::Object(o)) => o,
        Ok(other) => {
            return ctx.fail(
                empty(),
                bad("", format!("Expected object but got {}", kind(&other))),
            )
        }
        Err(e) => return ctx.fail(empty(), e),
    };
    let req = match parse(&body) {
        Ok(k) => k,
        Err(mut errors) => {
            errors.push(Error::new(
                errno::REST_INVALID_QUERY,
                "Rejecting request. Failure parsing request.",
                source,
            ));
            return super::envelope::answer(
                &ctx.app.cluster_name,
                &ctx.client,
                empty(),
                &errors,
                &[],
            );
        }
    };
    if req.jobs.is_empty() && !req.has_filter() {
        return ctx.fail(
            empty(),
            Error::new(
                errno::REST_INVALID_QUERY,
                "No job identification provided",
                source,
            ),
        );
    }
    // As slurmrestd: a user named must be one this host knows.
    let names: Vec<String> = req
        .user_name
        .iter()
        .chain(&req.user_id_name)
        .cloned()
        .collect();
    let uids = tokio::task::spawn_blocking(move || {
        names
            .into_iter()
            .map(|n| {
                let uid = nix::unistd::User::from_name(&n)
                    .ok()
                    .flatten()
                    .map(|u| u.uid.as_raw());
                (n, uid)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut req = req;
    for (name, uid) in uids {
        let Some(uid) = uid else {
            return ctx.fail(
                empty(),
                Error::new(
                    errno::SLURM_ERROR,
                    format!("Unable to resolve {name} to numeric user id"),
                    "uid_from_string()",
                ),
            );
        };
        if req.user_id_name.as_deref() == Some(name.as_str()) {
            req.user_id = Some(uid);
        }
    }
    let caller = ctx.app.operator_caller(ctx.peer);
    let listing = ctx.app.listing.latest();
    let hidden = ctx.app.owner_only(&listing, ctx.peer);
    let now = crate::server::now();
    let mut statuses: Vec<Value> = Vec::new();
    // The jobs to signal: (as shown, id, task).
    let mut chosen: Vec<(String, u64, Option<u32>)> = Vec::new();
    // Why job `j` is not signalled, if it is not (Slurm's number).
    let refusal = |j: &JobRecord, named: bool| {
        if !caller.admin && j.uid != caller.uid {
            Some(errno::ACCESS_DENIED)
        } else if named && j.state.is_finished() {
            Some(errno::ALREADY_DONE)
        } else {
            None
        }
    };
    if req.jobs.is_empty() {
        let q = sluice_proto::listing::JobQuery {
            owner_only: hidden,
            ..Default::default()
        };
        let mut all = listing.jobs(&q, now);
        all.sort_by_key(|j| (j.id, j.array.map(|a| a.1)));
        for j in all.iter().filter(|j| !j.state.is_finished()) {
            if !req.matches(j) {
                continue;
            }
            match refusal(j, false) {
                Some(code) => statuses.push(status(&shown_id(j), j.id, code, "")),
                // By its own id: the record itself (a task, or an array's unstarted
                // rest), as scancel's filters choose it.
                None => chosen.push((shown_id(j), j.id, None)),
            }
        }
    } else {
        for (text, id, task) in &req.jobs {
            let found = super::jobs::records(&ctx, *id, *task, false);
            if found.is_empty() {
                statuses.push(status(text, *id, errno::INVALID_JOB_ID, ""));
                continue;
            }
            // A whole array is one request, as scancel sends it.
            let one = &found[0];
            if !req.matches(one) {
                statuses.push(status(
                    text,
                    *id,
                    errno::INVALID_JOB_ID,
                    "Job does not match the filters",
                ));
                continue;
            }
            match refusal(one, true) {
                Some(code) => statuses.push(status(text, *id, code, "")),
                // As named: the whole array for `123`, one task for `123_4`.
                None => chosen.push((text.clone(), *id, *task)),
            }
        }
    }
    let mut errors = Vec::new();
    if !chosen.is_empty() {
        let by_filter = req.jobs.is_empty();
        let cancel = CancelRequest {
            jobs: if by_filter {
                Vec::new()
            } else {
                chosen.iter().map(|c| (c.1, c.2)).collect()
            },
            records: if by_filter {
                chosen.iter().map(|c| c.1).collect()
            } else {
                Vec::new()
            },
            signal: req.signal,
            batch: req.batch,
            full: req.full,
            ..Default::default()
        };
        let done = ctx
            .app
            .ask(|reply| Request::Cancel {
                req: Box::new(cancel),
                caller: caller.clone(),
                reply,
            })
            .await
            .and_then(|r| r);
        match done {
            Ok(mut done) => {
                // A job chosen live that has ended since is no error for a cancel,
                // as Slurm's kill ignores one already done.
                if req.signal.is_none_or(|s| s == libc::SIGKILL) {
                    done.refused.retain(|r| {
                        !matches!(r.code, ErrorCode::AlreadyDone | ErrorCode::InvalidJobId)
                    });
                }
                // Jobs refused on their own (a signal to a pending job): their
                // errors; the others signalled.
                for r in &done.refused {
                    let e = ApiError::new(r.code, r.error.clone());
                    let err = Error::from_api(&e, "slurm_kill_jobs()");
                    let shown = chosen
                        .iter()
                        .find(|c| c.1 == r.job)
                        .map_or(r.named.clone(), |c| c.0.clone());
                    statuses.push(status(&shown, r.job, err.number, &e.message));
                }
                if let Some(r) = done.refused.first() {
                    let e = ApiError::new(r.code, r.error.clone());
                    let err = Error::from_api(&e, "slurm_kill_jobs()");
                    errors.push(Error::new(
                        err.number,
                        "Signal request failed",
                        "slurm_kill_jobs()",
                    ));
                }
                if req.verbose {
                    statuses.extend(
                        chosen
                            .iter()
                            .filter(|c| !done.refused.iter().any(|r| r.job == c.1))
                            .map(|c| status(&c.0, c.1, 0, "")),
                    );
                }
            }
            Err(e) => {
                let err = Error::from_api(&e, "slurm_kill_jobs()");
                statuses.extend(
                    chosen
                        .iter()
                        .map(|c| status(&c.0, c.1, err.number, &e.message)),
                );
                errors.push(Error::new(
                    err.number,
                    "Signal request failed",
                    "slurm_kill_jobs()",
                ));
            }
        }
    }
    let warnings: Vec<String> = if req.verbose && chosen.is_empty() {
        vec![format!(
            "Zero jobs sent signal {}",
            req.signal.map_or("SIGKILL".to_string(), |n| {
                nix::sys::signal::Signal::try_from(n)
                    .map_or(n.to_string(), |s| s.as_str().to_string())
            })
        )]
    } else {
        Vec::new()
    };
    super::envelope::answer(
        &ctx.app.cluster_name,
        &ctx.client,
        fields([("status", Value::Array(statuses))]),
        &errors,
        &warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn slurms_kill_jobs_msg_is_read() {
        let k = parse(&body(json!({
            "jobs": ["12", "13_2"], "signal": "SIGUSR1", "flags": ["BATCH_JOB", "VERBOSE"],
            "user_name": "alice", "job_state": "PENDING", "nodes": "n[1-2]",
        })))
        .unwrap();
        assert_eq!(
            k.jobs,
            [("12".into(), 12, None), ("13_2".into(), 13, Some(2))]
        );
        assert_eq!(k.signal, Some(10));
        assert!(k.batch && k.verbose && !k.full);
        assert_eq!(k.state, Some(JobState::Pending));
        assert_eq!(k.nodes, Some(vec!["n1".into(), "n2".into()]));
        assert_eq!(parse(&body(json!({"signal": 9}))).unwrap().signal, None);
        let by_name = parse(&body(json!({"user_id": "nobody"}))).unwrap();
        assert_eq!(
            (by_name.user_id, by_name.user_id_name.as_deref()),
            (None, Some("nobody"))
        );
        assert_eq!(
            parse(&body(json!({"user_id": "65534"}))).unwrap().user_id,
            Some(65534)
        );
    }

    #[test]
    fn bad_fields_are_refused_at_their_paths() {
        let e = parse(&body(
            json!({"signal": "SIGNOPE", "jobs": "x", "job_state": "DONE",
                                   "colour": "red", "flags": ["WHATEVER"]}),
        ))
        .unwrap_err();
        let mut at: Vec<&str> = e.iter().map(|e| e.source.as_str()).collect();
        at.sort();
        assert_eq!(
            at,
            ["#/colour", "#/flags", "#/job_state", "#/jobs", "#/signal"]
        );
        assert!(e.iter().all(|e| e.number == errno::DATA_PARSE_BAD_INPUT));
    }

    #[test]
    fn filters_match_as_slurm_filters() {
        let j = JobRecord {
            id: 5,
            user: "alice".into(),
            uid: 1000,
            partition: "debug".into(),
            state: JobState::Running,
            nodes: vec!["n2".into()],
            ..Default::default()
        };
        let k = |v: Value| parse(&body(v)).unwrap();
        assert!(k(json!({"user_name": "alice", "partition": "debug"})).matches(&j));
        assert!(!k(json!({"user_name": "bob"})).matches(&j));
        assert!(k(json!({"nodes": "n[1-3]"})).matches(&j));
        assert!(!k(json!({"nodes": "n1"})).matches(&j));
        assert!(!k(json!({"job_state": "PENDING"})).matches(&j));
        assert!(k(json!({"user_id": 1000})).matches(&j));
    }
}
