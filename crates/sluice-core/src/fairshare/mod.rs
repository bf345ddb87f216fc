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
//! `figures.rs` holds what they compute (data only, so that both algorithms fill it
//! without reaching back up here); `usage.rs` holds the half-life decay of usage.

mod assoc;
mod classic;
mod fair_tree;
mod figures;
mod usage;

pub use assoc::{Assoc, AssocError, AssocId, AssocTree, Shares};
pub use figures::{Algorithm, FairShares};
pub use usage::{decay_factor, Charge, Decay};

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
}
