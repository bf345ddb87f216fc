//! What the fair-share algorithms compute, as data (see the parent module).

use super::assoc::AssocId;

/// Which fair-share algorithm computes the factors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Fair Tree (Slurm's default).
    #[default]
    FairTree,
    /// The classic algorithm (`PriorityFlags=NO_FAIR_TREE`), with the
    /// `FairShareDampeningFactor` (1 when not set).
    Classic {
        /// Divides the usage ratio in the exponent; at least 1.
        dampening: u32,
    },
}

/// Fair-share figures of every association of a tree, by [`AssocId::index`]: what
/// `sshare -l` shows.
#[derive(Clone, Debug, PartialEq)]
pub struct FairShares {
    /// `NormShares`: under Fair Tree the association's share among its siblings
    /// (shares / sum of the siblings' shares); under the classic algorithm the product
    /// of those fractions from the root down (its share of the whole machine).
    pub norm_shares: Vec<f64>,
    /// `NormUsage`: usage over the root's usage (0 when nothing was used).
    pub norm_usage: Vec<f64>,
    /// `EffectvUsage`: under Fair Tree usage over the fair-share parent's usage; under
    /// the classic algorithm the effective usage UE. The root's is 1.
    pub effective_usage: Vec<f64>,
    /// `LevelFS` (Fair Tree only; `None` under the classic algorithm and for the root):
    /// S / U among siblings, infinite without usage.
    pub level_fs: Vec<Option<f64>>,
    /// `FairShare`: the factor between 0 and 1 the priority is weighted by. Fair Tree
    /// sets it for user associations only (accounts: `None`); the classic algorithm for
    /// every association but the root.
    pub factor: Vec<Option<f64>>,
}

impl FairShares {
    /// The fair-share factor a job charging `assoc` gets: its association's factor, or
    /// 0 when it has none (Slurm gives a job without an association 0).
    pub fn job_factor(&self, assoc: Option<AssocId>) -> f64 {
        assoc
            .and_then(|a| self.factor.get(a.index()).copied().flatten())
            .unwrap_or(0.0)
    }
}
