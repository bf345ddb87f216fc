//! The classic fair-share algorithm (`PriorityFlags=NO_FAIR_TREE`).
//!
//! From <https://slurm.schedmd.com/classic_fair_share.html>:
//!
//! - normalized shares S = (S_user / S_siblings) × (S_account / S_sibling-accounts) × …
//!   up to the root;
//! - normalized usage U = usage / the root's usage;
//! - effective usage UE = U for associations directly below the root, and
//!   UE = U + (UE_parent − U) × S_raw / S_siblings below that (an account's usage pulls
//!   its children's);
//! - factor F = 2^(−UE / S / d), d being `FairShareDampeningFactor`; 0 when S = 0.
//!
//! An association with `parent` shares takes its fair-share parent's S, UE and F.

use super::assoc::{AssocId, AssocTree, Shares};
use super::figures::FairShares;

pub(super) fn compute(tree: &AssocTree, dampening: u32, out: &mut FairShares) {
    out.norm_shares[0] = 1.0;
    let level_shares = tree.all_level_shares();
    // Parents come before their children in a tree's order, so one pass in id order
    // sees every fair-share parent finished.
    for (id, a) in tree.iter().skip(1) {
        let i = id.index();
        let fs_parent = tree.fs_parent(id).unwrap_or(AssocId::ROOT);
        let p = fs_parent.index();
        if a.shares == Shares::Parent {
            out.norm_shares[i] = out.norm_shares[p];
            out.effective_usage[i] = out.effective_usage[p];
            out.factor[i] = out.factor[p];
            continue;
        }
        let level = level_shares[id.index()];
        let fraction = if level > 0 {
            a.shares.raw() as f64 / level as f64
        } else {
            0.0
        };
        out.norm_shares[i] = out.norm_shares[p] * fraction;
        let u = out.norm_usage[i];
        out.effective_usage[i] = if fs_parent == AssocId::ROOT {
            u
        } else {
            u + (out.effective_usage[p] - u) * fraction
        };
        let s = out.norm_shares[i];
        out.factor[i] = Some(if s > 0.0 {
            2f64.powf(-(out.effective_usage[i] / s) / dampening as f64)
        } else {
            0.0
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::fairshare::{Algorithm, AssocId, AssocTree, FairShares, Shares};

    const CLASSIC: Algorithm = Algorithm::Classic { dampening: 1 };

    #[test]
    fn ten_users_with_equal_shares_in_a3_each_get_one_percent_of_the_machine() {
        // The worked example of Slurm's classic fair-share page: the machine split among
        // accounts A..D (here 40/30/20/10), A's part among A1..A4 equally, and A3's
        // among 10 users: each user's normalized share is 0.4 × 0.25 × 0.1 = 1%.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "A", Shares::Raw(40)).unwrap();
        for (name, s) in [("B", 30), ("C", 20), ("D", 10)] {
            t.add_account(AssocId::ROOT, name, Shares::Raw(s)).unwrap();
        }
        let subs: Vec<AssocId> = (1..=4)
            .map(|k| t.add_account(a, &format!("A{k}"), Shares::Raw(1)).unwrap())
            .collect();
        let users: Vec<AssocId> = (0..10)
            .map(|k| {
                t.add_user(subs[2], &format!("u{k}"), Shares::Raw(1))
                    .unwrap()
            })
            .collect();
        let fs = FairShares::compute(&t, CLASSIC);
        for u in users {
            assert!((fs.norm_shares[u.index()] - 0.01).abs() < 1e-12);
            // No usage anywhere: F = 2^0 = 1.
            assert_eq!(fs.factor[u.index()], Some(1.0));
        }
    }

    #[test]
    fn using_exactly_ones_share_gives_one_half() {
        // F = 2^(-U/S): a top-level account with half the shares that used half the
        // machine gets 0.5; the one that used nothing gets 1.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(b, "bob", Shares::Raw(1)).unwrap();
        t.charge(ann, 50.0);
        t.charge(bob, 50.0);
        let fs = FairShares::compute(&t, CLASSIC);
        assert_eq!(fs.factor[a.index()], Some(0.5));
        // ann: UE = 0.5 + (0.5 - 0.5) × 1 = 0.5, S = 0.5: F = 0.5.
        assert_eq!(fs.factor[ann.index()], Some(0.5));
        // With a dampening factor of 2 the exponent halves: 2^-0.5.
        let damped = FairShares::compute(&t, Algorithm::Classic { dampening: 2 });
        assert!((damped.factor[ann.index()].unwrap() - 2f64.powf(-0.5)).abs() < 1e-12);
    }

    #[test]
    fn an_accounts_usage_pulls_on_its_users_effective_usage() {
        // a (1 share of 2) used 80%: ann used 80% (all of a's), bob nothing.
        // bob: U = 0, UE = 0 + (0.8 - 0) × 1/2 = 0.4, S = 0.25: F = 2^-1.6.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        let cid = t.add_user(b, "cid", Shares::Raw(1)).unwrap();
        t.charge(ann, 80.0);
        t.charge(cid, 20.0);
        let fs = FairShares::compute(&t, CLASSIC);
        assert!((fs.effective_usage[bob.index()] - 0.4).abs() < 1e-12);
        assert!((fs.factor[bob.index()].unwrap() - 2f64.powf(-1.6)).abs() < 1e-12);
        // ann: UE = 0.8 + 0 = 0.8, F = 2^-3.2.
        assert!((fs.factor[ann.index()].unwrap() - 2f64.powf(-3.2)).abs() < 1e-12);
        assert_eq!(fs.level_fs[ann.index()], None);
    }
}
