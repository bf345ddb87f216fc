//! The association tree fair-share is computed over.
//!
//! Slurm's associations form a tree: the `root` account at the top, accounts below it
//! (nested as deep as a site likes), and *user associations* (a user charging an
//! account) as leaves. Each association holds raw shares (`sacctmgr ... set
//! fairshare=N`, or `parent`) and a raw usage: billing-TRES-seconds, decayed with
//! `PriorityDecayHalfLife`. Usage charged to a user association is charged to every
//! association above it too, so an account's usage is the sum over its subtree, as in
//! Slurm's `assoc_mgr` (`usage_raw`).
//!
//! An association whose shares are `parent` (Slurm's `SLURMDB_FS_USE_PARENT`) lends
//! its fair-share standing to its children: for fair-share purposes they count as
//! children of its own fair-share parent (Slurm's `fs_assoc_ptr`).

/// An association's index in its [`AssocTree`]. The root account is [`AssocId::ROOT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AssocId(pub u32);

impl AssocId {
    /// The `root` account's association.
    pub const ROOT: AssocId = AssocId(0);

    /// The id as an index into the tree's associations.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Raw fair-share shares of an association (`Fairshare=` in sacctmgr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shares {
    /// A number of shares, compared with the siblings' shares.
    Raw(u32),
    /// `Fairshare=parent`: use the parent's standing.
    Parent,
}

impl Shares {
    /// The raw count, where there is one (0 for `parent`, which Slurm leaves out of
    /// its siblings' sum).
    pub fn raw(self) -> u32 {
        match self {
            Shares::Raw(n) => n,
            Shares::Parent => 0,
        }
    }
}

/// One association: an account (no user) or a user charging an account.
#[derive(Clone, Debug, PartialEq)]
pub struct Assoc {
    /// The account's name (for a user association, the account charged).
    pub account: String,
    /// The user, for a user association.
    pub user: Option<String>,
    /// The account above it (`None` only for the root).
    pub parent: Option<AssocId>,
    /// Raw shares.
    pub shares: Shares,
    /// Association priority (`sacctmgr ... set priority=N`), for the `ASSOC` factor.
    pub priority: u32,
    /// Decayed usage of this association and everything below it, in
    /// billing-TRES-seconds (Slurm's `usage_raw`; `sshare`'s `RawUsage`).
    pub usage_raw: f64,
    /// Associations directly below it, in the order they were added.
    pub children: Vec<AssocId>,
}

impl Assoc {
    /// True for a user association (a leaf of the tree).
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }
}

/// Why an association could not be added. Nothing changes when one is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssocError {
    /// The parent named is not in the tree.
    NoSuchParent(AssocId),
    /// Associations can only be added below accounts, not below users.
    ParentIsUser(AssocId),
    /// An account of this name, or this user in this account, exists already.
    Exists,
}

impl std::fmt::Display for AssocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AssocError::NoSuchParent(id) => write!(f, "no association {}", id.0),
            AssocError::ParentIsUser(id) => {
                write!(f, "association {} is a user, not an account", id.0)
            }
            AssocError::Exists => write!(f, "association already exists"),
        }
    }
}

impl std::error::Error for AssocError {}

/// All associations of a cluster, rooted at the `root` account.
#[derive(Clone, Debug, PartialEq)]
pub struct AssocTree {
    assocs: Vec<Assoc>,
}

impl Default for AssocTree {
    fn default() -> Self {
        Self::new()
    }
}

impl AssocTree {
    /// A tree holding only the `root` account, with one raw share and no usage.
    pub fn new() -> Self {
        AssocTree {
            assocs: vec![Assoc {
                account: "root".into(),
                user: None,
                parent: None,
                shares: Shares::Raw(1),
                priority: 0,
                usage_raw: 0.0,
                children: Vec::new(),
            }],
        }
    }

    /// Adds account `name` below account `parent`.
    ///
    /// Errors: `parent` missing or a user; an account `name` exists already.
    pub fn add_account(
        &mut self,
        parent: AssocId,
        name: &str,
        shares: Shares,
    ) -> Result<AssocId, AssocError> {
        self.check_parent(parent)?;
        if self.account(name).is_some() {
            return Err(AssocError::Exists);
        }
        Ok(self.push(parent, name.to_string(), None, shares))
    }

    /// Adds user `user` to account `account`.
    ///
    /// Errors: `account` missing or a user; the user is in this account already.
    pub fn add_user(
        &mut self,
        account: AssocId,
        user: &str,
        shares: Shares,
    ) -> Result<AssocId, AssocError> {
        self.check_parent(account)?;
        if self.user(account, user).is_some() {
            return Err(AssocError::Exists);
        }
        let name = self.assocs[account.index()].account.clone();
        Ok(self.push(account, name, Some(user.to_string()), shares))
    }

    fn check_parent(&self, parent: AssocId) -> Result<(), AssocError> {
        match self.assocs.get(parent.index()) {
            None => Err(AssocError::NoSuchParent(parent)),
            Some(a) if a.is_user() => Err(AssocError::ParentIsUser(parent)),
            Some(_) => Ok(()),
        }
    }

    fn push(
        &mut self,
        parent: AssocId,
        account: String,
        user: Option<String>,
        shares: Shares,
    ) -> AssocId {
        let id = AssocId(self.assocs.len() as u32);
        self.assocs.push(Assoc {
            account,
            user,
            parent: Some(parent),
            shares,
            priority: 0,
            usage_raw: 0.0,
            children: Vec::new(),
        });
        self.assocs[parent.index()].children.push(id);
        id
    }

    /// Sets an association's raw shares.
    pub fn set_shares(&mut self, id: AssocId, shares: Shares) {
        self.assocs[id.index()].shares = shares;
    }

    /// Sets an association's priority (the `ASSOC` factor's input).
    pub fn set_priority(&mut self, id: AssocId, priority: u32) {
        self.assocs[id.index()].priority = priority;
    }

    /// One association. Panics if `id` is not in this tree.
    pub fn get(&self, id: AssocId) -> &Assoc {
        &self.assocs[id.index()]
    }

    /// Number of associations, the root included.
    pub fn len(&self) -> usize {
        self.assocs.len()
    }

    /// Always false: the root is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// All associations with their ids, in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = (AssocId, &Assoc)> {
        self.assocs
            .iter()
            .enumerate()
            .map(|(i, a)| (AssocId(i as u32), a))
    }

    /// The account association named `name`.
    pub fn account(&self, name: &str) -> Option<AssocId> {
        self.iter()
            .find(|(_, a)| !a.is_user() && a.account == name)
            .map(|(id, _)| id)
    }

    /// User `user`'s association in account `account`.
    pub fn user(&self, account: AssocId, user: &str) -> Option<AssocId> {
        self.assocs
            .get(account.index())?
            .children
            .iter()
            .copied()
            .find(|c| self.assocs[c.index()].user.as_deref() == Some(user))
    }

    /// Number of user associations (Slurm's `g_user_assoc_count`, Fair Tree's
    /// denominator).
    pub fn user_count(&self) -> usize {
        self.assocs.iter().filter(|a| a.is_user()).count()
    }

    /// `id` and every account above it, up to and including the root.
    pub fn chain(&self, id: AssocId) -> impl Iterator<Item = AssocId> + '_ {
        std::iter::successors(Some(id), |a| self.assocs[a.index()].parent)
    }

    /// Depth below the root (the root is 0).
    pub fn depth(&self, id: AssocId) -> usize {
        self.chain(id).count() - 1
    }

    /// The association whose children `id` is compared with for fair-share: its parent,
    /// or, when the parent's shares are `parent`, that account's own fair-share parent
    /// (Slurm's `fs_assoc_ptr`). `None` for the root.
    pub fn fs_parent(&self, id: AssocId) -> Option<AssocId> {
        let mut p = self.assocs[id.index()].parent?;
        while self.assocs[p.index()].shares == Shares::Parent {
            match self.assocs[p.index()].parent {
                Some(pp) => p = pp,
                None => break,
            }
        }
        Some(p)
    }

    /// The associations compared with one another below `id` for fair-share (its
    /// fair-share children): its children, with the children of any child whose shares
    /// are `parent` in that child's place (the child itself stays, childless). An
    /// account whose own shares are `parent` has none: its children compete above it.
    pub fn fs_children(&self, id: AssocId) -> Vec<AssocId> {
        let mut out = Vec::new();
        let a = &self.assocs[id.index()];
        if a.shares == Shares::Parent && a.parent.is_some() {
            return out;
        }
        self.collect_fs_children(id, &mut out);
        out
    }

    fn collect_fs_children(&self, id: AssocId, out: &mut Vec<AssocId>) {
        for &c in &self.assocs[id.index()].children {
            out.push(c);
            let child = &self.assocs[c.index()];
            if child.shares == Shares::Parent && !child.is_user() {
                self.collect_fs_children(c, out);
            }
        }
    }

    /// Sum of the raw shares of `id`'s fair-share siblings, itself included (Slurm's
    /// `level_shares`). Associations with `parent` shares count 0.
    pub fn level_shares(&self, id: AssocId) -> u64 {
        match self.fs_parent(id) {
            None => self.assocs[id.index()].shares.raw() as u64,
            Some(p) => self
                .fs_children(p)
                .iter()
                .map(|c| self.assocs[c.index()].shares.raw() as u64)
                .sum(),
        }
    }

    /// [`AssocTree::level_shares`] of every association at once, by index, in time
    /// linear in the tree's size.
    pub fn all_level_shares(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.assocs.len()];
        out[0] = self.assocs[0].shares.raw() as u64;
        for (p, a) in self.iter() {
            if a.is_user() || (a.shares == Shares::Parent && a.parent.is_some()) {
                continue; // a `parent` account's children are summed one level up
            }
            let mut kids = Vec::new();
            self.collect_fs_children(p, &mut kids);
            let sum: u64 = kids
                .iter()
                .map(|c| self.assocs[c.index()].shares.raw() as u64)
                .sum();
            for c in kids {
                out[c.index()] = sum;
            }
        }
        out
    }

    /// Charges `amount` billing-TRES-seconds to `id` and every account above it.
    pub fn charge(&mut self, id: AssocId, amount: f64) {
        let chain: Vec<AssocId> = self.chain(id).collect();
        for a in chain {
            self.assocs[a.index()].usage_raw += amount;
        }
    }

    /// Multiplies every association's usage by `factor` (a decay, in `[0, 1]`).
    pub fn decay(&mut self, factor: f64) {
        for a in &mut self.assocs {
            a.usage_raw *= factor;
        }
    }

    /// Forgets all usage (`PriorityUsageResetPeriod`).
    pub fn reset_usage(&mut self) {
        for a in &mut self.assocs {
            a.usage_raw = 0.0;
        }
    }

    /// Sets one association's raw usage as it was saved (for a restart). The caller
    /// restores every association, so sums over subtrees stay consistent.
    pub fn restore_usage(&mut self, id: AssocId, usage_raw: f64) {
        self.assocs[id.index()].usage_raw = usage_raw;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_charged_to_a_user_counts_for_every_account_above_it() {
        let mut t = AssocTree::new();
        let phys = t
            .add_account(AssocId::ROOT, "physics", Shares::Raw(2))
            .unwrap();
        let theory = t.add_account(phys, "theory", Shares::Raw(1)).unwrap();
        let ann = t.add_user(theory, "ann", Shares::Raw(1)).unwrap();
        t.charge(ann, 3600.0);
        assert_eq!(t.get(ann).usage_raw, 3600.0);
        assert_eq!(t.get(theory).usage_raw, 3600.0);
        assert_eq!(t.get(phys).usage_raw, 3600.0);
        assert_eq!(t.get(AssocId::ROOT).usage_raw, 3600.0);
        t.decay(0.5);
        assert_eq!(t.get(phys).usage_raw, 1800.0);
        assert_eq!(t.depth(ann), 3);
        assert_eq!(t.user_count(), 1);
    }

    #[test]
    fn refused_additions_change_nothing() {
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Raw(1)).unwrap();
        let u = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let before = t.clone();
        assert_eq!(
            t.add_account(AssocId::ROOT, "a", Shares::Raw(1)),
            Err(AssocError::Exists)
        );
        assert_eq!(
            t.add_user(a, "ann", Shares::Raw(1)),
            Err(AssocError::Exists)
        );
        assert_eq!(
            t.add_user(u, "bob", Shares::Raw(1)),
            Err(AssocError::ParentIsUser(u))
        );
        assert_eq!(
            t.add_account(AssocId(99), "b", Shares::Raw(1)),
            Err(AssocError::NoSuchParent(AssocId(99)))
        );
        assert_eq!(t, before);
    }

    #[test]
    fn children_of_a_parent_shares_account_compete_one_level_up() {
        // root ── a (parent) ── ann, bob ;  root ── b (3) ── cid
        let mut t = AssocTree::new();
        let a = t.add_account(AssocId::ROOT, "a", Shares::Parent).unwrap();
        let ann = t.add_user(a, "ann", Shares::Raw(1)).unwrap();
        let bob = t.add_user(a, "bob", Shares::Raw(1)).unwrap();
        let b = t.add_account(AssocId::ROOT, "b", Shares::Raw(3)).unwrap();
        assert_eq!(t.fs_parent(ann), Some(AssocId::ROOT));
        assert_eq!(t.fs_children(AssocId::ROOT), vec![a, ann, bob, b]);
        assert_eq!(t.fs_children(a), vec![]);
        // a counts 0 among its fair-share siblings.
        assert_eq!(t.level_shares(b), 5);
        let all = t.all_level_shares();
        for (id, _) in t.iter() {
            assert_eq!(all[id.index()], t.level_shares(id), "{id:?}");
        }
    }
}
