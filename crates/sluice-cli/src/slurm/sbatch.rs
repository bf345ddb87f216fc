//! `sbatch`: submit a batch script.

use std::io::Read;
use std::path::Path;

use sluice_conf::input_env;
use sluice_conf::options::{parse_args, script_directives, Command, Export, JobOptions, Memory};
use sluice_proto::time::parse_timestamp;
use sluice_proto::types::{GresRequest, JobDescription, JobRecord, MemoryRequest, SubmitReply};

use super::common::{
    controller, cwd, describe, fail, hostname, now, program, Refusal, USAGE_EXIT, VERSION,
};

/// This process's nice value (`getpriority(PRIO_PROCESS, 0)`), what Slurm's commands
/// pass on in `SLURM_PRIO_PROCESS`.
pub(crate) fn prio_process() -> i32 {
    // SAFETY: getpriority only reads this process's attribute. -1 is a valid nice value
    // as well as the error return; an error (none is possible for the caller itself)
    // would read as -1.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// Turns parsed options into the description the controller takes (shared with srun
/// and salloc).
pub fn describe_job(
    o: &JobOptions,
    name: String,
    script: String,
    command: String,
    interactive: bool,
) -> Result<JobDescription, String> {
    let work_dir = super::common::work_dir(o.chdir.as_deref());
    // Kept apart only where `-D` named another directory.
    let submit_dir = Some(cwd().display().to_string()).filter(|d| *d != work_dir);
    let environment = match &o.export {
        None | Some(Export::All(_)) => {
            let mut env: Vec<(String, String)> = std::env::vars().collect();
            if let Some(Export::All(extra)) = &o.export {
                env.extend(
                    extra
                        .iter()
                        .filter_map(|e| e.split_once('=').map(|(k, v)| (k.into(), v.into()))),
                );
            }
            env
        }
        Some(Export::None(extra)) => {
            let mut env: Vec<(String, String)> = extra
                .iter()
                .filter_map(|e| e.split_once('=').map(|(k, v)| (k.into(), v.into())))
                .collect();
            // A batch job then runs in its owner's login environment, which the node
            // reads (Slurm 22.05's sbatch asks for it the same way).
            if !interactive {
                env.push(("SLURM_GET_USER_ENV".into(), "1".into()));
                // The option's value as given (`NONE,NAME=value`).
                let given = std::iter::once("NONE".to_string()).chain(extra.iter().cloned());
                env.push((
                    "SLURM_EXPORT_ENV".into(),
                    given.collect::<Vec<_>>().join(","),
                ));
            }
            env
        }
        Some(Export::Only(names)) => names
            .iter()
            .filter_map(|n| match n.split_once('=') {
                Some((k, v)) => Some((k.to_string(), v.to_string())),
                None => std::env::var(n).ok().map(|v| (n.clone(), v)),
            })
            .collect(),
    };
    // The submitter's scheduling priority (its nice value), which the job's processes
    // take on, as sbatch and srun pass it: kept when the environment already names one.
    let mut environment = environment;
    if !interactive && !environment.iter().any(|(k, _)| k == "SLURM_PRIO_PROCESS") {
        environment.push(("SLURM_PRIO_PROCESS".into(), prio_process().to_string()));
    }
    // Likewise the umask its processes start with (a `#PBS -W umask=` line's, or the
    // submitter's), which the node sets for them.
    if !interactive && !environment.iter().any(|(k, _)| k == "SLURM_UMASK") {
        let umask = match o.umask {
            Some(m) => format!("{m:04o}"),
            None => super::common::umask_text(),
        };
        environment.push(("SLURM_UMASK".into(), umask));
    }
    let begin = match &o.begin {
        // Slurm's `parse_time` names the time, then the option is refused.
        Some(b) => Some(parse_timestamp(b, now()).ok_or_else(|| {
            eprintln!("Invalid time specification (pos=0): {b}");
            "Invalid --begin specification".to_string()
        })?),
        None => None,
    };
    Ok(JobDescription {
        name,
        partition: o.partition.clone(),
        account: o.account.clone(),
        reservation: o.reservation.clone(),
        qos: o.qos.clone(),
        ntasks: o.ntasks,
        nodes: o.nodes,
        cpus_per_task: o.cpus_per_task,
        ntasks_per_node: o.ntasks_per_node,
        time_limit: o.time,
        memory: o.memory.map(|m| match m {
            Memory::PerNode(v) => MemoryRequest::PerNode(v),
            Memory::PerCpu(v) => MemoryRequest::PerCpu(v),
            Memory::PerGpu(v) => MemoryRequest::PerGpu(v),
        }),
        gres: o
            .gres
            .iter()
            .map(|g| GresRequest {
                name: g.name.clone(),
                gres_type: g.gres_type.clone(),
                count: g.count,
            })
            .collect(),
        gpus: o.gpus.clone(),
        gpus_per_node: o.gpus_per_node.clone(),
        gpus_per_task: o.gpus_per_task.clone(),
        gpus_per_socket: o.gpus_per_socket.clone(),
        sockets_per_node: o.sockets_per_node,
        cpus_per_gpu: o.cpus_per_gpu,
        exclusive: o.exclusive,
        oversubscribe: o.oversubscribe,
        constraint: o.constraint.clone(),
        nodelist: o.nodelist.clone(),
        exclude: o.exclude.clone(),
        switches: o.switches.map(|count| (count, o.switch_wait)),
        segment: o.segment,
        requeue: o.requeue,
        output: o.output.clone(),
        error: o.error.clone(),
        input: o.input.clone(),
        append: o.open_mode == Some(sluice_conf::options::OpenMode::Append),
        work_dir,
        submit_dir,
        script,
        script_args: Vec::new(),
        environment,
        array: o.array.as_ref().map(|a| (a.indices.clone(), a.throttle)),
        dependency: o
            .dependency
            .as_ref()
            .map(|_| o.dependency_text.clone().unwrap_or_default()),
        begin,
        signal: o
            .signal
            .as_ref()
            .map(|s| (s.signal, s.before, s.batch_only)),
        hold: o.hold,
        comment: o.comment.clone(),
        acctg_freq: o.acctg_freq.clone(),
        wckey: o.wckey.clone(),
        nice: o.nice,
        submit_host: hostname(),
        command,
        submit_line: None,
        interactive,
        service: None,
        het_components: Vec::new(),
    })
}

/// The first of `asked`'s partitions (`a,b`) the cluster does not have, as Slurm names
/// it; all of `asked` when the partitions cannot be loaded.
fn unknown_partition(client: &sluice_proto::Client, asked: &str) -> String {
    if !asked.contains(',') {
        return asked.to_string();
    }
    let Ok(known) = client.get::<Vec<sluice_proto::types::PartitionInfo>>("/v1/partitions") else {
        return asked.to_string();
    };
    asked
        .split(',')
        .find(|name| !known.iter().any(|p| p.name == *name))
        .unwrap_or(asked)
        .to_string()
}

/// Slurm's message for GRES the cluster does not have; its commands print it on its
/// own, not as a failed submission.
pub const BAD_GRES: &str = "Invalid generic resource (gres) specification";

/// The lines Slurm's submitting commands print before "…submission failed: MSG" (or
/// salloc's "Job submit/allocate failed: MSG") when the controller refuses `desc`:
/// which partition was invalid, or that the CPUs per node or the memory asked for
/// cannot be had on any node.
pub fn explain_refusal(client: &sluice_proto::Client, me: &str, desc: &JobDescription, msg: &str) {
    if msg == "Invalid partition name specified" {
        let asked = desc.partition.clone().unwrap_or_default();
        eprintln!(
            "{me}: error: invalid partition specified: {}",
            unknown_partition(client, &asked)
        );
    }
    if msg != "Requested node configuration is not available" {
        return;
    }
    // Only for what no node of the cluster has (CPUs per node, memory per node or per
    // CPU, compared as given, as Slurm 22.05 does); any other cause gets the one line.
    let tasks_per_node = desc.ntasks_per_node.unwrap_or(match desc.nodes {
        Some((n, _)) if n > 0 => desc.ntasks.unwrap_or(1).div_ceil(n),
        _ => 1,
    });
    let cpus_per_node = desc.cpus_per_task.unwrap_or(1) * tasks_per_node.max(1);
    let mem = match desc.memory {
        Some(MemoryRequest::PerNode(m) | MemoryRequest::PerCpu(m)) => m,
        _ => 0,
    };
    let Ok(nodes) =
        super::common::controller().get::<Vec<sluice_proto::types::NodeInfo>>("/v1/nodes")
    else {
        return;
    };
    // Against every CPU of the node, those kept for the system (CoreSpecCount)
    // included, as Slurm compares them here.
    if nodes.iter().all(|n| cpus_per_node > n.cpus_total()) {
        eprintln!("{me}: error: CPU count per node can not be satisfied");
    }
    if mem > 0 && nodes.iter().all(|n| mem > n.memory) {
        eprintln!("{me}: error: Memory specification can not be satisfied");
    }
}

/// Reports a bad option as Slurm does: a usage error (exit 255; getopt's own words
/// after `program`, argv[0] for the command line and `sbatch` for `#SBATCH` lines, as
/// sbatch names them), or a refused submission (exit 1) for what Slurm's controller
/// checks.
fn option_error(program: &str, e: sluice_conf::options::OptionError) -> ! {
    if e.refused {
        fail(
            "sbatch",
            format!("Batch job submission failed: {}", e.message),
            1,
        )
    }
    Refusal::job_option("sbatch", program, &e).exit()
}

/// The text of a batch script read from a file or standard input, whichever its
/// encoding, as Slurm takes any bytes. Sluice keeps scripts as UTF-8 text, so bytes
/// that are not (a Latin-1 `ü`) become U+FFFD, with a warning unless `quiet`: the job
/// runs what was stored, not the original bytes.
fn script_text(bytes: &[u8], quiet: bool) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    if let Some(w) = script_encoding_warning(bytes) {
        if !quiet {
            eprintln!("sbatch: warning: {w}");
        }
    }
    text
}

/// The warning for a script that is not UTF-8, naming the line of its first bad byte.
fn script_encoding_warning(bytes: &[u8]) -> Option<String> {
    let bad = std::str::from_utf8(bytes).err()?.valid_up_to();
    let line = 1 + bytes[..bad].iter().filter(|&&b| b == b'\n').count();
    Some(format!(
        "batch script line {line} is not valid UTF-8: its invalid bytes are replaced \
         by U+FFFD in the script the job runs"
    ))
}

/// Why sbatch refuses a batch script before it submits, one error line each, as
/// Slurm's `_get_script_buffer`, in its order; `--wrap`'s own script is not checked
/// for line ends.
fn script_refusal(script: &str, wrapped: bool) -> Option<&'static [&'static str]> {
    if script.is_empty() {
        return Some(&["Batch script is empty!"]);
    }
    if script.bytes().all(|b| b.is_ascii_whitespace() || b == 0x0b) {
        return Some(&["Batch script contains only whitespace!"]);
    }
    if !script.starts_with("#!") {
        return Some(&[
            "This does not look like a batch script.  The first",
            "line must start with #! followed by the path to an interpreter.",
            "For instance: #!/bin/sh",
        ]);
    }
    if script.contains('\0') {
        return Some(&[
            "The Slurm controller does not allow scripts that",
            "contain a NULL character '\\0'.",
        ]);
    }
    if !wrapped && script.contains("\r\n") {
        return Some(&[
            "Batch script contains DOS line breaks (\\r\\n)",
            "instead of expected UNIX line breaks (\\n).",
        ]);
    }
    None
}

/// Runs `sbatch` with `args` (without the program name); returns the exit status.
/// Options a heterogeneous job's component takes from the one before it, as Slurm's
/// `sbatch` propagates them (its `heterogeneous_jobs` documentation lists them); the
/// shape of the request (tasks, nodes, CPUs, memory per CPU, GPUs, partition) is each
/// component's own.
pub(super) fn propagated(prev: &JobOptions) -> JobOptions {
    JobOptions {
        job_name: prev.job_name.clone(),
        output: prev.output.clone(),
        error: prev.error.clone(),
        input: prev.input.clone(),
        account: prev.account.clone(),
        qos: prev.qos.clone(),
        time: prev.time,
        time_min: prev.time_min,
        chdir: prev.chdir.clone(),
        requeue: prev.requeue,
        open_mode: prev.open_mode,
        export: prev.export.clone(),
        comment: prev.comment.clone(),
        acctg_freq: prev.acctg_freq.clone(),
        wckey: prev.wckey.clone(),
        hold: prev.hold,
        parsable: prev.parsable,
        test_only: prev.test_only,
        wait: prev.wait,
        dependency: prev.dependency.clone(),
        dependency_text: prev.dependency_text.clone(),
        begin: prev.begin.clone(),
        signal: prev.signal.clone(),
        exclude: prev.exclude.clone(),
        nice: prev.nice,
        reservation: prev.reservation.clone(),
        quiet: prev.quiet,
        verbose: prev.verbose,
        ignore_pbs: prev.ignore_pbs,
        ..JobOptions::default()
    }
}

/// A script's `#SBATCH` words, one list per heterogeneous job component (split at
/// `#SBATCH hetjob`, or 22.05's older `#SBATCH packjob` with Slurm's warning).
fn directive_components(words: Vec<String>, quiet: bool) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for w in words {
        if w == "hetjob" || w == "packjob" {
            if w == "packjob" && !quiet {
                eprintln!(
                    "sbatch: Warning: the \"packjob\" component separator is being \
                     deprecated. Please, use \"hetjob\" instead."
                );
            }
            out.push(Vec::new());
        } else {
            out.last_mut().expect("never empty").push(w);
        }
    }
    out
}

/// Slurm's default MaxArraySize: an array whose indices stay below it fits every
/// cluster, and is sent without asking.
const DEFAULT_MAX_ARRAY_SIZE: u32 = 1001;

/// Whether the array `desc` asks for fits the cluster's MaxArraySize, asked of the
/// controller only when an index reaches Slurm's default: a large array out of
/// bounds is refused as the controller refuses it (`Invalid job array
/// specification`) before its millions of indices are sent.
fn array_fits(client: &sluice_proto::Client, desc: &JobDescription) -> Result<(), String> {
    let Some(largest) = desc.array.as_ref().and_then(|a| a.0.iter().max().copied()) else {
        return Ok(());
    };
    if largest < DEFAULT_MAX_ARRAY_SIZE {
        return Ok(());
    }
    let config: sluice_proto::types::ConfigInfo =
        client.get("/v1/config").map_err(|e| describe(&e))?;
    let max = config
        .entries
        .iter()
        .find(|(k, _)| k == "MaxArraySize")
        .and_then(|(_, v)| v.parse::<u32>().ok());
    match max {
        Some(max) if largest >= max => Err("Invalid job array specification".into()),
        _ => Ok(()),
    }
}

pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "sbatch";
    let line = super::common::submit_line();
    // `sbatch OPTS : OPTS ... SCRIPT`: one group of options per heterogeneous job
    // component; the script and its arguments end the last group.
    let groups: Vec<Vec<String>> = args.split(|a| a == ":").map(<[String]>::to_vec).collect();
    let args = groups[0].clone();
    let mut first = JobOptions::default();
    let mut rest = match parse_args(Command::Sbatch, &args, &mut first) {
        Ok(r) => r,
        Err(e) => option_error(&program(ME), e),
    };
    let mut later: Vec<JobOptions> = Vec::new();
    for g in &groups[1..] {
        let mut o = JobOptions::default();
        match parse_args(Command::Sbatch, g, &mut o) {
            Ok(r) => rest = r,
            Err(e) => option_error(&program(ME), e),
        }
        if first.wrap.is_none() {
            first.wrap = o.wrap.clone();
        }
        later.push(o);
    }
    if first.version {
        println!("{VERSION}");
        return 0;
    }
    if first.help || first.usage {
        let text = if first.help {
            super::job_help::help(Command::Sbatch)
        } else {
            super::job_help::usage(Command::Sbatch)
        };
        print!("{text}");
        return 0;
    }
    let (script, script_path) = if let Some(wrap) = &first.wrap {
        (
            format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n"),
            None,
        )
    } else if let Some(path) = rest
        .first()
        .filter(|p| p.as_str() != "/dev/stdin" && p.as_str() != "-")
    {
        match std::fs::read(path) {
            Ok(b) => (script_text(&b, first.quiet), Some(path.clone())),
            // Slurm names the file only.
            Err(_) => fail(ME, format!("Unable to open file {path}"), 1),
        }
    } else {
        let mut b = Vec::new();
        if std::io::stdin().read_to_end(&mut b).is_err() {
            fail(ME, "Unable to read the batch script from standard input", 1);
        }
        (script_text(&b, first.quiet), None)
    };
    if let Some(lines) = script_refusal(&script, first.wrap.is_some()) {
        for l in lines {
            eprintln!("{ME}: error: {l}");
        }
        std::process::exit(1);
    }
    // #SBATCH lines first, the environment's SBATCH_* over them, the command line
    // over both; component by component.
    let from_env = input_env::read(Command::Sbatch, |k| std::env::var(k).ok());
    let directives = directive_components(script_directives(&script, "#SBATCH"), first.quiet);
    let count = directives.len().max(groups.len());
    let mut components: Vec<JobOptions> = Vec::with_capacity(count);
    for i in 0..count {
        let mut opts = match components.last() {
            Some(prev) => propagated(prev),
            None => JobOptions::default(),
        };
        match parse_args(
            Command::Sbatch,
            directives.get(i).map_or(&[][..], Vec::as_slice),
            &mut opts,
        ) {
            Err(e) => option_error(ME, e),
            // A word that is no option ends sbatch's getopt walk of the directives.
            Ok(rest) if !rest.is_empty() => fail(
                ME,
                format!("Invalid directive found in batch script: {}", rest[0]),
                USAGE_EXIT,
            ),
            Ok(_) => {}
        }
        // `#PBS`/`#BSUB` lines after them, unless any of the command line, the script
        // or the environment says to ignore them.
        let ignore_pbs = first.ignore_pbs
            || later.iter().any(|o| o.ignore_pbs)
            || opts.ignore_pbs
            || std::env::var("SBATCH_IGNORE_PBS").is_ok_and(|v| input_env::flag_set(&v));
        if !ignore_pbs {
            if let Err(e) = sluice_conf::pbs::apply(&script, &mut opts) {
                option_error(ME, e);
            }
        }
        if let Err(e) = from_env.apply(Command::Sbatch, &mut opts) {
            option_error(ME, e);
        }
        if let Some(g) = groups.get(i) {
            if let Err(e) = parse_args(Command::Sbatch, g, &mut opts) {
                option_error(&program(ME), e);
            }
        }
        if let Err(e) = sluice_conf::options::check_memory_kinds(&opts) {
            option_error(ME, e);
        }
        components.push(opts);
    }
    let opts = components.remove(0);
    // Strings Slurm's controller would refuse as too long, of those only the client
    // sees: refused before Sluice's own warnings (of options without effect) are said.
    if let Err(e) = sluice_conf::options::check_lengths(&opts) {
        option_error(ME, e);
    }
    for w in &opts.warnings {
        if !opts.quiet {
            eprintln!("{ME}: warning: {w}");
        }
    }
    if let Err(m) = sluice_conf::options::check_gpus_per_socket(&opts) {
        fail(ME, m, 1);
    }
    let name = opts
        .job_name
        .clone()
        .unwrap_or_else(|| match (&first.wrap, &script_path) {
            (Some(_), _) => "wrap".into(),
            (None, Some(p)) => Path::new(p)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| "sbatch".into()),
            (None, None) => "sbatch".into(),
        });
    // A service's options, checked as a whole (`--restart`, `--health-*`, `--port`).
    let service = match opts.service.spec(&name, opts.array.is_some()) {
        Ok(s) => s,
        Err(r) => fail(ME, r.message, r.exit_code),
    };
    let command = script_path
        .as_ref()
        .map(|p| {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                cwd().join(p)
            }
            .display()
            .to_string()
        })
        .unwrap_or_else(|| "(null)".into());
    let mut desc = match describe_job(&opts, name, script, command, false) {
        Ok(d) => d,
        Err(e) => fail(ME, e, USAGE_EXIT),
    };
    desc.service = service;
    desc.submit_line = Some(line);
    if !rest.is_empty() && script_path.is_some() {
        desc.script_args = rest[1..].to_vec();
        // `Command=` is the script with its arguments, as slurmctld joins them.
        for a in &desc.script_args {
            desc.command.push(' ');
            desc.command.push_str(a);
        }
    }
    if !components.is_empty() && opts.array.is_some() {
        fail(ME, "Job arrays not supported for heterogeneous jobs", 1);
    }
    for c in &components {
        let cname = c.job_name.clone().unwrap_or_else(|| desc.name.clone());
        let mut d = match describe_job(c, cname, String::new(), desc.command.clone(), false) {
            Ok(d) => d,
            Err(e) => fail(ME, e, USAGE_EXIT),
        };
        // The script and its environment are the leader's.
        d.environment = Vec::new();
        d.submit_line = desc.submit_line.clone();
        desc.het_components.push(d);
    }
    let client = controller();
    if opts.test_only {
        return super::allocate::test_only(&client, "sbatch", &desc);
    }
    if let Err(e) = array_fits(&client, &desc) {
        fail(ME, format!("Batch job submission failed: {e}"), 1)
    }
    let reply: SubmitReply = match client.post("/v1/jobs", &desc) {
        Ok(r) => r,
        Err(e) => {
            let msg = describe(&e);
            if msg == BAD_GRES {
                // Slurm's sbatch finds this itself, before it submits.
                fail(ME, msg, 1)
            }
            // A refusal by an accounting limit names the limit on a line of its own.
            let msg = match msg.rsplit_once('\n') {
                Some((first, last)) => {
                    for line in first.lines() {
                        eprintln!("{ME}: error: {line}");
                    }
                    last.to_string()
                }
                None => msg,
            };
            explain_refusal(&client, ME, &desc, &msg);
            fail(ME, format!("Batch job submission failed: {msg}"), 1)
        }
    };
    for w in &reply.warnings {
        eprintln!("{ME}: warning: {w}");
    }
    if opts.parsable {
        println!("{}", reply.job_id);
    } else if !opts.quiet {
        // `-Q/--quiet`: nothing on stdout, as Slurm's sbatch.
        println!("Submitted batch job {}", reply.job_id);
    }
    if opts.wait {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            match client.get::<JobRecord>(&format!("/v1/jobs/{}", reply.job_id)) {
                Ok(r) if r.state.is_finished() => {
                    return if r.exit_code != 0 {
                        r.exit_code
                    } else if r.signal != 0 {
                        128 + r.signal
                    } else {
                        0
                    };
                }
                Ok(_) => {}
                Err(e) => fail(ME, describe(&e), 1),
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::script_refusal;

    #[test]
    fn a_script_with_dos_line_ends_is_refused_with_slurms_lines() {
        assert_eq!(
            script_refusal("#!/bin/sh\r\necho hi\r\n", false),
            Some(
                &[
                    "Batch script contains DOS line breaks (\\r\\n)",
                    "instead of expected UNIX line breaks (\\n).",
                ][..]
            )
        );
        assert_eq!(script_refusal("#!/bin/sh\necho hi\n", false), None);
        // A lone `\r` is no DOS line end.
        assert_eq!(script_refusal("#!/bin/sh\necho 'a\rb'\n", false), None);
    }

    #[test]
    fn a_script_that_is_not_utf8_is_taken_with_a_warning_naming_its_line() {
        let latin1 = b"#!/bin/sh\n# Gr\xfc\xdfe\necho hi\n";
        assert_eq!(
            super::script_encoding_warning(latin1).as_deref(),
            Some(
                "batch script line 2 is not valid UTF-8: its invalid bytes are replaced \
                 by U+FFFD in the script the job runs"
            )
        );
        assert_eq!(
            super::script_text(latin1, true),
            "#!/bin/sh\n# Gr\u{fffd}\u{fffd}e\necho hi\n"
        );
        assert_eq!(
            super::script_encoding_warning("#!/bin/sh\necho Grüße\n".as_bytes()),
            None
        );
    }

    #[test]
    fn empty_blank_and_nul_scripts_are_refused_with_slurms_own_lines() {
        assert_eq!(
            script_refusal("", false),
            Some(&["Batch script is empty!"][..])
        );
        assert_eq!(
            script_refusal(" \n\t\n", false),
            Some(&["Batch script contains only whitespace!"][..])
        );
        assert_eq!(
            script_refusal("#!/bin/sh\necho a\0b\n", false),
            Some(
                &[
                    "The Slurm controller does not allow scripts that",
                    "contain a NULL character '\\0'.",
                ][..]
            )
        );
        // Slurm checks the interpreter line before the NUL byte.
        assert_eq!(
            script_refusal("echo a\0b\n", false).map(|l| l[0]),
            Some("This does not look like a batch script.  The first")
        );
    }
}
