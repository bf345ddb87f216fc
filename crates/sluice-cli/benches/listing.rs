//! Job and node listings of a live cluster at several queue sizes: `cargo bench -p
//! sluice-cli --bench listing` prints a table (the README's "The live cluster").
//!
//! For each queue size a fresh cluster (`sluice up` in a temporary directory, release
//! build, four nodes of 64 CPUs) gets that many held jobs through the API, 50 of them
//! submitted by another user (`nobody`, with `sbatch`), and each command below runs
//! seven times as a user runs it (a whole process, from start to exit); the table gives
//! the median, in milliseconds:
//! - `squeue` (every job), `squeue -j ONE` (a job in the middle of the queue),
//!   `squeue -u nobody` (the other user's 50 jobs), `squeue -t R` (nothing runs);
//! - `scontrol show job ONE`, `sinfo`;
//! - and the controller's resident memory per queued job (its growth over the jobs,
//!   KiB).
//!
//! `LISTING_SIZES=2000,9000` chooses the queue sizes (default 2,000, 9,000 and
//! 100,000). `LISTING_BINS=/path/a/sluice,/path/b/sluice` measures several builds of
//! `sluice` in one run, each in turn at each size (a column per build); by default the
//! build next to this benchmark.
//!
//! Numbers depend on the machine; compare columns of one run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_proto::types::{JobDescription, SubmitReply};

#[allow(dead_code)]
#[path = "common/up.rs"]
mod up;

use up::Up;

/// Runs of each command; the median is reported.
const RUNS: usize = 7;
/// Jobs submitted by the other user.
const OTHER_JOBS: usize = 50;
const OTHER_USER: &str = "nobody";

/// A fresh cluster of four nodes on build `bin` holding at most `max_jobs` jobs, `name`
/// in its directory's name; every user may reach it.
fn start_cluster(bin: &Path, name: &str, max_jobs: usize) -> Up {
    let dir = up::fresh_dir(&format!("sluice-listing-{}-{name}", std::process::id()));
    // Every user may read the state directory's commands and reach the socket.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(dir.join("work"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let conf = format!(
        "ClusterName=bench
SlurmctldHost=localhost
NodeName=b[1-4] CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=batch Nodes=b[1-4] Default=YES State=UP
MinJobAge=3600
MaxJobCount={max_jobs}
"
    );
    Up::start(bin, dir, &conf, None).until_idle(4)
}

fn job(work: &Path) -> JobDescription {
    JobDescription {
        name: "bench".into(),
        work_dir: work.display().to_string(),
        script: "#!/bin/sh\ntrue\n".into(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        output: Some("/dev/null".into()),
        hold: true,
        ..JobDescription::default()
    }
}

/// Submits `n` held jobs through the API from `clients` threads.
fn submit_api(c: &Up, n: usize, clients: usize) {
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let client = c.client();
            let desc = job(&c.dir.join("work"));
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
}

/// Submits `n` held jobs as `OTHER_USER`, with `sbatch`.
fn submit_other(c: &Up, n: usize) {
    use std::os::unix::process::CommandExt;
    let user = nix::unistd::User::from_name(OTHER_USER)
        .unwrap()
        .expect("the other user exists");
    for _ in 0..n {
        let ok = Command::new(c.state().join("bin/sbatch"))
            .args(["-H", "-o", "/dev/null", "--wrap", "true"])
            .current_dir(c.dir.join("work"))
            .env("SLUICE_STATE_DIR", c.state())
            .uid(user.uid.as_raw())
            .gid(user.gid.as_raw())
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "sbatch as {OTHER_USER}");
    }
}

/// Median wall time of `RUNS` runs of `cmd args`, ms; each run's output is checked by
/// `check` (lines of standard output).
fn median_ms(c: &Up, cmd: &str, args: &[&str], check: impl Fn(usize) -> bool) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let o = c.run(cmd, args).unwrap();
            let took = t.elapsed().as_secs_f64();
            let lines = o.stdout.iter().filter(|&&b| b == b'\n').count();
            assert!(
                o.status.success() && check(lines),
                "{cmd} {args:?}: {} lines, {}",
                lines,
                String::from_utf8_lossy(&o.stderr)
            );
            took
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2] * 1000.0
}

/// The measures, in the table's order.
const MEASURES: &[&str] = &[
    "squeue",
    "squeue -j ONE",
    "squeue -u nobody",
    "squeue -t R",
    "scontrol show job ONE",
    "sinfo",
    "controller memory per queued job, KiB",
];

/// One cluster of `bin` with `n` held jobs: each measure's median, ms.
fn measure(bin: &Path, tag: &str, n: usize) -> Vec<f64> {
    let c = start_cluster(bin, &format!("{tag}-{n}"), n + OTHER_JOBS + 1000);
    let before = c.rss_kib();
    submit_api(&c, n - n / 2, 16);
    submit_other(&c, OTHER_JOBS);
    submit_api(&c, n / 2, 16);
    let total = n + OTHER_JOBS;
    // Let the controller finish what the submissions left it (passes, writes).
    std::thread::sleep(Duration::from_secs(2));
    // A job in the middle of the queue.
    let one = (total / 2).to_string();
    let per_job = c.rss_kib().saturating_sub(before) as f64 / total as f64;
    vec![
        median_ms(&c, "squeue", &[], |l| l == total + 1),
        median_ms(&c, "squeue", &["-j", &one], |l| l == 2),
        median_ms(&c, "squeue", &["-u", OTHER_USER], |l| l == OTHER_JOBS + 1),
        median_ms(&c, "squeue", &["-t", "R"], |l| l == 1),
        median_ms(&c, "scontrol", &["show", "job", &one], |l| l > 10),
        median_ms(&c, "sinfo", &[], |l| l == 2),
        per_job,
    ]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes: Vec<usize> = std::env::var("LISTING_SIZES")
        .unwrap_or_else(|_| "2000,9000,100000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("LISTING_SIZES: numbers"))
        .collect();
    let bins: Vec<PathBuf> = match std::env::var("LISTING_BINS") {
        Ok(b) => b.split(',').map(PathBuf::from).collect(),
        Err(_) => vec![PathBuf::from(env!("CARGO_BIN_EXE_sluice"))],
    };
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    let mut header = vec!["queued jobs".to_string(), "command".to_string()];
    header.extend(bins.iter().map(|b| format!("{}, ms", b.display())));
    table.set_header(header);
    for &n in &sizes {
        let results: Vec<Vec<f64>> = bins
            .iter()
            .enumerate()
            .map(|(i, b)| measure(b, &i.to_string(), n))
            .collect();
        for (m, name) in MEASURES.iter().enumerate() {
            let mut row = vec![n.to_string(), (*name).to_string()];
            row.extend(results.iter().map(|r| format!("{:.1}", r[m])));
            table.add_row(row);
        }
    }
    println!("{table}");
}
