//! Nodes that join, change or leave while the controller runs: `scontrol reconfigure`
//! with slurm.conf's `NodeName=` lines edited (Slurm 22.05 needs a restart for nodes
//! added or removed), and dynamic nodes (`scontrol create node`, `scontrol delete
//! node`).
//!
//! A node's id is its place in the node list, and stays its own while the controller
//! runs: a new node takes the next place; a removed one keeps its place, nameless, in
//! no partition and DOWN (listings leave it out). A node may change or leave only
//! while no job runs on it. A node that joins takes work once its agent registers.

use sluice_core::Node;

use super::*;

/// What changed in the node list since the controller started.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeBook {
    /// Nodes created by `scontrol create node` (not in slurm.conf), by name.
    pub(crate) dynamic: BTreeSet<String>,
    /// Those of them created `State=FUTURE` (shown FUTURE until their agent registers).
    pub(crate) future: BTreeSet<String>,
    /// Nodes an operator set FUTURE (`scontrol update NodeName=N State=FUTURE`): FUTURE
    /// whether their agent answers or not, until an operator resumes them.
    pub(crate) held_future: BTreeSet<String>,
    /// FUTURE nodes of slurm.conf (or created) an operator resumed or set DOWN: no
    /// longer FUTURE, though their agent has not registered.
    pub(crate) resumed: BTreeSet<String>,
    /// FUTURE nodes an operator set DOWN, their agent not registered since: not
    /// marked not responding (Slurm never pinged them).
    pub(crate) quiet: BTreeSet<String>,
    /// Those created `State=CLOUD`, their agent not registered yet: hidden, as
    /// Slurm hides powered-down cloud nodes.
    pub(crate) cloud: BTreeSet<String>,
    /// Each dynamic node's line as kept in the store, by name.
    pub(crate) lines: BTreeMap<String, String>,
    /// Nodes slurm.conf configures `State=DRAIN` or `State=DOWN` (at the start, or
    /// added so by a reconfiguration), resumed since or not: their state was taken
    /// from their line (see `Controller::adopt_configured_state`).
    pub(crate) configured: BTreeSet<String>,
    /// Bumped whenever a node joins, changes or leaves (the published listing takes the
    /// configuration again).
    pub(crate) epoch: u64,
}

/// One node as slurm.conf (or `scontrol create node`) describes it, with what the
/// controller keeps of it beside the core's [`Node`].
#[derive(Clone, Debug)]
pub(crate) struct NodeLine {
    /// The node, its features as names (see `features`), its GPUs as gres.conf says.
    pub(crate) node: Node,
    /// Its features by name.
    pub(crate) features: Vec<String>,
    /// Sockets, cores per socket, threads per core.
    pub(crate) topology: (u32, u32, u32),
    /// `Gres=` as written.
    pub(crate) gres: String,
    /// `CPUSpecList=` as shown.
    pub(crate) cpu_spec_list: String,
    /// Its GRES devices.
    pub(crate) gres_devices: Vec<GresDevice>,
    /// `NodeAddr`, `NodeHostname`, `Port`.
    pub(crate) address: Option<crate::config::NodeAddress>,
}

impl NodeLine {
    /// Node `i` of `conf` (with `core`, its [`ClusterConfig::core_cluster`]).
    pub(crate) fn of(conf: &ClusterConfig, core: &sluice_core::Cluster, i: usize) -> NodeLine {
        let node = core.nodes[i].clone();
        NodeLine {
            features: feature_names(&core.features, node.features),
            topology: conf
                .topology
                .get(i)
                .copied()
                .unwrap_or((1, node.capacity.cpus, 1)),
            gres: conf.node_gres.get(i).cloned().unwrap_or_default(),
            cpu_spec_list: conf.cpu_spec_lists.get(i).cloned().unwrap_or_default(),
            gres_devices: conf.gres_devices.get(i).cloned().unwrap_or_default(),
            address: conf.node_addresses.get(i).cloned(),
            node,
        }
    }

    /// What may differ between two descriptions of one node (not its state).
    fn shape(&self) -> String {
        let n = &self.node;
        format!(
            "{:?} {} {:?} {} {:?} {:?} {} {} {:?}",
            n.capacity,
            n.weight,
            self.features,
            n.spec_cpus,
            n.gpus,
            self.topology,
            self.gres,
            self.cpu_spec_list,
            self.address
        )
    }
}

/// The names of the features of bits `bits` in `names`.
fn feature_names(names: &[String], bits: u64) -> Vec<String> {
    names
        .iter()
        .enumerate()
        .filter(|(b, _)| bits & (1 << b) != 0)
        .map(|(_, f)| f.clone())
        .collect()
}

/// Why a node may not change or leave: the jobs running on it.
pub(crate) fn busy_message(node: &str, jobs: &[JobId]) -> String {
    let ids: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
    format!(
        "node {node} has running jobs ({}): it can change or be removed once they end",
        ids.join(",")
    )
}

impl Controller {
    /// Whether node `nid` was removed (its place is kept, nameless).
    pub(crate) fn node_removed(&self, nid: NodeId) -> bool {
        self.conf.cluster.node(nid).name.is_empty()
    }

    /// The ids of the nodes that are there (not removed).
    pub(crate) fn live_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.conf.cluster.nodes.len() as u32)
            .map(NodeId)
            .filter(|&n| !self.node_removed(n))
    }

    /// `line`'s features as bits of the cluster's feature list (new names added to it,
    /// in the core too). Errors: more than 64 features.
    fn feature_bits(&mut self, line: &NodeLine) -> Result<u64, ApiError> {
        let mut bits = 0;
        for f in &line.features {
            let a = self.conf.cluster.feature_bit(f);
            let b = self.sched.feature_bit(f);
            match (a, b) {
                (Some(a), Some(b)) if a == b => bits |= a,
                _ => {
                    return Err(ApiError::invalid(format!(
                        "too many node features: {f} would be the 65th"
                    )))
                }
            }
        }
        Ok(bits)
    }

    /// Node `line` joins at `now` in `partitions` (DOWN to the scheduler until its
    /// agent registers); returns its id, and the effect that lets orders reach its
    /// agent.
    pub(crate) fn add_node_line(
        &mut self,
        line: NodeLine,
        partitions: &[PartitionId],
        now: i64,
    ) -> Result<(NodeId, Effect), ApiError> {
        let mut node = line.node.clone();
        node.features = self.feature_bits(&line)?;
        let nid = NodeId(self.conf.cluster.nodes.len() as u32);
        let mut plain = node.clone();
        plain.gpus = Vec::new();
        self.conf.cluster.nodes.push(plain);
        for p in partitions {
            let members = &mut self.conf.cluster.partitions[p.index()].nodes;
            members.push(nid);
            members.sort();
        }
        self.put_node_extras(nid, &line);
        let configured = node.state;
        if !self.agents_up.contains(&node.name) {
            node.state = NodeState::Down;
        }
        let added = self.sched.add_node(node, partitions, now);
        self.node_book.epoch += 1;
        debug_assert_eq!(added, nid);
        tracing::info!(
            "node {} added ({} CPUs, {} MiB), {:?} once its agent registers",
            line.node.name,
            line.node.capacity.cpus,
            line.node.capacity.mem_mib,
            configured
        );
        let endpoint = self.conf.agent_endpoint(&line.node.name, &self.state_dir);
        Ok((
            nid,
            Effect::AddAgent {
                node: line.node.name,
                endpoint,
            },
        ))
    }

    /// Node `nid` becomes `line` at `now` (nothing runs there).
    fn replace_node_line(&mut self, nid: NodeId, line: NodeLine, now: i64) -> Result<(), ApiError> {
        let mut node = line.node.clone();
        node.features = self.feature_bits(&line)?;
        node.state = self.sched.cluster().node(nid).state;
        self.sched
            .replace_node(nid, node.clone(), now)
            .map_err(|jobs| ApiError::invalid(busy_message(&line.node.name, &jobs)))?;
        node.gpus = Vec::new();
        // As Slurm's reconfiguration: a node that stays keeps its state, whatever its
        // line's `State=` now says.
        node.state = self.conf.cluster.node(nid).state;
        self.conf.cluster.nodes[nid.index()] = node;
        self.put_node_extras(nid, &line);
        self.node_book.epoch += 1;
        tracing::info!("node {} changed", line.node.name);
        Ok(())
    }

    /// Node `nid` leaves at `now`. Errors: jobs run on it.
    pub(crate) fn remove_node_id(&mut self, nid: NodeId, now: i64) -> Result<(), ApiError> {
        let name = self.conf.cluster.node(nid).name.clone();
        self.sched
            .remove_node(nid, now)
            .map_err(|jobs| ApiError::invalid(busy_message(&name, &jobs)))?;
        for p in &mut self.conf.cluster.partitions {
            p.nodes.retain(|&n| n != nid);
        }
        let n = &mut self.conf.cluster.nodes[nid.index()];
        n.name = String::new();
        n.state = NodeState::Down;
        self.node_book.epoch += 1;
        self.node_overrides.remove(&name);
        self.agents_up.remove(&name);
        self.node_book.dynamic.remove(&name);
        self.node_book.held_future.remove(&name);
        self.node_book.resumed.remove(&name);
        self.node_book.quiet.remove(&name);
        self.node_book.lines.remove(&name);
        self.node_book.configured.remove(&name);
        self.node_book.cloud.remove(&name);
        self.liveness.forget(&name);
        tracing::info!("node {name} removed");
        Ok(())
    }

    /// The per-node lists of the configuration, for node `nid`, from `line`.
    fn put_node_extras(&mut self, nid: NodeId, line: &NodeLine) {
        let i = nid.index();
        let c = &mut self.conf;
        set_at(&mut c.topology, i, line.topology, (1, 1, 1));
        set_at(&mut c.node_gres, i, line.gres.clone(), String::new());
        set_at(
            &mut c.cpu_spec_lists,
            i,
            line.cpu_spec_list.clone(),
            String::new(),
        );
        set_at(
            &mut c.gres_devices,
            i,
            line.gres_devices.clone(),
            Vec::new(),
        );
        if i < c.node_addresses.len() || line.address.is_some() {
            let name = &line.node.name;
            let fill = |n: &str| crate::config::NodeAddress {
                addr: n.to_string(),
                hostname: n.to_string(),
                port: None,
            };
            while c.node_addresses.len() < i {
                let k = c.node_addresses.len();
                let n = c.cluster.nodes[k].name.clone();
                c.node_addresses.push(fill(&n));
            }
            let a = line.address.clone().unwrap_or_else(|| fill(name));
            set_at(&mut c.node_addresses, i, a.clone(), a);
        }
    }

    /// `scontrol reconfigure`'s nodes: slurm.conf's `NodeName=` lines of `new` (with
    /// `core`, its core cluster) against the nodes in force. Checked whole first —
    /// a refusal changes nothing — then applied: nodes no longer in slurm.conf leave
    /// (not dynamic ones, which slurm.conf never lists), changed ones change, new ones
    /// join. Returns, for each node of `new` by its index there, its id here, and the
    /// effects.
    ///
    /// Errors: a node to change or remove has running jobs; GRES names changed.
    pub(crate) fn reconfigure_nodes(
        &mut self,
        new: &ClusterConfig,
        now: i64,
    ) -> Result<(Vec<NodeId>, Vec<Effect>), ApiError> {
        if new.cluster.gres != self.conf.cluster.gres {
            return Err(ApiError::invalid(
                "the GRES of the cluster changed (a new GRES name or type): restart the controller",
            ));
        }
        let core = new.core_cluster();
        let here = self.conf.core_cluster();
        let mut changes = Vec::new();
        let mut adds = Vec::new();
        for i in 0..core.nodes.len() {
            let line = NodeLine::of(new, &core, i);
            match self.conf.node_id(&line.node.name) {
                Some(_) if self.node_book.dynamic.contains(&line.node.name) => {
                    return Err(ApiError::invalid(format!(
                        "node {} is a dynamic node: delete it before adding it to slurm.conf",
                        line.node.name
                    )));
                }
                Some(nid) => {
                    let old = NodeLine::of(&self.conf, &here, nid.index());
                    // Its state stays whatever its line now says (see
                    // `replace_node_line`): only its shape makes it changed.
                    if old.shape() != line.shape() {
                        changes.push((nid, line));
                    }
                }
                None => adds.push(line),
            }
        }
        let names: BTreeSet<&str> = core.nodes.iter().map(|n| n.name.as_str()).collect();
        let removes: Vec<NodeId> = self
            .live_nodes()
            .filter(|&n| {
                let name = &self.conf.cluster.node(n).name;
                !names.contains(name.as_str()) && !self.node_book.dynamic.contains(name)
            })
            .collect();
        for nid in changes.iter().map(|c| c.0).chain(removes.iter().copied()) {
            let jobs = self.sched.jobs_running_on(nid);
            if !jobs.is_empty() {
                return Err(ApiError::invalid(busy_message(
                    &self.conf.cluster.node(nid).name,
                    &jobs,
                )));
            }
        }
        let features: BTreeSet<&String> = self
            .conf
            .cluster
            .features
            .iter()
            .chain(
                adds.iter()
                    .chain(changes.iter().map(|c| &c.1))
                    .flat_map(|l| &l.features),
            )
            .collect();
        if features.len() > 64 {
            return Err(ApiError::invalid("more than 64 node features"));
        }
        let mut effects = Vec::new();
        for nid in removes {
            let name = self.conf.cluster.node(nid).name.clone();
            if self.node_overrides.contains_key(&name) {
                // An operator's state of a node that is gone is forgotten.
                effects.push(Effect::PersistNode { name, record: None });
            }
            self.remove_node_id(nid, now)?;
        }
        for (nid, line) in changes {
            self.replace_node_line(nid, line, now)?;
        }
        self.conf.node_reasons = new.node_reasons.clone();
        for line in adds {
            // Awaited as at a start (Slurm 22.05 adds nodes only when it starts): UNKNOWN
            // until its agent registers, DOWN after SlurmdTimeout if it has not; a
            // drained one DOWN beneath its drain then. A FUTURE one is not expected to
            // answer.
            let awaited = !new.future_nodes.contains(&line.node.name)
                && !self.agents_up.contains(&line.node.name);
            let (nid, effect) = self.add_node_line(line, &[], now)?;
            effects.push(effect);
            self.adopt_configured_state(nid);
            if awaited {
                self.await_agent_as_at_start(nid, now);
            }
        }
        let ids = core
            .nodes
            .iter()
            .map(|n| {
                self.conf
                    .node_id(&n.name)
                    .expect("every node of the file is here now")
            })
            .collect();
        Ok((ids, effects))
    }
}

/// `v[i] = x`, filling the places before `i` with `fill`.
fn set_at<T: Clone>(v: &mut Vec<T>, i: usize, x: T, fill: T) {
    while v.len() <= i {
        v.push(fill.clone());
    }
    v[i] = x;
}

/// Slurm's message for a node that runs jobs (`ESLURM_NODES_BUSY`).
pub const NODES_BUSY: &str = "Requested nodes are busy";

/// Later Slurm's message for a node created beyond `MaxNodeCount`
/// (`ESLURM_NODE_TABLE_FULL`; 22.05 creates nothing and says nothing).
pub const NODE_TABLE_FULL: &str = "Unable to add node, node table is full";

/// Slurm's message for a created node whose state is not FUTURE or CLOUD.
pub const INVALID_NODE_STATE: &str = "Invalid node state specified";

/// The key a dynamic node's line is kept under with the nodes' rows of the store (its
/// operator-set state is kept under its plain name).
pub const DYNAMIC_PREFIX: &str = "dynamic:";

/// `line` (`NodeName=LIST KEY=VALUE...`) for node `name` alone.
fn line_for(line: &str, name: &str) -> String {
    line.split_whitespace()
        .map(|w| {
            if w.to_ascii_lowercase().starts_with("nodename=") {
                format!("NodeName={name}")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `State=` of node line `line`, upper case; `None` without one.
fn state_of(line: &str) -> Option<String> {
    line.split_whitespace()
        .find_map(|w| {
            w.split_once('=')
                .filter(|(k, _)| k.eq_ignore_ascii_case("state"))
        })
        .map(|(_, v)| v.to_ascii_uppercase())
}

/// The state a node created by its agent's registration with `line` is set to, as
/// Slurm 22.05's slurmctld reads the line's `State=`: `DRAIN` (or `DRAIN...`, `FAIL...`)
/// drains it, `DOWN` sets it down; any other state leaves it as registering makes it.
fn registered_state(line: &str) -> Option<&'static str> {
    match state_of(line)?.as_str() {
        s if s.starts_with("DRAIN") || s.starts_with("FAIL") => Some("DRAIN"),
        "DOWN" => Some("DOWN"),
        _ => None,
    }
}

impl Controller {
    /// `scontrol create nodename=LIST CPUs=... [State=FUTURE|CLOUD]` at `now`: the nodes
    /// of `line` (read as `conf`) join, in no partition (an operator adds them to one
    /// with `scontrol update PartitionName=P Nodes=...`), taking work once their
    /// agents register; they are kept across restarts.
    ///
    /// Errors (Slurm's): "Invalid user id" (not a super user); a state other than FUTURE or CLOUD,
    /// "Invalid node state specified"; a name already taken, "Invalid node name
    /// specified"; GRES the cluster does not have.
    pub fn create_nodes(
        &mut self,
        line: &str,
        conf: &ClusterConfig,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::not_super_user());
        }
        let state = state_of(line).unwrap_or_default();
        let future = state == "FUTURE";
        if !future && !state.starts_with("CLOUD") {
            return Err(ApiError::invalid(INVALID_NODE_STATE));
        }
        let lines = self.new_node_lines(conf)?;
        self.check_room(lines.len(), line)?;
        // As Slurm's, they join the partitions of `Nodes=ALL`.
        let partitions = self.all_nodes_partitions();
        let mut effects = Vec::new();
        for l in lines {
            let name = l.node.name.clone();
            effects.push(self.add_node_line(l, &partitions, now)?.1);
            self.node_book.dynamic.insert(name.clone());
            if future {
                self.node_book.future.insert(name.clone());
            } else {
                self.node_book.cloud.insert(name.clone());
            }
            self.node_book
                .lines
                .insert(name.clone(), line_for(line, &name));
            effects.push(Effect::PersistNode {
                name: format!("{DYNAMIC_PREFIX}{name}"),
                record: Some(line_for(line, &name)),
            });
        }
        tracing::info!("create node from uid {}: {line}", caller.uid);
        Ok(effects)
    }

    /// The nodes of `conf` (a node line read alone) as nodes of this cluster: their
    /// GRES by this cluster's slots, up once their agent registers.
    ///
    /// Errors (Slurm's): a name already taken, "Invalid node name specified"; GRES
    /// the cluster does not have.
    fn new_node_lines(&self, conf: &ClusterConfig) -> Result<Vec<NodeLine>, ApiError> {
        let core = conf.core_cluster();
        let mut lines = Vec::new();
        for i in 0..core.nodes.len() {
            let mut l = NodeLine::of(conf, &core, i);
            if self.conf.node_id(&l.node.name).is_some() {
                return Err(ApiError::new(
                    ErrorCode::InvalidNodeName,
                    sluice_proto::error::INVALID_NODE_NAME,
                ));
            }
            // Its GRES by this cluster's slots.
            let mut gres = [0u32; sluice_core::tres::MAX_GRES];
            for (slot, &count) in l.node.capacity.gres.iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let name = conf.cluster.gres.name(slot);
                let (base, kind) = match name.split_once(':') {
                    Some((b, t)) => (b, Some(t)),
                    None => (name.as_str(), None),
                };
                match self.conf.cluster.gres.find(base, kind) {
                    Some(here) => gres[here] = count,
                    None => {
                        return Err(ApiError::invalid(format!(
                            "Invalid generic resource (gres) specification: {name} is not a GRES of this cluster"
                        )))
                    }
                }
            }
            l.node.capacity.gres = gres;
            // Up once its agent registers (Slurm's FUTURE and CLOUD nodes wait for
            // their slurmd).
            l.node.state = NodeState::Up;
            lines.push(l);
        }
        Ok(lines)
    }

    /// Whether `count` more nodes fit under `MaxNodeCount` (`line` for the log).
    ///
    /// Errors: later Slurm's "Unable to add node, node table is full".
    fn check_room(&self, count: usize, line: &str) -> Result<(), ApiError> {
        let max = self.conf.max_node_count as usize;
        let now = self.live_nodes().count();
        if max > 0 && now + count > max {
            tracing::error!("node {line} refused: MaxNodeCount={max} reached ({now} nodes)");
            return Err(ApiError::new(ErrorCode::Busy, NODE_TABLE_FULL));
        }
        Ok(())
    }

    /// The partitions slurm.conf gives `Nodes=ALL`.
    fn all_nodes_partitions(&self) -> Vec<PartitionId> {
        self.conf
            .cluster
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| self.conf.all_nodes_partitions.contains(&p.name))
            .map(|(i, _)| PartitionId(i as u16))
            .collect()
    }

    /// An agent registers (see [`Controller::register_agent`]); one started as a
    /// dynamic node (`slurmd -Z`, with its line and the node it describes in
    /// `dynamic`) whose node the controller does not know creates it first: up,
    /// in the partitions of `Nodes=ALL`, kept across restarts. Registering again
    /// changes nothing of the node (its line is the one it was created with).
    ///
    /// Errors: those of [`Controller::register_agent`]; for a node to create, a line
    /// that did not read, or names another node than the agent's; a name or GRES
    /// refused, `MaxNodeCount` reached.
    pub fn register_dynamic_agent(
        &mut self,
        reg: &Registration,
        dynamic: Option<Result<(&str, &ClusterConfig), &ApiError>>,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let mut effects = Vec::new();
        if let Some(d) = dynamic {
            if self.conf.node_id(&reg.node).is_none() {
                let (line, conf) = d.map_err(Clone::clone)?;
                effects = self.create_registered_node(&reg.node, line, conf, now)?;
            }
        }
        effects.extend(self.register_agent(reg, now)?);
        Ok(effects)
    }

    /// Node `name`, which its agent registers with `line` (read as `conf`), joins.
    fn create_registered_node(
        &mut self,
        name: &str,
        line: &str,
        conf: &ClusterConfig,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        let lines = self.new_node_lines(conf)?;
        if lines.len() != 1 || lines[0].node.name != name {
            return Err(ApiError::new(
                ErrorCode::InvalidNodeName,
                format!("Failed to parse dynamic nodeline '{line}': it is not node {name}'s"),
            ));
        }
        self.check_room(1, line)?;
        let partitions = self.all_nodes_partitions();
        let mut effects = Vec::new();
        for l in lines {
            effects.push(self.add_node_line(l, &partitions, now)?.1);
        }
        // The state its line names, kept as an operator's would be (across restarts,
        // until `State=RESUME`); registering next applies `ReturnToService` to a
        // DOWN one, as Slurm's registration does.
        if let Some(state) = registered_state(line) {
            effects.push(self.set_override(name, state, "", now));
        }
        self.node_book.dynamic.insert(name.to_string());
        self.node_book
            .lines
            .insert(name.to_string(), line_for(line, name));
        effects.push(Effect::PersistNode {
            name: format!("{DYNAMIC_PREFIX}{name}"),
            record: Some(line_for(line, name)),
        });
        tracing::info!("node {name} created by its agent's registration: {line}");
        Ok(effects)
    }

    /// `scontrol delete nodename=LIST` at `now`: the nodes leave (a slurm.conf node
    /// until the next restart or reconfigure reads it again). As Slurm's, each node
    /// that may go goes; the answer names those that may not, with Slurm's message
    /// for the first of them: an unknown name, "Invalid node name specified"; a node
    /// that runs jobs, "Requested nodes are busy".
    ///
    /// Errors (Slurm's): "Invalid user id" (not a super user); a list that names no node,
    /// "Invalid node name specified".
    pub fn delete_nodes(
        &mut self,
        names: &str,
        caller: &Caller,
        now: i64,
    ) -> Result<(Vec<Effect>, sluice_proto::types::NodesDeleted), ApiError> {
        if !caller.admin {
            return Err(ApiError::not_super_user());
        }
        let invalid = || {
            ApiError::new(
                ErrorCode::InvalidNodeName,
                sluice_proto::error::INVALID_NODE_NAME,
            )
        };
        let list = sluice_conf::hostlist::expand(names).map_err(|_| invalid())?;
        if list.is_empty() {
            return Err(invalid());
        }
        let mut effects = Vec::new();
        let mut failed = Vec::new();
        let mut error = None;
        for name in list {
            let Some(nid) = self.conf.node_id(&name) else {
                error.get_or_insert(sluice_proto::error::INVALID_NODE_NAME);
                failed.push(name);
                continue;
            };
            if !self.sched.jobs_running_on(nid).is_empty() {
                error.get_or_insert(NODES_BUSY);
                failed.push(name);
                continue;
            }
            let dynamic = self.node_book.dynamic.contains(&name);
            let had_override = self.node_overrides.contains_key(&name);
            self.remove_node_id(nid, now)?;
            self.node_book.future.remove(&name);
            if dynamic {
                effects.push(Effect::PersistNode {
                    name: format!("{DYNAMIC_PREFIX}{name}"),
                    record: None,
                });
            }
            if had_override {
                effects.push(Effect::PersistNode { name, record: None });
            }
        }
        tracing::info!("delete node from uid {}: {names}", caller.uid);
        let outcome = sluice_proto::types::NodesDeleted {
            failed: sluice_conf::hostlist::compress(&failed),
            error: error.map(str::to_string),
        };
        Ok((effects, outcome))
    }

    /// The dynamic nodes kept across a restart (already in the configuration, see
    /// [`append_node`]): `names`, with those still FUTURE in `future`.
    pub fn restore_dynamic_nodes(&mut self, names: &[String], future: &[String]) {
        self.node_book.dynamic.extend(names.iter().cloned());
        self.node_book.future.extend(future.iter().cloned());
    }

    /// Dynamic node `name`'s line as kept in the store (see [`append_node`]).
    pub fn restore_dynamic_line(&mut self, name: &str, line: &str) {
        if state_of(line).is_some_and(|s| s.starts_with("CLOUD")) {
            self.node_book.cloud.insert(name.to_string());
        }
        self.node_book
            .lines
            .insert(name.to_string(), line_for(line, name));
    }

    /// Node `name`'s agent registered: a node created FUTURE is FUTURE no more, and
    /// comes back so after a restart (its kept line loses its `State=FUTURE`).
    pub(crate) fn future_node_registered(&mut self, name: &str) -> Option<Effect> {
        let future = self.node_book.future.remove(name);
        if !(self.node_book.cloud.remove(name) || future) {
            return None;
        }
        let line = self.node_book.lines.get(name)?;
        let kept: Vec<&str> = line
            .split_whitespace()
            .filter(|w| !w.to_ascii_lowercase().starts_with("state="))
            .collect();
        let kept = kept.join(" ");
        self.node_book.lines.insert(name.to_string(), kept.clone());
        Some(Effect::PersistNode {
            name: format!("{DYNAMIC_PREFIX}{name}"),
            record: Some(kept),
        })
    }

    /// Whether node `name` was created CLOUD and its agent has not registered.
    pub(crate) fn node_cloud(&self, name: &str) -> bool {
        self.node_book.cloud.contains(name) && !self.agents_up.contains(name)
    }

    /// Whether node `name` is FUTURE: created so, its agent not registered yet.
    pub(crate) fn node_future(&self, name: &str) -> bool {
        let b = &self.node_book;
        b.held_future.contains(name)
            || ((b.future.contains(name)
                || (self.conf.future_nodes.iter().any(|n| n == name) && !b.resumed.contains(name)))
                && !self.agents_up.contains(name))
    }
}

/// Appends the nodes of `line` (a dynamic node's line as kept) to `conf` before the
/// controller starts; returns their names and whether they are FUTURE. A line that no
/// longer reads, or names a node slurm.conf now has, is skipped with a warning.
pub fn append_node(conf: &mut ClusterConfig, line: &str) -> Vec<(String, bool)> {
    let parsed = match crate::server::dynamic_nodes::parse_node_line(line) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("dynamic node line {line:?} dropped: {e}");
            return Vec::new();
        }
    };
    let future = state_of(line).as_deref() == Some("FUTURE");
    let core = parsed.core_cluster();
    let mut out = Vec::new();
    for i in 0..core.nodes.len() {
        let l = NodeLine::of(&parsed, &core, i);
        let name = l.node.name.clone();
        if conf.node_id(&name).is_some() {
            tracing::warn!("dynamic node {name} dropped: slurm.conf has a node of that name");
            continue;
        }
        let mut node = l.node.clone();
        node.state = NodeState::Up;
        node.gpus = Vec::new();
        node.features = 0;
        for f in &l.features {
            node.features |= conf.cluster.feature_bit(f).unwrap_or(0);
        }
        let mut gres = [0u32; sluice_core::tres::MAX_GRES];
        for (slot, &count) in l.node.capacity.gres.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let n = parsed.cluster.gres.name(slot);
            let (base, kind) = n
                .split_once(':')
                .map_or((n.as_str(), None), |(b, t)| (b, Some(t)));
            if let Some(here) = conf.cluster.gres.find(base, kind) {
                gres[here] = count;
            }
        }
        node.capacity.gres = gres;
        let i = conf.cluster.nodes.len();
        conf.cluster.nodes.push(node);
        for p in &mut conf.cluster.partitions {
            if conf.all_nodes_partitions.contains(&p.name) {
                p.nodes.push(NodeId(i as u32));
            }
        }
        set_at(&mut conf.topology, i, l.topology, (1, 1, 1));
        set_at(&mut conf.node_gres, i, l.gres.clone(), String::new());
        set_at(
            &mut conf.cpu_spec_lists,
            i,
            l.cpu_spec_list.clone(),
            String::new(),
        );
        set_at(
            &mut conf.gres_devices,
            i,
            l.gres_devices.clone(),
            Vec::new(),
        );
        if let Some(a) = l.address.clone() {
            // Its agent is reached at its own `NodeAddr` over TCP.
            while conf.node_addresses.len() < i {
                let n = conf.cluster.nodes[conf.node_addresses.len()].name.clone();
                conf.node_addresses.push(crate::config::NodeAddress {
                    addr: n.clone(),
                    hostname: n,
                    port: None,
                });
            }
            set_at(&mut conf.node_addresses, i, a.clone(), a);
        }
        out.push((name, future));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_node_of_slurm_conf_is_shown_future_until_its_agent_registers() {
        let dir = std::env::temp_dir().join(format!("sluice-future-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slurm.conf");
        std::fs::write(
            &path,
            "ClusterName=c\nNodeName=n1 CPUs=2 RealMemory=100\n\
             NodeName=n[2-3] CPUs=2 RealMemory=100 State=FUTURE\n\
             PartitionName=p Nodes=n[1-3] Default=YES\n",
        )
        .unwrap();
        let (conf, _) = ClusterConfig::read(&path).unwrap();
        assert_eq!(conf.future_nodes, ["n2", "n3"]);
        let mut ctl = Controller::new(conf, &dir, vec![], vec![], 0);
        ctl.await_agents(0);
        ctl.agent_registered("n1", &[], 1);
        let states = |ctl: &Controller| -> Vec<String> {
            ctl.nodes()
                .iter()
                .map(|n| format!("{} {}", n.name, n.state))
                .collect()
        };
        assert_eq!(states(&ctl), ["n1 idle", "n2 future", "n3 future"]);
        ctl.agent_registered("n2", &[], 2);
        assert_eq!(states(&ctl), ["n1 idle", "n2 idle", "n3 future"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A controller of `text` (a slurm.conf) whose listed nodes' agents registered.
    fn cluster(text: &str, tag: &str, up: &[&str]) -> Controller {
        let dir = std::env::temp_dir().join(format!("sluice-dyn-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slurm.conf");
        std::fs::write(&path, text).unwrap();
        let (conf, _) = ClusterConfig::read(&path).unwrap();
        let mut ctl = Controller::new(conf, &dir, vec![], vec![], 0);
        ctl.await_agents(0);
        for n in up {
            ctl.agent_registered(n, &[], 1);
        }
        let _ = std::fs::remove_dir_all(&dir);
        ctl
    }

    /// `scontrol reconfigure` at `now` by root, slurm.conf now being `text`.
    fn reconfigure_to(ctl: &mut Controller, text: &str, tag: &str, now: i64) {
        let dir = std::env::temp_dir().join(format!("sluice-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slurm.conf");
        std::fs::write(&path, text).unwrap();
        let (new, _) = ClusterConfig::read(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        ctl.reconfigure_partitions(
            Box::new(new),
            String::new(),
            &crate::state::tests::root(),
            now,
        )
        .unwrap();
    }

    #[test]
    fn a_node_reconfigure_adds_awaits_its_agent_and_goes_down_after_slurmd_timeout() {
        // n1 alone, its agent registered; SlurmdTimeout=30.
        let one = "ClusterName=c\nSlurmdTimeout=30\nNodeName=n1 CPUs=2 RealMemory=100\n\
                   PartitionName=p Nodes=ALL Default=YES\n";
        let mut ctl = cluster(one, "await", &["n1"]);
        // slurm.conf gains n2, n3 as FUTURE and n4 drained: reconfigure at 10.
        let more = one.replace("NodeName=n1 ", "NodeName=n[1-2] ")
            + "NodeName=n3 CPUs=2 RealMemory=100 State=FUTURE\n"
            + "NodeName=n4 CPUs=2 RealMemory=100 State=DRAIN\n";
        reconfigure_to(&mut ctl, &more, "await", 10);
        // n2 awaits its agent as a node does at a start: UNKNOWN and not responding,
        // no reason (not a made-up "Not responding"); n3 is FUTURE; n4 drained, not
        // responding, as a drained node of the file is at a start.
        let shown = |ctl: &Controller| -> Vec<(String, String, bool, Option<String>)> {
            ctl.nodes()
                .into_iter()
                .map(|n| (n.name, n.state, n.agent_up, n.reason))
                .collect()
        };
        let node = |name: &str, state: &str, up: bool, reason: Option<&str>| {
            (
                name.to_string(),
                state.to_string(),
                up,
                reason.map(String::from),
            )
        };
        assert_eq!(
            shown(&ctl),
            [
                node("n1", "idle", true, None),
                node("n2", "unknown", false, None),
                node("n3", "future", false, None),
                node("n4", "drained", false, Some(NOT_RESPONDING)),
            ]
        );
        assert!(!ctl.nodes()[3].down);
        // Their agents never register: SlurmdTimeout after the reconfigure n2 is DOWN,
        // for not responding, and n4 DOWN beneath its drain, as nodes of the file are
        // at a start; the FUTURE node stays so.
        assert!(ctl.silent_expired(39).is_empty());
        ctl.silent_expired(40);
        assert_eq!(
            shown(&ctl)[1..],
            [
                node("n2", "down", false, Some(NOT_RESPONDING)),
                node("n3", "future", false, None),
                node("n4", "drained", false, Some(NOT_RESPONDING)),
            ]
        );
        assert!(ctl.nodes()[3].down);
    }

    #[test]
    fn reconfiguring_with_the_same_file_keeps_a_resumed_node_of_a_drained_line_and_its_job() {
        // n2's line drains it, with a reason; an operator resumes it and a job runs
        // there. `scontrol reconfigure` with the same file changes nothing: the node
        // keeps its state (as Slurm's reconfigure does) and is not refused as busy.
        let text = "ClusterName=c\nNodeName=n1 CPUs=2 RealMemory=100\n\
                    NodeName=n2 CPUs=2 RealMemory=100 State=DRAIN Reason=\"new disks\"\n\
                    PartitionName=p Nodes=ALL Default=YES\n";
        let mut ctl = cluster(text, "samefile", &["n1", "n2"]);
        assert_eq!(states(&ctl), ["n1 idle p", "n2 drained p"]);
        assert_eq!(ctl.nodes()[1].reason.as_deref(), Some("new disks"));
        ctl.update_node("n2", "RESUME", None, &crate::state::tests::root(), 5)
            .unwrap();
        ctl.agents_answered(&["n2".to_string()], 7);
        let mut next = 1;
        let mut d = crate::state::tests::desc(2, 600);
        d.nodelist = Some("n2".into());
        let (job, _) = crate::state::tests::submit(&mut ctl, d, &mut next, 8);
        ctl.schedule(8);
        assert_eq!(ctl.job(job).unwrap().state, JobState::Running);

        reconfigure_to(&mut ctl, text, "samefile", 10);
        assert_eq!(states(&ctl), ["n1 idle p", "n2 allocated p"]);
        assert_eq!(ctl.job(job).unwrap().state, JobState::Running);
    }

    #[test]
    fn a_node_removed_and_added_again_awaits_its_agent_afresh() {
        // n1 alone, its agent registered; SlurmdTimeout=30. slurm.conf gains n2 at 10,
        // loses it at 20 and gains it again at 35 (each time a reconfigure).
        let one = "ClusterName=c\nSlurmdTimeout=30\nNodeName=n1 CPUs=2 RealMemory=100\n\
                   PartitionName=p Nodes=ALL Default=YES\n";
        let two = one.replace("NodeName=n1 ", "NodeName=n[1-2] ");
        let mut ctl = cluster(one, "readd", &["n1"]);
        reconfigure_to(&mut ctl, &two, "readd", 10);
        reconfigure_to(&mut ctl, one, "readd", 20);
        // Gone, it is no node the controller waits for.
        assert!(ctl.silent_due(41).is_empty());
        reconfigure_to(&mut ctl, &two, "readd", 35);
        // Awaited from 35, not from its first addition: DOWN at 65, not at 40.
        ctl.silent_expired(45);
        assert_eq!(ctl.nodes()[1].state, "unknown");
        ctl.silent_expired(65);
        assert_eq!(
            (
                ctl.nodes()[1].state.as_str(),
                ctl.nodes()[1].reason.as_deref()
            ),
            ("down", Some(NOT_RESPONDING))
        );
    }

    fn states(ctl: &Controller) -> Vec<String> {
        ctl.nodes()
            .iter()
            .map(|n| format!("{} {} {}", n.name, n.state, n.partitions.join(",")))
            .collect()
    }

    fn create(ctl: &mut Controller, line: &str) -> Result<Vec<Effect>, ApiError> {
        let conf = crate::server::dynamic_nodes::parse_node_line(line).unwrap();
        ctl.create_nodes(line, &conf, &crate::state::tests::root(), 2)
    }

    const TWO: &str = "ClusterName=c\nMaxNodeCount=4\nNodeName=n[1-2] CPUs=2 RealMemory=100\n\
                       PartitionName=all Nodes=ALL Default=YES\nPartitionName=one Nodes=n1\n";

    #[test]
    fn created_nodes_join_the_partitions_of_all_nodes_up_to_max_node_count() {
        let mut ctl = cluster(TWO, "max", &["n1", "n2"]);
        create(&mut ctl, "NodeName=n[3-4] CPUs=2 State=FUTURE").unwrap();
        assert_eq!(
            states(&ctl),
            [
                "n1 idle all,one",
                "n2 idle all",
                "n3 future all",
                "n4 future all"
            ]
        );
        // Four in all: a fifth is refused, with later Slurm's message, nothing changed.
        let e = create(&mut ctl, "NodeName=n5 CPUs=2 State=FUTURE").unwrap_err();
        assert_eq!(e.message, NODE_TABLE_FULL);
        assert_eq!(ctl.nodes().len(), 4);
        // A node deleted makes room again.
        let (_, d) = ctl
            .delete_nodes("n4", &crate::state::tests::root(), 3)
            .unwrap();
        assert_eq!(d.failed, "");
        create(&mut ctl, "NodeName=n5 CPUs=2 State=FUTURE").unwrap();
        assert_eq!(ctl.nodes().len(), 4);
    }

    #[test]
    fn delete_takes_the_nodes_it_may_and_names_the_others() {
        let mut ctl = cluster(TWO, "del", &["n1", "n2"]);
        create(&mut ctl, "NodeName=n3 CPUs=2 State=FUTURE").unwrap();
        let (_, d) = ctl
            .delete_nodes("n[3,9]", &crate::state::tests::root(), 3)
            .unwrap();
        assert_eq!(
            (d.failed.as_str(), d.error.as_deref()),
            ("n9", Some(sluice_proto::error::INVALID_NODE_NAME))
        );
        assert_eq!(states(&ctl), ["n1 idle all,one", "n2 idle all"]);
    }

    #[test]
    fn an_operator_sets_a_node_future_and_takes_it_back() {
        let mut ctl = cluster(TWO, "upd", &["n1", "n2"]);
        let root = crate::state::tests::root();
        create(&mut ctl, "NodeName=n3 CPUs=2 State=FUTURE").unwrap();
        // DRAIN and UNDRAIN keep a FUTURE node FUTURE; DOWN ends it.
        ctl.update_node("n3", "DRAIN", Some("later"), &root, 3)
            .unwrap();
        assert_eq!(states(&ctl)[2], "n3 future all");
        ctl.update_node("n3", "UNDRAIN", None, &root, 3).unwrap();
        ctl.update_node("n3", "DOWN", Some("later"), &root, 3)
            .unwrap();
        assert_eq!(states(&ctl)[2], "n3 down all");
        assert!(ctl.nodes()[2].agent_up, "never expected to answer");
        // FUTURE again, then RESUME: idle, awaiting its agent.
        ctl.update_node("n3", "FUTURE", None, &root, 3).unwrap();
        assert_eq!(states(&ctl)[2], "n3 future all");
        ctl.update_node("n3", "RESUME", None, &root, 3).unwrap();
        assert_eq!(states(&ctl)[2], "n3 idle all");
        assert!(!ctl.nodes()[2].agent_up);
        // A CLOUD node is hidden (its own state word) until its agent registers.
        create(&mut ctl, "NodeName=n4 CPUs=2 State=CLOUD").unwrap();
        assert_eq!(states(&ctl)[3], "n4 cloud all");
        ctl.agent_registered("n4", &[], 3);
        assert_eq!(states(&ctl)[3], "n4 idle all");
        // FUTURE (as scontrol abbreviates it) hides a node whose agent answers too;
        // RESUME brings it back.
        ctl.update_node("n2", "fut", None, &root, 4).unwrap();
        assert_eq!(states(&ctl)[1], "n2 future all");
        assert_eq!(ctl.node_state(NodeId(1)), NodeState::Down);
        ctl.update_node("n2", "RESUME", None, &root, 5).unwrap();
        assert_eq!(states(&ctl)[1], "n2 idle all");
        assert!(ctl.update_node("n2", "BOGUS", None, &root, 5).is_err());
    }

    #[test]
    fn an_agent_registers_a_node_the_controller_does_not_know_once() {
        let mut ctl = cluster(TWO, "reg", &["n1", "n2"]);
        let line = "NodeName=n7 CPUs=4 RealMemory=300";
        let conf = crate::server::dynamic_nodes::parse_node_line(line).unwrap();
        let reg = Registration {
            node: "n7".into(),
            ..Registration::default()
        };
        let effects = ctl
            .register_dynamic_agent(&reg, Some(Ok((line, &conf))), 3)
            .unwrap();
        assert!(effects.iter().any(|e| matches!(
            e,
            Effect::PersistNode { name, record: Some(r) } if name == "dynamic:n7" && r == line
        )));
        assert_eq!(states(&ctl)[2], "n7 idle all");
        assert_eq!(ctl.nodes()[2].cpus, 4);
        assert!(ctl.nodes()[2].dynamic);
        // Again, with another line: the node stays as it was created, and once.
        let other = "NodeName=n7 CPUs=1 RealMemory=100";
        let conf = crate::server::dynamic_nodes::parse_node_line(other).unwrap();
        let effects = ctl
            .register_dynamic_agent(&reg, Some(Ok((other, &conf))), 4)
            .unwrap();
        assert!(!effects
            .iter()
            .any(|e| matches!(e, Effect::PersistNode { .. })));
        assert_eq!(ctl.nodes().len(), 3);
        assert_eq!(ctl.nodes()[2].cpus, 4);
        // A line that names another node is refused.
        let reg8 = Registration {
            node: "n8".into(),
            ..Registration::default()
        };
        assert!(ctl
            .register_dynamic_agent(&reg8, Some(Ok((line, &conf))), 5)
            .is_err());
        assert_eq!(ctl.nodes().len(), 3);
        // A line that did not read: said for a node to create, not for a known one.
        let bad = ApiError::invalid("Failed to parse nodeline 'NodeName=n8 CPUs=x'");
        let e = ctl
            .register_dynamic_agent(&reg8, Some(Err(&bad)), 5)
            .unwrap_err();
        assert_eq!(e, bad);
        assert!(ctl.register_dynamic_agent(&reg, Some(Err(&bad)), 5).is_ok());
        assert_eq!(ctl.nodes().len(), 3);
    }

    /// Agents of new nodes n5 and n6 register with `State=DRAIN` and `State=DOWN`.
    fn register_drained_and_down(ctl: &mut Controller) {
        for (name, state) in [("n5", "DRAIN"), ("n6", "DOWN")] {
            let line = format!("NodeName={name} CPUs=4 RealMemory=300 State={state}");
            let conf = crate::server::dynamic_nodes::parse_node_line(&line).unwrap();
            let reg = Registration {
                node: name.into(),
                ..Registration::default()
            };
            ctl.register_dynamic_agent(&reg, Some(Ok((&line, &conf))), 3)
                .unwrap();
        }
    }

    #[test]
    fn a_dynamic_node_registers_in_the_state_its_conf_names() {
        // As Slurm 22.05's slurmctld: `State=DRAIN` (or `DRAIN+...`) in the agent's
        // line makes the new node drained, `State=DOWN` down (until ReturnToService
        // or an operator brings it up); any other state leaves it idle.
        let mut ctl = cluster(TWO, "regstate", &["n1", "n2"]);
        register_drained_and_down(&mut ctl);
        assert_eq!(states(&ctl)[2..], ["n5 drained all", "n6 down all"]);
        // Slurm gives it no reason.
        assert_eq!(
            (&ctl.nodes()[2].reason, &ctl.nodes()[2].reason_set),
            (&None, &None)
        );
        // Kept as an operator's state would be: State=RESUME ends it.
        let root = crate::state::tests::root();
        ctl.update_node("n5", "RESUME", None, &root, 4).unwrap();
        assert_eq!(states(&ctl)[2], "n5 idle all");
        // Under ReturnToService=2 the registration that created it brings a DOWN node
        // back at once, as Slurm's does; a drained one stays drained.
        let text = TWO.replace("MaxNodeCount=4", "MaxNodeCount=4\nReturnToService=2");
        let mut ctl = cluster(&text, "regstate2", &["n1", "n2"]);
        register_drained_and_down(&mut ctl);
        assert_eq!(states(&ctl)[2..], ["n5 drained all", "n6 idle all"]);
    }

    #[test]
    fn a_dynamic_node_registers_with_the_gres_its_conf_names() {
        let text = "ClusterName=c\nGresTypes=gpu\nAccountingStorageTRES=gres/gpu\n\
                    NodeName=n1 CPUs=2 RealMemory=100 Gres=gpu:1\n\
                    PartitionName=all Nodes=ALL Default=YES\n";
        let mut ctl = cluster(text, "gres", &["n1"]);
        let line = "NodeName=n7 CPUs=4 RealMemory=300 Gres=gpu:2";
        let conf = crate::server::dynamic_nodes::parse_node_line(line).unwrap();
        let reg = Registration {
            node: "n7".into(),
            ..Registration::default()
        };
        ctl.register_dynamic_agent(&reg, Some(Ok((line, &conf))), 3)
            .unwrap();
        let n7 = &ctl.nodes()[1];
        assert_eq!(
            (n7.name.as_str(), n7.gres.as_str(), n7.cfg_tres.as_str()),
            ("n7", "gpu:2", "cpu=4,mem=300M,billing=4,gres/gpu=2")
        );
    }
}
