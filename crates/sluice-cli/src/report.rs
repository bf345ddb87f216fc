//! `sluice report gpu`: GPU-seconds and billing-seconds per user and account, read from
//! the job database as `sacct` reads it — a simple `sreport`-style TRES usage report.
//!
//! A job's run counts for the part of it inside the window: allocated GPUs (in all and
//! by type) times those seconds, and its billing (`AllocTRES`'s `billing`, from the
//! partition's `TRESBillingWeights`) times those seconds. Earlier runs of requeued jobs
//! count too: their GPUs were held.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use clap::{Args, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde::Serialize;
use sluice_proto::time::{parse_timestamp, timestamp};
use sluice_proto::types::JobRecord;

use crate::slurm::common::{controller, describe, now};

const ME: &str = "sluice report";

/// `sluice report`: usage summaries from the job database.
#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(subcommand)]
    what: Report,
}

#[derive(Subcommand, Debug)]
enum Report {
    /// GPU-seconds (allocated GPUs × seconds, in all and per GPU type) and
    /// billing-seconds per user and account.
    Gpu(GpuArgs),
    /// CPU, memory, GPU and time efficiency per job, summed per user and account
    /// (`seff` for many jobs; `--json` for tools).
    Efficiency(crate::report_efficiency::EfficiencyArgs),
}

/// `sluice report gpu`'s options.
#[derive(Args, Debug)]
struct GpuArgs {
    /// Count usage from this time on (`2026-11-01`, `2026-11-01T08:00`, `now-7days`,
    /// `today`: sacct's -S forms). Default: everything recorded.
    #[arg(long, short = 'S', value_name = "TIME")]
    since: Option<String>,
    /// Count usage up to this time (same forms). Default: now.
    #[arg(long, short = 'E', value_name = "TIME")]
    until: Option<String>,
    /// Only these users (comma-separated names).
    #[arg(long, short = 'u', value_name = "USER")]
    user: Option<String>,
    /// Only these accounts (comma-separated).
    #[arg(long, short = 'A', value_name = "ACCOUNT")]
    account: Option<String>,
    /// `|`-separated lines with a header, no table.
    #[arg(long, short = 'P', conflicts_with = "json")]
    parsable: bool,
    /// JSON.
    #[arg(long)]
    json: bool,
}

/// One user's usage under one account.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
struct Usage {
    user: String,
    account: String,
    /// Job runs that overlap the window.
    jobs: u64,
    /// Allocated GPUs × seconds inside the window.
    gpu_seconds: u64,
    /// The same, per GPU type (typed GPUs only).
    gpu_seconds_by_type: BTreeMap<String, u64>,
    /// Billing units (`AllocTRES`'s `billing`) × seconds inside the window.
    billing_seconds: u64,
}

/// Which runs count: the window `[since, until]` (Unix seconds) and the users and
/// accounts asked for (empty: all).
struct Filter {
    since: Option<i64>,
    until: i64,
    users: Vec<String>,
    accounts: Vec<String>,
}

/// Sums `runs` (job records, one per run) into one [`Usage`] per user and account,
/// ordered by user then account. A run still going counts up to `now`.
fn summarize(runs: &[&JobRecord], filter: &Filter, now: i64) -> Vec<Usage> {
    let mut by: BTreeMap<(String, String), Usage> = BTreeMap::new();
    for r in runs {
        let Some(start) = r.start_time else {
            continue;
        };
        let end = r.end_time.unwrap_or(now).max(start);
        let since = filter.since.unwrap_or(i64::MIN);
        if start > filter.until || end < since {
            continue;
        }
        if !filter.users.is_empty() && !filter.users.contains(&r.user) {
            continue;
        }
        if !filter.accounts.is_empty() && !filter.accounts.contains(&r.account) {
            continue;
        }
        let secs = (end.min(filter.until) - start.max(since)).max(0) as u64;
        let gpus: u64 = r.gpus_per_node.iter().map(|g| g.len() as u64).sum();
        // Records from before jobs carried their TRES bill their CPUs, as Slurm does
        // without weights.
        let billing = if r.tres_alloc.is_empty() {
            r.cpus_per_node.iter().map(|&c| u64::from(c)).sum()
        } else {
            r.tres_alloc
                .iter()
                .find(|(t, _)| t == "billing")
                .map_or(0, |(_, n)| *n)
        };
        let u = by
            .entry((r.user.clone(), r.account.clone()))
            .or_insert_with(|| Usage {
                user: r.user.clone(),
                account: r.account.clone(),
                ..Usage::default()
            });
        u.jobs += 1;
        u.gpu_seconds += gpus * secs;
        u.billing_seconds += billing * secs;
        for (gtype, n) in r.gpu_types_per_node.iter().flatten() {
            *u.gpu_seconds_by_type.entry(gtype.clone()).or_default() += u64::from(*n) * secs;
        }
    }
    by.into_values().collect()
}

/// Every GPU type any row has, sorted.
fn types(rows: &[Usage]) -> Vec<String> {
    let mut t: Vec<String> = rows
        .iter()
        .flat_map(|r| r.gpu_seconds_by_type.keys().cloned())
        .collect();
    t.sort();
    t.dedup();
    t
}

fn parsable(rows: &[Usage]) -> String {
    let types = types(rows);
    let mut out = String::from("User|Account|Jobs|GPUSeconds");
    for t in &types {
        let _ = write!(out, "|GPUSeconds:{t}");
    }
    out.push_str("|BillingSeconds\n");
    for r in rows {
        let _ = write!(out, "{}|{}|{}|{}", r.user, r.account, r.jobs, r.gpu_seconds);
        for t in &types {
            let _ = write!(out, "|{}", r.gpu_seconds_by_type.get(t).unwrap_or(&0));
        }
        let _ = writeln!(out, "|{}", r.billing_seconds);
    }
    out
}

fn table(rows: &[Usage], since: Option<i64>, until: i64) -> String {
    let types = types(rows);
    let mut header = vec![
        "User".to_string(),
        "Account".into(),
        "Jobs".into(),
        "GPU-seconds".into(),
    ];
    header.extend(types.iter().map(|t| format!("GPU-seconds {t}")));
    header.push("Billing-seconds".into());
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    let right = |v: u64| Cell::new(v).set_alignment(CellAlignment::Right);
    let mut total = Usage {
        user: "total".into(),
        ..Usage::default()
    };
    for r in rows {
        let mut cells = vec![
            Cell::new(&r.user),
            Cell::new(&r.account),
            right(r.jobs),
            right(r.gpu_seconds),
        ];
        for ty in &types {
            let n = r.gpu_seconds_by_type.get(ty).copied().unwrap_or(0);
            *total.gpu_seconds_by_type.entry(ty.clone()).or_default() += n;
            cells.push(right(n));
        }
        cells.push(right(r.billing_seconds));
        t.add_row(cells);
        total.jobs += r.jobs;
        total.gpu_seconds += r.gpu_seconds;
        total.billing_seconds += r.billing_seconds;
    }
    if rows.len() > 1 {
        let mut cells = vec![
            Cell::new(&total.user),
            Cell::new(""),
            right(total.jobs),
            right(total.gpu_seconds),
        ];
        for ty in &types {
            cells.push(right(total.gpu_seconds_by_type[ty]));
        }
        cells.push(right(total.billing_seconds));
        t.add_row(cells);
    }
    let from = since.map_or("the first record".to_string(), timestamp);
    format!(
        "GPU and billing usage from {from} to {} (seconds)\n{t}\n",
        timestamp(until)
    )
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("{ME}: error: {message}");
    std::process::exit(1)
}

/// Runs `sluice report`; returns the exit status.
pub fn run(args: ReportArgs) -> i32 {
    let a = match args.what {
        Report::Gpu(a) => a,
        Report::Efficiency(a) => return crate::report_efficiency::run(a),
    };
    let t = now();
    let time = |v: &Option<String>| {
        v.as_deref().map(|s| {
            parse_timestamp(s, t)
                .unwrap_or_else(|| fail(format!("Invalid time specification: {s}")))
        })
    };
    let list = |v: &Option<String>| -> Vec<String> {
        v.iter()
            .flat_map(|s| s.split(','))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let filter = Filter {
        since: time(&a.since),
        until: time(&a.until).unwrap_or(t),
        users: list(&a.user),
        accounts: list(&a.account),
    };
    let acct: sluice_proto::types::Accounting = controller()
        .get("/v1/accounting")
        .unwrap_or_else(|e| fail(describe(&e)));
    let runs: Vec<&JobRecord> = acct.runs.iter().chain(&acct.jobs).collect();
    let rows = summarize(&runs, &filter, t);
    let text = if a.json {
        let v = serde_json::json!({
            "since": filter.since,
            "until": filter.until,
            "usage": rows,
        });
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    } else if a.parsable {
        parsable(&rows)
    } else {
        table(&rows, filter.since, filter.until)
    };
    print!("{text}");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `gpus` GPUs of type `gtype` on one node, billed `billing`.
    fn run(
        user: &str,
        start: i64,
        end: Option<i64>,
        gpus: u32,
        gtype: &str,
        billing: u64,
    ) -> JobRecord {
        JobRecord {
            user: user.into(),
            account: format!("{user}-acct"),
            start_time: Some(start),
            end_time: end,
            nodes: vec!["g1".into()],
            cpus_per_node: vec![4],
            gpus_per_node: vec![(0..gpus).collect()],
            gpu_types_per_node: if gtype.is_empty() {
                vec![vec![]]
            } else {
                vec![vec![(gtype.to_string(), gpus)]]
            },
            tres_alloc: vec![("cpu".into(), 4), ("billing".into(), billing)],
            ..JobRecord::default()
        }
    }

    fn all(until: i64) -> Filter {
        Filter {
            since: None,
            until,
            users: vec![],
            accounts: vec![],
        }
    }

    #[test]
    fn gpus_and_billing_times_seconds_per_user_and_type() {
        let jobs = [
            run("ann", 100, Some(110), 2, "a100", 6), // 20 GPU-s, 60 billing-s
            run("ann", 200, Some(203), 1, "h100", 3), // 3, 9
            run("bob", 100, Some(107), 4, "", 8),     // untyped: 28, 56
            run("bob", 300, None, 1, "a100", 2),      // running until now=305: 5, 10
            JobRecord {
                start_time: None,
                ..run("cid", 0, None, 1, "a100", 1)
            }, // never started
        ];
        let refs: Vec<&JobRecord> = jobs.iter().collect();
        let rows = summarize(&refs, &all(305), 305);
        let ann = Usage {
            user: "ann".into(),
            account: "ann-acct".into(),
            jobs: 2,
            gpu_seconds: 23,
            gpu_seconds_by_type: [("a100".to_string(), 20), ("h100".to_string(), 3)].into(),
            billing_seconds: 69,
        };
        let bob = Usage {
            user: "bob".into(),
            account: "bob-acct".into(),
            jobs: 2,
            gpu_seconds: 33,
            gpu_seconds_by_type: [("a100".to_string(), 5)].into(),
            billing_seconds: 66,
        };
        assert_eq!(rows, [ann.clone(), bob]);
        assert_eq!(
            parsable(&rows),
            "User|Account|Jobs|GPUSeconds|GPUSeconds:a100|GPUSeconds:h100|BillingSeconds\n\
             ann|ann-acct|2|23|20|3|69\n\
             bob|bob-acct|2|33|5|0|66\n"
        );
        // Filters: users and accounts.
        let only = Filter {
            users: vec!["ann".into()],
            ..all(305)
        };
        assert_eq!(summarize(&refs, &only, 305), [ann]);
        let none = Filter {
            accounts: vec!["x".into()],
            ..all(305)
        };
        assert_eq!(summarize(&refs, &none, 305), []);
    }

    #[test]
    fn runs_count_only_inside_the_window() {
        let jobs = [run("ann", 100, Some(110), 2, "a100", 5)];
        let refs: Vec<&JobRecord> = jobs.iter().collect();
        let window = |since, until| {
            summarize(
                &refs,
                &Filter {
                    since: Some(since),
                    ..all(until)
                },
                1000,
            )
            .first()
            .map(|u| (u.gpu_seconds, u.billing_seconds))
        };
        assert_eq!(window(0, 1000), Some((20, 50)));
        assert_eq!(window(104, 1000), Some((12, 30)));
        assert_eq!(window(104, 107), Some((6, 15)));
        assert_eq!(window(111, 1000), None);
        assert_eq!(window(0, 99), None);
    }

    #[test]
    fn records_without_tres_bill_their_cpus() {
        let mut old = run("ann", 0, Some(10), 1, "", 0);
        old.tres_alloc.clear();
        let rows = summarize(&[&old], &all(100), 100);
        assert_eq!((rows[0].gpu_seconds, rows[0].billing_seconds), (10, 40));
    }
}
