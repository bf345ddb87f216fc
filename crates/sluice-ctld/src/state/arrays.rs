//! Array tasks cancelled before they ever started.
//!
//! In Slurm an array's tasks that have not started live in one record, the array's
//! own (its "meta" record), until each starts and gets a record of its own. Cancelling
//! one of them by its id (`scancel 123_4`) takes it out of that record: it leaves no
//! record behind, so `squeue -t all` and `sacct` never show it. Sluice keeps a record
//! per task from the submission on; such a cancel deletes the task's record
//! ([`Effect::Forget`]) and takes its index out of the array's remainder. A task
//! changed on its own (split from the array's record, see [`Job::split_off`]) has a
//! record of its own in Slurm too, and keeps it, cancelled. The task
//! holding the array's own id (the last to start, see [`super::Prepared::records`])
//! hands that id on to the highest remaining unstarted task, whose own record goes
//! instead, so the array's id always names its remainder while there is one.
//!
//! Cancelling the whole array (`scancel 123`) cancels its meta record in Slurm: one
//! record, `123_[0,2-3]`, for every task that never started. Sluice forgets those
//! tasks' own records and keeps the array's, cancelled, naming them all
//! ([`Controller::fold_unstarted_into_array`]). Its tasks are named by their own ids
//! still (`hold 123_2`, `squeue -j 123_2`): they are found in that record
//! ([`Controller::folded_tasks`]), as Slurm finds them in its meta record.

use sluice_core::JobId;
use sluice_proto::types::JobState;

use super::{resolve_paths, Controller, Effect, Job};

impl Controller {
    /// Whether cancelling pending record `r` on its own would leave no record, as in
    /// Slurm: an array task that never started, and that is not the array's last such
    /// task (that one is the array's record itself, and is cancelled as such).
    pub(super) fn cancel_leaves_no_record(&self, r: &Job) -> bool {
        let Some((array, _)) = r.array else {
            return false;
        };
        unstarted(r) && (r.id != array || self.heir(array).is_some())
    }

    /// Cancels unstarted array task `id` without a record (see
    /// [`Controller::cancel_leaves_no_record`]).
    pub(super) fn forget_unstarted_task(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        let Some((array, index)) = self.jobs.get(&id).and_then(|r| r.array) else {
            return Vec::new();
        };
        if id != array {
            self.unqueue(id, now);
            self.jobs.remove(&id).expect("checked above");
            let mut effects = self.leave_remainder(id, Some((array, index)));
            effects.push(Effect::Forget(id));
            return effects;
        }
        // The array's own record: it takes over its heir's task, whose record goes.
        let Some(heir) = self.heir(array) else {
            return Vec::new();
        };
        self.unqueue(id, now);
        self.unqueue(heir, now);
        let old = self.jobs.remove(&id).expect("checked above");
        let mut r = self.jobs.remove(&heir).expect("an heir has a record");
        r.id = array;
        r.array_pending = old.array_pending.map(|mut pending| {
            pending.0.retain(|&t| t != index);
            pending
        });
        resolve_paths(&mut r, "%N");
        self.descs.names_of(&mut r);
        if let Ok(spec) = self.core_spec(&r) {
            self.sched.note_waiting(&spec);
        }
        self.jobs.insert(array, r);
        self.outside.insert(array);
        let mut effects = vec![Effect::Forget(heir), self.persist(array)];
        effects.extend(self.release(vec![array], now));
        effects
    }

    /// Whether pending record `r`, cancelled with its whole array, is folded into the
    /// array's own record rather than kept: a task that never started, other than the
    /// one holding the array's id.
    pub(super) fn folds_into_array(&self, r: &Job) -> bool {
        r.array.is_some_and(|(array, _)| array != r.id) && unstarted(r)
    }

    /// Cancels unstarted task `id` with its whole array: its record goes, its index
    /// stays in the array's remainder, which the array's own record, cancelled last,
    /// names ([`Controller::fold_unstarted_into_array`]).
    pub(super) fn forget_folded_task(&mut self, id: JobId, now: i64) -> Vec<Effect> {
        self.unqueue(id, now);
        self.jobs.remove(&id);
        vec![Effect::Forget(id)]
    }

    /// Makes the array's own record `array`, cancelled before it started, the record
    /// of every task of it that never started, as Slurm's meta record: it is shown as
    /// `123_[0,2-3]` (its remainder) rather than as its own task, when more than one
    /// task is left.
    pub(super) fn fold_unstarted_into_array(&mut self, array: JobId) {
        let Some(r) = self.jobs.get_mut(&array) else {
            return;
        };
        if !(r.array.is_some_and(|(a, _)| a == array) && r.start_time.is_none() && r.restarts == 0)
        {
            return;
        }
        if r.array_pending.as_ref().is_some_and(|p| p.0.len() > 1) {
            r.array = None;
        }
    }

    /// The tasks that never started of array `job` cancelled whole, when their one
    /// record ([`Controller::fold_unstarted_into_array`]) names more than one: that
    /// record is `job`'s own.
    pub(super) fn folded_tasks(&self, job: JobId) -> Option<&[u32]> {
        let r = self.jobs.get(&job)?;
        match (r.array, r.array_pending.as_deref()) {
            (None, Some((tasks, _))) if r.state.is_finished() => Some(tasks),
            _ => None,
        }
    }

    /// Whether a change naming `tasks` of array `job` is made to the array's pending
    /// record whole rather than to tasks split from it: the tasks still in that record
    /// (pending, never changed on their own) are all named, as Slurm's
    /// `update_job_str` updates its meta record whole then. Otherwise the tasks named
    /// are split from it ([`Job::changed_alone`]).
    pub(super) fn covers_array_record(&self, job: JobId, tasks: &[u32]) -> bool {
        let mut named = tasks.to_vec();
        named.sort_unstable();
        let mut in_record = self
            .jobs
            .range(job..)
            .take_while(|(_, j)| j.array.is_some_and(|a| a.0 == job))
            .filter(|(_, j)| j.state == JobState::Pending && !j.split_off())
            .map(|(_, j)| j.array.map_or(0, |a| a.1))
            .peekable();
        in_record.peek().is_some() && in_record.all(|t| named.binary_search(&t).is_ok())
    }

    /// Marks pending tasks `ids` changed on their own ([`Job::changed_alone`]), as
    /// Slurm splits tasks named from their array's record whatever comes of the
    /// request; the records to write.
    pub(super) fn split_named(&mut self, ids: &[JobId]) -> Vec<Effect> {
        let mut effects = Vec::new();
        for &id in ids {
            let Some(r) = self.jobs.get_mut(&id) else {
                continue;
            };
            if r.state == JobState::Pending && r.array.is_some() && !r.split {
                r.changed_alone();
                effects.push(self.persist(id));
            }
        }
        effects
    }

    /// Takes finished job `id`'s index out of its array's remainder (the indices still
    /// to run, on the array's own record), `task` being its array and index; the
    /// array's record to write, if it is another.
    pub(super) fn leave_remainder(&mut self, id: JobId, task: Option<(JobId, u32)>) -> Vec<Effect> {
        let Some((array, index)) = task else {
            return Vec::new();
        };
        let Some(head) = self.jobs.get_mut(&array) else {
            return Vec::new();
        };
        let Some((rest, _)) = head.array_pending.as_deref_mut() else {
            return Vec::new();
        };
        if !rest.contains(&index) {
            return Vec::new();
        }
        rest.retain(|&t| t != index);
        if array == id {
            return Vec::new();
        }
        vec![self.persist(array)]
    }

    /// The array's unstarted task that takes over the array's own id when the task
    /// holding it is cancelled: the last to start of the others (the highest index).
    fn heir(&self, array: JobId) -> Option<JobId> {
        self.jobs
            .range(JobId(array.0 + 1)..)
            .take_while(|(_, j)| j.array.is_some_and(|a| a.0 == array))
            .filter(|(_, j)| unstarted(j))
            .max_by_key(|(_, j)| j.array.map(|a| a.1))
            .map(|(id, _)| *id)
    }

    /// Takes pending job `id` out of the queue, or out of the jobs waiting beside it.
    fn unqueue(&mut self, id: JobId, now: i64) {
        self.sched.cancel_pending(id, now);
        self.sched.forget_waiting(id, now);
        self.outside.remove(&id);
    }
}

/// A pending array task that never ran and still lives in its array's record (one
/// changed on its own has a record of its own in Slurm, which a cancel leaves).
fn unstarted(r: &Job) -> bool {
    r.array.is_some() && r.state == JobState::Pending && r.start_time.is_none() && !r.split_off()
}
