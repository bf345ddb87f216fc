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
        node.state = line.node.state;
        self.conf.cluster.nodes[nid.index()] = node;
        self.put_node_extras(nid, &line);
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
        self.node_overrides.remove(&name);
        self.agents_up.remove(&name);
        self.node_book.dynamic.remove(&name);
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
                    if old.shape() != line.shape() || old.node.state != line.node.state {
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
        for nid in removes {
            self.remove_node_id(nid, now)?;
        }
        for (nid, line) in changes {
            self.replace_node_line(nid, line, now)?;
        }
        let mut effects = Vec::new();
        for line in adds {
            effects.push(self.add_node_line(line, &[], now)?.1);
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
