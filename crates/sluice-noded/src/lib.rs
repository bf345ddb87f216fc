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
//! A batch script runs as its owner (its groups, gid and uid set when the agent is root;
//! otherwise the agent runs only its own user's jobs), in its working directory, with
//! the environment the controller computed, its output in the patterned files, in a
//! session of its own. At its time limit it gets SIGTERM and, `KillWait` seconds later,
//! SIGKILL, and ends `TIMEOUT`; `--signal` is delivered before the limit. Its end (exit
//! code or signal) is reported to the controller until the controller acknowledges it.

pub mod cgroup;
pub mod devices;
mod leftovers;
mod net;
mod run;

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
use sluice_proto::types::{
    ErrorReply, JobEnded, JobRecord, JobState, LaunchBatch, LaunchTasks, TaskEvent,
};
use sluice_proto::types::{Register, SignalOrder, TerminateOrder};
use sluice_proto::Client;
use tokio::net::UnixListener;

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

/// What the agent knows of a job running here.
#[derive(Debug, Default)]
pub(crate) struct Running {
    /// The batch script's process (and session/process group) id.
    pub(crate) pid: Option<i32>,
    /// Process groups of srun tasks of this job.
    pub(crate) task_groups: Vec<i32>,
    /// Set when the controller asked to end the job: the state to report.
    pub(crate) ending: Option<JobState>,
    /// Which run of the job (its restart count) this is.
    pub(crate) run: u32,
    /// The run's processes are gone; its end is being reported.
    pub(crate) finished: bool,
    /// Only srun tasks of the job run here (an interactive allocation, or a node other
    /// than a batch job's first): the entry goes when its last task does.
    pub(crate) tasks_only: bool,
    /// A time limit set after the launch (`scontrol update`), seconds from the start;
    /// `Some(None)`: unlimited.
    pub(crate) time_limit: Option<Option<i64>>,
    /// The job's GRES device files here, resolved at its launch, when its devices are
    /// confined (`ConstrainDevices=yes`): its srun steps here are confined by them too.
    pub(crate) devices: Option<Arc<devices::JobDevices>>,
}

/// The standard input pipes of a step's tasks here that read srun's: (task, pipe).
pub(crate) type TaskInputs = Vec<(u32, std::process::ChildStdin)>;

/// How an agent is reached, and how it reaches its controller.
#[derive(Debug)]
pub enum Transport {
    /// `sluice up`: a Unix socket in the cluster's state directory, and the
    /// controller's socket there.
    Local,
    /// A host of its own (`slurmd`).
    Tcp(TcpSetup),
}

/// What an agent on a host of its own needs (see [`Transport::Tcp`]).
pub struct TcpSetup {
    /// Where it listens (its node's `Port`, or `SlurmdPort`).
    pub listen: std::net::SocketAddr,
    /// How it checks every request's credential and signs its own: the cluster key
    /// (`auth/sluice`) or munged (`auth/munge`).
    pub auth: sluice_proto::auth::Scheme,
    /// The controller's `host:port`.
    pub controller: String,
    /// Where it vouches for local callers (`AuthInfo`'s `socket=`), with the cluster
    /// key; `None`, or under `auth/munge` (where munged does): it does not.
    pub vouch_socket: Option<PathBuf>,
    /// Variables set in every job's (and step's) environment here, replacing any of the
    /// same name: `SLURM_CONF`, so that commands in the job find the cluster. The
    /// controller's `SLUICE_STATE_DIR`, a directory of its host, is removed.
    pub job_env: Vec<(String, String)>,
}

impl std::fmt::Debug for TcpSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TcpSetup")
            .field("listen", &self.listen)
            .field("auth", &self.auth)
            .field("controller", &self.controller)
            .field("vouch_socket", &self.vouch_socket)
            .field("job_env", &self.job_env)
            .finish()
    }
}

pub(crate) struct Agent {
    pub(crate) node: String,
    pub(crate) state_dir: PathBuf,
    /// Variables set in (or, with `None`, removed from) every job's environment here:
    /// see [`TcpSetup::job_env`].
    pub(crate) job_env: Vec<(String, Option<String>)>,
    pub(crate) controller: Client,
    pub(crate) own_uid: u32,
    pub(crate) jobs: Mutex<BTreeMap<u64, Running>>,
    /// The controller incarnation this agent registers with; launches from any other
    /// are refused. Set, under the `jobs` lock, together with the list of jobs the
    /// registration reports, so a launch is either in that list or refused.
    pub(crate) incarnation: Mutex<Option<String>>,
    /// Standard input of steps' tasks here that read srun's, fed by srun: (job, step)
    /// → (owner uid, each task's pipe). Taken out while being written.
    pub(crate) stdins: Mutex<BTreeMap<(u64, u32), (u32, TaskInputs)>>,
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

    /// Where this node's job scripts and remembered process groups live.
    pub(crate) fn jobs_dir(&self) -> PathBuf {
        self.state_dir
            .join("agents")
            .join(format!("{}.jobs", self.node))
    }
}

type App = Arc<Agent>;

/// A refusal: the status its code chooses, and its message.
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

/// Runs the agent for `node`, with sockets in `state_dir`, until `shutdown` completes
/// (`sluice up`'s agents: [`run_with`] and [`Transport::Local`]).
///
/// Errors: the socket cannot be set up.
pub async fn run(
    state_dir: &Path,
    node: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), AgentError> {
    run_with(state_dir, node, Transport::Local, shutdown).await
}

/// Runs the agent for `node` until `shutdown` completes, reached as `transport` says,
/// keeping its own files (job scripts, remembered process groups) in `state_dir`: the
/// cluster's state directory under `sluice up`, its own spool directory
/// (`SlurmdSpoolDir`) on a host of its own. When it stops, it ends the jobs it runs
/// (SIGTERM, SIGKILL two seconds later): a later agent for the node would not know
/// them, and their CPUs would be handed out twice. The controller requeues them when
/// the node registers again (as Slurm does for jobs on a failed node).
///
/// Errors: a socket cannot be set up.
pub async fn run_with(
    state_dir: &Path,
    node: &str,
    transport: Transport,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
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
    tracing::info!(
        "{node}: slurmd (sluice agent) version {} started, pid {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let killed = leftovers::reap(&jobs_dir);
    if killed > 0 {
        tracing::warn!("{node}: ended {killed} process group(s) left by an earlier agent");
    }
    let memory = match cgroup::Memory::detect(state_dir, node) {
        Ok(m) => {
            let left = m.sweep();
            if left > 0 {
                tracing::warn!("{node}: removed {left} job cgroup(s) left by an earlier agent");
            }
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
            let left = d.sweep();
            if left > 0 {
                tracing::warn!(
                    "{node}: removed {left} job device cgroup(s) left by an earlier agent"
                );
            }
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
    let (listener, controller, job_env, vouching) = match transport {
        Transport::Local => {
            let _ = std::fs::remove_file(&socket);
            let listener = UnixListener::bind(&socket).map_err(io)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
                .map_err(io)?;
            let controller = Client::new(sluice_proto::paths::controller_socket(state_dir));
            (Listener::Unix(listener), controller, Vec::new(), None)
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
            let controller = Client::signed(&setup.controller, setup.auth.signer())
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
            )
        }
    };
    let agent = Arc::new(Agent {
        node: node.to_string(),
        state_dir: state_dir.to_path_buf(),
        job_env,
        controller,
        own_uid: nix::unistd::geteuid().as_raw(),
        jobs: Mutex::new(BTreeMap::new()),
        incarnation: Mutex::new(None),
        stdins: Mutex::new(BTreeMap::new()),
        memory,
        devices,
    });
    tokio::spawn(register(agent.clone()));
    let app = Router::new()
        .route(
            "/v1/ping",
            get(|| async { Json(sluice_proto::types::Done {}) }),
        )
        .route("/v1/batch", post(batch))
        .route("/v1/signal", post(signal))
        .route("/v1/limit", post(limit))
        .route("/v1/stdin", post(stdin))
        .route("/v1/terminate", post(terminate))
        .route("/v1/tasks", post(tasks))
        .with_state(agent.clone());
    // Jobs end first, so that streams of their output (to `srun`) close and the
    // server's graceful shutdown can finish.
    let stopped = agent.clone();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
        run::end_all(&agent, Duration::from_secs(2)).await;
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
    // What the jobs left in their cgroups ends with them.
    if let Some(m) = &stopped.memory {
        m.close();
    }
    if let Ok(d) = &stopped.devices {
        d.close();
    }
    result
}

/// Registers with the controller, retrying until it answers; then again whenever it
/// stops answering and comes back (a controller restart).
///
/// A launch the previous controller sent just before it died may reach us after the
/// new one has started: the new one must either hear of that job in our registration
/// or have the launch refused. So the incarnation is learnt first (`/v1/ping`), and the
/// job list is taken under the same lock that switches launches over to it.
async fn register(agent: App) {
    // The incarnation that has our current job list; `agent.incarnation` (the one
    // launches are accepted from) may run ahead of it while a registration is retried.
    let mut registered: Option<String> = None;
    // When the controller's refusal of our credential was last logged.
    let refused: Arc<Mutex<Option<std::time::Instant>>> = Arc::default();
    loop {
        let a = agent.clone();
        let known = registered.clone();
        let before = registered.clone();
        let refused = refused.clone();
        registered = tokio::task::spawn_blocking(move || {
            let incarnation = |v: serde_json::Value| v["incarnation"].as_str().map(str::to_string);
            let ping = a.controller.get::<serde_json::Value>("/v1/ping");
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
            let current = ping.ok().and_then(incarnation)?;
            if known.as_deref() == Some(current.as_str()) {
                return known;
            }
            let running: Vec<(u64, u32)> = {
                let jobs = a.jobs.lock().expect("lock");
                *a.incarnation.lock().expect("lock") = Some(current.clone());
                jobs.iter().map(|(id, j)| (*id, j.run)).collect()
            };
            let count = running.len();
            let body = Register {
                node: a.node.clone(),
                running,
            };
            let answered = a
                .controller
                .post::<_, serde_json::Value>("/v1/agent/register", &body)
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
        let pause = if registered.is_some() { 500 } else { 250 };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
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
            // relaunches, so this one is on its way out; the new run waits for nothing.
            Some(j) if !j.finished => {
                tracing::warn!("job {job}: run {run} launched while run {} runs", j.run)
            }
            _ => {}
        }
        // Tasks an earlier run left, waiting for their SIGKILL, stay the job's.
        let task_groups = jobs.remove(&job).map(|j| j.task_groups).unwrap_or_default();
        jobs.insert(
            job,
            Running {
                run,
                task_groups,
                ..Running::default()
            },
        );
    }
    tokio::spawn(run::batch(agent.clone(), order));
    Json(sluice_proto::types::Done {}).into_response()
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
        if o.batch_only { "batch shell" } else { "steps" }
    );
    run::signal_job(&agent, o.job_id, o.signal, o.batch_only);
    Json(sluice_proto::types::Done {}).into_response()
}

/// srun's input for the tasks of a step here that read it: each chunk written to each
/// of them in order, their input closed at the end. A task that stopped reading (it
/// ended) gets no more; once none is left, srun is told so (410). Only the job's owner
/// (or root) may write it.
async fn stdin(
    State(agent): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    Json(c): Json<sluice_proto::types::StdinChunk>,
) -> Response {
    let key = (c.job_id, c.step);
    let (uid, pipes) = {
        let mut stdins = agent.stdins.lock().expect("lock");
        match stdins.get(&key) {
            None => return error(ErrorCode::NotReady, "no such task input"),
            // Checked before the pipes are taken out: nobody else can hold them up.
            Some((uid, _)) if *uid != peer.uid && peer.uid != 0 => {
                return error(ErrorCode::AccessDenied, "Access/permission denied")
            }
            Some(_) => stdins.remove(&key).expect("present"),
        }
    };
    let written = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        pipes
            .into_iter()
            .filter_map(|(task, mut pipe)| {
                pipe.write_all(&c.data)
                    .and_then(|()| pipe.flush())
                    .ok()
                    .map(|()| (task, pipe))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    if written.is_empty() {
        // Every task stopped reading (they ended): the rest of the input goes nowhere.
        return error(ErrorCode::Closed, "the tasks' input is closed");
    }
    if !c.eof {
        agent
            .stdins
            .lock()
            .expect("lock")
            .insert(key, (uid, written));
    }
    Json(sluice_proto::types::Done {}).into_response()
}

/// A running job's new time limit: its batch loop picks it up within a second.
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
    if let Some(j) = agent.jobs.lock().expect("lock").get_mut(&o.job_id) {
        if j.run == o.run {
            j.time_limit = Some(o.time_limit);
        }
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
        "{}: job {}: terminate order ({}), KillWait {}s",
        agent.node,
        o.job_id,
        o.state.name(),
        o.kill_wait
    );
    run::terminate(agent.clone(), o.job_id, o.state, o.kill_wait);
    Json(sluice_proto::types::Done {}).into_response()
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
        .is_some_and(|j| j.devices.is_some());
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
            Ok(Ok(Some(files))) => run::resolve_devices(&agent, job, &files),
            Ok(Ok(None)) => None,
            _ => {
                return error(
                    ErrorCode::ControllerUnreachable,
                    "Unable to contact slurm controller (connect failure)",
                )
            }
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<TaskEvent>(256);
    run::tasks(agent.clone(), record, order, fetched, tx);
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    use tokio_stream::StreamExt;
    let lines = stream.map(|e| {
        let mut line = serde_json::to_vec(&e).expect("events serialise");
        line.push(b'\n');
        Ok::<_, std::convert::Infallible>(line)
    });
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::from_stream(lines))
        .expect("valid response")
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
