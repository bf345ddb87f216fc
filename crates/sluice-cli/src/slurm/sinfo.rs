//! `sinfo`: partitions and nodes.

use std::mem::ManuallyDrop;

use sluice_proto::listing::ListedRun;
use sluice_proto::types::{NodeInfo, PartitionInfo};

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};

use sluice_proto::time::date_line;

use super::common::{controller, describe, fail, now, Refusal, VERSION};
use super::format::{codes_among, invalid_codes_among, Layout};
use super::help::{command_help, e, synopsis, Group};
use super::long_format;
use super::sinfo_records::{
    build, field, Grouping, Node, Record, ALLOC_MEM, CORES, SOCKETS, THREADS,
};
use super::sinfo_states::{States, VALID_STATES};

// Slurm 22.05's defaults (sinfo(1), checked against its output).
const DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";
const NODES: &str = "%#N %.6D %.#P %6t";
const LONG: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
const NODES_LONG: &str = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
const SUMMARY: &str = "%#P %.5a %.10l %.16F %N";
const REASONS: &str = "%20E %9u %19H %N";
const REASONS_LONG: &str = "%20E %12U %19H %6t %N";

/// What `sinfo` was asked for.
#[derive(Default)]
struct Options {
    header: bool,
    nodes_mode: bool,
    long: bool,
    summarize: bool,
    reasons: bool,
    exact: bool,
    format: Option<String>,
    /// `--json`: the nodes as Slurm's JSON document.
    json: bool,
    /// `-O`: the format is a field list (`NodeList:10,StateLong`).
    long_format: bool,
    partitions: Vec<String>,
    /// `-n`: only these nodes (expanded host list).
    nodes: Option<Vec<String>>,
    /// `-t`: only nodes in these states.
    states: Option<States>,
}

/// sinfo's options: Slurm 22.05's table, in its order (which orders the candidates
/// of an ambiguous prefix), with its value kinds.
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("all", Some('a')),
    Opt::flag("dead", Some('d')),
    Opt::flag("exact", Some('e')),
    Opt::flag("federation", None),
    Opt::flag("help", None),
    Opt::flag("hide", None),
    Opt::required("iterate", Some('i')),
    Opt::flag("local", None),
    Opt::flag("long", Some('l')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::required("nodes", Some('n')),
    Opt::flag("noconvert", None),
    Opt::flag("noheader", Some('h')),
    Opt::flag("Node", Some('N')),
    Opt::required("format", Some('o')),
    Opt::required("Format", Some('O')),
    Opt::required("partition", Some('p')),
    Opt::flag("responding", Some('r')),
    Opt::flag("list-reasons", Some('R')),
    Opt::flag("summarize", Some('s')),
    Opt::required("sort", Some('S')),
    Opt::required("states", Some('t')),
    Opt::flag("reservation", Some('T')),
    Opt::flag("usage", None),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::flag("json", None),
    Opt::flag("yaml", None),
];

/// sinfo's options Sluice accepts without effect.
pub(crate) const IGNORED: &[&str] = &["all", "responding"];

/// `--help`: the options Sluice acts on, in Slurm's layout.
#[rustfmt::skip]
pub(crate) const HELP: &[Group] = &[
    Group {
        title: "",
        entries: &[
            e("exact", "", "one line per exact node configuration"),
            e("noheader", "", "no header line"),
            e("json", "", "the nodes as Slurm's JSON document"),
            e("long", "", "the long format (more columns)"),
            e("nodes", "NODES", "these nodes only (a host list)"),
            e("Node", "", "one line per node"),
            e("format", "format", "the columns, as %-codes (%P %a %l %D %t %N...)"),
            e("Format", "format", "the columns, as field names (NodeList:10,...)"),
            e("partition", "PARTITION", "these partitions only"),
            e("list-reasons", "", "why nodes are down, drained or failing"),
            e("summarize", "", "node counts by state (allocated/idle/other/total)"),
            e("states", "node_state", "nodes in these states only (idle, mix, alloc, drain,\n\
                                   down, ...: any with ',', all with '&'; all)"),
            e("version", "", "print the Slurm version and exit"),
        ],
    },
    Group {
        title: "Help options:",
        entries: &[
            e("help", "", "this help"),
            e("usage", "", "a short summary of the options"),
        ],
    },
];

/// Runs `sinfo`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "sinfo";
    let mut o = Options {
        header: true,
        ..Default::default()
    };
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            // As Slurm's sinfo: words that are no option are ignored.
            Ok(Parsed::Operand(_)) => continue,
            Err(e) => Refusal::getopt(ME, &e).exit(),
        };
        match f.name() {
            "noheader" => o.header = false,
            "Node" => o.nodes_mode = true,
            "long" => o.long = true,
            "summarize" => o.summarize = true,
            "list-reasons" => o.reasons = true,
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            "exact" => o.exact = true,
            "json" => o.json = true,
            // One format, the last given: `-O` reads it as a field list.
            "format" => {
                o.format = f.value;
                o.long_format = false;
            }
            "Format" => {
                o.format = f.value;
                o.long_format = true;
            }
            "partition" => o
                .partitions
                .extend(f.value().split(',').map(str::to_string)),
            "states" => match States::parse(f.value()) {
                Ok(states) => o.states = Some(states),
                Err(word) => {
                    eprintln!("{ME}: error: Bad state string: \"{word}\"");
                    eprintln!("{ME}: error: valid states: {VALID_STATES}");
                    return 1;
                }
            },
            "nodes" => match sluice_conf::hostlist::expand(f.value()) {
                Ok(names) => o.nodes.get_or_insert_with(Vec::new).extend(names),
                Err(_) => fail(ME, format!("'{}' invalid entry for --nodes", f.value()), 1),
            },
            "help" => {
                let text = command_help("Usage: sinfo [OPTIONS]\n", HELP, OPTIONS, 29, IGNORED);
                print!("{text}");
                return 0;
            }
            "usage" => {
                print!("{}", synopsis(ME, HELP, OPTIONS, |_| true, ""));
                return 0;
            }
            // Accepted, no effect.
            n if IGNORED.contains(&n) => {}
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    // As Slurm's: `SINFO_FORMAT` is the format when no option gave one and none of
    // `-s`, `-N` and `-R` has its own.
    if o.format.is_none() && !o.summarize && !o.nodes_mode && !o.reasons {
        if let Ok(f) = std::env::var("SINFO_FORMAT") {
            o.format = Some(f);
        }
    }
    if let (false, Some(f)) = (o.long_format, &o.format) {
        if super::format::is_all(f) {
            o.format = Some(super::format::all_fields(sinfo_letter, " "));
        }
    }
    if o.long_format {
        for f in long_format::parse(o.format.as_deref().unwrap_or("")) {
            if long_code(&f.name).is_none() {
                eprintln!("{ME}: error: Invalid job format specification: {}", f.name);
            }
        }
    } else {
        for code in invalid_codes_among(o.format.as_deref().unwrap_or(""), sinfo_letter) {
            eprintln!("Invalid node format specification: {code}");
        }
    }
    let client = controller();
    // Slurm's sinfo asks for the partitions first and words a failure as
    // `slurm_load_partitions: MESSAGE`; whichever Sluice asks first fails the same way.
    let load_failed = |e: sluice_proto::ClientError| -> ! {
        eprintln!("slurm_load_partitions: {}", describe(&e));
        std::process::exit(1)
    };
    // The compact form unless `--json` prints everything (see `listing_of`).
    let (infos, names) = match o.json {
        true => client.get("/v1/nodes").map(full_listing),
        false => client
            .get_text("/v1/nodes?runs=true")
            .and_then(|text| listing_of(&text)),
    }
    .unwrap_or_else(|e| load_failed(e));
    // The process ends soon after: freeing thousands of nodes one by one would only
    // delay it.
    let (infos, names) = (ManuallyDrop::new(infos), ManuallyDrop::new(names));
    let mut nodes = nodes_of(&infos, &names);
    // FUTURE nodes are not shown, as Slurm 22.05's sinfo never asks for them, nor
    // CLOUD nodes whose agent has not registered (Slurm's powered-down cloud nodes).
    nodes.retain(|n| n.state != "future" && n.state != "cloud");
    if let Some(only) = &o.nodes {
        let only: rustc_hash::FxHashSet<&str> = only.iter().map(String::as_str).collect();
        nodes.retain(|n| only.contains(n.name));
    }
    if let Some(states) = &o.states {
        nodes.retain(|n| states.admit(n));
    }
    if o.json {
        let listed: Vec<NodeInfo> = nodes.iter().map(|n| n.info.clone()).collect();
        print!("{}", super::sinfo_json::document(&listed));
        return 0;
    }
    let parts: Vec<PartitionInfo> = client
        .get("/v1/partitions")
        .unwrap_or_else(|e| load_failed(e));
    if o.long && o.header {
        println!("{}", date_line(now()));
    }
    print!("{}", report(&o, &nodes, &parts));
    std::mem::forget((nodes, parts));
    0
}

/// The nodes' fields (one for each run of alike nodes) and each node's name with the
/// index of its fields.
type Listing = (Vec<NodeInfo>, Vec<(String, usize)>);

/// The lines `sinfo` prints for `nodes` and `parts` (the date line of `-l` aside).
fn report(o: &Options, nodes: &[Node], parts: &[PartitionInfo]) -> String {
    let format = o.format.clone().unwrap_or_else(|| {
        match (o.nodes_mode, o.long, o.summarize, o.reasons) {
            (_, _, true, _) => SUMMARY,
            (true, true, _, _) => NODES_LONG,
            (true, false, _, _) => NODES,
            (false, true, _, true) => REASONS_LONG,
            (false, false, _, true) => REASONS,
            (false, true, _, false) => LONG,
            _ => DEFAULT,
        }
        .to_string()
    });
    let shown: Vec<(usize, &PartitionInfo)> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| o.partitions.is_empty() || o.partitions.contains(&p.name))
        .collect();
    let long = o
        .long_format
        .then(|| long_format::parse(o.format.as_deref().unwrap_or("")));
    let all_codes: Vec<char> = match &long {
        Some(fields) => Layout::long(fields, long_code).codes(),
        None => codes_among(&format.replace('#', ""), sinfo_letter).collect(),
    };
    let grouping = Grouping {
        codes: &all_codes,
        per_node: o.nodes_mode,
        exact: o.exact,
        reasons: o.reasons,
    };
    let records = build(&shown, nodes, &grouping);
    let layout = match &long {
        Some(fields) => Layout::long(fields, long_code),
        None => {
            // `%#N`/`%#P` size to the longest value, as Slurm does.
            let widest = |code: char| {
                records
                    .iter()
                    .filter_map(|r| field(code, r))
                    .map(|f| f.value.len())
                    .max()
                    .unwrap_or(0)
                    .max(8)
                    + 1
            };
            // Measured only when the format asks (a node list of 10,000 names is not
            // cheap to build twice).
            let mut format = format.clone();
            if format.contains("%#N") {
                format = format.replace("%#N", &format!("%{}N", widest('N')));
            }
            if format.contains("#P") {
                let w = widest('P').max(9);
                format = format
                    .replace("%.#P", &format!("%.{w}P"))
                    .replace("%#P", &format!("%{w}P"));
            }
            Layout::among(&format, sinfo_letter)
        }
    };
    let probe = Record {
        part: None,
        part_index: 0,
        nodes: vec![],
    };
    let mut out = String::new();
    let mut scratch = String::new();
    let mut line = |r: &Record, header: bool| {
        layout.line(&mut out, &mut scratch, |c, buf| match field(c, r) {
            Some(f) => {
                buf.push_str(if header { f.header } else { &f.value });
                true
            }
            None => false,
        })
    };
    if o.header {
        line(&probe, true);
    }
    for r in &records {
        line(r, false);
    }
    out
}

/// The nodes of `GET /v1/nodes?runs=true`: the fields of each run of alike nodes once,
/// and each node's name with the index of its run's fields. A controller that does
/// not know runs ignores the parameter and answers every node in full, which is read
/// as such: one request either way.
fn listing_of(text: &str) -> Result<Listing, sluice_proto::ClientError> {
    use sluice_proto::ClientError::Decode;
    let runs: Vec<ListedRun> = match serde_json::from_str(text) {
        Ok(runs) => runs,
        Err(e) => {
            return serde_json::from_str(text)
                .map(full_listing)
                .map_err(|_| Decode(format!("{e}: {text}")))
        }
    };
    let mut names = Vec::new();
    let mut shared = Vec::with_capacity(runs.len());
    for (i, run) in runs.into_iter().enumerate() {
        let expanded =
            sluice_conf::hostlist::expand(&run.names).map_err(|e| Decode(e.to_string()))?;
        names.extend(expanded.into_iter().map(|name| (name, i)));
        shared.push(run.node.into_info());
    }
    Ok((shared, names))
}

/// The nodes of a listing: each name with its fields.
fn nodes_of<'a>(infos: &'a [NodeInfo], names: &'a [(String, usize)]) -> Vec<Node<'a>> {
    names
        .iter()
        .map(|(name, i)| Node {
            name,
            info: &infos[*i],
        })
        .collect()
}

/// Every node in full, each its own fields.
fn full_listing(nodes: Vec<NodeInfo>) -> Listing {
    let names = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    (nodes, names)
}

/// Whether `c` is one of sinfo 22.05's `-o` letters: another one (`%Q`) is printed as
/// written and reported, as Slurm does.
fn sinfo_letter(c: char) -> bool {
    "ABCDEFGHILMNOPRSTUVXYZabcdefghlmnoprstuvwz".contains(c)
}

/// The `%` code (or, for fields `-o` has no letter for, the inner code) of an `-O`
/// field name, as sinfo 22.05 names them.
fn long_code(name: &str) -> Option<char> {
    Some(match name.to_ascii_lowercase().as_str() {
        "allocmem" => ALLOC_MEM,
        "allocnodes" => 'S',
        "available" => 'a',
        "cluster" => 'V',
        "cpus" => 'c',
        "cpusload" => 'O',
        "freemem" => 'e',
        "cpusstate" => 'C',
        "cores" => CORES,
        "defaulttime" => 'L',
        "disk" => 'd',
        "features" => 'f',
        "features_act" => 'b',
        "groups" => 'g',
        "gres" => 'G',
        "maxcpuspernode" => 'B',
        "memory" => 'm',
        "nodes" => 'D',
        "nodeaddr" => 'o',
        "nodeai" => 'A',
        "nodeaiot" => 'F',
        "nodehost" => 'n',
        "nodelist" => 'N',
        "partition" => 'P',
        "partitionname" => 'R',
        "preemptmode" => 'M',
        "priorityjobfactor" => 'I',
        "prioritytier" => 'p',
        "reason" => 'E',
        "root" => 'r',
        "oversubscribe" | "share" => 'h',
        "size" => 's',
        "statecompact" => 't',
        "statelong" => 'T',
        "sockets" => SOCKETS,
        "socketcorethread" => 'z',
        "time" => 'l',
        "timestamp" => 'H',
        "threads" => THREADS,
        "user" => 'u',
        "userlong" => 'U',
        "version" => 'v',
        "weight" => 'w',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compat suite's cluster: n1 and n2 of 4 CPUs and 4000 MiB; `debug` (default,
    /// both nodes, one day) and `short` (n1, 30 minutes).
    fn cluster() -> (Vec<NodeInfo>, Vec<PartitionInfo>) {
        let node = |name: &str, partitions: &[&str]| NodeInfo {
            name: name.into(),
            state: "idle".into(),
            cpus: 4,
            memory: 4000,
            partitions: partitions.iter().map(|p| p.to_string()).collect(),
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 1,
            weight: 1,
            agent_up: true,
            node_addr: "127.0.0.1".into(),
            node_hostname: "localhost".into(),
            agent_start: Some(1_700_000_000),
            ..Default::default()
        };
        let part = |name: &str, nodes: &[&str], max_time: i64| PartitionInfo {
            name: name.into(),
            default: name == "debug",
            state: "UP".into(),
            max_time: Some(max_time),
            default_time: None,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
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
            tres: String::new(),
        };
        (
            vec![node("n1", &["debug", "short"]), node("n2", &["debug"])],
            vec![
                part("debug", &["n1", "n2"], 86_400),
                part("short", &["n1"], 1800),
            ],
        )
    }

    fn sinfo(o: Options, nodes: &[NodeInfo], parts: &[PartitionInfo]) -> String {
        let nodes: Vec<Node> = nodes.iter().map(Node::of).collect();
        report(&Options { header: true, ..o }, &nodes, parts)
    }

    fn with_format(f: &str) -> Options {
        Options {
            format: Some(f.into()),
            ..Default::default()
        }
    }

    #[test]
    fn format_fields_take_widths_suffixes_and_split_lines_by_memory_in_use() {
        // Real sinfo 22.05 (compat 129), n1 running a 2-CPU, 1000 MiB job. With -N, a
        // line per node and partition (real sinfo's order varies; Sluice's is by name).
        let (mut nodes, parts) = cluster();
        nodes[0].state = "mixed".into();
        nodes[0].cpus_alloc = 2;
        nodes[0].memory_alloc = 1000;
        let long = |spec: &str, per_node: bool| Options {
            format: Some(spec.into()),
            long_format: true,
            nodes_mode: per_node,
            ..Default::default()
        };
        assert_eq!(
            sinfo(
                long("NodeList,AllocMem,Memory,CPUsState,StateLong", true),
                &nodes,
                &parts
            ),
            format!(
                "{:<20}{:<20}{:<20}{:<20}{:<20}\n\
                 {:<20}{:<20}{:<20}{:<20}{:<20}\n\
                 {:<20}{:<20}{:<20}{:<20}{:<20}\n\
                 {:<20}{:<20}{:<20}{:<20}{:<20}\n",
                "NODELIST",
                "ALLOCMEM",
                "MEMORY",
                "CPUS(A/I/O/T)",
                "STATE",
                "n1",
                "1000",
                "4000",
                "2/2/0/4",
                "mixed",
                "n1",
                "1000",
                "4000",
                "2/2/0/4",
                "mixed",
                "n2",
                "0",
                "4000",
                "0/4/0/4",
                "idle",
            )
        );
        assert_eq!(
            sinfo(
                long("NodeList:10,CPUsState:.15,StateLong:12", true),
                &nodes,
                &parts
            ),
            "NODELIST    CPUS(A/I/O/T)STATE       \n\
             n1                2/2/0/4mixed       \n\
             n1                2/2/0/4mixed       \n\
             n2                0/4/0/4idle        \n"
        );
        // Without -N: one line per partition and memory in use.
        assert_eq!(
            sinfo(
                long("Partition:|,NodeList:|,AllocMem:|,Bogus:x", false),
                &nodes,
                &parts
            ),
            "PARTITION|NODELIST|ALLOCMEM|x\n\
             debug*|n1|1000|x\n\
             debug*|n2|0|x\n\
             short|n1|1000|x\n"
        );
        assert_eq!(long_code("cpusstate"), Some('C'));
        assert_eq!(long_code("bogus"), None);
    }

    #[test]
    fn the_less_common_letters_show_sizes_counts_and_partition_limits() {
        // Slurm 22.05 (compat 070): `%X %Y %Z` the socket layout, `%A` nodes
        // allocated/idle (mixed and completing count as allocated, drained as neither;
        // states do not split lines unless the format shows one), `%B %I %S` the
        // partition's CPU limit, job factor and allocating nodes, `%V` the cluster
        // without -M, `%v` the nodes' version.
        let (mut nodes, mut parts) = cluster();
        nodes[0].state = "mixed".into();
        nodes[0].cpus_alloc = 2;
        nodes.push(NodeInfo {
            name: "n3".into(),
            state: "drained".into(),
            ..nodes[1].clone()
        });
        nodes.push(NodeInfo {
            name: "n4".into(),
            state: "completing".into(),
            ..nodes[1].clone()
        });
        parts[0].nodes.extend(["n3".into(), "n4".into()]);
        parts[0].priority_job_factor = 7;
        assert_eq!(
            sinfo(
                with_format("%P %X:%Y:%.2Z %A %B %I %S %V %v"),
                &nodes,
                &parts
            ),
            "PARTITION SOCKETS:CORES:TH NODES(A/I) MAX_CPUS_PER_NODE PRIO_JOB_FACTOR \
             ALLOCNODES CLUSTER VERSION\n\
             debug* 1:4: 1 2/1 UNLIMITED 7 all N/A 22.05.8\n\
             short 1:4: 1 1/0 UNLIMITED 1 all N/A 22.05.8\n"
        );
        assert_eq!(long_code("NodeAI"), Some('A'));
        assert_eq!(long_code("priorityjobfactor"), Some('I'));
    }

    #[test]
    fn without_a_partition_field_each_node_counts_once() {
        // Slurm 22.05 (compat 070): `sinfo -o %C` on the idle cluster is one line.
        let (nodes, parts) = cluster();
        assert_eq!(
            sinfo(with_format("%C"), &nodes, &parts),
            "CPUS(A/I/O/T)\n0/8/0/8\n"
        );
        assert_eq!(
            sinfo(with_format("%a %C"), &nodes, &parts),
            "AVAIL CPUS(A/I/O/T)\nup 0/8/0/8\n"
        );
        assert_eq!(
            sinfo(with_format("%l %D %N"), &nodes, &parts),
            "TIMELIMIT NODES NODELIST\n1-00:00:00 2 n[1-2]\n30:00 1 n1\n"
        );
        assert_eq!(
            sinfo(with_format("%N %c %m"), &nodes, &parts),
            "NODELIST CPUS MEMORY\nn[1-2] 4 4000\n"
        );
    }

    #[test]
    fn lines_go_by_partition_then_state_highest_first() {
        // Slurm 22.05 (compat 072 and a job on n1): drained before mixed before idle.
        let (mut nodes, parts) = cluster();
        nodes[1].state = "drained".into();
        nodes[1].reason = Some("maintenance".into());
        assert_eq!(
            sinfo(Options::default(), &nodes, &parts),
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
             debug*       up 1-00:00:00      1  drain n2\n\
             debug*       up 1-00:00:00      1   idle n1\n\
             short        up      30:00      1   idle n1\n"
        );
        nodes[0].state = "mixed".into();
        nodes[0].cpus_alloc = 2;
        assert_eq!(
            sinfo(with_format("%C"), &nodes, &parts),
            "CPUS(A/I/O/T)\n2/2/4/8\n"
        );
        assert_eq!(
            sinfo(with_format("%D %t %N"), &nodes, &parts),
            "NODES STATE NODELIST\n1 drain n2\n1 mix n1\n"
        );
        assert_eq!(
            sinfo(with_format("%P %t %N %E"), &nodes, &parts),
            "PARTITION STATE NODELIST REASON\ndebug* drain n2 maintenance\n\
             debug* mix n1 none\nshort mix n1 none\n"
        );
    }

    #[test]
    fn list_reasons_shows_only_nodes_down_or_drained() {
        let (mut nodes, parts) = cluster();
        let reasons = |f: Option<&str>, nodes: &[NodeInfo]| {
            sinfo(
                Options {
                    reasons: true,
                    format: f.map(str::to_string),
                    ..Default::default()
                },
                nodes,
                &parts,
            )
        };
        assert_eq!(
            reasons(None, &nodes),
            "REASON               USER      TIMESTAMP           NODELIST\n"
        );
        nodes[1].state = "drained".into();
        nodes[1].reason = Some("maintenance".into());
        assert_eq!(
            reasons(Some("%N %T %E"), &nodes),
            "NODELIST STATE REASON\nn2 drained maintenance\n"
        );
    }

    #[test]
    fn a_reason_from_slurm_conf_has_root_for_user_and_no_time() {
        // Real Slurm 22.05.8 with `NodeName=r1 ... State=DRAIN Reason="maintenance
        // window"` (set by no one, at no time: uid 0, time 0); a node without a reason
        // has no user either.
        let (mut nodes, parts) = cluster();
        nodes[0].state = "drained".into();
        nodes[0].reason = Some("maintenance window".into());
        nodes[0].reason_set = Some((0, 0));
        let reasons = Options {
            reasons: true,
            ..Default::default()
        };
        assert_eq!(
            sinfo(reasons, &nodes, &parts),
            "REASON               USER      TIMESTAMP           NODELIST\n\
             maintenance window   root      Unknown             n1\n"
        );
        let per_node = Options {
            nodes_mode: true,
            format: Some("%N %t %E|%u|%U|%H".into()),
            partitions: vec!["debug".into()],
            ..Default::default()
        };
        assert_eq!(
            sinfo(per_node, &nodes, &parts),
            "NODELIST STATE REASON|USER|USER|TIMESTAMP\n\
             n1 drain maintenance window|root|root(0)|Unknown\n\
             n2 idle none|Unknown|Unknown|Unknown\n"
        );
    }

    #[test]
    fn a_node_not_responding_is_starred_in_every_state() {
        // Slurm 22.05 (compat 072): n2 just resumed, its slurmd not heard from yet.
        let (mut nodes, parts) = cluster();
        nodes[1].agent_up = false;
        let per_node = Options {
            nodes_mode: true,
            format: Some("%N %t".into()),
            ..Default::default()
        };
        assert_eq!(
            sinfo(per_node, &nodes, &parts),
            "NODELIST STATE\nn1 idle\nn1 idle\nn2 idle*\n"
        );
        for (state, compact, long) in [
            ("mixed", "mix*", "mixed*"),
            ("allocated", "alloc*", "allocated*"),
            ("drained", "drain*", "drained*"),
            ("down", "down*", "down*"),
        ] {
            nodes[1].state = state.into();
            let line = sinfo(with_format("%t %T"), &nodes[1..], &parts[..1]);
            assert_eq!(line, format!("STATE STATE\n{compact} {long}\n"));
        }
        // Not responding sorts before idle: Slurm's flag is the higher number.
        nodes[1].state = "idle".into();
        assert_eq!(
            sinfo(Options::default(), &nodes, &parts),
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
             debug*       up 1-00:00:00      1  idle* n2\n\
             debug*       up 1-00:00:00      1   idle n1\n\
             short        up      30:00      1   idle n1\n"
        );
    }

    #[test]
    fn differing_sizes_share_a_line_as_a_minimum_unless_exact() {
        let (mut nodes, parts) = cluster();
        nodes[1].cpus = 8;
        assert_eq!(
            sinfo(with_format("%N %c"), &nodes, &parts[..1]),
            "NODELIST CPUS\nn[1-2] 4+\n"
        );
        let exact = Options {
            exact: true,
            ..with_format("%N %c")
        };
        assert_eq!(
            sinfo(exact, &nodes, &parts[..1]),
            "NODELIST CPUS\nn1 4\nn2 8\n"
        );
    }

    #[test]
    fn nodes_sent_as_runs_print_as_the_full_records_do() {
        // n1 and n2 alike (address and host name their own names), n3 with an address
        // of its own, n4 drained: three runs, whose names and shared fields come back.
        let node = |name: &str, addr: &str, state: &str| NodeInfo {
            name: name.into(),
            state: state.into(),
            cpus: 4,
            memory: 4000,
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 1,
            weight: 1,
            agent_up: true,
            node_addr: addr.into(),
            node_hostname: name.into(),
            ..Default::default()
        };
        // n3's agent registered; the others' never did (version N/A).
        let full = [
            node("n1", "n1", "idle"),
            node("n2", "n2", "idle"),
            NodeInfo {
                agent_start: Some(1_700_000_000),
                ..node("n3", "10.0.0.3", "idle")
            },
            node("n4", "n4", "drained"),
        ];
        let (_, mut parts) = cluster();
        parts[0].nodes = full.iter().map(|n| n.name.clone()).collect();
        parts.truncate(1);
        let run = |names: &str, n: &NodeInfo| ListedRun {
            names: names.into(),
            node: sluice_proto::listing::ListedNode {
                name: String::new(),
                ..sluice_proto::listing::ListedNode::of(n)
            },
        };
        let runs = [
            run("n[1-2]", &full[0]),
            run("n3", &full[2]),
            run("n4", &full[3]),
        ];
        let (shared, names) = listing_of(&serde_json::to_string(&runs).unwrap()).unwrap();
        let expected: Vec<(String, usize)> = [("n1", 0), ("n2", 0), ("n3", 1), ("n4", 2)]
            .map(|(n, i)| (n.to_string(), i))
            .into();
        assert_eq!(names, expected);
        let from_runs = nodes_of(&shared, &names);
        // A controller that does not know runs answers every node in full: read as such.
        let (old, old_names) = listing_of(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(old, full);
        let from_full = nodes_of(&old, &old_names);
        for (format, per_node) in [
            ("%N %n %o %t %D %c", false),
            ("%N %n %o %t %D %c", true),
            ("%P %.6D %T %N", false),
            ("%v %D %N", false),
        ] {
            let o = Options {
                header: true,
                nodes_mode: per_node,
                ..with_format(format)
            };
            assert_eq!(
                report(&o, &from_runs, &parts),
                report(&o, &from_full, &parts),
                "{format}"
            );
        }
        let o = with_format("%N %n %o");
        assert_eq!(
            report(&Options { header: false, ..o }, &from_runs, &parts),
            // (Host names and addresses split lines, as in Slurm.)
            "n4 n4 n4\nn1 n1 n1\nn2 n2 n2\nn3 n3 10.0.0.3\n"
        );
        // Slurm 22.05 knows a node's version only from its registration; versions
        // split lines only with -e, where each registered node's is its own.
        assert_eq!(
            report(&with_format("%v %D %N"), &from_runs, &parts),
            "N/A 4 n[1-4]\n"
        );
        let exact = Options {
            exact: true,
            ..with_format("%v %D %N")
        };
        assert_eq!(
            report(&exact, &from_runs, &parts),
            "N/A 3 n[1-2,4]\n22.05.8 1 n3\n"
        );
    }
}
