//! Throughput and latency of a live cluster on this machine: `cargo bench -p sluice-cli
//! --bench cluster` prints a table (the README's "Cluster performance").
//!
//! Each row starts a fresh cluster (`sluice up` in a temporary directory, release
//! build) of four nodes of 64 CPUs and measures one thing:
//! - submissions per second through the API, 32 concurrent clients, held jobs;
//! - submissions per second through `sbatch` processes, 8 at a time;
//! - trivial jobs (`true`) submitted, started, run and finished per second;
//! - `squeue` latency (whole command, median of 9) with 10,000 jobs queued;
//! - controller memory per queued job (resident set growth over 10,000 jobs).
//!
//! Numbers depend on the machine; compare rows of one run. `SLUICE_BENCH_BIN=PATH`
//! runs another build of `sluice` instead (an older one, to compare builds in turn on
//! the same machine).
//!
//! `SLUICE_BENCH_STORES=1 cargo bench -p sluice-cli --bench cluster` measures instead
//! the state store's engines against each other, in one run on one machine: API
//! submissions and trivial jobs per second with the embedded SQLite and with
//! PostgreSQL (`StorageType=postgresql`, a server the bench starts on 127.0.0.1 —
//! [`sluice_store::pg_server`]), median of 3 fresh clusters each (the README's
//! "PostgreSQL").

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_proto::types::{JobDescription, SubmitReply};

#[allow(dead_code)]
#[path = "common/up.rs"]
mod up;

use up::Up;

const CONF: &str = "ClusterName=bench
SlurmctldHost=localhost
NodeName=b[1-4] CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=batch Nodes=b[1-4] Default=YES State=UP
MinJobAge=3600
MaxJobCount=100000
";

/// A fresh cluster of four nodes, `name` in its directory's name.
fn start_cluster(name: &str) -> Up {
    start_site(name, None)
}

/// A cluster with `site` as its sluice.conf.
fn start_site(name: &str, site: Option<&str>) -> Up {
    let dir = up::fresh_dir(&format!("sluice-bench-{}-{name}", std::process::id()));
    // `SLUICE_BENCH_BIN=PATH`: another build of `sluice` (controller, agents and
    // commands alike), to compare builds in one session on one machine.
    let bin = std::env::var_os("SLUICE_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_sluice").into());
    Up::start(&bin, dir, CONF, site).until_idle(4)
}

fn job(work: &Path, hold: bool) -> JobDescription {
    JobDescription {
        name: "bench".into(),
        work_dir: work.display().to_string(),
        script: "#!/bin/sh\ntrue\n".into(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        output: Some("/dev/null".into()),
        hold,
        ..JobDescription::default()
    }
}

/// Submits `n` jobs through the API from `clients` threads; seconds taken.
fn submit_api(c: &Up, n: usize, clients: usize, hold: bool) -> f64 {
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let client = c.client();
            let desc = job(&c.dir.join("work"), hold);
            let count = n / clients + usize::from(i < n % clients);
            std::thread::spawn(move || {
                for _ in 0..count {
                    let _: SubmitReply = client.post("/v1/jobs", &desc).expect("submission");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    start.elapsed().as_secs_f64()
}

/// Waits until jobs 1 to `n` (a fresh cluster's) have all ended, asking about one job
/// at a time, oldest first: a cheap request, so that watching costs the cluster little
/// of the two cores it shares with the jobs.
fn wait_all_ended(c: &Up, n: u64) {
    let client = c.client();
    let mut next = 1;
    while next <= n {
        let ended = client
            .get::<sluice_proto::types::JobRecord>(&format!("/v1/jobs/{next}"))
            .is_ok_and(|r| r.state.is_finished());
        if ended {
            next += 1;
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// SQLite against PostgreSQL: API submissions and trivial jobs per second, median of
/// 3 fresh clusters each.
fn compare_stores() {
    use std::os::unix::fs::PermissionsExt;
    let server = sluice_store::pg_server::shared("the store bench").expect("PostgreSQL");
    let secrets = std::env::temp_dir().join(format!("sluice-bench-pg-{}", std::process::id()));
    std::fs::create_dir_all(&secrets).unwrap();
    let pass = secrets.join("dbpass");
    std::fs::write(&pass, sluice_store::pg_server::PASSWORD).unwrap();
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    let (subs, trivial) = (5_000, 2_000);
    table.set_header([
        "store".to_string(),
        format!("API submissions/s ({subs} jobs, 32 clients)"),
        format!("trivial jobs/s ({trivial} jobs, 256 CPUs)"),
    ]);
    for store in ["SQLite", "PostgreSQL"] {
        let mut sub_rates = Vec::new();
        let mut run_rates = Vec::new();
        for run in 0..3 {
            let site = |what: &str| {
                (store == "PostgreSQL").then(|| {
                    let db = format!("bench_{what}_{run}");
                    server.database(&db);
                    format!(
                        "StorageType=postgresql\nStorageHost=127.0.0.1\nStoragePort={}\n\
                         StorageUser={}\nStorageLoc={db}\nStoragePassFile={}\n",
                        server.port(),
                        sluice_store::pg_server::ROLE,
                        pass.display()
                    )
                })
            };
            let c = start_site("store-api", site("api").as_deref());
            sub_rates.push(subs as f64 / submit_api(&c, subs, 32, true));
            drop(c);
            let c = start_site("store-run", site("run").as_deref());
            let start = Instant::now();
            submit_api(&c, trivial, 16, false);
            wait_all_ended(&c, trivial as u64);
            run_rates.push(trivial as f64 / start.elapsed().as_secs_f64());
            drop(c);
        }
        table.add_row([
            store.to_string(),
            format!("{:.0}", median(sub_rates)),
            format!("{:.0}", median(run_rates)),
        ]);
    }
    let _ = std::fs::remove_dir_all(&secrets);
    println!("{table}");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var_os("SLUICE_BENCH_STORES").is_some() {
        compare_stores();
        return;
    }
    let mut rows: Vec<(String, String)> = Vec::new();

    let c = start_cluster("api");
    let n = 20_000;
    let secs = submit_api(&c, n, 32, true);
    rows.push((
        format!("submissions through the API ({n} jobs, 32 clients)"),
        format!("{:.0} /s", n as f64 / secs),
    ));
    drop(c);

    let c = start_cluster("sbatch");
    let n = 1_000;
    let start = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let bin = c.state().join("bin/sbatch");
            let (state, work) = (c.state(), c.dir.join("work"));
            std::thread::spawn(move || {
                for _ in 0..n / 8 {
                    let ok = Command::new(&bin)
                        .args(["-H", "-o", "/dev/null", "--wrap", "true"])
                        .current_dir(&work)
                        .env("SLUICE_STATE_DIR", &state)
                        .output()
                        .unwrap()
                        .status
                        .success();
                    assert!(ok);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    rows.push((
        format!("submissions through sbatch ({n} processes, 8 at a time)"),
        format!("{:.0} /s", n as f64 / secs),
    ));
    drop(c);

    let c = start_cluster("run");
    let n = 5_000;
    let start = Instant::now();
    submit_api(&c, n, 16, false);
    wait_all_ended(&c, n as u64);
    let secs = start.elapsed().as_secs_f64();
    rows.push((
        format!("trivial jobs submitted, run and finished ({n} jobs, 256 CPUs)"),
        format!("{:.0} /s", n as f64 / secs),
    ));
    drop(c);

    let c = start_cluster("squeue");
    let before = c.rss_kib();
    let n = 10_000;
    submit_api(&c, n, 16, true);
    let after = c.rss_kib();
    let mut times: Vec<f64> = (0..9)
        .map(|_| {
            let t = Instant::now();
            let out = c.command("squeue", &[]).expect("squeue runs");
            assert_eq!(out.lines().count(), n + 1);
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    rows.push((
        format!("squeue with {n} jobs queued (median of 9)"),
        format!("{:.0} ms", times[4] * 1000.0),
    ));
    rows.push((
        format!("controller memory per queued job ({n} jobs)"),
        format!("{:.1} KiB", after.saturating_sub(before) as f64 / n as f64),
    ));
    drop(c);

    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["measure", "result"]);
    for (m, r) in rows {
        table.add_row([m, r]);
    }
    println!("{table}");
}
