//! Fair-share: who has used less than their share, and so should go first.
//!
//! [`AssocTree`] holds the associations with their shares and decayed usage;
//! [`FairShares::compute`] turns them into each association's fair-share factor (0 to
//! 1) by one of Slurm's two algorithms:
//!
//! - **Fair Tree** (Slurm's default since 19.05; `fair_tree.rs`): siblings are ranked
//!   by *LevelFS* = S / U, their share among siblings over their usage among siblings;
//!   users are ranked depth-first, so every user of a better-served account ranks below
//!   every user of a worse-served sibling; a user's factor is its rank over the number
//!   of user associations. Source: <https://slurm.schedmd.com/fair_tree.html>.
//! - **Classic** (`PriorityFlags=NO_FAIR_TREE`; `classic.rs`): F = 2^(-UE/S/d) with
//!   normalized shares S (the product of share fractions down the tree), effective usage
//!   UE (own normalized usage pulled towards the parent's) and
//!   `FairShareDampeningFactor` d. Source:
//!   <https://slurm.schedmd.com/classic_fair_share.html>.
//!
//! `usage.rs` holds the half-life decay of usage.

mod assoc;
mod classic;
mod fair_tree;
mod usage;

pub use assoc::{Assoc, AssocError, AssocId, AssocTree, Shares};
pub use usage::{decay_factor, Charge, Decay};

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
    /// The fair-share figures of `tree` under `algorithm`. Deterministic: the same tree
    /// gives the same figures.
    pub fn compute(tree: &AssocTree, algorithm: Algorithm) -> FairShares {
        let n = tree.len();
        let root_usage = tree.get(AssocId::ROOT).usage_raw;
        let norm_usage = (0..n)
            .map(|i| {
                if root_usage > 0.0 {
                    tree.get(AssocId(i as u32)).usage_raw / root_usage
                } else {
                    0.0
                }
            })
            .collect();
        let mut out = FairShares {
            norm_shares: vec![0.0; n],
            norm_usage,
            effective_usage: vec![0.0; n],
            level_fs: vec![None; n],
            factor: vec![None; n],
        };
        out.effective_usage[0] = 1.0;
        match algorithm {
            Algorithm::FairTree => fair_tree::compute(tree, &mut out),
            Algorithm::Classic { dampening } => classic::compute(tree, dampening.max(1), &mut out),
        }
        out
    }

    /// The fair-share factor a job charging `assoc` gets: its association's factor, or
    /// 0 when it has none (Slurm gives a job without an association 0).
    pub fn job_factor(&self, assoc: Option<AssocId>) -> f64 {
        assoc
            .and_then(|a| self.factor.get(a.index()).copied().flatten())
            .unwrap_or(0.0)
    }
}
