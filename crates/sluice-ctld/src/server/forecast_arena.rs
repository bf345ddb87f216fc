//! The forecast's copy of the scheduler, made apart from the event loop's memory.
//!
//! The forecast behind `squeue --start` simulates the whole queue on a copy of the
//! scheduler, taken while the loop waits and dropped once the forecast is made. Made
//! on the loop's own thread, the copy's allocations fell between the jobs the loop
//! keeps (glibc gives each thread an arena and serves it from there): once the copy
//! was dropped, the pages it shared with them stayed resident, half empty, and a queue
//! of pending jobs cost the controller about twice its heap. Made on a thread of its
//! own, the copy lies in another arena, whose pages go back to the system whole once
//! the forecast is done ([`super::freed::give_back`]).

use sluice_core::Scheduler;

/// A copy of `sched`, made on a short-lived thread while the caller waits (on the
/// caller's thread if no thread can be started).
pub fn copy(sched: &Scheduler) -> Scheduler {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("sluice-forecast-copy".into())
            .spawn_scoped(s, || sched.clone())
            .ok()
            .and_then(|t| t.join().ok())
    })
    .unwrap_or_else(|| sched.clone())
}

#[cfg(test)]
mod tests {
    use sluice_core::explain::forecast;
    use sluice_core::limits::acct::JobAcct;
    use sluice_core::{
        BackfillParams, Cluster, JobId, JobRequest, JobSpec, PartitionId, Policy, Scheduler,
    };

    fn job(id: u64, cpus: u32, time_limit: i64) -> JobSpec {
        JobSpec {
            id: JobId(id),
            user: 1000,
            partition: PartitionId(0),
            submit: 0,
            begin: 0,
            request: JobRequest::procs(cpus),
            time_limit,
            priority: 1,
            acct: JobAcct::default(),
        }
    }

    #[test]
    fn the_copy_forecasts_what_the_scheduler_would() {
        // Two nodes of four CPUs: job 1 holds all eight for an hour, jobs 2 and 3
        // wait behind it; the copy's forecast starts them when the original's does.
        let mut s = Scheduler::new(
            Cluster::homogeneous("c", 2, 4),
            Policy::Backfill(BackfillParams::default()),
        );
        s.submit(job(1, 8, 3600), 0).unwrap();
        s.schedule(0);
        s.submit(job(2, 4, 600), 10).unwrap();
        s.submit(job(3, 8, 600), 10).unwrap();
        s.schedule(10);

        let copy = super::copy(&s);
        assert_eq!(copy.generation(), s.generation());
        assert_eq!(copy.pending_count(), 2);
        let mine = forecast(&copy, 10, 100_000, 100);
        let theirs = forecast(&s, 10, 100_000, 100);
        assert_eq!(format!("{mine:?}"), format!("{theirs:?}"));
        assert!(format!("{mine:?}").contains("3600"), "{mine:?}");
    }
}
