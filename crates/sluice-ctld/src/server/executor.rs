//! Effects carried out in the order the loop decided them.
//!
//! The loop hands every outcome to [`Executor::carry_out`], in order, on its own
//! thread. Store writes go to the store's writer at once, so they reach the disk in
//! decision order (the writer commits in the order it receives, many at a time: group
//! commit) and two writes of one job are never reordered. What must wait for the disk —
//! orders to agents (a job is marked running durably before its script is launched) and
//! answers to requests (nothing is acknowledged before it is durable) — goes, with the
//! acknowledgements it waits for, to one completion thread that takes batches first in,
//! first out: orders reach each agent's queue in decision order too.
//!
//! An outcome with neither store writes nor orders (a query) is answered at once.

use std::sync::mpsc::{Receiver, Sender};

use sluice_proto::types::StepId;
use sluice_store::{AuditRecord, Store, StoreError};

use super::accounting::job_keys;
use super::agents::Agents;
use crate::state::Effect;

/// What to do once a batch's writes are on disk (`Err`: the store failed, saying why).
pub type Then = Box<dyn FnOnce(Result<(), String>) + Send>;

/// A batch waiting for the disk: its acknowledgements, then its orders and answer.
struct Pending {
    acks: Vec<Receiver<Result<(), StoreError>>>,
    orders: Vec<Effect>,
    then: Option<Then>,
}

/// Carries out effects: store writes at once, orders and answers once durable.
pub struct Executor {
    store: Store,
    done: Option<Sender<Pending>>,
    completion: Option<std::thread::JoinHandle<()>>,
}

impl Executor {
    /// An executor writing to `store` and sending orders to `agents`.
    pub fn new(store: Store, agents: Agents) -> Self {
        let (done, rx) = std::sync::mpsc::channel::<Pending>();
        let completion = std::thread::Builder::new()
            .name("sluice-effects".into())
            .spawn(move || complete(rx, agents))
            .expect("spawn the completion thread");
        Executor {
            store,
            done: Some(done),
            completion: Some(completion),
        }
    }

    /// Carries out one outcome: `audit` records and the store writes of `effects` are
    /// sent now, in order; the orders of `effects` and `then` follow once those writes
    /// are on disk, after every earlier batch's. The audit records of an outcome that
    /// inserts a submission (its submission recorded) go in the insert's own
    /// transaction: a submission is one commit.
    pub fn carry_out(&self, audit: Vec<AuditRecord>, effects: Vec<Effect>, then: Option<Then>) {
        let mut audit = Some(audit);
        if !effects.iter().any(|e| matches!(e, Effect::Insert { .. })) {
            self.store.audit(audit.take().unwrap_or_default());
        }
        let mut acks = Vec::new();
        let mut orders = Vec::new();
        for e in effects {
            match e {
                Effect::Insert { records, script } => {
                    let first = records.first().map_or(0, |r| r.id);
                    let rows = records
                        .iter()
                        .map(|r| (job_keys(r), serialise(r)))
                        .collect();
                    let script = script.map(|s| s.to_store());
                    let audit = audit.take().unwrap_or_default();
                    acks.push(self.store.insert_audited(first, rows, script, audit));
                }
                Effect::Persist(r) => {
                    acks.push(self.store.put_job(r.id, job_keys(&r), serialise(&*r)))
                }
                Effect::PersistStep(s) => {
                    let n = match s.step {
                        StepId::Batch => u32::MAX - 1,
                        StepId::Extern => u32::MAX - 2,
                        StepId::Number(n) => n,
                        StepId::Part(n, _) => n,
                    };
                    // A requeued job's runs keep their steps apart: a run's steps
                    // under keys of their own (run 0's as they always were); the
                    // parts of a heterogeneous step above those.
                    let part = match s.step {
                        StepId::Part(_, p) => u64::from(p) + 1,
                        _ => 0,
                    };
                    let key = part << 48 | u64::from(s.run) << 32 | u64::from(n);
                    acks.push(self.store.put_step(s.job_id, key, serialise(&s)));
                }
                Effect::Forget(id) => self.store.delete_job(id.0),
                Effect::PersistRun(r) => self.store.put_run(r.id, r.restarts, serialise(&*r)),
                Effect::PersistNode { name, record } => {
                    acks.push(self.store.put_node(&name, record))
                }
                Effect::PersistAccounts(rows) => acks.push(self.store.put_accounts(rows)),
                Effect::PersistReservation { name, record } => {
                    acks.push(self.store.put_reservation(&name, record))
                }
                order @ (Effect::Launch { .. }
                | Effect::AddAgent { .. }
                | Effect::Notify { .. }
                | Effect::Signal { .. }
                | Effect::TerminateStep { .. }
                | Effect::Suspend { .. }
                | Effect::Terminate { .. }
                | Effect::EndRun { .. }
                | Effect::SetTimeLimit { .. }) => orders.push(order),
            }
        }
        if acks.is_empty() && orders.is_empty() {
            if let Some(then) = then {
                then(Ok(()));
            }
            return;
        }
        let pending = Pending { acks, orders, then };
        if let Some(done) = &self.done {
            if let Err(e) = done.send(pending) {
                // The completion thread is gone (it cannot be while this lives).
                if let Some(then) = e.0.then {
                    then(Err("the controller is stopping".into()));
                }
            }
        }
    }

    /// Waits until every batch handed over is done: its writes on disk, its orders
    /// queued to the agents, its answer sent; then stops the completion thread.
    pub fn finish(mut self) {
        self.done.take();
        if let Some(t) = self.completion.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.done.take();
        if let Some(t) = self.completion.take() {
            let _ = t.join();
        }
    }
}

fn serialise<T: serde::Serialize>(record: &T) -> String {
    serde_json::to_string(record).expect("records serialise")
}

/// The completion thread: each batch in turn waits for its writes, then queues its
/// orders and answers.
fn complete(rx: Receiver<Pending>, mut agents: Agents) {
    for p in rx {
        let mut saved = Ok(());
        for ack in p.acks {
            let r = ack.recv().unwrap_or(Err(StoreError::Closed));
            if let Err(e) = r {
                tracing::error!("the state store failed: {e}");
                saved = Err(e.to_string());
            }
        }
        for order in p.orders {
            match order {
                Effect::Notify { command, env } => notify(&command, env),
                order => agents.send(order),
            }
        }
        if let Some(then) = p.then {
            then(saved);
        }
    }
}

/// Runs a site's program (`IdleGpuCommand`) with `env` beside the controller's
/// environment, its input and output discarded; a thread waits for its end, so that it
/// leaves no zombie. One that cannot be started is logged.
fn notify(command: &str, env: Vec<(String, String)>) {
    let started = std::process::Command::new(command)
        .envs(env)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        Ok(mut child) => {
            let command = command.to_string();
            std::thread::spawn(move || match child.wait() {
                Ok(status) if !status.success() => {
                    tracing::warn!("{command} (IdleGpuCommand) ended with {status}")
                }
                Err(e) => tracing::warn!("{command} (IdleGpuCommand): {e}"),
                Ok(_) => {}
            });
        }
        Err(e) => tracing::error!("{command} (IdleGpuCommand) could not be started: {e}"),
    }
}
