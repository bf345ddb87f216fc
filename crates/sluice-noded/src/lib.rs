//! The Sluice node agent (slurmd and slurmstepd's job) for one node.
//!
//! Under `sluice up` it listens on its own Unix socket in the state directory, next to
//! the controller's. On a host of its own (`slurmd`, [`Transport::Tcp`]) it listens on
//! its node's port, where only requests signed with the cluster key are heard
//! (`net.rs`), reaches its controller over TCP with requests signed with that key, and
//! vouches for local callers on a Unix socket of its host (their commands' credentials).
//! Either way it obeys the controller only: orders to run or signal a batch script must
//! come from the controller's user (or root), checked from the socket's peer credentials
//! or the request's credential. srun's requests to start tasks come from the job's
//! owner, and the agent checks with the controller that the step exists, is theirs and
//! includes this node.
//!
//! A job's processes here are not the agent's: each job run has a supervisor of its own
//! (`stepd.rs`, slurmstepd's role), a process the agent starts in a process group of
//! its own, which runs the batch script as its owner (its groups, gid and uid set when
//! the agent is root; otherwise the agent runs only its own user's jobs), in its working
//! directory, with the environment the controller computed, its output in the patterned
//! files, in a session of its own; at its time limit it gets SIGTERM and, `KillWait`
//! seconds later, SIGKILL, and ends `TIMEOUT`; `--signal` is delivered before the limit;
//! srun's tasks here run under it too. The agent passes the controller's orders and
//! srun's requests on to it over its socket, and reports its batch script's end (exit
//! code or signal) to the controller until the controller acknowledges it
//! (`supervisors.rs`). So the agent may stop, crash or be upgraded while its jobs run:
//! the next agent of the node adopts their supervisors, lists their jobs in its
//! registration, and reports the ends that came meanwhile.

pub mod cgroup;
pub mod companion;
pub mod devices;
mod fs_identity;
mod leftovers;
mod login_env;
mod net;
mod pty;
mod run;
mod service;
pub mod stepd;
pub mod supervisors;
mod task_env;
mod tree;
pub mod usage;

pub use supervisors::log_to as log_supervisors_to;
pub use usage::gather_with;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::connect_info::{self, ConnectInfo};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use sluice_proto::error::ErrorCode;
use sluice_proto::types::{ErrorReply, JobEnded, JobRecord, JobState, LaunchBatch, LaunchTasks};
use sluice_proto::types::{Heartbeat, HeartbeatReply, Incarnation, HEARTBEAT_SECS};
use sluice_proto::types::{Register, SignalOrder, TerminateOrder};
use sluice_proto::Client;
use tokio::net::UnixListener;
use tokio_stream::StreamExt;

/// Peer credentials of a connection.
#[derive(Clone, Copy, Debug)]
struct Peer {
    uid: u32,
}

impl connect_info::Connected<axum::serve::IncomingStream<'_, UnixListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, UnixListener>) -> Self {
        Peer {
            uid: stream
                .io()
                .peer_cred()
                .map(|c| c.uid())
                .unwrap_or(u32::MAX - 1),
        }
    }
}

/// Why the agent could not run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The socket could not be set up.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the agent knows of a job run here: its supervisor (see `supervisors.rs`).
#[derive(Debug, Default)]
pub(crate) struct Running {
    /// Which run of the job (its restart count) this is.
    pub(crate) run: u32,
    /// Its supervisor, once it answers; None while it starts, and once it has left.
    pub(crate) stepd: Option<Arc<supervisors::Handle>>,
    /// Its batch script runs here (else only srun tasks do: an interactive allocation,
    /// or a node other than a batch job's first).
    pub(crate) batch: bool,
    /// The batch launch here confines the job's devices (`ConstrainDevices=yes`): its
    /// supervisor has them for its steps.
    pub(crate) confined: bool,
    /// Orders that came before its supervisor answered, passed on once it does.
    pub(crate) pending: Vec<stepd::Request>,
    /// Its end is being reported to the controller.
    pub(crate) reporting: bool,
    /// The controller has its end: no registration lists it any more.
    pub(crate) reported: bool,
    /// The controller ordered its end here: once its supervisor has left (nothing of
    /// it left here), the agent says so (`POST /v1/agent/run-gone`).
    pub(crate) told_to_end: bool,
}

/// How an agent is reached, and how it reaches its controller.
#[derive(Debug)]
pub enum Transport {
    /// `sluice up`: a Unix socket in the cluster's state directory, and the
    /// controller's socket there.
    Local,
    /// A host of its own (`slurmd`).
    Tcp(Box<TcpSetup>),
}

/// What an agent on a host of its own needs (see [`Transport::Tcp`]).
pub struct TcpSetup {
    /// Where it listens (its node's `Port`, or `SlurmdPort`).
    pub listen: std::net::SocketAddr,
    /// How it checks every request's credential and signs its own: the cluster key
    /// (`auth/sluice`) or munged (`auth/munge`).
    pub auth: sluice_proto::auth::Scheme,
    /// The controller's `host:port` (the first `SlurmctldHost`).
    pub controller: String,
    /// The backup controllers' `host:port`, in order: the agent registers with
    /// whichever of them is active, and follows the newest fencing epoch it has seen.
    pub backups: Vec<String>,
    /// Where it vouches for local callers (`AuthInfo`'s `socket=`), with the cluster
    /// key; `None`, or under `auth/munge` (where munged does): it does not.
    pub vouch_socket: Option<PathBuf>,
    /// Variables set in every job's (and step's) environment here, replacing any of the
    /// same name: `SLURM_CONF`, so that commands in the job find the cluster. The
    /// controller's `SLUICE_STATE_DIR`, a directory of its host, is removed.
    pub job_env: Vec<(String, String)>,
    /// What this host has (CPUs, sockets, cores, threads, memory, GRES), sent with every
    /// registration for the controller to check against the node's line.
    pub hardware: Option<sluice_proto::types::NodeHardware>,
    /// The digest of this host's slurm.conf, sent with every registration.
    pub conf_hash: Option<String>,
}

impl std::fmt::Debug for TcpSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TcpSetup")
            .field("listen", &self.listen)
            .field("auth", &self.auth)
            .field("controller", &self.controller)
            .field("backups", &self.backups)
            .field("vouch_socket", &self.vouch_socket)
            .field("job_env", &self.job_env)
            .field("hardware", &self.hardware)
            .field("conf_hash", &self.conf_hash)
            .finish()
    }
}

/// This agent's dynamic node line, when it registers its node itself (`slurmd -Z`).
static DYNAMIC: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// This agent registers a node the controller may not know, described by `line`
/// (`NodeName=N CPUs=... RealMemory=... [Gres=...] [Port=...]`): Slurm's dynamic
/// nodes (`slurmd -Z [--conf ...]`). Set once, before the agent runs.
pub fn register_as_dynamic(line: String) {
    let _ = DYNAMIC.set(line);
}

pub(crate) struct Agent {
    pub(crate) node: String,
    pub(crate) state_dir: PathBuf,
    /// Variables set in (or, with `None`, removed from) every job's environment here:
    /// see [`TcpSetup::job_env`].
    pub(crate) job_env: Vec<(String, Option<String>)>,
    pub(crate) controller: Client,
    /// Sent with each registration: see [`TcpSetup::hardware`].
    pub(crate) hardware: Option<sluice_proto::types::NodeHardware>,
    /// Sent with each registration: see [`TcpSetup::conf_hash`].
    pub(crate) conf_hash: Option<String>,
    pub(crate) own_uid: u32,
    pub(crate) jobs: Mutex<BTreeMap<u64, Running>>,
    /// The controller incarnation this agent registers with; launches from any other
    /// are refused. Set, under the `jobs` lock, together with the list of jobs the
    /// registration reports, so a launch is either in that list or refused.
    pub(crate) incarnation: Mutex<Option<String>>,
    /// The newest fencing epoch of the controllers seen (their answers, their orders):
    /// orders of an older one are refused, answers of an older one passed over.
    pub(crate) epoch: Arc<std::sync::atomic::AtomicI64>,
    /// Held while a supervisor for srun tasks is started, one at a time.
    pub(crate) starting: tokio::sync::Mutex<()>,
    /// Where jobs' memory cgroups are made; None when this host cannot limit memory
    /// (said once, at start), and jobs run without limits.
    pub(crate) memory: Option<cgroup::Memory>,
    /// Where jobs' device cgroups are made (`ConstrainDevices=yes`); Err says why this
    /// host cannot confine devices, said for each job whose launch asks for it.
    pub(crate) devices: Result<devices::Devices, String>,
}

impl Agent {
    /// `env` with this agent's [`Agent::job_env`] applied.
    pub(crate) fn adjust_env(&self, env: &mut Vec<(String, String)>) {
        for (k, v) in &self.job_env {
            env.retain(|(name, _)| name != k);
            if let Some(v) = v {
                env.push((k.clone(), v.clone()));
            }
        }
    }

    /// Where this node's job scripts and job supervisors' directories live.
    pub(crate) fn jobs_dir(&self) -> PathBuf {
        self.state_dir
            .join("agents")
            .join(format!("{}.jobs", self.node))
    }
}

type App = Arc<Agent>;

/// A refusal: the status its code chooses, and its message.
/// Refuses a request carrying a fencing epoch older than the newest this agent has
/// seen (an order of a controller another has taken over from), after reading its
/// body; a newer one becomes the newest.
async fn refuse_former_controllers(
    State(agent): State<App>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use std::sync::atomic::Ordering;
    let epoch = request
        .headers()
        .get(sluice_proto::client::EPOCH_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    if let Some(e) = epoch {
        let newest = agent.epoch.fetch_max(e, Ordering::Relaxed);
        if e < newest {
            let _ = axum::body::to_bytes(request.into_body(), 64 << 20).await;
            tracing::warn!(
                "{}: refused an order of a former controller (epoch {e}; {newest} is active)",
                agent.node
            );
            return error(
                ErrorCode::Fenced,
                format!("this node follows a newer controller (epoch {newest}, the order's {e})"),
            );
        }
    }
    next.run(request).await
}

fn error(code: ErrorCode, message: impl Into<String>) -> Response {
    let status =
        StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        Json(ErrorReply {
            error: message.into(),
            code: Some(code),
        }),
    )
        .into_response()
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// What becomes of the jobs here when the agent stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// They run on under their supervisors, for the next agent of the node to adopt
    /// (slurmd's way: restarting or upgrading it never kills jobs).
    LeaveJobs,
    /// They end now (SIGTERM, SIGKILL two seconds later), their ends reported to
    /// nobody: the whole cluster stops (`sluice up` stopping).
    EndJobs,
}

/// Runs the agent for `node`, with sockets in `state_dir`, until `shutdown` completes
/// (`sluice up`'s agents: [`run_until`] and [`Transport::Local`]), leaving its jobs
/// running.
///
/// Errors: the socket cannot be set up.
pub async fn run(
    state_dir: &Path,
    node: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), AgentError> {
    run_with(state_dir, node, Transport::Local, shutdown).await
}

/// [`run_until`], leaving the jobs running when `shutdown` completes.
///
/// Errors: a socket cannot be set up.
pub async fn run_with(
    state_dir: &Path,
    node: &str,
    transport: Transport,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), AgentError> {
    let stop = async move {
        shutdown.await;
        Stop::LeaveJobs
    };
    run_until(state_dir, node, transport, stop).await
}

/// Runs the agent for `node` until `shutdown` completes, reached as `transport` says,
/// keeping its own files (job scripts, its jobs' supervisors) in `state_dir`: the
/// cluster's state directory under `sluice up`, its own spool directory
/// (`SlurmdSpoolDir`) on a host of its own. It first adopts the supervisors of jobs an
/// earlier agent of the node left running (their ends that came meanwhile are
/// reported), then registers with them. When it stops, its jobs run on or end as
/// `shutdown`'s [`Stop`] says.
///
/// Errors: a socket cannot be set up.
pub async fn run_until(
    state_dir: &Path,
    node: &str,
    transport: Transport,
    shutdown: impl std::future::Future<Output = Stop> + Send + 'static,
) -> Result<(), AgentError> {
    let socket = sluice_proto::paths::agent_socket(state_dir, node);
    let io = |source| AgentError::Io {
        path: socket.clone(),
        source,
    };
    std::fs::create_dir_all(socket.parent().expect("agent sockets live in a directory"))
        .map_err(io)?;
    let jobs_dir = state_dir.join("agents").join(format!("{node}.jobs"));
    std::fs::create_dir_all(&jobs_dir).map_err(io)?;
    supervisors::find_supervisor_binary(node);
    tracing::info!(
        "{node}: slurmd (sluice agent) version {} started, pid {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    // Process groups an agent of before job supervisors left (remembered beside the
    // job scripts): nobody supervises them.
    let killed = leftovers::reap(&jobs_dir);
    if killed > 0 {
        tracing::warn!("{node}: ended {killed} process group(s) left by an earlier agent");
    }
    let memory = match cgroup::Memory::detect(state_dir, node) {
        Ok(m) => {
            tracing::info!("{node}: job memory limits enforced through {m}");
            Some(m)
        }
        Err(why) => {
            // Said once, and jobs still run.
            tracing::warn!(
                "{node}: job memory limits are not enforced (jobs run without them): {why}"
            );
            None
        }
    };
    let devices = devices::Devices::detect(state_dir, node, memory.as_ref());
    match &devices {
        Ok(d) => {
            tracing::info!("{node}: job devices can be confined through {d}");
        }
        // Said for each job that asks (only ConstrainDevices=yes needs it).
        Err(why) => tracing::info!("{node}: job devices cannot be confined: {why}"),
    }
    // Where it listens, and how it reaches its controller.
    enum Listener {
        Unix(UnixListener),
        Tcp(tokio::net::TcpListener, Arc<net::Guard>),
    }
    let epoch: Arc<std::sync::atomic::AtomicI64> = Arc::default();
    let (listener, controller, job_env, vouching, hardware, conf_hash) = match transport {
        Transport::Local => {
            let _ = std::fs::remove_file(&socket);
            let listener = UnixListener::bind(&socket).map_err(io)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
                .map_err(io)?;
            let controller = Client::new(sluice_proto::paths::controller_socket(state_dir));
            // `sluice up`'s nodes are virtual, all on this host: nothing to check.
            (
                Listener::Unix(listener),
                controller,
                Vec::new(),
                None,
                None,
                None,
            )
        }
        Transport::Tcp(setup) => {
            let listener = tokio::net::TcpListener::bind(setup.listen)
                .await
                .map_err(|source| AgentError::Io {
                    path: PathBuf::from(setup.listen.to_string()),
                    source,
                })?;
            tracing::info!(
                "{node}: listening on {} ({}); controller at {}",
                setup.listen,
                match setup.auth {
                    sluice_proto::auth::Scheme::Key(_) => "requests signed with the cluster key",
                    sluice_proto::auth::Scheme::Munge(_) => "requests with munge credentials",
                },
                setup.controller
            );
            let guard = Arc::new(net::Guard {
                gate: setup.auth.gate(now()),
                node: node.to_string(),
            });
            let controller = if setup.backups.is_empty() {
                Client::signed(&setup.controller, setup.auth.signer())
            } else {
                let all: Vec<String> = std::iter::once(setup.controller.clone())
                    .chain(setup.backups.iter().cloned())
                    .collect();
                Client::controllers(&all, setup.auth.signer(), None).with_seen_epoch(epoch.clone())
            }
            .with_timeout(Duration::from_secs(10));
            let mut job_env: Vec<(String, Option<String>)> =
                vec![(sluice_proto::paths::STATE_DIR_ENV.to_string(), None)];
            job_env.extend(setup.job_env.into_iter().map(|(k, v)| (k, Some(v))));
            let vouching = match (setup.vouch_socket, setup.auth.key()) {
                (Some(p), Some(key)) => Some((p, key.to_vec())),
                _ => None,
            };
            (
                Listener::Tcp(listener, guard),
                controller,
                job_env,
                vouching,
                setup.hardware,
                setup.conf_hash,
            )
        }
    };
    let agent = Arc::new(Agent {
        node: node.to_string(),
        state_dir: state_dir.to_path_buf(),
        job_env,
        controller,
        hardware,
        conf_hash,
        own_uid: nix::unistd::geteuid().as_raw(),
        jobs: Mutex::new(BTreeMap::new()),
        incarnation: Mutex::new(None),
        epoch,
        starting: tokio::sync::Mutex::new(()),
        memory,
        devices,
    });
    // The jobs an earlier agent left running are this one's before it registers, and
    // what no supervisor owns is cleaned up.
    let adopted = supervisors::adopt(&agent).await;
    if !adopted.is_empty() {
        tracing::info!(
            "{node}: {} job(s) adopted from an earlier agent",
            adopted.len()
        );
    }
    if let Some(m) = &agent.memory {
        let left = m.sweep_except(&adopted);
        if left > 0 {
            tracing::warn!("{node}: removed {left} job cgroup(s) that no job owns any more");
        }
    }
    if let Ok(d) = &agent.devices {
        let left = d.sweep_except(&adopted);
        if left > 0 {
            tracing::warn!("{node}: removed {left} job device cgroup(s) that no job owns any more");
        }
    }
    tokio::spawn(register(agent.clone()));
    let app = Router::new()
        .route(
            "/v1/ping",
            get(|| async { Json(sluice_proto::types::Done {}) }),
        )
        .route("/v1/batch", post(batch))
        .route("/v1/signal", post(signal))
        .route("/v1/limit", post(limit))
        .route("/v1/suspend", post(suspend))
        .route("/v1/stdin", post(stdin))
        .route("/v1/terminate", post(terminate))
        .route("/v1/tasks", post(tasks))
        .route("/v1/tasks/attach", post(tasks_attach))
        .route("/v1/tasks/done", post(tasks_done))
        .route("/v1/tasks/signal", post(tasks_signal))
        .layer(axum::middleware::from_fn_with_state(
            agent.clone(),
            refuse_former_controllers,
        ))
        .with_state(agent.clone());
    // Ended jobs end first, so that streams of their output (to `srun`) close and the
    // server's graceful shutdown can finish. Left running, their streams close as the
    // agent exits (srun's tasks run on, under their supervisors).
    let stopped = agent.clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (how_tx, how_rx) = tokio::sync::oneshot::channel();
    let shutdown = async move {
        let how = shutdown.await;
        let _ = stop_tx.send(true);
        if how == Stop::EndJobs {
            supervisors::shut_down_all(&agent, 2, Duration::from_secs(10)).await;
        } else {
            tracing::info!(
                "{}: stopping; its jobs run on under their supervisors",
                agent.node
            );
        }
        let _ = how_tx.send(how);
    };
    let vouch = vouching.map(|(path, key)| {
        let node = node.to_string();
        tokio::spawn(async move {
            let shown = path.display().to_string();
            if let Err(e) = net::serve_vouching(path, key, node.clone(), stop_rx).await {
                tracing::error!(
                    "{node}: cannot vouch for local callers at {shown}: {}",
                    sluice_proto::oserror::describe(&e)
                );
            }
        })
    });
    let result = match listener {
        Listener::Unix(listener) => {
            let r = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
                .with_graceful_shutdown(shutdown)
                .await;
            let _ = std::fs::remove_file(&socket);
            r.map_err(io)
        }
        Listener::Tcp(listener, guard) => {
            let signed = app.layer(axum::middleware::from_fn_with_state(
                guard,
                net::verify_signed,
            ));
            axum::serve(
                listener,
                signed.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(io)
        }
    };
    if let Some(v) = vouch {
        let _ = v.await;
    }
    // The node's cgroup directories go once no job is left in them: what ended jobs
    // left ends with them; running jobs keep theirs.
    let how = how_rx.await.unwrap_or(Stop::LeaveJobs);
    let running: Vec<(u64, u32)> = match how {
        Stop::EndJobs => Vec::new(),
        Stop::LeaveJobs => stopped
            .jobs
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, e)| e.stepd.is_some() || !e.reported)
            .map(|(id, e)| (*id, e.run))
            .collect(),
    };
    if let Some(m) = &stopped.memory {
        m.sweep_except(&running);
        m.close_if_empty();
    }
    if let Ok(d) = &stopped.devices {
        d.sweep_except(&running);
        d.close_if_empty();
    }
    result
}

/// Registers with the controller, retrying until it answers; then sends a heartbeat
/// every [`HEARTBEAT_SECS`], or as often as the controller's last answer asked (its node
/// and the incarnation it registered with), and
/// registers again when the answer names another incarnation (a controller restart) or
/// says the controller no longer counts this agent (its node given up), or after the
/// controller stopped answering.
///
/// A launch the previous controller sent just before it died may reach us after the
/// new one has started: the new one must either hear of that job in our registration
/// or have the launch refused. So the incarnation is learnt first (`/v1/ping`, or the
/// heartbeat's answer), and the job list is taken under the same lock that switches
/// launches over to it.
async fn register(agent: App) {
    // The incarnation that has our current job list; `agent.incarnation` (the one
    // launches are accepted from) may run ahead of it while a registration is retried.
    let mut registered: Option<String> = None;
    // When the controller's refusal of our credential was last logged.
    let refused: Arc<Mutex<Option<std::time::Instant>>> = Arc::default();
    // Registration attempts that failed in a row.
    let mut failures: u32 = 0;
    // Seconds between heartbeats, as the controller last asked.
    let every = Arc::new(std::sync::atomic::AtomicU64::new(HEARTBEAT_SECS));
    loop {
        let a = agent.clone();
        let known = registered.clone();
        let before = registered.clone();
        let refused = refused.clone();
        let asked = every.clone();
        registered = tokio::task::spawn_blocking(move || {
            let incarnation = |v: serde_json::Value| v["incarnation"].as_str().map(str::to_string);
            // The controller's incarnation, and whether we are registered with it.
            let ping = match &known {
                // Registered: the heartbeat, which the answer says counted or not.
                Some(k) => a
                    .controller
                    .post::<_, HeartbeatReply>(
                        "/v1/agent/heartbeat",
                        &Heartbeat {
                            node: a.node.clone(),
                            incarnation: k.clone(),
                        },
                    )
                    .map(|h| {
                        let still = h.registered && h.incarnation == *k;
                        asked.store(
                            h.every_secs.unwrap_or(HEARTBEAT_SECS).max(1),
                            std::sync::atomic::Ordering::Relaxed,
                        );
                        (h.incarnation, still)
                    }),
                None => a
                    .controller
                    .get::<Incarnation>("/v1/ping")
                    .map(|i| (i.incarnation, false)),
            };
            if let Err(sluice_proto::ClientError::Status {
                code: ErrorCode::Authentication,
                message,
                ..
            }) = &ping
            {
                let mut last = refused.lock().expect("lock");
                if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    *last = Some(std::time::Instant::now());
                    tracing::error!(
                        "{}: the controller refused this agent's credential (is the cluster key \
                         the controller's?): {message}",
                        a.node
                    );
                }
            }
            if !matches!(&ping, Ok((_, true))) {
                // Registering (again): heartbeats every HEARTBEAT_SECS until this
                // controller names its own interval.
                asked.store(HEARTBEAT_SECS, std::sync::atomic::Ordering::Relaxed);
            }
            let (current, still) = ping.ok()?;
            if still {
                return known;
            }
            let running: Vec<(u64, u32)> = {
                let jobs = a.jobs.lock().expect("lock");
                *a.incarnation.lock().expect("lock") = Some(current.clone());
                jobs.iter()
                    .filter(|(_, j)| !j.reported)
                    .map(|(id, j)| (*id, j.run))
                    .collect()
            };
            let count = running.len();
            let body = Register {
                node: a.node.clone(),
                running,
                hardware: a.hardware.clone(),
                conf_hash: a.conf_hash.clone(),
                dynamic: DYNAMIC.get().cloned(),
            };
            let answer = a
                .controller
                .post::<_, serde_json::Value>("/v1/agent/register", &body);
            if let Err(sluice_proto::ClientError::Status { message, .. }) = &answer {
                // Refused (another agent holds this node's name, or the node is not in
                // the controller's slurm.conf): said at most once a minute.
                let mut last = refused.lock().expect("lock");
                if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    *last = Some(std::time::Instant::now());
                    tracing::error!(
                        "{}: the controller refused this agent's registration: {message}",
                        a.node
                    );
                }
            }
            let answered = answer
                .ok()
                .and_then(incarnation)
                // Yet another controller answered: it has not had our list yet.
                .filter(|answered| *answered == current);
            if answered.is_some() {
                tracing::info!(
                    "{}: registered with the controller (incarnation {current}), {} job(s) \
                     running here",
                    a.node,
                    count
                );
            }
            answered
        })
        .await
        .unwrap_or(None);
        if before.is_some() && registered.is_none() {
            tracing::warn!(
                "{}: the controller does not answer; registering again when it does",
                agent.node
            );
        }
        // Registered: the next heartbeat when the controller asked for it.
        // Not: tries again after a delay doubling from a quarter second up to
        // [`MAX_RETRY_MS`], as slurmd's registration retries (1 s doubling to 128 s).
        failures = if registered.is_some() {
            0
        } else {
            failures + 1
        };
        let delay = match failures {
            0 => every.load(std::sync::atomic::Ordering::Relaxed) * 1000,
            _ => retry_delay_ms(failures),
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
}

/// The longest wait between two registration attempts, milliseconds. Slurm's slurmd
/// waits up to 128 s, but its controller asks every node to register when it starts;
/// Sluice's answers the next heartbeat with its new incarnation instead, which only
/// agents that kept reaching it send, so this bounds how long a restarted controller
/// waits for agents that lost it.
pub const MAX_RETRY_MS: u64 = 16_000;

/// The wait before the next registration attempt after `failures` failed ones in a row
/// (0: registered, the wait until the next heartbeat).
pub fn retry_delay_ms(failures: u32) -> u64 {
    if failures == 0 {
        return HEARTBEAT_SECS * 1000;
    }
    250u64
        .saturating_mul(1u64 << (failures - 1).min(20))
        .min(MAX_RETRY_MS)
}

fn from_controller(agent: &Agent, peer: Peer) -> bool {
    peer.uid == 0 || peer.uid == agent.own_uid
}

async fn batch(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(mut order): Json<LaunchBatch>,
) -> Response {
    if !from_controller(&agent, peer) {
        return error(
            ErrorCode::AccessDenied,
            "only the controller may launch jobs",
        );
    }
    // An order for another node (a signed order replayed to the wrong agent): not ours.
    if !order.job.nodes.contains(&agent.node) {
        return error(
            ErrorCode::Invalid,
            format!("job {} does not run on {}", order.job.id, agent.node),
        );
    }
    agent.adjust_env(&mut order.environment);
    let job = order.job.id;
    let run = order.job.restarts;
    {
        let mut jobs = agent.jobs.lock().expect("lock");
        let known = agent.incarnation.lock().expect("lock").clone();
        if !order.incarnation.is_empty() && known.as_deref() != Some(order.incarnation.as_str()) {
            return error(
                ErrorCode::Busy,
                "the launch comes from a controller this agent is not registered with",
            );
        }
        match jobs.get(&job) {
            // A retry of a launch we have.
            Some(j) if j.run == run => return Json(sluice_proto::types::Done {}).into_response(),
            // An earlier run still running: the controller ends runs before it
            // relaunches, so this one is on its way out (under its own supervisor,
            // which reports its end); the new run waits for nothing. A run whose end is
            // being reported is over: the controller relaunches on that very report,
            // often before its answer is back here.
            Some(j) if !j.reported && !j.reporting => {
                tracing::warn!("job {job}: run {run} launched while run {} runs", j.run)
            }
            _ => {}
        }
        jobs.insert(
            job,
            Running {
                run,
                batch: true,
                confined: order.devices.is_some() && agent.devices.is_ok(),
                ..Running::default()
            },
        );
    }
    tokio::spawn(supervisors::launch_batch(agent.clone(), order));
    Json(sluice_proto::types::Done {}).into_response()
}

/// The supervisor of job `job` here, for an order of the controller: Ok(Some) to send
/// it to, Ok(None) when it is not there yet (the order was kept for it, when `keep`),
/// Err when the job does not run here (as run `run`, when given).
fn supervisor_for(
    agent: &Agent,
    job: u64,
    run: Option<u32>,
    keep: Option<stepd::Request>,
) -> Result<Option<Arc<supervisors::Handle>>, ()> {
    let mut jobs = agent.jobs.lock().expect("lock");
    let Some(e) = jobs
        .get_mut(&job)
        .filter(|e| run.is_none_or(|r| r == e.run))
    else {
        return Err(());
    };
    match &e.stepd {
        Some(h) => Ok(Some(h.clone())),
        None => {
            e.pending.extend(keep);
            Ok(None)
        }
    }
}

async fn signal(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(o): Json<SignalOrder>,
) -> Response {
    if !from_controller(&agent, peer) {
        return error(
            ErrorCode::AccessDenied,
            "only the controller may signal jobs",
        );
    }
    tracing::debug!(
        "{}: job {}: signal {} to its {}",
        agent.node,
        o.job_id,
        o.signal,
        match (o.step, o.batch_only) {
            (Some(s), _) => format!("step {s}"),
            (None, true) => "batch shell".into(),
            (None, false) => "steps".into(),
        }
    );
    let request = match o.step {
        Some(step) if o.time_limit_kill_wait.is_some() => stepd::Request::TerminateStep {
            step,
            kill_wait: o.time_limit_kill_wait.unwrap_or_default(),
            time_limit: true,
        },
        Some(step) if o.terminate_kill_wait.is_some() => stepd::Request::TerminateStep {
            step,
            kill_wait: o.terminate_kill_wait.unwrap_or_default(),
            time_limit: false,
        },
        Some(step) if o.signal == libc::SIGKILL => stepd::Request::CancelStep { step },
        Some(step) => stepd::Request::SignalStep {
            step,
            signal: o.signal,
            uid: 0,
        },
        None => stepd::Request::Signal {
            signal: o.signal,
            batch_only: o.batch_only,
        },
    };
    // A job whose supervisor is not up yet has no process to signal; a step's cancel
    // waits for it (the step's tasks are killed as they are launched).
    let keep = matches!(
        request,
        stepd::Request::CancelStep { .. }
            | stepd::Request::TerminateStep {
                time_limit: false,
                ..
            }
    )
    .then(|| request.clone());
    if let Ok(Some(h)) = supervisor_for(&agent, o.job_id, None, keep) {
        let _ = h.ask(&request).await;
    }
    Json(sluice_proto::types::Done {}).into_response()
}

/// A refusal a supervisor answered, or the agent's own when it could not be asked.
fn supervisor_reply(reply: Result<stepd::Reply, String>) -> Response {
    match reply {
        Ok(stepd::Reply::Ok) => Json(sluice_proto::types::Done {}).into_response(),
        Ok(stepd::Reply::Error { code, message }) => error(code, message),
        Ok(stepd::Reply::Closing) | Err(_) => error(ErrorCode::NotReady, "no such task input"),
    }
}

/// srun's input for the tasks of a step here that read it, passed on to the job's
/// supervisor, which checks that it comes from the job's owner (or root).
async fn stdin(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(c): Json<sluice_proto::types::StdinChunk>,
) -> Response {
    let Ok(Some(h)) = supervisor_for(&agent, c.job_id, None, None) else {
        return error(ErrorCode::NotReady, "no such task input");
    };
    supervisor_reply(
        h.ask(&stepd::Request::Stdin {
            uid: peer.uid,
            chunk: c,
        })
        .await,
    )
}

/// Stop or continue a running job's processes here (`scontrol suspend`/`resume`).
async fn suspend(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(o): Json<sluice_proto::types::SuspendOrder>,
) -> Response {
    if !from_controller(&agent, peer) {
        return error(
            ErrorCode::AccessDenied,
            "only the controller may suspend jobs",
        );
    }
    tracing::debug!(
        "{}: job {}: {}",
        agent.node,
        o.job_id,
        if o.suspend { "suspend" } else { "resume" }
    );
    if let Ok(Some(h)) = supervisor_for(&agent, o.job_id, None, None) {
        let _ = h.ask(&stepd::Request::Suspend { suspend: o.suspend }).await;
    }
    Json(sluice_proto::types::Done {}).into_response()
}

/// A running job's new time limit: its supervisor's batch loop picks it up within a
/// second.
async fn limit(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(o): Json<sluice_proto::types::TimeLimitOrder>,
) -> Response {
    if !from_controller(&agent, peer) {
        return error(
            ErrorCode::AccessDenied,
            "only the controller may change limits",
        );
    }
    tracing::debug!(
        "{}: job {}: time limit of run {} set to {}",
        agent.node,
        o.job_id,
        o.run,
        o.time_limit
            .map_or("UNLIMITED".to_string(), |t| format!("{t}s"))
    );
    let request = stepd::Request::TimeLimit {
        limit: o.time_limit,
    };
    if let Ok(Some(h)) = supervisor_for(&agent, o.job_id, Some(o.run), Some(request.clone())) {
        let _ = h.ask(&request).await;
    }
    Json(sluice_proto::types::Done {}).into_response()
}

async fn terminate(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(o): Json<TerminateOrder>,
) -> Response {
    if !from_controller(&agent, peer) {
        return error(ErrorCode::AccessDenied, "only the controller may end jobs");
    }
    tracing::debug!(
        "{}: job {}: terminate order ({}{}), KillWait {}s",
        agent.node,
        o.job_id,
        o.state.name(),
        o.run.map(|r| format!(", run {r}")).unwrap_or_default(),
        o.kill_wait
    );
    let request = stepd::Request::Terminate {
        state: o.state,
        kill_wait: o.kill_wait,
    };
    let run = {
        let mut jobs = agent.jobs.lock().expect("lock");
        jobs.get_mut(&o.job_id)
            .filter(|e| o.run.is_none_or(|r| r == e.run))
            .map(|e| {
                e.told_to_end = true;
                e.run
            })
    };
    match supervisor_for(&agent, o.job_id, o.run, Some(request.clone())) {
        Ok(Some(h)) => {
            if h.ask(&request).await.is_err() {
                // It has just left: nothing of the run is here (its watch says so too).
                tokio::spawn(report_gone(agent.clone(), o.job_id, run));
            }
        }
        // Its supervisor is starting; it has the order once it answers, and its watch
        // says when it has left.
        Ok(None) => {}
        // Nothing of the job runs here (any more, or ever).
        Err(()) => {
            tokio::spawn(report_gone(agent.clone(), o.job_id, o.run));
        }
    }
    Json(sluice_proto::types::Done {}).into_response()
}

/// Tells the controller that nothing of run `run` of job `job` (of any run: `None`) is
/// left on this node, trying again, ever later, for a while (a controller restarting
/// meanwhile hears it once back); a refusal ends the tries.
pub(crate) async fn report_gone(agent: App, job: u64, run: Option<u32>) {
    let gone = sluice_proto::types::RunGone {
        job_id: job,
        run,
        node: agent.node.clone(),
    };
    post_until_answered(&agent, "/v1/agent/run-gone", gone, Duration::from_secs(600)).await;
}

async fn tasks(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(mut order): Json<LaunchTasks>,
) -> Response {
    agent.adjust_env(&mut order.environment);
    // The step must exist, belong to the caller and include this node.
    let a = agent.clone();
    let job = order.job_id;
    let record = tokio::task::spawn_blocking(move || {
        a.controller.get::<JobRecord>(&format!("/v1/jobs/{job}"))
    })
    .await;
    let record = match record {
        Ok(Ok(r)) => r,
        _ => return error(ErrorCode::InvalidJobId, "Invalid job id specified"),
    };
    if record.uid != peer.uid && peer.uid != 0 {
        return error(ErrorCode::AccessDenied, "Access/permission denied");
    }
    if record.state != JobState::Running
        || !record.nodes.contains(&agent.node)
        || order.step >= record.next_step
    {
        return error(ErrorCode::Invalid, "Invalid job step id");
    }
    // Where this node did not launch the job's batch script (its other nodes, an
    // interactive allocation), the controller says which device files the job may open.
    let launched_here = agent
        .jobs
        .lock()
        .expect("lock")
        .get(&job)
        .is_some_and(|j| j.confined && j.run == record.restarts);
    let fetched = if launched_here || agent.devices.is_err() {
        None
    } else {
        let a = agent.clone();
        let path = format!("/v1/jobs/{job}/devices/{}", agent.node);
        let files = tokio::task::spawn_blocking(move || {
            a.controller
                .get::<Option<Vec<sluice_proto::types::DeviceFile>>>(&path)
        })
        .await;
        match files {
            Ok(Ok(files)) => files,
            _ => {
                return error(
                    ErrorCode::ControllerUnreachable,
                    "Unable to contact slurm controller (connect failure)",
                )
            }
        }
    };
    // The job's supervisor here runs the tasks (started for them if the job has none
    // here); one that is leaving says so, and the next one takes them.
    let request = stepd::Request::Tasks {
        record: Box::new(record.clone()),
        order: Box::new(order),
        devices: fetched,
    };
    let mut tries = 0;
    let lines = loop {
        tries += 1;
        let handle = match supervisors::for_tasks(&agent, job, record.restarts).await {
            Ok(h) => h,
            Err(why) => {
                tracing::warn!("{}: job {job}: {why}", agent.node);
                return error(ErrorCode::Invalid, "Invalid job step id");
            }
        };
        match handle.open(&request).await {
            Ok((stepd::Reply::Ok, lines)) => break lines,
            Ok((stepd::Reply::Error { code, message }, _)) => return error(code, message),
            Ok((stepd::Reply::Closing, _)) | Err(_) if tries < 5 => {
                supervisors::until_gone(&agent, job, &handle).await;
            }
            Ok((stepd::Reply::Closing, _)) | Err(_) => {
                return error(
                    ErrorCode::NotReady,
                    format!("job {job}: slurmstepd does not take the step"),
                )
            }
        }
    };
    // The supervisor's events are srun's lines, passed on as they come.
    let stream = futures_lines(lines);
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::from_stream(stream))
        .expect("valid response")
}

/// srun follows a step's events here again after its stream broke (this agent was
/// restarted while the step ran): the job's supervisor sends them from where srun's
/// count stopped, and checks that srun is the step's owner's (or root's).
async fn tasks_attach(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(a): Json<sluice_proto::types::TasksAttach>,
) -> Response {
    let no_step = || error(ErrorCode::NotReady, "no such step here");
    let Ok(Some(h)) = supervisor_for(&agent, a.job_id, None, None) else {
        return no_step();
    };
    let request = stepd::Request::Attach {
        step: a.step,
        from: a.from,
        uid: peer.uid,
    };
    match h.open(&request).await {
        Ok((stepd::Reply::Ok, lines)) => Response::builder()
            .header("content-type", "application/x-ndjson")
            .body(Body::from_stream(futures_lines(lines)))
            .expect("valid response"),
        Ok((stepd::Reply::Error { code, message }, _)) => error(code, message),
        Ok((stepd::Reply::Closing, _)) | Err(_) => no_step(),
    }
}

/// srun has every event of a step here: its supervisor may forget them.
async fn tasks_done(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(d): Json<sluice_proto::types::TasksDone>,
) -> Response {
    let Ok(Some(h)) = supervisor_for(&agent, d.job_id, None, None) else {
        return Json(sluice_proto::types::Done {}).into_response();
    };
    supervisor_reply(
        h.ask(&stepd::Request::StepDone {
            step: d.step,
            uid: peer.uid,
        })
        .await,
    )
}

/// srun aborting its step: a signal to the step's tasks here, passed on to the job's
/// supervisor, which checks that it comes from the step's owner (or root).
async fn tasks_signal(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(s): Json<sluice_proto::types::TasksSignal>,
) -> Response {
    let Ok(Some(h)) = supervisor_for(&agent, s.job_id, None, None) else {
        return Json(sluice_proto::types::Done {}).into_response();
    };
    supervisor_reply(
        h.ask(&stepd::Request::SignalStep {
            step: s.step,
            signal: s.signal,
            uid: peer.uid,
        })
        .await,
    )
}

/// A supervisor's event lines as a body stream (each line with its newline).
fn futures_lines(
    lines: supervisors::EventLines,
) -> impl tokio_stream::Stream<Item = Result<Vec<u8>, std::convert::Infallible>> {
    tokio_stream::wrappers::LinesStream::new(lines).map_while(|l| {
        l.ok().map(|mut l| {
            l.push('\n');
            Ok(l.into_bytes())
        })
    })
}

/// Reports a job's end to the controller until it is acknowledged.
pub(crate) async fn report(agent: App, ended: JobEnded) {
    loop {
        let a = agent.clone();
        let e = ended.clone();
        let ok = tokio::task::spawn_blocking(move || {
            a.controller
                .post::<_, serde_json::Value>("/v1/agent/ended", &e)
                .is_ok()
        })
        .await
        .unwrap_or(false);
        if ok {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Tells the controller a service's restarts in place and health (`service.rs`):
/// tried a few times, in order with the job's end (which follows it on the same
/// watch), since each restart is counted from it.
pub(crate) async fn send_service(agent: &App, report: sluice_proto::service::ServiceReport) {
    for _ in 0..5 {
        let (a, r) = (agent.clone(), report.clone());
        let sent = tokio::task::spawn_blocking(move || {
            a.controller
                .post::<_, serde_json::Value>("/v1/agent/service", &r)
                .is_ok()
        })
        .await
        .unwrap_or(false);
        if sent {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::warn!(
        "{}: job {}: service report not delivered",
        agent.node,
        report.job_id
    );
}

/// Sends a running job's usage figures here to the controller, once, without holding
/// anything up: while an earlier report of the job is on its way (`sending`) this one
/// is dropped, and one that cannot be delivered is dropped too (the next round's
/// replaces it).
pub(crate) fn send_usage(
    agent: &App,
    report: sluice_proto::usage::UsageReport,
    sending: &Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::Ordering;
    if sending.swap(true, Ordering::AcqRel) {
        return;
    }
    let (agent, sending) = (agent.clone(), sending.clone());
    tokio::task::spawn_blocking(move || {
        if let Err(e) = agent.controller.usage_report(&report) {
            tracing::debug!(
                "{}: job {}: usage report not delivered (the next one replaces it): {e}",
                agent.node,
                report.job
            );
        }
        sending.store(false, Ordering::Release);
    });
}

/// Tells the controller that a step's tasks here have all ended (what frees the job's
/// CPUs when the step's srun cannot say so itself), trying again, ever later, for as
/// long as the supervisor keeps the step's events (a controller restarting meanwhile
/// hears it once back); a refusal (a step it does not know, or not on this node) ends
/// the tries.
pub(crate) async fn report_step(agent: App, ended: sluice_proto::types::StepEnded) {
    post_until_answered(
        &agent,
        "/v1/agent/step-ended",
        ended,
        Duration::from_secs(120),
    )
    .await;
}

/// Posts `body` to the controller's `path`, trying again, ever later (up to 8 s
/// apart), for `patience`: a controller restarting meanwhile hears it once back. An
/// answer ends the tries, a refusal (a 4xx) too.
async fn post_until_answered<T>(agent: &App, path: &'static str, body: T, patience: Duration)
where
    T: serde::Serialize + Clone + Send + 'static,
{
    let give_up = std::time::Instant::now() + patience;
    let mut delay = Duration::from_millis(250);
    loop {
        let (a, b) = (agent.clone(), body.clone());
        let answer = tokio::task::spawn_blocking(move || {
            a.controller.post::<_, serde_json::Value>(path, &b)
        })
        .await;
        match answer {
            Ok(Ok(_)) => return,
            Ok(Err(sluice_proto::ClientError::Status { status, .. })) if status < 500 => return,
            _ if std::time::Instant::now() >= give_up => return,
            _ => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(8));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_is_retried_ever_later_up_to_the_cap() {
        // Registered: the next heartbeat, two seconds on (the controller pings an agent
        // only after two heartbeats' silence). Failing: a quarter second, then doubling,
        // never more than MAX_RETRY_MS apart (and no overflow, however long).
        let delays: Vec<u64> = (0..9).map(retry_delay_ms).collect();
        assert_eq!(
            delays,
            [2000, 250, 500, 1000, 2000, 4000, 8000, 16_000, 16_000]
        );
        assert_eq!(retry_delay_ms(u32::MAX), MAX_RETRY_MS);
    }
}
