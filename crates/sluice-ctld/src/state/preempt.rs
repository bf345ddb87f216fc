//! Preemption in the controller: carrying out the core's [`Decision::Preempt`]s.
//!
//! A victim is signalled at once (SIGTERM, or the signal of its `--signal`, to the batch
//! shell and its steps) and keeps running through its grace time (`GraceTime` of its
//! QOS, else of its partition). At the grace's end — or earlier, when it ends by itself
//! — it is ended as its mode says:
//!
//! - `CANCEL`: its processes are terminated (SIGTERM, SIGKILL after `KillWait`) and it
//!   ends in state `PREEMPTED`;
//! - `REQUEUE`: its run is kept for `sacct -D` as `PREEMPTED` and it goes back to the
//!   queue under its id with `SLURM_RESTART_COUNT` one higher (the requeue machinery of
//!   `scontrol requeue`). A job submitted with `--no-requeue`, or an interactive one, is
//!   cancelled instead.
//!
//! Until its victims are gone the preemptor waits (`Resources`); the core holds what
//! they free for it.
//!
//! A preemption under way is written with its victim's record (`JobRecord::preempting`:
//! run, preemptor, mode, when, grace's end, whether its end was ordered) before the
//! victim is signalled, and again when its end is ordered. A restarted controller — or
//! a backup taking over — reads it back ([`Controller::restore_preempting`]): the
//! victim is ended at the same grace's end (at once if that passed meanwhile), a
//! `CANCEL` victim whose end was ordered is ended again when its agent registers, the
//! core does not choose it again and holds what it frees for the same preemptor, and
//! the audit trail tells the preemption once.

use sluice_core::{Decision, JobId, PreemptMode};
use sluice_proto::audit::RequeueCause;
use sluice_proto::types::{JobState, PreemptingRun};

use super::{Controller, Effect, Job};

/// SIGTERM.
const SIGTERM: i32 = 15;

/// A victim in its grace time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Preempting {
    /// The run being preempted.
    pub(super) run: u32,
    /// The job it is preempted for.
    pub(super) by: JobId,
    /// Cancel or requeue.
    pub(super) mode: PreemptMode,
    /// When it was chosen (`PreemptTime`).
    pub(super) at: i64,
    /// When its grace ends (controller seconds).
    pub(super) deadline: i64,
    /// Already ended (a CANCEL victim being terminated).
    pub(super) ending: bool,
}

impl Controller {
    /// Carries out the preemptions among `decisions` and returns the starts, with the
    /// effects, and whether a victim left the core (a pass is worth running again).
    pub(super) fn preempt_decisions(
        &mut self,
        decisions: Vec<Decision>,
        now: i64,
    ) -> (Vec<Decision>, Vec<Effect>, bool) {
        let mut starts = Vec::new();
        let mut effects = Vec::new();
        let mut ended = false;
        // A heterogeneous job is preempted whole: a victim that is one of its
        // components brings every running component with it (each once), as Slurm
        // preempts and requeues a hetjob by its leader.
        let mut victims = Vec::new();
        for d in decisions {
            let Decision::Preempt { victim, .. } = &d else {
                victims.push(d);
                continue;
            };
            let members = self.het_members(*victim);
            for m in members {
                let taken = victims
                    .iter()
                    .any(|v| matches!(v, Decision::Preempt { victim, .. } if *victim == m));
                let running = self
                    .jobs
                    .get(&m)
                    .is_some_and(|r| r.state == JobState::Running);
                if taken || !running || self.preempting.contains_key(&m) {
                    continue;
                }
                let mut one = d.clone();
                if let Decision::Preempt { victim, .. } = &mut one {
                    *victim = m;
                }
                victims.push(one);
            }
        }
        for d in victims {
            // Suspension (`PreemptMode=SUSPEND`): the core has given the victim's
            // resources to its preemptor already; stop it before that starts.
            match d {
                Decision::Resume { job, .. } => {
                    effects.extend(self.preempt_resumed(job, now));
                    continue;
                }
                // Time-slicing: a running job is stopped here, in order with the
                // resumes; one started in this pass after its start (below).
                Decision::Suspend { job, .. }
                    if self
                        .jobs
                        .get(&job)
                        .is_some_and(|r| r.state == JobState::Running) =>
                {
                    effects.extend(self.slice_suspended(job, now));
                    continue;
                }
                Decision::Preempt {
                    victim,
                    by,
                    mode: PreemptMode::Suspend,
                    grace,
                    reclaim,
                    ..
                } => {
                    self.audit_preempted(victim, by, PreemptMode::Suspend, grace, reclaim, now);
                    effects.extend(self.preempt_suspended(victim, by, now));
                    continue;
                }
                _ => {}
            }
            let Decision::Preempt {
                victim,
                by,
                mode,
                grace,
                reclaim,
                ..
            } = d
            else {
                starts.push(d);
                continue;
            };
            let Some(r) = self.jobs.get(&victim) else {
                continue;
            };
            let mode = if mode == PreemptMode::Requeue
                && (r.desc.requeue == Some(false) || r.desc.interactive)
            {
                PreemptMode::Cancel
            } else {
                mode
            };
            // A service is requeued, not cancelled, unless its QOS itself says CANCEL
            // (a partition's or the cluster's mode does not end a service).
            let qos_cancels = self
                .sched
                .job(victim)
                .and_then(|j| j.spec.acct.qos)
                .and_then(|q| self.sched.account_limits().qos.get(&q))
                .is_some_and(|q| q.preempt_mode == Some(PreemptMode::Cancel));
            let mode = if mode == PreemptMode::Cancel && r.desc.service.is_some() && !qos_cancels {
                PreemptMode::Requeue
            } else {
                mode
            };
            let signal = r.desc.signal.map_or(SIGTERM, |(s, _, _)| s);
            self.audit_preempted(victim, by, mode, grace, reclaim, now);
            tracing::info!(
                "preempting JobId={} to reclaim resources for JobId={} (mode {}, grace {grace}s)",
                victim,
                by,
                if mode == PreemptMode::Requeue {
                    "REQUEUE"
                } else {
                    "CANCEL"
                }
            );
            let run = self.jobs[&victim].restarts;
            self.preempting.insert(
                victim,
                Preempting {
                    run,
                    by,
                    mode,
                    at: now,
                    deadline: now + grace,
                    ending: false,
                },
            );
            // Durable before the signal: a restart carries the preemption on.
            effects.push(self.persist(victim));
            let r = &self.jobs[&victim];
            if !r.desc.interactive {
                for batch_only in [true, false] {
                    effects.push(Effect::Signal {
                        nodes: self.node_names(r),
                        job_id: victim,
                        signal,
                        batch_only,
                        step: None,
                    });
                }
            }
            if grace <= 0 {
                effects.extend(self.preempt_victim(victim, now));
                ended = true;
            }
        }
        (starts, effects, ended)
    }

    /// Ends the victims whose grace is over.
    pub(super) fn preempt_due(&mut self, now: i64) -> Vec<Effect> {
        let due: Vec<JobId> = self
            .preempting
            .iter()
            .filter(|(_, p)| !p.ending && p.deadline <= now)
            .map(|(&id, _)| id)
            .collect();
        due.into_iter()
            .flat_map(|id| self.preempt_victim(id, now))
            .collect()
    }

    /// For `scontrol show job`: a victim in its grace shows when it may be preempted
    /// (`PreemptEligibleTime`, start plus `PreemptExemptTime`), when it was
    /// (`PreemptTime`) and its grace's end as its `EndTime`, as Slurm shows them.
    pub(super) fn preemption_of(
        &self,
        r: &Job,
    ) -> Option<Box<sluice_proto::types::PreemptionTimes>> {
        let p = self.preempting.get(&r.id).filter(|p| p.run == r.restarts)?;
        let exempt = self.conf.cluster.preempt.exempt_time;
        Some(Box::new(sluice_proto::types::PreemptionTimes {
            eligible: r.start_time.map(|start| start + exempt),
            at: p.at,
            grace_end: p.deadline,
        }))
    }

    /// The running jobs being preempted (their records show it).
    pub(super) fn preempting_ids(&self) -> impl Iterator<Item = JobId> + '_ {
        self.preempting.keys().copied()
    }

    /// The earliest end of a grace time still running.
    pub(super) fn next_preempt_deadline(&self) -> Option<i64> {
        self.preempting
            .values()
            .filter(|p| !p.ending)
            .map(|p| p.deadline)
            .min()
    }

    /// Ends victim `id` as its mode says (its grace is over).
    fn preempt_victim(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        let Some(p) = self.preempting.get(&id).copied() else {
            return Vec::new();
        };
        let Some(r) = self.jobs.get(&id) else {
            self.preempting.remove(&id);
            return Vec::new();
        };
        if r.state != JobState::Running || r.restarts != p.run {
            self.preempting.remove(&id);
            return Vec::new();
        }
        match p.mode {
            PreemptMode::Requeue => {
                self.preempting.remove(&id);
                self.outside_dirty = true;
                let cause = RequeueCause::Preempted {
                    by: Default::default(),
                };
                self.audit_requeued(id, cause, JobState::Preempted, now);
                tracing::info!("preempted JobId={id} has been requeued to reclaim resources");
                self.requeue_run(id, JobState::Preempted, true, now)
            }
            _ => {
                self.preempting.get_mut(&id).expect("checked").ending = true;
                tracing::info!("preempted JobId={id} has been killed to reclaim resources");
                if r.desc.interactive {
                    let report = sluice_proto::types::JobEnded {
                        job_id: id.0,
                        run: r.restarts,
                        node: String::new(),
                        state: JobState::Preempted,
                        exit_code: 0,
                        signal: 9,
                        end: now,
                        usage: None,
                    };
                    return self.job_ended(&report, now);
                }
                self.begin_ending(id, JobState::Preempted, now)
            }
        }
    }

    /// The preemption of running job `r` under way, as its record keeps it.
    pub(super) fn preempting_run(&self, r: &Job) -> Option<Box<PreemptingRun>> {
        let p = self.preempting.get(&r.id).filter(|p| p.run == r.restarts)?;
        Some(Box::new(PreemptingRun {
            run: p.run,
            by: p.by.0,
            requeue: p.mode == PreemptMode::Requeue,
            at: p.at,
            deadline: p.deadline,
            ending: p.ending,
        }))
    }

    /// At start: takes back the preemptions under way that `records` (read from the
    /// store, their jobs restored) keep, and hands each preemptor's victims back to the
    /// core. A record of a run that is no longer the job's, or of a job no longer
    /// running, is ignored.
    pub(super) fn restore_preempting(&mut self, records: Vec<(JobId, PreemptingRun)>) {
        let mut victims: std::collections::BTreeMap<JobId, Vec<JobId>> = Default::default();
        for (id, p) in records {
            let Some(r) = self.jobs.get(&id) else {
                continue;
            };
            if r.state != JobState::Running || r.restarts != p.run {
                continue;
            }
            let by = JobId(p.by);
            self.preempting.insert(
                id,
                Preempting {
                    run: p.run,
                    by,
                    mode: if p.requeue {
                        PreemptMode::Requeue
                    } else {
                        PreemptMode::Cancel
                    },
                    at: p.at,
                    deadline: p.deadline,
                    ending: p.ending,
                },
            );
            tracing::info!(
                "JobId={id} is still being preempted for JobId={by} (grace ends at {})",
                p.deadline
            );
            victims.entry(by).or_default().push(id);
        }
        for (by, victims) in victims {
            self.sched.restore_preemption(by, &victims);
        }
    }

    /// A job's run ended (reported): if it was being preempted, what to do instead of the
    /// ordinary end. `Some(effects)` when the end was handled here (a REQUEUE victim that
    /// left during its grace goes back to the queue); `None` to go on with the ordinary
    /// end, in state `PREEMPTED` when `preempted` is set.
    pub(super) fn preempted_run_ended(
        &mut self,
        id: JobId,
        run: u32,
        now: i64,
        preempted: &mut bool,
    ) -> Option<Vec<Effect>> {
        let p = self.preempting.get(&id).copied().filter(|p| p.run == run)?;
        self.preempting.remove(&id);
        match p.mode {
            PreemptMode::Requeue => {
                let cause = RequeueCause::Preempted {
                    by: Default::default(),
                };
                self.audit_requeued(id, cause, JobState::Preempted, now);
                tracing::info!(
                    "preempted JobId={id} ended in its grace time and has been requeued"
                );
                let mut effects = self.requeue_run(id, JobState::Preempted, false, now);
                // A heterogeneous job's leader whose script left in its grace takes its
                // other components back to the queue with it (they run no script that
                // could end on its own): the job runs again whole.
                if self.jobs[&id].het.is_some_and(|h| h.offset == 0) {
                    for m in self.het_members(id).into_iter().skip(1) {
                        if self.preempting.remove(&m).is_some()
                            && self.jobs[&m].state == JobState::Running
                        {
                            self.audit_requeued(m, cause_of_preemption(), JobState::Preempted, now);
                            effects.extend(self.requeue_run(m, JobState::Preempted, true, now));
                        }
                    }
                }
                effects.extend(self.schedule(now));
                Some(effects)
            }
            _ => {
                *preempted = true;
                None
            }
        }
    }
}

/// The cause a preemption's requeue is recorded with.
fn cause_of_preemption() -> RequeueCause {
    RequeueCause::Preempted {
        by: Default::default(),
    }
}

#[cfg(test)]
mod tests;
