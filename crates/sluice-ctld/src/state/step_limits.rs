//! Steps' own time limits (`srun -t` inside an allocation), as slurmctld's
//! `check_job_step_time_limit` enforces them: a step that has run its limit, its
//! job's suspensions left out, is ended on its nodes (SIGTERM, SIGKILL after
//! `KillWait`), its srun told it was cancelled due to its time limit, and it is
//! recorded `TIMEOUT`. Its job runs on.

use sluice_core::JobId;
use sluice_proto::types::{JobState, StepId, StepRecord};

use super::{Controller, Effect};

impl Controller {
    /// Notes when running step `s` reaches its own time limit (at its start, and at a
    /// restart), for [`Controller::step_limits_due`].
    pub(super) fn note_step_deadline(&mut self, s: &StepRecord) {
        if let (JobState::Running, Some(limit), StepId::Number(_) | StepId::Part(..)) =
            (s.state, s.time_limit, s.step)
        {
            self.step_deadlines.insert((
                s.start + limit + s.suspended_secs,
                JobId(s.job_id),
                s.step,
            ));
        }
    }

    /// The steps that have reached their own time limit by `now` are told to end.
    /// Entries are checked when due: a step since ended is passed over, and one whose
    /// job was suspended meanwhile is noted again for its later deadline.
    pub(super) fn step_limits_due(&mut self, now: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        while let Some(&(at, job, step)) = self.step_deadlines.first() {
            if at > now {
                break;
            }
            self.step_deadlines.remove(&(at, job, step));
            let Some(r) = self.jobs.get(&job) else {
                continue;
            };
            let suspension = r.suspension.as_deref();
            let Some(s) = self.steps.get_mut(&(job, step)) else {
                continue;
            };
            let Some(limit) = s.time_limit.filter(|_| s.state == JobState::Running) else {
                continue;
            };
            if s.timed_out {
                continue;
            }
            // As Slurm's: the limit does not run while the job is suspended.
            let due = s.start + limit + s.suspended_secs_at(suspension, now);
            if due > now || suspension.is_some_and(|x| x.since.is_some()) {
                self.step_deadlines.insert((due.max(now + 1), job, step));
                continue;
            }
            s.timed_out = true;
            tracing::info!("Step {job}.{} has timed out ({limit}s)", s.step);
            let number = match s.step {
                StepId::Number(n) | StepId::Part(n, _) => n,
                _ => continue,
            };
            effects.push(Effect::PersistStep(Box::new(s.clone())));
            effects.push(Effect::TerminateStep {
                nodes: s.nodes.clone(),
                job_id: job,
                step: number,
                kill_wait: self.conf.kill_wait,
                time_limit: true,
            });
        }
        effects
    }

    /// The earliest own time limit of a running step (perhaps of one since ended).
    pub(super) fn next_step_time_limit(&self) -> Option<i64> {
        self.step_deadlines.first().map(|d| d.0)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_core::JobId;
    use sluice_proto::types::{JobState, StepId, StepRequest};

    use crate::state::tests::{alice, conf, desc, submit};
    use crate::state::{Controller, Effect};

    #[test]
    fn a_step_at_its_own_time_limit_is_ended_and_recorded_timeout_while_its_job_runs_on() {
        // A job on one node; at 10 its srun starts a step with `-t 1` (60 s).
        let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(5);
        let req = StepRequest {
            name: "sleep".into(),
            time_limit: Some(60),
            ..Default::default()
        };
        c.start_step(id, &req, &alice(), 10).unwrap();
        assert_eq!(c.next_step_time_limit(), Some(70));
        assert!(c.step_limits_due(69).is_empty(), "not yet");
        let effects = c.step_limits_due(70);
        assert!(
            effects.iter().any(|e| matches!(
                e,
                Effect::TerminateStep { job_id, step: 0, nodes, time_limit: true, .. } if *job_id == id && nodes.len() == 1
            )),
            "{effects:?}"
        );
        assert!(c.step_limits_due(100).is_empty(), "told once");
        // Its srun reports the tasks ended by SIGTERM: TIMEOUT, 0:15; the job runs on.
        c.end_step(id, StepId::Number(0), 0, 15, &alice(), 72)
            .unwrap();
        let s = &c.steps[&(id, StepId::Number(0))];
        assert_eq!((s.state, s.exit_code, s.signal), (JobState::Timeout, 0, 15));
        assert_eq!(c.jobs[&id].state, JobState::Running);
    }

    #[test]
    fn a_step_without_a_limit_of_its_own_or_ended_before_it_is_left_alone() {
        let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(5);
        let plain = StepRequest {
            name: "a".into(),
            overlap: true,
            ..Default::default()
        };
        c.start_step(id, &plain, &alice(), 10).unwrap();
        let limited = StepRequest {
            name: "b".into(),
            overlap: true,
            time_limit: Some(60),
            ..Default::default()
        };
        c.start_step(id, &limited, &alice(), 10).unwrap();
        c.end_step(id, StepId::Number(1), 0, 0, &alice(), 30)
            .unwrap();
        assert!(c.step_limits_due(1000).is_empty());
        assert_eq!(c.steps[&(id, StepId::Number(1))].state, JobState::Completed);
        assert_eq!(
            c.jobs.get(&JobId(id.0)).map(|r| r.state),
            Some(JobState::Running)
        );
    }
}
