//! Multifactor priority for the controller's jobs: each job's factors from its
//! record, the decay thread's run every `PriorityCalcPeriod`, pending jobs
//! reprioritized, and what `sprio` and `sshare` read (see [`crate::priority`]).

use std::collections::BTreeMap;

use sluice_core::fairshare::AssocId;
use sluice_core::multifactor::{ClusterTotals, JobFactors};
use sluice_core::tres::MAX_GRES;
use sluice_core::{Cluster, JobId, JobSpec, MemRequest, Resources};
use sluice_proto::accounts::format_tres;
use sluice_proto::priority::{PriorityReport, SharesReport};
use sluice_proto::types::JobState;

use sluice_core::limits::usage::Scope;
use sluice_core::limits::{AssocId as LimitAssoc, QosId};
use sluice_store::AccountRow;

use super::{Controller, Effect};
use crate::priority::{RunCharge, LAST_DECAY};

/// Kind of the store rows holding used TRES-minutes of limit scopes (`GrpTRESMins`):
/// key a scope ([`scope_key`]) or [`LAST_DECAY`]; record the minutes per TRES index.
pub const KIND_LIMIT_USAGE: &str = "limit_usage";

/// A scope as a row key: `assoc:ID`, `qos:ID`, `qos_user:ID:UID`, `qos_account:ID:ASSOC`.
fn scope_key(scope: Scope) -> String {
    match scope {
        Scope::Assoc(a) => format!("assoc:{}", a.0),
        Scope::Qos(q) => format!("qos:{}", q.0),
        Scope::QosUser(q, uid) => format!("qos_user:{}:{uid}", q.0),
        Scope::QosAccount(q, a) => format!("qos_account:{}:{}", q.0, a.0),
    }
}

/// The scope of a row key ([`scope_key`]).
fn parse_scope(key: &str) -> Option<Scope> {
    let parts: Vec<&str> = key.split(':').collect();
    let n = |i: usize| parts.get(i)?.parse::<u32>().ok();
    Some(match *parts.first()? {
        "assoc" => Scope::Assoc(LimitAssoc(n(1)?)),
        "qos" => Scope::Qos(QosId(n(1)?)),
        "qos_user" => Scope::QosUser(QosId(n(1)?), n(2)?),
        "qos_account" => Scope::QosAccount(QosId(n(1)?), LimitAssoc(n(2)?)),
        _ => return None,
    })
}

/// The used TRES-minutes of every scope that has any, and the time of their last
/// decay, as store rows.
fn limit_usage_rows(sched: &sluice_core::Scheduler, now: i64) -> Vec<AccountRow> {
    let usage = sched.limit_usage();
    let mut rows: Vec<AccountRow> = usage
        .used(now)
        .into_iter()
        .map(|(scope, mins)| AccountRow {
            kind: KIND_LIMIT_USAGE.into(),
            key: scope_key(scope),
            record: Some(serde_json::to_string(&mins).expect("numbers serialise")),
        })
        .collect();
    if let Some(t) = usage.last_decay() {
        rows.push(AccountRow {
            kind: KIND_LIMIT_USAGE.into(),
            key: LAST_DECAY.into(),
            record: Some(t.to_string()),
        });
    }
    rows
}

/// The nodes and resources of `cluster` in all (the job-size and TRES factors).
pub(super) fn cluster_totals(cluster: &Cluster) -> ClusterTotals {
    let mut resources = Resources::default();
    for n in &cluster.nodes {
        resources.cpus += n.capacity.cpus;
        resources.mem_mib += n.capacity.mem_mib;
        for s in 0..MAX_GRES {
            resources.gres[s] += n.capacity.gres[s];
        }
    }
    ClusterTotals {
        nodes: cluster.nodes.len() as u32,
        resources,
    }
}

impl Controller {
    /// The association a job charges (its user's in its account, for its partition),
    /// if there is one.
    pub(super) fn assoc_of(&self, r: &super::Job) -> Option<u32> {
        self.accounts
            .association(&r.user, &r.account, Some(&r.partition))
            .map(|a| a.id)
    }

    /// A job's priority inputs, from its record and its core request.
    pub(super) fn job_factors(&self, r: &super::Job, spec: &JobSpec) -> JobFactors {
        let req = &spec.request;
        let nodes = req.min_nodes.max(1);
        let cpus = req.ntasks.max(1) * req.cpus_per_task.max(1);
        let mut resources = Resources {
            cpus,
            mem_mib: match req.mem {
                MemRequest::PerNode(m) => m * u64::from(nodes),
                MemRequest::PerCpu(m) => m * u64::from(cpus),
            },
            ..Default::default()
        };
        for s in 0..MAX_GRES {
            resources.gres[s] = req.gres_per_node[s] * nodes;
        }
        let settings = self.priority.settings();
        let base = JobFactors {
            accrue_since: if settings.accrue_always {
                Some(r.submit_time)
            } else {
                r.accrue_time
            },
            nodes,
            resources,
            time_limit: spec.time_limit,
            nice: i64::from(r.desc.nice.unwrap_or(0)),
            ..Default::default()
        };
        let qos = self.accounts.qos(&r.qos).map_or(0, |q| q.priority);
        let partition = self
            .conf
            .cluster
            .partition(spec.partition)
            .priority_job_factor;
        self.priority
            .factors(self.assoc_of(r), qos, partition, base)
    }

    /// The multifactor priority of pending job `id` at `now`, stored in its record
    /// (what squeue shows) and, when it is queued, in the core (what orders it).
    pub(super) fn refresh_priority(&mut self, id: JobId, now: i64) {
        let Some(r) = self.jobs.get(&id) else { return };
        let Ok(spec) = self.core_spec(r) else { return };
        let p = self
            .priority
            .priority(&self.job_factors(r, &spec), now)
            .priority;
        self.sched.set_priority(id, p);
        if let Some(r) = self.jobs.get_mut(&id) {
            r.priority = p;
        }
    }

    /// Every pending job's priority recomputed (after the decay ran, or accounts
    /// changed).
    pub(super) fn reprioritize(&mut self, now: i64) {
        let pending: Vec<JobId> = self
            .jobs
            .values()
            .filter(|r| r.state == JobState::Pending && !r.held())
            .map(|r| r.id)
            .collect();
        for id in pending {
            self.refresh_priority(id, now);
        }
    }

    /// Runs what is due of multifactor priority at `now`: the decay thread every
    /// `PriorityCalcPeriod` (its usage rows to save), or a recomputation after a
    /// `sacctmgr` change.
    pub(super) fn priority_pass(&mut self, now: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        if self.priority.next_tick().is_some_and(|t| now >= t) {
            let last = self.priority.last_tick();
            let charges: Vec<RunCharge> = self
                .jobs
                .values()
                .filter_map(|r| {
                    let start = r.start_time?;
                    let end = if r.state == JobState::Running {
                        None
                    } else {
                        Some(r.end_time?)
                    };
                    if end.is_some_and(|e| last.is_none_or(|l| e <= l)) {
                        return None;
                    }
                    let billing = r
                        .tres_alloc
                        .iter()
                        .find(|(t, _)| t == "billing")
                        .map_or(0, |(_, n)| *n);
                    Some(RunCharge {
                        assoc: self.assoc_of(r)?,
                        billing: billing as f64,
                        usage_factor: self.accounts.qos(&r.qos).map_or(1.0, |q| q.usage_factor),
                        start,
                        end,
                    })
                })
                .collect();
            let mut rows = self.priority.tick(now, &charges);
            // Used GrpTRESMins decay with the same half-life (QOS NoDecay aside).
            let half_life = self.priority.settings().half_life;
            if half_life > 0 {
                self.sched.decay_limit_usage(now, half_life);
            }
            rows.extend(limit_usage_rows(&self.sched, now));
            effects.push(Effect::PersistAccounts(rows));
            self.priority_dirty = true;
        }
        if std::mem::take(&mut self.priority_dirty) && self.priority.multifactor() {
            self.reprioritize(now);
        }
        effects
    }

    /// Gives the core back the used TRES-minutes saved by [`limit_usage_rows`].
    pub(super) fn restore_limit_usage(&mut self, rows: &[AccountRow], now: i64) {
        let mut saved = Vec::new();
        let mut last = None;
        for row in rows.iter().filter(|r| r.kind == KIND_LIMIT_USAGE) {
            let Some(text) = row.record.as_deref() else {
                continue;
            };
            if row.key == LAST_DECAY {
                last = text.parse().ok();
            } else if let (Some(scope), Ok(mins)) = (
                parse_scope(&row.key),
                serde_json::from_str::<Vec<f64>>(text),
            ) {
                saved.push((scope, mins));
            }
        }
        self.sched.restore_limit_usage(&saved, last, now);
    }

    /// What `sprio` shows: the weights and every pending, not held job's priority
    /// and factors at `now`, by job id.
    pub fn priority_report(&self, now: i64) -> PriorityReport {
        let mut report = PriorityReport {
            multifactor: self.priority.multifactor(),
            weights: self.priority.weights(),
            jobs: Vec::new(),
        };
        if !report.multifactor {
            return report;
        }
        for r in self.jobs.values() {
            if r.state != JobState::Pending || r.held() {
                continue;
            }
            let Ok(mut spec) = self.core_spec(r) else {
                continue;
            };
            // A job waiting in several partitions has a priority in each (its
            // partition factor differs): a line for each, as Slurm's sprio prints.
            let partitions = self
                .partition_list(r)
                .filter(|l| !l.is_empty())
                .unwrap_or_else(|| vec![spec.partition]);
            for p in partitions {
                spec.partition = p;
                let mut row = self.priority.job_row(&self.job_factors(r, &spec), now);
                row.job_id = r.id.0;
                row.partition = self.conf.cluster.partition(p).name.clone();
                row.user = r.user.to_string();
                row.uid = r.uid;
                row.account = r.account.to_string();
                report.jobs.push(row);
            }
        }
        report
    }

    /// What `sshare` shows: every association's fair-share figures, with the TRES ×
    /// minutes left of the running jobs below each (`TRESRunMins`) at `now`.
    pub fn shares_report(&self, now: i64) -> SharesReport {
        let tracked = &self.conf.accounting_tres;
        let mut run: BTreeMap<AssocId, Vec<u64>> = BTreeMap::new();
        for r in self.jobs.values() {
            if r.state != JobState::Running {
                continue;
            }
            let (Some(start), Some(limit)) = (r.start_time, r.time_limit) else {
                continue;
            };
            let left = (start + limit - now).max(0) as u64;
            let Some(node) = self.assoc_of(r).and_then(|a| self.priority.node_of(a)) else {
                continue;
            };
            let counts: Vec<u64> = tracked
                .iter()
                .map(|t| {
                    r.tres_alloc
                        .iter()
                        .find(|(n, _)| n == t)
                        .map_or(0, |(_, c)| c * left)
                })
                .collect();
            for a in self.priority.chain(node) {
                let sums = run.entry(a).or_insert_with(|| vec![0; tracked.len()]);
                for (s, c) in sums.iter_mut().zip(&counts) {
                    *s += c;
                }
            }
        }
        let run_mins = |node: AssocId| {
            let sums = run.get(&node);
            tracked
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{t}={}", sums.map_or(0, |s| s[i] / 60)))
                .collect::<Vec<_>>()
                .join(",")
        };
        let grp = |id: u32| {
            self.accounts
                .association_by_id(id)
                .map(|a| format_tres(&a.limits.grp_tres_mins))
                .unwrap_or_default()
        };
        // Used TRES-minutes of each association's subtree, as `GrpTRESMins` counts
        // them: Slurm's `usage_tres_raw`, shown in whole minutes.
        let used: BTreeMap<u32, Vec<f64>> = self
            .sched
            .limit_usage()
            .used(now)
            .into_iter()
            .filter_map(|(scope, mins)| match scope {
                Scope::Assoc(a) => Some((a.0, mins)),
                _ => None,
            })
            .collect();
        let gres = &self.conf.cluster.gres;
        let index = |t: &str| -> Option<usize> {
            Some(match t {
                "cpu" => 0,
                "mem" => 1,
                "energy" => 2,
                "node" => 3,
                "billing" => 4,
                _ => {
                    let name = t.strip_prefix("gres/")?;
                    let slot = (0..gres.len()).find(|&s| gres.name(s) == name)?;
                    5 + slot.min(MAX_GRES - 1)
                }
            })
        };
        let raw = |id: Option<u32>| {
            let mins = id.and_then(|id| used.get(&id));
            tracked
                .iter()
                .map(|t| {
                    let m = mins
                        .zip(index(t))
                        .and_then(|(m, k)| m.get(k).copied())
                        .unwrap_or(0.0);
                    format!("{t}={}", m as u64)
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        self.priority.shares_report(grp, raw, run_mins)
    }
}

#[cfg(test)]
mod tests;
