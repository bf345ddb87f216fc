//! `COMPLETING`: a job's run being ended, until its processes are gone on every node.
//!
//! A running batch job is told to end by a cancel, its time limit, a preemption or a
//! requeue: from that moment it shows `COMPLETING` (`CG`) with its `EndTime`, as
//! Slurm's job state flag, and every node of the run is sent the order to end it
//! (SIGCONT and SIGTERM, SIGKILL after `KillWait`). A job whose batch script ended by
//! itself while steps of it ran on other nodes is ended there the same way. The run
//! is over only when every node has reported that nothing of it is left: its batch
//! script's node by the script's end (which its supervisor reports only once every
//! process the job started there is gone), each other node that ran a step of it by
//! `POST /v1/agent/run-gone` — or when the node is declared down (`SlurmdTimeout`), or
//! its agent registers again without the run. Until then the core keeps everything the
//! run holds (`Scheduler::mark_ending`): neither the job's next run (after a requeue)
//! nor another job starts beside what is left of it, as Slurm keeps a completing job's
//! nodes.
//!
//! Architecture invariant: a job's resources are released only when every node has
//! reported its processes gone, or the node is declared down.

use sluice_core::{JobId, NodeId};
use sluice_proto::error::ApiError;
use sluice_proto::types::{JobState, RunGone, StepId};

use super::{Caller, Controller, Effect, RunEnding};

impl Controller {
    /// The nodes other than `batch` on which steps of run `run` of job `id` ran: where
    /// processes of that run may be left when its batch script is gone.
    pub(super) fn step_nodes(&self, id: JobId, run: u32, batch: Option<NodeId>) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self
            .steps
            .range((id, StepId::Number(0))..=(id, StepId::LAST))
            .filter(|(_, s)| s.run == run)
            .flat_map(|(_, s)| s.nodes.iter())
            .filter_map(|n| self.conf.node_id(n))
            .filter(|n| Some(*n) != batch)
            .collect();
        nodes.sort();
        nodes.dedup();
        nodes
    }

    /// Running batch job `id` is told to end as `state` (a cancel, its time limit, a
    /// preemption): `COMPLETING` from `now`, which is its `EndTime`, until its
    /// processes are gone on its batch script's node and on every node that ran a step
    /// of it; they are all ordered to end.
    pub(super) fn begin_ending(&mut self, id: JobId, state: JobState, now: i64) -> Vec<Effect> {
        let r = &self.jobs[&id];
        let batch = r.first_node();
        let mut nodes: Vec<NodeId> = batch.into_iter().collect();
        nodes.extend(self.step_nodes(id, r.restarts, batch));
        let ending = RunEnding {
            run: r.restarts,
            nodes,
            told: Some(state),
        };
        let terminate = Effect::Terminate {
            nodes: self.node_names(r),
            job_id: id,
            state,
        };
        self.sched.mark_ending(id);
        let r = self.jobs.get_mut(&id).expect("exists");
        r.end_time = Some(now);
        r.ending_run = Some(Box::new(ending));
        // A job at its time limit shows why while it completes (`TimeLimit`).
        if let Some(why) = super::Reason::ended(state, 0, 0) {
            r.reason = why;
        }
        tracing::info!(
            "JobId={id} is COMPLETING: its processes are told to end ({})",
            state.name()
        );
        vec![self.persist(id), terminate]
    }

    /// Whether job `id` has been told to end (it is `COMPLETING`) in its current run.
    pub(super) fn told_to_end(&self, id: JobId) -> bool {
        self.jobs.get(&id).is_some_and(super::job::Job::told_to_end)
    }

    /// An agent reports that nothing of run `report.run` of a job is left on its node.
    ///
    /// Errors: the caller is not an agent (root or the SlurmUser), or an unknown node.
    pub fn run_gone(
        &mut self,
        report: &RunGone,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::access_denied());
        }
        let Some(node) = self.conf.node_id(&report.node) else {
            return Err(ApiError::new(
                sluice_proto::error::ErrorCode::InvalidNodeName,
                sluice_proto::error::INVALID_NODE_NAME,
            ));
        };
        let id = JobId(report.job_id);
        let Some(r) = self.jobs.get(&id) else {
            return Ok(Vec::new());
        };
        let Some(e) = r.ending_run.as_ref() else {
            return Ok(Vec::new());
        };
        let run = report.run.unwrap_or(e.run);
        // A batch script's node says so by the script's end, which comes first (its
        // supervisor leaves only once the controller has it): not here.
        let batch_pending = e.run == run
            && e.nodes.first() == Some(&node)
            && r.state == JobState::Running
            && r.restarts == run
            && r.first_node() == Some(node);
        if batch_pending {
            return Ok(Vec::new());
        }
        Ok(self.node_gone(id, run, node, now))
    }

    /// Nothing of run `run` of job `id` is left on `node` (its agent said so, or the
    /// node is declared down): once no node of the run is left, it is over.
    pub(super) fn node_gone(&mut self, id: JobId, run: u32, node: NodeId, now: i64) -> Vec<Effect> {
        let Some(r) = self.jobs.get_mut(&id) else {
            return Vec::new();
        };
        let Some(e) = r.ending_run.as_mut().filter(|e| e.run == run) else {
            return Vec::new();
        };
        let before = e.nodes.len();
        e.nodes.retain(|n| *n != node);
        if e.nodes.len() == before {
            return Vec::new();
        }
        if !e.nodes.is_empty() || (r.state == JobState::Running && r.restarts == run) {
            // Still running somewhere; or its batch script's end (which decides its
            // state) is yet to come.
            return vec![self.persist(id)];
        }
        self.run_over(id, now)
    }

    /// Drops from job `id`'s ending run the nodes whose agents are not up: nobody there
    /// will report, and a node declared down has lost its processes anyway. True when
    /// none is left.
    pub(super) fn forget_silent_nodes(&mut self, id: JobId) -> bool {
        let up: Vec<NodeId> = self
            .agents_up
            .iter()
            .filter_map(|n| self.conf.node_id(n))
            .collect();
        let Some(e) = self.jobs.get_mut(&id).and_then(|r| r.ending_run.as_mut()) else {
            return false;
        };
        e.nodes.retain(|n| up.contains(n));
        e.nodes.is_empty()
    }

    /// Every node has reported job `id`'s ending run gone: what it held is free, and a
    /// requeued job may run again.
    pub(super) fn run_over(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        let Some(r) = self.jobs.get_mut(&id) else {
            return Vec::new();
        };
        r.ending_run = None;
        // The core still holds the run (see `mark_ending`); a job that never started
        // has nothing there.
        self.sched.job_ended(id, now);
        tracing::info!("JobId={id}: every node reported its processes gone; no longer COMPLETING");
        let mut effects = vec![self.persist(id)];
        self.outside_dirty = true;
        effects.extend(self.schedule(now));
        effects
    }

    /// Remembers when running batch job `id` reaches its time limit (at its start, at a
    /// change of its limit, at a restart), for [`Controller::time_limits_due`].
    pub(super) fn note_deadline(&mut self, id: JobId) {
        let Some(r) = self.jobs.get(&id) else {
            return;
        };
        if r.state != JobState::Running || r.desc.interactive {
            return;
        }
        if let Some(at) = r.time_limit.zip(r.start_time).map(|(l, s)| s + l) {
            self.deadlines.insert((at, id));
        }
    }

    /// Running batch jobs that have reached their time limit are told to end
    /// (`TIMEOUT`), as slurmctld's time-limit check does: every node of the job is
    /// ordered to end it, not only the batch script's (whose supervisor also ends the
    /// script at its limit).
    pub(super) fn time_limits_due(&mut self, now: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        while let Some(&(at, id)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.remove(&(at, id));
            // Entries are checked when due: a job since ended, requeued, told to end
            // or given another limit (noted again then) is passed over.
            let due = self.jobs.get(&id).is_some_and(|r| {
                r.state == JobState::Running
                    && r.ending_run.is_none()
                    && r.time_limit.zip(r.start_time).map(|(l, s)| s + l) == Some(at)
            });
            if due {
                effects.extend(self.begin_ending(id, JobState::Timeout, now));
            }
        }
        effects
    }

    /// The earliest time limit of a running batch job (perhaps one since changed).
    pub(super) fn next_time_limit(&self) -> Option<i64> {
        self.deadlines.first().map(|d| d.0)
    }
}

#[cfg(test)]
mod tests;
