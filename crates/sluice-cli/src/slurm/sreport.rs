//! `sreport`: usage reports from the accounting records, in Slurm 22.05's shapes —
//! `cluster Utilization`, `cluster AccountUtilizationByUser` and `user TopUsage`, with
//! `-t` (minutes, hours, seconds, percent and the `MinPer` forms), `start=`/`end=`,
//! `-P`/`-p`, `-n`, `-T`, `format=`, `users=`, `accounts=`, `tree`, `group`,
//! `TopCount=`.
//!
//! The figures are computed from the stored jobs, exact to the second (`usage.rs`);
//! Slurm's come from its hourly rollup. Commands are read from the line, or, without
//! one, from standard input one per line as sreport's own prompt takes them.

mod assoc_tree;
mod columns;
mod conditions;
mod period;
mod print;
mod reports;
#[cfg(test)]
mod tests;
mod usage;

use std::io::BufRead;

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_proto::accounts::AccountsSnapshot;
use sluice_proto::types::{Accounting, AccountingQuery, ConfigInfo, NodeInfo};

use super::common::{controller, describe, now, Refusal, VERSION};
use print::{ncase_eq, Layout, Parsable, TimeFormat};
use reports::{Data, Output, Settings};

const ME: &str = "sreport";

/// sreport's options, as Slurm 22.05's table (`aM:hnpPQs:t:T:vV`).
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("all_clusters", Some('a')),
    Opt::required("cluster", Some('M')),
    Opt::flag("federation", None),
    Opt::flag("help", Some('h')),
    Opt::flag("immediate", Some('i')),
    Opt::flag("local", None),
    Opt::flag("noheader", Some('n')),
    Opt::flag("parsable", Some('p')),
    Opt::flag("parsable2", Some('P')),
    Opt::flag("quiet", Some('Q')),
    Opt::required("sort", Some('s')),
    Opt::required("tres", Some('T')),
    Opt::required("", Some('t')).alias_of("time"),
    Opt::flag("usage", None).alias_of("help"),
    Opt::flag("verbose", Some('v')),
    Opt::flag("version", Some('V')),
];

/// `sreport --help`: the options and commands Sluice's sreport takes.
const HELP: &str = "\
Usage: sreport [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a or --all_clusters: Use all clusters instead of current
     -h or --help: equivalent to \"help\" command
     -n or --noheader: equivalent to \"noheader\" command
     -p or --parsable: output '|' delimited, with a trailing '|'
     -P or --parsable2: output '|' delimited, without a trailing '|'
     -Q or --quiet: equivalent to \"quiet\" command
     -t <time_format>: Minutes (default), Hours, Seconds, Percent,
        MinPer, HourPer or SecPer
     -T or --tres: the TRES to report on (default cpu; ALL for all)
     -v or --verbose: equivalent to \"verbose\" command
     -V or --version: equivalent to \"version\" command

  <keyword> may be omitted from the execute line and sreport will execute
  in interactive mode. It will process commands as entered until explicitly
  terminated.

    Valid <COMMAND> values are:
     exit                Terminate sreport
     help                Print this description of use.
     nonparsable         Return output to normal
     parsable            Output '|' delimited, with a trailing '|'
     parsable2           Output '|' delimited, without a trailing '|'
     quiet               Print no messages other than error messages.
     quit                Terminate this command.
     time <format>       Set the time format (as -t).
     verbose             Enable detailed logging.
     version             Display tool version number.
     !!                  Repeat the last command entered.

    Valid report types are:
     cluster <REPORT> <OPTIONS>
     user <REPORT> <OPTIONS>

  <REPORT> is different for each report type.
     cluster - AccountUtilizationByUser, Utilization
     user    - TopUsage

  <OPTIONS> are different for each report type.

     COMMON FOR ALL TYPES
             - All_Clusters     - Use all monitored clusters default is
                                  local cluster.
             - Clusters=<OPT>   - List of clusters to include in report
                                  Default is local cluster.
             - End=<OPT>        - Period ending for report.
                                  Default is 23:59:59 of previous day.
             - Format=<OPT>     - Comma separated list of fields to display
                                  in report.
             - Start=<OPT>      - Period start for report.
                                  Default is 00:00:00 of previous day.

     cluster - Accounts=<OPT>   - When used with the UserUtilizationByAccount,
                                  or AccountUtilizationByUser, List of accounts
                                  to include in report.  Default is all.
             - Tree             - When used with the AccountUtilizationByUser
                                  report will span the accounts as they
                                  are in the hierarchy.
             - Users=<OPT>      - List of users to include in report.
                                  Default is all.

     user    - Accounts=<OPT>   - List of accounts to use for the report
                                  Default is all.
             - Group            - Group all accounts together for each user.
                                  Default is a separate entry for each user
                                  and account reference.
             - TopCount=<OPT>   - Used in the TopUsage report.  Change the
                                  number of users displayed.  Default is 10.
             - Users=<OPT>      - List of users jobs to include in report.
                                  Default is all.

  Sluice computes the figures from its stored jobs, exact to the second.
";

/// The state a run of sreport keeps between commands.
struct Session {
    settings: Settings,
    quiet: bool,
    verbose: bool,
    /// Set by `exit`/`quit`.
    done: bool,
    /// The exit status so far.
    code: i32,
}

/// What the reports read, from the controller: jobs touching the period's widest
/// possible span (everything submitted by now that ended since `start`), the
/// cluster's name, nodes and association tree.
fn gather(start: i64, t: i64) -> Result<Data, String> {
    let client = controller();
    let err = |e: sluice_proto::ClientError| describe(&e);
    let cluster = client
        .get::<ConfigInfo>("/v1/config")
        .map(|c| c.cluster_name)
        .map_err(err)?;
    let nodes: Vec<NodeInfo> = client.get("/v1/nodes").map_err(err)?;
    let query = AccountingQuery {
        since: Some(start),
        duplicates: true,
        ..AccountingQuery::default()
    };
    let acct: Accounting = client.post("/v1/accounting", &query).map_err(err)?;
    let mut around = acct
        .jobs
        .iter()
        .chain(&acct.runs)
        .map(|j| j.submit_time)
        .min();
    // The cluster has records from its first job on: one submitted before the period
    // (found only when none of the period's jobs is that old) makes it whole.
    if around.is_none_or(|a| a > start) {
        let before = AccountingQuery {
            until: Some(start),
            ..AccountingQuery::default()
        };
        let older: Accounting = client.post("/v1/accounting", &before).map_err(err)?;
        if !older.jobs.is_empty() {
            around = Some(start);
        }
    }
    let assocs = client
        .get::<AccountsSnapshot>("/v1/accounts")
        .map(|s| s.associations)
        .unwrap_or_default();
    let mut runs = acct.jobs;
    runs.extend(acct.runs);
    Ok(Data {
        cluster,
        runs,
        around,
        nodes,
        assocs,
        now: t,
    })
}

/// The start of the period a report's conditions ask for (what to read jobs from).
fn period_start(args: &[String], t: i64) -> i64 {
    let (mut start, mut end) = (0, 0);
    for a in args {
        if let Some((k, v)) = a.split_once('=') {
            let time = || period::parse_report_time(v, t).unwrap_or(0);
            if ncase_eq(k, "Start", k.len().max(1)) {
                start = time();
            } else if ncase_eq(k, "End", k.len().max(1)) {
                end = time().min(t);
            }
        }
    }
    period::report_period(start, end, t).start
}

/// Runs one report with `args` (its conditions) through `report`.
fn run_report(s: &mut Session, args: &[String], report: fn(&[String], &Data, &Settings) -> Output) {
    let t = now();
    let data = match gather(period_start(args, t), t) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{ME}: error: {e}");
            s.code = 1;
            return;
        }
    };
    let out = report(args, &data, &s.settings);
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    if out.code != 0 {
        s.code = out.code;
    }
}

/// `-t`/`time`: sets the format, or says it is unknown (without a newline, as sreport)
/// and keeps the one set.
fn set_time_format(s: &mut Session, v: &str) {
    match TimeFormat::parse(v) {
        Some(f) => s.settings.format = f,
        None => eprint!("unknown time format {v}"),
    }
}

fn too_few(s: &mut Session, word: &str) {
    s.code = 1;
    if !s.quiet {
        eprintln!("too few arguments for keyword:{word}");
    }
}

fn too_many(s: &mut Session, word: &str, args: &[String]) {
    if args.len() > 1 {
        s.code = 1;
        eprintln!("too many arguments for keyword:{word}");
    }
}

/// `cluster REPORT ...`.
fn cluster_report(s: &mut Session, args: &[String]) {
    let name = args[0].as_str();
    let rest = &args[1..];
    if ncase_eq(name, "AccountUtilizationByUser", 1) {
        run_report(s, rest, reports::account_by_user);
    } else if ncase_eq(name, "UserUtilizationByAccount", 18)
        || ncase_eq(name, "UA", 2)
        || ncase_eq(name, "UserUtilizationByWckey", 18)
        || ncase_eq(name, "UW", 2)
        || ncase_eq(name, "WCKeyUtilizationByUser", 1)
    {
        s.code = 1;
        eprintln!("{ME}: error: the cluster report {name} is not supported by Sluice");
    } else if ncase_eq(name, "Utilization", 2) {
        run_report(s, rest, reports::utilization);
    } else {
        s.code = 1;
        eprintln!("Not valid report {name}");
        eprintln!(
            "Valid cluster reports are, \"AccountUtilizationByUser\", \
             \"UserUtilizationByAccount\", \"UserUtilizationByWckey\", \"Utilization\", \
             and \"WCKeyUtilizationByUser\""
        );
    }
}

/// `user REPORT ...`.
fn user_report(s: &mut Session, args: &[String]) {
    if ncase_eq(&args[0], "Top", 1) {
        run_report(s, &args[1..], reports::top_usage);
    } else {
        s.code = 1;
        eprintln!("Not valid report {}", args[0]);
        eprintln!("Valid user reports are, \"Top\"");
    }
}

/// One command: a report, or a setting (`time hours`, `parsable2`, ...).
fn process(s: &mut Session, args: &[String]) {
    let Some(word) = args.first() else {
        s.code = 1;
        if s.verbose {
            eprint!("no input");
        }
        return;
    };
    let n = word.len();
    let is = |name: &str, min: usize| ncase_eq(word, name, n.max(min));
    if is("cluster", 2) {
        if args.len() < 2 {
            too_few(s, word);
        } else {
            cluster_report(s, &args[1..]);
        }
    } else if is("help", 2) {
        too_many(s, word, args);
        print!("{HELP}");
    } else if is("job", 1) || is("reservation", 2) || is("resv", 2) {
        if args.len() < 2 {
            too_few(s, word);
        } else {
            s.code = 1;
            eprintln!("{ME}: error: {word} reports are not supported by Sluice");
        }
    } else if is("quiet", 4) {
        too_many(s, word, args);
        s.quiet = true;
    } else if is("exit", 1) || is("\\q", 2) || is("quit", 4) {
        too_many(s, word, args);
        s.done = true;
    } else if is("local", 3) {
        too_many(s, word, args);
    } else if is("nonparsable", 4) {
        too_many(s, word, args);
        s.settings.layout.parsable = None;
    } else if is("parsable", 8) {
        too_many(s, word, args);
        s.settings.layout.parsable = Some(Parsable::Ending);
    } else if is("parsable2", 9) {
        too_many(s, word, args);
        s.settings.layout.parsable = Some(Parsable::NoEnding);
    } else if is("sort", 1) {
        if args.len() < 2 {
            s.code = 1;
            eprintln!("too few arguments for keyword:{word}");
        }
    } else if is("time", 1) {
        if args.len() < 2 {
            s.code = 1;
            eprintln!("too few arguments for keyword:{word}");
        } else {
            set_time_format(s, &args[1]);
        }
    } else if is("verbose", 4) {
        if args.len() > 1 {
            s.code = 1;
            eprintln!("too many arguments for {word} keyword");
        }
        s.verbose = true;
    } else if is("version", 4) {
        if args.len() > 1 {
            s.code = 1;
            eprintln!("too many arguments for {word} keyword");
        }
        println!("{VERSION}");
    } else if is("user", 1) {
        if args.len() < 2 {
            too_few(s, word);
        } else {
            user_report(s, &args[1..]);
        }
    } else {
        s.code = 1;
        eprintln!("invalid keyword: {word}");
    }
}

/// The TRES `-T` may name: Slurm's own, and GRES and licenses by their TRES names.
fn known_tres(name: &str) -> bool {
    [
        "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages",
    ]
    .contains(&name)
        || name.starts_with("gres/")
        || name.starts_with("license/")
}

/// `-T`'s list: the known TRES named (`ALL`: every TRES the cluster counts).
fn parse_tres(v: &str) -> Result<Vec<String>, Refusal> {
    let mut out: Vec<String> = Vec::new();
    for tok in v.split(',').filter(|t| !t.is_empty()) {
        if tok.eq_ignore_ascii_case("ALL") {
            out = ["cpu", "mem", "energy", "node", "billing", "gres/gpu"]
                .map(String::from)
                .to_vec();
            break;
        }
        let t = tok.to_ascii_lowercase();
        if known_tres(&t) && !out.contains(&t) {
            out.push(t);
        }
    }
    if out.is_empty() {
        return Err(Refusal {
            stdout: String::new(),
            stderr: format!("{ME}: fatal: No valid TRES given\n"),
            code: 1,
        });
    }
    Ok(out)
}

/// Runs `sreport ARGS`; returns the exit status.
pub fn main(args: Vec<String>) -> i32 {
    let mut s = Session {
        settings: Settings {
            layout: Layout {
                parsable: None,
                header: true,
            },
            ..Settings::default()
        },
        quiet: false,
        verbose: false,
        done: false,
        code: 0,
    };
    let mut words = Vec::new();
    let mut tres: Option<String> = std::env::var("SREPORT_TRES").ok();
    let mut cluster_options = [false; 3];
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item {
            Ok(Parsed::Opt(f)) => f,
            Ok(Parsed::Operand(w)) => {
                words.push(w);
                continue;
            }
            Err(e) => {
                eprintln!("{}: {e}", super::common::program(ME));
                eprintln!("Try \"sreport --help\" for more information");
                return 1;
            }
        };
        match f.name() {
            "help" => {
                print!("{HELP}");
                return 0;
            }
            "version" => {
                println!("{VERSION}");
                return 0;
            }
            "noheader" => s.settings.layout.header = false,
            "parsable" => s.settings.layout.parsable = Some(Parsable::Ending),
            "parsable2" => s.settings.layout.parsable = Some(Parsable::NoEnding),
            "quiet" => s.quiet = true,
            "verbose" => s.verbose = true,
            "tres" => tres = Some(f.value().to_string()),
            "sort" => {}
            "time" => set_time_format(&mut s, f.value()),
            "cluster" => {
                cluster_options[1] = true;
                s.settings.clusters = f.list().iter().map(|c| c.to_lowercase()).collect();
            }
            "all_clusters" => cluster_options[0] = true,
            "local" => cluster_options[2] = true,
            // One cluster, no federation: nothing to change.
            "federation" | "immediate" => {}
            _ => {}
        }
    }
    if cluster_options.iter().filter(|&&o| o).count() > 1 {
        eprintln!("Only one cluster option can be used (--all_clusters OR --cluster OR --local)");
        return 1;
    }
    if let Some(v) = tres {
        match parse_tres(&v) {
            Ok(t) => s.settings.tres = t,
            Err(r) => r.exit(),
        }
    }
    if !words.is_empty() {
        process(&mut s, &words);
        return s.code;
    }
    // No command: one per line from standard input, as at sreport's prompt (which,
    // reading no terminal, shows each line after the prompt; the end of the input
    // leaves the prompt and a newline).
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut last: Vec<String> = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            println!("{ME}: ");
            break;
        };
        println!("{ME}: {line}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let mut w: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if line.starts_with('#') {
            // A comment is an empty command, which sreport counts as an error.
            w.clear();
        } else if line == "!!" {
            w = last.clone();
        } else {
            last = w.clone();
        }
        process(&mut s, &w);
        if s.done {
            break;
        }
    }
    s.code
}
