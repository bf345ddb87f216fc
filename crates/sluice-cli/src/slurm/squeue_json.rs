//! `squeue --json`: the document Slurm 22.05 prints (its `openapi/v0.0.38` data
//! parser), with the same keys in the same order and the same value types, so that
//! tools reading it (`.jobs[].job_id`, `.job_state`, ...) work unchanged. Values
//! Sluice does not track have Slurm's value for "not set" (`""`, `0`, `null`).
//!
//! Which jobs: with no filter, every job the controller holds, finished ones included
//! (until `MinJobAge`), by id — as Slurm. Slurm 22.05 also ignores `-j`, `-u`, `-t`,
//! `-p` and `-n` here and always prints every job; Sluice applies them (see
//! COMPATIBILITY.md, `json-filters`), without squeue's default of hiding finished jobs.

use sluice_proto::types::{tres_string, JobRecord, JobState, MemoryRequest};

use super::json_c::Json;

/// Each node's cores per socket and processors per core (its threads, or 1 where its
/// `CPUs=` counts cores), by name: what maps the processors a job holds to the sockets
/// and cores of `job_resources`.
pub type Layouts = std::collections::HashMap<String, (u32, u32)>;

/// The whole document for `jobs` (already filtered), Slurm's `cluster` name given, and
/// the `layouts` of their nodes.
pub fn document(jobs: &[JobRecord], cluster: &str, layouts: &Layouts) -> String {
    let mut jobs: Vec<&JobRecord> = jobs.iter().collect();
    jobs.sort_by_key(|j| j.id);
    let version = Json::object([
        ("major", Json::Int(22)),
        ("micro", Json::Int(8)),
        ("minor", Json::Int(5)),
    ]);
    Json::object([
        (
            "meta",
            Json::object([
                (
                    "plugin",
                    Json::object([
                        ("type", Json::str("openapi/v0.0.38")),
                        ("name", Json::str("Slurm OpenAPI v0.0.38")),
                    ]),
                ),
                (
                    "Slurm",
                    Json::object([
                        ("version", version),
                        ("release", Json::str(super::common::RELEASE)),
                    ]),
                ),
            ]),
        ),
        ("errors", Json::List(vec![])),
        (
            "jobs",
            Json::List(jobs.into_iter().map(|j| job(j, cluster, layouts)).collect()),
        ),
    ])
    .render()
}

/// Minutes, rounded up, as Slurm keeps time limits.
fn minutes(secs: i64) -> i64 {
    (secs + 59) / 60
}

/// Slurm's `state_reason` and `state_description`: a reason that is a sentence is
/// Slurm's description of a plain code (`Nodes required for job are DOWN, ...` is
/// `Resources`; `ReqNodeNotAvail, May be reserved for other job` is `ReqNodeNotAvail`).
fn reasons(j: &JobRecord) -> (String, String) {
    if j.state != JobState::Pending {
        return ("None".into(), String::new());
    }
    if j.reason.starts_with("Nodes required for job") {
        return ("Resources".into(), j.reason.clone());
    }
    match j.reason.split_once(", ") {
        Some((code, _)) => (code.to_string(), j.reason.clone()),
        None => (j.reason.clone(), String::new()),
    }
}

fn job(j: &JobRecord, cluster: &str, layouts: &Layouts) -> Json {
    let d = &j.desc;
    let s = |v: &Option<String>| Json::str(v.clone().unwrap_or_default());
    let held = j.state == JobState::Pending && j.held();
    let waiting_dependency = j.state == JobState::Pending && j.reason == "Dependency";
    let started = j.start_time.is_some();
    let start = if held || waiting_dependency {
        None
    } else {
        j.start_time.or(j.planned_start)
    };
    let end = j
        .end_time
        .or_else(|| start.zip(j.time_limit).map(|(s, l)| s + l));
    let eligible =
        (!held && !waiting_dependency).then(|| d.begin.unwrap_or(j.submit_time).max(j.submit_time));
    let cpus: u32 = if j.cpus_per_node.is_empty() {
        j.ntasks * j.cpus_per_task
    } else {
        j.cpus_per_node.iter().sum()
    };
    let node_count = if j.nodes.is_empty() {
        j.min_nodes.max(1)
    } else {
        j.nodes.len() as u32
    };
    let memory = j.memory_request();
    let mut flags = Vec::new();
    if d.cpus_per_task.is_some() {
        flags.push(Json::str("JOB_CPUS_SET"));
    }
    if d.memory.is_some() {
        flags.push(Json::str("JOB_MEM_SET"));
    }
    if started {
        flags.push(Json::str("JOB_WAS_RUNNING"));
    }
    let het_set = j.het.map_or(String::new(), |h| h.id_set());
    let (array_job, array_task, array_string, array_max) = match (&j.array, &j.array_pending) {
        (Some((a, t)), _) => (*a as i64, Some(*t as i64), String::new(), 0),
        (None, Some((rest, throttle))) => {
            let mut s = sluice_proto::types::compact_indices(rest);
            if let Some(t) = throttle {
                s.push_str(&format!("%{t}"));
            }
            (j.id as i64, None, s, throttle.unwrap_or(0) as i64)
        }
        _ => (0, None, String::new(), 0),
    };
    let absolute = |p: &Option<String>| match p {
        Some(p) if p.starts_with('/') => p.clone(),
        Some(p) => format!("{}/{p}", d.work_dir.trim_end_matches('/')),
        None => String::new(),
    };
    let billing = j
        .tres_alloc
        .iter()
        .find(|(t, _)| t == "billing")
        .map(|(_, n)| *n as f64);
    let gres = |list: Vec<String>| list.join(",");
    let tres_per_node = gres(
        d.gres
            .iter()
            .map(|g| match &g.gres_type {
                Some(t) => format!("gres:{}:{t}:{}", g.name, g.count),
                None => format!("gres:{}:{}", g.name, g.count),
            })
            .chain(d.gpus_per_node.iter().map(|(t, n)| gpu_tres(t, *n)))
            .collect(),
    );
    let (reason, description) = reasons(j);
    let command = if d.interactive || d.command == "(null)" {
        String::new()
    } else {
        d.command.clone()
    };
    let mut pairs: Vec<(&str, Json)> = vec![
        ("account", Json::str(&j.account)),
        (
            "accrue_time",
            Json::Int(j.accrue_time.filter(|_| !held).unwrap_or(0)),
        ),
        ("admin_comment", Json::str("")),
        ("array_job_id", Json::Int(array_job)),
        ("array_task_id", Json::int_or_null(array_task)),
        ("array_max_tasks", Json::Int(array_max)),
        ("array_task_string", Json::str(array_string)),
        ("association_id", Json::Int(0)),
        ("batch_features", Json::str("")),
        ("batch_flag", Json::Bool(!d.interactive)),
        (
            "batch_host",
            Json::str(j.nodes.first().cloned().unwrap_or_default()),
        ),
        ("flags", Json::List(flags)),
        ("burst_buffer", Json::str("")),
        ("burst_buffer_state", Json::str("")),
        ("cluster", Json::str(cluster)),
        ("cluster_features", Json::str("")),
        ("command", Json::str(command)),
        ("comment", s(&d.comment)),
        ("container", Json::str("")),
        ("contiguous", Json::Bool(false)),
        ("core_spec", Json::Null),
        ("thread_spec", Json::Null),
        ("cores_per_socket", Json::Null),
        ("billable_tres", billing.map_or(Json::Null, Json::Float)),
        ("cpus_per_task", Json::Null),
        ("cpu_frequency_minimum", Json::Null),
        ("cpu_frequency_maximum", Json::Null),
        ("cpu_frequency_governor", Json::Null),
        ("cpus_per_tres", Json::str("")),
        ("deadline", Json::Int(0)),
        ("delay_boot", Json::Int(0)),
        ("dependency", Json::str(dependency(j))),
        ("derived_exit_code", Json::Int(0)),
        ("eligible_time", Json::Int(eligible.unwrap_or(0))),
        ("end_time", Json::Int(end.unwrap_or(0))),
        (
            "excluded_nodes",
            Json::str(
                d.exclude
                    .as_deref()
                    .map(sluice_conf::hostlist::ranged)
                    .unwrap_or_default(),
            ),
        ),
        ("exit_code", Json::Int(exit_status(j))),
        ("features", s(&d.constraint)),
        ("federation_origin", Json::str("")),
        ("federation_siblings_active", Json::str("")),
        ("federation_siblings_viable", Json::str("")),
        ("gres_detail", Json::List(gres_detail(j))),
        ("group_id", Json::Int(j.gid as i64)),
        ("group_name", Json::str(&j.group)),
        ("job_id", Json::Int(j.id as i64)),
    ];
    // Every job that was given nodes has it, finished ones too; a pending one none.
    if !j.nodes.is_empty() {
        pairs.push(("job_resources", resources(j, layouts)));
    }
    pairs.extend([
        ("job_state", Json::str(j.shown_state())),
        (
            "last_sched_evaluation",
            Json::Int(j.start_time.unwrap_or(j.submit_time)),
        ),
        ("licenses", Json::str("")),
        ("max_cpus", Json::Int(0)),
        ("max_nodes", Json::Int(d.nodes.map_or(0, |n| n.1 as i64))),
        ("mcs_label", Json::str("")),
        ("memory_per_tres", Json::str("")),
        ("name", Json::str(&d.name)),
        (
            "nodes",
            Json::str(sluice_conf::hostlist::compress(&j.nodes)),
        ),
        ("nice", Json::int_or_null(d.nice.map(i64::from))),
        ("tasks_per_core", Json::Null),
        (
            "tasks_per_node",
            Json::Int(d.ntasks_per_node.map_or(0, i64::from)),
        ),
        ("tasks_per_socket", Json::Null),
        ("tasks_per_board", Json::Int(0)),
        ("cpus", Json::Int(cpus as i64)),
        ("node_count", Json::Int(node_count as i64)),
        ("tasks", Json::Int(j.ntasks as i64)),
        (
            "het_job_id",
            Json::Int(j.het.map_or(0, |h| h.job_id as i64)),
        ),
        ("het_job_id_set", Json::str(het_set.as_str())),
        (
            "het_job_offset",
            Json::Int(j.het.map_or(0, |h| h.offset as i64)),
        ),
        ("partition", Json::str(&j.partition)),
        ("prefer", Json::str("")),
        (
            "memory_per_node",
            match memory {
                Some(MemoryRequest::PerNode(m)) => Json::Int(m as i64),
                _ => Json::Null,
            },
        ),
        (
            "memory_per_cpu",
            match memory {
                Some(MemoryRequest::PerCpu(m)) => Json::Int(m as i64),
                _ => Json::Null,
            },
        ),
        ("minimum_cpus_per_node", Json::Int(j.cpus_per_task as i64)),
        ("minimum_tmp_disk_per_node", Json::Int(0)),
        ("preempt_time", Json::Int(0)),
        ("pre_sus_time", Json::Int(0)),
        ("priority", Json::Int(j.priority as i64)),
        ("profile", Json::Null),
        ("qos", Json::str(&j.qos)),
        ("reboot", Json::Bool(false)),
        // As Slurm keeps it (and scontrol shows it): ranged, without repeats.
        (
            "required_nodes",
            Json::str(
                d.nodelist
                    .as_deref()
                    .map(sluice_conf::hostlist::ranged)
                    .unwrap_or_default(),
            ),
        ),
        ("requeue", Json::Bool(d.requeue != Some(false))),
        ("resize_time", Json::Int(0)),
        ("restart_cnt", Json::Int(j.restarts as i64)),
        ("resv_name", s(&d.reservation)),
        (
            "shared",
            if d.exclusive {
                Json::str("none")
            } else {
                Json::Null
            },
        ),
        (
            "show_flags",
            Json::List(vec![
                Json::str("SHOW_ALL"),
                Json::str("SHOW_DETAIL"),
                Json::str("SHOW_LOCAL"),
            ]),
        ),
        ("sockets_per_board", Json::Int(0)),
        (
            "sockets_per_node",
            Json::int_or_null(d.sockets_per_node.map(i64::from)),
        ),
        ("start_time", Json::Int(start.unwrap_or(0))),
        ("state_description", Json::str(description)),
        ("state_reason", Json::str(reason)),
        ("standard_error", Json::str(absolute(&d.error))),
        (
            "standard_input",
            Json::str(match &d.input {
                Some(_) => absolute(&d.input),
                None if d.interactive => String::new(),
                None => "/dev/null".into(),
            }),
        ),
        ("standard_output", Json::str(absolute(&d.output))),
        ("submit_time", Json::Int(j.submit_time)),
        ("suspend_time", Json::Int(0)),
        ("system_comment", Json::str("")),
        ("time_limit", Json::int_or_null(j.time_limit.map(minutes))),
        ("time_minimum", Json::Int(0)),
        ("threads_per_core", Json::Null),
        ("tres_bind", Json::str("")),
        ("tres_freq", Json::str("")),
        (
            "tres_per_job",
            Json::str(
                d.gpus
                    .as_ref()
                    .map_or(String::new(), |(t, n)| gpu_tres(t, *n)),
            ),
        ),
        ("tres_per_node", Json::str(tres_per_node)),
        ("tres_per_socket", Json::str("")),
        (
            "tres_per_task",
            Json::str(
                d.gpus_per_task
                    .as_ref()
                    .map_or(String::new(), |(t, n)| gpu_tres(t, *n)),
            ),
        ),
        ("tres_req_str", Json::str(tres_string(&j.tres_req))),
        ("tres_alloc_str", Json::str(tres_string(&j.tres_alloc))),
        ("user_id", Json::Int(j.uid as i64)),
        ("user_name", Json::str(&j.user)),
        ("wckey", s(&d.wckey)),
        ("current_working_directory", Json::str(&d.work_dir)),
    ]);
    Json::object(pairs)
}

fn gpu_tres(t: &Option<String>, n: u32) -> String {
    match t {
        Some(t) => format!("gres:gpu:{t}:{n}"),
        None => format!("gres:gpu:{n}"),
    }
}

/// The dependency as `scontrol show job` writes it: `afterok:12(unfulfilled)`.
fn dependency(j: &JobRecord) -> String {
    match (j.desc.dependency.as_deref(), j.reason.as_str()) {
        (Some(d), "Dependency") if j.state == JobState::Pending => format!("{d}(unfulfilled)"),
        (Some(d), "DependencyNeverSatisfied") => format!("{d}(failed)"),
        (Some(d), _) => d.to_string(),
        (None, _) => String::new(),
    }
}

/// The batch script's wait status, as Slurm keeps it: the exit code times 256, or the
/// signal number.
fn exit_status(j: &JobRecord) -> i64 {
    if j.signal != 0 {
        j.signal as i64
    } else {
        (j.exit_code as i64) << 8
    }
}

/// `gpu:2(IDX:0-1)` per node for a job holding GPUs.
fn gres_detail(j: &JobRecord) -> Vec<Json> {
    j.gpus_per_node
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| {
            Json::str(format!(
                "gpu:{}(IDX:{})",
                g.len(),
                sluice_proto::types::compact_indices(g)
            ))
        })
        .collect()
}

/// What a job holds (or held), node by node.
fn resources(j: &JobRecord, layouts: &Layouts) -> Json {
    let nodes: Vec<Json> = j
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let ids = j.cpu_ids_per_node.get(i).map_or(&[][..], Vec::as_slice);
            Json::object([
                ("sockets", core_map(ids, layouts.get(n).copied())),
                ("nodename", Json::str(n)),
                ("cpus_used", Json::Int(0)),
                ("memory_used", Json::Int(0)),
                ("memory_allocated", Json::Int(j.mem_per_node as i64)),
            ])
        })
        .collect();
    Json::object([
        (
            "nodes",
            Json::str(sluice_conf::hostlist::compress(&j.nodes)),
        ),
        (
            "allocated_cores",
            Json::Int(j.cpus_per_node.iter().sum::<u32>() as i64),
        ),
        ("allocated_hosts", Json::Int(j.nodes.len() as i64)),
        ("allocated_nodes", Json::List(nodes)),
    ])
}

/// Slurm's map of the cores a job holds on a node, `{"SOCKET": {"cores": {"CORE":
/// "allocated"}}}` (a core's index within its socket), from the processors the
/// controller numbered for it (`ids`) and the node's `layout` (cores per socket,
/// processors per core): processor `p` is on core `p / per_core`, counted socket by
/// socket. Every core is `allocated`: Slurm's `allocated_and_in_use` for the cores of
/// running steps is not told apart (COMPATIBILITY.md, `json-core-map`).
/// Empty without either (a job started before jobs carried their processors).
fn core_map(ids: &[u32], layout: Option<(u32, u32)>) -> Json {
    let Some((cores, threads)) = layout.filter(|&(c, t)| c > 0 && t > 0) else {
        return Json::Object(Vec::new());
    };
    let mut held: std::collections::BTreeMap<u32, std::collections::BTreeSet<u32>> =
        std::collections::BTreeMap::new();
    for p in ids {
        let core = p / threads;
        held.entry(core / cores).or_default().insert(core % cores);
    }
    Json::Object(
        held.into_iter()
            .map(|(socket, cores)| {
                let cores = cores
                    .into_iter()
                    .map(|c| (c.to_string(), Json::str("allocated")))
                    .collect();
                (
                    socket.to_string(),
                    Json::object([("cores", Json::Object(cores))]),
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{core_map, document, Layouts};
    use crate::slurm::sample_file::read_dir;
    use sluice_proto::types::{JobRecord, JobState, MemoryRequest};

    /// Fields Sluice has no value for that Slurm fills in (its association ids), and
    /// `job_resources`, which depends on the samples' cluster (see scenario 167).
    const UNTRACKED: &[&str] = &["association_id", "job_resources"];

    fn tres(cpus: u64, mem: u64) -> Vec<(String, u64)> {
        vec![
            ("cpu".into(), cpus),
            ("mem".into(), mem),
            ("node".into(), 1),
            ("billing".into(), cpus),
        ]
    }

    fn record(id: u64, name: &str, submit: i64) -> JobRecord {
        let mut j = JobRecord {
            id,
            user: "root".into(),
            group: "root".into(),
            account: "root".into(),
            partition: "debug".into(),
            qos: "normal".into(),
            submit_time: submit,
            ntasks: 1,
            cpus_per_task: 1,
            min_nodes: 1,
            mem_default: Some(MemoryRequest::PerCpu(500)),
            stdin: "/dev/null".into(),
            ..Default::default()
        };
        j.desc.name = name.into();
        j.desc.work_dir = "/tmp/hfmt/rswork/cwd".into();
        j.desc.command = "(null)".into();
        j
    }

    /// The keys of the job object with `"job_id": ID` in a document, in order.
    fn keys_of(doc: &str, id: u64) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(doc).unwrap();
        let n = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .position(|j| j["job_id"] == id)
            .unwrap();
        // serde_json's map sorts keys: read the order off the text instead.
        let block = doc.split("\n    {\n").nth(n + 1).unwrap();
        block
            .lines()
            .filter(|l| l.starts_with("      \"") && !l.starts_with("       "))
            .map(|l| l.trim().split('"').nth(1).unwrap().to_string())
            .collect()
    }

    fn job_of(doc: &str, id: u64) -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(doc).unwrap();
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job_id"] == id)
            .unwrap()
            .clone()
    }

    fn check(real: &str, ours: &str, id: u64) {
        assert!(keys_of(real, id).len() > 100);
        assert_eq!(keys_of(ours, id), keys_of(real, id));
        let (r, o) = (job_of(real, id), job_of(ours, id));
        for (k, v) in r.as_object().unwrap() {
            if !UNTRACKED.contains(&k.as_str()) {
                assert_eq!(&o[k], v, "{k}");
            }
        }
    }

    #[test]
    fn a_held_job_reads_as_in_slurm() {
        // `sbatch --hold -J fmt -t 25 --wrap true` under DefMemPerCPU=500.
        let real = &read_dir("squeue", "json_held")[0].stdout;
        let mut j = record(100001, "fmt", 1796032568);
        j.hold = Some(sluice_proto::types::Hold::User);
        j.reason = "JobHeldUser".into();
        j.time_limit = Some(25 * 60);
        j.tres_req = tres(1, 500);
        let ours = document(&[j], "compat", &Layouts::new());
        check(real, &ours, 100001);
        // The document around the jobs, byte for byte.
        let head = |d: &str| d[..d.find("\"jobs\"").unwrap()].to_string();
        assert_eq!(head(&ours), head(real));
        assert!(ours.ends_with("    }\n  ]\n}"));
    }

    #[test]
    fn a_running_job_reads_as_in_slurm() {
        // `sbatch -J runner -t 20 -n 2 -o run.out --wrap 'sleep 300'`, running on n1.
        let real = &read_dir("squeue", "json_running")[0].stdout;
        let mut j = record(100007, "runner", 1796032601);
        j.state = JobState::Running;
        j.reason = "None".into();
        j.priority = 11375;
        j.ntasks = 2;
        j.start_time = Some(1796032601);
        j.accrue_time = Some(1796032601);
        j.time_limit = Some(20 * 60);
        j.nodes = vec!["n1".into()];
        j.cpus_per_node = vec![2];
        j.mem_per_node = 1000;
        j.tres_req = tres(2, 1000);
        j.tres_alloc = tres(2, 1000);
        j.desc.output = Some("run.out".into());
        let ours = document(&[j], "compat", &Layouts::new());
        check(real, &ours, 100007);
        let resources = &job_of(&ours, 100007)["job_resources"];
        assert_eq!(resources["nodes"], "n1");
        assert_eq!(resources["allocated_hosts"], 1);
        assert_eq!(resources["allocated_nodes"][0]["memory_allocated"], 1000);
    }

    #[test]
    fn listed_and_excluded_nodes_read_as_slurm_keeps_them() {
        // `sbatch -w n2,n1,n2 -x 'n[4-5],n3'`: ranged, without repeats, as Slurm's
        // controller keeps them (and `scontrol show job` prints them).
        let mut j = record(100001, "listed", 1796032568);
        j.desc.nodelist = Some("n2,n1,n2".into());
        j.desc.exclude = Some("n[4-5],n3".into());
        let ours = document(&[j], "compat", &Layouts::new());
        let job = job_of(&ours, 100001);
        assert_eq!(job["required_nodes"], "n[1-2]");
        assert_eq!(job["excluded_nodes"], "n[3-5]");
    }

    #[test]
    fn a_finished_job_keeps_its_resources_and_a_pending_one_has_none() {
        // Real Slurm 22.05 (`squeue --json`): a COMPLETED or FAILED job still shows
        // `job_resources`; a PENDING one has no such key at all.
        let mut done = record(100001, "done", 1796032601);
        done.state = JobState::Failed;
        done.nodes = vec!["n1".into(), "n2".into()];
        done.cpus_per_node = vec![2, 1];
        done.mem_per_node = 700;
        let pending = record(100002, "waits", 1796032601);
        let doc = document(&[done, pending], "compat", &Layouts::new());
        let resources = &job_of(&doc, 100001)["job_resources"];
        assert_eq!(resources["nodes"], "n[1-2]");
        assert_eq!(resources["allocated_cores"], 3);
        assert_eq!(resources["allocated_hosts"], 2);
        assert_eq!(resources["allocated_nodes"][1]["nodename"], "n2");
        assert_eq!(resources["allocated_nodes"][1]["memory_allocated"], 700);
        assert!(!keys_of(&doc, 100002).contains(&"job_resources".to_string()));
        assert!(keys_of(&doc, 100001).contains(&"job_resources".to_string()));
    }

    #[test]
    fn the_processors_a_job_holds_map_to_cores_socket_by_socket() {
        let map = |ids: &[u32], layout| {
            let doc = core_map(ids, layout).render();
            serde_json::from_str::<serde_json::Value>(&doc)
                .unwrap()
                .to_string()
        };
        // One socket of four cores, one thread each: processors are cores.
        assert_eq!(
            map(&[2, 3], Some((4, 1))),
            r#"{"0":{"cores":{"2":"allocated","3":"allocated"}}}"#
        );
        // Two sockets of two cores, two threads each: processors 0-1 are core 0,
        // 4-7 the second socket's cores 0 and 1.
        assert_eq!(
            map(&[0, 1, 4, 7], Some((2, 2))),
            r#"{"0":{"cores":{"0":"allocated"}},"1":{"cores":{"0":"allocated","1":"allocated"}}}"#
        );
        // No layout, or no processors numbered: an empty map.
        assert_eq!(map(&[0], None), "{}");
        assert_eq!(map(&[], Some((4, 1))), "{}");
    }
}
