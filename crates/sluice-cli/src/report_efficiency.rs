//! `sluice report efficiency`: how well jobs used the CPUs, memory, GPUs and wall time
//! they held, per job and summed per user and account ([`crate::efficiency`] says how
//! each figure is had and weighted), for people (tables) or tools (`--json`).
//!
//! The jobs are read as `sacct` reads them (`POST /v1/accounting`) and chosen as it
//! chooses: without `-j`, `-u` or `-A`, a user other than root sees their own jobs.
//!
//! `--json` prints one object, whose field names are kept stable:
//! `{"since": UNIX|null, "jobs": [JOB...], "users": [SUM...], "accounts": [SUM...]}`,
//! each JOB a [`JobEfficiency`] and each SUM a [`Summary`]; efficiencies are percents
//! (floats), `null` where there is no figure.

use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use sluice_conf::duration::format_time;
use sluice_proto::time::{parse_timestamp, timestamp};
use sluice_proto::types::{Accounting, AccountingQuery, JobRecord};

use crate::efficiency::{jobs_efficiency, summarize, JobEfficiency, Summary};
use crate::slurm::common::{controller, describe, now, parse_job_arg};
use crate::slurm::squeue::current_user;

const ME: &str = "sluice report efficiency";

/// `sluice report efficiency`'s options.
#[derive(Args, Debug)]
pub struct EfficiencyArgs {
    /// Only these jobs (comma-separated ids; `123_4` for an array task, `123` for the
    /// whole array).
    #[arg(long, short = 'j', value_name = "JOB")]
    jobs: Option<String>,
    /// Only these users' jobs (comma-separated names).
    #[arg(long, short = 'u', value_name = "USER")]
    user: Option<String>,
    /// Only jobs charged to these accounts (comma-separated).
    #[arg(long, short = 'A', value_name = "ACCOUNT")]
    account: Option<String>,
    /// Only jobs that ended at or after this time, or still run (`2026-11-01`,
    /// `now-7days`, `today`: sacct's -S forms). Default: every job recorded.
    #[arg(long, short = 'S', value_name = "TIME")]
    since: Option<String>,
    /// One JSON object (jobs, users, accounts) for tools.
    #[arg(long)]
    json: bool,
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("{ME}: error: {message}");
    std::process::exit(1)
}

fn list(v: &Option<String>) -> Vec<String> {
    v.iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A percent as the tables show it: `42.5%`, `-` for none.
fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |p| format!("{p:.1}%"))
}

/// Bytes as `1.5G`, `512.0M`, `12.0K`.
fn size(bytes: u64) -> String {
    let mut v = bytes as f64;
    for unit in ["", "K", "M", "G", "T"] {
        if v < 1024.0 || unit == "T" {
            return if unit.is_empty() {
                format!("{bytes}")
            } else {
                format!("{v:.1}{unit}")
            };
        }
        v /= 1024.0;
    }
    unreachable!()
}

fn right(s: impl std::fmt::Display) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

/// The per-job table.
fn jobs_table(jobs: &[JobEfficiency]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "JobID", "User", "Account", "State", "Elapsed", "CPUs", "CPU eff", "Memory", "Mem eff",
        "GPUs", "GPU eff", "Limit", "Time eff",
    ]);
    for j in jobs {
        let mem = match j.mem_requested_bytes {
            Some(r) => format!("{} / {}", size(j.mem_used_bytes), size(r)),
            None => size(j.mem_used_bytes),
        };
        t.add_row(vec![
            Cell::new(&j.display_id),
            Cell::new(&j.user),
            Cell::new(&j.account),
            Cell::new(&j.state),
            right(format_time(Some(j.elapsed_s))),
            right(j.cpus),
            right(pct(j.cpu_efficiency)),
            right(mem),
            right(pct(j.mem_efficiency)),
            right(j.gpus),
            right(pct(j.gpu_efficiency)),
            right(format_time(j.time_limit_s)),
            right(pct(j.time_efficiency)),
        ]);
    }
    t
}

/// A per-user or per-account table, `what` naming the first column.
fn summary_table(what: &str, rows: &[Summary]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        what,
        "Jobs",
        "Core-hours",
        "GPU-hours",
        "CPU eff",
        "Mem eff",
        "GPU eff",
        "Time eff",
    ]);
    for s in rows {
        t.add_row(vec![
            Cell::new(&s.name),
            right(s.jobs),
            right(format!("{:.2}", s.core_seconds as f64 / 3600.0)),
            right(format!("{:.2}", s.gpu_seconds as f64 / 3600.0)),
            right(pct(s.cpu_efficiency)),
            right(pct(s.mem_efficiency)),
            right(pct(s.gpu_efficiency)),
            right(pct(s.time_efficiency)),
        ]);
    }
    t
}

/// The report as people read it.
pub fn text(jobs: &[JobEfficiency], since: Option<i64>) -> String {
    let from = since.map_or_else(|| "the first record".to_string(), timestamp);
    if jobs.is_empty() {
        return format!("No job that ran since {from}.\n");
    }
    let users = summarize(jobs, |j| &j.user);
    let accounts = summarize(jobs, |j| &j.account);
    format!(
        "Efficiency of jobs since {from}\n{}\n\nPer user (memory weighted by core-hours, \
         GPU by GPU-hours, time by core-hours)\n{}\n\nPer account\n{}\n",
        jobs_table(jobs),
        summary_table("User", &users),
        summary_table("Account", &accounts)
    )
}

/// The `--json` object.
pub fn json(jobs: &[JobEfficiency], since: Option<i64>) -> serde_json::Value {
    serde_json::json!({
        "since": since,
        "jobs": jobs,
        "users": summarize(jobs, |j| &j.user),
        "accounts": summarize(jobs, |j| &j.account),
    })
}

/// Runs `sluice report efficiency`; returns the exit status.
pub fn run(a: EfficiencyArgs) -> i32 {
    let t = now();
    let since = a.since.as_deref().map(|s| {
        parse_timestamp(s, t).unwrap_or_else(|| fail(format!("Invalid time specification: {s}")))
    });
    let mut named: Vec<(u64, Option<u32>)> = Vec::new();
    for s in list(&a.jobs) {
        named.extend(parse_job_arg(&s).unwrap_or_else(|| fail(format!("Invalid job id: {s}"))));
    }
    let users = list(&a.user);
    let accounts = list(&a.account);
    // As sacct: without -j, -u or -A, a user other than root sees their own jobs.
    let own_only = named.is_empty()
        && users.is_empty()
        && accounts.is_empty()
        && nix::unistd::geteuid().as_raw() != 0;
    let me = current_user();
    let query = AccountingQuery {
        jobs: named
            .iter()
            .filter(|j| j.1.is_none())
            .map(|j| j.0)
            .collect(),
        tasks: named
            .iter()
            .filter_map(|&(id, task)| task.map(|t| (id, t)))
            .collect(),
        users: if own_only {
            vec![me.clone()]
        } else {
            users.clone()
        },
        accounts: accounts.clone(),
        since,
        ..AccountingQuery::default()
    };
    let acct: Accounting = controller()
        .post("/v1/accounting", &query)
        .unwrap_or_else(|e| fail(describe(&e)));
    let is_named = |j: &JobRecord| {
        named.is_empty()
            || named.iter().any(|&(id, task)| match task {
                Some(tk) => j.array == Some((id, tk)),
                None => j.id == id || j.array.is_some_and(|x| x.0 == id),
            })
    };
    let mut jobs: Vec<&JobRecord> = acct
        .jobs
        .iter()
        .filter(|j| is_named(j))
        .filter(|j| users.is_empty() || users.contains(&j.user))
        .filter(|j| accounts.is_empty() || accounts.contains(&j.account))
        .filter(|j| !own_only || j.user == me)
        .filter(|j| since.is_none_or(|s| j.end_time.is_none_or(|e| e >= s)))
        .collect();
    jobs.sort_by_key(|j| j.list_key());
    let rows = jobs_efficiency(&jobs, &acct.steps, t);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json(&rows, since)).unwrap_or_default()
        );
    } else {
        print!("{}", text(&rows, since));
    }
    0
}
