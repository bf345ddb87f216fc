//! What the controller counts for `sdiag`: jobs submitted, started, completed,
//! cancelled and failed, and the cycles of the main and backfill scheduling phases —
//! timed here, around the core's phases (the core reads no clock; see
//! `sluice_core::observe`).
//!
//! As slurmctld, the counters are cleared at midnight UTC and by `sdiag -r`; the jobs
//! started by backfill since the controller started only by `sdiag -r`, and the last
//! cycles' figures never.

use std::time::Instant;

use sluice_core::observe::{PassObserver, Phase, PhaseFigures};
use sluice_proto::diag::{BackfillStats, JobCounters, MainStats};

const DAY: i64 = 86_400;

/// The counters.
#[derive(Clone, Debug, Default)]
pub struct Diag {
    /// When they were last cleared (or the controller started).
    pub since: i64,
    /// When they are cleared next: the coming midnight, UTC.
    next_reset: i64,
    /// Jobs.
    pub jobs: JobCounters,
    /// The main phase.
    pub main: MainStats,
    /// The backfill phase.
    pub backfill: BackfillStats,
}

impl Diag {
    /// Counters starting at `now`.
    pub fn new(now: i64) -> Self {
        Diag {
            since: now,
            next_reset: next_midnight(now),
            ..Default::default()
        }
    }

    /// Clears the counters if midnight (UTC) passed since they were last cleared.
    pub fn roll(&mut self, now: i64) {
        if now >= self.next_reset {
            self.reset(now, false);
        }
    }

    /// Clears the counters, as slurmctld's `reset_stats`: `asked` (by `sdiag -r`) also
    /// clears the count of jobs backfilled since the controller started. The last
    /// cycles' times stay.
    pub fn reset(&mut self, now: i64, asked: bool) {
        let main = MainStats {
            last_us: self.main.last_us,
            ..Default::default()
        };
        let backfill = BackfillStats {
            backfilled_total: if asked {
                0
            } else {
                self.backfill.backfilled_total
            },
            last_when: self.backfill.last_when,
            ..Default::default()
        };
        *self = Diag {
            since: now,
            next_reset: next_midnight(now),
            jobs: JobCounters::default(),
            main,
            backfill,
        };
    }

    /// An observer that times the phases of one pass at `now` into these counters.
    pub fn timer(&mut self, now: i64) -> PhaseTimer<'_> {
        self.roll(now);
        PhaseTimer {
            diag: self,
            now,
            began: None,
        }
    }

    /// Records a main cycle of `us` microseconds.
    fn main_cycle(&mut self, us: u32, f: &PhaseFigures) {
        let m = &mut self.main;
        m.last_us = us;
        m.max_us = m.max_us.max(us);
        m.cycles += 1;
        m.sum_us += u64::from(us);
        m.depth_sum += u64::from(f.depth);
        m.queue_len = f.queue_len;
    }

    /// Records a backfill cycle of `us` microseconds at `now`.
    fn backfill_cycle(&mut self, us: u32, f: &PhaseFigures, now: i64) {
        let b = &mut self.backfill;
        b.backfilled_total += f.started;
        b.backfilled += f.started;
        b.cycles += 1;
        b.last_when = Some(now);
        b.last_us = us;
        b.max_us = b.max_us.max(us);
        b.sum_us += u64::from(us);
        b.last_depth = f.depth;
        b.last_depth_try = f.tried;
        b.depth_sum += u64::from(f.depth);
        b.depth_try_sum += u64::from(f.tried);
        b.queue_len = f.queue_len;
        b.queue_len_sum += u64::from(f.queue_len);
        b.table_size = f.plan_times;
        b.table_size_sum += u64::from(f.plan_times);
    }
}

/// The first midnight (UTC) after `now`.
fn next_midnight(now: i64) -> i64 {
    now - now.rem_euclid(DAY) + DAY
}

/// Times a pass's phases (see [`Diag::timer`]).
pub struct PhaseTimer<'a> {
    diag: &'a mut Diag,
    now: i64,
    began: Option<Instant>,
}

impl PassObserver for PhaseTimer<'_> {
    fn begin(&mut self, _: Phase) {
        self.began = Some(Instant::now());
    }

    fn end(&mut self, phase: Phase, figures: PhaseFigures) {
        let us = self.began.take().map_or(0, |t| {
            t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32
        });
        match phase {
            Phase::Main => self.diag.main_cycle(us, &figures),
            Phase::Backfill => self.diag.backfill_cycle(us, &figures, self.now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(depth: u32, tried: u32, started: u32) -> PhaseFigures {
        PhaseFigures {
            queue_len: 10,
            depth,
            tried,
            started,
            plan_times: 3,
        }
    }

    #[test]
    fn cycles_add_up_and_a_reset_keeps_what_slurm_keeps() {
        let t0 = 1_795_982_649; // Sun Nov 29 20:04:09 2026 UTC
        let mut d = Diag::new(t0);
        {
            let mut timer = d.timer(t0);
            timer.begin(Phase::Main);
            timer.end(Phase::Main, figures(4, 3, 1));
            timer.begin(Phase::Backfill);
            timer.end(Phase::Backfill, figures(9, 7, 2));
        }
        {
            let mut timer = d.timer(t0 + 30);
            timer.begin(Phase::Main);
            timer.end(Phase::Main, figures(2, 2, 0));
        }
        assert_eq!(
            (d.main.cycles, d.main.depth_sum, d.main.queue_len),
            (2, 6, 10)
        );
        let b = d.backfill;
        assert_eq!(
            (
                b.cycles,
                b.backfilled,
                b.backfilled_total,
                b.last_depth,
                b.last_depth_try
            ),
            (1, 2, 2, 9, 7)
        );
        assert_eq!((b.last_when, b.table_size_sum), (Some(t0), 3));
        d.jobs.submitted = 5;

        // Midnight UTC clears the counters but not the backfilled total.
        let midnight = next_midnight(t0);
        assert_eq!(midnight % DAY, 0);
        assert!(midnight > t0 && midnight - t0 <= DAY);
        d.roll(midnight - 1);
        assert_eq!(d.jobs.submitted, 5);
        d.roll(midnight);
        assert_eq!(d.since, midnight);
        assert_eq!(d.jobs.submitted, 0);
        assert_eq!((d.main.cycles, d.backfill.cycles), (0, 0));
        assert_eq!(d.backfill.backfilled_total, 2);
        assert_eq!(d.backfill.last_when, Some(t0));
        // Asked for (`sdiag -r`): that too.
        d.reset(midnight + 5, true);
        assert_eq!((d.backfill.backfilled_total, d.since), (0, midnight + 5));
    }
}
