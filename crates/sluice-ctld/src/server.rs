//! The controller daemon: HTTP/JSON on a Unix socket (and signed TCP), and the loop that
//! owns the controller's state.
//!
//! ```text
//!  HTTP handlers ──Input──► owner loop (Controller) ──effects, in order──► executor
//!   (routes.rs …)  ◄─answer─   owner.rs                                  executor.rs
//!                                 ▲                        store writes ──► sluice-store
//!   agent queues, agent watch ────┘ reports as Input       orders ──► agents.rs queues
//! ```
//!
//! Every request carries its caller's uid and gid from the socket's peer credentials
//! (`SO_PEERCRED`), or on TCP from a credential signed with the cluster key; nothing in a
//! request body says who the caller is. Handlers only translate a request into an
//! [`input::Input`] and the answer back into HTTP; the loop ([`owner`]) is the one owner
//! of the state, and the [`executor`] carries out its effects in the order decided. A
//! submission is answered only once its record is committed (group commit makes that
//! cheap under load); state changes that later effects depend on (a job marked RUNNING
//! before its script is launched) are made durable first.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use sluice_proto::error::{ApiError, ErrorCode};
use sluice_proto::types::{ErrorReply, JobRecord, StepRecord};
use sluice_store::Store;
use tokio::net::UnixListener;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::config::ClusterConfig;
use crate::state::{self, Caller, Controller};
use sluice_core::JobId;

pub mod accounting;
mod accounts;
pub mod agents;
mod audit;
mod diag;
pub mod dynamic_nodes;
pub mod executor;
mod explain;
pub mod fencing;
mod forecast_arena;
mod freed;
pub mod input;
mod job_script;
mod metrics;
pub mod names;
pub mod owner;
mod priority;
pub mod reconfigure;
mod reservations;
mod rest;
mod routes;
mod rpc_stats;
mod services;
pub mod standby;
mod start_pages;
pub mod storage;
mod tcp;
#[cfg(test)]
mod tests;
mod token;
mod update;

use input::{Input, Reply, Request};

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
    /// sluice.conf's `Storage*` settings cannot be used (a pass file others can read).
    #[error("{0}")]
    Storage(String),
    /// The auth/jwt key could not be loaded.
    #[error(transparent)]
    JwtKey(#[from] crate::token::KeyError),
}

/// What the handlers share: the way into the loop, and what needs no loop.
struct Shared {
    /// The loop's inputs.
    inputs: UnboundedSender<Input>,
    /// The store, for what is read from disk alone (`sacct`, the audit trail).
    store: Store,
    /// The jobs as listings read them, as the loop last published them.
    listing: crate::state::listing::Published,
    own_uid: u32,
    /// Names this run of the controller. Agents register again when it changes: a
    /// controller that restarted knows nothing of who is up.
    incarnation: String,
    /// The cluster key, when the controller has one: it then vouches for local callers
    /// as agents do (`srun` on the controller's host reaching agents over TCP).
    key: Option<Vec<u8>>,
    /// Requests being served (`sdiag`'s server thread count).
    in_flight: std::sync::atomic::AtomicU32,
    /// Requests served, by kind and user (`sdiag`).
    rpc: std::sync::Mutex<rpc_stats::RpcStats>,
    /// Whether and to whom the metrics endpoints answer (`MetricsType`, ...).
    metrics: crate::config::MetricsConf,
    /// The auth/jwt key (`AuthAltTypes=auth/jwt`): tokens made and admitted.
    tokens: Option<Arc<crate::token::Tokens>>,
    /// `ClusterName`, for the REST API's answers.
    cluster_name: String,
    /// The slurm.conf the controller started from, for `scontrol reconfigure`.
    start_conf: Option<reconfigure::StartConf>,
}

type App = Arc<Shared>;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The HTTP answer to a refused or failed request: the status its code chooses, and
/// its message.
fn refuse(e: ApiError) -> Response {
    let status =
        StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(ErrorReply::from(e))).into_response()
}

impl Shared {
    fn caller(&self, peer: Peer) -> Caller {
        Caller {
            uid: peer.uid,
            gid: peer.gid,
            admin: peer.uid == 0 || peer.uid == self.own_uid,
        }
    }

    /// The uid whose jobs alone `peer` may see in `listing`: under `PrivateData=jobs`
    /// its own, unless it is root, the controller's user or an operator by
    /// `AdminLevel` (Slurm's `validate_operator`); `None`: every job.
    fn owner_only(&self, listing: &state::listing::Listing, peer: Peer) -> Option<u32> {
        let uid = listing.owner_only(peer.uid, self.own_uid)?;
        (!self.is_operator(listing, peer)).then_some(uid)
    }

    /// `peer` acting on jobs and reservations: an operator by `AdminLevel` (Operator or
    /// Administrator) may act on every job (cancel, signal, hold, release, requeue,
    /// update) and manage reservations, as Slurm's `validate_operator` lets them, like
    /// root and `SlurmUser`.
    fn operator_caller(&self, peer: Peer) -> Caller {
        let mut caller = self.caller(peer);
        caller.admin = caller.admin || self.is_operator(&self.listing.latest(), peer);
        caller
    }

    /// `peer` acting on the cluster itself (nodes, partitions, dynamic nodes, a
    /// reconfiguration): root, `SlurmUser` and administrators by `AdminLevel`, Slurm's
    /// `validate_super_user`; an operator is not one.
    fn super_caller(&self, peer: Peer) -> Caller {
        let mut caller = self.caller(peer);
        if !caller.admin {
            // A uid without a name in the user database is none.
            caller.admin = names::user(peer.uid)
                .is_some_and(|user| self.listing.latest().is_administrator(&user));
        }
        caller
    }

    /// Whether `peer` is an operator by its `AdminLevel` (Operator or Administrator) as
    /// `listing` last saw the accounts: Slurm's `validate_operator` counts them with
    /// root and `SlurmUser` (which are [`Caller::admin`]).
    /// A uid without a name in the user database is none.
    fn is_operator(&self, listing: &state::listing::Listing, peer: Peer) -> bool {
        names::user(peer.uid).is_some_and(|user| listing.is_operator(&user))
    }

    /// Asks the loop: `make` builds the request around the reply channel.
    ///
    /// Errors: the controller is stopping, or could not handle the request (a bug,
    /// logged by the loop).
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Request) -> Result<T, ApiError> {
        let (tx, rx) = oneshot::channel();
        self.inputs
            .send(Input::Request(make(tx)))
            .map_err(|_| stopping())?;
        rx.await.map_err(|_| {
            ApiError::new(
                ErrorCode::Internal,
                "Unexpected message received: the controller could not handle the request",
            )
        })
    }
}

fn stopping() -> ApiError {
    ApiError::new(ErrorCode::ShuttingDown, "Slurm controller is shutting down")
}

/// How the controller is reached over TCP, and how requests there are authenticated.
#[derive(Debug, Default)]
pub struct Network {
    /// Also serve on this TCP address, where only requests signed with the cluster key
    /// are served (commands on other hosts, agents).
    pub listen: Option<std::net::SocketAddr>,
    /// How requests over TCP are signed and checked, the listener's and the orders to
    /// agents (`ClusterConfig::agents_over_tcp`): the cluster key or munged. `None`:
    /// `cluster.key` in the state directory, created when missing (`sluice up
    /// --listen`).
    pub auth: Option<sluice_proto::auth::Scheme>,
    /// The digest of the slurm.conf the controller read ([`conf_hash`]), compared with
    /// the one each agent sends when it registers. `None`: not compared.
    pub conf_hash: Option<String>,
    /// Pages served on the TCP listener without a credential, when tokens are on
    /// (`AuthAltTypes=auth/jwt`): the dashboard under `/ui`, which logs each browser in
    /// with a token and asks the controller with it. Their paths must not be the API's.
    pub pages: Option<axum::Router>,
    /// The slurm.conf the configuration was read from, which `scontrol reconfigure`
    /// reads again. `None`: none (a configuration of this machine).
    pub conf_path: Option<PathBuf>,
    /// The agents stop with the controller and end their jobs (`sluice up` without
    /// `--controller-only`): a clean stop is marked in the store, so that the next
    /// start records the jobs it finds lost as requeued for that stop, not for a node
    /// failure.
    pub agents_stop_with_it: bool,
    /// This controller is the active one of several (`SlurmctldHost` listed more than
    /// once) and took over with this fencing epoch: every store write is conditioned on
    /// it, orders to agents and answers carry it ([`sluice_proto::client::EPOCH_HEADER`]),
    /// and a refusal for a newer one steps down ([`fencing`]). `None`: the only one.
    pub epoch: Option<Epoch>,
}

/// The fencing epoch an active controller took over with.
#[derive(Clone, Debug)]
pub struct Epoch {
    /// Its value.
    pub value: i64,
    /// The `meta` row that keeps it (`sluice_store::lease::epoch_key`).
    pub key: String,
}

/// The digest of a slurm.conf's text, as agents and the controller compare them at
/// registration (Slurm's `hash_val`; here SHA-256 of the file's bytes, in hex).
pub fn conf_hash(text: &[u8]) -> String {
    sluice_proto::auth::body_digest(text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Records written before scripts and environments had a table of their own carry
/// them: they move there (once; their records are written again without them), so
/// that the controller never holds them and launches find them where they look.
fn move_scripts_to_their_table(store: &Store, jobs: &mut [JobRecord]) -> Result<(), ServeError> {
    let mut moved = 0;
    for r in jobs.iter_mut() {
        let Some(script) = state::BatchScript::take(&mut r.desc) else {
            continue;
        };
        let key = state::script_key(JobId(r.id), r.array.map(|(a, t)| (JobId(a), t)));
        store.put_script(key, script.to_store());
        let record = serde_json::to_string(&*r).expect("records serialise");
        let _ = store.put_job(r.id, accounting::job_keys(r), record);
        moved += 1;
    }
    if moved > 0 {
        store.sync()?;
        tracing::info!("{moved} jobs' scripts and environments moved to their own table");
    }
    Ok(())
}

/// How long the process that ran [`run`] waits, once it returned, for work still on
/// the runtime's blocking threads before it exits: a background forecast or `explain`
/// simulation of a long queue can take minutes and only serves readers that are gone.
/// What must be durable is flushed before [`run`] returns.
pub const BLOCKING_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs the controller for `conf` with its state in `state_dir` until `shutdown`
/// completes: on the Unix socket `ctld.sock` there, and, when `net` says so, on a TCP
/// address too, where only requests signed with the cluster key (see
/// [`sluice_proto::auth`]) are served. Orders go to each node's agent where
/// [`ClusterConfig::agent_endpoint`] says it listens, signed with the key when over TCP.
///
/// Stopping drains: no new connection is taken, requests in flight are answered, what
/// the loop decided is carried out (store writes flushed, orders delivered to the
/// agents), then the store is closed.
///
/// Errors: the state directory, database, key or sockets cannot be set up.
pub async fn run(
    conf: ClusterConfig,
    state_dir: &Path,
    net: Network,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listen = net.listen;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ServeError::Io { path, source }
    };
    std::fs::create_dir_all(state_dir).map_err(io(state_dir))?;
    std::fs::create_dir_all(state_dir.join("agents")).map_err(io(state_dir))?;
    let location = storage::location(&conf.site.storage, state_dir).map_err(ServeError::Storage)?;
    let location = storage::for_cluster(location, &conf, listen);
    let fence = net.epoch.as_ref().map(|e| sluice_store::Fence {
        epoch: e.value,
        key: e.key.clone(),
        on_fenced: Arc::new(|now| {
            fencing::step_down(&format!(
                "the state database's fencing epoch is {now}: another controller took over"
            ))
        }),
    });
    let epoch = net.epoch.as_ref().map(|e| e.value);
    let (store, writer, mut snapshot) = Store::open_fenced(
        &location,
        conf.first_job_id,
        accounting::keys_of_record,
        fence,
    )?;
    // A short outage of the database (PostgreSQL restarted) holds the writes waiting
    // on it rather than failing them, for as long as a controller may be silent.
    store.retry_unreachable_for(std::time::Duration::from_secs(conf.net.slurmctld_timeout));
    // The rows go as they are read: the controller keeps the jobs, not their text.
    let mut jobs = Vec::new();
    for row in std::mem::take(&mut snapshot.jobs) {
        jobs.push(
            serde_json::from_str::<JobRecord>(&row.record)
                .map_err(|e| ServeError::Corrupt(format!("job {}: {e}", row.id)))?,
        );
    }
    move_scripts_to_their_table(&store, &mut jobs)?;
    let mut steps = Vec::new();
    for row in std::mem::take(&mut snapshot.steps) {
        steps.push(
            serde_json::from_str::<StepRecord>(&row.record)
                .map_err(|e| ServeError::Corrupt(format!("step {}: {e}", row.id)))?,
        );
    }
    let start_conf = match &net.conf_path {
        Some(p) => Some(reconfigure::StartConf::read(p).map_err(io(p))?),
        None => None,
    };
    let kill_wait = conf.kill_wait;
    let metrics = conf.metrics.clone();
    let tokens = conf.net.jwt.as_deref().map(load_tokens).transpose()?;
    let cluster_name = conf.cluster_name.clone();
    let auth = match (net.auth, listen.is_some() || conf.agents_over_tcp) {
        (Some(a), _) => Some(a),
        (None, true) => {
            let key_path = state_dir.join("cluster.key");
            let key = sluice_proto::auth::ensure_key(&key_path).map_err(io(&key_path))?;
            Some(sluice_proto::auth::Scheme::Key(key))
        }
        (None, false) => None,
    };
    let signer = auth.as_ref().map_or_else(
        || sluice_proto::Signer::Key(Arc::new(Vec::new())),
        |a| a.signer(),
    );
    // Dynamic nodes (`scontrol create node`) come back after slurm.conf's.
    let mut conf = conf;
    let (mut dynamic, mut future, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    for (key, line) in &snapshot.nodes {
        if key.starts_with(crate::state::node_changes::DYNAMIC_PREFIX) {
            for (name, is_future) in crate::state::node_changes::append_node(&mut conf, line) {
                if is_future {
                    future.push(name.clone());
                }
                lines.push((name.clone(), line.clone()));
                dynamic.push(name);
            }
        }
    }
    let make_client: agents::MakeClient = {
        let signer = signer.clone();
        Arc::new(move |endpoint: &str| {
            sluice_proto::Client::endpoint(endpoint, &signer).with_epoch(epoch)
        })
    };
    let clients: agents::AgentClients = Arc::new(std::sync::Mutex::new(
        conf.cluster
            .nodes
            .iter()
            .map(|n| {
                let endpoint = conf.agent_endpoint(&n.name, state_dir);
                (n.name.clone(), make_client(&endpoint))
            })
            .collect(),
    ));
    let service_tcp_ports = conf.site.service_tcp_ports;
    conf.service_base = listen.map(|l| services::base(l, &conf.net));
    let mut ctl = Controller::new(conf, state_dir, jobs, steps, now());
    ctl.set_slurm_uid(nix::unistd::getuid().as_raw());
    ctl.set_conf_hash(net.conf_hash.clone());
    ctl.resume_ids(snapshot.next_job_id);
    ctl.restore_dynamic_nodes(&dynamic, &future);
    for (name, line) in &lines {
        ctl.restore_dynamic_line(name, line);
    }
    ctl.restore_nodes(&snapshot.nodes);
    for (name, record) in ctl.configured_rows() {
        store
            .put_node(&name, Some(record))
            .recv()
            .map_err(|_| sluice_store::StoreError::Closed)??;
    }
    ctl.restore_reservations(&snapshot.reservations, now());
    if snapshot.stopped_with_agents {
        ctl.stopped_with_agents();
        // Read once: a crash from here on is a crash.
        store.mark_stopped(false);
    }
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
    ctl.await_agents(now());
    ctl.purge(now());
    let retention = ctl.conf.site.purge_audit_after;
    // The epoch leads (`E:`): agents see from it which controller is the newer.
    let incarnation = format!(
        "{}{}.{}",
        epoch.map(|e| format!("{e}:")).unwrap_or_default(),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );

    let (inputs, inputs_rx) = tokio::sync::mpsc::unbounded_channel();
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let (agents, agent_tasks) = agents::Agents::start(
        &clients,
        make_client,
        incarnation.clone(),
        kill_wait,
        inputs.clone(),
        store.clone(),
    );
    let exec = executor::Executor::new(store.clone(), agents);
    let owner = owner::Owner::new(ctl, inputs.clone(), listen);
    let shared = Arc::new(Shared {
        inputs: inputs.clone(),
        store: store.clone(),
        listing: owner.published(),
        own_uid: nix::unistd::geteuid().as_raw(),
        incarnation,
        key: auth.as_ref().and_then(|a| a.key()).map(<[u8]>::to_vec),
        in_flight: Default::default(),
        rpc: Default::default(),
        metrics: metrics.clone(),
        tokens,
        cluster_name,
        start_conf,
    });

    let socket = sluice_proto::paths::controller_socket(state_dir);
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).map_err(io(&socket))?;
    // Any local user may talk to the controller; who they are comes from the socket.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
        .map_err(io(&socket))?;
    let app = routes::router(shared.clone());
    let app = match epoch {
        Some(e) => app.layer(axum::middleware::map_response(
            move |mut r: Response| async move {
                r.headers_mut().insert(
                    sluice_proto::client::EPOCH_HEADER,
                    axum::http::HeaderValue::from(e),
                );
                r
            },
        )),
        None => app,
    };
    let tcp = match (listen, auth) {
        (Some(addr), Some(auth)) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(io(Path::new(&addr.to_string())))?;
            tracing::info!(
                "slurmctld: listening on {addr} ({})",
                match auth {
                    sluice_proto::auth::Scheme::Key(_) => "requests signed with the cluster key",
                    sluice_proto::auth::Scheme::Munge(_) => "requests with munge credentials",
                }
            );
            // Slurm's metrics are read without a credential when nothing restricts
            // who may read them (see `server/metrics.rs`).
            let open_metrics = metrics.enabled && !metrics.auth;
            if open_metrics {
                tracing::info!("slurmctld: metrics served on {addr} to anyone (GET /metrics/...)");
            }
            // The stable addresses of services: behind the gates, which let exactly
            // these paths through without a credential (`services::is_forwarded`).
            let signed: axum::Router = app
                .clone()
                .merge(services::router(shared.clone()))
                .layer(axum::middleware::from_fn_with_state(
                    Arc::new(tcp::TcpGate {
                        gate: auth.gate(now()),
                        metrics: metrics.enabled,
                        open_metrics,
                    }),
                    tcp::verify_signed,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    shared.clone(),
                    token::admit,
                ));
            if let Some(ports) = service_tcp_ports {
                services::serve_tcp_ports(shared.clone(), addr.ip(), ports, stop.clone()).await;
            }
            // Not behind the gate: the pages admit their browsers themselves, and what
            // they show is asked of the API with each browser's token.
            let signed = match net.pages.filter(|_| shared.tokens.is_some()) {
                Some(pages) => {
                    tracing::info!("slurmctld: dashboard served on http://{addr}/ui");
                    signed.merge(pages)
                }
                None => signed,
            };
            let mut stop = stop.clone();
            Some(tokio::spawn(async move {
                axum::serve(
                    listener,
                    signed.into_make_service_with_connect_info::<std::net::SocketAddr>(),
                )
                .with_graceful_shutdown(async move {
                    let _ = stop.changed().await;
                })
                .await
            }))
        }
        _ => None,
    };

    let purge = retention.map(|r| tokio::spawn(audit::purge_loop(store.clone(), r, stop.clone())));
    let watch = tokio::spawn(agents::watch(inputs.clone(), clients, stop.clone()));
    // The loop runs on a task of its own and returns when told to stop.
    let (owner_stop_tx, owner_stop) = tokio::sync::watch::channel(false);
    let looping = tokio::spawn(async move {
        let owner = owner::drive(owner, inputs_rx, &exec, owner_stop).await;
        (owner, exec)
    });
    drop(inputs);

    // Started: what only starting ran need not stay mapped (`start_pages`).
    let let_go = start_pages::let_go(start_pages::Scope::All);
    tracing::debug!(
        "slurmctld: started; {} MiB of read-only mappings let go",
        let_go >> 20
    );
    // Serve until asked to stop, then let requests in flight finish: they are answered
    // by the loop, which is still running.
    let server = axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
        .with_graceful_shutdown(shutdown);
    let result = server.await;
    tracing::info!("slurmctld: stopping; answering requests in flight");
    let _ = stop_tx.send(true);
    if let Some(tcp) = tcp {
        let _ = tcp.await;
    }
    let _ = watch.await;
    if let Some(purge) = purge {
        let _ = purge.await;
    }
    // Every handler is done: the loop handles what is queued, flushes its audit trail,
    // and stops; the executor then finishes its batches and the agents' queues drain.
    let _ = owner_stop_tx.send(true);
    if let Ok((owner, exec)) = looping.await {
        drop(owner);
        tokio::task::spawn_blocking(move || exec.finish())
            .await
            .ok();
    }
    drop(shared);
    agent_tasks.drained(Duration::from_secs(10)).await;
    if net.agents_stop_with_it && result.is_ok() {
        store.mark_stopped(true);
    }
    let _ = store.sync();
    drop(store);
    drop(writer);
    let _ = std::fs::remove_file(&socket);
    tracing::info!("slurmctld: stopped");
    result.map_err(io(&socket))
}

/// The auth/jwt key of `jwt`, with its limits.
fn load_tokens(
    jwt: &sluice_conf::net_conf::JwtConf,
) -> Result<Arc<crate::token::Tokens>, ServeError> {
    let mut t = crate::token::Tokens::load(&jwt.key)?;
    t.max_lifespan = jwt.max_lifespan;
    t.disable_creation = jwt.disable_creation;
    tracing::info!("auth/jwt: tokens with the key {}", jwt.key.display());
    Ok(Arc::new(t))
}

/// The names of user `uid` and group `gid` (their numbers where the user database has
/// none), from [`names`]' short-lived cache.
fn user_and_group(uid: u32, gid: u32) -> (String, String) {
    let user = names::user(uid).unwrap_or_else(|| uid.to_string());
    let group = names::group(gid).unwrap_or_else(|| gid.to_string());
    (user, group)
}
