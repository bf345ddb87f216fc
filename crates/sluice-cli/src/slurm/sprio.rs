//! `sprio`: pending jobs' multifactor priorities and their factors, in Slurm 22.05's
//! shapes (`-l`, `-n`, `-w`, `-o`, `-u`, `-j`, `-p`, `-h`).
//!
//! Weighted factors print rounded to whole numbers (the priority itself is the
//! truncated sum of the unrounded ones, so the columns may not add up exactly, as in
//! Slurm); normalized ones with 7 decimals, the normalized priority (its value over
//! 2³² − 1) with 14, cut to the column's width.

use sluice_proto::priority::{Factor, JobPriority, PriorityReport};

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};

use super::common::{controller, describe, fail, Refusal, VERSION};
use super::format::{self, Field};

/// What to show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `-l`: every factor, with the user and nice.
    pub long: bool,
    /// `-n`: normalized factors.
    pub normalized: bool,
    /// `-w`: the weights only.
    pub weights: bool,
    /// `-h`: no header.
    pub no_header: bool,
    /// `-o`: a format of its own.
    pub format: Option<String>,
    /// `-u`: these users' jobs.
    pub users: Vec<String>,
    /// `-j`: these jobs.
    pub jobs: Vec<u64>,
    /// `-p`: these partitions' jobs.
    pub partitions: Vec<String>,
    /// `--help`.
    pub help: bool,
    /// `--usage`.
    pub usage: bool,
    /// `-V`, `--version`.
    pub version: bool,
}

const CODES: &str = "iuYySAaBbFfJjPpQqNTtrc";

/// The format the options ask for: the weight columns shown are those with a weight
/// (all with `-l`), the user with `-l` or `-u`.
fn default_format(o: &Options, r: &PriorityReport) -> String {
    let w = &r.weights;
    let show = |weight: u32| o.long || weight > 0;
    let user = o.long || !o.users.is_empty();
    let mut f = String::from("%.15i %9r");
    if o.normalized {
        if user {
            f.push_str(" %.8u");
        }
        f.push_str(" %10y");
        for (weight, code) in [
            (w.age, 'a'),
            (w.assoc, 'b'),
            (w.fairshare, 'f'),
            (w.job_size, 'j'),
            (w.partition, 'p'),
            (w.qos, 'q'),
        ] {
            if show(weight) {
                f.push_str(&format!(" %10{code}"));
            }
        }
        if o.long || !w.tres.is_empty() {
            f.push_str(" %20t");
        }
    } else {
        if user {
            f.push_str(" %.8u");
        }
        f.push_str(" %.10Y %.10S");
        for (weight, code) in [
            (w.age, 'A'),
            (w.assoc, 'B'),
            (w.fairshare, 'F'),
            (w.job_size, 'J'),
            (w.partition, 'P'),
            (w.qos, 'Q'),
        ] {
            if show(weight) {
                f.push_str(&format!(" %.10{code}"));
            }
        }
        if o.long {
            f.push_str(" %.11N");
        }
        if o.long || !w.tres.is_empty() {
            f.push_str(" %.20T");
        }
    }
    f
}

fn header(code: char) -> &'static str {
    match code {
        'i' => "JOBID",
        'u' => "USER",
        'Y' | 'y' => "PRIORITY",
        'S' => "SITE",
        'A' | 'a' => "AGE",
        'B' | 'b' => "ASSOC",
        'F' | 'f' => "FAIRSHARE",
        'J' | 'j' => "JOBSIZE",
        'P' | 'p' | 'r' => "PARTITION",
        'Q' | 'q' => "QOS",
        'N' => "NICE",
        'T' | 't' => "TRES",
        'c' => "CLUSTER",
        _ => "",
    }
}

fn weighted(f: &Factor) -> String {
    format!("{}", f.weighted.round() as i64)
}

fn normalized(f: &Factor) -> String {
    format!("{:.7}", f.normalized)
}

/// The priority before truncation: the weighted factors' sum.
fn exact_priority(j: &JobPriority) -> f64 {
    let parts = [
        &j.age,
        &j.assoc,
        &j.fairshare,
        &j.job_size,
        &j.partition_factor,
        &j.qos,
    ];
    let tres: f64 = j.tres.iter().map(|t| t.factor.weighted).sum();
    (j.site as f64 + parts.iter().map(|f| f.weighted).sum::<f64>() + tres - j.nice as f64).max(0.0)
}

/// The value of `code` for job `j`.
fn value(code: char, j: &JobPriority) -> String {
    match code {
        'i' => j.job_id.to_string(),
        'u' => j.user.clone(),
        'Y' => j.priority.to_string(),
        // The unrounded sum of the weighted factors, over 2³² − 1.
        'y' => format!("{:.14}", exact_priority(j) / f64::from(u32::MAX)),
        'S' => j.site.to_string(),
        'A' => weighted(&j.age),
        'a' => normalized(&j.age),
        'B' => weighted(&j.assoc),
        'b' => normalized(&j.assoc),
        'F' => weighted(&j.fairshare),
        'f' => normalized(&j.fairshare),
        'J' => weighted(&j.job_size),
        'j' => normalized(&j.job_size),
        'P' => weighted(&j.partition_factor),
        'p' => normalized(&j.partition_factor),
        'Q' => weighted(&j.qos),
        'q' => normalized(&j.qos),
        'N' => j.nice.to_string(),
        'T' => j
            .tres
            .iter()
            .map(|t| format!("{}={}", t.name, t.factor.weighted.round() as i64))
            .collect::<Vec<_>>()
            .join(","),
        't' => j
            .tres
            .iter()
            .map(|t| format!("{}={:.2}", t.name, t.factor.normalized))
            .collect::<Vec<_>>()
            .join(","),
        'r' => j.partition.clone(),
        'c' => "(null)".into(),
        _ => String::new(),
    }
}

/// The weights row of `-w` for `code`.
fn weight_value(code: char, r: &PriorityReport, normalized: bool) -> String {
    let w = &r.weights;
    match code {
        'i' => "Weights".into(),
        'S' => "1".into(),
        'A' | 'a' => w.age.to_string(),
        'B' | 'b' => w.assoc.to_string(),
        'F' | 'f' => w.fairshare.to_string(),
        'J' | 'j' => w.job_size.to_string(),
        'P' | 'p' => w.partition.to_string(),
        'Q' | 'q' => w.qos.to_string(),
        'T' if !normalized => w.tres.clone(),
        _ => String::new(),
    }
}

/// What `sprio` prints for `report`: stdout, and the lines for stderr (unknown format
/// letters, as Slurm warns about each).
pub fn render(o: &Options, report: &PriorityReport) -> (String, Vec<String>) {
    let fmt = o
        .format
        .clone()
        .unwrap_or_else(|| default_format(o, report));
    let codes: Vec<char> = format::codes(&fmt).collect();
    let mut errors = Vec::new();
    for c in &codes {
        if !CODES.contains(*c) {
            errors.push(format!("Invalid job format specification: {c}"));
        }
    }
    let known = |c: char| CODES.contains(c);
    let fields = |f: &dyn Fn(char) -> String| -> Vec<Field> {
        codes
            .iter()
            .filter(|c| known(**c))
            .map(|c| Field {
                header: header(*c),
                value: f(*c),
            })
            .collect()
    };
    let head = fields(&|_| String::new());
    let head = (!o.no_header).then_some(&head);
    if o.weights {
        let row = fields(&|c| weight_value(c, report, o.normalized));
        return (format::render(&fmt, head, &[row], &known), errors);
    }
    let jobs: Vec<&JobPriority> = report
        .jobs
        .iter()
        .filter(|j| o.jobs.is_empty() || o.jobs.contains(&j.job_id))
        .filter(|j| o.users.is_empty() || o.users.contains(&j.user))
        .filter(|j| o.partitions.is_empty() || o.partitions.contains(&j.partition))
        .collect();
    if jobs.is_empty() && !o.jobs.is_empty() {
        return (
            "Unable to find jobs matching user/id(s) specified\n".into(),
            errors,
        );
    }
    let rows: Vec<Vec<Field>> = jobs.iter().map(|j| fields(&|c| value(c, j))).collect();
    (format::render(&fmt, head, &rows, &known), errors)
}

/// sprio's options: Slurm 22.05's table, in its order (which orders the candidates of
/// an ambiguous prefix), with its value kinds (`-j` takes a value only when
/// attached).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("noheader", Some('h')),
    Opt::optional("jobs", Some('j')),
    Opt::flag("long", Some('l')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::flag("norm", Some('n')),
    Opt::required("format", Some('o')),
    Opt::required("sort", Some('S')),
    Opt::required("partition", Some('p')),
    Opt::required("user", Some('u')),
    Opt::required("users", None).alias_of("user"),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::flag("weights", Some('w')),
    Opt::flag("federation", None),
    Opt::flag("help", None),
    Opt::flag("local", None),
    Opt::flag("sib", None).alias_of("sibling"),
    Opt::flag("sibling", None),
    Opt::flag("usage", None),
];

/// Parses `sprio`'s arguments (`--help`, `--usage` and `--version` end them, as
/// sprio exits there). `-j` without a value takes the first operand as its list, as
/// sprio does; another operand is refused.
///
/// Errors: what sprio prints for the line and its exit status (an unknown option, a
/// missing value, a job id that is not a number, an operand it cannot take).
pub fn parse(args: Vec<String>) -> Result<Options, Refusal> {
    const ME: &str = "sprio";
    let mut o = Options::default();
    let mut job_flag = false;
    let mut operands = Vec::new();
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item.map_err(|e| Refusal::getopt(ME, &e))? {
            Parsed::Opt(f) => f,
            Parsed::Operand(w) => {
                operands.push(w);
                continue;
            }
        };
        match f.name() {
            "long" => o.long = true,
            "norm" => o.normalized = true,
            "weights" => o.weights = true,
            "noheader" => o.no_header = true,
            "format" => o.format = f.value,
            "user" => o.users.extend(f.list()),
            "partition" => o.partitions.extend(f.list()),
            "jobs" => {
                job_flag = true;
                if let Some(list) = &f.value {
                    o.jobs = job_list(list)?;
                }
            }
            "help" => {
                o.help = true;
                return Ok(o);
            }
            "usage" => {
                o.usage = true;
                return Ok(o);
            }
            "version" => {
                o.version = true;
                return Ok(o);
            }
            // Accepted, no effect.
            "clusters" | "verbose" => {}
            _ => return Err(Refusal::unsupported(ME, f.opt)),
        }
    }
    let mut operands = operands.into_iter();
    if job_flag {
        if let Some(list) = operands.next() {
            o.jobs = job_list(&list)?;
        }
    }
    if let Some(w) = operands.next() {
        return Err(Refusal::error(ME, format!("Unrecognized option: {w}")).with_stdout(USAGE));
    }
    Ok(o)
}

/// A `-j` list of job ids.
fn job_list(list: &str) -> Result<Vec<u64>, Refusal> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|id| {
            id.parse()
                .map_err(|_| Refusal::error("sprio", format!("Invalid job id: {id}")))
        })
        .collect()
}

/// sprio's usage, as Slurm 22.05 prints it (`--usage`, and on standard output after an
/// operand it cannot take).
const USAGE: &str = "\
Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]
   [--federation] [--local] [--sibling] [--usage] [-hlnvVw]
";

/// `--help`: Sluice's summary of what it implements.
const HELP: &str = "Usage: sprio [OPTIONS]
  -h, --noheader          no header line
  -j, --jobs[=JOBS]       these jobs only
  -l, --long              every factor, with the user and nice
  -n, --norm              normalized factors
  -o, --format=FORMAT     the format's %-codes (i u Y y S A a B b F f J j P p Q q N T t r c)
  -p, --partition=PARTS   these partitions' jobs only
  -u, --user=USERS        these users' jobs only
  -V, --version           Slurm's version
  -w, --weights           the configured weights
      --help              this help
      --usage             Slurm's usage line\n";

/// Runs `sprio`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "sprio";
    let o = parse(args).unwrap_or_else(|r| r.exit());
    if o.help {
        print!("{HELP}");
        return 0;
    }
    if o.usage {
        print!("{USAGE}");
        return 0;
    }
    if o.version {
        println!("{VERSION}");
        return 0;
    }
    let report: PriorityReport = controller()
        .get("/v1/priority")
        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
    if !report.multifactor {
        eprintln!(
            "You are not running a supported priority plugin\n(priority/basic).\n\
             Only 'priority/multifactor' is supported."
        );
        return 1;
    }
    let (out, errors) = render(&o, &report);
    for e in errors {
        eprintln!("{ME}: error: {e}");
    }
    print!("{out}");
    0
}

#[cfg(test)]
mod tests;
