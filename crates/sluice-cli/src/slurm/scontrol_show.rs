//! `scontrol show node` and `show partition` records, and the layout of every
//! `scontrol show` record, as Slurm 22.05 prints them.
//!
//! A record is a list of lines. Slurm writes each line followed by `"\n   "` (or by
//! `" "` with `-o`) and ends the record with an empty line (`"\n"` with `-o`). Some
//! lines end with a space of their own (`NodeName=n1 Arch=x86_64 CoresPerSocket=4 `),
//! which `-o` shows as two spaces; a job record ends with an empty line, hence its
//! last line of three spaces (and `Power= ` with `-o`).

use super::common::node_version;
use sluice_conf::duration::format_time;
use sluice_proto::time::shown;
use sluice_proto::types::{MemoryRequest, NodeInfo, PartitionInfo};

/// The record's text: its lines, then the end of the record.
pub fn record(lines: &[String], one_line: bool) -> String {
    if one_line {
        format!("{}\n", lines.join(" "))
    } else {
        format!("{}\n\n", lines.join("\n   "))
    }
}

/// `key=value` pairs as lines, a new line starting at each key of `breaks`.
pub fn lines_of(pairs: &[(String, String)], breaks: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for (k, v) in pairs {
        let item = format!("{k}={v}");
        match lines.last_mut() {
            Some(line) if !breaks.contains(&k.as_str()) => {
                line.push(' ');
                line.push_str(&item);
            }
            _ => lines.push(item),
        }
    }
    lines
}

/// A node's state as `scontrol show node` prints it: the base state, with `+DRAIN`
/// for a drained or draining node (`DOWN+DRAIN` for one gone DOWN beneath its
/// drain), `+DYNAMIC_NORM` for a dynamic one and `+NOT_RESPONDING` when its agent
/// does not answer (Slurm's order of the flags).
pub fn node_state(n: &NodeInfo) -> String {
    let mut s = match n.state.as_str() {
        // An operator's state of a FUTURE node is a drain (DOWN ends FUTURE).
        "future" if n.reason_set.is_some() => "FUTURE+DRAIN".to_string(),
        "drained" if n.down => "DOWN+DRAIN".to_string(),
        "drained" => "IDLE+DRAIN".to_string(),
        "maint" => "IDLE+MAINT".to_string(),
        "draining" if n.cpus_alloc >= n.cpus => "ALLOCATED+DRAIN".to_string(),
        "draining" => "MIXED+DRAIN".to_string(),
        "completing" if n.cpus_alloc == 0 => "IDLE+COMPLETING".to_string(),
        "completing" if n.cpus_alloc >= n.cpus => "ALLOCATED+COMPLETING".to_string(),
        "completing" => "MIXED+COMPLETING".to_string(),
        other => other.to_ascii_uppercase(),
    };
    if n.dynamic {
        match s.find("+MAINT") {
            Some(at) => s.insert_str(at, "+DYNAMIC_NORM"),
            None => s.push_str("+DYNAMIC_NORM"),
        }
    }
    if !n.agent_up && n.state != "future" {
        s.push_str("+NOT_RESPONDING");
    }
    s
}

/// This machine's `OS=` (kernel name, release and version, as slurmd reports them):
/// Sluice's agents run the controller's binary, on the node they describe.
pub fn os() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{} {} {}",
        read("ostype"),
        read("osrelease"),
        read("version")
    )
}

fn time_or_none(t: Option<i64>) -> String {
    t.map_or("None".into(), shown)
}

/// The lines of `scontrol show node` for `n`. Values Sluice does not measure are
/// Slurm's "unknown" (`CPULoad=N/A`, `FreeMem=N/A`, `BootTime=None`).
pub fn node_lines(n: &NodeInfo) -> Vec<String> {
    let or_null = |s: String| if s.is_empty() { "(null)".into() } else { s };
    let features = or_null(n.features.join(","));
    let name = |s: &str| {
        if s.is_empty() {
            n.name.clone()
        } else {
            s.to_string()
        }
    };
    // What slurmctld learns from a node's registration (its architecture, version and
    // operating system) it does not show for a node whose agent has not registered
    // since it started.
    let registered = n.agent_start.is_some();
    let arch = if registered {
        format!("Arch={} ", std::env::consts::ARCH)
    } else {
        String::new()
    };
    let mut lines = vec![
        format!(
            "NodeName={} {arch}CoresPerSocket={} ",
            n.name, n.cores_per_socket
        ),
        format!(
            "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad=N/A",
            n.cpus_alloc,
            n.cpus,
            n.cpus_total()
        ),
        format!("AvailableFeatures={features}"),
        format!("ActiveFeatures={features}"),
        format!("Gres={}", or_null(n.gres.clone())),
        format!(
            "NodeAddr={} NodeHostName={} {}{}",
            name(&n.node_addr),
            name(&n.node_hostname),
            n.port.map_or(String::new(), |p| format!("Port={p} ")),
            node_version(n.agent_start).map_or(String::new(), |v| format!("Version={v}"))
        ),
    ];
    if registered {
        lines.push(format!("OS={} ", os()));
    }
    lines.extend([format!(
        "RealMemory={} AllocMem={} FreeMem=N/A Sockets={} Boards=1",
        n.memory, n.memory_alloc, n.sockets
    )]);
    if n.spec_cpus > 0 {
        lines.push(format!(
            "CoreSpecCount={} CPUSpecList={} ",
            n.core_spec_count, n.cpu_spec_list
        ));
    }
    lines.extend([format!(
        "State={} ThreadsPerCore={} TmpDisk=0 Weight={} Owner=N/A MCS_label=N/A",
        node_state(n),
        n.threads_per_core,
        n.weight
    )]);
    if !n.partitions.is_empty() {
        lines.push(format!("Partitions={} ", n.partitions.join(",")));
    }
    lines.extend([
        format!(
            "BootTime=None SlurmdStartTime={}",
            time_or_none(n.agent_start)
        ),
        format!("LastBusyTime={}", time_or_none(n.last_busy)),
        format!(
            "CfgTRES={}",
            if n.cfg_tres.is_empty() {
                format!("cpu={},mem={}M,billing={}", n.cpus, n.memory, n.cpus)
            } else {
                n.cfg_tres.clone()
            }
        ),
        format!(
            "AllocTRES={}",
            match (n.cpus_alloc, n.memory_alloc) {
                (0, _) => String::new(),
                _ if !n.alloc_tres.is_empty() => n.alloc_tres.clone(),
                (c, 0) => format!("cpu={c}"),
                (c, m) => format!("cpu={c},mem={}", sluice_proto::types::tres_mib(m)),
            }
        ),
        "CapWatts=n/a".into(),
        "CurrentWatts=0 AveWatts=0".into(),
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s".into(),
    ]);
    if let Some(reason) = &n.reason {
        // A reason slurm.conf gave was set by no one at no known time: none shown.
        let by = n.reason_set.filter(|&(_, t)| t != 0).map(|(uid, t)| {
            let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map(|u| u.name)
                .unwrap_or_else(|| uid.to_string());
            format!(" [{user}@{}]", shown(t))
        });
        lines.push(format!("Reason={reason}{}", by.unwrap_or_default()));
    }
    lines
}

/// The lines of `scontrol show partition` for `p`, whose nodes have `total_cpus`
/// processors. Settings Sluice does not have print as Slurm's defaults.
pub fn partition_lines(p: &PartitionInfo, total_cpus: u32) -> Vec<String> {
    let yes_no = |b: bool| if b { "YES" } else { "NO" };
    let access = if p.access.is_empty() {
        "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL".to_string()
    } else {
        p.access
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let oversubscribe = if p.oversubscribe.is_empty() {
        "NO"
    } else {
        p.oversubscribe.as_str()
    };
    let def_mem = match p.def_mem {
        Some(MemoryRequest::PerCpu(m)) => format!("DefMemPerCPU={m}"),
        Some(MemoryRequest::PerNode(m)) => format!("DefMemPerNode={m}"),
        _ => "DefMemPerNode=UNLIMITED".into(),
    };
    vec![
        format!("PartitionName={}", p.name),
        access,
        format!(
            "AllocNodes=ALL Default={} QoS={}",
            yes_no(p.default),
            p.qos.as_deref().unwrap_or("N/A")
        ),
        format!(
            "DefaultTime={} DisableRootJobs=NO ExclusiveUser={} GraceTime={} Hidden=NO",
            p.default_time.map_or("NONE".into(), |t| format_time(Some(t))),
            yes_no(p.exclusive_user),
            p.grace_time
        ),
        format!(
            "MaxNodes={} MaxTime={} MinNodes={} LLN=NO MaxCPUsPerNode=UNLIMITED",
            p.max_nodes.map_or("UNLIMITED".into(), |n| n.to_string()),
            format_time(p.max_time),
            p.min_nodes
        ),
        format!("Nodes={}", sluice_conf::hostlist::compress(&p.nodes)),
        format!(
            "PriorityJobFactor={} PriorityTier={} RootOnly=NO ReqResv=NO OverSubscribe={oversubscribe}",
            p.priority_job_factor, p.priority_tier
        ),
        format!(
            "OverTimeLimit=NONE PreemptMode={}",
            if p.preempt_mode.is_empty() {
                "OFF"
            } else {
                p.preempt_mode.as_str()
            }
        ),
        format!(
            "State={} TotalCPUs={total_cpus} TotalNodes={} SelectTypeParameters=NONE",
            p.state,
            p.nodes.len()
        ),
        "JobDefaults=(null)".into(),
        format!("{def_mem} MaxMemPerNode=UNLIMITED"),
        format!("TRES={}", p.tres),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> NodeInfo {
        NodeInfo {
            name: "n1".into(),
            state: "idle".into(),
            cpus: 4,
            memory: 4000,
            partitions: vec!["debug".into(), "short".into()],
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 1,
            weight: 1,
            agent_up: true,
            cfg_tres: "cpu=4,mem=4000M,billing=4".into(),
            node_addr: "127.0.0.1".into(),
            node_hostname: "localhost".into(),
            port: Some(17001),
            agent_start: Some(1_700_000_000),
            ..Default::default()
        }
    }

    /// Lines of `text` without those naming what this machine or the moment decide,
    /// as compat scenario 073 filters them.
    fn steady(text: &str) -> String {
        text.lines()
            .filter(|l| {
                ![
                    "CPULoad",
                    "FreeMem",
                    "BootTime",
                    "LastBusyTime",
                    "CurrentWatts",
                    "OS=",
                    "Version=",
                ]
                .iter()
                .any(|k| l.contains(k))
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn a_node_reads_as_in_slurm() {
        // Slurm 22.05, `scontrol show node n1` on the compat suite's cluster, minus the
        // lines that vary.
        let text = record(&node_lines(&node()), false);
        assert_eq!(
            steady(&text),
            "NodeName=n1 Arch=x86_64 CoresPerSocket=4 \n   AvailableFeatures=(null)\n   \
             ActiveFeatures=(null)\n   Gres=(null)\n   State=IDLE ThreadsPerCore=1 TmpDisk=0 \
             Weight=1 Owner=N/A MCS_label=N/A\n   Partitions=debug,short \n   \
             CfgTRES=cpu=4,mem=4000M,billing=4\n   AllocTRES=\n   CapWatts=n/a\n   \
             ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n\n"
        );
        assert!(text.contains(
            "\n   NodeAddr=127.0.0.1 NodeHostName=localhost Port=17001 Version=22.05.8\n"
        ));
        assert!(text.contains("\n   CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=N/A\n"));
        assert!(text.contains("\n   RealMemory=4000 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1\n"));
        assert!(text.contains(&format!(
            "\n   BootTime=None SlurmdStartTime={}\n",
            shown(1_700_000_000)
        )));
        // With -o, lines that end in a space show two.
        let one = record(&node_lines(&node()), true);
        assert!(one.starts_with("NodeName=n1 Arch=x86_64 CoresPerSocket=4  CPUAlloc=0 "));
        assert!(one.contains(" Partitions=debug,short  BootTime=None "));
        assert!(one.ends_with(" ExtSensorsTemp=n/s\n"));
    }

    #[test]
    fn a_node_that_never_registered_has_no_architecture_version_or_system() {
        // Slurm 22.05 (compat 226): slurmctld learns them from the registration.
        let n = NodeInfo {
            agent_start: None,
            ..node()
        };
        let text = record(&node_lines(&n), false);
        assert!(
            text.starts_with("NodeName=n1 CoresPerSocket=4 \n"),
            "{text}"
        );
        assert!(text.contains("\n   NodeAddr=127.0.0.1 NodeHostName=localhost Port=17001 \n"));
        assert!(!text.contains("OS="), "{text}");
        assert!(text.contains("\n   BootTime=None SlurmdStartTime=None\n"));
    }

    #[test]
    fn a_dynamic_node_says_so_among_its_state_flags_in_slurms_order() {
        let n = NodeInfo {
            state: "future".into(),
            agent_up: false,
            dynamic: true,
            ..node()
        };
        assert_eq!(node_state(&n), "FUTURE+DYNAMIC_NORM");
        let n = NodeInfo {
            state: "drained".into(),
            agent_up: false,
            dynamic: true,
            ..node()
        };
        assert_eq!(node_state(&n), "IDLE+DRAIN+DYNAMIC_NORM+NOT_RESPONDING");
        let n = NodeInfo {
            state: "maint".into(),
            dynamic: true,
            ..node()
        };
        assert_eq!(node_state(&n), "IDLE+DYNAMIC_NORM+MAINT");
        assert_eq!(node_state(&node()), "IDLE");
    }

    #[test]
    fn a_drained_node_gone_down_beneath_its_drain_shows_down_drain() {
        // Slurm 22.05's set_node_down_ptr keeps the DRAIN flag of a drained node that
        // stops responding: DOWN+DRAIN+NOT_RESPONDING, still `drain*` to sinfo.
        let n = NodeInfo {
            state: "drained".into(),
            agent_up: false,
            down: true,
            ..node()
        };
        assert_eq!(node_state(&n), "DOWN+DRAIN+NOT_RESPONDING");
        assert_eq!(crate::slurm::sinfo_records::compact_state(&n), "drain*");
    }

    #[test]
    fn a_node_with_specialized_cores_shows_them_and_what_is_left() {
        // Slurm 22.05, the compat suite's node with CoreSpecCount=1, one job of 3 CPUs.
        let n = NodeInfo {
            cpus: 3,
            cpus_alloc: 3,
            spec_cpus: 1,
            core_spec_count: 1,
            cpu_spec_list: "3".into(),
            ..node()
        };
        let lines = node_lines(&n);
        assert_eq!(lines[1], "CPUAlloc=3 CPUEfctv=3 CPUTot=4 CPULoad=N/A");
        let spec = lines.iter().position(|l| l.starts_with("CoreSpecCount="));
        let state = lines.iter().position(|l| l.starts_with("State="));
        assert_eq!(
            spec.map(|i| lines[i].as_str()),
            Some("CoreSpecCount=1 CPUSpecList=3 ")
        );
        assert_eq!(spec.map(|i| i + 1), state, "between RealMemory= and State=");
        assert!(!node_lines(&node()).iter().any(|l| l.contains("CoreSpec")));
    }

    #[test]
    fn a_drained_or_unanswering_node_says_so() {
        let mut n = node();
        n.state = "drained".into();
        n.reason = Some("maintenance".into());
        n.reason_set = Some((0, 1_796_032_605));
        let lines = node_lines(&n);
        assert!(lines.contains(
            &"State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
                .to_string()
        ));
        assert!(lines
            .last()
            .unwrap()
            .starts_with("Reason=maintenance [root@"));
        // Drained by its slurm.conf line: the line's reason, set by no one at no known
        // time, shown bare (real Slurm 22.05.8).
        n.reason = Some("maintenance window".into());
        n.reason_set = Some((0, 0));
        assert_eq!(node_lines(&n).last().unwrap(), "Reason=maintenance window");
        // Resumed, its agent not heard from since: Slurm's `IDLE+NOT_RESPONDING`.
        let mut n = node();
        n.agent_up = false;
        assert_eq!(node_state(&n), "IDLE+NOT_RESPONDING");
    }

    fn partition() -> PartitionInfo {
        PartitionInfo {
            name: "debug".into(),
            default: true,
            state: "UP".into(),
            max_time: Some(86_400),
            default_time: None,
            nodes: vec!["n1".into(), "n2".into()],
            max_nodes: None,
            priority_tier: 1,
            access: vec![],
            qos: None,
            min_nodes: 0,
            exclusive_user: false,
            oversubscribe: String::new(),
            priority_job_factor: 1,
            grace_time: 0,
            preempt_mode: "OFF".into(),
            def_mem: None,
            tres: "cpu=8,mem=8000M,node=2,billing=8".into(),
        }
    }

    #[test]
    fn a_partition_reads_as_in_slurm() {
        // Slurm 22.05, `scontrol show partition` on the compat suite's cluster.
        assert_eq!(
            record(&partition_lines(&partition(), 8), false),
            "PartitionName=debug\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   \
             AllocNodes=ALL Default=YES QoS=N/A\n   \
             DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO\n   \
             MaxNodes=UNLIMITED MaxTime=1-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n   \
             Nodes=n[1-2]\n   \
             PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n   \
             OverTimeLimit=NONE PreemptMode=OFF\n   \
             State=UP TotalCPUs=8 TotalNodes=2 SelectTypeParameters=NONE\n   \
             JobDefaults=(null)\n   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n   \
             TRES=cpu=8,mem=8000M,node=2,billing=8\n\n"
        );
        let mut short = partition();
        short.name = "short".into();
        short.default = false;
        short.max_time = Some(1800);
        short.max_nodes = Some(1);
        short.nodes = vec!["n1".into()];
        short.tres = "cpu=4,mem=4000M,node=1,billing=4".into();
        short.def_mem = Some(MemoryRequest::PerCpu(500));
        assert_eq!(
            record(&partition_lines(&short, 4), true),
            "PartitionName=short AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL \
             Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO \
             GraceTime=0 Hidden=NO MaxNodes=1 MaxTime=00:30:00 MinNodes=0 LLN=NO \
             MaxCPUsPerNode=UNLIMITED Nodes=n1 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO \
             ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP \
             TotalCPUs=4 TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) \
             DefMemPerCPU=500 MaxMemPerNode=UNLIMITED TRES=cpu=4,mem=4000M,node=1,billing=4\n"
        );
    }
}
