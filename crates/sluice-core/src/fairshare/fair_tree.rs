//! Fair Tree, as Slurm's `priority/multifactor` computes it.
//!
//! For each association, LevelFS = S / U, where S is its raw shares over the sum of its
//! fair-share siblings' raw shares and U its usage over its fair-share parent's usage.
//! Siblings are sorted by LevelFS, highest first (users before accounts on equal
//! values), and walked depth-first: each user met gets the current rank, which starts
//! at the number of user associations and goes down by one per user. The factor is
//! rank / number of user associations. Ties (Slurm's rules):
//!
//! 1. sibling users with the same LevelFS get the same rank;
//! 2. sibling accounts with the same LevelFS have their children merged before sorting;
//! 3. a user with the same LevelFS as a sibling account gets the rank of that account's
//!    highest ranked user.
//!
//! Associations with `parent` shares: a user gets an infinite LevelFS (first among its
//! siblings), an account the value Slurm gives it (`NO_VAL`, 4294967294), and its
//! children compete one level up (see [`AssocTree::fs_children`]).

use super::assoc::{AssocId, AssocTree, Shares};
use super::figures::FairShares;

/// Slurm's `NO_VAL` as a LevelFS: what an account with `parent` shares gets.
const NO_VAL_LEVEL_FS: f64 = 4_294_967_294.0;

pub(super) fn compute(tree: &AssocTree, out: &mut FairShares) {
    // LevelFS depends only on an association, its siblings' shares and its parent's
    // usage: compute them all first, then rank.
    let level_shares = tree.all_level_shares();
    let mut value = vec![0.0; tree.len()];
    for (id, a) in tree.iter().skip(1) {
        let parent_usage = tree
            .fs_parent(id)
            .map(|p| tree.get(p).usage_raw)
            .unwrap_or(0.0);
        let u = if parent_usage > 0.0 {
            a.usage_raw / parent_usage
        } else {
            0.0
        };
        let level = level_shares[id.index()];
        let s = match a.shares {
            Shares::Raw(raw) if level > 0 => raw as f64 / level as f64,
            _ => 0.0,
        };
        let fs = match a.shares {
            Shares::Parent if a.is_user() => f64::INFINITY,
            Shares::Parent => NO_VAL_LEVEL_FS,
            // No share: the lowest value. No usage with a share: the highest.
            Shares::Raw(_) if s == 0.0 => 0.0,
            Shares::Raw(_) => s / u,
        };
        out.effective_usage[id.index()] = u;
        out.norm_shares[id.index()] = s;
        out.level_fs[id.index()] = Some(fs);
        value[id.index()] = fs;
    }
    let users = tree.user_count() as u32;
    let mut walk = Walk {
        tree,
        value: &value,
        factor: &mut out.factor,
        users,
        rank: users,
        rank_no_ties: users,
    };
    walk.level(tree.fs_children(AssocId::ROOT), false);
}

struct Walk<'a> {
    tree: &'a AssocTree,
    /// LevelFS by association index.
    value: &'a [f64],
    factor: &'a mut [Option<f64>],
    users: u32,
    /// The rank given to the next user (ties keep it).
    rank: u32,
    /// What the rank would be without ties.
    rank_no_ties: u32,
}

impl Walk<'_> {
    /// Ranks one level: `siblings` (possibly the merged children of tied accounts).
    fn level(&mut self, mut siblings: Vec<AssocId>, account_tied: bool) {
        let tree = self.tree;
        let value = self.value;
        let fs = |id: AssocId| value[id.index()];
        // Highest LevelFS first; users before accounts on equal values; otherwise the
        // order they were added (a stable sort).
        siblings.sort_by(|&a, &b| {
            fs(b)
                .partial_cmp(&fs(a))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| tree.get(b).is_user().cmp(&tree.get(a).is_user()))
        });
        let mut prev: Option<f64> = None;
        let mut i = 0;
        while i < siblings.len() {
            let id = siblings[i];
            let v = fs(id);
            let tied = if i == 0 && account_tied {
                true
            } else {
                prev == Some(v)
            };
            if tree.get(id).is_user() {
                if !tied {
                    self.rank = self.rank_no_ties;
                }
                self.factor[id.index()] = Some(self.rank as f64 / self.users as f64);
                self.rank_no_ties = self.rank_no_ties.saturating_sub(1);
                i += 1;
            } else {
                // Sibling accounts tied with this one (users sort before accounts, so
                // they all follow it) have their children merged.
                let mut end = i + 1;
                while end < siblings.len()
                    && !tree.get(siblings[end]).is_user()
                    && fs(siblings[end]) == v
                {
                    end += 1;
                }
                let merged: Vec<AssocId> = siblings[i..end]
                    .iter()
                    .flat_map(|&acct| tree.fs_children(acct))
                    .collect();
                if !merged.is_empty() {
                    self.level(merged, tied);
                }
                i = end;
            }
            prev = Some(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::fairshare::{Algorithm, AssocId, AssocTree, FairShares, Shares};

    fn factors(t: &AssocTree, ids: &[AssocId]) -> Vec<f64> {
        let fs = FairShares::compute(t, Algorithm::FairTree);
        ids.iter().map(|&i| fs.factor[i.index()].unwrap()).collect()
    }

    #[test]
    fn without_usage_every_user_ties_at_the_top() {
        // Slurm: LevelFS is infinite without usage, and tied users share a rank.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        assert_eq!(factors(&t, &[ann, bob]), vec![1.0, 1.0]);
        let fs = FairShares::compute(&t, Algorithm::FairTree);
        assert_eq!(fs.level_fs[ann.index()], Some(f64::INFINITY));
        assert_eq!(fs.norm_shares[ann.index()], 0.5);
    }

    #[test]
    fn every_user_of_a_better_served_account_ranks_above_the_other_accounts_users() {
        // root ── a (1 share): ann (used 10), bob (used 90)
        //      └─ b (1 share): cid (used 50), dee (used 0)
        // a used 100 of 150, b 50: LevelFS a = 0.5/0.667 = 0.75, b = 0.5/0.333 = 1.5.
        // So b's users (dee: inf, cid) rank 4 and 3, then a's (ann, bob) 2 and 1.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        let cid = t.add_user(b, "cid", Shares::Raw(1)).unwrap();
        let dee = t.add_user(b, "dee", Shares::Raw(1)).unwrap();
        t.charge(ann, 10.0);
        t.charge(bob, 90.0);
        t.charge(cid, 50.0);
        assert_eq!(
            factors(&t, &[dee, cid, ann, bob]),
            vec![1.0, 0.75, 0.5, 0.25]
        );
        let fs = FairShares::compute(&t, Algorithm::FairTree);
        assert!((fs.level_fs[a.index()].unwrap() - 0.75).abs() < 1e-12);
        assert!((fs.level_fs[b.index()].unwrap() - 1.5).abs() < 1e-12);
        assert!((fs.effective_usage[bob.index()] - 0.9).abs() < 1e-12);
        // The accounts themselves get no factor; only users do.
        assert_eq!(fs.factor[a.index()], None);
    }

    #[test]
    fn shares_weigh_against_usage() {
        // a has 3 shares of 4 and used 60%: LevelFS 0.75/0.6 = 1.25;
        // b has 1 share and used 40%: 0.25/0.4 = 0.625. a's user ranks first.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(3)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(b, "bob", Shares::Raw(1)).unwrap();
        t.charge(ann, 60.0);
        t.charge(bob, 40.0);
        assert_eq!(factors(&t, &[ann, bob]), vec![1.0, 0.5]);
    }

    #[test]
    fn tied_accounts_have_their_children_ranked_together() {
        // a and b: same shares, same usage, so the same LevelFS: their users are
        // merged and sorted by their own LevelFS across both accounts.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap(); // 80 of a's 100: 0.5/0.8
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap(); // 20: 0.5/0.2
        let cid = t.add_user(b, "cid", Shares::Raw(1)).unwrap(); // 40: 0.5/0.4
        let dee = t.add_user(b, "dee", Shares::Raw(1)).unwrap(); // 60: 0.5/0.6
        t.charge(ann, 80.0);
        t.charge(bob, 20.0);
        t.charge(cid, 40.0);
        t.charge(dee, 60.0);
        // Merged: bob 2.5, cid 1.25, dee 0.833, ann 0.625.
        assert_eq!(
            factors(&t, &[bob, cid, dee, ann]),
            vec![1.0, 0.75, 0.5, 0.25]
        );
    }

    #[test]
    fn tied_users_share_a_rank_and_the_next_rank_skips() {
        // ann and bob used the same: both rank 3 (of 3), cid ranks 1, not 2.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        let cid = t.add_user(a, "cid", Shares::Raw(1)).unwrap();
        t.charge(ann, 10.0);
        t.charge(bob, 10.0);
        t.charge(cid, 30.0);
        let f = factors(&t, &[ann, bob, cid]);
        assert_eq!(f[0], 1.0);
        assert_eq!(f[1], 1.0);
        assert!((f[2] - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_user_tied_with_a_sibling_account_gets_that_accounts_top_rank() {
        // Under root: user rootuser (1 share, used 50) and account a (1 share, used 50)
        // with users ann (used 50) and bob (none). Same LevelFS (1.0): rootuser sorts
        // first, a's top user (bob, inf) is tied with it and shares rank 3.
        let mut t = AssocTree::new();
        let ru = t
            .add_user(AssocId::ROOT, "rootuser", Shares::Raw(1))
            .unwrap();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        t.charge(ru, 50.0);
        t.charge(ann, 50.0);
        assert_eq!(factors(&t, &[ru, bob, ann]), vec![1.0, 1.0, 1.0 / 3.0]);
    }

    #[test]
    fn a_user_without_shares_ranks_last_and_a_parent_shares_user_first() {
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let none = t.add_user(a, "none", Shares::Raw(0)).unwrap();
        let par = t.add_user(a, "par", Shares::Parent).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        t.charge(par, 100.0);
        t.charge(ann, 1.0);
        assert_eq!(
            factors(&t, &[par, ann, none]),
            vec![1.0, 2.0 / 3.0, 1.0 / 3.0]
        );
    }

    #[test]
    fn users_of_a_parent_shares_account_are_ranked_once_among_its_siblings() {
        // root ── a (parent) ── ann (used 30), bob (used 10) ; root ── b (1) ── cid (60)
        // ann and bob compete directly with b: level shares 1 + 1 + 1 = 3;
        // ann 0.333/0.3 = 1.11, bob 0.333/0.1 = 3.33, b 0.333/0.6 = 0.56; a sorts first
        // with Slurm's NO_VAL but has no children of its own.
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Parent).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(1)).unwrap();
        let cid = t.add_user(b, "cid", Shares::Raw(1)).unwrap();
        t.charge(ann, 30.0);
        t.charge(bob, 10.0);
        t.charge(cid, 60.0);
        assert_eq!(
            factors(&t, &[bob, ann, cid]),
            vec![1.0, 2.0 / 3.0, 1.0 / 3.0]
        );
    }
}
