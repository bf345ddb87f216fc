//! `scontrol update`: administrators drain, down and resume nodes; owners (and operators)
//! change their jobs.

use serde::{Deserialize, Serialize};
use sluice_proto::error::{ApiError, ErrorCode, INVALID_NODE_NAME};

use super::*;

/// A node state an operator set, kept across controller restarts (Slurm keeps it in
/// its state save files).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeOverride {
    /// `DRAIN` (running jobs finish, nothing new starts) or `DOWN` (nothing runs).
    pub state: String,
    /// Why, as the operator wrote it.
    pub reason: String,
    /// Who set it (uid).
    pub uid: u32,
    /// When, Unix seconds.
    pub time: i64,
}

/// The state of a drained node whose agent was silent `SlurmdTimeout` long: DOWN
/// beneath its drain, the operator's reason kept (Slurm's `DOWN+DRAIN`).
pub const DOWN_DRAIN: &str = "DOWN+DRAIN";

/// Slurm's message when DRAIN or DOWN comes without a reason.
pub const REASON_NEEDED: &str =
    "You must specify a reason when DOWNING or DRAINING a node. Request denied";

impl Controller {
    /// Takes back the node states operators set before a restart (rows from the
    /// store: node name, serialised [`NodeOverride`]).
    ///
    /// A node whose slurm.conf line says `State=DOWN` keeps that state whatever was
    /// saved; one whose line says `State=DRAIN` (Slurm's `UNKNOWN+DRAIN`) stays drained,
    /// DOWN beneath its drain if it was saved DOWN — as Slurm's `load_all_node_state`,
    /// which restores a saved state over a line's `UNKNOWN` only. The saved reason, who
    /// set it and when, stand where the line gives no `Reason=`. Such nodes' states are
    /// then written back ([`Controller::configured_rows`]).
    pub fn restore_nodes(&mut self, rows: &[(String, String)]) {
        for (name, record) in rows {
            if let (Some(nid), Ok(mut o)) = (
                self.conf.node_id(name),
                serde_json::from_str::<NodeOverride>(record),
            ) {
                if self.node_book.configured.contains(name) {
                    let Some(line) = self.node_overrides.get(name).cloned() else {
                        continue;
                    };
                    let saved_down = o.state == "DOWN" || o.state == DOWN_DRAIN;
                    let state = if line.state == "DRAIN" && saved_down {
                        DOWN_DRAIN.to_string()
                    } else {
                        line.state.clone()
                    };
                    o = if line.reason.is_empty() && !o.reason.is_empty() {
                        NodeOverride { state, ..o }
                    } else {
                        NodeOverride { state, ..line }
                    };
                }
                tracing::info!(
                    "node {name} keeps state {} set by uid {}, reason: {}",
                    o.state,
                    o.uid,
                    o.reason
                );
                self.node_overrides.insert(name.clone(), o);
                let state = self.node_state(nid);
                self.sched.set_node_state(nid, state);
            }
        }
    }

    /// Node `nid`, configured `State=DRAIN` or `State=DOWN` in slurm.conf, takes that
    /// state as if an operator had set it, with its line's `Reason=` (set by no one
    /// at no known time: uid 0, time 0, as Slurm shows it): an operator resumes it as
    /// any other, `ReturnToService` brings a DOWN one back as Slurm's does, and its
    /// configured state is UP from then on. Nothing for any other node.
    pub(crate) fn adopt_configured_state(&mut self, nid: NodeId) {
        let node = &mut self.conf.cluster.nodes[nid.index()];
        let state = match node.state {
            NodeState::Drain => "DRAIN",
            NodeState::Down => "DOWN",
            NodeState::Up => return,
        };
        if node.name.is_empty() {
            return;
        }
        node.state = NodeState::Up;
        let name = node.name.clone();
        let reason = self
            .conf
            .node_reasons
            .get(&name)
            .cloned()
            .unwrap_or_default();
        self.node_book.configured.insert(name.clone());
        self.node_overrides.insert(
            name,
            NodeOverride {
                state: state.into(),
                reason,
                uid: 0,
                time: 0,
            },
        );
    }

    /// The states of the nodes slurm.conf configures DRAIN or DOWN, as restored (node
    /// name, serialised [`NodeOverride`]): kept in the store at the start, as Slurm
    /// saves them, so that a line that no longer says so leaves the node as it was.
    pub fn configured_rows(&self) -> Vec<(String, String)> {
        self.node_book
            .configured
            .iter()
            .filter_map(|name| {
                let o = self.node_overrides.get(name)?;
                Some((
                    name.clone(),
                    serde_json::to_string(o).expect("records serialise"),
                ))
            })
            .collect()
    }

    /// What node `nid` takes now: the operator's DRAIN or DOWN, else its configured
    /// state.
    pub(crate) fn node_state(&self, nid: NodeId) -> NodeState {
        let node = self.conf.cluster.node(nid);
        match self
            .node_overrides
            .get(&node.name)
            .map(|o| o.state.as_str())
        {
            _ if self.node_book.held_future.contains(&node.name) => NodeState::Down,
            Some("DOWN") | Some(DOWN_DRAIN) => NodeState::Down,
            Some(_) => NodeState::Drain,
            None => node.state,
        }
    }

    /// The operator's reason for node `name`'s state, with who set it and when.
    pub fn node_override(&self, name: &str) -> Option<&NodeOverride> {
        self.node_overrides.get(name)
    }

    /// `scontrol update NodeName=LIST State=S [Reason=R]`: `DRAIN` (or `FAIL`), `DOWN`,
    /// `RESUME` (or `UNDRAIN`, `IDLE`). Operators only. A node set DOWN loses its
    /// running jobs as on a node failure: requeued when they may be, else `NODE_FAIL`.
    ///
    /// Errors (Slurm's): "Invalid user id" (not a super user), "Invalid node name specified",
    /// "Invalid node state specified", [`REASON_NEEDED`].
    pub fn update_node(
        &mut self,
        names: &str,
        state: &str,
        reason: Option<&str>,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::not_super_user());
        }
        let invalid = || ApiError::new(ErrorCode::InvalidNodeName, INVALID_NODE_NAME);
        let nodes: Vec<(String, NodeId)> = sluice_conf::hostlist::expand(names)
            .map_err(|_| invalid())?
            .into_iter()
            .map(|n| self.conf.node_id(&n).map(|id| (n, id)).ok_or_else(invalid))
            .collect::<Result<_, _>>()?;
        let state = state.to_ascii_uppercase();
        // FUTURE (three letters at least, as scontrol reads it): the node takes no
        // work and is hidden until an operator resumes it; its jobs are lost as on
        // DOWN. RESUME, IDLE and DOWN end FUTURE; DRAIN and UNDRAIN keep it.
        let to_future = state.len() >= 3 && "FUTURE".starts_with(state.as_str());
        let set = match state.as_str() {
            "DRAIN" | "FAIL" => Some("DRAIN"),
            "DOWN" => Some("DOWN"),
            "RESUME" | "UNDRAIN" | "IDLE" => None,
            _ if to_future => None,
            _ => return Err(ApiError::invalid("Invalid node state specified")),
        };
        let ends_future = matches!(state.as_str(), "RESUME" | "IDLE" | "DOWN");
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        if set.is_some() && reason.is_none() {
            return Err(ApiError::invalid(REASON_NEEDED));
        }
        let mut effects = Vec::new();
        for (name, nid) in nodes {
            if to_future {
                self.node_book.held_future.insert(name.clone());
                self.node_book.resumed.remove(&name);
                self.node_book.quiet.remove(&name);
            } else if ends_future {
                if state == "DOWN" && self.node_future(&name) {
                    // As Slurm's: a FUTURE node set DOWN was never expected to answer.
                    self.node_book.quiet.insert(name.clone());
                } else if state != "DOWN" {
                    self.node_book.quiet.remove(&name);
                }
                self.node_book.held_future.remove(&name);
                self.node_book.future.remove(&name);
                self.node_book.resumed.insert(name.clone());
            }
            // As Slurm's node flags: DOWN and DRAIN stack (`DOWN+DRAIN`), UNDRAIN takes
            // away only the drain, RESUME both.
            let was = self.node_overrides.get(&name).map(|o| o.state.clone());
            let was_down = matches!(was.as_deref(), Some("DOWN") | Some(DOWN_DRAIN));
            let was_drained = matches!(was.as_deref(), Some("DRAIN") | Some(DOWN_DRAIN));
            let record = match set {
                Some(s) => {
                    let stacked = (s == "DRAIN" && was_down) || (s == "DOWN" && was_drained);
                    let o = NodeOverride {
                        state: if stacked { DOWN_DRAIN } else { s }.into(),
                        reason: reason.unwrap_or_default().into(),
                        uid: caller.uid,
                        time: now,
                    };
                    let json = serde_json::to_string(&o).expect("records serialise");
                    self.node_overrides.insert(name.clone(), o);
                    self.liveness.settled(&name);
                    Some(json)
                }
                None if state == "UNDRAIN" && was_down => {
                    // Still DOWN, with its reason; asked to register again, as Slurm's
                    // `_require_node_reg`: not responding until its agent answers, when
                    // `ReturnToService` may bring it back.
                    let o = self.node_overrides.get_mut(&name).expect("overridden");
                    o.state = "DOWN".into();
                    let json = serde_json::to_string(&*o).expect("records serialise");
                    if self.agents_up.contains(&name) {
                        self.liveness.await_answer(&name, now);
                    }
                    Some(json)
                }
                None => {
                    let was = self.node_overrides.remove(&name);
                    if was.is_some() && self.agents_up.contains(&name) {
                        self.await_answer(&name, nid, now);
                    }
                    None
                }
            };
            tracing::info!(
                "update_node: node {name} state set to {} by uid {}{}",
                self.node_overrides
                    .get(&name)
                    .map(|o| o.state.as_str())
                    .unwrap_or(if to_future { "FUTURE" } else { "RESUME" }),
                caller.uid,
                reason
                    .map(|r| format!(", reason set to: {r}"))
                    .unwrap_or_default()
            );
            effects.push(Effect::PersistNode {
                name: name.clone(),
                record,
            });
            // An agent that is not there keeps the node down whatever the operator says;
            // an operator's DOWN ends its jobs at once, silent agent or not.
            let state = if set == Some("DOWN") || self.node_overridden_down(&name) {
                NodeState::Down
            } else if self.liveness.awaiting(&name) || self.liveness.is_silent(&name) {
                NodeState::Drain
            } else if self.agents_up.contains(&name) {
                self.node_state(nid)
            } else {
                NodeState::Down
            };
            if self.node_awaited(&name) && self.node_state(nid) == NodeState::Up {
                // Still awaiting its agent's first registration: no work, yet up for
                // waiting jobs' reasons (see `Controller::await_agents`).
                self.sched.await_node(nid);
            } else {
                self.sched.set_node_state(nid, state);
            }
            if state == NodeState::Down {
                let lost: Vec<JobId> = self
                    .jobs
                    .values()
                    .filter(|j| j.state == JobState::Running && j.on_node(nid))
                    .map(|j| j.id)
                    .collect();
                for id in lost {
                    let r = &self.jobs[&id];
                    let first_alive = r
                        .first_node()
                        .is_some_and(|f| self.agents_up.contains(&self.conf.cluster.node(f).name));
                    let requeueable = r.desc.requeue.unwrap_or(true) && !r.desc.interactive;
                    if first_alive && requeueable {
                        // Its batch script's agent is alive: requeue as scontrol requeue
                        // does, the next run waiting until this one has ended there.
                        effects.extend(self.requeue_record(id, now)?);
                        continue;
                    }
                    effects.push(Effect::Terminate {
                        nodes: self.node_names(r),
                        job_id: id,
                        state: JobState::NodeFail,
                    });
                    effects.extend(self.node_failed_job(id, JobState::NodeFail, now));
                }
            }
        }
        self.outside_dirty = true;
        effects.extend(self.schedule(now));
        Ok(effects)
    }

    /// [`Controller::update_job`] as `scontrol update` sees it, for job `job` or
    /// `tasks` of array `job` (`JobId=A_[1-3]`). An array's tasks (named, or the whole
    /// array) are updated each on its own, as Slurm updates each of its records: those
    /// refused are answered a line per group (`A_1-3: MESSAGE`, those of an array
    /// cancelled before they started for that array's record, all of its tasks), with
    /// the tasks the array lacks; the others are updated.
    pub fn update_job_verb(
        &mut self,
        job: JobId,
        tasks: Option<&[u32]>,
        changes: &[(String, String)],
        caller: &Caller,
        now: i64,
    ) -> Result<(Vec<Effect>, Vec<String>), ApiError> {
        if tasks.is_none() && !self.is_array(job) {
            return Ok((self.update_job(job, changes, caller, now)?, Vec::new()));
        }
        let (ids, missing) = self.select_tasks(job, tasks);
        if ids.is_empty() {
            return self.missing_tasks(job, &missing).map(|l| (Vec::new(), l));
        }
        let alone = tasks.is_some_and(|t| !self.covers_array_record(job, t));
        let mut refused = Vec::new();
        let mut done = Vec::new();
        for id in ids {
            match self.update_refusal(id, changes, caller) {
                Ok(()) => done.push(id),
                Err(e) => refused.push((id, e.message)),
            }
        }
        // Slurm splits the tasks named from the array's record before it looks at them:
        // those refused are apart all the same.
        let mut effects = if alone {
            let ids: Vec<JobId> = refused.iter().map(|r| r.0).collect();
            self.split_named(&ids)
        } else {
            Vec::new()
        };
        if !done.is_empty() {
            effects.extend(self.apply_update(&done, changes, alone, caller, now)?);
        }
        Ok((effects, self.task_lines(job, &done, &refused, &missing)))
    }

    /// `scontrol update JobId=N KEY=VALUE...` for a job (all tasks of an array, checked
    /// together: a refusal changes none; [`Controller::update_job_verb`] answers for
    /// each task as `scontrol` does). Keys: `TimeLimit`, `JobName` (or `Name`), `Comment`, `Nice`, and for pending jobs
    /// `Partition` and `StartTime` (the `--begin` time, Unix seconds here, parsed by the
    /// command). Owners may lower a time limit; only operators may raise it, or set a
    /// negative nice. A running batch job's new limit is enforced by its agent.
    ///
    /// Errors (Slurm's): "Invalid job id specified", "Access/permission denied",
    /// "Job is no longer pending execution", "Invalid partition name specified",
    /// "Requested time limit is invalid (missing or exceeds some limit)",
    /// "Update of this parameter is not supported: KEY".
    pub fn update_job(
        &mut self,
        job: JobId,
        changes: &[(String, String)],
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let ids = self.select(job, None);
        if ids.is_empty() {
            return Err(ApiError::invalid_job());
        }
        // Check everything first: a refused update changes nothing.
        for &id in &ids {
            self.update_refusal(id, changes, caller)?;
        }
        self.apply_update(&ids, changes, false, caller, now)
    }

    /// Why `changes` may not be made to record `id` by `caller`, in Slurm's order
    /// (`_update_job`: a finished job first, whoever asks).
    fn update_refusal(
        &self,
        id: JobId,
        changes: &[(String, String)],
        caller: &Caller,
    ) -> Result<(), ApiError> {
        {
            let r = &self.jobs[&id];
            // A job told to end (cancelled, still COMPLETING) has finished for Slurm.
            if r.state.is_finished() || (r.state == JobState::Running && r.told_to_end()) {
                return Err(ApiError::invalid("Job has already finished"));
            }
            if !Self::may_touch(caller, r) {
                return Err(ApiError::access_denied());
            }
            super::field_limits::check_update(changes).map_err(ApiError::invalid)?;
            let pending = r.state == JobState::Pending;
            let running = r.state == JobState::Running;
            for (k, v) in changes {
                match k.to_ascii_lowercase().as_str() {
                    "timelimit" => {
                        if !(pending || running) {
                            return Err(ApiError::invalid("Job is no longer pending execution"));
                        }
                        let new = parse_limit(v, r.time_limit).map_err(ApiError::invalid)?;
                        let old = r.time_limit.unwrap_or(MAX_TIME_LIMIT);
                        if !caller.admin && new.unwrap_or(MAX_TIME_LIMIT) > old {
                            return Err(ApiError::access_denied());
                        }
                        let p = self
                            .partition_of(&r.partition)
                            .map(|p| self.conf.cluster.partition(p));
                        if let (Some(max), Some(p)) = (new, p) {
                            if p.max_time.is_some_and(|m| max > m) && !caller.admin {
                                return Err(ApiError::invalid(BAD_LIMIT));
                            }
                        }
                    }
                    "jobname" | "name" | "comment" => {}
                    "nice" => {
                        let n: i32 = v
                            .parse()
                            .map_err(|_| ApiError::invalid(format!("Invalid nice value: {v}")))?;
                        if n < 0 && !caller.admin {
                            return Err(ApiError::access_denied());
                        }
                        if !pending {
                            return Err(ApiError::invalid("Job is no longer pending execution"));
                        }
                    }
                    "partition" => {
                        if !pending {
                            return Err(ApiError::invalid("Job is no longer pending execution"));
                        }
                        // `Partition=a,b`: every one must exist; the first is the job's.
                        let mut parts = Vec::new();
                        for name in v.split(',') {
                            parts.push(self.partition_of(name).ok_or_else(|| {
                                ApiError::new(ErrorCode::InvalidPartitionName, BAD_PARTITION)
                            })?);
                        }
                        // One of them must take new jobs.
                        if !parts
                            .iter()
                            .any(|&p| self.sched.cluster().partition(p).takes_new_jobs())
                        {
                            return Err(ApiError::invalid(
                                "Required partition not available (inactive or drain)",
                            ));
                        }
                        self.reshaped_refusal(r, changes)?;
                    }
                    "starttime" => {
                        if !pending {
                            return Err(ApiError::invalid("Job is no longer pending execution"));
                        }
                        v.parse::<i64>()
                            .map_err(|_| ApiError::invalid(format!("Invalid StartTime: {v}")))?;
                    }
                    "numnodes" => {
                        self.node_count_refusal(r, v)?;
                        if pending {
                            self.reshaped_refusal(r, changes)?;
                        }
                    }
                    _ => {
                        return Err(ApiError::invalid(format!(
                            "Update of this parameter is not supported: {k}"
                        )))
                    }
                }
            }
        }
        Ok(())
    }

    /// Why pending job `r`, as `changes` leave its shape (its node count and its
    /// partitions), could never run: in none of those partitions (one of several is
    /// enough, as at submission). The core must take it back, or the update would
    /// leave it failed rather than refused.
    fn reshaped_refusal(&self, r: &Job, changes: &[(String, String)]) -> Result<(), ApiError> {
        let key = |name: &str| {
            changes
                .iter()
                .rev()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        };
        let mut would = r.clone();
        if let Some(count) = key("NumNodes").and_then(|v| NodeCount::parse(v)) {
            count.apply(&mut would, self.listed_count(r));
        }
        // Another partition must take new jobs; the job's own keep it when closed since.
        let (partitions, new) = match key("Partition") {
            Some(v) => {
                Arc::make_mut(&mut would.desc).partition = Some(v.clone());
                (v.split(',').collect::<Vec<_>>(), true)
            }
            // Of several, those that take its account, QOS and group.
            None => match self.partition_list(r) {
                Some(list) => (
                    list.iter()
                        .map(|&p| &*self.conf.cluster.partition(p).name)
                        .collect(),
                    false,
                ),
                None => (vec![&*r.partition], false),
            },
        };
        if partitions
            .iter()
            .any(|name| self.could_ever_run_in(&would, name, new))
        {
            Ok(())
        } else {
            Err(ApiError::invalid(NODE_CONFIG))
        }
    }

    /// Makes `changes` to records `ids` (checked by [`Controller::update_refusal`]);
    /// `alone` when they were named as tasks (changed apart from their array).
    fn apply_update(
        &mut self,
        ids: &[JobId],
        changes: &[(String, String)],
        alone: bool,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let mut effects = Vec::new();
        for &id in ids {
            let was_queued =
                self.jobs[&id].state == JobState::Pending && !self.outside.contains(&id);
            let listed = self.listed_count(&self.jobs[&id]);
            // `Partition=` lists, closed partitions dropped as from a submission's
            // (every name was checked to be a partition).
            let lists: Vec<Option<String>> = changes
                .iter()
                .map(|(k, v)| {
                    k.eq_ignore_ascii_case("Partition").then(|| {
                        let parts = v.split(',').filter_map(|n| self.partition_of(n)).collect();
                        self.partition_names(&self.drop_closed(parts))
                    })
                })
                .collect();
            let r = self.jobs.get_mut(&id).expect("exists");
            let mut new_limit = None;
            let mut resized = false;
            for ((k, v), list) in changes.iter().zip(&lists) {
                match k.to_ascii_lowercase().as_str() {
                    "timelimit" => {
                        let l = parse_limit(v, r.time_limit).map_err(ApiError::invalid)?;
                        r.time_limit = l;
                        Arc::make_mut(&mut r.desc).time_limit = Some(l);
                        new_limit = Some(l);
                    }
                    "jobname" | "name" => Arc::make_mut(&mut r.desc).name = v.clone(),
                    "comment" => Arc::make_mut(&mut r.desc).comment = Some(v.clone()),
                    "nice" => Arc::make_mut(&mut r.desc).nice = v.parse().ok(),
                    "partition" => {
                        let list = list.clone().unwrap_or_else(|| v.clone());
                        r.partition = self.descs.name(list.split(',').next().unwrap_or_default());
                        Arc::make_mut(&mut r.desc).partition = Some(list);
                    }
                    "starttime" => Arc::make_mut(&mut r.desc).begin = v.parse().ok(),
                    "numnodes" if r.state == JobState::Pending => {
                        if let Some(count) = NodeCount::parse(v) {
                            resized |= count.apply(r, listed);
                        }
                    }
                    _ => {}
                }
            }
            if alone {
                r.changed_alone();
            }
            if resized {
                // What it asks, as `scontrol show job` gives it, follows its new size.
                let asked = self.core_spec(&self.jobs[&id]).ok().map(|spec| {
                    let tres = self.conf.requested_tres(spec.partition, &spec.request);
                    self.descs.share_tres(&tres.into())
                });
                if let Some(asked) = asked {
                    self.jobs.get_mut(&id).expect("exists").tres_req = asked;
                }
            }
            self.audit_updated(id, changes, caller.uid, now);
            effects.push(self.persist(id));
            let record = &self.jobs[&id];
            if was_queued {
                // The core takes the job again with its new shape.
                self.sched.cancel_pending(id, now);
                self.outside.insert(id);
                self.outside_dirty = true;
            }
            if record.state == JobState::Running {
                if let Some(limit) = new_limit {
                    let secs = limit.unwrap_or(MAX_TIME_LIMIT).clamp(1, MAX_TIME_LIMIT);
                    self.sched.set_time_limit(id, secs, now);
                    self.note_deadline(id);
                    let record = &self.jobs[&id];
                    if !record.desc.interactive {
                        effects.push(Effect::SetTimeLimit {
                            node: record
                                .first_node()
                                .map(|n| self.conf.cluster.node(n).name.clone())
                                .unwrap_or_default(),
                            job_id: id,
                            run: record.restarts,
                            time_limit: limit,
                        });
                    }
                }
            }
        }
        effects.extend(self.schedule(now));
        Ok(effects)
    }
}

impl Controller {
    /// Why a job may not take the node count `v` (see [`NodeCount`]). A pending job
    /// takes a count its partition has nodes for, its least never above its most; a
    /// running one keeps the nodes it has (Slurm refuses to grow it, and Sluice does
    /// not shrink one).
    fn node_count_refusal(&self, r: &Job, v: &str) -> Result<(), ApiError> {
        let Some(count) = NodeCount::parse(v) else {
            return Err(ApiError::invalid(BAD_NODE_COUNT));
        };
        if count.min.is_none() && count.max.is_none() {
            return Ok(());
        }
        match r.state {
            JobState::Pending => {
                let (min, max) = count.applied(r);
                let total = self
                    .partition_of(&r.partition)
                    .map_or(0, |p| self.conf.cluster.partition(p).nodes.len() as u32);
                // (Whether it could run at that size, in the partitions the update
                // leaves it, is `reshaped_refusal`'s.)
                if min < 1 || (max > 0 && max < min) || min > total {
                    return Err(ApiError::invalid(BAD_NODE_COUNT));
                }
            }
            JobState::Running if count.min == Some(0) => {
                return Err(ApiError::invalid(BAD_NODE_COUNT));
            }
            JobState::Running if count.min.is_none_or(|n| n == r.alloc.len() as u32) => {
                if count.max.is_some() {
                    return Err(ApiError::invalid("Job is no longer pending execution"));
                }
            }
            JobState::Running => {
                return Err(ApiError::invalid(
                    "Requested operation not supported on this system",
                ))
            }
            _ => return Err(ApiError::invalid("Job is no longer pending execution")),
        }
        Ok(())
    }

    /// How many nodes job `r`'s `-w` lists.
    fn listed_count(&self, r: &Job) -> u32 {
        self.node_lists(&r.desc).map_or(0, |(l, _)| l.len() as u32)
    }
}

/// A `NumNodes=` update: `MIN`, `MIN-MAX`, `-MAX` (the most only, as the REST API's
/// `maximum_nodes` alone asks), or `ALL` (Slurm's scontrol asks the count as it is:
/// nothing changes).
struct NodeCount {
    min: Option<u32>,
    max: Option<u32>,
}

impl NodeCount {
    fn parse(v: &str) -> Option<NodeCount> {
        if v.eq_ignore_ascii_case("ALL") {
            return Some(NodeCount {
                min: None,
                max: None,
            });
        }
        let (min, max) = match v.split_once('-') {
            Some(("", max)) => (None, Some(max.parse().ok()?)),
            Some((min, max)) => (Some(min.parse().ok()?), Some(max.parse().ok()?)),
            None => (Some(v.parse().ok()?), None),
        };
        Some(NodeCount { min, max })
    }

    /// The least and most counts (0: no most) job `r` would ask: what is not given
    /// stays as it is.
    fn applied(&self, r: &Job) -> (u32, u32) {
        let (min, max) = r.desc.nodes.unwrap_or((r.min_nodes, 0));
        (self.min.unwrap_or(min), self.max.unwrap_or(max))
    }

    /// Gives pending job `r` (whose `-w` lists `listed` nodes) this count, as Slurm's
    /// `_update_job` does: the tasks it asked (`-n`, or those `--ntasks-per-node` made
    /// at submission, as Slurm's sbatch fixes them) are raised to one a node; a job
    /// that asked none has one a node. Whether anything was given.
    fn apply(&self, r: &mut Job, listed: u32) -> bool {
        if self.min.is_none() && self.max.is_none() {
            return false;
        }
        let (min, max) = self.applied(r);
        let asked = r
            .desc
            .ntasks
            .or_else(|| r.desc.ntasks_per_node.map(|_| r.ntasks));
        let d = Arc::make_mut(&mut r.desc);
        d.nodes = Some((min, max));
        d.ntasks = asked.map(|n| n.max(min));
        (r.min_nodes, r.ntasks) = super::job_size(d, listed);
        true
    }
}

/// Slurm's `ESLURM_INVALID_NODE_COUNT`.
pub const BAD_NODE_COUNT: &str = "Node count specification invalid";

/// Slurm's message for a time limit beyond what the partition allows.
pub const BAD_LIMIT: &str = "Requested time limit is invalid (missing or exceeds some limit)";

/// A `TimeLimit=` value: Slurm's time formats, `UNLIMITED` as `None`, or `+T`/`-T` to
/// lengthen or shorten the job's current limit `old` by `T` (Slurm's scontrol; an
/// unlimited job stays unlimited, and a limit never drops below one second).
fn parse_limit(v: &str, old: Option<i64>) -> Result<Option<i64>, String> {
    let bad = || BAD_LIMIT.to_string();
    let relative = |t: &str| {
        sluice_conf::duration::parse_time(t)
            .ok()
            .flatten()
            .ok_or_else(bad)
    };
    if let Some(t) = v.strip_prefix('+') {
        let delta = relative(t)?;
        return Ok(old.map(|o| o.saturating_add(delta)));
    }
    if let Some(t) = v.strip_prefix('-') {
        let delta = relative(t)?;
        return Ok(old.map(|o| (o - delta).max(1)));
    }
    sluice_conf::duration::parse_time(v).map_err(|_| bad())
}

#[cfg(test)]
mod configured_story;
#[cfg(test)]
mod node_count_story;
