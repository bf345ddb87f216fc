//! The audit trail: every decision about a job, recorded with its cause.
//!
//! The controller's hooks (one line each where a decision is carried out) append
//! [`AuditEvent`]s to a buffer that the server hands to the store after each change
//! ([`Controller::take_audit`]); nothing here waits for a disk. What is recorded:
//!
//! - submitted (by its owner), held and released (by whom, an operator's hold or not),
//!   cancelled (by whom, in which state), requeued (by whom, preempted by which job, or
//!   its node failed, with what the run let go of);
//! - started: the pass (`main`, `backfill`, `reservation`, `preempt`), the priority,
//!   the rank among the jobs queued in its partition when the pass began, and per node
//!   the GPU indices and their device files;
//! - preempted: by which job, under which rule (`partition_prio`, `qos`,
//!   `cohort_reclaim`), in which mode, with what grace; and on the preemptor's side,
//!   which victims;
//! - ended: state, exit code, what was let go of;
//! - pending reasons and planned starts, by a sweep after the first pass of each second
//!   ([`Controller::audit_sweep`]): a reason is recorded when it changes, a planned
//!   start when the plan first gives one or moves it. The plan is the core's (the
//!   last backfill pass's reservation, what Slurm's `squeue --start` shows), not the
//!   controller's forecast that `explain` and Sluice's `squeue --start` show. A change that is undone within the
//!   same second is not recorded, and a change is stamped with the second of the sweep
//!   that saw it (at most one second late): the cost is one look at each pending job
//!   per second, not per pass.
//!
//! The rank mirrors the core's queue order (partition tier, priority, then the order
//! jobs entered the queue, which the controller counts as it hands jobs to the core).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use sluice_conf::gres_conf::GresDevice;
use sluice_core::{Decision, JobId, PendingReason, PreemptMode, PreemptType};
use sluice_proto::audit::{AuditEvent, AuditWhat, JobRef, NodeDevices, PreemptRule, RequeueCause};
use sluice_proto::types::JobState;
use sluice_store::{AuditRecord, HoldChange};

use super::{Caller, Controller, Job, Reason};

/// What the sweep last saw of a pending job.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// Its reason; `None`: not known yet (a job restored after a restart, learnt
    /// silently by the first sweep). Reasons are fixed texts, never copied.
    reason: Option<&'static str>,
    /// Its last planned start recorded.
    plan: Option<i64>,
    /// The plan is known (restored jobs' plans are learnt silently).
    plan_known: bool,
    /// The sweep that saw it last.
    sweep: u64,
}

/// The audit trail's state in the controller.
#[derive(Debug, Default)]
pub(super) struct AuditBook {
    /// Recorded, not yet handed to the store.
    events: Vec<AuditEvent>,
    /// Order in which queued jobs entered the core's queue.
    queued: BTreeMap<JobId, u64>,
    next_queued: u64,
    /// Priority and rank of the jobs the current pass starts.
    ranks: BTreeMap<JobId, (u32, u32)>,
    /// Where the current pass's events begin in `events`.
    pass_mark: usize,
    /// Pending jobs as the last sweep saw them.
    seen: BTreeMap<JobId, Seen>,
    sweeps: u64,
    last_sweep: Option<i64>,
    /// Victims in their grace, with their preemptor (the cause of their requeue).
    preempted_by: BTreeMap<JobId, JobRef>,
    /// A job whose node failed, being requeued, and what its run ended as for
    /// `sacct -D`: `NODE_FAIL` when the run was lost with its node, `REQUEUED` when it
    /// never started (its launch did not reach the agent).
    pub(super) failing: Option<(JobId, JobState)>,
    /// The runs that were running when the cluster last stopped cleanly (`sluice up`
    /// stopping, its agents ending them): lost with their node at this start, they are
    /// requeued for that stop ([`RequeueCause::Shutdown`]), not a node failure. Empty
    /// after a crash.
    pub(super) stopped: BTreeSet<(JobId, u32)>,
    /// Events handed to the store since the controller started, by kind (the metric
    /// `sluice_audit_events_total`).
    pub(super) counts: BTreeMap<&'static str, u64>,
    /// Submissions whose insert is not known durable yet, with the kinds of the events
    /// recorded with it: counted once their jobs are accepted (an insert that fails
    /// takes its records with it, and nothing is counted).
    pub(super) inserting: BTreeMap<JobId, Vec<&'static str>>,
}

impl AuditBook {
    pub(super) fn push(&mut self, time: i64, r: &Job, what: AuditWhat) {
        self.events.push(AuditEvent {
            seq: 0,
            time,
            job_id: r.id.0,
            uid: Some(r.uid),
            what,
        });
    }
}

/// The store's record of an event: its kind and detail, and the device holds it takes
/// (a start) or ends (an end, a requeue).
pub fn store_record(e: &AuditEvent) -> AuditRecord {
    let holds = match &e.what {
        AuditWhat::Started { run, nodes, .. } => HoldChange::Take {
            run: *run,
            devices: nodes
                .iter()
                .flat_map(|n| {
                    let gpus: Vec<Option<u32>> = if n.gpus.is_empty() {
                        vec![None]
                    } else {
                        n.gpus.iter().map(|g| Some(*g)).collect()
                    };
                    gpus.into_iter().map(move |g| (n.node.clone(), g))
                })
                .collect(),
        },
        AuditWhat::Ended { run, .. } | AuditWhat::Requeued { run, .. } => {
            HoldChange::Release { run: *run }
        }
        _ => HoldChange::None,
    };
    AuditRecord {
        time: e.time,
        job_id: e.job_id,
        // Recorded events always name their owner (only served ones are redacted).
        uid: e.uid.unwrap_or_default(),
        kind: e.what.kind().to_string(),
        detail: e.what.detail_json(),
        holds,
    }
}

/// The device files of GPUs `gpus` among a node's `devices` (GPU indices count the
/// node's `gpu` devices in order, as the job's environment does).
fn gpu_files(devices: &[GresDevice], gpus: &[u32]) -> Vec<String> {
    let mut out = Vec::new();
    let mut index = 0u64;
    for d in devices.iter().filter(|d| d.name == "gpu") {
        let range = index..index + d.count;
        if gpus.iter().any(|g| range.contains(&u64::from(*g))) {
            for f in &d.files {
                if !out.contains(f) {
                    out.push(f.clone());
                }
            }
        }
        index += d.count;
    }
    out
}

impl Controller {
    /// The events recorded since the last call, oldest first: for the store.
    pub fn take_audit(&mut self) -> Vec<AuditEvent> {
        self.audit.pass_mark = 0;
        let book = &mut self.audit;
        for e in &book.events {
            match book.inserting.get_mut(&JobId(e.job_id)) {
                Some(kinds) => kinds.push(e.what.kind()),
                None => *book.counts.entry(e.what.kind()).or_default() += 1,
            }
        }
        std::mem::take(&mut self.audit.events)
    }

    /// What job `r` holds, per node: GPUs and their device files.
    fn devices_of(&self, r: &Job) -> Vec<NodeDevices> {
        r.node_ids()
            .enumerate()
            .map(|(i, node)| {
                let gpus = r.gpus_on_node(i);
                let files = self
                    .conf
                    .gres_devices
                    .get(node.index())
                    .map(|d| gpu_files(d, &gpus))
                    .unwrap_or_default();
                NodeDevices {
                    node: self.conf.cluster.node(node).name.clone(),
                    gpus,
                    files,
                }
            })
            .collect()
    }

    fn job_ref(&self, id: JobId) -> JobRef {
        JobRef {
            job: Some(id.0),
            uid: self.jobs.get(&id).map(|r| r.uid),
        }
    }

    /// How many GPUs node `name` is configured with (0 for a node without any); `None`
    /// for a node not in the configuration.
    pub fn node_gpu_count(&self, name: &str) -> Option<u32> {
        let node = self.conf.node_id(name)?;
        let capacity = &self.conf.cluster.node(node).capacity;
        Some(self.gpu_slot.map_or(0, |slot| capacity.gres[slot]))
    }

    /// Job `id`'s submission is durable: the events recorded with it count.
    pub(super) fn audit_inserted(&mut self, id: JobId) {
        for kind in self.audit.inserting.remove(&id).unwrap_or_default() {
            *self.audit.counts.entry(kind).or_default() += 1;
        }
    }

    /// A job restored after a restart: its reason and plan are learnt silently.
    pub(super) fn audit_restored(&mut self, id: JobId) {
        self.audit.seen.insert(id, Seen::default());
    }

    /// Submitted by its owner.
    pub(super) fn audit_submitted(&mut self, r: &Job, now: i64) {
        self.audit.inserting.insert(r.id, Vec::new());
        let what = AuditWhat::Submitted {
            user: Some(r.user.to_string()),
            partition: r.partition.to_string(),
            account: r.account.to_string(),
            qos: r.qos.to_string(),
        };
        self.audit.push(now, r, what);
        if let Some(hold) = &r.hold {
            // `sbatch --hold`: held by its owner from the start.
            let what = AuditWhat::Held {
                by: Some(r.uid),
                admin: !hold.owners(),
            };
            self.audit.push(now, r, what);
        }
    }

    /// Held (`hold`) or released by `caller`; `admin`: an operator's hold.
    pub(super) fn audit_hold(
        &mut self,
        id: JobId,
        hold: bool,
        admin: bool,
        caller: &Caller,
        now: i64,
    ) {
        let Some(r) = self.jobs.get(&id) else { return };
        let what = if hold {
            AuditWhat::Held {
                by: Some(caller.uid),
                admin,
            }
        } else {
            AuditWhat::Released {
                by: Some(caller.uid),
            }
        };
        self.audit.push(now, r, what);
    }

    /// Changed by `scontrol update` (`changes` as the command named them).
    pub(super) fn audit_updated(
        &mut self,
        id: JobId,
        changes: &[(String, String)],
        by: u32,
        now: i64,
    ) {
        let Some(r) = self.jobs.get(&id) else { return };
        let changes = changes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let what = AuditWhat::Updated {
            by: Some(by),
            changes,
        };
        self.audit.push(now, r, what);
    }

    /// The cluster last stopped cleanly with its agents (`sluice up` stopping), which
    /// ended the runs still running in the record: each such run found lost when its
    /// node registers (or is declared down) is requeued for that stop, not for a node
    /// failure.
    pub fn stopped_with_agents(&mut self) {
        self.audit.stopped = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running)
            .map(|j| (j.id, j.restarts))
            .collect();
    }

    /// Cancelled by `by` (uid).
    pub(super) fn audit_cancelled(&mut self, id: JobId, by: u32, now: i64) {
        let Some(r) = self.jobs.get(&id) else { return };
        let what = AuditWhat::Cancelled {
            by: Some(by),
            state: r.state,
        };
        self.audit.push(now, r, what);
    }

    /// About to go back to the queue (before its run is let go of). `cause` is
    /// replaced by the preemption or node failure that led here.
    pub(super) fn audit_requeued(
        &mut self,
        id: JobId,
        cause: RequeueCause,
        ended_as: JobState,
        now: i64,
    ) {
        let Some(r) = self.jobs.get(&id) else { return };
        if r.state == JobState::Pending {
            return;
        }
        let cause = match self.audit.preempted_by.remove(&id) {
            Some(by) if ended_as == JobState::Preempted => RequeueCause::Preempted { by },
            _ if self.audit.failing.is_some_and(|f| f.0 == id) => {
                if self.audit.stopped.remove(&(id, r.restarts)) {
                    RequeueCause::Shutdown
                } else {
                    RequeueCause::NodeFail
                }
            }
            _ => cause,
        };
        let released = if r.state == JobState::Running {
            self.devices_of(r)
        } else {
            Vec::new()
        };
        let what = AuditWhat::Requeued {
            run: r.restarts,
            ended_as,
            cause,
            released,
        };
        self.audit.events.push(AuditEvent {
            seq: 0,
            time: now,
            job_id: id.0,
            uid: Some(r.uid),
            what,
        });
    }

    /// Entered the core's queue (the order ranks are counted in).
    pub(super) fn audit_queued(&mut self, id: JobId) {
        self.audit.queued.insert(id, self.audit.next_queued);
        self.audit.next_queued += 1;
    }

    /// The core's key of queued job `id`, as the core orders its queue.
    fn queue_key(&self, id: JobId) -> Option<(Reverse<u16>, Reverse<u32>, u64)> {
        let j = self.sched.job(id)?;
        let by_priority = self.sched.policy().uses_priority();
        let tier = if by_priority {
            self.conf.cluster.partition(j.spec.partition).priority_tier
        } else {
            0
        };
        let priority = if by_priority { j.spec.priority } else { 0 };
        let seq = self.audit.queued.get(&id).copied().unwrap_or(0);
        Some((Reverse(tier), Reverse(priority), seq))
    }

    /// A pass decided `decisions`: the priority and rank of the jobs it starts, counted
    /// before they leave (jobs of their partition queued ahead of them when the pass
    /// began: still queued, or started by this pass ahead of them). One walk of the
    /// queue, up to the last job started.
    pub(super) fn audit_ranks(&mut self, decisions: &[Decision]) {
        self.audit.ranks.clear();
        self.audit.pass_mark = self.audit.events.len();
        let mut starts: Vec<_> = decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Start { job, .. } => {
                    let key = self.queue_key(*job)?;
                    let j = self.sched.job(*job)?;
                    Some((key, *job, j.spec.partition.index(), j.spec.priority))
                }
                Decision::Preempt { .. } | Decision::Resume { .. } | Decision::Suspend { .. } => {
                    None
                }
            })
            .collect();
        if starts.is_empty() {
            return;
        }
        starts.sort();
        let mut ahead = vec![0u32; self.conf.cluster.partitions.len()];
        let mut next = 0;
        for j in self.sched.pending() {
            let key = self
                .queue_key(j.id())
                .unwrap_or((Reverse(0), Reverse(0), 0));
            while next < starts.len() && starts[next].0 < key {
                let (_, id, part, priority) = starts[next];
                self.audit.ranks.insert(id, (priority, ahead[part] + 1));
                ahead[part] += 1;
                next += 1;
            }
            if next == starts.len() {
                break;
            }
            ahead[j.spec.partition.index()] += 1;
        }
        for &(_, id, part, priority) in &starts[next..] {
            self.audit.ranks.insert(id, (priority, ahead[part] + 1));
            ahead[part] += 1;
        }
    }

    /// Started by `pass` (its record already says where).
    pub(super) fn audit_started(&mut self, id: JobId, pass: &str, now: i64) {
        self.audit.queued.remove(&id);
        let Some(r) = self.jobs.get(&id) else { return };
        let (priority, rank) = match self.audit.ranks.get(&id) {
            Some(&(p, rank)) => (p, Some(rank)),
            None => (r.priority, None),
        };
        let what = AuditWhat::Started {
            run: r.restarts,
            pass: pass.to_string(),
            priority,
            rank,
            partition: r.partition.to_string(),
            reservation: r.desc.reservation.clone(),
            user: Some(r.user.to_string()),
            nodes: self.devices_of(r),
        };
        let uid = r.uid;
        self.audit.events.push(AuditEvent {
            seq: 0,
            time: now,
            job_id: id.0,
            uid: Some(uid),
            what,
        });
    }

    /// The rule under which `by` preempts `victim`.
    fn preempt_rule(&self, victim: &Job, by: &Job, reclaim: bool) -> PreemptRule {
        if reclaim {
            let cohort = self
                .conf
                .cohorts
                .members
                .iter()
                .find(|m| m.account == by.account.to_lowercase())
                .map(|m| format!(" (cohort {})", m.cohort))
                .unwrap_or_default();
            return PreemptRule {
                rule: "cohort_reclaim".into(),
                winner: format!("account {}{cohort}", by.account),
                loser: format!("account {} (borrowing)", victim.account),
            };
        }
        match self.conf.cluster.preempt.kind {
            PreemptType::Qos => PreemptRule {
                rule: "qos".into(),
                winner: format!("QOS {}", by.qos),
                loser: format!("QOS {}", victim.qos),
            },
            _ => {
                let part = |r: &Job| {
                    let tier = self
                        .partition_of(&r.partition)
                        .map_or(0, |p| self.conf.cluster.partition(p).priority_tier);
                    format!("partition {} (PriorityTier={tier})", r.partition)
                };
                PreemptRule {
                    rule: "partition_prio".into(),
                    winner: part(by),
                    loser: part(victim),
                }
            }
        }
    }

    /// `victim` is preempted for `by` in `mode` (as carried out) with `grace` seconds.
    /// The preemptor's event lists all its victims of the pass.
    pub(super) fn audit_preempted(
        &mut self,
        victim: JobId,
        by: JobId,
        mode: PreemptMode,
        grace: i64,
        reclaim: bool,
        now: i64,
    ) {
        let (Some(v), Some(b)) = (self.jobs.get(&victim), self.jobs.get(&by)) else {
            return;
        };
        let rule = self.preempt_rule(v, b, reclaim);
        let (v_uid, b_uid) = (v.uid, b.uid);
        let by_ref = self.job_ref(by);
        let victim_ref = self.job_ref(victim);
        self.audit.preempted_by.insert(victim, by_ref.clone());
        let mark = self.audit.pass_mark.min(self.audit.events.len());
        let earlier = self.audit.events[mark..].iter_mut().rev().find(|e| {
            e.job_id == by.0 && e.time == now && matches!(e.what, AuditWhat::Preempting { .. })
        });
        match earlier {
            Some(AuditEvent {
                what: AuditWhat::Preempting { victims, .. },
                ..
            }) => victims.push(victim_ref),
            _ => self.audit.events.push(AuditEvent {
                seq: 0,
                time: now,
                job_id: by.0,
                uid: Some(b_uid),
                what: AuditWhat::Preempting {
                    victims: vec![victim_ref],
                    rule: rule.clone(),
                },
            }),
        }
        let what = AuditWhat::Preempted {
            by: by_ref,
            rule,
            mode: mode.as_str().to_string(),
            grace,
        };
        self.audit.events.push(AuditEvent {
            seq: 0,
            time: now,
            job_id: victim.0,
            uid: Some(v_uid),
            what,
        });
    }

    /// Failed without running: the scheduler refused job `id` when it was to be queued
    /// (the configuration changed under it), its reason now its own (was `before`).
    pub(super) fn audit_refused(&mut self, id: JobId, before: Reason, now: i64) {
        let Some(r) = self.jobs.get(&id) else { return };
        if r.reason != before {
            let what = AuditWhat::Reason {
                from: Some(before.as_str().to_string()),
                to: r.reason.as_str().to_string(),
                limit: false,
            };
            self.audit.push(now, r, what);
        }
        self.audit_ended(id, now);
    }

    /// Job `id` ended as it now says.
    pub(super) fn audit_ended(&mut self, id: JobId, now: i64) {
        self.audit.preempted_by.remove(&id);
        let Some(r) = self.jobs.get(&id) else { return };
        let what = AuditWhat::Ended {
            run: r.restarts,
            state: r.state,
            exit_code: r.exit_code,
            signal: r.signal,
            released: self.devices_of(r),
        };
        self.audit.push(now, r, what);
    }

    /// After the first pass of each second: records the pending reasons that changed
    /// and the planned starts made or moved since the last sweep.
    pub(super) fn audit_sweep(&mut self, now: i64) {
        if self.audit.last_sweep.is_some_and(|t| t >= now) {
            return;
        }
        self.audit.last_sweep = Some(now);
        self.audit.sweeps += 1;
        let sweep = self.audit.sweeps;
        let mut seen = std::mem::take(&mut self.audit.seen);
        let mut events = Vec::new();
        for j in self.sched.pending() {
            let limit = matches!(j.reason, PendingReason::Limit(_));
            let id = j.id();
            let changes = observe(
                &mut seen,
                id,
                j.reason.as_str(),
                limit,
                j.planned_start,
                sweep,
            );
            events.extend(changes.into_iter().map(|w| (id, w)));
        }
        for &id in &self.outside {
            let Some(r) = self.jobs.get(&id).filter(|r| r.state == JobState::Pending) else {
                continue;
            };
            let changes = observe(&mut seen, id, r.reason.as_str(), false, None, sweep);
            events.extend(changes.into_iter().map(|w| (id, w)));
        }
        seen.retain(|_, s| s.sweep == sweep);
        self.audit.seen = seen;
        let sched = &self.sched;
        self.audit.queued.retain(|id, _| sched.job(*id).is_some());
        for (id, what) in events {
            if let Some(r) = self.jobs.get(&id) {
                self.audit.events.push(AuditEvent {
                    seq: 0,
                    time: now,
                    job_id: id.0,
                    uid: Some(r.uid),
                    what,
                });
            }
        }
    }
}

/// Compares what a sweep sees of pending job `id` with what was seen before; the
/// changes to record.
fn observe(
    seen: &mut BTreeMap<JobId, Seen>,
    id: JobId,
    reason: &'static str,
    limit: bool,
    plan: Option<i64>,
    sweep: u64,
) -> Vec<AuditWhat> {
    let mut out = Vec::new();
    let s = seen.entry(id).or_insert_with(|| Seen {
        reason: Some("None"),
        plan: None,
        plan_known: true,
        sweep,
    });
    s.sweep = sweep;
    match &s.reason {
        None => s.reason = Some(reason),
        Some(old) if *old != reason && reason != "None" => {
            out.push(AuditWhat::Reason {
                from: (*old != "None").then(|| old.to_string()),
                to: reason.to_string(),
                limit,
            });
            s.reason = Some(reason);
        }
        _ => {}
    }
    if let Some(t) = plan {
        if !s.plan_known {
            s.plan_known = true;
            s.plan = Some(t);
        } else if s.plan != Some(t) {
            out.push(AuditWhat::Planned {
                from: s.plan,
                to: t,
            });
            s.plan = Some(t);
        }
    }
    out
}

#[cfg(test)]
mod tests;
