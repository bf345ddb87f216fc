//! Accounts, users, associations and QOS as the controller holds them: `sacctmgr`'s
//! rules as a state machine without I/O (like [`crate::state`]).
//!
//! A change ([`Accounts::change`]) is checked as a whole on a copy and either refused
//! with Slurm's reason (nothing changes) or carried out, answering with what it did and
//! the database rows to write ([`AccountRow`]); the server acknowledges it only once
//! they are on disk. A check (`commit: false`) answers the same without changing
//! anything, which is how `sacctmgr` shows what it is about to do before it asks.
//!
//! The rules are real Slurm 22.05's, as observed (samples in
//! `crates/sluice-cli/tests/samples/sacctmgr/`):
//!
//! - a fresh cluster has the `root` account, its association, the `root` user
//!   (Administrator) with an association under it, and the QOS `normal`, which `root`'s
//!   association allows (and every association inherits);
//! - uid 0 and the cluster owner are administrators; otherwise a user's `AdminLevel`
//!   decides: Operators may add, change and delete accounts, users and associations,
//!   Administrators QOS and admin levels too;
//! - a user is added to existing accounts only; their first account becomes their
//!   `DefaultAccount` unless one is given;
//! - deleting an account deletes every association under it (its sub-accounts' and
//!   users' too, as Slurm does), unless one of them has pending or running jobs; a user
//!   whose default association goes gets their first remaining one as default, and a
//!   user whose last association goes through `delete user ... account=` is deleted;
//! - unset `Max*` limits, the priority, the default QOS and the QOS list are inherited
//!   from the parent; `Grp*` limits and shares are not.
//!
//! Lookups for the scheduler: [`Accounts::association`], [`Accounts::parent`],
//! [`Accounts::chain`], [`Accounts::children`], [`Accounts::effective`],
//! [`Accounts::default_account`], [`Accounts::qos`], [`Accounts::allowed_qos`].

use std::collections::{BTreeMap, BTreeSet};

use sluice_conf::slurm_conf::AccountingEnforce;
use sluice_proto::accounts::{
    AccountRecord, AccountsError, AccountsRequest, AccountsSnapshot, ActiveJob, AdminLevel,
    AssocChange, AssocFilter, AssocRef, AssociationListing, AssociationRecord, Change,
    ChangeOutcome, ClusterRecord, FlagsChange, ListChange, QosChange, QosRecord, Shares,
    UserRecord,
};
use sluice_store::AccountRow;

/// Slurm's message for a job whose user has no association with its account (and
/// partition).
pub const BAD_ACCOUNT: &str = "Invalid account or account/partition combination specified";
/// Slurm's message for a QOS that does not exist or that the job's association may not
/// use.
pub const BAD_QOS: &str = "Invalid qos specification";

/// Who asks for a change (from the socket's peer credentials).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requester {
    /// Login name (for the `AdminLevel` of their user record).
    pub name: String,
    /// uid 0 or the user running the controller: an administrator whatever the records
    /// say.
    pub superuser: bool,
}

/// The account, QOS and association a submission gets ([`Accounts::resolve_job`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobAccounting {
    /// The account (`--account`, else the user's default account).
    pub account: String,
    /// The QOS (`--qos`, else the association's default, else `normal`); empty for a QOS
    /// that does not exist when `qos` is not enforced (as Slurm records it).
    pub qos: String,
    /// The association's id, when there is one.
    pub association: Option<u32>,
}

/// Row kinds in the store's `accounts` table.
const KIND_ACCOUNT: &str = "account";
const KIND_USER: &str = "user";
const KIND_ASSOC: &str = "assoc";
const KIND_QOS: &str = "qos";

/// The accounts of one cluster.
#[derive(Clone, Debug)]
pub struct Accounts {
    cluster: String,
    tracked_tres: Vec<String>,
    accounts: BTreeMap<String, AccountRecord>,
    users: BTreeMap<String, UserRecord>,
    assocs: BTreeMap<u32, AssociationRecord>,
    qos: BTreeMap<String, QosRecord>,
    /// `(account, user or "", partition or "")` to association id.
    index: BTreeMap<(String, String, String), u32>,
    next_id: u32,
    next_seq: u64,
    next_qos_id: u32,
}

/// The inheritable settings, as bits (which of them a change touches).
const INHERITED: [fn(&AssociationRecord) -> bool; 9] = [
    |a| a.priority.is_some(),
    |a| a.default_qos.is_some(),
    |a| a.qos.is_some() || !a.qos_delta.is_empty(),
    |a| a.limits.max_jobs.is_some(),
    |a| a.limits.max_submit_jobs.is_some(),
    |a| a.limits.max_wall.is_some(),
    |a| !a.limits.max_tres_per_job.is_empty(),
    |a| !a.limits.max_tres_per_node.is_empty(),
    |a| !a.limits.max_tres_mins_per_job.is_empty(),
];

/// Which inheritable settings (bits as [`INHERITED`]) a change names.
fn inherited_bits(c: &AssocChange) -> u32 {
    let l = &c.limits;
    [
        c.priority.is_some(),
        c.default_qos.is_some(),
        c.qos.is_some(),
        l.max_jobs.is_some(),
        l.max_submit_jobs.is_some(),
        l.max_wall.is_some(),
        l.max_tres_per_job.is_some(),
        l.max_tres_per_node.is_some(),
        l.max_tres_mins_per_job.is_some(),
    ]
    .iter()
    .enumerate()
    .filter(|(_, on)| **on)
    .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// Bits of the inheritable settings `a` has unset, among `bits`.
fn unset_bits(a: &AssociationRecord, bits: u32) -> u32 {
    (0..INHERITED.len())
        .filter(|i| bits & (1 << i) != 0 && !INHERITED[*i](a))
        .fold(0, |b, i| b | 1 << i)
}

fn key(account: &str, user: Option<&str>, partition: Option<&str>) -> (String, String, String) {
    (
        account.to_string(),
        user.unwrap_or("").to_string(),
        partition.unwrap_or("").to_string(),
    )
}

fn lower(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let n = n.trim().to_ascii_lowercase();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

fn dedup(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let n = n.trim().to_string();
        if !n.is_empty() && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

impl Accounts {
    /// No accounts, users, associations or QOS at all (what [`Accounts::new`] and
    /// [`Accounts::restore`] fill in).
    fn empty(cluster: &str, tracked_tres: &[String]) -> Self {
        Accounts {
            cluster: cluster.to_string(),
            tracked_tres: tracked_tres.to_vec(),
            accounts: BTreeMap::new(),
            users: BTreeMap::new(),
            assocs: BTreeMap::new(),
            qos: BTreeMap::new(),
            index: BTreeMap::new(),
            next_id: 1,
            next_seq: 1,
            next_qos_id: 1,
        }
    }

    /// A fresh cluster as Slurm sets one up: the `root` account and association, the
    /// `root` user (Administrator, default account `root`) and its association, and QOS
    /// `normal`, allowed at `root`. `tracked_tres` are the TRES accounting tracks (the
    /// only ones limits may name).
    pub fn new(cluster: &str, tracked_tres: &[String]) -> Self {
        let mut a = Accounts::empty(cluster, tracked_tres);
        a.accounts.insert(
            "root".into(),
            AccountRecord {
                name: "root".into(),
                description: "default root account".into(),
                organization: "root".into(),
            },
        );
        a.users.insert(
            "root".into(),
            UserRecord {
                name: "root".into(),
                default_account: Some("root".into()),
                admin_level: AdminLevel::Administrator,
            },
        );
        let root = AssociationRecord {
            qos: Some(BTreeSet::from(["normal".to_string()])),
            ..a.new_assoc("root", None, None, None)
        };
        a.insert_assoc(root);
        let root_user = a.new_assoc("root", Some("root"), None, Some("root"));
        a.insert_assoc(root_user);
        a.qos.insert("normal".into(), QosRecord::new(1, "normal"));
        a.next_qos_id = 2;
        a
    }

    /// The accounts stored in `rows` (the store's `accounts` table). With no rows (a
    /// fresh database) it is [`Accounts::new`], and the rows to write are returned too.
    ///
    /// Errors: a row that does not parse.
    pub fn restore(
        cluster: &str,
        tracked_tres: &[String],
        rows: &[AccountRow],
    ) -> Result<(Self, Vec<AccountRow>), String> {
        if rows.is_empty() {
            let a = Accounts::new(cluster, tracked_tres);
            let rows = a.all_rows();
            return Ok((a, rows));
        }
        let mut a = Accounts::empty(cluster, tracked_tres);
        for row in rows {
            let Some(text) = &row.record else { continue };
            let bad = |e: serde_json::Error| format!("{} {}: {e}", row.kind, row.key);
            match row.kind.as_str() {
                KIND_ACCOUNT => {
                    let r: AccountRecord = serde_json::from_str(text).map_err(bad)?;
                    a.accounts.insert(r.name.clone(), r);
                }
                KIND_USER => {
                    let r: UserRecord = serde_json::from_str(text).map_err(bad)?;
                    a.users.insert(r.name.clone(), r);
                }
                KIND_ASSOC => {
                    let mut r: AssociationRecord = serde_json::from_str(text).map_err(bad)?;
                    r.cluster = cluster.to_string();
                    a.next_id = a.next_id.max(r.id + 1);
                    a.next_seq = a.next_seq.max(r.seq + 1);
                    a.insert_assoc(r);
                }
                KIND_QOS => {
                    let r: QosRecord = serde_json::from_str(text).map_err(bad)?;
                    a.next_qos_id = a.next_qos_id.max(r.id + 1);
                    a.qos.insert(r.name.clone(), r);
                }
                other => return Err(format!("unknown account record kind '{other}'")),
            }
        }
        Ok((a, Vec::new()))
    }

    /// The cluster's name.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    fn new_assoc(
        &mut self,
        account: &str,
        user: Option<&str>,
        partition: Option<&str>,
        parent: Option<&str>,
    ) -> AssociationRecord {
        let id = self.next_id;
        self.next_id += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        AssociationRecord {
            id,
            cluster: self.cluster.clone(),
            account: account.to_string(),
            user: user.map(str::to_string),
            parent: parent.map(str::to_string),
            partition: partition.map(str::to_string),
            seq,
            ..AssociationRecord::default()
        }
    }

    fn insert_assoc(&mut self, a: AssociationRecord) {
        self.index.insert(
            key(&a.account, a.user.as_deref(), a.partition.as_deref()),
            a.id,
        );
        self.assocs.insert(a.id, a);
    }

    fn remove_assoc(&mut self, id: u32) {
        if let Some(a) = self.assocs.remove(&id) {
            self.index
                .remove(&key(&a.account, a.user.as_deref(), a.partition.as_deref()));
        }
    }

    // ---- lookups ----

    /// The association of `user` in `account` for `partition`: the partition's own if
    /// there is one, else the user's association for every partition.
    pub fn association(
        &self,
        user: &str,
        account: &str,
        partition: Option<&str>,
    ) -> Option<&AssociationRecord> {
        let by = |p: Option<&str>| {
            self.index
                .get(&key(account, Some(user), p))
                .and_then(|id| self.assocs.get(id))
        };
        partition.and_then(|p| by(Some(p))).or_else(|| by(None))
    }

    /// An account's own association (its place in the tree).
    pub fn account_association(&self, account: &str) -> Option<&AssociationRecord> {
        self.index
            .get(&key(account, None, None))
            .and_then(|id| self.assocs.get(id))
    }

    /// An association by id.
    pub fn association_by_id(&self, id: u32) -> Option<&AssociationRecord> {
        self.assocs.get(&id)
    }

    /// Every association, by id.
    pub fn associations(&self) -> impl Iterator<Item = &AssociationRecord> {
        self.assocs.values()
    }

    /// The parent of an association: its account's association for a user's, the
    /// parent account's for an account's; `None` for `root`.
    pub fn parent(&self, a: &AssociationRecord) -> Option<&AssociationRecord> {
        let parent = if a.user.is_some() {
            Some(a.account.as_str())
        } else {
            a.parent.as_deref()
        };
        parent.and_then(|p| self.account_association(p))
    }

    /// An association and its parents up to `root`, in that order.
    pub fn chain(&self, id: u32) -> Vec<&AssociationRecord> {
        let mut out = Vec::new();
        let mut at = self.assocs.get(&id);
        while let Some(a) = at {
            if out.len() > self.assocs.len() {
                break;
            }
            out.push(a);
            at = self.parent(a);
        }
        out
    }

    /// The children of an account's association (its users' associations and its
    /// sub-accounts'), in Slurm's nested-set order: newest first.
    pub fn children(&self, id: u32) -> Vec<&AssociationRecord> {
        let Some(a) = self.assocs.get(&id) else {
            return Vec::new();
        };
        if a.user.is_some() {
            return Vec::new();
        }
        let mut kids: Vec<&AssociationRecord> = self
            .assocs
            .values()
            .filter(|c| c.id != a.id)
            .filter(|c| match &c.user {
                Some(_) => c.account == a.account,
                None => c.parent.as_deref() == Some(a.account.as_str()),
            })
            .collect();
        kids.sort_by_key(|c| std::cmp::Reverse(c.seq));
        kids
    }

    /// Every account association's children (as [`Accounts::children`]), by id, built
    /// in one pass: for walks over the whole tree.
    pub fn child_lists(&self) -> BTreeMap<u32, Vec<u32>> {
        let mut map: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for a in self.assocs.values() {
            if let Some(p) = self.parent(a) {
                if p.id != a.id {
                    map.entry(p.id).or_default().push(a.id);
                }
            }
        }
        for kids in map.values_mut() {
            kids.sort_by_key(|id| std::cmp::Reverse(self.assocs[id].seq));
        }
        map
    }

    /// An association with every unset inheritable value (`Max*` limits, priority,
    /// default QOS, QOS list) filled in from its parents, as `sacctmgr show assoc` and
    /// the scheduler see it. `Grp*` limits and shares are its own.
    pub fn effective(&self, id: u32) -> Option<AssociationRecord> {
        let chain = self.chain(id);
        let mut e = (*chain.first()?).clone();
        for p in &chain[1..] {
            e.priority = e.priority.or(p.priority);
            e.default_qos = e.default_qos.or_else(|| p.default_qos.clone());
            let (l, pl) = (&mut e.limits, &p.limits);
            l.max_jobs = l.max_jobs.or(pl.max_jobs);
            l.max_submit_jobs = l.max_submit_jobs.or(pl.max_submit_jobs);
            l.max_wall = l.max_wall.or(pl.max_wall);
            for (mine, theirs) in [
                (&mut l.max_tres_per_job, &pl.max_tres_per_job),
                (&mut l.max_tres_per_node, &pl.max_tres_per_node),
                (&mut l.max_tres_mins_per_job, &pl.max_tres_mins_per_job),
            ] {
                for (t, n) in theirs {
                    mine.entry(t.clone()).or_insert(*n);
                }
            }
        }
        e.qos = Some(self.allowed_qos(id));
        e.qos_delta = Vec::new();
        Some(e)
    }

    /// The QOS jobs of an association may use: its own list, or its parent's with its
    /// `+=`/`-=` changes applied.
    pub fn allowed_qos(&self, id: u32) -> BTreeSet<String> {
        let chain = self.chain(id);
        let mut list = BTreeSet::new();
        let mut start = chain.len();
        for (i, a) in chain.iter().enumerate() {
            if let Some(q) = &a.qos {
                list = q.clone();
                start = i;
                break;
            }
        }
        for a in chain[..start].iter().rev() {
            for d in &a.qos_delta {
                match d.split_at(1) {
                    ("+", name) => {
                        list.insert(name.to_string());
                    }
                    ("-", name) => {
                        list.remove(name);
                    }
                    _ => {}
                }
            }
        }
        list
    }

    /// A user's `DefaultAccount`.
    pub fn default_account(&self, user: &str) -> Option<&str> {
        self.users.get(user)?.default_account.as_deref()
    }

    /// A user's record.
    pub fn user(&self, name: &str) -> Option<&UserRecord> {
        self.users.get(name)
    }

    /// A QOS by name.
    pub fn qos(&self, name: &str) -> Option<&QosRecord> {
        self.qos.get(name)
    }

    /// Every QOS, by name.
    pub fn all_qos(&self) -> impl Iterator<Item = &QosRecord> {
        self.qos.values()
    }

    /// The users whose `AdminLevel` is Operator or Administrator, by name, with their
    /// level: operators see every job whatever `PrivateData` says and act on every job,
    /// as root and `SlurmUser` do; administrators also manage nodes and partitions.
    pub fn operators(&self) -> std::collections::BTreeMap<String, AdminLevel> {
        self.users
            .values()
            .filter(|u| u.admin_level >= AdminLevel::Operator)
            .map(|u| (u.name.clone(), u.admin_level))
            .collect()
    }

    /// A user's admin level (uid 0 and the cluster owner are administrators).
    pub fn admin_level(&self, who: &Requester) -> AdminLevel {
        if who.superuser {
            return AdminLevel::Administrator;
        }
        self.users
            .get(&who.name)
            .map(|u| u.admin_level)
            .unwrap_or_default()
    }

    /// A submission's account, QOS and association, as slurmctld resolves them:
    /// `account` (lower-cased) or the user's default; `qos` or the association's default
    /// QOS, the only QOS it may use, or `normal`. With `associations` enforced, a user
    /// without an association with the account (for `partition`, or for every
    /// partition) is refused; with `qos` enforced, a QOS that does not exist or that the
    /// association may not use is. Without enforcement a job of a user without
    /// association gets `account` or the user's name, and an unknown QOS is recorded
    /// empty (as Slurm 22.05 does).
    ///
    /// Errors: [`BAD_ACCOUNT`] or [`BAD_QOS`].
    pub fn resolve_job(
        &self,
        user: &str,
        account: Option<&str>,
        partition: &str,
        qos: Option<&str>,
        enforce: &AccountingEnforce,
    ) -> Result<JobAccounting, &'static str> {
        let account = account
            .map(|a| a.trim().to_ascii_lowercase())
            .filter(|a| !a.is_empty())
            .or_else(|| self.default_account(user).map(str::to_string));
        let assoc = account
            .as_deref()
            .and_then(|a| self.association(user, a, Some(partition)));
        if enforce.associations && assoc.is_none() {
            return Err(BAD_ACCOUNT);
        }
        let effective = assoc.and_then(|a| self.effective(a.id));
        let allowed = effective
            .as_ref()
            .and_then(|e| e.qos.clone())
            .unwrap_or_default();
        let qos = match qos.map(|q| q.trim().to_ascii_lowercase()) {
            Some(q) if !q.is_empty() => {
                if !self.qos.contains_key(&q) {
                    if enforce.qos {
                        return Err(BAD_QOS);
                    }
                    String::new()
                } else {
                    if enforce.qos && !allowed.contains(&q) {
                        return Err(BAD_QOS);
                    }
                    q
                }
            }
            _ => match effective.as_ref().and_then(|e| e.default_qos.clone()) {
                Some(d) => d,
                None if allowed.len() == 1 => allowed.iter().next().cloned().unwrap_or_default(),
                // With `qos` enforced, a job needs a QOS that exists and that its
                // association may use (`normal` may have been deleted).
                None if enforce.qos
                    && (!self.qos.contains_key("normal") || !allowed.contains("normal")) =>
                {
                    return Err(BAD_QOS)
                }
                None => "normal".to_string(),
            },
        };
        Ok(JobAccounting {
            account: account.unwrap_or_else(|| user.to_string()),
            qos,
            association: assoc.map(|a| a.id),
        })
    }

    // ---- listing ----

    /// Everything `sacctmgr show` lists; `cluster` describes this cluster.
    pub fn snapshot(&self, cluster: ClusterRecord) -> AccountsSnapshot {
        let lft = self.lft_order();
        let lft_of: BTreeMap<u32, u32> = lft
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, i as u32))
            .collect();
        let mut associations = Vec::new();
        if let Some(root) = self.account_association("root") {
            let kids = self.child_lists();
            self.display_walk(root.id, 0, &lft_of, &kids, &mut associations);
        }
        let mut qos: Vec<QosRecord> = self.qos.values().cloned().collect();
        qos.sort_by_key(|q| q.id);
        AccountsSnapshot {
            cluster,
            tracked_tres: self.tracked_tres.clone(),
            users: self.users.values().cloned().collect(),
            accounts: self.accounts.values().cloned().collect(),
            qos,
            associations,
            other_clusters: Vec::new(),
        }
    }

    /// Depth first from `id`: the association, its users' (by name, partition), then its
    /// sub-accounts (by name).
    fn display_walk(
        &self,
        id: u32,
        depth: u32,
        lft_of: &BTreeMap<u32, u32>,
        children: &BTreeMap<u32, Vec<u32>>,
        out: &mut Vec<AssociationListing>,
    ) {
        let Some(record) = self.effective(id) else {
            return;
        };
        out.push(AssociationListing {
            record,
            depth,
            lft: lft_of.get(&id).copied().unwrap_or(0),
        });
        let mut kids: Vec<&AssociationRecord> = children
            .get(&id)
            .map(|k| k.iter().map(|c| &self.assocs[c]).collect())
            .unwrap_or_default();
        kids.sort_by(|a, b| {
            (a.user.is_none(), &a.user, &a.partition, &a.account).cmp(&(
                b.user.is_none(),
                &b.user,
                &b.partition,
                &b.account,
            ))
        });
        for k in kids {
            self.display_walk(k.id, depth + 1, lft_of, children, out);
        }
    }

    /// Association ids in Slurm's nested-set order (pre-order, children newest first).
    fn lft_order(&self) -> Vec<u32> {
        let children = self.child_lists();
        let mut out = Vec::new();
        let mut stack: Vec<u32> = self
            .account_association("root")
            .map(|r| vec![r.id])
            .unwrap_or_default();
        while let Some(id) = stack.pop() {
            out.push(id);
            if let Some(kids) = children.get(&id) {
                stack.extend(kids.iter().rev());
            }
        }
        out
    }

    // ---- changes ----

    /// Checks (`commit: false`) or carries out a change on behalf of `who`. `active`
    /// are the jobs pending or running (a deletion touching their associations is
    /// refused). Returns what it did (or would do) and, when committed, the rows to
    /// write; on refusal nothing changed.
    ///
    /// Errors: Slurm's refusals ([`AccountsError`]).
    pub fn change(
        &mut self,
        who: &Requester,
        request: &AccountsRequest,
        active: &[ActiveJob],
        commit: bool,
    ) -> Result<(ChangeOutcome, Vec<AccountRow>), AccountsError> {
        let level = self.admin_level(who);
        let needed = match request {
            AccountsRequest::AddQos { .. }
            | AccountsRequest::ModifyQos { .. }
            | AccountsRequest::DeleteQos { .. } => AdminLevel::Administrator,
            AccountsRequest::ModifyUsers {
                admin_level: Some(_),
                ..
            } => AdminLevel::Administrator,
            _ => AdminLevel::Operator,
        };
        let permitted = level >= needed;
        let is_add = matches!(
            request,
            AccountsRequest::AddAccounts { .. }
                | AccountsRequest::AddUsers { .. }
                | AccountsRequest::AddQos { .. }
        );
        // sacctmgr shows what an add would do before the refusal; other changes are
        // refused first.
        if !permitted && (commit || !is_add) {
            return Err(AccountsError::PermissionDenied);
        }
        let mut next = self.clone();
        let mut outcome = match request {
            AccountsRequest::AddAccounts {
                names,
                description,
                organization,
                parent,
                settings,
            } => next.add_accounts(
                names,
                description.as_deref(),
                organization.as_deref(),
                parent.as_deref(),
                settings,
            )?,
            AccountsRequest::AddUsers {
                names,
                accounts,
                default_account,
                partitions,
                admin_level,
                settings,
            } => next.add_users(
                names,
                accounts,
                default_account.as_deref(),
                partitions,
                *admin_level,
                settings,
            )?,
            AccountsRequest::AddQos { names, settings } => next.add_qos(names, settings)?,
            AccountsRequest::ModifyUsers {
                filter,
                default_account,
                admin_level,
                settings,
            } => next.modify_users(filter, default_account.as_deref(), *admin_level, settings)?,
            AccountsRequest::ModifyAccounts {
                filter,
                description,
                organization,
                settings,
            } => next.modify_accounts(
                filter,
                description.as_deref(),
                organization.as_deref(),
                settings,
            )?,
            AccountsRequest::ModifyCluster { settings } => next.modify_cluster(settings)?,
            AccountsRequest::ModifyQos { names, settings } => next.modify_qos(names, settings)?,
            AccountsRequest::DeleteAccounts { names } => next.delete_accounts(names, active)?,
            AccountsRequest::DeleteUsers { filter } => next.delete_users(filter, active)?,
            AccountsRequest::DeleteQos { names } => next.delete_qos(names)?,
        };
        outcome.permitted = permitted;
        if !commit {
            return Ok((outcome, Vec::new()));
        }
        let rows = self.diff(&next);
        *self = next;
        Ok((outcome, rows))
    }

    fn assoc_ref(&self, a: &AssociationRecord) -> AssocRef {
        AssocRef {
            cluster: self.cluster.clone(),
            account: a.account.clone(),
            user: a.user.clone(),
            partition: a.partition.clone(),
            parent: if a.user.is_none() {
                a.parent.clone()
            } else {
                None
            },
        }
    }

    /// Checks an association change against what exists: tracked TRES, known QOS.
    fn check_assoc_change(&self, c: &AssocChange) -> Result<(), AccountsError> {
        self.check_tres(c.limits.tres_names())?;
        if let Some(Change::Set(q)) = &c.default_qos {
            if !self.qos.contains_key(q) {
                return Err(AccountsError::UnknownQos(q.clone()));
            }
        }
        if let Some(ListChange::Set(l) | ListChange::Add(l) | ListChange::Remove(l)) = &c.qos {
            if let Some(q) = l.iter().find(|q| !self.qos.contains_key(*q)) {
                return Err(AccountsError::UnknownQos(q.clone()));
            }
        }
        Ok(())
    }

    fn check_tres<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), AccountsError> {
        for n in names {
            if !self.tracked_tres.iter().any(|t| t == n) {
                return Err(AccountsError::UnknownTres(n.to_string()));
            }
        }
        Ok(())
    }

    /// Applies an association change to association `id` (own values).
    fn apply_assoc_change(&mut self, id: u32, c: &AssocChange) {
        let Some(a) = self.assocs.get_mut(&id) else {
            return;
        };
        if let Some(s) = c.shares {
            a.shares = s;
        }
        if let Some(p) = &c.priority {
            p.apply(&mut a.priority);
        }
        if let Some(d) = &c.default_qos {
            d.apply(&mut a.default_qos);
        }
        match &c.qos {
            None => {}
            Some(ListChange::Set(l)) => {
                a.qos = if l.is_empty() { None } else { Some(l.clone()) };
                a.qos_delta.clear();
            }
            Some(ListChange::Add(l)) | Some(ListChange::Remove(l)) => {
                let add = matches!(c.qos, Some(ListChange::Add(_)));
                match &mut a.qos {
                    Some(own) => {
                        for q in l {
                            if add {
                                own.insert(q.clone());
                            } else {
                                own.remove(q);
                            }
                        }
                    }
                    None => {
                        for q in l {
                            a.qos_delta.retain(|d| &d[1..] != q.as_str());
                            a.qos_delta
                                .push(format!("{}{q}", if add { '+' } else { '-' }));
                        }
                    }
                }
            }
        }
        c.limits.apply(&mut a.limits);
    }

    /// Refuses a default QOS that an association may not use (after a change).
    fn check_default_qos(&self, ids: &[u32]) -> Result<(), AccountsError> {
        let mut bad = Vec::new();
        let mut qos = String::new();
        for &id in ids {
            let Some(e) = self.effective(id) else {
                continue;
            };
            if let Some(d) = &e.default_qos {
                if !e.qos.as_ref().is_some_and(|l| l.contains(d)) {
                    qos = d.clone();
                    bad.push(self.assoc_ref(&e));
                }
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(AccountsError::DefaultQosNotAllowed {
                qos,
                associations: bad,
            })
        }
    }

    fn add_accounts(
        &mut self,
        names: &[String],
        description: Option<&str>,
        organization: Option<&str>,
        parent: Option<&str>,
        settings: &AssocChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let names = lower(names);
        if names.is_empty() {
            return Err(AccountsError::Other(
                "Need name of account to add.".to_string(),
            ));
        }
        let parent = parent
            .map(|p| p.trim().to_ascii_lowercase())
            .unwrap_or_else(|| "root".into());
        if self.account_association(&parent).is_none() {
            return Err(AccountsError::NoSuchParent {
                parent,
                cluster: self.cluster.clone(),
            });
        }
        self.check_assoc_change(settings)?;
        let mut outcome = ChangeOutcome::default();
        let mut new_assocs = Vec::new();
        for name in &names {
            if !self.accounts.contains_key(name) {
                self.accounts.insert(
                    name.clone(),
                    AccountRecord {
                        name: name.clone(),
                        description: description
                            .map(|d| d.to_ascii_lowercase())
                            .unwrap_or_else(|| name.clone()),
                        organization: organization.map(|o| o.to_ascii_lowercase()).unwrap_or_else(
                            || {
                                if parent == "root" {
                                    name.clone()
                                } else {
                                    parent.clone()
                                }
                            },
                        ),
                    },
                );
                outcome.accounts.push(name.clone());
            }
            if self.account_association(name).is_none() {
                let a = self.new_assoc(name, None, None, Some(&parent));
                new_assocs.push(a.id);
                outcome.associations.push(self.assoc_ref(&a));
                self.insert_assoc(a);
            }
        }
        if outcome.accounts.is_empty() && new_assocs.is_empty() {
            return Err(AccountsError::NothingNew);
        }
        let settings = AssocChange {
            parent: None,
            ..settings.clone()
        };
        for id in &new_assocs {
            self.apply_assoc_change(*id, &settings);
        }
        self.check_default_qos(&new_assocs)?;
        Ok(outcome)
    }

    #[allow(clippy::too_many_arguments)]
    fn add_users(
        &mut self,
        names: &[String],
        accounts: &[String],
        default_account: Option<&str>,
        partitions: &[String],
        admin_level: Option<AdminLevel>,
        settings: &AssocChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let names = dedup(names);
        if names.is_empty() {
            return Err(AccountsError::Other("Need name of user to add.".into()));
        }
        let default_account = default_account.map(|d| d.trim().to_ascii_lowercase());
        let mut accounts = lower(accounts);
        if let Some(d) = &default_account {
            if !accounts.contains(d) {
                accounts.push(d.clone());
            }
        }
        if accounts.is_empty() {
            return Err(AccountsError::NeedAccount);
        }
        if let Some(missing) = accounts
            .iter()
            .find(|a| self.account_association(a).is_none())
        {
            return Err(AccountsError::NoSuchAccount(missing.clone()));
        }
        if settings.parent.is_some() {
            return Err(AccountsError::Other(
                "Parent can only be set on accounts".into(),
            ));
        }
        self.check_assoc_change(settings)?;
        let partitions: Vec<Option<String>> = if partitions.is_empty() {
            vec![None]
        } else {
            dedup(partitions).into_iter().map(Some).collect()
        };
        let mut outcome = ChangeOutcome::default();
        let mut new_assocs = Vec::new();
        for user in &names {
            if !self.users.contains_key(user) {
                self.users.insert(
                    user.clone(),
                    UserRecord {
                        name: user.clone(),
                        default_account: None,
                        admin_level: admin_level.unwrap_or_default(),
                    },
                );
                outcome.users.push(user.clone());
            }
            for account in &accounts {
                for p in &partitions {
                    if self
                        .index
                        .contains_key(&key(account, Some(user), p.as_deref()))
                    {
                        continue;
                    }
                    let a = self.new_assoc(account, Some(user), p.as_deref(), Some(account));
                    new_assocs.push(a.id);
                    outcome.associations.push(self.assoc_ref(&a));
                    self.insert_assoc(a);
                }
            }
            let u = self.users.get_mut(user).expect("just made");
            if u.default_account.is_none() {
                u.default_account = Some(
                    default_account
                        .clone()
                        .unwrap_or_else(|| accounts[0].clone()),
                );
            }
        }
        if outcome.users.is_empty() && new_assocs.is_empty() {
            return Err(AccountsError::NothingNew);
        }
        for id in &new_assocs {
            self.apply_assoc_change(*id, settings);
        }
        self.check_default_qos(&new_assocs)?;
        Ok(outcome)
    }

    fn add_qos(
        &mut self,
        names: &[String],
        settings: &QosChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let names = lower(names);
        if names.is_empty() {
            return Err(AccountsError::Other("Need name of qos to add.".into()));
        }
        self.check_qos_change(settings, &names)?;
        let mut outcome = ChangeOutcome::default();
        for name in names {
            if self.qos.contains_key(&name) {
                continue;
            }
            let mut q = QosRecord::new(self.next_qos_id, &name);
            self.next_qos_id += 1;
            apply_qos_change(&mut q, settings);
            self.qos.insert(name.clone(), q);
            outcome.qos.push(name);
        }
        if outcome.qos.is_empty() {
            return Err(AccountsError::NothingNew);
        }
        Ok(outcome)
    }

    fn check_qos_change(&self, c: &QosChange, adding: &[String]) -> Result<(), AccountsError> {
        self.check_tres(c.limits.tres_names())?;
        if let Some(ListChange::Set(l) | ListChange::Add(l) | ListChange::Remove(l)) = &c.preempt {
            if let Some(q) = l
                .iter()
                .find(|q| !self.qos.contains_key(*q) && !adding.contains(q))
            {
                return Err(AccountsError::UnknownQos(q.clone()));
            }
        }
        Ok(())
    }

    /// User associations a filter names, in nested-set order.
    fn user_assocs(&self, f: &AssocFilter) -> Vec<u32> {
        let users = dedup(&f.users);
        let accounts = lower(&f.accounts);
        let partitions = dedup(&f.partitions);
        self.lft_order()
            .into_iter()
            .filter(|id| {
                let a = &self.assocs[id];
                let Some(u) = &a.user else { return false };
                (users.is_empty() || users.contains(u))
                    && (accounts.is_empty() || accounts.contains(&a.account))
                    && (partitions.is_empty()
                        || a.partition.as_ref().is_some_and(|p| partitions.contains(p)))
            })
            .collect()
    }

    fn modify_users(
        &mut self,
        filter: &AssocFilter,
        default_account: Option<&str>,
        admin_level: Option<AdminLevel>,
        settings: &AssocChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let users: Vec<String> = dedup(&filter.users)
            .into_iter()
            .filter(|u| self.users.contains_key(u))
            .collect();
        let mut outcome = ChangeOutcome::default();
        if users.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        if settings.parent.is_some() {
            return Err(AccountsError::Other(
                "Parent can only be set on accounts".into(),
            ));
        }
        self.check_assoc_change(settings)?;
        if let Some(d) = default_account {
            let d = d.trim().to_ascii_lowercase();
            let lacking: Vec<String> = users
                .iter()
                .filter(|u| {
                    !self
                        .assocs
                        .values()
                        .any(|a| a.user.as_deref() == Some(u.as_str()) && a.account == d)
                })
                .cloned()
                .collect();
            if !lacking.is_empty() {
                return Err(AccountsError::NotAssociated {
                    account: d,
                    users: lacking,
                    cluster: self.cluster.clone(),
                });
            }
            for u in &users {
                self.users.get_mut(u).expect("exists").default_account = Some(d.clone());
            }
        }
        if let Some(level) = admin_level {
            for u in &users {
                self.users.get_mut(u).expect("exists").admin_level = level;
            }
        }
        if default_account.is_some() || admin_level.is_some() {
            outcome.users = users.clone();
        }
        if !settings.is_empty() {
            let ids = self.user_assocs(&AssocFilter {
                users: users.clone(),
                ..filter.clone()
            });
            if ids.is_empty() && outcome.users.is_empty() {
                return Err(AccountsError::NothingModified);
            }
            for id in &ids {
                self.apply_assoc_change(*id, settings);
                outcome.associations.push(self.assoc_ref(&self.assocs[id]));
            }
            self.check_default_qos(&ids)?;
        }
        if outcome.users.is_empty() && outcome.associations.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        Ok(outcome)
    }

    /// Lists (into `out`) the user associations under account association `id` that
    /// take the changed inheritable settings `bits` from it: Slurm reports them as
    /// modified too.
    fn inheritors(&self, id: u32, bits: u32, out: &mut Vec<AssocRef>) {
        self.inheritors_in(&self.child_lists(), id, bits, out);
    }

    fn inheritors_in(
        &self,
        children: &BTreeMap<u32, Vec<u32>>,
        id: u32,
        bits: u32,
        out: &mut Vec<AssocRef>,
    ) {
        for kid in children
            .get(&id)
            .into_iter()
            .flatten()
            .map(|k| &self.assocs[k])
        {
            let unset = unset_bits(kid, bits);
            if unset == 0 {
                continue;
            }
            if kid.user.is_some() {
                out.push(self.assoc_ref(kid));
            } else {
                self.inheritors_in(children, kid.id, unset, out);
            }
        }
    }

    fn modify_accounts(
        &mut self,
        filter: &AssocFilter,
        description: Option<&str>,
        organization: Option<&str>,
        settings: &AssocChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let names: Vec<String> = lower(&filter.accounts)
            .into_iter()
            .filter(|a| self.accounts.contains_key(a))
            .collect();
        if names.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        self.check_assoc_change(settings)?;
        let mut outcome = ChangeOutcome::default();
        if description.is_some() || organization.is_some() {
            for n in &names {
                let a = self.accounts.get_mut(n).expect("exists");
                if let Some(d) = description {
                    a.description = d.to_ascii_lowercase();
                }
                if let Some(o) = organization {
                    a.organization = o.to_ascii_lowercase();
                }
            }
            outcome.accounts = names.clone();
        }
        if settings.is_empty() {
            return Ok(outcome);
        }
        let ids: Vec<u32> = self
            .lft_order()
            .into_iter()
            .filter(|id| {
                let a = &self.assocs[id];
                a.user.is_none() && names.contains(&a.account)
            })
            .collect();
        if ids.is_empty() && outcome.accounts.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        if let Some(parent) = &settings.parent {
            let parent = parent.trim().to_ascii_lowercase();
            let Some(p) = self.account_association(&parent) else {
                return Err(AccountsError::NoSuchParent {
                    parent,
                    cluster: self.cluster.clone(),
                });
            };
            let pid = p.id;
            // Under itself: Slurm modifies nothing (and says so).
            if ids.contains(&pid) {
                return Err(AccountsError::NothingModified);
            }
            let moving: Vec<u32> = ids
                .iter()
                .copied()
                .filter(|id| self.assocs[id].parent.as_deref() != Some(parent.as_str()))
                .collect();
            for id in &moving {
                let a = &self.assocs[id];
                if a.account == "root" || self.chain(pid).iter().any(|c| c.id == *id) {
                    return Err(AccountsError::Loop(a.account.clone()));
                }
            }
            for id in &moving {
                let r = self.assoc_ref(&self.assocs[id]);
                outcome.associations.push(r);
                let seq = self.next_seq;
                self.next_seq += 1;
                let a = self.assocs.get_mut(id).expect("exists");
                a.parent = Some(parent.clone());
                a.seq = seq;
            }
            let rest_empty = AssocChange {
                parent: None,
                ..settings.clone()
            }
            .is_empty();
            if moving.is_empty() && rest_empty && outcome.accounts.is_empty() {
                return Err(AccountsError::NothingModified);
            }
        }
        let rest = AssocChange {
            parent: None,
            ..settings.clone()
        };
        if !rest.is_empty() {
            let bits = inherited_bits(&rest);
            for id in &ids {
                self.apply_assoc_change(*id, &rest);
                if settings.parent.is_none() {
                    outcome.associations.push(self.assoc_ref(&self.assocs[id]));
                    self.inheritors(*id, bits, &mut outcome.associations);
                }
            }
            let mut touched = ids.clone();
            for id in &ids {
                self.subtree(*id, &mut touched);
            }
            self.check_default_qos(&touched)?;
        }
        Ok(outcome)
    }

    /// Every association under `id` (not itself), appended to `out`.
    fn subtree(&self, id: u32, out: &mut Vec<u32>) {
        fn walk(children: &BTreeMap<u32, Vec<u32>>, id: u32, out: &mut Vec<u32>) {
            for k in children.get(&id).into_iter().flatten() {
                out.push(*k);
                walk(children, *k, out);
            }
        }
        walk(&self.child_lists(), id, out);
    }

    fn modify_cluster(&mut self, settings: &AssocChange) -> Result<ChangeOutcome, AccountsError> {
        if settings.parent.is_some() {
            return Err(AccountsError::Other(
                "Can't set the parent of a cluster".into(),
            ));
        }
        self.check_assoc_change(settings)?;
        if settings.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        let root = self
            .account_association("root")
            .map(|a| a.id)
            .ok_or(AccountsError::NothingModified)?;
        self.apply_assoc_change(root, settings);
        let mut all = vec![root];
        self.subtree(root, &mut all);
        self.check_default_qos(&all)?;
        Ok(ChangeOutcome {
            associations: vec![self.assoc_ref(&self.assocs[&root])],
            ..ChangeOutcome::default()
        })
    }

    fn modify_qos(
        &mut self,
        names: &[String],
        settings: &QosChange,
    ) -> Result<ChangeOutcome, AccountsError> {
        let names: Vec<String> = lower(names)
            .into_iter()
            .filter(|q| self.qos.contains_key(q))
            .collect();
        if names.is_empty() {
            return Err(AccountsError::NothingModified);
        }
        self.check_qos_change(settings, &[])?;
        for n in &names {
            apply_qos_change(self.qos.get_mut(n).expect("exists"), settings);
        }
        Ok(ChangeOutcome {
            qos: names,
            ..ChangeOutcome::default()
        })
    }

    /// Refuses to delete associations that have pending or running jobs.
    fn check_no_jobs(&self, ids: &[u32], active: &[ActiveJob]) -> Result<(), AccountsError> {
        let busy: Vec<ActiveJob> = active
            .iter()
            .filter(|j| {
                ids.iter().any(|id| {
                    let a = &self.assocs[id];
                    a.account == j.account && a.user.as_deref().is_none_or(|u| u == j.user)
                })
            })
            .cloned()
            .collect();
        if busy.is_empty() {
            Ok(())
        } else {
            Err(AccountsError::JobsActive(busy))
        }
    }

    /// After associations went: users whose default account has no association left
    /// get their first remaining association's account (or none).
    fn fix_defaults(&mut self) {
        let mut first: BTreeMap<&str, &str> = BTreeMap::new();
        let mut has: BTreeSet<(&str, &str)> = BTreeSet::new();
        for id in self.lft_order() {
            let a = &self.assocs[&id];
            if let Some(u) = &a.user {
                first.entry(u.as_str()).or_insert(a.account.as_str());
                has.insert((u.as_str(), a.account.as_str()));
            }
        }
        let mut changes = Vec::new();
        for (name, u) in &self.users {
            let ok = u
                .default_account
                .as_deref()
                .is_some_and(|d| has.contains(&(name.as_str(), d)));
            if !ok {
                changes.push((
                    name.clone(),
                    first.get(name.as_str()).map(|a| a.to_string()),
                ));
            }
        }
        for (name, default) in changes {
            self.users.get_mut(&name).expect("exists").default_account = default;
        }
    }

    fn delete_accounts(
        &mut self,
        names: &[String],
        active: &[ActiveJob],
    ) -> Result<ChangeOutcome, AccountsError> {
        let names = lower(names);
        if names.is_empty() {
            return Err(AccountsError::Other(
                "No conditions given to remove, not executing.".into(),
            ));
        }
        if names.iter().any(|n| n == "root") {
            return Err(AccountsError::Other(
                "You are not allowed to remove the root account.\n Use remove cluster instead."
                    .into(),
            ));
        }
        let found: Vec<String> = names
            .into_iter()
            .filter(|n| self.accounts.contains_key(n))
            .collect();
        if found.is_empty() {
            return Err(AccountsError::NothingDeleted);
        }
        let mut ids = Vec::new();
        for n in &found {
            if let Some(a) = self.account_association(n) {
                ids.push(a.id);
                self.subtree(a.id, &mut ids);
            }
        }
        self.check_no_jobs(&ids, active)?;
        for id in ids {
            self.remove_assoc(id);
        }
        for n in &found {
            self.accounts.remove(n);
        }
        self.fix_defaults();
        Ok(ChangeOutcome {
            accounts: found,
            ..ChangeOutcome::default()
        })
    }

    fn delete_users(
        &mut self,
        filter: &AssocFilter,
        active: &[ActiveJob],
    ) -> Result<ChangeOutcome, AccountsError> {
        let users: Vec<String> = dedup(&filter.users)
            .into_iter()
            .filter(|u| self.users.contains_key(u))
            .collect();
        if filter.users.is_empty() {
            return Err(AccountsError::Other(
                "No conditions given to remove, not executing.".into(),
            ));
        }
        if users.is_empty() {
            return Err(AccountsError::NothingDeleted);
        }
        let whole = filter.accounts.is_empty() && filter.partitions.is_empty();
        let ids = self.user_assocs(&AssocFilter {
            users: users.clone(),
            ..filter.clone()
        });
        if ids.is_empty() && !whole {
            return Err(AccountsError::NothingDeleted);
        }
        self.check_no_jobs(&ids, active)?;
        let mut outcome = ChangeOutcome::default();
        for id in &ids {
            if !whole {
                outcome.associations.push(self.assoc_ref(&self.assocs[id]));
            }
            self.remove_assoc(*id);
        }
        if whole {
            for u in &users {
                self.users.remove(u);
            }
            outcome.users = users;
        } else {
            for u in users {
                if !self
                    .assocs
                    .values()
                    .any(|a| a.user.as_deref() == Some(u.as_str()))
                {
                    self.users.remove(&u);
                    outcome.users_without_associations.push(u);
                }
            }
        }
        self.fix_defaults();
        Ok(outcome)
    }

    fn delete_qos(&mut self, names: &[String]) -> Result<ChangeOutcome, AccountsError> {
        let names: Vec<String> = lower(names)
            .into_iter()
            .filter(|q| self.qos.contains_key(q))
            .collect();
        if names.is_empty() {
            return Err(AccountsError::NothingDeleted);
        }
        for n in &names {
            self.qos.remove(n);
            for a in self.assocs.values_mut() {
                if let Some(l) = &mut a.qos {
                    l.remove(n);
                }
                a.qos_delta.retain(|d| &d[1..] != n.as_str());
                if a.default_qos.as_deref() == Some(n.as_str()) {
                    a.default_qos = None;
                }
            }
            for q in self.qos.values_mut() {
                q.preempt.remove(n);
            }
        }
        Ok(ChangeOutcome {
            qos: names,
            ..ChangeOutcome::default()
        })
    }

    // ---- persistence ----

    fn rows_of(&self) -> BTreeMap<(&'static str, String), String> {
        let mut out = BTreeMap::new();
        for (k, v) in &self.accounts {
            out.insert((KIND_ACCOUNT, k.clone()), json(v));
        }
        for (k, v) in &self.users {
            out.insert((KIND_USER, k.clone()), json(v));
        }
        for (k, v) in &self.assocs {
            out.insert((KIND_ASSOC, k.to_string()), json(v));
        }
        for (k, v) in &self.qos {
            out.insert((KIND_QOS, k.clone()), json(v));
        }
        out
    }

    /// Every record as a row (for a fresh database).
    pub fn all_rows(&self) -> Vec<AccountRow> {
        self.rows_of()
            .into_iter()
            .map(|((kind, key), record)| AccountRow {
                kind: kind.to_string(),
                key,
                record: Some(record),
            })
            .collect()
    }

    /// The rows that turn `self`'s records into `next`'s.
    fn diff(&self, next: &Accounts) -> Vec<AccountRow> {
        let (old, new) = (self.rows_of(), next.rows_of());
        let mut rows = Vec::new();
        for ((kind, key), record) in &new {
            if old.get(&(kind, key.clone())) != Some(record) {
                rows.push(AccountRow {
                    kind: kind.to_string(),
                    key: key.clone(),
                    record: Some(record.clone()),
                });
            }
        }
        for (kind, key) in old.keys() {
            if !new.contains_key(&(kind, key.clone())) {
                rows.push(AccountRow {
                    kind: kind.to_string(),
                    key: key.clone(),
                    record: None,
                });
            }
        }
        rows
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("records serialise")
}

fn apply_qos_change(q: &mut QosRecord, c: &QosChange) {
    if let Some(d) = &c.description {
        q.description = d.to_ascii_lowercase();
    }
    if let Some(p) = &c.priority {
        q.priority = match p {
            Change::Clear => 0,
            Change::Set(v) => *v,
        };
    }
    if let Some(u) = &c.usage_factor {
        q.usage_factor = match u {
            Change::Clear => 1.0,
            Change::Set(v) => *v,
        };
    }
    match &c.preempt {
        None => {}
        Some(ListChange::Set(l)) => q.preempt = l.clone(),
        Some(ListChange::Add(l)) => q.preempt.extend(l.iter().cloned()),
        Some(ListChange::Remove(l)) => q.preempt.retain(|p| !l.contains(p)),
    }
    if let Some(m) = c.preempt_mode {
        q.preempt_mode = m;
    }
    if let Some(g) = &c.grace_time {
        q.grace_time = match g {
            Change::Clear => 0,
            Change::Set(v) => *v,
        };
    }
    match &c.flags {
        None => {}
        Some(FlagsChange::Set(f)) => q.flags = f.clone(),
        Some(FlagsChange::Add(f)) => q.flags.extend(f.iter().copied()),
        Some(FlagsChange::Remove(f)) => q.flags.retain(|x| !f.contains(x)),
    }
    c.limits.apply(&mut q.limits);
}

/// Shares as sacctmgr takes them: a number, `parent`, or `-1` (back to 1).
///
/// Errors: anything else.
pub fn parse_shares(s: &str) -> Result<Shares, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("parent") {
        return Ok(Shares::Parent);
    }
    if t == "-1" {
        return Ok(Shares::Value(1));
    }
    t.parse::<u32>()
        .map(Shares::Value)
        .map_err(|_| format!("Invalid value for FairShare ({s})"))
}

pub mod cohorts;
pub mod limits;

#[cfg(test)]
mod tests;
