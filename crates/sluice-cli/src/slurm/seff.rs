//! `seff JOBID`: one job's efficiency in the layout of Slurm's `contribs/seff` script
//! (version 2.1): CPU time and efficiency against the core-walltime, memory used (the
//! sum of the task peaks of the step that held most) against the memory allocated, and
//! its warnings for running and pending jobs. Read from the accounting records as
//! `sacct -j JOBID` reads them. `-d` prints seff's raw figures first, `-v` its version.

use sluice_conf::duration::format_time;
use sluice_proto::types::{Accounting, AccountingQuery, JobRecord, JobState, MemoryRequest};

use super::common::{controller, describe, now};
use crate::efficiency::{allocated_mem_mib, cpu_time_ms, peak_step};

const ME: &str = "seff";

/// seff's usage text (stdout, exit 1), for `-h` or anything but one job id.
const USAGE: &str = "Usage: seff [Options] <Jobid>
       Options:
       -h    Help menu
       -v    Version
       -d    Debug mode: display raw Slurm data
";

/// seff's own version (that of the script whose layout this follows).
const VERSION: &str = "2.1";

/// Kilobytes as seff prints memory: `12.00 KB`, `1.50 GB`; zero is `0.00 MB`.
pub fn kbytes(kb: f64) -> String {
    if kb <= 0.0 {
        return "0.00 MB".to_string();
    }
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    let exp = ((kb.ln() / 1024f64.ln()).floor().max(0.0) as usize).min(UNITS.len() - 1);
    format!("{:.2} {}B", kb / 1024f64.powi(exp as i32), UNITS[exp])
}

/// The figures seff prints, from the job's record and its steps.
pub fn layout(
    job: &JobRecord,
    steps: &[&sluice_proto::types::StepRecord],
    cluster: &str,
    t: i64,
) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("Job ID: {}", job.id));
    if let Some((array, task)) = job.array {
        line(format!("Array Job ID: {array}_{task}"));
    }
    line(format!("Cluster: {cluster}"));
    line(format!("User/Group: {}/{}", job.user, job.group));
    let state = job.state.name();
    if matches!(job.state, JobState::Pending | JobState::Running) {
        line(format!("State: {state}"));
    } else {
        line(format!("State: {state} (exit code {})", job.exit_code));
    }
    let ncpus = match job.cpus_per_node.iter().sum::<u32>() {
        0 => 1,
        n => n,
    };
    let nnodes = (job.nodes.len() as u32).max(1);
    if ncpus == 1 {
        line(format!("Cores: {ncpus}"));
    } else {
        line(format!("Nodes: {nnodes}"));
        line(format!("Cores per node: {}", ncpus / nnodes));
    }
    if job.state == JobState::Pending {
        line("Efficiency not available for jobs in the PENDING state.".to_string());
        return out;
    }
    let walltime = job
        .start_time
        .map_or(0, |s| (job.end_time.unwrap_or(t) - s).max(0));
    // The steps' CPU time, rounded to the second as seff rounds microseconds.
    let cput = (cpu_time_ms(steps) + 500) / 1000;
    let core_walltime = walltime * i64::from(ncpus);
    let cpu_eff = if core_walltime != 0 {
        cput as f64 / core_walltime as f64 * 100.0
    } else {
        0.0
    };
    line(format!("CPU Utilized: {}", format_time(Some(cput as i64))));
    line(format!(
        "CPU Efficiency: {cpu_eff:.2}% of {} core-walltime",
        format_time(Some(core_walltime))
    ));
    line(format!(
        "Job Wall-clock time: {}",
        format_time(Some(walltime))
    ));
    let peak = peak_step(steps);
    let mem_kb = peak.map_or(0.0, |u| u.rss.tot as f64 / 1024.0);
    line(format!("Memory Utilized: {}", kbytes(mem_kb)));
    let alloc_kb = allocated_mem_mib(job).unwrap_or(0) as f64 * 1024.0;
    let mem_eff = if alloc_kb != 0.0 {
        mem_kb / alloc_kb * 100.0
    } else {
        0.0
    };
    let per_cpu = matches!(job.memory_request(), Some(MemoryRequest::PerCpu(_)));
    if per_cpu {
        line(format!(
            "Memory Efficiency: {mem_eff:.2}% of {} ({}/core)",
            kbytes(alloc_kb),
            kbytes(alloc_kb / f64::from(ncpus))
        ));
    } else {
        line(format!(
            "Memory Efficiency: {mem_eff:.2}% of {} ({}/node)",
            kbytes(alloc_kb),
            kbytes(alloc_kb / f64::from(nnodes))
        ));
    }
    if let Some(u) = peak {
        let max = u.rss.max as f64;
        let ave = u.rss.ave(u.tasks) as f64;
        if max != 0.0 && max > ave {
            line(format!(
                "The task which had the largest memory consumption differs by {:.2}% from the average task max memory consumption",
                max / ave * 100.0
            ));
        }
    }
    if job.state == JobState::Running {
        line("WARNING: Efficiency statistics can only be obtained after the job has ended as seff tool is based on the accounting database data.".to_string());
    }
    out
}

/// A number as Perl prints it (`%.15g`: `12`, `1.5`).
fn perl_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.15e}");
        s.parse::<f64>().map_or(s, |x| x.to_string())
    }
}

/// `-d`'s two lines of raw figures (and a blank line), as seff prints them before its
/// report: the header names `Ntasks`, which the values line does not have.
pub fn debug_lines(
    job: &JobRecord,
    steps: &[&sluice_proto::types::StepRecord],
    cluster: &str,
    t: i64,
) -> String {
    let array = job
        .array
        .map_or(String::new(), |(a, task)| format!("{a}_{task}"));
    let ncpus = match job.cpus_per_node.iter().sum::<u32>() {
        0 => 1,
        n => n,
    };
    let nnodes = (job.nodes.len() as u32).max(1);
    let reqmem = job
        .tres_req
        .iter()
        .find(|(t, _)| t == "mem")
        .map_or(0, |(_, m)| m * 1024);
    let pernode = u8::from(!matches!(
        job.memory_request(),
        Some(MemoryRequest::PerCpu(_))
    ));
    let cput = (cpu_time_ms(steps) + 500) / 1000;
    let walltime = job
        .start_time
        .map_or(0, |s| (job.end_time.unwrap_or(t) - s).max(0));
    let mem = peak_step(steps).map_or(0.0, |u| u.rss.tot as f64 / 1024.0);
    format!(
        "Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks Reqmem PerNode Cput Walltime Mem ExitStatus\n\
         Slurm data: {} {array} {} {} {} {cluster} {ncpus} {nnodes} {reqmem} {pernode} {cput} {walltime} {} {}\n\n",
        job.id,
        job.user,
        job.group,
        job.state.name(),
        perl_number(mem),
        job.exit_code
    )
}

/// Runs `seff ARGS`; returns the exit status.
pub fn main(args: Vec<String>) -> i32 {
    // Perl's getopts('hvdf:'): flags may be bundled, -f takes a value; an unknown
    // option is warned about and otherwise ignored.
    let (mut help, mut version, mut debug) = (false, false, false);
    let mut operands = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--" {
            operands.extend(it.by_ref());
            break;
        }
        if a.len() < 2 || !a.starts_with('-') || !operands.is_empty() {
            operands.push(a);
            operands.extend(it.by_ref());
            break;
        }
        let flags: Vec<char> = a[1..].chars().collect();
        for (i, c) in flags.iter().enumerate() {
            match c {
                'h' => help = true,
                'v' => version = true,
                'd' => debug = true,
                'f' => {
                    if i + 1 == flags.len() {
                        it.next();
                    }
                    break;
                }
                other => eprintln!("Unknown option: {other}"),
            }
        }
    }
    if version {
        println!("seff Version {VERSION}");
        return 1;
    }
    if help || operands.len() != 1 {
        print!("{USAGE}");
        return 1;
    }
    let arg = &operands[0];
    // Slurm's step list takes `JOB[_TASK][.STEP]` and stops at anything else.
    if !arg.starts_with(|c: char| c.is_ascii_digit()) {
        eprintln!("{ME}: fatal: Bad job/step specified: {arg}");
        return 1;
    }
    let id_part = arg.split('.').next().unwrap_or_default();
    let (job, task) = match id_part.split_once('_') {
        Some((j, t)) => (j, t.parse::<u32>().ok()),
        None => (id_part, None),
    };
    let digits: String = job.chars().take_while(char::is_ascii_digit).collect();
    let Ok(id) = digits.parse::<u64>() else {
        eprintln!("Job not found.");
        return 2;
    };
    let query = AccountingQuery {
        jobs: if task.is_none() { vec![id] } else { vec![] },
        tasks: task.map(|t| vec![(id, t)]).unwrap_or_default(),
        ..AccountingQuery::default()
    };
    let client = controller();
    let acct: Accounting = match client.post("/v1/accounting", &query) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{ME}: error: {}", describe(&e));
            return 1;
        }
    };
    // The job of that id, else (an array named by its id) its first task.
    let mut candidates: Vec<&JobRecord> = acct
        .jobs
        .iter()
        .filter(|j| match task {
            Some(t) => j.array == Some((id, t)),
            None => j.id == id || j.array.is_some_and(|a| a.0 == id),
        })
        .collect();
    candidates.sort_by_key(|j| (j.id != id, j.list_key()));
    let Some(job) = candidates.first() else {
        eprintln!("Job not found.");
        return 2;
    };
    let cluster = client
        .get::<sluice_proto::types::ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .unwrap_or_default();
    let steps: Vec<&sluice_proto::types::StepRecord> =
        acct.steps.iter().filter(|s| s.job_id == job.id).collect();
    let t = now();
    if debug {
        print!("{}", debug_lines(job, &steps, &cluster, t));
    }
    print!("{}", layout(job, &steps, &cluster, t));
    0
}

#[cfg(test)]
mod tests;
