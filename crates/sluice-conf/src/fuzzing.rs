//! Property checks for the text parsers, shared by the cargo-fuzz targets in `fuzz/` and
//! by the corpus test (`tests/fuzz_corpus.rs`). Not part of the API.
//!
//! Each `check_*` takes raw bytes as a fuzzer gives them (read as UTF-8, invalid
//! sequences replaced), runs one parser on them and panics, naming the input and the
//! broken property, when the parser panics or breaks what its documentation promises:
//! printed forms that read back to the same value, Slurm's error text, bounds.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::array::{format_indices, parse_array, ArraySpec, MAX_ARRAY_TASKS};
use crate::dependency::{parse_dependency, Dependency, DependencyKind};
use crate::duration::{format_time, parse_mem_mib, parse_time, MAX_MEM_MIB, MAX_TIME_SECS};
use crate::hostlist::{compress, expand, MAX_HOSTS};
use crate::options::{parse_args, parse_gres, script_directives, Command, JobOptions, Memory};
use crate::slurm_conf::parse_str;

/// A property check: panics when the parser misbehaves on the input.
pub type Check = fn(&[u8]);

/// Every fuzz target by name (`fuzz/fuzz_targets/<name>.rs`, `fuzz/corpus/<name>/`) with
/// its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("hostlist", check_hostlist),
    ("time", check_time),
    ("memory", check_memory),
    ("sbatch_directives", check_sbatch_directives),
    ("slurm_conf", check_slurm_conf),
    ("array", check_array),
    ("dependency", check_dependency),
];

fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Whether `name` can stand in a hostlist as one host: not empty, no brackets, commas or
/// whitespace.
fn is_host_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['[', ']', ',']) && !name.contains(char::is_whitespace)
}

/// A host name's prefix, trailing number and its digit count, as `compress` sees it: only
/// a number at the very end that fits in 64 bits counts.
fn trailing_number(name: &str) -> Option<(&str, u64, usize)> {
    let prefix = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &name[prefix.len()..];
    let value = digits.parse::<u64>().ok()?;
    Some((prefix, value, digits.len()))
}

/// Most names [`check_hostlist`] passes to [`check_compress`].
pub const COMPRESS_LIMIT: usize = 100_000;

/// `hostlist`: [`expand`] never panics, gives well-formed names within [`MAX_HOSTS`]
/// and errors that carry the expression; whatever it gives (up to [`COMPRESS_LIMIT`]
/// names), and any list of host names (one per line of the input), survive
/// [`compress`] then [`expand`] (see [`check_compress`]).
pub fn check_hostlist(data: &[u8]) {
    let s = text(data);
    match expand(&s) {
        Ok(names) => {
            assert!(
                !names.is_empty() && names.len() <= MAX_HOSTS,
                "expand({s:?}) gave {} names",
                names.len()
            );
            if let Some(bad) = names.iter().find(|n| !is_host_name(n)) {
                panic!("expand({s:?}) gave the malformed name {bad:?}");
            }
            // Longer lists take the same paths, only slower: fuzzing time is better
            // spent on other inputs.
            if names.len() <= COMPRESS_LIMIT {
                check_compress(&names);
            }
        }
        Err(e) => {
            assert_eq!(e.expr, s, "the error names another expression");
            assert!(
                !e.message.is_empty(),
                "expand({s:?}) failed without a message"
            );
        }
    }
    let lines: Vec<&str> = s.lines().filter(|n| is_host_name(n)).collect();
    if !lines.is_empty() {
        check_compress(&lines);
    }
}

/// The `compress` contract, for host names without brackets, commas or whitespace:
/// the expression expands back to the same set of names; a name with a trailing number
/// comes back once, and names of one prefix and digit count come back together in
/// ascending order (they form one group, groups being printed whole); names without a
/// number come back as given, repeats and order kept; compressing the result again
/// gives the same expression.
pub fn check_compress<S: AsRef<str>>(names: &[S]) {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    let shown: Vec<&str> = names.iter().take(8).copied().collect();
    let expr = compress(&names);
    let back = expand(&expr).unwrap_or_else(|e| {
        panic!("compress({shown:?}...) gave {expr:?}, which does not expand: {e}")
    });
    let want: HashSet<&str> = names.iter().copied().collect();
    let got: HashSet<&str> = back.iter().map(String::as_str).collect();
    if want != got {
        let lost: Vec<&&str> = want.difference(&got).take(5).collect();
        let new: Vec<&&str> = got.difference(&want).take(5).collect();
        panic!("compress({shown:?}...) gave {expr:?}: lost {lost:?}, gained {new:?}");
    }
    let plain = |list: &[&'_ str]| -> Vec<String> {
        list.iter()
            .filter(|n| trailing_number(n).is_none())
            .map(|n| n.to_string())
            .collect()
    };
    let back_refs: Vec<&str> = back.iter().map(String::as_str).collect();
    assert_eq!(
        plain(&names),
        plain(&back_refs),
        "compress({shown:?}...) gave {expr:?}: names without a number changed"
    );
    let mut seen = HashSet::new();
    let mut last: HashMap<(&str, usize), u64> = HashMap::new();
    let mut done: HashSet<(&str, usize)> = HashSet::new();
    let mut current: Option<(&str, usize)> = None;
    for name in &back {
        let Some((prefix, value, width)) = trailing_number(name) else {
            done.extend(current.take());
            continue;
        };
        assert!(
            seen.insert(name.as_str()),
            "compress({shown:?}...) gave {expr:?}, which names {name} twice"
        );
        let class = (prefix, width);
        if current != Some(class) {
            assert!(
                !done.contains(&class),
                "compress({shown:?}...) gave {expr:?}: {name} is apart from its group"
            );
            done.extend(current.replace(class));
        } else {
            assert!(
                last[&class] < value,
                "compress({shown:?}...) gave {expr:?}: {name} is out of order"
            );
        }
        last.insert(class, value);
    }
    assert_eq!(
        compress(&back),
        expr,
        "compress is not stable on its own output (from {shown:?}...)"
    );
}

/// `time`: [`parse_time`] gives no limit or a positive one within [`MAX_TIME_SECS`] that
/// [`format_time`] prints as `[D-]HH:MM:SS` and `parse_time` reads back; surrounding
/// whitespace does not matter; errors quote the input. The first eight bytes, as a
/// number of seconds, also go through `format_time` and back.
pub fn check_time(data: &[u8]) {
    let s = text(data);
    match parse_time(&s) {
        Ok(None) => assert_eq!(parse_time(&format_time(None)), Ok(None)),
        Ok(Some(secs)) => {
            assert!(
                (1..=MAX_TIME_SECS).contains(&secs),
                "parse_time({s:?}) gave {secs} s"
            );
            check_time_round_trip(secs);
            assert_eq!(
                parse_time(&format!(" \t{s} ")),
                Ok(Some(secs)),
                "parse_time({s:?}) changes with surrounding blanks"
            );
        }
        Err(m) => assert_eq!(m, format!("invalid time specification '{s}'")),
    }
    if let Some(bytes) = data.get(..8) {
        let raw = i64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        check_time_round_trip(raw.rem_euclid(MAX_TIME_SECS) + 1);
    }
}

fn check_time_round_trip(secs: i64) {
    let printed = format_time(Some(secs));
    let (days, clock) = match printed.split_once('-') {
        Some((d, c)) => (Some(d), c),
        None => (None, printed.as_str()),
    };
    let two_digits = |x: &str| x.len() == 2 && x.bytes().all(|b| b.is_ascii_digit());
    let fields: Vec<&str> = clock.split(':').collect();
    assert!(
        fields.len() == 3
            && fields.iter().all(|f| two_digits(f))
            && fields[0] < "24"
            && fields[1] < "60"
            && fields[2] < "60"
            && days.is_none_or(|d| !d.starts_with('0') && d.parse::<u64>().is_ok()),
        "format_time({secs}) gave {printed:?}"
    );
    assert_eq!(
        parse_time(&printed),
        Ok(Some(secs)),
        "format_time({secs}) gave {printed:?}, which reads back otherwise"
    );
}

/// `memory`: [`parse_mem_mib`] gives the amount times its unit (`K` rounded up to whole
/// MiB; `M` or none; `G`; `T`; each with an optional `B`, any case) within
/// [`MAX_MEM_MIB`], and the result printed in MiB reads back the same; errors quote the
/// input.
pub fn check_memory(data: &[u8]) {
    let s = text(data);
    match parse_mem_mib(&s) {
        Ok(mib) => {
            assert!(mib <= MAX_MEM_MIB, "parse_mem_mib({s:?}) gave {mib}");
            let t = s.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
            let amount: u128 = match digits.trim_start_matches('0') {
                "" => 0,
                d if d.len() <= 20 => d.parse().expect("at most 20 digits"),
                _ => panic!("parse_mem_mib({s:?}) accepted {digits} as a u64"),
            };
            let unit = unit.to_ascii_uppercase();
            let want = match unit.strip_suffix('B').unwrap_or(&unit) {
                "K" => amount.div_ceil(1024),
                "" | "M" => amount,
                "G" => amount * 1024,
                "T" => amount * 1024 * 1024,
                other => panic!("parse_mem_mib({s:?}) accepted the unit {other:?}"),
            };
            assert_eq!(u128::from(mib), want, "parse_mem_mib({s:?})");
            assert_eq!(parse_mem_mib(&mib.to_string()), Ok(mib), "{mib} in MiB");
            assert_eq!(parse_mem_mib(&format!("{mib}M")), Ok(mib), "{mib}M");
        }
        Err(m) => assert_eq!(m, format!("invalid memory specification '{s}'")),
    }
}

/// `array`: [`parse_array`] gives distinct ascending indices (at most
/// [`MAX_ARRAY_TASKS`]) that each belong to one of the written ranges, with every
/// range's start among them, and a throttle that is not 0; [`format_indices`] plus the
/// throttle reads back the same; errors are Slurm's text.
pub fn check_array(data: &[u8]) {
    let s = text(data);
    let spec = match parse_array(&s) {
        Ok(spec) => spec,
        Err(m) => {
            assert_eq!(m, "Invalid job array specification", "parse_array({s:?})");
            return;
        }
    };
    let ArraySpec { indices, throttle } = &spec;
    assert!(
        !indices.is_empty() && indices.len() <= MAX_ARRAY_TASKS,
        "parse_array({s:?}) gave {} indices",
        indices.len()
    );
    assert!(
        indices.windows(2).all(|w| w[0] < w[1]),
        "parse_array({s:?}): indices not ascending and distinct"
    );
    assert_ne!(*throttle, Some(0), "parse_array({s:?}): throttle 0");
    let list = s.split('%').next().unwrap_or("");
    // (start, end, step) of each written part.
    let parts: Vec<(u32, u32, u32)> = list
        .split(',')
        .map(|part| {
            let (range, step) = match part.split_once(':') {
                Some((r, st)) => (r, st.parse().expect("accepted step")),
                None => (part, 1),
            };
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            (
                lo.parse().expect("accepted start"),
                hi.parse().expect("accepted end"),
                step,
            )
        })
        .collect();
    for &(lo, _, _) in &parts {
        assert!(
            indices.binary_search(&lo).is_ok(),
            "parse_array({s:?}) lost {lo}"
        );
    }
    if indices.len().saturating_mul(parts.len()) <= 1_000_000 {
        for &i in indices {
            assert!(
                parts
                    .iter()
                    .any(|&(lo, hi, st)| lo <= i && i <= hi && (i - lo) % st == 0),
                "parse_array({s:?}) gave {i}, which no range names"
            );
        }
    }
    let mut printed = format_indices(indices);
    if let Some(t) = throttle {
        printed.push_str(&format!("%{t}"));
    }
    assert_eq!(
        parse_array(&printed).as_ref(),
        Ok(&spec),
        "parse_array({s:?}) printed as {printed:?} reads back otherwise"
    );
}

/// Prints a dependency in Slurm's syntax: `afterok:1:2_3,afterany:4`, `?` for OR.
fn format_dependency(dep: &Dependency) -> String {
    let (conds, sep) = match dep {
        Dependency::Singleton => return "singleton".into(),
        Dependency::All(c) => (c, ","),
        Dependency::Any(c) => (c, "?"),
    };
    let cond = |c: &crate::dependency::Condition| {
        let kind = match c.kind {
            DependencyKind::After => "after",
            DependencyKind::AfterAny => "afterany",
            DependencyKind::AfterOk => "afterok",
            DependencyKind::AfterNotOk => "afternotok",
            DependencyKind::AfterCorr => "aftercorr",
        };
        let mut out = kind.to_string();
        for t in &c.jobs {
            out.push_str(&format!(":{}", t.job));
            if let Some(task) = t.task {
                out.push_str(&format!("_{task}"));
            }
            if t.delay_mins > 0 {
                out.push_str(&format!("+{}", t.delay_mins));
            }
        }
        out
    };
    conds.iter().map(cond).collect::<Vec<_>>().join(sep)
}

/// `dependency`: [`parse_dependency`] gives conditions that each name at least one job
/// (ids above 0), at least two for an OR list; printed back in Slurm's syntax they read
/// back the same; errors are Slurm's text.
pub fn check_dependency(data: &[u8]) {
    let s = text(data);
    let dep = match parse_dependency(&s) {
        Ok(dep) => dep,
        Err(m) => {
            assert_eq!(m, "Job dependency problem", "parse_dependency({s:?})");
            return;
        }
    };
    let conds = match &dep {
        Dependency::Singleton => &[][..],
        Dependency::All(c) => c.as_slice(),
        Dependency::Any(c) => {
            assert!(c.len() >= 2, "parse_dependency({s:?}): OR of {}", c.len());
            c.as_slice()
        }
    };
    assert!(
        !matches!(dep, Dependency::All(_)) || !conds.is_empty(),
        "parse_dependency({s:?}): no conditions"
    );
    for c in conds {
        assert!(
            !c.jobs.is_empty() && c.jobs.iter().all(|t| t.job > 0),
            "parse_dependency({s:?}): {c:?}"
        );
    }
    let printed = format_dependency(&dep);
    assert_eq!(
        parse_dependency(&printed).as_ref(),
        Ok(&dep),
        "parse_dependency({s:?}) printed as {printed:?} reads back otherwise"
    );
}

/// Quotes a word so that `#SBATCH` splitting gives it back: single quotes, with each
/// `'` in double quotes.
fn quote_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\"'\"'"))
}

/// `sbatch_directives`: the input is a job script. [`script_directives`] gives words
/// that, quoted again on one `#SBATCH` line, split back the same; [`parse_args`] never
/// panics on them for any command, stops at a non-option or after `--`, and leaves
/// values within their bounds; every word, and every `--gres=` value, goes through
/// [`check_gres`]. The input split at blanks is parsed as a command line too.
pub fn check_sbatch_directives(data: &[u8]) {
    let script = text(data);
    let words = script_directives(&script, "#SBATCH");
    if !words.is_empty() {
        let line = format!(
            "#SBATCH {}",
            words
                .iter()
                .map(|w| quote_word(w))
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert_eq!(
            script_directives(&line, "#SBATCH"),
            words,
            "the directives of {script:?}, quoted again as {line:?}, split otherwise"
        );
    }
    for command in [Command::Sbatch, Command::Srun, Command::Salloc] {
        check_args(command, &words);
    }
    let plain: Vec<String> = script.split_whitespace().map(str::to_string).collect();
    check_args(Command::Sbatch, &plain);
    for word in &words {
        check_gres(word);
        if let Some(v) = word.strip_prefix("--gres=") {
            check_gres(v);
        }
    }
}

fn check_args(command: Command, args: &[String]) {
    let mut o = JobOptions::default();
    let rest = match parse_args(command, args, &mut o) {
        Ok(rest) => rest,
        Err(e) => {
            assert!(!e.message.is_empty(), "parse_args({args:?}): empty error");
            return;
        }
    };
    let used = args.len().checked_sub(rest.len());
    assert!(
        used.is_some_and(|k| args[k..] == rest[..]),
        "parse_args({args:?}) returned {rest:?}, not the tail of its arguments"
    );
    let k = used.unwrap_or(0);
    if let Some(first) = rest.first() {
        let option_like = first.len() > 1 && first.starts_with('-');
        assert!(
            !option_like || (k > 0 && args[k - 1] == "--"),
            "parse_args({args:?}) stopped at the option {first:?}"
        );
    }
    let what = || format!("parse_args({args:?}) gave {o:?}");
    if let Some(Some(t)) = o.time {
        assert!((1..=MAX_TIME_SECS).contains(&t), "{}", what());
    }
    if let Some((lo, hi)) = o.nodes {
        assert!(0 < lo && lo <= hi, "{}", what());
    }
    for n in [o.ntasks, o.cpus_per_task, o.ntasks_per_node, o.cpus_per_gpu] {
        assert!(n != Some(0), "{}", what());
    }
    if let Some(Memory::PerNode(m) | Memory::PerCpu(m) | Memory::PerGpu(m)) = o.memory {
        assert!(m <= MAX_MEM_MIB, "{}", what());
    }
    if let Some(a) = &o.array {
        assert!(!a.indices.is_empty(), "{}", what());
    }
    assert_eq!(
        o.dependency.is_some(),
        o.dependency_text.is_some(),
        "{}",
        what()
    );
    if let Some(sig) = &o.signal {
        assert!((1..=64).contains(&sig.signal), "{}", what());
    }
    for g in &o.gres {
        assert!(!g.name.is_empty(), "{}", what());
    }
}

/// [`parse_gres`]: items with a name and a non-empty type if any, none named twice,
/// which printed back as `name[:type]:count` read back the same; errors are Slurm's
/// text.
pub fn check_gres(value: &str) {
    let items = match parse_gres(value) {
        Ok(items) => items,
        Err(e) => {
            assert_eq!(
                e.message, "Invalid generic resource (gres) specification",
                "parse_gres({value:?})"
            );
            return;
        }
    };
    assert!(!items.is_empty(), "parse_gres({value:?}) gave nothing");
    let printed: Vec<String> = items
        .iter()
        .map(|g| {
            assert!(
                !g.name.is_empty()
                    && !g.name.contains([':', ','])
                    && g.gres_type.as_deref().is_none_or(|t| !t.is_empty()),
                "parse_gres({value:?}) gave {g:?}"
            );
            match &g.gres_type {
                Some(t) => format!("{}:{t}:{}", g.name, g.count),
                None => format!("{}:{}", g.name, g.count),
            }
        })
        .collect();
    let printed = printed.join(",");
    assert_eq!(
        parse_gres(&printed).as_ref(),
        Ok(&items),
        "parse_gres({value:?}) printed as {printed:?} reads back otherwise"
    );
}

/// `slurm_conf`: [`parse_str`] never panics; a configuration it accepts has distinct,
/// well-formed node names with at least one CPU, distinct named partitions whose nodes
/// exist and are listed once, at most one default partition, warnings that name the
/// file; an error names the file and a line of it. Inputs that mention `include` are
/// skipped: `Include` reads other files.
pub fn check_slurm_conf(data: &[u8]) {
    let text = text(data);
    if text.to_ascii_lowercase().contains("include") {
        return;
    }
    let path = Path::new("fuzz.conf");
    let conf = match parse_str(&text, path) {
        Ok(conf) => conf,
        Err(e) => {
            assert_eq!(e.path, path, "error for {text:?}: {e}");
            assert!(
                e.line <= text.lines().count() && !e.message.is_empty(),
                "error for {text:?}: {e}"
            );
            return;
        }
    };
    let what = |m: &str| format!("slurm.conf {text:?}: {m}");
    let cluster = &conf.cluster;
    let mut names = HashSet::new();
    for n in &cluster.nodes {
        assert!(is_host_name(&n.name), "{}", what(&n.name));
        assert!(names.insert(n.name.as_str()), "{}", what(&n.name));
        assert!(n.capacity.cpus >= 1, "{}", what(&n.name));
    }
    let mut parts = HashSet::new();
    for p in &cluster.partitions {
        assert!(!p.name.is_empty(), "{}", what("partition without a name"));
        assert!(parts.insert(p.name.as_str()), "{}", what(&p.name));
        let mut ids = HashSet::new();
        for id in &p.nodes {
            assert!(
                (id.0 as usize) < cluster.nodes.len() && ids.insert(id.0),
                "{}",
                what(&format!("partition {} lists node {} wrongly", p.name, id.0))
            );
        }
    }
    let defaults = cluster.partitions.iter().filter(|p| p.is_default).count();
    assert!(defaults <= 1, "{}", what("several default partitions"));
    for w in &conf.warnings {
        assert!(w.starts_with("fuzz.conf"), "{}", what(w));
    }
    for (key, (_, value)) in &conf.settings {
        assert_eq!(conf.get(key), Some(value.as_str()), "{}", what(key));
    }
    assert!(
        ["sched/backfill", "sched/builtin"].contains(&conf.scheduler_type.as_str()),
        "{}",
        what(&conf.scheduler_type)
    );
}
