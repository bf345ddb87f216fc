//! The controller's job state: what it keeps of each job, with types.
//!
//! A [`Job`] is the controller's own: its nodes are the configuration's [`NodeId`]s
//! with what the job holds on each ([`NodeShare`]), its pending reason a [`Reason`],
//! its hold a [`Hold`], a requeued run still ending a [`RunEnding`]. `JobRecord`
//! (`sluice_proto`) is what crosses the boundaries — the wire answer (`squeue`,
//! `scontrol show job`, `sacct`), the launch order, and the database row — and is built
//! only there ([`Job::to_record`]; the controller's `record`, `stored` and `listed`),
//! and read back into a `Job` only when the controller starts ([`Job::from_record`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use sluice_core::{JobId, NodeId};
use sluice_proto::types::{
    compact_indices, EndingRun, Hold, JobDescription, JobRecord, JobState, MemoryRequest,
    StartPass, Suspension,
};

use super::reason::Reason;
use crate::config::ClusterConfig;

/// A job as the controller keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// For array tasks: the array's job id and this task's index.
    pub array: Option<(JobId, u32)>,
    /// For the array's record (the task holding the array's id): the indices still to
    /// start, and the throttle (`%N`).
    pub array_pending: Option<Box<(Vec<u32>, Option<u32>)>>,
    /// An unstarted array task changed on its own (`scontrol update JobId=A_T`, `hold`,
    /// `release`): Slurm splits it from the array's record then, and `squeue
    /// --array-unique` lists it on its own line.
    pub split: bool,
    /// Owner's uid.
    pub uid: u32,
    /// Owner's gid.
    pub gid: u32,
    /// Owner's name.
    pub user: Arc<str>,
    /// Owner's group name.
    pub group: Arc<str>,
    /// Account.
    pub account: Arc<str>,
    /// Partition, by name (a record read back may name one the configuration no
    /// longer has; such a job never enters the core).
    pub partition: Arc<str>,
    /// QOS.
    pub qos: Arc<str>,
    /// State.
    pub state: JobState,
    /// Why it waits, as the controller last set it. A job queued in the core shows
    /// the core's reason instead, read when a record is built.
    pub reason: Reason,
    /// Priority (multifactor: the last one computed).
    pub priority: u32,
    /// Submission, Unix seconds.
    pub submit_time: i64,
    /// Start of its latest run.
    pub start_time: Option<i64>,
    /// End.
    pub end_time: Option<i64>,
    /// Expected start: its start once started (kept across a requeue, as a record
    /// shows it); a queued job's is read from the core when a record is built.
    pub planned_start: Option<i64>,
    /// Time limit, seconds; `None` is UNLIMITED.
    pub time_limit: Option<i64>,
    /// What it holds on each of its nodes, in allocation order (its batch script runs
    /// on the first); empty unless it runs (or ran).
    pub alloc: Vec<NodeShare>,
    /// Memory per node of its latest run, MiB (kept across a requeue, as a record
    /// shows it).
    pub mem_per_node: u64,
    /// The partition's default memory that applied to it (see
    /// `JobRecord::mem_default`).
    pub mem_default: Option<MemoryRequest>,
    /// Tasks (resolved).
    pub ntasks: u32,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// Nodes asked (min).
    pub min_nodes: u32,
    /// Exit code of its batch script or allocation.
    pub exit_code: i32,
    /// Terminating signal.
    pub signal: i32,
    /// Its run: how many times it was requeued (the agents' reports name the run they
    /// belong to).
    pub restarts: u32,
    /// Who holds it back, while it is pending.
    pub hold: Option<Hold>,
    /// Who cancelled it (uid).
    pub cancelled_by: Option<u32>,
    /// Resolved standard output path.
    pub stdout: Arc<str>,
    /// Resolved standard error path.
    pub stderr: Arc<str>,
    /// Resolved standard input path.
    pub stdin: Arc<str>,
    /// The submission, without its script and environment (kept in the store, see
    /// `state/script.rs`). Shared: an array's tasks have their array's, and a
    /// submission the same as its owner's last one (a loop of `sbatch`) that one's;
    /// changed through `Arc::make_mut`.
    pub desc: Arc<JobDescription>,
    /// The next step's number.
    pub next_step: u32,
    /// The pass that started its latest run.
    pub start_pass: Option<StartPass>,
    /// The run whose processes are being ended (`COMPLETING`): this run, told to end
    /// or ended, or a requeued job's previous one.
    pub ending_run: Option<Box<RunEnding>>,
    /// Why it could never run, when it failed on entering the queue.
    pub refused: Option<String>,
    /// Trackable resources asked (see `JobRecord::tres_req`). Shared, as `desc` is,
    /// with the last job that asked the same (see [`Shared::share_tres`]).
    pub tres_req: Arc<[(String, u64)]>,
    /// Trackable resources allocated to its latest run; empty before it starts.
    pub tres_alloc: Vec<(String, u64)>,
    /// Since when it accrues age for its priority (`AccrueTime`).
    pub accrue_time: Option<i64>,
    /// While it runs: flagged for idle GPUs (`state/idle_gpus.rs`).
    pub idle_gpus: Option<Box<sluice_proto::usage::IdleGpus>>,
    /// A service's restarts in place and health (`state/service.rs`).
    pub service: Option<Box<sluice_proto::service::ServiceState>>,
    /// Its latest run's suspensions by operators (`scontrol suspend`), if any. A
    /// suspended job stays `Running` here; its record says `SUSPENDED`.
    pub suspension: Option<Box<Suspension>>,
    /// A heterogeneous job's component: leader, offset, size.
    pub het: Option<sluice_proto::types::HetJob>,
}

/// What jobs share rather than each keeping a copy: each owner's last submission (by
/// uid), which a submission the same as its owner's last one shares, as a loop of
/// `sbatch` with the same options does (one per owner); the TRES last asked, which a
/// queue of like jobs shares whoever owns them; and the names of owners, groups,
/// accounts, partitions and QOS and standard input's path, one copy of each.
#[derive(Debug, Default)]
pub struct Shared {
    descs: std::collections::BTreeMap<u32, Arc<JobDescription>>,
    tres: Option<Arc<[(String, u64)]>>,
    names: BTreeSet<Arc<str>>,
    /// How many names to hold before forgetting those no job uses any more.
    names_limit: usize,
}

impl Shared {
    /// `desc` for a job of `uid`: its owner's last submission if the same, else a new
    /// one, kept as that owner's last.
    pub fn share(&mut self, uid: u32, desc: &JobDescription) -> Arc<JobDescription> {
        match self.descs.get(&uid) {
            Some(last) if **last == *desc => last.clone(),
            _ => {
                let new = Arc::new(desc.clone());
                self.descs.insert(uid, new.clone());
                new
            }
        }
    }

    /// The one copy of `name`.
    pub fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return n.clone();
        }
        if self.names.len() >= self.names_limit {
            self.names.retain(|n| Arc::strong_count(n) > 1);
            self.names_limit = (self.names.len() * 2).max(64);
        }
        let n: Arc<str> = name.into();
        self.names.insert(n.clone());
        n
    }

    /// Job `j`'s names as the one copy of each.
    pub fn names_of(&mut self, j: &mut Job) {
        j.user = self.name(&j.user);
        j.group = self.name(&j.group);
        j.account = self.name(&j.account);
        j.partition = self.name(&j.partition);
        j.qos = self.name(&j.qos);
        if j.stderr == j.stdout {
            j.stderr = j.stdout.clone();
        }
        // Paths are most often a job's own; standard input mostly `/dev/null`.
        j.stdin = self.name(&j.stdin);
    }

    /// `tres` (a job's TRES asked): the TRES last asked if the same, else `tres`,
    /// kept as the last.
    pub fn share_tres(&mut self, tres: &Arc<[(String, u64)]>) -> Arc<[(String, u64)]> {
        match &self.tres {
            Some(last) if **last == **tres => last.clone(),
            _ => {
                self.tres = Some(tres.clone());
                tres.clone()
            }
        }
    }
}

/// What a running job holds on one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeShare {
    /// The node.
    pub node: NodeId,
    /// Its tasks there.
    pub tasks: u32,
    /// Its CPUs there.
    pub cpus: u32,
    /// Which of the node's processors, by index (see [`cpu_ids`]); empty for a run
    /// recorded before they were numbered.
    pub cpu_ids: Vec<u32>,
    /// The GPUs it uses whole there, by index.
    pub gpus: Vec<u32>,
    /// The shards it holds there: (GPU index, shards of that GPU).
    pub shards: Vec<(u32, u32)>,
    /// Its GPUs there by type: (type as slurm.conf spells it, count); GPUs without a
    /// type are not listed.
    pub gpu_types: Vec<(String, u32)>,
}

/// A run of a job whose processes are being ended (the job is `COMPLETING`): told to
/// end (cancelled, timed out, preempted, requeued) or ended by itself with steps left
/// on other nodes. The core keeps what the run holds until every node here has
/// reported its processes gone (the batch script's node by the script's end, the
/// others by `POST /v1/agent/run-gone`), or is declared down. A requeued job waits
/// (`BeginTime`) until then, as an agent holds one run of a job at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEnding {
    /// The run (its restart count).
    pub run: u32,
    /// The nodes that have not yet reported the run's processes gone (its batch
    /// script's node first, while its end is not reported).
    pub nodes: Vec<NodeId>,
    /// The state it was told to end in (a cancel, its time limit, a preemption), while
    /// its batch script's end is not in: what accounting shows already, as Slurm's.
    pub told: Option<JobState>,
}

impl Job {
    /// Marks this record changed on its own by its task id, as Slurm splits an
    /// unstarted task from its array's record then (see [`Job::split`]).
    pub fn changed_alone(&mut self) {
        if self.state == JobState::Pending && self.array.is_some() {
            self.split = true;
        }
    }

    /// The nodes squeue lists for it: its allocation's, or while a requeued job's last
    /// run is still ending (`COMPLETING`, back in the queue), the nodes that run has
    /// not yet left, as Slurm keeps them on the job until they have.
    pub fn listed_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        let ending = match &self.ending_run {
            Some(e) if self.alloc.is_empty() && self.state == JobState::Pending => &e.nodes[..],
            _ => &[],
        };
        self.alloc
            .iter()
            .map(|s| s.node)
            .chain(ending.iter().copied())
    }

    /// Whether it has been told to end (it is `COMPLETING`) in its current run.
    pub fn told_to_end(&self) -> bool {
        self.ending_run
            .as_ref()
            .is_some_and(|e| e.run == self.restarts)
    }

    /// Whether it waits requeued in the state `SPECIAL_EXIT`.
    pub fn special_exit(&self) -> bool {
        self.state == JobState::Pending && self.hold.as_ref().is_some_and(Hold::special_exit)
    }

    /// Whether this array task has a record of its own in Slurm's terms: changed on
    /// its own, or started once (a requeued task waits under its own record).
    pub fn split_off(&self) -> bool {
        self.split || (self.array.is_some() && self.restarts > 0)
    }

    /// Whether it runs with its processes stopped by an operator.
    pub fn suspended(&self) -> bool {
        self.state == JobState::Running
            && self.suspension.as_ref().is_some_and(|s| s.since.is_some())
    }

    /// Its state as records show it: `SUSPENDED` while suspended.
    pub fn shown_state(&self) -> JobState {
        if self.suspended() {
            JobState::Suspended
        } else {
            self.state
        }
    }

    /// Whether someone holds it back.
    pub fn held(&self) -> bool {
        self.hold.is_some()
    }

    /// The key jobs are listed by (see `JobRecord::list_key`).
    pub fn list_key(&self) -> (JobId, u32) {
        self.array.unwrap_or((self.id, 0))
    }

    /// The id as `squeue` shows it (see `JobRecord::display_id`).
    pub fn display_id(&self) -> String {
        match (&self.array, self.array_pending.as_deref()) {
            (Some((array, task)), _) => format!("{array}_{task}"),
            (None, Some((rest, throttle))) => {
                let mut s = format!("{}_[{}", self.id, compact_indices(rest));
                if let Some(t) = throttle {
                    s.push_str(&format!("%{t}"));
                }
                s.push(']');
                s
            }
            _ => match self.het {
                Some(h) => format!("{}+{}", h.job_id, h.offset),
                None => self.id.to_string(),
            },
        }
    }

    /// Its nodes, in allocation order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.alloc.iter().map(|s| s.node)
    }

    /// Its first node (where its batch script runs), if it has nodes.
    pub fn first_node(&self) -> Option<NodeId> {
        self.alloc.first().map(|s| s.node)
    }

    /// Whether it holds something on `node`.
    pub fn on_node(&self, node: NodeId) -> bool {
        self.alloc.iter().any(|s| s.node == node)
    }

    /// The GPUs (indices) it uses on its `i`-th node: those it holds whole, else those
    /// its shards come from.
    pub fn gpus_on_node(&self, i: usize) -> Vec<u32> {
        match self.alloc.get(i) {
            Some(s) if !s.gpus.is_empty() => s.gpus.clone(),
            Some(s) => s.shards.iter().map(|(g, _)| *g).collect(),
            None => Vec::new(),
        }
    }

    /// The job a record read back from the store describes (after
    /// [`JobRecord::upgrade`]). Nodes are looked up in `conf`: an allocation naming a
    /// node the configuration no longer has is dropped whole (such a job was never
    /// given back to the core), and a run ending there is taken as gone.
    pub fn from_record(mut r: JobRecord, conf: &ClusterConfig) -> Job {
        r.upgrade();
        let alloc = (0..r.nodes.len())
            .map(|i| {
                Some(NodeShare {
                    node: conf.node_id(&r.nodes[i])?,
                    tasks: r.tasks_per_node.get(i).copied().unwrap_or(1),
                    cpus: r.cpus_per_node.get(i).copied().unwrap_or(0),
                    cpu_ids: r.cpu_ids_per_node.get(i).cloned().unwrap_or_default(),
                    gpus: r.gpus_per_node.get(i).cloned().unwrap_or_default(),
                    shards: r.shards_per_node.get(i).cloned().unwrap_or_default(),
                    gpu_types: r.gpu_types_per_node.get(i).cloned().unwrap_or_default(),
                })
            })
            .collect::<Option<Vec<NodeShare>>>()
            .unwrap_or_else(|| {
                tracing::warn!(
                    "JobId={} ran on {}, which the configuration no longer has",
                    r.id,
                    r.nodes.join(",")
                );
                Vec::new()
            });
        let ending_run = r.ending_run.map(|e| {
            // A record from before `nodes` names its batch script's node only.
            let names = if e.nodes.is_empty() {
                vec![e.node]
            } else {
                e.nodes
            };
            RunEnding {
                run: e.run,
                nodes: names.iter().filter_map(|n| conf.node_id(n)).collect(),
                told: None,
            }
        });
        // Told to end, its batch script's end not in yet: kept with the state it was
        // told to end in (see `RunEnding::told`), and still running.
        let mut state = r.state;
        let mut ending_run = ending_run;
        if let Some(e) = ending_run.as_mut() {
            let batch = alloc.first().map(|s: &NodeShare| s.node);
            if r.state.is_finished() && e.run == r.restarts && e.nodes.first().copied() == batch {
                e.told = Some(r.state);
                state = JobState::Running;
            }
        }
        Job {
            id: JobId(r.id),
            array: r.array.map(|(a, t)| (JobId(a), t)),
            array_pending: r.array_pending.map(Box::new),
            split: r.split,
            uid: r.uid,
            gid: r.gid,
            user: r.user.into(),
            group: r.group.into(),
            account: r.account.into(),
            // A pending job of several partitions is stored with their list, as shown;
            // it is in the first.
            partition: r.partition.split(',').next().unwrap_or_default().into(),
            qos: r.qos.into(),
            // A suspended job is a running one, with its suspension.
            state: match state {
                JobState::Suspended => JobState::Running,
                st => st,
            },
            // A record from before Sluice kept why a job ended says `None`.
            reason: match Reason::from_text(&r.reason) {
                Reason::NONE => {
                    Reason::ended(r.state, r.exit_code, r.signal).unwrap_or(Reason::NONE)
                }
                why => why,
            },
            priority: r.priority,
            submit_time: r.submit_time,
            start_time: r.start_time,
            end_time: r.end_time,
            planned_start: r.planned_start,
            time_limit: r.time_limit,
            alloc,
            mem_per_node: r.mem_per_node,
            mem_default: r.mem_default,
            ntasks: r.ntasks,
            cpus_per_task: r.cpus_per_task,
            min_nodes: r.min_nodes,
            exit_code: r.exit_code,
            signal: r.signal,
            restarts: r.restarts,
            hold: r.hold,
            cancelled_by: r.cancelled_by,
            stdout: r.stdout.into(),
            stderr: r.stderr.into(),
            stdin: r.stdin.into(),
            desc: Arc::new(r.desc),
            next_step: r.next_step,
            start_pass: r.start_pass,
            ending_run: ending_run.map(Box::new),
            refused: r.refused,
            tres_req: r.tres_req.into(),
            tres_alloc: r.tres_alloc,
            accrue_time: r.accrue_time,
            idle_gpus: r.idle_gpus.map(Box::new),
            service: r.service_state.map(Box::new),
            suspension: r.suspension.map(Box::new),
            het: r.het,
        }
    }

    /// The partition shown for the job: while it waits, every partition it was
    /// submitted to (`sbatch -p short,debug`), as Slurm's commands show them; once
    /// started, the one it runs in.
    pub fn shown_partition(&self) -> &str {
        match self.desc.partition.as_deref() {
            Some(list) if self.state == JobState::Pending && list.contains(',') => list,
            _ => &self.partition,
        }
    }

    /// Its record, with `reason` as the reason's text and `desc` as the submission
    /// (the job's own, or one without script and environment for a listing). The
    /// fields the controller fills in only when it shows a job (dependency status,
    /// forecast nodes, preemption times) are left empty.
    pub fn to_record(
        &self,
        conf: &ClusterConfig,
        reason: String,
        mut desc: JobDescription,
    ) -> JobRecord {
        // A record from before the wait was settled at submission: the wait it has.
        if let Some((count, None)) = desc.switches {
            desc.switches = Some((count, Some(conf.backfill.max_switch_wait)));
        }
        let name = |n: NodeId| conf.cluster.node(n).name.clone();
        let shards = self.alloc.iter().any(|s| !s.shards.is_empty());
        JobRecord {
            id: self.id.0,
            array: self.array.map(|(a, t)| (a.0, t)),
            array_pending: self.array_pending.as_deref().cloned(),
            split: self.split_off(),
            uid: self.uid,
            gid: self.gid,
            user: self.user.to_string(),
            group: self.group.to_string(),
            account: self.account.to_string(),
            partition: self.shown_partition().to_string(),
            qos: self.qos.to_string(),
            state: self.shown_state(),
            priority: self.priority,
            reason,
            dependency_status: None,
            submit_time: self.submit_time,
            start_time: self.start_time,
            end_time: self.end_time,
            planned_start: self.planned_start,
            sched_nodes: None,
            time_limit: self.time_limit,
            nodes: self.alloc.iter().map(|s| name(s.node)).collect(),
            tasks_per_node: self.alloc.iter().map(|s| s.tasks).collect(),
            cpus_per_node: self.alloc.iter().map(|s| s.cpus).collect(),
            cpu_ids_per_node: if self.alloc.iter().all(|s| s.cpu_ids.is_empty()) {
                Vec::new()
            } else {
                self.alloc.iter().map(|s| s.cpu_ids.clone()).collect()
            },
            mem_per_node: self.mem_per_node,
            mem_default: self.mem_default,
            gpus_per_node: self.alloc.iter().map(|s| s.gpus.clone()).collect(),
            shards_per_node: if shards {
                self.alloc.iter().map(|s| s.shards.clone()).collect()
            } else {
                Vec::new()
            },
            ntasks: self.ntasks,
            cpus_per_task: self.cpus_per_task,
            min_nodes: self.min_nodes,
            exit_code: self.exit_code,
            signal: self.signal,
            restarts: self.restarts,
            hold: self.hold.clone(),
            cancelled_by: self.cancelled_by,
            stdout: self.stdout.to_string(),
            stderr: self.stderr.to_string(),
            stdin: self.stdin.to_string(),
            desc,
            next_step: self.next_step,
            start_pass: self.start_pass,
            ending_run: self.ending_run.as_ref().map(|e| {
                Box::new(EndingRun {
                    run: e.run,
                    node: e.nodes.first().map(|&n| name(n)).unwrap_or_default(),
                    nodes: e.nodes.iter().map(|&n| name(n)).collect(),
                })
            }),
            refused: self.refused.clone(),
            preemption: None,
            preempting: None,
            legacy_held: false,
            legacy_details: None,
            tres_req: self.tres_req.to_vec(),
            tres_alloc: self.tres_alloc.clone(),
            gpu_types_per_node: self.alloc.iter().map(|s| s.gpu_types.clone()).collect(),
            accrue_time: self.accrue_time,
            idle_gpus: self.idle_gpus.as_deref().copied(),
            service_state: self.service.as_deref().cloned(),
            service_url: conf.service_url(&self.desc),
            service_tcp: conf.service_tcp(&self.desc),
            suspension: self.suspension.as_deref().copied(),
            het: self.het,
        }
    }

    /// Its submission without its script and environment (most of a job's size, which
    /// no listing needs).
    pub fn listed_desc(&self) -> JobDescription {
        let d = &self.desc;
        JobDescription {
            name: d.name.clone(),
            partition: d.partition.clone(),
            account: d.account.clone(),
            reservation: d.reservation.clone(),
            qos: d.qos.clone(),
            ntasks: d.ntasks,
            nodes: d.nodes,
            cpus_per_task: d.cpus_per_task,
            ntasks_per_node: d.ntasks_per_node,
            time_limit: d.time_limit,
            memory: d.memory,
            gres: d.gres.clone(),
            gpus: d.gpus.clone(),
            gpus_per_node: d.gpus_per_node.clone(),
            gpus_per_task: d.gpus_per_task.clone(),
            gpus_per_socket: d.gpus_per_socket.clone(),
            sockets_per_node: d.sockets_per_node,
            cpus_per_gpu: d.cpus_per_gpu,
            exclusive: d.exclusive,
            oversubscribe: d.oversubscribe,
            constraint: d.constraint.clone(),
            nodelist: d.nodelist.clone(),
            exclude: d.exclude.clone(),
            switches: d.switches,
            segment: d.segment,
            requeue: d.requeue,
            output: d.output.clone(),
            error: d.error.clone(),
            input: d.input.clone(),
            append: d.append,
            work_dir: d.work_dir.clone(),
            submit_dir: d.submit_dir.clone(),
            script: String::new(),
            script_args: d.script_args.clone(),
            environment: Vec::new(),
            array: d.array.clone(),
            dependency: d.dependency.clone(),
            begin: d.begin,
            signal: d.signal,
            hold: d.hold,
            comment: d.comment.clone(),
            acctg_freq: d.acctg_freq.clone(),
            wckey: d.wckey.clone(),
            nice: d.nice,
            submit_host: d.submit_host.clone(),
            command: d.command.clone(),
            submit_line: d.submit_line.clone(),
            interactive: d.interactive,
            service: d.service.clone(),
            het_components: Vec::new(),
        }
    }
}

/// The processors a job starting with `cpus` CPUs on a node of `total` gets there, by
/// index, as Slurm's `select/cons_tres` numbers them on a node of one socket: the
/// lowest that no job there holds (`held`) and that are not kept for the system
/// (`reserved`, `CpuSpecList`). Sluice pins no process to them; should the node be
/// overcommitted (a preemptor on a suspended job's CPUs), the rest are the lowest
/// of the others.
pub fn cpu_ids(cpus: u32, total: u32, held: &BTreeSet<u32>, reserved: &BTreeSet<u32>) -> Vec<u32> {
    let usable: Vec<u32> = (0..total.max(cpus))
        .filter(|i| !reserved.contains(i))
        .collect();
    let (free, taken): (Vec<u32>, Vec<u32>) = usable.into_iter().partition(|i| !held.contains(i));
    let mut ids: Vec<u32> = free.into_iter().chain(taken).take(cpus as usize).collect();
    ids.sort_unstable();
    ids
}

/// The indices of a list such as `0-1,4` (`CpuSpecList`); words that are not numbers
/// or ranges are left out.
pub fn index_list(list: &str) -> BTreeSet<u32> {
    let mut ids = BTreeSet::new();
    for word in list.split(',') {
        let (a, b) = word.split_once('-').unwrap_or((word, word));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
            ids.extend(a..=b);
        }
    }
    ids
}

#[cfg(test)]
mod cpu_id_tests {
    use super::*;

    #[test]
    fn a_job_gets_the_lowest_processors_no_other_job_holds() {
        let none = BTreeSet::new();
        assert_eq!(cpu_ids(2, 4, &none, &none), vec![0, 1]);
        let held: BTreeSet<u32> = [0, 2].into();
        assert_eq!(cpu_ids(2, 4, &held, &none), vec![1, 3]);
        // CpuSpecList=0,1: never the system's.
        let system = index_list("0-1");
        assert_eq!(cpu_ids(2, 4, &none, &system), vec![2, 3]);
        // Overcommitted (a preemptor on a suspended job's processors): the rest are
        // the lowest of the others.
        let all: BTreeSet<u32> = [0, 1, 2].into();
        assert_eq!(cpu_ids(2, 4, &all, &none), vec![0, 3]);
    }

    #[test]
    fn index_lists_read_ranges_and_single_indices() {
        assert_eq!(index_list("0-1,4"), [0, 1, 4].into());
        assert_eq!(index_list(""), BTreeSet::new());
    }
}
