//! `scontrol requeue` and `requeuehold`: a job's run goes back to the queue under its
//! id ([`Controller::requeue_run`] does the work, for preemption too), with Slurm's
//! flags (`Incomplete`, `State=SpecialExit`) and its answers: a pending job is
//! refused, and an array's tasks are answered a line per group of tasks alike.

use sluice_core::JobId;
use sluice_proto::audit::RequeueCause;
use sluice_proto::error::ApiError;
use sluice_proto::types::{Hold, JobState, RequeueFlags};

use super::job::Job;
use super::suspend::JOB_PENDING;
use super::{Caller, Controller, Effect, INVALID_JOB_ID, NOT_HET_LEADER};

/// Slurm's `ESLURM_DISABLED`: a job submitted `--no-requeue`, an array cancelled
/// before its tasks started.
const DISABLED: &str = "Requested operation is presently disabled";

impl Controller {
    /// `scontrol requeue`: a running (or finished) batch job goes back to the queue under
    /// the same id; its output is appended on the next run. A running job waits
    /// (`BeginTime`) until its agent reports the run ended; unlike Slurm there is no
    /// two-minute hold beyond that.
    pub fn requeue(
        &mut self,
        job: JobId,
        task: Option<u32>,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let (effects, _) = self.requeue_as(job, task, RequeueFlags::default(), caller, now)?;
        Ok(effects)
    }

    /// Requeues record `id` alone as an operator does (a node lost under it, `scontrol
    /// update` draining its node): an array task by its index, never the whole array
    /// its record may carry the id of.
    pub(super) fn requeue_record(&mut self, id: JobId, now: i64) -> Result<Vec<Effect>, ApiError> {
        let admin = Caller {
            uid: 0,
            gid: 0,
            admin: true,
        };
        let (job, task) = match self.jobs.get(&id).and_then(|r| r.array) {
            Some((array, task)) => (array, Some(task)),
            None => (id, None),
        };
        self.requeue(job, task, &admin, now)
    }

    /// `scontrol requeue [Incomplete]` and `requeuehold [State=SpecialExit]`, as
    /// [`Controller::requeue`] with `flags`: [`Controller::requeue_tasks`] of job `job`,
    /// or of task `task` of array `job`.
    pub fn requeue_as(
        &mut self,
        job: JobId,
        task: Option<u32>,
        flags: RequeueFlags,
        caller: &Caller,
        now: i64,
    ) -> Result<(Vec<Effect>, Vec<String>), ApiError> {
        let tasks = task.as_ref().map(std::slice::from_ref);
        self.requeue_tasks(job, tasks, flags, caller, now)
    }

    /// `scontrol requeue [Incomplete] ID[_TASKS]` and `requeuehold [State=SpecialExit]`:
    /// job `job`, or `tasks` of array `job` in one request (`4_1-3`, `4_[1,5]`). A
    /// pending job is refused (`Job is pending execution`); with `Incomplete`, a job
    /// neither running nor suspended is left as it is. For an array's tasks, Slurm's
    /// answer is a line per group of tasks alike when any was refused or missing (the
    /// second value; the others are requeued all the same).
    pub fn requeue_tasks(
        &mut self,
        job: JobId,
        tasks: Option<&[u32]>,
        flags: RequeueFlags,
        caller: &Caller,
        now: i64,
    ) -> Result<(Vec<Effect>, Vec<String>), ApiError> {
        // Ends, cancellations and releases may let held-back jobs in.
        self.outside_dirty = true;
        // A heterogeneous job is requeued whole, by its leader's id (Slurm's
        // `_job_requeue`: ESLURM_NOT_HET_JOB_LEADER for another component).
        if tasks.is_none()
            && self
                .jobs
                .get(&job)
                .is_some_and(|r| r.het.is_some_and(|h| h.offset > 0))
        {
            return Err(ApiError::invalid(NOT_HET_LEADER));
        }
        let (mut ids, missing) = self.select_tasks(job, tasks);
        // An array cancelled before its tasks started is not put back (Slurm puts
        // every one of them back, whichever was named: COMPATIBILITY.md).
        let folded = self.folded_tasks(job).map(<[u32]>::to_vec);
        if folded.is_some() && !Self::may_touch(caller, &self.jobs[&job]) {
            return Err(ApiError::access_denied());
        }
        if folded.is_some() && tasks.is_none() {
            return Err(ApiError::invalid(DISABLED));
        }
        let disabled = match folded {
            Some(f) if ids.contains(&job) => {
                ids.retain(|&id| id != job);
                f
            }
            _ => Vec::new(),
        };
        if ids.is_empty() && !disabled.is_empty() {
            let groups = vec![(disabled, DISABLED), (missing, INVALID_JOB_ID)];
            return Ok((Vec::new(), super::task_groups(job, groups)));
        }
        if ids.is_empty() {
            return self
                .missing_tasks(job, tasks.unwrap_or_default())
                .map(|l| (Vec::new(), l));
        }
        let selected = ids.clone();
        // Every id is checked before any is touched: a refusal changes nothing.
        for id in &ids {
            let r = &self.jobs[id];
            if !Self::may_touch(caller, r) {
                return Err(ApiError::access_denied());
            }
            if r.desc.requeue == Some(false) {
                return Err(ApiError::invalid(DISABLED));
            }
            if r.desc.interactive {
                // Nobody would be there to use it again (Slurm requeues batch jobs only).
                return Err(ApiError::invalid(
                    "Only batch jobs are accepted or processed",
                ));
            }
        }
        // `Incomplete` leaves a job that no longer runs alone; a pending job has no
        // run to put back.
        let left = |r: &Job| {
            flags.incomplete && !matches!(r.state, JobState::Running | JobState::Suspended)
        };
        let (refused, ids): (Vec<JobId>, Vec<JobId>) = ids
            .into_iter()
            .filter(|id| !left(&self.jobs[id]))
            .partition(|id| self.jobs[id].state == JobState::Pending);
        let array = self.jobs[&selected[0]].array.is_some() || tasks.is_some();
        if !refused.is_empty() && !array {
            return Err(ApiError::invalid(JOB_PENDING));
        }
        let mut effects = Vec::new();
        for &id in &ids {
            let cause = RequeueCause::Request {
                by: Some(caller.uid),
            };
            // A run lost with its node is recorded as Slurm's accounting has it
            // (`kill_running_job_by_node_name`): NODE_FAIL, then the job runs again.
            let ended_as = match self.audit.failing {
                Some((f, state)) if f == id => state,
                _ => JobState::Requeued,
            };
            self.audit_requeued(id, cause, ended_as, now);
            tracing::info!(
                "{}",
                if self.audit.failing.is_some_and(|f| f.0 == id) {
                    format!(
                        "requeue JobId={id} due to failure of node {}",
                        self.node_names(&self.jobs[&id]).join(",")
                    )
                } else {
                    format!("Requeuing JobId={id} by uid {}", caller.uid)
                }
            );
            effects.extend(self.requeue_run(id, ended_as, true, now));
            if flags.hold || flags.special_exit {
                // Slurm's `JOB_REQUEUE_HOLD`: the owner's hold, in its own words.
                self.audit_hold(id, true, false, caller, now);
                let r = self.jobs.get_mut(&id).expect("exists");
                r.hold = Some(if flags.special_exit {
                    Hold::SpecialExit
                } else {
                    Hold::Requeued
                });
                effects.push(self.persist(id));
            }
        }
        let notes = if refused.is_empty() && missing.is_empty() && disabled.is_empty() {
            Vec::new()
        } else {
            self.array_answer(&selected, &refused, &missing, disabled)
        };
        effects.extend(self.schedule(now));
        Ok((effects, notes))
    }

    /// Slurm's lines for a requeue of the array tasks `selected` (records), of which
    /// `refused` were pending, and of tasks `missing` the array lacks: the pending tasks
    /// not split from the array's record stand together (Slurm answers for that record,
    /// whichever of its tasks was named), each other refused task on its own, the tasks
    /// requeued (`No error`), those missing (`Invalid job id specified`) and those
    /// `disabled` (of an array cancelled before they started), a line per group in task
    /// order.
    fn array_answer(
        &self,
        selected: &[JobId],
        refused: &[JobId],
        missing: &[u32],
        disabled: Vec<u32>,
    ) -> Vec<String> {
        let array = self.jobs[&selected[0]].array.map_or(selected[0], |a| a.0);
        let task_of = |id: &JobId| self.jobs[id].array.map_or(0, |a| a.1);
        let mut pending: Vec<u32> = Vec::new();
        for id in refused {
            let r = &self.jobs[id];
            if r.split_off() {
                pending.push(task_of(id));
            } else {
                pending.extend(
                    self.jobs
                        .values()
                        .filter(|j| {
                            j.array.is_some_and(|a| a.0 == array)
                                && j.state == JobState::Pending
                                && !j.split_off()
                        })
                        .map(|j| task_of(&j.id)),
                );
            }
        }
        pending.sort_unstable();
        pending.dedup();
        let done: Vec<u32> = selected
            .iter()
            .map(task_of)
            .filter(|t| pending.binary_search(t).is_err())
            .collect();
        super::task_groups(
            array,
            vec![
                (pending, JOB_PENDING),
                (done, "No error"),
                (missing.to_vec(), INVALID_JOB_ID),
                (disabled, DISABLED),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_core::JobId;
    use sluice_proto::types::{JobState, RequeueFlags};

    use super::super::tests::{alice, conf, desc, ended, held_array, launches, root, submit};
    use super::super::{Controller, Effect};
    use super::JOB_PENDING;

    const INCOMPLETE: RequeueFlags = RequeueFlags {
        incomplete: true,
        hold: false,
        special_exit: false,
    };

    fn persisted(effects: &[Effect], id: JobId) -> bool {
        effects
            .iter()
            .any(|e| matches!(e, Effect::Persist(r) if r.id == id.0))
    }

    #[test]
    fn a_pending_job_is_refused_and_incomplete_passes_over_jobs_that_no_longer_run() {
        // One CPU: `running` runs, `waiting` waits behind it.
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (running, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        let (waiting, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        // Slurm's ESLURM_JOB_PENDING, and nothing changes.
        let err = c.requeue(waiting, None, &alice(), 5).unwrap_err();
        assert_eq!(err.message, JOB_PENDING);
        assert_eq!(c.job(waiting).unwrap().restarts, 0);
        // `Incomplete`: no error, and the pending job is left as it was.
        let (effects, lines) = c
            .requeue_as(waiting, None, INCOMPLETE, &alice(), 5)
            .unwrap();
        assert!(lines.is_empty());
        assert!(!persisted(&effects, waiting));
        assert_eq!(c.job(waiting).unwrap().restarts, 0);
        // The running job ends; `Incomplete` leaves it COMPLETED, a plain requeue
        // queues it again.
        c.job_ended(&ended(running, JobState::Completed, 0, 10), 10);
        let (effects, _) = c
            .requeue_as(running, None, INCOMPLETE, &alice(), 11)
            .unwrap();
        assert!(!persisted(&effects, running));
        assert_eq!(c.job(running).unwrap().state, JobState::Completed);
        c.requeue(running, None, &alice(), 12).unwrap();
        let r = c.job(running).unwrap();
        assert_eq!((r.state, r.restarts), (JobState::Pending, 1));
    }

    #[test]
    fn a_job_requeued_held_waits_in_slurms_words_until_its_owner_releases_it() {
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        let flags = RequeueFlags {
            hold: true,
            special_exit: true,
            ..Default::default()
        };
        c.requeue_as(id, None, flags, &alice(), 5).unwrap();
        let first_end = sluice_proto::types::JobEnded {
            run: 0,
            ..ended(id, JobState::Requeued, 0, 6)
        };
        // Its first run over, it still waits: held.
        assert!(launches(&c.job_ended(&first_end, 6)).is_empty());
        let r = c.job(id).unwrap();
        assert_eq!(
            (r.shown_state(), r.shown_state_short(), r.reason.as_str()),
            ("SPECIAL_EXIT", "SE", "job requeued in held state")
        );
        // Its owner may release it (Slurm's user hold), and it runs again.
        let effects = c.set_hold(id, None, false, &alice(), 7).unwrap();
        assert_eq!(launches(&effects), vec![(1, vec!["node01".into()])]);
        assert_eq!(c.job(id).unwrap().shown_state(), "RUNNING");
    }

    #[test]
    fn tasks_named_together_are_answered_together_and_silently_when_all_are_requeued() {
        // --hold --array=0-3 as job 1 on four one-CPU nodes, all released and running.
        let (mut c, _) = held_array();
        let array = JobId(1);
        assert_eq!(
            launches(&c.set_hold(array, None, false, &alice(), 1).unwrap()).len(),
            4
        );
        let held = RequeueFlags {
            hold: true,
            ..Default::default()
        };
        // `requeuehold 1_[0-1]`: both requeued, nothing to say.
        let (_, lines) = c
            .requeue_tasks(array, Some(&[0, 1]), held, &alice(), 2)
            .unwrap();
        assert!(lines.is_empty(), "{lines:?}");
        // `requeue 1_[1-2,5-6]`: task 1 waits, 2 is requeued, 5 and 6 are no tasks.
        let (_, lines) = c
            .requeue_tasks(array, Some(&[1, 2, 5, 6]), held, &alice(), 3)
            .unwrap();
        assert_eq!(
            lines,
            [
                "1_1: Job is pending execution",
                "1_2: No error",
                "1_5-6: Invalid job id specified"
            ]
        );
        let restarts: Vec<u32> = (0..4)
            .map(|t| c.job(c.task_record(array, t).unwrap()).unwrap().restarts)
            .collect();
        assert_eq!(restarts, [1, 1, 1, 0]);
        // Only tasks the array lacks: their line, and nothing changes.
        let (effects, lines) = c
            .requeue_tasks(array, Some(&[8, 9]), held, &alice(), 4)
            .unwrap();
        assert!(effects.is_empty());
        assert_eq!(lines, ["1_8-9: Invalid job id specified"]);
    }

    #[test]
    fn tasks_held_together_are_answered_with_those_the_array_lacks() {
        // --hold --array=0-3 as job 1 on four one-CPU nodes; task 0 released, running.
        let (mut c, _) = held_array();
        let array = JobId(1);
        assert_eq!(
            launches(&c.set_hold(array, Some(0), false, &alice(), 1).unwrap()).len(),
            1
        );
        // `release 1_[1-2]`: both released, nothing to say; they start.
        let (effects, lines) = c
            .hold_verb(array, Some(&[1, 2]), false, false, &alice(), 2)
            .unwrap();
        assert!(lines.is_empty(), "{lines:?}");
        assert_eq!(launches(&effects).len(), 2);
        // `hold 1_2-5`: tasks 2 (running) and 3 held, 4 and 5 the array lacks.
        let (_, lines) = c
            .hold_verb(array, Some(&[2, 3, 4, 5]), true, false, &alice(), 3)
            .unwrap();
        assert_eq!(
            lines,
            ["1_2-3: No error", "1_4-5: Invalid job id specified"]
        );
        let held: Vec<bool> = (0..4)
            .map(|t| c.job(c.task_record(array, t).unwrap()).unwrap().held())
            .collect();
        assert_eq!(held, [false, false, true, true]);
        // Only tasks it lacks: their line alone.
        let (_, lines) = c
            .hold_verb(array, Some(&[7, 8]), true, false, &alice(), 4)
            .unwrap();
        assert_eq!(lines, ["1_7-8: Invalid job id specified"]);
        // Task 0 ends: named with others, it is answered for on its own, and they are
        // released all the same.
        let task0 = c.task_record(array, 0).unwrap();
        let end = sluice_proto::types::JobEnded {
            node: c.job(task0).unwrap().nodes[0].clone(),
            ..ended(task0, JobState::Completed, 0, 5)
        };
        c.job_ended(&end, 5);
        let (_, lines) = c
            .hold_verb(array, Some(&[0, 2, 3]), false, false, &alice(), 6)
            .unwrap();
        assert_eq!(lines, ["1_0: Job has already finished", "1_2-3: No error"]);
        let held: Vec<bool> = (2..4)
            .map(|t| c.job(c.task_record(array, t).unwrap()).unwrap().held())
            .collect();
        assert_eq!(held, [false, false]);
    }

    #[test]
    fn a_job_being_cancelled_is_requeued_without_being_told_to_end_again() {
        // As Slurm takes a COMPLETING job (compat scenario 265): one one-CPU node.
        let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(0);
        let terminates = |effects: &[Effect]| {
            effects
                .iter()
                .filter(|e| matches!(e, Effect::Terminate { .. }))
                .count()
        };
        let cancel = sluice_proto::types::CancelRequest {
            jobs: vec![(id.0, None)],
            ..Default::default()
        };
        assert_eq!(
            terminates(&c.cancel(&cancel, &alice(), 1).unwrap().effects),
            1
        );
        // Its batch script's SIGTERM trap is running: no second order for it.
        let (effects, _) = c
            .requeue_as(id, None, Default::default(), &alice(), 2)
            .unwrap();
        assert_eq!(terminates(&effects), 0, "{effects:?}");
        assert_eq!(c.job(id).unwrap().shown_state(), "COMPLETING");
        // Once that run has ended, the job runs again, no longer cancelled.
        let end = ended(id, JobState::Cancelled, 0, 3);
        assert_eq!(launches(&c.job_ended(&end, 3)).len(), 1);
        let r = c.job(id).unwrap();
        assert_eq!(
            (r.state, r.restarts, r.cancelled_by),
            (JobState::Running, 1, None)
        );
    }

    #[test]
    fn a_running_job_held_runs_on_at_priority_0_and_requeued_comes_back_held() {
        // As Slurm 22.05 (compat scenario 264): two one-CPU nodes, two jobs running.
        let mut c = Controller::new(conf(2, 1), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (held, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        let (ends, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        assert_eq!(launches(&c.schedule(0)).len(), 2);
        let shown = |c: &Controller, id: JobId| {
            let r = c.job(id).unwrap();
            (r.state, r.reason, r.priority)
        };
        let priority = c.job(held).unwrap().priority;
        assert!(priority > 0);
        let accrued = c.job(held).unwrap().accrue_time;
        assert!(accrued.is_some());
        // Held by its owner, it goes on running: priority 0, held as its reason, and
        // the time it accrued age from kept.
        c.set_hold(held, None, true, &alice(), 1).unwrap();
        assert_eq!(c.job(held).unwrap().accrue_time, accrued);
        assert_eq!(
            shown(&c, held),
            (JobState::Running, "JobHeldUser".into(), 0)
        );
        // Released, it has its priority back and no reason.
        c.set_hold(held, None, false, &alice(), 2).unwrap();
        assert_eq!(
            shown(&c, held),
            (JobState::Running, "None".into(), priority)
        );
        // Held again and requeued, it comes back held and does not start again.
        c.set_hold(held, None, true, &alice(), 3).unwrap();
        let (effects, _) = c
            .requeue_as(held, None, Default::default(), &alice(), 4)
            .unwrap();
        assert!(launches(&effects).is_empty());
        let back = sluice_proto::types::JobEnded {
            run: 0,
            ..ended(held, JobState::Requeued, 0, 5)
        };
        assert!(launches(&c.job_ended(&back, 5)).is_empty());
        assert_eq!(
            shown(&c, held),
            (JobState::Pending, "JobHeldUser".into(), 0)
        );
        // A job held while it runs and ending well keeps the hold as its reason.
        c.set_hold(ends, None, true, &alice(), 6).unwrap();
        c.job_ended(
            &sluice_proto::types::JobEnded {
                node: "node02".into(),
                ..ended(ends, JobState::Completed, 0, 7)
            },
            7,
        );
        assert_eq!(
            shown(&c, ends),
            (JobState::Completed, "JobHeldUser".into(), 0)
        );
    }

    #[test]
    fn a_node_lost_under_the_task_holding_the_arrays_id_requeues_that_task_alone() {
        // --hold --array=0-3 as job 1 on four one-CPU nodes; task 3 holds id 1.
        let (mut c, _) = held_array();
        let started = launches(&c.set_hold(JobId(1), None, false, &alice(), 1).unwrap());
        assert_eq!(started.len(), 4);
        let node = started.iter().find(|(id, _)| *id == 1).unwrap().1[0].clone();
        c.agent_lost(&node, 5);
        let restarts: Vec<(u64, u32)> = (1..=4)
            .map(|id| (id, c.job(JobId(id)).unwrap().restarts))
            .collect();
        assert_eq!(restarts, [(1, 1), (2, 0), (3, 0), (4, 0)]);
    }

    #[test]
    fn an_arrays_tasks_are_answered_a_line_per_group_as_slurm_answers() {
        // --hold --array=0-3 as job 1, four one-CPU nodes: tasks 0-2 are ids 2-4,
        // task 3 is id 1.
        let (mut c, _) = held_array();
        let array = JobId(1);
        let pending = vec!["1_0-3: Job is pending execution".to_string()];
        // Every task waits in the array's record: the record answers, whichever task
        // was named.
        let (_, lines) = c
            .requeue_as(array, None, Default::default(), &alice(), 1)
            .unwrap();
        assert_eq!(lines, pending);
        let (_, lines) = c
            .requeue_as(array, Some(2), Default::default(), &alice(), 1)
            .unwrap();
        assert_eq!(lines, pending);
        // A task the array lacks.
        let (_, lines) = c
            .requeue_as(array, Some(9), Default::default(), &alice(), 1)
            .unwrap();
        assert_eq!(lines, ["1_9: Invalid job id specified"]);
        let (_, lines) = c
            .hold_verb(array, Some(&[9]), true, false, &alice(), 1)
            .unwrap();
        assert_eq!(lines, ["1_9: Invalid job id specified"]);
        // Tasks of no job, as of a job that is no array, get that line too (compat
        // scenario 266); the bare id of no job is refused.
        let (_, lines) = c
            .hold_verb(JobId(77), Some(&[1, 2]), true, false, &alice(), 1)
            .unwrap();
        assert_eq!(lines, ["77_1-2: Invalid job id specified"]);
        let err = c
            .hold_verb(JobId(77), None, true, false, &alice(), 1)
            .unwrap_err();
        assert_eq!(err.message, "Invalid job id specified");
        // Task 3 runs: requeuing the array requeues it and refuses the others.
        let effects = c.set_hold(array, Some(3), false, &alice(), 2).unwrap();
        assert_eq!(launches(&effects).len(), 1);
        let (_, lines) = c
            .requeue_as(array, None, Default::default(), &alice(), 3)
            .unwrap();
        assert_eq!(lines, ["1_0-2: Job is pending execution", "1_3: No error"]);
        assert_eq!(c.job(array).unwrap().restarts, 1);
    }

    #[test]
    fn a_whole_array_is_answered_task_by_task_and_a_requeued_hold_keeps_saying_so() {
        // --hold --array=0-3 as job 1 on four one-CPU nodes (task 3 holds id 1).
        let (mut c, _) = held_array();
        let array = JobId(1);
        let reason = |c: &Controller, id: u64| c.job(JobId(id)).unwrap().reason;
        // Task 3 is released, runs and completes.
        let started = launches(&c.set_hold(array, Some(3), false, &alice(), 1).unwrap());
        let node = started[0].1[0].clone();
        c.job_ended(
            &sluice_proto::types::JobEnded {
                node,
                ..ended(array, JobState::Completed, 0, 2)
            },
            2,
        );
        // The array as a whole: its ended task is answered for, as in Slurm (compat
        // scenario 267); the others are released.
        let (effects, lines) = c.hold_verb(array, None, false, false, &alice(), 3).unwrap();
        assert_eq!(lines, ["1_0-2: No error", "1_3: Job has already finished"]);
        assert_eq!(launches(&effects).len(), 3);
        // An operator's hold of them all, the owner's release refused task by task.
        c.hold_verb(array, None, true, false, &root(), 4).unwrap();
        let (_, lines) = c.hold_verb(array, None, false, false, &alice(), 5).unwrap();
        assert_eq!(
            lines,
            [
                "1_0-2: Access/permission denied",
                "1_3: Job has already finished"
            ]
        );
        assert_eq!(reason(&c, 2), "JobHeldAdmin");
        // A job of its own, refused whole.
        let mut d = desc(1, 600);
        d.hold = true;
        let mut next = 10;
        let (own, _) = submit(&mut c, d, &mut next, 6);
        c.hold_verb(own, None, true, false, &root(), 6).unwrap();
        let err = c
            .hold_verb(own, None, false, false, &alice(), 7)
            .unwrap_err();
        assert_eq!(err.message, "Access/permission denied");
        // Requeued held, then held by an operator: it still says it was requeued, and
        // only an operator releases it; `uhold` gives it back to its owner.
        let (effects, _) = c.hold_verb(own, None, false, false, &root(), 8).unwrap();
        let node = launches(&effects)[0].1[0].clone();
        c.requeue_as(
            own,
            None,
            RequeueFlags {
                hold: true,
                ..Default::default()
            },
            &root(),
            9,
        )
        .unwrap();
        c.job_ended(
            &sluice_proto::types::JobEnded {
                run: 0,
                node,
                ..ended(own, JobState::Requeued, 0, 10)
            },
            10,
        );
        assert_eq!(c.job(own).unwrap().reason, "job requeued in held state");
        c.hold_verb(own, None, true, false, &root(), 11).unwrap();
        assert_eq!(c.job(own).unwrap().reason, "job requeued in held state");
        assert!(c.hold_verb(own, None, false, false, &alice(), 12).is_err());
        c.hold_verb(own, None, true, true, &root(), 13).unwrap();
        c.hold_verb(own, None, true, false, &alice(), 14).unwrap();
        assert_eq!(c.job(own).unwrap().reason, "job requeued in held state");
        let (effects, _) = c.hold_verb(own, None, false, false, &alice(), 15).unwrap();
        assert_eq!(launches(&effects).len(), 1, "released, it starts again");
    }

    #[test]
    fn job_requeue_0_makes_jobs_that_do_not_say_unrequeueable() {
        let mut conf = conf(1, 2);
        conf.job_requeue = false;
        let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (plain, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        let mut d = desc(1, 600);
        d.requeue = Some(true);
        let (asked, _) = submit(&mut c, d, &mut next, 0);
        c.schedule(0);
        assert_eq!(c.job(plain).unwrap().desc.requeue, Some(false));
        let err = c.requeue(plain, None, &alice(), 5).unwrap_err();
        assert_eq!(err.message, super::DISABLED);
        // `--requeue` says otherwise.
        c.requeue(asked, None, &alice(), 5).unwrap();
        assert_eq!(c.job(asked).unwrap().restarts, 1);
    }
}
