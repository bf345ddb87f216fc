//! `POST job/{id}`: Slurm's job update (`JOB_DESC_MSG`'s fields, as `scontrol update
//! job` sends them), by the caller, through the controller's one update path
//! ([`Change::UpdateJob`], then [`Change::Hold`] or [`Change::Release`] for `hold`
//! and a `priority` of 0 or infinite, as Slurm maps them).
//!
//! Every field is read before anything is asked: a field Sluice cannot update, or one
//! of the wrong type, refuses the whole request with Slurm's parse errors and nothing
//! changes; the controller checks the rest (the owner or an operator, Slurm's rules
//! for limits) before it changes anything.

use axum::extract::Path;
use axum::response::Response;
use serde_json::{json, Map, Value};
use sluice_core::JobId;
use sluice_proto::types::JobUpdate;

use super::envelope::{errno, strerror, Error};
use super::jobs::job_id;
use super::{fields, json_body, Ctx};
use crate::server::input::{Change, Request};

/// What an update asks: the controller's `KEY=VALUE` changes, and a hold or release.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Update {
    /// `(key, value)` in `scontrol update`'s spelling.
    pub changes: Vec<(String, String)>,
    /// `Some(true)`: hold; `Some(false)`: release.
    pub hold: Option<bool>,
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

fn bad_type(k: &str, want: &str, got: &Value) -> Error {
    Error::new(
        errno::DATA_PARSE_BAD_INPUT,
        format!("Expected {want} but got {}", kind(got)),
        format!("#/{k}"),
    )
}

/// A number, plain or `{set, infinite, number}`: `None` unset, `Some(None)` infinite.
fn number(k: &str, v: &Value) -> Result<Option<Option<i64>>, Error> {
    let plain = |n: &Value| n.as_i64().ok_or_else(|| bad_type(k, "integer", v));
    match v {
        Value::Null => Ok(None),
        Value::Number(_) => plain(v).map(|n| Some(Some(n))),
        Value::Object(o) => {
            if o.get("infinite").and_then(Value::as_bool) == Some(true) {
                return Ok(Some(None));
            }
            if o.get("set").and_then(Value::as_bool) == Some(false) {
                return Ok(None);
            }
            o.get("number")
                .map_or_else(|| Err(bad_type(k, "integer", v)), plain)
                .map(|n| Some(Some(n)))
        }
        _ => Err(bad_type(k, "integer", v)),
    }
}

fn string(k: &str, v: &Value) -> Result<Option<String>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(bad_type(k, "string", v)),
    }
}

/// Slurm's `INFINITE` priority (a release), as a plain number.
const INFINITE: i64 = 0xffff_fffe;

/// The update a body asks for, for job `id`.
///
/// Errors: a field of the wrong type, a field Sluice cannot update, or a `job_id` that
/// is not the path's (each at its path, as Slurm's parser reports them).
pub(super) fn parse(body: &Map<String, Value>, id: u64) -> Result<Update, Vec<Error>> {
    let mut u = Update::default();
    let mut errors = Vec::new();
    let mut change = |key: &str, value: String| u.changes.push((key.to_string(), value));
    let mut hold = None;
    let mut nodes: (Option<u32>, Option<u32>) = (None, None);
    for (k, v) in body {
        let r: Result<(), Error> = (|| {
            match k.as_str() {
                "time_limit" => match number(k, v)? {
                    None => {}
                    Some(None) => change("TimeLimit", "UNLIMITED".into()),
                    Some(Some(m)) if m > 0 => change("TimeLimit", m.to_string()),
                    Some(Some(_)) => {
                        return Err(Error::new(
                            errno::DATA_PARSE_BAD_INPUT,
                            "time_limit must be a positive number of minutes",
                            "#/time_limit",
                        ))
                    }
                },
                "name" => {
                    if let Some(s) = string(k, v)? {
                        change("JobName", s);
                    }
                }
                "comment" => {
                    if let Some(s) = string(k, v)? {
                        change("Comment", s);
                    }
                }
                "partition" => {
                    if let Some(s) = string(k, v)? {
                        change("Partition", s);
                    }
                }
                "nice" => {
                    if let Some(n) = number(k, v)? {
                        let n = n.ok_or_else(|| bad_type(k, "integer", v))?;
                        change("Nice", n.to_string());
                    }
                }
                // Slurm's `min_nodes`/`max_nodes`, sent together as `NumNodes`.
                "minimum_nodes" | "maximum_nodes" => {
                    if let Some(n) = number(k, v)? {
                        let n = n.ok_or_else(|| bad_type(k, "integer", v))?;
                        let n = u32::try_from(n).map_err(|_| bad_type(k, "unsigned integer", v))?;
                        if k == "minimum_nodes" {
                            nodes.0 = Some(n);
                        } else {
                            nodes.1 = Some(n);
                        }
                    }
                }
                "begin_time" => {
                    if let Some(Some(t)) = number(k, v)? {
                        change("StartTime", t.to_string());
                    }
                }
                "hold" => match v {
                    Value::Null => {}
                    Value::Bool(b) => hold = Some(*b),
                    _ => return Err(bad_type(k, "boolean", v)),
                },
                // As Slurm: 0 holds, INFINITE releases; any other priority is an
                // operator's, which Sluice does not set (the controller says so).
                "priority" => match number(k, v)? {
                    None => {}
                    Some(Some(0)) => hold = Some(true),
                    Some(None) => hold = Some(false),
                    Some(Some(p)) if p == INFINITE => hold = Some(false),
                    Some(Some(p)) => change("Priority", p.to_string()),
                },
                "job_id" => match number(k, v)? {
                    None => {}
                    Some(Some(n)) if n == id as i64 => {}
                    Some(_) => {
                        return Err(Error::new(
                            errno::DATA_PARSE_BAD_INPUT,
                            format!("job_id does not match JobId={id} of the path"),
                            "#/job_id",
                        ))
                    }
                },
                _ => {
                    return Err(Error::new(
                        errno::DATA_PARSE_BAD_INPUT,
                        format!("Update of this parameter is not supported: {k}"),
                        format!("#/{k}"),
                    ))
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            errors.push(e);
        }
    }
    u.hold = hold;
    match nodes {
        (Some(min), Some(max)) => change("NumNodes", format!("{min}-{max}")),
        (Some(min), None) => change("NumNodes", min.to_string()),
        (None, Some(max)) => change("NumNodes", format!("-{max}")),
        (None, None) => {}
    }
    if errors.is_empty() {
        Ok(u)
    } else {
        Err(errors)
    }
}

/// `POST job/{id}`.
pub(super) async fn update(ctx: Ctx, Path(id): Path<String>, body: axum::body::Body) -> Response {
    let empty = || fields([("results", json!([]))]);
    let source = "_job_post_update";
    let refused = || {
        Error::new(
            errno::REST_INVALID_QUERY,
            "Rejecting request. Failure parsing job update request.",
            source,
        )
    };
    let (id, task) = match job_id(&id) {
        Ok(v) => v,
        Err(e) => return ctx.fail(empty(), e),
    };
    if task.is_some() {
        return ctx.fail(
            empty(),
            Error::new(
                errno::REST_INVALID_QUERY,
                "Rejecting request. Submit job update against Array Job's JobID instead of array task id.",
                source,
            ),
        );
    }
    let body = match json_body(body, source).await {
        Ok(Value::Object(o)) => o,
        Ok(other) => return ctx.fail(empty(), bad_type("", "object", &other)),
        Err(e) => return ctx.fail(empty(), e),
    };
    let update = match parse(&body, id) {
        Ok(u) => u,
        Err(mut errors) => {
            errors.push(refused());
            return super::envelope::answer(
                &ctx.app.cluster_name,
                &ctx.client,
                empty(),
                &errors,
                &[],
            );
        }
    };
    if update.changes.is_empty() && update.hold.is_none() {
        return ctx.fail(empty(), refused());
    }
    let mut steps = Vec::new();
    if !update.changes.is_empty() {
        steps.push(Change::UpdateJob {
            id: JobId(id),
            update: JobUpdate {
                task: None,
                tasks: Vec::new(),
                changes: update.changes,
            },
        });
    }
    match update.hold {
        Some(true) => steps.push(Change::Hold {
            id: JobId(id),
            tasks: None,
            user: false,
        }),
        Some(false) => steps.push(Change::Release {
            id: JobId(id),
            tasks: None,
        }),
        None => {}
    }
    let caller = ctx.app.operator_caller(ctx.peer);
    let mut warnings = Vec::new();
    for change in steps {
        let done = ctx
            .app
            .ask(|reply| Request::Change {
                change,
                caller: caller.clone(),
                reply,
            })
            .await
            .and_then(|r| r);
        match done {
            // An array's tasks answered for one by one (some refused, say a hold of
            // a task that has ended): slurmrestd warns of each refusal.
            Ok(tasks) => warnings.extend(task_warnings(&tasks)),
            Err(e) => {
                let mut err = Error::from_api(&e, "slurm_update_job2()");
                if strerror(err.number) == e.message {
                    err.description = "Job update requested failed".into();
                }
                return ctx.fail(empty(), err);
            }
        }
    }
    ctx.ok_warned(empty(), &warnings)
}

/// slurmrestd's warning for each group of an array's tasks a change refused (the
/// controller's `ID_TASKS: MESSAGE` lines; those done say `No error`): its error
/// number and text, as slurmrestd 25.11 writes them (the tasks it does not name).
fn task_warnings(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| !l.ends_with(": No error"))
        .map(|l| {
            let message = l.split_once(": ").map_or(l.as_str(), |(_, m)| m);
            format!(
                "Job update resulted in non-zero return-code[{}]: {message}",
                super::envelope::by_message(message)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrays_refused_tasks_are_warned_of_and_those_done_are_not() {
        let lines = [
            "7_1-2: No error".to_string(),
            "7_3: Job has already finished".to_string(),
        ];
        assert_eq!(
            task_warnings(&lines),
            ["Job update resulted in non-zero return-code[2084]: Job has already finished"]
        );
        assert!(task_warnings(&[]).is_empty());
    }

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn pairs(u: &Update) -> Vec<(&str, &str)> {
        u.changes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn fields_become_scontrols_changes() {
        let u = parse(
            &body(
                json!({"time_limit": {"set": true, "infinite": false, "number": 25},
                         "name": "after", "comment": "c", "nice": 5, "job_id": 7}),
            ),
            7,
        )
        .unwrap();
        assert_eq!(
            pairs(&u),
            [
                ("Comment", "c"),
                ("JobName", "after"),
                ("Nice", "5"),
                ("TimeLimit", "25")
            ]
        );
        assert_eq!(u.hold, None);
        let u = parse(&body(json!({"time_limit": {"infinite": true}})), 7).unwrap();
        assert_eq!(pairs(&u), [("TimeLimit", "UNLIMITED")]);
        // The node counts go as one `NumNodes`, whichever of them is given.
        for (asked, sent) in [
            (
                json!({"minimum_nodes": 2, "maximum_nodes": {"set": true, "number": 3}}),
                "2-3",
            ),
            (json!({"minimum_nodes": 2}), "2"),
            (json!({"maximum_nodes": 4}), "-4"),
        ] {
            let u = parse(&body(asked), 7).unwrap();
            assert_eq!(pairs(&u), [("NumNodes", sent)]);
        }
        assert!(parse(&body(json!({"minimum_nodes": -1})), 7).is_err());
    }

    #[test]
    fn hold_and_priority_as_slurm_maps_them() {
        assert_eq!(
            parse(&body(json!({"hold": true})), 1).unwrap().hold,
            Some(true)
        );
        assert_eq!(
            parse(&body(json!({"priority": 0})), 1).unwrap().hold,
            Some(true)
        );
        assert_eq!(
            parse(
                &body(json!({"priority": {"set": true, "infinite": true}})),
                1
            )
            .unwrap()
            .hold,
            Some(false)
        );
        let u = parse(&body(json!({"priority": 500})), 1).unwrap();
        assert_eq!(pairs(&u), [("Priority", "500")]);
    }

    #[test]
    fn wrong_types_and_unknown_fields_are_refused_each_at_its_path() {
        let e = parse(
            &body(json!({"time_limit": "soon", "frobnicate": 1, "name": 3, "job_id": 8})),
            7,
        )
        .unwrap_err();
        let mut at: Vec<(i32, &str)> = e.iter().map(|e| (e.number, e.source.as_str())).collect();
        at.sort();
        assert_eq!(
            at,
            [
                (9216, "#/frobnicate"),
                (9216, "#/job_id"),
                (9216, "#/name"),
                (9216, "#/time_limit")
            ]
        );
    }
}
