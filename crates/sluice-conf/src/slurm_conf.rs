//! `slurm.conf`: nodes, partitions and the settings the scheduler uses.
//!
//! Syntax as in `slurm.conf(5)`: `Key=Value` pairs separated by whitespace, several on a
//! line; keys case-insensitive; `#` starts a comment; a trailing `\` continues the line;
//! `Include FILE` reads another file (relative to the including one); `NodeName=` and
//! `PartitionName=` lines describe nodes and partitions (`DEFAULT` sets defaults for the
//! lines after it). Unknown keys draw a warning with file and line; malformed values
//! are errors with file and line.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use sluice_core::partition_policy::{OverSubscribe, PartitionAccess};
use sluice_core::{BackfillParams, Cluster, Node, NodeId, NodeState, Partition, PartitionState};

use crate::duration::{parse_mem_mib, parse_time};
use crate::hostlist;
use crate::keys;
use crate::preempt_conf;
use crate::reader::ConfReader;

/// A configuration error at a place in a file. Displays as `FILE:LINE: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (0 when the error is about the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
        }
    }
}

impl std::error::Error for ConfError {}

impl ConfError {
    /// A maker of errors at `path`:`line`.
    fn at(path: &Path, line: usize) -> impl Fn(String) -> ConfError + '_ {
        move |message| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        }
    }
}

/// A parsed slurm.conf.
#[derive(Clone, Debug)]
pub struct SlurmConf {
    /// `ClusterName` (Slurm requires it; `cluster` if absent, with a warning).
    pub cluster_name: String,
    /// Nodes, partitions, GRES and features.
    pub cluster: Cluster,
    /// Backfill parameters from `SchedulerParameters`.
    pub backfill: BackfillParams,
    /// `SchedulerType` (`sched/backfill` by default, `sched/builtin` is FIFO).
    pub scheduler_type: String,
    /// `GresTypes`.
    pub gres_types: Vec<String>,
    /// Every global `Key=Value` as written (last one wins), by lower-case key.
    pub settings: BTreeMap<String, (String, String)>,
    /// Where each of [`SlurmConf::settings`] was written (file and 1-based line), by
    /// lower-case key, so that a value found wrong after parsing is reported where it
    /// stands (see [`SlurmConf::error_at`]).
    pub setting_lines: BTreeMap<String, (PathBuf, usize)>,
    /// Per node, in the order of `cluster.nodes`: the CPUs kept for the system as
    /// `scontrol show node` shows them (`CPUSpecList=`), empty when none.
    pub cpu_spec_lists: Vec<String>,
    /// Per node, in the order of `cluster.nodes`: sockets, cores per socket and
    /// threads per core, as written or as Slurm infers what the line leaves out.
    pub node_layouts: Vec<(u32, u32, u32)>,
    /// The `Reason=` of the node lines that give one, by node name: why a node
    /// configured `State=DRAIN` or `State=DOWN` is so (Slurm shows it with no one who
    /// set it nor when).
    pub node_reasons: BTreeMap<String, String>,
    /// Warnings (`FILE:LINE: ...`) for keys that were ignored.
    pub warnings: Vec<String>,
    /// The TRES accounting tracks: Slurm's defaults ([`DEFAULT_TRES`]) followed by
    /// those `AccountingStorageTRES` adds (`gres/gpu`, `gres/gpu:a100`), in that order.
    pub accounting_tres: Vec<String>,
    /// Per partition, in the order of `cluster.partitions`: its `TRESBillingWeights`
    /// (its own or `PartitionName=DEFAULT`'s); `None` bills the allocated CPUs.
    pub billing_weights: Vec<Option<BillingWeights>>,
    /// `PriorityFlags` has `MAX_TRES`: billing is the largest weighted per-node TRES
    /// rather than the sum of all (see [`BillingWeights::billing`]).
    pub max_tres: bool,
    /// Every `SlurmctldHost` value in order (the first is the primary controller; the
    /// settings keep only the last): see [`crate::net_conf`].
    pub controllers: Vec<String>,
}

impl SlurmConf {
    /// A global setting's value, by key (case-insensitive).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings
            .get(&key.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    /// An error about the global setting `key`, at the file and line that set it (the
    /// file as a whole, line 0, when no line did).
    pub fn error_at(&self, key: &str, message: String) -> ConfError {
        let (path, line) = self
            .setting_lines
            .get(&key.to_ascii_lowercase())
            .cloned()
            .unwrap_or_default();
        ConfError {
            path,
            line,
            message,
        }
    }
}

/// Reads and parses a slurm.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, a malformed value, a node or partition defined
/// twice, a partition naming an unknown node, GRES not listed in `GresTypes`.
///
/// With `TopologyPlugin=topology/tree` or `topology/block`, the topology.conf in the
/// same directory is read too (as Slurm does) and each node's leaf switch (or block) set
/// in the cluster; see [`apply_topology`].
pub fn read(path: &Path) -> Result<SlurmConf, ConfError> {
    let mut p = Parser::default();
    p.read_file(path, 0)?;
    let mut conf = p.finish(path)?;
    let plugin = conf.get("TopologyPlugin").unwrap_or("");
    if plugin == "topology/tree" || plugin == "topology/block" {
        let topo_path = path.with_file_name("topology.conf");
        let topo = crate::topology_conf::read(&topo_path)?;
        let warnings = apply_topology(&mut conf.cluster, &topo).map_err(|message| ConfError {
            path: topo_path.clone(),
            line: 0,
            message,
        })?;
        conf.warnings.extend(warnings);
    }
    Ok(conf)
}

/// Sets every node's leaf switch from a tree topology, or its block from a block
/// topology (a block is then treated as a leaf switch: multi-node jobs take as few
/// blocks as they can). Returns the topology's warnings (nodes it does not reach).
///
/// Errors: topology.conf names a node slurm.conf does not define.
pub fn apply_topology(
    cluster: &mut sluice_core::Cluster,
    topo: &crate::topology_conf::TopologyConf,
) -> Result<Vec<String>, String> {
    use crate::topology_conf::TopologyConf;
    let names: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
    let warnings = topo.validate(&names)?;
    type GroupOf = Box<dyn Fn(&str) -> Option<usize>>;
    let (groups, group_of): (Vec<String>, GroupOf) = match topo {
        TopologyConf::Tree(t) => {
            let leaves: Vec<usize> = (0..t.switches().len())
                .filter(|&i| t.switches()[i].is_leaf())
                .collect();
            let names = leaves
                .iter()
                .map(|&i| t.switches()[i].name.clone())
                .collect();
            let t = t.clone();
            (
                names,
                Box::new(move |n| {
                    let leaf = t.leaf_of(n)?;
                    leaves.iter().position(|&l| l == leaf)
                }),
            )
        }
        TopologyConf::Block(b) => {
            let names = b.blocks().iter().map(|x| x.name.clone()).collect();
            let b = b.clone();
            (names, Box::new(move |n| b.block_of(n)))
        }
    };
    if groups.len() > u16::MAX as usize {
        return Err(format!("more than {} switches or blocks", u16::MAX));
    }
    for node in &mut cluster.nodes {
        node.leaf_switch = group_of(&node.name).map(|g| g as u16);
    }
    cluster.blocks = match topo {
        TopologyConf::Block(b) => {
            let mut aggregates: Vec<(u16, u16)> =
                (0..groups.len() as u16).map(|i| (i, i + 1)).collect();
            let mut larger: Vec<(u16, u16)> = b
                .aggregates()
                .into_iter()
                .map(|a| (a.blocks.start as u16, a.blocks.end as u16))
                .collect();
            larger.sort_by_key(|&(s, e)| (e - s, s));
            aggregates.extend(larger);
            Some(sluice_core::BlockLayout {
                aggregates,
                base_size: b.base_block_size(),
            })
        }
        TopologyConf::Tree(_) => None,
    };
    cluster.switches = groups;
    Ok(warnings)
}

/// Parses slurm.conf text; `path` is used for messages and for relative `Include`s.
pub fn parse_str(text: &str, path: &Path) -> Result<SlurmConf, ConfError> {
    let mut p = Parser::default();
    p.parse_text(text, path, 0)?;
    p.finish(path)
}

/// Applies a `SchedulerParameters` list (`bf_window=2880,bf_continue,...`) to `params`.
/// Returns the options it did not recognise (for a warning).
///
/// Units as in Slurm: `bf_window` in minutes, `bf_resolution` and `bf_interval` in
/// seconds.
///
/// Errors: a recognised option with a missing or non-numeric value.
pub fn apply_scheduler_parameters(
    params: &mut BackfillParams,
    list: &str,
) -> Result<Vec<String>, String> {
    let mut unknown = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
            None => (item.to_ascii_lowercase(), None),
        };
        let num = || -> Result<i64, String> {
            value
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|v| *v >= 1)
                .ok_or_else(|| {
                    format!(
                        "{key} needs a positive integer value, found '{}'",
                        value.unwrap_or("")
                    )
                })
        };
        match key.as_str() {
            "bf_window" => {
                params.window = num()?
                    .checked_mul(60)
                    .ok_or_else(|| format!("{key} is too large, found '{}'", value.unwrap_or("")))?
            }
            "bf_resolution" => params.resolution = num()?,
            "bf_interval" => params.interval = num()?,
            "bf_max_job_test" => params.max_job_test = num()? as usize,
            "bf_continue" => params.continue_pass = true,
            "max_switch_wait" => params.max_switch_wait = num()?,
            "max_script_size" => params.max_script_size = num()? as usize,
            k if keys::SCHEDULER_PARAMETERS_ACCEPTED.contains(&k) => {}
            _ => unknown.push(item.to_string()),
        }
    }
    Ok(unknown)
}

#[derive(Default)]
struct Parser {
    cluster: Cluster,
    node_defaults: Vec<(String, String)>,
    part_defaults: Vec<(String, String)>,
    settings: BTreeMap<String, (String, String)>,
    setting_lines: BTreeMap<String, (PathBuf, usize)>,
    cpu_spec_lists: Vec<String>,
    node_layouts: Vec<(u32, u32, u32)>,
    node_reasons: BTreeMap<String, String>,
    warnings: Vec<String>,
    /// Where each GRES name was first used, to report missing `GresTypes`.
    gres_used: Vec<(String, PathBuf, usize)>,
    scheduler_parameters: Option<(String, PathBuf, usize)>,
    /// Each node's id by name: one hostlist can name a million nodes, too many to look
    /// up one by one in the node list.
    node_ids: HashMap<String, NodeId>,
    /// Per partition: its billing weights and where they were written (checked against
    /// the tracked TRES once every line is read).
    billing_weights: Vec<Option<(BillingWeights, PathBuf, usize)>>,
    /// Every `SlurmctldHost` value, in order.
    controllers: Vec<String>,
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        start_line: usize,
    ) -> Result<(), ConfError> {
        let err = |line: usize, message: String| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        };
        match kv[0].0.to_ascii_lowercase().as_str() {
            "nodename" => self.node_line(kv, path, start_line)?,
            "partitionname" => self.partition_line(kv, path, start_line)?,
            "downnodes" | "frontendname" | "nodeset" => self.warnings.push(format!(
                "{}:{}: {} lines are not supported yet (ignored)",
                path.display(),
                start_line,
                kv[0].0
            )),
            _ => {
                for (k, v) in kv {
                    let lower = k.to_ascii_lowercase();
                    if !keys::GLOBAL.contains(&lower.as_str()) {
                        self.warnings.push(format!(
                            "{}:{}: unknown key '{k}' (ignored)",
                            path.display(),
                            start_line
                        ));
                        continue;
                    }
                    if lower == "schedulerparameters" {
                        self.scheduler_parameters =
                            Some((v.clone(), path.to_path_buf(), start_line));
                    }
                    self.check_global(&lower, &v)
                        .map_err(|m| err(start_line, format!("{k}: {m}")))?;
                    if lower == "slurmctldhost" {
                        self.controllers.push(v.clone());
                    }
                    self.setting_lines
                        .insert(lower.clone(), (path.to_path_buf(), start_line));
                    self.settings.insert(lower, (k, v));
                }
            }
        }
        Ok(())
    }
}

impl Parser {
    /// Validates the global values the scheduler relies on.
    fn check_global(&self, key: &str, value: &str) -> Result<(), String> {
        let int = || {
            value
                .parse::<i64>()
                .map(|_| ())
                .map_err(|_| format!("expected an integer, found '{value}'"))
        };
        match key {
            "killwait"
            | "minjobage"
            | "maxarraysize"
            | "maxjobcount"
            | "firstjobid"
            | "priorityweightage"
            | "priorityweightfairshare"
            | "priorityweightjobsize"
            | "priorityweightpartition"
            | "priorityweightqos"
            | "priorityweightassoc"
            | "messagetimeout"
            | "slurmdtimeout"
            | "slurmctldtimeout"
            | "inactivelimit"
            | "waittime"
            | "overtimelimit" => int(),
            "prioritydecayhalflife" | "prioritymaxage" => parse_time(value).map(|_| ()),
            "defmempercpu" | "defmempernode" | "maxmempercpu" | "maxmempernode" => {
                parse_mem_mib(value).map(|_| ())
            }
            "accountingstoragetres" => accounting_storage_tres(Some(value)).map(|_| ()),
            "accountingstorageenforce" => AccountingEnforce::parse(value).map(|_| ()),
            "enforcepartlimits" => match value.to_ascii_uppercase().as_str() {
                "ALL" | "ANY" | "NO" | "YES" => Ok(()),
                _ => Err(format!("expected ALL, ANY, NO or YES, found '{value}'")),
            },
            "slurmctlddebug" | "slurmddebug" => {
                crate::log_conf::DebugLevel::parse(value).map(|_| ())
            }
            "preempttype" => preempt_conf::parse_preempt_type(value).map(|_| ()),
            "preemptmode" => preempt_conf::parse_cluster_preempt_mode(value).map(|_| ()),
            "preemptexempttime" => preempt_conf::parse_exempt_time(value).map(|_| ()),
            "schedulertimeslice" => preempt_conf::parse_time_slice(value).map(|_| ()),
            "slurmctldport" | "slurmdport" => crate::net_conf::parse_port(value).map(|_| ()),
            "returntoservice" => crate::net_conf::parse_return_to_service(value).map(|_| ()),
            "authtype" => crate::net_conf::AuthType::parse(value).map(|_| ()),
            "authinfo" => crate::net_conf::parse_auth_info(value).map(|_| ()),
            "authalttypes" => crate::net_conf::parse_auth_alt_types(value).map(|_| ()),
            "authaltparameters" => crate::net_conf::parse_auth_alt_parameters(value).map(|_| ()),
            "slurmctldhost" => crate::net_conf::ControllerHost::parse(value).map(|_| ()),
            "schedulertype" => match value {
                "sched/backfill" | "sched/builtin" => Ok(()),
                _ => Err(format!(
                    "unknown scheduler '{value}' (sched/backfill or sched/builtin)"
                )),
            },
            _ => Ok(()),
        }
    }

    fn node_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = ConfError::at(path, line);
        let names = &kv[0].1;
        if names.eq_ignore_ascii_case("default") {
            for (k, v) in &kv[1..] {
                self.known_node_key(k, path, line);
                self.node_defaults
                    .retain(|(dk, _)| !dk.eq_ignore_ascii_case(k));
                self.node_defaults.push((k.clone(), v.clone()));
            }
            return Ok(());
        }
        let hosts = hostlist::expand(names).map_err(|e| err(e.to_string()))?;
        let mut attrs: Vec<(String, String)> = self.node_defaults.clone();
        for (k, v) in &kv[1..] {
            self.known_node_key(k, path, line);
            attrs.retain(|(dk, _)| !dk.eq_ignore_ascii_case(k));
            attrs.push((k.clone(), v.clone()));
        }
        let get = |key: &str| {
            attrs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        };
        let uint = |key: &str, default: u32| -> Result<u32, ConfError> {
            match get(key) {
                None => Ok(default),
                Some(v) => v.parse::<u32>().map_err(|_| {
                    err(format!(
                        "{key}: expected a non-negative integer, found '{v}'"
                    ))
                }),
            }
        };
        // The layout as Slurm's read_config takes it: what a line leaves out is one
        // (a zero is one too), except sockets, which are the CPUs over the cores and
        // threads of one socket when those divide them, else one per board.
        let boards = uint("Boards", 1)?.max(1);
        let cores = uint("CoresPerSocket", 1)?.max(1);
        let threads = uint("ThreadsPerCore", 1)?.max(1);
        let given_cpus = match (get("CPUs"), get("Procs")) {
            (Some(_), _) => Some(uint("CPUs", 1)?),
            (None, Some(_)) => Some(uint("Procs", 1)?),
            (None, None) => None,
        };
        if given_cpus == Some(0) {
            return Err(err("CPUs must be at least 1".into()));
        }
        let too_large = || err("Sockets x CoresPerSocket x ThreadsPerCore is too large".into());
        let per_socket = cores.checked_mul(threads).ok_or_else(too_large)?;
        let sockets = match (get("SocketsPerBoard"), get("Sockets")) {
            (Some(_), _) => uint("SocketsPerBoard", 1)?
                .max(1)
                .checked_mul(boards)
                .ok_or_else(|| err("Boards x SocketsPerBoard is too large".into()))?,
            (None, Some(_)) => uint("Sockets", 1)?.max(1),
            (None, None) => match given_cpus {
                Some(c) if c >= per_socket && c % per_socket == 0 => c / per_socket,
                _ => boards,
            },
        };
        let full = sockets.checked_mul(per_socket).ok_or_else(too_large)?;
        let cpus = match given_cpus {
            None => full,
            Some(c) if c == sockets || c == sockets.saturating_mul(cores) || c == full => c,
            Some(c) => {
                // Slurm resets them too, with this error from every command and daemon
                // that reads the file; here once, from the one that starts.
                self.warnings.push(format!(
                    "{}:{line}: NodeNames={names} CPUs={c} match no Sockets, \
                     Sockets*CoresPerSocket or Sockets*CoresPerSocket*ThreadsPerCore: \
                     CPUs={full} (Sockets={sockets} CoresPerSocket={cores} \
                     ThreadsPerCore={threads}), as Slurm resets them",
                    path.display()
                ));
                full
            }
        };
        let spec_cores = cores;
        let spec_threads = if sockets.saturating_mul(cores) >= cpus {
            1
        } else {
            threads
        };
        let spec_cpu_ids = specialized_cpus(
            get("CoreSpecCount"),
            get("CpuSpecList"),
            cpus,
            (sockets.max(1), spec_cores, spec_threads),
        )
        .map_err(&err)?;
        let spec_cpus = spec_cpu_ids.len() as u32;
        // As slurmctld shows it: a list written over whole cores as written, else
        // the kept CPUs' ids in ranges.
        let cpu_spec_list = match get("CpuSpecList") {
            Some(list) if spec_threads == 1 => list.trim().to_string(),
            _ => id_ranges(&spec_cpu_ids),
        };
        let mem = match get("RealMemory") {
            None => 1,
            Some(v) => v.parse::<u64>().map_err(|_| {
                err(format!(
                    "RealMemory: expected MiB as an integer, found '{v}'"
                ))
            })?,
        };
        let weight = uint("Weight", 1)?;
        let reason = get("Reason").map(str::trim).filter(|r| !r.is_empty());
        let state = match get("State").map(|s| s.to_ascii_uppercase()) {
            None => NodeState::Up,
            Some(s) => match s.split('+').next().unwrap_or("") {
                "UNKNOWN" | "IDLE" | "CLOUD" => NodeState::Up,
                "DOWN" | "FUTURE" => NodeState::Down,
                "DRAIN" => NodeState::Drain,
                other => return Err(err(format!("State: unknown node state '{other}'"))),
            },
        };
        let gres = match get("Gres") {
            None => Vec::new(),
            Some(v) if v.is_empty() || v.eq_ignore_ascii_case("(null)") => Vec::new(),
            Some(v) => parse_node_gres(v).map_err(&err)?,
        };
        let features: Vec<String> = get("Features")
            .or(get("Feature"))
            .map(|f| {
                f.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut capacity = sluice_core::Resources {
            cpus: cpus - spec_cpus,
            mem_mib: mem,
            ..Default::default()
        };
        for (name, gtype, count) in &gres {
            if !self.gres_used.iter().any(|(n, _, _)| n == name) {
                self.gres_used
                    .push((name.clone(), path.to_path_buf(), line));
            }
            let slot = self
                .cluster
                .gres
                .slot_for(name, gtype.as_deref())
                .map_err(|e| err(e.to_string()))?;
            let too_many = || err(format!("Gres={name} count is too large"));
            capacity.gres[slot] = capacity.gres[slot]
                .checked_add(*count)
                .ok_or_else(too_many)?;
            if gtype.is_some() {
                let parent = self
                    .cluster
                    .gres
                    .parent(slot)
                    .expect("typed slots have a parent");
                capacity.gres[parent] = capacity.gres[parent]
                    .checked_add(*count)
                    .ok_or_else(too_many)?;
            }
        }
        let restricted = self.restricted_cpus_per_gpu(
            uint("RestrictedCoresPerGPU", 0)?,
            (
                sockets,
                cores,
                threads,
                get("CPUs").or(get("Procs")).is_some(),
            ),
            &capacity,
            names,
            &err,
            (path, line),
        )?;
        let mut feature_bits = 0u64;
        for f in &features {
            feature_bits |= self
                .cluster
                .feature_bit(f)
                .ok_or_else(|| err("more than 64 distinct node features".into()))?;
        }
        for host in hosts {
            let id = NodeId(self.cluster.nodes.len() as u32);
            if self.node_ids.insert(host.clone(), id).is_some() {
                return Err(err(format!("node {host} is defined twice")));
            }
            if let Some(reason) = reason {
                self.node_reasons.insert(host.clone(), reason.to_string());
            }
            let mut node = Node::new(host, cpus, mem);
            node.capacity = capacity;
            node.state = state;
            node.weight = weight;
            node.features = feature_bits;
            node.restricted_cpus_per_gpu = restricted;
            node.spec_cpus = spec_cpus;
            self.cluster.nodes.push(node);
            self.cpu_spec_lists.push(cpu_spec_list.clone());
            self.node_layouts.push((sockets, cores, threads));
        }
        Ok(())
    }

    /// A node line's `RestrictedCoresPerGPU=cores` (Slurm 24.11) in processors: the
    /// cores times `ThreadsPerCore` when the node's CPUs count threads (as they do
    /// unless `CPUs=` says the number of cores), else the cores. Without GPUs on the
    /// node it means nothing and warns; more than the node's CPUs over all its GPUs is
    /// an error, as Slurm cannot keep them.
    fn restricted_cpus_per_gpu(
        &mut self,
        cores_per_gpu: u32,
        (sockets, cores, threads, cpus_given): (u32, u32, u32, bool),
        capacity: &sluice_core::Resources,
        names: &str,
        err: &dyn Fn(String) -> ConfError,
        (path, line): (&Path, usize),
    ) -> Result<u32, ConfError> {
        if cores_per_gpu == 0 {
            return Ok(0);
        }
        let gpus = self
            .cluster
            .gres
            .find("gpu", None)
            .map_or(0, |g| capacity.gres[g]);
        if gpus == 0 {
            self.warnings.push(format!(
                "{}:{line}: RestrictedCoresPerGPU={cores_per_gpu} but no GPUs on {names} (ignored)",
                path.display()
            ));
            return Ok(0);
        }
        let counts_threads = !cpus_given
            || Some(capacity.cpus)
                == sockets
                    .checked_mul(cores)
                    .and_then(|c| c.checked_mul(threads));
        let per_gpu = if counts_threads {
            cores_per_gpu.saturating_mul(threads.max(1))
        } else {
            cores_per_gpu
        };
        if per_gpu.saturating_mul(gpus) > capacity.cpus {
            return Err(err(format!(
                "RestrictedCoresPerGPU={cores_per_gpu}: {gpus} GPUs would keep {} CPUs, the node has {}",
                u64::from(per_gpu) * u64::from(gpus),
                capacity.cpus
            )));
        }
        Ok(per_gpu)
    }

    fn known_node_key(&mut self, key: &str, path: &Path, line: usize) {
        if !keys::NODE.contains(&key.to_ascii_lowercase().as_str()) {
            self.warnings.push(format!(
                "{}:{line}: unknown node key '{key}' (ignored)",
                path.display()
            ));
        }
    }

    fn partition_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = ConfError::at(path, line);
        for (k, _) in &kv[1..] {
            if !keys::PARTITION.contains(&k.to_ascii_lowercase().as_str()) {
                self.warnings.push(format!(
                    "{}:{line}: unknown partition key '{k}' (ignored)",
                    path.display()
                ));
            }
        }
        let name = kv[0].1.clone();
        if name.eq_ignore_ascii_case("default") {
            for (k, v) in &kv[1..] {
                self.part_defaults
                    .retain(|(dk, _)| !dk.eq_ignore_ascii_case(k));
                self.part_defaults.push((k.clone(), v.clone()));
            }
            return Ok(());
        }
        if name.is_empty() {
            return Err(err("PartitionName needs a name".into()));
        }
        if self.cluster.partition_by_name(&name).is_some() {
            return Err(err(format!("partition {name} is defined twice")));
        }
        let mut attrs = self.part_defaults.clone();
        for (k, v) in &kv[1..] {
            attrs.retain(|(dk, _)| !dk.eq_ignore_ascii_case(k));
            attrs.push((k.clone(), v.clone()));
        }
        let get = |key: &str| {
            attrs
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        };
        let nodes: Vec<NodeId> = match get("Nodes") {
            None | Some("") => Vec::new(),
            Some(v) if v.eq_ignore_ascii_case("ALL") => {
                (0..self.cluster.nodes.len() as u32).map(NodeId).collect()
            }
            Some(v) => {
                let mut ids = Vec::new();
                for host in hostlist::expand(v).map_err(|e| err(e.to_string()))? {
                    let id = self
                        .node_ids
                        .get(&host)
                        .ok_or_else(|| err(format!("partition {name}: unknown node {host}")))?;
                    ids.push(*id);
                }
                ids
            }
        };
        let mut part = Partition::new(name, nodes);
        let yes_no = |key: &str| -> Result<bool, ConfError> {
            match get(key).map(|s| s.to_ascii_uppercase()) {
                None => Ok(false),
                Some(s) if s == "YES" => Ok(true),
                Some(s) if s == "NO" => Ok(false),
                Some(s) => Err(err(format!("{key}: expected YES or NO, found '{s}'"))),
            }
        };
        part.is_default = yes_no("Default")?;
        let time = |key: &str| -> Result<Option<i64>, ConfError> {
            match get(key) {
                None => Ok(None),
                Some(v) => parse_time(v).map_err(|m| err(format!("{key}: {m}"))),
            }
        };
        part.max_time = time("MaxTime")?;
        part.default_time = time("DefaultTime")?;
        // `Priority=` (older Slurm) sets both the tier and the job factor.
        let u16_of = |key: &str, v: &str| {
            v.parse::<u16>()
                .map_err(|_| err(format!("{key}: expected an integer 0-65533, found '{v}'")))
        };
        if let Some(v) = get("Priority") {
            part.priority_tier = u16_of("Priority", v)?;
            part.priority_job_factor = part.priority_tier;
        }
        if let Some(v) = get("PriorityTier") {
            part.priority_tier = u16_of("PriorityTier", v)?;
        }
        if let Some(v) = get("PriorityJobFactor") {
            part.priority_job_factor = u16_of("PriorityJobFactor", v)?;
        }
        if let Some(v) = get("MaxNodes") {
            part.max_nodes = if v.eq_ignore_ascii_case("unlimited") {
                None
            } else {
                Some(
                    v.parse::<u32>()
                        .map_err(|_| err(format!("MaxNodes: expected an integer, found '{v}'")))?,
                )
            };
        }
        if let Some(v) = get("State") {
            part.state = match v.to_ascii_uppercase().as_str() {
                "UP" => PartitionState::Up,
                "DOWN" => PartitionState::Down,
                "DRAIN" => PartitionState::Drain,
                "INACTIVE" => PartitionState::Inactive,
                _ => {
                    return Err(err(format!(
                        "State: expected UP, DOWN, DRAIN or INACTIVE, found '{v}'"
                    )))
                }
            };
        }
        if let Some(v) = get("MinNodes") {
            part.min_nodes = v
                .parse::<u32>()
                .map_err(|_| err(format!("MinNodes: expected an integer, found '{v}'")))?;
        }
        if let Some(v) = get("OverSubscribe").or(get("Shared")) {
            part.oversubscribe =
                OverSubscribe::parse(v).map_err(|m| err(format!("OverSubscribe: {m}")))?;
        }
        part.exclusive_user = yes_no("ExclusiveUser")?;
        if let Some(v) = get("PreemptMode") {
            part.preempt_mode = Some(
                preempt_conf::parse_preempt_mode(v)
                    .map_err(|m| err(format!("PreemptMode: {m}")))?,
            );
        }
        if let Some(v) = get("GraceTime") {
            part.grace_time =
                preempt_conf::parse_grace_time(v).map_err(|m| err(format!("GraceTime: {m}")))?;
        }
        // Name lists: `ALL` (or nothing) for an Allow list means everyone.
        let list = |key: &str| -> Option<Vec<String>> {
            get(key)
                .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("ALL"))
                .map(|v| {
                    v.split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect()
                })
        };
        part.access = PartitionAccess {
            allow_accounts: list("AllowAccounts"),
            deny_accounts: list("DenyAccounts").unwrap_or_default(),
            allow_qos: list("AllowQos"),
            deny_qos: list("DenyQos").unwrap_or_default(),
            allow_groups: list("AllowGroups"),
        };
        part.qos = get("QOS")
            .filter(|v| !v.is_empty())
            .map(|v| v.to_ascii_lowercase());
        let weights = match get("TRESBillingWeights") {
            None | Some("") => None,
            Some(v) => Some((
                BillingWeights::parse(v).map_err(|m| err(format!("TRESBillingWeights: {m}")))?,
                path.to_path_buf(),
                line,
            )),
        };
        self.billing_weights.push(weights);
        self.cluster.partitions.push(part);
        Ok(())
    }

    fn finish(mut self, path: &Path) -> Result<SlurmConf, ConfError> {
        let gres_types: Vec<String> = self
            .settings
            .get("grestypes")
            .map(|(_, v)| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        for (name, file, line) in &self.gres_used {
            if !gres_types.iter().any(|g| g == name) {
                return Err(ConfError {
                    path: file.clone(),
                    line: *line,
                    message: format!("GRES '{name}' is not listed in GresTypes"),
                });
            }
        }
        if self
            .cluster
            .partitions
            .iter()
            .filter(|p| p.is_default)
            .count()
            > 1
        {
            return Err(ConfError {
                path: path.to_path_buf(),
                line: 0,
                message: "more than one partition has Default=YES".into(),
            });
        }
        let setting = |k: &str| self.settings.get(k).map(|(_, v)| v.as_str());
        let jwt = setting("authalttypes")
            .is_some_and(|v| crate::net_conf::parse_auth_alt_types(v) == Ok(true));
        let jwt_key = setting("authaltparameters")
            .and_then(|v| crate::net_conf::parse_auth_alt_parameters(v).ok().flatten());
        if jwt && jwt_key.is_none() {
            return Err(ConfError {
                path: path.to_path_buf(),
                line: 0,
                message: "AuthAltTypes=auth/jwt needs AuthAltParameters=jwt_key=/path/to/key"
                    .into(),
            });
        }
        let mut backfill = BackfillParams::default();
        if let Some((list, file, line)) = self.scheduler_parameters.take() {
            let unknown =
                apply_scheduler_parameters(&mut backfill, &list).map_err(|m| ConfError {
                    path: file.clone(),
                    line,
                    message: format!("SchedulerParameters: {m}"),
                })?;
            for u in unknown {
                self.warnings.push(format!(
                    "{}:{line}: unknown SchedulerParameters option '{u}' (ignored)",
                    file.display()
                ));
            }
        }
        let accounting_tres = accounting_storage_tres(
            self.settings
                .get("accountingstoragetres")
                .map(|(_, v)| v.as_str()),
        )
        .map_err(|message| ConfError {
            path: path.to_path_buf(),
            line: 0,
            message: format!("AccountingStorageTRES: {message}"),
        })?;
        // As slurmctld: a weight for a TRES that is not tracked is fatal.
        let mut billing_weights = Vec::with_capacity(self.billing_weights.len());
        for w in std::mem::take(&mut self.billing_weights) {
            billing_weights.push(match w {
                None => None,
                Some((w, file, line)) => {
                    if let Some((tres, _)) = w
                        .weights
                        .iter()
                        .find(|(t, _)| !accounting_tres.contains(t))
                    {
                        return Err(ConfError {
                            path: file,
                            line,
                            message: format!(
                                "TRESBillingWeights: '{tres}' is not a configured TRES type (see AccountingStorageTRES)"
                            ),
                        });
                    }
                    Some(w)
                }
            });
        }
        let setting = |k: &str| self.settings.get(k).map(|(_, v)| v.as_str());
        self.cluster.preempt = preempt_conf::config(
            setting("preempttype"),
            setting("preemptmode"),
            setting("preemptexempttime"),
            setting("schedulertimeslice"),
        );
        let max_tres = self.settings.get("priorityflags").is_some_and(|(_, v)| {
            v.split(',')
                .any(|f| f.trim().eq_ignore_ascii_case("MAX_TRES"))
        });
        let cluster_name = match self.settings.get("clustername") {
            Some((_, v)) => v.clone(),
            None => {
                self.warnings.push(format!(
                    "{}: no ClusterName; using 'cluster'",
                    path.display()
                ));
                "cluster".to_string()
            }
        };
        let scheduler_type = self
            .settings
            .get("schedulertype")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "sched/backfill".to_string());
        // `SelectTypeParameters=CR_LLN` spreads work over the least loaded nodes; any
        // other choice keeps Sluice's GPU-aware best fit (see `Placement`).
        if self
            .settings
            .get("selecttypeparameters")
            .is_some_and(|(_, v)| {
                v.split(',')
                    .any(|p| p.trim().eq_ignore_ascii_case("CR_LLN"))
            })
        {
            self.cluster.placement = sluice_core::Placement::LeastLoaded;
        }
        Ok(SlurmConf {
            cluster_name,
            cluster: self.cluster,
            backfill,
            scheduler_type,
            gres_types,
            settings: self.settings,
            setting_lines: self.setting_lines,
            cpu_spec_lists: self.cpu_spec_lists,
            node_layouts: self.node_layouts,
            node_reasons: self.node_reasons,
            warnings: self.warnings,
            accounting_tres,
            billing_weights,
            max_tres,
            controllers: self.controllers,
        })
    }
}

/// The CPU ids (abstract, numbered thread by thread within each core, core by core
/// within each socket) a node line keeps for the system, in order. `CoreSpecCount=N`
/// keeps N cores as slurmctld picks them: the last core of each socket from the last
/// socket down, then the core before, and so on. `CpuSpecList=0,1` keeps the cores
/// holding those CPUs. A kept core keeps all its threads (`threads`, when the node's
/// CPUs count threads). Neither: none.
///
/// Errors: both given, a malformed count or list, a CPU id beyond the node, nothing
/// left for jobs.
fn specialized_cpus(
    core_spec_count: Option<&str>,
    cpu_spec_list: Option<&str>,
    cpus: u32,
    (sockets, cores, threads): (u32, u32, u32),
) -> Result<Vec<u32>, String> {
    let mut kept_cores: Vec<u32> = match (core_spec_count, cpu_spec_list) {
        (Some(_), Some(_)) => {
            return Err("CoreSpecCount and CpuSpecList cannot both be set".into());
        }
        (None, None) => Vec::new(),
        (Some(count), None) => {
            let n = count.trim().parse::<u32>().map_err(|_| {
                format!("CoreSpecCount: expected a non-negative integer, found '{count}'")
            })?;
            if n.saturating_mul(threads) >= cpus || n >= sockets.saturating_mul(cores) {
                return Err(format!(
                    "CoreSpecCount={n} keeps all of the node's {cpus} CPUs: none left for jobs"
                ));
            }
            (0..cores)
                .rev()
                .flat_map(|core| {
                    (0..sockets)
                        .rev()
                        .map(move |socket| socket.saturating_mul(cores).saturating_add(core))
                })
                .take(n as usize)
                .collect()
        }
        (None, Some(list)) => {
            let bad =
                || format!("CpuSpecList: expected CPU ids such as 0,1 or 0-3, found '{list}'");
            let mut kept = Vec::new();
            for part in list.split(',').map(str::trim) {
                let (lo, hi) = part.split_once('-').unwrap_or((part, part));
                let (lo, hi) = match (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
                    (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
                    _ => return Err(bad()),
                };
                if hi >= cpus {
                    return Err(format!(
                        "CpuSpecList: CPU {hi} is beyond the node's {cpus} CPUs"
                    ));
                }
                kept.extend((lo..=hi).map(|id| id / threads));
            }
            kept
        }
    };
    kept_cores.sort_unstable();
    kept_cores.dedup();
    let ids: Vec<u32> = kept_cores
        .iter()
        .flat_map(|core| {
            let first = core.saturating_mul(threads);
            (first..first.saturating_add(threads)).filter(|&id| id < cpus)
        })
        .collect();
    if !ids.is_empty() && ids.len() as u32 >= cpus {
        return Err(format!(
            "CpuSpecList={} keeps all of the node's {cpus} CPUs: none left for jobs",
            cpu_spec_list.unwrap_or_default()
        ));
    }
    Ok(ids)
}

/// Sorted CPU ids as Slurm writes a CPU list: runs as ranges, `0-1,3`.
fn id_ranges(ids: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &id in ids {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == id => *hi = id,
            _ => runs.push((id, id)),
        }
    }
    runs.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The TRES Slurm always tracks, in its order; `AccountingStorageTRES` can only add to
/// them.
pub const DEFAULT_TRES: &[&str] = &[
    "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages",
];

/// TRES types that come with a name (`gres/gpu`, `license/matlab`, `bb/cray`,
/// `fs/lustre`, `ic/ofed`), and those that never do.
const NAMED_TRES: &[&str] = &["gres", "license", "bb", "fs", "ic"];
const PLAIN_TRES: &[&str] = &["cpu", "mem", "energy", "node", "billing", "vmem", "pages"];

/// A TRES name in its canonical spelling: the type lower-cased (`GRES/gpu:a100` is
/// `gres/gpu:a100`, `Mem` is `mem`), the name as written.
///
/// Errors: an unknown type, a named type without a name, a name on a plain type.
pub fn canonical_tres(item: &str) -> Result<String, String> {
    let item = item.trim();
    let valid = match item.split_once('/') {
        Some((kind, name)) => {
            let kind = kind.to_ascii_lowercase();
            (NAMED_TRES.contains(&kind.as_str()) && !name.is_empty())
                .then(|| format!("{kind}/{name}"))
        }
        None => {
            let kind = item.to_ascii_lowercase();
            PLAIN_TRES.contains(&kind.as_str()).then_some(kind)
        }
    };
    valid.ok_or_else(|| format!("'{item}' is not a valid TRES"))
}

/// The TRES tracked under an `AccountingStorageTRES` value (`None`: not set):
/// [`DEFAULT_TRES`], then each listed one not already there, canonically spelled.
///
/// Errors: an entry that is not a TRES (see [`canonical_tres`]).
pub fn accounting_storage_tres(value: Option<&str>) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = DEFAULT_TRES.iter().map(|t| t.to_string()).collect();
    for item in value
        .unwrap_or("")
        .split(',')
        .filter(|i| !i.trim().is_empty())
    {
        let t = canonical_tres(item)?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// A partition's `TRESBillingWeights` (slurm.conf(5)): what one unit of each TRES
/// costs, as `(TRES, weight)` in the order written. TRES are spelled as
/// [`canonical_tres`] gives them; a weight is per CPU, per MiB of memory (or burst
/// buffer), per node or per GRES unit, with a unit suffix already applied
/// (`Mem=0.25G` is 0.25 per GiB, kept as 0.25/1024 per MiB).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BillingWeights {
    /// `(TRES, weight per unit)`.
    pub weights: Vec<(String, f64)>,
}

impl BillingWeights {
    /// Parses `CPU=1.0,Mem=0.25G,GRES/gpu=2.0`. A weight may end in `K`, `M`, `G`, `T`
    /// or `P`: it is then per that many of the TRES's base unit, as Slurm reads it (the
    /// base of memory and burst buffers is MiB, so `Mem=2G` is 2 per GiB and a `K` or
    /// `M` there changes nothing; for other TRES `K` is 1024 units). Negative weights
    /// are allowed.
    ///
    /// Errors: an entry without `=`, a TRES that is not one, a weight that is not a
    /// number, an unknown suffix.
    pub fn parse(value: &str) -> Result<Self, String> {
        let mut weights = Vec::new();
        for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (tres, w) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not TRES=weight"))?;
            let tres = canonical_tres(tres)?;
            let bad = || format!("'{item}': the weight is not a number");
            let w = w.trim();
            // The number, then an optional unit (strtod's reading: `1e3` is a number).
            let mut end = 0;
            let bytes = w.as_bytes();
            while end < bytes.len() {
                let c = bytes[end];
                let exponent = (c == b'e' || c == b'E')
                    && bytes
                        .get(end + 1)
                        .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
                if c.is_ascii_digit() || c == b'.' || exponent {
                    end += if exponent { 2 } else { 1 };
                } else if (c == b'-' || c == b'+') && end == 0 {
                    end += 1;
                } else {
                    break;
                }
            }
            let mut weight: f64 = w[..end].parse().map_err(|_| bad())?;
            let unit = &w[end..];
            if !unit.is_empty() {
                let power = match unit.to_ascii_uppercase().as_str() {
                    "K" | "KB" => 1,
                    "M" | "MB" => 2,
                    "G" | "GB" => 3,
                    "T" | "TB" => 4,
                    "P" | "PB" => 5,
                    _ => return Err(format!("'{item}': unknown unit '{unit}' (K, M, G, T or P)")),
                };
                // Memory and burst buffers count MiB: a unit at or below it changes
                // nothing.
                let base = if tres == "mem" || tres.starts_with("bb/") {
                    2
                } else {
                    0
                };
                if power > base {
                    weight /= 1024f64.powi(power - base);
                }
            }
            weights.push((tres, weight));
        }
        Ok(BillingWeights { weights })
    }

    /// The billable TRES of an allocation or request: `counts` are `(TRES, count)` in
    /// Slurm's TRES order (memory in MiB); TRES without a weight cost nothing. The sum
    /// of each count times its weight, or with `max_tres` (`PriorityFlags=MAX_TRES`) the
    /// largest such product among CPUs, memory, nodes and GRES plus the sum of the
    /// others (licenses, burst buffers). Slurm computes this in floating point and
    /// keeps the integer part (6.75 bills 6); a negative total bills 0.
    pub fn billing(&self, counts: &[(String, u64)], max_tres: bool) -> u64 {
        let (mut per_node, mut global) = (0.0f64, 0.0f64);
        for (tres, count) in counts {
            let Some((_, w)) = self.weights.iter().find(|(t, _)| t == tres) else {
                continue;
            };
            let value = *count as f64 * w;
            let node_tres =
                matches!(tres.as_str(), "cpu" | "mem" | "node") || tres.starts_with("gres/");
            if max_tres && node_tres {
                per_node = per_node.max(value);
            } else {
                global += value;
            }
        }
        let total = per_node + global;
        if total.is_nan() || total <= 0.0 {
            0
        } else {
            total as u64
        }
    }
}

/// Parses a node's `Gres=` value: `gpu:rtxpro6000:8`, `gpu:8`, `gpu`,
/// `gpu:a100:4(S:0-1),shard:16`. Counts may carry a K, M or G multiplier.
/// Returns `(name, type, count)` triples.
pub fn parse_node_gres(v: &str) -> Result<Vec<(String, Option<String>, u32)>, String> {
    let mut out = Vec::new();
    for item in split_outside_parens(v) {
        let item = match item.find('(') {
            Some(p) => &item[..p],
            None => item,
        };
        let parts: Vec<&str> = item.split(':').collect();
        let bad = || format!("Gres: cannot parse '{item}' (expected name[:type][:count])");
        let count = |s: &str| -> Result<u32, String> {
            let (digits, mult) = match s.chars().last() {
                Some('k' | 'K') => (&s[..s.len() - 1], 1024),
                Some('m' | 'M') => (&s[..s.len() - 1], 1024 * 1024),
                Some('g' | 'G') => (&s[..s.len() - 1], 1024 * 1024 * 1024),
                _ => (s, 1),
            };
            digits
                .parse::<u32>()
                .ok()
                .and_then(|n| n.checked_mul(mult))
                .ok_or_else(bad)
        };
        let is_count = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_digit());
        let (name, gtype, n) = match parts.as_slice() {
            [name] => (*name, None, 1),
            [name, x] if is_count(x) => (*name, None, count(x)?),
            [name, t] => (*name, Some(*t), 1),
            [name, t, c] => (*name, Some(*t), count(c)?),
            _ => return Err(bad()),
        };
        if name.is_empty() || gtype == Some("") {
            return Err(bad());
        }
        out.push((name.to_string(), gtype.map(str::to_string), n));
    }
    Ok(out)
}

fn split_outside_parens(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in v.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(v[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(v[start..].trim());
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// What `AccountingStorageEnforce` asks the controller to check at submission and while
/// scheduling. Slurm's words: `associations`, `limits` (implies `associations`), `qos`
/// (implies `associations`), `safe` (implies `associations` and `limits`), `wckeys`
/// (implies `associations`), `nojobs` (implies `nosteps`), `nosteps`, `all` (all but
/// `nojobs` and `nosteps`), `none`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountingEnforce {
    /// A job's user must have an association with its account (and partition).
    pub associations: bool,
    /// Association and QOS limits are enforced.
    pub limits: bool,
    /// A job's QOS must be one its association may use.
    pub qos: bool,
    /// A job is started only if it can finish within `GrpTRESMins`-style limits.
    pub safe: bool,
    /// WCKeys are checked.
    pub wckeys: bool,
    /// Jobs are not recorded in accounting.
    pub nojobs: bool,
    /// Steps are not recorded in accounting.
    pub nosteps: bool,
}

impl AccountingEnforce {
    /// Parses `AccountingStorageEnforce`'s value (comma-separated words, any case).
    ///
    /// Errors: a word Slurm does not know.
    pub fn parse(value: &str) -> Result<AccountingEnforce, String> {
        let mut e = AccountingEnforce::default();
        for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "associations" | "assoc" | "associations_only" => e.associations = true,
                "limits" => {
                    e.associations = true;
                    e.limits = true;
                }
                "qos" => {
                    e.associations = true;
                    e.qos = true;
                }
                "safe" => {
                    e.associations = true;
                    e.limits = true;
                    e.safe = true;
                }
                "wckeys" => {
                    e.associations = true;
                    e.wckeys = true;
                }
                "nojobs" => {
                    e.nojobs = true;
                    e.nosteps = true;
                }
                "nosteps" => e.nosteps = true,
                "all" => {
                    e.associations = true;
                    e.limits = true;
                    e.qos = true;
                    e.safe = true;
                    e.wckeys = true;
                }
                "none" | "0" => e = AccountingEnforce::default(),
                _ => {
                    return Err(format!(
                        "unknown word '{word}' (associations, limits, nojobs, nosteps, qos, safe, wckeys, all or none)"
                    ))
                }
            }
        }
        Ok(e)
    }

    /// As `scontrol show config` prints it: `associations,limits,qos`, or `none`.
    pub fn words(&self) -> String {
        let words: Vec<&str> = [
            (self.associations, "associations"),
            (self.limits, "limits"),
            (self.nojobs, "nojobs"),
            (self.nosteps, "nosteps"),
            (self.qos, "qos"),
            (self.safe, "safe"),
            (self.wckeys, "wckeys"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, w)| w)
        .collect();
        if words.is_empty() {
            "none".to_string()
        } else {
            words.join(",")
        }
    }
}

#[cfg(test)]
mod enforce_tests {
    use super::*;

    #[test]
    fn accounting_storage_enforce_words_imply_as_slurm_documents() {
        let e = AccountingEnforce::parse("Limits").unwrap();
        assert!(e.associations && e.limits && !e.qos);
        let e = AccountingEnforce::parse("qos").unwrap();
        assert!(e.associations && e.qos && !e.limits);
        let e = AccountingEnforce::parse("safe,nojobs").unwrap();
        assert!(e.associations && e.limits && e.safe && e.nojobs && e.nosteps);
        assert_eq!(
            AccountingEnforce::parse("all").unwrap().words(),
            "associations,limits,qos,safe,wckeys"
        );
        assert_eq!(
            AccountingEnforce::parse("associations,limits,qos")
                .unwrap()
                .words(),
            "associations,limits,qos"
        );
        assert_eq!(
            AccountingEnforce::parse("none").unwrap(),
            AccountingEnforce::default()
        );
        assert_eq!(
            AccountingEnforce::parse("").unwrap(),
            AccountingEnforce::default()
        );
        let e = super::parse_str(
            "AccountingStorageEnforce=associations,bogus\n",
            std::path::Path::new("s.conf"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:1: AccountingStorageEnforce: unknown word 'bogus' (associations, limits, nojobs, nosteps, qos, safe, wckeys, all or none)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = include_str!("../tests/data/seed-slurm.conf");

    #[test]
    fn the_seed_configuration_loads_verbatim() {
        let c = parse_str(SEED, Path::new("slurm.conf")).unwrap();
        assert_eq!(c.cluster_name, "kentino-lab");
        assert_eq!(c.warnings, Vec::<String>::new());
        let names: Vec<&str> = c.cluster.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node01", "node02", "node03", "node04"]);
        let n = &c.cluster.nodes[0];
        assert_eq!((n.capacity.cpus, n.capacity.mem_mib), (128, 1_024_000));
        let gpu = c.cluster.gres.find("gpu", None).unwrap();
        let typed = c.cluster.gres.find("gpu", Some("rtxpro6000")).unwrap();
        assert_eq!((n.capacity.gres[gpu], n.capacity.gres[typed]), (8, 8));
        let train = &c.cluster.partitions[0];
        assert_eq!(train.name, "train");
        assert!(train.is_default);
        assert_eq!(train.max_time, Some(48 * 3600));
        assert_eq!(train.nodes, [NodeId(0), NodeId(1), NodeId(2)]);
        let inter = &c.cluster.partitions[1];
        assert_eq!(
            (inter.name.as_str(), inter.priority_tier, inter.max_time),
            ("interactive", 10, Some(4 * 3600))
        );
        assert_eq!(inter.nodes, [NodeId(3)]);
        assert_eq!(c.get("PriorityDecayHalfLife"), Some("7-0"));
        assert_eq!(c.scheduler_type, "sched/backfill");
    }

    #[test]
    fn partition_policy_keys_are_read() {
        // As capture.sh in sluice-cli's tests/samples/limits/ configures them.
        let text = "ClusterName=x\nNodeName=n1 CPUs=2\n\
            PartitionName=a Nodes=n1 AllowAccounts=limb DenyQos=limq,low AllowGroups=root\n\
            PartitionName=b Nodes=n1 MinNodes=2 OverSubscribe=EXCLUSIVE ExclusiveUser=YES QOS=PartQ\n\
            PartitionName=c Nodes=n1 AllowAccounts=ALL Shared=FORCE:2\n";
        let c = parse_str(text, Path::new("slurm.conf")).unwrap();
        let [a, b, p] = &c.cluster.partitions[..] else {
            panic!("three partitions")
        };
        assert_eq!(a.access.allow_accounts, Some(vec!["limb".to_string()]));
        assert_eq!(a.access.deny_qos, ["limq", "low"]);
        assert_eq!(a.access.allow_groups, Some(vec!["root".to_string()]));
        assert_eq!(a.access.allow_qos, None);
        assert_eq!((b.min_nodes, b.exclusive_user), (2, true));
        assert_eq!(b.oversubscribe, OverSubscribe::Exclusive);
        assert_eq!(b.qos.as_deref(), Some("partq"));
        assert_eq!(p.access.allow_accounts, None);
        assert_eq!(p.oversubscribe, OverSubscribe::Force(2));
        let bad =
            "ClusterName=x\nNodeName=n1 CPUs=2\nPartitionName=d Nodes=n1 OverSubscribe=MAYBE\n";
        assert!(parse_str(bad, Path::new("slurm.conf")).is_err());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let text = "ClusterName=x\nNodeName=n1 CPUs=four\n";
        let e = parse_str(text, Path::new("/etc/slurm.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/etc/slurm.conf:2: CPUs: expected a non-negative integer, found 'four'"
        );
        let e = parse_str(
            "NodeName=n1\nPartitionName=p Nodes=n[1-2]\n",
            Path::new("s.conf"),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "s.conf:2: partition p: unknown node n2");
        let e = parse_str("NodeName=n1 Gres=gpu:2\n", Path::new("s.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:1: GRES 'gpu' is not listed in GresTypes"
        );
        let e = parse_str("PreemptMode=SUSPEND\n", Path::new("s.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:1: PreemptMode: SUSPEND requires GANG too (PreemptMode=SUSPEND,GANG)"
        );
        let e = parse_str(
            "NodeName=n1\nPartitionName=p Nodes=n1 GraceTime=soon\n",
            Path::new("s.conf"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:2: GraceTime: expected seconds as an integer, found 'soon'"
        );
        let c = parse_str(
            "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nPreemptExemptTime=00:01:00\nNodeName=n1\nPartitionName=p Nodes=n1 PreemptMode=CANCEL GraceTime=5\n",
            Path::new("s.conf"),
        )
        .unwrap();
        assert_eq!(
            c.cluster.preempt,
            sluice_core::PreemptConfig {
                kind: sluice_core::PreemptType::PartitionPrio,
                mode: sluice_core::PreemptMode::Requeue,
                exempt_time: 60,
                gang: false,
                time_slice: 0,
            }
        );
        assert_eq!(
            c.cluster.partitions[0].preempt_mode,
            Some(sluice_core::PreemptMode::Cancel)
        );
        assert_eq!(c.cluster.partitions[0].grace_time, 5);
        let e = parse_str("PartitionName=p MaxTime=forever\n", Path::new("s.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:1: MaxTime: invalid time specification 'forever'"
        );
    }

    #[test]
    fn sizes_past_their_integers_are_errors() {
        // Regressions (fuzz corpus): each multiplication overflowed and panicked.
        let cases = [
            (
                "NodeName=n1 Sockets=65536 CoresPerSocket=65536\n",
                "s.conf:1: Sockets x CoresPerSocket x ThreadsPerCore is too large",
            ),
            (
                "NodeName=n1 Boards=65536 SocketsPerBoard=65536 CPUs=4\n",
                "s.conf:1: Boards x SocketsPerBoard is too large",
            ),
            (
                "SchedulerParameters=bf_window=999999999999999999\n",
                "s.conf:1: SchedulerParameters: bf_window is too large, found '999999999999999999'",
            ),
        ];
        for (text, want) in cases {
            let e = parse_str(text, Path::new("s.conf")).unwrap_err();
            assert_eq!(e.to_string(), want, "{text}");
        }
    }

    #[test]
    fn many_nodes_load_in_linear_time() {
        // Regression (fuzz corpus): each name was looked up in the whole node list, so
        // one short hostlist of a million names took hours.
        let text = "NodeName=n[1-200000]\nPartitionName=p Nodes=n[1-200000]\n";
        let c = parse_str(text, Path::new("s.conf")).unwrap();
        assert_eq!(c.cluster.nodes.len(), 200_000);
        assert_eq!(c.cluster.nodes[199_999].name, "n200000");
        assert_eq!(c.cluster.partitions[0].nodes.len(), 200_000);
        assert_eq!(c.cluster.partitions[0].nodes[199_999], NodeId(199_999));
        let e = parse_str(
            "NodeName=n[1-200000]\nNodeName=n200000\n",
            Path::new("s.conf"),
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "s.conf:2: node n200000 is defined twice"
        );
    }

    #[test]
    fn unknown_keys_warn_and_defaults_apply() {
        let text = "ClusterName=x\nFrobnicate=1\nNodeName=DEFAULT CPUs=8 RealMemory=1000\nNodeName=a[1-2] Colour=blue\nNodeName=b1 CPUs=4\nPartitionName=DEFAULT MaxTime=1:00:00\nPartitionName=all Nodes=ALL Default=YES\nSchedulerParameters=bf_window=2880,bf_resolution=300,bf_continue,bf_max_job_test=50,bf_interval=10,whatever\n";
        let c = parse_str(text, Path::new("s.conf")).unwrap();
        assert_eq!(
            c.warnings,
            [
                "s.conf:2: unknown key 'Frobnicate' (ignored)",
                "s.conf:4: unknown node key 'Colour' (ignored)",
                "s.conf:8: unknown SchedulerParameters option 'whatever' (ignored)",
            ]
        );
        let cpus: Vec<u32> = c.cluster.nodes.iter().map(|n| n.capacity.cpus).collect();
        assert_eq!(cpus, [8, 8, 4]);
        assert_eq!(c.cluster.partitions[0].max_time, Some(3600));
        assert_eq!(c.cluster.partitions[0].nodes.len(), 3);
        assert_eq!(
            c.backfill,
            BackfillParams {
                window: 2880 * 60,
                resolution: 300,
                continue_pass: true,
                max_job_test: 50,
                interval: 10,
                ..BackfillParams::default()
            }
        );
    }

    #[test]
    fn include_continuation_and_comments() {
        let dir = std::env::temp_dir().join(format!("sluice-conf-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("nodes.conf"),
            "NodeName=n[1-3] \\\n   Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 # 16 CPUs\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("slurm.conf"),
            "ClusterName=c\ninclude nodes.conf\nPartitionName=p Nodes=n[1-3]\n",
        )
        .unwrap();
        let c = read(&dir.join("slurm.conf")).unwrap();
        assert_eq!(c.cluster.nodes.len(), 3);
        assert_eq!(c.cluster.nodes[2].capacity.cpus, 16);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn node_gres_forms() {
        assert_eq!(
            parse_node_gres("gpu:a100:4(S:0-1),gpu:v100:2,shard:16,mps:1K").unwrap(),
            vec![
                ("gpu".into(), Some("a100".into()), 4),
                ("gpu".into(), Some("v100".into()), 2),
                ("shard".into(), None, 16),
                ("mps".into(), None, 1024),
            ]
        );
        assert_eq!(
            parse_node_gres("gpu").unwrap(),
            vec![("gpu".into(), None, 1)]
        );
        assert!(parse_node_gres("gpu:a:b:c").is_err());
        assert!(parse_node_gres("gpu:a100:x").is_err());
    }

    #[test]
    fn restricted_cores_per_gpu_become_processors_kept_per_gpu() {
        let kept = |text: &str| -> Vec<u32> {
            let c = parse_str(text, Path::new("slurm.conf")).unwrap();
            assert_eq!(c.warnings, Vec::<String>::new());
            c.cluster
                .nodes
                .iter()
                .map(|n| n.restricted_cpus_per_gpu)
                .collect()
        };
        assert_eq!(
            kept(
                "ClusterName=c\nGresTypes=gpu\n\
                 NodeName=g1 CPUs=12 Gres=gpu:4 RestrictedCoresPerGPU=2\n\
                 NodeName=g2 CPUs=12 Gres=gpu:4\n"
            ),
            [2, 0]
        );
        // Cores of two threads each: 2 cores are 4 CPUs; unless CPUs= counts cores.
        assert_eq!(
            kept(
                "ClusterName=c\nGresTypes=gpu\n\
                 NodeName=DEFAULT Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 Gres=gpu:a100:4\n\
                 NodeName=h1 RestrictedCoresPerGPU=2\n\
                 NodeName=h2 CPUs=32 RestrictedCoresPerGPU=2\n\
                 NodeName=h3 CPUs=16 RestrictedCoresPerGPU=2\n"
            ),
            [4, 4, 2]
        );
        // No GPUs: nothing kept, and a warning.
        let c = parse_str(
            "ClusterName=c\nNodeName=c1 CPUs=8 RestrictedCoresPerGPU=2\n",
            Path::new("slurm.conf"),
        )
        .unwrap();
        assert_eq!(c.cluster.nodes[0].restricted_cpus_per_gpu, 0);
        assert_eq!(
            c.warnings,
            ["slurm.conf:2: RestrictedCoresPerGPU=2 but no GPUs on c1 (ignored)"]
        );
        // More than the node has, or not a number: errors at the line.
        let e = parse_str(
            "ClusterName=c\nGresTypes=gpu\nNodeName=g1 CPUs=6 Gres=gpu:4 RestrictedCoresPerGPU=2\n",
            Path::new("slurm.conf"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "slurm.conf:3: RestrictedCoresPerGPU=2: 4 GPUs would keep 8 CPUs, the node has 6"
        );
        let e = parse_str(
            "ClusterName=c\nGresTypes=gpu\nNodeName=g1 CPUs=6 Gres=gpu:4 RestrictedCoresPerGPU=x\n",
            Path::new("slurm.conf"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "slurm.conf:3: RestrictedCoresPerGPU: expected a non-negative integer, found 'x'"
        );
    }
}

#[cfg(test)]
mod gres_count_tests {
    use std::path::Path;

    #[test]
    fn gres_counts_that_overflow_are_errors_with_file_and_line() {
        for text in [
            "GresTypes=gpu\nNodeName=n1 Gres=gpu:2G,gpu:2G\n",
            "GresTypes=gpu\nNodeName=n1 Gres=gpu:a:2G,gpu:b:2G\n",
        ] {
            let e = super::parse_str(text, Path::new("slurm.conf")).unwrap_err();
            assert_eq!(e.to_string(), "slurm.conf:2: Gres=gpu count is too large");
        }
    }
}

/// Billing as real Slurm 22.05.8 computed it (`scontrol show job`'s `TRES=` for jobs
/// on partitions with these weights; see the exact values in each test).
#[cfg(test)]
mod billing_tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> Vec<(String, u64)> {
        pairs.iter().map(|(t, n)| (t.to_string(), *n)).collect()
    }

    fn bill(weights: &str, pairs: &[(&str, u64)], max_tres: bool) -> u64 {
        BillingWeights::parse(weights)
            .unwrap()
            .billing(&counts(pairs), max_tres)
    }

    const DEBUG: &str = "CPU=1.0,Mem=0.25G,GRES/gpu=2.0";
    const TYPED: &str = "CPU=0.5,Mem=0.001,GRES/gpu:a100=3.3";
    const PLAIN: &str = "CPU=1,Node=5.5,Mem=2K";

    #[test]
    fn weights_parse_with_their_units() {
        let w = BillingWeights::parse(DEBUG).unwrap();
        assert_eq!(
            w.weights,
            [
                ("cpu".to_string(), 1.0),
                ("mem".to_string(), 0.25 / 1024.0),
                ("gres/gpu".to_string(), 2.0),
            ]
        );
        // A memory weight's K or M is at or below its MiB: no change. Other TRES
        // count units: K is 1024 of them.
        let w = BillingWeights::parse("Mem=2K,mem=3M,CPU=1K,Node=-1,License/x=1e1").unwrap();
        assert_eq!(
            w.weights,
            [
                ("mem".to_string(), 2.0),
                ("mem".to_string(), 3.0),
                ("cpu".to_string(), 1.0 / 1024.0),
                ("node".to_string(), -1.0),
                ("license/x".to_string(), 10.0),
            ]
        );
        for bad in ["CPU", "CPU=abc", "Mem=1X", "Frob=1", "GRES=1", "CPU/x=1"] {
            assert!(BillingWeights::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn billing_is_the_truncated_sum_of_weighted_tres() {
        // The man page's example: 1 CPU and 8 GB bill 1 + 8 * 0.25 = 3.
        assert_eq!(
            bill(DEBUG, &[("cpu", 1), ("mem", 8192), ("node", 1)], false),
            3
        );
        // 2 + 3 * 0.25 + 2 * 2 = 6.75: Slurm bills 6.
        let two_a100 = [
            ("cpu", 2),
            ("mem", 3072),
            ("node", 1),
            ("gres/gpu", 2),
            ("gres/gpu:a100", 2),
        ];
        assert_eq!(bill(DEBUG, &two_a100, false), 6);
        // 1 + 1500/1024 * 0.25 + 2 = 3.37: 3.
        let one_gpu = [("cpu", 1), ("mem", 1500), ("node", 1), ("gres/gpu", 1)];
        assert_eq!(bill(DEBUG, &one_gpu, false), 3);
        // Only the typed GPUs have a weight here: 0.5 + 1.024 + 3.3 = 4.824: 4.
        let one_a100 = [
            ("cpu", 1),
            ("mem", 1024),
            ("node", 1),
            ("gres/gpu", 1),
            ("gres/gpu:a100", 1),
        ];
        assert_eq!(bill(TYPED, &one_a100, false), 4);
        // A whole node: 1 + 24.105 + 13.2 = 38.305: 38.
        let node = [
            ("cpu", 2),
            ("mem", 24105),
            ("node", 1),
            ("gres/gpu:a100", 4),
        ];
        assert_eq!(bill(TYPED, &node, false), 38);
        // 2 + 5.5 + 100 * 2 = 207.5: 207.
        assert_eq!(
            bill(PLAIN, &[("cpu", 2), ("mem", 100), ("node", 1)], false),
            207
        );
        // Unweighted TRES cost nothing; a negative total bills nothing.
        assert_eq!(
            bill("GRES/gpu=2", &[("cpu", 64), ("gres/gpu", 3)], false),
            6
        );
        assert_eq!(bill("CPU=-1", &[("cpu", 4)], false), 0);
    }

    #[test]
    fn max_tres_bills_the_largest_weighted_tres_of_the_job() {
        // The man page's example: MAX(1 * 1.0, 8 * 0.25) = 2.
        assert_eq!(
            bill(DEBUG, &[("cpu", 1), ("mem", 8192), ("node", 1)], true),
            2
        );
        let two_a100 = [
            ("cpu", 2),
            ("mem", 3072),
            ("node", 1),
            ("gres/gpu", 2),
            ("gres/gpu:a100", 2),
        ];
        assert_eq!(bill(DEBUG, &two_a100, true), 4);
        let one_a100 = [
            ("cpu", 1),
            ("mem", 1024),
            ("node", 1),
            ("gres/gpu", 1),
            ("gres/gpu:a100", 1),
        ];
        assert_eq!(bill(TYPED, &one_a100, true), 3);
        assert_eq!(
            bill(TYPED, &[("cpu", 2), ("mem", 10240), ("node", 1)], true),
            10
        );
        // Nodes are among the per-node TRES: MAX(2, 200, 5.5) and MAX(2, 4, 5.5).
        assert_eq!(
            bill(PLAIN, &[("cpu", 2), ("mem", 100), ("node", 1)], true),
            200
        );
        assert_eq!(bill(PLAIN, &[("cpu", 2), ("mem", 2), ("node", 1)], true), 5);
        // Over the job's totals, not one node's: two nodes of 2 CPUs and one GPU each
        // with GRES/gpu=3: MAX(4, 0.5, 6) = 6.
        let wide = [
            ("cpu", 4),
            ("mem", 2048),
            ("node", 2),
            ("gres/gpu", 2),
            ("gres/gpu:a100", 2),
        ];
        assert_eq!(bill("CPU=1.0,Mem=0.25G,GRES/gpu=3.0", &wide, true), 6);
        // Licenses are global: added to the maximum.
        let lic = [("cpu", 4), ("license/x", 2)];
        assert_eq!(bill("CPU=1,License/x=10", &lic, true), 24);
    }

    #[test]
    fn settings_name_the_tracked_tres_and_weights_must_be_tracked() {
        let conf = |extra: &str, weights: &str| {
            parse_str(
                &format!(
                    "ClusterName=c\nGresTypes=gpu\n{extra}\nNodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:a100:4\n\
                     PartitionName=DEFAULT TRESBillingWeights=\"CPU=2\"\n\
                     PartitionName=p Nodes=g1 {weights}\nPartitionName=q Nodes=g1\n"
                ),
                Path::new("s.conf"),
            )
        };
        let c = conf(
            "AccountingStorageTRES=GRES/gpu,gres/gpu:a100,cpu\nPriorityFlags=FAIR_TREE,max_tres",
            "TRESBillingWeights=\"CPU=1.0,Mem=0.25G,GRES/gpu:a100=2.0\"",
        )
        .unwrap();
        assert_eq!(
            c.accounting_tres,
            [
                "cpu",
                "mem",
                "energy",
                "node",
                "billing",
                "fs/disk",
                "vmem",
                "pages",
                "gres/gpu",
                "gres/gpu:a100"
            ]
        );
        assert!(c.max_tres);
        let names = |w: &Option<BillingWeights>| -> Vec<String> {
            w.iter()
                .flat_map(|w| w.weights.iter().map(|(t, _)| t.clone()))
                .collect()
        };
        assert_eq!(
            names(&c.billing_weights[0]),
            ["cpu", "mem", "gres/gpu:a100"]
        );
        // `PartitionName=DEFAULT`'s weights for the partition without its own.
        assert_eq!(names(&c.billing_weights[1]), ["cpu"]);

        let c = conf("", "").unwrap();
        assert_eq!(c.accounting_tres, DEFAULT_TRES);
        assert!(!c.max_tres);
        // As slurmctld: weights for a TRES that is not tracked are fatal.
        let e = conf("", "TRESBillingWeights=CPU=1,GRES/gpu=2").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:6: TRESBillingWeights: 'gres/gpu' is not a configured TRES type (see AccountingStorageTRES)"
        );
        let e = conf("", "TRESBillingWeights=CPU=x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:6: TRESBillingWeights: 'CPU=x': the weight is not a number"
        );
        let e = conf("AccountingStorageTRES=gres", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.conf:3: AccountingStorageTRES: 'gres' is not a valid TRES"
        );
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// (CPUs, sockets, cores per socket, threads per core, warned) of a node line.
    fn layout(node: &str) -> (u32, u32, u32, u32, bool) {
        let c = parse_str(
            &format!("ClusterName=c\nNodeName=n1 {node}\nPartitionName=p Nodes=n1\n"),
            Path::new("slurm.conf"),
        )
        .unwrap();
        let (s, co, t) = c.node_layouts[0];
        let warned = c.warnings.iter().any(|w| w.contains("match no Sockets"));
        (c.cluster.nodes[0].capacity.cpus, s, co, t, warned)
    }

    #[test]
    fn what_a_node_line_leaves_out_is_inferred_as_slurm_infers_it() {
        // As real Slurm 22.05 shows these nodes (differential scenario 230).
        assert_eq!(layout("CPUs=4"), (4, 4, 1, 1, false));
        assert_eq!(layout("CPUs=8 CoresPerSocket=2"), (8, 4, 2, 1, false));
        assert_eq!(
            layout("CPUs=8 CoresPerSocket=2 ThreadsPerCore=2"),
            (8, 2, 2, 2, false)
        );
        // CPUs counting cores, not threads, fit too.
        assert_eq!(
            layout("CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=2"),
            (4, 1, 4, 2, false)
        );
        assert_eq!(layout("Sockets=2 CoresPerSocket=4"), (8, 2, 4, 1, false));
        assert_eq!(
            layout("Boards=2 SocketsPerBoard=2 CoresPerSocket=2"),
            (8, 4, 2, 1, false)
        );
        assert_eq!(layout(""), (1, 1, 1, 1, false));
        // CPUs that fit no layout of the line are reset to the layout's, with a warning.
        assert_eq!(layout("CPUs=8 Sockets=2"), (2, 2, 1, 1, true));
        assert_eq!(layout("CPUs=6 CoresPerSocket=4"), (4, 1, 4, 1, true));
    }
}

#[cfg(test)]
mod core_spec_tests {
    use super::*;

    #[test]
    fn specialized_cores_are_kept_from_jobs() {
        let conf = |node: &str| {
            parse_str(
                &format!("ClusterName=c\nNodeName=n1 {node}\nPartitionName=p Nodes=n1\n"),
                Path::new("slurm.conf"),
            )
        };
        // (what jobs can have, what the system keeps)
        let kept = |node: &str| {
            let c = conf(node).unwrap();
            let n = &c.cluster.nodes[0];
            (n.capacity.cpus, n.spec_cpus)
        };
        assert_eq!(kept("CPUs=4"), (4, 0));
        assert_eq!(kept("CPUs=4 CoreSpecCount=1"), (3, 1));
        assert_eq!(kept("CPUs=4 CpuSpecList=0,1"), (2, 2));
        assert_eq!(kept("CPUs=4 CpuSpecList=1-3"), (1, 3));
        // Two threads per core: a core keeps both; CPUs 0 and 1 are one core.
        let smt = "Sockets=1 CoresPerSocket=4 ThreadsPerCore=2";
        assert_eq!(kept(&format!("{smt} CoreSpecCount=1")), (6, 2));
        assert_eq!(kept(&format!("{smt} CpuSpecList=0,1")), (6, 2));
        assert_eq!(kept(&format!("{smt} CpuSpecList=1,2")), (4, 4));
        // Which: slurmctld's pick, the last core of each socket from the last socket.
        // A list over whole cores shows as written (real Slurm 22.05.8).
        let shown = |node: &str| conf(node).unwrap().cpu_spec_lists[0].clone();
        assert_eq!(shown("CPUs=4"), "");
        assert_eq!(shown("CPUs=4 CoreSpecCount=1"), "3");
        assert_eq!(shown("CPUs=4 CpuSpecList=0,1"), "0,1");
        assert_eq!(shown("Sockets=2 CoresPerSocket=2 CoreSpecCount=3"), "1-3");
        assert_eq!(shown(&format!("{smt} CoreSpecCount=1")), "6-7");
        assert_eq!(shown(&format!("{smt} CpuSpecList=2")), "2-3");
        for (node, message) in [
            (
                "CPUs=4 CoreSpecCount=4",
                "CoreSpecCount=4 keeps all of the node's 4 CPUs: none left for jobs",
            ),
            (
                "CPUs=4 CoreSpecCount=4000000000",
                "CoreSpecCount=4000000000 keeps all of the node's 4 CPUs: none left for jobs",
            ),
            (
                "CPUs=4 CpuSpecList=0-3",
                "CpuSpecList=0-3 keeps all of the node's 4 CPUs: none left for jobs",
            ),
            (
                "CPUs=4 CpuSpecList=4",
                "CpuSpecList: CPU 4 is beyond the node's 4 CPUs",
            ),
            (
                "CPUs=4 CpuSpecList=a",
                "CpuSpecList: expected CPU ids such as 0,1 or 0-3, found 'a'",
            ),
            (
                "CPUs=4 CoreSpecCount=x",
                "CoreSpecCount: expected a non-negative integer, found 'x'",
            ),
            (
                "CPUs=4 CoreSpecCount=1 CpuSpecList=0",
                "CoreSpecCount and CpuSpecList cannot both be set",
            ),
        ] {
            let e = conf(node).unwrap_err();
            assert_eq!(e.to_string(), format!("slurm.conf:2: {message}"), "{node}");
        }
    }
}

#[cfg(test)]
mod node_reason_tests {
    use super::*;

    #[test]
    fn a_node_lines_reason_is_kept_for_each_of_its_nodes_quotes_and_all() {
        let conf = parse_str(
            "ClusterName=c\n\
             NodeName=r[1-2] CPUs=4 State=DRAIN Reason=\"maintenance window\"\n\
             NodeName=r3 CPUs=4 State=DOWN Reason=cabling\n\
             NodeName=r4 CPUs=4 Reason=\n\
             NodeName=r5 CPUs=4\n\
             PartitionName=p Nodes=ALL\n",
            Path::new("slurm.conf"),
        )
        .unwrap();
        let reasons: Vec<(&str, &str)> = conf
            .node_reasons
            .iter()
            .map(|(n, r)| (n.as_str(), r.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                ("r1", "maintenance window"),
                ("r2", "maintenance window"),
                ("r3", "cabling")
            ]
        );
        let states: Vec<NodeState> = conf.cluster.nodes.iter().map(|n| n.state).collect();
        assert_eq!(
            states,
            [
                NodeState::Drain,
                NodeState::Drain,
                NodeState::Down,
                NodeState::Up,
                NodeState::Up
            ]
        );
    }
}
