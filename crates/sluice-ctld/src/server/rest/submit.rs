//! `POST job/submit`: Slurm's `{"script": ..., "job": {...}}` (`JOB_SUBMIT_REQ`, the
//! job in `JOB_DESC_MSG`'s shape) turned into a [`JobDescription`] and submitted as
//! `sbatch` submits, by the caller; answered with the new job's id once it is durable.
//!
//! Numbers are read plain (`"tasks": 4`) or in the API's shape (`{"set": true,
//! "number": 4}`, `"infinite": true` for an unlimited time). A field of the wrong type
//! is refused with Slurm's `Request to parse invalid data` and nothing is queued; a
//! field Sluice does not know is ignored with a warning, as Slurm's parser warns.

use axum::response::Response;
use serde_json::{json, Map, Value};
use sluice_proto::types::{JobDescription, MemoryRequest};

use super::envelope::{errno, Error};
use super::{fields, json_body, Ctx};
use crate::server::input::Request;

/// The job description's fields Sluice reads.
const KNOWN: &[&str] = &[
    "account",
    "array",
    "begin_time",
    "comment",
    "constraints",
    "cpus_per_task",
    "current_working_directory",
    "dependency",
    "environment",
    "excluded_nodes",
    "exclusive",
    "hold",
    "maximum_nodes",
    "memory_per_cpu",
    "memory_per_node",
    "minimum_nodes",
    "name",
    "nice",
    "nodes",
    "partition",
    "qos",
    "requeue",
    "required_nodes",
    "reservation",
    "script",
    "standard_error",
    "standard_input",
    "standard_output",
    "tasks",
    "tasks_per_node",
    "time_limit",
    "wckey",
];

/// Reads one job description, field by field, with the path of each for errors.
struct Fields<'a> {
    job: &'a Map<String, Value>,
}

fn bad(path: &str, want: &str, got: &Value) -> Error {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    Error::new(
        errno::DATA_PARSE_BAD_INPUT,
        format!("Expected {want} but got {kind}"),
        format!("#/job/{path}"),
    )
}

impl Fields<'_> {
    fn string(&self, k: &str) -> Result<Option<String>, Error> {
        match self.job.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(bad(k, "string", v)),
        }
    }

    fn boolean(&self, k: &str) -> Result<Option<bool>, Error> {
        match self.job.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(bad(k, "boolean", v)),
        }
    }

    /// A number, plain or `{set, infinite, number}`; `Some(None)` when infinite.
    fn number(&self, k: &str) -> Result<Option<Option<i64>>, Error> {
        let v = match self.job.get(k) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v,
        };
        let plain = |v: &Value| v.as_i64().ok_or_else(|| bad(k, "integer", v));
        match v {
            Value::Number(_) => plain(v).map(|n| Some(Some(n))),
            Value::Object(o) => {
                if o.get("infinite").and_then(Value::as_bool) == Some(true) {
                    return Ok(Some(None));
                }
                if o.get("set").and_then(Value::as_bool) == Some(false) {
                    return Ok(None);
                }
                match o.get("number") {
                    Some(n) => plain(n).map(|n| Some(Some(n))),
                    None => Err(bad(k, "integer", v)),
                }
            }
            _ => Err(bad(k, "integer", v)),
        }
    }

    /// A count that must be finite, positive and fit 32 bits.
    fn count(&self, k: &str) -> Result<Option<u32>, Error> {
        match self.number(k)? {
            None => Ok(None),
            Some(Some(n)) if n > 0 && n <= i64::from(u32::MAX) => Ok(Some(n as u32)),
            Some(_) => Err(Error::new(
                errno::DATA_PARSE_BAD_INPUT,
                format!("{k} must be a positive integer"),
                format!("#/job/{k}"),
            )),
        }
    }

    /// A list of strings, as an array or a comma separated string.
    fn list(&self, k: &str) -> Result<Option<Vec<String>>, Error> {
        match self.job.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            )),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(bad(k, "string", v)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(bad(k, "array of strings", v)),
        }
    }
}

/// The job description of a `JOB_SUBMIT_REQ` body, and the warnings for fields left
/// unread.
///
/// Errors: no job object, a heterogeneous job, no script, a field of the wrong type.
fn description(body: &Value, home: &str) -> Result<(JobDescription, Vec<String>), Error> {
    let source = "_job_post";
    let Some(body) = body.as_object() else {
        return Err(Error::new(
            errno::DATA_PARSE_BAD_INPUT,
            "Expected object but got another type",
            "#/",
        ));
    };
    if body.get("jobs").is_some_and(|j| !j.is_null()) {
        return Err(Error::new(
            errno::DATA_PARSE_BAD_INPUT,
            "Heterogeneous jobs (\"jobs\") are not supported",
            "#/jobs",
        ));
    }
    let job = match body.get("job") {
        Some(Value::Object(o)) => o,
        Some(v) => return Err(bad("", "object", v)),
        None => {
            return Err(Error::new(
                errno::REST_INVALID_QUERY,
                "Refusing request without job description",
                source,
            ))
        }
    };
    let f = Fields { job };
    let script = match body.get("script") {
        Some(Value::String(s)) => Some(s.clone()),
        None | Some(Value::Null) => f.string("script")?,
        Some(v) => return Err(bad("script", "string", v)),
    };
    let script = script.filter(|s| !s.is_empty()).ok_or_else(|| {
        Error::new(
            errno::JOB_SCRIPT_MISSING,
            "Batch job script must be specified",
            "script",
        )
    })?;
    let mut warnings: Vec<String> = job
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .map(|k| format!("Ignoring unknown field #/job/{k}"))
        .collect();
    warnings.sort();
    let environment = f
        .list("environment")?
        .unwrap_or_default()
        .into_iter()
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let nodes = match (f.count("minimum_nodes")?, f.count("maximum_nodes")?) {
        (None, None) => match f.string("nodes")? {
            None => None,
            Some(n) => Some(parse_nodes(&n)?),
        },
        (min, max) => {
            let min = min.or(max).unwrap_or(1);
            Some((min, max.unwrap_or(min).max(min)))
        }
    };
    let memory = match (f.number("memory_per_node")?, f.number("memory_per_cpu")?) {
        (Some(Some(n)), _) if n >= 0 => Some(MemoryRequest::PerNode(n as u64)),
        (_, Some(Some(n))) if n > 0 => Some(MemoryRequest::PerCpu(n as u64)),
        _ => None,
    };
    let array = match f.string("array")? {
        None => None,
        Some(a) => {
            // The index string itself is held to 4 KiB, as slurmctld holds `array_inx`,
            // before what it says is read.
            if a.len() > sluice_conf::array::MAX_INDEX_STRING {
                return Err(Error::new(
                    errno::PATHNAME_TOO_LONG,
                    sluice_proto::error::PATHNAME_TOO_LONG,
                    "#/job/array",
                ));
            }
            let spec = sluice_conf::array::parse_array(&a)
                .map_err(|e| Error::new(errno::DATA_PARSE_BAD_INPUT, e, "#/job/array"))?;
            Some((spec.indices, spec.throttle))
        }
    };
    let work_dir = f
        .string("current_working_directory")?
        .unwrap_or_else(|| home.to_string());
    let desc = JobDescription {
        name: f.string("name")?.unwrap_or_default(),
        partition: f.string("partition")?,
        account: f.string("account")?,
        reservation: f.string("reservation")?,
        qos: f.string("qos")?,
        ntasks: f.count("tasks")?,
        nodes,
        cpus_per_task: f.count("cpus_per_task")?,
        ntasks_per_node: f.count("tasks_per_node")?,
        // Minutes, as Slurm's `time_limit`.
        time_limit: f
            .number("time_limit")?
            .map(|t| t.map(|m| m.saturating_mul(60))),
        memory,
        exclusive: f.boolean("exclusive")?.unwrap_or(false),
        constraint: f.string("constraints")?,
        nodelist: f.list("required_nodes")?.map(|l| l.join(",")),
        exclude: f.list("excluded_nodes")?.map(|l| l.join(",")),
        requeue: f.boolean("requeue")?,
        output: f.string("standard_output")?,
        error: f.string("standard_error")?,
        input: f.string("standard_input")?,
        work_dir,
        script,
        environment,
        array,
        dependency: f.string("dependency")?.filter(|d| !d.is_empty()),
        begin: f.number("begin_time")?.flatten().filter(|b| *b > 0),
        hold: f.boolean("hold")?.unwrap_or(false),
        comment: f.string("comment")?,
        wckey: f.string("wckey")?,
        nice: f
            .number("nice")?
            .flatten()
            .map(|n| n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32),
        submit_host: crate::config::this_host(),
        ..Default::default()
    };
    Ok((desc, warnings))
}

/// `nodes` as a string: `N` or `MIN-MAX`.
fn parse_nodes(text: &str) -> Result<(u32, u32), Error> {
    let bad = || {
        Error::new(
            errno::DATA_PARSE_BAD_INPUT,
            format!("Invalid node count: {text}"),
            "#/job/nodes",
        )
    };
    let n = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(bad)
    };
    match text.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (n(a)?, n(b)?);
            if b < a {
                return Err(bad());
            }
            Ok((a, b))
        }
        None => n(text).map(|v| (v, v)),
    }
}

/// `POST job/submit`.
pub(super) async fn submit(ctx: Ctx, body: axum::body::Body) -> Response {
    let empty = || {
        fields([
            ("job_id", json!(0)),
            ("step_id", json!("")),
            ("job_submit_user_msg", json!("")),
        ])
    };
    let body = match json_body(body, "_job_post").await {
        Ok(b) => b,
        Err(e) => return ctx.fail(empty(), e),
    };
    let peer = ctx.peer;
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(peer.uid))
        .ok()
        .flatten()
        .map_or_else(|| "/".to_string(), |u| u.dir.display().to_string());
    let (desc, mut warnings) = match description(&body, &home) {
        Ok(d) => d,
        Err(e) => return ctx.fail(empty(), e),
    };
    let caller = ctx.app.caller(peer);
    let (user, group) = crate::server::user_and_group(peer.uid, peer.gid);
    let r = ctx
        .app
        .ask(|reply| Request::Submit {
            desc: Box::new(desc),
            caller,
            user,
            group,
            reply,
        })
        .await
        .and_then(|r| r);
    match r {
        Ok(reply) => {
            warnings.extend(reply.warnings);
            ctx.ok_warned(
                fields([
                    ("job_id", json!(reply.job_id)),
                    ("step_id", json!("batch")),
                    ("job_submit_user_msg", json!("")),
                    (
                        "result",
                        json!({
                            "job_id": reply.job_id,
                            "step_id": "batch",
                            "error_code": 0,
                            "error": "No error",
                            "job_submit_user_msg": "",
                        }),
                    ),
                ]),
                &warnings,
            )
        }
        Err(e) => ctx.fail(empty(), Error::from_api(&e, "slurm_submit_batch_job()")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<(JobDescription, Vec<String>), Error> {
        description(&body, "/home/u")
    }

    #[test]
    fn slurms_job_description_becomes_a_submission() {
        let (d, warnings) = parse(json!({
            "script": "#!/bin/sh\necho hi\n",
            "job": {
                "name": "rest", "partition": "debug", "tasks": 2,
                "time_limit": {"set": true, "infinite": false, "number": 5},
                "memory_per_node": 100, "current_working_directory": "/tmp",
                "environment": ["PATH=/bin", "A=b=c"], "minimum_nodes": 1,
                "hold": true, "array": "1-3%1", "gizmo": 1,
            }
        }))
        .unwrap();
        assert_eq!(d.name, "rest");
        assert_eq!(d.partition.as_deref(), Some("debug"));
        assert_eq!(d.ntasks, Some(2));
        assert_eq!(d.time_limit, Some(Some(300)));
        assert_eq!(d.memory, Some(MemoryRequest::PerNode(100)));
        assert_eq!(d.work_dir, "/tmp");
        assert_eq!(
            d.environment,
            [("PATH".into(), "/bin".into()), ("A".into(), "b=c".into())]
        );
        assert_eq!(d.nodes, Some((1, 1)));
        assert!(d.hold);
        assert_eq!(d.array, Some((vec![1, 2, 3], Some(1))));
        assert_eq!(warnings, ["Ignoring unknown field #/job/gizmo"]);
        // Unlimited, the script inside the job, the home directory by default.
        let (d, _) =
            parse(json!({"job": {"script": "#!/bin/sh\n", "time_limit": {"infinite": true}}}))
                .unwrap();
        assert_eq!(d.time_limit, Some(None));
        assert_eq!(d.work_dir, "/home/u");
    }

    #[test]
    fn wrong_types_and_missing_parts_are_refused() {
        let e = parse(json!({"script": "#!/bin/sh\n", "job": {"tasks": "four"}})).unwrap_err();
        assert_eq!(
            (e.number, e.description.as_str(), e.source.as_str()),
            (9216, "Expected integer but got string", "#/job/tasks")
        );
        let e = parse(json!({"script": "#!/bin/sh\n", "job": {"name": 5}})).unwrap_err();
        assert_eq!(e.source, "#/job/name");
        let e = parse(json!({"script": "#!/bin/sh\n", "job": {"tasks": 0}})).unwrap_err();
        assert_eq!(e.number, 9216);
        let e = parse(json!({"job": {"name": "x"}})).unwrap_err();
        assert_eq!(e.number, errno::JOB_SCRIPT_MISSING);
        let e = parse(json!({"script": "#!/bin/sh\n"})).unwrap_err();
        assert_eq!(e.number, errno::REST_INVALID_QUERY);
        let e = parse(json!([1, 2])).unwrap_err();
        assert_eq!(e.number, 9216);
        let e = parse(json!({"script": "x", "job": {"nodes": "3-1"}})).unwrap_err();
        assert_eq!(e.source, "#/job/nodes");
        let e = parse(json!({"script": "x", "job": {"array": "5-1"}})).unwrap_err();
        assert_eq!(e.source, "#/job/array");
        // An index string over 4 KiB, however few tasks it names: Slurm's 2012.
        let long = format!("1{}", ",1".repeat(2048));
        let e = parse(json!({"script": "x", "job": {"array": long}})).unwrap_err();
        assert_eq!(
            (e.number, e.description.as_str(), e.status),
            (
                errno::PATHNAME_TOO_LONG,
                "Pathname of a file, directory or other parameter too long",
                axum::http::StatusCode::UNPROCESSABLE_ENTITY
            )
        );
        let e = parse(json!({"script": "x", "job": {"array": format!("x{long}")}})).unwrap_err();
        assert_eq!(
            e.number,
            errno::PATHNAME_TOO_LONG,
            "the length before the indexes"
        );
        let taken = format!("10{}", ",1".repeat(2047));
        assert_eq!(taken.len(), 4096);
        assert!(parse(json!({"script": "x", "job": {"array": taken}})).is_ok());
    }
}
