//! Cancelling and signalling jobs and steps (`scancel`, the REST API's `DELETE`), as
//! Slurm's controller does it one job at a time.
//!
//! Jobs named by id are checked before any is touched: one the caller may not touch
//! refuses the whole request. Jobs chosen by filters are refused one by one, as Slurm's
//! scancel asks about each job its listing matched. A signal other than SIGKILL reaches
//! running jobs only; for a pending or suspended job the refusal says to ask again,
//! which `scancel` does as Slurm's does.

use std::collections::BTreeSet;

use sluice_core::JobId;
use sluice_proto::error::{ApiError, ErrorCode};
use sluice_proto::types::{CancelRefusal, CancelRequest, JobEnded, JobState, StepId};

use super::job::Job;
use super::{suspend, Caller, Controller, Effect, BAD_JOB, HET_COMPONENT};

/// Slurm's words for a job the caller may not touch (ESLURM_ACCESS_DENIED).
const ACCESS_DENIED: &str = "Access/permission denied";

/// Slurm's words for a signal to a job that is not running
/// (ESLURM_TRANSITION_STATE_NO_UPDATE).
pub const TRANSITION: &str = "Job can not be altered now, try again later";

/// What a cancel did: its effects, and the jobs it left alone, each refused on its own.
#[derive(Debug, Default, PartialEq)]
pub struct CancelOutcome {
    /// What the loop carries out.
    pub effects: Vec<Effect>,
    /// The jobs refused one by one, pending ones first.
    pub refused: Vec<CancelRefusal>,
}

/// One job's refusal, the job named as Slurm's scancel names it.
fn refusal(r: &Job, code: ErrorCode, error: &str) -> CancelRefusal {
    CancelRefusal {
        job: r.id.0,
        named: scancel_name(r),
        error: error.to_string(),
        code,
        with: Vec::new(),
    }
}

/// A job as Slurm's scancel names a record it chose: an array's unstarted rest as
/// `ID_[2-5]`, a task as `ID_N`, any other job by its id.
fn scancel_name(r: &Job) -> String {
    let array = r.array.map_or(r.id, |a| a.0);
    match (r.array_pending.as_deref(), r.array) {
        (Some((rest, _)), _) if !rest.is_empty() => {
            format!("{array}_[{}]", sluice_proto::types::compact_indices(rest))
        }
        (_, Some((array, task))) => format!("{array}_{task}"),
        _ => r.id.to_string(),
    }
}

/// Whether job `j` passes the request's filters (user, name, partition, state as
/// listings show it: a suspended job is `SUSPENDED`).
fn passes(req: &CancelRequest, j: &Job) -> bool {
    req.user.as_ref().is_none_or(|u| **u == *j.user)
        && req.name.as_ref().is_none_or(|n| *n == j.desc.name)
        // The partition as shown (a pending job of several: their list), compared
        // whole as Slurm's scancel compares it.
        && req.partition.as_ref().is_none_or(|p| **p == *j.shown_partition())
        && (req.states.is_empty() || req.states.contains(&j.shown_state()))
}

impl Controller {
    /// Cancels or signals jobs, as Slurm's controller does one job at a time.
    ///
    /// A request that names a job the caller may not touch is refused whole and changes
    /// nothing; a filter's matches the caller may see but not touch are refused one by
    /// one (`Access/permission denied` each, as Slurm's scancel reports them) while the
    /// others are cancelled. A signal other than SIGKILL to a job that is pending or
    /// suspended is refused for that job (`Job can not be altered now, try again
    /// later`: scancel asks again). Finished jobs named by id are left alone (exit 0, as
    /// Slurm); records chosen before and ended since are refused as done.
    pub fn cancel(
        &mut self,
        req: &CancelRequest,
        caller: &Caller,
        now: i64,
    ) -> Result<CancelOutcome, ApiError> {
        if !req.steps.is_empty() {
            return Ok(CancelOutcome {
                effects: self.cancel_steps(req, caller)?,
                refused: Vec::new(),
            });
        }
        // Ends, cancellations and releases may let held-back jobs in.
        self.outside_dirty = true;
        let mut ids: Vec<JobId> = Vec::new();
        // Array tasks named on their own (`123_4`, or a task's own id), not as part of
        // their whole array.
        let mut alone: BTreeSet<JobId> = BTreeSet::new();
        // Each record chosen by id, with the id as the caller typed it.
        let mut named_as: std::collections::BTreeMap<JobId, String> = Default::default();
        for &(job, task) in &req.jobs {
            let job = JobId(job);
            // The id as the caller typed it.
            let typed = task.map_or(job.to_string(), |t| format!("{job}_{t}"));
            // A pending heterogeneous job is cancelled whole, by its leader's id.
            if task.is_none()
                && self.jobs.get(&job).is_some_and(|r| {
                    r.state == JobState::Pending && r.het.is_some_and(|h| h.offset > 0)
                })
            {
                return Err(ApiError::new(
                    ErrorCode::Invalid,
                    format!("Kill job error on job id {job}: {HET_COMPONENT}"),
                ));
            }
            let found = self.select(job, task);
            // Cancelling an unknown job quietly succeeds; signalling one is an error.
            if found.is_empty() && req.signal.is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidJobId,
                    format!("Kill job error on job id {typed}: {BAD_JOB}"),
                ));
            }
            if task.is_some()
                || self
                    .jobs
                    .get(&job)
                    .is_some_and(|j| j.array.is_some_and(|a| a.0 != job))
            {
                alone.extend(&found);
            }
            for id in &found {
                named_as.entry(*id).or_insert_with(|| typed.clone());
            }
            ids.extend(found);
        }
        if !req.jobs.is_empty() {
            // Jobs named by id and filters: those of the named that pass the filters,
            // the others left alone without a word (as Slurm's scancel filters them).
            ids.retain(|id| passes(req, &self.jobs[id]));
        }
        let mut refused = Vec::new();
        if req.jobs.is_empty() {
            if req.records.is_empty() {
                // Chosen by the filters among the jobs the caller may see, as Slurm's
                // scancel chooses from its job listing.
                ids = self
                    .jobs
                    .values()
                    .filter(|j| !j.state.is_finished() && passes(req, j))
                    .filter(|j| !self.hidden_from(caller, j.uid))
                    .map(|j| j.id)
                    .collect();
            } else {
                // Chosen already (by the caller's filters, or refused before and asked
                // about again): a record that has ended since is refused as done, one
                // that is gone as unknown, as Slurm's controller answers scancel's
                // request for each (the caller decides what they are worth).
                for &id in &req.records {
                    match self.jobs.get(&JobId(id)) {
                        Some(j) if j.state.is_finished() => {
                            refused.push(refusal(j, ErrorCode::AlreadyDone, suspend::ALREADY_DONE))
                        }
                        Some(j) => ids.push(j.id),
                        None => refused.push(CancelRefusal {
                            job: id,
                            named: id.to_string(),
                            error: BAD_JOB.to_string(),
                            code: ErrorCode::InvalidJobId,
                            with: Vec::new(),
                        }),
                    }
                }
            }
            // A match the caller may not touch: refused on its own, the others go on.
            ids.retain(|id| {
                let r = &self.jobs[id];
                let ok = Self::may_touch(caller, r);
                if !ok {
                    refused.push(refusal(r, ErrorCode::AccessDenied, ACCESS_DENIED));
                }
                ok
            });
        }
        // A running heterogeneous job's components end with its leader's script.
        let leaders: BTreeSet<u64> = ids
            .iter()
            .filter_map(|id| self.jobs.get(id)?.het)
            .filter(|h| h.offset == 0)
            .map(|h| h.job_id)
            .collect();
        ids.retain(|id| {
            self.jobs.get(id).and_then(|r| r.het).is_none_or(|h| {
                h.offset == 0
                    || !leaders.contains(&h.job_id)
                    || self.jobs[id].state != JobState::Running
            })
        });
        // Every id named is checked before any is touched: a refusal changes nothing.
        // The job is named as the caller named it.
        for id in &ids {
            let r = &self.jobs[id];
            if !Self::may_touch(caller, r) {
                let named = named_as.get(id).cloned().unwrap_or_else(|| r.display_id());
                return Err(ApiError::new(
                    ErrorCode::AccessDenied,
                    format!("Kill job error on job id {named}: {ACCESS_DENIED}"),
                ));
            }
        }
        let mut effects = Vec::new();
        // An array's own record last: the tasks cancelled with it are gone by then.
        ids.sort_by_key(|id| self.jobs[id].array.is_some_and(|a| a.0 == *id));
        for id in ids {
            let Some(r) = self.jobs.get(&id) else {
                continue;
            };
            match (r.state, req.signal) {
                (JobState::Pending, None)
                    if alone.contains(&id) && self.cancel_leaves_no_record(r) =>
                {
                    effects.extend(self.forget_unstarted_task(id, now));
                }
                (JobState::Pending, None) if !alone.contains(&id) && self.folds_into_array(r) => {
                    effects.extend(self.forget_folded_task(id, now));
                }
                (JobState::Pending, None) => {
                    // The reason it waited for stays, as Slurm shows it (`JobHeldUser`).
                    let reason = self.live_reason(r);
                    self.audit_cancelled(id, caller.uid, now);
                    tracing::info!(
                        "_job_complete: JobId={id} CANCELLED while pending, by uid {}",
                        caller.uid
                    );
                    self.sched.cancel_pending(id, now);
                    self.sched.forget_waiting(id, now);
                    self.outside.remove(&id);
                    self.diag.jobs.canceled += 1;
                    let r = self.jobs.get_mut(&id).expect("exists");
                    r.state = JobState::Cancelled;
                    r.end_time = Some(now);
                    r.cancelled_by = Some(caller.uid);
                    r.reason = reason;
                    let task = r.array;
                    if !alone.contains(&id) && task.is_some_and(|(array, _)| array == id) {
                        self.fold_unstarted_into_array(id);
                    } else {
                        effects.extend(self.leave_remainder(id, task));
                    }
                    effects.push(self.persist(id));
                }
                (JobState::Running, None) => {
                    let nodes = self.node_names(r);
                    self.audit_cancelled(id, caller.uid, now);
                    tracing::info!(
                        "_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={id} uid {}",
                        caller.uid
                    );
                    self.diag.jobs.canceled += 1;
                    let r = self.jobs.get_mut(&id).expect("exists");
                    r.cancelled_by = Some(caller.uid);
                    if r.desc.interactive {
                        // No agent runs it: srun/salloc ends it when it sees the state.
                        let report = JobEnded {
                            job_id: id.0,
                            run: r.restarts,
                            node: String::new(),
                            state: JobState::Cancelled,
                            exit_code: 0,
                            signal: 9,
                            end: now,
                            usage: None,
                        };
                        effects.extend(self.job_ended(&report, now));
                    } else if self.told_to_end(id) {
                        // Already COMPLETING: the order again, nothing else changes.
                        effects.push(Effect::Terminate {
                            nodes,
                            job_id: id,
                            state: JobState::Cancelled,
                        });
                    } else {
                        effects.extend(self.begin_ending(id, JobState::Cancelled, now));
                    }
                }
                // Slurm's job_signal: only a running job takes a signal; scancel
                // asks again for one that may start (or be resumed) meanwhile.
                (JobState::Pending | JobState::Running, Some(_))
                    if r.state == JobState::Pending || r.suspended() =>
                {
                    refused.push(refusal(r, ErrorCode::Busy, TRANSITION));
                }
                (JobState::Running, Some(signal)) => {
                    // As scancel: the steps by default, the batch shell with -b, both
                    // with -f.
                    if req.full || !req.batch {
                        effects.push(Effect::Signal {
                            nodes: self.node_names(r),
                            job_id: id,
                            signal,
                            batch_only: false,
                            step: None,
                        });
                    }
                    if req.batch {
                        effects.push(Effect::Signal {
                            nodes: self.node_names(r),
                            job_id: id,
                            signal,
                            batch_only: true,
                            step: None,
                        });
                    }
                }
                _ => {}
            }
        }
        effects.extend(self.schedule(now));
        // As Slurm's scancel asks: pending jobs first.
        refused.sort_by_key(|r: &CancelRefusal| {
            (
                self.jobs.get(&JobId(r.job)).map(|j| j.state) != Some(JobState::Pending),
                r.job,
            )
        });
        let refused = self.one_refusal_per_job(refused);
        Ok(CancelOutcome { effects, refused })
    }

    /// Refusals as Slurm's controller gives them, one per job as it holds them: an
    /// array's unstarted tasks (one record in Slurm, its own) go with the array's
    /// refusal, a heterogeneous job's components with its leader's, each record kept
    /// in `with` to be asked about again.
    fn one_refusal_per_job(&self, refused: Vec<CancelRefusal>) -> Vec<CancelRefusal> {
        let stands_for = |r: &CancelRefusal| -> Option<u64> {
            let j = self.jobs.get(&JobId(r.job))?;
            if let Some((array, task)) = j.array {
                let head = self.jobs.get(&array)?;
                let folded = array != j.id
                    && head
                        .array_pending
                        .as_deref()
                        .is_some_and(|(rest, _)| rest.contains(&task));
                return folded.then_some(array.0);
            }
            j.het.filter(|h| h.offset > 0).map(|h| h.job_id)
        };
        let mut out: Vec<CancelRefusal> = Vec::new();
        let mut folded: Vec<(u64, CancelRefusal)> = Vec::new();
        for r in refused {
            match stands_for(&r) {
                Some(owner) if owner != r.job => folded.push((owner, r)),
                _ => out.push(r),
            }
        }
        for (owner, r) in folded {
            match out.iter_mut().find(|o| o.job == owner && o.code == r.code) {
                Some(o) => o.with.push(r.job),
                // Its array's or leader's record was not refused alike: its own.
                None => out.push(r),
            }
        }
        out
    }

    /// Cancels (SIGKILL, or no signal) or signals steps on their own, as Slurm's
    /// job_step_signal: the job must be running and the step still running. A
    /// cancelled step's srun is told (`Job step aborted`), its tasks are killed, and
    /// it is recorded `CANCELLED by UID`. Every step is checked before any is touched.
    fn cancel_steps(
        &mut self,
        req: &CancelRequest,
        caller: &Caller,
    ) -> Result<Vec<Effect>, ApiError> {
        let signal = req.signal.unwrap_or(libc::SIGKILL);
        // srun's `-K`: cancelled as by SIGKILL, its tasks told SIGTERM first.
        let terminate = req.terminate && req.signal.is_none();
        let mut chosen = Vec::new();
        for &(job, task, step) in &req.steps {
            let named = task.map_or(job.to_string(), |t| format!("{job}_{t}"));
            let refuse = |code, why: &str| {
                Err(ApiError::new(
                    code,
                    format!("Kill job error on job step id {named}: {why}"),
                ))
            };
            let found = self.select(JobId(job), task);
            let id = found
                .iter()
                .copied()
                .find(|id| *id == JobId(job) || task.is_some())
                .or_else(|| found.first().copied());
            let Some(r) = id.and_then(|id| self.jobs.get(&id)) else {
                return refuse(ErrorCode::InvalidJobId, BAD_JOB);
            };
            if r.uid != caller.uid && !caller.admin {
                // An array's task by its own id here, as Slurm's scancel names it.
                return Err(ApiError::new(
                    ErrorCode::AccessDenied,
                    format!("Kill job error on job step id {}: Invalid user id", r.id),
                ));
            }
            if r.state.is_finished() {
                return refuse(ErrorCode::Invalid, suspend::ALREADY_DONE);
            }
            if r.state != JobState::Running {
                return refuse(ErrorCode::Invalid, TRANSITION);
            }
            // A heterogeneous step in this allocation (`srun A : B`): as Slurm's
            // controller cancels it, every part that runs; a signal reaches its first
            // part, as Slurm's scancel sends it (to the first step its listing
            // matches). A step of a heterogeneous job's component is named by that
            // component (`J+1.0` names the second's), as in Slurm.
            let parts: Vec<(JobId, StepId)> = self
                .steps
                .range((r.id, StepId::Part(step, 0))..=(r.id, StepId::Part(step, u32::MAX)))
                .filter(|(_, s)| s.state == JobState::Running)
                .map(|(k, _)| *k)
                .take(if signal == libc::SIGKILL {
                    usize::MAX
                } else {
                    1
                })
                .collect();
            if !parts.is_empty() {
                chosen.extend(parts.into_iter().map(|k| (k, step)));
                continue;
            }
            let key = (r.id, StepId::Number(step));
            match self.steps.get(&key) {
                Some(s) if s.state == JobState::Running => chosen.push((key, step)),
                // Slurm forgets a step once it ends: not found, in its words.
                _ => return refuse(ErrorCode::InvalidJobId, BAD_JOB),
            }
            // A heterogeneous job's components number their steps as one, so the same
            // step in another component is the same srun's (`--het-group=0,1`): a
            // cancel aborts that srun, whose steps end cancelled in every component,
            // as Slurm's srun then cancels them.
            if signal == libc::SIGKILL && r.het.is_some() {
                for member in self.het_members(r.id) {
                    let other = (member, StepId::Number(step));
                    if member != r.id
                        && self
                            .steps
                            .get(&other)
                            .is_some_and(|s| s.state == JobState::Running)
                    {
                        chosen.push((other, step));
                    }
                }
            }
        }
        // Each step once, however many ids named it (`J+0.0 J+1.0`).
        let mut seen = BTreeSet::new();
        chosen.retain(|(key, _)| seen.insert(*key));
        let mut effects = Vec::new();
        for (key, step) in chosen {
            let s = self.steps.get_mut(&key).expect("checked");
            // (Not one srun ends itself: Slurm records no one's cancel for it.)
            if signal == libc::SIGKILL && !terminate {
                s.cancelled_by = Some(caller.uid);
                // Durable at once: a restart before the step ends keeps who it was.
                effects.push(Effect::PersistStep(Box::new(s.clone())));
                tracing::info!(
                    "job_step_signal: JobId={} StepId={} cancelled by uid {}",
                    key.0,
                    s.step,
                    caller.uid
                );
            }
            effects.push(if terminate {
                Effect::TerminateStep {
                    nodes: s.nodes.clone(),
                    job_id: key.0,
                    step,
                    kill_wait: self.conf.kill_wait,
                    time_limit: false,
                }
            } else {
                Effect::Signal {
                    nodes: s.nodes.clone(),
                    job_id: key.0,
                    signal,
                    batch_only: false,
                    step: Some(step),
                }
            });
        }
        Ok(effects)
    }
}

#[cfg(test)]
mod tests;
