//! The controller's loop: the one owner of its state.
//!
//! [`Owner`] holds the [`Controller`] and handles one [`Input`] at a time. What an
//! input leads to comes back as an [`Outcome`]: the effects in the order they were
//! decided, what to answer once they are durable (or, when what the answer stands for
//! is on disk already, once they are handed over), and work to do off the loop (an
//! explanation's simulations, a forecast) whose result comes back as another input.
//! `Owner` does no I/O and reads no clock (`now` is given), so a test drives it with a
//! scripted sequence of inputs and asserts the exact effects ([`super::tests`]); the
//! async [`drive`] feeds it from the channel and hands each outcome, in order, to the
//! [`Executor`].
//!
//! Architecture invariant: nothing but this loop reads or changes the controller's
//! state, and the executor carries out effects in the order the loop decided them.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use sluice_proto::accounts::{AccountsError, AdminLevel, ClusterRecord};
use sluice_proto::error::ApiError;
use sluice_proto::types::{CancelRequest, Cancelled, SubmitReply};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::executor::{Executor, Then};
use super::input::{AuditScope, Change, Input, Reply, Request};
use crate::accounts::Requester;
use crate::state::audit::store_record;
use crate::state::listing::{NodesTouched, Published, Publisher};
use crate::state::{Caller, Controller, Effect};

/// Work to run on a blocking thread, off the loop; what it returns is fed back in.
pub type Offload = Box<dyn FnOnce() -> Input + Send>;

/// What one input leads to.
#[derive(Default)]
pub struct Outcome {
    /// The effects, in the order they were decided.
    pub effects: Vec<Effect>,
    /// Run once every store write of `effects` is on disk and its orders are queued
    /// to the agents: the answer to the request (`Err`: the store failed).
    pub then: Option<Then>,
    /// Run as soon as `effects` are handed to the executor, without waiting for the
    /// disk: the answer to a request whose durable part was written before (an
    /// accepted submission, whose id is already on disk).
    pub answer: Option<Answer>,
    /// Work to do off the loop.
    pub offload: Option<Offload>,
}

/// An answer sent once the loop has handed over its effects.
pub type Answer = Box<dyn FnOnce() + Send>;

impl Outcome {
    fn effects(effects: Vec<Effect>) -> Self {
        Outcome {
            effects,
            ..Default::default()
        }
    }

    /// `effects`, then `reply` gets `value` once they are durable (or the store's
    /// failure, worded by `failed`).
    fn answer<T: Send + 'static>(
        effects: Vec<Effect>,
        reply: Reply<T>,
        value: T,
        failed: impl FnOnce(String) -> T + Send + 'static,
    ) -> Self {
        Outcome {
            effects,
            then: Some(Box::new(move |saved: Result<(), String>| {
                let _ = reply.send(match saved {
                    Ok(()) => value,
                    Err(e) => failed(e),
                });
            })),
            ..Default::default()
        }
    }
}

/// Slurm's wording when the state could not be saved.
fn not_saved(e: String) -> ApiError {
    unreachable_store(&e).unwrap_or_else(|| {
        ApiError::new(
            sluice_proto::error::ErrorCode::Storage,
            format!("Unable to save the state: {e}"),
        )
    })
}

/// A write refused because the state database (PostgreSQL) cannot be reached: to the
/// caller, as Slurm's commands word a controller they cannot reach (a 503, to try
/// again); nothing was acknowledged.
fn unreachable_store(e: &str) -> Option<ApiError> {
    e.starts_with(sluice_store::UNREACHABLE).then(|| {
        ApiError::new(
            sluice_proto::error::ErrorCode::ControllerUnreachable,
            format!("Unable to contact slurm controller ({e})"),
        )
    })
}

/// Sends `value` at once (nothing to make durable).
fn now_answer<T>(reply: Reply<T>, value: T) -> Outcome {
    let _ = reply.send(value);
    Outcome::default()
}

/// How often jobs past `MinJobAge` are forgotten, seconds.
const PURGE_EVERY: i64 = 1;

/// Inputs handled before a due scheduling pass runs even though more are queued.
const MAX_INPUTS_BEFORE_PASS: u32 = 64;

/// Inputs queued behind a submission from which it is part of a burst: its pass waits
/// for the burst to drain (one pass for many jobs rather than one each, whose cost
/// grows with the queue).
const BURST: usize = 4;

/// The owner of the controller's state.
pub struct Owner {
    ctl: Controller,
    /// The loop's own input channel: an acknowledged submission comes back through it.
    inputs: UnboundedSender<Input>,
    /// The TCP address the controller listens on (`sacctmgr show cluster`).
    listen: Option<std::net::SocketAddr>,
    /// Something changed that a scheduling pass should look at.
    pass_due: bool,
    /// Inputs handled since the last pass.
    since_pass: u32,
    /// Inputs queued behind the one being handled (set by the loop).
    waiting: usize,
    /// When jobs past `MinJobAge` were last forgotten.
    purged: i64,
    /// The jobs as listings read them, published after each input and pass.
    listing: Publisher,
}

impl Owner {
    /// The owner of `ctl`; `inputs` is its own channel.
    pub fn new(
        mut ctl: Controller,
        inputs: UnboundedSender<Input>,
        listen: Option<std::net::SocketAddr>,
    ) -> Self {
        let listing = Publisher::new(&mut ctl, super::now());
        Owner {
            listing,
            ctl,
            inputs,
            listen,
            pass_due: true,
            since_pass: 0,
            waiting: 0,
            purged: i64::MIN,
        }
    }

    /// The controller (for tests and start-up).
    pub fn controller(&self) -> &Controller {
        &self.ctl
    }

    /// Where the jobs as listings read them are published.
    pub fn published(&self) -> Published {
        self.listing.published()
    }

    /// How long the loop may wait for an input before a pass is due: until the
    /// scheduler's next wake-up, at most a second.
    pub fn wait(&self, now: i64) -> Duration {
        let secs = self
            .ctl
            .next_wakeup()
            .map(|t| (t - now).clamp(0, 1))
            .unwrap_or(1);
        Duration::from_secs(secs as u64)
    }

    /// Whether a scheduling pass should run now: something changed and no input
    /// waits, or many inputs came in a row.
    pub fn pass_wanted(&self, more_waiting: bool) -> bool {
        self.pass_due && (!more_waiting || self.since_pass >= MAX_INPUTS_BEFORE_PASS)
    }

    /// The audit events recorded since last asked, for the store.
    pub fn take_audit(&mut self) -> Vec<sluice_store::AuditRecord> {
        self.ctl.take_audit().iter().map(store_record).collect()
    }

    /// Tells the owner how many inputs are queued behind the next one.
    pub fn set_waiting(&mut self, waiting: usize) {
        self.waiting = waiting;
    }

    /// Handles one input at `now`, then publishes the jobs as listings read them.
    pub fn handle(&mut self, input: Input, now: i64) -> Outcome {
        let touched = input.nodes_touched();
        let outcome = self.handle_input(input, now);
        self.listing.touch_nodes(&self.ctl, touched);
        self.listing.publish(&mut self.ctl, now);
        outcome
    }

    fn handle_input(&mut self, input: Input, now: i64) -> Outcome {
        self.since_pass += 1;
        match input {
            Input::Request(r) => self.request(r, now),
            Input::Committed {
                prepared,
                jobs,
                reply,
            } => {
                let first = jobs.first().map_or(0, |r| r.id.0);
                if let Some(leader) = jobs.first() {
                    let het = leader.het.is_some();
                    tracing::info!(
                        "{}: JobId={} uid={} accepted{}",
                        submit_rpc(leader.desc.interactive, het),
                        leader.id.0,
                        leader.uid,
                        match jobs.len() {
                            1 => String::new(),
                            n if het => format!(" ({n} components)"),
                            n => format!(" ({n} array tasks)"),
                        }
                    );
                }
                // Like slurmctld, try to start the job at once, so that a job that
                // fits is running by the time its submitter looks (an `srun` gets its
                // allocation without waiting for the next pass) — unless it comes in
                // a burst: then one pass once the burst is handled starts them all.
                let mut effects = self.ctl.accept(jobs, now);
                let mut offload = None;
                if self.waiting >= BURST {
                    self.pass_due = true;
                } else {
                    let pass = self.schedule(now);
                    effects.extend(pass.effects);
                    offload = pass.offload;
                }
                let warnings = prepared.warnings.clone();
                // The id is on disk already (this input comes once the insert is): the
                // submitter gets it as soon as the job is in the queue, without waiting
                // for what this pass writes (its start: the launch waits for that).
                let answer = SubmitReply {
                    job_id: first,
                    warnings,
                };
                Outcome {
                    effects,
                    then: None,
                    answer: Some(Box::new(move || {
                        let _ = reply.send(Ok(answer));
                    })),
                    offload,
                }
            }
            Input::Explained {
                work,
                caller,
                reply,
            } => now_answer(reply, Ok(self.ctl.explain_finish(*work, &caller))),
            Input::Forecast(f) => {
                self.ctl.forecast_made(f, now);
                Outcome::default()
            }
            Input::AgentsChecked {
                answered,
                gone,
                unanswered,
            } => {
                // Nodes an operator resumed take work again once their agent answers.
                let mut effects = self.ctl.agents_answered(&answered, now);
                // Agents that did not answer over TCP: not responding, SlurmdTimeout long.
                self.ctl.agents_unanswered(&unanswered, now);
                // A gone agent's jobs run on: its node waits for it, SlurmdTimeout long.
                for node in gone {
                    self.ctl.agent_silent(&node, now);
                }
                // (Nodes awaited since the start are in no agent's answer.)
                let expiring = self.ctl.silent_due(now);
                effects.extend(self.ctl.silent_expired(now));
                self.listing
                    .touch_nodes(&self.ctl, NodesTouched::Named(expiring));
                self.pass_due |= !effects.is_empty();
                Outcome::effects(effects)
            }
            Input::LaunchRefused { job, run, why } => {
                // The agent is busy re-registering with us; the launch did not happen.
                tracing::warn!("JobId={job}: launch refused ({why}); requeueing");
                self.pass_due = true;
                Outcome::effects(self.ctl.launch_refused(job, run, now))
            }
            Input::Unreachable {
                node,
                job,
                run,
                why,
            } => {
                tracing::warn!(
                    "JobId={job}: launch on {node} failed, its agent unreachable ({why}); \
                     requeueing"
                );
                self.pass_due = true;
                self.ctl.agent_silent(&node, now);
                Outcome::effects(self.ctl.launch_unreachable(&node, job, run, now))
            }
            Input::Tick => {
                self.pass_due = true;
                Outcome::default()
            }
        }
    }

    /// A scheduling pass at `now`: the core's decisions, the idle-reservation notes,
    /// the forecast when the last one no longer holds, and the purge of old jobs.
    pub fn pass(&mut self, now: i64) -> Outcome {
        let outcome = self.schedule(now);
        self.listing.publish(&mut self.ctl, now);
        outcome
    }

    fn schedule(&mut self, now: i64) -> Outcome {
        self.pass_due = false;
        self.since_pass = 0;
        let effects = self.ctl.schedule(now);
        for note in self.ctl.idle_reservation_notes(now) {
            tracing::info!("{note}");
        }
        if now.saturating_sub(self.purged) >= PURGE_EVERY {
            self.purged = now;
            self.ctl.purge(now);
        }
        let copy = super::forecast_arena::copy;
        let offload = self.ctl.forecast_wanted_copying(now, copy).map(|work| {
            Box::new(move || {
                // The scheduler's copy is dropped by now: its pages go back.
                let forecast = work.make();
                super::freed::give_back();
                Input::Forecast(forecast)
            }) as Offload
        });
        Outcome {
            effects,
            offload,
            ..Default::default()
        }
    }

    fn request(&mut self, r: Request, now: i64) -> Outcome {
        let ctl = &mut self.ctl;
        match r {
            Request::Submit {
                desc,
                caller,
                user,
                group,
                reply,
            } => {
                let rpc = submit_rpc(desc.interactive, !desc.het_components.is_empty());
                let mut prepared = match ctl.prepare(*desc, &caller, &user, &group, now) {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::info!("{rpc}: uid={} refused: {e}", caller.uid);
                        return now_answer(reply, Err(e));
                    }
                };
                // The ids are allocated now, the records written; the job enters the
                // queue and its id is returned once they are on disk.
                let jobs = ctl.allocate(&prepared);
                let insert = ctl.inserted(&jobs, prepared.take_script(), now);
                let inputs = self.inputs.clone();
                Outcome {
                    effects: vec![insert],
                    then: Some(Box::new(move |saved: Result<(), String>| match saved {
                        Ok(()) => {
                            let committed = Input::Committed {
                                prepared: Box::new(prepared),
                                jobs,
                                reply,
                            };
                            if let Err(e) = inputs.send(committed) {
                                if let Input::Committed { reply, .. } = e.0 {
                                    let _ = reply.send(Err(ApiError::new(
                                        sluice_proto::error::ErrorCode::ShuttingDown,
                                        "Slurm controller is shutting down",
                                    )));
                                }
                            }
                        }
                        Err(e) => {
                            tracing::error!("a submission could not be saved: {e}");
                            let _ = reply.send(Err(unreachable_store(&e).unwrap_or_else(|| {
                                ApiError::new(
                                    sluice_proto::error::ErrorCode::Storage,
                                    format!("Unable to save the job: {e}"),
                                )
                            })));
                        }
                    })),
                    ..Default::default()
                }
            }
            Request::JobDevices { id, node, reply } => {
                let files = ctl.job(id).map(|_| ctl.job_devices_on(id, &node));
                now_answer(reply, files)
            }
            Request::JobUsage { id, hidden, reply } => now_answer(reply, ctl.job_usage(id, hidden)),
            Request::Steps { hidden, reply } => now_answer(reply, ctl.running_steps(hidden, now)),
            Request::ServiceReport {
                report,
                caller,
                reply,
            } => match ctl.service_report(&report, &caller, now) {
                Ok(effects) => Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e))),
                Err(e) => now_answer(reply, Err(e)),
            },
            Request::UsageReport {
                report,
                caller,
                reply,
            } => match ctl.usage_report(&report, &caller, now) {
                Ok(effects) => Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e))),
                Err(e) => now_answer(reply, Err(e)),
            },
            Request::Explain {
                id,
                task,
                suggest,
                caller,
                reply,
            } => match ctl.explain_begin(id, task, &caller, now, suggest) {
                Err(e) => now_answer(reply, Err(e)),
                Ok(work) => Outcome {
                    // The simulations run on a copy, off the loop.
                    offload: Some(Box::new(move || Input::Explained {
                        work: Box::new(work.compute()),
                        caller,
                        reply,
                    })),
                    ..Default::default()
                },
            },
            Request::Change {
                change,
                caller,
                reply,
            } => {
                let what = change.describe();
                let result = match change {
                    Change::Hold { id, tasks, user } => {
                        ctl.hold_verb(id, tasks.as_deref(), true, user, &caller, now)
                    }
                    Change::Release { id, tasks } => {
                        ctl.hold_verb(id, tasks.as_deref(), false, false, &caller, now)
                    }
                    Change::Requeue { id, tasks, flags } => {
                        ctl.requeue_tasks(id, tasks.as_deref(), flags, &caller, now)
                    }
                    Change::Suspend { id, suspend, user } => {
                        // Slurm's `validate_operator`: root, SlurmUser, or AdminLevel
                        // Operator and above.
                        let who = Requester {
                            name: user,
                            superuser: caller.admin,
                        };
                        let operator = ctl.accounts().admin_level(&who) >= AdminLevel::Operator;
                        let caller = Caller {
                            admin: operator,
                            ..caller.clone()
                        };
                        ctl.suspend(id, suspend, &caller, now).map(alone)
                    }
                    Change::UpdateJob { id, update } => {
                        let tasks = match (&update.tasks[..], &update.task) {
                            ([], t) => t.as_ref().map(std::slice::from_ref),
                            (many, _) => Some(many),
                        };
                        ctl.update_job_verb(id, tasks, &update.changes, &caller, now)
                    }
                    Change::UpdateNodes(u) => ctl
                        .update_node(&u.nodes, &u.state, u.reason.as_deref(), &caller, now)
                        .map(alone),
                    Change::UpdatePartition(u) => ctl.update_partition(&u, &caller).map(alone),
                };
                match result {
                    Ok((effects, tasks)) => {
                        self.pass_due = true;
                        Outcome::answer(effects, reply, Ok(tasks), |e| Err(not_saved(e)))
                    }
                    Err(e) => {
                        tracing::info!("{what} from uid={} refused: {e}", caller.uid);
                        now_answer(reply, Err(e))
                    }
                }
            }
            Request::Cancel { req, caller, reply } => match ctl.cancel(&req, &caller, now) {
                Ok(done) => {
                    self.pass_due = true;
                    let answer = Cancelled {
                        refused: done.refused,
                    };
                    Outcome::answer(done.effects, reply, Ok(answer), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!(
                        "{} from uid={} refused: {e}",
                        describe_cancel(&req),
                        caller.uid
                    );
                    now_answer(reply, Err(e))
                }
            },
            Request::StartStep {
                id,
                req,
                caller,
                reply,
            } => match ctl.start_step(id, &req, &caller, now) {
                Ok((plan, effects)) => {
                    Outcome::answer(effects, reply, Ok(plan), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!("step of JobId={id} from uid={} refused: {e}", caller.uid);
                    now_answer(reply, Err(e))
                }
            },
            Request::EndStep {
                id,
                step,
                exit_code,
                signal,
                caller,
                reply,
            } => match ctl.end_step(id, step, exit_code, signal, &caller, now) {
                Ok(effects) => Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e))),
                Err(e) => {
                    tracing::info!(
                        "end of StepId={id}.{step} from uid={} refused: {e}",
                        caller.uid
                    );
                    now_answer(reply, Err(e))
                }
            },
            Request::Reconfigure {
                conf,
                conf_hash,
                caller,
                reply,
            } => match ctl.reconfigure_partitions(conf, conf_hash, &caller, now) {
                Ok(effects) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!("reconfigure from uid={} refused: {e}", caller.uid);
                    now_answer(reply, Err(e))
                }
            },
            Request::CreateNodes {
                line,
                conf,
                caller,
                reply,
            } => match ctl.create_nodes(&line, &conf, &caller, now) {
                Ok(effects) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!("create node from uid={} refused: {e}", caller.uid);
                    now_answer(reply, Err(e))
                }
            },
            Request::DeleteNodes {
                names,
                caller,
                reply,
            } => match ctl.delete_nodes(&names, &caller, now) {
                Ok((effects, outcome)) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(outcome), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!("delete node from uid={} refused: {e}", caller.uid);
                    now_answer(reply, Err(e))
                }
            },
            Request::StepEndedOn {
                report,
                caller,
                reply,
            } => match ctl.step_ended_on(&report, &caller, now) {
                Ok(effects) => Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e))),
                Err(e) => {
                    tracing::info!(
                        "end of StepId={}.{} on {} from uid={} refused: {e}",
                        report.job,
                        report.step,
                        report.node,
                        caller.uid
                    );
                    now_answer(reply, Err(e))
                }
            },
            Request::Complete {
                id,
                exit_code,
                signal,
                caller,
                reply,
            } => match ctl.complete_allocation(id, exit_code, signal, &caller, now) {
                Ok(effects) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!(
                        "completion of JobId={id} from uid={} refused: {e}",
                        caller.uid
                    );
                    now_answer(reply, Err(e))
                }
            },
            Request::Nodes(reply) => now_answer(reply, ctl.nodes()),
            Request::WillRun {
                desc,
                caller,
                user,
                group,
                reply,
            } => now_answer(reply, ctl.will_run(*desc, &caller, &user, &group, now)),
            Request::Partitions(reply) => now_answer(reply, ctl.partitions()),
            Request::Metrics { sluice, reply } => {
                now_answer(reply, ctl.metrics_figures(sluice, now))
            }
            Request::Config(reply) => now_answer(reply, ctl.config()),
            Request::Diag(reply) => now_answer(reply, ctl.diag_report(now)),
            Request::DiagReset { caller, reply } => {
                let r = if caller.admin {
                    ctl.reset_diag(now);
                    Ok(())
                } else {
                    Err(ApiError::access_denied())
                };
                now_answer(reply, r)
            }
            Request::AgentRegistered {
                registration,
                dynamic,
                reply,
            } => match ctl.register_dynamic_agent(
                &registration,
                dynamic
                    .as_ref()
                    .map(|d| d.as_deref().map(|(line, conf)| (line.as_str(), conf))),
                now,
            ) {
                Ok(effects) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e)))
                }
                Err(e) => now_answer(reply, Err(e)),
            },
            Request::RunGone {
                report,
                caller,
                reply,
            } => match ctl.run_gone(&report, &caller, now) {
                Ok(effects) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(()), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!(
                        "end of JobId={} (run {:?}) on {} from uid={} refused: {e}",
                        report.job_id,
                        report.run,
                        report.node,
                        caller.uid
                    );
                    now_answer(reply, Err(e))
                }
            },
            Request::AgentEnded { report, reply } => {
                let effects = ctl.job_ended(&report, now);
                self.pass_due = true;
                Outcome::answer(effects, reply, (), |_| ())
            }
            Request::AgentsToPing(reply) => now_answer(reply, ctl.agents_to_ping(now)),
            Request::AgentHeartbeat { node, from, reply } => {
                let (counted, effects) = ctl.agent_heartbeat(&node, from.as_deref(), now);
                let answer = (counted, ctl.heartbeat_secs());
                if effects.is_empty() {
                    return now_answer(reply, answer);
                }
                self.pass_due = true;
                Outcome::answer(effects, reply, answer, move |_| answer)
            }
            Request::Accounts(reply) => {
                let cluster = ClusterRecord {
                    name: ctl.conf.cluster_name.clone(),
                    control_host: self.listen.map(|a| a.ip().to_string()).unwrap_or_default(),
                    control_port: self.listen.map(|a| a.port()).unwrap_or(0),
                    rpc: 0,
                };
                now_answer(reply, ctl.accounts().snapshot(cluster))
            }
            Request::ChangeAccounts {
                who,
                request,
                commit,
                reply,
            } => match ctl.change_accounts(&who, &request, commit) {
                Ok((outcome, effects)) => {
                    self.pass_due |= !effects.is_empty();
                    Outcome::answer(effects, reply, Ok(outcome), |e| {
                        Err(AccountsError::Other(format!(
                            "Unable to save the change: {e}"
                        )))
                    })
                }
                Err(e) => {
                    tracing::info!("sacctmgr change from {} refused: {e}", who.name);
                    now_answer(reply, Err(e))
                }
            },
            Request::Priority(reply) => now_answer(reply, ctl.priority_report(now)),
            Request::Shares(reply) => now_answer(reply, ctl.shares_report(now)),
            Request::Reservations(reply) => now_answer(reply, ctl.reservation_records(now)),
            Request::ChangeReservation {
                req,
                uids,
                caller,
                reply,
            } => match ctl.change_reservation(&req, &uids, &caller, now) {
                Ok((name, effects)) => {
                    self.pass_due = true;
                    Outcome::answer(effects, reply, Ok(name), |e| Err(not_saved(e)))
                }
                Err(e) => {
                    tracing::info!("reservation change from uid={} refused: {e}", caller.uid);
                    now_answer(reply, Err(e))
                }
            },
            Request::AuditScope {
                who,
                task,
                node,
                reply,
            } => {
                let scope = AuditScope {
                    private: ctl.private_data(),
                    level: ctl.accounts().admin_level(&who),
                    task_record: task.map(|(job, task)| ctl.task_record(job, task)),
                    node_gpus: node.map(|n| ctl.node_gpu_count(&n)),
                };
                now_answer(reply, scope)
            }
        }
    }
}

impl Change {
    /// What the change is, with its ids, for the log.
    fn describe(&self) -> String {
        match self {
            Change::Hold { id, .. } => format!("hold of JobId={id}"),
            Change::Release { id, .. } => format!("release of JobId={id}"),
            Change::Requeue { id, .. } => format!("requeue of JobId={id}"),
            Change::Suspend {
                id, suspend: true, ..
            } => format!("suspend of JobId={id}"),
            Change::Suspend {
                id, suspend: false, ..
            } => format!("resume of JobId={id}"),
            Change::UpdateJob { id, .. } => format!("update of JobId={id}"),
            Change::UpdateNodes(u) => format!("update of NodeName={}", u.nodes),
            Change::UpdatePartition(u) => format!("update of PartitionName={}", u.name),
        }
    }
}

/// A cancel in a few words, for the log.
fn describe_cancel(req: &CancelRequest) -> String {
    let ids: Vec<String> = req
        .jobs
        .iter()
        .map(|(j, t)| t.map_or(j.to_string(), |t| format!("{j}_{t}")))
        .chain(
            req.steps
                .iter()
                .map(|(j, t, s)| t.map_or(format!("{j}.{s}"), |t| format!("{j}_{t}.{s}"))),
        )
        .collect();
    format!("cancel of JobId={}", ids.join(","))
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// How long after start the loop lets go of its binary's pages a second time at the
/// latest, should an awaited agent not have registered by then.
const SETTLE_AT_MOST: Duration = Duration::from_secs(60);

/// Runs the loop: takes inputs from `inputs` until [`Input`]s stop coming (every sender
/// dropped) or `stop` completes, handing every outcome to `exec` in order. Returns the
/// owner, its inputs drained, for the last flush.
pub async fn drive(
    mut owner: Owner,
    mut inputs: UnboundedReceiver<Input>,
    exec: &Executor,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Owner {
    // When the next pass is due at the latest: kept across inputs, so that a steady
    // stream of requests does not put off the passes time limits and wake-ups need.
    let mut due = tokio::time::Instant::now() + owner.wait(unix_now());
    // Whether the agents awaited at start have all registered (or been given up), or a
    // minute has passed (a node whose agent never comes, under `SlurmdTimeout=0`), and
    // the code their registrations ran been let go (`start_pages`).
    let mut settled = false;
    let started = tokio::time::Instant::now();
    loop {
        let input = tokio::select! {
            biased;
            _ = stop.changed() => break,
            _ = tokio::time::sleep_until(due) => Input::Tick,
            i = inputs.recv() => match i {
                Some(i) => i,
                None => break,
            },
        };
        let tick = matches!(input, Input::Tick);
        owner.set_waiting(inputs.len());
        step(&mut owner, input, exec);
        if tick || owner.pass_wanted(!inputs.is_empty()) {
            let now = unix_now();
            let outcome = guarded(&mut owner, |o| o.pass(now));
            carry_out(&mut owner, outcome, exec);
            due = tokio::time::Instant::now() + owner.wait(unix_now());
        } else {
            // A change may have brought the scheduler's next wake-up forward.
            due = due.min(tokio::time::Instant::now() + owner.wait(unix_now()));
        }
        if !settled && (!owner.controller().agents_awaited() || started.elapsed() >= SETTLE_AT_MOST)
        {
            settled = true;
            let bytes = super::start_pages::let_go(super::start_pages::Scope::Executable);
            tracing::debug!(
                "slurmctld: every awaited agent registered; {} MiB of the binary let go",
                bytes >> 20
            );
        }
    }
    // Stopping: what is already queued is still handled (answers, agents' reports),
    // then the audit trail is flushed.
    inputs.close();
    while let Ok(input) = inputs.try_recv() {
        step(&mut owner, input, exec);
    }
    let audit = owner.take_audit();
    exec.carry_out(audit, Vec::new(), None);
    owner
}

/// Handles one input and carries out what it decided.
fn step(owner: &mut Owner, input: Input, exec: &Executor) {
    let now = unix_now();
    let outcome = guarded(owner, |o| o.handle(input, now));
    carry_out(owner, outcome, exec);
}

/// Runs `f` on the owner; a panic in it (a bug) is logged and answers the request it
/// came from with an error (its reply channel is dropped), and the loop goes on.
fn guarded(owner: &mut Owner, f: impl FnOnce(&mut Owner) -> Outcome) -> Outcome {
    match std::panic::catch_unwind(AssertUnwindSafe(|| f(owner))) {
        Ok(o) => o,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!("the controller could not handle an input ({what}); going on");
            Outcome::default()
        }
    }
}

fn carry_out(owner: &mut Owner, outcome: Outcome, exec: &Executor) {
    let audit = owner.take_audit();
    if let Some(work) = outcome.offload {
        let inputs = owner.inputs.clone();
        tokio::task::spawn_blocking(move || {
            let _ = inputs.send(work());
        });
    }
    exec.carry_out(audit, outcome.effects, outcome.then);
    if let Some(answer) = outcome.answer {
        answer();
    }
}

/// A change's effects with no lines for an array's tasks.
fn alone(effects: Vec<Effect>) -> (Vec<Effect>, Vec<String>) {
    (effects, Vec::new())
}

/// The name slurmctld's log gives a submission of this kind: a batch job or an
/// allocation (`srun`, `salloc`), heterogeneous or not.
fn submit_rpc(interactive: bool, het: bool) -> &'static str {
    match (interactive, het) {
        (false, false) => "_slurm_rpc_submit_batch_job",
        (false, true) => "_slurm_rpc_submit_batch_het_job",
        (true, false) => "_slurm_rpc_allocate_resources",
        (true, true) => "_slurm_rpc_allocate_het_job",
    }
}
