//! How `sinfo` groups nodes into lines, as Slurm 22.05's does.
//!
//! Partition by partition (configuration order), node by node, each node joins the
//! first line it matches, else starts a new one. A node matches a line when the
//! partition-level fields the format shows agree (its partition's name for `%P`,
//! availability for `%a`, time limit for `%l`, ...; with none of them, every partition
//! shares lines) and so do the node-level fields that split lines: state (`%t`, `%T`,
//! with its `*`), reason (`%E`), its user and time, features, GRES, host names and
//! addresses; with `-e` also CPUs, memory, disk, weight and the socket layout (without
//! it, a line shows the smallest with `+` when they differ: `4+`). A node already on a
//! line is not counted twice, so `sinfo -o %C` counts each CPU once. With `-N` every
//! node of every partition is a line of its own. When the format shows the partition,
//! every partition has a line even without nodes.
//!
//! Lines are sorted as Slurm's default `#P,-t`: by partition, in configuration order,
//! and within one by node state, highest first (Slurm's state numbers: `drain` and
//! not-responding `*` states before `mix`, `alloc`, `idle`, `down`); with `-N` by node
//! name.

use sluice_proto::types::{NodeInfo, PartitionInfo};

use super::format::Field;
use rustc_hash::{FxHashMap, FxHashSet};
use sluice_conf::duration::format_compact;
use sluice_proto::time::shown;

/// A node as sinfo lists it: its name and its fields, which alike nodes share (the
/// controller sends 10,000 alike nodes as one run: one [`NodeInfo`] for all of them,
/// its name, address and host name left empty). Its fields are the [`NodeInfo`]'s
/// (`n.cpus`); its name, address and host name are [`Node::name`], [`Node::addr`] and
/// [`Node::hostname`].
#[derive(Clone, Copy)]
pub struct Node<'a> {
    /// The node's name.
    pub name: &'a str,
    /// Its fields.
    pub info: &'a NodeInfo,
}

impl<'a> Node<'a> {
    /// A node of its own.
    #[cfg(test)]
    pub fn of(info: &'a NodeInfo) -> Self {
        Node {
            name: &info.name,
            info,
        }
    }

    /// `NodeHostname` (its name where the shared fields leave it empty).
    pub fn hostname(&self) -> &'a str {
        match self.info.node_hostname.as_str() {
            "" => self.name,
            h => h,
        }
    }

    /// `NodeAddr` (its name where the shared fields leave it empty).
    pub fn addr(&self) -> &'a str {
        match self.info.node_addr.as_str() {
            "" => self.name,
            a => a,
        }
    }
}

impl std::ops::Deref for Node<'_> {
    type Target = NodeInfo;
    fn deref(&self) -> &NodeInfo {
        self.info
    }
}

/// One line of output: the partition it was made for and its nodes (each once).
pub struct Record<'a> {
    /// The partition (none for a header probe).
    pub part: Option<&'a PartitionInfo>,
    /// Its position in the configuration.
    pub part_index: usize,
    /// Its nodes, in the order they joined.
    pub nodes: Vec<Node<'a>>,
}

/// What decides how lines are made.
pub struct Grouping<'a> {
    /// The codes of the format.
    pub codes: &'a [char],
    /// `-N`: a line per node and partition.
    pub per_node: bool,
    /// `-e`: node sizes must match exactly.
    pub exact: bool,
    /// `-R`: partitions do not matter.
    pub reasons: bool,
}

const DRAIN: u32 = 0x200;
const COMPLETING: u32 = 0x400;
const NO_RESPOND: u32 = 0x800;
const MAINT: u32 = 0x8000;

/// A node's state as Slurm numbers it (base state and flags), for sorting.
pub fn state_value(n: &NodeInfo) -> u32 {
    let busy = if n.cpus_alloc >= n.cpus { 3 } else { 5 };
    let v = match n.state.as_str() {
        "idle" => 2,
        "allocated" => 3,
        "mixed" => 5,
        "down" => 1,
        "drained" if n.down => 1 | DRAIN,
        "drained" => 2 | DRAIN,
        "draining" => busy | DRAIN,
        "maint" => 2 | MAINT,
        "completing" => busy | COMPLETING,
        _ => 0,
    };
    if n.agent_up {
        v
    } else {
        v | NO_RESPOND
    }
}

/// Whether the node is down or drained (`sinfo -R` lists those).
pub fn has_problem(n: &NodeInfo) -> bool {
    matches!(n.state.as_str(), "down" | "drained" | "draining")
}

/// The compact state (`%t`): `idle`, `mix`, `drain`, ..., `*` when not responding.
pub fn compact_state(n: &NodeInfo) -> String {
    let s = match n.state.as_str() {
        "idle" => "idle",
        "allocated" => "alloc",
        "mixed" => "mix",
        "down" => "down",
        "drained" => "drain",
        "draining" => "drng",
        "maint" => "maint",
        "completing" => "comp",
        "future" => "futr",
        _ => "unk",
    };
    format!("{s}{}", if n.agent_up || s == "futr" { "" } else { "*" })
}

/// The long state (`%T`): `idle`, `mixed`, `drained`, ..., `*` when not responding.
pub fn long_state(n: &NodeInfo) -> String {
    let quiet = n.agent_up || n.state == "future";
    format!("{}{}", n.state, if quiet { "" } else { "*" })
}

/// Who set node `n`'s reason, as sinfo's `%u` (`long`: `%U`, with the uid) shows it:
/// `Unknown` for a node without a reason, `Unk(UID)` for a uid without a name; a
/// reason the controller gave without a record (a node not responding) is SlurmUser's.
fn reason_user(n: &NodeInfo, long: bool) -> String {
    match (n.reason_set, &n.reason) {
        (Some((uid, _)), _) => {
            match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
            {
                Some(u) if long => format!("{}({uid})", u.name),
                Some(u) => u.name,
                None => format!("Unk({uid})"),
            }
        }
        (None, Some(_)) if long => "slurm(0)".into(),
        (None, Some(_)) => "slurm".into(),
        (None, None) => "Unknown".into(),
    }
}

/// The value of partition-level code `c` for a partition, if `c` is one.
fn part_value(c: char, p: &PartitionInfo) -> Option<String> {
    Some(match c {
        'P' => format!("{}{}", p.name, if p.default { "*" } else { "" }),
        'R' => p.name.clone(),
        'a' => {
            if p.state == "UP" {
                "up".into()
            } else {
                p.state.to_ascii_lowercase()
            }
        }
        'l' => p.max_time.map_or("infinite".into(), format_compact),
        'L' => p.default_time.map_or("n/a".into(), format_compact),
        's' => match p.max_nodes {
            Some(m) if m <= p.min_nodes.max(1) => m.to_string(),
            Some(m) => format!("{}-{m}", p.min_nodes.max(1)),
            None => format!("{}-infinite", p.min_nodes.max(1)),
        },
        'r' => "no".into(),
        'h' => {
            if p.oversubscribe.is_empty() {
                "NO".into()
            } else {
                p.oversubscribe.clone()
            }
        }
        'g' => "all".into(),
        'M' => {
            if p.preempt_mode.is_empty() {
                "OFF".into()
            } else {
                p.preempt_mode.clone()
            }
        }
        'p' => p.priority_tier.to_string(),
        'I' => p.priority_job_factor.to_string(),
        // Sluice has no per-partition `MaxCPUsPerNode` or `AllocNodes` limits.
        'B' => "UNLIMITED".into(),
        'S' => "all".into(),
        _ => return None,
    })
}

/// Fields only `-O` names (`AllocMem`, `Sockets`, ...): codes no `-o` letter can
/// reach.
pub const ALLOC_MEM: char = '\u{e000}';
/// `-O Sockets`.
pub const SOCKETS: char = '\u{e001}';
/// `-O Cores`.
pub const CORES: char = '\u{e002}';
/// `-O Threads`.
pub const THREADS: char = '\u{e003}';

/// The value of node-level code `c` that splits lines (or, `exact`, must be equal).
fn node_key(c: char, n: &Node, exact: bool) -> Option<String> {
    Some(match c {
        't' | 'T' => long_state(n),
        'E' => n.reason.clone().unwrap_or_default(),
        'u' | 'U' => reason_user(n, true),
        'H' => n.reason_set.map_or(0, |r| r.1).to_string(),
        'f' | 'b' => n.features.join(","),
        'G' => n.gres.clone(),
        'n' => n.hostname().to_string(),
        'o' => n.addr().to_string(),
        // Only with -e, and then as slurmctld's sinfo compares versions (each node's
        // own string, so every registered node is a line of its own).
        'v' if exact => match n.agent_start {
            Some(_) => n.name.to_string(),
            None => "N/A".into(),
        },
        // As sinfo: nodes with different memory in use are on different lines.
        ALLOC_MEM => n.memory_alloc.to_string(),
        'c' if exact => n.cpus_total().to_string(),
        'm' if exact => n.memory.to_string(),
        'w' if exact => n.weight.to_string(),
        'z' if exact => {
            format!(
                "{}:{}:{}",
                n.sockets, n.cores_per_socket, n.threads_per_core
            )
        }
        'X' | SOCKETS if exact => n.sockets.to_string(),
        'Y' | CORES if exact => n.cores_per_socket.to_string(),
        'Z' | THREADS if exact => n.threads_per_core.to_string(),
        _ => return None,
    })
}

/// The Slurm version a node's agent registered as (Sluice's agents answer as 22.05.8),
/// `N/A` for one that has not registered since the controller started: slurmctld
/// knows a node's version only from its registration. A line shows its first node's.
fn version(n: &Node) -> &'static str {
    super::common::node_version(n.agent_start).unwrap_or("N/A")
}

/// Builds the lines for `nodes` of `parts` (those kept by `-p`), sorted.
pub fn build<'a>(
    parts: &[(usize, &'a PartitionInfo)],
    nodes: &[Node<'a>],
    g: &Grouping,
) -> Vec<Record<'a>> {
    let mut out: Vec<Record> = Vec::new();
    let part_shown = g.codes.iter().any(|c| matches!(c, 'P' | 'R'));
    if !g.per_node && part_shown {
        for &(i, p) in parts {
            out.push(Record {
                part: Some(p),
                part_index: i,
                nodes: Vec::new(),
            });
        }
    }
    // A line is found by its key (its partition-level values, none with `-R`, and its
    // first node's splitting values), computed once per node: a lookup, not a scan of
    // the lines, so that 10,000 nodes cost 10,000 lookups. The partitions' own lines,
    // still without nodes, take the first node whose partition-level values they share.
    // Partition-level values are numbered once per partition (all alike with `-R`), so
    // a node's key holds a number, not a copy of them. Keys and names are hashed with
    // Fx (no attacker chooses them here): SipHash was a third of sinfo's time.
    type Key = (usize, Vec<Option<String>>);
    let mut lines: FxHashMap<Key, usize> = FxHashMap::default();
    let mut part_keys: Vec<Vec<Option<String>>> = Vec::new();
    let mut part_key = |p: &PartitionInfo| -> usize {
        if g.reasons {
            return 0;
        }
        let values: Vec<Option<String>> = g.codes.iter().map(|&c| part_value(c, p)).collect();
        match part_keys.iter().position(|k| *k == values) {
            Some(i) => i,
            None => {
                part_keys.push(values);
                part_keys.len() - 1
            }
        }
    };
    let mut empty: Vec<(usize, usize)> = out
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, part_key(r.part?))))
        .collect();
    let mut joined: FxHashSet<(usize, &str)> = FxHashSet::default();
    for &(i, p) in parts {
        let pk = part_key(p);
        let members: FxHashSet<&str> = p.nodes.iter().map(String::as_str).collect();
        for &n in nodes.iter().filter(|n| members.contains(n.name)) {
            if g.reasons && !has_problem(&n) {
                continue;
            }
            if g.per_node {
                out.push(Record {
                    part: Some(p),
                    part_index: i,
                    nodes: vec![n],
                });
                continue;
            }
            let key: Key = (
                pk,
                g.codes.iter().map(|&c| node_key(c, &n, g.exact)).collect(),
            );
            let filled = lines.get(&key).copied();
            let waiting = empty.iter().position(|&(_, k)| k == pk);
            let line = match (filled, waiting.map(|w| empty[w].0)) {
                (Some(f), Some(e)) if e < f => Some(e),
                (Some(f), _) => Some(f),
                (None, e) => e,
            };
            match line {
                Some(l) => {
                    if let Some(w) = waiting.filter(|&w| empty[w].0 == l) {
                        empty.remove(w);
                        let slot = lines.entry(key).or_insert(l);
                        *slot = (*slot).min(l);
                    }
                    if joined.insert((l, n.name)) {
                        out[l].nodes.push(n);
                    }
                }
                None => {
                    joined.insert((out.len(), n.name));
                    lines.insert(key, out.len());
                    out.push(Record {
                        part: Some(p),
                        part_index: i,
                        nodes: vec![n],
                    });
                }
            }
        }
    }
    if g.per_node {
        out.sort_by_cached_key(name_key);
    } else {
        let state = |r: &Record| r.nodes.first().map_or(0, |n| state_value(n));
        out.sort_by_key(|r| std::cmp::Reverse(state(r)));
        out.sort_by_key(|r| r.part_index);
    }
    out
}

/// A node name split into its text and trailing number, for natural ordering.
pub(crate) fn natural(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (text, number) = name.split_at(name.len() - digits);
    (
        text.to_string(),
        number.parse().unwrap_or(0),
        name.to_string(),
    )
}

fn name_key(r: &Record) -> (String, u64, String) {
    r.nodes
        .first()
        .map_or((String::new(), 0, String::new()), |n| natural(n.name))
}

/// How many of a line's nodes are busy (allocated, mixed, draining or completing) and
/// how many out (down or drained): `%A` and `%F`'s first and third, as Slurm counts
/// them.
fn busy_and_out(r: &Record) -> (usize, usize) {
    let count = |states: &[&str]| {
        r.nodes
            .iter()
            .filter(|n| states.contains(&n.state.as_str()))
            .count()
    };
    (
        count(&["allocated", "mixed", "draining", "completing"]),
        count(&["down", "drained"]),
    )
}

/// `min` or, when the nodes differ, `min+` (Slurm's way of showing a range).
fn min_plus(values: impl Iterator<Item = u64>) -> Option<String> {
    let v: Vec<u64> = values.collect();
    let (min, max) = (*v.iter().min()?, *v.iter().max()?);
    Some(if min == max {
        min.to_string()
    } else {
        format!("{min}+")
    })
}

/// The value and header of code `c` for a line.
pub fn field(c: char, r: &Record) -> Option<Field> {
    let f = |h: &'static str, v: String| {
        Some(Field {
            header: h,
            value: v,
        })
    };
    let first = r.nodes.first();
    let part = |c: char| r.part.and_then(|p| part_value(c, p));
    let sizes = |get: &dyn Fn(&NodeInfo) -> u64, none: &str| {
        min_plus(r.nodes.iter().map(|n| get(n))).unwrap_or_else(|| none.to_string())
    };
    match c {
        'P' | 'R' => f("PARTITION", part(c).unwrap_or_default()),
        'a' => f("AVAIL", part('a').unwrap_or_else(|| "up".into())),
        'l' => f("TIMELIMIT", part('l').unwrap_or_else(|| "infinite".into())),
        'L' => f("DEFAULTTIME", part('L').unwrap_or_else(|| "n/a".into())),
        's' => f("JOB_SIZE", part('s').unwrap_or_else(|| "1-infinite".into())),
        'r' => f("ROOT", "no".into()),
        'h' => f("OVERSUBSCRIBE", part('h').unwrap_or_else(|| "NO".into())),
        'g' => f("GROUPS", "all".into()),
        'M' => f("PREEMPT_MODE", part('M').unwrap_or_else(|| "OFF".into())),
        'p' => f("PRIO_TIER", part('p').unwrap_or_else(|| "1".into())),
        'D' => f("NODES", r.nodes.len().to_string()),
        't' => f("STATE", first.map_or("n/a".into(), |n| compact_state(n))),
        'T' => f("STATE", first.map_or("n/a".into(), |n| long_state(n))),
        'N' => {
            let mut names: Vec<&str> = r.nodes.iter().map(|n| n.name).collect();
            names.sort_by_cached_key(|n| natural(n));
            f("NODELIST", sluice_conf::hostlist::compress(&names))
        }
        'n' => f("HOSTNAMES", {
            let mut h: Vec<&str> = r.nodes.iter().map(|n| n.hostname()).collect();
            h.dedup();
            sluice_conf::hostlist::compress(&h)
        }),
        'o' => f("NODE_ADDR", {
            let mut a: Vec<&str> = r.nodes.iter().map(|n| n.addr()).collect();
            a.dedup();
            sluice_conf::hostlist::compress(&a)
        }),
        'C' => f("CPUS(A/I/O/T)", {
            let (mut alloc, mut idle, mut other, mut total) = (0u32, 0u32, 0u32, 0u32);
            for n in &r.nodes {
                // CPUs kept for the system (CoreSpecCount) count as idle, as in Slurm.
                let used = n.cpus_alloc.min(n.cpus);
                alloc += used;
                total += n.cpus_total();
                if matches!(n.state.as_str(), "down" | "drained" | "draining") {
                    other += n.cpus_total() - used;
                } else {
                    idle += n.cpus_total() - used;
                }
            }
            format!("{alloc}/{idle}/{other}/{total}")
        }),
        'A' => f("NODES(A/I)", {
            let (a, o) = busy_and_out(r);
            format!("{a}/{}", r.nodes.len() - a - o)
        }),
        'F' => f("NODES(A/I/O/T)", {
            let (a, o) = busy_and_out(r);
            let total = r.nodes.len();
            format!("{a}/{}/{o}/{total}", total - a - o)
        }),
        'c' => f("CPUS", sizes(&|n| u64::from(n.cpus_total()), "0")),
        'm' => f("MEMORY", sizes(&|n| n.memory, "0")),
        'w' => f("WEIGHT", sizes(&|n| u64::from(n.weight), "1")),
        'd' => f("TMP_DISK", "0".into()),
        'z' => f("S:C:T", {
            let part = |get: &dyn Fn(&NodeInfo) -> u64| sizes(get, "1");
            format!(
                "{}:{}:{}",
                part(&|n| u64::from(n.sockets)),
                part(&|n| u64::from(n.cores_per_socket)),
                part(&|n| u64::from(n.threads_per_core))
            )
        }),
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
        'u' | 'U' => f(
            "USER",
            first.map_or("Unknown".into(), |n| reason_user(n, c == 'U')),
        ),
        // A reason slurm.conf gave has no time.
        'H' => f(
            "TIMESTAMP",
            first
                .and_then(|n| n.reason_set)
                .filter(|&(_, t)| t != 0)
                .map_or("Unknown".into(), |(_, t)| shown(t)),
        ),
        'f' | 'b' => f(
            if c == 'f' {
                "AVAIL_FEATURES"
            } else {
                "ACTIVE_FEATURES"
            },
            first
                .map(|n| n.features.join(","))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "(null)".into()),
        ),
        'e' => f(
            "FREE_MEM",
            first.map_or("0".into(), |n| {
                (n.memory - n.memory_alloc.min(n.memory)).to_string()
            }),
        ),
        'O' => f("CPU_LOAD", "0.00".into()),
        ALLOC_MEM => f("ALLOCMEM", first.map_or(0, |n| n.memory_alloc).to_string()),
        SOCKETS | 'X' => f("SOCKETS", sizes(&|n| u64::from(n.sockets), "0")),
        CORES | 'Y' => f("CORES", sizes(&|n| u64::from(n.cores_per_socket), "0")),
        THREADS | 'Z' => f("THREADS", sizes(&|n| u64::from(n.threads_per_core), "0")),
        'B' => f(
            "MAX_CPUS_PER_NODE",
            part('B').unwrap_or_else(|| "UNLIMITED".into()),
        ),
        'I' => f("PRIO_JOB_FACTOR", part('I').unwrap_or_else(|| "1".into())),
        'S' => f("ALLOCNODES", part('S').unwrap_or_else(|| "all".into())),
        // Without `-M`, as sinfo 22.05 prints it.
        'V' => f("CLUSTER", "N/A".into()),
        'v' => f("VERSION", first.map_or("N/A", version).into()),
        _ => None,
    }
}
