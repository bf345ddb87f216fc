//! `GET /openapi/v3` (and `/openapi`, `/openapi.json`, as slurmrestd serves it): the
//! OpenAPI 3.0 document of the API this controller serves — its paths, methods,
//! parameters, request bodies and response schemas, under the names of Slurm's
//! data_parser v0.0.44 (`v0.0.44_openapi_job_info_resp`, ...), with the fields Sluice
//! fills, and the security schemes a token is sent by (`user` and `token`: the
//! `X-SLURM-USER-NAME` / `X-SLURM-USER-TOKEN` headers; `bearerAuth`).
//!
//! Built in code rather than kept as a JSON file embedded with `include_str!`: each
//! endpoint's entry ([`ENDPOINTS`]) is a line next to the others, with the schema it
//! answers with built by the same few helpers, so adding a route is adding a line here
//! (the test below fails until it is), and the document cannot drift from a
//! hand-edited file nobody compiles. The copy in the repository (`docs/openapi.json`)
//! is what this module prints, checked byte for byte against a running controller by
//! the cluster tests (`SLUICE_BLESS=1` rewrites it).
//!
//! Like slurmrestd, the document does not list its own paths (`OPENAPI_BIND_HIDDEN_OAS`).

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::envelope::{DATA_PARSER, SLURM_VERSION};

/// The paths the document is served at (not listed in it, as slurmrestd's are not).
pub(super) const PATHS: &[&str] = &["/openapi/v3", "/openapi", "/openapi.json"];

/// Schema name prefix of data_parser v0.0.44.
const V: &str = "v0.0.44";

/// One operation: method, path (OpenAPI's `{param}` names), what it answers with (the
/// `v0.0.44_openapi_*` schema), its request body's schema if any, and its parameters
/// (`in`, name, description).
struct Endpoint {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    response: &'static str,
    body: Option<&'static str>,
    params: &'static [(&'static str, &'static str, &'static str)],
}

const JOB_ID: (&str, &str, &str) = (
    "path",
    "job_id",
    "Job ID (`123`, or `123_4` for an array task)",
);
const NODE: (&str, &str, &str) = ("path", "node_name", "Node name");
const PARTITION: (&str, &str, &str) = ("path", "partition_name", "Partition name");
const RESERVATION: (&str, &str, &str) = ("path", "reservation_name", "Reservation name");
const ACCOUNT: (&str, &str, &str) = ("path", "account_name", "Account name");

/// Every endpoint of the API, in the order the document lists them.
const ENDPOINTS: &[Endpoint] = &[
    ep(
        "get",
        "/slurm/v0.0.44/ping",
        "ping the controller",
        "openapi_ping_array_resp",
    ),
    ep(
        "get",
        "/slurm/v0.0.44/diag",
        "the controller's statistics",
        "openapi_diag_resp",
    ),
    ep(
        "get",
        "/slurm/v0.0.44/jobs",
        "list the jobs",
        "openapi_job_info_resp",
    ),
    Endpoint {
        body: Some("kill_jobs_msg"),
        ..ep(
            "delete",
            "/slurm/v0.0.44/jobs",
            "signal or cancel jobs",
            "openapi_kill_jobs_resp",
        )
    },
    Endpoint {
        body: Some("job_submit_req"),
        ..ep(
            "post",
            "/slurm/v0.0.44/job/submit",
            "submit a batch job",
            "openapi_job_submit_response",
        )
    },
    Endpoint {
        params: &[JOB_ID],
        ..ep(
            "get",
            "/slurm/v0.0.44/job/{job_id}",
            "show a job",
            "openapi_job_info_resp",
        )
    },
    Endpoint {
        body: Some("job_desc_msg"),
        params: &[JOB_ID],
        ..ep(
            "post",
            "/slurm/v0.0.44/job/{job_id}",
            "update a job",
            "openapi_job_post_response",
        )
    },
    Endpoint {
        params: &[
            JOB_ID,
            (
                "query",
                "signal",
                "Signal to send (name or number); none: cancel",
            ),
            (
                "query",
                "flags",
                "Signal flags (`BATCH_JOB`, ...), comma separated",
            ),
        ],
        ..ep(
            "delete",
            "/slurm/v0.0.44/job/{job_id}",
            "cancel or signal a job",
            "openapi_kill_job_resp",
        )
    },
    ep(
        "get",
        "/slurm/v0.0.44/nodes",
        "list the nodes",
        "openapi_nodes_resp",
    ),
    Endpoint {
        params: &[NODE],
        ..ep(
            "get",
            "/slurm/v0.0.44/node/{node_name}",
            "show a node",
            "openapi_nodes_resp",
        )
    },
    Endpoint {
        body: Some("update_node_msg"),
        params: &[NODE],
        ..ep(
            "post",
            "/slurm/v0.0.44/node/{node_name}",
            "update a node",
            "openapi_resp",
        )
    },
    ep(
        "get",
        "/slurm/v0.0.44/partitions",
        "list the partitions",
        "openapi_partition_resp",
    ),
    Endpoint {
        params: &[PARTITION],
        ..ep(
            "get",
            "/slurm/v0.0.44/partition/{partition_name}",
            "show a partition",
            "openapi_partition_resp",
        )
    },
    ep(
        "get",
        "/slurm/v0.0.44/reservations",
        "list the reservations",
        "openapi_reservation_resp",
    ),
    Endpoint {
        params: &[RESERVATION],
        ..ep(
            "get",
            "/slurm/v0.0.44/reservation/{reservation_name}",
            "show a reservation",
            "openapi_reservation_resp",
        )
    },
    ep(
        "get",
        "/slurm/v0.0.44/shares",
        "fair share of the associations",
        "openapi_shares_resp",
    ),
    ep(
        "get",
        "/slurmdb/v0.0.44/jobs",
        "jobs from accounting",
        "openapi_slurmdbd_jobs_resp",
    ),
    Endpoint {
        params: &[JOB_ID],
        ..ep(
            "get",
            "/slurmdb/v0.0.44/job/{job_id}",
            "a job from accounting",
            "openapi_slurmdbd_jobs_resp",
        )
    },
    ep(
        "get",
        "/slurmdb/v0.0.44/accounts",
        "list the accounts",
        "openapi_accounts_resp",
    ),
    Endpoint {
        params: &[ACCOUNT],
        ..ep(
            "get",
            "/slurmdb/v0.0.44/account/{account_name}",
            "show an account",
            "openapi_accounts_resp",
        )
    },
    ep(
        "get",
        "/slurmdb/v0.0.44/associations",
        "list the associations",
        "openapi_assocs_resp",
    ),
    ep(
        "get",
        "/slurmdb/v0.0.44/qos",
        "list the QOS",
        "openapi_slurmdbd_qos_resp",
    ),
    ep(
        "get",
        "/slurmdb/v0.0.44/users",
        "list the users",
        "openapi_users_resp",
    ),
    ep(
        "get",
        "/slurmdb/v0.0.44/tres",
        "list the TRES",
        "openapi_tres_resp",
    ),
    ep(
        "get",
        "/slurmdb/v0.0.44/clusters",
        "list the clusters",
        "openapi_clusters_resp",
    ),
];

const fn ep(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    response: &'static str,
) -> Endpoint {
    Endpoint {
        method,
        path,
        summary,
        response,
        body: None,
        params: &[],
    }
}

/// The documented paths with their parameters' names blanked (`/job/{}`), as the
/// router's are compared with them.
#[cfg(test)]
fn documented_paths() -> Vec<String> {
    let mut v: Vec<String> = ENDPOINTS.iter().map(|e| blank(e.path)).collect();
    v.dedup();
    v
}

/// `path` with each `{name}` (or `{*name}`) as `{}`.
#[cfg(test)]
fn blank(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if in_param => {}
            c => out.push(c),
        }
    }
    out
}

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{V}_{name}")})
}
fn string() -> Value {
    json!({"type": "string"})
}
fn integer() -> Value {
    json!({"type": "integer", "format": "int64"})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
fn strings() -> Value {
    json!({"type": "array", "items": string()})
}
/// A number that may be unset or infinite (`{set, infinite, number}`).
fn no_val() -> Value {
    r("uint64_no_val_struct")
}
fn array_of(item: Value) -> Value {
    json!({"type": "array", "items": item})
}

/// An object with `fields`, each required (Sluice fills every one it lists).
fn object(fields: &[(&str, Value)]) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let required: Vec<&str> = fields.iter().map(|f| f.0).collect();
    json!({"type": "object", "properties": props, "required": required})
}

/// An object whose `fields` may each be absent (a request body).
fn optional(fields: &[(&str, Value)]) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    json!({"type": "object", "properties": props})
}

/// A response: `meta`, `errors`, `warnings` and the resource's own `fields` (absent
/// from a refusal that did not reach the resource: not required).
fn response(fields: &[(&str, Value)]) -> Value {
    let mut props: Map<String, Value> = fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    props.insert("meta".into(), r("openapi_meta"));
    props.insert("errors".into(), r("openapi_errors"));
    props.insert("warnings".into(), r("openapi_warnings"));
    json!({"type": "object", "properties": props, "required": ["meta", "errors", "warnings"]})
}

/// Items whose shape the document does not pin down (their handlers fill Slurm's).
fn loose() -> Value {
    json!({"type": "object"})
}

fn schemas() -> Map<String, Value> {
    let mut s = Map::new();
    let mut add = |name: &str, v: Value| {
        s.insert(format!("{V}_{name}"), v);
    };
    add(
        "uint64_no_val_struct",
        object(&[
            ("set", boolean()),
            ("infinite", boolean()),
            ("number", integer()),
        ]),
    );
    add(
        "openapi_meta",
        object(&[
            (
                "plugin",
                object(&[
                    ("type", string()),
                    ("name", string()),
                    ("data_parser", string()),
                    ("accounting_storage", string()),
                ]),
            ),
            (
                "client",
                object(&[
                    ("source", string()),
                    ("user", string()),
                    ("group", string()),
                ]),
            ),
            ("command", strings()),
            (
                "slurm",
                object(&[
                    (
                        "version",
                        object(&[
                            ("major", string()),
                            ("micro", string()),
                            ("minor", string()),
                        ]),
                    ),
                    ("release", string()),
                    ("cluster", string()),
                ]),
            ),
        ]),
    );
    add(
        "openapi_error",
        object(&[
            ("description", string()),
            ("error_number", integer()),
            ("error", string()),
            ("source", string()),
        ]),
    );
    add("openapi_errors", array_of(r("openapi_error")));
    add(
        "openapi_warning",
        object(&[("description", string()), ("source", string())]),
    );
    add("openapi_warnings", array_of(r("openapi_warning")));
    add("openapi_resp", response(&[]));
    add(
        "controller_ping",
        object(&[
            ("hostname", string()),
            ("pinged", string()),
            ("responding", boolean()),
            ("latency", integer()),
            ("mode", string()),
            ("primary", boolean()),
        ]),
    );
    add(
        "openapi_ping_array_resp",
        response(&[("pings", array_of(r("controller_ping")))]),
    );
    add("stats_msg", stats_msg());
    add(
        "openapi_diag_resp",
        response(&[("statistics", r("stats_msg"))]),
    );
    add("job_info", job_info());
    add(
        "openapi_job_info_resp",
        response(&[
            ("jobs", array_of(r("job_info"))),
            ("last_backfill", no_val()),
            ("last_update", no_val()),
        ]),
    );
    add(
        "kill_jobs_resp_job",
        object(&[
            (
                "error",
                object(&[
                    ("string", string()),
                    ("code", integer()),
                    ("message", string()),
                ]),
            ),
            ("step_id", string()),
            ("job_id", no_val()),
            ("federation", object(&[("sibling", string())])),
        ]),
    );
    add(
        "openapi_kill_job_resp",
        response(&[("status", array_of(r("kill_jobs_resp_job")))]),
    );
    add(
        "openapi_kill_jobs_resp",
        response(&[("status", array_of(r("kill_jobs_resp_job")))]),
    );
    add(
        "kill_jobs_msg",
        optional(&[
            ("account", string()),
            ("flags", strings()),
            ("job_name", string()),
            ("jobs", strings()),
            ("partition", string()),
            ("qos", string()),
            ("reservation", string()),
            ("signal", string()),
            ("job_state", strings()),
            ("user_id", string()),
            ("user_name", string()),
            ("wckey", string()),
            ("nodes", strings()),
        ]),
    );
    add("job_desc_msg", job_desc_msg());
    add(
        "job_submit_req",
        optional(&[("script", string()), ("job", r("job_desc_msg"))]),
    );
    add(
        "job_submit_response_msg",
        object(&[
            ("job_id", integer()),
            ("step_id", string()),
            ("error_code", integer()),
            ("error", string()),
            ("job_submit_user_msg", string()),
        ]),
    );
    add(
        "openapi_job_submit_response",
        response(&[
            ("job_id", integer()),
            ("step_id", string()),
            ("job_submit_user_msg", string()),
            ("result", r("job_submit_response_msg")),
        ]),
    );
    add(
        "openapi_job_post_response",
        response(&[("results", array_of(loose())), ("job_id", string())]),
    );
    add("node", node());
    add(
        "openapi_nodes_resp",
        response(&[("nodes", array_of(r("node"))), ("last_update", no_val())]),
    );
    add(
        "update_node_msg",
        optional(&[
            ("comment", string()),
            ("features", strings()),
            ("features_act", strings()),
            ("reason", string()),
            ("reason_uid", string()),
            ("state", strings()),
            ("weight", no_val()),
        ]),
    );
    add("partition_info", partition_info());
    add(
        "openapi_partition_resp",
        response(&[
            ("partitions", array_of(r("partition_info"))),
            ("last_update", no_val()),
        ]),
    );
    add(
        "openapi_reservation_resp",
        response(&[
            ("reservations", array_of(loose())),
            ("last_update", no_val()),
        ]),
    );
    add("openapi_shares_resp", response(&[("shares", loose())]));
    add(
        "openapi_slurmdbd_jobs_resp",
        response(&[("jobs", array_of(loose()))]),
    );
    add(
        "openapi_accounts_resp",
        response(&[("accounts", array_of(loose()))]),
    );
    add(
        "openapi_assocs_resp",
        response(&[("associations", array_of(loose()))]),
    );
    add(
        "openapi_slurmdbd_qos_resp",
        response(&[("qos", array_of(loose()))]),
    );
    add(
        "openapi_users_resp",
        response(&[("users", array_of(loose()))]),
    );
    add(
        "openapi_tres_resp",
        response(&[("TRES", array_of(loose()))]),
    );
    add(
        "openapi_clusters_resp",
        response(&[("clusters", array_of(loose()))]),
    );
    s
}

/// `STATS_MSG`, the fields `sdiag` shows that Sluice counts.
fn stats_msg() -> Value {
    let mut fields: Vec<(&str, Value)> = vec![
        ("req_time", no_val()),
        ("req_time_start", no_val()),
        ("job_states_ts", no_val()),
        ("bf_when_last_cycle", no_val()),
        ("bf_active", boolean()),
    ];
    for k in [
        "server_thread_count",
        "agent_queue_size",
        "agent_count",
        "agent_thread_count",
        "dbd_agent_queue_size",
        "gettimeofday_latency",
        "schedule_cycle_max",
        "schedule_cycle_last",
        "schedule_cycle_sum",
        "schedule_cycle_total",
        "schedule_cycle_mean",
        "schedule_cycle_mean_depth",
        "schedule_cycle_per_minute",
        "schedule_cycle_depth",
        "schedule_queue_length",
        "jobs_submitted",
        "jobs_started",
        "jobs_completed",
        "jobs_canceled",
        "jobs_failed",
        "jobs_pending",
        "jobs_running",
        "bf_backfilled_jobs",
        "bf_last_backfilled_jobs",
        "bf_backfilled_het_jobs",
        "bf_cycle_counter",
        "bf_cycle_mean",
        "bf_depth_mean",
        "bf_depth_mean_try",
        "bf_cycle_sum",
        "bf_cycle_last",
        "bf_cycle_max",
        "bf_last_depth",
        "bf_last_depth_try",
        "bf_depth_sum",
        "bf_depth_try_sum",
        "bf_queue_len",
        "bf_queue_len_mean",
        "bf_queue_len_sum",
        "bf_table_size",
        "bf_table_size_sum",
        "bf_table_size_mean",
    ] {
        fields.push((k, integer()));
    }
    let rpc = |key: &str, id: &str, name: Value| {
        object(&[
            (id, integer()),
            (key, name),
            ("count", integer()),
            ("average_time", no_val()),
            ("total_time", integer()),
        ])
    };
    fields.push((
        "rpcs_by_message_type",
        array_of(rpc("message_type", "type_id", string())),
    ));
    fields.push(("rpcs_by_user", array_of(rpc("user", "user_id", string()))));
    object(&fields)
}

/// `JOB_INFO`, the fields Sluice fills.
fn job_info() -> Value {
    object(&[
        ("account", string()),
        ("accrue_time", no_val()),
        ("array_job_id", no_val()),
        ("array_task_id", no_val()),
        ("array_task_string", string()),
        ("batch_flag", boolean()),
        ("cluster", string()),
        ("command", string()),
        ("comment", string()),
        ("cpus", no_val()),
        ("cpus_per_task", no_val()),
        ("current_working_directory", string()),
        ("dependency", string()),
        ("end_time", no_val()),
        (
            "exit_code",
            object(&[
                ("status", strings()),
                ("return_code", no_val()),
                ("signal", object(&[("id", no_val()), ("name", string())])),
            ]),
        ),
        ("group_id", integer()),
        ("group_name", string()),
        ("het_job_id", no_val()),
        ("het_job_id_set", string()),
        ("het_job_offset", no_val()),
        ("hold", boolean()),
        ("job_id", integer()),
        ("job_state", strings()),
        ("memory_per_cpu", no_val()),
        ("memory_per_node", no_val()),
        ("name", string()),
        ("node_count", no_val()),
        ("nodes", string()),
        ("partition", string()),
        ("priority", no_val()),
        ("qos", string()),
        ("requeue", boolean()),
        ("restart_cnt", integer()),
        ("start_time", no_val()),
        ("state_description", string()),
        ("state_reason", string()),
        ("standard_error", string()),
        ("standard_input", string()),
        ("standard_output", string()),
        ("submit_time", no_val()),
        ("tasks", no_val()),
        ("time_limit", no_val()),
        ("user_id", integer()),
        ("user_name", string()),
    ])
}

/// `JOB_DESC_MSG`, the fields Sluice reads (numbers plain or `{set, infinite, number}`;
/// lists as arrays or comma separated).
fn job_desc_msg() -> Value {
    let count = json!({"oneOf": [integer(), no_val()]});
    let list = json!({"oneOf": [strings(), string()]});
    optional(&[
        ("account", string()),
        ("array", string()),
        ("begin_time", count.clone()),
        ("comment", string()),
        ("constraints", string()),
        ("cpus_per_task", count.clone()),
        ("current_working_directory", string()),
        ("dependency", string()),
        ("environment", list.clone()),
        ("excluded_nodes", list.clone()),
        ("exclusive", list.clone()),
        ("hold", boolean()),
        ("maximum_nodes", count.clone()),
        ("memory_per_cpu", count.clone()),
        ("memory_per_node", count.clone()),
        ("minimum_nodes", count.clone()),
        ("name", string()),
        ("nice", count.clone()),
        ("nodes", string()),
        ("partition", string()),
        ("qos", string()),
        ("requeue", boolean()),
        ("required_nodes", list),
        ("reservation", string()),
        ("script", string()),
        ("standard_error", string()),
        ("standard_input", string()),
        ("standard_output", string()),
        ("tasks", count.clone()),
        ("tasks_per_node", count.clone()),
        ("time_limit", count),
        ("wckey", string()),
    ])
}

/// `NODE`, the fields Sluice fills.
fn node() -> Value {
    let mut fields: Vec<(&str, Value)> = vec![
        ("name", string()),
        ("hostname", string()),
        ("address", string()),
        ("state", strings()),
        ("reason", string()),
        ("reason_set_by_user", string()),
        ("reason_changed_at", no_val()),
        ("free_mem", no_val()),
        ("gres", string()),
        ("gres_used", string()),
        ("partitions", strings()),
        ("features", strings()),
        ("active_features", strings()),
        ("tres", string()),
        ("tres_used", string()),
        ("boot_time", no_val()),
        ("slurmd_start_time", no_val()),
        ("last_busy", no_val()),
    ];
    for k in [
        "port",
        "cpus",
        "alloc_cpus",
        "alloc_idle_cpus",
        "sockets",
        "cores",
        "threads",
        "real_memory",
        "alloc_memory",
        "weight",
    ] {
        fields.push((k, integer()));
    }
    object(&fields)
}

/// `PARTITION_INFO`, the fields Sluice fills.
fn partition_info() -> Value {
    object(&[
        ("name", string()),
        ("cluster", string()),
        (
            "nodes",
            object(&[
                ("configured", string()),
                ("total", integer()),
                ("allowed_allocation", string()),
            ]),
        ),
        ("partition", object(&[("state", strings())])),
        ("flags", strings()),
        (
            "maximums",
            object(&[("time", no_val()), ("nodes", no_val())]),
        ),
        ("minimums", object(&[("nodes", integer())])),
        ("defaults", object(&[("time", no_val())])),
        (
            "priority",
            object(&[("job_factor", integer()), ("tier", integer())]),
        ),
        ("qos", object(&[("assigned", string())])),
        ("tres", object(&[("configured", string())])),
        ("grace_time", integer()),
        ("preemption_mode", strings()),
        ("state", strings()),
    ])
}

fn operation(e: &Endpoint) -> Value {
    let tag = e.path.split('/').nth(1).unwrap_or("slurm");
    let resp = r(e.response);
    let content = json!({"application/json": {"schema": resp}});
    let mut op = json!({
        "tags": [tag],
        "summary": e.summary,
        "operationId": format!(
            "{}_{}",
            e.method,
            e.path.trim_start_matches('/').replace(['/', '.'], "_").replace(['{', '}'], "")
        ),
        "responses": {
            "200": {"description": e.summary, "content": content},
            "default": {"description": "the error, in the same envelope", "content": content},
        },
    });
    if !e.params.is_empty() {
        op["parameters"] = e
            .params
            .iter()
            .map(|(place, name, description)| {
                json!({
                    "in": place,
                    "name": name,
                    "description": description,
                    "required": *place == "path",
                    "schema": if *name == "job_id" {
                        json!({"type": "string", "pattern": "^[0-9]+(_[0-9]+)?$"})
                    } else {
                        string()
                    },
                })
            })
            .collect();
    }
    if let Some(body) = e.body {
        op["requestBody"] = json!({
            "required": true,
            "content": {"application/json": {"schema": r(body)}},
        });
    }
    op
}

/// The document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for e in ENDPOINTS {
        let entry = paths.entry(e.path.to_string()).or_insert_with(|| json!({}));
        entry[e.method] = operation(e);
    }
    let (major, minor, micro) = SLURM_VERSION;
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Slurm REST API",
            "description": "Slurm's REST API (data_parser v0.0.44) as Sluice's controller serves it",
            "version": format!("Slurm-{major}.{minor}.{micro}"),
            "x-slurm": {
                "data_parsers": [{"plugin": DATA_PARSER}],
                "openapi": ["openapi/slurmctld", "openapi/slurmdbd"],
                "version": {"major": major, "micro": micro, "minor": minor},
                "release": format!("{major}.{minor}.{micro}"),
            },
        },
        "servers": [{"url": "/"}],
        "tags": [
            {"name": "slurm", "description": "methods that query slurmctld"},
            {"name": "slurmdb", "description": "methods that query slurmdbd"},
        ],
        "security": [{"user": [], "token": []}, {"bearerAuth": []}],
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "securitySchemes": {
                "user": {"type": "apiKey", "description": "User name", "name": "X-SLURM-USER-NAME", "in": "header"},
                "token": {"type": "apiKey", "description": "User access token", "name": "X-SLURM-USER-TOKEN", "in": "header"},
                "bearerAuth": {"type": "http", "description": "Bearer Authentication", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
    })
}

/// The document as served and as `docs/openapi.json` holds it: pretty JSON, one
/// newline at the end.
pub fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut t = serde_json::to_string_pretty(&document()).expect("JSON");
        t.push('\n');
        t
    })
}

/// `GET /openapi/v3`.
pub(super) async fn serve() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every `$ref` in `v`.
    fn refs(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.insert(r.trim_start_matches("#/components/schemas/").to_string());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_route_is_documented_and_every_documented_path_is_routed() {
        let routed: BTreeSet<String> = super::super::route_paths()
            .iter()
            .filter(|p| !PATHS.contains(p) && !p.contains("{*"))
            .map(|p| blank(p))
            .collect();
        let documented: BTreeSet<String> = documented_paths().into_iter().collect();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        assert!(
            undocumented.is_empty(),
            "routes missing from openapi.rs's ENDPOINTS: {undocumented:?}"
        );
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            unrouted.is_empty(),
            "documented paths no route serves: {unrouted:?}"
        );
        // Every path the document serves is one the router answers.
        for p in PATHS {
            assert!(super::super::route_paths().contains(p), "{p} not routed");
        }
    }

    #[test]
    fn every_schema_referred_to_is_defined_and_the_document_is_openapi_3() {
        let d = document();
        assert_eq!(d["openapi"], "3.0.3");
        let mut used = BTreeSet::new();
        refs(&d, &mut used);
        let defined: BTreeSet<String> = d["components"]["schemas"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let missing: Vec<_> = used.difference(&defined).collect();
        assert!(missing.is_empty(), "undefined schemas: {missing:?}");
        assert!(used.contains("v0.0.44_openapi_job_info_resp"));
        assert_eq!(
            d["paths"]["/slurm/v0.0.44/job/{job_id}"]["delete"]["parameters"][0]["name"],
            "job_id"
        );
        assert_eq!(
            d["components"]["securitySchemes"]["token"]["name"],
            "X-SLURM-USER-TOKEN"
        );
        assert!(text().ends_with("}\n"));
    }

    #[test]
    fn a_served_job_fits_its_schema() {
        let d = document();
        let schema = &d["components"]["schemas"]["v0.0.44_job_info"];
        let j = super::super::jobs::job(&Default::default(), "c1");
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let filled: BTreeSet<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(required, filled);
    }
}
