//! `scontrol`: show and change jobs, nodes, partitions and the configuration.

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_proto::types::{tres_string, ConfigInfo, JobRecord, JobState, NodeInfo, PartitionInfo};

use sluice_conf::duration::format_time;
use sluice_proto::time::shown;

use super::common::{controller, describe, fail, now, parse_job_arg, Refusal, VERSION};
use super::scontrol_array::ArrayFields;
use super::scontrol_show::{lines_of, node_lines, partition_lines, record};

const ME: &str = "scontrol";

/// A job's record as `scontrol show job` prints it; `derived`: with `-d`, its derived
/// exit code, and the lines of its allocation.
fn show_job(
    j: &JobRecord,
    array: Option<&ArrayFields>,
    t: i64,
    derived: Option<(i32, i32)>,
) -> Vec<(String, String)> {
    let run = j.run_secs(t);
    let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "(null)".into());
    let cpus: u32 = if j.cpus_per_node.is_empty() {
        j.ntasks * j.cpus_per_task
    } else {
        j.cpus_per_node.iter().sum()
    };
    let mut v: Vec<(String, String)> = Vec::new();
    let mut p = |k: &str, val: String| v.push((k.to_string(), val));
    p("JobId", array.map_or(j.id, |a| a.job_id).to_string());
    if let Some(h) = j.het {
        p("HetJobId", h.job_id.to_string());
        p("HetJobOffset", h.offset.to_string());
    }
    if let Some(a) = array {
        p("ArrayJobId", a.array_job.to_string());
        p("ArrayTaskId", a.task_ids.clone());
        if let Some(n) = a.throttle {
            p("ArrayTaskThrottle", n.to_string());
        }
    }
    p("JobName", j.desc.name.clone());
    if let Some(h) = j.het {
        p("HetJobIdSet", h.id_set());
    }
    p("UserId", format!("{}({})", j.user, j.uid));
    p("GroupId", format!("{}({})", j.group, j.gid));
    p("MCS_label", "N/A".into());
    p("Priority", j.priority.to_string());
    p("Nice", j.desc.nice.unwrap_or(0).to_string());
    p("Account", j.account.clone());
    p("QOS", j.qos.clone());
    p("JobState", j.shown_state().into());
    // Why it waits, or (as the controller keeps it, see `Reason::ended`) why it ended.
    // Slurm writes a reason's spaces as `_` here (`ReqNodeNotAvail,_May_be_...`).
    p("Reason", j.reason.replace(' ', "_"));
    // What is left of the dependency, each job marked `(unfulfilled)` or `(failed)`.
    p("Dependency", opt(&j.dependency_status));
    p(
        "Requeue",
        if j.desc.requeue == Some(false) {
            "0"
        } else {
            "1"
        }
        .into(),
    );
    p("Restarts", j.restarts.to_string());
    p(
        "BatchFlag",
        if j.desc.interactive { "0" } else { "1" }.into(),
    );
    p("Reboot", "0".into());
    p("ExitCode", format!("{}:{}", j.exit_code, j.signal));
    if let Some((code, signal)) = derived {
        p("DerivedExitCode", format!("{code}:{signal}"));
    }
    p("RunTime", format_time(Some(run)));
    p("TimeLimit", format_time(j.time_limit));
    p("TimeMin", "N/A".into());
    p("SubmitTime", shown(j.submit_time));
    // A held job is not eligible, and accrues no age, until released.
    let held = j.state == JobState::Pending && j.held();
    p(
        "EligibleTime",
        if held {
            "Unknown".into()
        } else {
            shown(j.desc.begin.unwrap_or(j.submit_time).max(j.submit_time))
        },
    );
    p(
        "AccrueTime",
        match j.accrue_time {
            Some(t) if !held => shown(t),
            _ => "Unknown".into(),
        },
    );
    p(
        "StartTime",
        j.start_time
            .or(j.planned_start)
            .map_or("Unknown".into(), shown),
    );
    p(
        "EndTime",
        match (j.end_time, j.start_time.or(j.planned_start), j.time_limit) {
            (Some(e), _, _) => shown(e),
            // Being preempted: the end of its grace.
            _ if j.preemption.is_some() => shown(j.preemption.as_ref().map_or(0, |p| p.grace_end)),
            (None, Some(_), Some(_)) if j.start_time.is_some() => {
                j.limit_end().map_or("Unknown".into(), shown)
            }
            (None, Some(s), Some(l)) => shown(s + l),
            _ => "Unknown".into(),
        },
    );
    p("Deadline", "N/A".into());
    if let Some(sluice_proto::types::PreemptionTimes {
        eligible: Some(eligible),
        at,
        ..
    }) = j.preemption.as_deref().copied()
    {
        p("PreemptEligibleTime", shown(eligible));
        p("PreemptTime", shown(at));
    }
    // The last suspension or resumption, and how long it had run when suspended.
    match j.suspension {
        Some(s) => {
            p("SuspendTime", shown(s.changed));
            p("SecsPreSuspend", s.pre_secs.to_string());
        }
        None => {
            p("SuspendTime", "None".into());
            p("SecsPreSuspend", "0".into());
        }
    }
    p(
        "LastSchedEval",
        shown(j.start_time.unwrap_or(j.submit_time)),
    );
    p(
        "Scheduler",
        j.start_pass
            .map_or("Main", sluice_proto::types::StartPass::as_str)
            .into(),
    );
    p("Partition", j.partition.clone());
    p("AllocNode:Sid", format!("{}:0", j.desc.submit_host));
    // As Slurm keeps them: ranged, without repeats (`n1,n2,n1` is `n[1-2]`).
    let node_list = |s: &Option<String>| match s.as_deref().filter(|e| !e.is_empty()) {
        Some(e) => sluice_conf::hostlist::ranged(e),
        None => "(null)".into(),
    };
    p("ReqNodeList", node_list(&j.desc.nodelist));
    p("ExcNodeList", node_list(&j.desc.exclude));
    // Empty until the job has nodes, as Slurm prints it; a requeued job keeps those
    // its last run has not left yet.
    let nodes = j.listed_nodes();
    p("NodeList", sluice_conf::hostlist::compress(nodes));
    if let Some(first) = nodes.first() {
        p("BatchHost", first.clone());
    }
    p("NumNodes", node_count(j));
    p("NumCPUs", cpus.to_string());
    p("NumTasks", j.ntasks.to_string());
    p("CPUs/Task", j.cpus_per_task.to_string());
    p("ReqB:S:C:T", "0:0:*:*".into());
    // What it holds once started, what it asks until then; records from before jobs
    // carried their TRES are described from their other fields.
    let recorded = if j.tres_alloc.is_empty() {
        &j.tres_req
    } else {
        &j.tres_alloc
    };
    let mut tres = format!("cpu={cpus}");
    if j.mem_per_node > 0 {
        tres.push_str(&format!(
            ",mem={}M",
            j.mem_per_node * j.nodes.len().max(1) as u64
        ));
    }
    tres.push_str(&format!(
        ",node={}",
        j.nodes.len().max(j.min_nodes as usize).max(1)
    ));
    let gpus: usize = j.gpus_per_node.iter().map(Vec::len).sum();
    if gpus > 0 {
        tres.push_str(&format!(",gres/gpu={gpus}"));
    }
    if !recorded.is_empty() {
        tres = tres_string(recorded);
    }
    p("TRES", tres);
    p("Socks/Node", "*".into());
    p(
        "NtasksPerN:B:S:C",
        format!("{}:0:*:*", j.desc.ntasks_per_node.unwrap_or(0)),
    );
    p("CoreSpec", "*".into());
    if derived.is_some() {
        for (k, val) in super::scontrol_detail::allocation_pairs(j) {
            p(&k, val);
        }
    }
    p("MinCPUsNode", j.cpus_per_task.to_string());
    match super::squeue::min_memory(j) {
        (true, m) => p("MinMemoryCPU", m),
        (false, m) => p("MinMemoryNode", m),
    }
    p("MinTmpDiskNode", "0".into());
    p("Features", opt(&j.desc.constraint));
    p("DelayBoot", "00:00:00".into());
    if let Some(r) = &j.desc.reservation {
        p("Reservation", r.clone());
    }
    p("OverSubscribe", super::squeue::over_subscribe(j).into());
    p("Contiguous", "0".into());
    p("Licenses", "(null)".into());
    p("Network", "(null)".into());
    p("Command", j.desc.command.clone());
    p("WorkDir", j.desc.work_dir.clone());
    if let Some(c) = &j.desc.comment {
        p("Comment", c.clone());
    }
    if !j.desc.interactive {
        p("StdErr", j.stderr.clone());
        p("StdIn", j.stdin.clone());
        p("StdOut", j.stdout.clone());
    }
    if let Some((count, wait)) = j.desc.switches {
        // The wait as the controller settled it (at most `max_switch_wait`).
        p("Switches", format!("{count}@{}", format_time(wait)));
    }
    p("Power", String::new());
    let gpu = |t: &Option<String>, n: &u32| match t {
        Some(t) => format!("gres:gpu:{t}:{n}"),
        None => format!("gres:gpu:{n}"),
    };
    // After `Power=`, in Slurm's order: `--gpus` asks for the job as a whole
    // (`TresPerJob=gres:gpu[:type]:N`), `--gres`/`--gpus-per-node` per node,
    // `--gpus-per-task` per task.
    if let Some((t, n)) = &j.desc.gpus {
        p("TresPerJob", gpu(t, n));
    }
    // What was asked per node, in Slurm's spelling: `gres:gpu:rtxpro6000:8`.
    let mut per_node: Vec<String> = j
        .desc
        .gres
        .iter()
        .map(|g| match &g.gres_type {
            Some(t) => format!("gres:{}:{t}:{}", g.name, g.count),
            None => format!("gres:{}:{}", g.name, g.count),
        })
        .collect();
    if let Some((t, n)) = &j.desc.gpus_per_node {
        per_node.push(match t {
            Some(t) => format!("gres:gpu:{t}:{n}"),
            None => format!("gres:gpu:{n}"),
        });
    }
    if !per_node.is_empty() {
        p("TresPerNode", per_node.join(","));
    }
    if let Some((t, n)) = &j.desc.gpus_per_task {
        p("TresPerTask", gpu(t, n));
    }
    // Sluice's own, on a line of its own and only while the job is flagged: its GPUs
    // idle (sluice.conf's `IdleGpuThreshold` for `IdleGpuTime`).
    if let Some(idle) = &j.idle_gpus {
        p("IdleGPUs", format!("{}/{}", idle.idle, idle.held));
        p("IdleSince", sluice_proto::time::shown(idle.since));
        p("IdleThreshold", format!("{}%", idle.threshold));
    }
    // Sluice's own, on a line of its own and only for a service job: its stable name,
    // restarts in place (over all its runs; `Restarts=` above counts requeues), health
    // and port.
    if let Some(svc) = &j.desc.service {
        let st = j.service_state.clone().unwrap_or_default();
        p("Service", svc.name.clone());
        p("ServiceRestarts", st.restarts.to_string());
        p(
            "Health",
            if svc.health.is_none() {
                "none"
            } else {
                st.health.name()
            }
            .into(),
        );
        p("Port", svc.port.map_or("(null)".into(), |p| p.to_string()));
    }
    // Sluice's own: a service job's stable address, on a line of its own.
    if let Some(url) = &j.service_url {
        p("ServiceURL", url.clone());
    }
    if let Some(tcp) = &j.service_tcp {
        p("ServiceTCP", tcp.clone());
    }
    v
}

/// `NumNodes=`: the nodes it holds; while it waits, the count it asks, with the most
/// it takes when it gave one (`1-2`; Slurm's least count never above it).
fn node_count(j: &JobRecord) -> String {
    if !j.nodes.is_empty() {
        return j.nodes.len().to_string();
    }
    let max = if j.state == JobState::Pending {
        j.desc.nodes.map_or(0, |n| n.1)
    } else {
        0
    };
    match (j.min_nodes.max(1), max) {
        (min, 0) => min.to_string(),
        (min, max) => format!("{}-{max}", min.min(max)),
    }
}

const JOB_BREAKS: &[&str] = &[
    "HetJobIdSet",
    "UserId",
    "Priority",
    "JobState",
    "Requeue",
    "DerivedExitCode",
    "RunTime",
    "SubmitTime",
    "AccrueTime",
    "StartTime",
    "PreemptEligibleTime",
    "SuspendTime",
    "Partition",
    "ReqNodeList",
    "NodeList",
    "BatchHost",
    "NumNodes",
    "TRES",
    "Socks/Node",
    "JOB_GRES",
    "  Nodes",
    "MinCPUsNode",
    "Features",
    "Reservation",
    "OverSubscribe",
    "Command",
    "WorkDir",
    "Comment",
    "StdErr",
    "StdIn",
    "StdOut",
    "Switches",
    "Power",
    "TresPerJob",
    "TresPerNode",
    "TresPerTask",
    "IdleGPUs",
    "Service",
    "ServiceURL",
];

/// scontrol's options: Slurm 22.05's table, in its order (which orders the candidates
/// of an ambiguous prefix), with its value kinds. They may come anywhere among the
/// command's words (getopt's permutation, as scontrol walks them).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("all", Some('a')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::flag("details", Some('d')),
    Opt::flag("federation", None),
    Opt::flag("future", Some('F')),
    Opt::flag("help", Some('h')),
    Opt::flag("hide", None),
    Opt::flag("local", None),
    Opt::flag("oneliner", Some('o')),
    Opt::flag("quiet", Some('Q')),
    Opt::flag("sibling", None),
    Opt::required("uid", Some('u')),
    Opt::flag("usage", None).alias_of("help"),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
];

/// `show`'s entities in `_show_it`'s order (Slurm 22.05 `scontrol.c`), each with the
/// names it answers to and the fewest letters that select it: a word selects the
/// first entity one of whose names it begins, case aside, with at least that many
/// letters (`xstrncasecmp(tag, "hostnames", MAX(tag_len, 5))`).
const SHOW_ENTITIES: &[(&str, &[&str], usize)] = &[
    ("aliases", &["aliases"], 1),
    ("bbstat", &["bbstat", "dwstat"], 2),
    ("burstbuffer", &["burstbuffer"], 2),
    ("assoc_mgr", &["assoc_mgr", "cache"], 2),
    ("config", &["config"], 1),
    ("daemons", &["daemons"], 1),
    ("federations", &["federations"], 1),
    ("frontendname", &["frontendname"], 1),
    ("hostnames", &["hostnames"], 5),
    ("hostlist", &["hostlist"], 5),
    ("hostlistsorted", &["hostlistsorted"], 9),
    ("jobs", &["jobs", "jobid"], 1),
    ("licenses", &["licenses"], 2),
    ("nodes", &["nodes"], 1),
    ("partitions", &["partitions", "partitionname"], 2),
    ("reservations", &["reservations", "reservationname"], 1),
    ("slurmd", &["slurmd"], 2),
    ("steps", &["steps"], 2),
    ("topology", &["topology"], 1),
];

/// The entity `scontrol show TAG` means, by Slurm's prefix rule; `None` for an
/// invalid one.
fn show_entity(tag: &str) -> Option<&'static str> {
    let tag = tag.to_ascii_lowercase();
    SHOW_ENTITIES.iter().find_map(|(entity, names, least)| {
        names
            .iter()
            .any(|n| tag.len() >= *least && n.starts_with(&tag))
            .then_some(*entity)
    })
}

/// Runs `scontrol`.
pub fn main(args: Vec<String>) -> i32 {
    let mut one_line = false;
    let mut details = false;
    let mut quiet = false;
    // FUTURE nodes shown (`-F`, `--future`, `SCONTROL_FUTURE` set).
    let mut future = std::env::var_os("SCONTROL_FUTURE").is_some();
    let mut words: Vec<String> = Vec::new();
    let mut walk = Getopt::new(OPTIONS, args, Order::Permute);
    loop {
        // As scontrol: `setdebugflags` ends the options, so that its `-Flag`s are
        // words.
        if walk
            .upcoming()
            .and_then(|w| w.get(..8))
            .is_some_and(|w| w.eq_ignore_ascii_case("setdebug"))
        {
            words.extend(walk.remaining().iter().cloned());
            break;
        }
        let Some(item) = walk.next() else { break };
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(w)) if w == "version" => {
                println!("{VERSION}");
                return 0;
            }
            Ok(Parsed::Operand(w)) => {
                words.push(w);
                continue;
            }
            Err(e) => Refusal::getopt(ME, &e).exit(),
        };
        match f.name() {
            "oneliner" => one_line = true,
            "details" => details = true,
            "future" => future = true,
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            // `--usage` is one more name of it, as in Slurm.
            "help" => {
                print!("{}", super::scontrol_help::HELP);
                return 0;
            }
            "quiet" => quiet = true,
            // Accepted, no effect.
            "all" => {}
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    let Some(verb) = words.first().map(|s| s.to_ascii_lowercase()) else {
        fail(ME, "no command given", 1);
    };
    if verb == "help" {
        print!("{}", super::scontrol_help::HELP);
        return 0;
    }
    let client = controller();
    let t = now();
    match verb.as_str() {
        // Slurm's `reconfigure` (three letters at least): slurm.conf read again.
        v if v.len() >= 3 && "reconfigure".starts_with(v) => {
            match client.post::<_, serde_json::Value>("/v1/reconfigure", &serde_json::json!({})) {
                Ok(_) => 0,
                Err(e) => {
                    eprintln!("slurm_reconfigure error: {}", describe(&e));
                    1
                }
            }
        }
        "ping" => super::scontrol_ha::ping(&client),
        v if v.len() >= 8 && "takeover".starts_with(v) => super::scontrol_ha::takeover(&words),
        "show" => {
            if words.len() < 2 {
                eprintln!("too few arguments for keyword:{}", words[0]);
                return 1;
            }
            // As `_show_it`: the entity may carry its value (`job=5`), and a third
            // word is the value otherwise.
            let (tag, inline) = match words[1].split_once('=') {
                Some((t, v)) => (t.to_string(), Some(v.to_string())),
                None => (words[1].clone(), None),
            };
            let multi = show_entity(&tag).is_some_and(|e| matches!(e, "assoc_mgr" | "bbstat"));
            if words.len() > 3 && !multi {
                eprintln!("too many arguments for keyword:{}", words[0]);
                return 1;
            }
            let arg = inline.or_else(|| words.get(2).cloned());
            let Some(what) = show_entity(&tag) else {
                eprintln!("invalid entity:{tag} for keyword:{} ", words[0]);
                return 1;
            };
            match what {
                "reservations" => super::scontrol_resv::show(&client, arg.as_deref(), one_line),
                "steps" => super::scontrol_steps::show(&client, arg.as_deref(), one_line),
                "jobs" => {
                    let jobs: Vec<JobRecord> = match &arg {
                        Some(id) => {
                            let Some(ids) = parse_job_arg(id) else {
                                eprintln!("scontrol_print_job error: Invalid job id specified");
                                return 1;
                            };
                            let (job, task) = ids[0];
                            let q = sluice_proto::listing::JobQuery {
                                jobs: Some(task.map_or(job.to_string(), |t| format!("{job}_{t}"))),
                                ..Default::default()
                            };
                            let mut all: Vec<JobRecord> =
                                client.get(&q.path()).unwrap_or_else(|e| {
                                    eprintln!("slurm_load_jobs error: {}", describe(&e));
                                    std::process::exit(1)
                                });
                            // For one task, the array's own record too: it says whether
                            // the task has started.
                            if task.is_some() && !all.iter().any(|j| j.id == job) {
                                if let Ok(head) =
                                    client.get::<JobRecord>(&format!("/v1/jobs/{job}"))
                                {
                                    all.push(head);
                                }
                            }
                            let mut found: Vec<JobRecord> = all
                                .into_iter()
                                .filter(|j| match task {
                                    // The task, and the array's own record, which says
                                    // whether it has started.
                                    Some(tk) => {
                                        j.array == Some((job, tk))
                                            || (j.id == job && j.array_pending.is_some())
                                    }
                                    None => {
                                        j.id == job
                                            || j.array.is_some_and(|a| a.0 == job)
                                            || j.het.is_some_and(|h| h.job_id == job)
                                    }
                                })
                                .collect();
                            if found.is_empty() {
                                if let Ok(j) = client.get::<JobRecord>(&format!("/v1/jobs/{job}")) {
                                    found.push(j);
                                }
                            }
                            found
                        }
                        None => client.get("/v1/jobs").unwrap_or_else(|e| {
                            eprintln!("slurm_load_jobs error: {}", describe(&e));
                            std::process::exit(1)
                        }),
                    };
                    let asked = arg
                        .as_deref()
                        .and_then(parse_job_arg)
                        .and_then(|ids| Some((ids[0].0, ids[0].1?)));
                    let any = !jobs.is_empty();
                    let shown = super::scontrol_array::shown(jobs, asked);
                    if shown.is_empty() {
                        if let (true, Some((job, task))) = (any, asked) {
                            // The array is there, not that task: Slurm's words, on
                            // standard output.
                            if !quiet {
                                println!("Job {job}_{task} not found");
                            }
                            return 1;
                        }
                        if arg.is_some() {
                            eprintln!("slurm_load_jobs error: Invalid job id specified");
                            return 1;
                        }
                        println!("No jobs in the system");
                        return 0;
                    }
                    let derived = if details {
                        super::scontrol_detail::derived_exit_codes(
                            &client,
                            &shown.iter().map(|(j, _)| j).collect::<Vec<_>>(),
                        )
                    } else {
                        Default::default()
                    };
                    for (j, array) in &shown {
                        let d = details.then(|| derived.get(&j.id).copied().unwrap_or((0, 0)));
                        // A job record ends with an empty line (Slurm's last `"\n   "`).
                        let mut lines = lines_of(&show_job(j, array.as_ref(), t, d), JOB_BREAKS);
                        lines.push(String::new());
                        print!("{}", record(&lines, one_line));
                    }
                    0
                }
                "nodes" => {
                    let nodes: Vec<NodeInfo> = client
                        .get("/v1/nodes")
                        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
                    let nodes: Vec<&NodeInfo> = nodes
                        .iter()
                        // CLOUD nodes whose agent has not registered: never, as
                        // Slurm's powered-down cloud nodes.
                        .filter(|n| (future || n.state != "future") && n.state != "cloud")
                        .filter(|n| arg.as_ref().is_none_or(|a| *a == n.name))
                        .collect();
                    if nodes.is_empty() {
                        // On stdout, as Slurm's.
                        println!("Node {} not found", arg.unwrap_or_default());
                        return 1;
                    }
                    for n in nodes {
                        print!("{}", record(&node_lines(n), one_line));
                    }
                    0
                }
                "partitions" => {
                    let parts: Vec<PartitionInfo> = client
                        .get("/v1/partitions")
                        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
                    let parts: Vec<&PartitionInfo> = parts
                        .iter()
                        .filter(|p| arg.as_ref().is_none_or(|a| *a == p.name))
                        .collect();
                    if parts.is_empty() {
                        eprintln!("Partition {} not found", arg.unwrap_or_default());
                        return 1;
                    }
                    // TotalCPUs: what the partition's nodes have, CPUs kept for the
                    // system (CoreSpecCount) included, as slurmctld counts them.
                    let nodes: Vec<NodeInfo> = client.get("/v1/nodes").unwrap_or_default();
                    for p in parts {
                        let cpus: u32 = nodes
                            .iter()
                            .filter(|n| p.nodes.contains(&n.name))
                            .map(|n| n.cpus_total())
                            .sum();
                        print!("{}", record(&partition_lines(p, cpus), one_line));
                    }
                    0
                }
                "config" => {
                    let c: ConfigInfo = client
                        .get("/v1/config")
                        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
                    println!("Configuration data as of {}", shown(t));
                    for (k, v) in &c.entries {
                        println!("{k:<23} = {v}");
                    }
                    0
                }
                "hostnames" => {
                    // Slurm reads `SLURM_NODELIST`, and says so without failing.
                    let Some(list) = arg
                        .or_else(|| std::env::var("SLURM_NODELIST").ok())
                        .or_else(|| std::env::var("SLURM_JOB_NODELIST").ok())
                    else {
                        eprintln!("{ME}: error: host list is empty");
                        return 0;
                    };
                    match sluice_conf::hostlist::expand(&list) {
                        Ok(h) => {
                            for n in h {
                                println!("{n}");
                            }
                            0
                        }
                        Err(e) => fail(ME, e, 1),
                    }
                }
                "hostlist" | "hostlistsorted" => {
                    let list = arg.unwrap_or_default();
                    let names: Vec<String> = list
                        .split(',')
                        .flat_map(|p| {
                            sluice_conf::hostlist::expand(p).unwrap_or_else(|_| vec![p.to_string()])
                        })
                        .collect();
                    println!("{}", sluice_conf::hostlist::compress(&names));
                    0
                }
                other => fail(ME, format!("show {other} is not supported by Sluice"), 1),
            }
        }
        "hold" | "uhold" | "holdu" | "release" | "requeue" | "requeuehold" => {
            if words.len() < 2 {
                // The verb as it was typed, as Slurm's message has it.
                eprintln!("too few arguments for keyword:{}", words[0]);
                return 1;
            }
            if verb.starts_with("requeue") {
                // A job often requeues itself (submitit's checkpoint handler runs
                // `scontrol requeue $SLURM_JOB_ID` and fails the job unless it exits
                // 0). The requeue sends the job's processes SIGTERM, this one among
                // them, as the answer comes back: report the answer rather than die of
                // the signal (SIGKILL still follows after KillWait).
                // SAFETY: no threads yet; SIG_IGN is a valid disposition.
                unsafe {
                    libc::signal(libc::SIGTERM, libc::SIG_IGN);
                }
                super::scontrol_jobs::requeue(&client, verb == "requeuehold", &words[1..])
            } else {
                super::scontrol_jobs::hold(&client, &verb, &words[1..])
            }
        }
        "suspend" | "resume" => {
            // Operators only; Slurm's one line per job refused, exit 1.
            let mut code = 0;
            for arg in words.iter().skip(1) {
                for part in arg.split(',') {
                    let Some(ids) = parse_job_arg(part) else {
                        eprintln!("Invalid job id specified for job {part}");
                        code = 1;
                        continue;
                    };
                    for (job, _) in ids {
                        if let Err(e) = client.post::<_, serde_json::Value>(
                            &format!("/v1/jobs/{job}/{verb}"),
                            &serde_json::json!({}),
                        ) {
                            eprintln!("{} for job {part}", describe(&e));
                            code = 1;
                        }
                    }
                }
            }
            code
        }
        "update" => {
            let rest = &words[1..];
            let resv = |w: &String| {
                let k = w.split('=').next().unwrap_or("").to_ascii_lowercase();
                k == "reservationname" || k == "reservation"
            };
            match rest.first().map(|w| w.to_ascii_lowercase()) {
                Some(w) if w == "reservation" || w == "res" => {
                    super::scontrol_resv::update(&client, &rest[1..])
                }
                _ if rest.iter().any(resv) => super::scontrol_resv::update(&client, rest),
                _ => super::scontrol_update::run(&client, rest),
            }
        }
        "create" => match words.get(1).map(|w| w.to_ascii_lowercase()).as_deref() {
            Some("reservation" | "res" | "resv") => {
                super::scontrol_resv::create(&client, &words[2..])
            }
            _ if words[1..].iter().any(|w| is_node_tag(w)) => create_node(&client, &words[1..]),
            _ => fail(
                ME,
                format!(
                    "Invalid creation entity: {}",
                    words.get(1).map_or("", |w| w)
                ),
                1,
            ),
        },
        "delete" => {
            let rest = &words[1..];
            let name = match rest.first().map(|w| w.to_ascii_lowercase()).as_deref() {
                Some("reservation" | "res" | "resv") => rest.get(1).cloned(),
                Some(w) if w.starts_with("reservationname=") => {
                    rest[0].split_once('=').map(|(_, v)| v.to_string())
                }
                _ => None,
            };
            if rest.first().is_some_and(|w| is_node_tag(w)) {
                return delete_node(&client, rest);
            }
            match name {
                Some(n) => super::scontrol_resv::delete(&client, &n),
                None => fail(ME, "invalid entity for keyword delete", 1),
            }
        }
        "write" => super::scontrol_write::run(&client, &words[1..], quiet),
        // As Slurm: `tok`, `toke` or `token`.
        w if w.len() >= 3 && "token".starts_with(w) => {
            super::scontrol_token::run(&client, &words[1..])
        }
        other => {
            eprintln!("invalid keyword: {other}");
            1
        }
    }
}

/// Whether `word` names nodes as Slurm's `create` and `delete` take it: `NodeName`
/// abbreviated to three letters at least, with or without `=VALUE`.
fn is_node_tag(word: &str) -> bool {
    let tag = word.split('=').next().unwrap_or("").to_ascii_lowercase();
    tag.len() >= 3 && "nodename".starts_with(&tag)
}

/// `scontrol create nodename=LIST CPUs=... State=FUTURE|CLOUD ...`: dynamic nodes (the
/// words are the node line, as Slurm rebuilds it).
fn create_node(client: &sluice_proto::Client, words: &[String]) -> i32 {
    let line = words.join(" ");
    let body = serde_json::json!({ "line": line });
    match client.post::<_, serde_json::Value>("/v1/nodes/create", &body) {
        Ok(_) => 0,
        Err(e) => {
            let message = describe(&e);
            if message == "Invalid node state specified" {
                // The controller's explanation, which Slurm's scontrol prints first.
                eprintln!(
                    "scontrol: error: Only State=FUTURE and State=CLOUD allowed for nodes created by scontrol"
                );
            }
            eprintln!("Error creating the node(s): {message}");
            1
        }
    }
}

/// `scontrol delete nodename=LIST` (or `delete nodename LIST`).
fn delete_node(client: &sluice_proto::Client, words: &[String]) -> i32 {
    let names = match words {
        [one] => match one.split_once('=') {
            Some((_, v)) => v.to_string(),
            None => {
                eprintln!(
                    "scontrol: error: Proper format is 'delete <ENTITY>=<ID>' or 'delete <ENTITY> <ID>'"
                );
                return 1;
            }
        },
        [_, v] => v.clone(),
        _ => {
            eprintln!(
                "scontrol: error: Proper format is 'delete <ENTITY>=<ID>' or 'delete <ENTITY> <ID>'"
            );
            return 1;
        }
    };
    let body = serde_json::json!({ "line": names });
    match client.post::<_, sluice_proto::types::NodesDeleted>("/v1/nodes/delete", &body) {
        Ok(d) if d.failed.is_empty() => 0,
        Ok(d) => {
            // As Slurm's: the nodes that could go went; those that could not are named.
            eprintln!("scontrol: error: failed to delete nodes {}", d.failed);
            eprintln!(
                "delete_node {}: {}",
                words[0],
                d.error.as_deref().unwrap_or("Unspecified error")
            );
            1
        }
        Err(e) => {
            eprintln!("delete_node {}: {}", words[0], describe(&e));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::show_entity;

    #[test]
    fn show_entities_abbreviate_as_slurms() {
        for (tag, want) in [
            ("hostname", Some("hostnames")),
            ("hostn", Some("hostnames")),
            ("HOSTNAMES", Some("hostnames")),
            ("host", None),
            ("hostnamesx", None),
            ("hostl", Some("hostlist")),
            ("hostlist", Some("hostlist")),
            ("hostlists", Some("hostlistsorted")),
            ("part", Some("partitions")),
            ("partitionname", Some("partitions")),
            ("p", None),
            ("res", Some("reservations")),
            ("r", Some("reservations")),
            ("reservationname", Some("reservations")),
            ("resv", None),
            ("node", Some("nodes")),
            ("n", Some("nodes")),
            ("job", Some("jobs")),
            ("j", Some("jobs")),
            ("jobid", Some("jobs")),
            ("c", Some("config")),
            ("ca", Some("assoc_mgr")),
            ("s", None),
            ("st", Some("steps")),
            ("nosuch", None),
        ] {
            assert_eq!(show_entity(tag), want, "{tag}");
        }
    }
}
