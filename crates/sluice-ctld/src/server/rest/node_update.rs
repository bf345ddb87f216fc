//! `POST node/{name}`: Slurm's node update (`UPDATE_NODE_MSG`: `state` and `reason`, as
//! `scontrol update nodename=... state=... reason=...`), super users only (root,
//! `SlurmUser`, administrators), through the controller's one node update path
//! ([`Change::UpdateNodes`]). The path names the node (a hostlist, as Slurm takes it); a
//! `name` in the body is ignored with Slurm's warning. Fields Sluice does not change on a
//! node (features, weight, ...) refuse the request and change nothing.
//!
//! `DELETE node/{name}` is left out: Slurm deletes only dynamic nodes
//! (`scontrol delete nodename`), and Sluice's nodes are all slurm.conf's.

use axum::extract::Path;
use axum::response::Response;
use serde_json::{Map, Value};
use sluice_proto::types::NodeUpdate;

use super::envelope::{errno, strerror, Error};
use super::{json_body, Ctx};
use crate::server::input::{Change, Request};

/// The states a node may be set to (Slurm's names), as `scontrol update` takes them.
const STATES: &[&str] = &["DRAIN", "FAIL", "DOWN", "RESUME", "UNDRAIN", "IDLE"];

/// The update a body asks for: the state, the reason, and warnings.
///
/// Errors: a field of the wrong type, a field Sluice does not change, a state it does
/// not set (each at its path), or no state at all.
pub(super) fn parse(
    body: &Map<String, Value>,
) -> Result<(String, Option<String>, Vec<String>), Vec<Error>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut state = None;
    let mut reason = None;
    let bad = |k: &str, m: String| Error::new(errno::DATA_PARSE_BAD_INPUT, m, format!("#/{k}"));
    for (k, v) in body {
        match (k.as_str(), v) {
            (_, Value::Null) => {}
            ("state", Value::String(s)) => state = Some(vec![s.clone()]),
            ("state", Value::Array(items)) => {
                let names: Option<Vec<String>> =
                    items.iter().map(|i| i.as_str().map(String::from)).collect();
                match names {
                    Some(n) => state = Some(n),
                    None => errors.push(bad(k, "Expected array of strings".into())),
                }
            }
            ("reason", Value::String(s)) => reason = Some(s.clone()),
            ("name", Value::String(s)) => warnings.push(format!(
                "node_names field {s} ignored for singular node update"
            )),
            ("state" | "reason" | "name", other) => errors.push(bad(
                k,
                format!(
                    "Expected {} but got {}",
                    if k == "state" { "array" } else { "string" },
                    match other {
                        Value::Bool(_) => "boolean",
                        Value::Number(_) => "number",
                        Value::Object(_) => "object",
                        _ => "array",
                    }
                ),
            )),
            _ => errors.push(bad(
                k,
                format!("Update of this parameter is not supported: {k}"),
            )),
        }
    }
    let state = match state.as_deref() {
        Some([one]) if STATES.contains(&one.to_ascii_uppercase().as_str()) => {
            Some(one.to_ascii_uppercase())
        }
        Some(other) => {
            errors.push(bad(
                "state",
                format!("Invalid node state specified: {}", other.join(",")),
            ));
            None
        }
        None => None,
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    match state {
        Some(s) => Ok((s, reason, warnings)),
        None => Err(vec![Error::new(
            errno::DATA_PARSE_BAD_INPUT,
            "A new state is required (Sluice changes a node's state and reason only)",
            "#/state",
        )]),
    }
}

/// `POST node/{name}`.
pub(super) async fn update(ctx: Ctx, Path(name): Path<String>, body: axum::body::Body) -> Response {
    let source = "_update_node";
    let body = match json_body(body, source).await {
        Ok(Value::Object(o)) => o,
        Ok(_) => {
            return ctx.fail(
                Map::new(),
                Error::new(errno::DATA_PARSE_BAD_INPUT, "Expected object", "#/"),
            )
        }
        Err(e) => return ctx.fail(Map::new(), e),
    };
    let (state, reason, warnings) = match parse(&body) {
        Ok(v) => v,
        Err(mut errors) => {
            errors.push(Error::new(
                errno::REST_INVALID_QUERY,
                "Rejecting request. Failure parsing node update request.",
                source,
            ));
            return super::envelope::answer(
                &ctx.app.cluster_name,
                &ctx.client,
                Map::new(),
                &errors,
                &warnings_of(&body),
            );
        }
    };
    let caller = ctx.app.super_caller(ctx.peer);
    let change = Change::UpdateNodes(NodeUpdate {
        nodes: name.clone(),
        state,
        reason,
    });
    let done = ctx
        .app
        .ask(|reply| Request::Change {
            change,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    match done {
        Ok(_) => ctx.ok_warned(Map::new(), &warnings),
        Err(e) => {
            let mut err = Error::from_api(&e, source);
            if strerror(err.number) == e.message {
                err.description = format!("Failure to update node {name}");
            }
            super::envelope::answer(
                &ctx.app.cluster_name,
                &ctx.client,
                Map::new(),
                &[err],
                &warnings,
            )
        }
    }
}

/// The warnings a body earns however it is answered.
fn warnings_of(body: &Map<String, Value>) -> Vec<String> {
    match body.get("name") {
        Some(Value::String(s)) => vec![format!(
            "node_names field {s} ignored for singular node update"
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn state_and_reason_as_scontrol_takes_them() {
        let (s, r, w) = parse(&body(json!({"state": ["drain"], "reason": "fan"}))).unwrap();
        assert_eq!((s.as_str(), r.as_deref()), ("DRAIN", Some("fan")));
        assert!(w.is_empty());
        let (s, r, w) = parse(&body(json!({"state": "RESUME", "name": "n9"}))).unwrap();
        assert_eq!((s.as_str(), r), ("RESUME", None));
        assert_eq!(w, ["node_names field n9 ignored for singular node update"]);
    }

    #[test]
    fn what_sluice_does_not_change_is_refused() {
        let at = |v: Value| -> Vec<String> {
            parse(&body(v))
                .unwrap_err()
                .into_iter()
                .map(|e| e.source)
                .collect()
        };
        assert_eq!(at(json!({"state": ["DRAIN"], "weight": 5})), ["#/weight"]);
        assert_eq!(at(json!({"state": ["FUTURE"]})), ["#/state"]);
        assert_eq!(at(json!({"state": 3})), ["#/state"]);
        assert_eq!(at(json!({"reason": "why"})), ["#/state"]);
    }
}
