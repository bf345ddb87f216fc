//! The shapes every answer of Slurm's REST API shares (data_parser v0.0.44): the
//! `meta` (plugin, client, command, Slurm's version and the cluster), `errors[]` and
//! `warnings[]` around the resource's own fields, and numbers that may be unset or
//! infinite as `{"set", "infinite", "number"}`.
//!
//! An answer with errors has the HTTP status Slurm chooses for its first error
//! (`http_status_from_error`): 404 for an unknown job, 401 for a bad credential, 422
//! for a request the controller refuses for what it asks, 400 for a body that does
//! not parse.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

/// The data parser whose shapes the API speaks.
pub const DATA_PARSER: &str = "data_parser/v0.0.44";
/// The Slurm release whose API this is (major, minor, micro).
pub const SLURM_VERSION: (&str, &str, &str) = ("25", "11", "0");

/// Slurm's error numbers the API answers with.
pub mod errno {
    /// `ESLURM_INVALID_PARTITION_NAME`.
    pub const INVALID_PARTITION_NAME: i32 = 2000;
    /// `ESLURM_ACCESS_DENIED`.
    pub const ACCESS_DENIED: i32 = 2002;
    /// `ESLURM_JOB_SCRIPT_MISSING`.
    pub const JOB_SCRIPT_MISSING: i32 = 2009;
    /// `ESLURM_INVALID_NODE_COUNT`.
    pub const INVALID_NODE_COUNT: i32 = 2006;
    /// `ESLURM_PATHNAME_TOO_LONG`.
    pub const PATHNAME_TOO_LONG: i32 = 2012;
    /// `ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE`.
    pub const NODE_CONFIG_UNAVAILABLE: i32 = 2014;
    /// `ESLURM_USER_ID_MISSING`.
    pub const USER_ID_MISSING: i32 = 2010;
    /// `ESLURM_INVALID_JOB_ID`.
    pub const INVALID_JOB_ID: i32 = 2017;
    /// `ESLURM_INVALID_NODE_NAME`.
    pub const INVALID_NODE_NAME: i32 = 2018;
    /// `ESLURM_TRANSITION_STATE_NO_UPDATE`.
    pub const TRANSITION_STATE_NO_UPDATE: i32 = 2020;
    /// `ESLURM_ALREADY_DONE`.
    pub const ALREADY_DONE: i32 = 2021;
    /// `ESLURM_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: i32 = 2036;
    /// `ESLURM_DISABLED`.
    pub const DISABLED: i32 = 2037;
    /// `ESLURM_INVALID_TIME_LIMIT`.
    pub const INVALID_TIME_LIMIT: i32 = 2051;
    /// `ESLURM_JOB_NOT_PENDING`.
    pub const JOB_NOT_PENDING: i32 = 2073;
    /// `ESLURM_JOB_FINISHED`.
    pub const JOB_FINISHED: i32 = 2084;
    /// `ESLURM_AUTH_CRED_INVALID`.
    pub const AUTH_CRED_INVALID: i32 = 6000;
    /// `ESLURM_AUTH_EXPIRED`.
    pub const AUTH_EXPIRED: i32 = 6001;
    /// `ESLURM_REST_INVALID_QUERY`.
    pub const REST_INVALID_QUERY: i32 = 9000;
    /// `ESLURM_REST_FAIL_PARSING`.
    pub const REST_FAIL_PARSING: i32 = 9001;
    /// `ESLURM_REST_UNKNOWN_URL_METHOD`.
    pub const REST_UNKNOWN_URL_METHOD: i32 = 9007;
    /// `ESLURM_DATA_PARSE_BAD_INPUT`.
    pub const DATA_PARSE_BAD_INPUT: i32 = 9216;
    /// `ESLURM_URL_INVALID_PATH`.
    pub const URL_INVALID_PATH: i32 = 11008;
    /// `ESLURM_HTTP_CONTENT_LENGTH_TOO_LARGE`.
    pub const HTTP_CONTENT_LENGTH_TOO_LARGE: i32 = 12016;
    /// `SLURM_ERROR`.
    pub const SLURM_ERROR: i32 = -1;
}

/// Slurm's texts for the error numbers the API answers with (`slurm_strerror`).
const TEXTS: &[(i32, &str)] = &[
    (0, "No error"),
    (
        errno::INVALID_PARTITION_NAME,
        "Invalid partition name specified",
    ),
    (errno::ACCESS_DENIED, "Access/permission denied"),
    (errno::JOB_SCRIPT_MISSING, "Job script not specified"),
    (
        errno::PATHNAME_TOO_LONG,
        sluice_proto::error::PATHNAME_TOO_LONG,
    ),
    (
        errno::INVALID_NODE_COUNT,
        "Node count specification invalid",
    ),
    (
        errno::NODE_CONFIG_UNAVAILABLE,
        "Requested node configuration is not available",
    ),
    (errno::USER_ID_MISSING, "Invalid user id"),
    (errno::INVALID_JOB_ID, "Invalid job id specified"),
    (errno::INVALID_NODE_NAME, "Invalid node name specified"),
    (
        errno::TRANSITION_STATE_NO_UPDATE,
        "Job can not be altered now, try again later",
    ),
    (
        errno::ALREADY_DONE,
        "Job/step already completing or completed",
    ),
    (
        errno::NOT_SUPPORTED,
        "Requested operation not supported on this system",
    ),
    (errno::DISABLED, "Requested operation is presently disabled"),
    (
        errno::INVALID_TIME_LIMIT,
        "Requested time limit is invalid (missing or exceeds some limit)",
    ),
    (errno::JOB_NOT_PENDING, "Job is no longer pending execution"),
    (errno::JOB_FINISHED, "Job has already finished"),
    (
        errno::AUTH_CRED_INVALID,
        "Invalid authentication credential",
    ),
    (errno::AUTH_EXPIRED, "Authentication credential expired"),
    (
        errno::REST_INVALID_QUERY,
        "Query empty or not RFC7320 compliant",
    ),
    (errno::REST_FAIL_PARSING, "Failure during parsing"),
    (
        errno::REST_UNKNOWN_URL_METHOD,
        "Requested HTTP query method is not supported at URL endpoint. Please query the \
         '/openapi/v3' endpoint or visit 'https://slurm.schedmd.com/rest_api.html' for the \
         OpenAPI specification which includes a list of all possible slurmrestd endpoints.",
    ),
    (errno::DATA_PARSE_BAD_INPUT, "Request to parse invalid data"),
    (errno::URL_INVALID_PATH, "Invalid or unknown URL path"),
    (
        errno::HTTP_CONTENT_LENGTH_TOO_LARGE,
        "HTTP Content-Length header too large to process",
    ),
];

/// Slurm's text for error number `n` (`slurm_strerror`).
pub fn strerror(n: i32) -> &'static str {
    TEXTS
        .iter()
        .find(|(k, _)| *k == n)
        .map_or("Unspecified error", |(_, text)| text)
}

/// The HTTP status for error number `n`, as slurmrestd chooses it.
pub fn status_of(n: i32) -> StatusCode {
    match n {
        0 => StatusCode::OK,
        errno::INVALID_JOB_ID | errno::URL_INVALID_PATH => StatusCode::NOT_FOUND,
        errno::AUTH_CRED_INVALID | errno::AUTH_EXPIRED => StatusCode::UNAUTHORIZED,
        errno::REST_FAIL_PARSING => StatusCode::BAD_REQUEST,
        errno::REST_INVALID_QUERY | errno::DATA_PARSE_BAD_INPUT => StatusCode::UNPROCESSABLE_ENTITY,
        errno::HTTP_CONTENT_LENGTH_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
        errno::REST_UNKNOWN_URL_METHOD => StatusCode::METHOD_NOT_ALLOWED,
        // What the controller refuses for what it asks (Slurm's 2000-range).
        2000..=2999 => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// One entry of `errors[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Slurm's error number.
    pub number: i32,
    /// What happened, in this request's words.
    pub description: String,
    /// Where it was found.
    pub source: String,
    /// The HTTP status it is answered with.
    pub status: StatusCode,
}

impl Error {
    /// Error `number`, described and placed.
    pub fn new(number: i32, description: impl Into<String>, source: impl Into<String>) -> Error {
        Error {
            number,
            description: description.into(),
            source: source.into(),
            status: status_of(number),
        }
    }

    /// The controller's refusal of a request, by its code, as Slurm numbers it.
    pub fn from_api(e: &sluice_proto::error::ApiError, source: &str) -> Error {
        use sluice_proto::error::ErrorCode as C;
        let number = match e.code {
            C::InvalidJobId => errno::INVALID_JOB_ID,
            C::InvalidNodeName => errno::INVALID_NODE_NAME,
            C::InvalidPartitionName => errno::INVALID_PARTITION_NAME,
            C::AccessDenied => errno::ACCESS_DENIED,
            C::InvalidUserId => errno::USER_ID_MISSING,
            C::Authentication => errno::AUTH_CRED_INVALID,
            C::TooLarge => errno::HTTP_CONTENT_LENGTH_TOO_LARGE,
            // A refusal for what is asked, with Slurm's message: 422, as Slurm answers
            // its 2000-range.
            C::Invalid | C::InvalidDevice | C::Busy | C::AlreadyDone | C::PluginNotLoaded => {
                let mut r = Error::new(by_message(&e.message), e.message.clone(), source);
                r.status = StatusCode::UNPROCESSABLE_ENTITY;
                return r;
            }
            C::Storage
            | C::ShuttingDown
            | C::NotReady
            | C::Closed
            | C::ControllerUnreachable
            | C::Internal
            | C::InStandby
            | C::Fenced => errno::SLURM_ERROR,
        };
        Error::new(number, e.message.clone(), source)
    }

    fn to_json(&self) -> Value {
        json!({
            "description": self.description,
            "error_number": self.number,
            "error": strerror(self.number),
            "source": self.source,
        })
    }
}

/// The number of a refusal whose message is one of Slurm's texts for what the
/// controller refuses (its 2000-range); `SLURM_ERROR` for the others (their message
/// says what; the status is 422 all the same).
pub fn by_message(message: &str) -> i32 {
    TEXTS
        .iter()
        .find(|(n, text)| (2000..3000).contains(n) && *text == message)
        .map_or(errno::SLURM_ERROR, |(n, _)| *n)
}

/// A number that is set.
pub fn number(n: impl Into<i64>) -> Value {
    json!({"set": true, "infinite": false, "number": n.into()})
}

/// A number that may be unset.
pub fn maybe(n: Option<impl Into<i64>>) -> Value {
    match n {
        Some(n) => number(n),
        None => unset(),
    }
}

/// A number that is not set.
pub fn unset() -> Value {
    json!({"set": false, "infinite": false, "number": 0})
}

/// An infinite number (`UNLIMITED`).
pub fn infinite() -> Value {
    json!({"set": true, "infinite": true, "number": 0})
}

/// Who asked, for `meta.client`.
#[derive(Clone, Debug, Default)]
pub struct Client {
    /// Where the request came from.
    pub source: String,
    /// The caller's user name.
    pub user: String,
    /// The caller's group name.
    pub group: String,
}

/// The openapi plugin an answer comes from, as `meta.plugin` names it: slurmctld's
/// (`/slurm/`) or slurmdbd's (`/slurmdb/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plugin {
    /// `meta.plugin.type`.
    pub kind: &'static str,
    /// `meta.plugin.name`.
    pub name: &'static str,
    /// `meta.plugin.accounting_storage`.
    pub storage: &'static str,
}

/// `/slurm/`'s plugin.
pub const SLURMCTLD: Plugin = Plugin {
    kind: "openapi/slurmctld",
    name: "Slurm OpenAPI slurmctld",
    storage: "",
};

/// `/slurmdb/`'s plugin.
pub const SLURMDBD: Plugin = Plugin {
    kind: "openapi/slurmdbd",
    name: "Slurm OpenAPI slurmdbd",
    storage: "accounting_storage/slurmdbd",
};

/// The `meta` of an answer from `plugin`.
pub fn meta_of(plugin: Plugin, cluster: &str, client: &Client) -> Value {
    let (major, minor, micro) = SLURM_VERSION;
    json!({
        "plugin": {
            "type": plugin.kind,
            "name": plugin.name,
            "data_parser": DATA_PARSER,
            "accounting_storage": plugin.storage,
        },
        "client": {
            "source": client.source,
            "user": client.user,
            "group": client.group,
        },
        "command": [],
        "slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": format!("{major}.{minor}.{micro}"),
            "cluster": cluster,
        },
    })
}

/// An answer: the resource's fields, with `meta`, `errors` and `warnings`; the status
/// of the first error, else 200.
pub fn answer(
    cluster: &str,
    client: &Client,
    fields: Map<String, Value>,
    errors: &[Error],
    warnings: &[String],
) -> Response {
    let warnings: Vec<(String, String)> = warnings
        .iter()
        .map(|w| (w.clone(), String::new()))
        .collect();
    answer_of(SLURMCTLD, cluster, client, fields, errors, &warnings)
}

/// An answer from `plugin`, its warnings as (description, source).
pub fn answer_of(
    plugin: Plugin,
    cluster: &str,
    client: &Client,
    fields: Map<String, Value>,
    errors: &[Error],
    warnings: &[(String, String)],
) -> Response {
    let mut body = fields;
    body.insert("meta".into(), meta_of(plugin, cluster, client));
    body.insert(
        "errors".into(),
        Value::Array(errors.iter().map(Error::to_json).collect()),
    );
    body.insert(
        "warnings".into(),
        Value::Array(
            warnings
                .iter()
                .map(|(w, s)| json!({"description": w, "source": s}))
                .collect(),
        ),
    );
    let status = errors.first().map_or(StatusCode::OK, |e| e.status);
    (status, axum::Json(Value::Object(body))).into_response()
}

/// A successful answer of slurmctld's plugin whose `key` is JSON written once for many
/// callers (`raw`, see [`super::shared_list`]) beside the per-request `fields`.
pub fn answer_with_raw(
    cluster: &str,
    client: &Client,
    fields: Map<String, Value>,
    key: &str,
    raw: &serde_json::value::RawValue,
) -> Response {
    use serde::ser::{SerializeMap, Serializer};
    let mut body = fields;
    body.insert("meta".into(), meta_of(SLURMCTLD, cluster, client));
    body.insert("errors".into(), Value::Array(Vec::new()));
    body.insert("warnings".into(), Value::Array(Vec::new()));
    let mut out = Vec::with_capacity(raw.get().len() + 1024);
    let mut ser = serde_json::Serializer::new(&mut out);
    let written = (|| {
        let mut map = ser.serialize_map(Some(body.len() + 1))?;
        map.serialize_entry(key, raw)?;
        for (k, v) in &body {
            map.serialize_entry(k, v)?;
        }
        map.end()
    })();
    written.expect("JSON values serialise");
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        out,
    )
        .into_response()
}

/// A refusal before the request reached a resource (a bad token, an unknown path):
/// the envelope with one error, and `status`.
pub fn failure(cluster: &str, status: StatusCode, error: Error) -> Response {
    let mut r = answer(cluster, &Client::default(), Map::new(), &[error], &[]);
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_errors_have_slurms_shapes() {
        assert_eq!(
            number(5),
            json!({"set": true, "infinite": false, "number": 5})
        );
        assert_eq!(maybe(None::<i64>)["set"], false);
        assert_eq!(infinite()["infinite"], true);
        let e = Error::new(errno::INVALID_JOB_ID, "Unable to query JobId=9", "job");
        assert_eq!(
            e.to_json(),
            json!({"description": "Unable to query JobId=9", "error_number": 2017,
                   "error": "Invalid job id specified", "source": "job"})
        );
        assert_eq!(status_of(errno::INVALID_JOB_ID), StatusCode::NOT_FOUND);
        assert_eq!(
            status_of(errno::ACCESS_DENIED),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(status_of(errno::AUTH_EXPIRED), StatusCode::UNAUTHORIZED);
        assert_eq!(status_of(errno::REST_FAIL_PARSING), StatusCode::BAD_REQUEST);
        let m = meta_of(SLURMCTLD, "c1", &Client::default());
        assert_eq!(m["slurm"]["cluster"], "c1");
        assert_eq!(m["slurm"]["release"], "25.11.0");
        assert_eq!(m["plugin"]["data_parser"], "data_parser/v0.0.44");
        let m = meta_of(SLURMDBD, "c1", &Client::default());
        assert_eq!(m["plugin"]["type"], "openapi/slurmdbd");
        assert_eq!(
            m["plugin"]["accounting_storage"],
            "accounting_storage/slurmdbd"
        );
    }

    #[test]
    fn refusals_are_numbered_as_slurm_numbers_them() {
        use sluice_proto::error::ApiError;
        let n = |e: ApiError| Error::from_api(&e, "s").number;
        assert_eq!(n(ApiError::invalid_job()), 2017);
        assert_eq!(n(ApiError::access_denied()), 2002);
        assert_eq!(
            n(ApiError::invalid("Invalid partition name specified")),
            2000
        );
        assert_eq!(n(ApiError::invalid("something else")), -1);
        let e = Error::from_api(&ApiError::invalid("something else"), "s");
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        // Every text is found by its message, and only the controller's are.
        assert_eq!(by_message("Job has already finished"), 2084);
        assert_eq!(by_message("Node count specification invalid"), 2006);
        assert_eq!(by_message("Failure during parsing"), -1);
        assert_eq!(strerror(2084), "Job has already finished");
        assert_eq!(strerror(4242), "Unspecified error");
    }
}
