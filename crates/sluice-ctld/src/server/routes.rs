//! The controller's routes. Each handler translates its request into an input of the
//! loop, with the caller taken from the connection, and the answer back into HTTP;
//! none reads or changes the controller's state itself. Job listings and records are
//! read from the snapshot the loop publishes (`state/listing.rs`), without waiting
//! for the loop.

use axum::extract::connect_info::ConnectInfo;

/// The largest submission read: an array of 4,000,001 tasks (Slurm's ceiling on
/// MaxArraySize) written index by index, with room for its script and environment.
const SUBMISSION_LIMIT: usize = 48 << 20;
use axum::extract::{Path as UrlPath, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use sluice_core::JobId;
use sluice_proto::error::ApiError;
use sluice_proto::listing::JobQuery;
use sluice_proto::types::{
    CancelRequest, Changed, Done, ExitReport, Heartbeat, HeartbeatReply, Incarnation,
    JobDescription, JobEnded, JobRecord, Register, StepId, StepRequest, TaskSelection,
    HEARTBEAT_SECS,
};

use super::input::{Change, Request};
use super::{
    accounting, accounts, audit, explain, metrics, priority, refuse, reservations, update,
};
use super::{user_and_group, App, Peer};

/// Every route.
pub(super) fn router(app: App) -> Router {
    Router::new()
        .route(
            "/v1/ping",
            get(|State(app): State<App>| async move {
                Json(Incarnation {
                    incarnation: app.incarnation.clone(),
                })
            }),
        )
        // A submission may carry an array of up to MaxArraySize's ceiling of tasks
        // (4,000,001, listed one by one), beyond the 2 MiB other requests are held to.
        .route(
            "/v1/jobs",
            post(submit)
                .get(list_jobs)
                .layer(axum::extract::DefaultBodyLimit::max(SUBMISSION_LIMIT)),
        )
        .route("/v1/will-run", post(will_run))
        .route("/v1/jobs/{id}", get(show_job))
        .route("/v1/jobs/{id}/devices/{node}", get(job_devices))
        .route("/v1/jobs/{id}/usage", get(job_usage))
        .route("/v1/steps", get(steps))
        .route("/v1/jobs/{id}/script", get(super::job_script::job_script))
        .route("/v1/jobs/{id}/explain", get(explain::explain))
        .route("/v1/jobs/{id}/hold", post(hold))
        .route("/v1/jobs/{id}/release", post(release))
        .route("/v1/jobs/{id}/requeue", post(requeue))
        .route("/v1/jobs/{id}/suspend", post(suspend))
        .route("/v1/jobs/{id}/resume", post(resume))
        .route("/v1/jobs/{id}/steps", post(start_step))
        .route("/v1/jobs/{id}/steps/{step}/end", post(end_step))
        .route("/v1/jobs/{id}/complete", post(complete))
        .route("/v1/cancel", post(cancel))
        .route(
            "/v1/accounting",
            get(accounting::everything).post(accounting::query),
        )
        .route("/v1/nodes", get(nodes))
        .route("/v1/nodes/update", post(update::update_nodes))
        .route("/v1/partitions/update", post(update::update_partition))
        .route("/v1/jobs/{id}/update", post(update::update_job))
        .route("/v1/accounts", get(accounts::list).post(accounts::change))
        .route("/v1/priority", get(priority::jobs))
        .route("/v1/shares", get(priority::shares))
        .route(
            "/v1/reservations",
            get(reservations::list).post(reservations::change),
        )
        .route("/v1/audit", get(audit::query))
        .route("/v1/partitions", get(partitions))
        .route("/v1/config", get(config))
        .route("/v1/diag", get(super::diag::report))
        .route("/v1/diag/reset", post(super::diag::reset))
        .route("/metrics", get(metrics::index))
        .route("/metrics/jobs", get(metrics::jobs))
        .route("/metrics/nodes", get(metrics::nodes))
        .route("/metrics/partitions", get(metrics::partitions))
        .route("/metrics/scheduler", get(metrics::scheduler))
        .route("/metrics/jobs-users-accts", get(metrics::users_accounts))
        .route("/metrics/sluice", get(metrics::sluice))
        .route(sluice_proto::auth::VOUCH_PATH, post(vouch))
        .route("/v1/agent/register", post(agent_register))
        .route("/v1/agent/ended", post(agent_ended))
        .route("/v1/agent/step-ended", post(step_ended_on))
        .route("/v1/agent/run-gone", post(run_gone))
        .route("/v1/agent/usage", post(usage_report))
        .route("/v1/agent/service", post(service_report))
        .route("/v1/reconfigure", post(super::reconfigure::reconfigure))
        .route("/v1/nodes/create", post(super::dynamic_nodes::create))
        .route("/v1/nodes/delete", post(super::dynamic_nodes::delete))
        .route("/v1/step-down", post(super::fencing::step_down_route))
        .route("/v1/takeover", post(super::fencing::already_active))
        .route("/v1/agent/heartbeat", post(agent_heartbeat))
        .route(sluice_proto::token::TOKEN_PATH, post(super::token::make))
        .merge(super::rest::router())
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            super::rpc_stats::count,
        ))
        .with_state(app)
}

/// The answer as JSON, or the refusal.
pub(super) fn reply<T: Serialize>(r: Result<T, ApiError>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => refuse(e),
    }
}

/// A change on behalf of `peer`, answered `{}` once durable.
pub(super) async fn change(app: App, peer: Peer, change: Change) -> Response {
    let caller = match change {
        Change::UpdateNodes(_) | Change::UpdatePartition(_) => app.super_caller(peer),
        _ => app.operator_caller(peer),
    };
    let r = app
        .ask(|reply| Request::Change {
            change,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|tasks| Changed { tasks }))
}

async fn submit(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(desc): Json<JobDescription>,
) -> Response {
    let caller = app.caller(peer);
    let (user, group) = user_and_group(peer.uid, peer.gid);
    let interactive = desc.interactive;
    let r = app
        .ask(|reply| Request::Submit {
            desc: Box::new(desc),
            caller,
            user,
            group,
            reply,
        })
        .await
        .and_then(|r| r);
    let mut answer = reply(r);
    if interactive {
        answer
            .extensions_mut()
            .insert(super::rpc_stats::RpcKind::ALLOCATION);
    }
    answer
}

/// `sbatch --test-only`: when and where a job would start, checked as a submission
/// but not queued.
async fn will_run(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(desc): Json<JobDescription>,
) -> Response {
    let caller = app.caller(peer);
    let (user, group) = user_and_group(peer.uid, peer.gid);
    let r = app
        .ask(|reply| Request::WillRun {
            desc: Box::new(desc),
            caller,
            user,
            group,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}

/// The jobs a listing asks for, from the latest snapshot (see
/// `sluice_proto::listing`); `brief`, as `squeue` lists them. A long listing is built
/// and encoded off the async workers.
pub(super) async fn list_jobs(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Query(mut q): Query<JobQuery>,
) -> Response {
    let listing = app.listing.latest();
    // `PrivateData=jobs`: a user lists only their own jobs.
    q.owner_only = app.owner_only(&listing, peer);
    let few = listing.len() < 1000;
    let encode = move || {
        let now = super::now();
        if q.brief {
            listing.listed_json(&q, now)
        } else {
            serde_json::to_vec(&listing.jobs(&q, now))
        }
    };
    let body = if few {
        encode()
    } else {
        match tokio::task::spawn_blocking(encode).await {
            Ok(body) => body,
            Err(e) => return refuse(internal(e.to_string())),
        }
    };
    match body {
        Ok(body) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => refuse(internal(e.to_string())),
    }
}

fn internal(message: String) -> ApiError {
    ApiError::new(sluice_proto::error::ErrorCode::Internal, message)
}

/// A job's record. The controller keeps no script or environment (the store does, for
/// the launch); should a record carry them, only its owner or an operator sees them (as
/// Slurm shows a batch script only to them).
async fn show_job(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
) -> Response {
    let caller = app.caller(peer);
    let listing = app.listing.latest();
    // `PrivateData=jobs`: another user's job is no job at all, as Slurm answers
    // (`Invalid job id specified`).
    let hidden = app.owner_only(&listing, peer);
    let found = listing
        .job(JobId(id))
        .filter(|r| hidden.is_none_or(|uid| r.uid == uid));
    reply((|| {
        let mut r: JobRecord = found.ok_or_else(ApiError::invalid_job)?;
        if !(caller.admin || caller.uid == r.uid) {
            r.desc.environment = Vec::new();
            r.desc.script = String::new();
        }
        Ok(r)
    })())
}

/// `GET /v1/jobs/{id}/usage` (`sstat`): a running job's steps with what they used so
/// far; another user's job is no job under `PrivateData=jobs`.
async fn job_usage(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
) -> Response {
    let hidden = app.owner_only(&app.listing.latest(), peer);
    let r = app
        .ask(|reply| Request::JobUsage {
            id: JobId(id),
            hidden,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}

/// `GET /v1/steps` (`squeue -s`, `scontrol show step`): the running steps of every
/// job the caller may see (under `PrivateData=jobs`, its own).
async fn steps(State(app): State<App>, ConnectInfo(peer): ConnectInfo<Peer>) -> Response {
    let hidden = app.owner_only(&app.listing.latest(), peer);
    reply(app.ask(|reply| Request::Steps { hidden, reply }).await)
}

/// `POST /v1/agent/service`: an agent's word on a running service (restarts, health).
async fn service_report(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(report): Json<sluice_proto::service::ServiceReport>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::ServiceReport {
            report,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

/// `POST /v1/agent/usage`: an agent's periodic figures of a job run's steps on its node.
async fn usage_report(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(report): Json<sluice_proto::usage::UsageReport>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::UsageReport {
            report,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

/// The device files of a running job on one of its nodes, and which it may open
/// (`null` without `ConstrainDevices=yes`): what an agent confines the job's steps by
/// on a node that did not launch its batch script. Only agents (the controller's own
/// uid, or root) may ask.
async fn job_devices(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath((id, node)): UrlPath<(u64, String)>,
) -> Response {
    if !app.caller(peer).admin {
        return refuse(ApiError::access_denied());
    }
    let id = JobId(id);
    let r = app
        .ask(|reply| Request::JobDevices { id, node, reply })
        .await;
    reply(r.and_then(|files| files.ok_or_else(ApiError::invalid_job)))
}

async fn hold(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSelection>,
) -> Response {
    let c = Change::Hold {
        id: JobId(id),
        user: t.user,
        tasks: t.named(),
    };
    change(app, peer, c).await
}

async fn release(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSelection>,
) -> Response {
    let id = JobId(id);
    let tasks = t.named();
    change(app, peer, Change::Release { id, tasks }).await
}

async fn requeue(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSelection>,
) -> Response {
    let id = JobId(id);
    let c = Change::Requeue {
        id,
        tasks: t.named(),
        flags: t.requeue,
    };
    change(app, peer, c).await
}

/// `scontrol suspend`: the body is read (and ignored) before any refusal.
async fn suspend(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(_): Json<serde_json::Value>,
) -> Response {
    let (user, _) = user_and_group(peer.uid, peer.gid);
    let c = Change::Suspend {
        id: JobId(id),
        suspend: true,
        user,
    };
    change(app, peer, c).await
}

/// `scontrol resume`.
async fn resume(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(_): Json<serde_json::Value>,
) -> Response {
    let (user, _) = user_and_group(peer.uid, peer.gid);
    let c = Change::Suspend {
        id: JobId(id),
        suspend: false,
        user,
    };
    change(app, peer, c).await
}

async fn cancel(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<CancelRequest>,
) -> Response {
    let caller = app.operator_caller(peer);
    let r = app
        .ask(|reply| Request::Cancel {
            req: Box::new(req),
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}

async fn start_step(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(req): Json<StepRequest>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::StartStep {
            id: JobId(id),
            req: Box::new(req),
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r)
}

async fn end_step(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath((id, step)): UrlPath<(u64, String)>,
    Json(x): Json<ExitReport>,
) -> Response {
    let caller = app.caller(peer);
    // `S`, or `S+P` for a part of a heterogeneous step.
    let parsed = match step.split_once('+') {
        Some((n, p)) => n
            .parse()
            .and_then(|n| p.parse().map(|p| StepId::Part(n, p))),
        None => step.parse().map(StepId::Number),
    };
    let Ok(step) = parsed else {
        return reply::<Done>(Err(ApiError::invalid("Invalid job step id")));
    };
    let r = app
        .ask(|reply| Request::EndStep {
            id: JobId(id),
            step,
            exit_code: x.exit_code,
            signal: x.signal,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

async fn complete(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(x): Json<ExitReport>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::Complete {
            id: JobId(id),
            exit_code: x.exit_code,
            signal: x.signal,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

/// The store could not be read.
pub(super) fn storage(message: String) -> ApiError {
    ApiError::new(sluice_proto::error::ErrorCode::Storage, message)
}

/// `GET /v1/nodes` (`sinfo`, `scontrol show node`): from the published snapshot, never
/// waiting for the loop; `?brief=true` and `?runs=true` in compact forms (`sinfo`'s).
pub(super) async fn nodes(
    State(app): State<App>,
    axum::extract::Query(q): axum::extract::Query<sluice_proto::listing::NodeQuery>,
) -> Response {
    match app
        .listing
        .latest()
        .node_listing()
        .nodes_json(q.brief, q.runs)
    {
        Ok(body) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => refuse(internal(e.to_string())),
    }
}

/// `GET /v1/partitions`: from the published snapshot.
pub(super) async fn partitions(State(app): State<App>) -> Response {
    Json(app.listing.latest().node_listing().partitions()).into_response()
}

async fn config(State(app): State<App>) -> Response {
    reply(app.ask(Request::Config).await)
}

/// A credential for the caller's own uid and gid (from its socket, or its own
/// credential over TCP), for a request it is about to send to an agent: the controller
/// vouches for callers on its host as every agent does on its own.
async fn vouch(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<sluice_proto::auth::VouchRequest>,
) -> Response {
    let Some(key) = &app.key else {
        return refuse(ApiError::new(
            sluice_proto::error::ErrorCode::NotReady,
            "this controller has no cluster key to vouch with",
        ));
    };
    reply(
        sluice_proto::auth::vouch(key, peer.uid, peer.gid, &req, super::now())
            .map_err(|e| ApiError::invalid(e.to_string())),
    )
}

async fn agent_register(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    address: Option<axum::Extension<ConnectInfo<std::net::SocketAddr>>>,
    Json(r): Json<Register>,
) -> Response {
    if !app.caller(peer).admin {
        return refuse(ApiError::access_denied());
    }
    let registration = crate::state::Registration {
        node: r.node,
        running: r
            .running
            .into_iter()
            .map(|(j, run)| (JobId(j), run))
            .collect(),
        // Over TCP, where it came from (the gate keeps the connection's address).
        from: address.map(|a| a.0 .0.ip().to_string()),
        hardware: r.hardware,
        conf_hash: r.conf_hash,
    };
    // A dynamic node's line, read here as slurm.conf's are (off the loop): over TCP
    // its agent is reached where it registered from, on `SlurmdPort`.
    let dynamic = match r.dynamic {
        None => None,
        Some(line) => {
            let line = match &registration.from {
                Some(from)
                    if !line
                        .to_ascii_lowercase()
                        .split_whitespace()
                        .any(|w| w.starts_with("nodeaddr=")) =>
                {
                    format!("{line} NodeAddr={from}")
                }
                _ => line,
            };
            let parse = line.clone();
            match tokio::task::spawn_blocking(move || super::dynamic_nodes::parse_node_line(&parse))
                .await
            {
                Ok(Ok(conf)) => Some(Ok(Box::new((line, conf)))),
                // Said only if the node is to be created: a node the controller knows
                // registers whatever its agent's line.
                Ok(Err(e)) => Some(Err(e)),
                Err(e) => Some(Err(ApiError::invalid(e.to_string()))),
            }
        }
    };
    let done = app
        .ask(|reply| Request::AgentRegistered {
            registration,
            dynamic,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(done.map(|()| Incarnation {
        incarnation: app.incarnation.clone(),
    }))
}

/// A registered agent's heartbeat: counted by the loop when the agent is registered with
/// this incarnation; answered with the incarnation, so that an agent of a restarted
/// controller (or of a node given up) registers again.
async fn agent_heartbeat(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    address: Option<axum::Extension<ConnectInfo<std::net::SocketAddr>>>,
    Json(h): Json<Heartbeat>,
) -> Response {
    if !app.caller(peer).admin {
        return refuse(ApiError::access_denied());
    }
    let registered = if h.incarnation == app.incarnation {
        let from = address.map(|a| a.0 .0.ip().to_string());
        app.ask(|reply| Request::AgentHeartbeat {
            node: h.node,
            from,
            reply,
        })
        .await
    } else {
        Ok((false, HEARTBEAT_SECS))
    };
    reply(registered.map(|(registered, every)| HeartbeatReply {
        incarnation: app.incarnation.clone(),
        registered,
        every_secs: Some(every),
    }))
}

/// `POST /v1/agent/step-ended`: an agent's word that a step's tasks on its node ended.
async fn step_ended_on(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(report): Json<sluice_proto::types::StepEnded>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::StepEndedOn {
            report,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

/// `POST /v1/agent/run-gone`: an agent's word that nothing of a job's run is left on
/// its node.
async fn run_gone(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(report): Json<sluice_proto::types::RunGone>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ask(|reply| Request::RunGone {
            report,
            caller,
            reply,
        })
        .await
        .and_then(|r| r);
    reply(r.map(|()| Done {}))
}

async fn agent_ended(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(report): Json<JobEnded>,
) -> Response {
    if !app.caller(peer).admin {
        return refuse(ApiError::access_denied());
    }
    let done = app.ask(|reply| Request::AgentEnded { report, reply }).await;
    reply(done.map(|()| Done {}))
}
