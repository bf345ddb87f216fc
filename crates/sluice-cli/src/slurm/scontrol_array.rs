//! How `scontrol show job` shows arrays, as Slurm's does: an array's tasks that have
//! not started live in one record there (its "meta" record, under the array's id), so
//! they print as one, `ArrayTaskId=2-5%2`; a task asked for alone (`A_3`) while it is
//! still in that record prints under the array's id with its own index; a task changed
//! on its own while unstarted (released, updated) has left that record for one of its
//! own; every task of a throttled array says `ArrayTaskThrottle=N`.
//!
//! Sluice keeps a record per task from the submission on, the array's own (its id)
//! naming the unstarted ones (`array_pending`); this module folds them back.

use std::collections::HashMap;

use sluice_proto::types::JobRecord;

use super::scontrol_detail::index_ranges;

/// An array's unstarted tasks as Slurm's record says them: `2-5`, `2-5%2` throttled.
pub(crate) fn unstarted_ids(rest: &[u32], throttle: Option<u32>) -> String {
    let mut ids = index_ranges(rest);
    if let Some(n) = throttle {
        ids.push_str(&format!("%{n}"));
    }
    ids
}

/// Slurm's array task index for "no task" (`NO_VAL`).
const NO_TASK: u32 = 4_294_967_294;

/// A record's array fields as `scontrol show job` prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArrayFields {
    /// `JobId=`: the array's id for tasks that have not started.
    pub job_id: u64,
    /// `ArrayJobId=`.
    pub array_job: u64,
    /// `ArrayTaskId=`: an index, or the unstarted ones' ranges (`1-3%2`).
    pub task_ids: String,
    /// `ArrayTaskThrottle=`, for a throttled array.
    pub throttle: Option<u32>,
}

/// The records to print, in Slurm's order for one array (its own record first, then
/// the started tasks, latest first), each with its array fields (`None`: not an
/// array). `task`: the one task asked for (`scontrol show job A_3`), of array `array`.
pub(crate) fn shown(
    jobs: Vec<JobRecord>,
    asked: Option<(u64, u32)>,
) -> Vec<(JobRecord, Option<ArrayFields>)> {
    // Each array's unstarted indices and throttle, from its own record, less the tasks
    // changed on their own (released, updated), which Slurm splits into records of
    // their own.
    let apart: Vec<(u64, u32)> = jobs
        .iter()
        .filter(|j| j.split)
        .filter_map(|j| j.array)
        .collect();
    let mut unstarted: HashMap<u64, (Vec<u32>, Option<u32>)> = HashMap::new();
    for j in &jobs {
        if let Some((rest, throttle)) = &j.array_pending {
            let array = j.array.map_or(j.id, |a| a.0);
            let rest = rest
                .iter()
                .copied()
                .filter(|&t| !apart.contains(&(array, t)))
                .collect();
            unstarted.insert(array, (rest, *throttle));
        }
    }
    let throttle_of = |j: &JobRecord, array: u64| {
        unstarted
            .get(&array)
            .map_or(j.desc.array.as_ref().and_then(|a| a.1), |u| u.1)
    };
    let mut out: Vec<(JobRecord, Option<ArrayFields>)> = Vec::new();
    for j in &jobs {
        let array = match (j.array, &j.array_pending) {
            (Some((a, _)), _) => a,
            (None, Some(_)) => j.id,
            // Not an array: no task of it to show.
            (None, None) if asked.is_some() => continue,
            (None, None) => {
                out.push((j.clone(), None));
                continue;
            }
        };
        let throttle = throttle_of(j, array);
        let rest = unstarted.get(&array).map_or(&[][..], |u| &u.0[..]);
        let task = j.array.map(|a| a.1);
        let fields = |job_id, task_ids| ArrayFields {
            job_id,
            array_job: array,
            task_ids,
            throttle,
        };
        match asked {
            // One task asked for: it alone, under the array's id while unstarted.
            Some((_, t)) => {
                // Its own record, or (an array cancelled whole keeps none for its
                // unstarted tasks) the array's naming it.
                let own = jobs.iter().any(|o| o.array == Some((array, t)));
                let stands_for = !own && j.array_pending.as_ref().is_some_and(|p| p.0.contains(&t));
                if task == Some(t) || stands_for {
                    let id = if rest.contains(&t) { array } else { j.id };
                    out.push((j.clone(), Some(fields(id, t.to_string()))));
                }
            }
            None if j.array_pending.as_ref().is_some_and(|p| !p.0.is_empty()) => {
                // The last task of an array whose others have left its record is that
                // task in Slurm's (its throttle said apart).
                let split = j.desc.array.as_ref().is_some_and(|a| a.0.len() > 1);
                let ids = unstarted_ids(rest, throttle.filter(|_| !(rest.len() == 1 && split)));
                // Why the array waits is why its next task does, as squeue says it.
                let mut shown = j.clone();
                let next = rest.iter().min().copied();
                if let Some(n) = jobs
                    .iter()
                    .find(|o| next.is_some_and(|t| o.array == Some((array, t))))
                {
                    shown.reason = n.reason.clone();
                }
                if rest.len() > 1 {
                    // Standing for several tasks, it has no index of its own: Slurm's
                    // `%a` is 4294967294 in its paths.
                    let (o, e, i) = sluice_ctld::state::job_paths(
                        &j.desc,
                        j.id,
                        Some((array, NO_TASK)),
                        &j.user,
                        "%N",
                    );
                    (shown.stdout, shown.stderr, shown.stdin) = (o, e, i);
                }
                out.push((shown, Some(fields(j.id, ids))));
                // Its own task, changed on its own (held apart, released) or started,
                // is a record of its own too: listed under the id Sluice gave it (the
                // array's), where Slurm gives such a task the next free id.
                if let Some(t) = task.filter(|t| !rest.contains(t)) {
                    out.push((j.clone(), Some(fields(j.id, t.to_string()))));
                }
            }
            // Folded into the array's record.
            None if task.is_some_and(|t| rest.contains(&t)) => {}
            None => {
                let ids = task.map_or(String::new(), |t| t.to_string());
                out.push((j.clone(), Some(fields(j.id, ids))));
            }
        }
    }
    if asked.is_none() {
        // One array's records: its own first, then its tasks, latest first.
        let arrays: Vec<u64> = out
            .iter()
            .filter_map(|(_, f)| f.as_ref().map(|f| f.array_job))
            .collect();
        if !arrays.is_empty() && arrays.iter().all(|&a| a == arrays[0]) && arrays.len() == out.len()
        {
            out.sort_by_key(|(j, _)| (j.id != arrays[0], std::cmp::Reverse(j.id)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, array: u64, index: u32) -> JobRecord {
        JobRecord {
            id,
            array: Some((array, index)),
            ..Default::default()
        }
    }

    fn fields(job_id: u64, array_job: u64, ids: &str, throttle: Option<u32>) -> ArrayFields {
        ArrayFields {
            job_id,
            array_job,
            task_ids: ids.into(),
            throttle,
        }
    }

    /// Array 10 of tasks 0-5 throttled to 2: tasks 0 and 1 started (records 11 and
    /// 12), 2-5 not yet (13, 14 and 15 are theirs; 10, the array's own, is task 5's and
    /// names them all).
    fn array() -> Vec<JobRecord> {
        let mut own = task(10, 10, 5);
        own.array_pending = Some((vec![2, 3, 4, 5], Some(2)));
        vec![
            task(11, 10, 0),
            task(12, 10, 1),
            task(13, 10, 2),
            task(14, 10, 3),
            task(15, 10, 4),
            own,
        ]
    }

    #[test]
    fn unstarted_tasks_print_as_the_arrays_one_record() {
        let shown: Vec<(u64, ArrayFields)> = shown(array(), None)
            .into_iter()
            .map(|(j, f)| (j.id, f.unwrap()))
            .collect();
        assert_eq!(
            shown,
            [
                (10, fields(10, 10, "2-5%2", Some(2))),
                (12, fields(12, 10, "1", Some(2))),
                (11, fields(11, 10, "0", Some(2))),
            ]
        );
    }

    #[test]
    fn the_arrays_record_standing_for_several_tasks_has_no_index_in_its_paths() {
        // Slurm 22.05 (compat scenario 254): `%a` is 4294967294 there, `%A` the array.
        let mut jobs = array();
        for j in &mut jobs {
            j.desc.work_dir = "/home/a".into();
            j.desc.error = Some("e-%a.txt".into());
            j.stdout = "resolved at submission".into();
        }
        let shown = shown(jobs, None);
        let own = &shown[0].0;
        assert_eq!(own.stdout, "/home/a/slurm-10_4294967294.out");
        assert_eq!(own.stderr, "/home/a/e-4294967294.txt");
        assert_eq!(own.stdin, "/dev/null");
        // A started task keeps its own.
        assert_eq!(shown[1].0.stdout, "resolved at submission");
    }

    #[test]
    fn the_task_of_the_arrays_own_record_held_apart_is_listed_too() {
        // `sbatch -H -a 2-5`, `scontrol hold 10_5`: task 5 (record 10, the array's id)
        // is held apart from the array's remainder 2-4.
        let mut jobs = array();
        jobs.retain(|j| j.id != 11 && j.id != 12);
        let own = jobs.iter_mut().find(|j| j.id == 10).unwrap();
        own.array_pending = Some((vec![2, 3, 4, 5], None));
        own.split = true;
        let shown: Vec<(u64, String)> = shown(jobs, None)
            .into_iter()
            .map(|(j, f)| (j.id, f.unwrap().task_ids))
            .collect();
        assert_eq!(shown, [(10, "2-4".to_string()), (10, "5".to_string())]);
    }

    #[test]
    fn the_arrays_record_waits_for_what_its_next_task_waits_for() {
        let mut jobs = array();
        for j in &mut jobs {
            j.reason = match j.array {
                Some((_, 2)) => "Resources".into(),
                _ => "JobArrayTaskLimit".into(),
            };
        }
        let shown = shown(jobs, None);
        assert_eq!(
            (shown[0].0.id, shown[0].0.reason.as_str()),
            (10, "Resources")
        );
    }

    #[test]
    fn a_task_asked_for_alone_is_under_the_arrays_id_until_it_starts() {
        let one = |t| {
            shown(array(), Some((10, t)))
                .into_iter()
                .map(|(_, f)| f.unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(one(3), [fields(10, 10, "3", Some(2))]);
        assert_eq!(one(0), [fields(11, 10, "0", Some(2))]);
    }

    #[test]
    fn a_task_of_a_plain_job_or_of_an_array_cancelled_whole() {
        let plain = JobRecord {
            id: 30,
            ..Default::default()
        };
        assert!(shown(vec![plain], Some((30, 1))).is_empty());
        let cancelled = JobRecord {
            id: 20,
            array_pending: Some((vec![1, 3, 4], None)),
            ..Default::default()
        };
        let one = shown(vec![cancelled.clone()], Some((20, 3)));
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1, Some(fields(20, 20, "3", None)));
        assert!(shown(vec![cancelled], Some((20, 2))).is_empty());
    }

    #[test]
    fn a_cancelled_arrays_record_names_the_tasks_that_never_started() {
        // Cancelled whole: the array's record alone, naming tasks 1, 3 and 4.
        let cancelled = JobRecord {
            id: 20,
            array_pending: Some((vec![1, 3, 4], None)),
            ..Default::default()
        };
        let plain = JobRecord {
            id: 30,
            ..Default::default()
        };
        let shown = shown(vec![cancelled, plain], None);
        assert_eq!(shown[0].1, Some(fields(20, 20, "1,3-4", None)));
        assert_eq!(shown[1].1, None);
    }
}
