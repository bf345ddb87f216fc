//! The jobs as listings read them (`squeue`, `scontrol show job`): a snapshot the loop
//! publishes after each input that changed something, read by the HTTP handlers
//! without a round trip through the loop.
//!
//! A [`Listing`] is persistent (`imbl`'s maps): the loop keeps one, changes the entries
//! of the jobs that changed, and publishes a copy, which costs a pointer; a reader
//! holding an older one keeps it whole. Each entry shares the controller's own job
//! (`Arc<Job>`, see `job_table.rs`) and adds what the job's record shows that is not
//! the job's ([`Live`]), so a record built from the snapshot is the record the loop
//! builds ([`build`] is the one way both build it). A job's script and environment
//! are shared, never copied.
//!
//! Invariant, kept by [`Publisher::publish`] after every input and every pass: each
//! entry's job is the controller's job, and its [`Live`] is what
//! [`Controller::live`] gives now. The job table notes every job changed; what
//! changes without the job changing is read again where it can: the core's reason,
//! expected start and nodes of every job the core queues (after a pass, or a new
//! forecast: they change in passes only), the dependency status of every
//! pending job with a dependency (when anything changed), and the preemption times of
//! the jobs being preempted.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

use imbl::{OrdMap, OrdSet};
use serde::Serialize;
use sluice_core::JobId;
use sluice_proto::accounts::AdminLevel;
use sluice_proto::listing::{items, JobQuery, ListedJob, StateFilter, StateNames};
use sluice_proto::types::{
    GresRequest, JobDescription, JobRecord, JobState, MemoryRequest, PreemptionTimes,
};

use super::job::Job;
use super::reason::Reason;
use super::Controller;
use crate::config::ClusterConfig;

mod nodes;
mod services;
pub use nodes::{NodeListing, NodesTouched};
pub use services::{ServiceAt, ServiceTarget};

/// What a pending job's record shows from the core, without text: compared after a
/// pass to find the jobs whose records changed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoreView {
    /// The reason shown (the core's for a job it queues).
    pub(crate) reason: Reason,
    /// Expected start.
    pub(crate) planned_start: Option<i64>,
    /// Whether the forecast names its nodes.
    pub(crate) expects_nodes: bool,
}

/// What a job's record shows that the controller reads from elsewhere than the job.
#[derive(Clone, Debug, PartialEq)]
pub struct Live {
    /// The core's part.
    pub(crate) core: CoreView,
    /// The reason as the record prints it (most are fixed texts, not copied).
    pub(crate) reason: Cow<'static, str>,
    /// The dependency's status.
    pub(crate) dependency_status: Option<String>,
    /// The priority shown.
    pub(crate) priority: u32,
    /// A running job's preemption.
    pub(crate) preemption: Option<Box<PreemptionTimes>>,
    /// Expected start.
    pub(crate) planned_start: Option<i64>,
    /// Expected nodes.
    pub(crate) sched_nodes: Option<String>,
}

/// Job `r`'s record with `live` and `desc` as its submission: the one way the loop and
/// the snapshot build a record.
pub(crate) fn build(conf: &ClusterConfig, r: &Job, live: &Live, desc: JobDescription) -> JobRecord {
    let mut out = r.to_record(conf, live.reason.to_string(), desc);
    out.dependency_status = live.dependency_status.clone();
    out.priority = live.priority;
    out.preemption = live.preemption.clone();
    out.planned_start = live.planned_start;
    out.sched_nodes = live.sched_nodes.clone();
    out
}

/// One job of the snapshot.
#[derive(Debug)]
pub struct Listed {
    job: Arc<Job>,
    live: Live,
}

/// The jobs, by id, with indexes by owner, state and array.
#[derive(Clone)]
pub struct Listing {
    conf: Arc<ClusterConfig>,
    jobs: OrdMap<JobId, Arc<Listed>>,
    by_user: OrdMap<Arc<str>, OrdSet<JobId>>,
    by_state: OrdMap<JobState, OrdSet<JobId>>,
    /// (array, task index, job).
    by_array: OrdSet<(JobId, u32, JobId)>,
    /// Service jobs by their stable name (`services.rs`).
    by_service: OrdMap<String, OrdSet<JobId>>,
    /// When a job's record last changed (Unix seconds; 0: never): Slurm's
    /// `last_job_update`, what a listing's `update_time` is compared with.
    updated: i64,
    /// The nodes and partitions (`nodes.rs`).
    nodes: NodeListing,
    /// The users of `AdminLevel` Operator and above, by name, with their level
    /// ([`Accounts::operators`](crate::accounts::Accounts::operators)).
    operators: Arc<BTreeMap<String, AdminLevel>>,
}

/// The latest snapshot, shared by the loop (which replaces it) and the readers.
#[derive(Clone)]
pub struct Published(Arc<RwLock<Arc<Listing>>>);

impl Published {
    /// The latest snapshot.
    pub fn latest(&self) -> Arc<Listing> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Listing {
    fn new(conf: Arc<ClusterConfig>) -> Self {
        Listing {
            conf,
            jobs: OrdMap::new(),
            by_user: OrdMap::new(),
            by_state: OrdMap::new(),
            by_array: OrdSet::new(),
            by_service: OrdMap::new(),
            updated: 0,
            nodes: NodeListing::default(),
            operators: Arc::default(),
        }
    }

    /// The nodes and partitions as `sinfo` shows them.
    pub fn node_listing(&self) -> &NodeListing {
        &self.nodes
    }

    /// When a job's record last changed (Unix seconds; 0: never).
    pub fn updated(&self) -> i64 {
        self.updated
    }

    /// How many jobs the controller holds.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The uid whose jobs alone `caller` may list: `None` (every job) for an operator
    /// (root, `operator`: the controller's user) or without `PrivateData=jobs`.
    pub fn owner_only(&self, caller: u32, operator: u32) -> Option<u32> {
        (self.conf.private_data.jobs && caller != 0 && caller != operator).then_some(caller)
    }

    /// Whether user `name` is an operator by `AdminLevel` (Operator or Administrator),
    /// who sees every job whatever `PrivateData` says: callers named so are not held
    /// to [`Listing::owner_only`].
    pub fn is_operator(&self, name: &str) -> bool {
        self.operators.contains_key(name)
    }

    /// Whether user `name` is an administrator by `AdminLevel`, a super user as root
    /// and `SlurmUser` are (Slurm's `validate_super_user`): nodes and partitions are
    /// theirs to change.
    pub fn is_administrator(&self, name: &str) -> bool {
        self.operators.get(name) == Some(&AdminLevel::Administrator)
    }

    /// slurm.conf's `PrivateData`, as this snapshot's configuration says.
    pub fn private_data(&self) -> crate::config::PrivateData {
        self.conf.private_data
    }

    /// Job `id`'s whole record (its script and environment included), as
    /// [`Controller::job`] gives it.
    pub fn job(&self, id: JobId) -> Option<JobRecord> {
        let l = self.jobs.get(&id)?;
        Some(build(
            &self.conf,
            &l.job,
            &l.live,
            JobDescription::clone(&l.job.desc),
        ))
    }

    /// What the metrics read of each job visible at `now`, as `squeue -t all` shows
    /// them (finished ones only until `MinJobAge` after their end), in id order.
    /// Costs a look at every job, building nothing.
    pub fn each_job_facts(&self, now: i64, mut f: impl FnMut(&crate::metrics::JobFacts)) {
        let age = self.conf.min_job_age;
        for l in self.jobs.values() {
            let j = &l.job;
            if j.state.is_finished() && j.end_time.is_none_or(|e| now - e >= age) {
                continue;
            }
            let running = j.state == JobState::Running;
            let (mut cpus, mut gpus) = (0u64, 0u64);
            if running {
                for s in &j.alloc {
                    cpus += u64::from(s.cpus);
                    gpus += s.gpus.len() as u64;
                }
            }
            let nodes = if running { j.alloc.len() as u64 } else { 0 };
            f(&crate::metrics::JobFacts {
                state: j.shown_state(),
                held: j.state == JobState::Pending && j.held(),
                partition: &j.partition,
                user: &j.user,
                account: &j.account,
                cpus,
                nodes,
                mem_mib: j.mem_per_node * nodes,
                gpus,
                min_nodes: j.min_nodes,
                max_nodes: j.desc.nodes.map_or(0, |n| n.1),
                part_node_limit: l.live.core.reason
                    == Reason::Core(sluice_core::PendingReason::PartitionNodeLimit),
                completing: j.ending_run.is_some(),
            });
        }
    }

    /// The jobs `q` asks for, visible at `now` (finished ones only until `MinJobAge`
    /// after their end), without their scripts and environments, in
    /// [`JobRecord::list_key`] order.
    pub fn jobs(&self, q: &JobQuery, now: i64) -> Vec<JobRecord> {
        self.select(q, now)
            .into_iter()
            .map(|l| build(&self.conf, &l.job, &l.live, l.job.listed_desc()))
            .collect()
    }

    /// The same jobs as [`Listing::jobs`], as `squeue` lists them.
    pub fn listed(&self, q: &JobQuery, now: i64) -> Vec<ListedJob> {
        self.select(q, now)
            .into_iter()
            .map(|l| listed(&self.conf, &l.job, &l.live))
            .collect()
    }

    /// [`Listing::listed`], encoded as JSON straight from the jobs.
    pub fn listed_json(&self, q: &JobQuery, now: i64) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&BriefListing {
            conf: &self.conf,
            jobs: self.select(q, now),
        })
    }

    /// The jobs `q` asks for, visible at `now`, in list order. Costs the jobs it looks
    /// at: those named (by id, or an array's tasks), else those of the users named,
    /// else of the states named, else every job.
    fn select(&self, q: &JobQuery, now: i64) -> Vec<&Arc<Listed>> {
        let users: Option<Vec<&str>> = q.users.as_deref().map(|u| items(u).collect());
        let partitions: Option<Vec<&str>> = q.partitions.as_deref().map(|p| items(p).collect());
        let names: Option<Vec<&str>> = q.names.as_deref().map(|n| items(n).collect());
        let states = q.state_filter();
        let completing = q.wants_completing();
        let special_exit = q.wants_special_exit();
        let ids = q.job_ids();
        let age = self.conf.min_job_age;
        let wanted = |j: &Job| {
            (!j.state.is_finished()
                || j.ending_run.is_some()
                || j.end_time.is_some_and(|e| now - e < age))
                && q.owner_only.is_none_or(|uid| j.uid == uid)
                && users.as_ref().is_none_or(|u| u.contains(&&*j.user))
                && partitions
                    .as_ref()
                    .is_none_or(|p| j.shown_partition().split(',').any(|x| p.contains(&x)))
                && names
                    .as_ref()
                    .is_none_or(|n| n.contains(&j.desc.name.as_str()))
                && match &states {
                    StateFilter::All => true,
                    StateFilter::Only(states) => StateNames {
                        states,
                        completing,
                        special_exit,
                    }
                    .selects(
                        j.shown_state(),
                        j.ending_run.is_some(),
                        j.special_exit(),
                    ),
                }
        };
        let mut out: Vec<&Arc<Listed>> = if let Some(ids) = &ids {
            let mut set = BTreeSet::new();
            for &(id, task) in ids {
                let id = JobId(id);
                let (lo, hi) = match task {
                    Some(t) => {
                        // A task cancelled before it started: its array's one record.
                        if let Some(l) = self.jobs.get(&id) {
                            if l.job.array.is_none()
                                && l.job
                                    .array_pending
                                    .as_ref()
                                    .is_some_and(|p| p.0.binary_search(&t).is_ok())
                            {
                                set.insert(id);
                            }
                        }
                        ((id, t, JobId(0)), (id, t, JobId(u64::MAX)))
                    }
                    None => {
                        if let Some(l) = self.jobs.get(&id) {
                            set.insert(id);
                            // A heterogeneous job's leader stands for all its components.
                            if let Some(h) = l.job.het.filter(|h| h.offset == 0) {
                                set.extend(
                                    (1..h.size as u64)
                                        .map(|i| JobId(h.job_id + i))
                                        .filter(|m| self.jobs.contains_key(m)),
                                );
                            }
                        }
                        ((id, 0, JobId(0)), (id, u32::MAX, JobId(u64::MAX)))
                    }
                };
                set.extend(self.by_array.range(lo..=hi).map(|k| k.2));
            }
            self.pick(set)
        } else if let Some(users) = &users {
            let mut set = BTreeSet::new();
            for u in users {
                if let Some(s) = self.by_user.get(*u) {
                    set.extend(s.iter().copied());
                }
            }
            self.pick(set)
        } else if let Some(states) = match &states {
            StateFilter::Only(s) if !completing && !special_exit && self.few_in(s) => Some(s),
            _ => None,
        } {
            let mut set = BTreeSet::new();
            for s in states {
                if let Some(s) = self.by_state.get(s) {
                    set.extend(s.iter().copied());
                }
            }
            self.pick(set)
        } else {
            self.jobs.values().collect()
        };
        out.retain(|l| wanted(&l.job));
        out.sort_by_key(|l| l.job.list_key());
        out
    }

    /// Whether jobs in `states` are few enough to look at through the index (else all
    /// are looked at in one sweep).
    fn few_in(&self, states: &[JobState]) -> bool {
        let n: usize = states
            .iter()
            .filter_map(|s| self.by_state.get(s))
            .map(OrdSet::len)
            .sum();
        n < self.jobs.len() / 2
    }

    fn pick(&self, ids: BTreeSet<JobId>) -> Vec<&Arc<Listed>> {
        ids.iter().filter_map(|id| self.jobs.get(id)).collect()
    }

    /// Puts `job` with `live` in, replacing what was there under its id.
    fn put(&mut self, job: Arc<Job>, live: Live) {
        let id = job.id;
        self.take_out(id);
        index_add(&mut self.by_user, job.user.clone(), id);
        index_add(&mut self.by_state, job.shown_state(), id);
        if let Some((array, task)) = job.array {
            self.by_array.insert((array, task, id));
        }
        if let Some(s) = &job.desc.service {
            index_add(&mut self.by_service, s.name.clone(), id);
        }
        self.jobs.insert(id, Arc::new(Listed { job, live }));
    }

    /// Takes job `id` out, with its index entries.
    fn take_out(&mut self, id: JobId) -> Option<Arc<Listed>> {
        let old = self.jobs.remove(&id)?;
        index_remove(&mut self.by_user, &old.job.user, id);
        index_remove(&mut self.by_state, &old.job.shown_state(), id);
        if let Some((array, task)) = old.job.array {
            self.by_array.remove(&(array, task, id));
        }
        if let Some(s) = &old.job.desc.service {
            index_remove(&mut self.by_service, &s.name, id);
        }
        Some(old)
    }
}

fn index_add<K: Ord + Clone>(index: &mut OrdMap<K, OrdSet<JobId>>, key: K, id: JobId) {
    match index.get_mut(&key) {
        Some(set) => {
            set.insert(id);
        }
        None => {
            index.insert(key, OrdSet::unit(id));
        }
    }
}

fn index_remove<K: Ord + Clone>(index: &mut OrdMap<K, OrdSet<JobId>>, key: &K, id: JobId) {
    if let Some(set) = index.get_mut(key) {
        set.remove(&id);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Job `r` as `squeue` lists it, with `live`: the fields of its record ([`build`])
/// that [`ListedJob`] keeps, made without the rest.
pub(crate) fn listed(conf: &ClusterConfig, r: &Job, live: &Live) -> ListedJob {
    let d = &r.desc;
    ListedJob {
        het: r.het,
        id: r.id.0,
        array: r.array.map(|(a, t)| (a.0, t)),
        array_pending: r.array_pending.as_deref().cloned(),
        split: r.split_off(),
        special_exit: r.special_exit(),
        uid: r.uid,
        gid: r.gid,
        user: r.user.to_string(),
        group: r.group.to_string(),
        account: r.account.to_string(),
        partition: r.shown_partition().to_string(),
        qos: r.qos.to_string(),
        state: r.shown_state(),
        reason: live.reason.to_string(),
        dependency_status: live.dependency_status.clone(),
        priority: live.priority,
        submit_time: r.submit_time,
        start_time: r.start_time,
        end_time: r.end_time,
        planned_start: live.planned_start,
        sched_nodes: live.sched_nodes.clone(),
        time_limit: r.time_limit,
        nodes: r
            .listed_nodes()
            .map(|n| conf.cluster.node(n).name.clone())
            .collect(),
        cpus_per_node: r.alloc.iter().map(|s| s.cpus).collect(),
        mem_per_node: r.mem_per_node,
        mem_default: r.mem_default,
        ntasks: r.ntasks,
        cpus_per_task: r.cpus_per_task,
        min_nodes: r.min_nodes,
        name: d.name.clone(),
        reservation: d.reservation.clone(),
        work_dir: d.work_dir.clone(),
        command: d.command.clone(),
        comment: d.comment.clone(),
        nice: d.nice,
        gres: d.gres.clone(),
        exclusive: d.exclusive,
        oversubscribe: d.oversubscribe,
        wckey: d.wckey.clone(),
        constraint: d.constraint.clone(),
        nodelist: d.nodelist.clone(),
        exclude: d.exclude.clone(),
        memory: d.memory,
        sockets_per_node: d.sockets_per_node,
        array_throttle: d.array.as_ref().map(|a| a.1),
        array_indices: sluice_proto::listing::listed_indices(
            r.array_pending.as_deref(),
            d.array.as_ref(),
        )
        .to_vec(),
        service: d.service.clone(),
        service_state: r.service.as_deref().cloned(),
        suspension: r.suspension.as_deref().copied(),
        completing: r.ending_run.is_some(),
    }
}

fn empty(s: &&str) -> bool {
    s.is_empty()
}

fn zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn no_gres(g: &&[GresRequest]) -> bool {
    g.is_empty()
}

/// Job `r` as [`listed`] gives it, borrowed from the job: encoded without building a
/// [`ListedJob`] (the same keys, the same fields left out; a test compares the two
/// encodings).
#[derive(Serialize)]
struct ListedRef<'a> {
    #[serde(rename = "i")]
    id: u64,
    #[serde(rename = "het", skip_serializing_if = "Option::is_none")]
    het: Option<sluice_proto::types::HetJob>,
    #[serde(rename = "a", skip_serializing_if = "Option::is_none")]
    array: Option<(u64, u32)>,
    #[serde(rename = "ap", skip_serializing_if = "Option::is_none")]
    array_pending: Option<&'a (Vec<u32>, Option<u32>)>,
    #[serde(rename = "sp", skip_serializing_if = "std::ops::Not::not")]
    split: bool,
    #[serde(rename = "se", skip_serializing_if = "std::ops::Not::not")]
    special_exit: bool,
    #[serde(rename = "U", skip_serializing_if = "zero")]
    uid: u32,
    #[serde(rename = "G", skip_serializing_if = "zero")]
    gid: u32,
    #[serde(rename = "u", skip_serializing_if = "empty")]
    user: &'a str,
    #[serde(rename = "g", skip_serializing_if = "empty")]
    group: &'a str,
    #[serde(rename = "A", skip_serializing_if = "empty")]
    account: &'a str,
    #[serde(rename = "P", skip_serializing_if = "empty")]
    partition: &'a str,
    #[serde(rename = "q", skip_serializing_if = "empty")]
    qos: &'a str,
    #[serde(rename = "s")]
    state: JobState,
    #[serde(rename = "r", skip_serializing_if = "empty")]
    reason: &'a str,
    #[serde(rename = "E", skip_serializing_if = "Option::is_none")]
    dependency_status: Option<&'a str>,
    #[serde(rename = "p", skip_serializing_if = "zero")]
    priority: u32,
    #[serde(rename = "V", skip_serializing_if = "zero")]
    submit_time: i64,
    #[serde(rename = "S", skip_serializing_if = "Option::is_none")]
    start_time: Option<i64>,
    #[serde(rename = "e", skip_serializing_if = "Option::is_none")]
    end_time: Option<i64>,
    #[serde(rename = "ps", skip_serializing_if = "Option::is_none")]
    planned_start: Option<i64>,
    #[serde(rename = "Y", skip_serializing_if = "Option::is_none")]
    sched_nodes: Option<&'a str>,
    #[serde(rename = "l", skip_serializing_if = "Option::is_none")]
    time_limit: Option<i64>,
    #[serde(rename = "N", skip_serializing_if = "Vec::is_empty")]
    nodes: Vec<&'a str>,
    #[serde(rename = "C", skip_serializing_if = "Vec::is_empty")]
    cpus_per_node: Vec<u32>,
    #[serde(rename = "m", skip_serializing_if = "zero")]
    mem_per_node: u64,
    #[serde(rename = "md", skip_serializing_if = "Option::is_none")]
    mem_default: Option<MemoryRequest>,
    #[serde(rename = "n", skip_serializing_if = "zero")]
    ntasks: u32,
    #[serde(rename = "c", skip_serializing_if = "zero")]
    cpus_per_task: u32,
    #[serde(rename = "D", skip_serializing_if = "zero")]
    min_nodes: u32,
    #[serde(rename = "j", skip_serializing_if = "empty")]
    name: &'a str,
    #[serde(rename = "v", skip_serializing_if = "Option::is_none")]
    reservation: Option<&'a str>,
    #[serde(rename = "Z", skip_serializing_if = "empty")]
    work_dir: &'a str,
    #[serde(rename = "o", skip_serializing_if = "empty")]
    command: &'a str,
    #[serde(rename = "k", skip_serializing_if = "Option::is_none")]
    comment: Option<&'a str>,
    #[serde(rename = "y", skip_serializing_if = "Option::is_none")]
    nice: Option<i32>,
    #[serde(rename = "b", skip_serializing_if = "no_gres")]
    gres: &'a [GresRequest],
    #[serde(rename = "h", skip_serializing_if = "std::ops::Not::not")]
    exclusive: bool,
    #[serde(rename = "os", skip_serializing_if = "std::ops::Not::not")]
    oversubscribe: bool,
    #[serde(rename = "w", skip_serializing_if = "Option::is_none")]
    wckey: Option<&'a str>,
    #[serde(rename = "f", skip_serializing_if = "Option::is_none")]
    constraint: Option<&'a str>,
    #[serde(rename = "rn", skip_serializing_if = "Option::is_none")]
    nodelist: Option<&'a str>,
    #[serde(rename = "xn", skip_serializing_if = "Option::is_none")]
    exclude: Option<&'a str>,
    #[serde(rename = "M", skip_serializing_if = "Option::is_none")]
    memory: Option<MemoryRequest>,
    #[serde(rename = "H", skip_serializing_if = "Option::is_none")]
    sockets_per_node: Option<u32>,
    #[serde(rename = "T", skip_serializing_if = "Option::is_none")]
    array_throttle: Option<Option<u32>>,
    #[serde(rename = "ai", skip_serializing_if = "<[u32]>::is_empty")]
    array_indices: &'a [u32],
    #[serde(rename = "sv", skip_serializing_if = "Option::is_none")]
    service: Option<&'a sluice_proto::service::ServiceSpec>,
    #[serde(rename = "ss", skip_serializing_if = "Option::is_none")]
    service_state: Option<&'a sluice_proto::service::ServiceState>,
    #[serde(rename = "su", skip_serializing_if = "Option::is_none")]
    suspension: Option<sluice_proto::types::Suspension>,
    #[serde(rename = "cg", skip_serializing_if = "std::ops::Not::not")]
    completing: bool,
}

fn listed_ref<'a>(conf: &'a ClusterConfig, r: &'a Job, live: &'a Live) -> ListedRef<'a> {
    let d = &r.desc;
    ListedRef {
        het: r.het,
        id: r.id.0,
        array: r.array.map(|(a, t)| (a.0, t)),
        array_pending: r.array_pending.as_deref(),
        split: r.split_off(),
        special_exit: r.special_exit(),
        uid: r.uid,
        gid: r.gid,
        user: &r.user,
        group: &r.group,
        account: &r.account,
        partition: r.shown_partition(),
        qos: &r.qos,
        state: r.shown_state(),
        reason: &live.reason,
        dependency_status: live.dependency_status.as_deref(),
        priority: live.priority,
        submit_time: r.submit_time,
        start_time: r.start_time,
        end_time: r.end_time,
        planned_start: live.planned_start,
        sched_nodes: live.sched_nodes.as_deref(),
        time_limit: r.time_limit,
        nodes: r
            .listed_nodes()
            .map(|n| conf.cluster.node(n).name.as_str())
            .collect(),
        cpus_per_node: r.alloc.iter().map(|s| s.cpus).collect(),
        mem_per_node: r.mem_per_node,
        mem_default: r.mem_default,
        ntasks: r.ntasks,
        cpus_per_task: r.cpus_per_task,
        min_nodes: r.min_nodes,
        name: &d.name,
        reservation: d.reservation.as_deref(),
        work_dir: &d.work_dir,
        command: &d.command,
        comment: d.comment.as_deref(),
        nice: d.nice,
        gres: &d.gres,
        exclusive: d.exclusive,
        oversubscribe: d.oversubscribe,
        wckey: d.wckey.as_deref(),
        constraint: d.constraint.as_deref(),
        nodelist: d.nodelist.as_deref(),
        exclude: d.exclude.as_deref(),
        memory: d.memory,
        sockets_per_node: d.sockets_per_node,
        array_throttle: d.array.as_ref().map(|a| a.1),
        array_indices: sluice_proto::listing::listed_indices(
            r.array_pending.as_deref(),
            d.array.as_ref(),
        ),
        service: d.service.as_ref(),
        service_state: r.service.as_deref(),
        suspension: r.suspension.as_deref().copied(),
        completing: r.ending_run.is_some(),
    }
}

/// A brief listing, encoded one job at a time from the snapshot.
struct BriefListing<'a> {
    conf: &'a ClusterConfig,
    jobs: Vec<&'a Arc<Listed>>,
}

impl Serialize for BriefListing<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.jobs
                .iter()
                .map(|l| listed_ref(self.conf, &l.job, &l.live)),
        )
    }
}

/// The loop's side of the snapshot: keeps it current and publishes it.
pub struct Publisher {
    shared: Published,
    current: Listing,
    /// What the core's part of the records was read at: the core's passes, the
    /// forecasts made.
    passes: u64,
    forecast: u64,
    /// The core's last pass when they were read.
    last_pass: i64,
    /// The queued jobs the forecast starts, by that start: their records change when
    /// the passes' time reaches it.
    forecast_starts: BTreeSet<(i64, JobId)>,
    /// Pending jobs with a dependency (their status reads other jobs).
    with_dependency: BTreeSet<JobId>,
    /// Jobs whose records show a preemption.
    preempted: BTreeSet<JobId>,
    /// The controller's node list's epoch the snapshot's configuration is of.
    node_epoch: u64,
    /// The controller's accounts' epoch the snapshot's operators are of.
    accounts_epoch: u64,
    /// What changes the nodes by what changed.
    nodes: nodes::NodesPublisher,
}

impl Publisher {
    /// A publisher for `ctl`'s jobs, published at once (at `now`).
    pub fn new(ctl: &mut Controller, now: i64) -> Self {
        let current = Listing::new(Arc::new(ctl.conf.clone()));
        let mut p = Publisher {
            shared: Published(Arc::new(RwLock::new(Arc::new(current.clone())))),
            current,
            passes: u64::MAX,
            forecast: u64::MAX,
            last_pass: i64::MIN,
            forecast_starts: BTreeSet::new(),
            with_dependency: BTreeSet::new(),
            preempted: BTreeSet::new(),
            node_epoch: ctl.node_book.epoch,
            accounts_epoch: u64::MAX,
            nodes: nodes::NodesPublisher::new(),
        };
        for id in ctl.jobs.keys().copied().collect::<Vec<_>>() {
            ctl.jobs.get_mut(&id);
        }
        p.publish(ctl, now);
        p
    }

    /// An input may have changed `touched` (nodes) other than through jobs: they are
    /// read again at the next publication.
    pub fn touch_nodes(&mut self, ctl: &Controller, touched: NodesTouched) {
        self.nodes.touch(ctl, touched);
    }

    /// The handle readers read the latest snapshot from.
    pub fn published(&self) -> Published {
        self.shared.clone()
    }

    /// The snapshot as last published.
    pub fn current(&self) -> &Listing {
        &self.current
    }

    /// Brings the snapshot up to date with `ctl` and publishes it if anything changed.
    /// Costs the jobs changed since the last call, plus, after a pass, the queued jobs
    /// whose reason or expected start it may have changed (after a new forecast: a
    /// look at each job queued). A snapshot with changes is stamped `now`.
    pub fn publish(&mut self, ctl: &mut Controller, now: i64) {
        let changed = ctl.jobs.take_changed();
        let passed = ctl.sched.passes() != self.passes;
        let mut dirty = false;
        // Nodes joined or left: records name nodes through the configuration.
        if ctl.node_book.epoch != self.node_epoch {
            self.node_epoch = ctl.node_book.epoch;
            self.current.conf = Arc::new(ctl.conf.clone());
            self.nodes.touch(ctl, nodes::NodesTouched::All);
            dirty = true;
        }
        if ctl.accounts_epoch() != self.accounts_epoch {
            self.accounts_epoch = ctl.accounts_epoch();
            let operators = ctl.accounts().operators();
            if *self.current.operators != operators {
                self.current.operators = Arc::new(operators);
                dirty = true;
            }
        }
        for id in &changed {
            let old = self.current.jobs.get(id).map(|l| l.job.clone());
            match ctl.jobs.shared(id) {
                Some(job) => {
                    self.nodes.job_changed(ctl, old.as_deref(), Some(job));
                    let live = ctl.live(job);
                    self.put(job.clone(), live);
                }
                None => {
                    self.nodes.job_changed(ctl, old.as_deref(), None);
                    self.current.take_out(*id);
                    self.with_dependency.remove(id);
                    self.preempted.remove(id);
                }
            }
            dirty = true;
        }
        let forecast = ctl.forecasts_made();
        // Queued jobs' reasons and expected starts change in passes only: looked at
        // again after one (or a new forecast), not after every input.
        let core_moved = ctl.sched.passes() != self.passes || forecast != self.forecast;
        if core_moved {
            let core_changed = ctl.sched.take_changed();
            let (was, now_pass) = (self.last_pass, ctl.sched.last_pass());
            self.passes = ctl.sched.passes();
            self.last_pass = now_pass;
            if forecast != self.forecast {
                // A new forecast: every queued job's expected start and nodes may
                // change with it, so each is compared (without building text).
                self.forecast = forecast;
                self.forecast_starts.clear();
                let queued: Vec<JobId> = ctl.sched.pending().map(|j| j.id()).collect();
                for id in queued {
                    if let Some(t) = ctl.forecast_start(id) {
                        self.forecast_starts.insert((t, id));
                    }
                    if !changed.contains(&id) && !self.with_dependency.contains(&id) {
                        dirty |= self.look_again(ctl, id, true);
                    }
                }
            } else {
                // The jobs whose view the passes changed: those the core wrote a new
                // reason or plan to, those whose `--begin` came (shown starting then
                // until it does), and those whose forecast start went by.
                let mut moved: BTreeSet<JobId> = core_changed;
                if was != i64::MIN {
                    moved.extend(ctl.sched.begins_between(was, now_pass));
                    moved.extend(
                        self.forecast_starts
                            .range((was, JobId(0))..(now_pass.max(was), JobId(0)))
                            .map(|&(_, id)| id),
                    );
                }
                for &id in &moved {
                    if !changed.contains(&id) && !self.with_dependency.contains(&id) {
                        dirty |= self.look_again(ctl, id, false);
                    }
                }
                #[cfg(debug_assertions)]
                self.check_unmoved(ctl, &moved, &changed);
            }
        }
        // Dependencies read other jobs; preemptions, the preempting set.
        let mut again: BTreeSet<JobId> = BTreeSet::new();
        if core_moved || dirty {
            again.extend(self.with_dependency.iter().copied());
        }
        again.extend(self.preempted.iter().copied());
        again.extend(ctl.preempting_ids());
        for id in again.difference(&changed) {
            dirty |= self.refresh(ctl, *id);
        }
        let nodes_moved = self.nodes.publish(ctl, &mut self.current.nodes, passed);
        if dirty {
            self.current.updated = now;
        }
        if dirty || nodes_moved {
            let next = Arc::new(self.current.clone());
            *self.shared.0.write().unwrap_or_else(|e| e.into_inner()) = next;
        }
    }

    /// Compares queued job `id`'s view from the core with its entry's, and reads its
    /// [`Live`] again when it differs (or when `forecast_changed` and the forecast
    /// names its nodes); whether the entry changed.
    fn look_again(&mut self, ctl: &Controller, id: JobId, forecast_changed: bool) -> bool {
        let Some(job) = ctl.jobs.shared(&id) else {
            return false;
        };
        let view = ctl.core_view(job);
        let same = self
            .current
            .jobs
            .get(&id)
            .is_some_and(|l| l.live.core == view && !(forecast_changed && view.expects_nodes));
        !same && self.refresh(ctl, id)
    }

    /// Debug builds: no queued job left out of `moved` (or `changed`) shows a view of
    /// the core other than its entry's.
    #[cfg(debug_assertions)]
    fn check_unmoved(&self, ctl: &Controller, moved: &BTreeSet<JobId>, changed: &BTreeSet<JobId>) {
        for j in ctl.sched.pending() {
            let id = j.id();
            if moved.contains(&id) || changed.contains(&id) || self.with_dependency.contains(&id) {
                continue;
            }
            let Some(job) = ctl.jobs.shared(&id) else {
                continue;
            };
            if let Some(l) = self.current.jobs.get(&id) {
                assert_eq!(
                    l.live.core,
                    ctl.core_view(job),
                    "job {id}'s view changed in a pass without being among the changed"
                );
            }
        }
    }

    /// Reads job `id`'s [`Live`] again and replaces its entry if it differs; whether
    /// it did.
    fn refresh(&mut self, ctl: &Controller, id: JobId) -> bool {
        let Some(job) = ctl.jobs.shared(&id) else {
            return false;
        };
        let live = ctl.live(job);
        if self.current.jobs.get(&id).is_some_and(|l| l.live == live) {
            return false;
        }
        self.put(job.clone(), live);
        true
    }

    fn put(&mut self, job: Arc<Job>, live: Live) {
        let id = job.id;
        if job.state == JobState::Pending && job.desc.dependency.is_some() {
            self.with_dependency.insert(id);
        } else {
            self.with_dependency.remove(&id);
        }
        if live.preemption.is_some() {
            self.preempted.insert(id);
        } else {
            self.preempted.remove(&id);
        }
        self.current.put(job, live);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_proto::accounts::{AccountsRequest, AssocFilter};

    use super::*;
    use crate::accounts::Requester;
    use crate::state::tests::conf;
    use crate::state::Controller;

    #[test]
    fn the_snapshot_knows_operators_and_administrators_as_sacctmgr_makes_and_unmakes_them() {
        // Readers decide from the snapshot whether a caller sees every job under
        // `PrivateData=jobs`: a user made an operator by `AdminLevel` is one there once
        // the change is published, and no longer once made a plain user again.
        let mut c = Controller::new(conf(1, 4), Path::new("/state"), vec![], vec![], 0);
        let mut p = Publisher::new(&mut c, 0);
        let root = Requester {
            name: "root".into(),
            superuser: true,
        };
        let change = |c: &mut Controller, request: AccountsRequest| {
            c.change_accounts(&root, &request, true).expect("changed");
        };
        change(
            &mut c,
            AccountsRequest::AddUsers {
                names: vec!["alice".into(), "bob".into()],
                accounts: vec!["root".into()],
                default_account: None,
                partitions: Vec::new(),
                admin_level: None,
                settings: Default::default(),
            },
        );
        p.publish(&mut c, 1);
        assert!(!p.published().latest().is_operator("alice"));
        let set = |c: &mut Controller, level| {
            change(
                c,
                AccountsRequest::ModifyUsers {
                    filter: AssocFilter {
                        users: vec!["alice".into()],
                        ..Default::default()
                    },
                    default_account: None,
                    admin_level: Some(level),
                    settings: Default::default(),
                },
            )
        };
        set(&mut c, AdminLevel::Operator);
        p.publish(&mut c, 2);
        let latest = p.published().latest();
        assert!(latest.is_operator("alice"));
        assert!(
            !latest.is_administrator("alice"),
            "an operator is no super user"
        );
        assert!(!latest.is_operator("bob"));
        set(&mut c, AdminLevel::Administrator);
        p.publish(&mut c, 3);
        let latest = p.published().latest();
        assert!(latest.is_operator("alice") && latest.is_administrator("alice"));
        set(&mut c, AdminLevel::None);
        p.publish(&mut c, 4);
        assert!(!p.published().latest().is_operator("alice"));
        assert!(!p.published().latest().is_administrator("alice"));
    }
}
