//! The replay's audit trail (`sluice sim --audit-out FILE`): the scheduling decisions
//! of a replay as the live controller records them ([`sluice_proto::audit`]), so that
//! the same tools read both. `sluice audit --json` and [`JsonLines`] write the same
//! lines: one [`AuditEvent`] per line, in time order, `seq` counting from 1.
//!
//! What is recorded, and how fields without meaning here are filled:
//!
//! - `submitted`: `user` is the trace's user id as a decimal string (a trace has no
//!   names); `account` is the account fair-share and limits charge (`--accounts`, else
//!   `g<gid>`); `qos` is `normal`, the controller's default (the simulator has no QOS).
//! - `started`: the core's pass, the job's priority, its partition, the advance
//!   reservation it runs in, and its nodes. `rank` is `null`, as the controller writes
//!   it when it has none: the core has no rank helper, and the controller's count lives
//!   in the controller. Each node lists the GPU indices the core's start decision
//!   names (those used whole, or those its shards come from), as the controller's
//!   trail does; device files are empty (a trace names none).
//! - `preempting`/`preempted`: the core's preemption decisions, the rule named as the
//!   controller names it (`partition_prio` with tiers; `qos` with QOS `normal`;
//!   `cohort_reclaim` with the accounts).
//! - `requeued`: a `REQUEUE` victim at the end of its grace (run kept as `PREEMPTED`).
//! - `ended`: `COMPLETED` (exit 0:0), `TIMEOUT` (0:0, as the controller records an end
//!   it decides at the time limit) or, for a `CANCEL` victim, `PREEMPTED` (0:9).
//! - Not recorded: `planned` and `pending` reason changes. The controller finds them by
//!   looking at every pending job once a second; a replay would do that after every
//!   event, a walk of the whole queue each time, which makes large replays quadratic.
//!
//! Events are built only when a sink is given ([`crate::replay::run_audited`]); a
//! replay without one does no audit work.

use std::collections::HashMap;
use std::io::{self, Write};

use sluice_core::{Allocation, Cluster, JobId, Pass, PreemptMode, PreemptType, Secs, Time};
use sluice_proto::audit::{AuditEvent, AuditWhat, JobRef, NodeDevices, PreemptRule, RequeueCause};
use sluice_proto::types::JobState;

use crate::setup::SimJob;

/// Where a replay's audit events go, in time order.
pub trait AuditSink {
    /// Takes one event (its `seq` already set).
    fn record(&mut self, event: AuditEvent);
}

impl AuditSink for Vec<AuditEvent> {
    fn record(&mut self, event: AuditEvent) {
        self.push(event);
    }
}

/// Writes events as JSON lines, exactly as `sluice audit --json` prints them. Nothing
/// is kept in memory but the writer's buffer; wrap a file in a `BufWriter`.
pub struct JsonLines<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> JsonLines<W> {
    /// Writes to `out`.
    pub fn new(out: W) -> Self {
        JsonLines { out, error: None }
    }

    /// Flushes and hands back the writer.
    ///
    /// Errors: the first write error met (later events were dropped), or the flush's.
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> AuditSink for JsonLines<W> {
    fn record(&mut self, event: AuditEvent) {
        if self.error.is_some() {
            return;
        }
        let written = serde_json::to_writer(&mut self.out, &event)
            .map_err(io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        if let Err(e) = written {
            self.error = Some(e);
        }
    }
}

/// The replay's side of the trail: numbers events, and remembers what later events
/// need (runs, nodes held, preemptors).
pub(crate) struct Auditor<'a> {
    sink: &'a mut dyn AuditSink,
    seq: u64,
    /// Each job's run (restart count), by position in the replay's job list.
    runs: Vec<u32>,
    /// What running jobs hold.
    held: HashMap<JobId, Vec<NodeDevices>>,
    /// Victims in their grace, with their preemptor.
    preempted_by: HashMap<JobId, JobRef>,
    /// The current pass's events: a preemptor's event lists all its victims of the
    /// pass, so they are written when the pass's decisions are all seen.
    pass: Vec<AuditEvent>,
}

/// Event `what` of `job` at `time`, numbered when written.
fn event(time: Time, job: &SimJob, what: AuditWhat) -> AuditEvent {
    AuditEvent {
        seq: 0,
        time,
        job_id: job.spec.id.0,
        uid: Some(job.spec.user),
        what,
    }
}

impl<'a> Auditor<'a> {
    pub(crate) fn new(sink: &'a mut dyn AuditSink, jobs: usize) -> Self {
        Auditor {
            sink,
            seq: 0,
            runs: vec![0; jobs],
            held: HashMap::new(),
            preempted_by: HashMap::new(),
            pass: Vec::new(),
        }
    }

    fn write(&mut self, time: Time, job: &SimJob, what: AuditWhat) {
        self.seq += 1;
        self.sink.record(AuditEvent {
            seq: self.seq,
            ..event(time, job, what)
        });
    }

    /// Writes the events of the pass just carried out.
    pub(crate) fn end_pass(&mut self) {
        for mut e in std::mem::take(&mut self.pass) {
            self.seq += 1;
            e.seq = self.seq;
            self.sink.record(e);
        }
    }

    /// Submitted, charging `account`.
    pub(crate) fn submitted(&mut self, t: Time, job: &SimJob, cluster: &Cluster, account: String) {
        let what = AuditWhat::Submitted {
            user: Some(job.spec.user.to_string()),
            partition: cluster.partition(job.spec.partition).name.clone(),
            account,
            qos: "normal".into(),
        };
        self.write(t, job, what);
    }

    /// Started by `pass` on `alloc`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn started(
        &mut self,
        t: Time,
        idx: usize,
        job: &SimJob,
        cluster: &Cluster,
        pass: Pass,
        priority: u32,
        reservation: Option<&str>,
        alloc: &Allocation,
    ) {
        let nodes: Vec<NodeDevices> = alloc
            .nodes
            .iter()
            .map(|a| NodeDevices {
                node: cluster.node(a.node).name.clone(),
                gpus: a.gpus_touched(),
                files: Vec::new(),
            })
            .collect();
        self.held.insert(job.spec.id, nodes.clone());
        self.pass.push(event(
            t,
            job,
            AuditWhat::Started {
                run: self.runs[idx],
                pass: pass.as_str().into(),
                priority,
                rank: None,
                partition: cluster.partition(job.spec.partition).name.clone(),
                reservation: reservation.map(str::to_string),
                user: Some(job.spec.user.to_string()),
                nodes,
            },
        ));
    }

    /// `victim` is preempted for `by` in `mode` with `grace` seconds; `reclaim`: `by`
    /// takes back its cohort's quota; accounts as `submitted` named them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn preempted(
        &mut self,
        t: Time,
        cluster: &Cluster,
        (victim, victim_account): (&SimJob, String),
        (by, by_account): (&SimJob, String),
        mode: PreemptMode,
        grace: Secs,
        reclaim: bool,
    ) {
        let rule = if reclaim {
            PreemptRule {
                rule: "cohort_reclaim".into(),
                winner: format!("account {by_account}"),
                loser: format!("account {victim_account} (borrowing)"),
            }
        } else if cluster.preempt.kind == PreemptType::Qos {
            PreemptRule {
                rule: "qos".into(),
                winner: "QOS normal".into(),
                loser: "QOS normal".into(),
            }
        } else {
            let part = |j: &SimJob| {
                let p = cluster.partition(j.spec.partition);
                format!("partition {} (PriorityTier={})", p.name, p.priority_tier)
            };
            PreemptRule {
                rule: "partition_prio".into(),
                winner: part(by),
                loser: part(victim),
            }
        };
        let by_ref = JobRef {
            job: Some(by.spec.id.0),
            uid: Some(by.spec.user),
        };
        let victim_ref = JobRef {
            job: Some(victim.spec.id.0),
            uid: Some(victim.spec.user),
        };
        self.preempted_by.insert(victim.spec.id, by_ref.clone());
        let earlier =
            self.pass.iter_mut().rev().find(|e| {
                e.job_id == by.spec.id.0 && matches!(e.what, AuditWhat::Preempting { .. })
            });
        match earlier {
            Some(AuditEvent {
                what: AuditWhat::Preempting { victims, .. },
                ..
            }) => victims.push(victim_ref),
            _ => self.pass.push(event(
                t,
                by,
                AuditWhat::Preempting {
                    victims: vec![victim_ref],
                    rule: rule.clone(),
                },
            )),
        }
        self.pass.push(event(
            t,
            victim,
            AuditWhat::Preempted {
                by: by_ref,
                rule,
                mode: mode.as_str().into(),
                grace,
            },
        ));
    }

    /// A preempted run ended at the end of its grace: requeued, or (`CANCEL`) ended as
    /// `PREEMPTED`.
    pub(crate) fn preempt_done(&mut self, t: Time, idx: usize, job: &SimJob, requeue: bool) {
        let released = self.held.remove(&job.spec.id).unwrap_or_default();
        let by = self.preempted_by.remove(&job.spec.id).unwrap_or_default();
        let run = self.runs[idx];
        let what = if requeue {
            self.runs[idx] += 1;
            AuditWhat::Requeued {
                run,
                ended_as: JobState::Preempted,
                cause: RequeueCause::Preempted { by },
                released,
            }
        } else {
            AuditWhat::Ended {
                run,
                state: JobState::Preempted,
                exit_code: 0,
                signal: 9,
                released,
            }
        };
        self.write(t, job, what);
    }

    /// Ended: completed, or killed at its time limit.
    pub(crate) fn ended(&mut self, t: Time, idx: usize, job: &SimJob, timed_out: bool) {
        let what = AuditWhat::Ended {
            run: self.runs[idx],
            state: if timed_out {
                JobState::Timeout
            } else {
                JobState::Completed
            },
            exit_code: 0,
            signal: 0,
            released: self.held.remove(&job.spec.id).unwrap_or_default(),
        };
        self.write(t, job, what);
    }
}
