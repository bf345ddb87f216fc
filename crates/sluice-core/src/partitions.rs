//! Jobs submitted to several partitions (`sbatch -p short,debug`): such a job waits in
//! all of them and starts in whichever can run it first, as Slurm's do.
//!
//! A job's spec names one partition at a time, the one it is *in*: a pending job is in
//! the first partition it lists, except while a pass tries it elsewhere; a started job
//! is in the one it runs in. Its queue place takes the highest `PriorityTier` of them.
//! The passes try each partition in turn (highest tier first, then in the order the
//! job listed them):
//!
//! - the main pass (and FCFS) starts the job in the first of them where it fits now,
//!   skipping partitions a job ahead has blocked and nodes kept for it (see
//!   [`crate::kept`]); each partition where it does not fit keeps what it waits for
//!   there at once (the partition, or the nodes it names), as Slurm's main scheduler
//!   does with one queue entry per partition of equal tier, and it keeps the reason the
//!   last partition tried gave;
//! - the backfill pass plans it in each and keeps the earliest start (the first listed
//!   at equal times): started there now, or reserved there.
//!
//! Preemption, advance reservations and explanations look at the partition the job is
//! in.

use std::sync::Arc;

use crate::decision::{Decision, Pass};
use crate::ids::{JobId, PartitionId};
use crate::job::{Job, JobState, PendingReason};
use crate::kept::Kept;
use crate::partition_policy::OverSubscribe;
use crate::scheduler::Scheduler;
use crate::time::Time;

impl Scheduler {
    /// Lets job `id` run in any of `partitions` (its own among them; duplicates and
    /// unknown ids left out). A pending job moves to the first of them and takes the
    /// highest tier of them for its queue place; a running job keeps running where it
    /// is and may run in any of them once requeued. One partition (or none) undoes it.
    /// Returns whether the job exists.
    pub fn set_partitions(&mut self, id: JobId, partitions: &[PartitionId], now: Time) -> bool {
        let Some(job) = self.jobs.get(&id) else {
            return false;
        };
        self.generation += 1;
        let mut list: Vec<PartitionId> = Vec::with_capacity(partitions.len());
        for &p in partitions {
            if p.index() < self.cluster.partitions.len() && !list.contains(&p) {
                list.push(p);
            }
        }
        let pending = job.state == JobState::Pending;
        if list.len() < 2 {
            self.choices.remove(&id);
        } else {
            if pending {
                self.move_to(id, list[0], now);
            }
            self.choices.insert(id, list);
        }
        if pending {
            self.rekey(id);
            self.backfill.dirty = true;
        }
        true
    }

    /// The partitions job `id` may run in, in the order it listed them, when more than
    /// one.
    pub fn partitions_of(&self, id: JobId) -> Option<&[PartitionId]> {
        self.choices.get(&id).map(Vec::as_slice)
    }

    /// The partitions a pass tries `id` in, in the order it tries them: highest
    /// `PriorityTier` first, then as listed. `None` for a job of one partition.
    pub(crate) fn tries(&self, id: JobId) -> Option<Vec<PartitionId>> {
        let mut list = self.choices.get(&id)?.clone();
        list.sort_by_key(|p| std::cmp::Reverse(self.cluster.partition(*p).priority_tier));
        Some(list)
    }

    /// The highest `PriorityTier` of the partitions `id` may run in, `own` being the
    /// one its spec names.
    pub(crate) fn best_tier(&self, id: JobId, own: PartitionId) -> u16 {
        let tier = |p: PartitionId| self.cluster.partition(p).priority_tier;
        match self.choices.get(&id) {
            Some(list) => list.iter().map(|&p| tier(p)).max().unwrap_or(0),
            None => tier(own),
        }
    }

    /// Puts pending job `id` in partition `p`: its spec names `p`, and what follows from
    /// the partition follows (whole nodes under `OverSubscribe=EXCLUSIVE` or
    /// `ExclusiveUser`; the scopes of its limits, of which a partition's QOS is one).
    pub(crate) fn move_to(&mut self, id: JobId, p: PartitionId, now: Time) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let from = job.spec.partition;
        if from == p {
            return;
        }
        let part = self.cluster.partition(p);
        let forces = part.oversubscribe == OverSubscribe::Exclusive || part.exclusive_user;
        let own = job.spec.request.exclusive && !self.exclusive_by_partition.contains(&id);
        let job = Arc::make_mut(job);
        job.spec.partition = p;
        job.spec.request.exclusive = own || forces;
        if forces && !own {
            self.exclusive_by_partition.insert(id);
        } else {
            self.exclusive_by_partition.remove(&id);
        }
        let qos = |p: PartitionId| {
            self.accounts
                .partition_qos
                .get(p.index())
                .copied()
                .flatten()
        };
        if qos(from) != qos(p) {
            let scopes = self.scopes(&self.jobs[&id].spec);
            self.usage.remove(id, now);
            self.usage.add(id, scopes);
        }
    }

    /// Forgets the partitions of a job that has left.
    pub(crate) fn forget_partitions(&mut self, id: JobId) {
        self.choices.remove(&id);
        self.exclusive_by_partition.remove(&id);
    }
}

/// Readies job `id` for a pass at `now` when it may run in several partitions: returns
/// those of them that would take it (in the order they are tried) and puts it in the
/// first, or in the last tried when none would (whose reason it then gets, as Slurm's
/// last queue entry of the job sets it). `None` for a job of one partition.
pub(crate) fn open(s: &mut Scheduler, id: JobId, now: Time) -> Option<Vec<PartitionId>> {
    let list = s.tries(id)?;
    let job = &s.jobs[&id];
    let last = *list.last().expect("a job of several partitions");
    let open: Vec<PartitionId> = list
        .into_iter()
        .filter(|&p| refuses(s, job, p, now).is_none())
        .collect();
    s.move_to(id, open.first().copied().unwrap_or(last), now);
    Some(open)
}

/// Why partition `p` would not take `job` now, were it in `p`: its state, nodes and
/// limits (see [`Scheduler::partition_refuses`]), or a limit of its QOS
/// (`PartitionName=... QOS=`) the job would be over.
fn refuses(s: &Scheduler, job: &Job, p: PartitionId, now: Time) -> Option<PendingReason> {
    if let Some(r) = s.partition_refuses(job, p, now) {
        return Some(r);
    }
    s.accounts.partition_qos.get(p.index()).copied().flatten()?;
    let mut spec = job.spec.clone();
    spec.partition = p;
    crate::limits::check::hold_reason(&s.accounts, &s.usage, crate::scheduler::view(&spec), now)
        .map(PendingReason::Limit)
}

/// The main pass (and FCFS) for eligible job `id` of several partitions: starts it in
/// the first that would take it where it fits now, skipping those blocked and keeping
/// off the nodes kept for jobs ahead (see [`crate::kept`]). Each partition where it
/// does not fit keeps what the job waits for there before the next is tried. When it
/// starts nowhere it stays in the first that would take it, and its reason is the one
/// the last partition tried gave (a limit of that partition, `Priority` when it was
/// blocked, else why it does not fit), as Slurm's main scheduler leaves it with one
/// queue entry per partition. Returns whether it was tried at all.
pub(crate) fn start_now(
    s: &mut Scheduler,
    id: JobId,
    now: Time,
    kept: &mut Kept,
    out: &mut Vec<Decision>,
) -> bool {
    let tries = s.tries(id).expect("a job of several partitions");
    let mut reason = PendingReason::Priority;
    let mut home = None;
    let mut tried = false;
    for p in tries {
        if let Some(r) = refuses(s, &s.jobs[&id], p, now) {
            reason = r;
            continue;
        }
        home.get_or_insert(p);
        if kept.blocks(p) {
            reason = PendingReason::Priority;
            continue;
        }
        s.move_to(id, p, now);
        tried = true;
        match crate::kept::fit_now(s, id, now, kept) {
            Ok(nodes) => {
                s.start(id, now, nodes, Pass::Main, false, out);
                return true;
            }
            Err(r) => {
                reason = r;
                // What it waits for in this partition is kept from its next ones too,
                // as Slurm's queue entry of the job for this partition keeps it.
                kept.keep_for(s, id, p, r);
            }
        }
    }
    s.move_to(id, home.expect("eligible somewhere"), now);
    s.set_reason(id, reason);
    tried
}

/// The reason of eligible job `id` of several partitions that a pass did not reach:
/// the limit of the last partition it would be tried in when that one refuses it, else
/// `Priority` (see [`start_now`]).
pub(crate) fn unreached_reason(s: &Scheduler, id: JobId, now: Time) -> PendingReason {
    s.tries(id)
        .and_then(|list| list.last().copied())
        .and_then(|p| refuses(s, &s.jobs[&id], p, now))
        .unwrap_or(PendingReason::Priority)
}
