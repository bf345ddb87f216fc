//! The controller's view of the cluster's configuration.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use sluice_conf::acct_gather_conf::{Frequency, GatherConf, GatherType};
use sluice_conf::cgroup_conf;
use sluice_conf::cohorts_conf::{self, CohortsConf};
use sluice_conf::gres_conf::{self, AutoDetect, GresConf, GresDevice, GresLayout};
use sluice_conf::log_conf::LogConf;
use sluice_conf::net_conf::NetConf;
use sluice_conf::priority_conf::{priority_settings, PrioritySettings};
use sluice_conf::site_conf::{self, SiteConf};
use sluice_conf::slurm_conf::{AccountingEnforce, BillingWeights, SlurmConf, DEFAULT_TRES};
use sluice_conf::ConfError;
use sluice_core::job::{JobRequest, MemRequest, NodeAlloc};
use sluice_core::tres::MAX_GRES;
use sluice_core::{BackfillParams, Cluster, Node, NodeId, Partition, PartitionId};

use crate::gpu_detect::{self, DetectedGpu, GpuProvider};

/// Settings the controller acts on, with Slurm's defaults.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// `ClusterName`.
    pub cluster_name: String,
    /// Nodes and partitions.
    pub cluster: Cluster,
    /// Backfill parameters (`SchedulerParameters`).
    pub backfill: BackfillParams,
    /// `SchedulerType` is `sched/builtin` (FIFO without backfill).
    pub fifo: bool,
    /// `KillWait`: seconds between SIGTERM and SIGKILL (default 30).
    pub kill_wait: i64,
    /// `JobRequeue`: whether a job that says neither `--requeue` nor `--no-requeue`
    /// may be requeued (default 1: yes).
    pub job_requeue: bool,
    /// `MinJobAge`: seconds a finished job stays visible to squeue (default 300).
    pub min_job_age: i64,
    /// `MaxArraySize` (default 1001): array indices must be below it.
    pub max_array_size: u32,
    /// `MaxJobCount` (default 10000): most jobs held at once.
    pub max_job_count: usize,
    /// `FirstJobId` (default 1).
    pub first_job_id: u64,
    /// Per node: sockets, cores per socket, threads per core (for `scontrol show node`).
    pub topology: Vec<(u32, u32, u32)>,
    /// Per node: the `Gres=` string as configured.
    pub node_gres: Vec<String>,
    /// Per node: the CPUs kept for the system as `scontrol show node` shows them
    /// (`CPUSpecList=`), empty when none (see `Node::spec_cpus`).
    pub cpu_spec_lists: Vec<String>,
    /// Per node: its GRES devices (name, type, files, cores, links), slurm.conf's
    /// `Gres=` merged with gres.conf by [`gres_conf::resolve`]; without a gres.conf,
    /// count-only entries from slurm.conf.
    pub gres_devices: Vec<Vec<GresDevice>>,
    /// `key = value` lines for `scontrol show config`.
    pub settings: Vec<(String, String)>,
    /// Per partition: `DefCpuPerGPU` and `DefMemPerGPU`, its own or the global ones.
    pub gpu_defaults: Vec<GpuDefaults>,
    /// Per partition: memory a job that asks none gets, the partition's own
    /// `DefMemPerCPU` (per allocated CPU) or `DefMemPerNode` (per node), else the global
    /// ones, in MiB; `None` without any (the job then has no memory reserved or
    /// limited). `DefMemPerGPU` wins for GPU jobs.
    pub def_mem: Vec<Option<sluice_core::MemRequest>>,
    /// cgroup.conf's `ConstrainDevices` (default no): jobs may open only the GRES
    /// device files of the devices they were allocated.
    pub constrain_devices: bool,
    /// cohorts.conf: accounts that borrow each other's unused quota (beyond Slurm; see
    /// [`sluice_conf::cohorts_conf`]); empty without the file.
    pub cohorts: CohortsConf,
    /// sluice.conf: Sluice's own settings (the audit trail's retention; see
    /// [`sluice_conf::site_conf`]); defaults without the file.
    pub site: SiteConf,
    /// The TRES accounting tracks: Slurm's defaults, then `AccountingStorageTRES`'s
    /// additions. A GRES appears in jobs' TRES (`AllocTRES`, `TRES=`) only if listed.
    pub accounting_tres: Vec<String>,
    /// Per partition: its `TRESBillingWeights`; `None` bills the CPUs.
    pub billing_weights: Vec<Option<BillingWeights>>,
    /// `PriorityFlags=MAX_TRES`: billing is the largest weighted TRES, not the sum.
    pub max_tres: bool,
    /// `AccountingStorageEnforce`: what submissions are checked against the accounts
    /// `sacctmgr` manages (see [`crate::accounts`]).
    pub enforce: AccountingEnforce,
    /// `EnforcePartLimits=ALL|ANY|YES`: jobs over their partition's limits are refused
    /// at submission (Slurm's default `NO` leaves them pending).
    pub enforce_part_limits: bool,
    /// `EnforcePartLimits=ALL`: a job of several partitions is refused when one of them
    /// would refuse it (`ANY`/`YES`: only when all of them would).
    pub enforce_part_limits_all: bool,
    /// `PriorityType` and the multifactor settings (`PriorityWeight*`, decay, ...).
    pub priority: PrioritySettings,
    /// `PrivateData`: what users may not see of each other's work.
    pub private_data: PrivateData,
    /// `MetricsType`, `MetricsAuthUsers`, `MetricsParameters`: whether and to whom the
    /// controller serves Slurm's metrics endpoints (`GET /metrics/...`).
    pub metrics: MetricsConf,
    /// `PriorityWeightTRES` as written (what `sprio -w` prints).
    pub priority_tres: String,
    /// Per node: `NodeAddr`, `NodeHostname` and `Port` as configured (what `scontrol
    /// show node` prints; Sluice's agents listen on local sockets, not there). Empty,
    /// or shorter than the node list, where not read from a file: the node's name.
    pub node_addresses: Vec<NodeAddress>,
    /// Per partition: its own `DefMemPerCPU` / `DefMemPerNode` (what `scontrol show
    /// partition` prints); empty, or `None`, where it sets none.
    pub own_def_mem: Vec<Option<sluice_core::MemRequest>>,
    /// `SlurmctldLogFile`, `SlurmdLogFile`, `SlurmctldDebug`, `SlurmdDebug`: where and
    /// how much the daemons log (the command that starts them installs the logger).
    pub logging: LogConf,
    /// `JobAcctGatherType` and `JobAcctGatherFrequency`: how the agents gather their
    /// jobs' usage.
    pub gather: GatherConf,
    /// Where the daemons of a cluster of several machines are and how callers
    /// authenticate (`SlurmctldHost`, ports, spool directories, `AuthType`).
    pub net: NetConf,
    /// The agents listen on their nodes' addresses (`NodeAddr`, `Port` or
    /// `SlurmdPort`), each on its own host (`slurmctld`); else on Unix sockets in the
    /// state directory, all on this host (`sluice up`). Chosen by the command that
    /// starts the controller, not by the file.
    pub agents_over_tcp: bool,
    /// Where services' stable addresses start (`http://HOST:PORT`): the controller's
    /// TCP listener, set by `server::run`. `None`: no TCP listener, no stable address.
    pub service_base: Option<String>,
    /// Nodes slurm.conf configures `State=FUTURE`: shown FUTURE, and taking no work,
    /// until their agent registers; then up (their configured state is UP).
    pub future_nodes: Vec<String>,
    /// The `Reason=` slurm.conf gives nodes, by node name (see
    /// `sluice_conf::SlurmConf::node_reasons`).
    pub node_reasons: BTreeMap<String, String>,
    /// `MaxNodeCount`: how many nodes there may be in all, those of slurm.conf and
    /// those created (`scontrol create node`, agents that register themselves);
    /// 0: no limit.
    pub max_node_count: u32,
    /// Partitions slurm.conf gives `Nodes=ALL`: nodes created later join them too.
    pub all_nodes_partitions: Vec<String>,
}

/// A node's `NodeAddr`, `NodeHostname` and `Port` as slurm.conf gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAddress {
    /// `NodeAddr` (default: the host name).
    pub addr: String,
    /// `NodeHostname` (default: the node's name).
    pub hostname: String,
    /// `Port`, if set.
    pub port: Option<u16>,
}

/// slurm.conf's `PrivateData`: what a user who is not an operator may not see of other
/// users' work (Slurm's `slurm.conf(5)`; by default everything is visible). Sluice's
/// `explain` and `audit` show such users counts and totals instead of job ids and names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrivateData {
    /// `jobs`: other users' jobs.
    pub jobs: bool,
    /// `usage`: other users' usage (fair-share, limits).
    pub usage: bool,
    /// `users`: other users' records.
    pub users: bool,
    /// `accounts`: accounts the user is not in.
    pub accounts: bool,
}

impl PrivateData {
    /// Parses a comma-separated `PrivateData` value. Slurm's other words (`cloud`,
    /// `events`, `nodes`, `partitions`, `reservations`) are accepted and have no
    /// effect in Sluice.
    ///
    /// Errors: an unknown word, named.
    pub fn parse(v: &str) -> Result<PrivateData, String> {
        let mut p = PrivateData::default();
        for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "jobs" => p.jobs = true,
                "usage" => p.usage = true,
                "users" => p.users = true,
                "accounts" => p.accounts = true,
                "cloud" | "events" | "nodes" | "partitions" | "reservations" => {}
                _ => return Err(format!("PrivateData: unknown value '{word}'")),
            }
        }
        Ok(p)
    }
}

/// slurm.conf's metrics settings, as slurmctld reads them: `MetricsType` turns on the
/// OpenMetrics endpoints (`GET /metrics`, `/metrics/jobs`, `/metrics/nodes`,
/// `/metrics/partitions`, `/metrics/scheduler`, `/metrics/jobs-users-accts`), served on
/// the controller's own port; who may read them follows `MetricsAuthUsers`,
/// `PrivateData` and `MetricsParameters=ignore_private_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsConf {
    /// `MetricsType=metrics/openmetrics`.
    pub enabled: bool,
    /// Whether a request must say who makes it (Slurm's `metrics_auth`): set by
    /// `MetricsAuthUsers`, or by `PrivateData` unless `MetricsParameters` has
    /// `ignore_private_data` (and `MetricsAuthUsers` is unset). Without it anyone who
    /// reaches the port reads the metrics, with no credential.
    pub auth: bool,
    /// `MetricsAuthUsers`: the users (by name) who may read them besides root and the
    /// controller's own user (SlurmUser); `None` when unset (then only those two may,
    /// when `auth` holds).
    pub auth_users: Option<Vec<String>>,
}

/// The one metrics plugin Slurm has.
pub const OPENMETRICS: &str = "metrics/openmetrics";

impl MetricsConf {
    /// From the settings' values (`private_data`: `PrivateData` names anything), with
    /// warnings for `MetricsParameters` words Slurm does not know.
    ///
    /// Errors: a `MetricsType` other than `metrics/openmetrics` (slurmctld cannot load
    /// it and stops).
    pub fn parse(
        metrics_type: Option<&str>,
        auth_users: Option<&str>,
        parameters: Option<&str>,
        private_data: bool,
    ) -> Result<(MetricsConf, Vec<String>), String> {
        let enabled = match metrics_type.map(str::trim) {
            None | Some("") => false,
            Some(OPENMETRICS) => true,
            Some(other) => {
                return Err(format!(
                "MetricsType: cannot create metrics context for {other} (Sluice has {OPENMETRICS})"
            ))
            }
        };
        let auth_users: Option<Vec<String>> = auth_users.map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_string)
                .collect()
        });
        let mut warnings = Vec::new();
        let mut ignore_private_data = false;
        for word in parameters
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            if word.eq_ignore_ascii_case("ignore_private_data") {
                ignore_private_data = true;
            } else {
                warnings.push(format!(
                    "MetricsParameters: unknown parameter '{word}' ignored"
                ));
            }
        }
        let auth = auth_users.is_some() || (private_data && !ignore_private_data);
        Ok((
            MetricsConf {
                enabled,
                auth,
                auth_users,
            },
            warnings,
        ))
    }

    /// Whether user `name` may read the metrics, `operator` being root or the
    /// controller's own user (always allowed, as Slurm allows root and SlurmUser).
    pub fn allows(&self, operator: bool, name: Option<&str>) -> bool {
        if !self.auth || operator {
            return true;
        }
        match (&self.auth_users, name) {
            (Some(users), Some(name)) => users.iter().any(|u| u == name),
            _ => false,
        }
    }
}

/// TRES as accounting records them: `(TRES, count)`, memory in MiB (see
/// `JobRecord::tres_alloc`).
pub type TresList = Vec<(String, u64)>;

/// GPUs per node by type: per node, `(type, count)` (see
/// `JobRecord::gpu_types_per_node`).
pub type GpuTypes = Vec<Vec<(String, u32)>>;

/// What a GPU job gets when it does not say (Slurm's `DefCpuPerGPU`, `DefMemPerGPU`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuDefaults {
    /// CPUs per allocated GPU.
    pub cpus_per_gpu: Option<u32>,
    /// Memory per allocated GPU, MiB.
    pub mem_per_gpu_mib: Option<u64>,
}

impl GpuDefaults {
    /// From `DefCpuPerGPU` and `DefMemPerGPU` values (either may be absent); values
    /// that do not parse are left out (slurm.conf's checks report them).
    fn parse(cpus: Option<&str>, mem: Option<&str>) -> Self {
        GpuDefaults {
            cpus_per_gpu: cpus.and_then(|v| v.parse().ok()),
            mem_per_gpu_mib: mem.and_then(|v| sluice_conf::duration::parse_mem_mib(v).ok()),
        }
    }
}

/// The metrics settings of `conf` (see [`MetricsConf::parse`]).
fn metrics_conf(conf: &SlurmConf) -> Result<(MetricsConf, Vec<String>), String> {
    let private_data = conf
        .get("PrivateData")
        .is_some_and(|v| v.split(',').any(|w| !w.trim().is_empty()));
    MetricsConf::parse(
        conf.get("MetricsType"),
        conf.get("MetricsAuthUsers"),
        conf.get("MetricsParameters"),
        private_data,
    )
}

fn int(conf: &SlurmConf, key: &str, default: i64) -> i64 {
    conf.get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl ClusterConfig {
    /// How many cores node `i` keeps for the system (`CoreSpecCount=`): its kept CPUs
    /// over the threads each core schedules (all of them when its CPUs count threads).
    pub fn core_spec_count(&self, i: usize) -> u32 {
        let node = &self.cluster.nodes[i];
        let (sockets, cores, threads) = self.topology.get(i).copied().unwrap_or((1, 1, 1));
        let cpus = node.capacity.cpus + node.spec_cpus;
        let per_core = if sockets * cores >= cpus {
            1
        } else {
            threads.max(1)
        };
        node.spec_cpus / per_core
    }

    /// From a slurm.conf.
    pub fn from_slurm_conf(
        conf: &SlurmConf,
        text_of_nodes: &[(String, String, (u32, u32, u32))],
    ) -> Self {
        let topology = conf
            .cluster
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                text_of_nodes
                    .iter()
                    .find(|(name, _, _)| *name == n.name)
                    .map(|x| x.2)
                    .or_else(|| conf.node_layouts.get(i).copied())
                    .unwrap_or((1, n.capacity.cpus, 1))
            })
            .collect();
        let node_gres = conf
            .cluster
            .nodes
            .iter()
            .map(|n| {
                text_of_nodes
                    .iter()
                    .find(|(name, _, _)| *name == n.name)
                    .map(|x| x.1.clone())
                    .unwrap_or_default()
            })
            .collect();
        let mut settings: Vec<(String, String)> = conf
            .settings
            .values()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("AccountingStorageTRES"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // As `scontrol show config` prints it: every TRES tracked, defaults included.
        settings.push((
            "AccountingStorageTRES".into(),
            conf.accounting_tres.join(","),
        ));
        settings.sort();
        ClusterConfig {
            cluster_name: conf.cluster_name.clone(),
            cluster: conf.cluster.clone(),
            backfill: conf.backfill.clone(),
            fifo: conf.scheduler_type == "sched/builtin",
            kill_wait: int(conf, "KillWait", 30),
            job_requeue: int(conf, "JobRequeue", 1) != 0,
            min_job_age: int(conf, "MinJobAge", 300),
            max_array_size: int(conf, "MaxArraySize", 1001) as u32,
            max_job_count: int(conf, "MaxJobCount", 10_000) as usize,
            first_job_id: int(conf, "FirstJobId", 1).max(1) as u64,
            max_node_count: int(conf, "MaxNodeCount", 0).max(0) as u32,
            all_nodes_partitions: Vec::new(),
            topology,
            node_gres,
            cpu_spec_lists: conf.cpu_spec_lists.clone(),
            node_reasons: conf.node_reasons.clone(),
            gres_devices: GresLayout::from_slurm_conf(conf).nodes,
            settings,
            gpu_defaults: vec![
                GpuDefaults::parse(
                    conf.get("DefCpuPerGPU"),
                    conf.get("DefMemPerGPU")
                );
                conf.cluster.partitions.len()
            ],
            def_mem: vec![
                def_mem(conf.get("DefMemPerCPU"), conf.get("DefMemPerNode"));
                conf.cluster.partitions.len()
            ],
            constrain_devices: false,
            cohorts: CohortsConf::default(),
            site: SiteConf::default(),
            accounting_tres: conf.accounting_tres.clone(),
            billing_weights: conf.billing_weights.clone(),
            max_tres: conf.max_tres,
            enforce: conf
                .get("AccountingStorageEnforce")
                .and_then(|v| AccountingEnforce::parse(v).ok())
                .unwrap_or_default(),
            enforce_part_limits: conf.get("EnforcePartLimits").is_some_and(|v| {
                !["no", "down", "false", "0"]
                    .iter()
                    .any(|n| v.eq_ignore_ascii_case(n))
            }),
            enforce_part_limits_all: conf
                .get("EnforcePartLimits")
                .is_some_and(|v| v.eq_ignore_ascii_case("all")),
            // Checked by `read_detecting`, which refuses a malformed setting.
            priority: priority_settings(conf, &conf.cluster.gres).unwrap_or_default(),
            private_data: conf
                .get("PrivateData")
                .and_then(|v| PrivateData::parse(v).ok())
                .unwrap_or_default(),
            // Checked by `read_detecting`, which refuses an unknown MetricsType.
            metrics: metrics_conf(conf).map(|m| m.0).unwrap_or_default(),
            priority_tres: conf.get("PriorityWeightTRES").unwrap_or("").to_string(),
            node_addresses: Vec::new(),
            own_def_mem: Vec::new(),
            // Levels were checked by the parser, which refuses a malformed one.
            logging: LogConf::from_conf(conf).unwrap_or_default(),
            // Checked by `read_detecting`, which refuses an unknown type or frequency.
            gather: GatherConf::from_conf(conf).unwrap_or_default(),
            // So were these.
            net: NetConf::from_conf(conf).unwrap_or_default(),
            agents_over_tcp: false,
            service_base: None,
            future_nodes: Vec::new(),
        }
    }

    /// Reads a slurm.conf file, and the gres.conf and cgroup.conf in the same directory
    /// if they are there (as Slurm does), and Sluice's cohorts.conf and sluice.conf there.
    /// Where gres.conf has an `AutoDetect`, the GPUs of this machine
    /// ([`gpu_detect::local`]) describe the node named like this host; see
    /// [`ClusterConfig::read_detecting`].
    ///
    /// Errors: as [`sluice_conf::slurm_conf::read`], [`gres_conf::read`],
    /// [`gres_conf::resolve_detected`], [`cgroup_conf::read`], [`cohorts_conf::read`],
    /// [`crate::accounts::cohorts::core_cohorts`] and [`site_conf::read`].
    pub fn read(path: &Path) -> Result<(Self, Vec<String>), ConfError> {
        Self::read_detecting(path, &this_host(), &gpu_detect::local(Path::new("/")))
    }

    /// [`ClusterConfig::read`], with the GPUs `gpus` finds standing for those of the
    /// node named `host`: under `AutoDetect=nvml` (or `rsmi`) its NVIDIA (or AMD) GPUs
    /// fill in that node's files, `Cores` and `Links` and are merged with gres.conf's
    /// lines as slurmd merges them ([`gres_conf::resolve_detected`]). Other nodes'
    /// GPUs cannot be seen from here and are trusted as configured. `gpus` is asked
    /// only when gres.conf has an AutoDetect; its failure is a warning.
    ///
    /// Errors: as [`ClusterConfig::read`].
    pub fn read_detecting(
        path: &Path,
        host: &str,
        gpus: &dyn GpuProvider,
    ) -> Result<(Self, Vec<String>), ConfError> {
        let conf = sluice_conf::slurm_conf::read(path)?;
        priority_settings(&conf, &conf.cluster.gres)?;
        if let Some(v) = conf.get("PrivateData") {
            PrivateData::parse(v).map_err(|message| ConfError {
                path: path.to_path_buf(),
                line: 0,
                message,
            })?;
        }
        // slurmd and slurmctld stop on an unknown gathering plugin; a malformed
        // frequency is refused too (Slurm would silently not sample).
        if let Some(v) = conf.get("JobAcctGatherType") {
            GatherType::parse(v).map_err(|m| conf.error_at("JobAcctGatherType", m))?;
        }
        if let Some(v) = conf.get("JobAcctGatherFrequency") {
            Frequency::parse(v, "JobAcctGatherFrequency")
                .map_err(|m| conf.error_at("JobAcctGatherFrequency", m))?;
        }
        let (_, metrics_warnings) = metrics_conf(&conf).map_err(|message| ConfError {
            path: path.to_path_buf(),
            line: 0,
            message,
        })?;
        let index: HashMap<&str, usize> = (conf.cluster.nodes.iter().enumerate())
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let nodes: Vec<_> = node_gres(path)
            .into_iter()
            .filter_map(|(host, gres)| {
                let layout = *conf.node_layouts.get(*index.get(host.as_str())?)?;
                Some((host, gres, layout))
            })
            .collect();
        let mut config = Self::from_slurm_conf(&conf, &nodes);
        config.future_nodes = future_nodes(path);
        config.all_nodes_partitions = all_nodes_partitions(path);
        let future: std::collections::HashSet<&str> =
            config.future_nodes.iter().map(String::as_str).collect();
        for n in &mut config.cluster.nodes {
            if future.contains(n.name.as_str()) {
                n.state = sluice_core::NodeState::Up;
            }
        }
        let addresses = node_addresses(path);
        config.node_addresses = config
            .cluster
            .nodes
            .iter()
            .map(|n| {
                addresses
                    .iter()
                    .find(|(name, _)| *name == n.name)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_else(|| NodeAddress {
                        addr: n.name.clone(),
                        hostname: n.name.clone(),
                        port: None,
                    })
            })
            .collect();
        // A partition's own DefCpuPerGPU / DefMemPerGPU / DefMemPerCPU / DefMemPerNode
        // beat the global ones.
        for (name, kv) in partition_settings(path) {
            let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
            if let Some(p) = config.cluster.partition_by_name(&name) {
                let d = &mut config.gpu_defaults[p.index()];
                let own = GpuDefaults::parse(get("defcpupergpu"), get("defmempergpu"));
                d.cpus_per_gpu = own.cpus_per_gpu.or(d.cpus_per_gpu);
                d.mem_per_gpu_mib = own.mem_per_gpu_mib.or(d.mem_per_gpu_mib);
                if let Some(m) = def_mem(get("defmempercpu"), get("defmempernode")) {
                    config.def_mem[p.index()] = Some(m);
                    config
                        .own_def_mem
                        .resize(config.cluster.partitions.len(), None);
                    config.own_def_mem[p.index()] = Some(m);
                }
            }
        }
        let mut warnings = conf.warnings.clone();
        warnings.extend(metrics_warnings);
        let gres_path = path.with_file_name("gres.conf");
        if gres_path.is_file() {
            let gres = gres_conf::read(&gres_path)?;
            let detects = gres.autodetect.is_some_and(AutoDetect::detects)
                || gres.node_autodetect.iter().any(|a| a.value.detects());
            let found = if detects {
                gpus.devices().unwrap_or_else(|e| {
                    warnings.push(format!("{}: AutoDetect: {e}", gres_path.display()));
                    Vec::new()
                })
            } else {
                Vec::new()
            };
            let layout = gres_conf::resolve_detected(&conf, &gres, &|node, autodetect| {
                if node == host {
                    gpu_detect::gres_devices(&found, autodetect)
                } else {
                    Vec::new()
                }
            })?;
            let driver = match gres.autodetect {
                Some(AutoDetect::Nvml) => Some("NVIDIA driver"),
                Some(AutoDetect::Rsmi) => Some("AMD GPU driver"),
                _ => None,
            };
            if let (Some(a), Some(driver)) = (gres.autodetect, driver) {
                if gpu_detect::gres_devices(&found, a).is_empty() {
                    warnings.push(format!(
                        "{}: AutoDetect={a}, but this host has no {driver}: the configured GPUs are trusted",
                        gres_path.display()
                    ));
                }
            }
            warnings.extend(gres.warnings);
            warnings.extend(layout.warnings);
            config.gres_devices = layout.nodes;
        }
        let cgroup_path = path.with_file_name("cgroup.conf");
        if cgroup_path.is_file() {
            let cgroup = cgroup_conf::read(&cgroup_path)?;
            config.constrain_devices = cgroup.constrain_devices;
            warnings.extend(cgroup.warnings);
        }
        let cohorts_path = path.with_file_name("cohorts.conf");
        if cohorts_path.is_file() {
            config.cohorts = cohorts_conf::read(&cohorts_path)?;
            // Its TRES must be the cluster's (accounts are looked up later).
            crate::accounts::cohorts::core_cohorts(&config.cohorts, &config.cluster, |_| {
                Some(sluice_core::limits::AssocId(0))
            })?;
        }
        let site_path = path.with_file_name("sluice.conf");
        if site_path.is_file() {
            config.site = site_conf::read(&site_path)?;
        }
        Ok((config, warnings))
    }

    /// A one-node cluster describing this machine: its host name, processors, memory
    /// and GPUs (found by [`gpu_detect::local`]: NVML, then the NVIDIA driver's files,
    /// then AMD's sysfs), in one default partition `debug` without a time limit.
    pub fn this_machine() -> Self {
        Self::this_machine_with(&gpu_detect::local(Path::new("/")))
    }

    /// [`ClusterConfig::this_machine`] with the GPUs `gpus` finds (none when it fails).
    pub fn this_machine_with(gpus: &dyn GpuProvider) -> Self {
        Self::this_machine_without_gpus().with_gpus(&gpus.devices().unwrap_or_default())
    }

    /// This configuration's one node with `gpus` added: those of the first one's vendor,
    /// as `Gres=gpu:TYPE:COUNT` and, as `AutoDetect` would give them, with their files,
    /// cores and links.
    fn with_gpus(self, gpus: &[DetectedGpu]) -> Self {
        let mut c = self;
        let Some(vendor) = gpus.first().map(|g| g.vendor) else {
            return c;
        };
        let gpus: Vec<DetectedGpu> = gpus
            .iter()
            .filter(|g| g.vendor == vendor)
            .cloned()
            .collect();
        // The same configuration as a slurm.conf would give, so that GPUs are handed
        // out exactly as on a configured site.
        let node = c.cluster.node(NodeId(0)).clone();
        let gres: Vec<String> = gpu_detect::type_counts(&gpus)
            .iter()
            .map(|(t, n)| format!("gpu:{t}:{n}"))
            .collect();
        // Its GPUs are accounted, in all and by type (`AllocTRES`, `sluice report gpu`).
        let tracked: Vec<String> = std::iter::once("gres/gpu".to_string())
            .chain(
                gpu_detect::type_counts(&gpus)
                    .iter()
                    .map(|(t, _)| format!("gres/gpu:{t}")),
            )
            .collect();
        let gres = gres.join(",");
        let text = format!(
            "ClusterName={}\nGresTypes=gpu\nAccountingStorageTRES={}\n\
             NodeName={} CPUs={} RealMemory={} Gres={gres} State=UNKNOWN\n\
             PartitionName=debug Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
            c.cluster_name,
            tracked.join(","),
            node.name,
            node.capacity.cpus,
            node.capacity.mem_mib,
            node.name
        );
        let path = Path::new("(this machine)");
        if let Ok(conf) = sluice_conf::slurm_conf::parse_str(&text, path) {
            let topology = c.topology[0];
            c = Self::from_slurm_conf(&conf, &[(node.name.clone(), gres, topology)]);
            let autodetect = GresConf {
                path: path.to_path_buf(),
                autodetect: Some(vendor.autodetect()),
                ..GresConf::default()
            };
            let found = |_: &str, a: AutoDetect| gpu_detect::gres_devices(&gpus, a);
            if let Ok(layout) = gres_conf::resolve_detected(&conf, &autodetect, &found) {
                c.gres_devices = layout.nodes;
            }
        }
        c
    }

    fn this_machine_without_gpus() -> Self {
        let host = this_host();
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let mem = meminfo_total_mib().unwrap_or(1024);
        let mut cluster = Cluster::default();
        cluster.nodes.push(Node::new(host, cpus, mem));
        let mut part = Partition::new("debug", vec![NodeId(0)]);
        part.is_default = true;
        cluster.partitions.push(part);
        ClusterConfig {
            cluster_name: "sluice".into(),
            cluster,
            backfill: BackfillParams::default(),
            fifo: false,
            kill_wait: 30,
            job_requeue: true,
            min_job_age: 300,
            max_array_size: 1001,
            max_job_count: 10_000,
            first_job_id: 1,
            topology: vec![(1, cpus, 1)],
            node_gres: vec![String::new()],
            cpu_spec_lists: vec![String::new()],
            node_reasons: BTreeMap::new(),
            gres_devices: vec![Vec::new()],
            settings: Vec::new(),
            gpu_defaults: vec![GpuDefaults::default()],
            def_mem: vec![None],
            constrain_devices: false,
            cohorts: CohortsConf::default(),
            site: SiteConf::default(),
            accounting_tres: DEFAULT_TRES.iter().map(|t| t.to_string()).collect(),
            billing_weights: vec![None],
            max_tres: false,
            enforce: AccountingEnforce::default(),
            enforce_part_limits: false,
            enforce_part_limits_all: false,
            priority: PrioritySettings::default(),
            private_data: PrivateData::default(),
            metrics: MetricsConf::default(),
            priority_tres: String::new(),
            node_addresses: Vec::new(),
            own_def_mem: Vec::new(),
            logging: LogConf::default(),
            gather: GatherConf::default(),
            // `sluice up`'s own machine: a node whose agent was away past SlurmdTimeout
            // comes back when the agent does (Slurm's ReturnToService=1), as the quick
            // start has no operator watching for it.
            net: NetConf {
                return_to_service: 1,
                ..NetConf::default()
            },
            agents_over_tcp: false,
            service_base: None,
            future_nodes: Vec::new(),
            max_node_count: 0,
            all_nodes_partitions: Vec::new(),
        }
    }

    /// A service job's stable address (`service_base` + `/services/NAME/`); `None`
    /// for a job that is no service, declares no port, or without a TCP listener.
    pub fn service_url(&self, desc: &sluice_proto::types::JobDescription) -> Option<String> {
        let s = desc.service.as_ref().filter(|s| s.port.is_some())?;
        Some(format!(
            "{}/services/{}/",
            self.service_base.as_ref()?,
            s.name
        ))
    }

    /// A service job's plain TCP address (`HOST:PORT` on the controller's host), when
    /// the port it declares lies in `ServiceTcpPorts` and the controller listens on TCP.
    pub fn service_tcp(&self, desc: &sluice_proto::types::JobDescription) -> Option<String> {
        let port = desc.service.as_ref()?.port?;
        let (first, last) = self.site.service_tcp_ports?;
        let base = self.service_base.as_deref()?;
        let host = base.strip_prefix("http://")?.rsplit_once(':')?.0;
        (first..=last)
            .contains(&port)
            .then(|| format!("{host}:{port}"))
    }

    /// Where node `node`'s agent listens: `NodeAddr:Port` (`SlurmdPort` when the node
    /// sets no `Port`) when agents are reached over TCP, else its Unix socket in
    /// `state_dir`. What the controller sends orders to and `srun` starts tasks at.
    pub fn agent_endpoint(&self, node: &str, state_dir: &Path) -> String {
        if !self.agents_over_tcp {
            return sluice_proto::paths::agent_socket(state_dir, node)
                .display()
                .to_string();
        }
        let address = self
            .node_id(node)
            .and_then(|id| self.node_addresses.get(id.index()));
        let addr = address.map_or(node, |a| a.addr.as_str());
        let port = address.and_then(|a| a.port).unwrap_or(self.net.slurmd_port);
        if addr.contains(':') {
            // An IPv6 address.
            format!("[{addr}]:{port}")
        } else {
            format!("{addr}:{port}")
        }
    }

    /// The cluster as the core schedules it: [`ClusterConfig::cluster`] with every
    /// node's GPUs as gres.conf describes them (types, `Links=`, `Cores=` and the
    /// shards on each), so that the core's start decisions name GPU indices that
    /// match the device files.
    pub fn core_cluster(&self) -> Cluster {
        let mut cluster = self.cluster.clone();
        let gpu = cluster.gpu_slot();
        for (node, devices) in cluster.nodes.iter_mut().zip(&self.gres_devices) {
            let total = gpu.map_or(0, |g| node.capacity.gres[g]);
            node.gpus = node_gpus(devices, total);
        }
        cluster
    }

    /// Index of a node by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.cluster.node_by_name(name)
    }

    /// The TRES accounting records for `cpus` CPUs, `mem_mib` MiB of memory, `nodes`
    /// nodes and GRES `gres` (totals by slot of the cluster's GRES table) in partition
    /// `partition`: `(TRES, count)` for `cpu`, `mem`, `node`, `billing`, then each GRES
    /// that `AccountingStorageTRES` tracks (in its order), non-zero ones only. Billing
    /// is the partition's `TRESBillingWeights` applied to the others
    /// ([`BillingWeights::billing`]), or the CPUs where it has none.
    pub fn tres(
        &self,
        partition: Option<PartitionId>,
        cpus: u64,
        mem_mib: u64,
        nodes: u64,
        gres: &[u64; MAX_GRES],
    ) -> TresList {
        let mut tres: Vec<(String, u64)> = vec![
            ("cpu".into(), cpus),
            ("mem".into(), mem_mib),
            ("node".into(), nodes),
        ];
        for tracked in &self.accounting_tres {
            let Some(g) = tracked.strip_prefix("gres/") else {
                continue;
            };
            let (name, gtype) = match g.split_once(':') {
                Some((n, t)) => (n, Some(t)),
                None => (g, None),
            };
            if let Some(slot) = self.cluster.gres.find(name, gtype) {
                tres.push((tracked.clone(), gres[slot]));
            }
        }
        let billing = match partition.and_then(|p| self.billing_weights.get(p.index())) {
            Some(Some(w)) => w.billing(&tres, self.max_tres),
            _ => cpus,
        };
        tres.insert(3, ("billing".into(), billing));
        tres.retain(|(_, n)| *n > 0);
        tres
    }

    /// The TRES of a job's request (`ReqTRES`) in `partition`: its tasks' CPUs, its
    /// memory and GRES on its fewest nodes (see [`ClusterConfig::tres`]).
    pub fn requested_tres(&self, partition: PartitionId, req: &JobRequest) -> TresList {
        let nodes = u64::from(req.min_nodes.max(1));
        let cpus = u64::from(req.ntasks.max(1)) * u64::from(req.cpus_per_task.max(1));
        let mem = match req.mem {
            MemRequest::PerNode(m) => m.saturating_mul(nodes),
            MemRequest::PerCpu(m) => m.saturating_mul(cpus),
        };
        let gres = req.gres_per_node.map(|n| u64::from(n) * nodes);
        self.tres(Some(partition), cpus, mem, nodes, &gres)
    }

    /// The TRES of an allocation (`AllocTRES`) in partition `partition` (a name; an
    /// unknown one bills CPUs), and the GPUs it holds per node by type (`(type,
    /// count)`, typed GPUs only).
    pub fn allocated_tres(&self, partition: &str, nodes: &[NodeAlloc]) -> (TresList, GpuTypes) {
        let (mut cpus, mut mem, mut gres) = (0u64, 0u64, [0u64; MAX_GRES]);
        for a in nodes {
            cpus += u64::from(a.usage.cpus);
            mem += a.usage.mem_mib;
            for (total, n) in gres.iter_mut().zip(a.usage.gres) {
                *total += u64::from(n);
            }
        }
        let part = self.cluster.partition_by_name(partition);
        let tres = self.tres(part, cpus, mem, nodes.len() as u64, &gres);
        let table = &self.cluster.gres;
        let types = nodes
            .iter()
            .map(|a| match table.find("gpu", None) {
                Some(gpu) => table
                    .children(gpu)
                    .filter(|&c| a.usage.gres[c] > 0)
                    .map(|c| {
                        let name = table.name(c);
                        let gtype = name.split_once(':').map_or("", |(_, t)| t);
                        (gtype.to_string(), a.usage.gres[c])
                    })
                    .collect(),
                None => Vec::new(),
            })
            .collect();
        (tres, types)
    }
}

/// This host's name up to its first dot (`localhost` when it cannot be read), as
/// nodes are named; what slurmd's `%h` stands for.
pub fn this_host() -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    host.split('.').next().unwrap_or("localhost").to_string()
}

/// What this host has, as slurmd reports it when it registers as node `nid` of
/// `conf`: online CPUs and their sockets, cores and threads (sysfs), `MemTotal`, and
/// per GRES name the node's devices whose files exist here (a device without files
/// counts as configured: slurmd takes gres.conf's `Count` on trust too).
pub fn host_hardware(conf: &ClusterConfig, nid: NodeId) -> sluice_proto::types::NodeHardware {
    let mut found = detected_hardware();
    for d in conf.gres_devices.get(nid.index()).into_iter().flatten() {
        let count = if d.files.is_empty() {
            d.count
        } else {
            d.files.iter().filter(|f| Path::new(f).exists()).count() as u64
        };
        match found.gres.iter_mut().find(|(n, _)| *n == d.name) {
            Some((_, c)) => *c += count,
            None => found.gres.push((d.name.clone(), count)),
        }
    }
    found
}

/// What this host has, GRES aside: online CPUs and their sockets, cores and threads
/// (sysfs), `MemTotal` (slurmd -C's, and a dynamic node's without `--conf`).
pub fn detected_hardware() -> sluice_proto::types::NodeHardware {
    let mut seen = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(n) = name
                .strip_prefix("cpu")
                .filter(|n| n.parse::<u32>().is_ok())
            else {
                continue;
            };
            let online = std::fs::read_to_string(e.path().join("online"))
                .map(|t| t.trim() == "1")
                .unwrap_or(true);
            let read = |f: &str| {
                std::fs::read_to_string(e.path().join("topology").join(f))
                    .ok()
                    .and_then(|t| t.trim().parse::<i64>().ok())
            };
            if online {
                seen.push((
                    read("physical_package_id").unwrap_or(0),
                    read("core_id").unwrap_or(n.parse().unwrap_or(0)),
                ));
            }
        }
    }
    let cpus = if seen.is_empty() {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
    } else {
        seen.len() as u32
    };
    let (sockets, cores, threads) = topology_of(&seen, cpus);
    sluice_proto::types::NodeHardware {
        cpus,
        boards: 1,
        sockets,
        cores,
        threads,
        real_memory: meminfo_total_mib().unwrap_or(0),
        gres: Vec::new(),
    }
}

/// Sockets, cores per socket and threads per core of `cpus` CPUs given as (package,
/// core) pairs: the distinct packages, the distinct cores over them, the CPUs over the
/// cores. Nothing known: one socket of `cpus` cores.
pub fn topology_of(seen: &[(i64, i64)], cpus: u32) -> (u32, u32, u32) {
    let mut packages: Vec<i64> = seen.iter().map(|c| c.0).collect();
    packages.sort_unstable();
    packages.dedup();
    let mut cores: Vec<(i64, i64)> = seen.to_vec();
    cores.sort_unstable();
    cores.dedup();
    if packages.is_empty() || cores.is_empty() {
        return (1, cpus.max(1), 1);
    }
    let sockets = packages.len() as u32;
    let per_socket = (cores.len() as u32 / sockets).max(1);
    let threads = (seen.len() as u32 / cores.len() as u32).max(1);
    (sockets, per_socket, threads)
}

/// `MemTotal` of /proc/meminfo in MiB.
fn meminfo_total_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// The default memory of `DefMemPerCPU` or else `DefMemPerNode` (values as in
/// slurm.conf; unparsable ones are left out, slurm.conf's checks report them).
fn def_mem(per_cpu: Option<&str>, per_node: Option<&str>) -> Option<sluice_core::MemRequest> {
    let mib = |v: Option<&str>| v.and_then(|v| sluice_conf::duration::parse_mem_mib(v).ok());
    mib(per_cpu)
        .map(sluice_core::MemRequest::PerCpu)
        .or_else(|| mib(per_node).map(sluice_core::MemRequest::PerNode))
}

/// Per `PartitionName` line: its name and its `key=value` pairs (keys in lower case),
/// read again from the file for the settings the scheduling model does not keep.
fn partition_settings(path: &Path) -> Vec<(String, Vec<(String, String)>)> {
    conf_lines(path, "partitionname")
}

/// The lines of slurm.conf at `path` whose first key is `first` (`nodename`,
/// `partitionname`): the first key's value and the line's `key=value` pairs, keys in
/// lower case, continuation lines joined, comments dropped. A `DEFAULT` line is not
/// returned: as in Slurm, its pairs apply to the lines after it that do not set them
/// (a later `DEFAULT` line changes what it names). For what the scheduling model does
/// not keep; an unreadable file has no lines.
fn conf_lines(path: &Path, first: &str) -> Vec<(String, Vec<(String, String)>)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut defaults: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for line in text.replace("\\\n", " ").lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut kv: Vec<(String, String)> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect();
        let Some(name) = kv
            .first()
            .filter(|(k, _)| k == first)
            .map(|(_, v)| v.clone())
        else {
            continue;
        };
        if name.eq_ignore_ascii_case("default") {
            for (k, v) in kv.into_iter().skip(1) {
                match defaults.iter_mut().find(|(key, _)| *key == k) {
                    Some(slot) => slot.1 = v,
                    None => defaults.push((k, v)),
                }
            }
            continue;
        }
        for (k, v) in &defaults {
            if !kv.iter().any(|(key, _)| key == k) {
                kv.push((k.clone(), v.clone()));
            }
        }
        out.push((name, kv));
    }
    out
}

/// The nodes whose `NodeName=` line in slurm.conf at `path` says `State=FUTURE`.
fn future_nodes(path: &Path) -> Vec<String> {
    conf_lines(path, "nodename")
        .into_iter()
        .filter(|(_, kv)| {
            kv.iter()
                .any(|(k, v)| k == "state" && v.eq_ignore_ascii_case("future"))
        })
        .flat_map(|(names, _)| sluice_conf::hostlist::expand(&names).unwrap_or_default())
        .collect()
}

/// The partitions whose `PartitionName=` line in slurm.conf at `path` says
/// `Nodes=ALL`.
fn all_nodes_partitions(path: &Path) -> Vec<String> {
    conf_lines(path, "partitionname")
        .into_iter()
        .filter(|(_, kv)| {
            kv.iter()
                .any(|(k, v)| k == "nodes" && v.eq_ignore_ascii_case("all"))
        })
        .map(|(name, _)| name)
        .collect()
}

/// `Gres=` of every node line, per node (their layouts are the parsed
/// [`sluice_conf::slurm_conf::SlurmConf::node_layouts`]).
fn node_gres(path: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (names, kv) in conf_lines(path, "nodename") {
        let gres = kv
            .iter()
            .find(|(key, _)| key == "gres")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if let Ok(hosts) = sluice_conf::hostlist::expand(&names) {
            out.extend(hosts.into_iter().map(|h| (h, gres.clone())));
        }
    }
    out
}

/// `NodeAddr`, `NodeHostname` and `Port` of every node line, per node: a list of as
/// many values as the line has nodes (`NodeAddr=10.0.0.[1-2]`, `Port=17001-17002`)
/// gives each its own, a single value applies to all.
fn node_addresses(path: &Path) -> Vec<(String, NodeAddress)> {
    let mut out = Vec::new();
    for (names, kv) in conf_lines(path, "nodename") {
        let Ok(hosts) = sluice_conf::hostlist::expand(&names) else {
            continue;
        };
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let each = |v: Option<String>, ports: bool| -> Vec<Option<String>> {
            let list = match &v {
                Some(v) if ports => match v.split_once('-') {
                    Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                        (Ok(a), Ok(b)) if a <= b => (a..=b).map(|p| p.to_string()).collect(),
                        _ => vec![v.clone()],
                    },
                    None => vec![v.clone()],
                },
                Some(v) => sluice_conf::hostlist::expand(v).unwrap_or_else(|_| vec![v.clone()]),
                None => Vec::new(),
            };
            (0..hosts.len())
                .map(|i| {
                    if list.len() == hosts.len() {
                        Some(list[i].clone())
                    } else {
                        v.clone()
                    }
                })
                .collect()
        };
        let hostnames = each(get("nodehostname"), false);
        let addrs = each(get("nodeaddr"), false);
        let ports = each(get("port"), true);
        for (i, h) in hosts.iter().enumerate() {
            let hostname = hostnames[i].clone().unwrap_or_else(|| h.clone());
            out.push((
                h.clone(),
                NodeAddress {
                    addr: addrs[i].clone().unwrap_or_else(|| hostname.clone()),
                    hostname,
                    port: ports[i].as_deref().and_then(|p| p.parse().ok()),
                },
            ));
        }
    }
    out
}

/// A node's GPUs, `total` of them (its configured count): GPU `i` is the `i`-th GPU
/// unit of `devices` (its gres.conf devices), numbered as the device files are
/// ([`gres_conf::gpu_units`]), with its type, `Cores=`, `Links=` (a count-only entry
/// of several units gives each its type and cores, no links) and its shards
/// ([`gres_conf::shards_per_gpu`]). GPUs `devices` does not describe are plain.
pub(crate) fn node_gpus(devices: &[GresDevice], total: u32) -> Vec<sluice_core::Gpu> {
    let shards = gres_conf::shards_per_gpu(devices);
    let mut gpus: Vec<sluice_core::Gpu> = gres_conf::gpu_units(devices)
        .into_iter()
        .zip(shards)
        .map(|(d, shards)| sluice_core::Gpu {
            gpu_type: d.gres_type.clone(),
            links: d.links.clone().filter(|_| d.count == 1),
            cores: d.cores.clone(),
            shards: u32::try_from(shards).unwrap_or(u32::MAX),
        })
        .take(total as usize)
        .collect();
    gpus.resize(total as usize, sluice_core::Gpu::default());
    gpus
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_detect::tests::nvidia;
    use crate::gpu_detect::{FakeProvider, GpuVendor, MigSlice};
    use sluice_conf::gres_conf::{DeviceSource, GresFlags};

    /// Four H200s NVLinked in pairs (0,1) and (2,3), two links each; CPUs 0-7 near the
    /// first pair, 8-15 near the second.
    fn four_h200() -> Vec<DetectedGpu> {
        let low: Vec<u32> = (0..8).collect();
        let high: Vec<u32> = (8..16).collect();
        vec![
            nvidia("h200", 0, &low, &[-1, 2, 0, 0]),
            nvidia("h200", 1, &low, &[2, -1, 0, 0]),
            nvidia("h200", 2, &high, &[0, 0, -1, 2]),
            nvidia("h200", 3, &high, &[0, 0, 2, -1]),
        ]
    }

    /// (files, cores, links) of a node's devices.
    type Described = Vec<(Vec<String>, Option<Vec<u32>>, Option<Vec<i32>>)>;

    fn described(devices: &[GresDevice]) -> Described {
        devices
            .iter()
            .map(|d| (d.files.clone(), d.cores.clone(), d.links.clone()))
            .collect()
    }

    fn described_h200() -> Described {
        four_h200()
            .iter()
            .map(|g| (g.files(), Some(g.cores.clone()), Some(g.links.clone())))
            .collect()
    }

    #[test]
    fn this_machine_with_gpus_offers_them_as_typed_gres() {
        let c = ClusterConfig::this_machine_with(&FakeProvider(four_h200()));
        let node = c.cluster.node(sluice_core::NodeId(0));
        let gpu = c.cluster.gres.find("gpu", None).unwrap();
        let h200 = c.cluster.gres.find("gpu", Some("h200")).unwrap();
        assert_eq!((node.capacity.gres[gpu], node.capacity.gres[h200]), (4, 4));
        assert_eq!(c.node_gres, vec!["gpu:h200:4".to_string()]);
        // Accounted, in all and by type.
        assert!(c
            .accounting_tres
            .ends_with(&["gres/gpu".to_string(), "gres/gpu:h200".to_string()]));
        assert_eq!(c.cluster.partitions[0].name, "debug");
        assert_eq!(c.cluster.partitions[0].max_time, None);
        // As AutoDetect=nvml gives them: files, cores, links.
        assert_eq!(described(&c.gres_devices[0]), described_h200());
        assert!(c.gres_devices[0].iter().all(|d| d.count == 1
            && d.gres_type.as_deref() == Some("h200")
            && d.source == DeviceSource::AutoDetect(AutoDetect::Nvml)));

        // No GPU: no GRES.
        let c = ClusterConfig::this_machine_with(&FakeProvider::default());
        assert_eq!(c.node_gres, vec![String::new()]);
        assert_eq!(c.gres_devices, vec![Vec::<GresDevice>::new()]);
    }

    #[test]
    fn this_machine_offers_mig_slices_as_their_own_type() {
        let mut gpus = vec![nvidia("h200", 0, &[0, 1], &[-1, 0])];
        for (slice, (gi, cap)) in [(7, 66), (8, 75)].into_iter().enumerate() {
            let mut g = nvidia("h200_1g.18gb", 1, &[2, 3], &[]);
            g.memory_mib = Some(17_920);
            g.mig = Some(MigSlice {
                slice: slice as u32,
                profile: "1g.18gb".into(),
                gpu_instance: gi,
                compute_instance: 0,
                cap_files: vec![
                    format!("/dev/nvidia-caps/nvidia-cap{cap}"),
                    format!("/dev/nvidia-caps/nvidia-cap{}", cap + 1),
                ],
            });
            gpus.push(g);
        }
        let c = ClusterConfig::this_machine_with(&FakeProvider(gpus));
        assert_eq!(
            c.node_gres,
            vec!["gpu:h200:1,gpu:h200_1g.18gb:2".to_string()]
        );
        let mig = c.cluster.gres.find("gpu", Some("h200_1g.18gb")).unwrap();
        assert_eq!(c.cluster.node(sluice_core::NodeId(0)).capacity.gres[mig], 2);
        let files: Vec<(Option<String>, Vec<String>)> = c.gres_devices[0]
            .iter()
            .map(|d| (d.gres_type.clone(), d.files.clone()))
            .collect();
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            files,
            [
                (Some("h200".into()), strings(&["/dev/nvidia0"])),
                (
                    Some("h200_1g.18gb".into()),
                    strings(&[
                        "/dev/nvidia1",
                        "/dev/nvidia-caps/nvidia-cap66",
                        "/dev/nvidia-caps/nvidia-cap67"
                    ])
                ),
                (
                    Some("h200_1g.18gb".into()),
                    strings(&[
                        "/dev/nvidia1",
                        "/dev/nvidia-caps/nvidia-cap75",
                        "/dev/nvidia-caps/nvidia-cap76"
                    ])
                ),
            ]
        );
    }

    #[test]
    fn this_machine_with_amd_gpus() {
        let amd = DetectedGpu {
            vendor: GpuVendor::Amd,
            type_name: "instinct_mi300x".into(),
            index: 0,
            minor: 128,
            file: "/dev/dri/renderD128".into(),
            cores: vec![0, 1],
            links: vec![-1],
            mig: None,
            memory_mib: Some(196_288),
        };
        let c = ClusterConfig::this_machine_with(&FakeProvider(vec![amd]));
        assert_eq!(c.node_gres, vec!["gpu:instinct_mi300x:1".to_string()]);
        let d = &c.gres_devices[0][0];
        assert_eq!(
            (d.files.clone(), d.source.clone(), d.flags),
            (
                vec!["/dev/dri/renderD128".to_string()],
                DeviceSource::AutoDetect(AutoDetect::Rsmi),
                GresFlags {
                    amd_gpu_env: true,
                    ..GresFlags::default()
                }
            )
        );
    }

    /// A slurm.conf (and gres.conf) in a fresh directory.
    struct Confs(std::path::PathBuf);

    impl Confs {
        fn new(name: &str, slurm: &str, gres: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("sluice-ctld-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("slurm.conf"), slurm).unwrap();
            std::fs::write(dir.join("gres.conf"), gres).unwrap();
            Confs(dir)
        }

        fn slurm(&self) -> std::path::PathBuf {
            self.0.join("slurm.conf")
        }
    }

    impl Drop for Confs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn autodetect_describes_the_node_that_is_this_host() {
        let confs = Confs::new(
            "autodetect",
            "ClusterName=c\nGresTypes=gpu\nNodeName=gpu[1-2] CPUs=16 Gres=gpu:h200:4\n\
             PartitionName=p Nodes=gpu[1-2] Default=YES\n",
            "AutoDetect=nvml\n",
        );
        let (c, warnings) =
            ClusterConfig::read_detecting(&confs.slurm(), "gpu2", &FakeProvider(four_h200()))
                .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        // gpu1 is another host: trusted as configured.
        assert_eq!(described(&c.gres_devices[0]), [(vec![], None, None)]);
        assert_eq!(c.gres_devices[0][0].count, 4);
        assert_eq!(described(&c.gres_devices[1]), described_h200());

        // gres.conf lines still say which devices there are; found ones fill them in.
        std::fs::write(
            confs.0.join("gres.conf"),
            "AutoDetect=nvml\nNodeName=gpu2 Name=gpu Type=h200 File=/dev/nvidia[2-3]\n",
        )
        .unwrap();
        let (c, warnings) =
            ClusterConfig::read_detecting(&confs.slurm(), "gpu2", &FakeProvider(four_h200()))
                .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        // The lines' devices first, then found ones for the units no line describes.
        let mut want = described_h200();
        want.rotate_left(2);
        assert_eq!(described(&c.gres_devices[1]), want);

        // Fewer GPUs on this host than configured: Slurm's drain reason, as an error.
        std::fs::write(confs.0.join("gres.conf"), "AutoDetect=nvml\n").unwrap();
        let two = FakeProvider(four_h200()[..2].to_vec());
        let e = ClusterConfig::read_detecting(&confs.slurm(), "gpu2", &two).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: gpu2: gres/gpu count reported lower than configured (2 < 4)",
                confs.0.join("gres.conf").display()
            )
        );

        // AutoDetect=rsmi takes AMD GPUs only: none here.
        std::fs::write(confs.0.join("gres.conf"), "AutoDetect=rsmi\n").unwrap();
        let (c, warnings) =
            ClusterConfig::read_detecting(&confs.slurm(), "gpu2", &FakeProvider(four_h200()))
                .unwrap();
        assert_eq!(
            warnings,
            [format!(
                "{}: AutoDetect=rsmi, but this host has no AMD GPU driver: the configured GPUs are trusted",
                confs.0.join("gres.conf").display()
            )]
        );
        assert_eq!(c.gres_devices[1][0].count, 4);
    }

    #[test]
    fn gpu_defaults_come_from_the_partition_then_the_global_settings() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-gpudef-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c\nGresTypes=gpu\nDefMemPerGPU=2G\n\
             NodeName=n1 CPUs=8 Gres=gpu:2\n\
             PartitionName=a Nodes=n1 Default=YES DefCpuPerGPU=4\n\
             PartitionName=b Nodes=n1 DefMemPerGPU=512\n",
        )
        .unwrap();
        let (c, _) = ClusterConfig::read(&slurm).unwrap();
        assert_eq!(
            c.gpu_defaults,
            [
                GpuDefaults {
                    cpus_per_gpu: Some(4),
                    mem_per_gpu_mib: Some(2048)
                },
                GpuDefaults {
                    cpus_per_gpu: None,
                    mem_per_gpu_mib: Some(512)
                }
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gres_conf_next_to_slurm_conf_is_read() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-gres-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c\nGresTypes=gpu\nNodeName=n[1-2] CPUs=8 Gres=gpu:a100:2\n\
             PartitionName=p Nodes=n[1-2] Default=YES\n",
        )
        .unwrap();
        let (c, warnings) = ClusterConfig::read(&slurm).unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(
            c.gres_devices
                .iter()
                .map(|d| d.iter().map(|g| (g.count, g.files.len())).collect())
                .collect::<Vec<Vec<_>>>(),
            [[(2, 0)], [(2, 0)]]
        );

        let gres = dir.join("gres.conf");
        std::fs::write(
            &gres,
            "Name=gpu Type=a100 File=/dev/nvidia[0-1] Shiny=yes\n",
        )
        .unwrap();
        let (c, warnings) = ClusterConfig::read(&slurm).unwrap();
        assert_eq!(
            warnings,
            [format!(
                "{}:1: unknown key 'Shiny' (ignored)",
                gres.display()
            )]
        );
        let files: Vec<Vec<String>> = c
            .gres_devices
            .iter()
            .map(|d| d.iter().flat_map(|g| g.files.clone()).collect())
            .collect();
        assert_eq!(files, [["/dev/nvidia0", "/dev/nvidia1"]; 2]);

        std::fs::write(
            &gres,
            "\nName=gpu Type=a100 File=/dev/nvidia[0-1] Count=3\n",
        )
        .unwrap();
        let e = ClusterConfig::read(&slurm).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:2: Invalid GRES record for gpu, count does not match File value (Count=3 but File names 2)",
                gres.display()
            )
        );

        // AutoDetect=nvml on a host without the driver: said once, configured GPUs kept.
        std::fs::write(&gres, "AutoDetect=nvml\n").unwrap();
        let (c, warnings) =
            ClusterConfig::read_detecting(&slurm, "n1", &FakeProvider::default()).unwrap();
        assert_eq!(
            warnings,
            [format!(
                "{}: AutoDetect=nvml, but this host has no NVIDIA driver: the configured GPUs are trusted",
                gres.display()
            )]
        );
        assert_eq!(c.gres_devices.iter().map(|d| d.len()).sum::<usize>(), 2);
        // This machine's own detection, whatever it finds, does not describe n1 or n2.
        let (c, _) = ClusterConfig::read(&slurm).unwrap();
        assert_eq!(c.gres_devices.iter().map(|d| d.len()).sum::<usize>(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn default_memory_comes_from_the_partition_then_the_global_setting() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-defmem-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c\nDefMemPerCPU=1000\nNodeName=n1 CPUs=8 RealMemory=8000\n\
             PartitionName=a Nodes=n1 Default=YES\n\
             PartitionName=b Nodes=n1 DefMemPerNode=2G\n\
             PartitionName=c Nodes=n1 DefMemPerCPU=500\n",
        )
        .unwrap();
        let (c, warnings) = ClusterConfig::read(&slurm).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(warnings, Vec::<String>::new());
        use sluice_core::MemRequest::{PerCpu, PerNode};
        assert_eq!(
            c.def_mem,
            [Some(PerCpu(1000)), Some(PerNode(2048)), Some(PerCpu(500))]
        );
        // Only b and c set their own (what `scontrol show partition` prints).
        assert_eq!(
            c.own_def_mem,
            [None, Some(PerNode(2048)), Some(PerCpu(500))]
        );
    }

    #[test]
    fn node_addresses_are_kept_as_written_one_per_node() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-addr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c
             NodeName=n[1-2] NodeHostname=localhost NodeAddr=127.0.0.1 Port=17001-17002 CPUs=4
             NodeName=m[1-2] NodeAddr=10.0.0.[5-6] CPUs=4
             PartitionName=a Nodes=ALL Default=YES
",
        )
        .unwrap();
        let (c, _) = ClusterConfig::read(&slurm).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let a = |addr: &str, hostname: &str, port: Option<u16>| NodeAddress {
            addr: addr.into(),
            hostname: hostname.into(),
            port,
        };
        assert_eq!(
            c.node_addresses,
            [
                a("127.0.0.1", "localhost", Some(17001)),
                a("127.0.0.1", "localhost", Some(17002)),
                a("10.0.0.5", "m1", None),
                a("10.0.0.6", "m2", None),
            ]
        );
    }

    #[test]
    fn a_default_node_line_applies_its_state_and_port_to_the_lines_after_it() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-default-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c
             NodeName=a1 CPUs=4
             NodeName=DEFAULT State=FUTURE Port=17100 CPUs=4
             NodeName=f[1-2]
             NodeName=DEFAULT State=UNKNOWN
             NodeName=u1 Port=17200
             PartitionName=p Nodes=ALL Default=YES
",
        )
        .unwrap();
        let (c, _) = ClusterConfig::read(&slurm).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(c.future_nodes, ["f1", "f2"]);
        let ports: Vec<Option<u16>> = c.node_addresses.iter().map(|a| a.port).collect();
        assert_eq!(ports, [None, Some(17100), Some(17100), Some(17200)]);
    }

    #[test]
    fn cgroup_conf_next_to_slurm_conf_sets_constrain_devices() {
        let dir = std::env::temp_dir().join(format!("sluice-ctld-cgroup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slurm = dir.join("slurm.conf");
        std::fs::write(
            &slurm,
            "ClusterName=c\nNodeName=n1 CPUs=8\nPartitionName=p Nodes=n1 Default=YES\n",
        )
        .unwrap();
        assert!(!ClusterConfig::read(&slurm).unwrap().0.constrain_devices);
        let cgroup = dir.join("cgroup.conf");
        std::fs::write(
            &cgroup,
            "ConstrainRAMSpace=yes\nConstrainDevices=yes\nFoo=1\n",
        )
        .unwrap();
        let (c, warnings) = ClusterConfig::read(&slurm).unwrap();
        assert!(c.constrain_devices);
        assert_eq!(
            warnings,
            [format!(
                "{}:3: unknown key 'Foo' (ignored)",
                cgroup.display()
            )]
        );
        std::fs::write(&cgroup, "ConstrainDevices=perhaps\n").unwrap();
        assert_eq!(
            ClusterConfig::read(&slurm).unwrap_err().to_string(),
            format!(
                "{}:1: ConstrainDevices: invalid value 'perhaps' (yes or no)",
                cgroup.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn jobs_account_the_tracked_gres_and_their_partitions_billing() {
        let text = "ClusterName=c\nGresTypes=gpu\nAccountingStorageTRES=gres/gpu:a100\n\
                    PriorityFlags=MAX_TRES\n\
                    NodeName=g[1-2] CPUs=4 RealMemory=4000 Gres=gpu:a100:2,gpu:v100:2\n\
                    PartitionName=p Nodes=g[1-2] Default=YES TRESBillingWeights=\"CPU=1,GRES/gpu:a100=3\"\n\
                    PartitionName=q Nodes=g[1-2]\n";
        let conf = sluice_conf::slurm_conf::parse_str(text, Path::new("s.conf")).unwrap();
        let c = ClusterConfig::from_slurm_conf(&conf, &[]);
        let table = &c.cluster.gres;
        let (gpu, a100, v100) = (
            table.find("gpu", None).unwrap(),
            table.find("gpu", Some("a100")).unwrap(),
            table.find("gpu", Some("v100")).unwrap(),
        );
        let on = |node: u32, a: u32, v: u32| {
            let mut gres = [0; MAX_GRES];
            (gres[gpu], gres[a100], gres[v100]) = (a + v, a, v);
            NodeAlloc::new(
                NodeId(node),
                1,
                sluice_core::Resources {
                    cpus: 2,
                    mem_mib: 1000,
                    gres,
                },
            )
        };
        let nodes = [on(0, 1, 1), on(1, 2, 0)];
        let pairs = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(t, n)| (t.to_string(), *n)).collect()
        };
        // Only the A100s are tracked; MAX(4 CPUs * 1, 3 A100s * 3) = 9.
        let (tres, types) = c.allocated_tres("p", &nodes);
        assert_eq!(
            tres,
            pairs(&[
                ("cpu", 4),
                ("mem", 2000),
                ("node", 2),
                ("billing", 9),
                ("gres/gpu:a100", 3)
            ])
        );
        let typed = |v: &[(&str, u32)]| -> Vec<(String, u32)> {
            v.iter().map(|(t, n)| (t.to_string(), *n)).collect()
        };
        assert_eq!(
            types,
            [typed(&[("a100", 1), ("v100", 1)]), typed(&[("a100", 2)])]
        );
        // Without weights: the CPUs.
        assert_eq!(
            c.allocated_tres("q", &nodes).0[3],
            ("billing".to_string(), 4)
        );
        // What is asked: 2 tasks of 2 CPUs and 100 MiB each, one A100 per node on 2.
        let mut req = JobRequest::procs(2);
        req.min_nodes = 2;
        req.cpus_per_task = 2;
        req.mem = MemRequest::PerCpu(100);
        req.gres_per_node[a100] = 1;
        req.gres_per_node[gpu] = 1;
        assert_eq!(
            c.requested_tres(PartitionId(0), &req),
            pairs(&[
                ("cpu", 4),
                ("mem", 400),
                ("node", 2),
                ("billing", 6),
                ("gres/gpu:a100", 2)
            ])
        );
        // `scontrol show config` lists every tracked TRES.
        assert!(c.settings.contains(&(
            "AccountingStorageTRES".to_string(),
            "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu:a100".to_string()
        )));
    }
}
