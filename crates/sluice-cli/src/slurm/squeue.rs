//! `squeue`: the queue.

use std::collections::HashMap;

use sluice_proto::listing::{JobQuery, ListedJob};
use sluice_proto::types::MemoryRequest;
use sluice_proto::types::{JobRecord, JobState};

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};

use sluice_conf::duration::format_compact;
use sluice_proto::time::{date_line, shown};

use super::common::{controller, describe, fail, now, parse_job_arg, Refusal, VERSION};
use super::format::{Field, Fit, Layout};
use super::help::{command_help, e, synopsis, Group};
use super::units::{self, Convert};

const ME: &str = "squeue";
const DEFAULT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
const LONG: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
const START: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";

/// The value and header of one `%` code for a job.
fn field(code: char, j: &JobRecord, t: i64) -> Option<Field> {
    let run = match (j.start_time, j.end_time) {
        (Some(_), Some(_)) => j.run_secs(t),
        (Some(_), None) if j.state.is_running() => j.run_secs(t),
        _ => 0,
    };
    let reason = |j: &JobRecord| -> String {
        if shows_reason(j) {
            format!("({})", j.reason)
        } else {
            sluice_conf::hostlist::compress(&j.nodes)
        }
    };
    let f = |h: &'static str, v: String| {
        Some(Field {
            header: h,
            value: v,
        })
    };
    match code {
        'i' => f("JOBID", j.display_id()),
        'A' => f("JOBID", j.id.to_string()),
        'F' => f("ARRAY_JOB_ID", j.array.map_or(j.id, |a| a.0).to_string()),
        // A task, or an array's unstarted ones as its id says them (`1-3%2`).
        'K' => f(
            "ARRAY_TASK_ID",
            match (j.array, &j.array_pending) {
                (Some(a), _) => a.1.to_string(),
                (None, Some((rest, throttle))) if !rest.is_empty() => {
                    super::scontrol_array::unstarted_ids(rest, *throttle)
                }
                _ => "N/A".into(),
            },
        ),
        'j' => f("NAME", j.desc.name.clone()),
        'P' => f("PARTITION", j.partition.clone()),
        'u' => f("USER", j.user.clone()),
        'U' => f("UID", j.uid.to_string()),
        'g' => f("GROUP", j.group.clone()),
        'a' => f("ACCOUNT", j.account.clone()),
        'q' => f("QOS", j.qos.clone()),
        't' => f("ST", j.shown_state_short().into()),
        'T' => f("STATE", j.shown_state().into()),
        'M' => f("TIME", format_compact(run)),
        'l' => f(
            "TIME_LIMIT",
            j.time_limit.map_or("UNLIMITED".into(), format_compact),
        ),
        'L' => f(
            "TIME_LEFT",
            match (j.time_limit, j.state) {
                (None, _) => "UNLIMITED".into(),
                (Some(l), JobState::Running | JobState::Suspended) => format_compact(l - run),
                (Some(l), _) => format_compact(l),
            },
        ),
        'D' => f(
            "NODES",
            if j.nodes.is_empty() {
                j.min_nodes.max(1)
            } else {
                j.nodes.len() as u32
            }
            .to_string(),
        ),
        'C' => f(
            "CPUS",
            if j.cpus_per_node.is_empty() {
                j.ntasks * j.cpus_per_task
            } else {
                j.cpus_per_node.iter().sum()
            }
            .to_string(),
        ),
        'R' => f("NODELIST(REASON)", reason(j)),
        'r' => f("REASON", j.reason.clone()),
        'N' => f("NODELIST", sluice_conf::hostlist::compress(&j.nodes)),
        // squeue's `_print_job_batch_host`: a batch job's host is where its script runs
        // (its first node, `n/a` until it has one); an allocation's, the host salloc or
        // srun ran on. JupyterHub's batchspawner reads it (`-o '%T %B'`).
        'B' => f(
            "EXEC_HOST",
            if j.desc.interactive {
                Some(&j.desc.submit_host).filter(|h| !h.is_empty())
            } else {
                j.nodes.first()
            }
            .map_or_else(|| "n/a".into(), Clone::clone),
        ),
        'S' => f(
            "START_TIME",
            j.start_time.or(j.planned_start).map_or("N/A".into(), shown),
        ),
        'e' => f(
            "END_TIME",
            match (j.end_time, j.limit_end()) {
                (Some(e), _) => shown(e),
                (None, Some(end)) => shown(end),
                _ => "N/A".into(),
            },
        ),
        'V' => f("SUBMIT_TIME", shown(j.submit_time)),
        'v' => f(
            "RESERVATION",
            j.desc
                .reservation
                .clone()
                .unwrap_or_else(|| "(null)".into()),
        ),
        'Q' => f("PRIORITY", j.priority.to_string()),
        'Z' => f("WORK_DIR", j.desc.work_dir.clone()),
        'o' => f("COMMAND", j.desc.command.clone()),
        'k' => f(
            "COMMENT",
            j.desc.comment.clone().unwrap_or_else(|| "(null)".into()),
        ),
        // Sluice's own (`-O Service` only): a service's name, health and restarts in
        // place, `llm:healthy:2`.
        SERVICE => f(
            "SERVICE",
            match &j.desc.service {
                Some(svc) => {
                    let st = j.service_state.clone().unwrap_or_default();
                    let health = if svc.health.is_none() {
                        "none"
                    } else {
                        st.health.name()
                    };
                    format!("{}:{health}:{}", svc.name, st.restarts)
                }
                None => "(null)".into(),
            },
        ),
        'E' => f(
            "DEPENDENCY",
            j.dependency_status
                .clone()
                .unwrap_or_else(|| "(null)".into()),
        ),
        'Y' => f(
            "SCHEDNODES",
            j.sched_nodes.clone().unwrap_or_else(|| "(null)".into()),
        ),
        'y' => f("NICE", j.desc.nice.unwrap_or(0).to_string()),
        'c' => f("MIN_CPUS", j.cpus_per_task.to_string()),
        'm' => f("MIN_MEMORY", min_memory_shown(j, Convert::Exact)),
        'b' => f(
            "TRES_PER_NODE",
            if j.desc.gres.is_empty() {
                "N/A".into()
            } else {
                j.desc
                    .gres
                    .iter()
                    .map(|g| match &g.gres_type {
                        Some(t) => format!("gres:{}:{t}:{}", g.name, g.count),
                        None => format!("gres:{}:{}", g.name, g.count),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            },
        ),
        // As Slurm keeps them: ranged, without repeats.
        'x' => f(
            "EXC_NODES",
            j.desc
                .exclude
                .as_deref()
                .map(sluice_conf::hostlist::ranged)
                .unwrap_or_default(),
        ),
        'n' => f(
            "REQ_NODES",
            j.desc
                .nodelist
                .as_deref()
                .map(sluice_conf::hostlist::ranged)
                .unwrap_or_default(),
        ),
        'h' => f("OVER_SUBSCRIBE", over_subscribe(j).into()),
        'w' => f(
            "WCKEY",
            j.desc.wckey.clone().unwrap_or_else(|| "(null)".into()),
        ),
        'f' => f(
            "FEATURES",
            j.desc.constraint.clone().unwrap_or_else(|| "(null)".into()),
        ),
        'z' => f("S:C:T", "*:*:*".into()),
        // What Sluice's jobs do not ask for, as Slurm prints a job that did not: no
        // temporary disk, cores or threads per node, licenses, contiguity or
        // specialized cores.
        'd' => f("MIN_TMP_DISK", "0".into()),
        // The brief listing names the group; its id is this host's for that name.
        'G' => f(
            "GROUP",
            nix::unistd::Group::from_name(&j.group)
                .ok()
                .flatten()
                .map_or(j.gid, |g| g.gid.as_raw())
                .to_string(),
        ),
        'H' => f(
            "SOCKETS_PER_NODE",
            j.desc
                .sockets_per_node
                .map_or("*".into(), |n| n.to_string()),
        ),
        'I' => f("CORES_PER_SOCKET", "*".into()),
        'J' => f("THREADS_PER_CORE", "*".into()),
        'O' => f("CONTIGUOUS", "0".into()),
        'W' => f("LICENSES", "(null)".into()),
        'X' => f("CORE_SPEC", "N/A".into()),
        'p' => f(
            "PRIORITY",
            format!("{:16.14}", j.priority as f64 / u32::MAX as f64),
        ),
        _ => None,
    }
}

/// The code of `-O Service` (Sluice's own field; no `%` letter stands for it).
const SERVICE: char = '\u{1}';

/// `-O` field names and the `%` code each stands for.
fn long_field(name: &str) -> Option<char> {
    Some(match name.to_ascii_lowercase().as_str() {
        // `JobID` is the job's own id (`%A`): an array's pending remainder shows as
        // its first id, not `123_[4-9]`.
        "jobid" => 'A',
        "jobarrayid" => 'i',
        "arrayjobid" => 'F',
        "arraytaskid" => 'K',
        "name" => 'j',
        "partition" => 'P',
        "username" | "user" => 'u',
        "userid" => 'U',
        "account" => 'a',
        "qos" => 'q',
        "state" => 'T',
        "statecompact" => 't',
        "timeused" => 'M',
        "timelimit" => 'l',
        "timeleft" => 'L',
        "numnodes" => 'D',
        "numcpus" => 'C',
        "nodelist" => 'N',
        "batchhost" => 'B',
        "reason" => 'r',
        "reasonlist" => 'R',
        "starttime" => 'S',
        "endtime" => 'e',
        "submittime" => 'V',
        "reservation" => 'v',
        // As squeue: `Priority` is `%p`, the normalised figure; `PriorityLong` `%Q`.
        "priority" => 'p',
        "prioritylong" => 'Q',
        "mincpus" => 'c',
        "minmemory" => 'm',
        "groupname" => 'g',
        "groupid" => 'G',
        "mintmpdisk" => 'd',
        "sockets" => 'H',
        "cores" => 'I',
        "threads" => 'J',
        "contiguous" => 'O',
        "licenses" => 'W',
        "corespec" => 'X',
        "gres" | "tres-per-node" => 'b',
        "oversubscribe" | "shared" => 'h',
        "wckey" => 'w',
        "feature" => 'f',
        "nice" => 'y',
        "schednodes" => 'Y',
        "sct" => 'z',
        "reqnodes" => 'n',
        "workdir" => 'Z',
        "command" => 'o',
        "comment" => 'k',
        "dependency" => 'E',
        "service" => SERVICE,
        _ => return None,
    })
}

struct Args {
    header: bool,
    format: String,
    jobs: Vec<(u64, Option<u32>)>,
    users: Vec<String>,
    states: Vec<JobState>,
    /// `-t` named only states no Sluice job is ever in: nothing matches.
    other_states: bool,
    /// `-t` named `COMPLETING` (`CG`): jobs whose processes are being ended, whatever
    /// their state.
    completing: bool,
    /// `-t` named `SPECIAL_EXIT` (`SE`): jobs requeued in that state.
    special_exit: bool,
    all_states: bool,
    partitions: Vec<String>,
    names: Vec<String>,
    array: bool,
    long: bool,
    json: bool,
    /// `--start`: pending jobs by expected start time.
    start: bool,
    /// `-O`: the fields, instead of `format`.
    long_format: Option<Vec<super::long_format::LongField>>,
    /// `--noconvert`: memory sizes in MiB as they are, never in a larger unit.
    noconvert: bool,
    /// `-s`/`--steps`: the running steps instead of jobs.
    steps: Option<super::squeue_steps::StepListing>,
    /// `-w`: the nodes named (a hostlist, not yet mapped to node names).
    nodelist: Option<String>,
    /// `-A`: these accounts' jobs only (any case).
    accounts: Vec<String>,
    /// `-q`: jobs of these QOS only (any case).
    qos: Vec<String>,
    /// `-R`: jobs in this reservation only.
    reservation: Option<String>,
    /// `-i`: list again every this many seconds, until interrupted.
    iterate: Option<u64>,
    /// `-S` (or `SQUEUE_SORT`): the order, instead of the default.
    sort: Option<String>,
    /// `--array-unique`: an array's pending task changed on its own keeps its line.
    array_unique: bool,
    /// `-L`: jobs holding any of these licenses only.
    licenses: Option<Vec<String>>,
    /// `-P`: a job once per partition it asks for, and `-S p` ordering by the
    /// partitions' `PriorityTier` before the jobs' priority.
    by_partition: bool,
    /// The options as given, for `-v`'s dump.
    given: super::squeue_verbose::Given,
}

impl Args {
    /// Whether `-t` named no state (`all` aside).
    fn none_named(&self) -> bool {
        self.states.is_empty() && !self.other_states && !self.completing && !self.special_exit
    }
}

/// Slurm's job states (long and compact names) that `squeue -t` takes as Slurm does
/// (a script waiting for its jobs to leave the queue asks for
/// `PENDING,RUNNING,CONFIGURING,COMPLETING`) and that select nothing: no Sluice job is
/// ever in them (`SPECIAL_EXIT`, in the list for its name, is read before).
fn is_other_slurm_state(s: &str) -> bool {
    other_slurm_state(s).is_some()
}

/// The long name of one of Slurm's job states no Sluice job is ever in, named by its
/// long or compact name (any case).
pub(crate) fn other_slurm_state(s: &str) -> Option<&'static str> {
    const OTHER: &[(&str, &str)] = &[
        ("BOOT_FAIL", "BF"),
        ("CONFIGURING", "CF"),
        ("DEADLINE", "DL"),
        ("RESV_DEL_HOLD", "RD"),
        ("REQUEUE_FED", "RF"),
        ("REQUEUE_HOLD", "RH"),
        ("RESIZING", "RS"),
        ("REVOKED", "RV"),
        ("SIGNALING", "SI"),
        ("SPECIAL_EXIT", "SE"),
        ("STAGE_OUT", "SO"),
        ("STOPPED", "ST"),
    ];
    let u = s.to_ascii_uppercase();
    OTHER
        .iter()
        .find(|(long, short)| u == *long || u == *short)
        .map(|(long, _)| *long)
}

/// The states squeue lists after one it does not know, as Slurm 22.05 lists them.
const VALID_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,\
NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,\
RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,\
STOPPED";

/// squeue's options: Slurm 22.05's table, in its order (which orders the candidates
/// of an ambiguous prefix), with its value kinds (`-j` and `-s` take a value only
/// when attached) and its letter without a long name (`-U`, another `-A`).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::required("accounts", Some('A')),
    Opt::flag("all", Some('a')),
    Opt::flag("array", Some('r')),
    Opt::flag("array-unique", None),
    Opt::required("Format", Some('O')),
    Opt::required("format", Some('o')),
    Opt::flag("federation", None),
    Opt::flag("help", None),
    Opt::flag("hide", None),
    Opt::required("iterate", Some('i')),
    Opt::optional("jobs", Some('j')),
    Opt::flag("local", None),
    Opt::flag("long", Some('l')),
    Opt::required("licenses", Some('L')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::flag("me", None),
    Opt::required("name", Some('n')),
    Opt::flag("noconvert", None),
    Opt::required("node", None).alias_of("nodelist"),
    Opt::required("nodes", None).alias_of("nodelist"),
    Opt::required("nodelist", Some('w')),
    Opt::flag("noheader", Some('h')),
    Opt::required("partitions", Some('p')),
    Opt::flag("priority", Some('P')),
    Opt::required("qos", Some('q')),
    Opt::required("reservation", Some('R')),
    Opt::flag("sib", None).alias_of("sibling"),
    Opt::flag("sibling", None),
    Opt::required("sort", Some('S')),
    Opt::flag("start", None),
    Opt::optional("steps", Some('s')),
    Opt::required("states", Some('t')),
    Opt::flag("usage", None),
    Opt::required("user", Some('u')),
    Opt::required("users", None).alias_of("user"),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::flag("json", None),
    Opt::flag("yaml", None),
    Opt::required("", Some('U')).alias_of("accounts"),
];

/// squeue's usage, as Slurm 22.05 prints it on standard output after an operand it
/// cannot take.
const USAGE: &str = "\
Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
\t      [-ahjlrsv]
";

/// squeue's options Sluice accepts without effect.
pub(crate) const IGNORED: &[&str] = &["all", "local", "clusters", "hide", "federation", "sibling"];

/// `--help`: the options Sluice acts on, in Slurm's layout.
#[rustfmt::skip]
pub(crate) const HELP: &[Group] = &[
    Group {
        title: "",
        entries: &[
            e("noheader", "", "no header line"),
            e("jobs", "job(s)", "these jobs only (comma separated ids)"),
            e("json", "", "the jobs as Slurm's JSON document"),
            e("long", "", "the long format (time limit, nodes and more)"),
            e("name", "job_name(s)", "jobs with these names only"),
            e("me", "", "my jobs only (as --user=$USER)"),
            e("noconvert", "", "memory in MiB as stored, no unit conversion"),
            e("format", "format", "the columns, as %-codes (%i %j %T %M...)"),
            e("Format", "format", "the columns, as field names (JobID,Name:20...)"),
            e("partitions", "partition(s)", "jobs in these partitions only"),
            e("nodelist", "hostlist", "jobs given any of these nodes only"),
            e("accounts", "account(s)", "these accounts' jobs only"),
            e("qos", "qos(s)", "jobs of these QOS only"),
            e("reservation", "name", "jobs in this reservation only"),
            e("iterate", "seconds", "list again every so many seconds"),
            e("sort", "fields", "the order (i j u U g G P t T p Q M l L S V e D C m\n\
                 N B v H z cluster, and Slurm's c d f h I J n O, which\n\
                 change nothing here; steps: i N P l S M u U; - reverses\n\
                 one)"),
            e("array", "", "one line per array task, pending ones included"),
            e("array-unique", "", "one line per pending array task split from its\n\
                 array (changed by its own JOB_TASK id, or requeued)"),
            e("licenses", "license(s)", "jobs holding these licenses only"),
            e("priority", "", "a job once per partition it asks for; -S p\n\
                 orders by the partitions' PriorityTier first"),
            e("verbose", "", "the options as read, before the listing"),
            e("start", "", "pending jobs with their expected start time"),
            e("steps", "step(s)", "running steps instead of jobs (JOB.STEP, comma\n\
                 separated; -w nodes and -S order apply to them)"),
            e("states", "states", "jobs in these states only (all: every state;\n\
                 default: pending, running and other live states)"),
            e("user", "user_name(s)", "these users' jobs only"),
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

/// Reports each piece of a `-o` format that is not a field, as Slurm does (the piece
/// is printed as written).
fn report_invalid(format: &str) {
    for code in super::format::invalid_codes(format) {
        eprintln!("squeue: error: Invalid job format specification: {code}");
    }
}

fn parse(args: &[String]) -> Args {
    let mut a = Args {
        header: true,
        format: DEFAULT.into(),
        jobs: vec![],
        users: vec![],
        states: vec![],
        other_states: false,
        completing: false,
        special_exit: false,
        all_states: false,
        partitions: vec![],
        names: vec![],
        array: false,
        long: false,
        json: false,
        start: false,
        long_format: None,
        noconvert: false,
        steps: None,
        nodelist: None,
        accounts: vec![],
        qos: vec![],
        reservation: None,
        iterate: None,
        sort: None,
        array_unique: false,
        licenses: None,
        by_partition: false,
        given: Default::default(),
    };
    // As Slurm's squeue, read before the options (`--hide` undoes it).
    a.given.all = std::env::var_os("SQUEUE_ALL").is_some();
    let mut explicit_format = false;
    // `-o` itself (not `-O`), which Slurm's squeue refuses with `-l`.
    let mut format_given = false;
    // An option that sets the columns (`-o`, `-O`, `-l`, `-s`, `--start`): the
    // environment's `SQUEUE_FORMAT` and `SQUEUE_FORMAT2` then do not apply.
    let mut format_env_overridden = false;
    // `-s`: steps are listed (with the list given attached, if any); `-w` and `-S`,
    // which only the step listing takes.
    let mut step_flag = false;
    let mut step_list: Option<String> = None;
    let mut sort: Option<String> = None;
    // `-j` without a value: the job list is the first operand (squeue's own rule).
    let mut job_flag = false;
    let mut operands = Vec::new();
    for item in Getopt::new(OPTIONS, args.iter().cloned(), Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(w)) => {
                operands.push(w);
                continue;
            }
            Err(e) => Refusal::getopt(ME, &e).exit(),
        };
        match f.name() {
            "noheader" => a.header = false,
            "format" => {
                if a.long_format.is_some() {
                    fail(ME, "-o (--format) is incompatible with -O (--Format)", 1);
                }
                a.format = f.value().to_string();
                a.given.format = Some(a.format.clone());
                explicit_format = true;
                format_given = true;
                format_env_overridden = true;
            }
            "Format" => {
                if explicit_format && a.long_format.is_none() {
                    fail(ME, "-O (--Format) is incompatible with -o (--format)", 1);
                }
                a.long_format = Some(super::long_format::parse(f.value()));
                explicit_format = true;
                format_env_overridden = true;
            }
            "jobs" => {
                job_flag = true;
                a.given.job_flag = true;
                if let Some(list) = &f.value {
                    a.jobs = job_list(list);
                    a.given.jobs = Some(list.clone());
                }
            }
            "user" => {
                add_users(&mut a, f.value());
                a.given.users = Some(f.value().to_string());
            }
            "me" => {
                a.users.push(current_user());
                a.given.users = Some(nix::unistd::geteuid().to_string());
            }
            "states" => {
                add_states(&mut a, f.value());
                a.given.states = Some(f.value().to_string());
            }
            "partitions" => {
                a.partitions
                    .extend(f.value().split(',').map(str::to_string));
                a.given.partitions = Some(f.value().to_string());
                a.given.all = true;
            }
            "name" => {
                a.names.extend(f.value().split(',').map(str::to_string));
                a.given.names = Some(f.value().to_string());
            }
            "array" => {
                a.array = true;
                a.given.array = true;
            }
            "array-unique" => a.array_unique = true,
            "licenses" => {
                a.licenses = Some(f.value().split(',').map(str::to_string).collect());
                a.given.licenses = Some(f.value().to_string());
            }
            "priority" => {
                a.by_partition = true;
                a.given.priority = true;
            }
            "verbose" => a.given.verbose += 1,
            // Accepted, no effect beyond `-v`'s dump.
            "all" => a.given.all = true,
            "hide" => a.given.all = false,
            "local" => a.given.local = true,
            "federation" => a.given.federation = true,
            "sibling" => a.given.sibling = true,
            "long" => {
                a.long = true;
                format_env_overridden = true;
                if !explicit_format {
                    a.format = LONG.into();
                }
            }
            "start" => {
                a.start = true;
                a.given.start = true;
                format_env_overridden = true;
                if !explicit_format {
                    a.format = START.into();
                }
                a.states = vec![JobState::Pending];
            }
            "json" => a.json = true,
            "noconvert" => a.noconvert = true,
            "steps" => {
                step_flag = true;
                format_env_overridden = true;
                a.given.step_flag = true;
                if let Some(list) = &f.value {
                    step_list = Some(list.clone());
                    a.given.steps = Some(list.clone());
                }
            }
            "nodelist" => {
                a.nodelist = Some(f.value().to_string());
                a.given.nodes = sluice_conf::hostlist::expand(f.value())
                    .ok()
                    .map(|n| sluice_conf::hostlist::compress(&n));
            }
            // As Slurm's: each of these replaces an earlier one.
            "accounts" => a.accounts = f.value().split(',').map(str::to_string).collect(),
            "qos" => a.qos = f.value().split(',').map(str::to_string).collect(),
            "reservation" => {
                a.reservation = Some(f.value().to_string());
                a.given.reservation = a.reservation.clone();
            }
            "iterate" => {
                // C's atoi: the leading number, 0 if none.
                let v = f.value();
                match super::common::strtol(v).0 {
                    n if n > 0 => {
                        a.iterate = Some(n as u64);
                        a.given.iterate = n as u64;
                    }
                    _ => fail(ME, format!("--iterate={v}\n"), 1),
                }
            }
            "sort" => sort = Some(f.value().to_string()),
            "version" => {
                println!("{VERSION}");
                std::process::exit(0);
            }
            // The options Sluice acts on (Slurm's own synopsis, which names options
            // Sluice refuses, is kept for the refusal of an operand below).
            "usage" => {
                print!("{}", synopsis(ME, HELP, OPTIONS, |_| true, ""));
                std::process::exit(0);
            }
            "help" => {
                print!(
                    "{}",
                    command_help("Usage: squeue [OPTIONS]\n", HELP, OPTIONS, 34, IGNORED)
                );
                std::process::exit(0);
            }
            // Accepted, no effect.
            n if IGNORED.contains(&n) => {}
            _ => Refusal::unsupported(ME, f.opt).exit(),
        }
    }
    from_environment(
        &mut a,
        format_env_overridden,
        &mut explicit_format,
        &mut sort,
    );
    a.given.sort = sort.clone();
    if a.given.start && !step_flag {
        // As Slurm's squeue sets them for `--start`, seen by `-v`.
        a.given.format.get_or_insert_with(|| START.to_string());
        a.given.sort.get_or_insert_with(|| "S".to_string());
        a.given.states.get_or_insert_with(|| "PD".to_string());
    }
    if a.long && format_given {
        eprintln!(
            "{ME}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. \
             Please remove one and retry."
        );
        std::process::exit(1);
    }
    let mut operands = operands.into_iter();
    if job_flag {
        if let Some(list) = operands.next() {
            a.jobs = job_list(&list);
            a.given.jobs = Some(list);
        }
    } else if step_flag {
        if let Some(list) = operands.next() {
            a.given.steps = Some(list.clone());
            step_list = Some(list);
        }
    }
    a.given.job_ids = a.jobs.clone();
    if let Some(w) = operands.next() {
        Refusal::error(ME, format!("Unrecognized option: {w}"))
            .with_stdout(USAGE)
            .exit()
    }
    if super::format::is_all(&a.format) {
        a.format = if step_flag {
            super::squeue_steps::all_fields()
        } else {
            super::format::all_fields(|_| true, "")
        };
    }
    if !step_flag {
        a.sort = sort.clone();
    }
    if step_flag {
        a.steps = Some(step_listing(&a, job_flag, step_list, sort, explicit_format));
        return a;
    }
    if explicit_format && a.long_format.is_none() {
        report_invalid(&a.format);
    }
    for f in a.long_format.iter().flatten() {
        if long_field(&f.name).is_none() {
            eprintln!("{ME}: error: Invalid job format specification: {}", f.name);
        }
    }
    a
}

/// The step listing `-s` asks for, with the job listing's filters that apply to steps
/// (`-j` only with a list; Slurm's words otherwise).
fn step_listing(
    a: &Args,
    job_flag: bool,
    list: Option<String>,
    sort: Option<String>,
    explicit_format: bool,
) -> super::squeue_steps::StepListing {
    use super::squeue_steps as steps;
    if job_flag && a.jobs.is_empty() {
        fail(ME, "Incompatible options --jobs and --steps", 1);
    }
    let named = list.map(|l| steps::parse_list(&l).unwrap_or_else(|e| fail(ME, e, 1)));
    let format = (explicit_format && a.long_format.is_none()).then(|| a.format.clone());
    if let Some(f) = &format {
        steps::report_invalid(f);
    }
    if let Some(fields) = &a.long_format {
        steps::report_invalid_long(fields);
    }
    steps::StepListing {
        named,
        jobs: a.jobs.clone(),
        partitions: a.partitions.clone(),
        users: a.users.clone(),
        nodes: None,
        sort,
        format,
        long_format: a.long_format.clone(),
        header: a.header,
        verbose: a.given.verbose > 0,
    }
}

/// `-u`'s users (names or uids), Slurm's error for someone unknown.
fn add_users(a: &mut Args, list: &str) {
    for u in list.split(',') {
        // A name or a uid, as Slurm takes them; someone unknown is an error.
        match super::common::user_named(u) {
            Some(user) => a.users.push(user.name),
            None => fail("squeue", format!("Invalid user: {u}"), 1),
        }
    }
}

/// `-t`'s states, Slurm's error for one it does not know.
fn add_states(a: &mut Args, list: &str) {
    for s in list.split(',') {
        if s.eq_ignore_ascii_case("all") {
            a.all_states = true;
        } else if s.eq_ignore_ascii_case("COMPLETING") || s.eq_ignore_ascii_case("CG") {
            a.completing = true;
        } else if sluice_proto::listing::is_special_exit(s) {
            a.special_exit = true;
        } else {
            match JobState::parse(s) {
                Some(st) => a.states.push(st),
                None if is_other_slurm_state(s) => a.other_states = true,
                None => {
                    eprintln!("{ME}: error: Invalid job state specified: {s}");
                    // Slurm's list ends with a newline of its own.
                    eprintln!("{ME}: error: Valid job states include: {VALID_STATES}\n");
                    std::process::exit(1)
                }
            }
        }
    }
}

/// What the environment adds, as Slurm's squeue reads it: `SQUEUE_ARRAY` (`-r`),
/// `SQUEUE_SORT` (`-S`), `SQUEUE_FORMAT` or `SQUEUE_FORMAT2` (`-o`, `-O`) unless an
/// option set the columns, and for each filter not given as an option
/// `SQUEUE_ACCOUNT`, `SQUEUE_NAMES`, `SQUEUE_PARTITION`, `SQUEUE_QOS`, `SQUEUE_STATES`
/// and `SQUEUE_USERS`; `SQUEUE_ARRAY_UNIQUE`, `SQUEUE_PRIORITY` and `SQUEUE_LICENSES`
/// (unless `-L` was given), and the flags `-v` shows (`SQUEUE_LOCAL`,
/// `SQUEUE_FEDERATION`, `SQUEUE_SIBLING`; `SQUEUE_ALL` is read before the options).
fn from_environment(
    a: &mut Args,
    format_overridden: bool,
    explicit_format: &mut bool,
    sort: &mut Option<String>,
) {
    let env = |k: &str| std::env::var(k).ok();
    let list = |v: String| v.split(',').map(str::to_string).collect::<Vec<_>>();
    let set = |k: &str| std::env::var_os(k).is_some();
    if set("SQUEUE_ARRAY") {
        a.array = true;
        a.given.array = true;
    }
    if set("SQUEUE_ARRAY_UNIQUE") {
        a.array_unique = true;
    }
    if set("SQUEUE_PRIORITY") {
        a.by_partition = true;
        a.given.priority = true;
    }
    if set("SQUEUE_LOCAL") {
        a.given.local = true;
    }
    if set("SQUEUE_FEDERATION") {
        a.given.federation = true;
    }
    if set("SQUEUE_SIB") || set("SQUEUE_SIBLING") {
        a.given.sibling = true;
    }
    if a.licenses.is_none() {
        if let Some(l) = env("SQUEUE_LICENSES") {
            a.licenses = Some(list(l.clone()));
            a.given.licenses = Some(l);
        }
    }
    if sort.is_none() {
        *sort = env("SQUEUE_SORT");
    }
    if !format_overridden {
        if let Some(f) = env("SQUEUE_FORMAT") {
            a.given.format = Some(f.clone());
            a.format = f;
            *explicit_format = true;
        } else if let Some(f) = env("SQUEUE_FORMAT2") {
            a.long_format = Some(super::long_format::parse(&f));
            *explicit_format = true;
        }
    }
    if a.accounts.is_empty() {
        a.accounts = env("SQUEUE_ACCOUNT").map(list).unwrap_or_default();
    }
    if a.names.is_empty() {
        a.given.names = a.given.names.take().or_else(|| env("SQUEUE_NAMES"));
        a.names = env("SQUEUE_NAMES").map(list).unwrap_or_default();
    }
    if a.partitions.is_empty() {
        if let Some(p) = env("SQUEUE_PARTITION") {
            // As `-p`, it shows hidden partitions too.
            a.given.all = true;
            a.given.partitions = Some(p.clone());
            a.partitions = list(p);
        }
    }
    if a.qos.is_empty() {
        a.qos = env("SQUEUE_QOS").map(list).unwrap_or_default();
    }
    let no_states =
        a.states.is_empty() && !a.all_states && !a.other_states && !a.completing && !a.special_exit;
    if let (true, Some(v)) = (no_states, env("SQUEUE_STATES")) {
        add_states(a, &v);
        a.given.states = Some(v);
    }
    if let (true, Some(v)) = (a.users.is_empty(), env("SQUEUE_USERS")) {
        add_users(a, &v);
        a.given.users = Some(v);
    }
}

/// A `-j` list: each id (`123`, `123_4`, `123_[1-3]`) and the jobs it names.
fn job_list(list: &str) -> Vec<(u64, Option<u32>)> {
    let mut jobs = Vec::new();
    for id in list.split(',').filter(|s| !s.is_empty()) {
        match parse_job_arg(id) {
            Some(v) => jobs.extend(v),
            None => fail(ME, format!("Invalid job id: {id}"), 1),
        }
    }
    jobs
}

/// The nodes `-w` names (a hostlist of node names or their `NodeHostname`s,
/// `localhost` being this host's short name), as Slurm's squeue maps them; Slurm's
/// error and exit status 1 for a name no node has.
fn named_nodes(client: &sluice_proto::client::Client, expr: &str) -> Vec<String> {
    let names = sluice_conf::hostlist::expand(expr)
        .unwrap_or_else(|_| fail(ME, format!("'{expr}' invalid entry for --nodelist"), 1));
    let known: Vec<sluice_proto::types::NodeInfo> = client.get("/v1/nodes").unwrap_or_else(|e| {
        eprintln!("slurm_load_node error: {}", describe(&e));
        std::process::exit(1)
    });
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or_default().to_string())
        .unwrap_or_default();
    names
        .into_iter()
        .map(|name| {
            let wanted = if name.eq_ignore_ascii_case("localhost") {
                host.clone()
            } else {
                name.clone()
            };
            known
                .iter()
                .find(|n| n.name == wanted || n.node_hostname == wanted)
                .map(|n| n.name.clone())
                .unwrap_or_else(|| fail(ME, format!("Invalid node name {name}"), 1))
        })
        .collect()
}

/// The caller's user name.
pub fn current_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default()
}

/// What to ask the controller for: the filters of `a`, applied where the jobs are.
/// With one job id, only the id: whether the controller knows it is decided before
/// the other filters (an unknown id is an error, a known one filtered out is not).
fn query(a: &Args) -> JobQuery {
    let list = |v: &[String]| (!v.is_empty()).then(|| v.join(","));
    let jobs = (!a.jobs.is_empty()).then(|| {
        a.jobs
            .iter()
            .map(|(j, t)| t.map_or(j.to_string(), |t| format!("{j}_{t}")))
            .collect::<Vec<_>>()
            .join(",")
    });
    let brief = !a.json;
    if a.jobs.len() == 1 {
        return JobQuery {
            jobs,
            brief,
            ..Default::default()
        };
    }
    let none_named = a.none_named();
    let states = if a.all_states || (a.json && none_named) {
        None
    } else if none_named {
        // The jobs not finished, whatever flag they show, as Slurm's default.
        Some("PENDING,RUNNING,SUSPENDED,COMPLETING,SPECIAL_EXIT".to_string())
    } else {
        Some(
            a.states
                .iter()
                .map(|s| s.name())
                .chain(a.completing.then_some("COMPLETING"))
                .chain(a.special_exit.then_some("SPECIAL_EXIT"))
                .collect::<Vec<_>>()
                .join(","),
        )
    };
    JobQuery {
        jobs,
        users: list(&a.users),
        states,
        partitions: list(&a.partitions),
        // Names are matched here: squeue's match any case, the controller's exactly.
        names: None,
        brief,
        owner_only: None,
    }
}

/// Runs `squeue`: the listing once, or every `-i` seconds until interrupted (each
/// under the date unless `-h`, as with `-l`).
pub fn main(args: Vec<String>) -> i32 {
    let mut a = parse(&args);
    let client = controller();
    let nodes = a.nodelist.as_deref().map(|w| named_nodes(&client, w));
    if let Some(steps) = &mut a.steps {
        steps.nodes = nodes.clone();
    }
    // As Slurm's, the dump comes first, `--json`'s document after it.
    if a.given.verbose > 0 {
        print!("{}", super::squeue_verbose::dump(&a.given));
    }
    loop {
        if a.header && !a.json && (a.long || a.iterate.is_some() || a.given.verbose > 0) {
            println!("{}", date_line(now()));
        }
        let rc = match &a.steps {
            Some(steps) => super::squeue_steps::run(steps),
            None => list(&a, &client, nodes.as_deref()),
        };
        // As Slurm's: `--json` is one document, before any iteration.
        let Some(secs) = a.iterate.filter(|_| !a.json) else {
            return rc;
        };
        println!();
        std::thread::sleep(std::time::Duration::from_secs(secs));
    }
}

/// Lists the jobs `a` asks for; squeue's exit status.
fn list(a: &Args, client: &sluice_proto::client::Client, nodes: Option<&[String]>) -> i32 {
    let q = query(a);
    // Boxed: sorting and collapsing move pointers, not records.
    let got = if q.brief {
        client
            .get::<Vec<ListedJob>>(&q.path())
            .map(|l| l.into_iter().map(|j| Box::new(j.into_record())).collect())
    } else {
        client
            .get::<Vec<JobRecord>>(&q.path())
            .map(|l| l.into_iter().map(Box::new).collect())
    };
    let mut jobs: Vec<Box<JobRecord>> = match got {
        Ok(j) => j,
        // As Slurm's squeue words any failure to load the jobs.
        Err(e) => {
            eprintln!("slurm_load_jobs error: {}", describe(&e));
            return 1;
        }
    };
    if a.given.verbose > 0 && !a.json {
        print!("{}", super::squeue_verbose::records_line(now(), jobs.len()));
    }
    if !a.jobs.is_empty() {
        let want = |j: &JobRecord| {
            a.jobs.iter().any(|(id, task)| match task {
                // A task cancelled before it started: its array's one record.
                Some(t) => {
                    j.array == Some((*id, *t))
                        || (j.id == *id
                            && j.array.is_none()
                            && j.array_pending
                                .as_ref()
                                .is_some_and(|p| p.0.binary_search(t).is_ok()))
                }
                None => {
                    j.id == *id
                        || j.array.is_some_and(|x| x.0 == *id)
                        || j.het.is_some_and(|h| h.job_id == *id)
                }
            })
        };
        jobs.retain(|j| want(j));
        if jobs.is_empty() && a.jobs.len() == 1 && !a.json {
            // A task the array does not have is nothing to list; an unknown job is an
            // error, as Slurm's squeue loads the job first.
            let (id, task) = a.jobs[0];
            let array_known = task.is_some()
                && client
                    .get::<Vec<ListedJob>>(
                        &JobQuery {
                            jobs: Some(id.to_string()),
                            brief: true,
                            ..Default::default()
                        }
                        .path(),
                    )
                    .is_ok_and(|l| !l.is_empty());
            if !array_known {
                eprintln!("slurm_load_jobs error: Invalid job id specified");
                return 1;
            }
        }
    }
    // The controller applied these already (except with one job id); applied again,
    // they change nothing.
    jobs.retain(|j| a.users.is_empty() || a.users.contains(&j.user));
    // A job waiting in several partitions is in each of them.
    jobs.retain(|j| {
        a.partitions.is_empty()
            || j.partition
                .split(',')
                .any(|p| a.partitions.iter().any(|w| w == p))
    });
    // As Slurm's squeue: names match whatever their case.
    jobs.retain(|j| {
        a.names.is_empty() || a.names.iter().any(|n| n.eq_ignore_ascii_case(&j.desc.name))
    });
    // `-w`: jobs given any of the nodes (a pending job has none).
    if let Some(nodes) = nodes {
        jobs.retain(|j| j.nodes.iter().any(|n| nodes.contains(n)));
    }
    let named = |list: &[String], v: &str| {
        list.is_empty() || list.iter().any(|x| x.eq_ignore_ascii_case(v))
    };
    jobs.retain(|j| named(&a.accounts, &j.account) && named(&a.qos, &j.qos));
    if let Some(r) = &a.reservation {
        jobs.retain(|j| j.desc.reservation.as_ref() == Some(r));
    }
    // `-L`: Sluice's jobs hold no licenses (sbatch's `-L` is ignored with a warning),
    // so a license filter keeps none of them.
    if a.licenses.is_some() {
        jobs.clear();
    }
    if !a.all_states {
        let none_named = a.none_named();
        if a.json && none_named {
            // As Slurm's `--json`: every job the controller holds, finished ones too.
        } else if none_named {
            // As Slurm's squeue: finished jobs only with `-t`, even when named by `-j`
            // (a completing one is not finished yet).
            jobs.retain(|j| !j.state.is_finished() || j.completing());
        } else {
            let named = sluice_proto::listing::StateNames {
                states: &a.states,
                completing: a.completing,
                special_exit: a.special_exit,
            };
            jobs.retain(|j| named.selects(j.state, j.completing(), j.special_exit()));
        }
    }
    if a.by_partition {
        jobs = once_per_partition(jobs, &a.partitions);
    }
    if !a.json {
        jobs = split_cancelled_arrays(jobs, a.array, &a.jobs);
    }
    by_start_time(&mut jobs);
    // squeue's default order (`P,t,-p`): by partition, then by compact state name
    // (`CD` before `PD` before `R`), pending jobs by priority; pending jobs alike in
    // these as `by_start_time` left them, others by id, an array's tasks together by
    // index, whatever ids they hold. `-S` keys replace it, as `--start`'s `S` does
    // (by expected start, those without one (N/A) last).
    let sort = a.sort.clone().or_else(|| a.start.then(|| "S".to_string()));
    if sort.is_none() {
        jobs.sort_by(|x, y| {
            let key = |j: &JobRecord| {
                (
                    j.shown_state_short(),
                    std::cmp::Reverse(if j.state == JobState::Pending {
                        j.priority
                    } else {
                        0
                    }),
                )
            };
            x.partition
                .cmp(&y.partition)
                .then_with(|| key(x).cmp(&key(y)))
                .then_with(|| match (x.state, y.state) {
                    (JobState::Pending, JobState::Pending) => std::cmp::Ordering::Equal,
                    _ => x.list_key().cmp(&y.list_key()),
                })
        });
    }
    // A key Slurm's squeue does not know ends it once its header is out (it sorts
    // after printing that).
    let mut bad_key = None;
    let tiers = match &sort {
        Some(keys) if a.by_partition && keys.contains(['p', 'Q']) => partition_tiers(client),
        _ => HashMap::new(),
    };
    if let Some(keys) = &sort {
        if let Err(k) = super::squeue_sort::sort_jobs(&mut jobs, keys, now(), &tiers) {
            bad_key = Some(k);
        }
    }
    if !a.array {
        let mut corrected = false;
        jobs = collapse_arrays(jobs, a.array_unique, &mut corrected);
        // An array's line that took its values from a task changed alone (which sorted
        // first) now shows the array's: ordered again by them, as Slurm sorts the
        // lines after folding.
        if let (true, Some(keys)) = (corrected, &sort) {
            let _ = super::squeue_sort::sort_jobs(&mut jobs, keys, now(), &tiers);
        }
        // One unstarted task asked for by name (`-j 123_4`) prints as itself, as
        // Slurm's squeue lists it, its throttle left out.
        for j in jobs.iter_mut() {
            if let Some((rest, _)) = &j.array_pending {
                if let ([t], None, JobState::Pending) = (rest.as_slice(), j.array, j.state) {
                    if a.jobs.contains(&(j.id, Some(*t))) {
                        j.array = Some((j.id, *t));
                        j.array_pending = None;
                    }
                }
            }
        }
    }
    if a.json {
        let cluster = super::common::cluster_name(client);
        let jobs: Vec<JobRecord> = jobs.into_iter().map(|j| *j).collect();
        // The nodes' layouts map the processors jobs hold to sockets and cores; asked
        // for only when a job holds some.
        let layouts: super::squeue_json::Layouts =
            if jobs.iter().any(|j| !j.cpu_ids_per_node.is_empty()) {
                client
                    .get::<Vec<sluice_proto::types::NodeInfo>>("/v1/nodes")
                    .unwrap_or_default()
                    .into_iter()
                    .map(|n| {
                        // Processors are threads, or cores where CPUs= counts cores (as
                        // Slurm's select plugin counts them then).
                        let cores = n.sockets.saturating_mul(n.cores_per_socket);
                        let per_core = if cores >= n.cpus {
                            1
                        } else {
                            n.threads_per_core
                        };
                        (n.name, (n.cores_per_socket, per_core))
                    })
                    .collect()
            } else {
                Default::default()
            };
        print!(
            "{}",
            super::squeue_json::document(&jobs, &cluster, &layouts)
        );
        return 0;
    }
    let t = now();
    // One pass, into one buffer: the format parsed once, each value written in place.
    let layout = match &a.long_format {
        Some(fields) => Layout::long(fields, long_field),
        None => Layout::new(&a.format),
    };
    let mut out = String::with_capacity(64 + jobs.len() * (a.format.len() + 48));
    let mut scratch = String::new();
    if a.header {
        let none = placeholder();
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |c, buf| match field(c, &none, t) {
                Some(f) => {
                    buf.push_str(f.header);
                    true
                }
                None => false,
            },
            |c, _| Fit::whole_if(matches!(c, 'N' | 'R' | 'Y')),
        );
    }
    if let Some(k) = bad_key {
        print!("{out}");
        fail(ME, format!("Invalid sort specification: {k}"), 1);
    }
    for j in &jobs {
        layout.line_fitted(
            &mut out,
            &mut scratch,
            |c, buf| write_field(c, j, t, a.noconvert, buf),
            fit,
        );
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    0
}

/// `-P`: a job waiting in several partitions (`sbatch -p a,b`) once for each of them
/// that `-p` (when given) names, showing that one.
#[allow(clippy::vec_box)] // boxed as `collapse_arrays`'s records, for the same reason
fn once_per_partition(jobs: Vec<Box<JobRecord>>, wanted: &[String]) -> Vec<Box<JobRecord>> {
    let mut out = Vec::with_capacity(jobs.len());
    for j in jobs {
        if !j.partition.contains(',') {
            out.push(j);
            continue;
        }
        let names: Vec<String> = j
            .partition
            .split(',')
            .filter(|p| wanted.is_empty() || wanted.iter().any(|w| w == p))
            .map(str::to_string)
            .collect();
        for name in names {
            let mut copy = j.clone();
            copy.partition = name;
            out.push(copy);
        }
    }
    out
}

/// Each partition's `PriorityTier`, for `-P`'s priority order (none when the
/// partitions cannot be loaded: the jobs' priorities alone then).
fn partition_tiers(client: &sluice_proto::client::Client) -> HashMap<String, u16> {
    client
        .get::<Vec<sluice_proto::types::PartitionInfo>>("/v1/partitions")
        .map(|parts| {
            parts
                .into_iter()
                .map(|p| (p.name, p.priority_tier))
                .collect()
        })
        .unwrap_or_default()
}

/// How a field is fitted to its width: as Slurm's squeue, times (`%L`, `%l`, `%M`,
/// not `UNLIMITED` or `NOT_SET`) and node lists (`%N`, `%Y`, and `%R` when it shows
/// nodes rather than a reason) are printed whole when right-justified.
fn fit(code: char, value: &str) -> Fit {
    let whole = match code {
        'L' | 'l' | 'M' => !matches!(value, "UNLIMITED" | "NOT_SET"),
        'N' | 'Y' => true,
        'R' => !value.starts_with('('),
        _ => false,
    };
    Fit::whole_if(whole)
}

/// Whether `%R` shows `j`'s reason, as squeue's `_print_job_reason_list`: a pending,
/// failed, timed-out or out-of-memory job's (`(None)` included); any other shows its
/// nodes, as does a requeued job whose last run is still ending (COMPLETING).
fn shows_reason(j: &JobRecord) -> bool {
    matches!(
        j.state,
        JobState::Pending | JobState::Failed | JobState::Timeout | JobState::OutOfMemory
    ) && !(j.state == JobState::Pending && j.completing())
}

/// Writes the value of `%code` for `j` into `out`; `false` for a code squeue does not
/// know. The columns of the default formats are written in place; others as
/// [`field`] makes them.
fn write_field(code: char, j: &JobRecord, t: i64, noconvert: bool, out: &mut String) -> bool {
    use std::fmt::Write;
    match code {
        'm' if noconvert => out.push_str(&min_memory_shown(j, Convert::No)),
        'i' => match (&j.array, &j.array_pending) {
            (Some((array, task)), _) => {
                let _ = write!(out, "{array}_{task}");
            }
            (None, None) if j.het.is_none() => {
                let _ = write!(out, "{}", j.id);
            }
            _ => out.push_str(&j.display_id()),
        },
        // A task of an array that has never started is still part of the array's
        // own record in Slurm: its job id is the array's.
        'A' => match j.array {
            Some((array, _)) if j.state == JobState::Pending && j.start_time.is_none() => {
                let _ = write!(out, "{array}");
            }
            _ => {
                let _ = write!(out, "{}", j.id);
            }
        },
        'P' => out.push_str(&j.partition),
        'j' => out.push_str(&j.desc.name),
        'u' => out.push_str(&j.user),
        't' => out.push_str(j.shown_state_short()),
        'T' => out.push_str(j.shown_state()),
        'D' => {
            let n = if j.nodes.is_empty() {
                j.min_nodes.max(1)
            } else {
                j.nodes.len() as u32
            };
            let _ = write!(out, "{n}");
        }
        'R' if shows_reason(j) => {
            let _ = write!(out, "({})", j.reason);
        }
        'r' => out.push_str(&j.reason),
        'Q' => {
            let _ = write!(out, "{}", j.priority);
        }
        'M' if j.start_time.is_none() => out.push_str("0:00"),
        _ => match field(code, j, t) {
            Some(f) => out.push_str(&f.value),
            None => return false,
        },
    }
    true
}

/// A record to name headers with.
fn placeholder() -> JobRecord {
    JobRecord::default()
}

/// Adds a merged record's reason to its array line's, as squeue's
/// `_merge_job_reason`: `JobHeldUser,Resources`, each reason once.
fn merge_reason(line: &mut String, task: &str) {
    if line.as_str() != task && !line.contains(task) {
        line.push(',');
        line.push_str(task);
    }
}

/// Pending tasks of an array that have not started show as one line,
/// `123_[4-9%2]`, as Slurm shows them (its own record's, whose tasks leave it as they
/// start). As Slurm's squeue, a task whose name or partition is no longer the array's
/// keeps its own line, and with `unique` (`--array-unique`) so does one changed on its
/// own (which Slurm splits from the array's record).
// Boxed on purpose: a record is about a kilobyte, and moving 100,000 of them (a sort,
// this collapse) costs more than the listing itself.
#[allow(clippy::vec_box)]
fn collapse_arrays(
    jobs: Vec<Box<JobRecord>>,
    unique: bool,
    corrected: &mut bool,
) -> Vec<Box<JobRecord>> {
    let mut out: Vec<Box<JobRecord>> = Vec::new();
    // The arrays whose line was begun by a task changed alone.
    let mut from_split: std::collections::HashSet<u64> = std::collections::HashSet::new();
    // Each array's name and partition: those of its pending tasks never changed on
    // their own (Slurm's array record's).
    let mut own: HashMap<u64, (String, String)> = HashMap::new();
    // How many pending tasks each array's record holds (never changed on their own),
    // and whether it has more than one task: records listed, its unstarted rest, or
    // the indices it was submitted with (listed when one is left).
    let mut in_record: HashMap<u64, (usize, usize)> = HashMap::new();
    for j in jobs.iter() {
        if let Some((array, _)) = j.array {
            let n = in_record.entry(array).or_insert((0, 0));
            if j.state == JobState::Pending && !j.split {
                own.entry(array)
                    .or_insert_with(|| (j.desc.name.clone(), j.partition.clone()));
                n.0 += 1;
            }
            let rest = j.array_pending.as_ref().map_or(0, |p| p.0.len());
            let submitted = j.desc.array.as_ref().map_or(0, |a| a.0.len());
            n.1 = (n.1 + 1).max(rest).max(submitted);
        }
    }
    // Slurm's squeue folds tasks into their array's line only while the array's record
    // holds several (or was submitted with one): once a single task is left in it,
    // that record is the task itself, and every task prints on its own line.
    let no_record_line = |array: u64| {
        in_record
            .get(&array)
            .is_some_and(|&(n, of)| n < 2 && of > 1)
    };
    // Where the first pending line with a remainder of each id is in `out`.
    let mut heads: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    // The arrays whose own record holds one task after others have left it.
    let mut left_alone: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let push = |out: &mut Vec<Box<JobRecord>>,
                heads: &mut std::collections::HashMap<u64, usize>,
                j: Box<JobRecord>| {
        if j.state == JobState::Pending && j.array_pending.is_some() {
            heads.entry(j.id).or_insert(out.len());
        }
        out.push(j);
    };
    for j in jobs {
        if j.last_task_left().is_some() {
            left_alone.insert(j.array.map_or(j.id, |a| a.0));
        }
        let apart = |array: u64| {
            (unique && j.split)
                || no_record_line(array)
                || own
                    .get(&array)
                    .is_some_and(|(name, part)| *name != j.desc.name || *part != j.partition)
        };
        // A task on a line of its own: never the array's line, whatever it holds.
        if j.state == JobState::Pending && j.array.is_some_and(|(a, _)| apart(a)) {
            out.push(j);
            continue;
        }
        if j.state == JobState::Pending {
            if let Some((array, task)) = j.array {
                if let Some(&at) = heads.get(&array) {
                    // The line shows the array's own values (Slurm merges into its
                    // array's record): an unchanged task's, not one changed alone.
                    if !j.split && from_split.remove(&array) {
                        let rest = out[at].array_pending.take();
                        let split_reason = std::mem::take(&mut out[at].reason);
                        let mut head = j.clone();
                        head.id = array;
                        head.array = None;
                        head.array_pending = rest;
                        merge_reason(&mut head.reason, &split_reason);
                        out[at] = head;
                        *corrected = true;
                    } else if j.split {
                        // A record of its own in Slurm, merged into the array's line
                        // with its reason.
                        merge_reason(&mut out[at].reason, &j.reason);
                    }
                    if let Some((rest, _)) = out[at].array_pending.as_mut() {
                        // Tasks mostly come in order: appended, no search.
                        if rest.last().is_some_and(|&l| l < task) {
                            rest.push(task);
                        } else if !rest.contains(&task) {
                            rest.push(task);
                            rest.sort_unstable();
                        }
                    }
                    continue;
                }
                // The throttle as submitted: only the array's first task carries the
                // remainder, and it may already run.
                let throttle = j
                    .array_pending
                    .as_ref()
                    .and_then(|p| p.1)
                    .or_else(|| j.desc.array.as_ref().and_then(|a| a.1));
                if j.split {
                    from_split.insert(array);
                }
                let mut head = j.clone();
                head.id = array;
                head.array = None;
                head.array_pending = Some((vec![task], throttle));
                push(&mut out, &mut heads, head);
                continue;
            }
        }
        push(&mut out, &mut heads, j);
    }
    // The last task left in an array's record after others have left it prints as
    // itself, as Slurm's record becomes that task then (`A_5`, throttle and all); an
    // array of one task from the start is still the array (`A_[7]`).
    for o in &mut out {
        if let Some((rest, _)) = &o.array_pending {
            if rest.len() == 1
                && o.array.is_none()
                && o.state == JobState::Pending
                && left_alone.contains(&o.id)
            {
                let t = rest[0];
                o.array = Some((o.id, t));
                o.array_pending = None;
            }
        }
    }
    out
}

/// The record of an array's tasks cancelled before they started (`A_[1-6]`), as
/// Slurm's squeue shows its meta record: with `-r` (`every`), a line per task (those
/// `named` by their own ids, `-j A_4`, unless the array is named whole); otherwise
/// narrowed to the tasks named (`A_[3,5]`, one task as itself: `A_4`).
#[allow(clippy::vec_box)]
fn split_cancelled_arrays(
    jobs: Vec<Box<JobRecord>>,
    every: bool,
    named: &[(u64, Option<u32>)],
) -> Vec<Box<JobRecord>> {
    let folded =
        |j: &JobRecord| j.array.is_none() && j.array_pending.is_some() && j.state.is_finished();
    if !jobs.iter().any(|j| folded(j)) {
        return jobs;
    }
    // The ids named whole, and the tasks named of each.
    let mut whole = std::collections::HashSet::new();
    let mut tasks_named: HashMap<u64, std::collections::HashSet<u32>> = HashMap::new();
    for &(id, task) in named {
        match task {
            Some(t) => {
                tasks_named.entry(id).or_default().insert(t);
            }
            None => {
                whole.insert(id);
            }
        }
    }
    let mut out = Vec::with_capacity(jobs.len());
    for mut j in jobs {
        if !folded(&j) {
            out.push(j);
            continue;
        }
        let Some((mut tasks, throttle)) = j.array_pending.take() else {
            continue;
        };
        if !named.is_empty() && !whole.contains(&j.id) {
            let wanted = tasks_named.get(&j.id);
            tasks.retain(|t| wanted.is_some_and(|w| w.contains(t)));
        }
        match tasks.as_slice() {
            [] => {}
            [t] => {
                j.array = Some((j.id, *t));
                out.push(j);
            }
            _ if every => {
                for &t in &tasks {
                    let mut task = j.clone();
                    task.array = Some((j.id, t));
                    out.push(task);
                }
            }
            _ => {
                j.array_pending = Some((tasks, throttle));
                out.push(j);
            }
        }
    }
    out
}

/// A job's `OverSubscribe` as Slurm prints it: `NO` with `--exclusive`, `YES` with
/// `--oversubscribe`, else `OK`.
pub(crate) fn over_subscribe(j: &JobRecord) -> &'static str {
    if j.desc.exclusive {
        "NO"
    } else if j.desc.oversubscribe {
        "YES"
    } else {
        "OK"
    }
}

/// The job's memory request as `scontrol show job` and `squeue -o %m` show it: whether
/// it is per CPU (`MinMemoryCPU`) or per node (`MinMemoryNode`), and the size (`500M`,
/// `1G`; `0` for none). The partition's default counts as asked (`DefMemPerCPU=500`
/// gives `MinMemoryCPU=500M`, as in Slurm).
pub fn min_memory(j: &JobRecord) -> (bool, String) {
    let size = |m: u64| {
        if m == 0 {
            "0".to_string()
        } else {
            mebibytes(m)
        }
    };
    match j.memory_request() {
        Some(MemoryRequest::PerCpu(m)) => (true, size(m)),
        Some(MemoryRequest::PerNode(m)) if m > 0 || j.mem_per_node == 0 => (false, size(m)),
        _ => (false, size(j.mem_per_node)),
    }
}

/// The job's memory request as `squeue -o %m` shows it: in the largest unit that
/// holds it without losing precision (`1G`, `1.50G`, but `2000M`), as squeue
/// converts sizes; `--noconvert`: in MiB (`1024M`).
fn min_memory_shown(j: &JobRecord, how: Convert) -> String {
    units::convert(memory_asked(j) as f64, units::MEGA, how)
}

/// The memory a job asks for in MiB, per CPU or per node, as `%m` shows it (and `-S m`
/// orders by it).
pub(super) fn memory_asked(j: &JobRecord) -> u64 {
    match j.memory_request() {
        Some(MemoryRequest::PerCpu(m)) => m,
        Some(MemoryRequest::PerNode(m)) if m > 0 || j.mem_per_node == 0 => m,
        _ => j.mem_per_node,
    }
}

/// MiB as Slurm shows a memory size: `100M`, `2G`, `3.50G`.
pub fn mebibytes(m: u64) -> String {
    if m < 1024 {
        format!("{m}M")
    } else if m.is_multiple_of(1024) {
        format!("{}G", m / 1024)
    } else {
        format!("{:.2}G", m as f64 / 1024.0)
    }
}

/// The order Slurm's squeue puts the controller's list (by id) in before any sort key:
/// by start time, latest first (an expected start as it is: this pass runs before the
/// one that counts a past expected start as now), and the jobs it has no start time
/// for (held, or not planned yet) last, in reverse (its comparison sends each such job
/// after the other, which a merge sort turns into reverse order). An array's unstarted
/// tasks are one record in Slurm's controller, with its first task's start, listed in
/// index order: they stay so.
#[allow(clippy::vec_box)] // boxed as `collapse_arrays`'s records
fn by_start_time(jobs: &mut Vec<Box<JobRecord>>) {
    jobs.sort_by_key(|j| j.list_key());
    let unstarted_task =
        |j: &JobRecord| j.state == JobState::Pending && !j.split && j.array.is_some();
    // Each array's first unstarted task's start (the list is in index order).
    let mut array_start: HashMap<u64, Option<i64>> = HashMap::new();
    for j in jobs.iter().filter(|j| unstarted_task(j)) {
        array_start.entry(j.list_key().0).or_insert(j.planned_start);
    }
    let start = |j: &JobRecord| match j.state {
        JobState::Pending if unstarted_task(j) => array_start[&j.list_key().0],
        JobState::Pending => j.planned_start,
        _ => j.start_time,
    };
    let (mut timed, mut untimed): (Vec<_>, Vec<_>) = std::mem::take(jobs)
        .into_iter()
        .partition(|j| start(j).is_some());
    timed.sort_by_key(|j| std::cmp::Reverse(start(j)));
    untimed.sort_by_key(|j| {
        let (id, task) = j.list_key();
        (std::cmp::Reverse(id), task)
    });
    timed.append(&mut untimed);
    *jobs = timed;
}

#[cfg(test)]
mod memory_tests {
    use super::mebibytes;

    #[test]
    fn the_memory_request_shows_per_cpu_or_per_node_defaults_included() {
        use super::min_memory;
        use sluice_proto::types::{JobRecord, MemoryRequest};
        // Slurm 22.05 with DefMemPerCPU=500: `squeue -o %m` prints 500M for a job that
        // asked nothing, 1G for `--mem-per-cpu=1024`, 600M for `--mem=600`.
        let mut j = JobRecord {
            mem_default: Some(MemoryRequest::PerCpu(500)),
            ..Default::default()
        };
        assert_eq!(min_memory(&j), (true, "500M".to_string()));
        j.desc.memory = Some(MemoryRequest::PerCpu(1024));
        assert_eq!(min_memory(&j), (true, "1G".to_string()));
        j.desc.memory = Some(MemoryRequest::PerNode(600));
        assert_eq!(min_memory(&j), (false, "600M".to_string()));
        j.desc.memory = Some(MemoryRequest::PerNode(0));
        assert_eq!(min_memory(&j), (false, "0".to_string()));
        // No request and no default: what it holds per node.
        j.desc.memory = None;
        j.mem_default = None;
        j.mem_per_node = 1000;
        assert_eq!(min_memory(&j), (false, "1000M".to_string()));
    }

    #[test]
    fn the_memory_column_converts_exactly_or_not_at_all() {
        use super::{min_memory_shown, Convert, JobRecord, MemoryRequest};
        // Real squeue 22.05 (compat 130): `--mem=1G` is `1G`, `--noconvert` `1024M`;
        // 2000 MiB stays `2000M`.
        let mut j = JobRecord::default();
        j.desc.memory = Some(MemoryRequest::PerNode(1024));
        j.mem_per_node = 1024;
        assert_eq!(min_memory_shown(&j, Convert::Exact), "1G");
        assert_eq!(min_memory_shown(&j, Convert::No), "1024M");
        j.desc.memory = Some(MemoryRequest::PerNode(2000));
        j.mem_per_node = 2000;
        assert_eq!(min_memory_shown(&j, Convert::Exact), "2000M");
    }

    #[test]
    fn memory_sizes_print_in_slurms_units() {
        assert_eq!(mebibytes(100), "100M");
        assert_eq!(mebibytes(1000), "1000M");
        assert_eq!(mebibytes(2048), "2G");
        assert_eq!(mebibytes(3584), "3.50G");
    }
}

#[cfg(test)]
mod reason_tests {
    use super::field;
    use sluice_proto::types::{JobRecord, JobState};

    #[test]
    fn nodelist_reason_shows_why_a_failed_or_timed_out_job_ended() {
        // squeue's `_print_job_reason_list`: pending, failed, timed-out and
        // out-of-memory jobs show their reason (even `None`), any other its nodes.
        let shown = |state, reason: &str| {
            let j = JobRecord {
                state,
                reason: reason.into(),
                nodes: vec!["n1".into(), "n2".into()],
                ..Default::default()
            };
            field('R', &j, 0).map(|f| f.value)
        };
        let cases = [
            (JobState::Pending, "Priority", "(Priority)"),
            (JobState::Failed, "NonZeroExitCode", "(NonZeroExitCode)"),
            (JobState::Failed, "JobLaunchFailure", "(JobLaunchFailure)"),
            (JobState::Timeout, "TimeLimit", "(TimeLimit)"),
            (JobState::OutOfMemory, "OutOfMemory", "(OutOfMemory)"),
            (JobState::Failed, "None", "(None)"),
            (JobState::Completed, "None", "n[1-2]"),
            (JobState::Cancelled, "None", "n[1-2]"),
            (JobState::NodeFail, "NodeDown", "n[1-2]"),
            (JobState::Running, "None", "n[1-2]"),
        ];
        for (state, reason, want) in cases {
            assert_eq!(shown(state, reason).as_deref(), Some(want), "{state:?}");
        }
    }
}

#[cfg(test)]
mod exec_host_tests {
    use super::field;
    use sluice_proto::types::{JobRecord, JobState};

    #[test]
    fn the_exec_host_is_the_batch_scripts_node_or_the_allocations_submit_host() {
        // As Slurm 22.05 prints `squeue -h -o '%T %B'`: `PENDING n/a` before a batch job
        // has nodes, `RUNNING n02` once its script runs on n02 (and so after it ended);
        // an salloc's allocation names the host salloc ran on.
        let mut j = JobRecord {
            state: JobState::Pending,
            ..Default::default()
        };
        j.desc.submit_host = "login1".into();
        let shown = |j: &JobRecord| field('B', j, 0).map(|f| (f.header, f.value));
        assert_eq!(shown(&j), Some(("EXEC_HOST", "n/a".to_string())));
        j.state = JobState::Running;
        j.nodes = vec!["n02".into(), "n03".into()];
        assert_eq!(shown(&j), Some(("EXEC_HOST", "n02".to_string())));
        j.desc.interactive = true;
        assert_eq!(shown(&j), Some(("EXEC_HOST", "login1".to_string())));
        j.desc.submit_host.clear();
        assert_eq!(shown(&j), Some(("EXEC_HOST", "n/a".to_string())));
    }
}

#[cfg(test)]
mod array_line_tests {
    use super::{collapse_arrays, split_cancelled_arrays};
    use sluice_proto::types::{JobRecord, JobState};

    /// Task `index` of array `array`, under record `id`; the array's own record (the
    /// last task's) carries its unstarted rest and the indices it was submitted with.
    fn task(
        array: u64,
        id: u64,
        index: u32,
        state: JobState,
        own: Option<(&[u32], &[u32], Option<u32>)>,
    ) -> Box<JobRecord> {
        let mut r = JobRecord {
            id,
            array: Some((array, index)),
            state,
            ..Default::default()
        };
        if let Some((rest, submitted, throttle)) = own {
            r.array_pending = Some((rest.to_vec(), throttle));
            r.desc.array = Some((submitted.to_vec(), throttle));
        }
        Box::new(r)
    }

    #[allow(clippy::vec_box)]
    fn lines(jobs: Vec<Box<JobRecord>>) -> Vec<String> {
        collapse_arrays(jobs, false, &mut false)
            .iter()
            .map(|j| j.display_id())
            .collect()
    }

    #[test]
    fn the_last_task_left_in_an_arrays_record_is_itself_and_an_array_of_one_is_the_array() {
        // `sbatch -a 7`: the array of one task is still the array, throttled or not.
        let one = task(10, 10, 7, JobState::Pending, Some((&[7], &[7], None)));
        assert_eq!(lines(vec![one]), ["10_[7]"]);
        let one = task(10, 10, 7, JobState::Pending, Some((&[7], &[7], Some(1))));
        assert_eq!(lines(vec![one]), ["10_[7%1]"]);
        // `sbatch -a 1-2%1`: task 1 runs, so task 2 is all the array's record holds.
        let jobs = vec![
            task(20, 21, 1, JobState::Running, None),
            task(20, 20, 2, JobState::Pending, Some((&[2], &[1, 2], Some(1)))),
        ];
        assert_eq!(lines(jobs), ["20_1", "20_2"]);
        // `sbatch -a 1-3`: task 1 runs, two are left.
        let jobs = vec![
            task(30, 31, 1, JobState::Running, None),
            task(30, 32, 2, JobState::Pending, None),
            task(
                30,
                30,
                3,
                JobState::Pending,
                Some((&[2, 3], &[1, 2, 3], None)),
            ),
        ];
        assert_eq!(lines(jobs), ["30_1", "30_[2-3]"]);
    }

    #[test]
    fn once_one_task_is_left_in_an_arrays_record_every_task_has_its_own_line() {
        // `sbatch -a 1-4`, all pending; tasks 4, then 2 and 3 changed on their own.
        let jobs = |apart: &[u32]| {
            let mut head = task(
                50,
                50,
                4,
                JobState::Pending,
                Some((&[1, 2, 3, 4], &[], None)),
            );
            head.desc.array = None;
            let mut jobs = vec![
                task(50, 51, 1, JobState::Pending, None),
                task(50, 52, 2, JobState::Pending, None),
                task(50, 53, 3, JobState::Pending, None),
                head,
            ];
            for j in &mut jobs {
                j.split = apart.contains(&j.array.unwrap().1);
            }
            jobs
        };
        // Two left in the record (1 and 3): one line, as Slurm folds the others in.
        assert_eq!(lines(jobs(&[2, 4])), ["50_[1-4]"]);
        // One left (1): each task is itself.
        assert_eq!(lines(jobs(&[2, 3, 4])), ["50_1", "50_2", "50_3", "50_4"]);
    }

    #[test]
    fn an_array_cancelled_before_its_tasks_started_is_split_for_r_and_for_tasks_named() {
        // `sbatch -a 1-4`, task 1 ran; cancelled whole: task 1's record, and one record
        // for tasks 2-4 (the array's own, no task of its own), as Slurm's meta record.
        let jobs = || {
            let mut rest = task(
                40,
                40,
                4,
                JobState::Cancelled,
                Some((&[2, 3, 4], &[1, 2, 3, 4], None)),
            );
            rest.array = None;
            vec![task(40, 41, 1, JobState::Cancelled, None), rest]
        };
        let ids =
            |jobs: Vec<Box<JobRecord>>| jobs.iter().map(|j| j.display_id()).collect::<Vec<_>>();
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), false, &[])),
            ["40_1", "40_[2-4]"]
        );
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), true, &[])),
            ["40_1", "40_2", "40_3", "40_4"]
        );
        // `-j 40_3`, with or without -r: that task alone; `-j 40`: the array's lines.
        let named = [(40, Some(3))];
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), false, &named)),
            ["40_1", "40_3"]
        );
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), true, &named)),
            ["40_1", "40_3"]
        );
        // `-j 40_2,40_4`: one line for both, as Slurm narrows its record; `-r`: two.
        let named = [(40, Some(2)), (40, Some(4))];
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), false, &named)),
            ["40_1", "40_[2,4]"]
        );
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), true, &named)),
            ["40_1", "40_2", "40_4"]
        );
        let whole = [(40, None)];
        assert_eq!(
            ids(split_cancelled_arrays(jobs(), false, &whole)),
            ["40_1", "40_[2-4]"]
        );
    }

    #[test]
    fn a_task_changed_alone_keeps_its_line_with_array_unique_and_a_renamed_one_always() {
        // `sbatch -H -a 1-4`: the array's own record (task 4) holds the remainder;
        // task 2 was changed on its own (`scontrol update JobId=30_2 ...`).
        let jobs = |renamed: bool| {
            let mut changed = task(30, 32, 2, JobState::Pending, None);
            changed.split = true;
            if renamed {
                changed.desc.name = "other".into();
            }
            vec![
                task(30, 31, 1, JobState::Pending, None),
                changed,
                task(30, 33, 3, JobState::Pending, None),
                task(
                    30,
                    30,
                    4,
                    JobState::Pending,
                    Some((&[1, 2, 3, 4], &[1, 2, 3, 4], None)),
                ),
            ]
        };
        let shown = |jobs, unique| -> Vec<String> {
            collapse_arrays(jobs, unique, &mut false)
                .iter()
                .map(|j| j.display_id())
                .collect()
        };
        assert_eq!(shown(jobs(false), false), ["30_[1-4]"]);
        assert_eq!(shown(jobs(false), true), ["30_[1,3-4]", "30_2"]);
        assert_eq!(shown(jobs(true), false), ["30_[1,3-4]", "30_2"]);
        // The array's own record (task 4) renamed on its own: it alone has a line of
        // its own; the others keep theirs folded.
        let mut own = jobs(false);
        own[1].split = false;
        own[3].split = true;
        own[3].desc.name = "renamed".into();
        assert_eq!(shown(own, false), ["30_[1-3]", "30_4"]);
        // Task 2's own limit sorted it first (`-S l`): the folded line still shows the
        // array's limit, and says it was corrected (to be ordered again).
        let mut limited = jobs(false);
        limited[1].time_limit = Some(300);
        limited.swap(0, 1);
        let mut corrected = false;
        let lines = collapse_arrays(limited, false, &mut corrected);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].time_limit, corrected), (None, true));
        assert_eq!(lines[0].display_id(), "30_[1-4]");
    }
}

#[cfg(test)]
mod start_order_tests {
    use super::by_start_time;
    use sluice_proto::types::{JobRecord, JobState};

    #[test]
    fn jobs_are_ordered_by_start_then_those_without_one_latest_first() {
        let job = |id, state, start: Option<i64>, planned: Option<i64>| {
            Box::new(JobRecord {
                id,
                state,
                start_time: start,
                planned_start: planned,
                ..Default::default()
            })
        };
        let task = |index, planned| {
            let mut t = job(60 + index as u64, JobState::Pending, None, Some(planned));
            t.array = Some((6, index));
            t
        };
        let mut jobs = vec![
            job(5, JobState::Pending, None, None),
            task(1, 400),
            job(1, JobState::Running, Some(100), None),
            job(3, JobState::Pending, None, Some(150)),
            job(4, JobState::Pending, None, None),
            task(0, 300),
            job(2, JobState::Running, Some(200), None),
        ];
        by_start_time(&mut jobs);
        let order: Vec<u64> = jobs.iter().map(|j| j.id).collect();
        // The array's tasks go together, at its first task's start, in index order;
        // a past expected start counts as it is; held and unplanned jobs last, reversed.
        assert_eq!(order, [60, 61, 2, 3, 1, 5, 4]);
    }
}
