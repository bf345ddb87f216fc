//! The controller's side of the node agents: one queue of orders per node, and the
//! watch that notices an agent gone.
//!
//! Orders name nodes; the queue of a node knows where its agent listens: its Unix socket
//! in the state directory (`sluice up`), or its node's address and port, with every
//! order signed with the cluster key (`slurmctld`; see
//! [`crate::config::ClusterConfig::agent_endpoint`]). Each queue
//! sends its orders one after another, in the order they were decided, so that an
//! agent never sees a job's end before its launch. What an agent's answer means for
//! the controller's state (a refused launch, an agent that cannot be reached) goes back
//! to the loop as an [`Input`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_proto::error::ErrorCode;
use sluice_proto::{Client, ClientError};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::input::{Input, Request};
use crate::state::{script_key, BatchScript, Effect};
use sluice_core::JobId;
use sluice_proto::types::LaunchBatch;
use sluice_store::Store;

/// What every order to an agent carries beyond the effect.
#[derive(Clone)]
struct Sender {
    /// This controller run (launches carry it; see the agent's registration).
    incarnation: String,
    /// slurm.conf's `KillWait`, seconds.
    kill_wait: i64,
    /// The loop's inputs.
    inputs: UnboundedSender<Input>,
    /// Where launches' scripts and environments are read back from.
    store: Store,
}

/// Makes the client of an agent at an endpoint (signed as the controller signs).
pub type MakeClient = Arc<dyn Fn(&str) -> Client + Send + Sync>;

/// One order queue per node.
pub struct Agents {
    queues: BTreeMap<String, UnboundedSender<Effect>>,
    /// For the queues of nodes that join later ([`Effect::AddAgent`]).
    sender: Sender,
    clients: AgentClients,
    make: MakeClient,
    runtime: tokio::runtime::Handle,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// The queues' tasks, to wait for when stopping.
pub struct AgentTasks(Arc<Mutex<Vec<JoinHandle<()>>>>);

/// How long an order may wait for its agent to take it.
const ORDER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the watch waits for an agent's answer to its ping.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// A client for each node's agent, by node name (nodes may join while the controller
/// runs).
pub type AgentClients = Arc<Mutex<BTreeMap<String, Client>>>;

impl Agents {
    /// Queues for the nodes of `clients`, each sending through its node's client. Must
    /// be called within the runtime.
    pub fn start(
        clients: &AgentClients,
        make: MakeClient,
        incarnation: String,
        kill_wait: i64,
        inputs: UnboundedSender<Input>,
        store: Store,
    ) -> (Agents, AgentTasks) {
        let sender = Sender {
            incarnation,
            kill_wait,
            inputs,
            store,
        };
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let mut agents = Agents {
            queues: BTreeMap::new(),
            sender,
            clients: clients.clone(),
            make,
            runtime: tokio::runtime::Handle::current(),
            tasks: tasks.clone(),
        };
        let all: Vec<(String, Client)> = clients
            .lock()
            .expect("never held across a panic")
            .iter()
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        for (node, client) in all {
            agents.add_queue(node, client);
        }
        (agents, AgentTasks(tasks))
    }

    /// A queue for `node`'s orders, sent through `client`.
    fn add_queue(&mut self, node: String, client: Client) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let client = client.with_timeout(ORDER_TIMEOUT);
        let task = self
            .runtime
            .spawn(run_queue(node.clone(), client, rx, self.sender.clone()));
        self.tasks
            .lock()
            .expect("never held across a panic")
            .push(task);
        self.queues.insert(node, tx);
    }

    /// Queues `order` to each node it names; [`Effect::AddAgent`] makes a node's queue
    /// (and its client, which the agent watch pings).
    pub fn send(&mut self, order: Effect) {
        if let Effect::AddAgent { node, endpoint } = order {
            let client = (self.make)(&endpoint);
            self.clients
                .lock()
                .expect("never held across a panic")
                .insert(node.clone(), client.clone());
            self.add_queue(node, client);
            return;
        }
        for (node, one) in per_node(order) {
            match self.queues.get(&node) {
                Some(q) => {
                    let _ = q.send(one);
                }
                None => tracing::warn!("an order for unknown node {node} was dropped"),
            }
        }
    }
}

impl AgentTasks {
    /// Waits until every queue has sent what it holds (their senders are gone), at most
    /// `limit`.
    pub async fn drained(self, limit: Duration) {
        let handles = std::mem::take(&mut *self.0.lock().expect("never held across a panic"));
        let all = futures_join(handles);
        if tokio::time::timeout(limit, all).await.is_err() {
            tracing::warn!("orders to some agents were not delivered before stopping");
        }
    }
}

async fn futures_join(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        let _ = h.await;
    }
}

/// An order split into one order per node it goes to.
fn per_node(order: Effect) -> Vec<(String, Effect)> {
    match order {
        Effect::Launch { ref node, .. }
        | Effect::SetTimeLimit { ref node, .. }
        | Effect::EndRun { ref node, .. } => {
            vec![(node.clone(), order)]
        }
        Effect::Signal {
            nodes,
            job_id,
            signal,
            batch_only,
            step,
        } => nodes
            .into_iter()
            .map(|n| {
                let one = Effect::Signal {
                    nodes: vec![n.clone()],
                    job_id,
                    signal,
                    batch_only,
                    step,
                };
                (n, one)
            })
            .collect(),
        Effect::TerminateStep {
            nodes,
            job_id,
            step,
            kill_wait,
            time_limit,
        } => nodes
            .into_iter()
            .map(|n| {
                let one = Effect::TerminateStep {
                    nodes: vec![n.clone()],
                    job_id,
                    step,
                    kill_wait,
                    time_limit,
                };
                (n, one)
            })
            .collect(),
        Effect::Suspend {
            nodes,
            job_id,
            suspend,
        } => nodes
            .into_iter()
            .map(|n| {
                let one = Effect::Suspend {
                    nodes: vec![n.clone()],
                    job_id,
                    suspend,
                };
                (n, one)
            })
            .collect(),
        Effect::Terminate {
            nodes,
            job_id,
            state,
        } => nodes
            .into_iter()
            .map(|n| {
                let one = Effect::Terminate {
                    nodes: vec![n.clone()],
                    job_id,
                    state,
                };
                (n, one)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Sends a node's orders one after another until its queue closes.
async fn run_queue(
    node: String,
    client: Client,
    mut rx: UnboundedReceiver<Effect>,
    sender: Sender,
) {
    while let Some(order) = rx.recv().await {
        let c = client.clone();
        let s = sender.clone();
        let job = match &order {
            Effect::Launch { order, .. } => Some((JobId(order.job.id), order.job.restarts)),
            _ => None,
        };
        let result = tokio::task::spawn_blocking(move || send(&c, order, &s)).await;
        if let Ok(Err(ClientError::Status {
            code: ErrorCode::Authentication,
            message,
            ..
        })) = &result
        {
            tracing::warn!("the agent of {node} refused an order of this controller: {message}");
        }
        if let Ok(Err(ClientError::Status {
            code: ErrorCode::Fenced,
            message,
            ..
        })) = &result
        {
            super::fencing::step_down(&format!(
                "the agent of {node} follows a newer controller: {message}"
            ));
        }
        match result {
            Ok(Err(ClientError::Status {
                code: ErrorCode::Busy,
                message,
                ..
            })) => {
                if let Some((job, run)) = job {
                    let _ = sender.inputs.send(Input::LaunchRefused {
                        job,
                        run,
                        why: message,
                    });
                }
            }
            // The node's agent cannot take the launch: the run never starts.
            Ok(Err(why)) => {
                if let Some((job, run)) = job {
                    let _ = sender.inputs.send(Input::Unreachable {
                        node: node.clone(),
                        job,
                        run,
                        why: why.to_string(),
                    });
                }
            }
            _ => {}
        }
    }
}

/// Sends one order (blocking). Only a launch's failure changes the controller's state:
/// signals and terminations that do not reach an agent that is gone are sent again when
/// it registers (its registration's reconciliation); their failures are only logged
/// when the agent refused this controller.
fn send(client: &Client, order: Effect, s: &Sender) -> Result<(), ClientError> {
    match order {
        Effect::Launch { mut order, .. } => {
            order.incarnation = s.incarnation.clone();
            with_script(&s.store, &mut order).map_err(|why| ClientError::Status {
                status: 500,
                code: ErrorCode::Busy,
                message: format!("its script could not be read from the store: {why}"),
            })?;
            client
                .post::<_, serde_json::Value>("/v1/batch", &*order)
                .map(|_| ())
        }
        Effect::Signal {
            job_id,
            signal,
            batch_only,
            step,
            ..
        } => {
            let body = sluice_proto::types::SignalOrder {
                job_id: job_id.0,
                signal,
                batch_only,
                step,
                time_limit_kill_wait: None,
                terminate_kill_wait: None,
            };
            client
                .post::<_, serde_json::Value>("/v1/signal", &body)
                .map(|_| ())
        }
        Effect::TerminateStep {
            job_id,
            step,
            kill_wait,
            time_limit,
            ..
        } => {
            let body = sluice_proto::types::SignalOrder {
                job_id: job_id.0,
                signal: libc::SIGTERM,
                batch_only: false,
                step: Some(step),
                time_limit_kill_wait: time_limit.then_some(kill_wait),
                terminate_kill_wait: (!time_limit).then_some(kill_wait),
            };
            client
                .post::<_, serde_json::Value>("/v1/signal", &body)
                .map(|_| ())
        }
        Effect::Suspend {
            job_id, suspend, ..
        } => {
            let body = sluice_proto::types::SuspendOrder {
                job_id: job_id.0,
                suspend,
            };
            client
                .post::<_, serde_json::Value>("/v1/suspend", &body)
                .map(|_| ())
        }
        Effect::SetTimeLimit {
            job_id,
            run,
            time_limit,
            ..
        } => {
            let body = sluice_proto::types::TimeLimitOrder {
                job_id: job_id.0,
                run,
                time_limit,
            };
            client
                .post::<_, serde_json::Value>("/v1/limit", &body)
                .map(|_| ())
        }
        Effect::Terminate { job_id, state, .. } => {
            let body = sluice_proto::types::TerminateOrder {
                job_id: job_id.0,
                state,
                kill_wait: s.kill_wait,
                run: None,
            };
            client
                .post::<_, serde_json::Value>("/v1/terminate", &body)
                .map(|_| ())
        }
        Effect::EndRun {
            job_id, run, state, ..
        } => {
            let body = sluice_proto::types::TerminateOrder {
                job_id: job_id.0,
                state,
                kill_wait: s.kill_wait,
                run: Some(run),
            };
            client
                .post::<_, serde_json::Value>("/v1/terminate", &body)
                .map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Completes launch order `order` with its job's script and environment, read back
/// from the store (the controller does not keep them; see `state/script.rs`). An
/// allocation (`srun`, `salloc`) runs no script; a submission kept without either has
/// nothing to add.
///
/// Errors: the store cannot be read, or holds what it could not have written.
pub fn with_script(store: &Store, order: &mut LaunchBatch) -> Result<(), String> {
    let job = &order.job;
    if job.desc.interactive || !job.desc.script.is_empty() {
        return Ok(());
    }
    let key = script_key(JobId(job.id), job.array.map(|(a, t)| (JobId(a), t)));
    if let Some(s) = store.script(key).map_err(|e| e.to_string())? {
        BatchScript::from_store(s)?.complete(order);
    }
    Ok(())
}

/// How often the watch looks for agents not heard from.
const AGENT_CHECK: Duration = Duration::from_secs(1);

/// Each [`AGENT_CHECK`] until `stop`, pings the registered agents the controller has not
/// heard from lately (no heartbeat for two heartbeat intervals:
/// `Controller::agents_to_ping`); agents whose heartbeats come are not pinged, so an
/// idle cluster costs the controller no outgoing request. A pinged agent whose socket
/// refuses connections is gone (its process is; on a local socket nothing else refuses
/// a connection, and on TCP a host that answers with a refusal is up without its
/// agent). Its jobs run on under their supervisors: its node takes no new work, and
/// goes DOWN (its jobs requeued or ended `NODE_FAIL`) only if the agent has not
/// registered again within `SlurmdTimeout` (`Controller::agent_silent`). An agent that
/// does not answer in time, or cannot be reached at all over TCP (a cut link, a host
/// powered off), is not responding too (`Controller::agents_unanswered`), but an
/// answer before `SlurmdTimeout` brings its node back (Slurm's "now responding").
pub async fn watch(
    inputs: UnboundedSender<Input>,
    clients: AgentClients,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    // Per node, when its refusal of our credential was last logged.
    let refusals: Arc<Mutex<BTreeMap<String, std::time::Instant>>> = Arc::default();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(AGENT_CHECK) => {}
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        if inputs
            .send(Input::Request(Request::AgentsToPing(tx)))
            .is_err()
        {
            return;
        }
        let Ok(agents) = rx.await else { return };
        // Every agent at once: one that takes its time holds up none of the others.
        let pings = agents.into_iter().filter_map(|node| {
            let client = clients
                .lock()
                .expect("never held across a panic")
                .get(&node)?
                .clone()
                .with_timeout(PING_TIMEOUT);
            let refusals = refusals.clone();
            Some(tokio::task::spawn_blocking(move || {
                let answer = client.get::<serde_json::Value>("/v1/ping");
                let verdict = ping_verdict(&client, &answer);
                // Only over TCP is silence news (a host or link gone); a local agent that
                // is slow to answer is there, its socket would refuse otherwise.
                let tcp = client.is_tcp();
                if let Err(ClientError::Status {
                    code: ErrorCode::Authentication,
                    message,
                    ..
                }) = &answer
                {
                    let mut r = refusals.lock().expect("never held across a panic");
                    if r.get(&node)
                        .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                    {
                        r.insert(node.clone(), std::time::Instant::now());
                        tracing::warn!(
                            "the agent of {node} refused this controller's credential: {message}"
                        );
                    }
                }
                (node, verdict, tcp)
            }))
        });
        let pings: Vec<_> = pings.collect();
        let mut answered = Vec::new();
        let mut gone = Vec::new();
        let mut unanswered = Vec::new();
        for p in pings {
            match p.await {
                Ok((node, Some(true), _)) => answered.push(node),
                Ok((node, Some(false), _)) => gone.push(node),
                Ok((node, None, true)) => unanswered.push(node),
                _ => {}
            }
        }
        if inputs
            .send(Input::AgentsChecked {
                answered,
                gone,
                unanswered,
            })
            .is_err()
        {
            return;
        }
    }
}

/// What a ping's answer says of its agent: `Some(true)` it answered, `Some(false)` it
/// is gone (see [`watch`]), `None` neither.
fn ping_verdict(client: &Client, answer: &Result<serde_json::Value, ClientError>) -> Option<bool> {
    match answer {
        Ok(_) => Some(true),
        Err(ClientError::Connect { source, .. })
            if !client.is_tcp() || source.kind() == std::io::ErrorKind::ConnectionRefused =>
        {
            Some(false)
        }
        Err(_) => None,
    }
}
