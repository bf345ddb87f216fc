//! Multifactor priority in the live controller (`PriorityType=priority/multifactor`).
//!
//! The core computes fair-share and priorities; this module feeds it what the
//! controller knows: the association tree built from the accounts `sacctmgr` manages
//! ([`PriorityEngine::rebuild`]), the run of Slurm's decay thread every
//! `PriorityCalcPeriod` charging running and recently ended jobs their billing TRES ×
//! their QOS's `UsageFactor` ([`PriorityEngine::tick`]), usage cleared at each
//! `PriorityUsageResetPeriod`, and the usage kept across restarts (rows of kind
//! [`KIND_USAGE`] in the store's accounts table).
//!
//! Deviation from Slurm: a user's partition-specific associations share their
//! account's fair-share standing with the user's association for every partition
//! (Slurm ranks them as separate siblings).

use std::collections::BTreeMap;

use sluice_conf::priority_conf::{PrioritySettings, UsageReset};
use sluice_core::fairshare::{AssocId, AssocTree, Charge, Decay, FairShares, Shares};
use sluice_core::multifactor::{self, ClusterTotals, JobFactors, Priority, TresKind, TresTerm};
use sluice_core::{GresTable, Time};
use sluice_proto::accounts::{self as acct, AssociationRecord};
use sluice_proto::priority::{Factor, JobPriority, ShareRow, SharesReport, TresFactor};
use sluice_store::AccountRow;

use crate::accounts::Accounts;

/// Kind of the store rows holding usage: key an association id (its decayed usage,
/// billing-TRES-seconds) or [`LAST_DECAY`] (when the decay last ran, Unix seconds).
pub const KIND_USAGE: &str = "usage";
/// Key of the usage row that holds the time of the last decay run.
pub const LAST_DECAY: &str = "last_decay";

/// A job as the decay thread charges it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunCharge {
    /// The controller's association id.
    pub assoc: u32,
    /// Billing TRES (per second).
    pub billing: f64,
    /// The QOS's `UsageFactor`.
    pub usage_factor: f64,
    /// Start, Unix seconds.
    pub start: Time,
    /// End, if it ended.
    pub end: Option<Time>,
}

/// Fair-share state and priority computation of the controller.
#[derive(Clone, Debug)]
pub struct PriorityEngine {
    settings: PrioritySettings,
    /// `PriorityWeightTRES` as written.
    tres_text: String,
    gres: GresTable,
    totals: ClusterTotals,
    max_partition_factor: u16,
    tree: AssocTree,
    /// Controller association id → node of `tree`.
    map: BTreeMap<u32, AssocId>,
    /// Node of `tree` → the controller association it stands for (the one for every
    /// partition where a user has several).
    back: Vec<Option<u32>>,
    /// Depth of each node.
    depth: Vec<u32>,
    decay: Decay,
    shares: FairShares,
    max_qos_priority: u32,
    max_assoc_priority: u32,
}

impl PriorityEngine {
    /// An engine with only the root account; `totals` are the cluster's nodes and
    /// resources (job-size and TRES factors), `max_partition_factor` the largest
    /// `PriorityJobFactor`.
    pub fn new(
        settings: PrioritySettings,
        tres_text: String,
        gres: GresTable,
        totals: ClusterTotals,
        max_partition_factor: u16,
    ) -> Self {
        let tree = AssocTree::new();
        let shares = FairShares::compute(&tree, settings.algorithm);
        PriorityEngine {
            decay: Decay::new(settings.half_life),
            settings,
            tres_text,
            gres,
            totals,
            max_partition_factor: max_partition_factor.max(1),
            tree,
            map: BTreeMap::new(),
            back: vec![None],
            depth: vec![0],
            shares,
            max_qos_priority: 0,
            max_assoc_priority: 0,
        }
    }

    /// Whether priorities are multifactor (otherwise the controller keeps
    /// `priority/basic`'s submission order).
    pub fn multifactor(&self) -> bool {
        self.settings.multifactor
    }

    /// The settings.
    pub fn settings(&self) -> &PrioritySettings {
        &self.settings
    }

    /// Rebuilds the tree from `accounts` (after a `sacctmgr` change or a restore),
    /// keeping every surviving association's usage, and recomputes fair-share.
    pub fn rebuild(&mut self, accounts: &Accounts) {
        let old_usage: BTreeMap<u32, f64> = self
            .map
            .iter()
            .filter(|(id, node)| self.back[node.index()] == Some(**id))
            .map(|(id, node)| (*id, self.tree.get(*node).usage_raw))
            .collect();
        let mut tree = AssocTree::new();
        let mut map = BTreeMap::new();
        let mut back = vec![None];
        let mut depth = vec![0];
        let kids = accounts.child_lists();
        let by_id: BTreeMap<u32, &AssociationRecord> =
            accounts.associations().map(|a| (a.id, a)).collect();
        if let Some(root) = accounts.account_association("root") {
            map.insert(root.id, AssocId::ROOT);
            back[0] = Some(root.id);
            // Depth first; users before sub-accounts, each by name (sshare's order).
            let mut stack = vec![(root.id, AssocId::ROOT, 0u32)];
            while let Some((id, node, d)) = stack.pop() {
                let mut children: Vec<&AssociationRecord> = kids
                    .get(&id)
                    .map(|k| k.iter().filter_map(|c| by_id.get(c).copied()).collect())
                    .unwrap_or_default();
                children.sort_by(|a, b| {
                    (a.user.is_none(), &a.account, &a.user, &a.partition).cmp(&(
                        b.user.is_none(),
                        &b.account,
                        &b.user,
                        &b.partition,
                    ))
                });
                let mut added = Vec::new();
                for c in children {
                    let shares = match c.shares {
                        acct::Shares::Value(n) => Shares::Raw(n),
                        acct::Shares::Parent => Shares::Parent,
                    };
                    let made = match &c.user {
                        Some(u) => tree.add_user(node, u, shares),
                        None => tree.add_account(node, &c.account, shares),
                    };
                    let child = match made {
                        Ok(n) => {
                            back.push(None);
                            depth.push(d + 1);
                            n
                        }
                        // A second association of this user here (another partition).
                        Err(_) => match &c.user {
                            Some(u) => match tree.user(node, u) {
                                Some(n) => n,
                                None => continue,
                            },
                            None => continue,
                        },
                    };
                    map.insert(c.id, child);
                    if back[child.index()].is_none() || c.partition.is_none() {
                        back[child.index()] = Some(c.id);
                    }
                    if c.user.is_none() {
                        added.push((c.id, child, d + 1));
                    }
                }
                // Pushed in reverse so that the first child is walked first.
                stack.extend(added.into_iter().rev());
            }
        }
        let mut max_assoc = 0;
        for (id, node) in &map {
            let p = accounts
                .effective(*id)
                .and_then(|e| e.priority)
                .unwrap_or(0);
            max_assoc = max_assoc.max(p);
            if back[node.index()] == Some(*id) {
                tree.set_priority(*node, p);
                if let Some(u) = old_usage.get(id) {
                    tree.restore_usage(*node, *u);
                }
            }
        }
        self.max_assoc_priority = max_assoc;
        self.max_qos_priority = accounts.all_qos().map(|q| q.priority).max().unwrap_or(0);
        self.tree = tree;
        self.map = map;
        self.back = back;
        self.depth = depth;
        self.recompute();
    }

    fn recompute(&mut self) {
        self.shares = FairShares::compute(&self.tree, self.settings.algorithm);
    }

    /// Restores saved usage rows (kind [`KIND_USAGE`]); rows of associations that no
    /// longer exist are ignored. Call after [`PriorityEngine::rebuild`].
    pub fn restore_usage(&mut self, rows: &[AccountRow]) {
        for row in rows.iter().filter(|r| r.kind == KIND_USAGE) {
            let Some(value) = row.record.as_deref().and_then(|r| r.parse::<f64>().ok()) else {
                continue;
            };
            if row.key == LAST_DECAY {
                self.decay.last_run = Some(value as Time);
                continue;
            }
            let node = row.key.parse::<u32>().ok().and_then(|id| {
                self.map
                    .get(&id)
                    .filter(|n| self.back[n.index()] == Some(id))
                    .copied()
            });
            if let Some(node) = node {
                self.tree.restore_usage(node, value);
            }
        }
        self.recompute();
    }

    /// When the decay thread runs next (Unix seconds): now if it never ran. It runs
    /// under `priority/basic` too: usage (`sshare`) and used `GrpTRESMins` decay and
    /// are saved all the same.
    pub fn next_tick(&self) -> Option<Time> {
        Some(
            self.decay
                .last_run
                .map_or(0, |t| t + self.settings.calc_period),
        )
    }

    /// When the decay last ran (Unix seconds).
    pub fn last_tick(&self) -> Option<Time> {
        self.decay.last_run
    }

    /// One run of the decay thread at `now`: usage cleared if a
    /// `PriorityUsageResetPeriod` boundary passed, decayed, charged with `charges`
    /// (jobs running, or ended since the last run); fair-share recomputed. Returns the
    /// usage rows to save.
    pub fn tick(&mut self, now: Time, charges: &[RunCharge]) -> Vec<AccountRow> {
        if let Some(last) = self.decay.last_run {
            if reset_between(self.settings.usage_reset, last, now) {
                self.tree.reset_usage();
            }
        }
        let charges: Vec<Charge> = charges
            .iter()
            .filter_map(|c| {
                Some(Charge {
                    assoc: *self.map.get(&c.assoc)?,
                    billing: c.billing,
                    usage_factor: c.usage_factor,
                    start: c.start,
                    end: c.end,
                })
            })
            .collect();
        self.decay.run(&mut self.tree, now, charges);
        self.recompute();
        self.usage_rows()
    }

    fn usage_rows(&self) -> Vec<AccountRow> {
        let mut rows: Vec<AccountRow> = self
            .map
            .iter()
            .filter(|(id, node)| self.back[node.index()] == Some(**id))
            .map(|(id, node)| AccountRow {
                kind: KIND_USAGE.into(),
                key: id.to_string(),
                record: Some(self.tree.get(*node).usage_raw.to_string()),
            })
            .collect();
        if let Some(t) = self.decay.last_run {
            rows.push(AccountRow {
                kind: KIND_USAGE.into(),
                key: LAST_DECAY.into(),
                record: Some(t.to_string()),
            });
        }
        rows
    }

    /// The factors of a job charging association `assoc` (controller id) with a QOS
    /// of priority `qos_priority` in a partition of `PriorityJobFactor`
    /// `partition_factor`; `base` holds the rest (size, time limit, nice, accrue).
    pub fn factors(
        &self,
        assoc: Option<u32>,
        qos_priority: u32,
        partition_factor: u16,
        base: JobFactors,
    ) -> JobFactors {
        let node = assoc.and_then(|a| self.map.get(&a).copied());
        let ratio = |x: u32, max: u32| {
            if max == 0 {
                0.0
            } else {
                f64::from(x) / f64::from(max)
            }
        };
        JobFactors {
            fairshare: self.shares.job_factor(node),
            partition: ratio(
                u32::from(partition_factor),
                u32::from(self.max_partition_factor),
            ),
            qos: ratio(qos_priority, self.max_qos_priority),
            assoc: ratio(
                node.map_or(0, |n| self.tree.get(n).priority),
                self.max_assoc_priority,
            ),
            ..base
        }
    }

    /// The priority of a job with `factors` at `now`.
    pub fn priority(&self, factors: &JobFactors, now: Time) -> Priority {
        multifactor::priority(&self.settings.params, &self.totals, factors, now)
    }

    /// A job's priority with its factors as `sprio` shows them.
    pub fn job_row(&self, factors: &JobFactors, now: Time) -> JobPriority {
        let p = self.priority(factors, now);
        let w = &self.settings.params.weights;
        let f = |weight: u32, weighted: f64| Factor {
            normalized: if weight == 0 {
                0.0
            } else {
                weighted / f64::from(weight)
            },
            weighted,
        };
        let terms = multifactor::tres_terms(&w.tres, &self.totals, factors);
        JobPriority {
            priority: p.priority,
            site: factors.site,
            age: Factor {
                normalized: multifactor::age_factor(
                    factors.accrue_since,
                    self.settings.params.max_age,
                    now,
                ),
                weighted: p.age,
            },
            assoc: f(w.assoc, p.assoc),
            fairshare: f(w.fairshare, p.fairshare),
            job_size: Factor {
                normalized: multifactor::job_size_factor(
                    &self.settings.params,
                    &self.totals,
                    factors,
                ),
                weighted: p.job_size,
            },
            partition_factor: f(w.partition, p.partition),
            qos: f(w.qos, p.qos),
            nice: factors.nice,
            tres: terms.iter().map(|t| self.tres_factor(t)).collect(),
            ..Default::default()
        }
    }

    fn tres_factor(&self, t: &TresTerm) -> TresFactor {
        let name = match t.kind {
            TresKind::Cpu => "cpu".to_string(),
            TresKind::Mem => "mem".to_string(),
            TresKind::Node => "node".to_string(),
            TresKind::Gres(slot) => format!("gres/{}", self.gres.name(slot)),
        };
        TresFactor {
            name,
            factor: Factor {
                normalized: t.factor,
                weighted: t.weighted,
            },
        }
    }

    /// The configured weights, as `sprio -w` prints them.
    pub fn weights(&self) -> sluice_proto::priority::PriorityWeights {
        let w = &self.settings.params.weights;
        sluice_proto::priority::PriorityWeights {
            age: w.age,
            assoc: w.assoc,
            fairshare: w.fairshare,
            job_size: w.job_size,
            partition: w.partition,
            qos: w.qos,
            tres: self.tres_text.clone(),
        }
    }

    /// Every association's fair-share figures in tree order; `grp_tres_mins` gives an
    /// association's `GrpTRESMins` text, `grp_tres_raw` its `GrpTRESRaw` text,
    /// `run_mins` its `TRESRunMins` text.
    pub fn shares_report(
        &self,
        grp_tres_mins: impl Fn(u32) -> String,
        grp_tres_raw: impl Fn(Option<u32>) -> String,
        run_mins: impl Fn(AssocId) -> String,
    ) -> SharesReport {
        let mut rows = Vec::new();
        let mut stack = vec![AssocId::ROOT];
        while let Some(node) = stack.pop() {
            let a = self.tree.get(node);
            let i = node.index();
            let is_root = node == AssocId::ROOT;
            rows.push(ShareRow {
                depth: self.depth[i],
                account: a.account.clone(),
                user: a.user.clone(),
                raw_shares: (!is_root).then(|| match a.shares {
                    Shares::Raw(n) => n.to_string(),
                    Shares::Parent => "parent".to_string(),
                }),
                norm_shares: if is_root {
                    0.0
                } else {
                    self.shares.norm_shares[i]
                },
                raw_usage: a.usage_raw,
                norm_usage: (!is_root).then(|| self.shares.norm_usage[i]),
                effective_usage: self.shares.effective_usage[i],
                fairshare: if a.is_user() {
                    self.shares.factor[i]
                } else {
                    None
                },
                level_fs: self.shares.level_fs[i],
                grp_tres_mins: self.back[i].map(&grp_tres_mins).unwrap_or_default(),
                tres_run_mins: run_mins(node),
                grp_tres_raw: grp_tres_raw(self.back[i]),
                assoc_id: self.back[i],
            });
            stack.extend(a.children.iter().rev().copied());
        }
        SharesReport {
            fair_tree: matches!(
                self.settings.algorithm,
                sluice_core::fairshare::Algorithm::FairTree
            ),
            rows,
        }
    }

    /// The tree node a controller association charges.
    pub fn node_of(&self, assoc: u32) -> Option<AssocId> {
        self.map.get(&assoc).copied()
    }

    /// The nodes from `node` up to the root.
    pub fn chain(&self, node: AssocId) -> Vec<AssocId> {
        self.tree.chain(node).collect()
    }
}

/// Whether a `PriorityUsageResetPeriod` boundary lies in `(last, now]` (UTC: midnight;
/// Sunday midnight for `WEEKLY`; the first day of the month, quarter or year).
pub fn reset_between(period: UsageReset, last: Time, now: Time) -> bool {
    match boundary_at_or_before(period, now) {
        Some(b) => b > last && b <= now,
        None => false,
    }
}

/// The last boundary of `period` at or before `t` (Unix seconds, UTC).
fn boundary_at_or_before(period: UsageReset, t: Time) -> Option<Time> {
    const DAY: Time = 86_400;
    let days = t.div_euclid(DAY);
    let (y, m, _) = civil_from_days(days);
    let first = |y: i64, m: u32| days_from_civil(y, m, 1) * DAY;
    match period {
        UsageReset::None => None,
        UsageReset::Daily => Some(days * DAY),
        // 1970-01-01 was a Thursday: day 3 is the first Sunday.
        UsageReset::Weekly => Some((days - (days - 3).rem_euclid(7)) * DAY),
        UsageReset::Monthly => Some(first(y, m)),
        UsageReset::Quarterly => Some(first(y, (m - 1) / 3 * 3 + 1)),
        UsageReset::Yearly => Some(first(y, 1)),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests;
