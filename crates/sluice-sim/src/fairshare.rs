//! Fair-share in a replay: accounts, decayed usage, multifactor priorities and the
//! fairness they achieve.
//!
//! Accounts come from the trace's group field (account `g<gid>`, one per group, under
//! `root`) or from a mapping of users to accounts; each user gets a user association in
//! its account; every association has one share unless the mapping says otherwise.
//! Every `PriorityCalcPeriod` of virtual time the replay does what Slurm's decay thread
//! does (the core's [`Decay`]): decay usage, charge running jobs their processors ×
//! seconds, recompute fair-share, and give every pending job its new multifactor
//! priority. A job gets its priority at submission too.
//!
//! The fairness figure is Jain's index over accounts of x = usage share / normalized
//! share: (Σx)² / (n Σx²), 1 when every account got exactly its share, 1/n when one
//! account got everything ([Jain, Chiu, Hawe 1984]). It is sampled over time from the
//! decayed usage (what the scheduler sees) and computed at the end from the whole
//! replay's usage.
//!
//! [Jain, Chiu, Hawe 1984]: https://arxiv.org/abs/cs/9809099

use std::collections::{BTreeMap, HashMap};

use sluice_core::fairshare::{Algorithm, AssocId, AssocTree, Charge, Decay, FairShares, Shares};
use sluice_core::multifactor::{self, ClusterTotals, JobFactors, Params};
use sluice_core::{Cluster, JobId, Resources, Scheduler, Secs, Time};

use crate::setup::SimJob;

/// How fair-share is simulated.
#[derive(Clone, Debug, PartialEq)]
pub struct FairShareOptions {
    /// Order jobs by multifactor priority (otherwise only measure fairness, with the
    /// policy's own order).
    pub priority: bool,
    /// Weights and factor options.
    pub params: Params,
    /// Fair Tree or classic.
    pub algorithm: Algorithm,
    /// `PriorityDecayHalfLife`, seconds (0: no decay).
    pub half_life: Secs,
    /// `PriorityCalcPeriod`, seconds.
    pub calc_period: Secs,
    /// User id → account; users not listed charge their group's account.
    pub accounts: BTreeMap<u32, String>,
    /// Seconds between fairness samples.
    pub sample_every: Secs,
}

impl Default for FairShareOptions {
    /// Fair-share priority as Slurm's documentation suggests starting: fair-share
    /// weight 10000, age weight 1000 (`PriorityMaxAge` 7 days), half-life 7 days,
    /// recalculated every 5 minutes; sampled daily.
    fn default() -> Self {
        FairShareOptions {
            priority: true,
            params: Params {
                weights: multifactor::Weights {
                    fairshare: 10_000,
                    age: 1000,
                    ..Default::default()
                },
                ..Default::default()
            },
            algorithm: Algorithm::FairTree,
            half_life: 7 * 86_400,
            calc_period: 300,
            accounts: BTreeMap::new(),
            sample_every: 86_400,
        }
    }
}

/// One fairness sample.
#[derive(Clone, Debug, PartialEq)]
pub struct FairnessSample {
    /// Virtual time.
    pub t: Time,
    /// Jain's index of decayed usage share / normalized share over accounts with usage.
    pub jain: f64,
    /// Each account's share of the decayed usage, in
    /// [`FairnessReport::sample_accounts`] order.
    pub usage_share: Vec<f64>,
}

/// One account's figures over the whole replay.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AccountFigures {
    /// Account name.
    pub account: String,
    /// Normalized share (of the machine).
    pub norm_shares: f64,
    /// Share of all processor-seconds used.
    pub usage_share: f64,
    /// Jobs finished.
    pub jobs: u64,
    /// Mean wait, seconds.
    #[serde(rename = "mean_wait_s")]
    pub mean_wait: f64,
}

/// One user's figures over the whole replay.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct UserFigures {
    /// User id.
    pub user: u32,
    /// Account charged.
    pub account: String,
    /// Jobs finished.
    pub jobs: u64,
    /// Processor-hours used.
    pub cpu_hours: f64,
    /// Share of all processor-seconds used.
    pub usage_share: f64,
    /// Normalized share (of the machine).
    pub norm_shares: f64,
    /// Mean wait, seconds.
    #[serde(rename = "mean_wait_s")]
    pub mean_wait: f64,
    /// Fair-share factor at the end of the replay.
    pub fairshare: f64,
}

/// Fairness of a replay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FairnessReport {
    /// Per account, by usage (largest first).
    pub accounts: Vec<AccountFigures>,
    /// Per user, by usage (largest first).
    pub users: Vec<UserFigures>,
    /// Jain's index over accounts of usage share / normalized share, whole replay.
    pub jain: f64,
    /// Samples over time.
    pub samples: Vec<FairnessSample>,
    /// Account names in the order of [`FairnessSample::usage_share`].
    pub sample_accounts: Vec<String>,
}

impl FairnessReport {
    /// The accounts, largest usage first, each with its column in
    /// [`FairnessSample::usage_share`].
    pub fn account_columns(&self) -> Vec<(usize, &AccountFigures)> {
        self.accounts
            .iter()
            .map(|a| {
                let col = self
                    .sample_accounts
                    .iter()
                    .position(|n| *n == a.account)
                    .expect("every account has a column");
                (col, a)
            })
            .collect()
    }
}

/// Jain's index of `xs`: (Σx)² / (n Σx²); 1 for no values or all zero.
pub fn jain_index(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || squares == 0.0 {
        1.0
    } else {
        sum * sum / (xs.len() as f64 * squares)
    }
}

/// The fair-share state of a replay in progress.
pub(crate) struct FairShareSim {
    opts: FairShareOptions,
    tree: AssocTree,
    decay: Decay,
    shares: FairShares,
    totals: ClusterTotals,
    /// User association of each job, by the job's index in the replay's job list.
    job_assoc: Vec<AssocId>,
    /// The account associations, in creation order.
    accounts: Vec<AssocId>,
    /// Jobs ended since the last recalculation: `(association, processors, start, end)`.
    ended: Vec<(AssocId, u32, Time, Time)>,
    next_calc: Time,
    next_sample: Time,
    samples: Vec<FairnessSample>,
}

impl FairShareSim {
    /// Builds the association tree for `jobs` (in the replay's order).
    pub(crate) fn new(opts: FairShareOptions, cluster: &Cluster, jobs: &[SimJob]) -> Self {
        let mut tree = AssocTree::new();
        let mut accounts = Vec::new();
        let mut job_assoc = Vec::with_capacity(jobs.len());
        let mut users: HashMap<(AssocId, u32), AssocId> = HashMap::new();
        for j in jobs {
            let name = crate::limits::account_name(&opts.accounts, j);
            let acct = match tree.account(&name) {
                Some(a) => a,
                None => {
                    let a = tree
                        .add_account(AssocId::ROOT, &name, Shares::Raw(1))
                        .expect("new account under root");
                    accounts.push(a);
                    a
                }
            };
            let user = *users.entry((acct, j.spec.user)).or_insert_with(|| {
                tree.add_user(acct, &j.spec.user.to_string(), Shares::Raw(1))
                    .expect("new user in an account")
            });
            job_assoc.push(user);
        }
        let mut resources = Resources::default();
        for n in &cluster.nodes {
            resources = resources.plus(&n.capacity);
        }
        let shares = FairShares::compute(&tree, opts.algorithm);
        FairShareSim {
            decay: Decay::new(opts.half_life),
            totals: ClusterTotals {
                nodes: cluster.nodes.len() as u32,
                resources,
            },
            tree,
            shares,
            job_assoc,
            accounts,
            ended: Vec::new(),
            next_calc: Time::MIN,
            next_sample: Time::MIN,
            samples: Vec::new(),
            opts,
        }
    }

    /// Whether a recalculation is due at `now` (or the first one has not run).
    pub(crate) fn due(&self, now: Time) -> bool {
        self.next_calc <= now
    }

    /// Whether jobs are ordered by multifactor priority.
    pub(crate) fn orders_jobs(&self) -> bool {
        self.opts.priority
    }

    /// The multifactor priority of job `idx` at `now`.
    pub(crate) fn priority(&self, idx: usize, job: &SimJob, now: Time) -> u32 {
        let factors = JobFactors {
            accrue_since: Some(job.spec.begin),
            nodes: job.spec.request.min_nodes.max(1),
            resources: Resources::cpus(job.procs),
            time_limit: job.spec.time_limit,
            fairshare: self.shares.job_factor(Some(self.job_assoc[idx])),
            partition: 1.0,
            ..Default::default()
        };
        multifactor::priority(&self.opts.params, &self.totals, &factors, now).priority
    }

    /// Notes that job `idx` ended, to charge it at the next recalculation.
    pub(crate) fn job_ended(&mut self, idx: usize, procs: u32, start: Time, end: Time) {
        self.ended.push((self.job_assoc[idx], procs, start, end));
    }

    /// Runs every recalculation due up to `now`: decay, charge `running` (job index,
    /// processors, start), recompute fair-share, and reprioritize the pending jobs of
    /// `sched` (`index` maps ids to job indices).
    pub(crate) fn advance(
        &mut self,
        now: Time,
        sched: &mut Scheduler,
        jobs: &[SimJob],
        index: &HashMap<JobId, usize>,
        running: &[(usize, u32, Time)],
    ) {
        if self.next_calc == Time::MIN {
            self.decay.run(&mut self.tree, now, []);
            self.next_calc = now + self.opts.calc_period;
            self.next_sample = now;
        }
        let mut recalculated = None;
        while self.next_calc <= now {
            let t = self.next_calc;
            let charge = |assoc, procs: u32, start, end| Charge {
                assoc,
                billing: procs as f64,
                usage_factor: 1.0,
                start,
                end,
            };
            let mut charges: Vec<Charge> = running
                .iter()
                .filter(|(_, _, start)| *start < t)
                .map(|&(idx, procs, start)| charge(self.job_assoc[idx], procs, start, None))
                .collect();
            charges.extend(
                self.ended
                    .drain(..)
                    .map(|(a, procs, start, end)| charge(a, procs, start, Some(end))),
            );
            self.decay.run(&mut self.tree, t, charges);
            self.next_calc += self.opts.calc_period;
            recalculated = Some(t);
            if t >= self.next_sample && self.tree.get(AssocId::ROOT).usage_raw > 0.0 {
                self.sample(t);
                self.next_sample = t + self.opts.sample_every;
            }
        }
        let Some(t) = recalculated else { return };
        self.shares = FairShares::compute(&self.tree, self.opts.algorithm);
        if self.opts.priority {
            let pending: Vec<JobId> = sched.pending().map(|j| j.spec.id).collect();
            for id in pending {
                let idx = index[&id];
                let p = self.priority(idx, &jobs[idx], t);
                sched.set_priority(id, p);
            }
        }
    }

    fn sample(&mut self, t: Time) {
        let root = self.tree.get(AssocId::ROOT).usage_raw;
        if root <= 0.0 {
            return; // no usage yet: no share of it to compare
        }
        let usage_share: Vec<f64> = self
            .accounts
            .iter()
            .map(|a| {
                if root > 0.0 {
                    self.tree.get(*a).usage_raw / root
                } else {
                    0.0
                }
            })
            .collect();
        let n = self.accounts.len().max(1) as f64;
        let xs: Vec<f64> = usage_share
            .iter()
            .filter(|u| **u > 0.0)
            .map(|u| u * n)
            .collect();
        self.samples.push(FairnessSample {
            t,
            jain: jain_index(&xs),
            usage_share,
        });
    }

    /// The fairness report, from the finished jobs `(job index, processors, start,
    /// finish, submit)`.
    pub(crate) fn report(self, done: &[(usize, u32, Time, Time, Time)]) -> FairnessReport {
        let fs = FairShares::compute(&self.tree, self.opts.algorithm);
        let classic = FairShares::compute(&self.tree, Algorithm::Classic { dampening: 1 });
        let mut per_assoc: HashMap<AssocId, (u64, f64, f64)> = HashMap::new();
        let mut per_account: HashMap<AssocId, (u64, f64, f64)> = HashMap::new();
        let mut total = 0.0;
        for &(idx, procs, start, finish, submit) in done {
            let used = procs as f64 * (finish - start) as f64;
            let wait = (start - submit) as f64;
            total += used;
            let u = self.job_assoc[idx];
            let e = per_assoc.entry(u).or_default();
            *e = (e.0 + 1, e.1 + used, e.2 + wait);
            let acct = self.tree.get(u).parent.expect("users have an account");
            let e = per_account.entry(acct).or_default();
            *e = (e.0 + 1, e.1 + used, e.2 + wait);
        }
        let share_of = |used: f64| if total > 0.0 { used / total } else { 0.0 };
        let mut accounts: Vec<AccountFigures> = self
            .accounts
            .iter()
            .map(|a| {
                let (jobs, used, wait) = per_account.get(a).copied().unwrap_or_default();
                AccountFigures {
                    account: self.tree.get(*a).account.clone(),
                    norm_shares: classic.norm_shares[a.index()],
                    usage_share: share_of(used),
                    jobs,
                    mean_wait: if jobs > 0 { wait / jobs as f64 } else { 0.0 },
                }
            })
            .collect();
        let xs: Vec<f64> = accounts
            .iter()
            .filter(|a| a.jobs > 0 && a.norm_shares > 0.0)
            .map(|a| a.usage_share / a.norm_shares)
            .collect();
        accounts.sort_by(|a, b| {
            b.usage_share
                .total_cmp(&a.usage_share)
                .then(a.account.cmp(&b.account))
        });
        let mut users: Vec<UserFigures> = self
            .tree
            .iter()
            .filter(|(_, a)| a.is_user())
            .map(|(id, a)| {
                let (jobs, used, wait) = per_assoc.get(&id).copied().unwrap_or_default();
                UserFigures {
                    user: a.user.as_deref().and_then(|u| u.parse().ok()).unwrap_or(0),
                    account: a.account.clone(),
                    jobs,
                    cpu_hours: used / 3600.0,
                    usage_share: share_of(used),
                    norm_shares: classic.norm_shares[id.index()],
                    mean_wait: if jobs > 0 { wait / jobs as f64 } else { 0.0 },
                    fairshare: fs.factor[id.index()].unwrap_or(0.0),
                }
            })
            .collect();
        users.sort_by(|a, b| {
            b.usage_share
                .total_cmp(&a.usage_share)
                .then(a.user.cmp(&b.user))
                .then(a.account.cmp(&b.account))
        });
        let sample_accounts = self
            .accounts
            .iter()
            .map(|a| self.tree.get(*a).account.clone())
            .collect();
        FairnessReport {
            sample_accounts,
            accounts,
            users,
            jain: jain_index(&xs),
            samples: self.samples,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jains_index_is_one_when_equal_and_one_over_n_when_one_takes_all() {
        assert_eq!(jain_index(&[2.0, 2.0, 2.0]), 1.0);
        assert_eq!(jain_index(&[4.0, 0.0, 0.0, 0.0]), 0.25);
        assert_eq!(jain_index(&[]), 1.0);
        // (1 + 3)² / (2 × (1 + 9)) = 0.8
        assert_eq!(jain_index(&[1.0, 3.0]), 0.8);
    }
}
