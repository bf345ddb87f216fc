//! The controller daemon: HTTP/JSON on a Unix socket, durable state, and the loop that
//! drives the state machine.
//!
//! Every request carries its caller's uid and gid from the socket's peer credentials
//! (`SO_PEERCRED`); nothing in a request body says who the caller is. A submission is
//! answered only once its record is committed (group commit makes that cheap under
//! load). State changes that later effects depend on (a job marked RUNNING before its
//! script is launched) are made durable first.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::connect_info::{self, ConnectInfo};
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use sluice_proto::types::{
    CancelRequest, ConfigInfo, ErrorReply, JobDescription, JobEnded, JobRecord, JobState, NodeInfo,
    PartitionInfo, StepPlan, StepRecord, StepRequest, SubmitReply,
};
use sluice_proto::{Client, ClientError};
use sluice_store::Store;
use tokio::net::UnixListener;
use tokio::sync::Notify;

use crate::config::ClusterConfig;
use crate::state::{Caller, Controller, Effect, BAD_JOB};

/// Peer credentials of a connection.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    /// uid.
    pub uid: u32,
    /// gid.
    pub gid: u32,
}

impl connect_info::Connected<axum::serve::IncomingStream<'_, UnixListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, UnixListener>) -> Self {
        match stream.io().peer_cred() {
            Ok(c) => Peer {
                uid: c.uid(),
                gid: c.gid(),
            },
            // No credentials: treat as nobody.
            Err(_) => Peer {
                uid: u32::MAX - 1,
                gid: u32::MAX - 1,
            },
        }
    }
}

/// Why the controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The state directory or socket could not be set up.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] sluice_store::StoreError),
    /// A stored record could not be read back.
    #[error("{0}")]
    Corrupt(String),
}

mod accounts;
mod audit;
mod explain;
mod priority;
mod reservations;
mod update;

struct Shared {
    ctl: Mutex<Controller>,
    /// One queue of orders per agent socket (see [`Shared::queue_for`]).
    queues: Mutex<std::collections::HashMap<PathBuf, tokio::sync::mpsc::UnboundedSender<Effect>>>,
    store: Store,
    wake: Notify,
    own_uid: u32,
    /// Names this run of the controller. Agents register again when it changes: a
    /// controller that restarted knows nothing of who is up.
    incarnation: String,
    /// The TCP address the controller listens on, if any (`sacctmgr show cluster`'s
    /// `ControlHost` and `ControlPort`).
    listen: Option<std::net::SocketAddr>,
}

type App = Arc<Shared>;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ErrorReply {
            error: message.into(),
        }),
    )
        .into_response()
}

impl Shared {
    fn caller(&self, peer: Peer) -> Caller {
        Caller {
            uid: peer.uid,
            gid: peer.gid,
            admin: peer.uid == 0 || peer.uid == self.own_uid,
        }
    }
}

/// Runs the controller for `conf` with its state in `state_dir` until `shutdown`
/// completes: on the Unix socket `ctld.sock` there, and, when `listen` is given, on
/// that TCP address too, where only requests signed with the cluster key
/// (`cluster.key` in `state_dir`, created when missing; see [`sluice_proto::auth`]) are
/// served.
///
/// Errors: the state directory, database, key or sockets cannot be set up.
pub async fn run(
    conf: ClusterConfig,
    state_dir: &Path,
    listen: Option<std::net::SocketAddr>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ServeError::Io { path, source }
    };
    std::fs::create_dir_all(state_dir).map_err(io(state_dir))?;
    std::fs::create_dir_all(state_dir.join("agents")).map_err(io(state_dir))?;
    let (store, writer, snapshot) = Store::open(&state_dir.join("sluice.db"), conf.first_job_id)?;
    let mut jobs = Vec::new();
    for row in &snapshot.jobs {
        jobs.push(
            serde_json::from_str::<JobRecord>(&row.record)
                .map_err(|e| ServeError::Corrupt(format!("job {}: {e}", row.id)))?,
        );
    }
    let mut steps = Vec::new();
    for row in &snapshot.steps {
        steps.push(
            serde_json::from_str::<StepRecord>(&row.record)
                .map_err(|e| ServeError::Corrupt(format!("step {}: {e}", row.id)))?,
        );
    }
    let mut ctl = Controller::new(conf, state_dir, jobs, steps, now());
    ctl.restore_nodes(&snapshot.nodes);
    ctl.restore_reservations(&snapshot.reservations, now());
    let fresh = ctl
        .restore_accounts(&snapshot.accounts)
        .map_err(ServeError::Corrupt)?;
    if !fresh.is_empty() {
        // A new database: root, its user and QOS normal, on disk before anyone asks.
        store
            .put_accounts(fresh)
            .recv()
            .map_err(|_| sluice_store::StoreError::Closed)??;
    }
    ctl.await_agents();
    ctl.purge(now());
    let shared = Arc::new(Shared {
        ctl: Mutex::new(ctl),
        queues: Mutex::new(std::collections::HashMap::new()),
        store,
        wake: Notify::new(),
        own_uid: nix::unistd::geteuid().as_raw(),
        incarnation: format!(
            "{}.{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ),
        listen,
    });
    let socket = sluice_proto::paths::controller_socket(state_dir);
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).map_err(io(&socket))?;
    // Any local user may talk to the controller; who they are comes from the socket.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
        .map_err(io(&socket))?;
    let app = router(shared.clone());
    let tcp = match listen {
        Some(addr) => {
            let key_path = state_dir.join("cluster.key");
            let key = sluice_proto::auth::ensure_key(&key_path).map_err(io(&key_path))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(io(Path::new(&addr.to_string())))?;
            let signed = app.clone().layer(axum::middleware::from_fn_with_state(
                Arc::new(Signed {
                    key,
                    seen: Mutex::new(sluice_proto::auth::ReplayGuard::default()),
                    started: now(),
                }),
                verify_signed,
            ));
            Some(tokio::spawn(async move {
                axum::serve(listener, signed.into_make_service()).await
            }))
        }
        None => None,
    };
    let sched = tokio::spawn(schedule_loop(shared.clone()));
    let retention = shared.ctl.lock().expect("lock").conf.site.purge_audit_after;
    let purge = retention.map(|r| tokio::spawn(audit::purge_loop(shared.clone(), r)));
    let watch = tokio::spawn(watch_agents(shared.clone()));
    let server = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
        .with_graceful_shutdown(shutdown);
    let result = server.await;
    if let Some(tcp) = tcp {
        tcp.abort();
    }
    sched.abort();
    watch.abort();
    if let Some(purge) = purge {
        purge.abort();
    }
    audit::flush(&shared);
    let _ = shared.store.sync();
    drop(shared);
    drop(writer);
    let _ = std::fs::remove_file(&socket);
    result.map_err(io(&socket))
}

/// The TCP listener's key and the credentials it has accepted.
struct Signed {
    key: Vec<u8>,
    seen: Mutex<sluice_proto::auth::ReplayGuard>,
    /// When this controller started (Unix seconds): credentials made before are refused,
    /// since the replay guard of an earlier run is gone.
    started: i64,
}

/// Largest request body the TCP listener reads, bytes (Slurm's default largest batch
/// script is 4 MiB; a submission also carries its environment).
const MAX_SIGNED_BODY: usize = 8 << 20;

/// Admits a TCP request only with a valid, fresh, unused credential, and gives the
/// handlers its uid and gid as the Unix socket gives the kernel's: a `ConnectInfo<Peer>`.
async fn verify_signed(
    State(signed): State<Arc<Signed>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let header = parts
        .headers
        .get(sluice_proto::auth::AUTH_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Before reading a byte of the body: a request without a fresh credential from this
    // controller's lifetime costs nothing but its headers.
    let refuse = |e: sluice_proto::auth::AuthError| {
        tracing::warn!("refused a TCP request: {e}");
        error(
            StatusCode::UNAUTHORIZED,
            format!("Protocol authentication error ({e})"),
        )
    };
    let time = match header.as_deref().map(sluice_proto::auth::credential_time) {
        None => return refuse(sluice_proto::auth::AuthError::Missing),
        Some(Err(e)) => return refuse(e),
        Some(Ok(t)) => t,
    };
    if (time - now()).abs() > sluice_proto::auth::MAX_SKEW || time < signed.started {
        return refuse(sluice_proto::auth::AuthError::Expired);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return error(StatusCode::PAYLOAD_TOO_LARGE, "request too large");
    };
    let header = header.as_deref();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let checked = header
        .ok_or(sluice_proto::auth::AuthError::Missing)
        .and_then(|h| {
            sluice_proto::auth::verify(&signed.key, h, parts.method.as_str(), path, &bytes, now())
        })
        .and_then(|c| {
            signed
                .seen
                .lock()
                .expect("lock")
                .check(&c, now())
                .map(|()| c)
        });
    match checked {
        Ok(c) => {
            parts.extensions.insert(ConnectInfo(Peer {
                uid: c.uid,
                gid: c.gid,
            }));
            next.run(axum::extract::Request::from_parts(parts, bytes.into()))
                .await
        }
        Err(e) => {
            tracing::warn!("refused a TCP request: {e}");
            error(
                StatusCode::UNAUTHORIZED,
                format!("Protocol authentication error ({e})"),
            )
        }
    }
}

fn router(app: App) -> Router {
    Router::new()
        .route(
            "/v1/ping",
            get(|State(app): State<App>| async move {
                Json(serde_json::json!({"ok": true, "incarnation": app.incarnation}))
            }),
        )
        .route("/v1/jobs", post(submit).get(list_jobs))
        .route("/v1/jobs/{id}", get(show_job))
        .route("/v1/jobs/{id}/devices/{node}", get(job_devices))
        .route("/v1/jobs/{id}/explain", get(explain::explain))
        .route("/v1/jobs/{id}/hold", post(hold))
        .route("/v1/jobs/{id}/release", post(release))
        .route("/v1/jobs/{id}/requeue", post(requeue))
        .route("/v1/jobs/{id}/steps", post(start_step))
        .route("/v1/jobs/{id}/steps/{step}/end", post(end_step))
        .route("/v1/jobs/{id}/complete", post(complete))
        .route("/v1/cancel", post(cancel))
        .route("/v1/accounting", get(accounting))
        .route("/v1/nodes", get(nodes))
        .route("/v1/nodes/update", post(update::update_nodes))
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
        .route("/v1/agent/register", post(agent_register))
        .route("/v1/agent/ended", post(agent_ended))
        .with_state(app)
}

/// Carries out effects: records first (durably), then orders to agents.
async fn execute(app: &App, effects: Vec<Effect>) {
    audit::flush(app);
    let mut waits = Vec::new();
    let mut orders = Vec::new();
    for e in effects {
        match e {
            Effect::Persist(r) => {
                let json = serde_json::to_string(&*r).expect("records serialise");
                waits.push(app.store.put_job(r.id, json));
            }
            Effect::PersistStep(s) => {
                let json = serde_json::to_string(&s).expect("records serialise");
                let n = match s.step {
                    sluice_proto::types::StepId::Batch => u32::MAX - 1,
                    sluice_proto::types::StepId::Extern => u32::MAX - 2,
                    sluice_proto::types::StepId::Number(n) => n,
                };
                waits.push(app.store.put_step(s.job_id, n, json));
            }
            Effect::Forget(id) => app.store.delete_job(id),
            Effect::PersistRun(r) => {
                let json = serde_json::to_string(&*r).expect("records serialise");
                app.store.put_run(r.id, r.restarts, json);
            }
            Effect::PersistNode { name, record } => {
                app.store.put_node(&name, record);
                let store = app.store.clone();
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(store.sync());
                });
                waits.push(rx);
            }
            Effect::PersistAccounts(rows) => waits.push(app.store.put_accounts(rows)),
            Effect::PersistReservation { name, record } => {
                waits.push(app.store.put_reservation(&name, record))
            }
            other => orders.push(other),
        }
    }
    if !waits.is_empty() {
        let _ = tokio::task::spawn_blocking(move || {
            for w in waits {
                let _ = w.recv();
            }
        })
        .await;
    }
    for order in orders {
        for (socket, one) in per_agent(order) {
            app.queue_for(&socket).send(one).ok();
        }
    }
}

/// An order split into one order per agent it goes to.
fn per_agent(order: Effect) -> Vec<(PathBuf, Effect)> {
    match order {
        Effect::Launch { ref socket, .. } | Effect::SetTimeLimit { ref socket, .. } => {
            vec![(socket.clone(), order)]
        }
        Effect::Signal {
            sockets,
            job_id,
            signal,
            batch_only,
        } => sockets
            .into_iter()
            .map(|s| {
                let one = Effect::Signal {
                    sockets: vec![s.clone()],
                    job_id,
                    signal,
                    batch_only,
                };
                (s, one)
            })
            .collect(),
        Effect::Terminate {
            sockets,
            job_id,
            state,
        } => sockets
            .into_iter()
            .map(|s| {
                let one = Effect::Terminate {
                    sockets: vec![s.clone()],
                    job_id,
                    state,
                };
                (s, one)
            })
            .collect(),
        _ => Vec::new(),
    }
}

impl Shared {
    /// The queue of orders to the agent at `socket`: they are sent one after another,
    /// in the order they were decided, so that an agent never sees a job's end before
    /// its launch. Made (with its sender task) on first use.
    fn queue_for(self: &Arc<Self>, socket: &Path) -> tokio::sync::mpsc::UnboundedSender<Effect> {
        let mut queues = self.queues.lock().expect("lock");
        if let Some(q) = queues.get(socket) {
            return q.clone();
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Effect>();
        let app = self.clone();
        tokio::spawn(async move {
            while let Some(order) = rx.recv().await {
                let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
                    Box::pin(send_order(&app, order));
                task.await;
            }
        });
        queues.insert(socket.to_path_buf(), tx.clone());
        tx
    }
}

/// [`execute`] behind a boxed, `Send` future (it recurses through [`send_order`]).
fn execute_boxed(
    app: App,
    effects: Vec<Effect>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move { execute(&app, effects).await })
}

async fn send_order(app: &App, order: Effect) {
    let kill_wait = app.ctl.lock().expect("lock").conf.kill_wait;
    let result = tokio::task::spawn_blocking({
        let mut order = order.clone();
        if let Effect::Launch { order, .. } = &mut order {
            order.incarnation = app.incarnation.clone();
        }
        move || -> Result<(), (PathBuf, ClientError)> {
            match order {
                Effect::Launch { socket, order } => Client::new(&socket)
                    .post::<_, serde_json::Value>("/v1/batch", &*order)
                    .map(|_| ())
                    .map_err(|e| (socket, e)),
                Effect::Signal {
                    sockets,
                    job_id,
                    signal,
                    batch_only,
                } => {
                    for s in sockets {
                        let body = serde_json::json!({"job_id": job_id, "signal": signal, "batch_only": batch_only});
                        let _ = Client::new(&s).post::<_, serde_json::Value>("/v1/signal", &body);
                    }
                    Ok(())
                }
                Effect::SetTimeLimit {
                    socket,
                    job_id,
                    run,
                    time_limit,
                } => {
                    let body = sluice_proto::types::TimeLimitOrder {
                        job_id,
                        run,
                        time_limit,
                    };
                    let _ = Client::new(&socket).post::<_, serde_json::Value>("/v1/limit", &body);
                    Ok(())
                }
                Effect::Terminate { sockets, job_id, state } => {
                    for s in sockets {
                        let body = serde_json::json!({"job_id": job_id, "state": state, "kill_wait": kill_wait});
                        let _ = Client::new(&s).post::<_, serde_json::Value>("/v1/terminate", &body);
                    }
                    Ok(())
                }
                _ => Ok(()),
            }
        }
    })
    .await;
    if let (
        Ok(Err((
            _,
            ClientError::Status {
                status: 409,
                message,
            },
        ))),
        Effect::Launch { order, .. },
    ) = (&result, &order)
    {
        // The agent is busy re-registering with us; the launch did not happen.
        tracing::warn!(
            "job {}: launch refused ({message}); requeueing",
            order.job.id
        );
        let effects =
            app.ctl
                .lock()
                .expect("lock")
                .launch_refused(order.job.id, order.job.restarts, now());
        execute_boxed(app.clone(), effects).await;
        app.wake.notify_one();
        return;
    }
    if let Ok(Err((socket, why))) = result {
        // The node's agent cannot take the job: the node is down.
        let node = socket
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        tracing::warn!("agent on {node} unreachable ({why}); marking it down");
        let effects = app.ctl.lock().expect("lock").agent_lost(&node, now());
        execute_boxed(app.clone(), effects).await;
        app.wake.notify_one();
    }
}

/// How often registered agents are checked.
const AGENT_CHECK: Duration = Duration::from_secs(1);

/// Checks every registered agent each [`AGENT_CHECK`]; one whose socket refuses
/// connections is gone (a local socket does not drop connections for other reasons), so
/// its node goes DOWN and its jobs are requeued or end `NODE_FAIL` at once, rather than
/// after Slurm's `SlurmdTimeout`.
async fn watch_agents(app: App) {
    loop {
        tokio::time::sleep(AGENT_CHECK).await;
        let agents = app.ctl.lock().expect("lock").registered_agents();
        let (answered, gone) = tokio::task::spawn_blocking(move || {
            let mut answered = Vec::new();
            let mut gone = Vec::new();
            for (node, socket) in agents {
                match Client::new(&socket).get::<serde_json::Value>("/v1/ping") {
                    Ok(_) => answered.push(node),
                    Err(sluice_proto::client::ClientError::Connect { .. }) => gone.push(node),
                    Err(_) => {}
                }
            }
            (answered, gone)
        })
        .await
        .unwrap_or_default();
        // Nodes an operator resumed take work again once their agent answers.
        let effects = app
            .ctl
            .lock()
            .expect("lock")
            .agents_answered(&answered, now());
        if !effects.is_empty() {
            execute_boxed(app.clone(), effects).await;
            app.wake.notify_one();
        }
        for node in gone {
            tracing::warn!("agent on {node} is gone; marking the node down");
            let effects = app.ctl.lock().expect("lock").agent_lost(&node, now());
            execute_boxed(app.clone(), effects).await;
            app.wake.notify_one();
        }
    }
}

/// How often jobs past `MinJobAge` are forgotten, seconds.
const PURGE_EVERY: i64 = 1;

async fn schedule_loop(app: App) {
    let mut purged = now();
    loop {
        let wait = {
            let ctl = app.ctl.lock().expect("lock");
            ctl.next_wakeup()
                .map(|t| (t - now()).clamp(0, 1))
                .unwrap_or(1)
        };
        let _ = tokio::time::timeout(Duration::from_secs(wait as u64), app.wake.notified()).await;
        let (effects, idle, forecast) = {
            let mut ctl = app.ctl.lock().expect("lock");
            let effects = ctl.schedule(now());
            (
                effects,
                ctl.idle_reservation_notes(now()),
                ctl.forecast_wanted(now()),
            )
        };
        if let Some(work) = forecast {
            let app = app.clone();
            tokio::task::spawn_blocking(move || {
                let made = work.make();
                app.ctl.lock().expect("lock").forecast_made(made);
            });
        }
        for note in idle {
            tracing::info!("{note}");
        }
        if effects.is_empty() {
            audit::flush(&app);
        } else {
            execute(&app, effects).await;
        }
        if now() - purged >= PURGE_EVERY {
            purged = now();
            app.ctl.lock().expect("lock").purge(purged);
        }
    }
}

fn user_and_group(uid: u32, gid: u32) -> (String, String) {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name)
        .unwrap_or_else(|| gid.to_string());
    (user, group)
}

async fn submit(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(desc): Json<JobDescription>,
) -> Response {
    let caller = app.caller(peer);
    let (user, group) = user_and_group(peer.uid, peer.gid);
    let prepared = match app
        .ctl
        .lock()
        .expect("lock")
        .prepare(desc, &caller, &user, &group, now())
    {
        Ok(p) => p,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let warnings = prepared.warnings.clone();
    let p = prepared.clone();
    let rx = app.store.submit(
        prepared.ids(),
        Box::new(move |first| {
            p.records(first)
                .iter()
                .map(|r| serde_json::to_string(r).expect("records serialise"))
                .collect()
        }),
    );
    let first = match tokio::task::spawn_blocking(move || rx.recv()).await {
        Ok(Ok(Ok(id))) => id,
        Ok(Ok(Err(e))) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Unable to save the job: {e}"),
            )
        }
        _ => return error(StatusCode::INTERNAL_SERVER_ERROR, "Unable to save the job"),
    };
    // Like slurmctld, try to start the job at once, so that a job that fits is running
    // by the time its submitter looks (an `srun` gets its allocation without waiting
    // for the next pass).
    let effects = {
        let mut ctl = app.ctl.lock().expect("lock");
        let mut effects = ctl.accept(prepared.records(first), now());
        effects.extend(ctl.schedule(now()));
        effects
    };
    execute(&app, effects).await;
    app.wake.notify_one();
    Json(SubmitReply {
        job_id: first,
        warnings,
    })
    .into_response()
}

async fn list_jobs(State(app): State<App>) -> Json<Vec<JobRecord>> {
    Json(app.ctl.lock().expect("lock").visible_jobs(now()))
}

/// A job's record; its script and environment only for its owner or an operator (as
/// Slurm shows a batch script only to them).
async fn show_job(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
) -> Response {
    let caller = app.caller(peer);
    match app.ctl.lock().expect("lock").job(id) {
        Some(mut r) => {
            if !(caller.admin || caller.uid == r.uid) {
                r.desc.environment = Vec::new();
                r.desc.script = String::new();
            }
            Json(r).into_response()
        }
        None => error(StatusCode::NOT_FOUND, BAD_JOB),
    }
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
    let caller = app.caller(peer);
    if !caller.admin {
        return error(StatusCode::FORBIDDEN, "Access/permission denied");
    }
    let ctl = app.ctl.lock().expect("lock");
    if ctl.job(id).is_none() {
        return error(StatusCode::NOT_FOUND, BAD_JOB);
    }
    Json(ctl.job_devices_on(id, &node)).into_response()
}

/// Body of hold/release/requeue: an optional array task.
#[derive(Deserialize, Default)]
struct TaskSel {
    #[serde(default)]
    task: Option<u32>,
    /// `scontrol uhold`: a user hold even when an operator sets it.
    #[serde(default)]
    user: bool,
}

/// Answers a request that changed the controller's state: carries out its effects, lets
/// the scheduler look again, and replies `{}`; or Slurm's message (403 for a refusal
/// of permission, else 400).
async fn answer(app: &App, r: Result<Vec<Effect>, String>) -> Response {
    match r {
        Ok(effects) => {
            execute(app, effects).await;
            app.wake.notify_one();
            Json(serde_json::json!({})).into_response()
        }
        Err(e) if e == "Access/permission denied" => error(StatusCode::FORBIDDEN, e),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// A state change on behalf of `peer`: `change` runs under the controller's lock with
/// the caller and the time, then [`answer`] carries out its effects.
async fn act(
    app: App,
    peer: Peer,
    change: impl FnOnce(&mut Controller, &Caller, i64) -> Result<Vec<Effect>, String>,
) -> Response {
    let caller = app.caller(peer);
    let r = {
        let mut ctl = app.ctl.lock().expect("lock");
        change(&mut ctl, &caller, now())
    };
    answer(&app, r).await
}

async fn hold(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSel>,
) -> Response {
    if t.user {
        return act(app, peer, |c, who, now| c.user_hold(id, t.task, who, now)).await;
    }
    act(app, peer, |c, who, now| {
        c.set_hold(id, t.task, true, who, now)
    })
    .await
}

async fn release(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSel>,
) -> Response {
    act(app, peer, |c, who, now| {
        c.set_hold(id, t.task, false, who, now)
    })
    .await
}

async fn requeue(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(t): Json<TaskSel>,
) -> Response {
    act(app, peer, |c, who, now| c.requeue(id, t.task, who, now)).await
}

async fn start_step(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(req): Json<StepRequest>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ctl
        .lock()
        .expect("lock")
        .start_step(id, &req, &caller, now());
    match r {
        Ok((plan, effects)) => {
            execute(&app, effects).await;
            Json::<StepPlan>(plan).into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

/// A step's or an allocation's end.
#[derive(Serialize, Deserialize, Default)]
pub struct ExitReport {
    /// Exit code.
    pub exit_code: i32,
    /// Signal.
    pub signal: i32,
}

async fn end_step(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath((id, step)): UrlPath<(u64, u32)>,
    Json(x): Json<ExitReport>,
) -> Response {
    let caller = app.caller(peer);
    let r = app
        .ctl
        .lock()
        .expect("lock")
        .end_step(id, step, x.exit_code, x.signal, &caller, now());
    match r {
        Ok(effects) => {
            execute(&app, effects).await;
            Json(serde_json::json!({})).into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

async fn complete(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    UrlPath(id): UrlPath<u64>,
    Json(x): Json<ExitReport>,
) -> Response {
    let caller = app.caller(peer);
    let effects = {
        let mut ctl = app.ctl.lock().expect("lock");
        let Some(r) = ctl.job(id) else {
            return error(StatusCode::NOT_FOUND, BAD_JOB);
        };
        if !(caller.admin || caller.uid == r.uid) {
            return error(StatusCode::FORBIDDEN, "Access/permission denied");
        }
        if !r.desc.interactive {
            // A batch job ends when its agent says so, not when someone claims it did.
            return error(
                StatusCode::BAD_REQUEST,
                "Only interactive allocations are completed this way",
            );
        }
        let state = if x.exit_code == 0 && x.signal == 0 {
            JobState::Completed
        } else if x.exit_code == 0 && x.signal == crate::state::OOM_SIGNAL {
            JobState::OutOfMemory
        } else {
            JobState::Failed
        };
        let report = JobEnded {
            job_id: id,
            run: r.restarts,
            node: String::new(),
            state,
            exit_code: x.exit_code,
            signal: x.signal,
            end: now(),
        };
        ctl.job_ended(&report, now())
    };
    execute(&app, effects).await;
    app.wake.notify_one();
    Json(serde_json::json!({})).into_response()
}

async fn cancel(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(req): Json<CancelRequest>,
) -> Response {
    let caller = app.caller(peer);
    let r = app.ctl.lock().expect("lock").cancel(&req, &caller, now());
    match r {
        Ok(effects) => {
            execute(&app, effects).await;
            app.wake.notify_one();
            Json(serde_json::json!({})).into_response()
        }
        Err(e) => error(StatusCode::FORBIDDEN, e),
    }
}

/// `sacct`'s data.
#[derive(Serialize, Deserialize)]
pub struct Accounting {
    /// Jobs.
    pub jobs: Vec<JobRecord>,
    /// Steps.
    pub steps: Vec<StepRecord>,
    /// Earlier runs of requeued jobs (state `REQUEUED`), by job then run.
    pub runs: Vec<JobRecord>,
}

/// Every job and step the database holds, as `sacct` reports them: the controller
/// forgets finished jobs after `MinJobAge`, the database keeps them.
async fn accounting(State(app): State<App>) -> Response {
    let store = app.store.clone();
    let loaded = tokio::task::spawn_blocking(move || store.load()).await;
    let snapshot = match loaded {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let jobs = snapshot
        .jobs
        .iter()
        .filter_map(|r| serde_json::from_str::<JobRecord>(&r.record).ok())
        .map(|mut r| {
            // sacct reports neither; they are most of a record.
            r.desc.environment = Vec::new();
            r.desc.script = String::new();
            r
        })
        .collect();
    let steps = snapshot
        .steps
        .iter()
        .filter_map(|r| serde_json::from_str::<StepRecord>(&r.record).ok())
        .collect();
    let runs = snapshot
        .runs
        .iter()
        .filter_map(|r| serde_json::from_str::<JobRecord>(&r.record).ok())
        .collect();
    Json(Accounting { jobs, steps, runs }).into_response()
}

async fn nodes(State(app): State<App>) -> Json<Vec<NodeInfo>> {
    Json(app.ctl.lock().expect("lock").nodes())
}

async fn partitions(State(app): State<App>) -> Json<Vec<PartitionInfo>> {
    Json(app.ctl.lock().expect("lock").partitions())
}

async fn config(State(app): State<App>) -> Json<ConfigInfo> {
    Json(app.ctl.lock().expect("lock").config())
}

/// An agent's registration.
#[derive(Serialize, Deserialize)]
pub struct Register {
    /// Its node.
    pub node: String,
    /// Jobs it is running (or whose end it is still reporting), with their run (restart
    /// count): a job requeued since is not the one the agent has.
    pub running: Vec<(u64, u32)>,
}

async fn agent_register(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(r): Json<Register>,
) -> Response {
    if !app.caller(peer).admin {
        return error(StatusCode::FORBIDDEN, "Access/permission denied");
    }
    let effects = app
        .ctl
        .lock()
        .expect("lock")
        .agent_registered(&r.node, &r.running, now());
    execute(&app, effects).await;
    app.wake.notify_one();
    Json(serde_json::json!({"incarnation": app.incarnation})).into_response()
}

async fn agent_ended(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(r): Json<JobEnded>,
) -> Response {
    if !app.caller(peer).admin {
        return error(StatusCode::FORBIDDEN, "Access/permission denied");
    }
    let effects = app.ctl.lock().expect("lock").job_ended(&r, now());
    execute(&app, effects).await;
    app.wake.notify_one();
    Json(serde_json::json!({})).into_response()
}
