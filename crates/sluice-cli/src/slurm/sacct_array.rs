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
            let throttle = tasks
                .iter()
                .find_map(|j| j.desc.array.as_ref())
                .and_then(|a| a.1);
            let mut r = tasks[0].clone();
            r.id = array;
            // The last one left holds the array's own id, whose record says what is
            // left in it (a task named alone, `-j A_4`, may be the only one fetched
            // while others wait too: then it is no row).
            let last = tasks[0].id == array && tasks[0].last_task_left().is_some();
            if let ([t], true) = (indices.as_slice(), last) {
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
        // `sbatch -a 1-4%2`: task 1 runs, 2-4 wait (4 holds the array's own id and
        // what is left in it).
        let mut jobs = vec![
            task(10, 11, 1, JobState::Running),
            task(10, 12, 2, JobState::Pending),
            task(10, 13, 3, JobState::Pending),
            task(10, 10, 4, JobState::Pending),
        ];
        jobs[3].array_pending = Some((vec![2, 3, 4], Some(2)));
        let records = array_records(&jobs);
        let shown: Vec<(String, u64)> = records.iter().map(|r| (r.display_id(), r.id)).collect();
        assert_eq!(shown, [("10_[2-4%2]".to_string(), 10)]);
        assert!(!unstarted(&jobs[0]));
        // `-j 10_4` and `-j 10_3` fetch that task alone: while others wait too, it
        // is no task of its own (its row is the array's, which `10_4` does not name).
        for alone in [&jobs[3..4], &jobs[2..3]] {
            let records = array_records(alone);
            assert_eq!(records.len(), 1);
            assert_eq!(records[0].array, None);
        }
        // Three of them started: the last left is itself.
        jobs[1].state = JobState::Running;
        jobs[1].start_time = Some(100);
        jobs[2].state = JobState::Completed;
        jobs[2].start_time = Some(100);
        jobs[3].array_pending = Some((vec![4], Some(2)));
        let records = array_records(&jobs);
        assert_eq!(records[0].display_id(), "10_4");
        assert_eq!(records[0].id, 10);
        // An array of one task is the array.
        let mut one = task(20, 20, 7, JobState::Pending);
        one.desc.array = Some((vec![7], None));
        one.array_pending = Some((vec![7], None));
        assert_eq!(array_records(&[one])[0].display_id(), "20_[7]");
    }
}
