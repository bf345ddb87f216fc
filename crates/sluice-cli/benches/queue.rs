//! A large cluster with a long queue, measured from outside: `cargo bench -p sluice-cli
//! --bench queue` prints a table (the README's "At scale").
//!
//! A controller on loopback with 10,000 nodes of 64 CPUs, their agents (the real
//! agent, many in this process, each on its own port, over the real signed TCP
//! transport) registered and idle, and the whole machine under a maintenance
//! reservation for a day, so that the 100,000 jobs then submitted through the API (1 to
//! 16 nodes, 10 minutes to 8 hours, a fixed pseudo-random mix) all stay queued and
//! every scheduling pass plans around it. Measured, as users see it: `squeue -j` of one
//! job, `squeue -u`, a full `squeue`, `sinfo` (medians), the controller's resident set,
//! and the scheduling cycles `sdiag` reports — the main phase, and the backfill phase
//! with Slurm's default `bf_max_job_test=500` and then, on a second controller, with
//! `bf_max_job_test` as large as the queue.
//!
//! `--nodes N` and `--jobs N` change the sizes; `--only default` (or `uncapped`) runs
//! one controller. The agents and the commands share the machine's cores with the
//! controller. `SLUICE_BENCH_CTLD=PATH` runs another build's controller (an older one,
//! to compare builds in one run on a busy machine).

use std::io::Write;
use std::process::Output;
use std::time::{Duration, Instant};

use sluice_proto::client::Client;
use sluice_proto::types::{JobDescription, SubmitReply};

#[allow(dead_code)]
#[path = "common/loopback.rs"]
mod loopback;

use loopback::{median, rss_mib, start_agents, wait_until, Scale};

fn progress(what: impl std::fmt::Display) {
    eprintln!("[queue bench] {what}");
    let _ = std::io::stderr().flush();
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Job `i` of the mix: 1 to 16 nodes, 10 minutes to 8 hours (a fixed sequence).
fn job(i: u64, work: &str) -> JobDescription {
    // SplitMix64: the same mix on every run.
    let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let nodes = 1 + (z % 16) as u32;
    let minutes = 10 + ((z >> 8) % 471) as i64;
    JobDescription {
        name: format!("q{}", i % 100),
        work_dir: work.into(),
        script: "#!/bin/sh\ntrue\n".into(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        output: Some("/dev/null".into()),
        nodes: Some((nodes, nodes)),
        time_limit: Some(Some(minutes * 60)),
        ..JobDescription::default()
    }
}

/// Submits `n` jobs through the API from `clients` threads; the first id.
fn submit(s: &Scale, n: u64, clients: u64) -> u64 {
    let work = s.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.display().to_string();
    let first = std::sync::atomic::AtomicU64::new(u64::MAX);
    std::thread::scope(|scope| {
        for c in 0..clients {
            let client = Client::new(s.socket());
            let (work, first) = (work.clone(), &first);
            scope.spawn(move || {
                let mut i = c;
                while i < n {
                    let r: SubmitReply =
                        client.post("/v1/jobs", &job(i, &work)).expect("submission");
                    first.fetch_min(r.job_id, std::sync::atomic::Ordering::Relaxed);
                    i += clients;
                    if c == 0 && i % 10_000 < clients {
                        progress(format_args!("  {i} submitted"));
                    }
                }
            });
        }
    });
    first.into_inner()
}

/// Milliseconds of `cmd args` (its output checked), median of `runs`.
fn timed(s: &Scale, runs: usize, cmd: &str, args: &[&str]) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                let o: Output = s.run(cmd, args);
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                assert!(
                    o.status.success(),
                    "{cmd} {args:?}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                ms
            })
            .collect(),
    )
}

/// The value after `label` in `sdiag`'s output, in the section starting with `section`.
fn sdiag_figure(text: &str, section: &str, label: &str) -> u64 {
    text.lines()
        .skip_while(|l| !l.starts_with(section))
        .find_map(|l| l.trim_start().strip_prefix(label))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// One controller: its rows.
fn run(nodes: usize, jobs: u64, max_job_test: Option<u64>, rows: &mut Vec<(String, String)>) {
    let extra = max_job_test
        .map(|n| format!("SchedulerParameters=bf_max_job_test={n}\n"))
        .unwrap_or_default();
    let label = match max_job_test {
        None => "bf_max_job_test=500 (Slurm's default)".to_string(),
        Some(n) => format!("bf_max_job_test={n}"),
    };
    progress(format_args!(
        "controller with {nodes} nodes × 64 CPUs, {label}"
    ));
    let s = Scale::start(nodes, 64, &extra);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = Instant::now();
    let agents = start_agents(&rt, &s, 1, nodes + 1);
    wait_until(
        Duration::from_secs(900),
        "the agents' registrations",
        || s.count("idle") == nodes,
    );
    progress(format_args!(
        "  {nodes} idle after {:.0} s",
        t.elapsed().as_secs_f64()
    ));
    let o = s.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now",
            "Duration=1-00:00:00",
            "Nodes=ALL",
            "Users=root",
            "Flags=MAINT",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rss0 = rss_mib(s.ctld.id());
    progress(format_args!("submitting {jobs} jobs"));
    let t = Instant::now();
    let first = submit(&s, jobs, 16);
    let submit_s = t.elapsed().as_secs_f64();
    progress(format_args!(
        "  {:.0} submissions/s",
        jobs as f64 / submit_s
    ));
    // A backfill cycle over the whole queue, after the last submission.
    s.run("sdiag", &["-r"]);
    wait_until(Duration::from_secs(600), "a backfill cycle", || {
        let o = s.run("sdiag", &[]);
        sdiag_figure(
            &String::from_utf8_lossy(&o.stdout),
            "Backfilling stats",
            "Total cycles:",
        ) >= 1
    });
    let pending = s.run("squeue", &["-h", "-t", "PD", "-o", "%i"]);
    let pending = String::from_utf8_lossy(&pending.stdout).lines().count();
    let one = (first + jobs / 2).to_string();
    let sq_j = timed(&s, 9, "squeue", &["-j", &one]);
    let sq_u = timed(&s, 3, "squeue", &["-u", "nobody"]);
    let sq_all = timed(&s, 3, "squeue", &[]);
    let sinfo = timed(&s, 9, "sinfo", &[]);
    let rss = rss_mib(s.ctld.id());
    let d = String::from_utf8_lossy(&s.run("sdiag", &[]).stdout).into_owned();
    let main_mean = sdiag_figure(&d, "Main schedule", "Mean cycle:");
    let main_max = sdiag_figure(&d, "Main schedule", "Max cycle:");
    let bf_last = sdiag_figure(&d, "Backfilling stats", "Last cycle:");
    let bf_depth = sdiag_figure(&d, "Backfilling stats", "Last depth cycle (try sched):");
    progress(format_args!(
        "  {pending} pending; squeue -j {sq_j:.1} ms, all {sq_all:.0} ms, sinfo {sinfo:.1} ms; \
         main {main_mean} µs (max {main_max}), backfill {bf_last} µs over {bf_depth} jobs"
    ));
    if max_job_test.is_none() {
        rows.push((
            format!("{nodes} nodes: agents registered, all idle"),
            format!("{pending} jobs queued"),
        ));
        rows.push((
            format!("{jobs} submissions through the API (16 clients): time, rate"),
            format!("{submit_s:.0} s, {:.0} /s", jobs as f64 / submit_s),
        ));
        rows.push((
            "`squeue -j ONE` (median of 9)".into(),
            format!("{sq_j:.1} ms"),
        ));
        rows.push((
            "`squeue -u nobody` (no jobs; median of 3)".into(),
            format!("{sq_u:.1} ms"),
        ));
        rows.push((
            format!("`squeue`, all {pending} jobs (median of 3)"),
            format!("{sq_all:.0} ms"),
        ));
        rows.push(("`sinfo` (median of 9)".into(), format!("{sinfo:.1} ms")));
        rows.push((
            "controller resident set: idle / with the queue".into(),
            format!("{rss0:.0} MiB / {rss:.0} MiB"),
        ));
        rows.push((
            "main scheduling cycle (sdiag: mean / max)".into(),
            format!(
                "{:.1} ms / {:.1} ms",
                main_mean as f64 / 1000.0,
                main_max as f64 / 1000.0
            ),
        ));
    }
    rows.push((
        format!("backfill cycle, {label} (sdiag: last; jobs tried)"),
        format!("{:.0} ms; {bf_depth}", bf_last as f64 / 1000.0),
    ));
    progress("stopping");
    let handles: Vec<_> = agents
        .into_iter()
        .map(|(tx, h)| {
            let _ = tx.send(());
            h
        })
        .collect();
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            for h in handles {
                let _ = h.await;
            }
        })
        .await;
    });
    drop(s);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let nodes = arg(&args, "--nodes", 10_000);
    let jobs = arg(&args, "--jobs", 100_000) as u64;
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str);
    // One agent per node, each a listener and its connections.
    raise_open_files();
    let mut rows = Vec::new();
    if only.is_none_or(|o| o == "default") {
        run(nodes, jobs, None, &mut rows);
    }
    if only.is_none_or(|o| o == "uncapped") {
        run(nodes, jobs, Some(jobs), &mut rows);
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["measure", "result"]);
    for (m, r) in rows {
        table.add_row([m, r]);
    }
    println!("{table}");
}

/// Raises this process's open-file limit to its hard limit.
fn raise_open_files() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}
