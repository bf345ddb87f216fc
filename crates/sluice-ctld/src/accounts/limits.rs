//! The accounts' limits as the scheduling core takes them
//! ([`sluice_core::limits::AccountLimits`]): ids for names, TRES kinds for TRES names,
//! seconds for minutes. Built afresh whenever `sacctmgr` changes something.

use sluice_conf::slurm_conf::AccountingEnforce;
use sluice_core::limits::{
    AccountLimits, Assoc, AssocId, Enforce, JobAcct, Limits, Qos, QosFlags, QosId, TresKind,
    TresLimits,
};
use sluice_core::{Cluster, PreemptMode};
use sluice_proto::accounts::{Limits as RecordLimits, PreemptMode as RecordMode, QosFlag, Tres};

use super::Accounts;

/// A TRES name as the core counts it: `cpu`, `mem`, `energy`, `node`, `billing`,
/// `gres/NAME` and `gres/NAME:TYPE` for a GRES the cluster has. Others (licenses,
/// burst buffers, GRES no node has) limit nothing here.
pub fn tres_kind(cluster: &Cluster, name: &str) -> Option<TresKind> {
    match name {
        "cpu" => Some(TresKind::Cpu),
        "mem" => Some(TresKind::Mem),
        "energy" => Some(TresKind::Energy),
        "node" => Some(TresKind::Node),
        "billing" => Some(TresKind::Billing),
        _ => {
            let gres = name.strip_prefix("gres/")?;
            let (g, t) = match gres.split_once(':') {
                Some((g, t)) => (g, Some(t)),
                None => (gres, None),
            };
            cluster.gres.find(g, t).map(TresKind::Gres)
        }
    }
}

fn tres(cluster: &Cluster, t: &Tres) -> TresLimits {
    t.iter()
        .filter_map(|(name, n)| tres_kind(cluster, name).map(|k| (k, *n)))
        .collect()
}

/// A record's limits in the core's terms.
pub fn core_limits(cluster: &Cluster, l: &RecordLimits) -> Limits {
    let secs = |m: Option<u32>| m.map(|m| i64::from(m) * 60);
    Limits {
        grp_tres: tres(cluster, &l.grp_tres),
        grp_tres_mins: tres(cluster, &l.grp_tres_mins),
        grp_tres_run_mins: tres(cluster, &l.grp_tres_run_mins),
        grp_jobs: l.grp_jobs,
        grp_submit_jobs: l.grp_submit_jobs,
        max_tres_per_job: tres(cluster, &l.max_tres_per_job),
        max_tres_per_node: tres(cluster, &l.max_tres_per_node),
        max_tres_mins_per_job: tres(cluster, &l.max_tres_mins_per_job),
        max_jobs: l.max_jobs,
        max_submit_jobs: l.max_submit_jobs,
        max_wall: secs(l.max_wall),
        max_tres_per_user: tres(cluster, &l.max_tres_per_user),
        max_jobs_per_user: l.max_jobs_per_user,
        max_submit_jobs_per_user: l.max_submit_jobs_per_user,
        min_tres_per_job: tres(cluster, &l.min_tres_per_job),
        ..Limits::default()
    }
}

impl Accounts {
    /// Every association's and QOS's limits, and each partition's QOS, for the core,
    /// with what `enforce` asks enforced.
    pub fn core_limits(&self, cluster: &Cluster, enforce: &AccountingEnforce) -> AccountLimits {
        let mut db = AccountLimits {
            enforce: Enforce {
                limits: enforce.limits,
                safe: enforce.safe,
            },
            ..AccountLimits::default()
        };
        for a in self.associations() {
            db.assocs.insert(
                AssocId(a.id),
                Assoc {
                    parent: self.parent(a).map(|p| AssocId(p.id)),
                    user: a.user.is_some(),
                    limits: core_limits(cluster, &a.limits),
                },
            );
        }
        for q in self.all_qos() {
            let has = |f: QosFlag| q.flags.contains(&f);
            db.qos.insert(
                QosId(q.id),
                Qos {
                    limits: core_limits(cluster, &q.limits),
                    flags: QosFlags {
                        deny_on_limit: has(QosFlag::DenyOnLimit),
                        no_reserve: has(QosFlag::NoReserve),
                        over_part_qos: has(QosFlag::OverPartQOS),
                        no_decay: has(QosFlag::NoDecay),
                    },
                    preempt: {
                        let mut ids: Vec<QosId> = q
                            .preempt
                            .iter()
                            .filter_map(|n| self.qos(n))
                            .map(|r| QosId(r.id))
                            .collect();
                        ids.sort();
                        ids
                    },
                    preempt_mode: match q.preempt_mode {
                        RecordMode::Cluster => None,
                        RecordMode::Off => Some(PreemptMode::Off),
                        RecordMode::Cancel => Some(PreemptMode::Cancel),
                        RecordMode::Requeue => Some(PreemptMode::Requeue),
                        RecordMode::Suspend => Some(PreemptMode::Suspend),
                    },
                    grace_time: i64::from(q.grace_time),
                },
            );
        }
        db.partition_qos = cluster
            .partitions
            .iter()
            .map(|p| {
                p.qos
                    .as_deref()
                    .and_then(|n| self.qos(n))
                    .map(|q| QosId(q.id))
            })
            .collect();
        db
    }

    /// A job's association and QOS ids: the association of `user` in `account` for
    /// `partition`, and the QOS named `qos`.
    pub fn job_acct(&self, user: &str, account: &str, partition: &str, qos: &str) -> JobAcct {
        JobAcct {
            assoc: self
                .association(user, account, Some(partition))
                .map(|a| AssocId(a.id)),
            qos: self.qos(qos).map(|q| QosId(q.id)),
            ..JobAcct::default()
        }
    }

    /// The shortest `MaxWall` (seconds) among the job's QOS and its association
    /// (inherited), which Slurm gives a job that names no time limit.
    pub fn max_wall(
        &self,
        acct: &JobAcct,
        db: &AccountLimits,
        partition_qos: Option<QosId>,
    ) -> Option<i64> {
        let qos = [acct.qos, partition_qos]
            .into_iter()
            .flatten()
            .filter_map(|q| db.qos.get(&q)?.limits.max_wall);
        let assoc = acct
            .assoc
            .map(|a| db.chain(a))
            .unwrap_or_default()
            .into_iter()
            .find_map(|a| db.assocs[&a].limits.max_wall);
        qos.chain(assoc).min()
    }
}
