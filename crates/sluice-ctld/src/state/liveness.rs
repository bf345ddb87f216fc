//! What the controller knows of each node's agent beyond its registration: when it
//! registered (Slurm's `SlurmdStartTime`), when the node last ran a job
//! (`LastBusyTime`), and which nodes an operator resumed that have not answered since.
//!
//! As in Slurm, a node an operator brings back (`scontrol update State=RESUME` after
//! DRAIN or DOWN) takes work again only once its agent has answered: until then it is
//! `idle*` (`IDLE+NOT_RESPONDING`), and nothing starts on it. Slurm waits for the
//! node's re-registration, about one to three seconds; Sluice waits for an answer to
//! its agent watch's ping sent at least [`ANSWER_AFTER`] seconds after the resume.

use super::*;

/// Seconds after a resume before an answer from the node's agent counts (a ping sent in
/// the same second may predate the resume).
pub const ANSWER_AFTER: i64 = 2;

/// Per node name: registration, last busy time, resumes awaiting an answer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Liveness {
    /// When each node's agent registered, Unix seconds.
    registered: BTreeMap<String, i64>,
    /// When each node last ran a job (or registered), Unix seconds.
    last_busy: BTreeMap<String, i64>,
    /// Nodes resumed by an operator whose agent has not answered since: since when.
    resumed: BTreeMap<String, i64>,
    /// Nodes whose agent is gone but whose jobs run on (see
    /// [`Controller::agent_silent`]): since when.
    silent: BTreeMap<String, i64>,
    /// Of the silent nodes, those whose agent was not reached (rather than gone): the
    /// same agent may answer again (a link restored), and then the node is back.
    unanswered: BTreeSet<String>,
}

impl Liveness {
    /// The node's agent registered at `now`: it answers.
    pub(crate) fn registered(&mut self, node: &str, now: i64) {
        self.registered.insert(node.to_string(), now);
        self.last_busy.entry(node.to_string()).or_insert(now);
        self.resumed.remove(node);
        self.silent.remove(node);
        self.unanswered.remove(node);
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
    }

    /// Whether the node's agent is gone while its jobs run on.
    pub(crate) fn is_silent(&self, node: &str) -> bool {
        self.silent.contains_key(node)
    }

    /// The nodes silent since `before` or earlier.
    pub(crate) fn silent_since(&self, before: i64) -> Vec<String> {
        self.silent
            .iter()
            .filter(|(_, &since)| since <= before)
            .map(|(n, _)| n.clone())
            .collect()
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
    /// An operator resumed `node` at `now`, its agent registered: it waits for an
    /// answer before it takes work (the core sees it drained until then).
    pub(crate) fn await_answer(&mut self, node: &str, nid: NodeId, now: i64) {
        self.liveness.resumed.insert(node.to_string(), now);
        self.sched.set_node_state(nid, NodeState::Drain);
    }

    /// Over TCP, `node`'s agent could not be reached or did not answer at `now` (a cut
    /// link, a host powered off, a hung agent): as Slurm's `NOT_RESPONDING`, the node
    /// takes no new work while its jobs may run on, until the agent answers again
    /// ([`Controller::agents_answered`]) or registers, or `SlurmdTimeout` passes and it
    /// goes DOWN ([`Controller::silent_expired`]).
    pub fn agent_unanswered(&mut self, node: &str, now: i64) {
        let Some(nid) = self.conf.node_id(node) else {
            return;
        };
        if !self.liveness.silent(node, now) {
            return;
        }
        self.liveness.unanswered.insert(node.to_string());
        self.sched.set_node_state(nid, NodeState::Drain);
        self.outside_dirty = true;
        tracing::warn!(
            "Node {node} not responding (its agent cannot be reached); DOWN after \
             SlurmdTimeout={}s",
            self.conf.net.slurmd_timeout
        );
    }

    /// The agents of `nodes` answered a ping at `now`: nodes not responding only for
    /// want of an answer are back, and resumed nodes waiting since [`ANSWER_AFTER`]
    /// seconds or more take work again.
    pub fn agents_answered(&mut self, nodes: &[String], now: i64) -> Vec<Effect> {
        let mut heard = false;
        for name in nodes {
            if !self.liveness.unanswered.contains(name) {
                continue;
            }
            self.liveness.heard(name);
            tracing::info!("Node {name} now responding");
            if let Some(nid) = self.conf.node_id(name) {
                if !self.liveness.awaiting(name) {
                    self.sched.set_node_state(nid, self.node_state(nid));
                }
            }
            self.outside_dirty = true;
            heard = true;
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
            return if heard {
                self.schedule(now)
            } else {
                Vec::new()
            };
        }
        for name in &back {
            self.liveness.resumed.remove(name);
            tracing::info!("node {name} returned to service: its agent answers, state set to IDLE");
            if let Some(nid) = self.conf.node_id(name) {
                self.sched.set_node_state(nid, self.node_state(nid));
            }
        }
        self.outside_dirty = true;
        self.schedule(now)
    }
}
