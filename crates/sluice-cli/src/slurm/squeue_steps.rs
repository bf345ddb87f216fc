//! `squeue -s` (`--steps`): the running steps of the cluster's jobs, as Slurm 22.05's
//! squeue lists them. Its own fields (`-o` letters `A b i j l M N P S U u`, `-O`
//! names such as `StepId`, `StepState`, `NumCPUs`), its own default format and order
//! (partition, then step id: numbered steps before the batch step), and its own
//! filters: `-j`, `-p`, `-u`, `-w` and the step list itself (`-s JOB.STEP,...`, an
//! array's task as `ARRAY_TASK.STEP`); the job filters it has no use for (`-t`, `-n`)
//! are ignored, as Slurm's are.

use sluice_conf::duration::format_compact;
use sluice_proto::steps::ListedStep;
use sluice_proto::time::shown;
use sluice_proto::types::{JobState, StepId};

use super::common::{controller, describe, strtol};
use super::format::{Fit, Layout};
use super::long_format::LongField;

const ME: &str = "squeue";

/// Slurm's default format for steps.
const DEFAULT: &str = "%.15i %.8j %.9P %.8u %.9M %N";

/// One item of a step list: a job (or an array's task) and a step number, as
/// [`ListedStep::order`] numbers steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    job: u64,
    task: Option<u32>,
    step: u32,
}

/// A step list (`-s 12.0,13_2.batch`), as squeue reads it: each item `JOB[_TASK].STEP`
/// or Slurm's error for it. As Sluice's own improvement, `batch` and `extern` name
/// those steps (Slurm reads them as step 0).
pub fn parse_list(list: &str) -> Result<Vec<Named>, String> {
    let mut out = Vec::new();
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let mut parts = item.split('.').filter(|p| !p.is_empty());
        let Some(job_word) = parts.next() else {
            break;
        };
        let (job, rest) = strtol(job_word);
        let task = rest
            .strip_prefix('_')
            .map(|t| u32::try_from(strtol(t).0).unwrap_or(u32::MAX));
        let Some(step_word) = parts.next() else {
            return Err(format!("Invalid job_step id: {job_word}.??"));
        };
        let step = match step_word {
            "batch" => i64::from(StepId::SLURM_BATCH),
            "extern" => i64::from(StepId::SLURM_EXTERN),
            w => strtol(w).0,
        };
        if job <= 0 || step < 0 {
            return Err(format!("Invalid job_step id: {job_word}.{step_word}"));
        }
        out.push(Named {
            job: job as u64,
            task,
            step: u32::try_from(step).unwrap_or(u32::MAX),
        });
    }
    Ok(out)
}

/// What `squeue -s` lists and how.
pub struct StepListing {
    /// `-s LIST`: these steps only.
    pub named: Option<Vec<Named>>,
    /// `-j LIST`: these jobs' steps only.
    pub jobs: Vec<(u64, Option<u32>)>,
    /// `-p`: these partitions' steps only.
    pub partitions: Vec<String>,
    /// `-u`: these users' steps only.
    pub users: Vec<String>,
    /// `-w`: steps on any of these nodes only.
    pub nodes: Option<Vec<String>>,
    /// `-S`: the order.
    pub sort: Option<String>,
    /// `-o`, if given.
    pub format: Option<String>,
    /// `-O`, if given.
    pub long_format: Option<Vec<LongField>>,
    /// Whether to print the header.
    pub header: bool,
    /// `-v`: the number of steps answered, before the listing.
    pub verbose: bool,
}

/// Whether `%code` is a step field (Slurm's step format letters).
fn is_letter(code: char) -> bool {
    "AbijlMNPSUu".contains(code)
}

/// `-s -o %all`: every step field, as Slurm's squeue expands it.
pub fn all_fields() -> String {
    super::format::all_fields(is_letter, "")
}

/// Reports each piece of a step format that is not a field, as Slurm does.
pub fn report_invalid(format: &str) {
    for code in super::format::invalid_codes_among(format, is_letter) {
        eprintln!("{ME}: error: Invalid job step format specification: {code}");
    }
}

/// The code an `-O` step field stands for: the `-o` letter where there is one.
fn long_code(name: &str) -> Option<char> {
    let n = name.to_ascii_lowercase();
    if n.starts_with("container") {
        return Some('c');
    }
    if n.starts_with("numtask") {
        return Some('A');
    }
    Some(match n.as_str() {
        "cluster" => 'X',
        "cpufreq" => 'f',
        "gres" | "tres-per-node" => 'b',
        "stepid" => 'i',
        "stepname" => 'j',
        "timelimit" => 'l',
        "timeused" => 'M',
        "nodes" => 'N',
        "partition" => 'P',
        "starttime" => 'S',
        "userid" => 'U',
        "username" => 'u',
        "arrayjobid" => 'F',
        "arraytaskid" => 'K',
        "jobid" => 'J',
        "network" => 'n',
        "numcpus" => 'C',
        "resvports" => 'r',
        "stepstate" => 'T',
        "cpus-per-tres" => '1',
        "mem-per-tres" => '2',
        "tres-bind" => '3',
        "tres-freq" => '4',
        "tres-per-job" | "tres-per-step" => '5',
        "tres-per-socket" => '6',
        "tres-per-task" => '7',
        _ => return None,
    })
}

/// Reports each `-O` step field squeue does not know, as Slurm does (the field prints
/// nothing).
pub fn report_invalid_long(fields: &[LongField]) {
    for f in fields.iter().filter(|f| long_code(&f.name).is_none()) {
        eprintln!(
            "{ME}: error: Invalid job step format specification: {}",
            f.name
        );
    }
}

/// The header of a step field.
fn header(code: char) -> Option<&'static str> {
    Some(match code {
        'A' => "TASKS",
        'b' => "TRES_PER_JOB",
        'i' => "STEPID",
        'j' => "NAME",
        'l' => "TIME_LIMIT",
        'M' => "TIME",
        'N' => "NODELIST",
        'P' => "PARTITION",
        'S' => "START_TIME",
        'U' => "UID",
        'u' => "USER",
        'c' => "CONTAINER",
        'X' => "CLUSTER",
        'f' => "CPU_FREQ",
        'F' => "ARRAY_JOB_ID",
        'K' => "ARRAY_TASK_ID",
        'J' => "JOB_ID",
        'n' => "NETWORK",
        'C' => "NUM_CPUS",
        'r' => "RESERVED_PORTS",
        'T' => "STATE",
        '1' => "CPUS_PER_TRES",
        '2' => "MEM_PER_TRES",
        '3' => "TRES_BIND",
        '4' => "TRES_FREQ",
        '5' => "TRES_PER_STEP",
        '6' => "TRES_PER_SOCKET",
        '7' => "TRES_PER_TASK",
        _ => return None,
    })
}

/// Writes the value of step field `code` for `s` (of cluster `cluster`) into `out`;
/// `false` for a code that is no step field.
fn value(code: char, s: &ListedStep, cluster: &str, out: &mut String) -> bool {
    use std::fmt::Write;
    match code {
        'A' => {
            let _ = write!(out, "{}", s.ntasks);
        }
        'i' => out.push_str(&s.id()),
        'j' => out.push_str(&s.name),
        // Sluice's steps have no time limit of their own.
        'l' => match s.time_limit {
            Some(l) => out.push_str(&sluice_conf::duration::format_compact(l)),
            None => out.push_str("UNLIMITED"),
        },
        'M' => out.push_str(&format_compact(s.run_secs)),
        'N' => out.push_str(&sluice_conf::hostlist::compress(&s.nodes)),
        'P' => out.push_str(&s.partition),
        'S' => out.push_str(&shown(s.start)),
        'U' => {
            let _ = write!(out, "{}", s.uid);
        }
        'u' => out.push_str(&s.user),
        // As Slurm's: a job not in an array has array job id 0.
        'F' => {
            let _ = write!(out, "{}", s.array.map_or(0, |a| a.0));
        }
        'K' => match s.array {
            Some((_, t)) => {
                let _ = write!(out, "{t}");
            }
            None => out.push_str("N/A"),
        },
        'J' => {
            let _ = write!(out, "{}", s.job_id);
        }
        'C' => {
            let _ = write!(out, "{}", s.cpus);
        }
        // As Slurm's: a suspended job's steps stay RUNNING.
        'T' => out.push_str(JobState::Running.name()),
        'X' => out.push_str(cluster),
        // Minimum, maximum and governor, none asked for: Slurm's srun steps hold "no
        // value" (which Slurm prints as Unknown), its batch step zeros.
        'f' => out.push_str(if s.step == StepId::Batch {
            "0-0:0"
        } else {
            "Unknown-Unknown:Unknown"
        }),
        'b' | 'c' | 'n' | 'r' | '1'..='7' => out.push_str("(null)"),
        _ => return false,
    }
    true
}

/// Slurm's order of steps by `key` (`-S`, default `P,i`): the keys applied from the
/// last to the first, each a stable sort, `-` reversing one.
fn sort(steps: &mut [ListedStep], key: &str) {
    use super::squeue_sort::{first_node, keys_last_first};
    for (k, reverse) in keys_last_first(key) {
        let by = |a: &ListedStep, b: &ListedStep| -> std::cmp::Ordering {
            match k {
                b'i' => (a.job_id, a.order()).cmp(&(b.job_id, b.order())),
                b'N' => first_node(&a.nodes).cmp(&first_node(&b.nodes)),
                b'P' => a.partition.cmp(&b.partition),
                // No limit of its own is Slurm's INFINITE, the longest.
                b'l' => a
                    .time_limit
                    .unwrap_or(i64::MAX)
                    .cmp(&b.time_limit.unwrap_or(i64::MAX)),
                b'S' => a.start.cmp(&b.start),
                b'M' => a.run_secs.cmp(&b.run_secs),
                b'u' => a.user.cmp(&b.user),
                b'U' => a.uid.cmp(&b.uid),
                // As Slurm's step listing, other keys change nothing.
                _ => std::cmp::Ordering::Equal,
            }
        };
        if reverse {
            steps.sort_by(|a, b| by(b, a));
        } else {
            steps.sort_by(by);
        }
    }
}

/// Whether `s` passes the listing's filters, as Slurm's `_filter_step` decides.
fn selected(l: &StepListing, s: &ListedStep) -> bool {
    let names_job = |job: u64, task: Option<u32>| match task {
        None => job == s.job_id || s.array.is_some_and(|a| a.0 == job),
        Some(t) => s.array == Some((job, t)),
    };
    if !l.jobs.is_empty() && !l.jobs.iter().any(|(j, t)| names_job(*j, *t)) {
        return false;
    }
    if !l.partitions.is_empty() && !l.partitions.contains(&s.partition) {
        return false;
    }
    if let Some(named) = &l.named {
        if !named
            .iter()
            .any(|n| n.step == s.order() && names_job(n.job, n.task))
        {
            return false;
        }
    }
    if let Some(nodes) = &l.nodes {
        if !s.nodes.iter().any(|n| nodes.contains(n)) {
            return false;
        }
    }
    l.users.is_empty() || l.users.contains(&s.user)
}

/// The listing's layout.
fn layout(l: &StepListing) -> Layout {
    match (&l.long_format, &l.format) {
        (Some(fields), _) => Layout::long(fields, long_code),
        (None, Some(f)) => Layout::among(f, is_letter),
        (None, None) => Layout::among(DEFAULT, is_letter),
    }
}

/// The listing's lines (of cluster `cluster`), header first when asked for.
fn render(l: &StepListing, steps: &[ListedStep], cluster: &str) -> String {
    let layout = layout(l);
    let mut out = String::new();
    let mut scratch = String::new();
    if l.header {
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |c, buf| match header(c) {
                Some(h) => {
                    buf.push_str(h);
                    true
                }
                None => false,
            },
            // As Slurm's: the node list's header is not cut, the start time's is
            // always on the left.
            |c, _| match c {
                'N' => Fit::Whole,
                'S' => Fit::Left,
                _ => Fit::Cut,
            },
        );
    }
    // As Slurm's: the time used and node lists are not cut to a right-justified width.
    for s in steps {
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |c, buf| value(c, s, cluster, buf),
            |c, _| Fit::whole_if(matches!(c, 'M' | 'N')),
        );
    }
    out
}

/// Lists the running steps as `l` says; squeue's exit status.
pub fn run(l: &StepListing) -> i32 {
    let client = controller();
    let mut steps: Vec<ListedStep> = match client.get("/v1/steps") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slurm_get_job_steps error: {}", describe(&e));
            return 1;
        }
    };
    if l.verbose {
        print!(
            "{}",
            super::squeue_verbose::records_line(super::common::now(), steps.len())
        );
    }
    steps.retain(|s| selected(l, s));
    sort(&mut steps, l.sort.as_deref().unwrap_or("P,i"));
    // The cluster's name, only for a listing that shows it.
    let cluster = if layout(l).codes().contains(&'X') {
        super::common::cluster_name(&client)
    } else {
        String::new()
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(render(l, &steps, &cluster).as_bytes());
    let _ = stdout.flush();
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::StepId;

    fn step(job_id: u64, array: Option<(u64, u32)>, step: StepId, part: &str) -> ListedStep {
        ListedStep {
            time_limit: None,
            gpus: 0,
            srun: None,
            job_id,
            array,
            step,
            name: if step == StepId::Batch {
                "batch"
            } else {
                "sleep"
            }
            .into(),
            partition: part.into(),
            uid: 0,
            user: "root".into(),
            start: 0,
            run_secs: 65,
            nodes: vec!["n1".into(), "n2".into()],
            ntasks: 2,
            cpus: 4,
            mem_mb: 2000,
        }
    }

    fn listing() -> StepListing {
        StepListing {
            named: None,
            jobs: vec![],
            partitions: vec![],
            users: vec![],
            nodes: None,
            sort: None,
            format: None,
            long_format: None,
            header: true,
            verbose: false,
        }
    }

    #[test]
    fn step_lists_are_read_as_slurms_with_its_errors() {
        let n = |job, task, step| Named { job, task, step };
        assert_eq!(
            parse_list("12.0,13_2.1"),
            Ok(vec![n(12, None, 0), n(13, Some(2), 1)])
        );
        assert_eq!(
            parse_list("12.batch"),
            Ok(vec![n(12, None, StepId::SLURM_BATCH)])
        );
        assert_eq!(parse_list("12").unwrap_err(), "Invalid job_step id: 12.??");
        assert_eq!(
            parse_list("abc").unwrap_err(),
            "Invalid job_step id: abc.??"
        );
        assert_eq!(
            parse_list("=12.0").unwrap_err(),
            "Invalid job_step id: =12.0"
        );
        assert_eq!(
            parse_list("12.-1").unwrap_err(),
            "Invalid job_step id: 12.-1"
        );
    }

    #[test]
    fn the_default_listing_orders_by_partition_then_job_with_the_batch_step_last() {
        let mut steps = vec![
            step(20, Some((18, 1)), StepId::Batch, "short"),
            step(17, None, StepId::Batch, "debug"),
            step(20, Some((18, 1)), StepId::Number(0), "short"),
            step(17, None, StepId::Number(0), "debug"),
        ];
        sort(&mut steps, "P,i");
        let ids: Vec<String> = steps.iter().map(ListedStep::id).collect();
        assert_eq!(ids, ["17.0", "17.batch", "18_1.0", "18_1.batch"]);
        sort(&mut steps, "-i");
        let ids: Vec<String> = steps.iter().map(ListedStep::id).collect();
        assert_eq!(ids, ["18_1.batch", "18_1.0", "17.batch", "17.0"]);
    }

    #[test]
    fn filters_name_jobs_by_their_own_or_their_arrays_id_and_steps_by_number() {
        let task = step(20, Some((18, 1)), StepId::Number(0), "short");
        let mut l = listing();
        l.jobs = vec![(18, None)];
        assert!(selected(&l, &task));
        l.jobs = vec![(18, Some(2))];
        assert!(!selected(&l, &task));
        l.jobs = vec![];
        l.named = Some(parse_list("18.0").unwrap());
        assert!(selected(&l, &task));
        l.named = Some(parse_list("20.batch").unwrap());
        assert!(!selected(&l, &task));
        l.named = None;
        l.nodes = Some(vec!["n2".into()]);
        assert!(selected(&l, &task));
        l.nodes = Some(vec!["n3".into()]);
        assert!(!selected(&l, &task));
    }

    #[test]
    fn the_default_format_prints_slurms_columns() {
        let out = render(
            &listing(),
            &[step(17, None, StepId::Number(0), "debug")],
            "c",
        );
        assert_eq!(
            out,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n\
             \x20          17.0    sleep     debug     root      1:05 n[1-2]\n"
        );
    }

    #[test]
    fn fields_steps_do_not_have_print_as_written_or_not_at_all() {
        let mut l = listing();
        l.format = Some("%i|%C|%A".into());
        let s = step(17, None, StepId::Number(0), "debug");
        assert_eq!(
            render(&l, std::slice::from_ref(&s), "c"),
            "STEPID|%C|TASKS\n17.0|%C|2\n"
        );
        l.format = None;
        l.long_format = Some(super::super::long_format::parse(
            "stepid:8,nodelist,numcpus:4,arrayjobid:3,arraytaskid:4",
        ));
        assert_eq!(
            render(&l, &[s], "c"),
            "STEPID  NUM_ARRARRA\n17.0    4   0  N/A \n"
        );
    }
}
