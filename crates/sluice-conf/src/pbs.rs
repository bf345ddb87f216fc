//! A batch script's `#PBS` (PBS Pro, Torque) and `#BSUB` (LSF) directives, read as
//! Slurm 22.05's sbatch reads them: translated into sbatch's own options and applied
//! after the script's `#SBATCH` lines, before the environment's `SBATCH_*` and the
//! command line (`--ignore-pbs`, or `SBATCH_IGNORE_PBS`, turns this off). A script
//! with `#BSUB` lines has only those read; otherwise its `#PBS` lines. Directives
//! are looked for among the script's first 100 lines that are not comments, at the
//! very start of a line.
//!
//! What each directive becomes (the rest are accepted and ignored, as Slurm ignores
//! them):
//! - `#PBS`: `-a` begin, `-A` account, `-e`/`-o` error/output, `-h` hold, `-J`/`-t`
//!   array, `-m` mail types (`b`, `e`, `a`, `n`), `-M` mail user, `-N` job name, `-p`
//!   nice, `-q` partition, `-v` exported variables, `-W depend=` dependency and
//!   `-W umask=` the job's umask (`SLURM_UMASK`), and `-l`'s
//!   resources: `walltime`/`cput`/`pcput` time, `mem` memory per node, `file` temporary
//!   disk, `nodes=N[:ppn=P][:gpus=G]` or named hosts, `select`/`ncpus`/`mpiprocs` (PBS
//!   Pro), `naccelerators`/`accelerator=true` GPUs, `proc` constraint, `nice`;
//! - `#BSUB`: `-cwd` directory, `-e`/`-o`/`-J`, `-m` hosts, `-M` memory per CPU (in
//!   KiB without a unit), `-n` tasks (the most of `min,max`), `-q` partition, `-W`
//!   time, `-x` exclusive.

use crate::getopt::{Getopt, Opt, Order, Parsed};
use crate::options::{err, parse_args, Command, Export, JobOptions, OptionError};

/// The non-comment lines after which directives are no longer looked for.
const LOOK_AHEAD: usize = 100;

/// `#PBS`'s options (Slurm's `pbs_opt_string` and long names).
const PBS: &[Opt] = &[
    Opt::required("start_time", Some('a')),
    Opt::required("account", Some('A')),
    Opt::required("checkpoint", Some('c')),
    Opt::required("working_dir", Some('C')),
    Opt::required("error", Some('e')),
    Opt::flag("hold", Some('h')),
    Opt::flag("interactive", Some('I')),
    // `-j` takes its value as the other letters do (Slurm's `j:`).
    Opt::required("join", Some('j')),
    Opt::required("job_array", Some('J')),
    Opt::required("keep", Some('k')),
    Opt::required("resource_list", Some('l')),
    Opt::required("mail_options", Some('m')),
    Opt::required("mail_user_list", Some('M')),
    Opt::required("job_name", Some('N')),
    Opt::required("out", Some('o')),
    Opt::required("priority", Some('p')),
    Opt::required("destination", Some('q')),
    Opt::required("rerunable", Some('r')),
    Opt::required("script_path", Some('S')),
    Opt::required("array", Some('t')),
    Opt::required("running_user", Some('u')),
    Opt::required("variable_list", Some('v')),
    Opt::flag("all_env", Some('V')),
    Opt::required("attributes", Some('W')),
    Opt::flag("no_std", Some('z')),
];

/// `#BSUB`'s options (Slurm's `bsub_opt_string` and long names; `-cwd` is `-c`).
const BSUB: &[Opt] = &[
    Opt::required("cwd", Some('c')),
    Opt::required("error_file", Some('e')),
    Opt::required("job_name", Some('J')),
    Opt::required("hostname", Some('m')),
    Opt::required("memory_limit", Some('M')),
    Opt::required("", Some('n')),
    Opt::required("output_file", Some('o')),
    Opt::required("queue_name", Some('q')),
    Opt::required("time", Some('W')),
    Opt::flag("exclusive", Some('x')),
];

/// Which scheduler's directives a script carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bsub,
    Pbs,
}

impl Kind {
    fn magic(self) -> &'static str {
        match self {
            Kind::Bsub => "#BSUB",
            Kind::Pbs => "#PBS",
        }
    }
}

/// Applies `script`'s `#BSUB` or `#PBS` directives to `opts` (see the module's
/// documentation); whether it had any.
///
/// Errors: Slurm's, with its exit status 1 (an option that is no option of the
/// directive's, a word that is none), or the refusal of the sbatch option a directive
/// became, as that option is refused (`Invalid --time specification`, exit 255).
pub fn apply(script: &str, opts: &mut JobOptions) -> Result<bool, OptionError> {
    for kind in [Kind::Bsub, Kind::Pbs] {
        let Some(words) = directive_words(script, kind.magic()) else {
            continue;
        };
        let (table, args) = match kind {
            // LSF's `-cwd` is one dash and a long name: `-c` where an option stands
            // (every other word, as Slurm translates it).
            Kind::Bsub => (
                BSUB,
                words
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| {
                        if i % 2 == 0 && w == "-cwd" {
                            "-c".into()
                        } else {
                            w
                        }
                    })
                    .collect::<Vec<_>>(),
            ),
            Kind::Pbs => (PBS, words),
        };
        let mut walk = Getopt::new(table, args, Order::RequireOrder);
        for item in walk.by_ref() {
            match item {
                Ok(Parsed::Opt(f)) => {
                    let letter = f.opt.short.unwrap_or('?');
                    let done = match kind {
                        Kind::Bsub => bsub_option(letter, f.value(), opts),
                        Kind::Pbs => pbs_option(letter, f.value.as_deref(), opts),
                    };
                    // Sluice's own word on an option names the line it came from.
                    done.map_err(|mut e| {
                        if e.message.starts_with("option --") {
                            e.message = format!("{} -{letter}: {}", kind.magic(), e.message);
                        }
                        e
                    })?;
                }
                Ok(Parsed::Operand(word)) => {
                    return Err(exit_1(format!("Invalid argument: {word}")));
                }
                Err(e) => {
                    // glibc says why first; Slurm then names getopt's `?`.
                    eprintln!("sbatch: {e}");
                    return Err(exit_1("Unrecognized command line parameter ?"));
                }
            }
        }
        return Ok(true);
    }
    Ok(false)
}

/// The words of every line of `script` that starts with `magic`, or `None` when no
/// line does (among the first [`LOOK_AHEAD`] lines that are not comments).
fn directive_words(script: &str, magic: &str) -> Option<Vec<String>> {
    let mut found = false;
    let mut words = Vec::new();
    let mut others = 0;
    for line in script.lines() {
        match line.strip_prefix(magic) {
            Some(rest) => {
                found = true;
                words.extend(crate::options::split_words(rest));
            }
            None => {
                if !line.starts_with('#') {
                    others += 1;
                }
                if others > LOOK_AHEAD {
                    break;
                }
            }
        }
    }
    found.then_some(words)
}

/// Sets sbatch's option `name` to `value` as if given in the script (refused as that
/// option is).
fn set(opts: &mut JobOptions, name: &str, value: Option<&str>) -> Result<(), OptionError> {
    let word = match value {
        Some(v) => format!("--{name}={v}"),
        None => format!("--{name}"),
    };
    parse_args(Command::Sbatch, &[word], opts).map(|_| ())
}

fn exit_1(message: impl Into<String>) -> OptionError {
    OptionError {
        exit_1: true,
        ..err(message)
    }
}

/// One `#BSUB` option, as sbatch's `_set_bsub_options` translates it.
fn bsub_option(letter: char, v: &str, opts: &mut JobOptions) -> Result<(), OptionError> {
    match letter {
        'c' => set(opts, "chdir", Some(v)),
        'e' => set(opts, "error", Some(v)),
        'J' => set(opts, "job-name", Some(v)),
        'o' => set(opts, "output", Some(v)),
        // LSF lists hosts with blanks.
        'm' => set(opts, "nodelist", Some(&v.replace(' ', ","))),
        // LSF's unit is the KiB.
        'M' => {
            let kib = v.ends_with(|c: char| c.is_ascii_digit());
            set(
                opts,
                "mem-per-cpu",
                Some(&format!("{v}{}", if kib { "K" } else { "" })),
            )
        }
        // `min,max`: the most.
        'n' => {
            let most = match v.split_once(',') {
                Some((_, "")) => {
                    return Err(exit_1(format!("#BSUB -n format not correct given: '{v}'")))
                }
                Some((_, max)) => max,
                None => v,
            };
            set(opts, "ntasks", Some(most))
        }
        'q' => set(opts, "partition", Some(v)),
        'W' => set(opts, "time", Some(v)),
        'x' => set(opts, "exclusive", None),
        _ => Err(exit_1(format!(
            "Unrecognized command line parameter {letter}"
        ))),
    }
}

/// One `#PBS` option, as sbatch's `_set_pbs_options` translates it.
fn pbs_option(letter: char, v: Option<&str>, opts: &mut JobOptions) -> Result<(), OptionError> {
    let value = v.unwrap_or("");
    match letter {
        'a' => set(opts, "begin", Some(value)),
        'A' => set(opts, "account", Some(value)),
        'e' => set(opts, "error", Some(value)),
        'o' => set(opts, "output", Some(value)),
        'h' => set(opts, "hold", None),
        // PBS Pro's -J, Torque's -t.
        'J' | 't' => set(opts, "array", Some(value)),
        'l' => resource_list(value, opts),
        // Without one of its letters, no type: refused as `--mail-type` refuses it.
        'm' => set(
            opts,
            "mail-type",
            Some(&mail_types(value).unwrap_or_default()),
        ),
        'M' => set(opts, "mail-user", Some(value)),
        'N' => set(opts, "job-name", Some(value)),
        'p' => set(opts, "nice", Some(value)),
        'q' => set(opts, "partition", Some(value)),
        'v' => {
            let list = match opts.export.as_ref().map(export_text) {
                Some(before) => format!("{before},{value}"),
                None => value.to_string(),
            };
            set(opts, "export", Some(&list))
        }
        'W' => {
            let lower = value.to_ascii_lowercase();
            if lower.starts_with("umask=") {
                opts.umask = Some(umask(&value[6..])?);
                Ok(())
            } else if lower.starts_with("depend=") {
                set(opts, "dependency", Some(&value[7..]))
            } else {
                Ok(())
            }
        }
        // Checkpoints, the working directory, interactive, join, keep, rerunable,
        // the shell, the running user, all variables, no output: ignored, as Slurm
        // ignores them.
        _ => Ok(()),
    }
}

/// `-W umask=`'s value as C's `strtol` reads it with base 0 (leading blanks and a sign
/// allowed; `022` octal, `0x12` hex, `18` decimal; no digits: 0; too large: the
/// largest number), refused below 0 or above `0777` as Slurm refuses it.
fn umask(v: &str) -> Result<u32, OptionError> {
    let t = v.trim_start();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        (h, 16)
    } else if t.starts_with('0') {
        (t, 8)
    } else {
        (t, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let mask = match &digits[..end] {
        "" => 0,
        d => u64::from_str_radix(d, radix).unwrap_or(u64::MAX),
    };
    u32::try_from(mask)
        .ok()
        .filter(|&m| m <= 0o777 && !(negative && m > 0))
        .ok_or_else(|| err("Invalid -W umask= specification"))
}

/// `--export`'s value as given, to which `-v` adds its variables.
fn export_text(e: &Export) -> String {
    let with = |head: &str, rest: &[String]| {
        std::iter::once(head.to_string())
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>()
            .join(",")
    };
    match e {
        Export::All(extra) => with("ALL", extra),
        Export::None(extra) => with("NONE", extra),
        Export::Only(names) => names.join(","),
    }
}

/// `-m`'s letters as `--mail-type`: `b` BEGIN, `e` END, `a` FAIL; `n` NONE over them.
fn mail_types(arg: &str) -> Option<String> {
    let has = |c: char| arg.contains(c) || arg.contains(c.to_ascii_uppercase());
    if has('n') {
        return Some("NONE".into());
    }
    let types: Vec<&str> = [('b', "BEGIN"), ('e', "END"), ('a', "FAIL")]
        .into_iter()
        .filter(|(c, _)| has(*c))
        .map(|(_, t)| t)
        .collect();
    (!types.is_empty()).then(|| types.join(","))
}

/// A value of `-l`'s list at `rest`: up to `sep` (or the end), and what follows it.
fn value_to(rest: &str, sep: char) -> (&str, &str) {
    match rest.find(sep) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    }
}

/// What follows the next `,` of `rest` (a resource Slurm skips).
fn skip_item(rest: &str) -> &str {
    value_to(rest, ',').1
}

/// Torque's sizes end in `b` (`4gb`): Slurm's in the letter before.
fn without_b(v: &str) -> &str {
    match v.strip_suffix(['b', 'B']) {
        Some(s) => s,
        None => v,
    }
}

/// `-l`'s resource list, read as sbatch's `_parse_pbs_resource_list` reads it:
/// resource names are matched wherever the scan stands, character by character.
fn resource_list(list: &str, opts: &mut JobOptions) -> Result<(), OptionError> {
    let mut rest = list;
    let mut gpus: u32 = 0;
    // PBS Pro's trio: select 1, ncpus 2, mpiprocs 4.
    let mut pro = 0u8;
    let mut min_cpus: Option<u32> = None;
    let starts = |r: &str, key: &str| r.starts_with(key);
    let starts_nocase = |r: &str, key: &str| {
        r.len() >= key.len() && r.as_bytes()[..key.len()].eq_ignore_ascii_case(key.as_bytes())
    };
    while !rest.is_empty() {
        if starts_nocase(rest, "accelerator=") {
            rest = &rest[12..];
            if starts_nocase(rest, "true") && gpus < 1 {
                gpus = 1;
            }
        } else if let Some(key) = ["arch=", "host=", "opsys=", "other=", "pmem=", "pvmem="]
            .into_iter()
            .chain(["software=", "vmem="])
            .find(|k| starts(rest, k))
        {
            rest = skip_item(&rest[key.len()..]);
        } else if let Some(key) = ["cput=", "pcput=", "walltime="]
            .into_iter()
            .find(|k| starts(rest, k))
        {
            let (v, r) = value_to(&rest[key.len()..], ',');
            set(opts, "time", Some(v))?;
            rest = r;
        } else if starts(rest, "file=") {
            let (v, r) = value_to(&rest[5..], ',');
            // Slurm's `--tmp`, which Sluice refuses on a command line: from a directive
            // written for another scheduler, said and left out instead.
            no_effect(opts, &format!("file={v}"), "tmp");
            rest = r;
        } else if starts(rest, "mem=") {
            let (v, r) = value_to(&rest[4..], ',');
            set(opts, "mem", Some(without_b(v)))?;
            rest = r;
        } else if starts_nocase(rest, "mpiprocs=") {
            let (v, r) = value_to(&rest[9..], ':');
            pro |= 4;
            set(opts, "ntasks-per-node", Some(v))?;
            rest = r;
        } else if starts_nocase(rest, "naccelerators=") {
            let (v, r) = value_to(&rest[14..], ',');
            gpus = v.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                exit_1(format!("Invalid numeric value \"{v}\" for naccelerators."))
            })?;
            rest = r;
        } else if starts_nocase(rest, "ncpus=") {
            let (v, r) = value_to(&rest[6..], ':');
            pro |= 2;
            min_cpus = v.trim().parse().ok();
            // Slurm's `--mincpus` (refused on a command line, as `file=`'s `--tmp`);
            // with `mpiprocs` it still gives each task its share below.
            no_effect(opts, &format!("ncpus={v}"), "mincpus");
            rest = r;
        } else if starts(rest, "nice=") {
            let (v, r) = value_to(&rest[5..], ',');
            set(opts, "nice", Some(v))?;
            rest = r;
        } else if starts(rest, "nodes=") {
            let (v, r) = value_to(&rest[6..], ',');
            nodes(v, opts)?;
            rest = r;
        } else if starts(rest, "proc=") {
            let (v, r) = value_to(&rest[5..], ',');
            let constraint = match &opts.constraint {
                Some(c) => format!("{v},{c}"),
                None => v.to_string(),
            };
            set(opts, "constraint", Some(&constraint))?;
            // Slurm skips the item after it too.
            rest = skip_item(r);
        } else if starts_nocase(rest, "select=") {
            let (v, r) = value_to(&rest[7..], ':');
            pro |= 1;
            set(opts, "nodes", Some(v))?;
            rest = r;
        } else {
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str();
        }
    }
    if let (7, Some(cpus), Some(per_node)) = (pro, min_cpus, opts.ntasks_per_node) {
        if per_node > 0 && cpus > per_node {
            set(opts, "cpus-per-task", Some(&(cpus / per_node).to_string()))?;
        }
    }
    if gpus > 0 {
        // Added to any GRES asked already, as Slurm adds them.
        let before = std::mem::take(&mut opts.gres);
        set(opts, "gres", Some(&format!("gpu:{gpus}")))?;
        let gpu = std::mem::replace(&mut opts.gres, before);
        opts.gres.extend(gpu);
    }
    Ok(())
}

/// Says that resource `what` of a `#PBS -l` line asks what Sluice's `--option` would,
/// which Sluice does not do: a warning, where the option itself is refused.
fn no_effect(opts: &mut JobOptions, what: &str, option: &str) {
    opts.warnings.push(format!(
        "#PBS -l {what} is accepted but has no effect in Sluice (option --{option} is not supported)"
    ));
}

/// `nodes=`'s value: `N[:ppn=P][:gpus=G]`, or hosts joined by `+`, as sbatch's
/// `_parse_pbs_nodes_opts` reads it.
fn nodes(spec: &str, opts: &mut JobOptions) -> Result<(), OptionError> {
    let mut count: i64 = 0;
    let mut ppn: i64 = 0;
    let mut hosts: Vec<String> = Vec::new();
    let part_end = |s: &str| s.find(['+', ':']).unwrap_or(s.len());
    let mut rest = spec;
    let next = |s: &str, end: usize| -> usize { (end + 1).min(s.len()) };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("gpus=") {
            let end = part_end(r);
            set(opts, "gpus-per-node", Some(&r[..end]))?;
            rest = &r[next(r, end)..];
        } else if let Some(r) = rest.strip_prefix("ppn=") {
            ppn = ppn.saturating_add(leading_number(r));
            let end = part_end(r);
            rest = &r[next(r, end)..];
        } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
            count = count.saturating_add(leading_number(rest));
            let end = part_end(rest);
            rest = &rest[next(rest, end)..];
        } else if rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let end = part_end(rest);
            hosts.push(rest[..end].to_string());
            rest = &rest[next(rest, end)..];
        } else {
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str();
        }
    }
    if count == 0 {
        count = 1;
    } else {
        set(opts, "nodes", Some(&count.to_string()))?;
    }
    if ppn > 0 {
        set(opts, "ntasks", Some(&ppn.saturating_mul(count).to_string()))?;
    }
    if !hosts.is_empty() {
        set(opts, "nodelist", Some(&crate::hostlist::compress(&hosts)))?;
    }
    Ok(())
}

/// The number at the start of `s`, as C's `strtol` reads it (0 for none; the largest
/// number where it is larger).
fn leading_number(s: &str) -> i64 {
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() {
        return 0;
    }
    digits.parse().unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(script: &str) -> Result<(bool, JobOptions), OptionError> {
        let mut o = JobOptions::default();
        let found = apply(script, &mut o)?;
        Ok((found, o))
    }

    fn opts(script: &str) -> JobOptions {
        let (found, o) = read(script).unwrap();
        assert!(found, "{script}");
        o
    }

    #[test]
    fn torque_nodes_and_times_become_slurms() {
        let o = opts("#!/bin/sh\n#PBS -N sim -q short\n#PBS -l walltime=1:30:00,nodes=2:ppn=4\n");
        assert_eq!(o.job_name.as_deref(), Some("sim"));
        assert_eq!(o.partition.as_deref(), Some("short"));
        assert_eq!(o.time, Some(Some(5400)));
        assert_eq!(o.nodes.map(|n| n.0), Some(2));
        assert_eq!(o.ntasks, Some(8));
        // Named hosts, GPUs per node, memory and disk in Torque's units.
        let o = opts("#PBS -l nodes=n1+n2:gpus=2,mem=4gb\n");
        assert_eq!(o.nodelist.as_deref(), Some("n[1-2]"));
        assert_eq!(o.gpus_per_node.as_ref().map(|g| g.1), Some(2));
        assert_eq!(o.memory, Some(crate::options::Memory::PerNode(4096)));
    }

    #[test]
    fn pbs_pro_select_gives_nodes_and_tasks_per_node() {
        let o = opts("#PBS -l select=3:mpiprocs=2\n");
        assert_eq!(
            (o.nodes.map(|n| n.0), o.ntasks_per_node),
            (Some(3), Some(2))
        );
        assert!(o.warnings.is_empty());
        // ncpus over mpiprocs gives each task its share; the least CPU count per node
        // it asks besides (Slurm's --mincpus) is said to have no effect.
        let o = opts("#PBS -l select=2:ncpus=8:mpiprocs=4\n");
        assert_eq!(
            (o.nodes.map(|n| n.0), o.ntasks_per_node),
            (Some(2), Some(4))
        );
        assert_eq!(o.cpus_per_task, Some(2));
        assert_eq!(
            o.warnings,
            ["#PBS -l ncpus=8 is accepted but has no effect in Sluice (option --mincpus is not supported)"]
        );
        assert_eq!(opts("#PBS -l file=10gb\n").warnings.len(), 1);
        // Counts too large for any number are read as the largest, never wrapped.
        let e = read("#PBS -l nodes=99999999999999999999999:ppn=2\n").unwrap_err();
        assert!(e.message.contains("node count"), "{}", e.message);
    }

    #[test]
    fn umask_is_read_as_strtol_reads_it() {
        assert_eq!(opts("#PBS -W umask=077\n").umask, Some(0o77));
        assert_eq!(opts("#PBS -W UMASK=0x12\n").umask, Some(0x12));
        assert_eq!(opts("#PBS -W umask=18\n").umask, Some(18));
        assert_eq!(opts("#PBS -W umask=abc\n").umask, Some(0));
        assert_eq!(opts("#PBS -W 'umask= 027'\n").umask, Some(0o27));
        for bad in ["-1", "99999999999999999999999"] {
            let e = read(&format!("#PBS -W umask={bad}\n")).unwrap_err();
            assert_eq!(e.message, "Invalid -W umask= specification", "{bad}");
        }
        let e = read("#PBS -W umask=01000\n").unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.exit_1),
            ("Invalid -W umask= specification", false)
        );
        // Other attributes are ignored.
        assert_eq!(opts("#PBS -W group_list=x\n").umask, None);
    }

    #[test]
    fn accelerators_ask_gpus() {
        let o = opts("#PBS -l naccelerators=2\n");
        assert_eq!(o.gres.len(), 1);
        assert_eq!((o.gres[0].name.as_str(), o.gres[0].count), ("gpu", 2));
        let o = opts("#PBS -l accelerator=true\n");
        assert_eq!(o.gres[0].count, 1);
        // Added to the GRES a script asked already.
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &["--gres=shard:1".to_string()], &mut o).unwrap();
        apply("#PBS -l naccelerators=2\n", &mut o).unwrap();
        let names: Vec<&str> = o.gres.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["shard", "gpu"]);
    }

    #[test]
    fn mail_letters_and_exported_variables() {
        assert_eq!(mail_types("abe").as_deref(), Some("BEGIN,END,FAIL"));
        assert_eq!(mail_types("ae").as_deref(), Some("END,FAIL"));
        assert_eq!(mail_types("bn").as_deref(), Some("NONE"));
        assert_eq!(mail_types("x"), None);
        let e = read("#PBS -m x\n").unwrap_err();
        assert_eq!(e.message, "Invalid --mail-type specification");
        let o = opts("#PBS -v A=1,B\n");
        assert_eq!(o.export, Some(Export::Only(vec!["A=1".into(), "B".into()])));
    }

    #[test]
    fn lsf_directives_are_read_instead_of_pbs_ones() {
        let o = opts("#BSUB -cwd /scratch -J lsf -n 2,6 -M 2048 -m 'n1 n2'\n#PBS -N pbs\n");
        assert_eq!(o.chdir.as_deref(), Some("/scratch"));
        assert_eq!(o.job_name.as_deref(), Some("lsf"));
        assert_eq!(o.ntasks, Some(6));
        // KiB without a unit: 2 MiB per CPU.
        assert_eq!(o.memory, Some(crate::options::Memory::PerCpu(2)));
        assert_eq!(o.nodelist.as_deref(), Some("n1,n2"));
        assert_eq!(
            read("#BSUB -n 2,\n").unwrap_err().message,
            "#BSUB -n format not correct given: '2,'"
        );
    }

    #[test]
    fn words_that_are_no_directive_options_are_refused_with_exit_1() {
        let e = read("#PBS -N a b\n").unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.exit_1),
            ("Invalid argument: b", true)
        );
        let e = read("#PBS -y\n").unwrap_err();
        assert_eq!(e.message, "Unrecognized command line parameter ?");
        assert!(e.exit_1);
    }

    #[test]
    fn directives_are_looked_for_among_the_first_hundred_other_lines() {
        assert!(!read("#!/bin/sh\ntrue\n").unwrap().0);
        // At the very start of a line only.
        assert!(!read("  #PBS -N x\n").unwrap().0);
        let late = format!("{}#PBS -N late\n", "true\n".repeat(100));
        assert_eq!(opts(&late).job_name.as_deref(), Some("late"));
        let too_late = format!("{}#PBS -N late\n", "true\n".repeat(101));
        assert!(!read(&too_late).unwrap().0);
    }
}
