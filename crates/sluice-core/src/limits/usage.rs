//! What each association, QOS, QOS user and QOS account has pending, running and used:
//! the counts limits are checked against.
//!
//! Every job the core counts (pending or running, and jobs the caller keeps waiting
//! outside the queue: held, or waiting on a dependency) is charged to its *scopes* when
//! it arrives, and exactly those scopes are released when it leaves, whatever the
//! database says by then.
//!
//! Used TRES-minutes accrue lazily: each scope keeps the TRES its running jobs hold and
//! the time up to which its usage is accounted, and brings itself up to date before the
//! TRES it holds change. No pass walks the running jobs.

#![allow(clippy::needless_range_loop)] // TRES vectors are added index by index

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::ids::JobId;
use crate::time::{Secs, Time};

use super::{AccountLimits, AssocId, JobAcct, QosId, TresCounts, NTRES};

/// Something usage is counted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// An association (with its whole subtree: a job counts at every level of its
    /// chain).
    Assoc(AssocId),
    /// A QOS.
    Qos(QosId),
    /// One user's jobs in a QOS (uid).
    QosUser(QosId, u32),
    /// One account's jobs in a QOS (the account's association).
    QosAccount(QosId, AssocId),
}

/// The counts of one [`Scope`].
#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    /// Running jobs.
    pub running: u32,
    /// Pending and running jobs (and jobs waiting outside the queue).
    pub submitted: u32,
    /// TRES held by running jobs.
    pub tres: TresCounts,
    /// Σ TRES × end of claim (seconds) over running jobs, for the TRES-minutes they
    /// still have to run.
    run_end: [i128; NTRES],
    /// TRES-seconds used (decayed), accounted up to `last`.
    used: [f64; NTRES],
    last: Time,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            running: 0,
            submitted: 0,
            tres: [0; NTRES],
            run_end: [0; NTRES],
            used: [0.0; NTRES],
            last: Time::MIN,
        }
    }
}

impl Counter {
    fn accrue(&mut self, now: Time) {
        if self.last != Time::MIN && now > self.last {
            let dt = (now - self.last) as f64;
            for k in 0..NTRES {
                self.used[k] += self.tres[k] as f64 * dt;
            }
        }
        self.last = self.last.max(now);
    }

    /// TRES-minutes of TRES `k` used up to `now`.
    pub fn used_mins(&self, k: usize, now: Time) -> f64 {
        let pending = if self.last != Time::MIN && now > self.last {
            self.tres[k] as f64 * (now - self.last) as f64
        } else {
            0.0
        };
        (self.used[k] + pending) / 60.0
    }

    /// TRES-minutes of TRES `k` that running jobs still have to run at `now` (to the
    /// end of their time limits).
    pub fn run_mins(&self, k: usize, now: Time) -> f64 {
        let secs = self.run_end[k] - i128::from(now) * i128::from(self.tres[k]);
        secs.max(0) as f64 / 60.0
    }
}

/// What a job is charged with.
#[derive(Clone, Debug, PartialEq)]
struct Charged {
    /// Shared with the job charged just before it when that one had the same scopes
    /// (a queue of one user's like jobs shares one).
    scopes: Arc<[Scope]>,
    /// While running: the TRES it holds and the end of its claim (boxed: a pending
    /// job, most of a queue, keeps only the pointer).
    running: Option<Box<(TresCounts, Time)>>,
}

/// The usage counts of every scope, and which jobs are charged to which.
#[derive(Clone, Debug, Default)]
pub struct Usage {
    counters: BTreeMap<Scope, Counter>,
    jobs: BTreeMap<JobId, Charged>,
    last_decay: Option<Time>,
    /// The scopes last charged, which the next job charged to the same shares.
    last_scopes: Option<Arc<[Scope]>>,
}

/// Equal when the counts and charges are (which scopes were charged last is only a
/// cache for sharing).
impl PartialEq for Usage {
    fn eq(&self, other: &Self) -> bool {
        self.counters == other.counters
            && self.jobs == other.jobs
            && self.last_decay == other.last_decay
    }
}

/// The QOS whose limits a job meets, in order of precedence: its partition's QOS, then
/// its own (the other way round when its own has `OverPartQOS`); each at most once.
pub fn qos_order(db: &AccountLimits, acct: &JobAcct, partition_qos: Option<QosId>) -> Vec<QosId> {
    let own = acct.qos.filter(|q| db.qos.contains_key(q));
    let part = partition_qos.filter(|q| db.qos.contains_key(q));
    let own_first = own
        .and_then(|q| db.qos.get(&q))
        .is_some_and(|q| q.flags.over_part_qos);
    let mut out: Vec<QosId> = if own_first {
        [own, part].into_iter().flatten().collect()
    } else {
        [part, own].into_iter().flatten().collect()
    };
    out.dedup();
    out
}

/// The account association a per-account QOS limit counts a job under: its user
/// association's parent.
pub fn account_of(db: &AccountLimits, assoc: AssocId) -> AssocId {
    match db.assocs.get(&assoc) {
        Some(a) if a.user => a.parent.unwrap_or(assoc),
        _ => assoc,
    }
}

/// Every scope a job of `user` counts in.
pub fn scopes(
    db: &AccountLimits,
    user: u32,
    acct: &JobAcct,
    partition_qos: Option<QosId>,
) -> Vec<Scope> {
    let mut out: Vec<Scope> = Vec::new();
    if let Some(a) = acct.assoc {
        out.extend(db.chain(a).into_iter().map(Scope::Assoc));
    }
    for q in qos_order(db, acct, partition_qos) {
        out.push(Scope::Qos(q));
        out.push(Scope::QosUser(q, user));
        if let Some(a) = acct.assoc {
            out.push(Scope::QosAccount(q, account_of(db, a)));
        }
    }
    out
}

impl Usage {
    /// The counts of `scope` (all zero when nothing was ever charged to it).
    pub fn counter(&self, scope: Scope) -> Option<&Counter> {
        self.counters.get(&scope)
    }

    /// Whether `id` is charged.
    pub fn is_charged(&self, id: JobId) -> bool {
        self.jobs.contains_key(&id)
    }

    /// The scopes `id` is charged to (empty when it is not charged).
    pub fn scopes_of(&self, id: JobId) -> &[Scope] {
        self.jobs.get(&id).map_or(&[], |c| &c.scopes[..])
    }

    /// Charges a new job to `scopes` (pending: it counts as submitted). A job already
    /// charged keeps its scopes.
    pub fn add(&mut self, id: JobId, scopes: Vec<Scope>) {
        if scopes.is_empty() || self.jobs.contains_key(&id) {
            return;
        }
        for s in &scopes {
            self.counters.entry(*s).or_default().submitted += 1;
        }
        let scopes = match &self.last_scopes {
            Some(last) if **last == scopes[..] => last.clone(),
            _ => {
                let new: Arc<[Scope]> = scopes.into();
                self.last_scopes = Some(new.clone());
                new
            }
        };
        self.jobs.insert(
            id,
            Charged {
                scopes,
                running: None,
            },
        );
    }

    /// A charged job starts at `now` holding `tres` until `end`.
    pub fn start(&mut self, id: JobId, tres: TresCounts, now: Time, end: Time) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if job.running.is_some() {
            return;
        }
        for s in job.scopes.iter() {
            let c = self.counters.entry(*s).or_default();
            c.accrue(now);
            c.running += 1;
            for k in 0..NTRES {
                c.tres[k] += tres[k];
                c.run_end[k] += i128::from(tres[k]) * i128::from(end);
            }
        }
        job.running = Some(Box::new((tres, end)));
    }

    /// A running job's claim now ends at `end`.
    pub fn retime(&mut self, id: JobId, end: Time) {
        let Some(Charged {
            scopes,
            running: Some(held),
        }) = self.jobs.get_mut(&id)
        else {
            return;
        };
        let (tres, old) = &mut **held;
        for s in scopes.iter() {
            let c = self.counters.entry(*s).or_default();
            for k in 0..NTRES {
                c.run_end[k] += i128::from(tres[k]) * i128::from(end - *old);
            }
        }
        *old = end;
    }

    /// A job leaves at `now` (ended, cancelled, or taken back by the caller): its
    /// scopes forget it; what it used stays used.
    pub fn remove(&mut self, id: JobId, now: Time) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        for s in job.scopes.iter() {
            let c = self.counters.entry(*s).or_default();
            c.submitted = c.submitted.saturating_sub(1);
            if let Some((tres, end)) = job.running.as_deref() {
                c.accrue(now);
                c.running = c.running.saturating_sub(1);
                for k in 0..NTRES {
                    c.tres[k] = c.tres[k].saturating_sub(tres[k]);
                    c.run_end[k] -= i128::from(tres[k]) * i128::from(*end);
                }
            }
        }
    }

    /// Decays used TRES-minutes at `now` as Slurm's decay thread does: by
    /// `factor_per_second` to the power of the seconds since the last decay (the first
    /// call only notes the time). Scopes of QOS for which `no_decay` holds keep theirs.
    pub fn decay(&mut self, now: Time, factor_per_second: f64, no_decay: impl Fn(QosId) -> bool) {
        let Some(last) = self.last_decay.replace(now) else {
            return;
        };
        let elapsed: Secs = (now - last).max(0);
        if elapsed == 0 {
            return;
        }
        let f = factor_per_second.powf(elapsed as f64);
        for (scope, c) in self.counters.iter_mut() {
            let q = match scope {
                Scope::Assoc(_) => None,
                Scope::Qos(q) | Scope::QosUser(q, _) | Scope::QosAccount(q, _) => Some(*q),
            };
            if q.is_some_and(&no_decay) {
                continue;
            }
            c.accrue(now);
            for u in c.used.iter_mut() {
                *u *= f;
            }
        }
    }

    /// Every scope's used TRES-minutes at `now`, per TRES index, for the scopes that
    /// used any: what a restart needs back ([`Usage::set_used_mins`]).
    pub fn used(&self, now: Time) -> Vec<(Scope, Vec<f64>)> {
        self.counters
            .iter()
            .map(|(scope, c)| (*scope, (0..NTRES).map(|k| c.used_mins(k, now)).collect()))
            .filter(|(_, mins): &(Scope, Vec<f64>)| mins.iter().any(|m| *m > 0.0))
            .collect()
    }

    /// When used TRES-minutes were last decayed.
    pub fn last_decay(&self) -> Option<Time> {
        self.last_decay
    }

    /// Sets when used TRES-minutes were last decayed (a restart).
    pub fn set_last_decay(&mut self, t: Time) {
        self.last_decay = Some(t);
    }

    /// Sets the TRES-minutes `scope` has used of TRES index `k` (a restart giving back
    /// what the accounting records say; tests).
    pub fn set_used_mins(&mut self, scope: Scope, k: usize, mins: f64, now: Time) {
        let c = self.counters.entry(scope).or_default();
        c.accrue(now);
        if c.last == Time::MIN {
            c.last = now;
        }
        c.used[k] = mins * 60.0;
    }
}
