//! What a pass tells its observer: the phases it ran, in order, and how far each went
//! into the queue (the figures `sdiag` reports).

mod common;

use common::*;
use sluice_core::observe::{PassObserver, Phase, PhaseFigures};
use sluice_core::{BackfillParams, Policy, Scheduler};

/// Records every call.
#[derive(Default)]
struct Log(Vec<(Phase, Option<PhaseFigures>)>);

impl PassObserver for Log {
    fn begin(&mut self, phase: Phase) {
        self.0.push((phase, None));
    }
    fn end(&mut self, phase: Phase, figures: PhaseFigures) {
        self.0.push((phase, Some(figures)));
    }
}

#[test]
fn a_backfill_pass_reports_its_main_and_backfill_phases_with_their_depths() {
    // One node of 4 CPUs, Slurm's backfill every 30 s. Job 1 takes all 4 CPUs for an
    // hour; job 2 (4 CPUs) waits behind it; job 3 (1 CPU, 10 min) waits too: the main
    // phase stops at job 2 and the backfill phase finds no room now for job 3 either.
    let params = BackfillParams {
        interval: 30,
        resolution: 1,
        ..Default::default()
    };
    let mut s = Scheduler::new(cluster(1, 4), Policy::Backfill(params));
    s.submit(job(1).procs(4).time(3600).spec(), 0).unwrap();
    let mut log = Log::default();
    let started = s.schedule_observed(0, &mut log);
    assert_eq!(started.len(), 1);
    let main = PhaseFigures {
        queue_len: 1,
        depth: 1,
        tried: 1,
        started: 1,
        plan_times: 0,
    };
    // The queue is empty after the main phase: no backfill phase.
    assert_eq!(log.0, vec![(Phase::Main, None), (Phase::Main, Some(main))]);

    s.submit(job(2).procs(4).time(3600).spec(), 1).unwrap();
    s.submit(job(3).procs(1).time(600).spec(), 1).unwrap();
    let mut log = Log::default();
    assert!(s.schedule_observed(1, &mut log).is_empty());
    let main = PhaseFigures {
        queue_len: 2,
        depth: 1, // stopped at job 2: the only partition is blocked
        tried: 1,
        started: 0,
        plan_times: 0,
    };
    let Some((Phase::Backfill, Some(backfill))) = log.0.last().copied() else {
        panic!("no backfill phase: {:?}", log.0);
    };
    assert_eq!(
        log.0[..3],
        [
            (Phase::Main, None),
            (Phase::Main, Some(main)),
            (Phase::Backfill, None)
        ]
    );
    assert_eq!(
        (
            backfill.queue_len,
            backfill.depth,
            backfill.tried,
            backfill.started
        ),
        (2, 2, 2, 0)
    );
    // The plan: now, and job 1's end (at 3600) where jobs 2 and 3 are planned.
    assert!(backfill.plan_times >= 2, "{backfill:?}");

    // Nothing new within the backfill interval: the main phase only.
    let mut log = Log::default();
    s.schedule_observed(2, &mut log);
    assert_eq!(log.0.len(), 2);
    assert!(log.0.iter().all(|(p, _)| *p == Phase::Main));
}
