//! `srun`: run a parallel step, inside an allocation or in a new one.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::mpsc;

use sluice_conf::options::{Command, JobOptions};
use sluice_proto::pattern::{expand, PatternContext};
use sluice_proto::types::{JobRecord, LaunchTasks, StepPlan, StepRequest, TaskEvent};
use sluice_proto::Client;

use sluice_ctld::state::OOM_SIGNAL;

use super::allocate::{allocate, complete};
use super::common::{controller, describe, fail, USAGE_EXIT, VERSION};
use super::sbatch::describe_job;
use super::srun_het::Layout;

const ME: &str = "srun";

/// Runs `srun`.
pub fn main(args: Vec<String>) -> i32 {
    // `srun OPTS CMD : OPTS CMD ...`: one step (and job, outside an allocation) over
    // several heterogeneous job components, each part its options and command.
    let parsed = super::het_alloc::srun_parts(&super::het_alloc::split(&args));
    let (opts, argv) = parsed[0].clone();
    if opts.version {
        println!("{VERSION}");
        return 0;
    }
    if opts.help || opts.usage {
        let text = if opts.help {
            super::job_help::help(Command::Srun)
        } else {
            super::job_help::usage(Command::Srun)
        };
        print!("{text}");
        return 0;
    }
    if parsed.iter().any(|(_, argv)| argv.is_empty()) {
        fail(ME, "No command given to execute.", USAGE_EXIT);
    }
    if opts.pty {
        if opts.input.is_some() || opts.output.is_some() || opts.error.is_some() {
            fail(
                ME,
                "--error/--input/--output are incompatible with --pty",
                1,
            );
        }
        // Before any thread starts: only the thread that forwards it takes it.
        super::srun_pty::block_window_changes();
    }
    for w in &opts.warnings {
        if opts.verbose > 0 {
            eprintln!("{ME}: warning: {w}");
        }
    }
    let client = controller();
    let inside = std::env::var("SLURM_JOB_ID")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    match inside {
        // Inside an allocation there is no job to test: refused rather than run.
        Some(_) if opts.test_only => {
            fail(ME, "--test-only is not supported within an allocation", 1)
        }
        Some(job) => {
            let parts = parts_in_allocation(job, &parsed);
            run_parts(&client, &parts, &opts, false).0
        }
        None => {
            for (o, _) in &parsed {
                if let Err(m) = sluice_conf::options::check_gpus_per_socket(o) {
                    fail(ME, m, 1);
                }
                // The mail address, which only the client sees: refused as Slurm
                // refuses the allocation (a step inside one sends none).
                if let Err(e) = sluice_conf::options::check_lengths(o) {
                    fail(
                        ME,
                        format!("Unable to allocate resources: {}", e.message),
                        1,
                    );
                }
            }
            // A new allocation for just this step.
            let name = opts.job_name.clone().unwrap_or_else(|| {
                std::path::Path::new(&argv[0])
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "srun".into())
            });
            // The job's command is the program alone, as Slurm's srun sends it.
            let program = argv.first().cloned().unwrap_or_default();
            let line = super::common::submit_line();
            let desc = if parsed.len() > 1 {
                let components: Vec<JobOptions> = parsed.iter().map(|p| p.0.clone()).collect();
                super::het_alloc::describe_het(ME, &components, &name, &program, &line)
            } else {
                match describe_job(&opts, name, String::new(), program, true) {
                    Ok(mut d) => {
                        d.submit_line = Some(line);
                        d
                    }
                    Err(e) => fail(ME, e, USAGE_EXIT),
                }
            };
            if opts.test_only {
                return super::allocate::test_only(&client, ME, &desc);
            }
            let record = allocate(&client, ME, &desc);
            let job = record.id;
            let records = super::het_alloc::component_records(&client, ME, record);
            let parts: Vec<Part> = records
                .iter()
                .zip(&parsed)
                .map(|(r, (o, a))| Part {
                    job: r.id,
                    opts: o.clone(),
                    argv: a.clone(),
                    part: None,
                })
                .collect();
            let (code, oom) = run_parts(&client, &parts, &opts, true);
            if oom {
                let body = sluice_proto::types::ExitReport {
                    exit_code: 0,
                    signal: OOM_SIGNAL,
                };
                let _ =
                    client.post::<_, serde_json::Value>(&format!("/v1/jobs/{job}/complete"), &body);
            } else {
                complete(&client, job, code);
            }
            code
        }
    }
}

/// One component's part of a step: the component's job id, and the options and
/// command srun was given for it.
#[derive(Clone)]
struct Part {
    job: u64,
    opts: JobOptions,
    argv: Vec<String>,
    /// Which part of a heterogeneous step in an allocation of one component (its
    /// steps recorded `S+P`); None in a component of its own.
    part: Option<u32>,
}

impl Part {
    /// How the step (or this part of it) is named in a path: `S`, or `S+P`.
    fn step_path(&self, step: u32) -> String {
        match self.part {
            Some(p) => format!("{step}+{p}"),
            None => step.to_string(),
        }
    }
}

/// The parts of a step inside allocation `job`, in the components' order: each `:`
/// part in the components its `--het-group` names, else in the component of its place
/// on the line (a single part without `--het-group` runs in the allocation itself).
fn parts_in_allocation(job: u64, parsed: &[(JobOptions, Vec<String>)]) -> Vec<Part> {
    let size = std::env::var("SLURM_HET_SIZE")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    if parsed.len() > 1 {
        match size {
            // Parts in an allocation of one component: as Slurm's srun (since 20.11),
            // one step whose parts run on nodes of their own (see `run_parts`).
            None => {
                return parsed
                    .iter()
                    .enumerate()
                    .map(|(i, (opts, argv))| Part {
                        job,
                        opts: opts.clone(),
                        argv: argv.clone(),
                        part: Some(i as u32),
                    })
                    .collect()
            }
            Some(n) if parsed.len() as u32 > n => fail(
                ME,
                format!(
                    "Attempt to run a job step with het group value of {}, but the job \
                     allocation has maximum value of {}",
                    parsed.len() - 1,
                    n.saturating_sub(1)
                ),
                1,
            ),
            Some(_) => {}
        }
    }
    let mut parts = Vec::new();
    for (i, (opts, argv)) in parsed.iter().enumerate() {
        let groups = match het_groups(opts) {
            Some(g) => g,
            None if parsed.len() == 1 => {
                return vec![Part {
                    job,
                    opts: opts.clone(),
                    argv: argv.clone(),
                    part: None,
                }]
            }
            None => vec![i as u32],
        };
        for g in groups {
            parts.push(Part {
                job: het_component(job, g),
                opts: opts.clone(),
                argv: argv.clone(),
                part: None,
            });
        }
    }
    // In the components' order, whatever the parts' (Slurm's task 0 is the first
    // component's): their ids are the leader's and the next ones, in offset order.
    parts.sort_by_key(|p| p.job);
    parts
}

/// A heterogeneous step could not be created whole: the parts created already are
/// given up (a part in a job of its own failed, one of a local step ended as Slurm
/// records it, completed), and srun fails with `why`.
fn fail_parts(client: &Client, parts: &[Part], plans: &[StepPlan], why: String) -> ! {
    for (q, plan) in parts.iter().zip(plans) {
        let body = sluice_proto::types::ExitReport {
            exit_code: if q.part.is_some() { 0 } else { 1 },
            signal: 0,
        };
        let _ = client.post::<_, serde_json::Value>(
            &format!("/v1/jobs/{}/steps/{}/end", q.job, q.step_path(plan.step)),
            &body,
        );
    }
    fail(ME, why, 1)
}

/// Creates step `req` of job `job`: while the job's running steps hold the CPUs it
/// needs, srun says so once and asks again until they are free, and says when it got
/// them, as Slurm's srun does.
fn create_step(client: &Client, job: u64, req: &StepRequest) -> Result<StepPlan, String> {
    let mut waited = false;
    loop {
        match client.post::<_, StepPlan>(&format!("/v1/jobs/{job}/steps"), req) {
            Ok(plan) => {
                if waited {
                    eprintln!("{ME}: Step created for job {job}");
                }
                return Ok(plan);
            }
            Err(sluice_proto::ClientError::Status {
                code: sluice_proto::error::ErrorCode::Busy,
                message,
                ..
            }) => {
                if !waited {
                    eprintln!("{ME}: {message}");
                    waited = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => return Err(describe(&e)),
        }
    }
}

/// The heterogeneous job components `--het-group` names (`1`, `0,2`, `1-3`), in
/// order; `None` without the option.
fn het_groups(opts: &JobOptions) -> Option<Vec<u32>> {
    let spec = opts.het_group.as_deref()?;
    let mut out = Vec::new();
    for part in spec.split(',') {
        let bad = || -> ! { fail(ME, format!("Invalid --het-group value: {spec}"), 1) };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (
                    a.parse().unwrap_or_else(|_| bad()),
                    b.parse().unwrap_or_else(|_| bad()),
                );
                if a > b {
                    bad();
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().unwrap_or_else(|_| bad())),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The job id of component `group` of the heterogeneous job this allocation is (its
/// `SLURM_JOB_ID_HET_GROUP_n`); `job` itself for component 0 of any job. Slurm's
/// error for a component the allocation does not have.
fn het_component(job: u64, group: u32) -> u64 {
    if let Some(id) = std::env::var(format!("SLURM_JOB_ID_HET_GROUP_{group}"))
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return id;
    }
    if group == 0 {
        return job;
    }
    let max = std::env::var("SLURM_HET_SIZE")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(0, |n| n.saturating_sub(1));
    fail(
        ME,
        format!("Requested het-group offset exceeds highest hetjob index ({group} > {max})"),
        1,
    )
}

/// Runs one step over `parts` (one component's part each: a heterogeneous step when
/// there are several, its tasks numbered on from one component to the next, under one
/// step id); `own`: in the allocation srun made for it. What srun does with the
/// tasks' I/O, labels and terminal is `opts`'s, the first part's on the command line.
/// srun's exit status, and whether the step's memory limit killed some of it.
fn run_parts(client: &Client, parts: &[Part], opts: &JobOptions, own: bool) -> (i32, bool) {
    // Parts in one job's allocation: an ordinary step's variables, over all the parts.
    let local = parts.iter().any(|p| p.part.is_some());
    let het = parts.len() > 1 && !local;
    let job = parts[0].job;
    // The allocation a local heterogeneous step shares out among its parts.
    let allocation: Option<JobRecord> = local.then(|| {
        client
            .get(&format!("/v1/jobs/{job}"))
            .unwrap_or_else(|e| fail(ME, describe(&e), 1))
    });
    // The nodes the parts before took (each part runs on nodes of its own).
    let mut taken: Vec<String> = Vec::new();
    // Before any thread starts, so that every thread inherits the blocked mask.
    let mut jobs: Vec<u64> = parts.iter().map(|p| p.job).collect();
    jobs.dedup();
    let interrupts = forward_signals(jobs);
    let mut plans: Vec<StepPlan> = Vec::with_capacity(parts.len());
    let mut first_gpus_per_task = None;
    for p in parts {
        // `--gpus-per-task`, or the job's (sbatch passes it on in SLURM_GPUS_PER_TASK).
        let gpus_per_task = p.opts.gpus_per_task.as_ref().map(|g| g.1).or_else(|| {
            std::env::var("SLURM_GPUS_PER_TASK")
                .ok()
                .and_then(|v| gpu_count(&v))
        });
        if plans.is_empty() {
            first_gpus_per_task = gpus_per_task;
        }
        let (nodes, exclude) = match &allocation {
            Some(a) => super::srun_het::local_part_nodes(a, &p.opts, &taken)
                .unwrap_or_else(|why| fail_parts(client, parts, &plans, why)),
            None => (p.opts.nodes.map(|n| n.0), p.opts.exclude.clone()),
        };
        let req = StepRequest {
            ntasks: p.opts.ntasks,
            nodes,
            ntasks_per_node: p.opts.ntasks_per_node,
            cpus_per_task: p.opts.cpus_per_task,
            gpus_per_task,
            gpu_bind: p.opts.gpu_bind.clone(),
            argv: p.argv.clone(),
            name: step_name(&p.opts, &p.argv),
            nodelist: p.opts.nodelist.clone(),
            exclude,
            exact: p.opts.exact,
            overlap: p.opts.overlap,
            // One step id across the components: the first one's.
            step_id: plans.first().map(|f| f.step),
            part: p.part,
            srun: Some((super::common::hostname(), std::process::id())),
            // `-t` inside an allocation: the step's own limit (UNLIMITED: none, its
            // job's), to the second as a job's (COMPATIBILITY.md, `time-limit-seconds`).
            // An allocation srun made itself has that limit already.
            time_limit: p.opts.time.flatten().filter(|_| !own),
            submit_line: Some(super::common::submit_line()),
            gpus_per_node: step_gpus_per_node(&p.opts),
            gpus: p.opts.gpus.as_ref().map(|g| g.1),
        };
        match create_step(client, p.job, &req) {
            Ok(plan) => {
                taken.extend(plan.nodes.iter().map(|n| n.0.clone()));
                plans.push(plan)
            }
            Err(why) => fail_parts(client, parts, &plans, why),
        }
    }
    let gpus_per_task = first_gpus_per_task;
    let records: Vec<JobRecord> = parts
        .iter()
        .map(|p| {
            client
                .get(&format!("/v1/jobs/{}", p.job))
                .unwrap_or_else(|e| fail(ME, describe(&e), 1))
        })
        .collect();
    for ((p, r), plan) in parts.iter().zip(&records).zip(&plans) {
        if let Some(n) = p.opts.ntasks {
            // (Not for a part of a step in one allocation: its nodes are srun's choice.)
            if p.opts.nodes.is_none()
                && p.part.is_none()
                && (n as usize) < r.nodes.len()
                && !p.opts.quiet
            {
                eprintln!(
                    "{ME}: Warning: can't run {n} processes on {} nodes, setting nnodes to {}",
                    r.nodes.len(),
                    plan.nodes.len()
                );
            }
        }
    }
    // The parts' plans as one: every component's nodes in turn (`SLURM_NODEID` counts
    // on across them), their tasks numbered on (`SLURM_PROCID`).
    let layout = Layout::of(&plans);
    let plan = &layout.plan;
    let record = &records[0];
    // `--pty` on a terminal: its size goes with the launch. Without one, Slurm's srun
    // says so and runs the step as without `--pty`.
    let pty = if opts.pty {
        match super::srun_pty::window_size() {
            Ok(size) => Some(size),
            Err(e) => {
                eprintln!(
                    "{ME}: error: ioctl(TIOCGWINSZ): {}",
                    sluice_proto::oserror::describe(&e)
                );
                eprintln!("{ME}: error: Not using a pseudo-terminal, disregarding --pty option");
                None
            }
        }
    } else {
        None
    };
    let step_nodes: Vec<String> = plan.nodes.iter().map(|n| n.0.clone()).collect();
    let counts: Vec<u32> = plan.nodes.iter().map(|n| n.2.len() as u32).collect();
    // The step's environment: what srun runs in, with the job's and step's variables.
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    let nodelist = sluice_conf::hostlist::compress(&step_nodes);
    let tpn = sluice_ctld::state::tasks_per_node_string(&counts);
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    // A heterogeneous job's component runs its steps under the whole job's id.
    let job_id = record.het.map_or(job, |h| h.job_id);
    set("SLURM_JOB_ID", job_id.to_string());
    set("SLURM_JOBID", job_id.to_string());
    set("SLURM_JOB_NAME", record.desc.name.clone());
    set(
        "SLURM_JOB_NODELIST",
        sluice_conf::hostlist::compress(&record.nodes),
    );
    set("SLURM_JOB_NUM_NODES", record.nodes.len().to_string());
    set("SLURM_JOB_PARTITION", record.partition.clone());
    set("SLURM_STEP_ID", plan.step.to_string());
    set("SLURM_STEPID", plan.step.to_string());
    set("SLURM_STEP_NODELIST", nodelist.clone());
    set("SLURM_NODELIST", nodelist);
    set("SLURM_STEP_NUM_NODES", step_nodes.len().to_string());
    set("SLURM_NNODES", step_nodes.len().to_string());
    set("SLURM_STEP_NUM_TASKS", plan.ntasks.to_string());
    set("SLURM_NTASKS", plan.ntasks.to_string());
    set("SLURM_NPROCS", plan.ntasks.to_string());
    set("SLURM_STEP_TASKS_PER_NODE", tpn.clone());
    set("SLURM_TASKS_PER_NODE", tpn);
    set("SLURM_DISTRIBUTION", "block".into());
    // How the step's GPUs are bound to its tasks, as slurmd tells them (a binding
    // `--gpus-per-task` implies only for a step of several tasks).
    if let Some(bind) = sluice_ctld::state::gpu_env::tres_bind(
        parts[0].opts.gpu_bind.as_deref(),
        gpus_per_task.filter(|_| plan.ntasks > 1),
    ) {
        set("SLURMD_TRES_BIND", bind);
    }
    let shards = sluice_ctld::state::gpu_env::shards_asked(record);
    if shards > 0 {
        set("SLURM_SHARDS_ON_NODE", shards.to_string());
    }
    // Only when asked: srun's own `-c`, else the job's (which its batch script already
    // has in its environment, from `sbatch -c`).
    if let Some(c) = parts[0].opts.cpus_per_task.or(record.desc.cpus_per_task) {
        set("SLURM_CPUS_PER_TASK", c.to_string());
    }
    // (A heterogeneous job's allocation has it already, for its first component;
    // Slurm's srun sets none for the parts of a step in one allocation.)
    if record.het.is_none() && !local {
        set(
            "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0",
            sluice_ctld::state::tasks_per_node_string(&record.cpus_per_node),
        );
    }
    // Where srun runs, as the step's tasks are told (Slurm's srun also listens there for
    // its tasks' I/O: Sluice's srun does not listen, see COMPATIBILITY.md).
    let launch_ip = super::common::launch_address().to_string();
    set("SLURM_LAUNCH_NODE_IPADDR", launch_ip.clone());
    set("SLURM_SRUN_COMM_HOST", launch_ip);

    if let Some((a, t)) = record.array {
        set("SLURM_ARRAY_JOB_ID", a.to_string());
        set("SLURM_ARRAY_TASK_ID", t.to_string());
    }
    if opts.label {
        set("SLURM_LABELIO", "1".into());
    }
    // Kept when srun's environment has them already (a batch script's, from sbatch).
    env.entry("SLURM_PRIO_PROCESS".into())
        .or_insert_with(|| super::sbatch::prio_process().to_string());
    env.entry("SLURM_UMASK".into())
        .or_insert_with(super::common::umask_text);
    // Which cluster's controller the step belongs to, as Slurm's srun tells every step
    // (a batch script has it already; salloc's shell has not).
    if !env.contains_key("SLURM_WORKING_CLUSTER") {
        if let Some(w) = working_cluster(client) {
            env.insert("SLURM_WORKING_CLUSTER".into(), w);
        }
    }
    // A step in one component of a heterogeneous job: that component's CPUs are the
    // job's, as Slurm's srun tells its tasks.
    if !het && record.het.is_some() {
        env.insert(
            "SLURM_JOB_CPUS_PER_NODE".into(),
            sluice_ctld::state::tasks_per_node_string(&record.cpus_per_node),
        );
    }
    // The tasks of a step in a heterogeneous job have no
    // `SLURM_NODE_ALIASES_PACK_GROUP_n` for the step's first n components (Slurm
    // 22.05's srun drops what salloc set there, numbering by the step's components).
    // Nor, for a step of parts in one allocation, the allocation's own.
    if local {
        env.remove("SLURM_NODE_ALIASES");
    }
    if record.het.is_some() {
        for n in 0..records.len() {
            env.remove(&format!("SLURM_NODE_ALIASES_PACK_GROUP_{n}"));
        }
    }
    if own && !het {
        // srun's own allocation: what salloc would have told of it, as Slurm's srun
        // passes it on (it sets no distribution, and no component's CPUs, then).
        let cluster = super::common::cluster_name(client);
        for (k, v) in [
            ("SLURM_CLUSTER_NAME", cluster),
            ("SLURM_JOB_ACCOUNT", record.account.clone()),
            ("SLURM_JOB_QOS", record.qos.clone()),
            ("SLURM_SUBMIT_DIR", record.desc.submit_dir().to_string()),
            ("SLURM_SUBMIT_HOST", record.desc.submit_host.clone()),
            (
                "SLURM_JOB_CPUS_PER_NODE",
                sluice_ctld::state::tasks_per_node_string(&record.cpus_per_node),
            ),
        ] {
            env.insert(k.into(), v);
        }
        env.remove("SLURM_DISTRIBUTION");
        env.remove("SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0");
    }
    if het {
        let cluster = if own {
            super::common::cluster_name(client)
        } else {
            String::new()
        };
        env.extend(super::srun_het::het_step_variables(
            &records, &layout, own, &cluster,
        ));
    }
    let environment: Vec<(String, String)> = env.into_iter().collect();
    interrupts.launched(plan.step, plan.ntasks);
    let abort = std::sync::Arc::new(Abort::default());
    let (tx, rx) = mpsc::channel::<TaskEvent>();
    // Under `--pty` task 0 alone reads srun's input (and its output alone is shown).
    let input = if pty.is_some() {
        Input::Task(0)
    } else {
        Input::parse(opts.input.as_deref())
    };
    for (index, (node, socket, tasks)) in plan.nodes.iter().enumerate() {
        let (stdin, stdin_task) = input.on_node(tasks);
        let part = &parts[layout.node_part[index]];
        let order = LaunchTasks {
            job_id: part.job,
            step: plan.step,
            node_index: index as u32,
            tasks: tasks.clone(),
            task_gpus: plan.task_gpus.get(index).cloned().unwrap_or_default(),
            cpus: plan.cpus.get(index).copied(),
            argv: part.argv.clone(),
            environment: environment.clone(),
            // `-D`: where its tasks start (srun's own directory else), each part's
            // own, as in Slurm.
            work_dir: super::common::work_dir(part.opts.chdir.as_deref()),
            stdin,
            stdin_task,
            pty,
        };
        let tx = tx.clone();
        let socket = socket.clone();
        let node = node.clone();
        let abort = abort.clone();
        std::thread::spawn(move || follow_node(&socket, &node, &order, &tx, &abort));
    }
    drop(tx);
    // The agents of the nodes whose tasks read the input, with the component they run.
    let readers: Vec<(String, u64)> = plan
        .nodes
        .iter()
        .zip(&layout.node_part)
        .filter(|(n, _)| input.on_node(&n.2).0)
        .map(|(n, &p)| (n.1.clone(), parts[p].job))
        .collect();
    if !readers.is_empty() {
        let source = match &input {
            Input::File(pattern) => {
                let ctx = PatternContext {
                    job_id: job,
                    array: record.array,
                    step: Some(plan.step),
                    node: record.nodes.first().map(String::as_str).unwrap_or(""),
                    node_index: 0,
                    task: 0,
                    user: &record.user,
                    job_name: &record.desc.name,
                };
                let path = expand(pattern, &ctx);
                match std::fs::File::open(&path) {
                    Ok(f) => Some(Box::new(f) as Box<dyn std::io::Read + Send>),
                    Err(e) => fail(
                        ME,
                        format!(
                            "Could not open stdin file {path}: {}",
                            sluice_proto::oserror::describe(&e)
                        ),
                        1,
                    ),
                }
            }
            _ => None,
        };
        if pty.is_some() {
            super::srun_pty::raw_mode();
            if let Some(n) = plan.nodes.iter().find(|n| n.2.contains(&0)) {
                super::srun_pty::forward_window_changes(n.1.clone(), job, plan.step);
            }
        }
        forward_stdin(readers, plan.step, source);
    }
    let ctx_user = record.user.clone();
    let mut files: BTreeMap<(u32, u8), Option<std::fs::File>> = BTreeMap::new();
    let (mut worst, mut signal) = (0i32, 0i32);
    // Per part (component): its tasks' highest exit code and signal, for its step.
    let mut outcomes: Vec<(i32, i32)> = vec![(0, 0); parts.len()];
    let mut failed = Vec::new();
    // Nodes where the step's memory limit killed processes.
    let mut oom_nodes: Vec<String> = Vec::new();
    // Once a launch failed: until when srun waits for the step's other tasks to go.
    let mut aborting: Option<std::time::Instant> = None;
    // The parts of the step cancelled on their own (`scancel JOB.STEP`), as they told.
    let mut cancelled_parts: Vec<usize> = Vec::new();
    let mut timed_out_parts: Vec<usize> = Vec::new();
    // `-K`: once a task exits non-zero the step is ended (the failures said so far
    // were said then, not again at the end).
    let mut kill_on_bad_exit = opts.kill_on_bad_exit;
    let mut ended_bad: Option<usize> = None;
    // Whether `-K` ended the step before anything else had cancelled it: only then
    // does its request end the step (and srun say "Force Terminated").
    let mut bad_exit_ended_it = false;
    // A launch failed, or contact with a node's tasks was lost: srun's status is 1 (or
    // a task's higher exit code) whatever signal ended the others.
    let mut errored = false;
    // `-W` (unset: the cluster's `WaitTime`): once the first task has exited, until
    // when the others may run.
    let mut waiting: Option<std::time::Instant> = None;
    let mut wait_secs = 0;
    let mut first_exit_seen = false;
    let mut self_killed = false;
    loop {
        let until = match (aborting, waiting) {
            (Some(a), Some(w)) => Some(a.min(w)),
            (a, w) => a.or(w),
        };
        let e = match until {
            None => match rx.recv() {
                Ok(e) => e,
                Err(_) => break,
            },
            Some(until) => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                match rx.recv_timeout(left) {
                    Ok(e) => e,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) if waiting == Some(until) => {
                        // As Slurm's srun when its `--wait` runs out: the tasks' states,
                        // then the step killed as `scancel JOB.STEP` kills it.
                        waiting = None;
                        eprintln!("{ME}: First task exited {wait_secs}s ago");
                        interrupts.print_status(job);
                        self_killed = true;
                        terminate_step(client, parts, plan.step, false);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        eprintln!("{ME}: error: Timed out waiting for job step to complete");
                        break;
                    }
                }
            }
        };
        match e {
            // Slurm's srun shows task 0's output alone under `--pty`.
            TaskEvent::Output { task, .. } if pty.is_some() && task != 0 => {}
            TaskEvent::Output { task, stream, data } => {
                let text = if opts.label {
                    format!("{task}: {data}")
                } else {
                    data
                };
                let file = files.entry((task, stream)).or_insert_with(|| {
                    let pattern = if stream == 2 {
                        opts.error.as_ref().or(opts.output.as_ref())
                    } else {
                        opts.output.as_ref()
                    }?;
                    let ctx = PatternContext {
                        job_id: job,
                        array: record.array,
                        step: Some(plan.step),
                        node: record.nodes.first().map(String::as_str).unwrap_or(""),
                        node_index: 0,
                        task,
                        user: &ctx_user,
                        job_name: &record.desc.name,
                    };
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(expand(pattern, &ctx))
                        .ok()
                });
                match file.as_mut() {
                    Some(f) => {
                        let _ = f.write_all(text.as_bytes());
                    }
                    None if stream == 2 => {
                        let _ = std::io::stderr().write_all(text.as_bytes());
                    }
                    None => {
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(text.as_bytes());
                        let _ = out.flush();
                    }
                }
            }
            TaskEvent::Exit {
                task,
                code,
                signal: sig,
            } => {
                interrupts.exited(task, code != 0 || sig != 0);
                if !std::mem::replace(&mut first_exit_seen, true) {
                    wait_secs = opts.max_wait.unwrap_or_else(cluster_wait_time);
                    if wait_secs > 0 {
                        waiting = Some(
                            std::time::Instant::now()
                                + std::time::Duration::from_secs(wait_secs.into()),
                        );
                    }
                }
                if code != 0 || sig != 0 {
                    failed.push((task, code, sig));
                }
                worst = worst.max(code);
                signal = signal.max(sig);
                let o = &mut outcomes[layout.part_of_task(task)];
                *o = (o.0.max(code), o.1.max(sig));
                if (code != 0 || sig != 0)
                    && ended_bad.is_none()
                    && !interrupts.aborted()
                    && *kill_on_bad_exit.get_or_insert_with(cluster_kills_on_bad_exit)
                {
                    // As Slurm's srun: the failure is said, then the step ended as
                    // `scancel JOB.STEP` ends it (its tasks told SIGTERM, then SIGKILL
                    // after KillWait).
                    report_failures(&failed, plan, &layout, &oom_nodes, false);
                    ended_bad = Some(failed.len());
                    bad_exit_ended_it = !self_killed && cancelled_parts.is_empty();
                    // Slurm's `-W` alarm, set already, still rings.
                    terminate_step(client, parts, plan.step, true);
                }
            }
            TaskEvent::OutOfMemory { task, .. } => {
                if let Some(n) = plan.nodes.iter().find(|n| n.2.contains(&task)) {
                    oom_nodes.push(n.0.clone());
                }
            }
            TaskEvent::Error { message } => {
                eprintln!("{ME}: error: {message}");
                errored = true;
                worst = worst.max(1);
                for o in &mut outcomes {
                    o.0 = o.0.max(1);
                }
                // A launch failed on a node: as Slurm's srun, the step is aborted, its
                // tasks killed on every node, and srun waits for them for KillWait
                // and two seconds.
                if let (None, Some(why)) = (aborting, abort.failure()) {
                    eprintln!("{ME}: error: Application launch failed: {why}");
                    let wait = kill_wait() + 2;
                    eprintln!(
                        "{ME}: Job step aborted: Waiting up to {wait} seconds for job step to finish."
                    );
                    aborting = Some(
                        std::time::Instant::now() + std::time::Duration::from_secs(wait as u64),
                    );
                    kill_step(abort.clone(), plan.step);
                }
            }
            // Said once per part of the step (each part's own step in Slurm), by the
            // first of its nodes that tells: cancelled (`scancel JOB.STEP`), or at its
            // own time limit (`srun -t`).
            TaskEvent::Cancelled {
                node,
                at,
                time_limit,
            } => {
                let index = plan.nodes.iter().position(|n| n.0 == node).unwrap_or(0);
                let which = layout.node_part.get(index).copied().unwrap_or(0);
                let told = if time_limit {
                    &mut timed_out_parts
                } else {
                    &mut cancelled_parts
                };
                if told.contains(&which) {
                    continue;
                }
                told.push(which);
                // `scancel JOB.STEP`: as Slurm's srun, the step is aborted and srun
                // waits KillWait and two seconds for its tasks; slurmstepd's notice
                // follows. At its time limit its tasks are ended as a job's are.
                // A part of a step in one allocation is `J.S+P`, as Slurm names it.
                let part = &parts[which];
                let step = match part.part {
                    Some(p) => format!("{}+{p}", plan.step),
                    None => plan.step.to_string(),
                };
                let notice = format!(
                    "slurmstepd-{node}: error: *** STEP {}.{step} ON {node} CANCELLED AT {}{} ***",
                    part.job,
                    // slurmstepd's words, in the daemon's time format, not the user's.
                    sluice_proto::time::timestamp(at),
                    if time_limit { " DUE TO TIME LIMIT" } else { "" }
                );
                // Ended by srun itself (`-W` run out), slurmstepd's notice comes first.
                if self_killed {
                    eprintln!("{notice}");
                }
                if !time_limit {
                    let wait = kill_wait() + 2;
                    // (Not when srun ended it itself, for `-K`.)
                    if ended_bad.is_none() {
                        eprintln!(
                            "{ME}: Job step aborted: Waiting up to {wait} seconds for job step to finish."
                        );
                    }
                    if aborting.is_none() {
                        aborting = Some(
                            std::time::Instant::now() + std::time::Duration::from_secs(wait as u64),
                        );
                    }
                }
                if !self_killed {
                    eprintln!("{notice}");
                }
            }
            TaskEvent::End => {}
        }
    }
    abort.finish();
    super::srun_pty::restore();
    // Once srun was interrupted twice, tasks ended by a signal are what was asked for:
    // Slurm's srun says so only when verbose.
    let aborted = interrupts.aborted();
    report_failures(
        &failed[ended_bad.unwrap_or(0)..],
        plan,
        &layout,
        &oom_nodes,
        aborted,
    );
    // A task ended by SIGTERM or SIGKILL (not the memory limit's): srun says the step
    // was ended, as Slurm's does.
    let forced = failed.iter().any(|&(task, _, sig)| {
        let oom = plan
            .nodes
            .iter()
            .find(|n| n.2.contains(&task))
            .is_some_and(|n| oom_nodes.contains(&n.0));
        sig == libc::SIGTERM || (sig == libc::SIGKILL && !oom)
    });
    // (Not for a step cancelled on its own, by `scancel` or by `-W` running out, even
    // after `-K`: Slurm's srun said it was aborted, and a `-K` after that finds the
    // step ending already.)
    let by_srun = if ended_bad.is_some() {
        bad_exit_ended_it && !self_killed
    } else {
        cancelled_parts.is_empty() && !self_killed
    };
    if forced && !opts.quiet && !aborted && by_srun {
        eprintln!("{ME}: Force Terminated StepId={job}.{}", plan.step);
    }
    // Each component's part of the step ends with its own tasks' outcome. An OOM kill
    // is reported as Slurm records it: signal 125 (sacct's `0:125`).
    for (i, (p, &(exit_code, signal))) in parts.iter().zip(&outcomes).enumerate() {
        let oom = plan
            .nodes
            .iter()
            .zip(&layout.node_part)
            .any(|(n, &q)| q == i && oom_nodes.contains(&n.0));
        let body = if oom {
            sluice_proto::types::ExitReport {
                exit_code: 0,
                signal: OOM_SIGNAL,
            }
        } else if !errored {
            // As Slurm records a step from its nodes: per node a signal outweighs exit
            // codes, across nodes the largest wait status wins.
            let nodes = plan
                .nodes
                .iter()
                .zip(&layout.node_part)
                .filter(|(_, &q)| q == i)
                .map(|(n, _)| {
                    failed
                        .iter()
                        .filter(|(t, _, _)| n.2.contains(t))
                        .fold((0, 0), |(c, g), &(_, code, sig)| (c.max(code), g.max(sig)))
                });
            sluice_proto::types::ExitReport::of_nodes(nodes)
        } else {
            sluice_proto::types::ExitReport { exit_code, signal }
        };
        let _ = client.post::<_, serde_json::Value>(
            &format!("/v1/jobs/{}/steps/{}/end", p.job, p.step_path(plan.step)),
            &body,
        );
    }
    // As Slurm's srun keeps it: a task ended by a signal outweighs any exit code (not
    // a failed launch's 1).
    let code = if signal != 0 && !errored {
        128 + signal
    } else {
        worst
    };
    (code, !oom_nodes.is_empty())
}

/// Says how `failed` tasks (task, exit code, signal) ended, in Slurm's shape: one line
/// per node and outcome, `vm: tasks 0-3: Exited with exit code 3`, or the signal's
/// description; in a heterogeneous step, per component, its tasks numbered within it.
/// Once srun was interrupted twice (`aborted`), tasks ended by a signal are what was
/// asked for: Slurm's srun says so only when verbose.
fn report_failures(
    failed: &[(u32, i32, i32)],
    plan: &StepPlan,
    layout: &super::srun_het::Layout,
    oom_nodes: &[String],
    aborted: bool,
) {
    let mut by_outcome: BTreeMap<(usize, &str, i32, i32), Vec<u32>> = BTreeMap::new();
    for &(task, code, sig) in failed {
        let node = plan
            .nodes
            .iter()
            .find(|n| n.2.contains(&task))
            .map_or("", |n| n.0.as_str());
        let part = layout.part_of_task(task);
        by_outcome
            .entry((part, node, code, sig))
            .or_default()
            .push(task - layout.offsets[part]);
    }
    for ((_, node, code, sig), mut tasks) in by_outcome {
        if aborted && sig != 0 {
            continue;
        }
        tasks.sort_unstable();
        let which = match tasks.len() {
            1 => format!("task {}", tasks[0]),
            _ => format!("tasks {}", sluice_proto::types::compact_indices(&tasks)),
        };
        if sig == 9 && oom_nodes.iter().any(|n| n == node) {
            eprintln!("{ME}: error: {node}: {which}: Out Of Memory");
        } else if sig != 0 {
            let what = nix::sys::signal::Signal::try_from(sig).map_or_else(
                |_| format!("Signal {sig}"),
                |s| describe_signal(s).to_string(),
            );
            eprintln!("{ME}: error: {node}: {which}: {what}");
        } else {
            eprintln!("{ME}: error: {node}: {which}: Exited with exit code {code}");
        }
    }
}

/// srun ends its step itself, as Slurm's srun's `_step_signal` does: said per part,
/// then cancelled through the controller, `terminate` (SIGTERM, SIGKILL after
/// KillWait: `-K`) or at once (SIGKILL: `-W` run out).
fn terminate_step(client: &Client, parts: &[Part], step: u32, terminate: bool) {
    for p in parts {
        eprintln!(
            "{ME}: launch/slurm: _step_signal: Terminating StepId={}.{}",
            p.job,
            p.step_path(step)
        );
        let req = sluice_proto::types::CancelRequest {
            steps: vec![(p.job, None, step)],
            terminate,
            ..Default::default()
        };
        let _ = client.post::<_, serde_json::Value>("/v1/cancel", &req);
    }
}

/// Whether the cluster ends a step once a task exits non-zero (`KillOnBadExit=1`),
/// for an srun that did not say (`-K`).
fn cluster_kills_on_bad_exit() -> bool {
    config_number("KillOnBadExit").is_some_and(|n| n != 0)
}

/// How long the step's other tasks may run once one has exited, for an srun that did
/// not say (`-W`): the cluster's `WaitTime`, 0 (for ever) when unset or unread.
fn cluster_wait_time() -> u32 {
    config_number("WaitTime")
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The number a setting of the cluster's configuration starts with (`KillWait` is
/// `30 sec`); None when it cannot be read.
fn config_number(key: &str) -> Option<i64> {
    // Read once, for every setting srun asks (KillWait, KillOnBadExit, WaitTime).
    static CONFIG: std::sync::OnceLock<Option<sluice_proto::types::ConfigInfo>> =
        std::sync::OnceLock::new();
    let c = CONFIG
        .get_or_init(|| controller().get("/v1/config").ok())
        .as_ref()?;
    let (_, v) = c
        .entries
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))?;
    v.split_whitespace().next()?.parse::<i64>().ok()
}

/// Which of a step's tasks read srun's standard input (`--input`): all of them
/// (Slurm's default, `all`), none (`none`), one task (`--input=N`), or all of them from
/// a file (a filename pattern) instead of srun's own input.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Input {
    All,
    None,
    Task(u32),
    File(String),
}

impl Input {
    fn parse(v: Option<&str>) -> Input {
        match v {
            None => Input::All,
            Some(v) if v.eq_ignore_ascii_case("all") => Input::All,
            Some(v) if v.eq_ignore_ascii_case("none") => Input::None,
            Some(v) => match v.parse() {
                Ok(t) => Input::Task(t),
                Err(_) => Input::File(v.to_string()),
            },
        }
    }

    /// For a node running `tasks`: whether some of them read the input, and which
    /// one when only one does.
    fn on_node(&self, tasks: &[u32]) -> (bool, Option<u32>) {
        match self {
            Input::All | Input::File(_) => (!tasks.is_empty(), None),
            Input::None => (false, None),
            Input::Task(t) => (tasks.contains(t), Some(*t)),
        }
    }
}

/// Sends srun's standard input (or `source`) to the tasks reading it, through the
/// agents of their nodes (`agents`), every chunk to each; its end closes their input.
/// Runs in the background: a task that never reads, or a terminal nobody types into,
/// holds nothing up.
fn forward_stdin(
    agents: Vec<(String, u64)>,
    step: u32,
    source: Option<Box<dyn std::io::Read + Send>>,
) {
    std::thread::spawn(move || {
        let mut input: Box<dyn std::io::Read + Send> =
            source.unwrap_or_else(|| Box::new(std::io::stdin()));
        let signer = super::common::agent_signer();
        let mut agents: Vec<(Client, u64)> = agents
            .iter()
            .map(|(a, job)| (Client::endpoint(a, &signer), *job))
            .collect();
        let mut buf = vec![0u8; 64 * 1024];
        while !agents.is_empty() {
            let n = input.read(&mut buf).unwrap_or(0);
            // An agent whose tasks stopped reading (or are gone) gets no more.
            agents.retain(|(agent, job)| {
                let chunk = sluice_proto::types::StdinChunk {
                    job_id: *job,
                    step,
                    data: buf[..n].to_vec(),
                    eof: n == 0,
                    window: None,
                };
                send_chunk(agent, &chunk)
            });
            if n == 0 {
                return;
            }
        }
    });
}

/// How long srun waits for a node's agent to come back after its stream of the step's
/// events broke (the agent was restarted or upgraded while the step ran): Slurm's
/// default `SlurmdTimeout`, after which the controller gives the node up too.
const REATTACH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Launches a step's tasks on one node and passes their events to `tx` until each of
/// them has exited. The tasks run under the job's supervisor there, not under the
/// node's agent: should the stream of their events break (the agent was restarted), it
/// asks the next agent for the events from where it stopped (`/v1/tasks/attach`), for
/// up to [`REATTACH_PATIENCE`]. Once it has every exit it says so (`/v1/tasks/done`).
fn follow_node(
    socket: &str,
    node: &str,
    order: &LaunchTasks,
    tx: &mpsc::Sender<TaskEvent>,
    abort: &Abort,
) {
    let client = Client::endpoint(socket, &super::common::agent_signer());
    let mut seen: u64 = 0;
    let mut exited: std::collections::BTreeSet<u32> = Default::default();
    let mut complete = false;
    let mut first = true;
    let mut since = std::time::Instant::now();
    loop {
        let stream = if first {
            client.post_stream("/v1/tasks", order)
        } else {
            let attach = sluice_proto::types::TasksAttach {
                job_id: order.job_id,
                step: order.step,
                from: seen,
            };
            client.post_stream("/v1/tasks/attach", &attach)
        };
        match stream {
            Ok(reader) => {
                if first {
                    abort.launched(socket, order.job_id);
                }
                since = std::time::Instant::now();
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    // A line cut off as the agent went is no event: it comes again.
                    let Ok(e) = serde_json::from_str::<TaskEvent>(&line) else {
                        continue;
                    };
                    match e {
                        TaskEvent::End => complete = true,
                        TaskEvent::Exit { task, .. } => {
                            exited.insert(task);
                        }
                        _ => {}
                    }
                    if complete {
                        break;
                    }
                    seen += 1;
                    let _ = tx.send(e);
                }
            }
            // Its tasks never start here: the step is aborted (the main loop kills it
            // on the other nodes), as Slurm's srun does.
            Err(e) if first => {
                let why = describe(&e);
                abort.failed(&why);
                let _ = tx.send(TaskEvent::Error {
                    message: format!(
                        "Task launch for StepId={}.{} failed on node {node}: {why}",
                        order.job_id, order.step
                    ),
                });
                return;
            }
            // The agent answers, but its job's supervisor has no such step (it is
            // gone, or the agent knows nothing of reattaching): nothing more will come,
            // and what is missing is lost.
            Err(e @ sluice_proto::ClientError::Status { .. }) => {
                if !order.tasks.iter().all(|t| exited.contains(t)) {
                    lost_node(node, order, &exited, &describe(&e), tx);
                }
                return;
            }
            Err(_) => {}
        }
        first = false;
        if complete {
            let done = sluice_proto::types::TasksDone {
                job_id: order.job_id,
                step: order.step,
            };
            let _ = client.post::<_, serde_json::Value>("/v1/tasks/done", &done);
            return;
        }
        if since.elapsed() > REATTACH_PATIENCE {
            lost_node(node, order, &exited, "its agent does not answer", tx);
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The tasks of `order` on `node` that have not exited are lost to srun: said, and
/// counted as failed.
fn lost_node(
    node: &str,
    order: &LaunchTasks,
    exited: &std::collections::BTreeSet<u32>,
    why: &str,
    tx: &mpsc::Sender<TaskEvent>,
) {
    let _ = tx.send(TaskEvent::Error {
        message: format!("lost contact with the tasks on {node}: {why}"),
    });
    for &t in order.tasks.iter().filter(|t| !exited.contains(t)) {
        let _ = tx.send(TaskEvent::Exit {
            task: t,
            code: 1,
            signal: 0,
        });
    }
}

/// A step whose launch failed on a node: Slurm's srun aborts it, killing its tasks on
/// every other node.
#[derive(Default)]
struct Abort {
    inner: std::sync::Mutex<AbortState>,
}

#[derive(Default)]
struct AbortState {
    /// Why the first failed launch failed.
    failure: Option<String>,
    /// The agents (their sockets) that took their part of the step, with the job (the
    /// component) it runs in there.
    launched: Vec<(String, u64)>,
    /// srun is done with the step: no more kills.
    finished: bool,
}

impl Abort {
    fn failed(&self, why: &str) {
        let mut st = self.inner.lock().expect("lock");
        st.failure.get_or_insert_with(|| why.to_string());
    }

    fn failure(&self) -> Option<String> {
        self.inner.lock().expect("lock").failure.clone()
    }

    fn launched(&self, socket: &str, job: u64) {
        self.inner
            .lock()
            .expect("lock")
            .launched
            .push((socket.to_string(), job));
    }

    fn finish(&self) {
        self.inner.lock().expect("lock").finished = true;
    }
}

/// Kills the tasks of step `step` on every node that took its part of it,
/// again every half second (a launch still under way when the first kill came starts
/// its tasks later) until srun is done with the step.
fn kill_step(abort: std::sync::Arc<Abort>, step: u32) {
    std::thread::spawn(move || {
        let signer = super::common::agent_signer();
        loop {
            let agents = {
                let st = abort.inner.lock().expect("lock");
                if st.finished {
                    return;
                }
                st.launched.clone()
            };
            for (a, job) in &agents {
                let order = sluice_proto::types::TasksSignal {
                    job_id: *job,
                    step,
                    signal: libc::SIGKILL,
                };
                let _ = Client::endpoint(a, &signer)
                    .post::<_, serde_json::Value>("/v1/tasks/signal", &order);
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    });
}

/// `SLURM_WORKING_CLUSTER` as Slurm's srun sets it, `CLUSTER:CONTROLLER:PORT:9728:109`
/// (as the controller sets it for a batch script, `sluice_ctld::state::working_cluster`),
/// from slurm.conf; none without one.
fn working_cluster(client: &Client) -> Option<String> {
    let net = super::common::net_conf(false)?;
    let cluster = client
        .get::<sluice_proto::types::ConfigInfo>("/v1/config")
        .ok()?
        .cluster_name;
    let host = net
        .controllers
        .first()
        .map_or_else(sluice_ctld::config::this_host, |c| c.addr.clone());
    Some(format!("{cluster}:{host}:{}:9728:109", net.slurmctld_port))
}

/// The cluster's `KillWait` (Slurm's default, 30, when it cannot be read).
fn kill_wait() -> i64 {
    config_number("KillWait").unwrap_or(30)
}

/// Writes one chunk of input to a node's tasks; false once they take no more. The
/// tasks may not be started yet: it tries again for a while (30 s).
pub(super) fn send_chunk(agent: &Client, chunk: &sluice_proto::types::StdinChunk) -> bool {
    let mut tries = 0;
    loop {
        match agent.post::<_, serde_json::Value>("/v1/stdin", chunk) {
            Err(sluice_proto::ClientError::Status {
                code: sluice_proto::error::ErrorCode::NotReady,
                ..
            }) if tries < 1500 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(_) => return true,
            Err(_) => return false,
        }
    }
}

/// A step's name: `--job-name` when given on the command line, else the command's
/// base name, as Slurm names it.
fn step_name(opts: &JobOptions, argv: &[String]) -> String {
    opts.job_name.clone().unwrap_or_else(|| {
        std::path::Path::new(&argv[0])
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}

/// The count of a `--gpus-per-task` value (`2`, or `a100:2`).
fn gpu_count(v: &str) -> Option<u32> {
    v.rsplit(':').next().and_then(|n| n.trim().parse().ok())
}

/// What srun's signal thread knows of the step, for Ctrl-C (see [`forward_signals`]).
#[derive(Default)]
struct Interrupts {
    inner: std::sync::Mutex<InterruptState>,
}

#[derive(Default)]
struct InterruptState {
    /// The step and its task count, once launched.
    step: Option<(u32, u32)>,
    /// Tasks that exited: whether abnormally.
    exited: BTreeMap<u32, bool>,
    /// When the last SIGINT came.
    last: Option<std::time::Instant>,
    /// Two came within a second: the step is being aborted.
    aborted: bool,
}

impl InterruptState {
    fn print_status(&self, job: u64, step: u32, ntasks: u32) {
        let group =
            |f: &dyn Fn(u32) -> bool| -> Vec<u32> { (0..ntasks).filter(|t| f(*t)).collect() };
        let running = group(&|t| !self.exited.contains_key(&t));
        let normal = group(&|t| self.exited.get(&t) == Some(&false));
        let abnormal = group(&|t| self.exited.get(&t) == Some(&true));
        // In Slurm's order (`task_state_print`).
        for (tasks, what) in [
            (running, "running"),
            (abnormal, "exited abnormally"),
            (normal, "exited"),
        ] {
            if tasks.is_empty() {
                continue;
            }
            eprintln!(
                "{ME}: StepId={job}.{step} task{} {}: {what}",
                if tasks.len() == 1 { "" } else { "s" },
                sluice_proto::types::compact_indices(&tasks)
            );
        }
    }
}

impl Interrupts {
    fn launched(&self, step: u32, ntasks: u32) {
        self.inner.lock().expect("lock").step = Some((step, ntasks));
    }

    fn exited(&self, task: u32, abnormally: bool) {
        self.inner
            .lock()
            .expect("lock")
            .exited
            .insert(task, abnormally);
    }

    fn aborted(&self) -> bool {
        self.inner.lock().expect("lock").aborted
    }

    /// A SIGINT came: Slurm's srun prints the step's tasks' states the first time, and
    /// forwards it (then kills the step) only on a second one within a second. Before
    /// the step is launched it goes to the job, as any other signal. Whether to
    /// forward it.
    fn interrupt(&self, job: u64) -> bool {
        let mut st = self.inner.lock().expect("lock");
        let Some((step, ntasks)) = st.step else {
            return true;
        };
        let now = std::time::Instant::now();
        let again = st
            .last
            .is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(1));
        st.last = Some(now);
        if again {
            st.aborted = true;
            eprintln!("{ME}: sending Ctrl-C to StepId={job}.{step}");
            return true;
        }
        eprintln!("{ME}: interrupt (one more within 1 sec to abort)");
        st.print_status(job, step, ntasks);
        false
    }

    /// Says which of the step's tasks run and which have exited, as Slurm's srun does
    /// on a first Ctrl-C and when its `--wait` runs out.
    fn print_status(&self, job: u64) {
        let st = self.inner.lock().expect("lock");
        if let Some((step, ntasks)) = st.step {
            st.print_status(job, step, ntasks);
        }
    }
}

/// SIGINT, SIGTERM, SIGUSR1, SIGUSR2 and SIGHUP sent to srun go on to the job's steps;
/// SIGINT as Slurm's srun handles Ctrl-C ([`Interrupts::interrupt`]): once a step
/// runs, a first one prints its tasks' states, a second within a second is forwarded
/// and the step aborted: should tasks survive it for a second, they are killed
/// (Slurm's srun has the controller kill the step at once, racing the Ctrl-C).
fn forward_signals(jobs: Vec<u64>) -> std::sync::Arc<Interrupts> {
    use nix::sys::signal::{SigSet, Signal};
    let interrupts = std::sync::Arc::new(Interrupts::default());
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGHUP,
    ] {
        set.add(s);
    }
    if set.thread_block().is_err() {
        return interrupts;
    }
    let state = interrupts.clone();
    std::thread::spawn(move || loop {
        let Ok(sig) = set.wait() else { return };
        if sig == Signal::SIGINT && !state.interrupt(jobs[0]) {
            continue;
        }
        let jobs = jobs.clone();
        let send = move |sig: i32| {
            let req = sluice_proto::types::CancelRequest {
                jobs: jobs.iter().map(|&j| (j, None)).collect(),
                signal: Some(sig),
                ..Default::default()
            };
            let _ = controller().post::<_, serde_json::Value>("/v1/cancel", &req);
        };
        // Slurm's srun waits KillWait and two seconds for the aborted step. Said
        // before the signal goes: once it has, the tasks may end, and srun with them,
        // before this thread would have said it.
        let aborted = sig == Signal::SIGINT && state.aborted();
        if aborted {
            eprintln!(
                "{ME}: Job step aborted: Waiting up to {} seconds for job step to finish.",
                kill_wait() + 2
            );
        }
        send(sig as i32);
        if aborted {
            let state = state.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let st = state.inner.lock().expect("lock");
                let left = st.step.is_some_and(|(_, n)| (st.exited.len() as u32) < n);
                drop(st);
                if left {
                    send(libc::SIGKILL);
                }
            });
        }
    });
    interrupts
}

/// The C library's description of a signal (`strsignal`), as Slurm prints it.
fn describe_signal(s: nix::sys::signal::Signal) -> &'static str {
    use nix::sys::signal::Signal::*;
    match s {
        SIGHUP => "Hangup",
        SIGINT => "Interrupt",
        SIGQUIT => "Quit",
        SIGABRT => "Aborted",
        SIGKILL => "Killed",
        SIGSEGV => "Segmentation fault",
        SIGPIPE => "Broken pipe",
        SIGALRM => "Alarm clock",
        SIGTERM => "Terminated",
        SIGUSR1 => "User defined signal 1",
        SIGUSR2 => "User defined signal 2",
        SIGBUS => "Bus error",
        SIGFPE => "Floating point exception",
        SIGILL => "Illegal instruction",
        _ => s.as_str(),
    }
}

/// The GPUs a step asks for on each of its nodes, as its own options say:
/// `--gres=gpu[:TYPE]:N` or `--gpus-per-node=N` (`--gres=gpu:0`, none of them). None:
/// per node it asks for nothing; `--gpus` and `--gpus-per-task` go to the controller
/// as given, which knows the step's nodes and tasks.
fn step_gpus_per_node(opts: &JobOptions) -> Option<u32> {
    let mut gres = opts.gres.iter().filter(|g| g.name == "gpu").peekable();
    if gres.peek().is_some() {
        return Some(gres.map(|g| g.count).sum());
    }
    opts.gpus_per_node.as_ref().map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_gpus_are_its_own_options_and_gpu_0_is_none() {
        let opts = |args: &str| {
            let words: Vec<String> = args.split(' ').map(str::to_string).collect();
            let mut o = JobOptions::default();
            sluice_conf::options::parse_args(sluice_conf::options::Command::Srun, &words, &mut o)
                .unwrap();
            o
        };
        let per_node = |args: &str| step_gpus_per_node(&opts(args));
        assert_eq!(per_node("--gres=gpu:2 true"), Some(2));
        assert_eq!(per_node("--gres=gpu:0 true"), Some(0));
        assert_eq!(per_node("--gpus-per-node=3 true"), Some(3));
        // --gpus and --gpus-per-task go to the controller as given.
        assert_eq!(per_node("--gpus=3 true"), None);
        assert_eq!(per_node("-n 2 true"), None);
    }

    #[test]
    fn input_goes_to_every_task_unless_told_otherwise() {
        assert_eq!(Input::parse(None), Input::All);
        assert_eq!(Input::parse(Some("ALL")), Input::All);
        assert_eq!(Input::parse(Some("none")), Input::None);
        assert_eq!(Input::parse(Some("2")), Input::Task(2));
        assert_eq!(Input::parse(Some("in-%j")), Input::File("in-%j".into()));
        // Per node: does it feed input, and to one task only?
        assert_eq!(Input::All.on_node(&[0, 1]), (true, None));
        assert_eq!(Input::All.on_node(&[2]), (true, None));
        assert_eq!(Input::None.on_node(&[0, 1]), (false, None));
        assert_eq!(Input::Task(2).on_node(&[0, 1]), (false, Some(2)));
        assert_eq!(Input::Task(2).on_node(&[2, 3]), (true, Some(2)));
        assert_eq!(Input::File("f".into()).on_node(&[0]), (true, None));
    }

    #[test]
    fn steps_are_named_by_job_name_or_command() {
        let argv = vec!["/bin/hostname".to_string()];
        let mut opts = JobOptions::default();
        assert_eq!(step_name(&opts, &argv), "hostname");
        opts.job_name = Some("named".into());
        assert_eq!(step_name(&opts, &argv), "named");
    }

    #[test]
    fn gpus_per_task_counts_read_typed_or_not() {
        assert_eq!(gpu_count("1"), Some(1));
        assert_eq!(gpu_count("a100:2"), Some(2));
        assert_eq!(gpu_count("x"), None);
    }
}
