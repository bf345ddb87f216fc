//! `GET /slurmdb/v0.0.44/jobs` and `job/{id}`: what sacct reads, selected by the
//! store's index through the same query as `POST /v1/accounting`
//! ([`crate::server::accounting::select`]), in Slurm's slurmdbd `JOB` shape (with its
//! `STEP`s). The query string is Slurm's `JOB_CONDITION`; the caller sees only their
//! own jobs under `PrivateData=jobs` unless an operator.

use std::collections::BTreeMap;

use axum::extract::Path;
use axum::response::Response;
use serde_json::{json, Value};
use sluice_proto::accounts::AccountsSnapshot;
use sluice_proto::types::{Accounting, JobRecord, JobState, MemoryRequest, StepId, StepRecord};
use sluice_store::JobQuery;

use super::db::{self, bad_parameter, csv, Pairs};
use super::db_step_usage::{self, Direction};
use super::envelope::{infinite, number, unset, Error};
use super::{fields, Ctx};

/// What a `JOB_CONDITION` selects beyond what the store's index does.
#[derive(Debug, Default)]
struct Filter {
    /// The store's selection.
    query: JobQuery,
    /// `step`: job ids, each with its array task and step when named.
    steps: Vec<(u64, Option<u32>, Option<String>)>,
    /// `groups`: gids.
    groups: Vec<u32>,
    /// `node`: ran on one of these nodes.
    nodes: Vec<String>,
    /// `cluster`: the cluster's name must be one of these.
    clusters: Vec<String>,
    /// `qos`.
    qos: Vec<String>,
    /// `wckey`.
    wckeys: Vec<String>,
    /// `exit_code`.
    exit_code: Option<i32>,
    /// `cpus_min`, `cpus_max`.
    cpus: (Option<u32>, Option<u32>),
    /// `nodes_min`, `nodes_max`.
    node_count: (Option<u32>, Option<u32>),
    /// `timelimit_min`, `timelimit_max`.
    timelimit: (Option<u32>, Option<u32>),
    /// `flags=skip_steps`.
    skip_steps: bool,
}

/// A warning: its description and source.
type Warning = (String, String);

/// The source Slurm's errors name for `GET jobs`.
const LIST: &str = "op_handler_jobs";

/// Slurm's `JOB_CONDITION` keys Sluice does not select by; refused rather than ignored
/// (an answer that ignores a filter would be wrong).
const NOT_SELECTED_BY: [&str; 6] = [
    "association",
    "constraints",
    "reason",
    "reservation",
    "reservation_id",
    "submit_time",
];

/// A user by name or uid, as Slurm's `USER_ID_STRING_LIST` takes it: the name.
fn user_name(v: &str) -> Option<String> {
    use nix::unistd::{Uid, User};
    match v.parse::<u32>() {
        Ok(uid) => User::from_uid(Uid::from_raw(uid)).ok().flatten(),
        Err(_) => User::from_name(v).ok().flatten(),
    }
    .map(|u| u.name)
}

/// A group by name or gid: the gid.
fn group_id(v: &str) -> Option<u32> {
    use nix::unistd::{Gid, Group};
    match v.parse::<u32>() {
        Ok(gid) => Group::from_gid(Gid::from_raw(gid)).ok().flatten(),
        Err(_) => Group::from_name(v).ok().flatten(),
    }
    .map(|g| g.gid.as_raw())
}

/// A job state by Slurm's name or short name (`COMPLETED`, `CD`).
fn job_state(v: &str) -> Option<JobState> {
    JobState::parse(v)
}

/// A timestamp as Slurm's parser takes one: Unix seconds, or a time as sacct takes it
/// (`now-1hour`, `2026-01-02T03:04:05`, `today`).
fn timestamp(v: &str, now: i64) -> Option<i64> {
    v.trim()
        .parse::<i64>()
        .ok()
        .or_else(|| sluice_proto::time::parse_timestamp(v.trim(), now))
}

/// A job id as Slurm's `SELECTED_STEP` takes it: `ID`, `ID_TASK`, with `.STEP`.
fn selected_step(v: &str) -> Option<(u64, Option<u32>, Option<String>)> {
    let (job, step) = match v.split_once('.') {
        Some((j, s)) => {
            let ok = matches!(s, "batch" | "extern") || s.parse::<u32>().is_ok();
            (j, Some(ok.then(|| s.to_string())?))
        }
        None => (v, None),
    };
    let (id, task) = match job.split_once('_') {
        Some((id, t)) => (id, Some(t.parse::<u32>().ok()?)),
        None => (job, None),
    };
    let id = id.parse::<u64>().ok().filter(|&n| n > 0)?;
    Some((id, task, step))
}

/// Reads a `JOB_CONDITION` from the query's pairs; unknown keys are warnings, as Slurm
/// ignores them.
///
/// Errors: a value of the wrong kind (an unknown user or state, a bad time), or a key
/// Sluice does not select by.
fn filter(pairs: &[(String, String)], now: i64) -> Result<(Filter, Vec<Warning>), Vec<Error>> {
    let mut f = Filter::default();
    let mut warnings = Vec::new();
    let bad = |key: &str, why: String| bad_parameter(key, why, LIST);
    let number = |key: &str, v: &str| {
        v.trim().parse::<u32>().map_err(|_| {
            bad(
                key,
                format!("Expected an integer for {key} but got \"{v}\""),
            )
        })
    };
    for (key, v) in pairs {
        let list = csv(v);
        match key.as_str() {
            "users" => {
                for u in &list {
                    let name = user_name(u)
                        .ok_or_else(|| bad(key, format!("Unable to resolve user: {u}")))?;
                    f.query.users.push(name);
                }
            }
            "account" => f.query.accounts.extend(list),
            "partition" => f.query.partitions.extend(list),
            "job_name" => f.query.names.extend(list),
            "state" => {
                for s in &list {
                    let st =
                        job_state(s).ok_or_else(|| bad(key, format!("Invalid job state: {s}")))?;
                    f.query.states.push(st.name().to_string());
                }
            }
            "start_time" | "end_time" => {
                let t = timestamp(v, now)
                    .ok_or_else(|| bad(key, format!("Invalid time specification: {v}")))?;
                if key == "start_time" {
                    f.query.ended_since = Some(t);
                } else {
                    f.query.submitted_by = Some(t);
                }
            }
            "step" => {
                for s in &list {
                    let step =
                        selected_step(s).ok_or_else(|| bad(key, format!("Invalid job id: {s}")))?;
                    f.steps.push(step);
                }
            }
            "groups" => {
                for g in &list {
                    let gid = group_id(g)
                        .ok_or_else(|| bad(key, format!("Unable to resolve group: {g}")))?;
                    f.groups.push(gid);
                }
            }
            "node" => {
                f.nodes = sluice_conf::hostlist::expand(v)
                    .map_err(|e| bad(key, format!("Invalid node list {v}: {e}")))?;
            }
            "cluster" => f.clusters.extend(list),
            "qos" => f.qos.extend(list),
            "wckey" => f.wckeys.extend(list),
            "exit_code" => {
                f.exit_code = Some(v.trim().parse::<i32>().map_err(|_| {
                    bad(
                        key,
                        format!("Expected an integer for {key} but got \"{v}\""),
                    )
                })?)
            }
            "cpus_min" => f.cpus.0 = Some(number(key, v)?),
            "cpus_max" => f.cpus.1 = Some(number(key, v)?),
            "nodes_min" => f.node_count.0 = Some(number(key, v)?),
            "nodes_max" => f.node_count.1 = Some(number(key, v)?),
            "timelimit_min" => f.timelimit.0 = Some(number(key, v)?),
            "timelimit_max" => f.timelimit.1 = Some(number(key, v)?),
            "flags" => {
                for flag in &list {
                    match flag.to_ascii_lowercase().as_str() {
                        "show_duplicates" => f.query.runs = true,
                        "skip_steps" => f.skip_steps = true,
                        "disable_truncate_usage_time"
                        | "whole_hetjob"
                        | "disable_whole_hetjob"
                        | "disable_wait_for_result"
                        | "usage_time_as_submit_time"
                        | "show_batch_script"
                        | "show_job_environment" => {}
                        _ => return Err(bad(key, format!("Unknown flag \"{flag}\""))),
                    }
                }
            }
            // Deprecated in Slurm and ignored; the scheduler bits Sluice does not keep.
            "format" | "db_flags" => {}
            k if NOT_SELECTED_BY.contains(&k) => {
                return Err(bad(key, format!("Sluice does not select jobs by {key}")))
            }
            _ => warnings.push(db::unknown_parameter(key, v, "JOB_CONDITION")),
        }
    }
    // As sacct: without job ids, jobs that ended since midnight (or have not ended).
    if f.steps.is_empty() && f.query.ended_since.is_none() {
        f.query.ended_since = sluice_proto::time::parse_timestamp("today", now);
    }
    for (id, task, _) in &f.steps {
        match task {
            Some(t) => f.query.tasks.push((*id, *t)),
            None => f.query.jobs.push(*id),
        }
    }
    Ok((f, warnings))
}

/// The CPUs a job was allocated (none until it starts), as sacct counts them.
fn allocated_cpus(j: &JobRecord) -> u32 {
    if j.nodes.is_empty() {
        0
    } else if j.cpus_per_node.is_empty() {
        j.ntasks * j.cpus_per_task
    } else {
        j.cpus_per_node.iter().sum()
    }
}

impl Filter {
    /// Whether `j` passes what the store does not select by (and, again, what it does:
    /// an array named by its id selects its tasks).
    fn keeps(&self, j: &JobRecord, cluster: &str) -> bool {
        let within = |n: u32, (lo, hi): (Option<u32>, Option<u32>)| {
            lo.is_none_or(|l| n >= l) && hi.is_none_or(|h| n <= h)
        };
        let named = |&(id, task, _): &(u64, Option<u32>, Option<String>)| match task {
            Some(t) => j.array == Some((id, t)),
            None => j.id == id || j.array.is_some_and(|a| a.0 == id),
        };
        (self.steps.is_empty() || self.steps.iter().any(named))
            && (self.clusters.is_empty() || self.clusters.iter().any(|c| c == cluster))
            && (self.groups.is_empty() || self.groups.contains(&j.gid))
            && (self.nodes.is_empty() || j.nodes.iter().any(|n| self.nodes.contains(n)))
            && (self.qos.is_empty() || self.qos.contains(&j.qos))
            && (self.wckeys.is_empty()
                || j.desc
                    .wckey
                    .as_ref()
                    .is_some_and(|w| self.wckeys.contains(w)))
            && self.exit_code.is_none_or(|c| c == j.exit_code)
            && within(allocated_cpus(j), self.cpus)
            && within(j.nodes.len() as u32, self.node_count)
            && (self.timelimit == (None, None)
                || j.time_limit
                    .is_some_and(|l| within((l / 60).max(0) as u32, self.timelimit)))
    }

    /// The steps of `j` a `step` filter names (all when it names the job itself).
    fn keeps_step(&self, j: &JobRecord, s: &StepRecord) -> bool {
        let mut named = self.steps.iter().filter(|(id, task, _)| match task {
            Some(t) => j.array == Some((*id, *t)),
            None => j.id == *id || j.array.is_some_and(|a| a.0 == *id),
        });
        self.steps.is_empty()
            || named.any(|(_, _, step)| step.as_ref().is_none_or(|st| *st == s.step.to_string()))
    }
}

/// Whether the caller sees only their own jobs: `PrivateData=jobs`, and not
/// [`db::privileged`].
fn owner_only(ctx: &Ctx, snap: &AccountsSnapshot) -> Option<u32> {
    let listing = ctx.app.listing.latest();
    let uid = listing.owner_only(ctx.peer.uid, ctx.app.own_uid)?;
    (!db::privileged(ctx, snap)).then_some(uid)
}

/// What a selection found: per cluster, the jobs the caller may see, in sacct's order,
/// with their steps and earlier runs; and the TRES accounting tracks.
struct Selected {
    parts: Vec<(String, Accounting)>,
    filter: Filter,
    tracked: Vec<String>,
}

/// Reads the jobs `f` selects that the caller may see.
async fn select(ctx: &Ctx, mut f: Filter) -> Result<Selected, Error> {
    let snap = db::snapshot(ctx).await?;
    let mine = owner_only(ctx, &snap);
    if mine.is_some() && f.query.users.is_empty() {
        // Selected by the index: only the caller's rows are read.
        f.query.users = vec![ctx.client.user.clone()];
    }
    // As slurmdbd: the clusters named, else every cluster the database holds (the
    // controller's own, and those sharing its PostgreSQL database), by name.
    let own = ctx.app.cluster_name.clone();
    let clusters = if f.clusters.is_empty() {
        let snap = crate::server::accounts::with_other_clusters(&ctx.app, snap.clone())
            .await
            .map_err(|e| Error::from_api(&e, "slurmdb_jobs_get()"))?;
        let mut names: Vec<String> = std::iter::once(own.clone())
            .chain(snap.other_clusters.into_iter().map(|c| c.name))
            .collect();
        names.sort();
        names
    } else {
        let mut names = Vec::new();
        for c in &f.clusters {
            if !names.contains(c) {
                names.push(c.clone());
            }
        }
        names
    };
    let mut parts = Vec::new();
    for cluster in clusters {
        let found = if cluster == own {
            crate::server::accounting::select(&ctx.app, f.query.clone()).await
        } else {
            crate::server::accounting::select_in(&ctx.app, cluster.clone(), f.query.clone()).await
        };
        let mut acct = found.map_err(|e| Error::from_api(&e, "slurmdb_jobs_get()"))?;
        acct.jobs
            .retain(|j| mine.is_none_or(|uid| j.uid == uid) && f.keeps(j, &cluster));
        acct.jobs.sort_by_key(|j| j.list_key());
        parts.push((cluster, acct));
    }
    Ok(Selected {
        parts,
        filter: f,
        tracked: snap.tracked_tres,
    })
}

/// The answer: `jobs[]`, or a warning that nothing was found, as Slurm's slurmdbd
/// plugin answers.
fn jobs_answer(ctx: &Ctx, found: &Selected, mut warnings: Vec<(String, String)>) -> Response {
    let now = crate::server::now();
    let (f, tracked) = (&found.filter, &found.tracked);
    let mut jobs = Vec::new();
    for (cluster, acct) in &found.parts {
        let derived = derived_exit_codes(&acct.steps);
        for j in &acct.jobs {
            let steps: Vec<&StepRecord> = if f.skip_steps {
                Vec::new()
            } else {
                let mut s: Vec<&StepRecord> = acct
                    .steps
                    .iter()
                    .filter(|s| s.job_id == j.id && s.run == j.restarts && f.keeps_step(j, s))
                    .collect();
                s.sort_by_key(|s| step_order(s));
                s
            };
            for r in acct.runs.iter().filter(|r| r.id == j.id) {
                jobs.push(job(r, &[], (0, 0), cluster, tracked, now));
            }
            let d = derived.get(&j.id).copied().unwrap_or((0, 0));
            jobs.push(job(j, &steps, d, cluster, tracked, now));
        }
    }
    if jobs.is_empty() {
        warnings.push((
            "slurmdb_jobs_get() found nothing".into(),
            "_dump_jobs".into(),
        ));
    }
    db::answer(ctx, fields([("jobs", Value::Array(jobs))]), &[], &warnings)
}

/// `GET jobs[?JOB_CONDITION]`.
pub(super) async fn list(ctx: Ctx, q: Pairs) -> Response {
    let empty = || fields([("jobs", json!([]))]);
    let pairs = match db::pairs(q, LIST) {
        Ok(p) => p,
        Err(e) => return db::answer(&ctx, empty(), &e, &[]),
    };
    let now = crate::server::now();
    let (f, warnings) = if pairs.is_empty() {
        // No condition: everything the database holds.
        (Filter::default(), Vec::new())
    } else {
        match filter(&pairs, now) {
            Ok(v) => v,
            Err(e) => return db::answer(&ctx, empty(), &e, &[]),
        }
    };
    match select(&ctx, f).await {
        Ok(found) => jobs_answer(&ctx, &found, warnings),
        Err(e) => db::answer(&ctx, empty(), &[e], &[]),
    }
}

/// `GET job/{id}`: one job (`ID`, `ID_TASK`, or one step `ID.STEP`), with all its runs.
pub(super) async fn one(ctx: Ctx, Path(id): Path<String>) -> Response {
    let empty = || fields([("jobs", json!([]))]);
    let Some(step) = selected_step(&id) else {
        let e = bad_parameter("job_id", format!("Invalid job id: {id}"), "op_handler_job");
        return db::answer(&ctx, empty(), &e, &[]);
    };
    let mut f = Filter {
        steps: vec![step.clone()],
        ..Filter::default()
    };
    f.query.runs = true;
    match step.1 {
        Some(t) => f.query.tasks.push((step.0, t)),
        None => f.query.jobs.push(step.0),
    }
    match select(&ctx, f).await {
        Ok(found) => jobs_answer(&ctx, &found, Vec::new()),
        Err(e) => db::answer(&ctx, empty(), &[e], &[]),
    }
}

/// Steps in sacct's order: batch, extern, then by number.
fn step_order(s: &StepRecord) -> (u8, u32, u32) {
    match s.step {
        StepId::Batch => (0, 0, 0),
        StepId::Extern => (1, 0, 0),
        StepId::Number(n) => (2, n, 0),
        StepId::Part(n, p) => (2, n, p),
    }
}

/// Each job's derived exit code, as Slurm derives it (and sacct prints it): the highest
/// wait status of its srun steps, as (exit code, signal).
fn derived_exit_codes(steps: &[StepRecord]) -> BTreeMap<u64, (i32, i32)> {
    let status = |(code, signal): (i32, i32)| (i64::from(code) << 8) | i64::from(signal & 0x7f);
    let mut derived: BTreeMap<u64, (i32, i32)> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.step.number().is_some()) {
        let here = (s.exit_code, s.signal);
        let best = derived.entry(s.job_id).or_insert(here);
        if status(here) > status(*best) {
            *best = here;
        }
    }
    derived
}

/// An exit code and signal in Slurm's `PROCESS_EXIT_CODE` shape.
fn exit_code((code, signal): (i32, i32)) -> Value {
    if signal != 0 {
        let name = nix::sys::signal::Signal::try_from(signal)
            .map_or(String::new(), |s| s.as_str().to_string());
        return json!({
            "status": ["SIGNALED"],
            "return_code": unset(),
            "signal": {"id": number(signal), "name": name},
        });
    }
    json!({
        "status": [if code == 0 { "SUCCESS" } else { "ERROR" }],
        "return_code": number(code),
        "signal": {"id": unset(), "name": ""},
    })
}

/// A user's name by uid (the uid itself when unknown).
fn user_by_uid(uid: u32) -> String {
    crate::server::user_and_group(uid, 0).0
}

/// Slurm's reason for a job's last wait, as sacct shows it: slurmdbd keeps the reason a
/// job had when it started, never why it ended.
fn waited_for(reason: &str) -> &str {
    const ENDED: [&str; 5] = [
        "NonZeroExitCode",
        "JobLaunchFailure",
        "TimeLimit",
        "NodeDown",
        "OutOfMemory",
    ];
    if ENDED.contains(&reason) || reason.is_empty() {
        "None"
    } else {
        reason
    }
}

/// The TRES a job was allocated, as sacct lists them (for records written before jobs
/// carried their TRES: CPUs, memory, nodes, GPUs, billing as the CPUs).
fn job_tres(j: &JobRecord, allocated: bool) -> Vec<(String, u64)> {
    let kept = if allocated {
        &j.tres_alloc
    } else {
        &j.tres_req
    };
    if !kept.is_empty() {
        return kept.clone();
    }
    if allocated && j.nodes.is_empty() {
        return Vec::new();
    }
    let (cpus, nodes, mem) = if allocated {
        let n = j.nodes.len() as u64;
        (u64::from(allocated_cpus(j)), n, j.mem_per_node * n)
    } else {
        (
            u64::from(j.ntasks * j.cpus_per_task),
            u64::from(j.min_nodes.max(1)),
            j.mem_per_node,
        )
    };
    let gpus: u64 = if allocated {
        j.gpus_per_node.iter().map(|g| g.len() as u64).sum()
    } else {
        0
    };
    vec![
        ("cpu".into(), cpus),
        ("mem".into(), mem),
        ("node".into(), nodes),
        ("billing".into(), cpus),
        ("gres/gpu".into(), gpus),
    ]
}

/// CPU time (milliseconds) as slurmdbd's `time.user`, `.system` and `.total` hold it.
fn cpu_time(ms: u64) -> Value {
    json!({"seconds": ms / 1000, "microseconds": (ms % 1000) * 1000})
}

/// A step in Slurm's slurmdbd `STEP` shape.
fn step(j: &JobRecord, s: &StepRecord, tracked: &[String], now: i64) -> Value {
    let elapsed = match s.end {
        Some(e) => e - s.start,
        None if !j.state.is_finished() => now - s.start,
        None => 0,
    };
    let mem = match j.memory_request() {
        Some(MemoryRequest::PerCpu(m)) => m * u64::from(s.cpus),
        _ => j.mem_per_node * s.nodes.len().max(1) as u64,
    };
    let tres = [
        ("cpu".to_string(), u64::from(s.cpus)),
        ("mem".to_string(), mem),
        ("node".to_string(), s.nodes.len().max(1) as u64),
    ];
    let (user, system) = s
        .usage
        .as_ref()
        .map_or((0, 0), |u| (u.user_cpu_ms, u.system_cpu_ms));
    json!({
        "time": {
            "elapsed": elapsed.max(0),
            "end": s.end.map_or_else(unset, number),
            "start": number(s.start),
            "suspended": 0,
            "system": cpu_time(system),
            "limit": unset(),
            "total": cpu_time(user + system),
            "user": cpu_time(user),
        },
        "exit_code": exit_code((s.exit_code, s.signal)),
        "nodes": {
            "count": s.nodes.len(),
            "range": sluice_conf::hostlist::compress(&s.nodes),
            "list": s.nodes,
        },
        "tasks": {"count": s.ntasks},
        "pid": "",
        "CPU": {
            "requested_frequency": {"min": unset(), "max": unset()},
            "governor": [],
        },
        "kill_request_user": "",
        "state": [s.state.name()],
        "statistics": {
            "CPU": {"actual_frequency": 0},
            "energy": {"consumed": unset()},
        },
        "step": {
            "id": format!("{}.{}", j.id, s.step),
            "name": s.name,
            "stderr": "",
            "stdin": "",
            "stdout": "",
            "stderr_expanded": "",
            "stdin_expanded": "",
            "stdout_expanded": "",
        },
        "task": {"distribution": ""},
        "tres": {
            "requested": db_step_usage::lists(s.usage.as_deref(), Direction::In, tracked),
            "consumed": db_step_usage::lists(s.usage.as_deref(), Direction::Out, tracked),
            "allocated": db::tres_list(&tres, tracked),
        },
    })
}

/// A job in Slurm's slurmdbd `JOB` shape (v0.0.44), the fields Sluice keeps, with its
/// `steps` and derived exit code; times and states as sacct reports them.
fn job(
    j: &JobRecord,
    steps: &[&StepRecord],
    derived: (i32, i32),
    cluster: &str,
    tracked: &[String],
    now: i64,
) -> Value {
    let d = &j.desc;
    // A job cancelled before it started: Slurm records it as starting when it ended.
    let start = j.start_time.or(j.end_time);
    let elapsed = match (start, j.end_time) {
        (Some(s), Some(e)) => e - s,
        (Some(s), None) if !j.state.is_finished() => now - s,
        _ => 0,
    };
    // slurmdbd records a cancelled or timed-out job's end before its batch step
    // reports the signal.
    let code = if matches!(j.state, JobState::Cancelled | JobState::Timeout) {
        (0, 0)
    } else {
        (j.exit_code, j.signal)
    };
    let eligible = d.begin.unwrap_or(j.submit_time).max(j.submit_time);
    let (array_job, array_task) = match j.array {
        Some((a, t)) => (a, number(t)),
        None => (0, unset()),
    };
    let (mem_cpu, mem_node) = match j.memory_request() {
        Some(MemoryRequest::PerCpu(m)) => (number(m as i64), unset()),
        Some(MemoryRequest::PerNode(m)) => (unset(), number(m as i64)),
        _ => (unset(), number(j.mem_per_node as i64)),
    };
    // The job's CPU times: the sum over its steps that have ended, as sacct's.
    let (user, system) = steps
        .iter()
        .filter(|s| s.state.is_finished())
        .filter_map(|s| s.usage.as_ref())
        .fold((0, 0), |(u, y), s| (u + s.user_cpu_ms, y + s.system_cpu_ms));
    let group = crate::server::user_and_group(0, j.gid).1;
    let allocated = db::tres_list(&job_tres(j, true), tracked);
    let requested = db::tres_list(&job_tres(j, false), tracked);
    let steps: Vec<Value> = steps.iter().map(|s| step(j, s, tracked, now)).collect();
    let time = json!({
        "elapsed": elapsed.max(0),
        "eligible": eligible,
        "end": j.end_time.unwrap_or(0),
        "planned": match start {
            Some(s) => number((s - eligible).max(0)),
            None => unset(),
        },
        "start": start.unwrap_or(0),
        "submission": j.submit_time,
        "suspended": 0,
        "system": cpu_time(system),
        "limit": j.time_limit.map_or_else(infinite, |l| number(l / 60)),
        "total": cpu_time(user + system),
        "user": cpu_time(user),
    });
    let mut v = json!({
        "account": j.account,
        "comment": {
            "administrator": "",
            "job": d.comment.clone().unwrap_or_default(),
            "system": "",
        },
        "allocation_nodes": j.nodes.len(),
        "array": {
            "job_id": array_job,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task_id": array_task,
            "task": "",
        },
        "association": {
            "account": j.account,
            "cluster": cluster,
            "partition": "",
            "user": j.user,
        },
        "block": "",
        "cluster": cluster,
        "constraints": d.constraint.clone().unwrap_or_default(),
        "container": "",
        "derived_exit_code": exit_code(derived),
        "time": time,
        "exit_code": exit_code(code),
        "extra": "",
        "failed_node": "",
        "flags": [],
        "group": group,
        "het": match j.het {
            Some(h) => json!({"job_id": h.job_id, "job_offset": number(h.offset)}),
            None => json!({"job_id": 0, "job_offset": unset()}),
        },
        "job_id": j.id,
        "name": d.name,
        "licenses": "",
        "mcs": {"label": ""},
        "nodes": if j.nodes.is_empty() {
            "None assigned".to_string()
        } else {
            sluice_conf::hostlist::compress(&j.nodes)
        },
        "partition": j.partition,
    });
    let rest = json!({
        "hold": j.held(),
        "priority": number(j.priority),
        "qos": j.qos,
        "qosreq": "",
        "required": {
            "CPUs": j.ntasks * j.cpus_per_task,
            "memory_per_cpu": mem_cpu,
            "memory_per_node": mem_node,
        },
        "kill_request_user": j.cancelled_by.map(user_by_uid).unwrap_or_default(),
        "restart_cnt": j.restarts,
        "reservation": {
            "id": 0,
            "name": d.reservation.clone().unwrap_or_default(),
            "requested": d.reservation.clone().unwrap_or_default(),
        },
        "script": "",
        "segment_size": 0,
        "stdin": j.stdin,
        "stdout": j.stdout,
        "stderr": j.stderr,
        "stdin_expanded": j.stdin,
        "stdout_expanded": j.stdout,
        "stderr_expanded": j.stderr,
        "state": {
            "current": [j.state.name()],
            "reason": waited_for(&j.reason),
        },
        "steps": steps,
        "submit_line": d.submit_line.as_deref().unwrap_or_default(),
        "tres": {"allocated": allocated, "requested": requested},
        "used_gres": "",
        "user": j.user,
        "wckey": {"wckey": d.wckey.clone().unwrap_or_default(), "flags": []},
        "working_directory": d.work_dir,
    });
    if let (Some(v), Value::Object(rest)) = (v.as_object_mut(), rest) {
        v.extend(rest);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::envelope::errno;
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn job_conditions_read_as_slurms_parser_reads_them() {
        let now = 1_700_000_000;
        let (f, w) = filter(
            &pairs(&[
                ("users", "root,0"),
                ("state", "CD,failed,CA"),
                ("start_time", "1600000000"),
                ("end_time", "1700000000"),
                ("step", "7,8_2,9.batch"),
                ("flags", "show_duplicates,skip_steps"),
                ("bogus", "x"),
            ]),
            now,
        )
        .unwrap();
        assert_eq!(f.query.users, vec!["root", "root"]);
        assert_eq!(f.query.states, vec!["COMPLETED", "FAILED", "CANCELLED"]);
        assert_eq!(f.query.ended_since, Some(1_600_000_000));
        assert_eq!(f.query.submitted_by, Some(1_700_000_000));
        assert_eq!(f.query.jobs, vec![7, 9]);
        assert_eq!(f.query.tasks, vec![(8, 2)]);
        assert!(f.query.runs && f.skip_steps);
        assert_eq!(
            w,
            vec![(
                "Ignoring unknown field \"bogus\" of type string in JOB_CONDITION".to_string(),
                "#/bogus".to_string()
            )]
        );
        // Without job ids, since midnight.
        let (f, _) = filter(&pairs(&[("account", "a")]), now).unwrap();
        assert!(f
            .query
            .ended_since
            .is_some_and(|t| t <= now && now - t <= 86_400));
        for bad in [
            ("users", "no-such-user-here"),
            ("state", "SLEEPING"),
            ("start_time", "yesterdayish"),
            ("step", "x"),
            ("cpus_min", "-1"),
            ("flags", "fast"),
            ("reservation", "r"),
        ] {
            let e = filter(&pairs(&[bad]), now).unwrap_err();
            assert_eq!(e[0].number, errno::DATA_PARSE_BAD_INPUT, "{bad:?}");
            assert_eq!(e[1].number, errno::REST_INVALID_QUERY);
        }
    }

    #[test]
    fn exit_codes_have_slurms_shape() {
        assert_eq!(exit_code((0, 0))["status"], json!(["SUCCESS"]));
        assert_eq!(exit_code((3, 0))["return_code"], number(3));
        assert_eq!(exit_code((3, 0))["status"], json!(["ERROR"]));
        let v = exit_code((0, 9));
        assert_eq!(v["status"], json!(["SIGNALED"]));
        assert_eq!(v["signal"]["id"], number(9));
        assert_eq!(v["signal"]["name"], "SIGKILL");
        assert_eq!(v["return_code"]["set"], false);
    }

    #[test]
    fn a_finished_job_in_slurmdbds_shape() {
        let j = JobRecord {
            id: 5,
            state: JobState::Cancelled,
            submit_time: 100,
            start_time: None,
            end_time: Some(160),
            exit_code: 0,
            signal: 15,
            time_limit: Some(600),
            cancelled_by: Some(0),
            ..Default::default()
        };
        let s = StepRecord {
            time_limit: None,
            submit_line: None,
            timed_out: false,
            gpus: Vec::new(),
            srun: None,
            cancelled_by: None,
            job_id: 5,
            step: StepId::Batch,
            name: "batch".into(),
            state: JobState::Cancelled,
            start: 110,
            end: Some(150),
            exit_code: 0,
            signal: 15,
            nodes: vec!["n1".into()],
            ntasks: 1,
            cpus: 1,
            held_cpus: vec![],
            ended_on: vec![],
            usage: Some(Box::new(sluice_proto::usage::StepUsage {
                user_cpu_ms: 1500,
                system_cpu_ms: 250,
                ..Default::default()
            })),
            run: 0,
            suspended_secs: 0,
        };
        let v = job(&j, &[&s], (0, 0), "c", &[], 1000);
        // The CPU times Sluice gathered, the step's and (its ended steps') the job's.
        for t in [&v["time"], &v["steps"][0]["time"]] {
            assert_eq!(t["user"], json!({"seconds": 1, "microseconds": 500000}));
            assert_eq!(t["system"], json!({"seconds": 0, "microseconds": 250000}));
            assert_eq!(t["total"], json!({"seconds": 1, "microseconds": 750000}));
        }
        assert_eq!(v["time"]["start"], 160);
        assert_eq!(v["time"]["elapsed"], 0);
        assert_eq!(v["time"]["limit"], number(10));
        assert_eq!(v["state"]["current"], json!(["CANCELLED"]));
        assert_eq!(v["exit_code"]["status"], json!(["SUCCESS"]));
        assert_eq!(v["kill_request_user"], "root");
        assert_eq!(v["steps"][0]["step"]["id"], "5.batch");
        assert_eq!(v["steps"][0]["time"]["elapsed"], 40);
        assert_eq!(v["steps"][0]["exit_code"]["status"], json!(["SIGNALED"]));
    }
}
