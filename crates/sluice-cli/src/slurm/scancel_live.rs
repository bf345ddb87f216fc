//! Which of the jobs a `scancel` names are still live, and how its `-v` names them: as
//! Slurm's scancel reads its job list when it has options beyond ids (a signal, `-b`,
//! a filter), one listing of the named jobs asked for once.

use std::collections::HashSet;

use sluice_proto::listing::{JobQuery, ListedJob};
use sluice_proto::types::{CancelRequest, JobState};
use sluice_proto::Client;

/// Slurm's words for an id the controller does not hold (ESLURM_INVALID_JOB_ID).
pub(crate) const BAD_JOB: &str = "Invalid job id specified";

/// Slurm's words for a job that has ended (ESLURM_ALREADY_DONE).
pub(crate) const ALREADY_DONE: &str = "Job/step already completing or completed";

/// What a scancel asks of each job, as `-v` says it.
pub(crate) struct Asked {
    pub(crate) signal: Option<i32>,
    /// `batch `, `full ` or nothing.
    pub(crate) kind: &'static str,
}

impl Asked {
    /// Slurm's scancel's verbose line for one job, as named.
    pub(crate) fn say(&self, named: &str) {
        let kind = self.kind;
        match self.signal {
            Some(sig) => eprintln!("scancel: Signal {sig} to {kind}job {named}"),
            None => eprintln!("scancel: Terminating {kind}job {named}"),
        }
    }

    /// The same for one step (`123.0`); SIGKILL terminates it, as Slurm's says.
    pub(crate) fn say_step(&self, named: &str) {
        match self.signal {
            Some(sig) if sig != libc::SIGKILL => {
                eprintln!("scancel: Signal {sig} to step {named}")
            }
            _ => eprintln!("scancel: Terminating step {named}"),
        }
    }
}

/// What the controller holds under one id as named (`123`, `123_4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// Nothing (never submitted, or forgotten after `MinJobAge`).
    Unknown,
    /// Only ended records.
    Ended,
    /// A live record: the job, one of an array's tasks or a heterogeneous job's
    /// components.
    Live,
}

/// The controller's records of `jobs` (all states), in one listing. A listing that
/// fails is `None`: the cancel itself reports what is wrong.
pub(crate) fn listed(client: &Client, jobs: &[(u64, Option<u32>)]) -> Option<Vec<ListedJob>> {
    let ids: Vec<String> = jobs.iter().map(|&j| display(j)).collect();
    let q = JobQuery {
        jobs: Some(ids.join(",")),
        brief: true,
        ..Default::default()
    };
    client.get(&q.path()).ok()
}

/// A job id as the user named it: `123`, `123_4`.
pub(crate) fn display((id, task): (u64, Option<u32>)) -> String {
    task.map_or(id.to_string(), |t| format!("{id}_{t}"))
}

/// Whether record `j` is (part of) what `(id, task)` names: the job, an array's task
/// (also one not yet split from its array's record), every task of an array, or a
/// heterogeneous job's components.
pub(crate) fn names(j: &ListedJob, (id, task): (u64, Option<u32>)) -> bool {
    match task {
        Some(t) => {
            j.array == Some((id, t))
                || (j.array.is_some_and(|a| a.0 == id)
                    && j.array_pending
                        .as_ref()
                        .is_some_and(|(ts, _)| ts.contains(&t)))
        }
        None => {
            j.id == id
                || j.array.is_some_and(|a| a.0 == id)
                || j.het.is_some_and(|h| h.job_id == id)
        }
    }
}

/// What `listed` holds of `job`. Without a listing every job counts as live.
pub(crate) fn held(listed: Option<&[ListedJob]>, job: (u64, Option<u32>)) -> Held {
    let Some(listed) = listed else {
        return Held::Live;
    };
    let mut named = listed.iter().filter(|j| names(j, job)).peekable();
    if named.peek().is_none() {
        Held::Unknown
    } else if named.any(|j| !j.state.is_finished()) {
        Held::Live
    } else {
        Held::Ended
    }
}

/// Whether record `j` passes the request's filters (user, name, partition, states).
pub(crate) fn passes(req: &CancelRequest, j: &ListedJob) -> bool {
    req.user.as_ref().is_none_or(|u| *u == j.user)
        && req.name.as_ref().is_none_or(|n| *n == j.name)
        && req.partition.as_ref().is_none_or(|p| *p == j.partition)
        && (req.states.is_empty() || req.states.contains(&j.state))
}

/// The live records of `listed` that `keep` keeps, each with its name as Slurm's
/// scancel names each one it signals: pending ones first, an array's unstarted tasks
/// once as `ID_[2-5]`, a started task as `ID_N`.
pub(crate) fn live_names(
    listed: &[ListedJob],
    keep: impl Fn(&ListedJob) -> bool,
) -> Vec<(u64, String)> {
    let array_of = |j: &ListedJob| j.array.map_or(j.id, |a| a.0);
    // Unstarted tasks that their array's record already names.
    let covered: HashSet<(u64, u32)> = listed
        .iter()
        .filter_map(|j| Some((array_of(j), &j.array_pending.as_ref()?.0)))
        .flat_map(|(a, tasks)| tasks.iter().map(move |&t| (a, t)))
        .collect();
    let mut live: Vec<&ListedJob> = listed
        .iter()
        .filter(|j| {
            matches!(
                j.state,
                JobState::Pending | JobState::Running | JobState::Suspended
            )
        })
        .filter(|j| j.array_pending.is_some() || !j.array.is_some_and(|a| covered.contains(&a)))
        .filter(|j| keep(j))
        .collect();
    live.sort_by_key(|j| (j.state != JobState::Pending, j.id));
    live.iter()
        .map(|j| {
            let named = match (&j.array_pending, j.array) {
                (Some((tasks, _)), _) if !tasks.is_empty() => format!(
                    "{}_[{}]",
                    array_of(j),
                    super::scontrol_detail::index_ranges(tasks)
                ),
                (_, Some((array, task))) => format!("{array}_{task}"),
                _ => j.id.to_string(),
            };
            (j.id, named)
        })
        .collect()
}

/// The live jobs a filter-only request chooses, as `-v` names them: every match the
/// caller may see, as Slurm's scancel chooses from its job listing (the controller
/// refuses those the caller may not touch, one by one).
pub(crate) fn matching(client: &Client, req: &CancelRequest) -> Vec<(u64, String)> {
    let q = JobQuery {
        users: req.user.clone(),
        names: req.name.clone(),
        partitions: req.partition.clone(),
        brief: true,
        ..Default::default()
    };
    let listed: Vec<ListedJob> = client.get(&q.path()).unwrap_or_default();
    live_names(&listed, |j| passes(req, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, state: JobState) -> ListedJob {
        ListedJob {
            id,
            state,
            ..Default::default()
        }
    }

    #[test]
    fn a_pending_array_is_named_once_and_tasks_by_their_array() {
        // Array 10: task 1 running (its own record 11), tasks 2-4 unstarted in the
        // array's record, task 3 also listed on its own (split off to be held).
        let mut head = job(10, JobState::Pending);
        head.array = Some((10, 2));
        head.array_pending = Some((vec![2, 3, 4], None));
        let mut running = job(11, JobState::Running);
        running.array = Some((10, 1));
        let mut split = job(13, JobState::Pending);
        split.array = Some((10, 3));
        let done = job(20, JobState::Completed);
        let listed = vec![running, head, split, done];
        let named: Vec<String> = live_names(&listed, |_| true)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(named, ["10_[2-4]", "10_1"]);
        let l = Some(listed.as_slice());
        assert_eq!(held(l, (10, Some(4))), Held::Live);
        assert_eq!(held(l, (10, Some(1))), Held::Live);
        assert_eq!(held(l, (10, Some(9))), Held::Unknown);
        assert_eq!(held(l, (20, None)), Held::Ended);
        assert_eq!(held(l, (21, None)), Held::Unknown);
        assert_eq!(held(None, (21, None)), Held::Live);
    }
}
