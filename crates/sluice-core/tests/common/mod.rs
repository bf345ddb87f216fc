//! A tiny harness for the integration tests: cluster and job builders, and a replay
//! loop that drives a [`Scheduler`] the way the simulator does.
//!
//! Event order (as in `sluice-sim`'s replay): events in time order; at equal times
//! submissions come before terminations (submissions in the order given, terminations
//! in start order); one `schedule(now)` after every submission and every termination;
//! and a `schedule` pass at every `next_wakeup()` in between. A job ends at
//! `start + min(run, time limit)`: the harness, not the core, kills it at its limit.
//!
//! Since every job is reported ended exactly at its expected end or before, the
//! harness runs the core under the simulator's [`EndSemantics::FreeAtExpectedEnd`] by
//! default, as `sluice-sim` does; [`Harness::with_end_semantics`] picks the other.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use sluice_core::limits::{AssocId, JobAcct, QosId};
use sluice_core::{
    Allocation, BackfillParams, Cluster, Decision, EndSemantics, JobId, JobRequest, JobSpec,
    NodeId, PartitionId, Pass, Policy, Scheduler, Secs, SubmitError, Time,
};

/// `nodes` nodes of `cpus_per_node` processors, in one default partition `batch`.
pub fn cluster(nodes: u32, cpus_per_node: u32) -> Cluster {
    Cluster::homogeneous("batch", nodes, cpus_per_node)
}

/// One node per `(cpus, gpus)` pair, in one default partition `batch`, GRES slot 0
/// being `gpu`.
pub fn gpu_cluster(nodes: &[(u32, u32)]) -> Cluster {
    let mut c = Cluster::homogeneous("batch", nodes.len() as u32, 1);
    let gpu = c.gres.slot_for("gpu", None).expect("first slot");
    assert_eq!(gpu, 0);
    for (node, &(cpus, gpus)) in c.nodes.iter_mut().zip(nodes) {
        node.capacity.cpus = cpus;
        node.capacity.gres[gpu] = gpus;
    }
    c
}

/// `cluster` with a tree topology: leaf switch `s{i}` over each group of `per_switch`
/// consecutive nodes.
pub fn with_switches(mut c: Cluster, per_switch: usize) -> Cluster {
    let leaves = c.nodes.len().div_ceil(per_switch);
    c.switches = (0..leaves).map(|i| format!("s{i}")).collect();
    for (i, n) in c.nodes.iter_mut().enumerate() {
        n.leaf_switch = Some((i / per_switch) as u16);
    }
    c
}

/// `cluster` with a block topology: base block `b{i}` over each group of `per_block`
/// consecutive nodes, and the aggregates `larger` (ranges of block indices) above them.
pub fn with_blocks(mut c: Cluster, per_block: usize, larger: &[(u16, u16)]) -> Cluster {
    c = with_switches(c, per_block);
    let n = c.switches.len() as u16;
    c.switches = (0..n).map(|i| format!("b{i}")).collect();
    let mut aggregates: Vec<(u16, u16)> = (0..n).map(|i| (i, i + 1)).collect();
    aggregates.extend_from_slice(larger);
    c.blocks = Some(sluice_core::BlockLayout {
        aggregates,
        base_size: per_block as u32,
    });
    c
}

/// Slurm-style backfill that plans to the second and runs every second.
pub fn backfill(window: Secs) -> Policy {
    Policy::Backfill(BackfillParams {
        interval: 1,
        resolution: 1,
        window,
        ..Default::default()
    })
}

/// A job to replay: what it asks for and how long it really runs.
#[derive(Clone, Debug)]
pub struct JobBuilder {
    pub id: u64,
    pub submit: Time,
    pub time: Secs,
    /// Actual run time; `None` runs it to its time limit.
    pub run: Option<Secs>,
    pub request: JobRequest,
    pub priority: u32,
    pub partition: u16,
    /// Association and QOS, for accounting limits.
    pub acct: JobAcct,
    /// Owner's uid (1000 unless said).
    pub user: u32,
}

/// A one-processor job with a 100 s limit, submitted at 0, that runs to its limit.
pub fn job(id: u64) -> JobBuilder {
    JobBuilder {
        id,
        submit: 0,
        time: 100,
        run: None,
        request: JobRequest::procs(1),
        priority: 0,
        partition: 0,
        acct: JobAcct::default(),
        user: 1000,
    }
}

impl JobBuilder {
    /// `n` one-processor tasks, on as many nodes as it takes.
    pub fn procs(mut self, n: u32) -> Self {
        self.request.ntasks = n;
        self
    }
    /// Time limit (`--time`), in seconds.
    pub fn time(mut self, secs: Secs) -> Self {
        self.time = secs;
        self
    }
    /// Actual run time; a run longer than the limit is cut at the limit.
    pub fn run(mut self, secs: Secs) -> Self {
        self.run = Some(secs);
        self
    }
    pub fn submit(mut self, t: Time) -> Self {
        self.submit = t;
        self
    }
    pub fn priority(mut self, p: u32) -> Self {
        self.priority = p;
        self
    }
    /// The job's association and QOS.
    pub fn acct(mut self, assoc: Option<u32>, qos: Option<u32>) -> Self {
        self.acct = JobAcct {
            assoc: assoc.map(AssocId),
            qos: qos.map(QosId),
            ..JobAcct::default()
        };
        self
    }
    /// The owner's uid.
    pub fn user(mut self, uid: u32) -> Self {
        self.user = uid;
        self
    }
    pub fn partition(mut self, p: u16) -> Self {
        self.partition = p;
        self
    }
    /// All tasks on a single node.
    pub fn one_node(mut self) -> Self {
        self.request.min_nodes = 1;
        self.request.max_nodes = 1;
        self
    }
    /// Exactly `n` nodes (`-N n`).
    pub fn nodes(mut self, n: u32) -> Self {
        self.request.min_nodes = n;
        self.request.max_nodes = n;
        self
    }
    /// Must include these nodes (`-w`), node count raised to their number.
    pub fn on(mut self, nodes: &[u32]) -> Self {
        self.request.nodelist = nodes.iter().map(|&n| NodeId(n)).collect();
        self.request.min_nodes = self.request.min_nodes.max(nodes.len() as u32);
        self
    }
    /// Must not get these nodes (`-x`).
    pub fn except(mut self, nodes: &[u32]) -> Self {
        self.request.exclude = nodes.iter().map(|&n| NodeId(n)).collect();
        self
    }
    /// Whole nodes only (`--exclusive`).
    pub fn exclusive(mut self) -> Self {
        self.request.exclusive = true;
        self
    }

    /// `-s/--oversubscribe`.
    pub fn oversubscribe(mut self) -> Self {
        self.request.oversubscribe = true;
        self
    }

    /// `n` GPUs on each of its nodes (`--gres=gpu:n`); the cluster's slot 0 must be
    /// `gpu` (see [`gpu_cluster`]).
    pub fn gpus(mut self, n: u32) -> Self {
        self.request.gres_per_node[0] = n;
        self
    }

    /// `n` shards of a GPU on each of its nodes (`--gres=shard:n`); the cluster's slot 1
    /// must be `shard` (see `tests/gpu_indices.rs`).
    pub fn shards(mut self, n: u32) -> Self {
        self.request.gres_per_node[1] = n;
        self
    }

    /// `--switches=max@wait`: at most `max` leaf switches until `wait` seconds after
    /// its submission.
    pub fn switches(mut self, max: u32, wait: Secs) -> Self {
        self.request.switches = Some(sluice_core::job::SwitchLimit {
            max,
            until: self.submit + wait,
        });
        self
    }

    /// `--segment=n` (block topology).
    pub fn segment(mut self, n: u32) -> Self {
        self.request.segment = Some(n);
        self
    }

    /// When the harness ends the job, measured from its start.
    pub fn ran_for(&self) -> Secs {
        self.run.unwrap_or(self.time).min(self.time)
    }

    pub fn spec(&self) -> JobSpec {
        JobSpec {
            id: JobId(self.id),
            user: self.user,
            partition: PartitionId(self.partition),
            submit: self.submit,
            begin: self.submit,
            request: self.request.clone(),
            time_limit: self.time,
            priority: self.priority,
            acct: self.acct,
        }
    }
}

/// What happened to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub start: Time,
    pub finish: Time,
    /// The pass that started it.
    pub pass: Pass,
    pub alloc: Allocation,
}

impl Outcome {
    /// Node ids, ascending.
    pub fn nodes(&self) -> Vec<u32> {
        self.alloc.node_ids().map(|n| n.0).collect()
    }
}

/// The event after which the harness called `schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Submitted(JobId),
    Ended(JobId),
    Wakeup,
}

/// The outcome of a replay.
#[derive(Debug, Default)]
pub struct Replay {
    /// Started jobs by id (finished ones, and any the loop left running).
    pub jobs: BTreeMap<u64, Outcome>,
    /// Submissions the core refused.
    pub rejected: Vec<(u64, SubmitError)>,
}

impl Replay {
    pub fn get(&self, id: u64) -> &Outcome {
        self.jobs
            .get(&id)
            .unwrap_or_else(|| panic!("job {id} never started"))
    }
    pub fn start(&self, id: u64) -> Time {
        self.get(id).start
    }
    pub fn finish(&self, id: u64) -> Time {
        self.get(id).finish
    }
    pub fn nodes(&self, id: u64) -> Vec<u32> {
        self.get(id).nodes()
    }
    /// The GPU indices it got whole, per node.
    pub fn gpus(&self, id: u64) -> Vec<Vec<u32>> {
        self.get(id)
            .alloc
            .nodes
            .iter()
            .map(|a| a.gpus.clone())
            .collect()
    }
    /// The shards it got, (GPU, shards) per node.
    pub fn shards(&self, id: u64) -> Vec<Vec<(u32, u32)>> {
        self.get(id)
            .alloc
            .nodes
            .iter()
            .map(|a| a.shards.clone())
            .collect()
    }
    /// `(id, start)` of every started job, by id.
    pub fn starts(&self) -> Vec<(u64, Time)> {
        self.jobs.iter().map(|(id, o)| (*id, o.start)).collect()
    }
}

/// Replays jobs through a [`Scheduler`].
pub struct Harness {
    pub sched: Scheduler,
}

/// A replay that goes on this long has lost its way.
const MAX_EVENTS: usize = 200_000;

impl Harness {
    /// A harness with the simulator's end semantics.
    pub fn new(cluster: Cluster, policy: Policy) -> Self {
        Self::with_end_semantics(cluster, policy, EndSemantics::FreeAtExpectedEnd)
    }

    pub fn with_end_semantics(cluster: Cluster, policy: Policy, ends: EndSemantics) -> Self {
        Harness {
            sched: Scheduler::with_end_semantics(cluster, policy, ends),
        }
    }

    /// Replays `jobs` to the end.
    pub fn run(&mut self, jobs: &[JobBuilder]) -> Replay {
        self.run_observed(jobs, |_, _, _| {})
    }

    /// Replays `jobs`, calling `observe(now, event, scheduler)` after every `schedule`
    /// call (with that call's decisions already carried out).
    pub fn run_observed(
        &mut self,
        jobs: &[JobBuilder],
        mut observe: impl FnMut(Time, Event, &Scheduler),
    ) -> Replay {
        let mut order: Vec<&JobBuilder> = jobs.iter().collect();
        order.sort_by_key(|j| j.submit); // stable: given order among equal times
        let by_id: BTreeMap<u64, &JobBuilder> = jobs.iter().map(|j| (j.id, j)).collect();
        let sched = &mut self.sched;
        let mut out = Replay::default();
        let mut ends: BinaryHeap<Reverse<(Time, u64, JobId)>> = BinaryHeap::new();
        let mut end_seq = 0u64;
        let mut next = 0usize;
        let mut clock = Time::MIN;
        let mut woke_at: Option<Time> = None;
        for _ in 0..MAX_EVENTS {
            let ts = order.get(next).map(|j| j.submit);
            let te = ends.peek().map(|r| r.0 .0);
            let tw = sched
                .next_wakeup()
                .map(|w| w.max(clock))
                .filter(|w| woke_at != Some(*w));
            let Some(now) = [ts, te, tw].into_iter().flatten().min() else {
                return out;
            };
            clock = now;
            let event = if ts == Some(now) {
                let j = order[next];
                next += 1;
                woke_at = None;
                if let Err(e) = sched.submit(j.spec(), now) {
                    out.rejected.push((j.id, e));
                    continue;
                }
                Event::Submitted(JobId(j.id))
            } else if te == Some(now) {
                let Reverse((_, _, id)) = ends.pop().expect("peeked");
                woke_at = None;
                assert!(
                    sched.job_ended(id, now).is_some(),
                    "job {id} was not running at {now}"
                );
                out.jobs.get_mut(&id.0).expect("started").finish = now;
                Event::Ended(id)
            } else {
                woke_at = Some(now);
                Event::Wakeup
            };
            for d in sched.schedule(now) {
                let Decision::Start {
                    job,
                    at,
                    alloc,
                    pass,
                } = d
                else {
                    panic!("this harness does not preempt (see tests/preempt.rs): {d:?}");
                };
                assert_eq!(
                    at, now,
                    "job {job} started at {at} during the pass at {now}"
                );
                let finish = at + by_id[&job.0].ran_for();
                ends.push(Reverse((finish, end_seq, job)));
                end_seq += 1;
                let o = Outcome {
                    start: at,
                    finish,
                    pass,
                    alloc,
                };
                assert!(
                    out.jobs.insert(job.0, o).is_none(),
                    "job {job} started twice"
                );
            }
            observe(now, event, sched);
        }
        panic!("no end after {MAX_EVENTS} events");
    }
}

/// Replays `jobs` on `cluster` under `policy` with the simulator's end semantics.
pub fn replay(cluster: Cluster, policy: Policy, jobs: &[JobBuilder]) -> Replay {
    Harness::new(cluster, policy).run(jobs)
}

/// Replays `jobs` under both end semantics, checks that every job starts and ends at
/// the same time on the same nodes under both, and returns the outcome.
pub fn replay_both(cluster: Cluster, policy: Policy, jobs: &[JobBuilder]) -> Replay {
    let free = replay(cluster.clone(), policy.clone(), jobs);
    let held =
        Harness::with_end_semantics(cluster, policy.clone(), EndSemantics::HoldUntilReported)
            .run(jobs);
    type Key = (
        u64,
        Time,
        Time,
        Vec<u32>,
        Vec<Vec<u32>>,
        Vec<Vec<(u32, u32)>>,
    );
    let key = |r: &Replay| -> Vec<Key> {
        r.jobs
            .keys()
            .map(|&id| {
                let o = r.get(id);
                (id, o.start, o.finish, o.nodes(), r.gpus(id), r.shards(id))
            })
            .collect()
    };
    assert_eq!(
        key(&free),
        key(&held),
        "{}: the end semantics disagree",
        policy.name()
    );
    assert_eq!(free.rejected, held.rejected);
    free
}
