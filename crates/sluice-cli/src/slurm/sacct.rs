//! `sacct`: accounting of jobs and their steps.

use std::collections::BTreeMap;

use sluice_conf::duration::format_time;
use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_proto::time::{parse_timestamp, shown};
use sluice_proto::types::{
    tres_string_sorted, AccountingQuery, JobRecord, JobState, MemoryRequest, StepId, StepRecord,
};

use super::common::{controller, describe, fail, now, parse_job_arg, Refusal, VERSION};
use super::help::{e, four_to_a_line, render_described, trailer, Group};
use super::print_fields::{self, format_width, Layout};
use super::squeue::current_user;
use super::units::Convert;
use super::usage_fields::{self, Printer};

const ME: &str = "sacct";

/// Known fields: canonical name and default width, as Slurm's sacct prints them: a
/// negative width is left-justified (`JobID`), a positive one right-justified.
const FIELDS: &[(&str, i32)] = &[
    ("JobID", -12),
    ("JobIDRaw", -12),
    ("JobName", 10),
    ("Partition", 10),
    ("Account", 10),
    ("AllocCPUS", 10),
    ("State", 10),
    ("ExitCode", 8),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Suspended", 10),
    ("Start", 19),
    ("End", 19),
    ("Submit", 19),
    ("Eligible", 19),
    ("NodeList", 15),
    ("NNodes", 8),
    ("NCPUS", 10),
    ("NTasks", 8),
    ("AllocNodes", 10),
    ("AllocTRES", 10),
    ("ReqTRES", 10),
    ("User", 9),
    ("UID", 6),
    ("Group", 9),
    ("GID", 6),
    ("Timelimit", 10),
    ("TimelimitRaw", 10),
    ("WorkDir", 20),
    ("Comment", 14),
    ("Reason", 22),
    ("Priority", 10),
    ("QOS", 10),
    ("Restarts", 8),
    ("DerivedExitCode", 15),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("ReqMem", 10),
    ("ReqCPUS", 8),
    ("ReqNodes", 8),
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 14),
    ("AveDiskWrite", 14),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("MaxDiskRead", 12),
    ("MaxDiskReadNode", 15),
    ("MaxDiskReadTask", 15),
    ("MaxDiskWrite", 12),
    ("MaxDiskWriteNode", 16),
    ("MaxDiskWriteTask", 16),
    ("MaxPages", 8),
    ("MaxPagesNode", 12),
    ("MaxPagesTask", 14),
    ("MaxRSS", 10),
    ("MaxRSSNode", 10),
    ("MaxRSSTask", 10),
    ("MaxVMSize", 10),
    ("MaxVMSizeNode", 14),
    ("MaxVMSizeTask", 14),
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqGov", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqMin", 13),
    ("SystemCPU", 10),
    ("TotalCPU", 10),
    ("TRESUsageInAve", 14),
    ("TRESUsageInMax", 14),
    ("TRESUsageInMaxNode", 18),
    ("TRESUsageInMaxTask", 18),
    ("TRESUsageInMin", 14),
    ("TRESUsageInMinNode", 18),
    ("TRESUsageInMinTask", 18),
    ("TRESUsageInTot", 14),
    ("TRESUsageOutAve", 15),
    ("TRESUsageOutMax", 15),
    ("TRESUsageOutMaxNode", 19),
    ("TRESUsageOutMaxTask", 19),
    ("TRESUsageOutMin", 15),
    ("TRESUsageOutMinNode", 19),
    ("TRESUsageOutMinTask", 19),
    ("TRESUsageOutTot", 15),
    ("UserCPU", 10),
    ("Cluster", 10),
    ("SubmitLine", 20),
    ("WCKey", 10),
];

/// The rows of run `r`'s own steps, in Slurm's order (a requeued job's earlier runs
/// keep theirs).
fn run_steps<'a>(steps: &[&'a StepRecord], r: &'a JobRecord) -> Vec<Row<'a>> {
    let mut mine: Vec<&StepRecord> = steps
        .iter()
        .copied()
        .filter(|s| s.job_id == r.id && s.run == r.restarts)
        .collect();
    mine.sort_by_key(|s| step_order(s));
    mine.into_iter().map(|s| Row::Step(r, s)).collect()
}

/// A job's rows run by run, each under its run's number.
type Runs<'a> = Vec<(u32, Vec<Row<'a>>)>;

/// Rows in Slurm's order from each job's `blocks` (its heterogeneous job's leader, if
/// any, and its [`Runs`]): job after job, except that the components of a heterogeneous
/// job go run by run — each run's components in turn, each with its steps — as
/// slurmdbd keeps them, a requeue adding a record for every component.
fn in_slurm_order(mut blocks: Vec<(Option<u64>, Runs)>) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let leader = blocks[i].0;
        let mut end = i + 1;
        while leader.is_some() && end < blocks.len() && blocks[end].0 == leader {
            end += 1;
        }
        let group = &mut blocks[i..end];
        let mut numbers: Vec<u32> = group
            .iter()
            .flat_map(|(_, runs)| runs.iter().map(|(n, _)| *n))
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        for number in numbers {
            for (_, runs) in group.iter_mut() {
                for (_, r) in runs.iter_mut().filter(|(n, _)| *n == number) {
                    rows.append(r);
                }
            }
        }
        i = end;
    }
    rows
}

/// Where a step's row goes among its job's: batch, extern, then by number.
fn step_order(s: &StepRecord) -> (u8, u32, u32) {
    match s.step {
        StepId::Batch => (0, 0, 0),
        StepId::Extern => (1, 0, 0),
        StepId::Number(n) => (2, n, 0),
        StepId::Part(n, p) => (2, n, p),
    }
}

/// The field `name` names, as Slurm's sacct finds it: the first field in alphabetical
/// order that starts with it, in any case (`maxrsst` is `MaxRSSTask`, `jobid`
/// `JobID`).
fn canonical(name: &str) -> Option<(&'static str, i32)> {
    if name.is_empty() {
        return None;
    }
    let name = name.to_ascii_lowercase();
    FIELDS
        .iter()
        .filter(|(f, _)| f.to_ascii_lowercase().starts_with(&name))
        .min_by_key(|(f, _)| f.to_ascii_lowercase())
        .copied()
}

/// `--long`'s fields (Slurm 22.05's `LONG_FIELDS`), as it names them.
const LONG_FIELDS: &str = "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,\
    maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,\
    maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,alloccpus,elapsed,\
    state,exitcode,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,reqmem,\
    consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,\
    maxdiskwritenode,maxdiskwritetask,avediskwrite,reqtres,alloctres,tresusageinave,\
    tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,\
    tresusageinmint,tresusageintot,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,\
    tresusageoutave,tresusageouttot";

/// One printed row: a job's allocation or one of its steps.
enum Row<'a> {
    Job(&'a JobRecord),
    Step(&'a JobRecord, &'a StepRecord),
}

/// The users `-u LIST` names, each a user name or uid, as their names (the jobs carry
/// names); `None` for Slurm's `-1`, every user. Someone the user database does not know
/// is an error worded as Slurm's (`Invalid user id: NAME`).
fn user_names(list: &str) -> Result<Option<Vec<String>>, String> {
    if list == "-1" {
        return Ok(None);
    }
    let mut names = Vec::new();
    for u in list.split(',').filter(|u| !u.is_empty()) {
        match super::common::user_named(u) {
            Some(user) if !names.contains(&user.name) => names.push(user.name),
            Some(_) => {}
            None => return Err(format!("Invalid user id: {u}")),
        }
    }
    Ok(Some(names))
}

/// Fields Slurm 22.05 removed: naming one is fatal, with the field to use instead.
const REMOVED: &[(&str, &str)] = &[("AllocGRES", "AllocTRES"), ("ReqGRES", "ReqTRES")];

/// A TRES string for records written before jobs carried their TRES: CPUs, GPUs,
/// memory and nodes, billing as the CPUs.
fn tres(cpus: u32, mem: u64, nodes: usize, gpus: usize, billing: bool) -> String {
    let mut parts = Vec::new();
    if billing {
        parts.push(format!("billing={cpus}"));
    }
    parts.push(format!("cpu={cpus}"));
    if gpus > 0 {
        parts.push(format!("gres/gpu={gpus}"));
    }
    if mem > 0 {
        parts.push(if mem.is_multiple_of(1024) {
            format!("mem={}G", mem / 1024)
        } else {
            format!("mem={mem}M")
        });
    }
    parts.push(format!("node={nodes}"));
    parts.join(",")
}

fn state_text(state: JobState, cancelled_by: Option<u32>) -> String {
    match (state, cancelled_by) {
        (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
        (s, _) => s.name().to_string(),
    }
}

/// What a row's values are computed with besides the row: the time now, the
/// cluster's name, and each job's steps' highest exit status (`DerivedExitCode`).
struct Context<'a> {
    t: i64,
    cluster: &'a str,
    derived: BTreeMap<u64, (i32, i32)>,
    /// Each job's CPU time, user and system, milliseconds: the sum over its finished
    /// steps, as sacct adds them up for the job's line.
    cpu: BTreeMap<u64, (u64, u64)>,
    /// How sizes are shown (`--units`, `--noconvert`).
    convert: Convert,
}

/// Each job's CPU times (user, system; milliseconds) for its own line: the sum over
/// its steps that have ended, as Slurm's sacct adds them (running steps do not count).
fn job_cpu_times(steps: &[StepRecord]) -> BTreeMap<u64, (u64, u64)> {
    let mut cpu: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.state.is_finished()) {
        let sum = cpu.entry(s.job_id).or_default();
        if let Some(u) = &s.usage {
            sum.0 += u.user_cpu_ms;
            sum.1 += u.system_cpu_ms;
        }
    }
    cpu
}

/// The usage fields of a row (`MaxRSS`, `TotalCPU`, `TRESUsageInMax`, ...) and the
/// CPU frequency and energy ones beside them; `None` for other fields.
///
/// As Slurm's sacct: a job's own line shows only its CPU times (its finished steps'
/// sum); a step's line its figures once it has ended (slurmdbd has none before: a
/// running step shows zero CPU time and nothing else), and a step that ended without
/// figures zero CPU time and `energy=0` in the mean and total lists. Sluice asks for no
/// CPU frequency and measures no energy: Slurm's values for that (`Unknown`, or `0` for
/// the batch step; energy `0`).
fn usage_value(field: &str, row: &Row, ctx: &Context) -> Option<String> {
    let cpu_field = matches!(field, "TotalCPU" | "UserCPU" | "SystemCPU");
    let frequency = matches!(
        field,
        "ReqCPUFreq" | "ReqCPUFreqMin" | "ReqCPUFreqMax" | "ReqCPUFreqGov"
    );
    Some(match (field, row) {
        ("ConsumedEnergy" | "ConsumedEnergyRaw", _) => "0".into(),
        ("AveCPUFreq", Row::Job(_)) => String::new(),
        ("AveCPUFreq", Row::Step(..)) => "0".into(),
        (_, Row::Step(_, s)) if frequency && s.step == StepId::Batch => "0".into(),
        _ if frequency => "Unknown".into(),
        (_, Row::Job(j)) if cpu_field => {
            let (user, system) = ctx.cpu.get(&j.id).copied().unwrap_or_default();
            usage_fields::cpu_time(field, user, system).unwrap_or_default()
        }
        (_, Row::Step(_, s)) if cpu_field => match (&s.usage, s.state.is_finished()) {
            (Some(u), true) => usage_fields::cpu_time(field, u.user_cpu_ms, u.system_cpu_ms),
            _ => usage_fields::cpu_time(field, 0, 0),
        }
        .unwrap_or_default(),
        _ if !usage_fields::NAMES.contains(&field) => return None,
        (_, Row::Job(_)) => String::new(),
        (_, Row::Step(_, s)) => match (&s.usage, s.state.is_finished()) {
            (Some(u), true) => {
                usage_fields::value(field, u, Printer::Sacct, ctx.convert).unwrap_or_default()
            }
            (None, true) => usage_fields::without_figures(field),
            (_, false) => String::new(),
        },
    })
}

/// Each job's `DerivedExitCode`, as Slurm derives it: the highest exit status of its
/// srun steps (not its batch step), compared as wait statuses — an exit code beats a
/// signal — as `(exit code, signal)`; jobs without srun steps are absent (`0:0`).
/// Why a job last waited, as sacct's `Reason` shows it: slurmdbd keeps the reason a
/// job had when it started (`state_reason_prev`), never why it ended, so a finished
/// job's end reason (see `scontrol show job`) reads `None`.
fn waited_for(reason: &str) -> &str {
    const ENDED: [&str; 5] = [
        "NonZeroExitCode",
        "JobLaunchFailure",
        "TimeLimit",
        "NodeDown",
        "OutOfMemory",
    ];
    if ENDED.contains(&reason) {
        "None"
    } else {
        reason
    }
}

pub(crate) fn derived_exit_codes(steps: &[StepRecord]) -> BTreeMap<u64, (i32, i32)> {
    let status = |(code, signal): (i32, i32)| (i64::from(code) << 8) | i64::from(signal & 0x7f);
    let mut derived: BTreeMap<u64, (i32, i32)> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.step.number().is_some()) {
        let here = (s.exit_code, s.signal);
        let best = derived.entry(s.job_id).or_insert(here);
        if status(here) > status(*best) {
            *best = here;
        }
    }
    derived
}

fn value(field: &str, row: &Row, ctx: &Context) -> String {
    if let Some(v) = usage_value(field, row, ctx) {
        return v;
    }
    let (t, cluster) = (ctx.t, ctx.cluster);
    let j = match row {
        Row::Job(j) | Row::Step(j, _) => *j,
    };
    // What the job was allocated: nothing until it starts (Slurm prints 0).
    let job_cpus: u32 = if j.nodes.is_empty() {
        0
    } else if j.cpus_per_node.is_empty() {
        j.ntasks * j.cpus_per_task
    } else {
        j.cpus_per_node.iter().sum()
    };
    let gpus: usize = j.gpus_per_node.iter().map(Vec::len).sum();
    let (start, end) = match row {
        // A job cancelled before it started: Slurm records it as starting when it ended.
        Row::Job(j) => (j.start_time.or(j.end_time), j.end_time),
        Row::Step(_, s) => (Some(s.start), s.end),
    };
    let run = match (start, end) {
        (Some(s), Some(e)) => e - s,
        (Some(s), None) if !j.state.is_finished() => t - s,
        _ => 0,
    };
    // Time suspended is not run time (`Elapsed`), as slurmdbd counts it; a step counts
    // only the suspensions it stood through.
    let suspended = match row {
        Row::Job(j) => j.suspended_secs(t),
        Row::Step(j, s) => s.suspended_secs_at(j.suspension.as_ref(), t),
    }
    .min(run);
    let run = run - suspended;
    let null = "Unknown".to_string();
    match (field, row) {
        ("JobID", Row::Job(j)) => j.display_id(),
        ("JobID", Row::Step(j, s)) => format!("{}.{}", j.display_id(), s.step),
        ("JobIDRaw", Row::Job(j)) => j.id.to_string(),
        ("JobIDRaw", Row::Step(j, s)) => format!("{}.{}", j.id, s.step),
        ("JobName", Row::Job(j)) => j.desc.name.clone(),
        ("JobName", Row::Step(_, s)) => s.name.clone(),
        ("State", Row::Job(j)) => state_text(j.state, j.cancelled_by),
        ("State", Row::Step(j, s))
            if s.state == JobState::Running && j.state == JobState::Suspended =>
        {
            state_text(j.state, None)
        }
        // A step cancelled on its own (`scancel JOB.STEP`) says by whom; one that
        // ended with its job does not.
        ("State", Row::Step(_, s)) => state_text(s.state, s.cancelled_by),
        // slurmdbd records a cancelled or timed-out job's end when it is decided, before
        // its batch step reports the signal: the job line shows 0:0, the step the signal.
        ("ExitCode", Row::Job(j)) if matches!(j.state, JobState::Cancelled | JobState::Timeout) => {
            "0:0".into()
        }
        ("ExitCode", Row::Job(j)) => format!("{}:{}", j.exit_code, j.signal),
        ("ExitCode", Row::Step(_, s)) => format!("{}:{}", s.exit_code, s.signal),
        ("AllocCPUS" | "NCPUS", Row::Job(_)) => job_cpus.to_string(),
        ("AllocCPUS" | "NCPUS", Row::Step(_, s)) => s.cpus.to_string(),
        ("NodeList", Row::Job(j)) => {
            if j.nodes.is_empty() {
                "None assigned".into()
            } else {
                sluice_conf::hostlist::compress(&j.nodes)
            }
        }
        ("NodeList", Row::Step(_, s)) => sluice_conf::hostlist::compress(&s.nodes),
        ("NNodes" | "AllocNodes", Row::Job(j)) => j
            .nodes
            .len()
            .max(if j.state == JobState::Pending {
                j.min_nodes as usize
            } else {
                0
            })
            .to_string(),
        ("NNodes" | "AllocNodes", Row::Step(_, s)) => s.nodes.len().to_string(),
        ("NTasks", Row::Step(_, s)) => s.ntasks.to_string(),
        ("NTasks", Row::Job(_)) => String::new(),
        ("AllocTRES", Row::Job(j)) if !j.tres_alloc.is_empty() => tres_string_sorted(&j.tres_alloc),
        ("AllocTRES", Row::Job(j)) => {
            if j.nodes.is_empty() {
                String::new()
            } else {
                tres(
                    job_cpus,
                    j.mem_per_node * j.nodes.len() as u64,
                    j.nodes.len(),
                    gpus,
                    true,
                )
            }
        }
        ("AllocTRES", Row::Step(_, s)) => {
            // A step holds the job's memory and GPUs on the nodes it runs on (the
            // batch step: the first node), as Slurm accounts them.
            let on: Vec<usize> = match s.step {
                StepId::Batch => (0..j.nodes.len().min(1)).collect(),
                _ => s
                    .nodes
                    .iter()
                    .filter_map(|n| j.nodes.iter().position(|m| m == n))
                    .collect(),
            };
            // A step that asked for GPUs (`srun --gres=gpu:N`) holds those it got.
            let step_gpus: usize = if s.gpus.is_empty() {
                on.iter()
                    .map(|&i| j.gpus_per_node.get(i).map_or(0, Vec::len))
                    .sum()
            } else {
                s.gpus.iter().map(Vec::len).sum()
            };
            let nodes = match s.step {
                StepId::Batch => on.len(),
                _ => s.nodes.len(),
            }
            .max(1);
            // Memory per CPU follows the step's CPUs; per node, its nodes.
            let mem = match j.memory_request() {
                Some(MemoryRequest::PerCpu(m)) => m * u64::from(s.cpus),
                _ => j.mem_per_node * nodes as u64,
            };
            if j.tres_alloc.is_empty() {
                return tres(s.cpus, mem, nodes, step_gpus, false);
            }
            // The GRES the job's own record tracks, on the step's nodes.
            let mut list: Vec<(String, u64)> = vec![
                ("cpu".into(), u64::from(s.cpus)),
                ("mem".into(), mem),
                ("node".into(), nodes as u64),
                ("gres/gpu".into(), step_gpus as u64),
            ];
            for &i in &on {
                for (gtype, n) in j.gpu_types_per_node.get(i).into_iter().flatten() {
                    let name = format!("gres/gpu:{gtype}");
                    match list.iter_mut().find(|(t, _)| *t == name) {
                        Some((_, total)) => *total += u64::from(*n),
                        None => list.push((name, u64::from(*n))),
                    }
                }
            }
            list.retain(|(t, _)| {
                !t.starts_with("gres/") || j.tres_alloc.iter().any(|(a, _)| a == t)
            });
            tres_string_sorted(&list)
        }
        // Slurm records what was asked for jobs, not for steps.
        ("ReqTRES", Row::Step(..)) => String::new(),
        ("ReqTRES", Row::Job(j)) if !j.tres_req.is_empty() => tres_string_sorted(&j.tres_req),
        ("ReqTRES", _) => tres(
            j.ntasks * j.cpus_per_task,
            j.mem_per_node,
            j.min_nodes.max(1) as usize,
            0,
            true,
        ),
        ("Partition", Row::Job(j)) => j.partition.clone(),
        ("Account", _) => j.account.clone(),
        ("Elapsed", _) => format_time(Some(run)),
        ("ElapsedRaw", _) => run.to_string(),
        ("Suspended", _) => format_time(Some(suspended)),
        ("CPUTime", Row::Job(_)) => format_time(Some(run * job_cpus as i64)),
        ("CPUTimeRAW", Row::Job(_)) => (run * job_cpus as i64).to_string(),
        ("Start", _) => start.map_or(null, shown),
        ("End", _) => end.map_or(null, shown),
        ("Submit", _) => shown(j.submit_time),
        ("Eligible", _) => shown(j.desc.begin.unwrap_or(j.submit_time).max(j.submit_time)),
        ("User", Row::Job(j)) => j.user.clone(),
        ("UID", Row::Job(j)) => j.uid.to_string(),
        ("Group", Row::Job(j)) => j.group.clone(),
        ("GID", Row::Job(j)) => j.gid.to_string(),
        ("Timelimit", Row::Job(j)) => format_time(j.time_limit),
        ("TimelimitRaw", Row::Job(j)) => j
            .time_limit
            .map_or("UNLIMITED".into(), |l| (l / 60).to_string()),
        ("WorkDir", Row::Job(j)) => j.desc.work_dir.clone(),
        ("Comment", Row::Job(j)) => j.desc.comment.clone().unwrap_or_default(),
        ("Reason", Row::Job(j)) => waited_for(&j.reason).to_string(),
        ("Priority", Row::Job(j)) => j.priority.to_string(),
        ("QOS", Row::Job(j)) => j.qos.clone(),
        ("Restarts", Row::Job(j)) => j.restarts.to_string(),
        ("DerivedExitCode", Row::Job(j)) => {
            let (code, signal) = ctx.derived.get(&j.id).copied().unwrap_or((0, 0));
            format!("{code}:{signal}")
        }
        ("ReqMem", Row::Job(j)) => {
            if j.mem_per_node > 0 {
                format!("{}M", j.mem_per_node)
            } else {
                "0".into()
            }
        }
        ("ReqCPUS", Row::Job(j)) => (j.ntasks * j.cpus_per_task).to_string(),
        ("ReqNodes", Row::Job(j)) => j.min_nodes.max(1).to_string(),
        ("Cluster", _) => cluster.to_string(),
        ("SubmitLine", Row::Job(j)) => j.desc.submit_line.clone().unwrap_or_default(),
        ("SubmitLine", Row::Step(_, s)) => s.submit_line.clone().unwrap_or_default(),
        ("WCKey", Row::Job(j)) => j.desc.wckey.clone().unwrap_or_default(),
        _ => String::new(),
    }
}

/// `value` of `field` with its memory sizes in unit `units` (`--units`): `ReqMem` and
/// the `mem=` part of `AllocTRES` and `ReqTRES` (the usage fields convert their own).
fn in_units(field: &str, value: String, units: Option<usize>) -> String {
    use super::units::{convert, read, Convert};
    let Some(to) = units else {
        return value;
    };
    let size = |v: &str| match read(v) {
        Some((n, unit)) => convert(n, unit, Convert::To(to)),
        None => v.to_string(),
    };
    match field {
        "ReqMem" => size(&value),
        f if f.ends_with("TRES") => value
            .split(',')
            .map(|p| match p.strip_prefix("mem=") {
                Some(v) => format!("mem={}", size(v)),
                None => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
        _ => value,
    }
}

/// sacct's options: Slurm 22.05's table, in its order (which orders the candidates of
/// an ambiguous prefix), with its value kinds and its letter without a long name
/// (`-t`).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("allusers", Some('a')),
    Opt::required("accounts", Some('A')),
    Opt::flag("allocations", Some('X')),
    Opt::flag("brief", Some('b')),
    Opt::flag("batch-script", Some('B')),
    Opt::flag("completion", Some('c')),
    Opt::required("constraints", Some('C')),
    Opt::required("delimiter", None),
    Opt::flag("duplicates", Some('D')),
    Opt::flag("federation", None),
    Opt::flag("helpformat", Some('e')),
    Opt::flag("help-fields", None).alias_of("helpformat"),
    Opt::required("endtime", Some('E')),
    Opt::flag("env-vars", None),
    Opt::required("file", Some('f')),
    Opt::required("flags", Some('F')),
    Opt::required("gid", Some('g')),
    Opt::required("group", None).alias_of("gid"),
    Opt::flag("help", Some('h')),
    Opt::flag("local", None),
    Opt::required("name", None),
    Opt::required("nnodes", Some('i')),
    Opt::required("ncpus", Some('I')),
    Opt::required("jobs", Some('j')),
    Opt::required("timelimit-min", Some('k')),
    Opt::required("timelimit-max", Some('K')),
    Opt::flag("long", Some('l')),
    Opt::flag("allclusters", Some('L')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::required("nodelist", Some('N')),
    Opt::flag("noconvert", None),
    Opt::required("units", None),
    Opt::flag("noheader", Some('n')),
    Opt::required("fields", None).alias_of("format"),
    Opt::required("format", Some('o')),
    Opt::flag("parsable", Some('p')),
    Opt::flag("parsable2", Some('P')),
    Opt::required("qos", Some('q')),
    Opt::required("partition", Some('r')),
    Opt::required("reason", None),
    Opt::required("state", Some('s')),
    Opt::required("starttime", Some('S')),
    Opt::flag("truncate", Some('T')),
    Opt::required("uid", None).alias_of("user"),
    Opt::flag("use-local-uid", None),
    Opt::flag("usage", Some('U')),
    Opt::required("user", Some('u')),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::required("wckeys", Some('W')),
    Opt::optional("whole-hetjob", None),
    Opt::required("associations", Some('x')),
    Opt::flag("json", None),
    Opt::flag("yaml", None),
    Opt::flag("", Some('t')),
];

/// sacct's options Sluice accepts without effect.
pub(crate) const IGNORED: &[&str] = &[];

/// Which clusters' jobs are listed (`-M`, `-L`), as sacct reads the options in order:
/// `-L` or `-M all` lists every cluster of the database, `-M NAME[,NAME]` these (more
/// `-M` add to them), neither the controller's own.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Clusters {
    Own,
    All,
    These(Vec<String>),
}

impl Clusters {
    /// After `-M value`.
    fn and(self, value: &str) -> Clusters {
        if value.eq_ignore_ascii_case("all") || value == "-1" {
            return Clusters::All;
        }
        let mut names = match self {
            Clusters::These(v) => v,
            _ => Vec::new(),
        };
        for n in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_string());
            }
        }
        Clusters::These(names)
    }

    /// The clusters to ask for, in the order their jobs are listed: those named as
    /// named, every cluster by name (the controller's own and those sharing its
    /// database).
    fn names(&self, client: &sluice_proto::Client, own: &str) -> Vec<String> {
        match self {
            Clusters::Own => vec![own.to_string()],
            Clusters::These(v) => v.clone(),
            Clusters::All => {
                let mut v = vec![own.to_string()];
                if let Ok(snap) =
                    client.get::<sluice_proto::accounts::AccountsSnapshot>("/v1/accounts")
                {
                    v.extend(snap.other_clusters.into_iter().map(|c| c.name));
                }
                v.sort();
                v.dedup();
                v
            }
        }
    }
}

/// `--help`: the options Sluice acts on, in sacct's layout.
#[rustfmt::skip]
pub(crate) const HELP: &[Group] = &[Group {
    title: "",
    entries: &[
        e("allclusters", "", "Every cluster's jobs: the controller's own and those\n\
             sharing its accounting database."),
        e("allusers", "", "Every user's jobs (the default for root); otherwise only\n\
             the caller's."),
        e("clusters", "", "Only these clusters' jobs (comma separated; all: every\n\
             cluster)."),
        e("accounts", "", "Only jobs charged to these accounts (comma separated)."),
        e("allocations", "", "One line per job: no step lines."),
        e("delimiter", "", "What separates fields with -p or -P (default '|')."),
        e("duplicates", "", "Every record of a requeued job, not only the last."),
        e("helpformat", "", "List the fields --format takes."),
        e("endtime", "", "Only jobs in some state before this time (as --starttime)."),
        e("help", "", "This help."),
        e("name", "", "Only jobs with these names."),
        e("jobs", "", "Only these jobs or steps (id, id_task, id.step)."),
        e("long", "", "Slurm's long field list: the usage fields (memory,\n\
             CPU, disk, TRES usage) among them."),
        e("noconvert", "", "Usage sizes in the unit they were counted in."),
        e("noheader", "", "No header lines."),
        e("format", "", "The fields to print, comma separated; name%width sets a\n\
             width. --helpformat lists the fields."),
        e("parsable", "", "Fields separated by '|', one after the last too."),
        e("parsable2", "", "Fields separated by '|', none after the last."),
        e("partition", "", "Only jobs that ran in these partitions."),
        e("state", "", "Only jobs in these states (CD, F, R, PD, CA, TO...)."),
        e("starttime", "", "Only jobs in some state after this time (default:\n\
             midnight, or all time when jobs are named). Formats:\n\
             YYYY-MM-DD[THH:MM[:SS]], HH:MM[:SS], now[{+|-}N[units]],\n\
             today, midnight, noon, tomorrow."),
        e("units", "", "Memory in this unit: K, M, G, T or P."),
        e("usage", "", "A short usage line."),
        e("user", "", "Only these users' jobs."),
        e("version", "", "Print the Slurm version and exit."),
        e("json", "", "The jobs as Slurm's JSON document."),
    ],
}];

/// `--usage`, as Slurm's sacct.
const USAGE: &str = "Usage: sacct [options]\n\tUse --help for help\n";

/// `--help`: Slurm's first two lines, the options Sluice acts on, then those it
/// accepts without effect and those it refuses.
pub(crate) fn help_text() -> String {
    let mut text = String::from("sacct [<OPTION>]\n     Valid <OPTION> values are:\n");
    text.push_str(&render_described(HELP, OPTIONS));
    text.push('\n');
    text.push_str(&trailer(HELP, OPTIONS, IGNORED));
    text
}

/// `--helpformat`: the fields `--format` takes, in alphabetical order, four to a line.
fn helpformat() -> String {
    let mut names: Vec<&str> = FIELDS.iter().map(|f| f.0).collect();
    names.sort_by_key(|n| n.to_ascii_lowercase());
    four_to_a_line(&names)
}

/// The batch steps of running batch jobs, which the controller records only when they
/// end: Slurm's sacct lists a running job's batch step (`RUNNING`, on the job's first
/// node, one task, that node's CPUs).
fn running_batch_steps(jobs: &[&JobRecord], steps: &[StepRecord]) -> Vec<StepRecord> {
    jobs.iter()
        .filter(|j| j.state.is_running() && !j.desc.interactive)
        // A heterogeneous job's script runs in its leader only.
        .filter(|j| j.het.is_none_or(|h| h.offset == 0))
        .filter(|j| {
            !steps
                .iter()
                .any(|s| s.job_id == j.id && s.run == j.restarts && s.step == StepId::Batch)
        })
        .filter_map(|j| {
            Some(StepRecord {
                time_limit: None,
                submit_line: None,
                timed_out: false,
                gpus: Vec::new(),
                srun: None,
                cancelled_by: None,
                job_id: j.id,
                step: StepId::Batch,
                name: "batch".into(),
                state: JobState::Running,
                start: j.start_time?,
                end: None,
                exit_code: 0,
                signal: 0,
                nodes: j.nodes.first().cloned().into_iter().collect(),
                ntasks: 1,
                cpus: j.cpus_per_node.first().copied().unwrap_or(j.cpus_per_task),
                held_cpus: Vec::new(),
                ended_on: Vec::new(),
                usage: None,
                run: j.restarts,
                suspended_secs: j.suspension.map_or(0, |s| s.secs),
            })
        })
        .collect()
}

/// A `--format` list (`JobID,JobName%30`): each field's canonical name and width, or
/// Slurm's error for a field removed or unknown (and the exit status).
fn field_list(items: &[String]) -> Result<Vec<(&'static str, i32)>, i32> {
    let mut fields = Vec::new();
    for item in items {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, format_width(Some(w))),
            None => (item.as_str(), None),
        };
        if let Some((gone, instead)) = REMOVED.iter().find(|(f, _)| f.eq_ignore_ascii_case(name)) {
            eprintln!("{ME}: fatal: {gone} has been removed, please use {instead}");
            return Err(1);
        }
        match canonical(name) {
            Some((f, w)) => fields.push((f, width.unwrap_or(w))),
            None => fail(ME, format!("Invalid field requested: \"{name}\""), 1),
        }
    }
    Ok(fields)
}

/// Runs `sacct`.
pub fn main(args: Vec<String>) -> i32 {
    let mut fields: Vec<(&'static str, i32)> = [
        "JobID",
        "JobName",
        "Partition",
        "Account",
        "AllocCPUS",
        "State",
        "ExitCode",
    ]
    .iter()
    .map(|f| canonical(f).expect("default fields are known"))
    .collect();
    let (mut parsable, mut trailing, mut header, mut alloc_only, mut all_users, mut json) =
        (false, false, true, false, false, false);
    let mut jobs: Vec<(u64, Option<u32>)> = Vec::new();
    // `-j ID.STEP`: only that step's row (unless the job is also named whole).
    let mut step_only: Vec<(u64, Option<u32>, String)> = Vec::new();
    let mut whole: Vec<(u64, Option<u32>)> = Vec::new();
    let mut duplicates = false;
    // Heterogeneous components named `ID+N` (leader, offset), and `--whole-hetjob`:
    // `Some(true)` every component of a job any of whose components is named,
    // `Some(false)` only the components named (a leader's id its own), `None` Slurm's
    // default (a leader's id names every component, any other one component).
    let mut het_named: Vec<(u64, u32)> = Vec::new();
    let mut whole_hetjob: Option<bool> = None;
    // `-M`/`-L`: the clusters whose jobs are listed (none named: the controller's own).
    let mut clusters = Clusters::Own;
    // `--noconvert`: usage sizes in the unit they were counted in.
    let mut no_convert = false;
    // `--long`: Slurm's long field list (refused with `--format`).
    let (mut long, mut formatted) = (false, false);
    // `--delimiter`: between parsable fields.
    let mut delimiter = "|".to_string();
    // `--units`: memory sizes in this unit.
    let mut units: Option<usize> = None;
    let (mut names, mut users, mut states): (Vec<String>, Vec<String>, Vec<JobState>) =
        (vec![], vec![], vec![]);
    let (mut accounts, mut partitions): (Vec<String>, Vec<String>) = (vec![], vec![]);
    let (mut start, mut end): (Option<i64>, Option<i64>) = (None, None);
    // Words that are no option: refused once every option is read, as sacct does.
    let mut operands: Vec<String> = Vec::new();
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(w)) => {
                operands.push(w);
                continue;
            }
            Err(e) => Refusal::getopt_alone(ME, &e).exit(),
        };
        match f.name() {
            "parsable2" => parsable = true,
            "parsable" => {
                parsable = true;
                trailing = true;
            }
            "noheader" => header = false,
            "allocations" => alloc_only = true,
            "allusers" => all_users = true,
            "duplicates" => duplicates = true,
            "noconvert" => no_convert = true,
            "long" => long = true,
            "json" => json = true,
            "delimiter" => delimiter = f.value().to_string(),
            "units" => match super::units::parse_unit(f.value()) {
                Some(u) => units = Some(u),
                None => {
                    let c = f.value().chars().next().unwrap_or('\0');
                    eprintln!("{ME}: error: Invalid unit type '{c}'. Possible options are 'KMGTP'");
                    eprintln!("{ME}: fatal: Invalid unit type");
                    return 1;
                }
            },
            "format" => {
                formatted = true;
                match field_list(&f.list()) {
                    Ok(list) => fields = list,
                    Err(rc) => return rc,
                }
            }
            "whole-hetjob" => {
                whole_hetjob = match f.value.as_deref().map(str::to_ascii_lowercase) {
                    None => Some(true),
                    Some(v) if v == "yes" || v == "y" => Some(true),
                    Some(v) if v == "no" || v == "n" => Some(false),
                    Some(_) => {
                        eprintln!(
                            "{ME}: error: Invalid --whole-hetjob value \"{}\". Valid values: [yes|no].",
                            f.value()
                        );
                        return 1;
                    }
                }
            }
            "jobs" => {
                for part in f.list() {
                    match het_job_arg(&part) {
                        Some(h) => het_named.push(h),
                        None => {
                            let id = part.split('.').next().unwrap_or("");
                            if let Some((leader, _)) = id.split_once('+') {
                                eprintln!("{ME}: fatal: Bad hetjob offset specified: {leader}");
                                return 1;
                            }
                        }
                    }
                    let v = match job_step_arg(&part) {
                        Ok(v) => v,
                        Err(e) => {
                            eprintln!("{ME}: fatal: {e}");
                            return 1;
                        }
                    };
                    match part.split_once('.') {
                        Some((_, step)) => step_only
                            .extend(v.iter().map(|&(id, task)| (id, task, step.to_string()))),
                        None => whole.extend(v.iter().copied()),
                    }
                    jobs.extend(v);
                }
            }
            "name" => names.extend(f.value().split(',').map(str::to_string)),
            "accounts" => accounts.extend(f.value().split(',').map(str::to_string)),
            "partition" => partitions.extend(f.value().split(',').map(str::to_string)),
            "user" => match user_names(f.value()) {
                Ok(Some(names)) => {
                    users.extend(names);
                    all_users = true;
                }
                // `-u -1`: every user's jobs, as `-a`.
                Ok(None) => all_users = true,
                Err(m) => fail(ME, m, 1),
            },
            "state" => {
                for s in f.value().split(',') {
                    match JobState::parse(s).or(match s.to_ascii_uppercase().as_str() {
                        "CA" => Some(JobState::Cancelled),
                        _ => None,
                    }) {
                        Some(st) => states.push(st),
                        None => {
                            eprintln!("{ME}: fatal: unrecognized job state value '{s}'");
                            std::process::exit(1)
                        }
                    }
                }
            }
            "starttime" | "endtime" => {
                let v = f.value();
                let t = parse_timestamp(v, now())
                    .unwrap_or_else(|| fail(ME, format!("Invalid time specification: {v}"), 1));
                if f.name() == "starttime" {
                    start = Some(t);
                } else {
                    end = Some(t);
                }
            }
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            "help" => {
                print!("{}", help_text());
                return 0;
            }
            "usage" => {
                print!("{USAGE}");
                return 0;
            }
            "helpformat" => {
                print!("{}", helpformat());
                return 0;
            }
            "allclusters" => clusters = Clusters::All,
            "clusters" => clusters = clusters.and(f.value()),
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    if long && formatted {
        eprintln!(
            "{ME}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
        );
        return 1;
    }
    // As Slurm's: `SACCT_FORMAT` is the field list when no option gave one.
    if let (false, false, Ok(v)) = (formatted, long, std::env::var("SACCT_FORMAT")) {
        let items: Vec<String> = v
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .map(str::to_string)
            .collect();
        match field_list(&items) {
            Ok(list) => fields = list,
            Err(rc) => return rc,
        }
    }
    if long {
        fields = LONG_FIELDS
            .split(',')
            .map(|f| canonical(f.trim()).expect("long fields are known"))
            .collect();
    }
    if !operands.is_empty() {
        eprintln!("{ME}: error: Unknown arguments:");
        for w in &operands {
            eprintln!("{ME}: error:  {w}");
        }
        return 1;
    }
    let t = now();
    // Default window: since midnight, unless jobs are named (then: all time).
    let start = start.or(if jobs.is_empty() {
        parse_timestamp("today", t)
    } else {
        None
    });
    let me = current_user();
    let uid = nix::unistd::geteuid().as_raw();
    // Without -a, -u or -j, a user other than root sees their own jobs.
    let own_only = !(all_users || uid == 0 || !jobs.is_empty());
    // The controller selects the jobs in its database; the same selection is applied
    // again below, on what it sent.
    let query = AccountingQuery {
        jobs: jobs.iter().filter(|j| j.1.is_none()).map(|j| j.0).collect(),
        tasks: jobs
            .iter()
            .filter_map(|&(id, task)| task.map(|t| (id, t)))
            .collect(),
        users: if own_only {
            vec![me.clone()]
        } else {
            users.clone()
        },
        accounts: accounts.clone(),
        partitions: partitions.clone(),
        states: states.clone(),
        names: names.clone(),
        since: start,
        until: end,
        duplicates,
        cluster: None,
    };
    let client = controller();
    let own = client
        .get::<sluice_proto::types::ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .unwrap_or_default();
    // Each cluster's jobs in turn, as slurmdbd answers for several clusters.
    let mut fetched: Vec<(String, sluice_proto::types::Accounting)> = Vec::new();
    for name in clusters.names(&client, &own) {
        let q = AccountingQuery {
            cluster: (name != own).then(|| name.clone()),
            ..query.clone()
        };
        let mut acct: sluice_proto::types::Accounting = client
            .post("/v1/accounting", &q)
            .unwrap_or_else(|e| fail(ME, describe(&e), 1));
        // A heterogeneous job's leader named stands for all its components (Slurm's
        // default, with `-X` too: slurmdbd selects them by their leader's id), and with
        // `--whole-hetjob` any component named does: their records are asked for too.
        let members: Vec<u64> = acct
            .jobs
            .iter()
            .filter_map(|j| Some((j.id, j.het?)))
            .filter(|&(id, h)| match whole_hetjob {
                Some(true) => q.jobs.contains(&id),
                Some(false) => false,
                None => h.offset == 0 && q.jobs.contains(&h.job_id),
            })
            .flat_map(|(_, h)| (0..h.size as u64).map(move |i| h.job_id + i))
            .filter(|m| !q.jobs.contains(m))
            .collect::<std::collections::BTreeSet<u64>>()
            .into_iter()
            .collect();
        if !members.is_empty() {
            let more: sluice_proto::types::Accounting = client
                .post(
                    "/v1/accounting",
                    &AccountingQuery {
                        jobs: members,
                        tasks: Vec::new(),
                        ..q.clone()
                    },
                )
                .unwrap_or_else(|e| fail(ME, describe(&e), 1));
            acct.jobs.extend(more.jobs);
            acct.steps.extend(more.steps);
            acct.runs.extend(more.runs);
        }
        fetched.push((name, acct));
    }
    let layout = if parsable {
        Layout::Parsable {
            delimiter: delimiter.clone(),
            trailing,
        }
    } else {
        Layout::Fixed
    };
    let mut out = String::new();
    if header {
        out.push_str(&print_fields::header(&fields, &layout));
    }
    let (mut json_jobs, mut json_steps) = (Vec::new(), Vec::new());
    // Each array's unstarted tasks, one record as Slurm's accounting holds them.
    let arrays: Vec<Vec<JobRecord>> = fetched
        .iter()
        .map(|(_, acct)| super::sacct_array::array_records(&acct.jobs))
        .collect();
    for ((cluster, acct), arrays) in fetched.iter().zip(&arrays) {
        let ctx = Context {
            t,
            cluster,
            derived: derived_exit_codes(&acct.steps),
            cpu: job_cpu_times(&acct.steps),
            convert: match units {
                Some(u) => Convert::To(u),
                None if no_convert => Convert::No,
                None => Convert::Exact,
            },
        };
        // The heterogeneous job (leader's id) of each job named by its own id.
        let het_of = |id: u64| -> Option<u64> {
            acct.jobs
                .iter()
                .find(|j| j.id == id)
                .and_then(|j| j.het)
                .map(|h| h.job_id)
        };
        let named = |j: &JobRecord, id: u64, task: Option<u32>| match task {
            Some(tk) => j.array == Some((id, tk)),
            None => het_pick(j, id, &het_named, whole_hetjob, het_of(id)),
        };
        let mut selected: Vec<&JobRecord> = acct
            .jobs
            .iter()
            .filter(|j| !super::sacct_array::unstarted(j))
            .chain(arrays)
            .filter(|j| jobs.is_empty() || jobs.iter().any(|&(id, task)| named(j, id, task)))
            .filter(|j| names.is_empty() || names.contains(&j.desc.name))
            .filter(|j| users.is_empty() || users.contains(&j.user))
            .filter(|j| accounts.is_empty() || accounts.contains(&j.account))
            .filter(|j| partitions.is_empty() || partitions.contains(&j.partition))
            .filter(|j| !own_only || j.user == me)
            .filter(|j| states.is_empty() || states.contains(&j.state))
            .filter(|j| start.is_none_or(|s| j.end_time.is_none_or(|e| e >= s)))
            .filter(|j| end.is_none_or(|e| j.submit_time <= e))
            .collect();
        // By id, an array's tasks together in index order (its unstarted ones where
        // the first of them is).
        selected.sort_by_key(|j| match &j.array_pending {
            Some((rest, _)) if j.array.is_none() => (j.id, rest.first().copied().unwrap_or(0)),
            _ => j.list_key(),
        });
        if json {
            json_steps.extend(
                acct.steps
                    .iter()
                    .filter(|s| selected.iter().any(|j| j.id == s.job_id)),
            );
            json_jobs.extend(selected);
            continue;
        }
        let running_batch = running_batch_steps(&selected, &acct.steps);
        let all_steps: Vec<&StepRecord> = acct.steps.iter().chain(&running_batch).collect();
        // Each job's rows, run by run (with --duplicates its earlier runs first).
        let mut blocks: Vec<(Option<u64>, Runs)> = Vec::new();
        for j in &selected {
            if !jobs.is_empty() && !whole.iter().any(|&(id, task)| named(j, id, task)) {
                // Named only by its steps: those steps' rows, as Slurm prints them.
                let wanted: Vec<&str> = step_only
                    .iter()
                    .filter(|&&(id, task, _)| named(j, id, task))
                    .map(|(_, _, step)| step.as_str())
                    .collect();
                if !alloc_only {
                    let mut steps: Vec<&StepRecord> = all_steps
                        .iter()
                        .copied()
                        .filter(|s| {
                            s.job_id == j.id
                                && s.run == j.restarts
                                && (wanted.contains(&s.step.to_string().as_str())
                                    // `J.S` names every part of a heterogeneous
                                    // step (`J.S+0`, `J.S+1`), as Slurm's sacct.
                                    || matches!(s.step, StepId::Part(n, _)
                                        if wanted.contains(&n.to_string().as_str())))
                        })
                        .collect();
                    steps.sort_by_key(|s| step_order(s));
                    let rows = steps.into_iter().map(|s| Row::Step(j, s)).collect();
                    blocks.push((None, vec![(j.restarts, rows)]));
                }
                continue;
            }
            let steps_of = |r| {
                if alloc_only {
                    Vec::new()
                } else {
                    run_steps(&all_steps, r)
                }
            };
            // With --duplicates, the runs a requeue ended come first (REQUEUED), each with
            // its steps.
            let mut runs = Vec::new();
            if duplicates {
                for r in acct.runs.iter().filter(|r| r.id == j.id) {
                    let mut rows = vec![Row::Job(r)];
                    rows.extend(steps_of(r));
                    runs.push((r.restarts, rows));
                }
            }
            let mut rows = vec![Row::Job(j)];
            rows.extend(steps_of(j));
            runs.push((j.restarts, rows));
            blocks.push((j.het.map(|h| h.job_id), runs));
        }
        let rows = in_slurm_order(blocks);
        for r in &rows {
            let values: Vec<String> = fields
                .iter()
                .map(|(f, _)| in_units(f, value(f, r, &ctx), units))
                .collect();
            out.push_str(&print_fields::row(&values, &fields, &layout));
        }
    }
    if json {
        let v = serde_json::json!({ "jobs": json_jobs, "steps": json_steps });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return 0;
    }
    print!("{out}");
    0
}

/// The jobs one `-j` item names, as Slurm's sacct reads it: the job's number must
/// come first (`Bad job/step specified`), a step's name or number after a dot (`Bad
/// step specified: JOB`), an array task's number after `_` (`Bad job array element
/// specified: JOB`); past those, what follows a number is ignored (`1x` is job 1), as
/// its `atoi` ignores it.
fn job_step_arg(part: &str) -> Result<Vec<(u64, Option<u32>)>, String> {
    if !part.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("Bad job/step specified: {part}"));
    }
    let (name, step) = match part.split_once('.') {
        Some((name, step)) => (name, Some(step)),
        None => (part, None),
    };
    if let Some(step) = step {
        let named = ["batch", "extern", "interactive"].contains(&step);
        if !named && !step.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("Bad step specified: {name}"));
        }
    }
    let leading = |s: &str| -> u64 {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or(0)
    };
    if let Some((job, task)) = name.split_once('_') {
        if !task.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("Bad job array element specified: {job}"));
        }
    }
    if let Some(v) = parse_job_arg(part) {
        return Ok(v);
    }
    Ok(match name.split_once('_') {
        Some((job, task)) => vec![(leading(job), Some(leading(task) as u32))],
        None => vec![(leading(name), None)],
    })
}

/// Whether job `j` is one `-j` names by `id` (an `ID+N` form's id when `het_named`
/// has it), as slurmdbd selects: a job's own id names it (and an array's every task); a
/// heterogeneous job's leader's id names every component (Slurm's default, with `-X`
/// too), a component's id (or `ID+N`) that component alone; `--whole-hetjob=yes`
/// (`whole`) makes any component named name all of them (`het_of`: the heterogeneous
/// job of the job whose id is `id`), `=no` only the component named.
fn het_pick(
    j: &JobRecord,
    id: u64,
    het_named: &[(u64, u32)],
    whole: Option<bool>,
    het_of: Option<u64>,
) -> bool {
    let same_het = |leader: u64| j.het.is_some_and(|h| h.job_id == leader);
    if let Some(&(leader, offset)) = het_named.iter().find(|&&(l, o)| l + u64::from(o) == id) {
        // `ID+N`: component N of heterogeneous job ID, or all of them with `=yes`.
        return match whole {
            Some(true) => same_het(leader),
            _ => j
                .het
                .is_some_and(|h| h.job_id == leader && h.offset == offset),
        };
    }
    if j.id == id || j.array.is_some_and(|a| a.0 == id) {
        return true;
    }
    match whole {
        None => same_het(id),
        Some(true) => het_of.is_some_and(same_het),
        Some(false) => false,
    }
}

/// `ID+N` (with any `.STEP` after it): heterogeneous job ID's component N.
fn het_job_arg(s: &str) -> Option<(u64, u32)> {
    let s = s.split('.').next()?;
    let (leader, offset) = s.split_once('+')?;
    Some((leader.parse().ok()?, offset.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn job_ids_are_refused_as_slurms_sacct_refuses_them() {
        use super::job_step_arg;
        assert_eq!(job_step_arg("12"), Ok(vec![(12, None)]));
        assert_eq!(job_step_arg("12_3.batch"), Ok(vec![(12, Some(3))]));
        // Real sacct 22.05: what follows a number is ignored.
        assert_eq!(job_step_arg("1x"), Ok(vec![(1, None)]));
        assert_eq!(
            job_step_arg("abc").unwrap_err(),
            "Bad job/step specified: abc"
        );
        assert_eq!(job_step_arg("12.x").unwrap_err(), "Bad step specified: 12");
        assert_eq!(
            job_step_arg("12_x").unwrap_err(),
            "Bad job array element specified: 12"
        );
        assert_eq!(
            job_step_arg("12_[1-3]").unwrap_err(),
            "Bad job array element specified: 12"
        );
    }

    #[test]
    fn the_reason_is_why_a_job_waited_not_why_it_ended() {
        use super::waited_for;
        assert_eq!(waited_for("NonZeroExitCode"), "None");
        assert_eq!(waited_for("TimeLimit"), "None");
        assert_eq!(waited_for("JobHeldUser"), "JobHeldUser");
        assert_eq!(waited_for("None"), "None");
    }

    use super::*;

    #[test]
    fn clusters_are_read_in_order_as_sacct_reads_its_options() {
        let these = |v: &[&str]| Clusters::These(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(Clusters::Own.and("b,a").and("b,c"), these(&["b", "a", "c"]));
        assert_eq!(Clusters::Own.and("a").and("ALL"), Clusters::All);
        assert_eq!(Clusters::Own.and("-1"), Clusters::All);
        // -L, then -M NAME: only NAME (sacct resets its all-clusters flag).
        assert_eq!(Clusters::All.and("a"), these(&["a"]));
    }

    #[test]
    fn field_names_are_known_in_any_case() {
        assert_eq!(canonical("jobid"), Some(("JobID", -12)));
        assert_eq!(canonical("state"), Some(("State", 10)));
    }

    fn step(job: u64, step: StepId, exit_code: i32, signal: i32) -> StepRecord {
        StepRecord {
            time_limit: None,
            submit_line: None,
            timed_out: false,
            gpus: Vec::new(),
            srun: None,
            cancelled_by: None,
            job_id: job,
            step,
            name: String::new(),
            state: JobState::Completed,
            start: 0,
            end: Some(1),
            exit_code,
            signal,
            nodes: Vec::new(),
            ntasks: 1,
            cpus: 1,
            held_cpus: Vec::new(),
            ended_on: Vec::new(),
            usage: None,
            run: 0,
            suspended_secs: 0,
        }
    }

    #[test]
    fn the_derived_exit_code_is_the_worst_srun_step() {
        let steps = [
            // Job 1: its batch step failed (3), its steps did not: 0:0.
            step(1, StepId::Batch, 3, 0),
            step(1, StepId::Number(0), 0, 0),
            // Job 2: exit 5 beats a signal and a smaller exit code.
            step(2, StepId::Batch, 2, 0),
            step(2, StepId::Number(0), 0, 10),
            step(2, StepId::Number(1), 5, 0),
            step(2, StepId::Number(2), 1, 0),
            // Job 3: only a signalled step.
            step(3, StepId::Number(0), 0, 10),
        ];
        let d = derived_exit_codes(&steps);
        assert_eq!(d.get(&1), Some(&(0, 0)));
        assert_eq!(d.get(&2), Some(&(5, 0)));
        assert_eq!(d.get(&3), Some(&(0, 10)));
        // A job without srun steps is not there: it prints 0:0.
        assert_eq!(derived_exit_codes(&steps[..1]).get(&1), None);
    }

    #[test]
    fn usage_fields_of_job_and_step_lines_as_slurms_sacct() {
        use sluice_proto::usage::{Stat, StepUsage};
        let figures = |user, system| {
            Some(Box::new(StepUsage {
                tasks: 1,
                cpu_ms: Stat::one(user + system, "n1", 0),
                user_cpu_ms: user,
                system_cpu_ms: system,
                rss: Stat::one(5_181_440, "n1", 0),
                ..StepUsage::default()
            }))
        };
        let mut batch = step(9, StepId::Batch, 0, 0);
        batch.usage = figures(2, 8);
        let mut done = step(9, StepId::Number(0), 0, 0);
        done.usage = figures(154, 26);
        // Still running: its figures so far are not sacct's (slurmdbd has none yet).
        let mut running = step(9, StepId::Number(1), 0, 0);
        running.state = JobState::Running;
        running.end = None;
        running.usage = figures(5_000, 0);
        // Ended without figures.
        let bare = step(9, StepId::Number(2), 0, 0);
        let steps = vec![batch, done, running, bare];
        let job = JobRecord {
            id: 9,
            state: JobState::Running,
            ..JobRecord::default()
        };
        let ctx = Context {
            t: 0,
            cluster: "c",
            derived: BTreeMap::new(),
            cpu: job_cpu_times(&steps),
            convert: Convert::Exact,
        };
        let line = |row: &Row, fields: &str| {
            fields
                .split(',')
                .map(|f| usage_value(f, row, &ctx).expect(f))
                .collect::<Vec<_>>()
                .join("|")
        };
        let fields = "TotalCPU,UserCPU,SystemCPU,MaxRSS,TRESUsageInAve,AveCPUFreq,ReqCPUFreqMin,ConsumedEnergy";
        // The job: its ended steps' CPU times, nothing else (real sacct: `00:00.190`).
        assert_eq!(
            line(&Row::Job(&job), fields),
            "00:00.190|00:00.156|00:00.034||||Unknown|0"
        );
        assert_eq!(
            line(&Row::Step(&job, &steps[0]), fields),
            "00:00.010|00:00.002|00:00.008|5060K|cpu=00:00:00,energy=0,fs/disk=0,mem=5060K,pages=0,vmem=0|0|0|0"
        );
        assert_eq!(
            line(&Row::Step(&job, &steps[1]), "TotalCPU,ReqCPUFreqMin"),
            "00:00.180|Unknown"
        );
        assert_eq!(
            line(&Row::Step(&job, &steps[2]), fields),
            "00:00:00|00:00:00|00:00:00|||0|Unknown|0"
        );
        assert_eq!(
            line(&Row::Step(&job, &steps[3]), fields),
            "00:00:00|00:00:00|00:00:00||energy=0|0|Unknown|0"
        );
        // Other fields are not usage fields.
        assert_eq!(usage_value("JobID", &Row::Job(&job), &ctx), None);
    }

    #[test]
    fn field_prefixes_and_the_long_list_as_slurms_sacct() {
        assert_eq!(canonical("maxrsst"), Some(("MaxRSSTask", 10)));
        assert_eq!(
            canonical("tresusageinmaxn"),
            Some(("TRESUsageInMaxNode", 18))
        );
        assert_eq!(canonical("totalc"), Some(("TotalCPU", 10)));
        assert_eq!(canonical("jobidr"), Some(("JobIDRaw", -12)));
        assert_eq!(canonical(""), None);
        assert_eq!(canonical("bogus"), None);
        let long: Vec<&str> = LONG_FIELDS
            .split(',')
            .map(|f| canonical(f.trim()).unwrap().0)
            .collect();
        assert_eq!(long.len(), 54);
        assert_eq!(
            &long[..6],
            [
                "JobID",
                "JobIDRaw",
                "JobName",
                "Partition",
                "MaxVMSize",
                "MaxVMSizeNode"
            ]
        );
        assert_eq!(
            &long[48..],
            [
                "TRESUsageInTot",
                "TRESUsageOutMax",
                "TRESUsageOutMaxNode",
                "TRESUsageOutMaxTask",
                "TRESUsageOutAve",
                "TRESUsageOutTot"
            ]
        );
    }

    #[test]
    fn a_running_batch_jobs_batch_step_is_listed_until_it_is_recorded() {
        let job = |id, state, interactive| JobRecord {
            id,
            state,
            start_time: Some(100),
            nodes: vec!["n2".into(), "n3".into()],
            cpus_per_node: vec![4, 2],
            desc: sluice_proto::types::JobDescription {
                interactive,
                ..Default::default()
            },
            ..JobRecord::default()
        };
        let (running, recorded, alloc, done) = (
            job(1, JobState::Running, false),
            job(2, JobState::Running, false),
            job(3, JobState::Running, true),
            job(4, JobState::Completed, false),
        );
        let steps = [step(2, StepId::Batch, 0, 0)];
        let listed = running_batch_steps(&[&running, &recorded, &alloc, &done], &steps);
        assert_eq!(listed.len(), 1);
        let b = &listed[0];
        assert_eq!(
            (b.job_id, b.step, b.state),
            (1, StepId::Batch, JobState::Running)
        );
        assert_eq!(
            (b.nodes.as_slice(), b.ntasks, b.cpus),
            (&["n2".to_string()][..], 1, 4)
        );
        assert_eq!((b.start, b.end, b.usage.is_none()), (100, None, true));
    }

    #[test]
    fn users_are_named_by_name_or_uid_and_an_unknown_one_is_refused() {
        use super::user_names;
        assert_eq!(user_names("root,0"), Ok(Some(vec!["root".to_string()])));
        assert_eq!(user_names("-1"), Ok(None));
        assert_eq!(
            user_names("root,nosuchuser"),
            Err("Invalid user id: nosuchuser".to_string())
        );
        assert_eq!(
            user_names("4294967294"),
            Err("Invalid user id: 4294967294".to_string())
        );
    }

    #[test]
    fn a_requeued_heterogeneous_jobs_runs_go_run_by_run_its_components_in_turn() {
        use sluice_proto::types::HetJob;
        // Job 10 (components 10+0, 10+1) ran twice; job 12 alone, after it.
        let job = |id: u64, offset: Option<u32>, restarts: u32| JobRecord {
            id,
            restarts,
            het: offset.map(|offset| HetJob {
                job_id: 10,
                offset,
                size: 2,
            }),
            ..JobRecord::default()
        };
        let (a1, a2, b1, b2) = (
            job(10, Some(0), 0),
            job(10, Some(0), 1),
            job(11, Some(1), 0),
            job(11, Some(1), 1),
        );
        let c = job(12, None, 0);
        let order = |blocks| -> Vec<(u64, u32)> {
            in_slurm_order(blocks)
                .iter()
                .map(|r| match r {
                    Row::Job(j) | Row::Step(j, _) => (j.id, j.restarts),
                })
                .collect()
        };
        let all = vec![
            (
                Some(10),
                vec![(0, vec![Row::Job(&a1)]), (1, vec![Row::Job(&a2)])],
            ),
            (
                Some(10),
                vec![(0, vec![Row::Job(&b1)]), (1, vec![Row::Job(&b2)])],
            ),
            (None, vec![(0, vec![Row::Job(&c)])]),
        ];
        assert_eq!(order(all), [(10, 0), (11, 0), (10, 1), (11, 1), (12, 0)]);
        // Component 11's first run missing (a record lost): runs pair by number.
        let gap = vec![
            (
                Some(10),
                vec![(0, vec![Row::Job(&a1)]), (1, vec![Row::Job(&a2)])],
            ),
            (Some(10), vec![(1, vec![Row::Job(&b2)])]),
            (None, vec![(0, vec![Row::Job(&c)])]),
        ];
        assert_eq!(order(gap), [(10, 0), (10, 1), (11, 1), (12, 0)]);
    }
}
