//! Suspension by operators (`scontrol suspend`/`resume`): a running job's processes
//! are stopped on every node and continued later.
//!
//! A suspended job stays `Running` in the controller and in the core; its
//! [`Suspension`] says since when it is stopped, and its records say `SUSPENDED`. It
//! keeps every resource it holds (the core stretches its claim until it is resumed),
//! and its time limit runs out as much later as it stood suspended: the core moves its
//! claim's end, and each agent leaves suspended time out of the limit it enforces.

use sluice_core::JobId;
use sluice_proto::audit::AuditWhat;
use sluice_proto::error::{ApiError, ErrorCode};
use sluice_proto::types::{JobState, StepId, Suspension};

use super::{Caller, Controller, Effect};

/// Slurm 22.05's answer to `scontrol suspend`/`resume` of a job it does not know (its
/// `ESLURM_INVALID_JOB_ID` does not reach the command through this request).
pub const UNKNOWN_JOB: &str = "Unexpected message received";
/// Slurm's `ESLURM_JOB_PENDING`.
pub const JOB_PENDING: &str = "Job is pending execution";
/// Slurm's `ESLURM_JOB_NOT_SUSPENDED`.
pub const NOT_SUSPENDED: &str = "Job is not suspended";
/// Slurm's `ESLURM_ALREADY_DONE`.
pub const ALREADY_DONE: &str = "Job/step already completing or completed";
/// Slurm's `ESLURM_DISABLED`: an operator may not resume a job suspended by preemption
/// (it resumes when its preemptor's resources are free).
pub const SUSPENDED_BY_PREEMPTION: &str = "Requested operation is presently disabled";

impl Controller {
    /// `scontrol suspend` (`suspend`) or `scontrol resume` of job `id`, by an operator
    /// (root or the controller's user). Suspending a suspended job changes nothing and
    /// is no error, as in Slurm.
    ///
    /// Errors (Slurm's messages): the caller is no operator; the job is unknown,
    /// pending, finished, or (resuming) not suspended.
    pub fn suspend(
        &mut self,
        id: JobId,
        suspend: bool,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::access_denied());
        }
        let r = self
            .jobs
            .get(&id)
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidJobId, UNKNOWN_JOB))?;
        match r.state {
            JobState::Pending => return Err(ApiError::invalid(JOB_PENDING)),
            // Told to end (cancelled, COMPLETING) while it runs: finished for Slurm.
            JobState::Running if suspend && r.suspension.is_none() && r.told_to_end() => {
                return Err(ApiError::invalid(ALREADY_DONE))
            }
            JobState::Running => {}
            _ => return Err(ApiError::invalid(ALREADY_DONE)),
        }
        match (suspend, r.suspended()) {
            (true, true) => return Ok(Vec::new()),
            (false, false) => return Err(ApiError::invalid(NOT_SUSPENDED)),
            _ => {}
        }
        if !suspend && (self.sched.suspended_for(id).is_some() || self.sched.time_sliced(id)) {
            // Its resources are its preemptor's (or another time-sliced job's) now: it
            // resumes when they are free (at its turn).
            return Err(ApiError::invalid(SUSPENDED_BY_PREEMPTION));
        }
        if suspend {
            self.sched.suspend(id, now);
        } else {
            self.sched.resume(id, now);
        }
        tracing::info!(
            "{} JobId={id} by uid {}",
            if suspend { "suspend" } else { "resume" },
            caller.uid
        );
        let by = Some(caller.uid);
        let what = if suspend {
            AuditWhat::Suspended { by }
        } else {
            AuditWhat::Resumed { by }
        };
        let mut effects = self.mark_suspended(id, suspend, None, what, now);
        effects.extend(self.schedule(now));
        Ok(effects)
    }

    /// Job `id`'s record is suspended (or resumed) at `now` — `for_job`: by preemption,
    /// for that job —, written down, and its processes stopped (or continued) on every
    /// node. The core has done its part already.
    fn mark_suspended(
        &mut self,
        id: JobId,
        suspend: bool,
        for_job: Option<JobId>,
        what: AuditWhat,
        now: i64,
    ) -> Vec<Effect> {
        let Some(r) = self.jobs.get_mut(&id) else {
            return Vec::new();
        };
        let start = r.start_time.unwrap_or(now);
        let mut s = r.suspension.as_deref().copied().unwrap_or_default();
        if suspend {
            s.pre_secs = (now - start - s.secs).max(0);
            s.since = Some(now);
            s.for_job = for_job.map(|j| j.0);
        } else {
            s.secs = s.secs_at(now);
            s.since = None;
            s.for_job = None;
        }
        let ended = (!suspend)
            .then_some(r.suspension.as_ref().and_then(|s| s.since))
            .flatten();
        s.changed = now;
        r.suspension = Some(Box::new(s));
        let run = r.restarts;
        let r = &self.jobs[&id];
        self.audit.push(now, r, what);
        let mut effects = vec![self.persist(id)];
        // A suspension that is over: each step of the run still going counts its part
        // (a step started later was never suspended).
        if let Some(since) = ended {
            let steps = self
                .steps
                .range_mut((id, StepId::Batch)..=(id, StepId::LAST))
                .map(|(_, s)| s)
                .filter(|s| s.run == run && s.end.is_none());
            for step in steps {
                step.suspended_secs += (now - since.max(step.start)).max(0);
                effects.push(Effect::PersistStep(Box::new(step.clone())));
            }
        }
        effects.push(Effect::Suspend {
            nodes: self.node_names(r),
            job_id: id,
            suspend,
        });
        effects
    }

    /// The core suspended `victim` for `by` (`PreemptMode=SUSPEND`): its record says
    /// so and its processes are stopped before `by` starts on its resources.
    pub(super) fn preempt_suspended(&mut self, victim: JobId, by: JobId, now: i64) -> Vec<Effect> {
        tracing::info!("suspending JobId={victim} for JobId={by} (preemption)");
        let what = AuditWhat::Suspended { by: None };
        self.mark_suspended(victim, true, Some(by), what, now)
    }

    /// The core suspended running job `id` for gang time-slicing (another job's turn on
    /// its processors): its record says so and its processes are stopped.
    pub(super) fn slice_suspended(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        tracing::info!("gang: suspending JobId={id} (time slice)");
        let what = AuditWhat::Suspended { by: None };
        self.mark_suspended(id, true, Some(id), what, now)
    }

    /// The core resumed `id`, suspended by preemption or time-slicing: its resources
    /// are free again.
    pub(super) fn preempt_resumed(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        tracing::info!("resuming JobId={id}, suspended by preemption or time slice");
        let what = AuditWhat::Resumed { by: None };
        self.mark_suspended(id, false, None, what, now)
    }

    /// A restored job's suspension by an operator, given back to the core (a controller
    /// restart).
    pub(super) fn restore_suspension(&mut self, id: JobId, s: Suspension, now: i64) {
        self.sched.restore_suspension(id, s.since, s.secs, now);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_proto::error::ApiError;
    use sluice_proto::types::{JobState, Suspension};

    use super::super::tests::{alice, conf, desc, root, submit};
    use super::super::{Controller, Effect};
    use super::{ALREADY_DONE, JOB_PENDING, NOT_SUSPENDED, UNKNOWN_JOB};
    use sluice_core::JobId;

    fn suspend_orders(effects: &[Effect]) -> Vec<(JobId, Vec<String>, bool)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Suspend {
                    nodes,
                    job_id,
                    suspend,
                } => Some((*job_id, nodes.clone(), *suspend)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_operator_suspends_and_resumes_a_running_job_which_keeps_its_node() {
        // One node of one CPU. Job a runs from 0 (600 s); job b waits for the node.
        // t=100 root suspends a: SUSPENDED, its agent stops it, b still waits (a keeps
        //       the node); SuspendTime 100, SecsPreSuspend 100.
        // t=160 root resumes a: RUNNING again after 60 s suspended; its run time at
        //       200 is 140 s, and it now ends at 660.
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (a, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        let (b, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);

        let effects = c.suspend(a, true, &root(), 100).unwrap();
        assert_eq!(
            suspend_orders(&effects),
            vec![(a, vec!["node01".into()], true)]
        );
        let r = c.job(a).unwrap();
        assert_eq!((r.state, r.priority), (JobState::Suspended, 0));
        assert_eq!(
            r.suspension,
            Some(Suspension {
                since: Some(100),
                changed: 100,
                pre_secs: 100,
                secs: 0,
                for_job: None,
            })
        );
        assert_eq!(
            r.run_secs(130),
            100,
            "run time stands still while suspended"
        );
        assert_eq!(c.job(b).unwrap().state, JobState::Pending);
        c.schedule(120);
        assert_eq!(
            c.job(b).unwrap().state,
            JobState::Pending,
            "a keeps its node"
        );
        let e = c.explain(a, None, &root(), 130).unwrap();
        assert!(
            e.history
                .iter()
                .any(|l| l.starts_with("suspended by an operator since ")
                    && l.contains("after running 00:01:40")),
            "{:?}",
            e.history
        );
        assert!(!e
            .history
            .iter()
            .any(|l| l.starts_with("reaches its time limit")));
        // Suspending it again changes nothing, as in Slurm.
        assert_eq!(c.suspend(a, true, &root(), 110), Ok(Vec::new()));

        let effects = c.suspend(a, false, &root(), 160).unwrap();
        assert_eq!(
            suspend_orders(&effects),
            vec![(a, vec!["node01".into()], false)]
        );
        let r = c.job(a).unwrap();
        assert_eq!(r.state, JobState::Running);
        assert_eq!(r.run_secs(200), 140);
        assert_eq!(r.limit_end(), Some(660));
        assert_eq!(
            r.suspension
                .map(|s| (s.since, s.changed, s.pre_secs, s.secs)),
            Some((None, 160, 100, 60))
        );
        assert_eq!(c.sched.job(a).unwrap().expected_end(), Some(660));
        let e = c.explain(a, None, &root(), 200).unwrap();
        assert!(
            e.history.contains(
                &"stood suspended 00:01:00 in all; its time limit moved on by that".into()
            ),
            "{:?}",
            e.history
        );
        let end = sluice_proto::time::timestamp(660);
        assert!(
            e.history
                .contains(&format!("reaches its time limit at {end}")),
            "{:?}",
            e.history
        );
    }

    /// Launches (job ids) and suspend orders among `effects`, in order: `launch 2`,
    /// `stop 2`, `continue 1`.
    fn launches_and_orders(effects: &[Effect]) -> Vec<String> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Launch { order, .. } => Some(format!("launch {}", order.job.id)),
                Effect::Suspend {
                    job_id, suspend, ..
                } => Some(format!(
                    "{} {job_id}",
                    if *suspend { "stop" } else { "continue" }
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn time_sliced_jobs_are_launched_stopped_and_continued_in_turn() {
        // One node of 4 CPUs in a partition OverSubscribe=FORCE:2, PreemptMode=GANG,
        // SchedulerTimeSlice=10.
        // t=0  job 1 (4 CPUs) runs.
        // t=1  job 2 (4 CPUs) is launched on the same CPUs and stopped at once:
        //      SUSPENDED since 1; the controller's next wake-up is the slice at 11.
        // t=11 job 1 runs on (it started beside nobody: Slurm's first slice keeps it).
        // t=21 job 1 is stopped, then job 2 continued; job 2 stood suspended 20 s, so
        //      its limit ends at 1 + 600 + 20.
        // An operator may not resume a job waiting for its turn.
        let mut cf = conf(1, 4);
        cf.cluster.partitions[0].oversubscribe =
            sluice_core::partition_policy::OverSubscribe::Force(2);
        cf.cluster.preempt.gang = true;
        cf.cluster.preempt.time_slice = 10;
        let mut c = Controller::new(cf, Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (a, _) = submit(&mut c, desc(4, 600), &mut next, 0);
        assert_eq!(launches_and_orders(&c.schedule(0)), ["launch 1"]);
        let (b, _) = submit(&mut c, desc(4, 600), &mut next, 1);
        assert_eq!(launches_and_orders(&c.schedule(1)), ["launch 2", "stop 2"]);
        let r = c.job(b).unwrap();
        assert_eq!(r.state, JobState::Suspended);
        assert_eq!(r.start_time, Some(1));
        assert_eq!(r.suspension.and_then(|s| s.since), Some(1));
        assert_eq!(c.next_wakeup(), Some(11));
        assert_eq!(
            c.suspend(b, false, &root(), 5).map_err(|e| e.message),
            Err(super::SUSPENDED_BY_PREEMPTION.into())
        );

        assert!(launches_and_orders(&c.schedule(11)).is_empty());
        assert_eq!(
            launches_and_orders(&c.schedule(21)),
            ["stop 1", "continue 2"]
        );
        assert_eq!(c.job(a).unwrap().state, JobState::Suspended);
        let r = c.job(b).unwrap();
        assert_eq!(r.state, JobState::Running);
        assert_eq!(r.limit_end(), Some(621));
        assert_eq!(
            launches_and_orders(&c.schedule(31)),
            ["stop 2", "continue 1"]
        );

        // A restart at 35: job 1 runs on, job 2 waits for its turn again; the slices
        // start over from the first pass (45 keeps job 1, which came back running, and
        // 55 hands the node to job 2).
        let (jobs, steps) = c.accounting();
        let mut cf = conf(1, 4);
        cf.cluster.partitions[0].oversubscribe =
            sluice_core::partition_policy::OverSubscribe::Force(2);
        cf.cluster.preempt.gang = true;
        cf.cluster.preempt.time_slice = 10;
        let mut c = Controller::new(cf, Path::new("/s"), jobs, steps, 35);
        c.agent_registered("node01", &[(a, 0), (b, 0)], 35);
        assert!(launches_and_orders(&c.schedule(35)).is_empty());
        assert_eq!(c.job(b).unwrap().state, JobState::Suspended);
        assert!(launches_and_orders(&c.schedule(45)).is_empty());
        assert_eq!(
            launches_and_orders(&c.schedule(55)),
            ["stop 1", "continue 2"]
        );
        assert_eq!(c.job(b).unwrap().limit_end(), Some(1 + 600 + 20 + 24));
    }

    #[test]
    fn under_yes_n_a_job_shares_its_cpus_only_when_it_asks_to_oversubscribe() {
        // One node of 4 CPUs, OverSubscribe=YES:2, PreemptMode=GANG. Job 1 and job 2
        // ask --oversubscribe: job 2 is launched on job 1's CPUs and stopped. Job 3 does
        // not ask: it waits.
        let mut cf = conf(1, 4);
        cf.cluster.partitions[0].oversubscribe =
            sluice_core::partition_policy::OverSubscribe::Yes(2);
        cf.cluster.preempt.gang = true;
        let mut c = Controller::new(cf, Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let sharing = || sluice_proto::types::JobDescription {
            oversubscribe: true,
            ..desc(4, 600)
        };
        submit(&mut c, sharing(), &mut next, 0);
        assert_eq!(launches_and_orders(&c.schedule(0)), ["launch 1"]);
        let (b, _) = submit(&mut c, sharing(), &mut next, 1);
        assert_eq!(launches_and_orders(&c.schedule(1)), ["launch 2", "stop 2"]);
        assert_eq!(c.job(b).unwrap().state, JobState::Suspended);
        let (d, _) = submit(&mut c, desc(4, 600), &mut next, 2);
        assert!(launches_and_orders(&c.schedule(2)).is_empty());
        assert_eq!(c.job(d).unwrap().state, JobState::Pending);
    }

    #[test]
    fn refusals_use_slurms_words_and_change_nothing() {
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (a, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        let (b, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        // Only operators, even for one's own job.
        assert_eq!(
            c.suspend(a, true, &alice(), 10),
            Err(ApiError::access_denied())
        );
        let err = |c: &mut Controller, id, suspend| {
            c.suspend(id, suspend, &root(), 10).map_err(|e| e.message)
        };
        assert_eq!(err(&mut c, b, true), Err(JOB_PENDING.into()));
        assert_eq!(err(&mut c, b, false), Err(JOB_PENDING.into()));
        assert_eq!(err(&mut c, a, false), Err(NOT_SUSPENDED.into()));
        assert_eq!(err(&mut c, JobId(99), true), Err(UNKNOWN_JOB.into()));
        assert!(c.job(a).unwrap().suspension.is_none());
        let req = sluice_proto::types::CancelRequest {
            jobs: vec![(b.0, None)],
            ..Default::default()
        };
        c.cancel(&req, &alice(), 20).unwrap();
        assert_eq!(err(&mut c, b, true), Err(ALREADY_DONE.into()));
        // Cancelled while it runs, COMPLETING until its processes are gone.
        let req = sluice_proto::types::CancelRequest {
            jobs: vec![(a.0, None)],
            ..Default::default()
        };
        c.cancel(&req, &alice(), 21).unwrap();
        assert_eq!(c.job(a).unwrap().state, JobState::Running, "still ending");
        assert_eq!(err(&mut c, a, true), Err(ALREADY_DONE.into()));
        assert!(c.job(a).unwrap().suspension.is_none());
    }

    #[test]
    fn a_restart_keeps_a_suspended_job_suspended_on_its_node() {
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (a, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        c.suspend(a, true, &root(), 50).unwrap();
        let (b, _) = submit(&mut c, desc(1, 600), &mut next, 60);
        let (jobs, steps) = c.accounting();
        let mut c2 = Controller::new(conf(1, 1), Path::new("/s"), jobs, steps, 700);
        c2.agent_registered("node01", &[(a, 0)], 700);
        c2.schedule(700);
        let r = c2.job(a).unwrap();
        assert_eq!(
            r.state,
            JobState::Suspended,
            "past its old end, still suspended"
        );
        assert_eq!(c2.job(b).unwrap().state, JobState::Pending);
        c2.suspend(a, false, &root(), 710).unwrap();
        assert_eq!(c2.job(a).unwrap().limit_end(), Some(1260));
    }
}
