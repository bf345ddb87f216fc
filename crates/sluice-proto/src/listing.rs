//! What a job listing asks for: `GET /v1/jobs?jobs=…&users=…&states=…`, the filters
//! `squeue` and `scontrol show job` apply, applied by the controller where the jobs are.
//!
//! Every filter is a comma-separated list, absent when it does not filter; a job is
//! listed when it passes every filter given:
//! - `jobs`: `123` (the job, or every task of array 123) or `123_4` (one task);
//! - `users`: owners' names; `partitions`; `names` (job names);
//! - `states`: Slurm's state names (`PENDING,RUNNING`: what `squeue` lists without
//!   `-t`); an empty list matches nothing; absent or `all`: every state;
//! - `brief`: the answer is [`ListedJob`]s, only what `squeue`'s columns show, in a
//!   compact form (short keys, empty fields left out): a tenth of a record's size.
//!
//! `GET /v1/nodes?brief=true` answers [`ListedNode`]s likewise, for `sinfo`.
//!
//! Finished jobs past `MinJobAge` are never listed (the controller forgot them).

use serde::{Deserialize, Serialize};

use crate::types::{GresRequest, Hold, JobRecord, JobState, MemoryRequest, NodeInfo};

/// A job listing's filters, as query parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQuery {
    /// Job ids: `123`, `123_4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<String>,
    /// Owners' names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<String>,
    /// State names, or `all`; absent: every state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<String>,
    /// Partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<String>,
    /// Job names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
    /// Answer with [`ListedJob`]s.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub brief: bool,
    /// Only the jobs of this uid: set by the controller for a caller who may not see
    /// other users' jobs (`PrivateData=jobs`), never read from a request.
    #[serde(skip)]
    pub owner_only: Option<u32>,
}

/// The submitted indices a listing carries for a record with `pending` (its array's
/// unstarted rest) of an array submitted as `array`: all of them once one task is left
/// in the record, the only time `squeue` asks whether others have left it (the last
/// one left is shown as itself then, an array of one task as the array); none
/// otherwise, so that a large array costs its listing nothing more.
pub fn listed_indices<'a>(
    pending: Option<&(Vec<u32>, Option<u32>)>,
    array: Option<&'a (Vec<u32>, Option<u32>)>,
) -> &'a [u32] {
    match (pending, array) {
        (Some((rest, _)), Some((all, _))) if rest.len() == 1 => all,
        _ => &[],
    }
}

/// A field that is there, `null` or not: `Some` (an array without a throttle is
/// `"T":null`, which would read back as no array at all).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// A job as `squeue` lists it (`?brief=true`): the fields of a [`JobRecord`] its
/// columns, filters, order and array lines read, under short keys, those empty left
/// out. [`ListedJob::into_record`] gives the record back with these fields (and an
/// array's throttle as its submission's), the others empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListedJob {
    #[serde(rename = "i")]
    pub id: u64,
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub array: Option<(u64, u32)>,
    #[serde(rename = "ap", default, skip_serializing_if = "Option::is_none")]
    pub array_pending: Option<(Vec<u32>, Option<u32>)>,
    #[serde(rename = "sp", default, skip_serializing_if = "std::ops::Not::not")]
    pub split: bool,
    /// Waiting requeued in the state `SPECIAL_EXIT`.
    #[serde(rename = "se", default, skip_serializing_if = "std::ops::Not::not")]
    pub special_exit: bool,
    #[serde(rename = "U", default, skip_serializing_if = "is_zero")]
    pub uid: u32,
    #[serde(rename = "G", default, skip_serializing_if = "is_zero")]
    pub gid: u32,
    #[serde(rename = "u", default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(rename = "g", default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(rename = "A", default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    #[serde(rename = "P", default, skip_serializing_if = "String::is_empty")]
    pub partition: String,
    #[serde(rename = "q", default, skip_serializing_if = "String::is_empty")]
    pub qos: String,
    #[serde(rename = "s", default)]
    pub state: JobState,
    #[serde(rename = "r", default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(rename = "E", default, skip_serializing_if = "Option::is_none")]
    pub dependency_status: Option<String>,
    #[serde(rename = "p", default, skip_serializing_if = "is_zero")]
    pub priority: u32,
    #[serde(rename = "V", default, skip_serializing_if = "is_zero")]
    pub submit_time: i64,
    #[serde(rename = "S", default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<i64>,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<i64>,
    #[serde(rename = "ps", default, skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<i64>,
    #[serde(rename = "Y", default, skip_serializing_if = "Option::is_none")]
    pub sched_nodes: Option<String>,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<i64>,
    #[serde(rename = "N", default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    #[serde(rename = "C", default, skip_serializing_if = "Vec::is_empty")]
    pub cpus_per_node: Vec<u32>,
    #[serde(rename = "m", default, skip_serializing_if = "is_zero")]
    pub mem_per_node: u64,
    #[serde(rename = "md", default, skip_serializing_if = "Option::is_none")]
    pub mem_default: Option<MemoryRequest>,
    #[serde(rename = "n", default, skip_serializing_if = "is_zero")]
    pub ntasks: u32,
    #[serde(rename = "c", default, skip_serializing_if = "is_zero")]
    pub cpus_per_task: u32,
    #[serde(rename = "D", default, skip_serializing_if = "is_zero")]
    pub min_nodes: u32,
    /// The submission's: name, reservation, work directory, command, comment, nice,
    /// GRES, exclusive, WCKey, constraint, listed and excluded nodes, memory, sockets
    /// per node, and its array's throttle.
    #[serde(rename = "j", default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
    #[serde(rename = "Z", default, skip_serializing_if = "String::is_empty")]
    pub work_dir: String,
    #[serde(rename = "o", default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(rename = "y", default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    #[serde(rename = "b", default, skip_serializing_if = "Vec::is_empty")]
    pub gres: Vec<GresRequest>,
    #[serde(rename = "h", default, skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
    #[serde(rename = "os", default, skip_serializing_if = "std::ops::Not::not")]
    pub oversubscribe: bool,
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub wckey: Option<String>,
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// The nodes it asks for (`-w`) and excludes (`-x`), as submitted.
    #[serde(rename = "rn", default, skip_serializing_if = "Option::is_none")]
    pub nodelist: Option<String>,
    #[serde(rename = "xn", default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<String>,
    #[serde(rename = "M", default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryRequest>,
    #[serde(rename = "H", default, skip_serializing_if = "Option::is_none")]
    pub sockets_per_node: Option<u32>,
    /// Whether it was submitted as an array, and the array's throttle (`%N`).
    #[serde(
        rename = "T",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub array_throttle: Option<Option<u32>>,
    /// The indices an array was submitted with, on its own record once a single task
    /// is left in it ([`listed_indices`]): whether others have left it shows by them.
    #[serde(rename = "ai", default, skip_serializing_if = "Vec::is_empty")]
    pub array_indices: Vec<u32>,
    /// A service's submission and state (`squeue -O Service`).
    #[serde(rename = "sv", default, skip_serializing_if = "Option::is_none")]
    pub service: Option<crate::service::ServiceSpec>,
    #[serde(rename = "ss", default, skip_serializing_if = "Option::is_none")]
    pub service_state: Option<crate::service::ServiceState>,
    /// Its latest run's suspensions (run times leave them out).
    #[serde(rename = "su", default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<crate::types::Suspension>,
    #[serde(rename = "het", default, skip_serializing_if = "Option::is_none")]
    pub het: Option<crate::types::HetJob>,
    /// Its run's processes are being ended (`COMPLETING`, see
    /// [`JobRecord::completing`]).
    #[serde(rename = "cg", default, skip_serializing_if = "std::ops::Not::not")]
    pub completing: bool,
}

impl ListedJob {
    /// The listed fields of `r`.
    pub fn from_record(mut r: JobRecord) -> Self {
        let special_exit = r.special_exit();
        if r.nodes.is_empty() {
            r.nodes = r.listed_nodes().to_vec();
        }
        let d = r.desc;
        let array_indices = listed_indices(r.array_pending.as_ref(), d.array.as_ref()).to_vec();
        ListedJob {
            id: r.id,
            array: r.array,
            array_pending: r.array_pending,
            split: r.split,
            special_exit,
            uid: r.uid,
            gid: r.gid,
            user: r.user,
            group: r.group,
            account: r.account,
            partition: r.partition,
            qos: r.qos,
            state: r.state,
            reason: r.reason,
            dependency_status: r.dependency_status,
            priority: r.priority,
            submit_time: r.submit_time,
            start_time: r.start_time,
            end_time: r.end_time,
            planned_start: r.planned_start,
            sched_nodes: r.sched_nodes,
            time_limit: r.time_limit,
            nodes: r.nodes,
            cpus_per_node: r.cpus_per_node,
            mem_per_node: r.mem_per_node,
            mem_default: r.mem_default,
            ntasks: r.ntasks,
            cpus_per_task: r.cpus_per_task,
            min_nodes: r.min_nodes,
            name: d.name,
            reservation: d.reservation,
            work_dir: d.work_dir,
            command: d.command,
            comment: d.comment,
            nice: d.nice,
            gres: d.gres,
            exclusive: d.exclusive,
            oversubscribe: d.oversubscribe,
            wckey: d.wckey,
            constraint: d.constraint,
            nodelist: d.nodelist,
            exclude: d.exclude,
            memory: d.memory,
            sockets_per_node: d.sockets_per_node,
            array_indices,
            array_throttle: d.array.map(|a| a.1),
            service: d.service,
            service_state: r.service_state,
            suspension: r.suspension,
            het: r.het,
            completing: r.ending_run.is_some(),
        }
    }

    /// A record with the listed fields (an array's submission with its throttle, and
    /// its indices on the array's own record), the others empty.
    pub fn into_record(self) -> JobRecord {
        let mut r = JobRecord {
            id: self.id,
            array: self.array,
            array_pending: self.array_pending,
            split: self.split,
            hold: self.special_exit.then_some(Hold::SpecialExit),
            uid: self.uid,
            gid: self.gid,
            user: self.user,
            group: self.group,
            account: self.account,
            partition: self.partition,
            qos: self.qos,
            state: self.state,
            reason: self.reason,
            dependency_status: self.dependency_status,
            priority: self.priority,
            submit_time: self.submit_time,
            start_time: self.start_time,
            end_time: self.end_time,
            planned_start: self.planned_start,
            sched_nodes: self.sched_nodes,
            time_limit: self.time_limit,
            nodes: self.nodes,
            cpus_per_node: self.cpus_per_node,
            mem_per_node: self.mem_per_node,
            mem_default: self.mem_default,
            ntasks: self.ntasks,
            cpus_per_task: self.cpus_per_task,
            min_nodes: self.min_nodes,
            service_state: self.service_state,
            suspension: self.suspension,
            het: self.het,
            ending_run: self
                .completing
                .then(|| Box::new(crate::types::EndingRun::default())),
            ..Default::default()
        };
        let d = &mut r.desc;
        d.name = self.name;
        d.reservation = self.reservation;
        d.work_dir = self.work_dir;
        d.command = self.command;
        d.comment = self.comment;
        d.nice = self.nice;
        d.gres = self.gres;
        d.exclusive = self.exclusive;
        d.oversubscribe = self.oversubscribe;
        d.wckey = self.wckey;
        d.constraint = self.constraint;
        d.nodelist = self.nodelist;
        d.exclude = self.exclude;
        d.memory = self.memory;
        d.sockets_per_node = self.sockets_per_node;
        d.array = self.array_throttle.map(|t| (self.array_indices, t));
        d.service = self.service;
        r
    }
}

/// Which states a listing takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateFilter {
    /// Every state.
    All,
    /// These states (none: nothing).
    Only(Vec<JobState>),
}

/// The states a listing names, as squeue's `-t` reads them: base states, and the
/// flags `COMPLETING` and `SPECIAL_EXIT`.
#[derive(Clone, Copy, Debug)]
pub struct StateNames<'a> {
    /// The base states named.
    pub states: &'a [JobState],
    /// `COMPLETING` (`CG`) named.
    pub completing: bool,
    /// `SPECIAL_EXIT` (`SE`) named.
    pub special_exit: bool,
}

impl StateNames<'_> {
    /// Whether a job in `state`, `completing` (its processes being ended) or
    /// `special_exit` (requeued so) is selected. As Slurm's squeue, which compares a
    /// named base state with the whole of a job's state: a job showing a flag is
    /// selected only by naming that flag, never by its base state (`-t PD` leaves out
    /// a requeued job whose last run still ends, `-t R` a cancelled job still ending).
    pub fn selects(&self, state: JobState, completing: bool, special_exit: bool) -> bool {
        if completing || special_exit {
            (completing && self.completing) || (special_exit && self.special_exit)
        } else {
            self.states.contains(&state)
        }
    }
}

/// Whether `name` names the state `SPECIAL_EXIT` (long or compact, any case).
pub fn is_special_exit(name: &str) -> bool {
    name.eq_ignore_ascii_case("SPECIAL_EXIT") || name.eq_ignore_ascii_case("SE")
}

impl JobQuery {
    /// The path of this listing: `/v1/jobs` with its filters.
    pub fn path(&self) -> String {
        let mut out = String::from("/v1/jobs");
        let mut sep = '?';
        let mut add = |key: &str, value: &str| {
            out.push(sep);
            sep = '&';
            out.push_str(key);
            out.push('=');
            encode(value, &mut out);
        };
        for (key, value) in [
            ("jobs", &self.jobs),
            ("users", &self.users),
            ("states", &self.states),
            ("partitions", &self.partitions),
            ("names", &self.names),
        ] {
            if let Some(v) = value {
                add(key, v);
            }
        }
        if self.brief {
            add("brief", "true");
        }
        out
    }

    /// The job ids asked for: (job, task); `None` when not filtered. An id that does
    /// not parse matches nothing.
    pub fn job_ids(&self) -> Option<Vec<(u64, Option<u32>)>> {
        let list = self.jobs.as_deref()?;
        Some(
            items(list)
                .filter_map(|id| match id.split_once('_') {
                    Some((j, t)) => Some((j.parse().ok()?, Some(t.parse().ok()?))),
                    None => Some((id.parse().ok()?, None)),
                })
                .collect(),
        )
    }

    /// The states asked for.
    pub fn state_filter(&self) -> StateFilter {
        match self.states.as_deref() {
            None => StateFilter::All,
            Some(s) if s.eq_ignore_ascii_case("all") => StateFilter::All,
            Some(s) => StateFilter::Only(items(s).filter_map(JobState::parse).collect()),
        }
    }

    /// Whether the states asked for name `COMPLETING` (`CG`): jobs whose processes are
    /// being ended match it, whatever their state (as Slurm's job state flag).
    pub fn wants_completing(&self) -> bool {
        self.states.as_deref().is_some_and(|s| {
            items(s).any(|s| s.eq_ignore_ascii_case("COMPLETING") || s.eq_ignore_ascii_case("CG"))
        })
    }

    /// Whether the states asked for name `SPECIAL_EXIT` (`SE`): jobs requeued in that
    /// state match it.
    pub fn wants_special_exit(&self) -> bool {
        self.states
            .as_deref()
            .is_some_and(|s| items(s).any(is_special_exit))
    }
}

/// The items of a comma-separated list (empty ones left out).
pub fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').filter(|s| !s.is_empty())
}

/// `value` percent-encoded for a query string, onto `out`.
fn encode(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b',') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A node listing's query: `GET /v1/nodes?brief=true` answers [`ListedNode`]s,
/// `?runs=true` [`ListedRun`]s (`runs` wins when both are asked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeQuery {
    /// Answer with [`ListedNode`]s.
    #[serde(default)]
    pub brief: bool,
    /// Answer with [`ListedRun`]s.
    #[serde(default)]
    pub runs: bool,
}

/// Nodes next to each other in the listing whose [`ListedNode`]s differ only by name
/// (`GET /v1/nodes?runs=true`, what `sinfo` reads): their names as one host list
/// (`n[00001-10000]`, whose expansion gives them back in order) and what they share,
/// under an empty name. 10,000 alike nodes are one short line instead of 10,000.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListedRun {
    /// The nodes' names, as a host list.
    #[serde(rename = "ns")]
    pub names: String,
    /// What the nodes share (its `name` empty).
    #[serde(rename = "x")]
    pub node: ListedNode,
}

/// A node as `sinfo` lists it (`GET /v1/nodes?brief=true`): the fields of a
/// [`NodeInfo`] its columns, filters and grouping read, under short keys, those empty
/// (or, for the address and host name, equal to the node's name) left out: about a
/// sixth of a node's full size (0.8 MB instead of 5.1 MB for 10,000 plain nodes), for
/// the listings of clusters of thousands of nodes.
/// [`ListedNode::into_info`] gives the node back with these fields, the others empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListedNode {
    #[serde(rename = "n")]
    pub name: String,
    #[serde(rename = "s")]
    pub state: String,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(rename = "rs", default, skip_serializing_if = "Option::is_none")]
    pub reason_set: Option<(u32, i64)>,
    #[serde(rename = "c", default, skip_serializing_if = "is_zero")]
    pub cpus: u32,
    #[serde(rename = "ca", default, skip_serializing_if = "is_zero")]
    pub cpus_alloc: u32,
    #[serde(rename = "cs", default, skip_serializing_if = "is_zero")]
    pub spec_cpus: u32,
    #[serde(rename = "m", default, skip_serializing_if = "is_zero")]
    pub memory: u64,
    #[serde(rename = "ma", default, skip_serializing_if = "is_zero")]
    pub memory_alloc: u64,
    #[serde(rename = "g", default, skip_serializing_if = "String::is_empty")]
    pub gres: String,
    /// Sockets, cores per socket, threads per core.
    #[serde(rename = "l")]
    pub layout: (u32, u32, u32),
    #[serde(rename = "f", default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    #[serde(rename = "w", default, skip_serializing_if = "is_zero")]
    pub weight: u32,
    #[serde(rename = "u", default, skip_serializing_if = "is_zero")]
    pub agent_up: bool,
    #[serde(rename = "d", default, skip_serializing_if = "is_zero")]
    pub down: bool,
    /// `NodeAddr`, when it is not the node's name.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub node_addr: Option<String>,
    /// `NodeHostname`, when it is not the node's name.
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    pub node_hostname: Option<String>,
    /// Its agent has not registered since the controller started (`sinfo %v` is then
    /// `N/A`). Said this way round so that a controller that does not send it lists
    /// every node as registered, as before.
    #[serde(rename = "nr", default, skip_serializing_if = "is_zero")]
    pub unregistered: bool,
}

impl ListedNode {
    /// The listed fields of `n`.
    pub fn of(n: &NodeInfo) -> ListedNode {
        let unless_name = |v: &str| (v != n.name).then(|| v.to_string());
        ListedNode {
            name: n.name.clone(),
            state: n.state.clone(),
            reason: n.reason.clone(),
            reason_set: n.reason_set,
            cpus: n.cpus,
            cpus_alloc: n.cpus_alloc,
            spec_cpus: n.spec_cpus,
            memory: n.memory,
            memory_alloc: n.memory_alloc,
            gres: n.gres.clone(),
            layout: (n.sockets, n.cores_per_socket, n.threads_per_core),
            features: n.features.clone(),
            weight: n.weight,
            agent_up: n.agent_up,
            down: n.down,
            node_addr: unless_name(&n.node_addr),
            node_hostname: unless_name(&n.node_hostname),
            unregistered: n.agent_start.is_none(),
        }
    }

    /// A node with the listed fields, the others empty: a registered node's
    /// `agent_start` is `Some(0)` (registered, at a time the listing leaves out).
    pub fn into_info(self) -> NodeInfo {
        let (sockets, cores_per_socket, threads_per_core) = self.layout;
        NodeInfo {
            node_addr: self.node_addr.unwrap_or_else(|| self.name.clone()),
            node_hostname: self.node_hostname.unwrap_or_else(|| self.name.clone()),
            name: self.name,
            state: self.state,
            reason: self.reason,
            reason_set: self.reason_set,
            cpus: self.cpus,
            cpus_alloc: self.cpus_alloc,
            spec_cpus: self.spec_cpus,
            memory: self.memory,
            memory_alloc: self.memory_alloc,
            gres: self.gres,
            sockets,
            cores_per_socket,
            threads_per_core,
            features: self.features,
            weight: self.weight,
            agent_up: self.agent_up,
            down: self.down,
            agent_start: (!self.unregistered).then_some(0),
            ..NodeInfo::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_job_keeps_the_nodes_it_asks_for_and_excludes() {
        // squeue's %n and %x read them.
        let mut r = JobRecord {
            id: 8,
            ..Default::default()
        };
        r.desc.nodelist = Some("n2,n1".into());
        r.desc.exclude = Some("n3".into());
        let json = serde_json::to_string(&ListedJob::from_record(r)).unwrap();
        assert!(json.contains(r#""rn":"n2,n1","xn":"n3""#), "{json}");
        let back: ListedJob = serde_json::from_str(&json).unwrap();
        let back = back.into_record();
        assert_eq!(
            (back.desc.nodelist.as_deref(), back.desc.exclude.as_deref()),
            (Some("n2,n1"), Some("n3"))
        );
    }

    #[test]
    fn a_listed_job_keeps_what_squeue_reads_and_reads_back() {
        let mut r = JobRecord {
            id: 7,
            array: Some((5, 2)),
            user: "alice".into(),
            partition: "debug".into(),
            state: JobState::Running,
            reason: "None".into(),
            priority: 42,
            start_time: Some(100),
            nodes: vec!["n1".into()],
            cpus_per_node: vec![4],
            stdout: "/home/alice/out".into(),
            tres_req: vec![("cpu".into(), 4)],
            ..Default::default()
        };
        r.desc.name = "job".into();
        r.desc.array = Some((vec![1, 2, 3], Some(2)));
        r.desc.output = Some("out".into());
        let listed = ListedJob::from_record(r.clone());
        let json = serde_json::to_string(&listed).unwrap();
        assert_eq!(
            json,
            r#"{"i":7,"a":[5,2],"u":"alice","P":"debug","s":"RUNNING","r":"None","p":42,"S":100,"N":["n1"],"C":[4],"j":"job","T":2}"#
        );
        let back: ListedJob = serde_json::from_str(&json).unwrap();
        let back = back.into_record();
        // What squeue reads is there; a task's copy of the array's indices and what
        // it does not read are not.
        let mut expected = r.clone();
        expected.desc.array = Some((vec![], Some(2)));
        expected.stdout = String::new();
        expected.tres_req = vec![];
        expected.desc.output = None;
        assert_eq!(back, expected);
        // The array's own record, once one task is left in it, keeps the indices it
        // was submitted with: squeue tells by them whether others have left it.
        r.array_pending = Some((vec![2, 3], Some(2)));
        let back = ListedJob::from_record(r.clone()).into_record();
        assert_eq!(back.desc.array, Some((vec![], Some(2))));
        r.array_pending = Some((vec![3], Some(2)));
        let back = ListedJob::from_record(r.clone()).into_record();
        assert_eq!(back.desc.array, Some((vec![1, 2, 3], Some(2))));
        // Without a throttle (`"T":null`), still an array when read back.
        r.desc.array = Some((vec![1, 2, 3], None));
        let json = serde_json::to_string(&ListedJob::from_record(r)).unwrap();
        let back: ListedJob = serde_json::from_str(&json).unwrap();
        assert_eq!(back.into_record().desc.array, Some((vec![1, 2, 3], None)));
    }

    #[test]
    fn a_job_showing_a_flag_is_selected_by_the_flag_not_its_base_state() {
        let q = JobQuery {
            states: Some("pd,se".into()),
            ..Default::default()
        };
        assert!(q.wants_special_exit() && !q.wants_completing());
        let pending = [JobState::Pending];
        let named = |completing, special_exit| StateNames {
            states: &pending,
            completing,
            special_exit,
        };
        // (state, completing, special exit) of: a job waiting, one requeued in
        // SPECIAL_EXIT, one requeued whose last run still ends, one running.
        let jobs = [
            (JobState::Pending, false, false),
            (JobState::Pending, false, true),
            (JobState::Pending, true, false),
            (JobState::Running, false, false),
        ];
        let selected = |n: StateNames| jobs.map(|(s, cg, se)| n.selects(s, cg, se));
        assert_eq!(selected(named(false, false)), [true, false, false, false]);
        assert_eq!(selected(named(false, true)), [true, true, false, false]);
        assert_eq!(selected(named(true, false)), [true, false, true, false]);
    }

    #[test]
    fn a_query_becomes_a_path_and_its_filters_read_back() {
        let q = JobQuery {
            jobs: Some("12,13_4".into()),
            users: Some("alice".into()),
            states: Some("PENDING,RUNNING".into()),
            names: Some("a b&c=d".into()),
            brief: true,
            ..Default::default()
        };
        assert_eq!(
            q.path(),
            "/v1/jobs?jobs=12,13_4&users=alice&states=PENDING,RUNNING&names=a%20b%26c%3Dd\
             &brief=true"
        );
        assert_eq!(q.job_ids(), Some(vec![(12, None), (13, Some(4))]));
        assert_eq!(
            q.state_filter(),
            StateFilter::Only(vec![JobState::Pending, JobState::Running])
        );
        assert_eq!(JobQuery::default().path(), "/v1/jobs");
        assert_eq!(JobQuery::default().state_filter(), StateFilter::All);
        let all = JobQuery {
            states: Some("all".into()),
            ..Default::default()
        };
        assert_eq!(all.state_filter(), StateFilter::All);
        let none = JobQuery {
            states: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(none.state_filter(), StateFilter::Only(vec![]));
        assert_eq!(none.path(), "/v1/jobs?states=");
    }

    #[test]
    fn a_listed_node_gives_back_what_sinfo_reads_in_under_half_the_bytes() {
        let n = NodeInfo {
            cfg_tres: "cpu=64,mem=250000M,billing=64".into(),
            name: "n00042".into(),
            state: "drained".into(),
            reason: Some("fan".into()),
            reason_set: Some((0, 1_700_000_000)),
            cpus: 62,
            cpus_alloc: 0,
            spec_cpus: 2,
            memory: 250_000,
            partitions: vec!["all".into()],
            sockets: 2,
            cores_per_socket: 32,
            threads_per_core: 1,
            features: vec!["a100".into()],
            weight: 1,
            agent_up: true,
            node_addr: "10.0.0.42".into(),
            node_hostname: "n00042".into(),
            port: Some(6818),
            agent_start: Some(1_700_000_000),
            last_busy: Some(1_700_000_000),
            ..NodeInfo::default()
        };
        let listed = ListedNode::of(&n);
        let full = serde_json::to_vec(&n).unwrap().len();
        let brief = serde_json::to_vec(&listed).unwrap();
        assert!(brief.len() * 2 < full, "{} of {full} bytes", brief.len());
        let back: ListedNode = serde_json::from_slice(&brief).unwrap();
        assert_eq!(back, listed);
        let info = back.into_info();
        let sinfo_reads = |n: &NodeInfo| {
            (
                (
                    n.name.clone(),
                    n.state.clone(),
                    n.reason.clone(),
                    n.reason_set,
                ),
                (n.cpus, n.cpus_alloc, n.spec_cpus, n.memory, n.memory_alloc),
                (
                    n.gres.clone(),
                    n.sockets,
                    n.cores_per_socket,
                    n.threads_per_core,
                ),
                (n.features.clone(), n.weight, n.agent_up, n.down),
                (n.node_addr.clone(), n.node_hostname.clone()),
            )
        };
        assert_eq!(sinfo_reads(&info), sinfo_reads(&n));
        assert_eq!(info.port, None);
    }
}
