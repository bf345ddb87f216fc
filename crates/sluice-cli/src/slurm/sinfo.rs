//! `sinfo`: partitions and nodes.

use sluice_proto::types::{NodeInfo, PartitionInfo};

use super::common::{controller, date_line, describe, fail, now, squeue_time};
use super::format::{codes, render, Field};

// Slurm 22.05's defaults (sinfo(1), checked against its output).
const DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";
const NODES: &str = "%#N %.6D %.#P %6t";
const LONG: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
const NODES_LONG: &str = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
const SUMMARY: &str = "%#P %.5a %.10l %.16F %N";

fn compact(state: &str) -> &'static str {
    match state {
        "idle" => "idle",
        "allocated" => "alloc",
        "mixed" => "mix",
        "down" => "down",
        "drained" => "drain",
        "draining" => "drng",
        "maint" => "maint",
        _ => "unk",
    }
}

/// One line of output: a partition (or none, for `-N` without partitions) and nodes
/// sharing a state.
struct Group<'a> {
    part: Option<&'a PartitionInfo>,
    nodes: Vec<&'a NodeInfo>,
}

fn field(code: char, g: &Group) -> Option<Field> {
    let f = |h: &'static str, v: String| {
        Some(Field {
            header: h,
            value: v,
        })
    };
    let first = g.nodes.first();
    let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    let cpus: (u32, u32) = g
        .nodes
        .iter()
        .fold((0, 0), |a, n| (a.0 + n.cpus_alloc, a.1 + n.cpus));
    match code {
        'P' => f(
            "PARTITION",
            g.part.map_or(String::new(), |p| {
                format!("{}{}", p.name, if p.default { "*" } else { "" })
            }),
        ),
        'R' => f(
            "PARTITION",
            g.part.map_or(String::new(), |p| p.name.clone()),
        ),
        'a' => f(
            "AVAIL",
            g.part.map_or("up".into(), |p| {
                if p.state == "UP" {
                    "up".into()
                } else {
                    p.state.to_ascii_lowercase()
                }
            }),
        ),
        'l' => f(
            "TIMELIMIT",
            g.part
                .and_then(|p| p.max_time)
                .map_or("infinite".into(), squeue_time),
        ),
        'D' => f("NODES", g.nodes.len().to_string()),
        // Slurm marks a node whose agent does not answer with `*`.
        't' => f(
            "STATE",
            first.map_or("n/a".into(), |n| {
                format!("{}{}", compact(&n.state), if n.agent_up { "" } else { "*" })
            }),
        ),
        'T' => f(
            "STATE",
            first.map_or("n/a".into(), |n| {
                format!("{}{}", n.state, if n.agent_up { "" } else { "*" })
            }),
        ),
        'N' => f("NODELIST", sluice_conf::hostlist::compress(&names)),
        'C' => f("CPUS(A/I/O/T)", {
            let down: u32 = g
                .nodes
                .iter()
                .filter(|n| n.state.starts_with("down") || n.state.starts_with("drain"))
                .map(|n| n.cpus)
                .sum();
            format!(
                "{}/{}/{}/{}",
                cpus.0,
                cpus.1 - cpus.0 - down.min(cpus.1 - cpus.0),
                down,
                cpus.1
            )
        }),
        'F' => f("NODES(A/I/O/T)", {
            let a = g
                .nodes
                .iter()
                .filter(|n| matches!(n.state.as_str(), "allocated" | "mixed" | "draining"))
                .count();
            let i = g.nodes.iter().filter(|n| n.state == "idle").count();
            let o = g.nodes.len() - a - i;
            format!("{a}/{i}/{o}/{}", g.nodes.len())
        }),
        'c' => f("CPUS", first.map_or("0".into(), |n| n.cpus.to_string())),
        'm' => f("MEMORY", first.map_or("0".into(), |n| n.memory.to_string())),
        'G' => f(
            "GRES",
            first
                .map(|n| n.gres.clone())
                .filter(|g| !g.is_empty())
                .unwrap_or_else(|| "(null)".into()),
        ),
        'E' => f(
            "REASON",
            first
                .and_then(|n| n.reason.clone())
                .unwrap_or_else(|| "none".into()),
        ),
        'f' => f(
            "AVAIL_FEATURES",
            first
                .map(|n| n.features.join(","))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "(null)".into()),
        ),
        'w' => f("WEIGHT", first.map_or("1".into(), |n| n.weight.to_string())),
        'z' => f(
            "S:C:T",
            first.map_or("1:1:1".into(), |n| {
                format!(
                    "{}:{}:{}",
                    n.sockets, n.cores_per_socket, n.threads_per_core
                )
            }),
        ),
        'd' => f("TMP_DISK", "0".into()),
        's' => f("JOB_SIZE", "1-infinite".into()),
        'r' => f("ROOT", "no".into()),
        'h' => f("OVERSUBSCRIBE", "NO".into()),
        'g' => f("GROUPS", "all".into()),
        'e' => f(
            "FREE_MEM",
            first.map_or("0".into(), |n| {
                (n.memory - n.memory_alloc.min(n.memory)).to_string()
            }),
        ),
        'O' => f("CPU_LOAD", "0.00".into()),
        _ => None,
    }
}

/// Runs `sinfo`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "sinfo";
    let (mut header, mut nodes_mode, mut long, mut summarize) = (true, false, false, false);
    let mut reasons = false;
    let mut format: Option<String> = None;
    let mut parts_filter: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].clone();
        let key = a.split('=').next().unwrap_or("").to_string();
        let value = |i: &mut usize| -> String {
            if let Some((_, v)) = a.split_once('=') {
                return v.to_string();
            }
            if !a.starts_with("--") && a.len() > 2 {
                return a[2..].to_string();
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .unwrap_or_else(|| fail(ME, format!("option '{a}' requires an argument"), 1))
        };
        match key.as_str() {
            "-h" | "--noheader" => header = false,
            "-N" | "--Node" => nodes_mode = true,
            "-l" | "--long" => long = true,
            "-s" | "--summarize" => summarize = true,
            "-R" | "--list-reasons" => reasons = true,
            "-V" | "--version" => {
                println!("slurm 22.05.8");
                return 0;
            }
            "-a" | "--all" | "-e" | "--exact" | "-r" | "--responding" => {}
            k if k == "--format" || k.starts_with("-o") => format = Some(value(&mut i)),
            k if k == "--partition" || k.starts_with("-p") => {
                parts_filter.extend(value(&mut i).split(',').map(str::to_string))
            }
            _ => fail(ME, format!("unrecognized option '{a}'"), 1),
        }
        i += 1;
    }
    let client = controller();
    let nodes: Vec<NodeInfo> = client
        .get("/v1/nodes")
        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
    if reasons && format.is_none() {
        print!("{}", list_reasons(&nodes, header));
        return 0;
    }
    let parts: Vec<PartitionInfo> = client
        .get("/v1/partitions")
        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
    let format = format.unwrap_or_else(|| {
        match (nodes_mode, long, summarize) {
            (_, _, true) => SUMMARY,
            (true, true, _) => NODES_LONG,
            (true, false, _) => NODES,
            (false, true, _) => LONG,
            _ => DEFAULT,
        }
        .to_string()
    });
    let mut groups: Vec<Group> = Vec::new();
    for p in parts
        .iter()
        .filter(|p| parts_filter.is_empty() || parts_filter.contains(&p.name))
    {
        let members: Vec<&NodeInfo> = nodes.iter().filter(|n| p.nodes.contains(&n.name)).collect();
        if nodes_mode {
            for n in members {
                groups.push(Group {
                    part: Some(p),
                    nodes: vec![n],
                });
            }
        } else if summarize {
            groups.push(Group {
                part: Some(p),
                nodes: members,
            });
        } else {
            // Nodes share a line when they agree on the state and on every field shown
            // that describes one node (CPUs, memory, GRES, features...), as in Slurm;
            // the node list, node count and CPU/node state counts sum them up.
            let own = |n: &NodeInfo| -> String {
                let single = Group {
                    part: Some(p),
                    nodes: vec![n],
                };
                let mut key = n.state.clone();
                for c in codes(&format).filter(|c| !"NDCAF".contains(*c)) {
                    if let Some(f) = field(c, &single) {
                        key.push('\u{1f}');
                        key.push_str(&f.value);
                    }
                }
                key
            };
            let mut by_state: Vec<(String, Vec<&NodeInfo>)> = Vec::new();
            for n in members {
                let key = own(n);
                match by_state.iter_mut().find(|(s, _)| *s == key) {
                    Some((_, v)) => v.push(n),
                    None => by_state.push((key, vec![n])),
                }
            }
            if by_state.is_empty() {
                groups.push(Group {
                    part: Some(p),
                    nodes: vec![],
                });
            }
            for (_, v) in by_state {
                groups.push(Group {
                    part: Some(p),
                    nodes: v,
                });
            }
        }
    }
    if nodes_mode {
        // Node by node (each node's partitions in configuration order), as Slurm lists them.
        groups.sort_by_key(|g| {
            g.nodes
                .first()
                .and_then(|n| nodes.iter().position(|m| m.name == n.name))
        });
    }
    // `%#N`/`%#P` size to the longest value, as Slurm does.
    let widest = |code: char| {
        groups
            .iter()
            .filter_map(|g| field(code, g))
            .map(|f| f.value.len())
            .max()
            .unwrap_or(0)
            .max(8)
            + 1
    };
    let format = format
        .replace("%#N", &format!("%{}N", widest('N')))
        .replace("%.#P", &format!("%.{}P", widest('P').max(9)))
        .replace("%#P", &format!("%{}P", widest('P').max(9)));
    if long {
        println!("{}", date_line(now()));
    }
    let probe = Group {
        part: None,
        nodes: vec![],
    };
    let head: Vec<Field> = codes(&format).filter_map(|c| field(c, &probe)).collect();
    let rows: Vec<Vec<Field>> = groups
        .iter()
        .map(|g| codes(&format).filter_map(|c| field(c, g)).collect())
        .collect();
    print!(
        "{}",
        render(&format, header.then_some(&head), &rows, &|c| field(
            c, &probe
        )
        .is_some())
    );
    0
}

/// `sinfo -R`: nodes that are down or drained with a reason, grouped by reason, who
/// set it and when (Slurm's `%20E %9u %19H %N`). A node whose agent stopped answering
/// has the reason `Not responding`, set by `slurm` at an unknown time.
fn list_reasons(nodes: &[NodeInfo], header: bool) -> String {
    let mut groups: Vec<((String, String, String), Vec<String>)> = Vec::new();
    for n in nodes {
        let Some(reason) = &n.reason else { continue };
        let (user, time) = match n.reason_set {
            Some((uid, t)) => (
                nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                    .ok()
                    .flatten()
                    .map(|u| u.name)
                    .unwrap_or_else(|| uid.to_string()),
                super::common::timestamp(t),
            ),
            None => ("slurm".to_string(), "Unknown".to_string()),
        };
        let key = (reason.clone(), user, time);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(n.name.clone()),
            None => groups.push((key, vec![n.name.clone()])),
        }
    }
    let mut out = String::new();
    if header {
        out.push_str(&format!(
            "{:<20} {:<9} {:<19} {}\n",
            "REASON", "USER", "TIMESTAMP", "NODELIST"
        ));
    }
    for ((reason, user, time), names) in groups {
        let reason: String = reason.chars().take(20).collect();
        let user: String = user.chars().take(9).collect();
        out.push_str(&format!(
            "{reason:<20} {user:<9} {time:<19} {}\n",
            sluice_conf::hostlist::compress(&names)
        ));
    }
    out
}
