//! The scheduler: the core's state machine.
//!
//! Callers feed it events and the current time and carry out the decisions it returns:
//!
//! ```text
//! submit(spec, now) ─┐
//! job_ended(id, now) ─┼─► schedule(now) ─► [Decision::Start ...]
//! cancel_pending(id) ┘        ▲
//!                next_wakeup() ┘ (call schedule again at that time at the latest)
//! ```
//!
//! It never reads a clock and never does I/O, so the simulator and the controller get
//! the same decisions from the same inputs.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::cluster::{Cluster, NodeState, Partition, PartitionState};
use crate::decision::{Decision, Pass};
use crate::free_now::FreeNow;
use crate::gpus::GpuBook;
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::{Allocation, Job, JobSpec, JobState, NodeAlloc, PendingReason};
use crate::limits::{self, check::JobView, usage::Usage, AccountLimits};
use crate::observe::{PassObserver, Phase, PhaseFigures, Unobserved};
use crate::partition_policy::{NotAllowed, OverSubscribe};
use crate::placement::{Placement, PlacementKey};
use crate::policy::{backfill, conservative, easy, fcfs, Policy};
use crate::profile::{NodeFilter, Profile};
use crate::reservation;
use crate::select::{choose_listed, max_tasks_on, node_allocs, Candidate, GpuReserve};
use crate::side_claims;
use crate::time::{Secs, Time, MAX_TIME, MAX_TIME_LIMIT, NEVER};

/// Why a submission was refused. Nothing changes when one is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// A live job already has this id.
    DuplicateId(JobId),
    /// The partition id is not in the cluster.
    NoSuchPartition(PartitionId),
    /// The partition is DRAIN or INACTIVE and takes no new jobs.
    PartitionClosed(PartitionId),
    /// No set of the partition's nodes could ever hold the request, even empty
    /// (Slurm: "Requested node configuration is not available").
    NodeConfigUnavailable,
    /// Time limit below one second, or no tasks.
    InvalidRequest(&'static str),
    /// An accounting limit refuses the job (a submit limit, or a limit it could never
    /// run within under a `DenyOnLimit` QOS): Slurm's reason name for the limit.
    AccountingPolicy(&'static str),
    /// [`Scheduler::update_pending`]: no pending job has this id.
    NotPending(JobId),
}

impl std::fmt::Display for SubmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubmitError::DuplicateId(id) => write!(f, "job id {id} is already in use"),
            SubmitError::NoSuchPartition(_) => write!(f, "Invalid partition name specified"),
            SubmitError::PartitionClosed(_) => {
                write!(f, "Required partition not available (inactive or drain)")
            }
            SubmitError::NodeConfigUnavailable => {
                write!(f, "Requested node configuration is not available")
            }
            SubmitError::InvalidRequest(why) => write!(f, "{why}"),
            SubmitError::AccountingPolicy(_) => write!(
                f,
                "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
            ),
            SubmitError::NotPending(_) => write!(f, "Job is no longer pending execution"),
        }
    }
}

impl std::error::Error for SubmitError {}

/// Order of pending jobs: higher partition tier first, then higher priority, then
/// submission order. The textbook policies leave tier and priority at zero, which
/// makes it plain submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct QueueKey {
    tier: Reverse<u16>,
    priority: Reverse<u32>,
    pub(crate) seq: u64,
}

/// Nodes of one configuration in a partition.
#[derive(Clone, Debug)]
pub(crate) struct NodeConfig {
    capacity: crate::tres::Resources,
    features: u64,
    /// Processors kept for GPU jobs.
    reserve: GpuReserve,
    count: u32,
}

/// When a running job's resources become available to others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndSemantics {
    /// The controller's rule: a running job holds its resources until
    /// [`Scheduler::job_ended`] reports it gone, even past its expected end (a job being
    /// killed at its limit still holds its nodes).
    HoldUntilReported,
    /// The simulator's rule (the textbook semantics of trace replay): a running job's
    /// resources are free from its expected end on, even if its termination is reported
    /// later in the same instant. Only correct when jobs never run past their expected
    /// end, as in a replay that kills jobs at their time limit.
    FreeAtExpectedEnd,
}

/// The scheduling core: cluster, jobs, queue, availability profile and policy.
#[derive(Clone, Debug)]
pub struct Scheduler {
    pub(crate) cluster: Cluster,
    pub(crate) policy: Policy,
    pub(crate) jobs: BTreeMap<JobId, Arc<Job>>,
    pub(crate) queue: BTreeMap<QueueKey, JobId>,
    pub(crate) keys: BTreeMap<JobId, QueueKey>,
    /// Running jobs' claims, plus reservations under conservative backfilling.
    pub(crate) profile: Profile,
    pub(crate) free_now: FreeNow,
    /// Distinct node configurations of each partition (all its nodes, any state).
    pub(crate) node_configs: Vec<Vec<NodeConfig>>,
    /// Running jobs by the end of their claim on the profile.
    pub(crate) claims_end: BTreeSet<(Time, JobId)>,
    pub(crate) claim_end: BTreeMap<JobId, Time>,
    /// Under [`EndSemantics::FreeAtExpectedEnd`]: running jobs whose expected end has
    /// come, whose resources already count as free although their end is not reported.
    pub(crate) expired: BTreeSet<JobId>,
    /// Running jobs being ended (cancelled, timed out, preempted, requeued) whose
    /// processes are not all gone yet (Slurm's `COMPLETING`): they hold their resources
    /// until [`Scheduler::job_ended`], and are nobody's preemption victims.
    pub(crate) ending: BTreeSet<JobId>,
    pub(crate) end_semantics: EndSemantics,
    /// The `now` of the last pass.
    pub(crate) last_pass: Time,
    /// Passes run so far (see [`Scheduler::passes`]).
    passes: u64,
    /// Pending jobs by the times at which their prospects change without any event:
    /// their `--begin` time and the lapse of their `--switches` wait. For wake-ups.
    pub(crate) begins: BTreeSet<(Time, JobId)>,
    pub(crate) next_seq: u64,
    /// Jobs queued since the last pass, so that each gets a pending reason even when the
    /// pass stops before reaching it.
    fresh: Vec<JobId>,
    pub(crate) conservative: conservative::State,
    pub(crate) backfill: backfill::State,
    /// Advance reservations (see [`crate::reservation`]).
    pub(crate) resv: reservation::Book,
    /// The accounting database's limits, and what every association and QOS uses.
    pub(crate) accounts: AccountLimits,
    pub(crate) usage: Usage,
    /// Preemptions under way (see [`crate::preempt`]).
    pub(crate) preempt: crate::preempt::State,
    /// Jobs suspended by preemption (see [`crate::gang`]).
    pub(crate) gang: crate::gang::State,
    /// Time-sliced partitions' jobs (see [`crate::timeslice`]).
    pub(crate) slices: crate::timeslice::State,
    /// Cohorts and what their members borrow (see [`crate::borrow`]).
    pub(crate) borrow: crate::borrow::State,
    /// Bumped at every node state change.
    pub(crate) node_epoch: u64,
    /// Nodes DOWN only until their agent first answers this controller (see
    /// [`Scheduler::await_node`]).
    pub(crate) awaited: BTreeSet<NodeId>,
    /// Last answers of [`crate::unavailable::reason`].
    pub(crate) unavailable: crate::unavailable::Memo,
    /// Bumped by every call that may change the state (see [`Scheduler::generation`]).
    pub(crate) generation: u64,
    /// Which GPUs and shards every running job holds (see [`crate::gpus`]).
    pub(crate) gpus: GpuBook,
    /// Heterogeneous jobs' groups (see [`crate::het`]).
    pub(crate) het: crate::het::Book,
    /// Pending jobs whose reason or planned start was written since the last pass
    /// began or ended, with the values they had before the first write.
    touched: BTreeMap<JobId, (PendingReason, Option<Time>)>,
    /// Pending jobs whose reason or planned start changed since
    /// [`Scheduler::take_changed`] (see there).
    changed: BTreeSet<JobId>,
    /// Pending jobs without a reason, and those waiting for their `--begin` time by
    /// that time, as of the last pass (the jobs written to since are in `touched`):
    /// the jobs a pass may leave unexplained (see `explain_fresh`).
    reason_none: BTreeSet<JobId>,
    waiting_begin: BTreeSet<(Time, JobId)>,
    /// Pending jobs waiting for `Resources`, likewise (see [`crate::reservation`]).
    reason_resources: BTreeSet<JobId>,
    /// Jobs that may run in several partitions (see [`crate::partitions`]).
    pub(crate) choices: BTreeMap<JobId, Vec<PartitionId>>,
    /// Pending jobs whole nodes only because their partition says so
    /// (`OverSubscribe=EXCLUSIVE`, `ExclusiveUser=YES`), not by their own `--exclusive`:
    /// moved to another partition, they follow that one's rule.
    pub(crate) exclusive_by_partition: BTreeSet<JobId>,
}

impl Scheduler {
    /// A scheduler for `cluster` running `policy`, with no jobs, for the live controller
    /// ([`EndSemantics::HoldUntilReported`]).
    pub fn new(cluster: Cluster, policy: Policy) -> Self {
        Self::with_end_semantics(cluster, policy, EndSemantics::HoldUntilReported)
    }

    /// A scheduler with the given rule for when running jobs' resources free up.
    pub fn with_end_semantics(
        cluster: Cluster,
        policy: Policy,
        end_semantics: EndSemantics,
    ) -> Self {
        let profile = Profile::new(&cluster);
        let free_now = FreeNow::new(&cluster);
        let gpus = GpuBook::new(&cluster);
        let mut s = Scheduler {
            cluster,
            policy,
            jobs: BTreeMap::new(),
            queue: BTreeMap::new(),
            keys: BTreeMap::new(),
            profile,
            free_now,
            node_configs: Vec::new(),
            claims_end: BTreeSet::new(),
            claim_end: BTreeMap::new(),
            expired: BTreeSet::new(),
            ending: BTreeSet::new(),
            end_semantics,
            last_pass: -NEVER,
            passes: 0,
            begins: BTreeSet::new(),
            next_seq: 0,
            fresh: Vec::new(),
            conservative: Default::default(),
            backfill: Default::default(),
            resv: Default::default(),
            accounts: AccountLimits::default(),
            usage: Usage::default(),
            preempt: Default::default(),
            gang: Default::default(),
            slices: Default::default(),
            borrow: Default::default(),
            node_epoch: 0,
            awaited: BTreeSet::new(),
            unavailable: Default::default(),
            generation: 0,
            gpus,
            het: Default::default(),
            touched: BTreeMap::new(),
            changed: BTreeSet::new(),
            reason_none: BTreeSet::new(),
            waiting_begin: BTreeSet::new(),
            reason_resources: BTreeSet::new(),
            choices: BTreeMap::new(),
            exclusive_by_partition: BTreeSet::new(),
        };
        if let Policy::Backfill(params) = &s.policy {
            let params = params.clone();
            s.backfill.enable(&s.cluster, &params);
        }
        s.node_configs = (0..s.cluster.partitions.len())
            .map(|i| node_configs_of(&s.cluster, &s.cluster.partitions[i].nodes))
            .collect();
        s
    }

    /// The cluster being scheduled.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The availability profile (running jobs' claims and, under conservative
    /// backfilling, reservations).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// A job the core is tracking (pending or running).
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(&id).map(|j| &**j)
    }

    /// All pending and running jobs, by id.
    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values().map(|j| &**j)
    }

    /// Pending jobs in the order the policy considers them.
    pub fn pending(&self) -> impl Iterator<Item = &Job> {
        self.queue.values().map(|id| &*self.jobs[id])
    }

    /// A number that changes whenever the state may have changed: every call taking
    /// `&mut self` bumps it, except a priority set to the value it had and a pass
    /// ([`Scheduler::schedule`]) that starts, preempts, plans and explains nothing new.
    /// A forecast made from the state (a [`crate::explain::Forecast`]) holds as long as
    /// the generation does, until the time of its next step (the passes it skips change
    /// nothing: nothing ends, begins or becomes due before then).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of pending jobs.
    pub fn pending_count(&self) -> usize {
        self.queue.len()
    }

    /// Number of running jobs.
    pub fn running_count(&self) -> usize {
        self.jobs.len() - self.queue.len()
    }

    /// Replaces partition `id`'s settings (`scontrol update PartitionName=...`): its
    /// state, limits and members. Running jobs are not touched; queued jobs are judged
    /// by the new settings from the next pass (a job over a new `MaxTime` waits with
    /// `PartitionTimeLimit`, a DOWN partition's jobs with `PartitionDown`). Nodes that
    /// join or leave take the partition's work from then on.
    pub fn set_partition(&mut self, id: PartitionId, partition: Partition) {
        let before = std::mem::replace(&mut self.cluster.partitions[id.index()], partition);
        self.generation += 1;
        let after = &self.cluster.partitions[id.index()].nodes;
        if before.nodes != *after {
            self.node_configs[id.index()] = node_configs_of(&self.cluster, after);
            let mut touched: Vec<NodeId> = before.nodes.iter().chain(after).copied().collect();
            touched.sort();
            touched.dedup();
            for n in touched {
                self.profile.refresh_node(&self.cluster, n);
                self.backfill.refresh_node(&self.cluster, n);
            }
            self.free_now.set_members(&self.cluster);
        }
        self.backfill.dirty = true;
        self.node_epoch += 1;
    }

    /// Sets a node's state. Running jobs are not touched (the caller decides their fate);
    /// a DOWN or DRAIN node receives no new work.
    pub fn set_node_state(&mut self, node: NodeId, state: NodeState) {
        self.generation += 1;
        self.awaited.remove(&node);
        self.cluster.nodes[node.index()].state = state;
        self.profile.refresh_node(&self.cluster, node);
        self.backfill.refresh_node(&self.cluster, node);
        self.free_now.recount(&self.cluster);
        self.backfill.dirty = true;
        self.node_epoch += 1;
    }

    /// Node `node` takes no new work until its agent answers (a controller that has just
    /// started: the agents still know the one before). Unlike a DOWN node, it still
    /// counts as up for waiting jobs' reasons: a job waits for `Resources`, its
    /// `BeginTime` and so on, not for nodes that are down, for the few seconds agents
    /// take to come back (Slurm gives such a node up only once `SlurmdTimeout` has
    /// passed; the caller, which has the clock, then sets it DOWN). Any later
    /// [`Scheduler::set_node_state`] ends the wait.
    pub fn await_node(&mut self, node: NodeId) {
        self.set_node_state(node, NodeState::Down);
        self.awaited.insert(node);
    }

    /// Whether `partition` has a node that is up, or awaited (see
    /// [`Scheduler::await_node`]).
    pub(crate) fn has_usable_node(&self, partition: PartitionId) -> bool {
        // (Nodes are awaited only for a while after a start: usually none is.)
        self.free_now.up_nodes(partition) > 0
            || self.awaited.iter().any(|n| {
                self.cluster
                    .partition(partition)
                    .nodes
                    .binary_search(n)
                    .is_ok()
            })
    }

    /// Node `n` as a candidate for `req` when it is idle: all its capacity free for
    /// ever.
    pub(crate) fn idle_candidate(&self, req: &crate::job::JobRequest, n: NodeId) -> Candidate {
        let node = self.cluster.node(n);
        Candidate {
            node: n,
            tasks: max_tasks_on(
                req,
                &node.capacity,
                &node.capacity,
                GpuReserve::of(&self.cluster, n),
            ),
            free_cpus: node.capacity.cpus,
            weight: node.weight,
            rank: self.cluster.placement_key(n, &node.capacity),
            switch: self.cluster.leaf_switch(n),
        }
    }

    /// Whether some set of `partition`'s nodes could hold `req` if they were all idle
    /// (Slurm: "Requested node configuration is not available" when not). Judged on the
    /// partition's distinct node configurations, so it costs the same on 10 or 10,000
    /// identical nodes.
    pub(crate) fn could_ever_fit(
        &self,
        partition: PartitionId,
        req: &crate::job::JobRequest,
    ) -> bool {
        if req.lists_nodes() {
            // Judged on the nodes themselves, all idle.
            let candidates: Vec<Candidate> = self.cluster.partitions[partition.index()]
                .nodes
                .iter()
                .map(|&n| (n, self.cluster.node(n)))
                .filter(|(n, node)| {
                    (req.features_any == 0 || node.features & req.features_any != 0)
                        && req.exclude.binary_search(n).is_err()
                })
                .map(|(n, _)| self.idle_candidate(req, n))
                .collect();
            return choose_listed(
                req,
                &candidates,
                MAX_TIME,
                self.cluster.blocks.as_ref(),
                self.cluster.placement,
            )
            .is_some();
        }
        let groups = &self.node_configs[partition.index()];
        let mut cands: Vec<(u32, u32)> = groups
            .iter()
            .filter(|g| req.features_any == 0 || g.features & req.features_any != 0)
            .map(|g| {
                (
                    max_tasks_on(req, &g.capacity, &g.capacity, g.reserve),
                    g.count,
                )
            })
            .filter(|(k, _)| *k > 0)
            .collect();
        if req.min_nodes <= 1 && cands.iter().any(|(k, _)| *k >= req.ntasks) {
            return true;
        }
        if req.max_nodes == 1 {
            return false;
        }
        cands.sort_by_key(|(k, _)| std::cmp::Reverse(*k));
        let (mut nodes, mut tasks) = (0u64, 0u64);
        let min_nodes = req.min_nodes.max(1) as u64;
        for (k, count) in cands {
            for _ in 0..count {
                if nodes >= min_nodes && tasks >= req.ntasks as u64 {
                    break;
                }
                nodes += 1;
                tasks += k as u64;
            }
        }
        nodes >= min_nodes
            && tasks >= req.ntasks as u64
            && nodes <= req.max_nodes as u64
            && req.ntasks as u64 >= nodes
    }

    /// Checks a job as [`Scheduler::submit`] would, without queueing it: the caller can
    /// make the job durable first and queue it after, knowing it will be accepted.
    pub fn check(&self, spec: &JobSpec) -> Result<(), SubmitError> {
        if self.jobs.contains_key(&spec.id) {
            return Err(SubmitError::DuplicateId(spec.id));
        }
        self.check_open(spec)?;
        self.check_shape(spec)
    }

    /// Whether the job's partition takes new jobs (it is not DRAIN or INACTIVE).
    fn check_open(&self, spec: &JobSpec) -> Result<(), SubmitError> {
        match self.cluster.partitions.get(spec.partition.index()) {
            Some(part) if !part.takes_new_jobs() => {
                Err(SubmitError::PartitionClosed(spec.partition))
            }
            _ => Ok(()),
        }
    }

    /// [`Scheduler::check`] for a job queued before: the same but for the id and
    /// whether the partition takes new jobs (one closed since keeps the jobs it had).
    pub fn check_readmit(&self, spec: &JobSpec) -> Result<(), SubmitError> {
        self.check_shape(spec)
    }

    /// [`Scheduler::check`] but for the id and whether the partition takes new jobs:
    /// partition, time limit, shape and limits.
    fn check_shape(&self, spec: &JobSpec) -> Result<(), SubmitError> {
        if self
            .cluster
            .partitions
            .get(spec.partition.index())
            .is_none()
        {
            return Err(SubmitError::NoSuchPartition(spec.partition));
        }
        if spec.time_limit > MAX_TIME_LIMIT {
            return Err(SubmitError::InvalidRequest(
                "time limit longer than 100 years",
            ));
        }
        if !(-MAX_TIME..=MAX_TIME).contains(&spec.submit)
            || !(-MAX_TIME..=MAX_TIME).contains(&spec.begin)
        {
            return Err(SubmitError::InvalidRequest(
                "submission or begin time out of range",
            ));
        }
        if spec.time_limit < 1 {
            return Err(SubmitError::InvalidRequest(
                "time limit must be at least one second",
            ));
        }
        if spec.request.ntasks < 1 || spec.request.ntasks < spec.request.min_nodes {
            return Err(SubmitError::InvalidRequest(
                "need at least one task per node",
            ));
        }
        if let Some(blocks) = &self.cluster.blocks {
            // A job spanning nodes must fit in one block or aggregate of blocks.
            let r = &spec.request;
            let largest = blocks
                .aggregates
                .iter()
                .map(|&(start, end)| {
                    self.cluster
                        .nodes
                        .iter()
                        .filter(|n| n.leaf_switch.is_some_and(|b| b >= start && b < end))
                        .count()
                })
                .max()
                .unwrap_or(0);
            if r.min_nodes > 1 && r.min_nodes as usize > largest {
                return Err(SubmitError::NodeConfigUnavailable);
            }
        }
        if let Some(seg) = spec.request.segment {
            // Slurm's block plugin: a segment fits in a base block and the job is whole
            // segments.
            let r = &spec.request;
            let fits = self.cluster.blocks.as_ref().is_some_and(|b| {
                seg >= 1
                    && seg <= b.base_size
                    && r.min_nodes == r.max_nodes
                    && r.min_nodes.is_multiple_of(seg)
            });
            if !fits {
                return Err(SubmitError::NodeConfigUnavailable);
            }
        }
        if !self.could_ever_fit(spec.partition, &spec.request) {
            return Err(SubmitError::NodeConfigUnavailable);
        }
        if let Some(reason) =
            limits::check::submit_violation(&self.accounts, &self.usage, view(spec), self.last_pass)
        {
            return Err(SubmitError::AccountingPolicy(reason));
        }
        Ok(())
    }

    /// Takes back a job that was running when the caller last stopped (a controller
    /// restart): it holds `nodes` from `start` for its time limit, as if started then.
    ///
    /// Errors: the id is in use, or the nodes do not have the resources free (the
    /// caller's records disagree with themselves); nothing changes then.
    pub fn restore_running(
        &mut self,
        spec: JobSpec,
        start: Time,
        nodes: Vec<NodeAlloc>,
        now: Time,
    ) -> Result<(), SubmitError> {
        self.generation += 1;
        if self.jobs.contains_key(&spec.id) {
            return Err(SubmitError::DuplicateId(spec.id));
        }
        let end = (start + spec.time_limit).max(now + 1);
        let Some(nodes) = self.restored_gpus(&spec, nodes, end) else {
            return Err(SubmitError::InvalidRequest(
                "restored job does not fit its nodes",
            ));
        };
        self.profile.advance(now);
        let id = spec.id;
        reservation::release_holds(self);
        self.usage.add(id, self.scopes(&spec));
        self.usage
            .start(id, limits::alloc_tres(&nodes), start.min(now), end);
        self.profile.claim_all(&nodes, now, end);
        self.free_now.take(&self.cluster, &nodes);
        self.backfill.on_start(id, &nodes, now, end);
        self.jobs.insert(
            id,
            Arc::new(Job {
                spec,
                state: JobState::Running,
                reason: PendingReason::None,
                unavailable_nodes: Vec::new(),
                start: Some(start),
                alloc: Some(Allocation { nodes }),
                planned_start: Some(start),
                suspended: None,
                suspended_secs: 0,
            }),
        );
        self.claims_end.insert((end, id));
        self.claim_end.insert(id, end);
        side_claims::take(
            self,
            id,
            &self.jobs[&id]
                .alloc
                .as_ref()
                .expect("running")
                .nodes
                .clone(),
            now,
        );
        crate::borrow::started(self, id);
        crate::timeslice::started(self, id);
        reservation::claim_holds(self, now);
        Ok(())
    }

    /// A restored job's allocation with its GPUs: those it names, or, where it names
    /// none but takes GPUs, the book's first choice; `None` when they are not free, or
    /// its usage and their side claims (see [`crate::gpus`]) do not fit what its nodes
    /// have free.
    fn restored_gpus(
        &self,
        spec: &JobSpec,
        mut nodes: Vec<NodeAlloc>,
        end: Time,
    ) -> Option<Vec<NodeAlloc>> {
        let exclusive = spec.request.exclusive;
        for a in &mut nodes {
            if a.node.index() >= self.cluster.nodes.len() {
                return None;
            }
            let mut need = a.usage;
            if self.gpus.involved(a.node, &a.usage, exclusive) {
                let mut choice = crate::gpus::Choice {
                    gpus: a.gpus.clone(),
                    shards: a.shards.clone(),
                };
                if choice == crate::gpus::Choice::default() {
                    choice = self
                        .gpus
                        .choices(a.node, &a.usage, exclusive, end)
                        .into_iter()
                        .next()?;
                } else if !self.gpus.can_take(a.node, &choice) {
                    return None;
                }
                let mut touched = choice.gpus.clone();
                touched.extend(choice.shards.iter().map(|&(g, _)| g));
                touched.sort_unstable();
                touched.dedup();
                for g in touched {
                    if let Some(side) = self.gpus.side_if_taken(a.node, g, &choice, exclusive) {
                        need = need.plus(&side);
                    }
                }
                a.gpus = choice.gpus;
                a.shards = choice.shards;
            }
            if !need.fits_in(&self.free_now.node(a.node)) {
                return None;
            }
        }
        Some(nodes)
    }

    /// Queues a job. Checks that the id is free, the partition exists and takes jobs,
    /// and that the request could be met by the partition's nodes if they were empty;
    /// otherwise returns the reason and changes nothing.
    pub fn submit(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        self.generation += 1;
        self.check(&spec)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.enqueue(spec, seq, now);
        Ok(())
    }

    /// Queues again a job that was queued before and left the queue while it waited (a
    /// hold, a dependency, an update): checked as [`Scheduler::submit`] checks a job,
    /// except that a partition since made DRAIN or INACTIVE does not refuse it, as
    /// Slurm keeps such a job queued (in a DRAIN partition it runs; in an INACTIVE one
    /// it waits, `PartitionInactive`).
    pub fn readmit(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        self.generation += 1;
        if self.jobs.contains_key(&spec.id) {
            return Err(SubmitError::DuplicateId(spec.id));
        }
        self.check_shape(&spec)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.enqueue(spec, seq, now);
        Ok(())
    }

    /// Ties pending jobs into one heterogeneous job (Slurm's hetjob): `members` in
    /// component order, the leader (offset 0) first. They then start together or not at
    /// all, at the leader's place in the queue (see [`crate::het`]). Jobs not pending
    /// are left out.
    pub fn set_het_group(&mut self, members: &[JobId]) {
        self.generation += 1;
        let members: Vec<JobId> = members
            .iter()
            .copied()
            .filter(|m| {
                self.jobs
                    .get(m)
                    .is_some_and(|j| j.state == JobState::Pending)
            })
            .collect();
        if members.len() > 1 {
            self.het.link(&members);
            self.backfill.dirty = true;
        }
    }

    /// The components of `id`'s heterogeneous job, leader first, while any is live;
    /// `None` for a job of no group.
    pub fn het_group(&self, id: JobId) -> Option<&[JobId]> {
        self.het.group(id).map(|g| &g[..])
    }

    /// For a pending heterogeneous job (any of its components): the first component
    /// that does not fit now beside those before it, which the whole job waits for;
    /// `None` when every component fits, or for a job of no group.
    pub fn het_waiting_on(&self, id: JobId, now: Time) -> Option<JobId> {
        crate::het::waiting_on(self, id, now)
    }

    /// Replaces a pending job's spec (the job with `spec.id`) with `spec`, as if it had
    /// been submitted so: what `explain`'s counterfactuals ask ("what if it asked for
    /// fewer GPUs?"), and a way to carry out `scontrol update` on a pending job. The job
    /// keeps its place in submission order (it stays ahead of jobs submitted after it at
    /// equal tier and priority); its tier and priority follow the new spec, it loses any
    /// reservation a pass planned for it and gets a fresh pending reason at the next
    /// pass. A job bound to an advance reservation stays bound.
    ///
    /// The new spec is checked as [`Scheduler::submit`] checks a job, except that the
    /// submit limits are not counted again (the job is already submitted).
    ///
    /// Errors: [`SubmitError::NotPending`] when no pending job has the id, or what
    /// [`Scheduler::check`] would refuse; nothing changes then.
    pub fn update_pending(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        self.generation += 1;
        let id = spec.id;
        let Some(job) = self.jobs.get(&id).filter(|j| j.state == JobState::Pending) else {
            return Err(SubmitError::NotPending(id));
        };
        // Its own partition keeps it, closed since or not; another must take new jobs.
        if job.spec.partition != spec.partition {
            self.check_open(&spec)?;
        }
        self.check_shape(&spec)?;
        let seq = self.keys[&id].seq;
        let choices = self.choices.get(&id).cloned();
        self.cancel_pending(id, now);
        if let Some(list) = choices {
            self.choices.insert(id, list);
        }
        self.enqueue(spec, seq, now);
        Ok(())
    }

    /// Queues a checked job under submission sequence number `seq`.
    fn enqueue(&mut self, mut spec: JobSpec, seq: u64, now: Time) {
        let part = self.cluster.partition(spec.partition);
        // OverSubscribe=EXCLUSIVE, and ExclusiveUser=YES (no other user's job may share
        // a node; whole nodes also keep the same user's jobs apart, which is stricter
        // than Slurm): whole nodes.
        if part.oversubscribe == OverSubscribe::Exclusive || part.exclusive_user {
            if !spec.request.exclusive {
                self.exclusive_by_partition.insert(spec.id);
            }
            spec.request.exclusive = true;
        }
        self.profile.advance(now);
        let key = QueueKey {
            tier: Reverse(if self.policy.uses_priority() {
                self.best_tier(spec.id, spec.partition)
            } else {
                0
            }),
            priority: Reverse(if self.policy.uses_priority() {
                spec.priority
            } else {
                0
            }),
            seq,
        };
        let id = spec.id;
        self.usage.add(id, self.scopes(&spec));
        self.jobs.insert(
            id,
            Arc::new(Job {
                spec,
                state: JobState::Pending,
                reason: PendingReason::None,
                unavailable_nodes: Vec::new(),
                start: None,
                alloc: None,
                planned_start: None,
                suspended: None,
                suspended_secs: 0,
            }),
        );
        self.queue.insert(key, id);
        self.keys.insert(id, key);
        self.reason_none.insert(id);
        self.begins.insert((self.jobs[&id].spec.begin, id));
        if let Some(l) = self.jobs[&id].spec.request.switches {
            self.begins.insert((l.until, id));
        }
        self.backfill.dirty = true;
        self.fresh.push(id);
        if let Policy::Conservative = self.policy {
            self.conservative.unplanned.insert(key);
        }
    }

    /// Records that a running job has ended at `now` (for whatever reason: completed,
    /// failed, killed at its limit) and releases what remains of its claim. Returns the
    /// job's last state, or `None` if no such job was running (nothing changes then).
    pub fn job_ended(&mut self, id: JobId, now: Time) -> Option<Job> {
        self.generation += 1;
        if self.jobs.get(&id)?.state == JobState::Suspended {
            if crate::timeslice::left(self, id) {
                return Some(crate::gang::forget(self, id, now));
            }
            return crate::gang::job_ended(self, id, now);
        }
        if self.jobs.get(&id)?.state != JobState::Running {
            return None;
        }
        crate::timeslice::left(self, id);
        self.profile.advance(now);
        let was_expired = self.expired.contains(&id);
        self.ending.remove(&id);
        reservation::job_gone(self, id, now);
        self.unindex(id);
        self.forget_partitions(id);
        let job = Arc::unwrap_or_clone(self.jobs.remove(&id).expect("checked above"));
        self.changed.remove(&id);
        self.usage.remove(id, now);
        self.het.forget(id);
        crate::borrow::ended(self, id);
        let alloc = job.alloc.as_ref().expect("running jobs have an allocation");
        let end = self
            .claim_end
            .remove(&id)
            .expect("running jobs have a claim");
        self.claims_end.remove(&(end, id));
        if now < end {
            self.profile.release_all(&alloc.nodes, now, end);
        }
        if !self.expired.remove(&id) {
            self.free_now.give_back(&self.cluster, &alloc.nodes);
            side_claims::give_back(self, id, &alloc.nodes, now);
        }
        self.backfill.on_end(id, &alloc.nodes, now);
        self.backfill.dirty = true;
        // Reservations may move earlier: into what remains of its claim when it ended
        // before that ran out, and — even when it did not — into places that jobs put
        // back earlier at the last end left free (see `policy::conservative`).
        self.conservative.ended_early = true;
        let nodes = &job.alloc.as_ref().expect("running").nodes;
        crate::preempt::victim_ended(self, id, nodes, was_expired, now);
        Some(job)
    }

    /// Records that running job `id` is being ended: its processes have been told to go
    /// (a cancel, its time limit, a preemption, a requeue) but are not all gone yet.
    /// It keeps everything it holds until [`Scheduler::job_ended`] — so that neither its
    /// next run nor another job starts beside what is left of it, as Slurm keeps a
    /// `COMPLETING` job's nodes — and is no longer a candidate for preemption. Returns
    /// false, changing nothing, when the job is not running.
    pub fn mark_ending(&mut self, id: JobId) -> bool {
        self.generation += 1;
        if self
            .jobs
            .get(&id)
            .is_none_or(|j| j.state != JobState::Running)
        {
            return false;
        }
        self.ending.insert(id);
        // Out of time-slicing: its turn is over for good.
        crate::timeslice::left(self, id);
        true
    }

    /// Whether running job `id` is being ended ([`Scheduler::mark_ending`]).
    pub fn is_ending(&self, id: JobId) -> bool {
        self.ending.contains(&id)
    }

    /// Changes a running job's time limit (`scontrol update TimeLimit=`, seconds): its
    /// claim now ends at `start + limit` (plus any time it spent suspended), but never
    /// before `now + 1`. A longer claim
    /// withdraws the reservations it would collide with (as an overrun does) for the
    /// next pass to plan again; a shorter one lets reservations move earlier. Returns
    /// false, changing nothing, when the job is not running.
    pub fn set_time_limit(&mut self, id: JobId, limit: Secs, now: Time) -> bool {
        self.generation += 1;
        let Some(job) = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .filter(|j| j.state == JobState::Running)
        else {
            return false;
        };
        job.spec.time_limit = limit;
        let end = Self::claim_end_of(job, now);
        self.move_claim_end(id, end, now);
        true
    }

    /// Suspends a running job (`scontrol suspend`): its processes are stopped, and it
    /// keeps everything it holds until it is resumed — its claim runs on with no end
    /// in sight. Returns false, changing nothing, when it is not running or already
    /// suspended.
    pub fn suspend(&mut self, id: JobId, now: Time) -> bool {
        self.generation += 1;
        let Some(job) = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .filter(|j| j.state == JobState::Running && j.suspended.is_none())
        else {
            return false;
        };
        job.suspended = Some(now);
        let end = Self::claim_end_of(job, now);
        self.move_claim_end(id, end, now);
        // Out of time-slicing until an operator resumes it, as Slurm's gang scheduler
        // leaves a job an operator suspended alone.
        crate::timeslice::left(self, id);
        true
    }

    /// Resumes a suspended job (`scontrol resume`): its time limit now runs out as
    /// much later as it stood suspended, and its claim ends then. Returns false,
    /// changing nothing, when it is not suspended.
    pub fn resume(&mut self, id: JobId, now: Time) -> bool {
        self.generation += 1;
        let Some(job) = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .filter(|j| j.state == JobState::Running && j.suspended.is_some())
        else {
            return false;
        };
        let since = job.suspended.take().expect("checked");
        job.suspended_secs += (now - since).max(0);
        let end = Self::claim_end_of(job, now);
        self.move_claim_end(id, end, now);
        crate::timeslice::started(self, id);
        true
    }

    /// Takes back a restored running job's suspension (a controller restart): seconds
    /// spent suspended before, and since when it is suspended now, if it is. Returns
    /// false, changing nothing, when it is not running.
    pub fn restore_suspension(
        &mut self,
        id: JobId,
        since: Option<Time>,
        suspended_secs: Secs,
        now: Time,
    ) -> bool {
        self.generation += 1;
        let Some(job) = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .filter(|j| j.state == JobState::Running)
        else {
            return false;
        };
        job.suspended = since;
        job.suspended_secs = suspended_secs.max(0);
        let end = Self::claim_end_of(job, now);
        self.move_claim_end(id, end, now);
        if since.is_some() {
            crate::timeslice::left(self, id);
        }
        true
    }

    /// Takes back a job that stood suspended by preemption when the caller last stopped
    /// (a controller restart): started at `start` on `nodes`, suspended since `since`
    /// for `by`, after `suspended_secs` in earlier suspensions. It holds nothing and
    /// resumes on `nodes` once they are free (see [`crate::gang`]). `by` is the job
    /// itself for a job suspended by time-slicing: it waits for its turn again (see
    /// [`crate::timeslice`]).
    ///
    /// Errors: the id is in use; nothing changes then.
    #[allow(clippy::too_many_arguments)]
    pub fn restore_suspended(
        &mut self,
        spec: JobSpec,
        start: Time,
        nodes: Vec<NodeAlloc>,
        since: Time,
        suspended_secs: Secs,
        by: JobId,
    ) -> Result<(), SubmitError> {
        self.generation += 1;
        if self.jobs.contains_key(&spec.id) {
            return Err(SubmitError::DuplicateId(spec.id));
        }
        let id = spec.id;
        let end = start + spec.time_limit;
        self.usage.add(id, self.scopes(&spec));
        self.usage
            .start(id, limits::alloc_tres(&nodes), start.min(since), end);
        self.jobs.insert(
            id,
            Arc::new(Job {
                spec,
                state: JobState::Suspended,
                reason: PendingReason::None,
                unavailable_nodes: Vec::new(),
                start: Some(start),
                alloc: Some(Allocation { nodes }),
                planned_start: Some(start),
                suspended: Some(since),
                suspended_secs: suspended_secs.max(0),
            }),
        );
        if by == id {
            // Suspended by time-slicing: back in its partition's list, waiting.
            crate::timeslice::restored(self, id, since);
        } else {
            crate::gang::restored(self, id, by, since);
        }
        Ok(())
    }

    /// The preemptor job `id` stands suspended for, if it is suspended by preemption
    /// (see [`crate::gang`]).
    pub fn suspended_for(&self, id: JobId) -> Option<JobId> {
        self.gang.suspended_for(id)
    }

    /// Whether job `id` stands suspended by gang time-slicing (see
    /// [`crate::timeslice`]).
    pub fn time_sliced(&self, id: JobId) -> bool {
        self.slices.waiting(id)
    }

    /// A time-sliced partition's started jobs, in the order the next slice walks them,
    /// with their place in the active row (see [`crate::timeslice`]).
    pub fn slice_list(&self, p: PartitionId) -> Vec<(JobId, crate::timeslice::Row)> {
        crate::timeslice::list(self, p)
    }

    /// Where a running job's claim ends: at its start plus its time limit plus the time
    /// it spent suspended, but never before `now + 1`; while it is suspended, no end in
    /// sight (a time limit's length past `now`).
    fn claim_end_of(job: &Job, now: Time) -> Time {
        if job.suspended.is_some() {
            return now + crate::time::MAX_TIME_LIMIT;
        }
        let start = job.start.expect("running jobs have a start");
        (start + job.spec.time_limit + job.suspended_secs).max(now + 1)
    }

    /// Moves a running job's claim to end at `new`. A longer claim withdraws the
    /// reservations it would collide with (as an overrun does) for the next pass to
    /// plan again; a shorter one lets reservations move earlier.
    fn move_claim_end(&mut self, id: JobId, new: Time, now: Time) {
        self.profile.advance(now);
        let nodes = self.jobs[&id]
            .alloc
            .as_ref()
            .expect("running")
            .nodes
            .clone();
        let old = self.claim_end[&id];
        reservation::release_holds(self);
        if new > old {
            conservative::withdraw_conflicting(self, &nodes, old, new);
            self.profile.claim_all(&nodes, old, new);
            self.backfill.on_extend(id, &nodes, new);
            if self.expired.remove(&id) {
                // Its resources were counted free at its old end: they are not.
                self.free_now.take(&self.cluster, &nodes);
            }
        } else if new < old {
            self.profile.release_all(&nodes, new, old);
            self.backfill.on_shorten(id, &nodes, new);
            self.conservative.ended_early = true;
        }
        self.claims_end.remove(&(old, id));
        self.claims_end.insert((new, id));
        self.claim_end.insert(id, new);
        side_claims::sync_all(self, &nodes, now, true);
        self.usage.retime(id, new);
        reservation::claim_holds(self, now);
        self.backfill.dirty = true;
    }

    /// Removes a pending job from the queue (and any reservation it holds). Returns the
    /// job, or `None` if it is not pending. A running job is ended with
    /// [`Scheduler::job_ended`] once its processes are gone.
    pub fn cancel_pending(&mut self, id: JobId, now: Time) -> Option<Job> {
        self.generation += 1;
        if self.jobs.get(&id)?.state != JobState::Pending {
            return None;
        }
        self.profile.advance(now);
        let key = self.keys.remove(&id).expect("pending jobs have a key");
        self.queue.remove(&key);
        self.unindex(id);
        self.forget_partitions(id);
        let job = Arc::unwrap_or_clone(self.jobs.remove(&id).expect("checked above"));
        self.changed.remove(&id);
        self.usage.remove(id, now);
        self.het.forget(id);
        self.begins.remove(&(job.spec.begin, id));
        if let Some(l) = job.spec.request.switches {
            self.begins.remove(&(l.until, id));
        }
        conservative::forget(self, &job, key);
        self.backfill.dirty = true;
        Some(job)
    }

    /// Changes a pending job's priority (a multifactor recalculation, `scontrol update
    /// Priority=`, a new `--nice`). Under a policy that orders by priority the job moves
    /// in the queue; it keeps its place among jobs of equal tier and priority (its
    /// submission order). Returns false, changing nothing, when the job is not pending.
    pub fn set_priority(&mut self, id: JobId, priority: u32) -> bool {
        let Some(job) = self.jobs.get_mut(&id).map(Arc::make_mut) else {
            return false;
        };
        if job.state != JobState::Pending {
            return false;
        }
        if job.spec.priority == priority {
            return true;
        }
        self.generation += 1;
        job.spec.priority = priority;
        if !self.policy.uses_priority() {
            return true; // the textbook policies keep submission order
        }
        let old = self.keys[&id];
        let key = QueueKey {
            priority: Reverse(priority),
            ..old
        };
        self.requeue_key(id, old, key);
        self.backfill.dirty = true;
        true
    }

    /// Puts pending job `id` at its queue place again after its partitions changed:
    /// its tier is the highest of theirs.
    pub(crate) fn rekey(&mut self, id: JobId) {
        let Some(&old) = self.keys.get(&id) else {
            return;
        };
        if !self.policy.uses_priority() {
            return;
        }
        let tier = self.best_tier(id, self.jobs[&id].spec.partition);
        let key = QueueKey {
            tier: Reverse(tier),
            ..old
        };
        self.requeue_key(id, old, key);
    }

    /// Moves pending job `id`'s queue entry from `old` to `key`.
    fn requeue_key(&mut self, id: JobId, old: QueueKey, key: QueueKey) {
        if old == key {
            return;
        }
        self.queue.remove(&old);
        self.queue.insert(key, id);
        self.keys.insert(id, key);
    }

    /// Replaces the accounting limits (the database changed: `sacctmgr` raised or
    /// lowered a limit, added an association...). What associations and QOS use is
    /// kept; the next pass decides with the new limits.
    pub fn set_account_limits(&mut self, limits: AccountLimits) {
        self.generation += 1;
        self.accounts = limits;
        crate::borrow::recount(self);
        self.backfill.dirty = true;
    }

    /// Replaces the cohorts of accounts that borrow each other's unused quota (see
    /// [`crate::borrow`]; none: no borrowing, nothing changes). Running jobs are counted
    /// afresh for their members; those that started borrowed stay borrowed.
    pub fn set_cohorts(&mut self, cohorts: Vec<crate::borrow::Cohort>) {
        self.generation += 1;
        crate::borrow::set(self, cohorts);
        self.backfill.dirty = true;
    }

    /// Whether running job `id` started above its account's cohort quota, on capacity
    /// borrowed from its cohort (see [`crate::borrow`]).
    pub fn borrowed(&self, id: JobId) -> bool {
        self.borrow.borrowed(id)
    }

    /// The `now` of the last pass (a large negative time before the first).
    pub fn last_pass(&self) -> Time {
        self.last_pass
    }

    /// How many passes have run: pending jobs' reasons and expected starts change in
    /// passes only, so a reader of them may look again only when this moved.
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// Pending jobs whose `--begin` time (or the lapse of their `--switches` wait) lies
    /// in `(after, upto]`: those whose prospects change with the time alone between a
    /// pass at `after` and one at `upto`.
    pub fn begins_between(&self, after: Time, upto: Time) -> impl Iterator<Item = JobId> + '_ {
        use std::ops::Bound::{Excluded, Included};
        let range = (
            Excluded((after, JobId(u64::MAX))),
            Included((upto.max(after), JobId(u64::MAX))),
        );
        self.begins.range(range).map(|&(_, id)| id)
    }

    /// The accounting limits in force.
    pub fn account_limits(&self) -> &AccountLimits {
        &self.accounts
    }

    /// What every association, QOS, QOS user and QOS account has pending, running and
    /// used.
    pub fn limit_usage(&self) -> &Usage {
        &self.usage
    }

    /// Counts a job the caller keeps waiting outside the queue (held, or waiting on a
    /// dependency) as submitted, for the submit limits, until it is queued
    /// ([`Scheduler::submit`] keeps the charge) or forgotten
    /// ([`Scheduler::forget_waiting`]).
    pub fn note_waiting(&mut self, spec: &JobSpec) {
        self.generation += 1;
        if !self.jobs.contains_key(&spec.id) {
            self.usage.add(spec.id, self.scopes(spec));
        }
    }

    /// Stops counting a waiting job (see [`Scheduler::note_waiting`]) that left without
    /// being queued (cancelled, failed). Jobs in the queue are not touched.
    pub fn forget_waiting(&mut self, id: JobId, now: Time) {
        self.generation += 1;
        if !self.jobs.contains_key(&id) {
            self.usage.remove(id, now);
        }
    }

    /// Gives a pending or running job a new association and QOS (its accounts were
    /// restored after it, or changed): it is charged to its new scopes from `now`.
    /// Returns false, changing nothing, for a job the core does not track.
    pub fn set_job_acct(&mut self, id: JobId, acct: limits::JobAcct, now: Time) -> bool {
        self.generation += 1;
        let Some(job) = self.jobs.get(&id) else {
            return false;
        };
        let mut spec = job.spec.clone();
        spec.acct = acct;
        let running = job
            .alloc
            .as_ref()
            .filter(|_| job.state == JobState::Running)
            .map(|a| limits::alloc_tres(&a.nodes));
        // A job restored before any pass is charged from its start, not from before it.
        let at = now.max(job.start.unwrap_or(now));
        self.usage.remove(id, at);
        self.usage.add(id, self.scopes(&spec));
        if let Some(tres) = running {
            let end = self.claim_end.get(&id).copied().unwrap_or(at);
            self.usage.start(id, tres, at, end);
        }
        self.jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .expect("checked")
            .spec
            .acct = acct;
        crate::borrow::rejoin(self, id);
        self.backfill.dirty = true;
        true
    }

    /// Decays the TRES-minutes every association and QOS has used (for
    /// `GrpTRESMins`) at `now`, over the time since the last call, with Slurm's
    /// `PriorityDecayHalfLife` of `half_life` seconds (0: no decay). QOS with `NoDecay`
    /// keep theirs. The first call only notes the time.
    pub fn decay_limit_usage(&mut self, now: Time, half_life: Secs) {
        self.generation += 1;
        let factor = crate::fairshare::decay_factor(half_life);
        let accounts = &self.accounts;
        self.usage.decay(now, factor, |q| {
            accounts.qos.get(&q).is_some_and(|q| q.flags.no_decay)
        });
    }

    /// Gives back saved used TRES-minutes (a restart; see [`Usage::used`]): minutes per
    /// TRES index of each scope, and when they were last decayed.
    pub fn restore_limit_usage(
        &mut self,
        saved: &[(limits::usage::Scope, Vec<f64>)],
        last_decay: Option<Time>,
        now: Time,
    ) {
        self.generation += 1;
        for (scope, mins) in saved {
            for (k, m) in mins.iter().enumerate().take(limits::NTRES) {
                self.usage.set_used_mins(*scope, k, *m, now);
            }
        }
        if let Some(t) = last_decay {
            self.usage.set_last_decay(t);
        }
    }

    /// The usage scopes a job counts in.
    pub(crate) fn scopes(&self, spec: &JobSpec) -> Vec<limits::usage::Scope> {
        let part_qos = self
            .accounts
            .partition_qos
            .get(spec.partition.index())
            .copied()
            .flatten();
        limits::usage::scopes(&self.accounts, spec.user, &spec.acct, part_qos)
    }

    /// Runs the policy's pass at `now` and returns the jobs to start.
    pub fn schedule(&mut self, now: Time) -> Vec<Decision> {
        self.schedule_observed(now, &mut Unobserved)
    }

    /// [`Scheduler::schedule`], telling `observer` where the pass's phases begin and
    /// end (see [`crate::observe`]).
    pub fn schedule_observed(
        &mut self,
        now: Time,
        observer: &mut dyn PassObserver,
    ) -> Vec<Decision> {
        // Writes since the last pass were counted by their calls' own generation.
        self.settle();
        #[cfg(debug_assertions)]
        let before = self.pending_view();
        self.passes += 1;
        let out = self.pass(now, observer);
        // A pass that starts, plans and explains nothing new leaves the state as it
        // was for whatever was computed from it (see `generation`): a controller calls
        // a pass every second. What it explained anew is known from the jobs it wrote
        // to, without comparing the whole queue.
        let moved = self.settle();
        #[cfg(debug_assertions)]
        self.check_changed(&before, &out, moved);
        if !out.is_empty() || moved {
            self.generation += 1;
        }
        out
    }

    /// Pending jobs whose reason or planned start ([`Job::reason`],
    /// [`Job::planned_start`]) changed since the last call, by id, as of the last pass
    /// (a job that changed back may be among them). Costs the jobs changed: what a
    /// reader of those two fields looks at again after a pass instead of the queue.
    pub fn take_changed(&mut self) -> BTreeSet<JobId> {
        std::mem::take(&mut self.changed)
    }

    /// Notes that pending job `id`'s reason or planned start is about to be written
    /// (see [`Scheduler::take_changed`]).
    pub(crate) fn note(&mut self, id: JobId) {
        if let Some(j) = self.jobs.get(&id) {
            self.touched
                .entry(id)
                .or_insert((j.reason, j.planned_start));
        }
    }

    /// Sets pending job `id`'s planned start.
    pub(crate) fn set_planned(&mut self, id: JobId, at: Option<Time>) {
        if self.jobs.get(&id).is_some_and(|j| j.planned_start != at) {
            self.note(id);
            self.jobs
                .get_mut(&id)
                .map(Arc::make_mut)
                .expect("checked")
                .planned_start = at;
        }
    }

    /// Moves the jobs written to since the last call whose reason or planned start
    /// differs from before into the changed set; whether there was one.
    fn settle(&mut self) -> bool {
        let mut any = false;
        for (id, was) in std::mem::take(&mut self.touched) {
            self.unindex(id);
            if let Some(j) = self.jobs.get(&id) {
                if j.state == JobState::Pending {
                    match j.reason {
                        PendingReason::None => {
                            self.reason_none.insert(id);
                        }
                        PendingReason::BeginTime => {
                            self.waiting_begin.insert((j.spec.begin, id));
                        }
                        PendingReason::Resources => {
                            self.reason_resources.insert(id);
                        }
                        _ => {}
                    }
                    if (j.reason, j.planned_start) != was {
                        self.changed.insert(id);
                        any = true;
                    }
                }
            }
        }
        any
    }

    /// The pending jobs whose reason is now `Resources`, in queue order: found among
    /// those indexed so at the last pass and those written to since, not by looking
    /// at the whole queue.
    pub(crate) fn waiting_for_resources(&self) -> Vec<JobId> {
        let mut found: Vec<(QueueKey, JobId)> = self
            .reason_resources
            .iter()
            .chain(self.touched.keys())
            .filter(|id| {
                self.jobs.get(id).is_some_and(|j| {
                    j.state == JobState::Pending && j.reason == PendingReason::Resources
                })
            })
            .map(|&id| (self.keys[&id], id))
            .collect();
        found.sort_unstable();
        found.dedup();
        let found: Vec<JobId> = found.into_iter().map(|(_, id)| id).collect();
        debug_assert_eq!(
            found,
            self.queue
                .values()
                .copied()
                .filter(|id| self.jobs[id].reason == PendingReason::Resources)
                .collect::<Vec<_>>(),
            "the index finds the jobs a look at the whole queue finds"
        );
        found
    }

    /// Forgets job `id` in the indexes of pending jobs by reason.
    fn unindex(&mut self, id: JobId) {
        self.reason_none.remove(&id);
        self.reason_resources.remove(&id);
        if let Some(j) = self.jobs.get(&id) {
            self.waiting_begin.remove(&(j.spec.begin, id));
        }
    }

    /// Debug builds: the jobs written to tell what comparing the whole queue before
    /// and after the pass tells.
    #[cfg(debug_assertions)]
    fn check_changed(
        &self,
        before: &[(JobId, PendingReason, Option<Time>)],
        out: &[Decision],
        moved: bool,
    ) {
        let after = self.pending_view();
        if out.is_empty() {
            assert_eq!(
                moved,
                after.as_slice() != before,
                "the jobs written to tell whether the pass changed the queue"
            );
        }
        let was: BTreeMap<JobId, (PendingReason, Option<Time>)> =
            before.iter().map(|&(id, r, t)| (id, (r, t))).collect();
        for (id, r, t) in after {
            if was.get(&id).is_some_and(|&w| w != (r, t)) {
                assert!(
                    self.changed.contains(&id),
                    "job {id}'s reason or planned start changed unnoted"
                );
            }
        }
    }

    /// Every pending job's reason and planned start, in queue order.
    #[cfg(debug_assertions)]
    fn pending_view(&self) -> Vec<(JobId, PendingReason, Option<Time>)> {
        self.pending()
            .map(|j| (j.id(), j.reason, j.planned_start))
            .collect()
    }

    /// One pass (see [`Scheduler::schedule`]).
    fn pass(&mut self, now: Time, observer: &mut dyn PassObserver) -> Vec<Decision> {
        self.profile.advance(now);
        // A job whose `--begin` came since the last pass is something new for the
        // backfill pass to consider, even when the main pass does not reach it.
        {
            use std::ops::Bound::{Excluded, Included};
            let came = (
                Excluded((self.last_pass, JobId(u64::MAX))),
                Included((now, JobId(u64::MAX))),
            );
            if self.last_pass < now && self.begins.range(came).next().is_some() {
                self.backfill.dirty = true;
            }
        }
        self.last_pass = now;
        reservation::release_holds(self);
        match self.end_semantics {
            EndSemantics::HoldUntilReported => self.extend_overruns(now),
            EndSemantics::FreeAtExpectedEnd => self.expire_claims(now),
        }
        let mut out = Vec::new();
        crate::gang::resume_ready(self, now, &mut out);
        crate::timeslice::before_pass(self, now, &mut out);
        crate::preempt::start_ready(self, now, &mut out);
        reservation::pass(self, now, &mut out);
        match self.policy.clone() {
            Policy::Backfill(params) => backfill::pass(self, now, &params, &mut out, observer),
            policy => {
                // One phase, over the whole queue.
                observer.begin(Phase::Main);
                let queue_len = self.queue.len() as u32;
                let before = out.len();
                match policy {
                    Policy::Fcfs => {
                        fcfs::pass(self, now, &mut out);
                    }
                    Policy::Easy => easy::pass(self, now, &mut out),
                    Policy::Conservative => conservative::pass(self, now, &mut out),
                    Policy::Backfill(_) => {} // taken above
                }
                observer.end(
                    Phase::Main,
                    PhaseFigures {
                        queue_len,
                        depth: queue_len,
                        tried: queue_len,
                        started: (out.len() - before) as u32,
                        plan_times: 0,
                    },
                );
            }
        }
        reservation::explain(self, now);
        self.explain_fresh(now);
        crate::het::share_reasons(self);
        crate::preempt::pass(self, now, &mut out);
        crate::timeslice::admit(self, now, &mut out);
        out
    }

    /// Gives each pending job the pass did not reach a reason: a job queued since the
    /// last pass, one whose `--begin` time has come (still `BeginTime`), one the backfill
    /// pass found newly eligible but did not start (`None`). Its reason is its own
    /// (`BeginTime`, partition limits) or else `Priority`, since a pass stops only
    /// behind a job ahead of it that cannot start.
    fn explain_fresh(&mut self, now: Time) {
        let mut stale = std::mem::take(&mut self.fresh);
        let unexplained_now = |j: &Job| {
            j.state == JobState::Pending
                && (j.reason == PendingReason::None
                    || (j.reason == PendingReason::BeginTime && j.spec.begin <= now))
        };
        // The jobs without a reason or whose `--begin` came, in queue order: found
        // among those indexed so at the last pass and those written to since, not by
        // looking at the whole queue.
        let mut candidates: Vec<(QueueKey, JobId)> = {
            use std::ops::Bound::{Included, Unbounded};
            let came = (Unbounded, Included((now, JobId(u64::MAX))));
            self.reason_none
                .iter()
                .copied()
                .chain(self.waiting_begin.range(came).map(|&(_, id)| id))
                .chain(self.touched.keys().copied())
                .filter(|id| self.jobs.get(id).is_some_and(|j| unexplained_now(j)))
                .map(|id| (self.keys[&id], id))
                .collect()
        };
        candidates.sort_unstable();
        candidates.dedup();
        debug_assert_eq!(
            candidates.iter().map(|&(_, id)| id).collect::<Vec<_>>(),
            self.queue
                .values()
                .copied()
                .filter(|id| unexplained_now(&self.jobs[id]))
                .collect::<Vec<_>>(),
            "the indexes find the jobs a look at the whole queue finds"
        );
        stale.extend(candidates.into_iter().map(|(_, id)| id));
        for id in stale {
            let unexplained = self.jobs.get(&id).is_some_and(|j| {
                j.state == JobState::Pending
                    && (j.reason == PendingReason::None || j.reason == PendingReason::BeginTime)
            });
            if !unexplained {
                continue;
            }
            let several = crate::partitions::open(self, id, now).is_some();
            if self.eligible(id, now) {
                let reason = if several {
                    crate::partitions::unreached_reason(self, id, now)
                } else {
                    PendingReason::Priority
                };
                self.set_reason(id, reason);
            }
        }
    }

    /// The latest time at which [`Scheduler::schedule`] should be called again even if
    /// no job arrives or ends: a planned start coming due, a `--begin` time, the next
    /// backfill pass. `None` when only new events can change anything.
    pub fn next_wakeup(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut consider = |x: Time| t = Some(t.map_or(x, |t: Time| t.min(x)));
        if let Some(at) = self.conservative.next_start() {
            consider(at);
        }
        if !self.queue.is_empty() {
            if let Policy::Backfill(_) = self.policy {
                if self.backfill.dirty {
                    consider(self.backfill.next_pass);
                }
            }
            use std::ops::Bound::{Excluded, Unbounded};
            let later = (Excluded((self.last_pass, JobId(u64::MAX))), Unbounded);
            if let Some(&(begin, _)) = self.begins.range(later).next() {
                consider(begin);
            }
        }
        if let Some(at) = self.resv.next_boundary(self.last_pass) {
            consider(at);
        }
        if let Some(at) = self.slices.next_slice() {
            consider(at);
        }
        t
    }

    /// A running job that reaches its claim's end without being reported ended (a job
    /// past its limit still being killed) keeps its resources: its claim is stretched to
    /// just past `now`.
    ///
    /// A stretched claim may collide with reservations planned from the expected end on
    /// (conservative backfilling); those, and only those, are withdrawn first and planned
    /// again in queue order by the pass that follows.
    fn extend_overruns(&mut self, now: Time) {
        while let Some(&(end, id)) = self.claims_end.iter().next() {
            if end > now {
                break;
            }
            let nodes = self.jobs[&id]
                .alloc
                .as_ref()
                .expect("running")
                .nodes
                .clone();
            conservative::withdraw_conflicting(self, &nodes, end, now + 1);
            self.profile.claim_all(&nodes, end, now + 1);
            self.backfill.on_extend(id, &nodes, now + 1);
            self.claims_end.remove(&(end, id));
            self.claims_end.insert((now + 1, id));
            self.claim_end.insert(id, now + 1);
            side_claims::sync_all(self, &nodes, now, true);
        }
    }

    /// Counts the resources of running jobs whose claim has ended as free now.
    fn expire_claims(&mut self, now: Time) {
        let due: Vec<JobId> = self
            .claims_end
            .iter()
            .take_while(|(end, _)| *end <= now)
            .map(|&(_, id)| id)
            .filter(|id| !self.expired.contains(id))
            .collect();
        for id in due {
            self.expired.insert(id);
            let nodes = self.jobs[&id]
                .alloc
                .as_ref()
                .expect("running")
                .nodes
                .clone();
            self.free_now.give_back(&self.cluster, &nodes);
            self.backfill.on_free(id, &nodes, now);
            side_claims::give_back(self, id, &nodes, now);
        }
    }

    // ----- helpers shared by the policies -----

    /// The first pending job at or after `from` in queue order.
    pub(crate) fn next_in_queue(&self, from: Option<QueueKey>) -> Option<(QueueKey, JobId)> {
        use std::ops::Bound::{Excluded, Unbounded};
        match from {
            None => self.queue.iter().next(),
            Some(k) => self.queue.range((Excluded(k), Unbounded)).next(),
        }
        .map(|(k, id)| (*k, *id))
    }

    /// Whether the policy's pass may start `id` at `now`: as far as time and partition
    /// go, and it is not in a reservation (those are started by
    /// [`crate::reservation`]'s pass); sets its reason when not.
    pub(crate) fn eligible(&mut self, id: JobId, now: Time) -> bool {
        if self.het.is_follower(id) {
            // A heterogeneous job's component other than its leader is started with it.
            return crate::het::eligible(self, id, now);
        }
        self.eligible_as_job(id, now)
            && self.resv.of_job(id).is_none()
            && crate::het::eligible(self, id, now)
    }

    /// Whether `id` may start at `now` as far as time and partition go; sets its reason
    /// when not.
    pub(crate) fn eligible_as_job(&mut self, id: JobId, now: Time) -> bool {
        let job = &self.jobs[&id];
        let blocked = if let Some(r) = self.partition_refuses(job, job.spec.partition, now) {
            Some(r)
        } else {
            match job.spec.acct.not_allowed {
                Some(NotAllowed::Account) => Some(PendingReason::AccountNotAllowed),
                Some(NotAllowed::Qos) => Some(PendingReason::QosNotAllowed),
                Some(NotAllowed::Group) | None if job.spec.begin > now => {
                    Some(PendingReason::BeginTime)
                }
                Some(NotAllowed::Group) | None => {
                    limits::check::hold_reason(&self.accounts, &self.usage, view(&job.spec), now)
                        .or_else(|| crate::borrow::hold_reason(self, id))
                        .map(PendingReason::Limit)
                }
            }
        };
        if let Some(reason) = blocked {
            self.set_reason(id, reason);
            return false;
        }
        if matches!(
            self.jobs[&id].reason,
            PendingReason::BeginTime | PendingReason::Limit(_)
        ) {
            // Newly eligible: something for the backfill pass to consider.
            self.set_reason(id, PendingReason::None);
            self.backfill.dirty = true;
        }
        true
    }

    /// Why partition `p` cannot take `job` now, whatever its nodes hold: the partition is
    /// down, has no usable node, or its limits are below the job's.
    pub(crate) fn partition_refuses(
        &self,
        job: &Job,
        p: PartitionId,
        now: Time,
    ) -> Option<PendingReason> {
        let part = self.cluster.partition(p);
        if part.state == PartitionState::Down {
            Some(PendingReason::PartitionDown)
        } else if part.state == PartitionState::Inactive {
            Some(PendingReason::PartitionInactive)
        } else if !self.has_usable_node(p) && job.spec.begin <= now {
            // A job whose begin time has not come says BeginTime even so (Slurm 22.05,
            // compat scenario 197).
            Some(PendingReason::NodesUnavailable)
        } else if part.max_time.is_some_and(|m| job.spec.time_limit > m) {
            Some(PendingReason::PartitionTimeLimit)
        } else if part
            .max_nodes
            .is_some_and(|m| job.spec.request.min_nodes > m)
            || job.spec.request.min_nodes < part.min_nodes
        {
            Some(PendingReason::PartitionNodeLimit)
        } else {
            None
        }
    }

    /// Whether the backfill pass may plan a reservation for `id` (not for a job of a
    /// `NoReserve` QOS).
    pub(crate) fn may_reserve(&self, id: JobId) -> bool {
        let spec = &self.jobs[&id].spec;
        limits::check::may_reserve(&self.accounts, &spec.acct, spec.partition)
    }

    /// Which nodes `job` may use: its partition's up nodes with a wanted feature.
    pub(crate) fn filter_for(&self, job: &Job) -> NodeFilter {
        NodeFilter {
            partition: job.spec.partition,
            features_any: job.spec.request.features_any,
        }
    }

    /// Where `id` could start right now for its whole time limit, if anywhere.
    ///
    /// Walks the partition's nodes in selection order (see [`crate::select`]) straight
    /// from the index of free processors, checking each against the profile over the
    /// job's window, and stops as soon as the job is placed: on a large cluster a job
    /// that fits costs a few node checks, not a sweep. It chooses exactly what
    /// [`Profile::earliest_start`] would choose at `now`.
    ///
    /// For a heterogeneous job's leader, only when every component fits too, each beside
    /// those before it (see [`crate::het::fit_now`]).
    pub(crate) fn fit_now(&mut self, id: JobId, now: Time) -> Option<Vec<NodeAlloc>> {
        if self.het.is_leader(id) {
            return crate::het::fit_now(self, id, now);
        }
        self.fit_now_alone(id, now)
    }

    /// [`Scheduler::fit_now`] for `id` on its own, whatever group it belongs to.
    pub(crate) fn fit_now_alone(&self, id: JobId, now: Time) -> Option<Vec<NodeAlloc>> {
        self.fit_now_in(id, now, None)
    }

    /// [`Scheduler::fit_now_alone`] kept off the nodes flagged in `held` (per node), which
    /// are `off` (ascending), as if the job excluded them too.
    pub(crate) fn fit_now_off(
        &self,
        id: JobId,
        now: Time,
        held: &[bool],
        off: &[NodeId],
    ) -> Option<Vec<NodeAlloc>> {
        self.fit_now_in(id, now, Some((held, off)))
    }

    fn fit_now_in(
        &self,
        id: JobId,
        now: Time,
        off: Option<(&[bool], &[NodeId])>,
    ) -> Option<Vec<NodeAlloc>> {
        let job = &self.jobs[&id];
        let req = &job.spec.request;
        let part = job.spec.partition;
        if !self.free_now.might_fit(part, req) {
            return None;
        }
        let kept = |n: NodeId| off.is_some_and(|(held, _)| held.get(n.index()) == Some(&true));
        let end = now + job.spec.time_limit.max(1);
        if req.lists_nodes() {
            return self.fit_listed(id, now, off.map(|(_, list)| list));
        }
        let hosting = |n: NodeId| -> u32 {
            let node = self.cluster.node(n);
            if kept(n) || (req.features_any != 0 && node.features & req.features_any == 0) {
                return 0;
            }
            self.profile.tasks_during(&self.cluster, req, n, now, end)
        };
        let index = self.free_now.by_rank(part);
        if req.min_nodes <= 1 && self.cluster.placement == Placement::BestFit {
            if let Some(nodes) = self.fit_shared(id, now, &kept) {
                return Some(nodes);
            }
        }
        if req.min_nodes <= 1 {
            let need =
                (req.ntasks as u64 * req.cpus_per_task.max(1) as u64).min(u32::MAX as u64) as u32;
            let gpus = self.cluster.gpu_slot().map_or(0, |g| req.gres_per_node[g]);
            for n in self.nodes_by_rank(index, gpus, need) {
                if hosting(n) >= req.ntasks {
                    let chosen = [(n, req.ntasks)];
                    let nodes = node_allocs(
                        req,
                        &chosen,
                        |n| self.profile.free_during(n, now, end),
                        &self.cluster,
                    );
                    // A node whose GPUs cannot be had now (their side claims collide
                    // with a planned start) is passed over.
                    if let Some(nodes) = side_claims::place(self, id, nodes, now, None, false) {
                        return Some(nodes);
                    }
                }
            }
            if req.max_nodes == 1 {
                return None;
            }
        }
        if let Some((_, list)) = off {
            return self.fit_listed(id, now, Some(list));
        }
        // A job spanning nodes: the profile's class-level choice, in the same order.
        self.profile
            .fits_now(
                &self.cluster,
                req,
                self.filter_for(job),
                job.spec.time_limit,
                now,
            )
            .and_then(|nodes| side_claims::place(self, id, nodes, now, None, false))
    }

    /// Where `id` fits now, placed node by node (its own `-w`/`-x`, and `off`, ascending,
    /// excluded too).
    fn fit_listed(&self, id: JobId, now: Time, off: Option<&[NodeId]>) -> Option<Vec<NodeAlloc>> {
        let job = &self.jobs[&id];
        let mut req = std::borrow::Cow::Borrowed(&job.spec.request);
        if let Some(off) = off.filter(|o| !o.is_empty()) {
            let r = req.to_mut();
            r.exclude.extend_from_slice(off);
            r.exclude.sort_unstable();
            r.exclude.dedup();
        }
        self.profile
            .fits_now(
                &self.cluster,
                &req,
                self.filter_for(job),
                job.spec.time_limit.max(1),
                now,
            )
            .and_then(|nodes| side_claims::place(self, id, nodes, now, None, false))
    }

    /// Under the GPU-aware best fit, where a one-node job asking only shards fits now on
    /// a GPU already shared, breaking no whole GPU: the node whose shared GPU it fits
    /// most tightly (see [`crate::gpus`]). `None` when there is no such node, or the job
    /// asks for more than shards; it is then placed as any job.
    ///
    /// This is the one place where the choice at a start departs from the profile's
    /// (which counts shards per node, not per GPU): plans do not know which GPUs are
    /// shared.
    fn fit_shared(
        &self,
        id: JobId,
        now: Time,
        kept: &dyn Fn(NodeId) -> bool,
    ) -> Option<Vec<NodeAlloc>> {
        let job = &self.jobs[&id];
        let req = &job.spec.request;
        let shard = self.cluster.shard_slot()?;
        let want = req.gres_per_node[shard];
        let whole = self.cluster.gpu_slot().map_or(0, |g| req.gres_per_node[g]);
        if want == 0 || whole > 0 || req.exclusive || req.max_nodes > 1 || req.lists_nodes() {
            return None;
        }
        let end = now + job.spec.time_limit.max(1);
        let part = self.cluster.partition(job.spec.partition);
        self.gpus
            .shared_room(want, now + job.spec.time_limit)
            .find_map(|n| {
                let node = self.cluster.node(n);
                if node.state != NodeState::Up
                    || kept(n)
                    || part.nodes.binary_search(&n).is_err()
                    || (req.features_any != 0 && node.features & req.features_any == 0)
                    || self.profile.tasks_during(&self.cluster, req, n, now, end) < req.ntasks
                {
                    return None;
                }
                let nodes = node_allocs(
                    req,
                    &[(n, req.ntasks)],
                    |n| self.profile.free_during(n, now, end),
                    &self.cluster,
                );
                side_claims::place(self, id, nodes, now, None, false)
            })
    }

    /// The nodes of `index` in rank order, skipping, where the cluster's placement
    /// allows it by range, nodes with fewer than `gpus` free GPUs or `cpus` free
    /// processors (they cannot host the job; the others are checked by the caller).
    fn nodes_by_rank<'a>(
        &self,
        index: &'a BTreeSet<PlacementKey>,
        gpus: u32,
        cpus: u32,
    ) -> impl Iterator<Item = NodeId> + 'a {
        let placement = self.cluster.placement;
        let ranged = placement.ranges_by_free();
        let level = if placement == Placement::BestFit {
            gpus
        } else {
            0
        };
        let from = if ranged {
            (level, cpus, 0, NodeId(0))
        } else {
            (0, 0, 0, NodeId(0))
        };
        let mut it = index.range(from..);
        std::iter::from_fn(move || loop {
            let &key = it.next()?;
            if ranged && key.1 < cpus {
                // The first node of a new level, with too few processors: jump to that
                // level's first roomy one.
                it = index.range((key.0, cpus, 0, NodeId(0))..);
                continue;
            }
            return Some(key.3);
        })
    }

    /// Starts a pending job at `now` on `nodes`. With `claimed`, its claim is already on
    /// the profile (a reservation coming due); otherwise it is added. A heterogeneous
    /// job's leader starts the other components with it, in the same decisions.
    pub(crate) fn start(
        &mut self,
        id: JobId,
        now: Time,
        nodes: Vec<NodeAlloc>,
        pass: Pass,
        claimed: bool,
        out: &mut Vec<Decision>,
    ) {
        self.start_alone(id, now, nodes, pass, claimed, out);
        crate::het::start_rest(self, id, now, pass, out);
    }

    /// [`Scheduler::start`] for `id` alone.
    pub(crate) fn start_alone(
        &mut self,
        id: JobId,
        now: Time,
        nodes: Vec<NodeAlloc>,
        pass: Pass,
        claimed: bool,
        out: &mut Vec<Decision>,
    ) {
        let key = self.keys.remove(&id).expect("pending jobs have a key");
        self.queue.remove(&key);
        let job = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .expect("pending job exists");
        self.begins.remove(&(job.spec.begin, id));
        if let Some(l) = job.spec.request.switches {
            self.begins.remove(&(l.until, id));
        }
        let end = now + job.spec.time_limit;
        let placed = self.gpus_placed(&self.jobs[&id].spec.request, &nodes);
        let nodes = if placed {
            nodes
        } else {
            // A caller that did not choose GPUs: the first choice that fits, else the
            // first (over-allocation is a bug, caught in debug builds).
            let first = nodes.clone();
            side_claims::place(self, id, nodes, now, None, claimed)
                .unwrap_or_else(|| self.first_choices(&self.jobs[&id].spec.request, first, end))
        };
        let job = self
            .jobs
            .get_mut(&id)
            .map(Arc::make_mut)
            .expect("pending job exists");
        self.usage.start(id, limits::alloc_tres(&nodes), now, end);
        if !claimed {
            self.profile.claim_all(&nodes, now, end);
        }
        self.backfill.on_start(id, &nodes, now, end);
        self.free_now.take(&self.cluster, &nodes);
        job.state = JobState::Running;
        job.reason = PendingReason::None;
        job.unavailable_nodes.clear();
        job.start = Some(now);
        job.planned_start = Some(now);
        let alloc = Allocation { nodes };
        job.alloc = Some(alloc.clone());
        self.claims_end.insert((end, id));
        self.claim_end.insert(id, end);
        side_claims::take(self, id, &alloc.nodes, now);
        crate::borrow::started(self, id);
        self.changed.remove(&id);
        self.unindex(id);
        crate::timeslice::started(self, id);
        out.push(Decision::Start {
            job: id,
            at: now,
            alloc,
            pass,
        });
    }

    /// Whether `nodes` name the GPUs `req` takes on every node that needs some.
    fn gpus_placed(&self, req: &crate::job::JobRequest, nodes: &[NodeAlloc]) -> bool {
        nodes.iter().all(|a| {
            !self.gpus.involved(a.node, &a.usage, req.exclusive)
                || !a.gpus.is_empty()
                || !a.shards.is_empty()
        })
    }

    /// `nodes` with the book's first choice of GPUs on each, unchecked.
    fn first_choices(
        &self,
        req: &crate::job::JobRequest,
        mut nodes: Vec<NodeAlloc>,
        end: Time,
    ) -> Vec<NodeAlloc> {
        for a in &mut nodes {
            if self.gpus.involved(a.node, &a.usage, req.exclusive) {
                let c = self
                    .gpus
                    .choices(a.node, &a.usage, req.exclusive, end)
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                a.gpus = c.gpus;
                a.shards = c.shards;
            }
        }
        nodes
    }

    /// The pending job that `victim` (running) is being preempted for, if any.
    pub fn preemptor_of(&self, victim: JobId) -> Option<JobId> {
        self.preempt.preemptor_of(victim)
    }

    /// Takes back a preemption that was under way when the caller last stopped (a
    /// controller restart): `victims`, restored running with
    /// [`Scheduler::restore_running`], are being preempted for `by`. They are not chosen
    /// again, `by` preempts nothing more while it waits for them, and what they free
    /// once reported ended is held for it, as if the preemption had been decided here.
    /// Victims no longer running are left out; nothing is recorded when none is left.
    pub fn restore_preemption(&mut self, by: JobId, victims: &[JobId]) {
        crate::preempt::restore(self, by, victims);
    }

    /// Sets a pending job's reason.
    pub(crate) fn set_reason(&mut self, id: JobId, reason: PendingReason) {
        if self.jobs.get(&id).is_some_and(|j| j.reason != reason) {
            self.note(id);
            let job = self.jobs.get_mut(&id).map(Arc::make_mut).expect("checked");
            job.reason = reason;
            job.unavailable_nodes.clear();
        }
    }

    /// Gives job `to` the reason of job `from` (with the nodes it names, if any).
    pub(crate) fn copy_reason(&mut self, to: JobId, from: JobId) {
        let Some(j) = self.jobs.get(&from) else {
            return;
        };
        if j.reason == PendingReason::NamedNodesUnavailable {
            let nodes = j.unavailable_nodes.clone();
            self.set_nodes_unavailable(to, nodes);
        } else {
            let reason = j.reason;
            self.set_reason(to, reason);
        }
    }

    /// Sets job `id`'s reason to [`PendingReason::NamedNodesUnavailable`], naming
    /// `nodes` (ascending).
    pub(crate) fn set_nodes_unavailable(&mut self, id: JobId, nodes: Vec<NodeId>) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if job.reason != PendingReason::NamedNodesUnavailable || job.unavailable_nodes != nodes {
            self.note(id);
            let job = self.jobs.get_mut(&id).map(Arc::make_mut).expect("checked");
            job.reason = PendingReason::NamedNodesUnavailable;
            job.unavailable_nodes = nodes;
        }
    }
}

/// A job as the limit checks see it.
pub(crate) fn view(spec: &JobSpec) -> JobView<'_> {
    JobView {
        id: spec.id,
        user: spec.user,
        acct: spec.acct,
        partition: spec.partition,
        time_limit: spec.time_limit,
        request: &spec.request,
    }
}

/// The distinct node configurations among `nodes` (capacity, features, processors kept
/// for GPUs) with how many nodes have each: what a submission is judged against.
pub(crate) fn node_configs_of(cluster: &Cluster, nodes: &[NodeId]) -> Vec<NodeConfig> {
    let mut groups: Vec<NodeConfig> = Vec::new();
    for &n in nodes {
        let node = cluster.node(n);
        let reserve = GpuReserve::of(cluster, n);
        match groups.iter_mut().find(|g| {
            g.capacity == node.capacity && g.features == node.features && g.reserve == reserve
        }) {
            Some(g) => g.count += 1,
            None => groups.push(NodeConfig {
                capacity: node.capacity,
                features: node.features,
                reserve,
                count: 1,
            }),
        }
    }
    groups
}
