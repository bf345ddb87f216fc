//! The scheduler: the core's state machine.
//!
//! Callers feed it events and the current time and carry out the decisions it returns:
//!
//! ```text
//! submit(spec, now) ─┐
//! job_ended(id, now) ─┼─► schedule(now) ─► [Decision::Start ...]
//! cancel(id, now) ───┘        ▲
//!                next_wakeup() ┘ (call schedule again at that time at the latest)
//! ```
//!
//! It never reads a clock and never does I/O, so the simulator and the controller get
//! the same decisions from the same inputs.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Cluster, NodeState, PartitionState};
use crate::decision::{Decision, Pass};
use crate::free_now::FreeNow;
use crate::ids::{JobId, NodeId, PartitionId};
use crate::job::{Allocation, Job, JobSpec, JobState, NodeAlloc, PendingReason};
use crate::policy::{backfill, conservative, easy, fcfs, Policy};
use crate::profile::Profile;
use crate::select::{choose_nodes, max_tasks, node_can_ever_host};
use crate::time::{Time, NEVER};

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
}

impl std::fmt::Display for SubmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubmitError::DuplicateId(id) => write!(f, "job id {id} is already in use"),
            SubmitError::NoSuchPartition(_) => write!(f, "Invalid partition name specified"),
            SubmitError::PartitionClosed(_) => {
                write!(f, "Partition in DRAIN or INACTIVE state, no new jobs accepted")
            }
            SubmitError::NodeConfigUnavailable => {
                write!(f, "Requested node configuration is not available")
            }
            SubmitError::InvalidRequest(why) => write!(f, "{why}"),
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

/// The scheduling core: cluster, jobs, queue, availability profile and policy.
#[derive(Clone, Debug)]
pub struct Scheduler {
    pub(crate) cluster: Cluster,
    pub(crate) policy: Policy,
    pub(crate) jobs: BTreeMap<JobId, Job>,
    pub(crate) queue: BTreeMap<QueueKey, JobId>,
    pub(crate) keys: BTreeMap<JobId, QueueKey>,
    /// Running jobs' claims, plus reservations under conservative backfilling.
    pub(crate) profile: Profile,
    pub(crate) free_now: FreeNow,
    /// Up nodes of each partition, ascending.
    pub(crate) candidates: Vec<Vec<NodeId>>,
    /// Running jobs by the end of their claim on the profile.
    pub(crate) claims_end: BTreeSet<(Time, JobId)>,
    pub(crate) claim_end: BTreeMap<JobId, Time>,
    pub(crate) next_seq: u64,
    pub(crate) conservative: conservative::State,
    pub(crate) backfill: backfill::State,
}

impl Scheduler {
    /// A scheduler for `cluster` running `policy`, with no jobs.
    pub fn new(cluster: Cluster, policy: Policy) -> Self {
        let profile = Profile::new(&cluster);
        let free_now = FreeNow::new(&cluster);
        let mut s = Scheduler {
            cluster,
            policy,
            jobs: BTreeMap::new(),
            queue: BTreeMap::new(),
            keys: BTreeMap::new(),
            profile,
            free_now,
            candidates: Vec::new(),
            claims_end: BTreeSet::new(),
            claim_end: BTreeMap::new(),
            next_seq: 0,
            conservative: Default::default(),
            backfill: Default::default(),
        };
        s.refresh_candidates();
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
        self.jobs.get(&id)
    }

    /// All pending and running jobs, by id.
    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// Pending jobs in the order the policy considers them.
    pub fn pending(&self) -> impl Iterator<Item = &Job> {
        self.queue.values().map(|id| &self.jobs[id])
    }

    /// Number of pending jobs.
    pub fn pending_count(&self) -> usize {
        self.queue.len()
    }

    /// Number of running jobs.
    pub fn running_count(&self) -> usize {
        self.jobs.len() - self.queue.len()
    }

    /// Sets a node's state. Running jobs are not touched (the caller decides their fate);
    /// a DOWN or DRAIN node receives no new work.
    pub fn set_node_state(&mut self, node: NodeId, state: NodeState) {
        self.cluster.nodes[node.index()].state = state;
        self.refresh_candidates();
        self.free_now.recount(&self.cluster);
        self.backfill.dirty = true;
    }

    fn refresh_candidates(&mut self) {
        self.candidates = self
            .cluster
            .partitions
            .iter()
            .map(|p| {
                p.nodes
                    .iter()
                    .copied()
                    .filter(|n| self.cluster.node(*n).state == NodeState::Up)
                    .collect()
            })
            .collect();
    }

    /// Queues a job. Checks that the id is free, the partition exists and takes jobs,
    /// and that the request could be met by the partition's nodes if they were empty;
    /// otherwise returns the reason and changes nothing.
    pub fn submit(&mut self, spec: JobSpec, now: Time) -> Result<(), SubmitError> {
        if self.jobs.contains_key(&spec.id) {
            return Err(SubmitError::DuplicateId(spec.id));
        }
        let Some(part) = self.cluster.partitions.get(spec.partition.index()) else {
            return Err(SubmitError::NoSuchPartition(spec.partition));
        };
        if matches!(part.state, PartitionState::Drain | PartitionState::Inactive) {
            return Err(SubmitError::PartitionClosed(spec.partition));
        }
        if spec.time_limit < 1 {
            return Err(SubmitError::InvalidRequest("time limit must be at least one second"));
        }
        if spec.request.ntasks < 1 || spec.request.ntasks < spec.request.min_nodes {
            return Err(SubmitError::InvalidRequest("need at least one task per node"));
        }
        let req = &spec.request;
        let ever: Vec<(NodeId, u32)> = part
            .nodes
            .iter()
            .map(|&n| {
                let node = self.cluster.node(n);
                let k = if node_can_ever_host(req, node) {
                    max_tasks(req, &node.capacity, &node.capacity)
                } else {
                    0
                };
                (n, k)
            })
            .collect();
        if choose_nodes(req, &ever, &self.cluster).is_none() {
            return Err(SubmitError::NodeConfigUnavailable);
        }
        self.profile.advance(now);
        let key = QueueKey {
            tier: Reverse(if self.policy.uses_priority() { part.priority_tier } else { 0 }),
            priority: Reverse(if self.policy.uses_priority() { spec.priority } else { 0 }),
            seq: self.next_seq,
        };
        self.next_seq += 1;
        let id = spec.id;
        self.jobs.insert(
            id,
            Job {
                spec,
                state: JobState::Pending,
                reason: PendingReason::None,
                start: None,
                alloc: None,
                planned_start: None,
                seq: key.seq,
            },
        );
        self.queue.insert(key, id);
        self.keys.insert(id, key);
        self.backfill.dirty = true;
        if let Policy::Conservative = self.policy {
            self.conservative.unplanned.insert(key);
        }
        Ok(())
    }

    /// Records that a running job has ended at `now` (for whatever reason: completed,
    /// failed, killed at its limit) and releases what remains of its claim. Returns the
    /// job's last state, or `None` if no such job was running (nothing changes then).
    pub fn job_ended(&mut self, id: JobId, now: Time) -> Option<Job> {
        if self.jobs.get(&id)?.state != JobState::Running {
            return None;
        }
        self.profile.advance(now);
        let job = self.jobs.remove(&id).expect("checked above");
        let alloc = job.alloc.as_ref().expect("running jobs have an allocation");
        let end = self.claim_end.remove(&id).expect("running jobs have a claim");
        self.claims_end.remove(&(end, id));
        if now < end {
            self.profile.release_all(&alloc.nodes, now, end);
        }
        self.free_now.give_back(&self.cluster, &alloc.nodes);
        self.backfill.dirty = true;
        if now < job.expected_end().unwrap_or(NEVER) {
            self.conservative.ended_early = true;
        }
        Some(job)
    }

    /// Removes a pending job from the queue (and any reservation it holds). Returns the
    /// job, or `None` if it is not pending. A running job is ended with
    /// [`Scheduler::job_ended`] once its processes are gone.
    pub fn cancel_pending(&mut self, id: JobId, now: Time) -> Option<Job> {
        if self.jobs.get(&id)?.state != JobState::Pending {
            return None;
        }
        self.profile.advance(now);
        let key = self.keys.remove(&id).expect("pending jobs have a key");
        self.queue.remove(&key);
        let job = self.jobs.remove(&id).expect("checked above");
        conservative::forget(self, &job, key);
        self.backfill.dirty = true;
        Some(job)
    }

    /// Runs the policy's pass at `now` and returns the jobs to start.
    pub fn schedule(&mut self, now: Time) -> Vec<Decision> {
        self.profile.advance(now);
        self.extend_overruns(now);
        let mut out = Vec::new();
        match self.policy.clone() {
            Policy::Fcfs => {
                fcfs::pass(self, now, &mut out);
            }
            Policy::Easy => easy::pass(self, now, &mut out),
            Policy::Conservative => conservative::pass(self, now, &mut out),
            Policy::Backfill(params) => backfill::pass(self, now, &params, &mut out),
        }
        out
    }

    /// The latest time at which [`Scheduler::schedule`] should be called again even if
    /// no job arrives or ends: a planned start coming due, a `--begin` time, the next
    /// backfill pass. `None` when only new events can change anything.
    pub fn next_wakeup(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut consider = |x: Time| t = Some(t.map_or(x, |t: Time| t.min(x)));
        if let Some(&(at, _)) = self.conservative.planned.iter().next() {
            consider(at);
        }
        if !self.queue.is_empty() {
            if let Policy::Backfill(_) = self.policy {
                if self.backfill.dirty {
                    consider(self.backfill.next_pass);
                }
            }
            for id in self.queue.values() {
                let j = &self.jobs[id];
                if j.reason == PendingReason::BeginTime {
                    consider(j.spec.begin);
                }
            }
        }
        t
    }

    /// A running job that outlives its claim (a job past its limit still being killed)
    /// keeps its resources: its claim is stretched to just past `now`.
    fn extend_overruns(&mut self, now: Time) {
        while let Some(&(end, id)) = self.claims_end.iter().next() {
            if end >= now {
                break;
            }
            let nodes = self.jobs[&id].alloc.as_ref().expect("running").nodes.clone();
            self.profile.claim_all(&nodes, end, now + 1);
            self.claims_end.remove(&(end, id));
            self.claims_end.insert((now + 1, id));
            self.claim_end.insert(id, now + 1);
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

    /// Whether `id` may start at `now` as far as time and partition go; sets its reason
    /// when not.
    pub(crate) fn eligible(&mut self, id: JobId, now: Time) -> bool {
        let job = self.jobs.get_mut(&id).expect("queued job exists");
        let part = self.cluster.partition(job.spec.partition);
        if matches!(part.state, PartitionState::Down | PartitionState::Inactive) {
            job.reason = PendingReason::PartitionDown;
            return false;
        }
        if job.spec.begin > now {
            job.reason = PendingReason::BeginTime;
            return false;
        }
        true
    }

    /// Nodes `job` may use: its partition's up nodes with a wanted feature.
    pub(crate) fn candidates_for(&self, job: &Job) -> Vec<NodeId> {
        let nodes = &self.candidates[job.spec.partition.index()];
        let want = job.spec.request.features_any;
        if want == 0 {
            nodes.clone()
        } else {
            nodes
                .iter()
                .copied()
                .filter(|n| self.cluster.node(*n).features & want != 0)
                .collect()
        }
    }

    /// Where `id` could start right now for its whole time limit, if anywhere.
    pub(crate) fn fit_now(&self, id: JobId, now: Time) -> Option<Vec<NodeAlloc>> {
        let job = &self.jobs[&id];
        if !self.free_now.might_fit(job.spec.partition, &job.spec.request) {
            return None;
        }
        let cands = self.candidates_for(job);
        self.profile
            .fits_now(&self.cluster, &job.spec.request, &cands, job.spec.time_limit, now)
            .filter(|nodes| self.free_now_holds(nodes))
    }

    /// Whether `nodes` are free right now. The profile frees a running job's share at its
    /// expected end, but the job holds it until [`Scheduler::job_ended`] reports it gone:
    /// at `now` equal to that end the two differ until the termination is processed.
    pub(crate) fn free_now_holds(&self, nodes: &[NodeAlloc]) -> bool {
        nodes.iter().all(|a| a.usage.fits_in(&self.free_now.node(a.node)))
    }

    /// Starts a pending job at `now` on `nodes`. With `claimed`, its claim is already on
    /// the profile (a reservation coming due); otherwise it is added.
    pub(crate) fn start(
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
        let job = self.jobs.get_mut(&id).expect("pending job exists");
        let end = now + job.spec.time_limit;
        if !claimed {
            self.profile.claim_all(&nodes, now, end);
        }
        self.free_now.take(&self.cluster, &nodes);
        job.state = JobState::Running;
        job.reason = PendingReason::None;
        job.start = Some(now);
        job.planned_start = Some(now);
        let alloc = Allocation { nodes };
        job.alloc = Some(alloc.clone());
        self.claims_end.insert((end, id));
        self.claim_end.insert(id, end);
        out.push(Decision::Start {
            job: id,
            at: now,
            alloc,
            pass,
        });
    }

    /// Sets a pending job's reason.
    pub(crate) fn set_reason(&mut self, id: JobId, reason: PendingReason) {
        if let Some(j) = self.jobs.get_mut(&id) {
            j.reason = reason;
        }
    }
}
