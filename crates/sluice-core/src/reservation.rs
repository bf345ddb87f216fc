//! Advance reservations (Slurm's `scontrol create reservation`): capacity set aside for
//! some users or accounts over a window of time.
//!
//! A reservation holds resources of its nodes (whole nodes, or only GPUs for a
//! `TRES=gres/gpu:N` reservation) over `[start, end)`. The hold is a claim on the
//! availability profile (and on the backfill plan), so that every pass and every
//! planned start sees it as blocked capacity: no job without the reservation starts if
//! its time limit would run into it. A job submitted with `--reservation=NAME` is
//! scheduled by this module's own pass, inside the reservation: on its nodes, starting
//! at or after its start, ending by its end; with `FLEX` anywhere and at any time,
//! using the reservation's capacity as well as free capacity.
//!
//! The hold on a node is kept equal to "what the reservation sets aside minus what its
//! own running jobs use", clamped to what is free there (running jobs a reservation was
//! created over with `IGNORE_JOBS` keep their resources until they end). It is
//! recomputed whenever something it depends on changes: released before, and claimed
//! again after, every change that could collide with it.
//!
//! # Deviations from Slurm
//!
//! - A job in a (non-`FLEX`) reservation starts only if its time limit ends by the
//!   reservation's end. Slurm starts it and kills it at the end (plus `ResvOverRun`).
//! - `DAILY`/`WEEKLY` reservations block only their current window: the next one is
//!   seen once the current one has ended, as in Slurm.
//! - Jobs in reservations are started before the policy's own pass (they use capacity
//!   no other job may use, so the order matters only for `FLEX` jobs reaching outside).

use std::collections::BTreeMap;

use crate::cluster::NodeState;
use crate::decision::{Decision, Pass};
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::{JobState, NodeAlloc, PendingReason};
use crate::profile::{NodeFilter, Profile};
use crate::scheduler::Scheduler;
use crate::side_claims;
use crate::time::{Secs, Time};
use crate::tres::Resources;

mod usage;
pub(crate) use usage::job_gone;
pub use usage::ResvUsage;

/// Seconds in a day, the period of a `DAILY` reservation.
pub const DAY: Secs = 86_400;
/// Seconds in a week, the period of a `WEEKLY` reservation.
pub const WEEK: Secs = 7 * DAY;

/// A reservation's flags (Slurm's names; the ones Sluice implements).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResvFlags {
    /// `MAINT`: maintenance; its nodes show as `maint` and its use is not charged.
    pub maint: bool,
    /// `IGNORE_JOBS`: may be created over running jobs (they keep their resources).
    pub ignore_jobs: bool,
    /// `FLEX`: its jobs may also use resources outside it and start before it.
    pub flex: bool,
    /// `DAILY`: repeats every day.
    pub daily: bool,
    /// `WEEKLY`: repeats every week.
    pub weekly: bool,
    /// `PURGE_COMP[=time]`: deleted this many seconds after it has had jobs and they
    /// have all ended (Slurm's default: 300).
    pub purge_comp: Option<Secs>,
}

impl ResvFlags {
    /// The repeat period in seconds, if any.
    pub fn period(&self) -> Option<Secs> {
        if self.daily {
            Some(DAY)
        } else if self.weekly {
            Some(WEEK)
        } else {
            None
        }
    }
}

/// Who may use a reservation by one criterion (users or accounts), as Slurm's
/// `Users=a,b` (only those) or `Users=-a,-b` (all but those). Empty: no restriction by
/// this criterion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessList<T> {
    /// The names (uids for users, account names for accounts).
    pub names: Vec<T>,
    /// True for `-a,-b`: everyone but these.
    pub negated: bool,
}

impl<T: PartialEq> AccessList<T> {
    /// Whether the list is set.
    pub fn is_set(&self) -> bool {
        !self.names.is_empty()
    }

    /// Whether `x` passes this list; `None` when the list is not set.
    pub fn admits(&self, x: Option<&T>) -> Option<bool> {
        if !self.is_set() {
            return None;
        }
        let listed = x.is_some_and(|x| self.names.contains(x));
        Some(listed != self.negated)
    }
}

/// What to reserve, as `scontrol create reservation` describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReservationRequest {
    /// `ReservationName`.
    pub name: String,
    /// `StartTime` (seconds, caller's epoch).
    pub start: Time,
    /// `EndTime` (or start + `Duration`); after `start`.
    pub end: Time,
    /// `Nodes=`: these nodes, ascending. Empty: the core chooses.
    pub nodes: Vec<NodeId>,
    /// `NodeCnt=`: how many nodes the core chooses (when `nodes` is empty).
    pub node_count: Option<u32>,
    /// `TRES=gres/gpu:N`: only this many GPUs are reserved, on `nodes` if given, else on
    /// nodes the core chooses; the rest of those nodes stays public.
    pub gpus: Option<u32>,
    /// `PartitionName`: nodes are chosen from it, and its jobs run in it.
    pub partition: Option<PartitionId>,
    /// `Users=`.
    pub users: AccessList<u32>,
    /// `Accounts=`.
    pub accounts: AccessList<String>,
    /// `Flags=`.
    pub flags: ResvFlags,
}

/// A reservation the core holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Its name.
    pub name: String,
    /// Start of the current window (seconds).
    pub start: Time,
    /// End of the current window (seconds).
    pub end: Time,
    /// What is set aside on each node, ascending by node.
    pub held: Vec<(NodeId, Resources)>,
    /// GPUs asked for by `TRES=` (None for whole-node reservations).
    pub gpus: Option<u32>,
    /// `PartitionName`.
    pub partition: Option<PartitionId>,
    /// `Users=`.
    pub users: AccessList<u32>,
    /// `Accounts=`.
    pub accounts: AccessList<String>,
    /// `Flags=`.
    pub flags: ResvFlags,
    /// Capacity reserved and used so far.
    pub usage: ResvUsage,
    /// Whether a job has ever been submitted to it (for `PURGE_COMP`).
    pub had_jobs: bool,
    /// Since when all its jobs have ended (for `PURGE_COMP`).
    pub done_since: Option<Time>,
}

impl Reservation {
    /// Its nodes, ascending.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.held.iter().map(|(n, _)| *n)
    }

    /// Whether its window covers `t`.
    pub fn active_at(&self, t: Time) -> bool {
        self.start <= t && t < self.end
    }

    /// Whether `user` (uid) with account `account` may use it: Slurm's rule, both the
    /// user list and the account list (where set) must admit the job.
    pub fn admits(&self, user: u32, account: Option<&str>) -> bool {
        let by_user = self.users.admits(Some(&user));
        let by_account = self
            .accounts
            .admits(account.map(|a| a.to_string()).as_ref());
        match (by_user, by_account) {
            (None, None) => false,
            (u, a) => u.unwrap_or(true) && a.unwrap_or(true),
        }
    }

    /// Whether it holds `node` during any part of `[start, end)`.
    fn overlaps(&self, node: NodeId, start: Time, end: Time) -> bool {
        self.start < end && start < self.end && self.held.iter().any(|(n, _)| *n == node)
    }
}

/// Why a reservation request was refused (Slurm's messages). Nothing changes then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResvError {
    /// A reservation of that name exists.
    Duplicate,
    /// No reservation of that name.
    NotFound,
    /// End not after start, or the window already over.
    InvalidTime,
    /// Neither users nor accounts given.
    NoAccess,
    /// Nothing to reserve (no nodes, node count or GPUs).
    NoResources,
    /// The nodes run jobs during the window (without `IGNORE_JOBS`), or too few
    /// nodes/GPUs are free to choose from.
    NodesBusy,
    /// The nodes are in another reservation during the window (neither is `MAINT`).
    Overlap,
    /// A named node or the partition is unusable (unknown, or not in the partition).
    InvalidNodes,
    /// Jobs are running in it (it cannot be deleted).
    InUse,
    /// The user or account may not use it (a submission).
    AccessDenied,
}

impl std::fmt::Display for ResvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ResvError::Duplicate => "Duplicate reservation name",
            ResvError::NotFound => "Requested reservation is invalid",
            ResvError::InvalidTime => "Invalid time specified",
            ResvError::NoAccess => "Either Users/Groups and/or Accounts must be specified",
            ResvError::NoResources => {
                "CoreCnt, Nodes, NodeCnt, BurstBuffer, Licenses or Watts must be specified"
            }
            ResvError::NodesBusy => "Requested nodes are busy",
            ResvError::Overlap => "Requested reservation overlaps with another reservation",
            ResvError::InvalidNodes => "Invalid node name specified",
            ResvError::InUse => "Requested reservation is in use",
            ResvError::AccessDenied => "Access denied to requested reservation",
        })
    }
}

impl std::error::Error for ResvError {}

/// Something that happened to a reservation without a request, for the caller to
/// record (the controller deletes or rewrites its row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResvEvent {
    /// Its window ended and it does not repeat: it is gone.
    Ended(String),
    /// `PURGE_COMP`: its jobs are done; it is gone.
    Purged(String),
    /// `DAILY`/`WEEKLY`: its window moved forward (new start, new end).
    Repeated(String, Time, Time),
}

/// What holding `k` GPUs of `node` takes: `k` in the untyped `gpu` slot and the same
/// number spread over its typed slots in order (so that typed requests see them
/// taken too). Empty when the cluster has no `gpu` GRES.
pub fn gpu_share(cluster: &crate::cluster::Cluster, node: NodeId, k: u32) -> Resources {
    let cap = cluster.node(node).capacity;
    let mut r = Resources::default();
    if let Some(g) = cluster.gpu_slot() {
        r.gres[g] = k;
        let mut left = k;
        for c in cluster.gres.children(g) {
            let t = cap.gres[c].min(left);
            r.gres[c] = t;
            left -= t;
        }
    }
    r
}

/// One hold: `usage` claimed on `node` over `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Hold {
    node: NodeId,
    start: Time,
    end: Time,
    usage: Resources,
}

/// The reservations of a scheduler, their holds, and which jobs use which.
#[derive(Clone, Debug, Default)]
pub(crate) struct Book {
    resvs: BTreeMap<String, Reservation>,
    /// Jobs submitted with `--reservation`, by job.
    bound: BTreeMap<JobId, String>,
    /// Holds claimed on the scheduler's profile, by reservation.
    held_main: BTreeMap<String, Vec<Hold>>,
    events: Vec<ResvEvent>,
    /// Reservations that ended or were purged, with their final usage.
    finished: Vec<Reservation>,
}

impl Book {
    /// The reservation a job was submitted to, if any.
    pub(crate) fn of_job(&self, id: JobId) -> Option<&str> {
        self.bound.get(&id).map(String::as_str)
    }

    /// The next time a window starts or ends, or a `PURGE_COMP` reservation is due to
    /// go, after `after`.
    pub(crate) fn next_boundary(&self, after: Time) -> Option<Time> {
        self.resvs
            .values()
            .flat_map(|r| {
                let purge = r.done_since.zip(r.flags.purge_comp).map(|(d, p)| d + p);
                [Some(r.start), Some(r.end), purge]
            })
            .flatten()
            .filter(|&t| t > after)
            .min()
    }
}

/// Releases every hold from the profile (before a change that could collide with
/// them).
pub(crate) fn release_holds(s: &mut Scheduler) {
    let names: Vec<String> = s.resv.held_main.keys().cloned().collect();
    for name in names {
        release_one(s, &name);
    }
}

/// Releases the holds of reservation `name` from the profile.
pub(crate) fn release_one(s: &mut Scheduler, name: &str) {
    if let Some(holds) = s.resv.held_main.remove(name) {
        change_holds(&mut s.profile, &holds, false);
    }
}

/// Claims (`claim`) or releases `holds` on `profile`, the holds alike in time and
/// usage together: a reservation over a whole machine holds every node alike, and
/// the profile then changes each class of nodes once instead of node by node (see
/// [`Profile::claim_all`]). What lies before the origin is forgotten already.
fn change_holds(profile: &mut Profile, holds: &[Hold], claim: bool) {
    let origin = profile.origin();
    let mut groups: Vec<((Time, Time, Resources), Vec<NodeAlloc>)> = Vec::new();
    let mut index: rustc_hash::FxHashMap<(Time, Time, Resources), usize> =
        rustc_hash::FxHashMap::default();
    for h in holds.iter().filter(|h| h.end > origin) {
        let start = if claim { h.start } else { h.start.max(origin) };
        let key = (start, h.end, h.usage);
        let i = *index.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(NodeAlloc::new(h.node, 0, h.usage));
    }
    for ((start, end, _), nodes) in groups {
        if claim {
            profile.claim_all(&nodes, start, end);
        } else {
            profile.release_all(&nodes, start, end);
        }
    }
}

/// Claims every reservation's hold again (after [`release_holds`]).
pub(crate) fn claim_holds(s: &mut Scheduler, now: Time) {
    let names: Vec<String> = s.resv.resvs.keys().cloned().collect();
    for name in names {
        claim_one(s, &name, now);
    }
}

/// What `name`'s own running jobs use, by node, as (until, usage) pairs in job order:
/// found once per reservation, not once per node it holds.
fn own_use(s: &Scheduler, name: &str) -> BTreeMap<NodeId, Vec<(Time, Resources)>> {
    let mut by_node: BTreeMap<NodeId, Vec<(Time, Resources)>> = BTreeMap::new();
    for (id, _) in s.resv.bound.iter().filter(|(_, r)| r.as_str() == name) {
        let Some(job) = s.jobs.get(id).filter(|j| j.state == JobState::Running) else {
            continue;
        };
        let Some(alloc) = job.alloc.as_ref() else {
            continue;
        };
        // A job's first share on a node, as a look for the node finds it.
        let mut seen: Vec<NodeId> = Vec::new();
        for a in &alloc.nodes {
            if !seen.contains(&a.node) {
                seen.push(a.node);
                by_node
                    .entry(a.node)
                    .or_default()
                    .push((s.claim_end[&job.id()], a.usage));
            }
        }
    }
    by_node
}

fn saturating_minus(a: &Resources, b: &Resources) -> Resources {
    let mut gres = a.gres;
    for (g, o) in gres.iter_mut().zip(&b.gres) {
        *g = g.saturating_sub(*o);
    }
    Resources {
        cpus: a.cpus.saturating_sub(b.cpus),
        mem_mib: a.mem_mib.saturating_sub(b.mem_mib),
        gres,
    }
}

/// The holds `resv` needs on `profile` from `now` on: per node and per step of time,
/// what it sets aside minus what its own jobs use, clamped to what is free.
fn holds_on(
    profile: &Profile,
    resv: &Reservation,
    own: &dyn Fn(NodeId) -> Vec<(Time, Resources)>,
    now: Time,
) -> Vec<Hold> {
    let (a, b) = (resv.start.max(now), resv.end);
    let mut out = Vec::new();
    if a >= b {
        return out;
    }
    for &(node, set_aside) in &resv.held {
        let uses = own(node);
        let mut cuts = profile.changes_between(node, a, b);
        cuts.extend(uses.iter().map(|u| u.0).filter(|&t| t > a && t < b));
        cuts.push(a);
        cuts.push(b);
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (t1, t2) = (w[0], w[1]);
            let mut want = set_aside;
            for (until, u) in &uses {
                if *until > t1 {
                    want = saturating_minus(&want, u);
                }
            }
            let take = want.min(&profile.free_at(node, t1));
            if take.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some(Hold {
                    node: n,
                    end,
                    usage,
                    ..
                }) if *n == node && *end == t1 && *usage == take => *end = t2,
                _ => out.push(Hold {
                    node,
                    start: t1,
                    end: t2,
                    usage: take,
                }),
            }
        }
    }
    out
}

fn claim_one(s: &mut Scheduler, name: &str, now: Time) {
    let Some(resv) = s.resv.resvs.get(name) else {
        return;
    };
    let uses = own_use(s, name);
    let own = |n: NodeId| uses.get(&n).cloned().unwrap_or_default();
    let main = holds_on(&s.profile, resv, &own, now);
    change_holds(&mut s.profile, &main, true);
    s.resv.held_main.insert(name.to_string(), main);
}

/// Holds claimed on a backfill plan for the length of one backfill pass.
pub(crate) struct PlanHolds(Vec<Hold>);

/// Claims every reservation's hold on the backfill `plan` (taken out of `s`), as on
/// the profile: the pass then plans no job into a reservation it may not use.
pub(crate) fn claim_on_plan(s: &Scheduler, plan: &mut Profile, now: Time) -> PlanHolds {
    let mut all = Vec::new();
    for (name, resv) in &s.resv.resvs {
        let uses = own_use(s, name);
        let own = |n: NodeId| uses.get(&n).cloned().unwrap_or_default();
        let holds = holds_on(plan, resv, &own, now);
        change_holds(plan, &holds, true);
        all.extend(holds);
    }
    PlanHolds(all)
}

/// Releases what [`claim_on_plan`] claimed.
pub(crate) fn release_on_plan(plan: &mut Profile, holds: PlanHolds) {
    change_holds(plan, &holds.0, false);
}

impl Scheduler {
    /// The reservations, by name.
    pub fn reservations(&self) -> impl Iterator<Item = &Reservation> {
        self.resv.resvs.values()
    }

    /// A reservation by name.
    pub fn reservation(&self, name: &str) -> Option<&Reservation> {
        self.resv.resvs.get(name)
    }

    /// The reservation a job was submitted to (`--reservation`), if any.
    pub fn job_reservation(&self, id: JobId) -> Option<&str> {
        self.resv.of_job(id)
    }

    /// Reservations that ended or were purged since the last call, with their final
    /// usage (for reports), oldest first.
    pub fn take_finished_reservations(&mut self) -> Vec<Reservation> {
        std::mem::take(&mut self.resv.finished)
    }

    /// Reservation changes since the last call (ends, purges, repeats), oldest first.
    pub fn take_reservation_events(&mut self) -> Vec<ResvEvent> {
        std::mem::take(&mut self.resv.events)
    }

    /// Checks a reservation request at `now` and resolves it (chooses nodes for
    /// `NodeCnt`/`TRES`), changing nothing. Errors: [`ResvError`] in Slurm's words.
    pub fn plan_reservation(
        &self,
        req: &ReservationRequest,
        now: Time,
    ) -> Result<Reservation, ResvError> {
        if self.resv.resvs.contains_key(&req.name) {
            return Err(ResvError::Duplicate);
        }
        self.resolve(req, now, None)
    }

    fn resolve(
        &self,
        req: &ReservationRequest,
        now: Time,
        replacing: Option<&str>,
    ) -> Result<Reservation, ResvError> {
        if req.end <= req.start || req.end <= now {
            return Err(ResvError::InvalidTime);
        }
        if !req.users.is_set() && !req.accounts.is_set() {
            return Err(ResvError::NoAccess);
        }
        if req.nodes.is_empty() && req.node_count.is_none() && req.gpus.is_none() {
            return Err(ResvError::NoResources);
        }
        let pool: Vec<NodeId> = match req.partition {
            Some(p) => self
                .cluster
                .partitions
                .get(p.index())
                .ok_or(ResvError::InvalidNodes)?
                .nodes
                .clone(),
            None => (0..self.cluster.nodes.len() as u32).map(NodeId).collect(),
        };
        if req
            .nodes
            .iter()
            .any(|n| n.index() >= self.cluster.nodes.len() || !pool.contains(n))
        {
            return Err(ResvError::InvalidNodes);
        }
        let (start, end) = (req.start, req.end);
        // Slurm lets a reservation overlap another only when one of them is MAINT.
        let other_resv = |n: NodeId| {
            !req.flags.maint
                && self
                    .resv
                    .resvs
                    .values()
                    .filter(|r| Some(r.name.as_str()) != replacing && !r.flags.maint)
                    .any(|r| r.overlaps(n, start, end))
        };
        // What running jobs (not its own) use on a node during the window.
        let own = |id: JobId| replacing.is_some() && self.resv.of_job(id) == replacing;
        let busy = |n: NodeId| -> Resources {
            self.jobs
                .values()
                .filter(|j| j.state == JobState::Running && self.claim_end[&j.id()] > start)
                .filter(|j| !own(j.id()))
                .filter_map(|j| j.alloc.as_ref()?.nodes.iter().find(|a| a.node == n))
                .fold(Resources::default(), |acc, a| acc.plus(&a.usage))
        };
        let gpu = self.cluster.gpu_slot();
        let gpu_share = |n: NodeId, k: u32| gpu_share(&self.cluster, n, k);
        let ignore = req.flags.ignore_jobs;
        let mut held: Vec<(NodeId, Resources)> = Vec::new();
        if let Some(want) = req.gpus {
            let g = gpu.ok_or(ResvError::NoResources)?;
            let cands: Vec<NodeId> = if req.nodes.is_empty() {
                pool.clone()
            } else {
                req.nodes.clone()
            };
            let mut left = want;
            for n in cands {
                if left == 0 {
                    break;
                }
                let node = self.cluster.node(n);
                if node.state != NodeState::Up || other_resv(n) {
                    continue;
                }
                let cap = node.capacity.gres[g];
                let free = if ignore {
                    cap
                } else {
                    cap.saturating_sub(busy(n).gres[g])
                };
                let k = free.min(left);
                if k > 0 {
                    held.push((n, gpu_share(n, k)));
                    left -= k;
                }
            }
            if left > 0 || want == 0 {
                return Err(ResvError::NodesBusy);
            }
        } else if !req.nodes.is_empty() {
            for &n in &req.nodes {
                if other_resv(n) {
                    return Err(ResvError::Overlap);
                }
                if !ignore && !busy(n).is_empty() {
                    return Err(ResvError::NodesBusy);
                }
                held.push((n, self.cluster.node(n).capacity));
            }
        } else {
            let want = req.node_count.unwrap_or(0) as usize;
            for n in pool {
                if held.len() == want {
                    break;
                }
                let node = self.cluster.node(n);
                if node.state != NodeState::Up || other_resv(n) || (!ignore && !busy(n).is_empty())
                {
                    continue;
                }
                held.push((n, node.capacity));
            }
            if held.len() < want || want == 0 {
                return Err(ResvError::NodesBusy);
            }
        }
        held.sort_by_key(|(n, _)| *n);
        Ok(Reservation {
            name: req.name.clone(),
            start,
            end,
            held,
            gpus: req.gpus,
            partition: req.partition,
            users: req.users.clone(),
            accounts: req.accounts.clone(),
            flags: req.flags,
            usage: ResvUsage::default(),
            had_jobs: false,
            done_since: None,
        })
    }

    /// Takes a reservation planned by [`Scheduler::plan_reservation`] (or restored
    /// after a restart) and claims its capacity. A reservation of the same name is
    /// replaced.
    pub fn add_reservation(&mut self, mut resv: Reservation, now: Time) {
        self.generation += 1;
        self.profile.advance(now);
        release_holds(self);
        resv.usage.since = resv.usage.since.max(now);
        self.resv.resvs.insert(resv.name.clone(), resv);
        claim_holds(self, now);
        self.backfill.dirty = true;
    }

    /// Checks a change to `name` (the request as it would be after the change) and
    /// resolves it again, its own holds not counting as busy; changes nothing.
    pub fn plan_update(
        &self,
        name: &str,
        req: &ReservationRequest,
        now: Time,
    ) -> Result<Reservation, ResvError> {
        let old = self.resv.resvs.get(name).ok_or(ResvError::NotFound)?;
        let mut new = self.resolve(req, now, Some(name))?;
        if old.held == new.held || req.flags.ignore_jobs {
            new.usage = old.usage.clone();
            new.had_jobs = old.had_jobs;
            return Ok(new);
        }
        new.usage = old.usage.clone();
        new.had_jobs = old.had_jobs;
        Ok(new)
    }

    /// Deletes a reservation. Errors: no such reservation, or jobs are running in it
    /// (Slurm's `Reservation is in use`); nothing changes then. Its pending jobs stay
    /// queued and never start (reason `ReqNodeNotAvail`), as in Slurm.
    pub fn delete_reservation(&mut self, name: &str, now: Time) -> Result<(), ResvError> {
        self.generation += 1;
        if !self.resv.resvs.contains_key(name) {
            return Err(ResvError::NotFound);
        }
        let running = self.resv.bound.iter().any(|(id, r)| {
            r == name
                && self
                    .jobs
                    .get(id)
                    .is_some_and(|j| j.state == JobState::Running)
        });
        if running {
            return Err(ResvError::InUse);
        }
        self.profile.advance(now);
        release_one(self, name);
        self.resv.resvs.remove(name);
        self.backfill.dirty = true;
        Ok(())
    }

    /// Whether a job of `user` (uid) under `account` may be submitted to `name`.
    /// Errors: no such reservation (`Requested reservation is invalid`), or it does
    /// not admit them (`Access denied to requested reservation`).
    pub fn check_reservation(
        &self,
        name: &str,
        user: u32,
        account: Option<&str>,
    ) -> Result<(), ResvError> {
        let r = self.resv.resvs.get(name).ok_or(ResvError::NotFound)?;
        if r.admits(user, account) {
            Ok(())
        } else {
            Err(ResvError::AccessDenied)
        }
    }

    /// Binds a queued (or restored running) job to reservation `name`, after
    /// [`Scheduler::submit`] or [`Scheduler::restore_running`]. The caller checked
    /// access with [`Scheduler::check_reservation`]. Returns false when the job or the
    /// reservation is unknown (nothing changes then).
    pub fn set_job_reservation(&mut self, id: JobId, name: &str, now: Time) -> bool {
        self.generation += 1;
        if !self.jobs.contains_key(&id) || !self.resv.resvs.contains_key(name) {
            return false;
        }
        self.resv.bound.insert(id, name.to_string());
        self.resv.resvs.get_mut(name).expect("checked").had_jobs = true;
        if self.jobs[&id].state == JobState::Running {
            // Its use now comes out of the reservation's hold.
            self.profile.advance(now);
            release_one(self, name);
            claim_one(self, name, now);
        }
        self.backfill.dirty = true;
        true
    }
}

/// Before a pass: accounts for the time since the last one, ends or repeats windows
/// that are over, purges `PURGE_COMP` reservations whose jobs are done, claims the
/// holds again, and starts the jobs of reservations that fit now.
pub(crate) fn pass(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    usage::account(s, now);
    let mut gone = Vec::new();
    for r in s.resv.resvs.values_mut() {
        if r.end <= now {
            match r.flags.period() {
                Some(p) => {
                    let k = (now - r.end) / p + 1;
                    r.start += k * p;
                    r.end += k * p;
                    r.usage.since = r.usage.since.max(r.start.min(now));
                    s.resv
                        .events
                        .push(ResvEvent::Repeated(r.name.clone(), r.start, r.end));
                }
                None => gone.push((r.name.clone(), ResvEvent::Ended(r.name.clone()))),
            }
        }
    }
    let live: Vec<bool> = s
        .resv
        .resvs
        .keys()
        .map(|name| {
            s.resv
                .bound
                .iter()
                .any(|(id, r)| r == name && s.jobs.contains_key(id))
        })
        .collect();
    for (r, live) in s.resv.resvs.values_mut().zip(live) {
        let Some(delay) = r.flags.purge_comp else {
            continue;
        };
        if !r.had_jobs || live {
            r.done_since = None;
            continue;
        }
        let since = *r.done_since.get_or_insert(now);
        if now >= since + delay {
            gone.push((r.name.clone(), ResvEvent::Purged(r.name.clone())));
        }
    }
    for (name, ev) in gone {
        if let Some(r) = s.resv.resvs.remove(&name) {
            s.resv.events.push(ev);
            s.resv.finished.push(r);
        }
    }
    s.resv.bound.retain(|id, _| s.jobs.contains_key(id));
    claim_holds(s, now);
    start_reserved(s, now, out);
}

/// Starts, in queue order, the pending jobs of reservations that fit now, and gives
/// the others their reason.
fn start_reserved(s: &mut Scheduler, now: Time, out: &mut Vec<Decision>) {
    if s.resv.bound.is_empty() {
        return;
    }
    let queued: Vec<JobId> = s
        .queue
        .values()
        .copied()
        .filter(|id| s.resv.bound.contains_key(id))
        .collect();
    for id in queued {
        if !s.eligible_as_job(id, now) {
            continue;
        }
        let name = s.resv.bound[&id].clone();
        let Some(resv) = s.resv.resvs.get(&name) else {
            // Its reservation is gone: it never starts (as in Slurm).
            s.set_reason(id, PendingReason::ReqNodeNotAvail);
            continue;
        };
        let flex = resv.flags.flex;
        let (rs, re) = (resv.start, resv.end);
        let limit = s.jobs[&id].spec.time_limit.max(1);
        if !flex && now < rs {
            s.set_reason(id, PendingReason::Reservation);
            continue;
        }
        if !flex && now + limit > re {
            // It would run past the end: wait for the next window, if any.
            s.set_reason(id, PendingReason::Reservation);
            continue;
        }
        let nodes: Vec<NodeId> = resv.nodes().collect();
        release_one(s, &name);
        let found = fit_in(s, id, &nodes, flex, now)
            .and_then(|a| side_claims::place(s, id, a, now, None, false));
        match found {
            Some(allocs) => {
                s.start(id, now, allocs, Pass::Main, false, out);
            }
            None => s.set_reason(id, PendingReason::Resources),
        }
        claim_one(s, &name, now);
    }
}

/// Where job `id` fits now for its whole time limit, on `nodes` only unless `flex`.
fn fit_in(
    s: &Scheduler,
    id: JobId,
    nodes: &[NodeId],
    flex: bool,
    now: Time,
) -> Option<Vec<NodeAlloc>> {
    let job = &s.jobs[&id];
    let mut req = job.spec.request.clone();
    if !flex {
        let mut exclude: Vec<NodeId> = (0..s.cluster.nodes.len() as u32)
            .map(NodeId)
            .filter(|n| nodes.binary_search(n).is_err())
            .collect();
        exclude.extend(req.exclude.iter().copied());
        exclude.sort_unstable();
        exclude.dedup();
        req.exclude = exclude;
    }
    let filter = NodeFilter {
        partition: job.spec.partition,
        features_any: req.features_any,
    };
    s.profile
        .fits_now(&s.cluster, &req, filter, job.spec.time_limit.max(1), now)
}

/// After a pass: a job left waiting for `Resources` that would fit now but for the
/// reservations gets Slurm's reason for that, `ReqNodeNotAvail, May be reserved for
/// other job`.
pub(crate) fn explain(s: &mut Scheduler, now: Time) {
    if s.resv.held_main.values().all(Vec::is_empty) {
        return;
    }
    let waiting: Vec<JobId> = s
        .waiting_for_resources()
        .into_iter()
        .filter(|id| !s.resv.bound.contains_key(id))
        .collect();
    if waiting.is_empty() {
        return;
    }
    release_holds(s);
    let held: Vec<JobId> = waiting
        .into_iter()
        .filter(|&id| s.fit_now(id, now).is_some())
        .collect();
    claim_holds(s, now);
    for id in held {
        s.set_reason(id, PendingReason::ReservedForOther);
    }
}
