//! What the controller knows of each node's agent beyond its registration: when it
//! registered (Slurm's `SlurmdStartTime`), when the node last ran a job
//! (`LastBusyTime`), when it was last heard from (its heartbeats, or answers to the agent
//! watch's pings), and which nodes an operator resumed that have not answered since.
//!
//! A registered agent sends a heartbeat every [`Controller::heartbeat_secs`] (two
//! seconds, longer on a cluster so large that its agents would send more than
//! [`HEARTBEATS_PER_SEC`] a second); the agent watch pings only the agents not heard
//! from for two intervals ([`Controller::agents_to_ping`]), so that idle agents cost
//! the controller one incoming request each per heartbeat and no outgoing one.
//!
//! As in Slurm, a node an operator brings back (`scontrol update State=RESUME` after
//! DRAIN or DOWN) takes work again only once its agent has answered: until then it is
//! `idle*` (`IDLE+NOT_RESPONDING`), and nothing starts on it. Slurm waits for the
//! node's re-registration, about one to three seconds; Sluice waits for a heartbeat (or
//! an answer to a ping) at least [`ANSWER_AFTER`] seconds after the resume.

use super::*;
use sluice_proto::types::{HEARTBEATS_PER_SEC, HEARTBEAT_SECS};

/// Seconds after a resume before an answer from the node's agent counts (a ping sent in
/// the same second may predate the resume).
pub const ANSWER_AFTER: i64 = 2;

/// Slurm's reason for a node set DOWN because its agent was silent `SlurmdTimeout`
/// long (`ping_nodes.c`); `ReturnToService=1` lifts only this one.
pub const NOT_RESPONDING: &str = "Not responding";

/// An agent's registration as the controller takes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registration {
    /// Its node.
    pub node: String,
    /// The runs it has (job, run).
    pub running: Vec<(JobId, u32)>,
    /// Where it registered from over TCP (the peer's IP address); `None` on the
    /// controller's Unix socket.
    pub from: Option<String>,
    /// What it found on its host, to check against the node's line.
    pub hardware: Option<sluice_proto::types::NodeHardware>,
    /// The digest of its slurm.conf.
    pub conf_hash: Option<String>,
}

/// Per node name: registration, last busy time, resumes awaiting an answer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Liveness {
    /// The controller's own uid (Slurm's `SlurmUser`): who set the reasons it sets.
    pub(crate) slurm_uid: u32,
    /// The digest of the controller's slurm.conf, if known.
    pub(crate) conf_hash: Option<String>,
    /// Where each node's agent registered from over TCP.
    from: BTreeMap<String, String>,
    /// Nodes silent because their agent's pings went unanswered over TCP (not
    /// refused): an answer brings them back.
    unanswered: BTreeSet<String>,
    /// When each node's agent registered, Unix seconds.
    registered: BTreeMap<String, i64>,
    /// When each node's agent was last heard from (registration, heartbeat, an answer to
    /// a ping), Unix seconds.
    heard_at: BTreeMap<String, i64>,
    /// When each node last ran a job (or registered), Unix seconds.
    last_busy: BTreeMap<String, i64>,
    /// Nodes resumed by an operator whose agent has not answered since: since when.
    resumed: BTreeMap<String, i64>,
    /// Nodes whose agent is gone but whose jobs run on (see
    /// [`Controller::agent_silent`]): since when.
    silent: BTreeMap<String, i64>,
    /// Nodes whose agent has not registered since the controller started (see
    /// [`Controller::await_agents`]); each is also silent from that start.
    awaited: BTreeSet<String>,
}

impl Liveness {
    /// The node's agent registered at `now`: it answers.
    pub(crate) fn registered(&mut self, node: &str, now: i64, from: Option<&str>) {
        self.registered.insert(node.to_string(), now);
        self.heard_at.insert(node.to_string(), now);
        match from {
            Some(a) => self.from.insert(node.to_string(), a.to_string()),
            None => self.from.remove(node),
        };
        self.last_busy.entry(node.to_string()).or_insert(now);
        self.resumed.remove(node);
        self.silent.remove(node);
        self.unanswered.remove(node);
        self.awaited.remove(node);
    }

    /// The node is gone from the cluster: nothing of it is kept (a node added again
    /// under its name starts afresh).
    pub(crate) fn forget(&mut self, node: &str) {
        self.from.remove(node);
        self.unanswered.remove(node);
        self.registered.remove(node);
        self.heard_at.remove(node);
        self.last_busy.remove(node);
        self.resumed.remove(node);
        self.silent.remove(node);
        self.awaited.remove(node);
    }

    /// The node's agent has not registered with a controller started at `now`: its
    /// node is silent from then on, awaiting the agent.
    pub(crate) fn awaited(&mut self, node: &str, now: i64) {
        self.silent(node, now);
        self.awaited.insert(node.to_string());
    }

    /// Whether the node's agent has not registered since the controller started, nor
    /// the node been given up.
    pub(crate) fn is_awaited(&self, node: &str) -> bool {
        self.awaited.contains(node)
    }

    /// Whether any node's agent is still awaited (see [`Liveness::is_awaited`]).
    pub(crate) fn awaiting_any(&self) -> bool {
        !self.awaited.is_empty()
    }

    /// The node's agent is gone at `now`; true if it was not already.
    pub(crate) fn silent(&mut self, node: &str, now: i64) -> bool {
        if self.silent.contains_key(node) {
            return false;
        }
        self.silent.insert(node.to_string(), now);
        true
    }

    /// The node is no longer waited for (registered again, or given up: DOWN).
    pub(crate) fn heard(&mut self, node: &str) {
        self.silent.remove(node);
        self.unanswered.remove(node);
        self.awaited.remove(node);
    }

    /// The node's agent spoke (a heartbeat, an answer to a ping) at `now`.
    pub(crate) fn heard_from(&mut self, node: &str, now: i64) {
        self.heard_at.insert(node.to_string(), now);
    }

    /// Whether the node's agent has not been heard from since `before` (never counts as
    /// not heard from).
    pub(crate) fn unheard_since(&self, node: &str, before: i64) -> bool {
        self.heard_at.get(node).is_none_or(|&at| at <= before)
    }

    /// Whether the node's agent is gone while its jobs run on.
    pub(crate) fn is_silent(&self, node: &str) -> bool {
        self.silent.contains_key(node)
    }

    /// Since when the node's agent has been gone (or awaited), if it is.
    pub(crate) fn silent_from(&self, node: &str) -> Option<i64> {
        self.silent.get(node).copied()
    }

    /// The nodes silent since `before` or earlier.
    pub(crate) fn silent_since(&self, before: i64) -> Vec<String> {
        self.silent
            .iter()
            .filter(|(_, &since)| since <= before)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// An operator resumed or undrained the node at `now`: it is not responding until
    /// its agent answers.
    pub(crate) fn await_answer(&mut self, node: &str, now: i64) {
        self.resumed.insert(node.to_string(), now);
    }

    /// The node's agent is gone, or an operator drained or downed it again: no
    /// resume awaits an answer.
    pub(crate) fn settled(&mut self, node: &str) {
        self.resumed.remove(node);
    }

    /// A job on `nodes` ended at `now`.
    pub(crate) fn busy_until(&mut self, nodes: &[String], now: i64) {
        for n in nodes {
            self.last_busy.insert(n.clone(), now);
        }
    }

    /// Whether the node was resumed and has not answered since.
    pub(crate) fn awaiting(&self, node: &str) -> bool {
        self.resumed.contains_key(node)
    }

    /// When the node's agent registered.
    pub(crate) fn registered_at(&self, node: &str) -> Option<i64> {
        self.registered.get(node).copied()
    }

    /// When the node last ran a job (or its agent registered).
    pub(crate) fn last_busy(&self, node: &str) -> Option<i64> {
        self.last_busy.get(node).copied()
    }
}

impl Controller {
    /// The controller runs as `uid` (Slurm's `SlurmUser`): the reasons it sets, such as
    /// [`NOT_RESPONDING`], are shown as set by that user.
    pub fn set_slurm_uid(&mut self, uid: u32) {
        self.liveness.slurm_uid = uid;
    }

    /// The digest of the controller's slurm.conf, compared with each agent's.
    pub fn set_conf_hash(&mut self, hash: Option<String>) {
        self.liveness.conf_hash = hash;
    }

    /// The controller sets `node` to `state` (`DOWN`, `DRAIN`) with `reason`, as its
    /// own user, kept across restarts like an operator's.
    pub(crate) fn set_override(
        &mut self,
        node: &str,
        state: &str,
        reason: &str,
        now: i64,
    ) -> Effect {
        let o = NodeOverride {
            state: state.into(),
            reason: reason.into(),
            uid: self.liveness.slurm_uid,
            time: now,
        };
        self.put_override(node, o)
    }

    /// Node `node`'s state becomes `o`, kept in the store.
    pub(crate) fn put_override(&mut self, node: &str, o: NodeOverride) -> Effect {
        let record = serde_json::to_string(&o).expect("records serialise");
        self.node_overrides.insert(node.to_string(), o);
        self.outside_dirty = true;
        Effect::PersistNode {
            name: node.to_string(),
            record: Some(record),
        }
    }

    /// Checks a registration before it counts: the node must exist, and a node whose
    /// agent is registered and answering keeps it — another agent claiming its name
    /// from another address is refused (the first keeps the node). A different
    /// slurm.conf is only warned about, as Slurm does.
    ///
    /// Errors: an unknown node ("Invalid node name specified"), a duplicate.
    pub(crate) fn check_registration(&self, reg: &Registration) -> Result<NodeId, ApiError> {
        let node = reg.node.as_str();
        let Some(nid) = self.conf.node_id(node) else {
            tracing::error!("Node {node} not found: registration refused");
            return Err(ApiError::new(
                ErrorCode::InvalidNodeName,
                sluice_proto::error::INVALID_NODE_NAME,
            ));
        };
        if let (Some(from), Some(first)) = (&reg.from, self.liveness.from.get(node)) {
            if from != first && self.agents_up.contains(node) && !self.liveness.is_silent(node) {
                tracing::error!(
                    "Node {node} registration from {from} refused: its agent at {first} is \
                     registered and answers (duplicate node name)"
                );
                return Err(ApiError::invalid(format!(
                    "Node {node} is already registered from {first}"
                )));
            }
        }
        if let (Some(theirs), Some(ours)) = (&reg.conf_hash, &self.liveness.conf_hash) {
            if theirs != ours {
                tracing::error!(
                    "Node {node} appears to have a different slurm.conf than the slurmctld.  \
                     This could cause issues with communication and functionality.  Please \
                     review both files and make sure they are the same.  If this is expected \
                     ignore, and set DebugFlags=NO_CONF_HASH in your slurm.conf."
                );
            }
        }
        Ok(nid)
    }

    /// Why the resources an agent found are below node `nid`'s line, in Slurm's words
    /// (`validate_node_specs`): GRES first, then `Low socket*core*thread count`, `Low
    /// CPUs`, `Low RealMemory (...)`, joined by ", ". `None`: enough, or
    /// `SlurmdParameters=config_overrides` (nothing is checked).
    pub(crate) fn low_resources(
        &self,
        nid: NodeId,
        found: &sluice_proto::types::NodeHardware,
    ) -> Option<String> {
        if self.conf.net.config_overrides {
            return None;
        }
        let node = self.conf.cluster.node(nid);
        let mut reasons: Vec<String> = Vec::new();
        let table = &self.conf.cluster.gres;
        for (name, count) in &found.gres {
            if let Some(slot) = table.find(name, None) {
                let configured = u64::from(node.capacity.gres[slot]);
                if *count < configured {
                    reasons.push(format!(
                        "gres/{name} count reported lower than configured ({count} < {configured})"
                    ));
                    break;
                }
            }
        }
        let (sockets, cores, threads) =
            self.conf
                .topology
                .get(nid.index())
                .copied()
                .unwrap_or((1, node.capacity.cpus, 1));
        let configured_threads = u64::from(sockets) * u64::from(cores) * u64::from(threads);
        let found_threads =
            u64::from(found.sockets) * u64::from(found.cores) * u64::from(found.threads);
        if found_threads < configured_threads {
            reasons.push("Low socket*core*thread count".into());
        }
        if found.cpus < node.capacity.cpus {
            reasons.push("Low CPUs".into());
        }
        let configured_mem = node.capacity.mem_mib;
        if configured_mem > 0 && found.real_memory < configured_mem {
            reasons.push(format!(
                "Low RealMemory (reported:{} < 100.00% of configured:{configured_mem})",
                found.real_memory
            ));
        }
        (!reasons.is_empty()).then(|| reasons.join(", "))
    }

    /// A registering node's state, as Slurm's `validate_node_specs` decides it: too few
    /// resources drain it with the reason (unless it is DOWN or drained already); else
    /// a node DOWN returns to service as `ReturnToService` says — 1: only one set DOWN
    /// [`NOT_RESPONDING`], 2: any DOWN node, 0: none (an operator resumes it).
    pub(crate) fn registration_state(
        &mut self,
        reg: &Registration,
        nid: NodeId,
        now: i64,
    ) -> Vec<Effect> {
        let node = reg.node.as_str();
        let low = reg
            .hardware
            .as_ref()
            .and_then(|h| self.low_resources(nid, h));
        let current = self.node_overrides.get(node);
        if let Some(reason) = low {
            tracing::error!("Setting node {node} state to INVAL with reason:{reason}");
            // Slurm drains a node neither DOWN nor drained; the reason replaces none but
            // its own "Not responding".
            return match current {
                Some(o) if !o.reason.starts_with(NOT_RESPONDING) => Vec::new(),
                Some(o) if o.state == "DOWN" => Vec::new(),
                _ if self.conf.cluster.node(nid).state != NodeState::Up => Vec::new(),
                _ => {
                    tracing::info!("drain_nodes: node {node} state set to DRAIN");
                    vec![self.set_override(node, "DRAIN", &reason, now)]
                }
            };
        }
        if let Some(o) = current.filter(|o| o.state == DOWN_DRAIN) {
            // ReturnToService=2 returns any DOWN node to service, 1 one DOWN for not
            // responding: this one is drained again (Slurm keeps the DRAIN flag and its
            // reason).
            if !self.return_to_service_takes(&o.reason) {
                return Vec::new();
            }
            let mut o = o.clone();
            o.state = "DRAIN".into();
            tracing::info!("node {node} returned to service, drained");
            return vec![self.put_override(node, o)];
        }
        let back = current.is_some_and(|o| self.returns_to_service(o));
        if !back {
            return Vec::new();
        }
        self.node_overrides.remove(node);
        self.outside_dirty = true;
        tracing::info!("node {node} returned to service");
        vec![Effect::PersistNode {
            name: node.to_string(),
            record: None,
        }]
    }

    /// The agents of `nodes` did not answer a ping over TCP in time (a cut link, a host
    /// powered off or overloaded): as a refusal, their nodes are not responding and
    /// wait `SlurmdTimeout`; an answer before then brings them back.
    pub fn agents_unanswered(&mut self, nodes: &[String], now: i64) {
        for node in nodes {
            if self.liveness.is_silent(node) {
                continue;
            }
            self.liveness.unanswered.insert(node.clone());
            self.not_responding(node, now, "its agent cannot be reached");
        }
    }

    /// An operator resumed `node` at `now`, its agent registered: it waits for an
    /// answer before it takes work (the core sees it drained until then).
    pub(crate) fn await_answer(&mut self, node: &str, nid: NodeId, now: i64) {
        self.liveness.await_answer(node, now);
        self.sched.set_node_state(nid, NodeState::Drain);
    }

    /// Whether a DOWN node (an operator's, or for not responding) returns to service
    /// when its agent registers or answers again, as `ReturnToService` says — 1: only
    /// one set DOWN [`NOT_RESPONDING`], 2: any, 0: none (an operator resumes it).
    fn returns_to_service(&self, o: &NodeOverride) -> bool {
        o.state == "DOWN" && self.return_to_service_takes(&o.reason)
    }

    /// Whether `ReturnToService` brings back a node set DOWN with `reason`.
    fn return_to_service_takes(&self, reason: &str) -> bool {
        match self.conf.net.return_to_service {
            2 => true,
            1 => reason == NOT_RESPONDING,
            _ => false,
        }
    }

    /// Seconds between two heartbeats of an agent: [`HEARTBEAT_SECS`], or with more
    /// than `HEARTBEAT_SECS × HEARTBEATS_PER_SEC` registered agents as long as keeps
    /// all their heartbeats under [`HEARTBEATS_PER_SEC`] (10,000 agents: 20 s), but
    /// never more than a quarter of `SlurmdTimeout` (when it is set: 0 never sets a
    /// node DOWN), so that a silent agent is pinged well before its node would be.
    pub fn heartbeat_secs(&self) -> u64 {
        let agents = self.agents_up.len() as u64;
        let spread = agents.div_ceil(HEARTBEATS_PER_SEC);
        let cap = match self.conf.net.slurmd_timeout {
            t if t > 0 => (t as u64 / 4).max(HEARTBEAT_SECS),
            _ => u64::MAX,
        };
        spread.clamp(HEARTBEAT_SECS, cap)
    }

    /// The registered agents to ping at `now`: those not heard from (no heartbeat, no
    /// answer) for two heartbeat intervals or more, among them those silent or gone,
    /// and, where heartbeats are spread out longer than [`HEARTBEAT_SECS`], the resumed
    /// nodes still waiting for an answer (so that the long interval does not keep them
    /// out of work). Otherwise an agent whose heartbeats come is never pinged.
    pub fn agents_to_ping(&self, now: i64) -> Vec<String> {
        let every = self.heartbeat_secs();
        let silence = 2 * every as i64;
        self.agents_up
            .iter()
            .filter(|n| {
                self.liveness.unheard_since(n, now - silence)
                    || (every > HEARTBEAT_SECS
                        && self.liveness.awaiting(n)
                        && self.liveness.unheard_since(n, now - 1))
            })
            .cloned()
            .collect()
    }

    /// A heartbeat from the agent of `node` (from the address `from` over TCP) at `now`.
    /// It counts when the agent is registered here, from that address, and not given up
    /// as gone: the node is heard from, and as for an answer to a ping
    /// ([`Controller::agents_answered`]) a node silent for want of answers responds
    /// again and a resumed one takes work. Otherwise the agent is told to register
    /// again (its registration reconciles its runs). Returns whether it counted, and
    /// the effects.
    pub fn agent_heartbeat(
        &mut self,
        node: &str,
        from: Option<&str>,
        now: i64,
    ) -> (bool, Vec<Effect>) {
        let same_address = match (from, self.liveness.from.get(node)) {
            (Some(from), Some(first)) => from == first,
            (None, None) => true,
            _ => false,
        };
        let gone = self.liveness.is_silent(node) && !self.liveness.unanswered.contains(node);
        if !self.agents_up.contains(node) || !same_address || gone {
            return (false, Vec::new());
        }
        (true, self.agents_answered(&[node.to_string()], now))
    }

    /// The agents of `nodes` answered (a ping, a heartbeat) at `now`: they are heard
    /// from, and resumed nodes waiting since [`ANSWER_AFTER`] seconds or more take work
    /// again.
    pub fn agents_answered(&mut self, nodes: &[String], now: i64) -> Vec<Effect> {
        // Silent only for want of answers: answering again, they respond.
        let mut responding = false;
        for name in nodes {
            self.liveness.heard_from(name, now);
            if self.liveness.unanswered.remove(name) {
                self.liveness.heard(name);
                responding = true;
                tracing::info!("Node {name} now responding");
                if let Some(nid) = self.conf.node_id(name) {
                    let state = if self.liveness.awaiting(name) {
                        NodeState::Drain
                    } else {
                        self.node_state(nid)
                    };
                    self.sched.set_node_state(nid, state);
                }
            }
        }
        if responding {
            self.outside_dirty = true;
        }
        let back: Vec<String> = nodes
            .iter()
            .filter(|n| {
                self.liveness
                    .resumed
                    .get(*n)
                    .is_some_and(|&since| now >= since + ANSWER_AFTER)
            })
            .cloned()
            .collect();
        if back.is_empty() {
            return if responding {
                self.schedule(now)
            } else {
                Vec::new()
            };
        }
        let mut effects = Vec::new();
        for name in &back {
            self.liveness.resumed.remove(name);
            // Undrained while DOWN: its answer stands for Slurm's registration, which
            // brings it back as `ReturnToService` says, or leaves it DOWN.
            match self.node_overrides.get(name) {
                Some(o) if self.returns_to_service(o) => {
                    self.node_overrides.remove(name);
                    effects.push(Effect::PersistNode {
                        name: name.clone(),
                        record: None,
                    });
                }
                Some(o) if o.state == "DOWN" => {
                    tracing::info!("Node {name} now responding, still DOWN");
                    continue;
                }
                _ => {}
            }
            tracing::info!("node {name} returned to service: its agent answers, state set to IDLE");
            if let Some(nid) = self.conf.node_id(name) {
                self.sched.set_node_state(nid, self.node_state(nid));
            }
        }
        self.outside_dirty = true;
        effects.extend(self.schedule(now));
        effects
    }
}

#[cfg(test)]
mod awaited_story;
