//! Usage and its half-life decay.
//!
//! Slurm's decay thread runs every `PriorityCalcPeriod`: it first decays every
//! association's usage by `d^Δt`, then adds what running jobs used since the last run,
//! themselves decayed over the interval (`Δt × d^Δt` seconds of each job's billing
//! TRES, times its QOS's `UsageFactor`), where
//! d = 1 − ln 2 / `PriorityDecayHalfLife` (Slurm writes 0.693). With a half-life of 0,
//! nothing decays. `PriorityUsageResetPeriod` clears usage instead.

use crate::time::{Secs, Time};

use super::assoc::{AssocId, AssocTree};

/// Slurm's per-second decay factor for a half-life in seconds: 1 − 0.693 / half-life
/// (as `priority/multifactor` computes it), or 1 (no decay) for a half-life of 0.
pub fn decay_factor(half_life: Secs) -> f64 {
    if half_life <= 0 {
        1.0
    } else {
        1.0 - 0.693 / half_life as f64
    }
}

/// The decay of association usage over time: one [`Decay::run`] per
/// `PriorityCalcPeriod`, charging running jobs as Slurm's decay thread does.
#[derive(Clone, Debug, PartialEq)]
pub struct Decay {
    /// Per-second factor (see [`decay_factor`]).
    pub factor: f64,
    /// When the last run happened (`None` before the first).
    pub last_run: Option<Time>,
}

impl Decay {
    /// A decay with `PriorityDecayHalfLife` = `half_life` seconds (0: none).
    pub fn new(half_life: Secs) -> Self {
        Decay {
            factor: decay_factor(half_life),
            last_run: None,
        }
    }

    /// One run at `now`: decays every association's usage over the time since the last
    /// run, then charges each job its seconds in that interval (from `max(start, last
    /// run)` to `end`, or to `now` while it runs), decayed over them, times its billing
    /// and usage factor. Returns the interval's length in seconds (0 on the first run,
    /// which only notes the time).
    pub fn run(
        &mut self,
        tree: &mut AssocTree,
        now: Time,
        charges: impl IntoIterator<Item = Charge>,
    ) -> Secs {
        let Some(last) = self.last_run else {
            self.last_run = Some(now);
            return 0;
        };
        let elapsed = (now - last).max(0);
        self.last_run = Some(now);
        if elapsed == 0 {
            return 0;
        }
        tree.decay(self.factor.powf(elapsed as f64));
        for c in charges {
            let from = c.start.max(last);
            let to = c.end.unwrap_or(now).min(now);
            let run = (to - from).max(0) as f64;
            let decayed = run * self.factor.powf(run);
            tree.charge(c.assoc, decayed * c.billing * c.usage_factor);
        }
        elapsed
    }
}

/// What one job is charged by a [`Decay::run`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Charge {
    /// The association charged (and everything above it).
    pub assoc: AssocId,
    /// Billing TRES of the job (per second).
    pub billing: f64,
    /// The QOS's `UsageFactor` (1 by default).
    pub usage_factor: f64,
    /// When the job started.
    pub start: Time,
    /// When it ended, if it has (charged up to then).
    pub end: Option<Time>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fairshare::Shares;

    #[test]
    fn usage_halves_over_one_half_life() {
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        t.charge(ann, 1000.0);
        let mut d = Decay::new(7 * 86_400);
        d.run(&mut t, 0, []);
        d.run(&mut t, 7 * 86_400, []);
        // Slurm's 0.693 approximates ln 2: about half, not exactly.
        let left = t.get(ann).usage_raw;
        assert!((left - 500.0).abs() < 0.1, "{left}");
        assert_eq!(d.last_run, Some(7 * 86_400));
    }

    #[test]
    fn a_running_job_is_charged_its_decayed_seconds_times_billing_and_usage_factor() {
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let mut d = Decay::new(0); // no decay: exact seconds
        d.run(&mut t, 1000, []);
        // 4 billing units, usage factor 0.5, started at 900: charged from 1000 on.
        d.run(&mut t, 1300, [charge(ann, 4.0, 0.5, 900, None)]);
        assert_eq!(t.get(ann).usage_raw, 300.0 * 4.0 * 0.5);
        assert_eq!(t.get(AssocId::ROOT).usage_raw, 600.0);
        // A job that started within the interval is charged from its start.
        d.run(&mut t, 1400, [charge(ann, 1.0, 1.0, 1350, None)]);
        assert_eq!(t.get(ann).usage_raw, 650.0);
        // A job that ended within the interval is charged up to its end.
        d.run(&mut t, 1500, [charge(ann, 1.0, 1.0, 1000, Some(1420))]);
        assert_eq!(t.get(ann).usage_raw, 670.0);
    }

    fn charge(assoc: AssocId, billing: f64, uf: f64, start: Time, end: Option<Time>) -> Charge {
        Charge {
            assoc,
            billing,
            usage_factor: uf,
            start,
            end,
        }
    }
}
