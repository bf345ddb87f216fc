//! `sdiag`: the controller's statistics in Slurm 22.05's shape — jobs counted since
//! the last reset, the main and backfill scheduling cycles (microseconds), and the
//! requests served by message type and by user (`-i`, `-t`, `-T` sort them; `-r`
//! clears the counters, operators only).

use sluice_conf::getopt::{Getopt, Opt, Order, Parsed};
use sluice_proto::diag::{DiagReport, RpcCount};
use sluice_proto::time::ctime2;

use super::common::{controller, describe, Refusal, VERSION};

const ME: &str = "sdiag";

/// How the request lists are sorted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// By count, most first (the default).
    #[default]
    Count,
    /// By message type or uid (`-i`).
    Id,
    /// By total time, most first (`-t`).
    Time,
    /// By mean time, most first (`-T`).
    MeanTime,
}

/// What to do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `-r`: clear the counters.
    pub reset: bool,
    /// The request lists' order.
    pub sort: Sort,
    /// `--help`, `--usage`, `-V`: print that and stop.
    pub stop: Option<&'static str>,
}

const HELP: &str = "\
Usage: sdiag [OPTIONS]
  -a, --all           all statistics
  -r, --reset         reset statistics
  -M, --cluster       direct the request to a specific cluster
  -i, --sort-by-id    sort RPCs by id
  -t, --sort-by-time  sort RPCs by total run time
  -T, --sort-by-time2 sort RPCs by average run time
  -V, --version       display current version number

Help options:
  --help          show this help message
  --usage         display brief usage message
";

const USAGE: &str = "Usage: sdiag [-M cluster] [-aritT]\n";

/// sdiag's options, as Slurm 22.05's table.
pub(crate) const OPTIONS: &[Opt] = &[
    Opt::flag("all", Some('a')),
    Opt::flag("help", Some('h')),
    Opt::flag("reset", Some('r')),
    Opt::flag("sort-by-id", Some('i')),
    Opt::required("cluster", Some('M')),
    Opt::required("clusters", None).alias_of("cluster"),
    Opt::flag("sort-by-time", Some('t')),
    Opt::flag("sort-by-time2", Some('T')),
    Opt::flag("usage", None),
    Opt::flag("version", Some('V')),
];

/// Parses sdiag's arguments; words that are not options are ignored, as sdiag does.
pub fn parse(args: Vec<String>) -> Result<Options, Refusal> {
    let mut o = Options::default();
    for item in Getopt::new(OPTIONS, args, Order::Permute) {
        let f = match item.map_err(|e| Refusal::getopt(ME, &e))? {
            Parsed::Opt(f) => f,
            Parsed::Operand(_) => continue,
        };
        match f.name() {
            "all" => o.reset = false,
            "reset" => o.reset = true,
            "sort-by-id" => o.sort = Sort::Id,
            "sort-by-time" => o.sort = Sort::Time,
            "sort-by-time2" => o.sort = Sort::MeanTime,
            "help" => {
                o.stop = Some(HELP);
                return Ok(o);
            }
            "usage" => {
                o.stop = Some(USAGE);
                return Ok(o);
            }
            "version" => {
                o.stop = Some("version");
                return Ok(o);
            }
            // One cluster: the one this shell belongs to.
            _ => {}
        }
    }
    Ok(o)
}

/// Sorts `rows` as sdiag does: its exchange sort, so that ties end in the same order.
fn sort(rows: &mut [RpcCount], by: Sort) {
    let before = |a: &RpcCount, b: &RpcCount| match by {
        Sort::Count => a.count >= b.count,
        Sort::Id => a.id <= b.id,
        Sort::Time => a.total_us >= b.total_us,
        Sort::MeanTime => a.ave_us() >= b.ave_us(),
    };
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            if !before(&rows[i], &rows[j]) {
                rows.swap(i, j);
            }
        }
    }
}

/// A user's name, or the uid when it has none.
fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name)
}

/// What sdiag prints for `r`.
pub fn render(r: &DiagReport, by: Sort, user: &dyn Fn(u32) -> String) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let stars = "*******************************************************";
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "sdiag output at {} ({})", ctime2(r.now), r.now);
    let _ = writeln!(o, "Data since      {} ({})", ctime2(r.since), r.since);
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "Server thread count:  {}", r.server_threads);
    let _ = writeln!(o, "Agent queue size:     0");
    let _ = writeln!(o, "Agent count:          0");
    let _ = writeln!(o, "Agent thread count:   0");
    let _ = writeln!(o, "DBD Agent queue size: 0\n");
    let j = &r.jobs;
    let _ = writeln!(o, "Jobs submitted: {}", j.submitted);
    let _ = writeln!(o, "Jobs started:   {}", j.started);
    let _ = writeln!(o, "Jobs completed: {}", j.completed);
    let _ = writeln!(o, "Jobs canceled:  {}", j.canceled);
    let _ = writeln!(o, "Jobs failed:    {}\n", j.failed);
    let _ = writeln!(
        o,
        "Job states ts:  {} ({})",
        ctime2(r.states_at),
        r.states_at
    );
    let _ = writeln!(o, "Jobs pending:   {}", r.pending);
    let _ = writeln!(o, "Jobs running:   {}", r.running);

    let m = &r.main;
    let _ = writeln!(o, "\nMain schedule statistics (microseconds):");
    let _ = writeln!(o, "\tLast cycle:   {}", m.last_us);
    let _ = writeln!(o, "\tMax cycle:    {}", m.max_us);
    let _ = writeln!(o, "\tTotal cycles: {}", m.cycles);
    let cycles = u64::from(m.cycles);
    if let (Some(mean), Some(depth)) = (
        m.sum_us.checked_div(cycles),
        m.depth_sum.checked_div(cycles),
    ) {
        let _ = writeln!(o, "\tMean cycle:   {mean}");
        let _ = writeln!(o, "\tMean depth cycle:  {depth}");
    }
    let minutes = (r.now - r.since) / 60;
    if r.now - r.since > 60 && minutes > 0 {
        let _ = writeln!(o, "\tCycles per minute: {}", i64::from(m.cycles) / minutes);
    }
    let _ = writeln!(o, "\tLast queue length: {}", m.queue_len);

    let b = &r.backfill;
    let _ = writeln!(o, "\nBackfilling stats");
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last slurm start): {}",
        b.backfilled_total
    );
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last stats cycle start): {}",
        b.backfilled
    );
    let _ = writeln!(o, "\tTotal backfilled heterogeneous job components: 0");
    let _ = writeln!(o, "\tTotal cycles: {}", b.cycles);
    match b.last_when {
        Some(t) if t > 0 => {
            let _ = writeln!(o, "\tLast cycle when: {} ({t})", ctime2(t));
        }
        _ => {
            let _ = writeln!(o, "\tLast cycle when: N/A");
        }
    }
    let _ = writeln!(o, "\tLast cycle: {}", b.last_us);
    let _ = writeln!(o, "\tMax cycle:  {}", b.max_us);
    let cycles = u64::from(b.cycles);
    let mean = |sum: u64| sum.checked_div(cycles);
    if let Some(m) = mean(b.sum_us) {
        let _ = writeln!(o, "\tMean cycle: {m}");
    }
    let _ = writeln!(o, "\tLast depth cycle: {}", b.last_depth);
    let _ = writeln!(o, "\tLast depth cycle (try sched): {}", b.last_depth_try);
    if let (Some(d), Some(t)) = (mean(b.depth_sum), mean(b.depth_try_sum)) {
        let _ = writeln!(o, "\tDepth Mean: {d}");
        let _ = writeln!(o, "\tDepth Mean (try depth): {t}");
    }
    let _ = writeln!(o, "\tLast queue length: {}", b.queue_len);
    if let Some(q) = mean(b.queue_len_sum) {
        let _ = writeln!(o, "\tQueue length mean: {q}");
    }
    let _ = writeln!(o, "\tLast table size: {}", b.table_size);
    if let Some(t) = mean(b.table_size_sum) {
        let _ = writeln!(o, "\tMean table size: {t}");
    }

    let _ = writeln!(
        o,
        "\nLatency for 1000 calls to gettimeofday(): {} microseconds",
        r.clock_latency_us
    );

    let mut types = r.by_type.clone();
    sort(&mut types, by);
    let _ = writeln!(o, "\nRemote Procedure Call statistics by message type");
    for t in &types {
        let _ = writeln!(
            o,
            "\t{:<40}({:5}) count:{:<6} ave_time:{:<6} total_time:{}",
            t.name,
            t.id,
            t.count,
            t.ave_us(),
            t.total_us
        );
    }
    let mut users = r.by_user.clone();
    sort(&mut users, by);
    let _ = writeln!(o, "\nRemote Procedure Call statistics by user");
    for u in &users {
        let _ = writeln!(
            o,
            "\t{:<16}({:8}) count:{:<6} ave_time:{:<6} total_time:{}",
            user(u.id),
            u.id,
            u.count,
            u.ave_us(),
            u.total_us
        );
    }
    let _ = writeln!(o, "\nPending RPC statistics");
    let _ = writeln!(o, "\tNo pending RPCs");
    o
}

/// Runs `sdiag`.
pub fn main(args: Vec<String>) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(r) => r.exit(),
    };
    match o.stop {
        Some("version") => {
            println!("{VERSION}");
            return 0;
        }
        Some(text) => {
            print!("{text}");
            return 0;
        }
        None => {}
    }
    let client = controller();
    if o.reset {
        return match client.post::<_, DiagReport>("/v1/diag/reset", &serde_json::json!({})) {
            Ok(_) => {
                println!("Reset scheduling statistics");
                0
            }
            Err(e) => {
                eprintln!("slurm_reset_statistics: {}", describe(&e));
                255
            }
        };
    }
    match client.get::<DiagReport>("/v1/diag") {
        Ok(r) => {
            print!("{}", render(&r, o.sort, &user_name));
            0
        }
        Err(e) => {
            eprintln!("slurm_get_statistics: {}", describe(&e));
            255
        }
    }
}

#[cfg(test)]
mod tests;
