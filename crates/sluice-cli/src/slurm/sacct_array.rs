//! An array's unstarted tasks as Slurm's accounting holds them. Sluice keeps a record
//! per task from submission; Slurm keeps the tasks that have not started in the
//! array's own record, which `sacct` lists as one row, `A_[2-4%2]` (JobIDRaw the
//! array's id), and a task that has not started is no row of its own (`-j A_3` lists
//! nothing). Once other tasks have left that record, its last task is itself, `A_4`.

use std::collections::BTreeMap;

use sluice_proto::types::{JobRecord, JobState};

/// Whether `j` is an array task still in its array's record: pending, never started.
pub(crate) fn unstarted(j: &JobRecord) -> bool {
    j.array.is_some() && j.state == JobState::Pending && j.start_time.is_none() && j.restarts == 0
}

/// The array records the unstarted tasks among `jobs` make, one per array: the fields
/// of its first unstarted task, under the array's id.
pub(crate) fn array_records(jobs: &[JobRecord]) -> Vec<JobRecord> {
    let mut arrays: BTreeMap<u64, Vec<&JobRecord>> = BTreeMap::new();
    for j in jobs.iter().filter(|j| unstarted(j)) {
        if let Some((array, _)) = j.array {
            arrays.entry(array).or_default().push(j);
        }
    }
    arrays
        .into_iter()
        .map(|(array, mut tasks)| {
            tasks.sort_by_key(|j| j.array.map(|a| a.1));
            let indices: Vec<u32> = tasks.iter().filter_map(|j| j.array.map(|a| a.1)).collect();
            let (submitted, throttle) = tasks
                .iter()
                .find_map(|j| j.desc.array.as_ref())
                .map_or((0, None), |(all, t)| (all.len(), *t));
            let mut r = tasks[0].clone();
            r.id = array;
            // The last one left holds the array's own id (a task named alone, `-j
            // A_3`, may be the only one fetched, and is no row).
            if let ([t], true) = (indices.as_slice(), submitted > 1 && tasks[0].id == array) {
                r.array = Some((array, *t));
                r.array_pending = None;
            } else {
                r.array = None;
                r.array_pending = Some((indices, throttle));
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(array: u64, id: u64, index: u32, state: JobState) -> JobRecord {
        let mut r = JobRecord {
            id,
            array: Some((array, index)),
            state,
            start_time: (state != JobState::Pending).then_some(100),
            ..Default::default()
        };
        r.desc.array = Some((vec![1, 2, 3, 4], Some(2)));
        r
    }

    #[test]
    fn unstarted_tasks_are_one_record_under_the_arrays_id() {
        // `sbatch -a 1-4%2`: task 1 runs, 2-4 wait (4 holds the array's own id).
        let jobs = vec![
            task(10, 11, 1, JobState::Running),
            task(10, 12, 2, JobState::Pending),
            task(10, 13, 3, JobState::Pending),
            task(10, 10, 4, JobState::Pending),
        ];
        let records = array_records(&jobs);
        let shown: Vec<(String, u64)> = records.iter().map(|r| (r.display_id(), r.id)).collect();
        assert_eq!(shown, [("10_[2-4%2]".to_string(), 10)]);
        assert!(!unstarted(&jobs[0]));
        // Three of them started: the last left is itself.
        let mut jobs = jobs;
        jobs[1].state = JobState::Running;
        jobs[2].state = JobState::Completed;
        jobs[2].start_time = Some(100);
        let records = array_records(&jobs);
        assert_eq!(records[0].display_id(), "10_4");
        assert_eq!(records[0].id, 10);
        // A task fetched alone that is not the last left is no task of its own.
        let alone = array_records(&jobs[3..3]);
        assert!(alone.is_empty());
        let alone = array_records(&[task(10, 13, 3, JobState::Pending)]);
        assert_eq!(alone[0].array, None);
        // An array of one task is the array.
        let mut one = task(20, 20, 7, JobState::Pending);
        one.desc.array = Some((vec![7], None));
        assert_eq!(array_records(&[one])[0].display_id(), "20_[7]");
    }
}
