//! The controller's side of the node agents: one queue of orders per node, and the
//! watch that notices an agent gone.
//!
//! Orders name nodes; the queue of a node knows where its agent listens. Each queue
//! sends its orders one after another, in the order they were decided, so that an
//! agent never sees a job's end before its launch. What an agent's answer means for
//! the controller's state (a refused launch, an agent that cannot be reached) goes back
//! to the loop as an [`Input`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_proto::error::ErrorCode;
use sluice_proto::paths::agent_socket;
use sluice_proto::{Client, ClientError};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::input::{Input, Request};
use crate::state::Effect;

/// What every order to an agent carries beyond the effect.
#[derive(Clone)]
struct Sender {
    /// This controller run (launches carry it; see the agent's registration).
    incarnation: String,
    /// slurm.conf's `KillWait`, seconds.
    kill_wait: i64,
    /// The loop's inputs.
    inputs: UnboundedSender<Input>,
}

/// One order queue per node.
pub struct Agents {
    queues: BTreeMap<String, UnboundedSender<Effect>>,
}

/// The queues' tasks, to wait for when stopping.
pub struct AgentTasks(Vec<JoinHandle<()>>);

impl Agents {
    /// Queues for `nodes`, whose agents listen under `state_dir`. Must be called within
    /// the runtime.
    pub fn start(
        nodes: impl IntoIterator<Item = String>,
        state_dir: &Path,
        incarnation: String,
        kill_wait: i64,
        inputs: UnboundedSender<Input>,
    ) -> (Agents, AgentTasks) {
        let sender = Sender {
            incarnation,
            kill_wait,
            inputs,
        };
        let mut queues = BTreeMap::new();
        let mut tasks = Vec::new();
        for node in nodes {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let socket = agent_socket(state_dir, &node);
            tasks.push(tokio::spawn(run_queue(
                node.clone(),
                socket,
                rx,
                sender.clone(),
            )));
            queues.insert(node, tx);
        }
        (Agents { queues }, AgentTasks(tasks))
    }

    /// Queues `order` to each node it names.
    pub fn send(&self, order: Effect) {
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
        let all = futures_join(self.0);
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
        Effect::Launch { ref node, .. } | Effect::SetTimeLimit { ref node, .. } => {
            vec![(node.clone(), order)]
        }
        Effect::Signal {
            nodes,
            job_id,
            signal,
            batch_only,
        } => nodes
            .into_iter()
            .map(|n| {
                let one = Effect::Signal {
                    nodes: vec![n.clone()],
                    job_id,
                    signal,
                    batch_only,
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
    socket: PathBuf,
    mut rx: UnboundedReceiver<Effect>,
    sender: Sender,
) {
    while let Some(order) = rx.recv().await {
        let socket = socket.clone();
        let s = sender.clone();
        let job = match &order {
            Effect::Launch { order, .. } => Some((order.job.id, order.job.restarts)),
            _ => None,
        };
        let result = tokio::task::spawn_blocking(move || send(&socket, order, &s)).await;
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
            // The node's agent cannot take the order: the node is down.
            Ok(Err(why @ ClientError::Connect { .. })) if job.is_some() => {
                let _ = sender.inputs.send(Input::Unreachable {
                    node: node.clone(),
                    why: why.to_string(),
                });
            }
            Ok(Err(why)) if job.is_some() => {
                let _ = sender.inputs.send(Input::Unreachable {
                    node: node.clone(),
                    why: why.to_string(),
                });
            }
            _ => {}
        }
    }
}

/// Sends one order (blocking). Only a launch's failure matters to the caller: signals
/// and terminations of an agent that is gone are moot (the watch marks its node down).
fn send(socket: &Path, order: Effect, s: &Sender) -> Result<(), ClientError> {
    let client = Client::new(socket);
    match order {
        Effect::Launch { mut order, .. } => {
            order.incarnation = s.incarnation.clone();
            client
                .post::<_, serde_json::Value>("/v1/batch", &*order)
                .map(|_| ())
        }
        Effect::Signal {
            job_id,
            signal,
            batch_only,
            ..
        } => {
            let body = sluice_proto::types::SignalOrder {
                job_id,
                signal,
                batch_only,
            };
            let _ = client.post::<_, serde_json::Value>("/v1/signal", &body);
            Ok(())
        }
        Effect::SetTimeLimit {
            job_id,
            run,
            time_limit,
            ..
        } => {
            let body = sluice_proto::types::TimeLimitOrder {
                job_id,
                run,
                time_limit,
            };
            let _ = client.post::<_, serde_json::Value>("/v1/limit", &body);
            Ok(())
        }
        Effect::Terminate { job_id, state, .. } => {
            let body = sluice_proto::types::TerminateOrder {
                job_id,
                state,
                kill_wait: s.kill_wait,
            };
            let _ = client.post::<_, serde_json::Value>("/v1/terminate", &body);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// How often registered agents are checked.
const AGENT_CHECK: Duration = Duration::from_secs(1);

/// Checks every registered agent each [`AGENT_CHECK`] until `stop`; one whose socket
/// refuses connections is gone (a local socket does not drop connections for other
/// reasons), so its node goes DOWN and its jobs are requeued or end `NODE_FAIL` at
/// once, rather than after Slurm's `SlurmdTimeout`.
pub async fn watch(
    inputs: UnboundedSender<Input>,
    state_dir: PathBuf,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(AGENT_CHECK) => {}
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        if inputs
            .send(Input::Request(Request::RegisteredAgents(tx)))
            .is_err()
        {
            return;
        }
        let Ok(agents) = rx.await else { return };
        let dir = state_dir.clone();
        let (answered, gone) = tokio::task::spawn_blocking(move || {
            let mut answered = Vec::new();
            let mut gone = Vec::new();
            for node in agents {
                match Client::new(agent_socket(&dir, &node)).get::<serde_json::Value>("/v1/ping") {
                    Ok(_) => answered.push(node),
                    Err(ClientError::Connect { .. }) => gone.push(node),
                    Err(_) => {}
                }
            }
            (answered, gone)
        })
        .await
        .unwrap_or_default();
        if inputs
            .send(Input::AgentsChecked { answered, gone })
            .is_err()
        {
            return;
        }
    }
}
