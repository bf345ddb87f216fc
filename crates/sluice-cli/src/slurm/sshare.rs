//! `sshare`: fair-share figures of associations, in Slurm 22.05's shapes (`-a`, `-A`,
//! `-u`, `-l`, `-P`, `-p`, `-n`).
//!
//! Without `-a` or `-u`, only the caller's own user associations are listed (with
//! every account); with `-A`, only the accounts named and their users, indented from
//! those accounts.

use sluice_proto::priority::{ShareRow, SharesReport};

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};

use super::common::{controller, describe, fail, Refusal, VERSION};
use super::squeue::current_user;

/// What to show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `-a`: every user.
    pub all: bool,
    /// `-l`: usage normalized, LevelFS, GrpTRESMins, TRESRunMins.
    pub long: bool,
    /// `-n`: no header.
    pub no_header: bool,
    /// `-P` (`Some(false)`) or `-p` (`Some(true)`, with a trailing `|`).
    pub parsable: Option<bool>,
    /// `-A`: these accounts only.
    pub accounts: Vec<String>,
    /// `-u`: these users.
    pub users: Vec<String>,
    /// `-o`: the fields (`Account,FairShare%12`), as given (every `-o` adds to them).
    pub format: Option<String>,
    /// `-e`: list the fields `-o` knows.
    pub helpformat: bool,
    /// `--help`, `--usage`.
    pub help: bool,
    /// `-V`, `--version`.
    pub version: bool,
}

/// sshare's options: Slurm 22.05's table, in its order (which orders the candidates of
/// an ambiguous prefix), with its value kinds, and its letters without a long name:
/// `-h` (another `-n`), and `-q` and `-t`, which its getopt string has and its code
/// does not (`getopt error, returned q`).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::required("accounts", Some('A')),
    Opt::flag("all", Some('a')),
    Opt::flag("helpformat", Some('e')),
    Opt::flag("long", Some('l')),
    Opt::flag("partition", Some('m')),
    Opt::required("cluster", None).alias_of("clusters"),
    Opt::required("clusters", Some('M')),
    Opt::flag("noheader", Some('n')),
    Opt::required("format", Some('o')),
    Opt::flag("parsable", Some('p')),
    Opt::flag("parsable2", Some('P')),
    Opt::required("users", Some('u')),
    Opt::flag("Users", Some('U')),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
    Opt::flag("help", None),
    Opt::flag("usage", None),
    Opt::flag("", Some('h')).alias_of("noheader"),
    Opt::flag("", Some('q')),
    Opt::required("", Some('t')),
];

/// Parses `sshare`'s arguments (`--help`, `--usage` and `--version` end them, as
/// sshare exits there); words that are no option are ignored, as sshare ignores them.
///
/// Errors: what sshare prints for the line and its exit status (an unknown option, a
/// missing value).
pub fn parse(args: Vec<String>) -> Result<Options, Refusal> {
    const ME: &str = "sshare";
    let mut o = Options::default();
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item.map_err(|e| Refusal::getopt(ME, &e))? {
            Parsed::Opt(f) => f,
            Parsed::Operand(_) => continue,
        };
        match f.name() {
            "all" => o.all = true,
            "long" => o.long = true,
            "noheader" => o.no_header = true,
            "parsable2" => o.parsable = Some(false),
            "parsable" => o.parsable = Some(true),
            "accounts" => o.accounts.extend(f.list()),
            "users" => o.users.extend(f.list()),
            "format" => {
                let all = o.format.get_or_insert_with(String::new);
                all.push_str(f.value());
                all.push(',');
            }
            // As sshare: the list is printed as soon as the option is read.
            "helpformat" => {
                o.helpformat = true;
                return Ok(o);
            }
            "help" | "usage" => {
                o.help = true;
                return Ok(o);
            }
            "version" => {
                o.version = true;
                return Ok(o);
            }
            // Accepted, no effect.
            "clusters" | "verbose" => {}
            // In sshare's getopt string, not in its code.
            "" => {
                return Err(Refusal {
                    stdout: String::new(),
                    stderr: format!(
                        "getopt error, returned {}\n",
                        f.opt.short.unwrap_or_default()
                    ),
                    code: 1,
                })
            }
            _ => return Err(Refusal::unsupported(ME, f.opt)),
        }
    }
    Ok(o)
}

/// A column: header, width (negative: left-justified), value.
struct Column {
    header: &'static str,
    width: i32,
    value: fn(&ShareRow, &Context) -> String,
}

/// What a row's values need besides the row.
struct Context<'a> {
    /// `Cluster`.
    cluster: &'a str,
}

fn six(x: f64) -> String {
    format!("{x:.6}")
}

/// Every field `-o` knows, in sshare's order (a name given matches the first field it
/// begins, any case: `A` is `Account`, `Eff` `EffectvUsage`), with its default width.
const FIELDS: &[Column] = &[
    Column {
        header: "Account",
        width: -20,
        value: |r, _| r.account.clone(),
    },
    Column {
        header: "Cluster",
        width: 10,
        value: |_, c| c.cluster.to_string(),
    },
    Column {
        header: "EffectvUsage",
        width: 13,
        value: |r, _| six(r.effective_usage),
    },
    Column {
        header: "FairShare",
        width: 10,
        value: |r, _| r.fairshare.map(six).unwrap_or_default(),
    },
    Column {
        header: "GrpTRESMins",
        width: 30,
        value: |r, _| r.grp_tres_mins.clone(),
    },
    Column {
        header: "GrpTRESRaw",
        width: 30,
        value: |r, _| r.grp_tres_raw.clone(),
    },
    Column {
        header: "ID",
        width: 6,
        value: |r, _| r.assoc_id.map(|i| i.to_string()).unwrap_or_default(),
    },
    Column {
        header: "LevelFS",
        width: 10,
        value: |r, _| match r.level_fs {
            Some(x) if x.is_infinite() => "inf".into(),
            Some(x) => six(x),
            None => String::new(),
        },
    },
    Column {
        header: "NormShares",
        width: 11,
        value: |r, _| six(r.norm_shares),
    },
    Column {
        header: "NormUsage",
        width: 11,
        value: |r, _| r.norm_usage.map(six).unwrap_or_default(),
    },
    Column {
        header: "Partition",
        width: 12,
        value: |_, _| String::new(),
    },
    Column {
        header: "RawShares",
        width: 10,
        value: |r, _| r.raw_shares.clone().unwrap_or_default(),
    },
    Column {
        header: "RawUsage",
        width: 11,
        value: |r, _| format!("{:.0}", r.raw_usage),
    },
    Column {
        header: "TRESRunMins",
        width: 30,
        value: |r, _| r.tres_run_mins.clone(),
    },
    Column {
        header: "User",
        width: 10,
        value: |r, _| r.user.clone().unwrap_or_default(),
    },
];

/// The columns `-o` names (`name` or `name%width`, a negative width left-justifies),
/// or the name of the first field it does not know, as sshare reads them.
pub fn format_columns(spec: &str) -> Result<Vec<(usize, i32)>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let (name, width) = match item.split_once('%') {
            // As atoi: a sign, digits, anything after ignored; 0 keeps the default.
            Some((n, w)) => {
                let sign = usize::from(w.starts_with(['-', '+']));
                let digits = w[sign..]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(w.len() - sign);
                (n, w[..sign + digits].parse::<i32>().unwrap_or(0))
            }
            None => (item, 0),
        };
        let at = FIELDS
            .iter()
            .position(|f| {
                f.header.len() >= name.len() && f.header[..name.len()].eq_ignore_ascii_case(name)
            })
            .ok_or_else(|| name.to_string())?;
        out.push((at, if width == 0 { FIELDS[at].width } else { width }));
    }
    Ok(out)
}

/// The default columns: sshare's lists for `-l` and Fair Tree.
fn default_format(long: bool, fair_tree: bool) -> &'static str {
    match (long, fair_tree) {
        (false, _) => "A,User,RawShares,NormShares,RawUsage,Eff,Fairshare",
        (true, true) => {
            "A,User,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,LevelFS,\
             GrpTRESMins,TRESRunMins"
        }
        (true, false) => {
            "A,User,RawShares,NormShares,RawUsage,NormUsage,Eff,Fairshare,GrpTRESMins,\
             TRESRunMins"
        }
    }
}

/// Pads or cuts `s` to `width` as Slurm's fields do: right-justified, or
/// left-justified for a negative width; a longer value keeps `width − 1` characters
/// and a `+`.
fn fit(s: &str, width: i32) -> String {
    let w = width.unsigned_abs() as usize;
    let n = s.chars().count();
    let s = if n > w {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('+');
        t
    } else {
        s.to_string()
    };
    if width < 0 {
        format!("{s:<w$}")
    } else {
        format!("{s:>w$}")
    }
}

/// The rows `o` selects from `report`, each with its indentation depth; `me` is the
/// caller (whose user associations are shown without `-a` or `-u`).
fn select<'a>(o: &Options, report: &'a SharesReport, me: &str) -> Vec<(u32, &'a ShareRow)> {
    let user_shown = |u: &str| {
        if !o.users.is_empty() {
            o.users.iter().any(|x| x == u)
        } else {
            o.all || u == me
        }
    };
    let mut out = Vec::new();
    for r in &report.rows {
        let shown = match &r.user {
            Some(u) => user_shown(u),
            None => true,
        };
        if !shown {
            continue;
        }
        if o.accounts.is_empty() {
            out.push((r.depth, r));
            continue;
        }
        if !o.accounts.contains(&r.account) {
            continue;
        }
        // Indented from the account named: its users one deeper.
        out.push((u32::from(r.user.is_some()), r));
    }
    out
}

/// What `sshare` prints for `report`, the caller being `me`, on cluster `cluster`.
///
/// Errors: the name of a field `-o` asks for that sshare does not know.
pub fn render(
    o: &Options,
    report: &SharesReport,
    me: &str,
    cluster: &str,
) -> Result<String, String> {
    let spec = o
        .format
        .clone()
        .unwrap_or_else(|| default_format(o.long, report.fair_tree).to_string());
    let cols = format_columns(&spec)?;
    let ctx = Context { cluster };
    let rows = select(o, report, me);
    let mut out = String::new();
    let cell = |at: usize, r: &ShareRow, depth: u32| {
        let v = (FIELDS[at].value)(r, &ctx);
        if FIELDS[at].header == "Account" {
            format!("{}{v}", " ".repeat(depth as usize))
        } else {
            v
        }
    };
    if let Some(trailing) = o.parsable {
        let line = |cells: Vec<String>| {
            let mut l = cells.join("|");
            if trailing {
                l.push('|');
            }
            l.push('\n');
            l
        };
        if !o.no_header {
            out.push_str(&line(
                cols.iter()
                    .map(|(at, _)| FIELDS[*at].header.to_string())
                    .collect(),
            ));
        }
        for (depth, r) in rows {
            out.push_str(&line(
                cols.iter().map(|(at, _)| cell(*at, r, depth)).collect(),
            ));
        }
        return Ok(out);
    }
    if !o.no_header {
        for (at, w) in &cols {
            out.push_str(&fit(FIELDS[*at].header, *w));
            out.push(' ');
        }
        out.push('\n');
        for (_, w) in &cols {
            out.push_str(&"-".repeat(w.unsigned_abs() as usize));
            out.push(' ');
        }
        out.push('\n');
    }
    for (depth, r) in rows {
        for (at, w) in &cols {
            out.push_str(&fit(&cell(*at, r, depth), *w));
            out.push(' ');
        }
        out.push('\n');
    }
    Ok(out)
}

/// `-e`: the fields `-o` knows, four to a line in 17-character columns, as sshare
/// lists them.
fn help_format() -> String {
    let mut out = String::new();
    for (i, f) in FIELDS.iter().enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{:<17}", f.header));
    }
    out.push('\n');
    out
}

/// `--help` and `--usage`.
const USAGE: &str = "Usage: sshare [OPTIONS]
  -a, --all               every user (not only yourself)
  -A, --accounts=ACCOUNTS these accounts only
  -l, --long              normalized usage, LevelFS, GrpTRESMins, TRESRunMins
  -e, --helpformat        list the fields -o knows
  -n, -h, --noheader      no header lines
  -o, --format=FIELDS     these fields (name[%width], comma separated)
  -p, --parsable          '|' between fields, one at the end
  -P, --parsable2         '|' between fields
  -u, --users=USERS       these users
  -V, --version           Slurm's version
      --help, --usage     this help\n";

/// Runs `sshare`.
pub fn main(args: Vec<String>) -> i32 {
    const ME: &str = "sshare";
    let o = parse(args).unwrap_or_else(|r| r.exit());
    if o.help {
        print!("{USAGE}");
        return 0;
    }
    if o.version {
        println!("{VERSION}");
        return 0;
    }
    if o.helpformat {
        print!("{}", help_format());
        return 0;
    }
    // Fields are checked before anything is asked of the controller, as sshare does.
    if let Some(spec) = &o.format {
        if let Err(name) = format_columns(spec) {
            fail(ME, format!("Invalid field requested: \"{name}\""), 1);
        }
    }
    let client = controller();
    let report: SharesReport = client
        .get("/v1/shares")
        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
    let cluster = client
        .get::<sluice_proto::types::ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .unwrap_or_default();
    match render(&o, &report, &current_user(), &cluster) {
        Ok(text) => print!("{text}"),
        Err(name) => fail(ME, format!("Invalid field requested: \"{name}\""), 1),
    }
    0
}

#[cfg(test)]
mod tests;
