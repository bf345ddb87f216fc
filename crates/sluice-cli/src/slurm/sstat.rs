//! `sstat`: what a running job's steps use now (the agents' latest figures, from the
//! controller's `GET /v1/jobs/{id}/usage`), in Slurm 22.05's sstat layout.
//!
//! As Slurm's sstat: `-j JOB` alone shows the job's lowest-numbered running step (never
//! its batch or extern step: a batch job with no srun step running prints only the
//! header), `-a` every running step, `-j JOB.STEP` that step (`batch`, `extern`
//! included). A job that is not running gets `No steps running for job N` (or
//! `StepId=N.S not found running.`) on stderr, an unknown one (or another user's under
//! `PrivateData=jobs`) `couldn't get steps for job N`; sstat still exits 0 then, as
//! Slurm's does.

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_proto::types::{StepId, StepRecord};
use sluice_proto::usage::StepUsage;

use super::common::{controller, Refusal, VERSION};
use super::help::{e, four_to_a_line, render_described, trailer, Group};
use super::print_fields::{self, format_width, Layout};
use super::units::Convert;
use super::usage_fields::{self, Printer};

const ME: &str = "sstat";

/// sstat's fields and default widths, in Slurm 22.05's table order (which decides
/// what a prefix names, and `--helpformat`'s order).
const FIELDS: &[(&str, i32)] = &[
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 12),
    ("AveDiskWrite", 12),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("JobID", -12),
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
    ("Nodelist", 20),
    ("NTasks", 8),
    ("Pids", 20),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqMin", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqGov", 13),
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
];

/// The default fields (Slurm 22.05's `STAT_FIELDS`), as it names them.
const STAT_FIELDS: &str = "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,\
    maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,\
    mincpunode,mincputask,avecpu,ntasks,avecpufreq,reqcpufreqmin,reqcpufreqmax,\
    reqcpufreqgov,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,\
    maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,tresusageinave,\
    tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,\
    tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,tresusageoutmaxn,\
    tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,tresusageouttot";

/// `-i`'s fields.
const PID_FIELDS: &str = "jobid,nodelist,pids";

/// The field a `--format` item names: the first in sstat's table that starts with it,
/// in any case.
fn canonical(name: &str) -> Option<(&'static str, i32)> {
    let name = name.to_ascii_lowercase();
    FIELDS
        .iter()
        .find(|(f, _)| f.to_ascii_lowercase().starts_with(&name))
        .copied()
}

/// sstat's options: Slurm 22.05's table.
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("allsteps", Some('a')),
    Opt::flag("helpformat", Some('e')),
    Opt::flag("help", Some('h')),
    Opt::required("jobs", Some('j')),
    Opt::flag("noheader", Some('n')),
    Opt::required("fields", None).alias_of("format"),
    Opt::required("format", Some('o')),
    Opt::flag("noconvert", None),
    Opt::flag("pidformat", Some('i')),
    Opt::flag("parsable", Some('p')),
    Opt::flag("parsable2", Some('P')),
    Opt::flag("usage", None),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
];

/// sstat's options Sluice accepts without effect.
pub(crate) const IGNORED: &[&str] = &["verbose"];

/// `--help`: the options, in sstat's layout, Sluice's words.
#[rustfmt::skip]
pub(crate) const HELP: &[Group] = &[Group {
    title: "",
    entries: &[
        e("allsteps", "", "Every running step of the jobs named without a step\n\
             (the batch and extern steps too)."),
        e("helpformat", "", "List the fields --format takes."),
        e("help", "", "This help."),
        e("pidformat", "", "One line per node of each step: JobID, Nodelist, Pids."),
        e("jobs", "", "The jobs or steps to show (JOB[.STEP], comma separated;\n\
             required). A job alone: its lowest-numbered running step\n\
             (not batch or extern), unless --allsteps."),
        e("noheader", "", "No header lines."),
        e("noconvert", "", "Sizes in the unit they were counted in."),
        e("format", "", "The fields to print, comma separated; name%width sets a\n\
             width. --helpformat lists the fields."),
        e("parsable", "", "Fields separated by '|', one after the last too."),
        e("parsable2", "", "Fields separated by '|', none after the last."),
        e("usage", "", "A short usage line."),
        e("version", "", "Print the Slurm version and exit."),
    ],
}];

/// `--usage`, as Slurm's sstat.
const USAGE: &str = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n";

/// `--help`.
pub(crate) fn help_text() -> String {
    let mut text =
        String::from("sstat [<OPTION>] -j <job(.stepid)>\n    Valid <OPTION> values are:\n");
    text.push_str(&render_described(HELP, OPTIONS));
    text.push('\n');
    text.push_str(&trailer(HELP, OPTIONS, IGNORED));
    text
}

/// One `-j` item: a job, and a step or none.
type Selected = (u64, Option<StepId>);

/// A `-j` item as Slurm reads it: `JOB` or `JOB.STEP` (`STEP` a number, `N+K` for
/// part `K` of a heterogeneous step, `batch` or `extern`).
fn parse_step(s: &str) -> Option<Selected> {
    let (job, step) = match s.split_once('.') {
        Some((j, st)) => (j, Some(st)),
        None => (s, None),
    };
    let job: u64 = job.parse().ok().filter(|&j| j > 0)?;
    let step = match step {
        None => None,
        Some("batch") => Some(StepId::Batch),
        Some("extern") => Some(StepId::Extern),
        Some(n) => match n.split_once('+') {
            Some((n, k)) => Some(StepId::Part(n.parse().ok()?, k.parse().ok()?)),
            None => Some(StepId::Number(n.parse().ok()?)),
        },
    };
    Some((job, step))
}

/// A step as Slurm's messages name it: `StepId=100001.0`.
fn step_name(job: u64, step: StepId) -> String {
    format!("StepId={job}.{step}")
}

/// The running step the controller answers for `step`, as slurmctld looks a step up
/// by its number: the step itself, or the first part (`N+0`) of a heterogeneous one.
fn looked_up(running: &[StepRecord], step: StepId) -> Option<&StepRecord> {
    let mut found: Vec<&StepRecord> = running
        .iter()
        .filter(|s| match step {
            StepId::Number(n) | StepId::Part(n, _) => s.step.number() == Some(n),
            other => s.step == other,
        })
        .collect();
    found.sort_by_key(|s| order(s.step));
    found.first().copied()
}

/// The steps of `running` (one job's running steps) that `step` selects, as Slurm's
/// sstat chooses them: for a job alone, its lowest-numbered step (never batch or
/// extern) with every part of it when it is heterogeneous, every step with `all`;
/// for a step named, the step the controller answers (see [`looked_up`]) if it is the
/// one named — `J.N` of a heterogeneous step shows its part `N+0` only, `J.N+K` that
/// part only if `K` is 0 (Slurm's controller answers with the first part).
fn choose(running: &[StepRecord], step: Option<StepId>, all: bool) -> Vec<&StepRecord> {
    let mut steps: Vec<&StepRecord> = match step {
        None => running.iter().collect(),
        Some(want) => looked_up(running, want)
            .filter(|s| s.step == want || want == StepId::Number(s.step.number().unwrap_or(0)))
            .into_iter()
            .collect(),
    };
    steps.sort_by_key(|s| order(s.step));
    if step.is_none() && !all {
        let first = steps.iter().find_map(|s| s.step.number());
        steps.retain(|s| s.step.number().is_some() && s.step.number() == first);
    }
    steps
}

/// The usage of part `N+K` (`K` > 0) of a heterogeneous step with its nodes named as
/// Slurm's sstat names them: the tasks' nodes are numbered across the whole step
/// (after the `offset` nodes of the parts before it) but looked up among this part's
/// nodes alone, so a node past them has no name (empty, `(null)` in the TRES lists)
/// and one within them the name of the node that many further on.
fn het_part_usage(u: &StepUsage, nodes: &[String], offset: usize) -> StepUsage {
    let mut u = u.clone();
    let rename = |name: &mut String| {
        if let Some(i) = nodes.iter().position(|n| n == name) {
            *name = nodes.get(i + offset).cloned().unwrap_or_default();
        }
    };
    for stat in [
        &mut u.cpu_ms,
        &mut u.rss,
        &mut u.vmem,
        &mut u.pages,
        &mut u.disk_read,
        &mut u.disk_write,
    ] {
        rename(&mut stat.max_node);
        rename(&mut stat.min_node);
    }
    u
}

/// Steps in the order Slurm's sstat shows them: the batch step, the extern step, then
/// the numbered steps.
fn order(step: StepId) -> (u8, u32, u32) {
    match step {
        StepId::Batch => (0, 0, 0),
        StepId::Extern => (1, 0, 0),
        StepId::Number(n) => (2, n, 0),
        StepId::Part(n, p) => (2, n, p),
    }
}

/// A field's value for a running step `s` of job `job`; `node`: the one node of a
/// `-i` line (whose usage figures are not shown).
fn value(field: &str, job: u64, s: &StepRecord, node: Option<&str>, how: Convert) -> String {
    match field {
        "JobID" => format!("{job}.{}", s.step),
        "Nodelist" => match node {
            Some(n) => n.to_string(),
            None => sluice_conf::hostlist::compress(&s.nodes),
        },
        "NTasks" => s.ntasks.to_string(),
        // Sluice does not keep the tasks' process ids for the controller.
        "Pids" => String::new(),
        // No CPU frequency is asked for or measured, no energy either.
        "AveCPUFreq" | "ConsumedEnergy" | "ConsumedEnergyRaw" => "0".into(),
        // The batch step's request reads 0, another step's none `Unknown`, as Slurm's.
        "ReqCPUFreq" | "ReqCPUFreqMin" | "ReqCPUFreqMax" | "ReqCPUFreqGov" => {
            if s.step == StepId::Batch {
                "0".into()
            } else {
                "Unknown".into()
            }
        }
        f => match (&s.usage, node) {
            (Some(u), None) => usage_fields::value(f, u, Printer::Sstat, how).unwrap_or_default(),
            _ => String::new(),
        },
    }
}

/// Runs `sstat`.
pub fn main(args: Vec<String>) -> i32 {
    let (mut all, mut header, mut pids, mut no_convert) = (false, true, false, false);
    let mut layout = Layout::Fixed;
    let mut jobs: Vec<String> = Vec::new();
    let mut formats: Vec<String> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    // --help, --helpformat, --usage: the last one asked wins, after every option is read.
    let mut help: Option<&str> = None;
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
            "allsteps" => all = true,
            "helpformat" | "help" | "usage" => help = Some(f.name()),
            "jobs" => jobs.push(f.value().to_string()),
            "noheader" => header = false,
            "format" => formats.push(f.value().to_string()),
            "noconvert" => no_convert = true,
            "pidformat" => {
                pids = true;
                formats.push(PID_FIELDS.into());
            }
            "parsable" | "parsable2" => {
                layout = Layout::Parsable {
                    delimiter: "|".into(),
                    trailing: f.name() == "parsable",
                }
            }
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            n if IGNORED.contains(&n) => {}
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    match help {
        Some("help") => {
            print!("{}", help_text());
            return 0;
        }
        Some("helpformat") => {
            print!(
                "{}",
                four_to_a_line(&FIELDS.iter().map(|f| f.0).collect::<Vec<_>>())
            );
            return 0;
        }
        Some(_) => {
            print!("{USAGE}");
            return 0;
        }
        None => {}
    }
    // The first word that is no option is a job list too.
    jobs.extend(operands.into_iter().take(1));
    let mut selected: Vec<Selected> = Vec::new();
    for list in &jobs {
        for item in list.split(',').filter(|i| !i.is_empty()) {
            match parse_step(item) {
                Some(s) => selected.push(s),
                None => {
                    eprintln!("{ME}: fatal: Bad job/step specified: {item}");
                    return 1;
                }
            }
        }
    }
    if formats.is_empty() {
        formats.push(STAT_FIELDS.into());
    }
    let mut fields: Vec<(&'static str, i32)> = Vec::new();
    for item in formats.iter().flat_map(|f| f.split(',')) {
        let item = item.trim_start();
        if item.is_empty() {
            continue;
        }
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, format_width(Some(w))),
            None => (item, None),
        };
        match canonical(name) {
            Some((f, w)) => fields.push((f, width.unwrap_or(w))),
            None => {
                eprintln!("{ME}: error: Invalid field requested: \"{name}\"");
                return 1;
            }
        }
    }
    if selected.is_empty() {
        eprintln!("{ME}: error: You didn't give me any jobs to stat.");
        return 1;
    }
    let how = if no_convert {
        Convert::No
    } else {
        Convert::Exact
    };
    let client = controller();
    let mut out = String::new();
    if header {
        out.push_str(&print_fields::header(&fields, &layout));
    }
    for (job, step) in selected {
        // Empty: the job does not run. An error: it is unknown (or another user's,
        // under PrivateData=jobs), or the controller cannot be reached.
        let running: Vec<StepRecord> = match client.job_usage(job) {
            Ok(r) => r,
            Err(_) => {
                print!("{out}");
                out.clear();
                eprintln!("{ME}: error: couldn't get steps for job {job}");
                continue;
            }
        };
        let steps = choose(&running, step, all);
        if step.map_or(running.is_empty(), |want| {
            looked_up(&running, want).is_none()
        }) {
            print!("{out}");
            out.clear();
            match step {
                None => eprintln!("{ME}: error: No steps running for job {job}"),
                Some(st) => eprintln!("{ME}: error: {} not found running.", step_name(job, st)),
            }
            continue;
        }
        for s in steps {
            let nodes: Vec<Option<&str>> = if pids {
                s.nodes.iter().map(|n| Some(n.as_str())).collect()
            } else {
                vec![None]
            };
            // Part K of a heterogeneous step: its nodes as Slurm's sstat names them.
            let renamed: StepRecord;
            let s = match (s.step, &s.usage) {
                (StepId::Part(n, k), Some(u)) if k > 0 => {
                    let offset: usize = running
                        .iter()
                        .filter(|o| matches!(o.step, StepId::Part(m, j) if m == n && j < k))
                        .map(|o| o.nodes.len())
                        .sum();
                    renamed = StepRecord {
                        time_limit: None,
                        submit_line: None,
                        timed_out: false,
                        gpus: Vec::new(),
                        srun: None,
                        usage: Some(Box::new(het_part_usage(u, &s.nodes, offset))),
                        ..s.clone()
                    };
                    &renamed
                }
                _ => s,
            };
            for node in nodes {
                let values: Vec<String> = fields
                    .iter()
                    .map(|(f, _)| value(f, job, s, node, how))
                    .collect();
                out.push_str(&print_fields::row(&values, &fields, &layout));
            }
        }
    }
    print!("{out}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::JobState;

    fn step(step: StepId) -> StepRecord {
        StepRecord {
            time_limit: None,
            submit_line: None,
            timed_out: false,
            gpus: Vec::new(),
            srun: None,
            cancelled_by: None,
            job_id: 7,
            step,
            name: String::new(),
            state: JobState::Running,
            start: 0,
            end: None,
            exit_code: 0,
            signal: 0,
            nodes: vec!["n1".into()],
            ntasks: 2,
            cpus: 2,
            held_cpus: Vec::new(),
            ended_on: Vec::new(),
            usage: None,
            run: 0,
            suspended_secs: 0,
        }
    }

    #[test]
    fn a_job_alone_is_its_lowest_numbered_running_step() {
        let running = [
            step(StepId::Batch),
            step(StepId::Number(3)),
            step(StepId::Number(1)),
            step(StepId::Extern),
        ];
        let ids = |v: Vec<&StepRecord>| v.iter().map(|s| s.step).collect::<Vec<_>>();
        assert_eq!(ids(choose(&running, None, false)), [StepId::Number(1)]);
        assert_eq!(
            ids(choose(&running, None, true)),
            [
                StepId::Batch,
                StepId::Extern,
                StepId::Number(1),
                StepId::Number(3)
            ]
        );
        assert_eq!(
            ids(choose(&running, Some(StepId::Batch), false)),
            [StepId::Batch]
        );
        // A batch job without srun steps: nothing, unless -a.
        assert!(choose(&running[..1], None, false).is_empty());
        assert_eq!(ids(choose(&running[..1], None, true)), [StepId::Batch]);
    }

    #[test]
    fn job_lists_and_field_prefixes_read_as_slurms_sstat() {
        assert_eq!(parse_step("12"), Some((12, None)));
        assert_eq!(parse_step("12.batch"), Some((12, Some(StepId::Batch))));
        assert_eq!(parse_step("12.3"), Some((12, Some(StepId::Number(3)))));
        assert_eq!(parse_step("abc"), None);
        assert_eq!(parse_step("12.x"), None);
        assert_eq!(canonical("jobid"), Some(("JobID", -12)));
        assert_eq!(canonical("maxrsst"), Some(("MaxRSSTask", 10)));
        assert_eq!(
            canonical("tresusageinmaxn"),
            Some(("TRESUsageInMaxNode", 18))
        );
        // Table order, not alphabetical: ReqCPUFreq comes before ReqCPUFreqGov.
        assert_eq!(canonical("reqcpufreq"), Some(("ReqCPUFreq", 10)));
        assert_eq!(canonical("bogus"), None);
        assert_eq!(step_name(12, StepId::Number(7)), "StepId=12.7");
    }
}
