//! `topology.conf`: the network topology behind topology-aware placement, as a tree of
//! switches (`topology/tree`) or as blocks of nodes (`topology/block`).
//!
//! Syntax as in `topology.conf(5)` (Slurm 23.11 and later; the `topology/ring` lines of
//! later releases, and `topology.yaml`, are not read here), read the way
//! [`crate::slurm_conf`] reads slurm.conf: `Key=Value` pairs separated by whitespace,
//! "Parameter names are case insensitive", `#` starts a comment, a trailing `\`
//! continues the line, `Include FILE` reads another file. `Nodes=` and `Switches=` take
//! hostlist expressions ("the node and switch names need not be consecutive").
//!
//! One file describes one topology, whichever plugin slurm.conf names:
//!
//! - a tree: `SwitchName=s0 Nodes=tux[0-3] [LinkSpeed=N]` for a leaf switch,
//!   `SwitchName=s4 Switches=s[0-3]` for a switch above others ([`Tree`]);
//! - blocks: `BlockName=b1 Nodes=tux[0-31]` lines and an optional `BlockSizes=30,120`
//!   line ([`Blocks`]).
//!
//! Every line starts with `SwitchName=`, `BlockName=` or `BlockSizes=` (Slurm reads the
//! first word as the record's key); a file that mixes switch and block lines is refused.
//!
//! Architecture note: this module only reads and checks the file and answers questions
//! about it (which leaf switch, which block, which sizes). It does not place jobs; the
//! scheduler asks these questions.
//!
//! Where Sluice is stricter than Slurm (which logs and carries on), the item's
//! documentation says so: a node under two leaf switches or in two blocks, an unknown
//! key, a node that slurm.conf does not define ([`TopologyConf::validate`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::hostlist;
use crate::reader::ConfReader;
use crate::slurm_conf::ConfError;

/// Longest `SwitchName=`. `topology.conf(5)`: the name "must be specified and cannot be
/// longer than 64 characters".
pub const MAX_SWITCH_NAME: usize = 64;

/// `LinkSpeed` of a switch line without one (Slurm's default). `topology.conf(5)`: "The
/// units used are arbitrary and this information is currently not used."
pub const DEFAULT_LINK_SPEED: u32 = 1;

/// Largest ratio of a `BlockSizes` value to the base block size: 2^15 (Slurm plans with
/// at most sixteen block levels).
pub const MAX_BLOCK_RATIO: u32 = 1 << 15;

/// Aggregate levels, in base blocks, when topology.conf has no `BlockSizes` line: Slurm
/// then pairs blocks into groups of 2, 4, 8 and 16.
pub const DEFAULT_AGGREGATE_LEVELS: [u32; 5] = [1, 2, 4, 8, 16];

/// A parsed topology.conf: a tree of switches or a set of blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyConf {
    /// `SwitchName=` lines, for `TopologyPlugin=topology/tree`.
    Tree(Tree),
    /// `BlockName=` and `BlockSizes=` lines, for `TopologyPlugin=topology/block`.
    Block(Blocks),
}

impl TopologyConf {
    /// The tree, if this is one.
    pub fn as_tree(&self) -> Option<&Tree> {
        match self {
            TopologyConf::Tree(t) => Some(t),
            TopologyConf::Block(_) => None,
        }
    }

    /// The blocks, if these are blocks.
    pub fn as_blocks(&self) -> Option<&Blocks> {
        match self {
            TopologyConf::Block(b) => Some(b),
            TopologyConf::Tree(_) => None,
        }
    }

    /// Checks the topology against the nodes slurm.conf defines (`node_names`) and
    /// returns warnings. See [`Tree::validate`] and [`Blocks::validate`].
    ///
    /// Errors: a node named in topology.conf that slurm.conf does not define (Slurm only
    /// warns, "Invalid hostnames in switch configuration", and leaves the name out;
    /// Sluice refuses, as the name is most likely a typo that would change placement).
    pub fn validate(&self, node_names: &[String]) -> Result<Vec<String>, String> {
        match self {
            TopologyConf::Tree(t) => t.validate(node_names),
            TopologyConf::Block(b) => b.validate(node_names),
        }
    }
}

/// Checks that every node a switch or block (`kind` `name`, at `path`:`line`) names is
/// one slurm.conf defines.
///
/// Errors: `FILE:LINE: KIND NAME names nodes that slurm.conf does not define: LIST`.
fn all_known(
    known: &HashSet<&str>,
    kind: &str,
    name: &str,
    nodes: &[String],
    path: &Path,
    line: usize,
) -> Result<(), String> {
    let unknown: Vec<&str> = nodes
        .iter()
        .map(String::as_str)
        .filter(|n| !known.contains(n))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}:{line}: {kind} {name} names nodes that slurm.conf does not define: {}",
        path.display(),
        hostlist::compress(&unknown)
    ))
}

impl fmt::Display for TopologyConf {
    /// The topology as topology.conf text, one line per switch or block (hostlists
    /// compressed), which [`parse_str`] reads back to the same topology (for one that
    /// was parsed, or built in code with names a file could hold).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyConf::Tree(t) => t.fmt(f),
            TopologyConf::Block(b) => b.fmt(f),
        }
    }
}

/// One `SwitchName=` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// `SwitchName=`: "internal to Slurm and arbitrary", unique in the file.
    pub name: String,
    /// `Nodes=` expanded, without repeats, in the order written: the nodes of a leaf
    /// switch. Empty for a switch above others (and for an empty leaf switch).
    pub nodes: Vec<String>,
    /// `Switches=` as indices into [`Tree::switches`], without repeats, in the order
    /// written. Empty for a leaf switch.
    pub children: Vec<usize>,
    /// `LinkSpeed=`, [`DEFAULT_LINK_SPEED`] when absent.
    pub link_speed: u32,
    /// The file the line is in.
    pub path: PathBuf,
    /// 1-based line (the first line of a continued line).
    pub line: usize,
}

impl Switch {
    /// Whether the switch is a leaf switch: it lists no switches (it has nodes, or
    /// nothing at all, which Slurm takes for an empty leaf switch).
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }
}

/// A `topology/tree` topology: switches, leaf switches holding nodes.
///
/// Despite the name it need not be a tree: the topology guide's second example lists the
/// same four leaf switches under four upper switches, so a switch may have several
/// parents, and several switches may have none (then "no job will span leaf switches
/// without a common parent"). It may not loop ([`Tree::new`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    switches: Vec<Switch>,
    /// Per switch: 0 for a leaf, else one more than its highest child (Slurm's level).
    levels: Vec<u32>,
    /// Per switch: the switches listing it in `Switches=`, in file order.
    parents: Vec<Vec<usize>>,
    /// Per switch: the leaf switches at or below it, sorted.
    leaves_under: Vec<Vec<usize>>,
    /// Node name to its leaf switch.
    leaf_of: HashMap<String, usize>,
    /// Switch name to index.
    by_name: HashMap<String, usize>,
}

impl Tree {
    /// Builds a tree from switches whose `children` are already indices, checking what
    /// [`parse_str`] checks of the file as a whole; errors point at the offending
    /// switch's `path` and `line` (any values will do for switches made in code).
    ///
    /// Errors: no switches (Slurm: "No switches configured"); two switches of one name
    /// (Slurm: "has already been defined"); a switch with both nodes and child switches
    /// (`topology.conf(5)`: `Nodes` are the "Child nodes of the named leaf switch");
    /// a child index out of range, the switch itself, or listed twice; a node under two
    /// leaf switches, or twice under one; switches that loop (Slurm: "Switch
    /// configuration is not a tree").
    ///
    /// A node under two leaf switches only draws a warning from Slurm ("Multiple leaf
    /// switches contain nodes"); Sluice refuses it, so that every node has one leaf
    /// switch ([`Tree::leaf_of`]).
    pub fn new(switches: Vec<Switch>) -> Result<Tree, ConfError> {
        let at = |i: usize, message: String| ConfError {
            path: switches[i].path.clone(),
            line: switches[i].line,
            message,
        };
        if switches.is_empty() {
            return Err(ConfError {
                path: PathBuf::new(),
                line: 0,
                message: "no switches configured".into(),
            });
        }
        let n = switches.len();
        let mut by_name: HashMap<String, usize> = HashMap::with_capacity(n);
        let mut leaf_of: HashMap<String, usize> = HashMap::new();
        for (i, sw) in switches.iter().enumerate() {
            if let Some(&prev) = by_name.get(&sw.name) {
                return Err(at(
                    i,
                    already_defined(
                        "switch",
                        &sw.name,
                        &switches[prev].path,
                        switches[prev].line,
                    ),
                ));
            }
            by_name.insert(sw.name.clone(), i);
            if !sw.nodes.is_empty() && !sw.children.is_empty() {
                return Err(at(i, both_nodes_and_switches(&sw.name)));
            }
            let mut seen = HashSet::new();
            for &c in &sw.children {
                if c >= n {
                    return Err(at(
                        i,
                        format!(
                            "switch {} lists switch index {c}, but there are {n} switches",
                            sw.name
                        ),
                    ));
                }
                if c == i {
                    return Err(at(i, format!("switch {} lists itself", sw.name)));
                }
                if !seen.insert(c) {
                    return Err(at(
                        i,
                        format!("switch {} lists switch {} twice", sw.name, switches[c].name),
                    ));
                }
            }
            for node in &sw.nodes {
                if let Some(&prev) = leaf_of.get(node) {
                    return Err(at(
                        i,
                        if prev == i {
                            format!("switch {} lists node {node} twice", sw.name)
                        } else {
                            two_leaf_switches(node, &switches[prev], &sw.name)
                        },
                    ));
                }
                leaf_of.insert(node.clone(), i);
            }
        }

        let order = post_order(&switches).map_err(|cycle| {
            // Start the loop at the switch written first, and report its line.
            let first = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
            let mut names: Vec<&str> = cycle[first..]
                .iter()
                .chain(&cycle[..first])
                .map(|&s| switches[s].name.as_str())
                .collect();
            names.push(names[0]);
            at(
                cycle[first],
                format!(
                    "switches form a loop: {} (a switch cannot be below itself)",
                    names.join(" -> ")
                ),
            )
        })?;

        let mut levels = vec![0u32; n];
        let mut leaves_under: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &s in &order {
            let sw = &switches[s];
            if sw.is_leaf() {
                leaves_under[s] = vec![s];
                continue;
            }
            levels[s] = 1 + sw.children.iter().map(|&c| levels[c]).max().unwrap_or(0);
            let mut under: Vec<usize> = sw
                .children
                .iter()
                .flat_map(|&c| leaves_under[c].iter().copied())
                .collect();
            under.sort_unstable();
            under.dedup();
            leaves_under[s] = under;
        }
        let mut parents: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (s, sw) in switches.iter().enumerate() {
            for &c in &sw.children {
                parents[c].push(s);
            }
        }
        Ok(Tree {
            switches,
            levels,
            parents,
            leaves_under,
            leaf_of,
            by_name,
        })
    }

    /// The switches, in file order (included files in place).
    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }

    /// The index of the switch named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The leaf switch `node` is under, or `None` for a node under no switch.
    pub fn leaf_of(&self, node: &str) -> Option<usize> {
        self.leaf_of.get(node).copied()
    }

    /// The level of switch `sw`: 0 for a leaf switch, else one more than the highest
    /// level among its children (so a switch above a leaf and a level-1 switch is at
    /// level 2), as Slurm counts levels.
    ///
    /// Panics if `sw` is out of range.
    pub fn level(&self, sw: usize) -> u32 {
        self.levels[sw]
    }

    /// The highest level of any switch (0 when every switch is a leaf switch).
    pub fn height(&self) -> u32 {
        self.levels.iter().copied().max().unwrap_or(0)
    }

    /// The parent of switch `sw`: the first switch in the file that lists it in
    /// `Switches=`, or `None` for a top switch. See [`Tree::parents`] for all of them.
    ///
    /// Panics if `sw` is out of range.
    pub fn parent(&self, sw: usize) -> Option<usize> {
        self.parents[sw].first().copied()
    }

    /// Every switch that lists `sw` in `Switches=`, in file order.
    ///
    /// Panics if `sw` is out of range.
    pub fn parents(&self, sw: usize) -> &[usize] {
        &self.parents[sw]
    }

    /// The switches without a parent, in file order.
    pub fn roots(&self) -> Vec<usize> {
        (0..self.switches.len())
            .filter(|&s| self.parents[s].is_empty())
            .collect()
    }

    /// The leaf switches at or below switch `sw`, sorted by index (`[sw]` for a leaf).
    ///
    /// Panics if `sw` is out of range.
    pub fn leaves_under(&self, sw: usize) -> &[usize] {
        &self.leaves_under[sw]
    }

    /// The nodes below switch `sw`: those of its leaf switches, leaf by leaf in file
    /// order.
    ///
    /// Panics if `sw` is out of range.
    pub fn nodes_under(&self, sw: usize) -> Vec<&str> {
        self.leaves_under[sw]
            .iter()
            .flat_map(|&l| self.switches[l].nodes.iter().map(String::as_str))
            .collect()
    }

    /// The lowest switch that has every one of `nodes` below it: the one of lowest
    /// level, the first in the file among equals. This is the switch the topology guide
    /// has Slurm look for ("the lowest level switch in the hierarchy that can satisfy a
    /// job's request").
    ///
    /// `None` when `nodes` is empty, when a node is under no switch, or when no switch
    /// joins them all (their leaf switches lack a common parent, so no job can span
    /// them).
    pub fn lowest_common_switch<S: AsRef<str>>(&self, nodes: &[S]) -> Option<usize> {
        let mut leaves = Vec::with_capacity(nodes.len());
        for n in nodes {
            leaves.push(self.leaf_of(n.as_ref())?);
        }
        leaves.sort_unstable();
        leaves.dedup();
        if leaves.is_empty() {
            return None;
        }
        (0..self.switches.len())
            .filter(|&s| {
                leaves
                    .iter()
                    .all(|l| self.leaves_under[s].binary_search(l).is_ok())
            })
            .min_by_key(|&s| (self.levels[s], s))
    }

    /// How many distinct leaf switches `nodes` are under (the count `--switches` limits).
    /// Nodes under no switch do not count.
    pub fn switches_spanned<S: AsRef<str>>(&self, nodes: &[S]) -> u32 {
        let leaves: HashSet<usize> = nodes
            .iter()
            .filter_map(|n| self.leaf_of(n.as_ref()))
            .collect();
        leaves.len() as u32
    }

    /// Checks the tree against the nodes slurm.conf defines and returns warnings, worded
    /// after Slurm's: nodes under no switch (`topology.conf(5)`: "All nodes in the
    /// network must be connected to at least one switch"; such nodes cannot join a job
    /// with nodes under a switch), and no switch having every node below it (then no job
    /// can span the separate parts).
    ///
    /// Errors: a switch naming a node that slurm.conf does not define, with the switch's
    /// file and line (Slurm only warns; see [`TopologyConf::validate`]).
    pub fn validate(&self, node_names: &[String]) -> Result<Vec<String>, String> {
        let known: HashSet<&str> = node_names.iter().map(String::as_str).collect();
        for sw in &self.switches {
            all_known(&known, "switch", &sw.name, &sw.nodes, &sw.path, sw.line)?;
        }
        let mut warnings = Vec::new();
        let missing: Vec<&str> = node_names
            .iter()
            .map(String::as_str)
            .filter(|n| self.leaf_of(n).is_none())
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "switches lack access to {} nodes: {} (every node must be connected to at least one switch)",
                missing.len(),
                hostlist::compress(&missing)
            ));
        }
        let reaches_all = (0..self.switches.len()).any(|s| {
            let below: usize = self.leaves_under[s]
                .iter()
                .map(|&l| self.switches[l].nodes.len())
                .sum();
            below == known.len()
        });
        if !known.is_empty() && !reaches_all {
            warnings.push(
                "no switch can reach all nodes through its descendants (no job can span the separate parts)"
                    .to_string(),
            );
        }
        Ok(warnings)
    }
}

impl fmt::Display for Tree {
    /// One `SwitchName=` line per switch, in order (`LinkSpeed=` only when not the
    /// default).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for sw in &self.switches {
            write!(f, "SwitchName={}", sw.name)?;
            if !sw.nodes.is_empty() {
                write!(f, " Nodes={}", hostlist::compress(&sw.nodes))?;
            }
            if !sw.children.is_empty() {
                let names: Vec<&str> = sw
                    .children
                    .iter()
                    .map(|&c| self.switches[c].name.as_str())
                    .collect();
                write!(f, " Switches={}", names.join(","))?;
            }
            if sw.link_speed != DEFAULT_LINK_SPEED {
                write!(f, " LinkSpeed={}", sw.link_speed)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// The switches in an order where every switch comes after its children, or the
/// switches of a loop (each listing the next, the last listing the first).
fn post_order(switches: &[Switch]) -> Result<Vec<usize>, Vec<usize>> {
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; switches.len()];
    let mut order = Vec::with_capacity(switches.len());
    for root in 0..switches.len() {
        if state[root] != NEW {
            continue;
        }
        state[root] = OPEN;
        // (switch, how many of its children were visited); iterative, as a chain of
        // thousands of switches would overflow the stack.
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(top) = stack.last_mut() {
            let (s, next) = *top;
            match switches[s].children.get(next) {
                Some(&c) => {
                    top.1 += 1;
                    match state[c] {
                        NEW => {
                            state[c] = OPEN;
                            stack.push((c, 0));
                        }
                        OPEN => {
                            let from = stack.iter().position(|&(x, _)| x == c).unwrap_or(0);
                            return Err(stack[from..].iter().map(|&(x, _)| x).collect());
                        }
                        _ => {}
                    }
                }
                None => {
                    state[s] = DONE;
                    order.push(s);
                    stack.pop();
                }
            }
        }
    }
    Ok(order)
}

/// One `BlockName=` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// `BlockName=`: "internal to Slurm and arbitrary", unique in the file.
    pub name: String,
    /// `Nodes=` expanded, without repeats, in the order written.
    pub nodes: Vec<String>,
    /// The file the line is in.
    pub path: PathBuf,
    /// 1-based line (the first line of a continued line).
    pub line: usize,
}

/// A `topology/block` topology: base blocks of nodes, in file order, which Slurm pairs
/// into larger aggregate blocks.
///
/// As `topology.conf(5)` describes it, neighbouring blocks pair into a block of the next
/// level, and those pair again, up to the largest size; `BlockSizes` says which of these
/// sizes are enforced ([`Blocks::aggregate_levels`], [`Blocks::aggregates`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocks {
    blocks: Vec<Block>,
    block_sizes: Vec<u32>,
    /// Node name to its block.
    block_of: HashMap<String, usize>,
}

/// A higher-level block: consecutive base blocks that Slurm joins ([`Blocks::aggregates`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// The level's size in base blocks (a value of [`Blocks::aggregate_levels`]).
    pub size: u32,
    /// The base blocks joined, by index: `size` of them, or fewer for the last one.
    pub blocks: Range<usize>,
}

impl Blocks {
    /// Builds the blocks from their lines and the `BlockSizes` values (empty when the
    /// file has none), checking what [`parse_str`] checks of the file as a whole; errors
    /// point at the offending block's `path` and `line`.
    ///
    /// Errors: no blocks (Slurm: "No blocks configured"); `block_sizes` that
    /// [`check_block_sizes`] refuses; two blocks of one name (Slurm: "has already been
    /// defined"); a block without nodes; a block with fewer nodes than the base block
    /// size (`topology.conf(5)`: "Each block must have at least the planning base block
    /// size count of nodes"); a node in two blocks, or twice in one.
    ///
    /// Slurm does not look for a node in two blocks; Sluice refuses it, so that every
    /// node has one block ([`Blocks::block_of`]).
    pub fn new(blocks: Vec<Block>, block_sizes: Vec<u32>) -> Result<Blocks, ConfError> {
        let at = |i: usize, message: String| ConfError {
            path: blocks[i].path.clone(),
            line: blocks[i].line,
            message,
        };
        if blocks.is_empty() {
            return Err(ConfError {
                path: PathBuf::new(),
                line: 0,
                message: "no blocks configured".into(),
            });
        }
        if !block_sizes.is_empty() {
            check_block_sizes(&block_sizes).map_err(|m| ConfError {
                path: blocks[0].path.clone(),
                line: 0,
                message: format!("BlockSizes: {m}"),
            })?;
        }
        let base = block_sizes
            .first()
            .map_or(blocks[0].nodes.len(), |&b| b as usize);
        let mut names: HashMap<&str, usize> = HashMap::with_capacity(blocks.len());
        let mut block_of: HashMap<String, usize> = HashMap::new();
        for (i, b) in blocks.iter().enumerate() {
            if let Some(&prev) = names.get(b.name.as_str()) {
                return Err(at(
                    i,
                    already_defined("block", &b.name, &blocks[prev].path, blocks[prev].line),
                ));
            }
            names.insert(&b.name, i);
            if b.nodes.is_empty() {
                return Err(at(i, format!("block {} has no nodes", b.name)));
            }
            for node in &b.nodes {
                if let Some(&prev) = block_of.get(node) {
                    return Err(at(
                        i,
                        if prev == i {
                            format!("block {} lists node {node} twice", b.name)
                        } else {
                            two_blocks(node, &blocks[prev], &b.name)
                        },
                    ));
                }
                block_of.insert(node.clone(), i);
            }
            if b.nodes.len() < base {
                let why = if block_sizes.is_empty() {
                    "the first block's size, as there is no BlockSizes"
                } else {
                    "the first BlockSizes value"
                };
                return Err(at(i, format!(
                    "block {} has {} nodes, fewer than the base block size {base} ({why}); every block needs at least that many",
                    b.name,
                    b.nodes.len()
                )));
            }
        }
        Ok(Blocks {
            blocks,
            block_sizes,
            block_of,
        })
    }

    /// The base blocks, in file order (included files in place). Their order matters:
    /// aggregates join neighbours.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// `BlockSizes=` as written, in nodes: the base block size, then larger sizes; empty
    /// when the file has no such line.
    pub fn block_sizes(&self) -> &[u32] {
        &self.block_sizes
    }

    /// The block `node` is in, or `None` for a node in no block.
    pub fn block_of(&self, node: &str) -> Option<usize> {
        self.block_of.get(node).copied()
    }

    /// The base block size in nodes ("the planning base block size"): the first
    /// `BlockSizes` value, or without one the first block's node count. Blocks may hold
    /// more nodes than this, never fewer.
    pub fn base_block_size(&self) -> u32 {
        self.block_sizes
            .first()
            .copied()
            .unwrap_or(self.blocks[0].nodes.len() as u32)
    }

    /// The block levels Slurm plans with, in base blocks, smallest first: `BlockSizes`
    /// divided by the base block size (`BlockSizes=30,120` is 1 and 4), or
    /// [`DEFAULT_AGGREGATE_LEVELS`] without `BlockSizes`; cut after the first level that
    /// holds every block, as larger ones would add nothing. Always starts with 1.
    pub fn aggregate_levels(&self) -> Vec<u32> {
        let base = self.base_block_size();
        let configured: Vec<u32> = if self.block_sizes.is_empty() {
            DEFAULT_AGGREGATE_LEVELS.to_vec()
        } else {
            self.block_sizes.iter().map(|s| s / base).collect()
        };
        let count = self.blocks.len() as u64;
        let mut out = Vec::with_capacity(configured.len());
        for level in configured {
            out.push(level);
            if u64::from(level) >= count {
                break;
            }
        }
        out
    }

    /// The block sizes in nodes that Slurm enforces: [`Blocks::aggregate_levels`] times
    /// the base block size (for `BlockSizes=30,120` and four blocks: 30 and 120).
    pub fn aggregate_sizes(&self) -> Vec<u32> {
        let base = self.base_block_size();
        self.aggregate_levels()
            .into_iter()
            .map(|l| l.saturating_mul(base))
            .collect()
    }

    /// The higher-level blocks, level by level (levels after the first of
    /// [`Blocks::aggregate_levels`]), each level cutting the base blocks in file order
    /// into runs of its size.
    ///
    /// As in Slurm's block plugin, a shorter run left at the end is kept only when it
    /// holds more base blocks than the level below's size (otherwise that level already
    /// covers it): five blocks with the default levels give `0..2`, `2..4` at size 2,
    /// `0..4` at size 4, and `0..5` at size 8.
    pub fn aggregates(&self) -> Vec<Aggregate> {
        let levels = self.aggregate_levels();
        let count = self.blocks.len();
        let mut out = Vec::new();
        for pair in levels.windows(2) {
            let (below, size) = (pair[0] as usize, pair[1] as usize);
            for start in (0..count).step_by(size) {
                let remaining = count - start;
                if size > remaining && below >= remaining {
                    continue;
                }
                out.push(Aggregate {
                    size: pair[1],
                    blocks: start..(start + size).min(count),
                });
            }
        }
        out
    }

    /// Checks a job's `--segment` size against the blocks: Slurm's block plugin refuses
    /// a segment larger than the base block size, and a job whose node count is not a
    /// multiple of its segment size.
    ///
    /// Errors: a segment of 0 nodes, larger than [`Blocks::base_block_size`], or not
    /// dividing `job_nodes`.
    pub fn check_segment(&self, segment: u32, job_nodes: u32) -> Result<(), String> {
        let base = self.base_block_size();
        if segment == 0 {
            return Err("segment size must be at least 1".into());
        }
        if segment > base {
            return Err(format!(
                "segment size {segment} is larger than the base block size {base}"
            ));
        }
        if !job_nodes.is_multiple_of(segment) {
            return Err(format!(
                "{job_nodes} nodes are not a multiple of the segment size {segment}"
            ));
        }
        Ok(())
    }

    /// Checks the blocks against the nodes slurm.conf defines and returns warnings:
    /// nodes in no block (Slurm: "blocks lack access to N nodes"; the block plugin does
    /// not use them).
    ///
    /// Errors: a block naming a node that slurm.conf does not define, with the block's
    /// file and line (Slurm only warns; see [`TopologyConf::validate`]).
    pub fn validate(&self, node_names: &[String]) -> Result<Vec<String>, String> {
        let known: HashSet<&str> = node_names.iter().map(String::as_str).collect();
        for b in &self.blocks {
            all_known(&known, "block", &b.name, &b.nodes, &b.path, b.line)?;
        }
        let missing: Vec<&str> = node_names
            .iter()
            .map(String::as_str)
            .filter(|n| self.block_of(n).is_none())
            .collect();
        Ok(if missing.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "blocks lack access to {} nodes: {} (the block plugin does not use them)",
                missing.len(),
                hostlist::compress(&missing)
            )]
        })
    }
}

impl fmt::Display for Blocks {
    /// One `BlockName=` line per block, in order, then `BlockSizes=` if the file had it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.blocks {
            writeln!(
                f,
                "BlockName={} Nodes={}",
                b.name,
                hostlist::compress(&b.nodes)
            )?;
        }
        if !self.block_sizes.is_empty() {
            let sizes: Vec<String> = self.block_sizes.iter().map(u32::to_string).collect();
            writeln!(f, "BlockSizes={}", sizes.join(","))?;
        }
        Ok(())
    }
}

/// Parses a `BlockSizes=` value: comma-separated node counts, the base block size first
/// (see [`check_block_sizes`]).
///
/// Errors: an empty value or item, an item that is not a whole number from 1 to
/// 4294967295, and what [`check_block_sizes`] refuses.
pub fn parse_block_sizes(value: &str) -> Result<Vec<u32>, String> {
    if value.trim().is_empty() {
        return Err("needs a value (the base block size, then larger sizes)".into());
    }
    let mut sizes = Vec::new();
    for item in value.split(',').map(str::trim) {
        let n = item
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0 && item.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| format!("'{item}' is not a positive number"))?;
        sizes.push(n);
    }
    check_block_sizes(&sizes)?;
    Ok(sizes)
}

/// Checks `BlockSizes` values: `topology.conf(5)`: "List of the planning base block
/// size, alongside any higher-level block sizes that would be enforced. [...] Successive
/// BlockSizes must be a power of two larger than the prior values." So each value after
/// the first is a previous one times 2, 4, 8, ...; Slurm also caps the last at
/// [`MAX_BLOCK_RATIO`] times the first.
///
/// Errors: no values, a zero, a value not larger than the one before it, a value that
/// is not the one before it times a power of two, a value above [`MAX_BLOCK_RATIO`]
/// times the base.
pub fn check_block_sizes(sizes: &[u32]) -> Result<(), String> {
    let Some(&base) = sizes.first() else {
        return Err("needs at least the base block size".into());
    };
    if sizes.contains(&0) {
        return Err("a block size of 0".into());
    }
    for pair in sizes.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        if next <= prev {
            return Err(format!(
                "{next} is not larger than {prev} (sizes grow from the base block size)"
            ));
        }
        if !next.is_multiple_of(prev) || !(next / prev).is_power_of_two() {
            return Err(format!(
                "{next} is not {prev} times a power of two (each size doubles the one before it, or more)"
            ));
        }
    }
    let last = sizes[sizes.len() - 1];
    if last / base > MAX_BLOCK_RATIO {
        return Err(format!(
            "{last} is more than {MAX_BLOCK_RATIO} times the base block size {base}"
        ));
    }
    Ok(())
}

/// Reads and parses a topology.conf file (and the files it includes).
///
/// Errors: a file that cannot be read, and what [`parse_str`] refuses.
pub fn read(path: &Path) -> Result<TopologyConf, ConfError> {
    let mut p = Parser::default();
    p.read_file(path, 0)?;
    p.finish(path)
}

/// Parses topology.conf text; `path` is used for messages and for relative `Include`s.
///
/// Errors, each with file and line: a line that does not start with `SwitchName=`,
/// `BlockName=` or `BlockSizes=`; switch lines and block lines in one file; a key given
/// twice on a line; a key the line's kind does not take (Slurm logs "Parsing error at
/// unrecognized key" and reads on; Sluice refuses); an empty or bracketed name; a
/// `SwitchName` longer than [`MAX_SWITCH_NAME`]; a bad `Nodes=` or `Switches=` hostlist;
/// a `LinkSpeed` that is not a number; `Nodes=` with `Switches=`; a `BlockName` without
/// `Nodes=`; `BlockSizes=` with other keys on its line, given twice, or refused by
/// [`parse_block_sizes`]; a switch listing an unknown switch; and what [`Tree::new`] and
/// [`Blocks::new`] refuse (duplicate names, a node in two places, loops, small blocks).
/// An empty file is an error too (line 0): Slurm refuses a topology without switches or
/// blocks.
pub fn parse_str(text: &str, path: &Path) -> Result<TopologyConf, ConfError> {
    let mut p = Parser::default();
    p.parse_text(text, path, 0)?;
    p.finish(path)
}

/// Whether a file's records are switches or blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tree,
    Block,
}

/// A switch line whose `Switches=` names are not resolved yet.
struct PendingSwitch {
    switch: Switch,
    child_names: Vec<String>,
}

#[derive(Default)]
struct Parser {
    /// The kind of the file, with the place of its first line.
    kind: Option<(Kind, PathBuf, usize)>,
    switches: Vec<PendingSwitch>,
    blocks: Vec<Block>,
    /// `BlockSizes` and where it was given.
    block_sizes: Option<(Vec<u32>, PathBuf, usize)>,
    /// Switch or block name to its index.
    names: HashMap<String, usize>,
    /// Node name to the switch or block that lists it.
    homes: HashMap<String, usize>,
}

impl ConfReader for Parser {
    fn pairs_line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        self.line(kv, path, line)
    }
}

fn already_defined(what: &str, name: &str, path: &Path, line: usize) -> String {
    format!(
        "{what} {name} has already been defined (at {}:{line})",
        path.display()
    )
}

fn both_nodes_and_switches(name: &str) -> String {
    format!("switch {name} has both Nodes and Switches (only a leaf switch has nodes)")
}

fn two_leaf_switches(node: &str, first: &Switch, second: &str) -> String {
    format!(
        "node {node} is under two leaf switches: {} (at {}:{}) and {second}",
        first.name,
        first.path.display(),
        first.line
    )
}

fn two_blocks(node: &str, first: &Block, second: &str) -> String {
    format!(
        "node {node} is in two blocks: {} (at {}:{}) and {second}",
        first.name,
        first.path.display(),
        first.line
    )
}

/// Checks a `SwitchName=` or `BlockName=` value: one name (no brackets, commas or
/// whitespace, so that `Switches=` can name it), not empty.
fn check_name(key: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{key}: needs a value"));
    }
    if name.contains(['[', ']', ',']) || name.contains(char::is_whitespace) {
        return Err(format!("{key}: '{name}' is not one name (one per line)"));
    }
    Ok(())
}

/// Expands a `Nodes=` or `Switches=` hostlist, dropping repeats.
fn expand_names(key: &str, value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Err(format!("{key}: needs a hostlist"));
    }
    let names = hostlist::expand(value).map_err(|e| format!("{key}: {e}"))?;
    let mut seen = HashSet::with_capacity(names.len());
    Ok(names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect())
}

/// A line's pairs by canonical key (from `allowed`), refusing repeats and other keys.
fn keyed(
    kv: Vec<(String, String)>,
    allowed: &[&'static str],
    kind: &str,
) -> Result<HashMap<&'static str, String>, String> {
    let mut got: HashMap<&'static str, String> = HashMap::new();
    for (k, v) in kv {
        let Some(&canon) = allowed.iter().find(|a| a.eq_ignore_ascii_case(&k)) else {
            return Err(format!(
                "unknown key '{k}' ({kind} lines take {})",
                allowed[1..].join(", ")
            ));
        };
        if got.insert(canon, v).is_some() {
            return Err(format!("{k} given twice on one line"));
        }
    }
    Ok(got)
}

impl Parser {
    /// One logical line: a switch, a block or the block sizes.
    fn line(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), ConfError> {
        let err = |message: String| ConfError {
            path: path.to_path_buf(),
            line,
            message,
        };
        let (kind, key) = match kv[0].0.to_ascii_lowercase().as_str() {
            "switchname" => (Kind::Tree, "SwitchName"),
            "blockname" => (Kind::Block, "BlockName"),
            "blocksizes" => (Kind::Block, "BlockSizes"),
            _ => {
                return Err(err(format!(
                    "a line starts with SwitchName=, BlockName= or BlockSizes=, not '{}'",
                    kv[0].0
                )))
            }
        };
        match &self.kind {
            Some((k, first_path, first_line)) if *k != kind => {
                let started = match k {
                    Kind::Tree => "tree",
                    Kind::Block => "block",
                };
                return Err(err(format!(
                    "{key} in a {started} topology (begun at {}:{first_line}); a file describes switches or blocks, not both",
                    first_path.display()
                )));
            }
            Some(_) => {}
            None => self.kind = Some((kind, path.to_path_buf(), line)),
        }
        match key {
            "SwitchName" => self.switch(kv, path, line).map_err(err),
            "BlockName" => self.block(kv, path, line).map_err(err),
            _ => self.sizes(kv, path, line).map_err(err),
        }
    }

    fn switch(
        &mut self,
        kv: Vec<(String, String)>,
        path: &Path,
        line: usize,
    ) -> Result<(), String> {
        let mut got = keyed(
            kv,
            &["SwitchName", "Switches", "Nodes", "LinkSpeed"],
            "SwitchName",
        )?;
        let name = got.remove("SwitchName").unwrap_or_default();
        check_name("SwitchName", &name)?;
        if name.chars().count() > MAX_SWITCH_NAME {
            return Err(format!(
                "SwitchName: '{name}' is longer than {MAX_SWITCH_NAME} characters"
            ));
        }
        let nodes = got
            .get("Nodes")
            .map(|v| expand_names("Nodes", v))
            .transpose()?
            .unwrap_or_default();
        let child_names = got
            .get("Switches")
            .map(|v| expand_names("Switches", v))
            .transpose()?
            .unwrap_or_default();
        if got.contains_key("Nodes") && got.contains_key("Switches") {
            return Err(both_nodes_and_switches(&name));
        }
        let link_speed = match got.get("LinkSpeed") {
            None => DEFAULT_LINK_SPEED,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|_| v.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    format!("LinkSpeed: '{v}' is not a number from 0 to {}", u32::MAX)
                })?,
        };
        let index = self.switches.len();
        if let Some(&prev) = self.names.get(&name) {
            let p = &self.switches[prev].switch;
            return Err(already_defined("switch", &name, &p.path, p.line));
        }
        for node in &nodes {
            if let Some(&prev) = self.homes.get(node) {
                return Err(two_leaf_switches(node, &self.switches[prev].switch, &name));
            }
        }
        self.names.insert(name.clone(), index);
        for node in &nodes {
            self.homes.insert(node.clone(), index);
        }
        self.switches.push(PendingSwitch {
            switch: Switch {
                name,
                nodes,
                children: Vec::new(),
                link_speed,
                path: path.to_path_buf(),
                line,
            },
            child_names,
        });
        Ok(())
    }

    fn block(&mut self, kv: Vec<(String, String)>, path: &Path, line: usize) -> Result<(), String> {
        let got = keyed(kv, &["BlockName", "Nodes"], "BlockName")?;
        let name = got.get("BlockName").cloned().unwrap_or_default();
        check_name("BlockName", &name)?;
        let nodes = match got.get("Nodes") {
            None => return Err(format!("block {name} has no Nodes=")),
            Some(v) => expand_names("Nodes", v)?,
        };
        if let Some(&prev) = self.names.get(&name) {
            let b = &self.blocks[prev];
            return Err(already_defined("block", &name, &b.path, b.line));
        }
        for node in &nodes {
            if let Some(&prev) = self.homes.get(node) {
                return Err(two_blocks(node, &self.blocks[prev], &name));
            }
        }
        let index = self.blocks.len();
        self.names.insert(name.clone(), index);
        for node in &nodes {
            self.homes.insert(node.clone(), index);
        }
        self.blocks.push(Block {
            name,
            nodes,
            path: path.to_path_buf(),
            line,
        });
        Ok(())
    }

    fn sizes(&mut self, kv: Vec<(String, String)>, path: &Path, line: usize) -> Result<(), String> {
        if let Some((k, _)) = kv.get(1) {
            return Err(format!(
                "BlockSizes takes a line of its own (found {k} after it)"
            ));
        }
        if let Some((_, p, l)) = &self.block_sizes {
            return Err(format!(
                "BlockSizes given twice (first at {}:{l})",
                p.display()
            ));
        }
        let sizes = parse_block_sizes(&kv[0].1).map_err(|m| format!("BlockSizes: {m}"))?;
        self.block_sizes = Some((sizes, path.to_path_buf(), line));
        Ok(())
    }

    /// Resolves switch names and builds the topology.
    fn finish(self, path: &Path) -> Result<TopologyConf, ConfError> {
        match self.kind {
            None => Err(ConfError {
                path: path.to_path_buf(),
                line: 0,
                message: "no SwitchName or BlockName lines (no switches or blocks configured)"
                    .into(),
            }),
            Some((Kind::Tree, ..)) => {
                let mut switches = Vec::with_capacity(self.switches.len());
                for pending in &self.switches {
                    let sw = &pending.switch;
                    let mut children = Vec::with_capacity(pending.child_names.len());
                    for child in &pending.child_names {
                        match self.names.get(child) {
                            None => {
                                return Err(ConfError {
                                    path: sw.path.clone(),
                                    line: sw.line,
                                    message: format!(
                                        "switch {} lists unknown switch '{child}'",
                                        sw.name
                                    ),
                                })
                            }
                            Some(&c) => children.push(c),
                        }
                    }
                    switches.push(Switch {
                        children,
                        ..sw.clone()
                    });
                }
                Tree::new(switches).map(TopologyConf::Tree)
            }
            Some((Kind::Block, ..)) => {
                let (sizes, sizes_path, sizes_line) =
                    self.block_sizes.unwrap_or((Vec::new(), PathBuf::new(), 0));
                if self.blocks.is_empty() {
                    return Err(ConfError {
                        path: sizes_path,
                        line: sizes_line,
                        message: "BlockSizes without any BlockName line (no blocks configured)"
                            .into(),
                    });
                }
                Blocks::new(self.blocks, sizes).map(TopologyConf::Block)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<TopologyConf, ConfError> {
        parse_str(text, Path::new("topology.conf"))
    }

    fn tree(text: &str) -> Tree {
        match parse(text).unwrap() {
            TopologyConf::Tree(t) => t,
            other => panic!("not a tree: {other:?}"),
        }
    }

    fn blocks(text: &str) -> Blocks {
        match parse(text).unwrap() {
            TopologyConf::Block(b) => b,
            other => panic!("not blocks: {other:?}"),
        }
    }

    fn names(expr: &str) -> Vec<String> {
        hostlist::expand(expr).unwrap()
    }

    fn switch(name: &str, nodes: &str, children: Vec<usize>, line: usize) -> Switch {
        Switch {
            name: name.into(),
            nodes: if nodes.is_empty() {
                vec![]
            } else {
                names(nodes)
            },
            children,
            link_speed: DEFAULT_LINK_SPEED,
            path: "topology.conf".into(),
            line,
        }
    }

    const TWO_LEVEL: &str = "SwitchName=s0 Nodes=n[1-4]\n\
                             SwitchName=s1 Nodes=n[5-8]\n\
                             SwitchName=top Switches=s[0-1]\n";

    #[test]
    fn a_two_level_tree() {
        let t = tree(TWO_LEVEL);
        assert_eq!(
            t.switches(),
            [
                switch("s0", "n[1-4]", vec![], 1),
                switch("s1", "n[5-8]", vec![], 2),
                switch("top", "", vec![0, 1], 3),
            ]
        );
        assert_eq!((0..3).map(|s| t.level(s)).collect::<Vec<_>>(), [0, 0, 1]);
        assert_eq!(
            (0..3).map(|s| t.parent(s)).collect::<Vec<_>>(),
            [Some(2), Some(2), None]
        );
        assert_eq!(t.parents(0), [2]);
        assert_eq!(t.parents(2), [] as [usize; 0]);
        assert_eq!((t.height(), t.roots()), (1, vec![2]));
        assert_eq!((t.find("top"), t.find("s9")), (Some(2), None));
        assert!(t.switches()[0].is_leaf() && !t.switches()[2].is_leaf());

        let leaf = |n: &str| t.leaf_of(n);
        assert_eq!(
            [
                leaf("n1"),
                leaf("n4"),
                leaf("n5"),
                leaf("n8"),
                leaf("n9"),
                leaf("")
            ],
            [Some(0), Some(0), Some(1), Some(1), None, None]
        );
        assert_eq!(
            (t.leaves_under(0), t.leaves_under(2)),
            (&[0][..], &[0, 1][..])
        );
        assert_eq!(t.nodes_under(2), names("n[1-8]"));
        assert_eq!(t.nodes_under(1), names("n[5-8]"));

        assert_eq!(t.lowest_common_switch(&["n1", "n4"]), Some(0));
        assert_eq!(t.lowest_common_switch(&["n5"]), Some(1));
        assert_eq!(t.lowest_common_switch(&["n2", "n7"]), Some(2));
        assert_eq!(t.lowest_common_switch(&["n1", "n9"]), None);
        assert_eq!(t.lowest_common_switch::<&str>(&[]), None);

        assert_eq!(t.switches_spanned(&["n1", "n2", "n3"]), 1);
        assert_eq!(t.switches_spanned(&["n1", "n5", "n8"]), 2);
        assert_eq!(t.switches_spanned(&["n1", "n9"]), 1);
        assert_eq!(t.switches_spanned::<&str>(&[]), 0);
    }

    #[test]
    fn the_guides_three_level_tree() {
        // Topology guide, first example: eight nodes, every switch with two children.
        let t = tree(
            "SwitchName=s0 Nodes=tux[0-1]\nSwitchName=s1 Nodes=tux[2-3]\n\
             SwitchName=s2 Nodes=tux[4-5]\nSwitchName=s3 Nodes=tux[6-7]\n\
             SwitchName=s4 Switches=s[0-1]\nSwitchName=s5 Switches=s[2-3]\n\
             SwitchName=s6 Switches=s[4-5]\n",
        );
        assert_eq!(
            (0..7).map(|s| t.level(s)).collect::<Vec<_>>(),
            [0, 0, 0, 0, 1, 1, 2]
        );
        assert_eq!(
            (0..7).map(|s| t.parent(s)).collect::<Vec<_>>(),
            [Some(4), Some(4), Some(5), Some(5), Some(6), Some(6), None]
        );
        assert_eq!(t.height(), 2);
        assert_eq!(t.leaves_under(6), [0, 1, 2, 3]);
        assert_eq!(t.lowest_common_switch(&["tux0", "tux1"]), Some(0));
        assert_eq!(t.lowest_common_switch(&["tux0", "tux3"]), Some(4));
        assert_eq!(t.lowest_common_switch(&["tux4", "tux7"]), Some(5));
        assert_eq!(t.lowest_common_switch(&["tux5", "tux6"]), Some(5));
        assert_eq!(t.lowest_common_switch(&["tux0", "tux7"]), Some(6));
        assert_eq!(
            t.switches_spanned(&["tux0", "tux2", "tux4", "tux6", "tux7"]),
            4
        );
    }

    #[test]
    fn switches_with_several_parents_and_link_speeds() {
        // Topology guide, second example: every leaf switch under four upper switches.
        let text = "SwitchName=s0 Nodes=tux[0-3]   LinkSpeed=900\n\
                    SwitchName=s1 Nodes=tux[4-7]   LinkSpeed=900\n\
                    SwitchName=s2 Nodes=tux[8-11]  LinkSpeed=900\n\
                    SwitchName=s3 Nodes=tux[12-15] LinkSpeed=1800\n\
                    SwitchName=s4 Switches=s[0-3]  LinkSpeed=1800\n\
                    SwitchName=s5 Switches=s[0-3]  LinkSpeed=1800\n\
                    SwitchName=s6 Switches=s[0-3]  LinkSpeed=1800\n\
                    SwitchName=s7 Switches=s[0-3]  LinkSpeed=1800\n";
        let t = tree(text);
        assert_eq!(
            t.switches()
                .iter()
                .map(|s| s.link_speed)
                .collect::<Vec<_>>(),
            [900, 900, 900, 1800, 1800, 1800, 1800, 1800]
        );
        assert_eq!(t.parents(0), [4, 5, 6, 7]);
        assert_eq!(t.parent(3), Some(4));
        assert_eq!(t.roots(), [4, 5, 6, 7]);
        assert_eq!((t.level(7), t.height()), (1, 1));
        assert_eq!(t.lowest_common_switch(&["tux0", "tux15"]), Some(4));

        // "it is legal to remove the line" of the top switch: leaves without a parent.
        let t = tree(&text.lines().take(4).collect::<Vec<_>>().join("\n"));
        assert_eq!((t.roots(), t.height()), (vec![0, 1, 2, 3], 0));
        assert_eq!(t.lowest_common_switch(&["tux0", "tux3"]), Some(0));
        assert_eq!(t.lowest_common_switch(&["tux0", "tux4"]), None);
        assert_eq!(t.switches_spanned(&["tux0", "tux4"]), 2);
    }

    #[test]
    fn empty_leaf_switches_and_uneven_levels() {
        let t = tree(
            "SwitchName=spare\nSwitchName=s0 Nodes=a1\n\
             SwitchName=mid Switches=s0\nSwitchName=top Switches=mid,spare\n",
        );
        assert!(t.switches()[0].is_leaf());
        assert_eq!(t.switches()[0].nodes, Vec::<String>::new());
        assert_eq!((0..4).map(|s| t.level(s)).collect::<Vec<_>>(), [0, 0, 1, 2]);
        assert_eq!(t.leaves_under(3), [0, 1]);
        assert_eq!(t.nodes_under(3), ["a1"]);
        assert_eq!(t.lowest_common_switch(&["a1"]), Some(1));
        assert_eq!(t.parent(0), Some(3));
    }

    #[test]
    fn repeats_inside_one_hostlist_are_dropped() {
        let t = tree("SwitchName=s0 Nodes=n[1-3],n2\nSwitchName=s1 Switches=s0,s0\n");
        assert_eq!(t.switches()[0].nodes, names("n[1-3]"));
        assert_eq!(t.switches()[1].children, [0]);
        assert_eq!(t.parents(0), [1]);
    }

    #[test]
    fn errors_name_file_line_and_cause() {
        let long = format!("SwitchName={} Nodes=n1\n", "x".repeat(65));
        let long_err = format!(
            "topology.conf:1: SwitchName: '{}' is longer than 64 characters",
            "x".repeat(65)
        );
        let cases: Vec<(&str, &str)> = vec![
            ("", "topology.conf: no SwitchName or BlockName lines (no switches or blocks configured)"),
            ("# only a comment\n\n", "topology.conf: no SwitchName or BlockName lines (no switches or blocks configured)"),
            ("Nodes=n1 SwitchName=s0\n", "topology.conf:1: a line starts with SwitchName=, BlockName= or BlockSizes=, not 'Nodes'"),
            ("SwitchName=s0 Nodes=n1 Colour=red\n", "topology.conf:1: unknown key 'Colour' (SwitchName lines take Switches, Nodes, LinkSpeed)"),
            ("SwitchName=s0 Nodes=n1 stray\n", "topology.conf:1: unknown key 'stray' (SwitchName lines take Switches, Nodes, LinkSpeed)"),
            ("SwitchName=s0 Nodes=n1 nodes=n2\n", "topology.conf:1: nodes given twice on one line"),
            ("SwitchName=\n", "topology.conf:1: SwitchName: needs a value"),
            ("SwitchName=s[0-1] Nodes=n1\n", "topology.conf:1: SwitchName: 's[0-1]' is not one name (one per line)"),
            ("SwitchName=\"s 0\" Nodes=n1\n", "topology.conf:1: SwitchName: 's 0' is not one name (one per line)"),
            (&long, &long_err),
            ("SwitchName=s0 Nodes=n[1-\n", "topology.conf:1: Nodes: invalid hostlist 'n[1-': '[' without ']'"),
            ("SwitchName=s0 Nodes=\n", "topology.conf:1: Nodes: needs a hostlist"),
            ("SwitchName=s1 Switches=s[3-1]\n", "topology.conf:1: Switches: invalid hostlist 's[3-1]': range '3-1' runs backwards"),
            ("SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", "topology.conf:1: LinkSpeed: 'fast' is not a number from 0 to 4294967295"),
            ("SwitchName=s0 Nodes=n1 LinkSpeed=-1\n", "topology.conf:1: LinkSpeed: '-1' is not a number from 0 to 4294967295"),
            ("SwitchName=s0 Nodes=n1 Switches=s1\n", "topology.conf:1: switch s0 has both Nodes and Switches (only a leaf switch has nodes)"),
            ("SwitchName=s0 Nodes=n1\n\nSwitchName=s0 Nodes=n2\n", "topology.conf:3: switch s0 has already been defined (at topology.conf:1)"),
            ("SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[4-8]\n", "topology.conf:2: node n4 is under two leaf switches: s0 (at topology.conf:1) and s1"),
            ("SwitchName=s0 Nodes=n1\nSwitchName=top Switches=s[0-1]\n", "topology.conf:2: switch top lists unknown switch 's1'"),
            ("SwitchName=s0 Switches=s0\n", "topology.conf:1: switch s0 lists itself"),
            (
                "SwitchName=leaf Nodes=n1\nSwitchName=a Switches=b,leaf\nSwitchName=b Switches=c\nSwitchName=c Switches=a\n",
                "topology.conf:2: switches form a loop: a -> b -> c -> a (a switch cannot be below itself)",
            ),
            (
                // Found from `a` (line 3), reported from `b`, the first of the loop in the file.
                "SwitchName=top Switches=a\nSwitchName=b Switches=a\nSwitchName=a Switches=b\n",
                "topology.conf:2: switches form a loop: b -> a -> b (a switch cannot be below itself)",
            ),
            ("SwitchName=s0 Nodes=n1\nBlockName=b1 Nodes=n2\n", "topology.conf:2: BlockName in a tree topology (begun at topology.conf:1); a file describes switches or blocks, not both"),
            ("BlockSizes=4\nSwitchName=s0 Nodes=n1\n", "topology.conf:2: SwitchName in a block topology (begun at topology.conf:1); a file describes switches or blocks, not both"),
            ("SwitchName=s0 Nodes=n1 \\\n", "topology.conf:1: line continued past the end of the file"),
            ("Include\n", "topology.conf:1: Include without a file name"),
            ("BlockName=b1\n", "topology.conf:1: block b1 has no Nodes="),
            ("BlockName= Nodes=n1\n", "topology.conf:1: BlockName: needs a value"),
            ("BlockName=b1 Nodes=n[1-2] Switches=s1\n", "topology.conf:1: unknown key 'Switches' (BlockName lines take Nodes)"),
            ("BlockName=b1 Nodes=n[1-2]\nBlockName=b1 Nodes=n[3-4]\n", "topology.conf:2: block b1 has already been defined (at topology.conf:1)"),
            ("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[2-3]\n", "topology.conf:2: node n2 is in two blocks: b1 (at topology.conf:1) and b2"),
            (
                "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-7]\n",
                "topology.conf:2: block b2 has 3 nodes, fewer than the base block size 4 (the first block's size, as there is no BlockSizes); every block needs at least that many",
            ),
            (
                "BlockSizes=4\nBlockName=b1 Nodes=n[1-3]\n",
                "topology.conf:2: block b1 has 3 nodes, fewer than the base block size 4 (the first BlockSizes value); every block needs at least that many",
            ),
            ("BlockSizes=4,12\n", "topology.conf:1: BlockSizes: 12 is not 4 times a power of two (each size doubles the one before it, or more)"),
            ("BlockSizes=8,4\n", "topology.conf:1: BlockSizes: 4 is not larger than 8 (sizes grow from the base block size)"),
            ("BlockSizes=8,8\n", "topology.conf:1: BlockSizes: 8 is not larger than 8 (sizes grow from the base block size)"),
            ("BlockSizes=4,x\n", "topology.conf:1: BlockSizes: 'x' is not a positive number"),
            ("BlockSizes=4,,8\n", "topology.conf:1: BlockSizes: '' is not a positive number"),
            ("BlockSizes=0\n", "topology.conf:1: BlockSizes: '0' is not a positive number"),
            ("BlockSizes=+4\n", "topology.conf:1: BlockSizes: '+4' is not a positive number"),
            ("BlockSizes=\n", "topology.conf:1: BlockSizes: needs a value (the base block size, then larger sizes)"),
            ("BlockSizes=1,65536\n", "topology.conf:1: BlockSizes: 65536 is more than 32768 times the base block size 1"),
            ("BlockSizes=4 BlockName=b1\n", "topology.conf:1: BlockSizes takes a line of its own (found BlockName after it)"),
            ("BlockSizes=4\nBlockSizes=8\n", "topology.conf:2: BlockSizes given twice (first at topology.conf:1)"),
            ("# sizes only\nBlockSizes=4\n", "topology.conf:2: BlockSizes without any BlockName line (no blocks configured)"),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), want, "{text}");
        }
        let ok = format!("SwitchName={} Nodes=n1\n", "x".repeat(64));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn continuation_comments_and_case() {
        let t = tree(
            "# Leaf switches\n\
             switchname=s0 \\\n    nodes=n[1-4]   # first rack\n\
             SWITCHNAME=s1 Nodes=n[5-8] linkspeed=100\n\
             \n\
             SwitchName=top \\ # a comment after the backslash\n  Switches=s[0-1]\n",
        );
        let mut s1 = switch("s1", "n[5-8]", vec![], 4);
        s1.link_speed = 100;
        assert_eq!(
            t.switches(),
            [
                switch("s0", "n[1-4]", vec![], 2),
                s1,
                switch("top", "", vec![0, 1], 6)
            ]
        );
    }

    #[test]
    fn include_reads_relative_to_the_including_file() {
        let dir = std::env::temp_dir().join(format!("sluice-topo-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("leaves.conf"),
            "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 \\\n Nodes=n[5-8]\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("topology.conf"),
            "# tree\ninclude leaves.conf\nSwitchName=top Switches=s[0-1]\n",
        )
        .unwrap();
        let t = read(&dir.join("topology.conf")).unwrap();
        let t = t.as_tree().unwrap();
        let places: Vec<(PathBuf, usize)> = t
            .switches()
            .iter()
            .map(|s| (s.path.clone(), s.line))
            .collect();
        assert_eq!(
            places,
            [
                (dir.join("leaves.conf"), 1),
                (dir.join("leaves.conf"), 2),
                (dir.join("topology.conf"), 3)
            ]
        );
        assert_eq!(t.lowest_common_switch(&["n1", "n8"]), Some(2));
        let e = read(&dir.join("missing.conf")).unwrap_err();
        assert_eq!(e.line, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn blocks_with_block_sizes() {
        let b = blocks(
            "BlockName=b1 Nodes=node[01-04]\nBlockName=b2 Nodes=node[05-08]\n\
             BlockName=b3 Nodes=node[09-12]\nBlockName=b4 Nodes=node[13-16]\n\
             BlockSizes=4,16\n",
        );
        let block = |name: &str, nodes: &str, line| Block {
            name: name.into(),
            nodes: names(nodes),
            path: "topology.conf".into(),
            line,
        };
        assert_eq!(
            b.blocks(),
            [
                block("b1", "node[01-04]", 1),
                block("b2", "node[05-08]", 2),
                block("b3", "node[09-12]", 3),
                block("b4", "node[13-16]", 4),
            ]
        );
        assert_eq!(b.block_sizes(), [4, 16]);
        assert_eq!(b.base_block_size(), 4);
        assert_eq!(
            [
                b.block_of("node01"),
                b.block_of("node05"),
                b.block_of("node16"),
                b.block_of("node17")
            ],
            [Some(0), Some(1), Some(3), None]
        );
        assert_eq!(b.aggregate_levels(), [1, 4]);
        assert_eq!(b.aggregate_sizes(), [4, 16]);
        assert_eq!(
            b.aggregates(),
            [Aggregate {
                size: 4,
                blocks: 0..4
            }]
        );
        assert_eq!(b.check_segment(2, 8), Ok(()));
        assert_eq!(b.check_segment(4, 16), Ok(()));
        assert_eq!(
            b.check_segment(3, 8).unwrap_err(),
            "8 nodes are not a multiple of the segment size 3"
        );
        assert_eq!(
            b.check_segment(8, 16).unwrap_err(),
            "segment size 8 is larger than the base block size 4"
        );
        assert_eq!(
            b.check_segment(0, 4).unwrap_err(),
            "segment size must be at least 1"
        );
    }

    #[test]
    fn the_man_pages_block_example() {
        // Blocks of 32 nodes planned as blocks of 30: "Each block must have at least the
        // planning base block size count of nodes".
        let b = blocks(
            "BlockName=block1 Nodes=node[1-32]\nBlockName=block2 Nodes=node[33-64]\n\
             BlockName=block3 Nodes=node[65-96]\nBlockName=block4 Nodes=node[97-128]\n\
             BlockSizes=30,120\n",
        );
        assert_eq!(b.base_block_size(), 30);
        assert_eq!(b.blocks()[2].nodes.len(), 32);
        assert_eq!(b.block_of("node33"), Some(1));
        assert_eq!(b.aggregate_levels(), [1, 4]);
        assert_eq!(b.aggregate_sizes(), [30, 120]);
        assert_eq!(
            b.aggregates(),
            [Aggregate {
                size: 4,
                blocks: 0..4
            }]
        );
    }

    /// `count` blocks of two nodes each, then `extra` (a BlockSizes line, say).
    fn pairs_of_nodes(count: usize, extra: &str) -> Blocks {
        let mut text = String::new();
        for i in 0..count {
            text.push_str(&format!(
                "BlockName=b{i} Nodes=n[{}-{}]\n",
                2 * i,
                2 * i + 1
            ));
        }
        text.push_str(extra);
        blocks(&text)
    }

    #[test]
    fn default_levels_and_the_last_short_aggregate() {
        let agg = |size, blocks| Aggregate { size, blocks };

        let b = pairs_of_nodes(5, "");
        assert_eq!((b.block_sizes(), b.base_block_size()), (&[][..], 2));
        assert_eq!(b.aggregate_levels(), [1, 2, 4, 8]);
        assert_eq!(b.aggregate_sizes(), [2, 4, 8, 16]);
        assert_eq!(
            b.aggregates(),
            [agg(2, 0..2), agg(2, 2..4), agg(4, 0..4), agg(8, 0..5)]
        );

        let b = pairs_of_nodes(3, "");
        assert_eq!(b.aggregate_levels(), [1, 2, 4]);
        assert_eq!(b.aggregates(), [agg(2, 0..2), agg(4, 0..3)]);

        let b = pairs_of_nodes(1, "");
        assert_eq!((b.aggregate_levels(), b.aggregates()), (vec![1], vec![]));

        let b = pairs_of_nodes(40, "");
        assert_eq!(b.aggregate_levels(), DEFAULT_AGGREGATE_LEVELS);

        let b = pairs_of_nodes(5, "BlockSizes=2,8\n");
        assert_eq!(b.aggregate_levels(), [1, 4]);
        assert_eq!(b.aggregates(), [agg(4, 0..4)]);

        let b = pairs_of_nodes(6, "BlockSizes=2,8\n");
        assert_eq!(b.aggregates(), [agg(4, 0..4), agg(4, 4..6)]);

        // Levels beyond the one holding every block are dropped.
        let b = pairs_of_nodes(2, "BlockSizes=2,4,8,16\n");
        assert_eq!(b.aggregate_levels(), [1, 2]);
        assert_eq!(b.aggregate_sizes(), [2, 4]);
    }

    #[test]
    fn block_size_lists() {
        assert_eq!(parse_block_sizes("4, 8 ,32"), Ok(vec![4, 8, 32]));
        assert_eq!(parse_block_sizes("30,120"), Ok(vec![30, 120]));
        assert_eq!(parse_block_sizes("18"), Ok(vec![18]));
        assert_eq!(parse_block_sizes("1,32768"), Ok(vec![1, 32768]));
        assert_eq!(
            parse_block_sizes("4,99999999999").unwrap_err(),
            "'99999999999' is not a positive number"
        );
        assert_eq!(
            check_block_sizes(&[]).unwrap_err(),
            "needs at least the base block size"
        );
        assert_eq!(check_block_sizes(&[0]).unwrap_err(), "a block size of 0");
        assert_eq!(check_block_sizes(&[3, 6, 24, 96]), Ok(()));
        assert_eq!(
            check_block_sizes(&[3, 6, 18]).unwrap_err(),
            "18 is not 6 times a power of two (each size doubles the one before it, or more)"
        );
    }

    #[test]
    fn validating_a_tree_against_slurm_conf() {
        let conf = parse(TWO_LEVEL).unwrap();
        assert_eq!(conf.validate(&names("n[1-8]")), Ok(vec![]));
        assert_eq!(
            conf.validate(&names("n[1-10]")),
            Ok(vec![
                "switches lack access to 2 nodes: n[9-10] (every node must be connected to at least one switch)".to_string(),
                "no switch can reach all nodes through its descendants (no job can span the separate parts)".to_string(),
            ])
        );
        assert_eq!(
            conf.validate(&names("n[1-6]")),
            Err(
                "topology.conf:2: switch s1 names nodes that slurm.conf does not define: n[7-8]"
                    .into()
            )
        );
        let leaves = parse("SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[5-8]\n").unwrap();
        assert_eq!(
            leaves.validate(&names("n[1-8]")),
            Ok(vec![
                "no switch can reach all nodes through its descendants (no job can span the separate parts)".to_string()
            ])
        );
        assert_eq!(
            leaves.validate(&[]).unwrap_err(),
            "topology.conf:1: switch s0 names nodes that slurm.conf does not define: n[1-4]"
        );
    }

    #[test]
    fn validating_blocks_against_slurm_conf() {
        let conf = parse("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\n").unwrap();
        assert!(conf.as_tree().is_none());
        assert_eq!(conf.as_blocks().unwrap().blocks().len(), 2);
        assert_eq!(conf.validate(&names("n[1-4]")), Ok(vec![]));
        assert_eq!(
            conf.validate(&names("n[1-4],login")),
            Ok(vec![
                "blocks lack access to 1 nodes: login (the block plugin does not use them)"
                    .to_string()
            ])
        );
        assert_eq!(
            conf.validate(&names("n[1-3]")),
            Err("topology.conf:2: block b2 names nodes that slurm.conf does not define: n4".into())
        );
    }

    #[test]
    fn display_writes_what_parse_reads() {
        let text = "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[5-8] LinkSpeed=7\n\
                    SwitchName=top Switches=s0,s1\nSwitchName=empty\n";
        let conf = parse(text).unwrap();
        assert_eq!(conf.to_string(), text);
        assert_eq!(parse(&conf.to_string()).unwrap(), conf);

        let text = "BlockName=b1 Nodes=n[01-04]\nBlockName=b2 Nodes=n[05-08]\nBlockSizes=4,8\n";
        let conf = parse(text).unwrap();
        assert_eq!(conf.to_string(), text);
        assert_eq!(parse(&conf.to_string()).unwrap(), conf);
    }

    #[test]
    fn building_a_tree_in_code_checks_it() {
        let t = Tree::new(vec![
            switch("s0", "n[1-2]", vec![], 0),
            switch("top", "", vec![0], 0),
        ])
        .unwrap();
        assert_eq!(t.lowest_common_switch(&["n1", "n2"]), Some(0));

        let err = |switches: Vec<Switch>| Tree::new(switches).unwrap_err().message;
        assert_eq!(err(vec![]), "no switches configured");
        assert_eq!(
            err(vec![switch("top", "", vec![3], 1)]),
            "switch top lists switch index 3, but there are 1 switches"
        );
        assert_eq!(
            err(vec![
                switch("s0", "", vec![], 1),
                switch("top", "", vec![0, 0], 2)
            ]),
            "switch top lists switch s0 twice"
        );
        let mut twice = switch("s0", "n1", vec![], 1);
        twice.nodes.push("n1".into());
        assert_eq!(err(vec![twice]), "switch s0 lists node n1 twice");
        assert_eq!(
            err(vec![
                switch("s0", "n1", vec![], 1),
                switch("s0", "n2", vec![], 2)
            ]),
            "switch s0 has already been defined (at topology.conf:1)"
        );
        assert_eq!(
            err(vec![
                switch("s0", "", vec![1], 1),
                switch("s1", "", vec![0], 2)
            ]),
            "switches form a loop: s0 -> s1 -> s0 (a switch cannot be below itself)"
        );
    }

    #[test]
    fn building_blocks_in_code_checks_them() {
        let block = |name: &str, nodes: &str| Block {
            name: name.into(),
            nodes: if nodes.is_empty() {
                vec![]
            } else {
                names(nodes)
            },
            path: "t".into(),
            line: 1,
        };
        let b = Blocks::new(vec![block("b1", "n[1-4]")], vec![2, 4]).unwrap();
        assert_eq!(b.base_block_size(), 2);
        let err = |blocks, sizes| Blocks::new(blocks, sizes).unwrap_err().to_string();
        assert_eq!(err(vec![], vec![]), ": no blocks configured");
        assert_eq!(
            err(vec![block("b1", "")], vec![]),
            "t:1: block b1 has no nodes"
        );
        assert_eq!(
            err(vec![block("b1", "n[1-4]")], vec![4, 6]),
            "t: BlockSizes: 6 is not 4 times a power of two (each size doubles the one before it, or more)"
        );
    }

    /// A tree of `leaves` leaf switches (`s0`, ...) of `per_leaf` nodes each, with or
    /// without a `top` switch above them all.
    fn generated_tree(leaves: usize, per_leaf: usize, top: bool) -> String {
        let mut text = String::new();
        for l in 0..leaves {
            let first = l * per_leaf;
            text.push_str(&format!(
                "SwitchName=s{l} Nodes=n[{first}-{}]\n",
                first + per_leaf - 1
            ));
        }
        if top {
            text.push_str(&format!("SwitchName=top Switches=s[0-{}]\n", leaves - 1));
        }
        text
    }

    proptest! {
        #[test]
        fn generated_trees_answer_consistently(
            leaves in 1usize..7,
            per_leaf in 1usize..5,
            top: bool,
            picks in proptest::collection::vec(0usize..100, 1..8),
        ) {
            let t = tree(&generated_tree(leaves, per_leaf, top));
            let total = leaves * per_leaf;
            for n in 0..total {
                prop_assert_eq!(t.leaf_of(&format!("n{n}")), Some(n / per_leaf));
            }
            prop_assert_eq!(t.leaf_of(&format!("n{total}")), None);
            let picked: Vec<String> = picks.iter().map(|p| format!("n{}", p % total)).collect();
            let spanned: HashSet<usize> = picks.iter().map(|p| (p % total) / per_leaf).collect();
            prop_assert_eq!(t.switches_spanned(&picked) as usize, spanned.len());
            let want = if spanned.len() == 1 {
                spanned.iter().next().copied()
            } else if top {
                Some(leaves)
            } else {
                None
            };
            prop_assert_eq!(t.lowest_common_switch(&picked), want);
            if let Some(s) = t.lowest_common_switch(&picked) {
                let under: HashSet<&str> = t.nodes_under(s).into_iter().collect();
                prop_assert!(picked.iter().all(|p| under.contains(p.as_str())));
            }
            prop_assert_eq!(t.height(), u32::from(top && leaves > 0));
        }

        #[test]
        fn lines_of_fragments_never_panic_and_print_stably(
            fragments in proptest::collection::vec(0usize..16, 0..24),
        ) {
            const PIECES: [&str; 16] = [
                "SwitchName=s0", "SwitchName=s1", "SwitchName=s2", "Switches=s[0-1]",
                "Switches=s2", "Nodes=n[1-3]", "Nodes=n[3-5]", "Nodes=n[6-9]",
                "BlockName=b1", "BlockName=b2", "BlockSizes=2,4", "LinkSpeed=5",
                " \\\n", " # note", "\n", " ",
            ];
            let text: String = fragments.iter().map(|&i| PIECES[i]).collect::<Vec<_>>().join(" ");
            if let Ok(conf) = parse(&text) {
                // What the parser accepts, it prints as text it accepts again, the same.
                let printed = conf.to_string();
                let again = parse(&printed).unwrap();
                prop_assert_eq!(&again.to_string(), &printed);
                // With no nodes in slurm.conf, any node named is unknown.
                prop_assert_eq!(conf.validate(&[]).is_ok(), !printed.contains("Nodes="));
            }
        }

        #[test]
        fn block_sizes_that_double_are_accepted(
            base in 1u32..100,
            steps in proptest::collection::vec(1u32..4, 0..5),
        ) {
            let mut sizes = vec![base];
            for s in &steps {
                sizes.push(sizes[sizes.len() - 1] << s);
            }
            prop_assert_eq!(check_block_sizes(&sizes), Ok(()));
            let text: Vec<String> = sizes.iter().map(u32::to_string).collect();
            prop_assert_eq!(parse_block_sizes(&text.join(",")), Ok(sizes.clone()));
            if sizes.len() > 1 {
                let mut odd = sizes.clone();
                let last = odd.len() - 1;
                odd[last] = odd[last - 1] * 3;
                prop_assert!(check_block_sizes(&odd).is_err());
            }
        }
    }
}
