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

/// A column: header, width, value.
struct Column {
    header: &'static str,
    width: usize,
    left: bool,
    value: fn(&ShareRow) -> String,
}

fn six(x: f64) -> String {
    format!("{x:.6}")
}

fn columns(long: bool, fair_tree: bool) -> Vec<Column> {
    let mut c = vec![
        Column {
            header: "Account",
            width: 20,
            left: true,
            value: |r| r.account.clone(),
        },
        Column {
            header: "User",
            width: 10,
            left: false,
            value: |r| r.user.clone().unwrap_or_default(),
        },
        Column {
            header: "RawShares",
            width: 10,
            left: false,
            value: |r| r.raw_shares.clone().unwrap_or_default(),
        },
        Column {
            header: "NormShares",
            width: 11,
            left: false,
            value: |r| six(r.norm_shares),
        },
        Column {
            header: "RawUsage",
            width: 11,
            left: false,
            value: |r| format!("{:.0}", r.raw_usage),
        },
    ];
    if long {
        c.push(Column {
            header: "NormUsage",
            width: 11,
            left: false,
            value: |r| r.norm_usage.map(six).unwrap_or_default(),
        });
    }
    c.push(Column {
        header: "EffectvUsage",
        width: 13,
        left: false,
        value: |r| six(r.effective_usage),
    });
    c.push(Column {
        header: "FairShare",
        width: 10,
        left: false,
        value: |r| r.fairshare.map(six).unwrap_or_default(),
    });
    if long {
        if fair_tree {
            c.push(Column {
                header: "LevelFS",
                width: 10,
                left: false,
                value: |r| match r.level_fs {
                    Some(x) if x.is_infinite() => "inf".into(),
                    Some(x) => six(x),
                    None => String::new(),
                },
            });
        }
        c.push(Column {
            header: "GrpTRESMins",
            width: 30,
            left: false,
            value: |r| r.grp_tres_mins.clone(),
        });
        c.push(Column {
            header: "TRESRunMins",
            width: 30,
            left: false,
            value: |r| r.tres_run_mins.clone(),
        });
    }
    c
}

/// Pads or cuts `s` to `width` as Slurm's fields do: a longer value keeps
/// `width − 1` characters and a `+`.
fn fit(s: &str, width: usize, left: bool) -> String {
    let n = s.chars().count();
    let s = if n > width {
        let mut t: String = s.chars().take(width - 1).collect();
        t.push('+');
        t
    } else {
        s.to_string()
    };
    if left {
        format!("{s:<width$}")
    } else {
        format!("{s:>width$}")
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

/// What `sshare` prints for `report`, the caller being `me`.
pub fn render(o: &Options, report: &SharesReport, me: &str) -> String {
    let cols = columns(o.long, report.fair_tree);
    let rows = select(o, report, me);
    let mut out = String::new();
    let cell = |c: &Column, r: &ShareRow, depth: u32| {
        let v = (c.value)(r);
        if c.header == "Account" {
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
            out.push_str(&line(cols.iter().map(|c| c.header.to_string()).collect()));
        }
        for (depth, r) in rows {
            out.push_str(&line(cols.iter().map(|c| cell(c, r, depth)).collect()));
        }
        return out;
    }
    if !o.no_header {
        for c in &cols {
            out.push_str(&fit(c.header, c.width, c.left));
            out.push(' ');
        }
        out.push('\n');
        for c in &cols {
            out.push_str(&"-".repeat(c.width));
            out.push(' ');
        }
        out.push('\n');
    }
    for (depth, r) in rows {
        for c in &cols {
            out.push_str(&fit(&cell(c, r, depth), c.width, c.left));
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

/// `--help` and `--usage`.
const USAGE: &str = "Usage: sshare [OPTIONS]
  -a, --all               every user (not only yourself)
  -A, --accounts=ACCOUNTS these accounts only
  -l, --long              normalized usage, LevelFS, GrpTRESMins, TRESRunMins
  -n, -h, --noheader      no header lines
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
    let report: SharesReport = controller()
        .get("/v1/shares")
        .unwrap_or_else(|e| fail(ME, describe(&e), 1));
    print!("{}", render(&o, &report, &current_user()));
    0
}

#[cfg(test)]
mod tests;
