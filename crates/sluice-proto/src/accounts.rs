//! Accounts, users, associations and QOS: what `sacctmgr` manages, as the controller
//! keeps them and as they travel between `sacctmgr` and the controller.
//!
//! These are Slurm's accounting records (its `slurmdbd` tables), with Slurm's names:
//!
//! - an **account** ([`AccountRecord`]) is a name with a description and organization;
//! - a **user** ([`UserRecord`]) has a default account and an admin level;
//! - an **association** ([`AssociationRecord`]) ties an account, or a user in an
//!   account (optionally in one partition), into the cluster's tree of accounts under
//!   `root`, with its fair-share shares, priority, allowed QOS and limits;
//! - a **QOS** ([`QosRecord`]) is a named set of priority, preemption and limits.
//!
//! Limits ([`Limits`]) are one struct for associations and QOS. "Unset" is `None` (a
//! count or time) or a TRES absent from its map ([`Tres`]): Slurm prints nothing, and
//! `sacctmgr ... set maxjobs=-1` clears. An association's *own* values may be unset
//! and then inherit from its parent's (Slurm inherits the `Max*` limits, the priority,
//! the default QOS and the QOS list, never the `Grp*` limits nor the shares);
//! [`AccountsSnapshot`] lists associations with the inherited values filled in, as
//! `sacctmgr show assoc` shows them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Trackable resources by name, as limits count them: `cpu` (CPUs), `mem` (MiB),
/// `node` (nodes), `billing` (billing units), `energy` (joules), `gres/gpu` and
/// `gres/gpu:a100` (devices), ... A TRES that is absent is not limited.
pub type Tres = BTreeMap<String, u64>;

/// A change to a TRES map: a TRES to a new count, or (`None`, Slurm's `-1`) cleared.
/// TRES not named keep their value.
pub type TresChange = BTreeMap<String, Option<u64>>;

/// Fair-share shares of an association (`Fairshare=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shares {
    /// A number of shares (Slurm's default: 1).
    Value(u32),
    /// `Fairshare=parent`: the association competes as part of its parent (Slurm's
    /// `SLURMDB_FS_USE_PARENT`).
    Parent,
}

impl Default for Shares {
    fn default() -> Self {
        Shares::Value(1)
    }
}

impl std::fmt::Display for Shares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shares::Value(n) => write!(f, "{n}"),
            Shares::Parent => f.write_str("parent"),
        }
    }
}

/// Limits, as associations and QOS carry them. Every field may be unset (`None`, or a
/// TRES absent from its map). Times are in minutes, as Slurm keeps them; TRES counts as
/// [`Tres`] says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// `GrpTRES`: TRES all running jobs of the association (and its children) or QOS
    /// may hold at once.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub grp_tres: Tres,
    /// `GrpTRESMins`: TRES-minutes all jobs may ever use (a hard cap; usage decays
    /// with `PriorityDecayHalfLife` unless the QOS has `NoDecay`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub grp_tres_mins: Tres,
    /// `GrpTRESRunMins`: TRES-minutes that running jobs may still have to run, summed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub grp_tres_run_mins: Tres,
    /// `GrpJobs`: jobs running at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grp_jobs: Option<u32>,
    /// `GrpSubmitJobs`: jobs pending or running at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grp_submit_jobs: Option<u32>,
    /// `GrpWall`: minutes of wall time all running jobs may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grp_wall: Option<u32>,
    /// `MaxTRESPerJob` (`MaxTRES`): TRES one job may have.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tres_per_job: Tres,
    /// `MaxTRESPerNode`: TRES one job may have on each node.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tres_per_node: Tres,
    /// `MaxTRESMinsPerJob` (`MaxTRESMins`): TRES-minutes one job may use.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tres_mins_per_job: Tres,
    /// `MaxJobs`: jobs running at once (per association; per user for a QOS's
    /// `MaxJobsPerUser`, see there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_jobs: Option<u32>,
    /// `MaxSubmitJobs`: jobs pending or running at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_submit_jobs: Option<u32>,
    /// `MaxWallDurationPerJob` (`MaxWall`): a job's time limit, minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wall: Option<u32>,
    /// QOS only: `MaxTRESPerUser` (`MaxTRESPU`): TRES one user's running jobs may hold.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tres_per_user: Tres,
    /// QOS only: `MaxJobsPerUser` (`MaxJobsPU`): one user's running jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_jobs_per_user: Option<u32>,
    /// QOS only: `MaxSubmitJobsPerUser` (`MaxSubmitPU`): one user's pending or running
    /// jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_submit_jobs_per_user: Option<u32>,
    /// QOS only: `MinTRESPerJob` (`MinTRES`): TRES a job must at least ask for.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub min_tres_per_job: Tres,
}

/// One change: clear (Slurm's `-1`) or set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change<T> {
    /// Back to unset.
    Clear,
    /// To this value.
    Set(T),
}

impl<T: Clone> Change<T> {
    /// Applies the change to `slot`.
    pub fn apply(&self, slot: &mut Option<T>) {
        *slot = match self {
            Change::Clear => None,
            Change::Set(v) => Some(v.clone()),
        };
    }
}

/// Changes to [`Limits`]: `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LimitsChange {
    /// `GrpTRES`.
    pub grp_tres: Option<TresChange>,
    /// `GrpTRESMins`.
    pub grp_tres_mins: Option<TresChange>,
    /// `GrpTRESRunMins`.
    pub grp_tres_run_mins: Option<TresChange>,
    /// `GrpJobs`.
    pub grp_jobs: Option<Change<u32>>,
    /// `GrpSubmitJobs`.
    pub grp_submit_jobs: Option<Change<u32>>,
    /// `GrpWall`, minutes.
    pub grp_wall: Option<Change<u32>>,
    /// `MaxTRESPerJob`.
    pub max_tres_per_job: Option<TresChange>,
    /// `MaxTRESPerNode`.
    pub max_tres_per_node: Option<TresChange>,
    /// `MaxTRESMinsPerJob`.
    pub max_tres_mins_per_job: Option<TresChange>,
    /// `MaxJobs`.
    pub max_jobs: Option<Change<u32>>,
    /// `MaxSubmitJobs`.
    pub max_submit_jobs: Option<Change<u32>>,
    /// `MaxWall`, minutes.
    pub max_wall: Option<Change<u32>>,
    /// `MaxTRESPerUser` (QOS).
    pub max_tres_per_user: Option<TresChange>,
    /// `MaxJobsPerUser` (QOS).
    pub max_jobs_per_user: Option<Change<u32>>,
    /// `MaxSubmitJobsPerUser` (QOS).
    pub max_submit_jobs_per_user: Option<Change<u32>>,
    /// `MinTRESPerJob` (QOS).
    pub min_tres_per_job: Option<TresChange>,
}

fn apply_tres(map: &mut Tres, change: &Option<TresChange>) {
    for (name, value) in change.iter().flatten() {
        match value {
            Some(v) => {
                map.insert(name.clone(), *v);
            }
            None => {
                map.remove(name);
            }
        }
    }
}

impl LimitsChange {
    /// True when nothing would change.
    pub fn is_empty(&self) -> bool {
        *self == LimitsChange::default()
    }

    /// The TRES names the change mentions.
    pub fn tres_names(&self) -> Vec<&str> {
        [
            &self.grp_tres,
            &self.grp_tres_mins,
            &self.grp_tres_run_mins,
            &self.max_tres_per_job,
            &self.max_tres_per_node,
            &self.max_tres_mins_per_job,
            &self.max_tres_per_user,
            &self.min_tres_per_job,
        ]
        .into_iter()
        .flatten()
        .flat_map(|m| m.keys().map(String::as_str))
        .collect()
    }

    /// Applies the changes to `l`.
    pub fn apply(&self, l: &mut Limits) {
        apply_tres(&mut l.grp_tres, &self.grp_tres);
        apply_tres(&mut l.grp_tres_mins, &self.grp_tres_mins);
        apply_tres(&mut l.grp_tres_run_mins, &self.grp_tres_run_mins);
        apply_tres(&mut l.max_tres_per_job, &self.max_tres_per_job);
        apply_tres(&mut l.max_tres_per_node, &self.max_tres_per_node);
        apply_tres(&mut l.max_tres_mins_per_job, &self.max_tres_mins_per_job);
        apply_tres(&mut l.max_tres_per_user, &self.max_tres_per_user);
        apply_tres(&mut l.min_tres_per_job, &self.min_tres_per_job);
        let counts = [
            (&self.grp_jobs, &mut l.grp_jobs),
            (&self.grp_submit_jobs, &mut l.grp_submit_jobs),
            (&self.grp_wall, &mut l.grp_wall),
            (&self.max_jobs, &mut l.max_jobs),
            (&self.max_submit_jobs, &mut l.max_submit_jobs),
            (&self.max_wall, &mut l.max_wall),
            (&self.max_jobs_per_user, &mut l.max_jobs_per_user),
            (
                &self.max_submit_jobs_per_user,
                &mut l.max_submit_jobs_per_user,
            ),
        ];
        for (change, slot) in counts {
            if let Some(c) = change {
                c.apply(slot);
            }
        }
    }
}

/// A user's administrative level (`AdminLevel`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AdminLevel {
    /// An ordinary user.
    #[default]
    None,
    /// May add, change and delete accounts, users and associations.
    Operator,
    /// May do everything, QOS and admin levels included.
    Administrator,
}

impl AdminLevel {
    /// Slurm's name: `None`, `Operator`, `Administrator`.
    pub fn name(self) -> &'static str {
        match self {
            AdminLevel::None => "None",
            AdminLevel::Operator => "Operator",
            AdminLevel::Administrator => "Administrator",
        }
    }

    /// Parses Slurm's names (any case; `Admin` too).
    pub fn parse(s: &str) -> Option<AdminLevel> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Some(AdminLevel::None),
            "operator" => Some(AdminLevel::Operator),
            "admin" | "administrator" => Some(AdminLevel::Administrator),
            _ => None,
        }
    }
}

/// A user (`sacctmgr add user`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// Login name.
    pub name: String,
    /// `DefaultAccount`: the account of a job that names none. Empty only while the
    /// user has no association.
    #[serde(default)]
    pub default_account: Option<String>,
    /// `AdminLevel`.
    #[serde(default)]
    pub admin_level: AdminLevel,
}

/// An account (`sacctmgr add account`); its place in the tree is its association's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRecord {
    /// Name (lower case).
    pub name: String,
    /// `Description` (Slurm lower-cases it; the name when not given).
    pub description: String,
    /// `Organization` (the parent's name when not given, or the account's own under
    /// `root`).
    pub organization: String,
}

/// An association: an account's place in the tree, or a user's membership of an
/// account (optionally for one partition), with shares, priority, QOS and limits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssociationRecord {
    /// Slurm's association id (`id_assoc`), unique, never reused.
    pub id: u32,
    /// Cluster name.
    pub cluster: String,
    /// The account.
    pub account: String,
    /// The user; `None` for the account's own association.
    #[serde(default)]
    pub user: Option<String>,
    /// `ParentName`: for an account's own association, the parent account (`None` for
    /// `root`); for a user's, the account itself.
    #[serde(default)]
    pub parent: Option<String>,
    /// Partition (user associations only); `None`: every partition.
    #[serde(default)]
    pub partition: Option<String>,
    /// `Fairshare` (default 1).
    #[serde(default)]
    pub shares: Shares,
    /// `Priority`: added to a job's priority (multifactor's association factor).
    #[serde(default)]
    pub priority: Option<u32>,
    /// `DefaultQOS`: a job's QOS when it names none.
    #[serde(default)]
    pub default_qos: Option<String>,
    /// `QOS`: the QOS jobs of this association may use; `None` inherits the parent's
    /// (with [`AssociationRecord::qos_delta`] applied).
    #[serde(default)]
    pub qos: Option<BTreeSet<String>>,
    /// `QOS+=x`/`QOS-=x` made on an association without a list of its own: applied
    /// to the inherited list, as `+x`/`-x`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qos_delta: Vec<String>,
    /// Limits.
    #[serde(default)]
    pub limits: Limits,
    /// Order among siblings: Slurm lists an account's children newest first (its nested
    /// sets insert at the front); a moved account counts as new.
    #[serde(default)]
    pub seq: u64,
}

impl AssociationRecord {
    /// A user's association.
    pub fn is_user(&self) -> bool {
        self.user.is_some()
    }
}

/// QOS flags, in the order Slurm prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QosFlag {
    /// `DenyOnLimit`: a job over a limit is refused at submission rather than left
    /// pending.
    DenyOnLimit,
    /// `EnforceUsageThreshold`.
    EnforceUsageThreshold,
    /// `NoReserve`: backfill reserves nothing for the QOS's jobs.
    NoReserve,
    /// `PartitionMaxNodes`.
    PartitionMaxNodes,
    /// `PartitionMinNodes`.
    PartitionMinNodes,
    /// `OverPartQOS`: the job's QOS limits win over the partition QOS's.
    OverPartQOS,
    /// `PartitionTimeLimit`.
    PartitionTimeLimit,
    /// `RequiresReservation`.
    RequiresReservation,
    /// `NoDecay`: usage of the QOS's `GrpTRESMins` etc. never decays.
    NoDecay,
    /// `UsageFactorSafe`.
    UsageFactorSafe,
    /// `Relative`.
    Relative,
}

impl QosFlag {
    /// Every flag, in Slurm's order.
    pub const ALL: [QosFlag; 11] = [
        QosFlag::DenyOnLimit,
        QosFlag::EnforceUsageThreshold,
        QosFlag::NoReserve,
        QosFlag::PartitionMaxNodes,
        QosFlag::PartitionMinNodes,
        QosFlag::OverPartQOS,
        QosFlag::PartitionTimeLimit,
        QosFlag::RequiresReservation,
        QosFlag::NoDecay,
        QosFlag::UsageFactorSafe,
        QosFlag::Relative,
    ];

    /// Slurm's name.
    pub fn name(self) -> &'static str {
        match self {
            QosFlag::DenyOnLimit => "DenyOnLimit",
            QosFlag::EnforceUsageThreshold => "EnforceUsageThreshold",
            QosFlag::NoReserve => "NoReserve",
            QosFlag::PartitionMaxNodes => "PartitionMaxNodes",
            QosFlag::PartitionMinNodes => "PartitionMinNodes",
            QosFlag::OverPartQOS => "OverPartQOS",
            QosFlag::PartitionTimeLimit => "PartitionTimeLimit",
            QosFlag::RequiresReservation => "RequiresReservation",
            QosFlag::NoDecay => "NoDecay",
            QosFlag::UsageFactorSafe => "UsageFactorSafe",
            QosFlag::Relative => "Relative",
        }
    }

    /// Parses a name, any case.
    pub fn parse(s: &str) -> Option<QosFlag> {
        QosFlag::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// What happens to a job this QOS preempts (`PreemptMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreemptMode {
    /// The cluster's `PreemptMode`.
    #[default]
    Cluster,
    /// Not preempted.
    Off,
    /// Cancelled.
    Cancel,
    /// Requeued.
    Requeue,
    /// Suspended.
    Suspend,
}

impl PreemptMode {
    /// Slurm's (lower-case) name.
    pub fn name(self) -> &'static str {
        match self {
            PreemptMode::Cluster => "cluster",
            PreemptMode::Off => "off",
            PreemptMode::Cancel => "cancel",
            PreemptMode::Requeue => "requeue",
            PreemptMode::Suspend => "suspend",
        }
    }

    /// Parses a name, any case.
    pub fn parse(s: &str) -> Option<PreemptMode> {
        [
            PreemptMode::Cluster,
            PreemptMode::Off,
            PreemptMode::Cancel,
            PreemptMode::Requeue,
            PreemptMode::Suspend,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
    }
}

/// A QOS (`sacctmgr add qos`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QosRecord {
    /// Slurm's QOS id (`normal` is 1), in creation order.
    pub id: u32,
    /// Name (lower case).
    pub name: String,
    /// `Description` (the name when not given).
    pub description: String,
    /// `Priority`: added to a job's priority (multifactor's QOS factor).
    #[serde(default)]
    pub priority: u32,
    /// `UsageFactor`: usage of the QOS's jobs counts this many times (default 1.0).
    #[serde(default = "one")]
    pub usage_factor: f64,
    /// `Preempt`: QOS whose jobs this QOS's jobs may preempt.
    #[serde(default)]
    pub preempt: BTreeSet<String>,
    /// `PreemptMode`.
    #[serde(default)]
    pub preempt_mode: PreemptMode,
    /// `GraceTime`: seconds a preempted job gets before it is ended.
    #[serde(default)]
    pub grace_time: u32,
    /// `Flags`.
    #[serde(default)]
    pub flags: BTreeSet<QosFlag>,
    /// Limits.
    #[serde(default)]
    pub limits: Limits,
}

fn one() -> f64 {
    1.0
}

impl QosRecord {
    /// A QOS with Slurm's defaults.
    pub fn new(id: u32, name: &str) -> Self {
        QosRecord {
            id,
            name: name.to_string(),
            description: name.to_string(),
            priority: 0,
            usage_factor: 1.0,
            preempt: BTreeSet::new(),
            preempt_mode: PreemptMode::Cluster,
            grace_time: 0,
            flags: BTreeSet::new(),
            limits: Limits::default(),
        }
    }
}

/// The cluster as `sacctmgr show cluster` lists it (its settings are the root
/// association's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// `ClusterName`.
    pub name: String,
    /// Where the controller listens for TCP (`ControlHost`); empty when it has only a
    /// Unix socket.
    #[serde(default)]
    pub control_host: String,
    /// Its TCP port (`ControlPort`); 0 without one.
    #[serde(default)]
    pub control_port: u16,
    /// Protocol version (`RPC`); 0 for Sluice.
    #[serde(default)]
    pub rpc: u32,
}

/// An association as listed: its values with the inherited ones filled in, and its
/// place in the tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssociationListing {
    /// The association, inherited values filled in.
    pub record: AssociationRecord,
    /// Depth in the tree: 0 for `root`, 1 for `root`'s users and sub-accounts, ...
    pub depth: u32,
    /// Position in Slurm's nested-set order (children newest first), from 0.
    pub lft: u32,
}

/// Everything `sacctmgr` lists (`GET /v1/accounts`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AccountsSnapshot {
    /// The cluster.
    pub cluster: ClusterRecord,
    /// The TRES accounting tracks (limits may name only these).
    pub tracked_tres: Vec<String>,
    /// Users, by name.
    pub users: Vec<UserRecord>,
    /// Accounts, by name.
    pub accounts: Vec<AccountRecord>,
    /// QOS, by id.
    pub qos: Vec<QosRecord>,
    /// Associations in `sacctmgr show assoc`'s order (depth first from `root`; under
    /// each account its users by name, then its sub-accounts by name).
    pub associations: Vec<AssociationListing>,
    /// The other clusters whose accounting shares this cluster's database (PostgreSQL),
    /// by name; their associations are their own controllers'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_clusters: Vec<ClusterRecord>,
}

/// Changes to an association's settings (`sacctmgr add ... Fairshare=...`, `modify
/// ... set ...`); `None` leaves a value as it is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AssocChange {
    /// `Fairshare` (`-1`: back to 1).
    pub shares: Option<Shares>,
    /// `Priority`.
    pub priority: Option<Change<u32>>,
    /// `DefaultQOS`.
    pub default_qos: Option<Change<String>>,
    /// `QOS=`, `QOS+=`, `QOS-=`.
    pub qos: Option<ListChange>,
    /// `Parent` (accounts only): moves the account.
    pub parent: Option<String>,
    /// Limits.
    pub limits: LimitsChange,
}

impl AssocChange {
    /// True when nothing would change.
    pub fn is_empty(&self) -> bool {
        *self == AssocChange::default()
    }
}

/// A change to a list of names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListChange {
    /// `=a,b`: exactly these (empty: none of its own, i.e. inherited for an
    /// association's QOS).
    Set(BTreeSet<String>),
    /// `+=a,b`.
    Add(BTreeSet<String>),
    /// `-=a,b`.
    Remove(BTreeSet<String>),
}

/// Changes to a QOS (`sacctmgr add qos ...`, `modify qos ... set ...`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QosChange {
    /// `Description`.
    pub description: Option<String>,
    /// `Priority` (`-1`: 0).
    pub priority: Option<Change<u32>>,
    /// `UsageFactor` (`-1`: 1.0).
    pub usage_factor: Option<Change<f64>>,
    /// `Preempt`.
    pub preempt: Option<ListChange>,
    /// `PreemptMode`.
    pub preempt_mode: Option<PreemptMode>,
    /// `GraceTime`, seconds.
    pub grace_time: Option<Change<u32>>,
    /// `Flags` (`-1`: none).
    pub flags: Option<FlagsChange>,
    /// Limits.
    pub limits: LimitsChange,
}

impl QosChange {
    /// True when nothing would change.
    pub fn is_empty(&self) -> bool {
        *self == QosChange::default()
    }
}

/// A change to a QOS's flags.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagsChange {
    /// `Flags=a,b`.
    Set(BTreeSet<QosFlag>),
    /// `Flags+=a`.
    Add(BTreeSet<QosFlag>),
    /// `Flags-=a`.
    Remove(BTreeSet<QosFlag>),
}

/// Which associations a `modify` or `delete` means: those matching every non-empty
/// list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AssocFilter {
    /// Users (for `modify/delete user`); empty: any.
    pub users: Vec<String>,
    /// Accounts; empty: any.
    pub accounts: Vec<String>,
    /// Partitions; empty: any.
    pub partitions: Vec<String>,
}

/// A change `sacctmgr` asks for (`POST /v1/accounts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountsRequest {
    /// `add account NAMES [Parent=] [Description=] [Organization=] [settings]`.
    AddAccounts {
        /// New accounts.
        names: Vec<String>,
        /// `Description` (lower-cased; default: the name).
        description: Option<String>,
        /// `Organization` (lower-cased; default: the parent's name, or the account's
        /// own under root).
        organization: Option<String>,
        /// `Parent` (default `root`).
        parent: Option<String>,
        /// Settings of the new associations.
        settings: AssocChange,
    },
    /// `add user NAMES Account=A,B [DefaultAccount=] [Partition=] [AdminLevel=]
    /// [settings]`.
    AddUsers {
        /// Users.
        names: Vec<String>,
        /// Accounts to associate them with (default: the default account).
        accounts: Vec<String>,
        /// `DefaultAccount` (default: the first account, for a user without one).
        default_account: Option<String>,
        /// Partitions (none: every partition).
        partitions: Vec<String>,
        /// `AdminLevel` of new users.
        admin_level: Option<AdminLevel>,
        /// Settings of the new associations.
        settings: AssocChange,
    },
    /// `add qos NAMES [settings]`.
    AddQos {
        /// New QOS.
        names: Vec<String>,
        /// Settings.
        settings: QosChange,
    },
    /// `modify user where FILTER set ...`: the users' records and their associations.
    ModifyUsers {
        /// Which users (and which of their associations).
        filter: AssocFilter,
        /// `DefaultAccount`.
        default_account: Option<String>,
        /// `AdminLevel`.
        admin_level: Option<AdminLevel>,
        /// Association settings.
        settings: AssocChange,
    },
    /// `modify account where FILTER set ...`: the accounts' records and their own
    /// associations.
    ModifyAccounts {
        /// Which accounts (`filter.accounts`).
        filter: AssocFilter,
        /// `Description`.
        description: Option<String>,
        /// `Organization`.
        organization: Option<String>,
        /// Association settings (`Parent` moves the accounts).
        settings: AssocChange,
    },
    /// `modify cluster set ...`: the root association.
    ModifyCluster {
        /// Settings.
        settings: AssocChange,
    },
    /// `modify qos where name=... set ...`.
    ModifyQos {
        /// Which QOS.
        names: Vec<String>,
        /// Settings.
        settings: QosChange,
    },
    /// `delete account NAMES`: the accounts and every association under them.
    DeleteAccounts {
        /// Accounts.
        names: Vec<String>,
    },
    /// `delete user NAMES [Account=] [Partition=]`: their associations (all of them:
    /// the users too).
    DeleteUsers {
        /// Which users and associations.
        filter: AssocFilter,
    },
    /// `delete qos NAMES`.
    DeleteQos {
        /// QOS.
        names: Vec<String>,
    },
}

/// A change request: checked and answered with what it would do (`commit: false`, for
/// `sacctmgr` to show before it asks), or carried out (`commit: true`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeRequest {
    /// What.
    pub request: AccountsRequest,
    /// Carry it out (else only check it).
    pub commit: bool,
}

/// An association named in an answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssocRef {
    /// Cluster.
    pub cluster: String,
    /// Account.
    pub account: String,
    /// User (`None`: the account's own association).
    pub user: Option<String>,
    /// Partition.
    pub partition: Option<String>,
    /// For an account's own association: its parent (before a move).
    pub parent: Option<String>,
}

/// What a change did (or would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChangeOutcome {
    /// The caller may make this change. A check (`commit: false`) of an `add` answers
    /// even when not, as `sacctmgr` shows what it would add before the refusal.
    pub permitted: bool,
    /// Accounts added, modified or deleted.
    pub accounts: Vec<String>,
    /// Users added, modified or deleted.
    pub users: Vec<String>,
    /// QOS added, modified or deleted.
    pub qos: Vec<String>,
    /// Associations added, modified or deleted, in Slurm's order.
    pub associations: Vec<AssocRef>,
    /// Users deleted because their last association went.
    pub users_without_associations: Vec<String>,
}

/// A pending or running job that keeps an association from being deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveJob {
    /// Job id.
    pub id: u64,
    /// Cluster.
    pub cluster: String,
    /// Account.
    pub account: String,
    /// User.
    pub user: String,
}

/// Why a change was refused (nothing changed). `sacctmgr` prints each as Slurm does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum AccountsError {
    /// The caller's admin level does not allow it.
    #[error("Access/permission denied")]
    PermissionDenied,
    /// Everything named exists already.
    #[error("Nothing new added.")]
    NothingNew,
    /// Nothing matched.
    #[error("Nothing modified")]
    NothingModified,
    /// Nothing matched.
    #[error("Nothing deleted")]
    NothingDeleted,
    /// `add account ... parent=X` with no account X.
    #[error("Parent account '{parent}' doesn't exist on cluster {cluster}")]
    NoSuchParent {
        /// The parent named.
        parent: String,
        /// Cluster.
        cluster: String,
    },
    /// `add user ... account=X` with no account X.
    #[error("This account '{0}' doesn't exist.")]
    NoSuchAccount(String),
    /// `add user` without an account.
    #[error("Need name of account to add user to.")]
    NeedAccount,
    /// `DefaultAccount=X` for users without an association in X.
    #[error("Can't modify because these users aren't associated with new default account '{account}'...")]
    NotAssociated {
        /// The account.
        account: String,
        /// The users.
        users: Vec<String>,
        /// Cluster.
        cluster: String,
    },
    /// `DefaultQOS=X` for associations that may not use X.
    #[error("These associations don't have access to their default qos.")]
    DefaultQosNotAllowed {
        /// The QOS.
        qos: String,
        /// The associations.
        associations: Vec<AssocRef>,
    },
    /// Jobs of the associations are pending or running.
    #[error("Job(s) active, cancel job(s) before remove")]
    JobsActive(Vec<ActiveJob>),
    /// A TRES accounting does not track.
    #[error("no TRES known by type {0}")]
    UnknownTres(String),
    /// A QOS that does not exist.
    #[error("Invalid qos specification")]
    UnknownQos(String),
    /// A moved account would end up under itself.
    #[error("Can't set parent of account '{0}' to itself or one of its children")]
    Loop(String),
    /// Any other refusal, with its message.
    #[error("{0}")]
    Other(String),
}

/// Parses a TRES list as sacctmgr takes it: `cpu=4,mem=8G,gres/gpu=2,node=1`,
/// `gres/gpu:a100=2`; `mem` in MiB unless suffixed (`K`, `M`, `G`, `T`, `P`); a count
/// of `-1` clears that TRES. Type names are lower-cased (`GRES/gpu` is `gres/gpu`).
///
/// Errors: an item without `=`, an empty name, or a count that is not a number.
pub fn parse_tres(s: &str) -> Result<TresChange, String> {
    let mut out = TresChange::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("Invalid TRES specification '{item}'"))?;
        let name = canonical_tres_name(name)?;
        let value = value.trim();
        let count = if value == "-1" {
            None
        } else if name == "mem" {
            Some(parse_mib(value).ok_or_else(|| format!("Invalid TRES count '{item}'"))?)
        } else {
            Some(
                value
                    .parse::<u64>()
                    .map_err(|_| format!("Invalid TRES count '{item}'"))?,
            )
        };
        out.insert(name, count);
    }
    Ok(out)
}

/// A TRES name with its type lower-cased: `GRES/gpu:A100` is `gres/gpu:A100`, `CPU` is
/// `cpu`.
fn canonical_tres_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("Invalid TRES specification (no name)".into());
    }
    Ok(match name.split_once('/') {
        Some((t, rest)) => format!("{}/{rest}", t.to_ascii_lowercase()),
        None => name.to_ascii_lowercase(),
    })
}

/// MiB from `16G`, `512M`, `1024` (MiB), `2T`.
fn parse_mib(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "M" | "MB" => return Some(n),
        "K" | "KB" => return Some(n.div_ceil(1024)),
        "G" | "GB" => 1 << 10,
        "T" | "TB" => 1 << 20,
        "P" | "PB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// A TRES map as sacctmgr prints it: `name=count` items sorted as text, memory (MiB) in
/// its largest exact unit — `cpu=8,gres/gpu=2,mem=16G`. Empty for an empty map.
pub fn format_tres(tres: &Tres) -> String {
    let mut parts: Vec<String> = tres
        .iter()
        .map(|(t, n)| match t.as_str() {
            "mem" => format!("mem={}", crate::types::exact_mib(*n)),
            _ => format!("{t}={n}"),
        })
        .collect();
    parts.sort_unstable();
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tres_lists_parse_as_sacctmgr_takes_them_and_print_as_it_prints_them() {
        let t = parse_tres("cpu=8,mem=16G,GRES/gpu=2,gres/gpu:a100=1,node=-1").unwrap();
        assert_eq!(t["mem"], Some(16384));
        assert_eq!(t["gres/gpu:a100"], Some(1));
        assert_eq!(t["node"], None, "-1 clears");
        let mut map = Tres::new();
        apply_tres(&mut map, &Some(t));
        assert_eq!(
            format_tres(&map),
            "cpu=8,gres/gpu:a100=1,gres/gpu=2,mem=16G"
        );
        assert_eq!(
            format_tres(&Tres::from([("mem".into(), 1500)])),
            "mem=1500M"
        );
        assert!(parse_tres("cpu").is_err());
        assert!(parse_tres("cpu=x").is_err());
        assert!(parse_tres("mem=3Q").is_err());
    }

    #[test]
    fn limits_changes_set_and_clear() {
        let mut l = Limits::default();
        let change = LimitsChange {
            max_jobs: Some(Change::Set(4)),
            grp_tres: Some(parse_tres("cpu=8,mem=1G").unwrap()),
            ..LimitsChange::default()
        };
        change.apply(&mut l);
        assert_eq!(l.max_jobs, Some(4));
        assert_eq!(format_tres(&l.grp_tres), "cpu=8,mem=1G");
        let clear = LimitsChange {
            max_jobs: Some(Change::Clear),
            grp_tres: Some(parse_tres("cpu=-1").unwrap()),
            ..LimitsChange::default()
        };
        clear.apply(&mut l);
        assert_eq!(l.max_jobs, None);
        assert_eq!(format_tres(&l.grp_tres), "mem=1G");
    }
}
