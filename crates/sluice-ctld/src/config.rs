//! The controller's view of the cluster's configuration.

use std::path::Path;

use sluice_conf::cgroup_conf;
use sluice_conf::gres_conf::{self, GresDevice, GresLayout};
use sluice_conf::slurm_conf::SlurmConf;
use sluice_conf::ConfError;
use sluice_core::{BackfillParams, Cluster, Node, NodeId, Partition};

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
    /// Per node: its GRES devices (name, type, files, cores, links), slurm.conf's
    /// `Gres=` merged with gres.conf by [`gres_conf::resolve`]; without a gres.conf,
    /// count-only entries from slurm.conf.
    pub gres_devices: Vec<Vec<GresDevice>>,
    /// `key = value` lines for `scontrol show config`.
    pub settings: Vec<(String, String)>,
    /// Per partition: `DefCpuPerGPU` and `DefMemPerGPU`, its own or the global ones.
    pub gpu_defaults: Vec<GpuDefaults>,
    /// cgroup.conf's `ConstrainDevices` (default no): jobs may open only the GRES
    /// device files of the devices they were allocated.
    pub constrain_devices: bool,
}

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

fn int(conf: &SlurmConf, key: &str, default: i64) -> i64 {
    conf.get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl ClusterConfig {
    /// From a slurm.conf.
    pub fn from_slurm_conf(
        conf: &SlurmConf,
        text_of_nodes: &[(String, String, (u32, u32, u32))],
    ) -> Self {
        let topology = conf
            .cluster
            .nodes
            .iter()
            .map(|n| {
                text_of_nodes
                    .iter()
                    .find(|(name, _, _)| *name == n.name)
                    .map(|x| x.2)
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
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        settings.sort();
        ClusterConfig {
            cluster_name: conf.cluster_name.clone(),
            cluster: conf.cluster.clone(),
            backfill: conf.backfill.clone(),
            fifo: conf.scheduler_type == "sched/builtin",
            kill_wait: int(conf, "KillWait", 30),
            min_job_age: int(conf, "MinJobAge", 300),
            max_array_size: int(conf, "MaxArraySize", 1001) as u32,
            max_job_count: int(conf, "MaxJobCount", 10_000) as usize,
            first_job_id: int(conf, "FirstJobId", 1).max(1) as u64,
            topology,
            node_gres,
            gres_devices: GresLayout::from_slurm_conf(conf).nodes,
            settings,
            gpu_defaults: vec![
                GpuDefaults::parse(
                    conf.get("DefCpuPerGPU"),
                    conf.get("DefMemPerGPU")
                );
                conf.cluster.partitions.len()
            ],
            constrain_devices: false,
        }
    }

    /// Reads a slurm.conf file, and the gres.conf and cgroup.conf in the same directory
    /// if they are there (as Slurm does).
    ///
    /// Errors: as [`sluice_conf::slurm_conf::read`], [`gres_conf::read`],
    /// [`gres_conf::resolve`] and [`cgroup_conf::read`].
    pub fn read(path: &Path) -> Result<(Self, Vec<String>), ConfError> {
        let conf = sluice_conf::slurm_conf::read(path)?;
        let nodes = node_details(path);
        let mut config = Self::from_slurm_conf(&conf, &nodes);
        // A partition's own DefCpuPerGPU / DefMemPerGPU beat the global ones.
        for (name, cpus, mem) in partition_gpu_defaults(path) {
            if let Some(p) = config.cluster.partition_by_name(&name) {
                let d = &mut config.gpu_defaults[p.index()];
                let own = GpuDefaults::parse(cpus.as_deref(), mem.as_deref());
                d.cpus_per_gpu = own.cpus_per_gpu.or(d.cpus_per_gpu);
                d.mem_per_gpu_mib = own.mem_per_gpu_mib.or(d.mem_per_gpu_mib);
            }
        }
        let mut warnings = conf.warnings.clone();
        let gres_path = path.with_file_name("gres.conf");
        if gres_path.is_file() {
            let gres = gres_conf::read(&gres_path)?;
            let layout = gres_conf::resolve(&conf, &gres)?;
            if gres.autodetect == Some(gres_conf::AutoDetect::Nvml)
                && detect_gpus(Path::new("/")).is_empty()
            {
                warnings.push(format!(
                    "{}: AutoDetect=nvml, but this host has no NVIDIA driver: the configured GPUs are trusted",
                    gres_path.display()
                ));
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
        Ok((config, warnings))
    }

    /// A one-node cluster describing this machine: its host name, processors, memory
    /// and NVIDIA GPUs (see [`detect_gpus`]), in one default partition `debug` without
    /// a time limit.
    pub fn this_machine() -> Self {
        Self::this_machine_without_gpus().with_gpus(&detect_gpus(Path::new("/")))
    }

    /// This configuration's one node with `gpus` (`(type, count)` groups) added.
    fn with_gpus(self, gpus: &[(String, u32)]) -> Self {
        let mut c = self;
        if gpus.is_empty() {
            return c;
        }
        // The same configuration as a slurm.conf would give, so that GPUs are handed
        // out exactly as on a configured site.
        let node = c.cluster.node(NodeId(0)).clone();
        let gres: Vec<String> = gpus.iter().map(|(t, n)| format!("gpu:{t}:{n}")).collect();
        let gres = gres.join(",");
        let text = format!(
            "ClusterName={}\nGresTypes=gpu\nNodeName={} CPUs={} RealMemory={} Gres={gres} State=UNKNOWN\n\
             PartitionName=debug Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
            c.cluster_name, node.name, node.capacity.cpus, node.capacity.mem_mib, node.name
        );
        if let Ok(conf) = sluice_conf::slurm_conf::parse_str(&text, Path::new("(this machine)")) {
            let topology = c.topology[0];
            c = Self::from_slurm_conf(&conf, &[(node.name.clone(), gres, topology)]);
        }
        c
    }

    fn this_machine_without_gpus() -> Self {
        let host = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        let host = host.split('.').next().unwrap_or("localhost").to_string();
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
            min_job_age: 300,
            max_array_size: 1001,
            max_job_count: 10_000,
            first_job_id: 1,
            topology: vec![(1, cpus, 1)],
            node_gres: vec![String::new()],
            gres_devices: vec![Vec::new()],
            settings: Vec::new(),
            gpu_defaults: vec![GpuDefaults::default()],
            constrain_devices: false,
        }
    }

    /// Index of a node by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.cluster.node_by_name(name)
    }
}

/// The NVIDIA GPUs the driver reports under `root` (`/` on a real machine): one
/// `(type, count)` per model, the type named as Slurm's NVML detection names it (the
/// model without its `NVIDIA` prefix, lower case, spaces as underscores:
/// `NVIDIA H200` → `h200`). Read from `proc/driver/nvidia/gpus/*/information`, so no
/// GPU library is needed; empty without the driver.
pub fn detect_gpus(root: &Path) -> Vec<(String, u32)> {
    let Ok(dir) = std::fs::read_dir(root.join("proc/driver/nvidia/gpus")) else {
        return Vec::new();
    };
    let mut models: Vec<String> = dir
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("information")).ok())
        .filter_map(|text| {
            let line = text.lines().find(|l| l.starts_with("Model:"))?;
            let model = line["Model:".len()..].trim();
            let model = model.strip_prefix("NVIDIA ").unwrap_or(model);
            Some(model.to_ascii_lowercase().replace(' ', "_"))
        })
        .filter(|m| !m.is_empty())
        .collect();
    models.sort();
    let mut out: Vec<(String, u32)> = Vec::new();
    for m in models {
        match out.last_mut() {
            Some((t, n)) if *t == m => *n += 1,
            _ => out.push((m, 1)),
        }
    }
    out
}

/// `MemTotal` of /proc/meminfo in MiB.
fn meminfo_total_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// Per partition line: name, `DefCpuPerGPU=` and `DefMemPerGPU=` as written.
fn partition_gpu_defaults(path: &Path) -> Vec<(String, Option<String>, Option<String>)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let kv: Vec<(String, String)> = line
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
                .collect();
            let (_, name) = kv.first().filter(|(k, _)| k == "partitionname")?;
            let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
            Some((name.clone(), get("defcpupergpu"), get("defmempergpu")))
        })
        .collect()
}

/// Per node line: name, `Gres=` text and (sockets, cores per socket, threads per core),
/// read again from the file for what the scheduling model does not keep.
fn node_details(path: &Path) -> Vec<(String, String, (u32, u32, u32))> {
    let mut out = Vec::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    let joined = text.replace("\\\n", " ");
    for line in joined.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut kv: Vec<(String, String)> = Vec::new();
        for w in line.split_whitespace() {
            if let Some((k, v)) = w.split_once('=') {
                kv.push((k.to_ascii_lowercase(), v.to_string()));
            }
        }
        let Some((_, names)) = kv.first().filter(|(k, _)| k == "nodename").cloned() else {
            continue;
        };
        if names.eq_ignore_ascii_case("default") {
            continue;
        }
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let num = |k: &str| get(k).and_then(|v| v.parse::<u32>().ok());
        let gres = get("gres").unwrap_or_default();
        let sockets = num("sockets").unwrap_or(1);
        let threads = num("threadspercore").unwrap_or(1);
        let cores = num("corespersocket")
            .or_else(|| num("cpus").map(|c| (c / sockets.max(1) / threads.max(1)).max(1)))
            .unwrap_or(1);
        if let Ok(hosts) = sluice_conf::hostlist::expand(&names) {
            for h in hosts {
                out.push((h, gres.clone(), (sockets, cores, threads)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn nvidia_gpus_are_found_from_the_drivers_proc_files() {
        let root = std::env::temp_dir().join(format!("sluice-gpus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(super::detect_gpus(&root), vec![]);
        for (bus, model) in [
            ("0000:17:00.0", "NVIDIA H200"),
            ("0000:2a:00.0", "NVIDIA H200"),
            (
                "0000:3d:00.0",
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            ),
        ] {
            let d = root.join("proc/driver/nvidia/gpus").join(bus);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("information"),
                format!("Model: \t\t {model}\nIRQ:   \t\t 220\nDevice Minor: \t 0\n"),
            )
            .unwrap();
        }
        assert_eq!(
            super::detect_gpus(&root),
            vec![
                ("h200".to_string(), 2),
                ("rtx_pro_6000_blackwell_server_edition".to_string(), 1)
            ]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn this_machine_with_gpus_offers_them_as_typed_gres() {
        let c =
            super::ClusterConfig::this_machine_without_gpus().with_gpus(&[("h200".to_string(), 2)]);
        let node = c.cluster.node(sluice_core::NodeId(0));
        let gpu = c.cluster.gres.find("gpu", None).unwrap();
        let h200 = c.cluster.gres.find("gpu", Some("h200")).unwrap();
        assert_eq!((node.capacity.gres[gpu], node.capacity.gres[h200]), (2, 2));
        assert_eq!(c.node_gres, vec!["gpu:h200:2".to_string()]);
        assert_eq!(c.cluster.partitions[0].name, "debug");
        assert_eq!(c.cluster.partitions[0].max_time, None);
    }

    use super::*;

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
        let (c, warnings) = ClusterConfig::read(&slurm).unwrap();
        if detect_gpus(Path::new("/")).is_empty() {
            assert_eq!(
                warnings,
                [format!(
                    "{}: AutoDetect=nvml, but this host has no NVIDIA driver: the configured GPUs are trusted",
                    gres.display()
                )]
            );
        }
        assert_eq!(c.gres_devices.iter().map(|d| d.len()).sum::<usize>(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
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
}
