//! The controller's resident memory as its queue grows: `cargo bench -p sluice-cli
//! --bench queue_memory [-- MAX]` prints a table (the README's Performance section).
//!
//! A release `sluice up` (four nodes of 64 CPUs, in a state directory of its own) is
//! given held jobs through the API by 32 concurrent clients, each job with a login
//! shell's environment (50 variables, about 3 KB) and a short script, until 10,000,
//! 100,000 and 1,000,000 are queued (`MAX`, default 1,000,000, stops earlier). At 0 and
//! at each count the controller's resident set (`VmRSS` in `/proc/PID/status`, what
//! `ps` shows) is read once its loop is idle; a row gives it, its growth over the empty
//! controller per job, and the database's size on disk.
//!
//! With `--pending` the jobs are not held but queued in the scheduler, behind a job
//! that holds all four nodes for a day, each asking an hour: every scheduling pass
//! looks at them and the background forecast simulates them all.
//! `SLUICE_BENCH_BIN=/path/to/sluice` measures another build.

use std::path::Path;
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
MaxJobCount=2000000
";

/// A fresh cluster of four nodes, once the controller shows them all idle.
fn start_cluster() -> Up {
    let dir = up::fresh_dir(&format!("sluice-bench-{}-memory", std::process::id()));
    let bin = std::env::var("SLUICE_BENCH_BIN").unwrap_or(env!("CARGO_BIN_EXE_sluice").into());
    Up::start(Path::new(&bin), dir, CONF, None).until(
        Duration::from_secs(60),
        Duration::from_millis(50),
        |c| {
            c.client()
                .get::<serde_json::Value>("/v1/nodes")
                .is_ok_and(|n| {
                    n.as_array()
                        .is_some_and(|n| n.iter().all(|n| n["state"] == "idle"))
                })
        },
    )
}

/// The controller's resident memory once its loop has been idle a little: two
/// readings a second apart that agree, at most ten seconds.
fn settled_rss_kib(c: &Up) -> u64 {
    let mut last = c.rss_kib();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_secs(1));
        let now = c.rss_kib();
        if now == last {
            break;
        }
        last = now;
    }
    last
}

/// The database's files, MiB.
fn database_mib(c: &Up) -> f64 {
    let bytes: u64 = ["sluice.db", "sluice.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(c.state().join(f)).ok())
        .map(|m| m.len())
        .sum();
    bytes as f64 / (1024.0 * 1024.0)
}

/// A login shell's environment: 50 variables, about 3 KB.
fn login_environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/site/bin:/home/alice/.local/bin"),
        ("HOME", "/home/alice"),
        ("USER", "alice"),
        ("LOGNAME", "alice"),
        ("SHELL", "/bin/bash"),
        ("LANG", "en_US.UTF-8"),
        ("TERM", "xterm-256color"),
        ("PWD", "/home/alice/project"),
        ("MODULEPATH", "/etc/modulefiles:/usr/share/modulefiles:/opt/site/modulefiles/Core:/opt/site/modulefiles/Compiler"),
        ("LS_COLORS", "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=30;41:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.arc=01;31:*.arj=01;31:*.taz=01;31:*.lha=01;31:*.lz4=01;31:*.lzh=01;31:*.lzma=01;31:*.tlz=01;31:*.txz=01;31:*.tzo=01;31:*.t7z=01;31:*.zip=01;31:*.z=01;31:*.dz=01;31:*.gz=01;31:*.lrz=01;31:*.lz=01;31:*.lzo=01;31:*.xz=01;31:*.zst=01;31:*.tzst=01;31:*.bz2=01;31:*.bz=01;31:*.tbz=01;31:*.tbz2=01;31:*.tz=01;31:*.deb=01;31:*.rpm=01;31:*.jar=01;31:*.war=01;31:*.ear=01;31:*.sar=01;31:*.rar=01;31:*.alz=01;31:*.ace=01;31:*.zoo=01;31:*.cpio=01;31:*.7z=01;31:*.rz=01;31:*.cab=01;31"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut i = 0;
    while env.len() < 50 {
        env.push((
            format!("SITE_SETTING_{i:02}"),
            format!("/opt/site/software/package-{i:02}/version-1.{i}.0/share/config"),
        ));
        i += 1;
    }
    env
}

fn job(work: &Path, pending: bool) -> JobDescription {
    JobDescription {
        hold: !pending,
        time_limit: pending.then_some(Some(3600)),
        name: "wrap".into(),
        work_dir: work.display().to_string(),
        script: "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n".into(),
        environment: login_environment(),
        output: Some("/dev/null".into()),
        submit_host: "login01".into(),
        command: "(null)".into(),
        ..JobDescription::default()
    }
}

/// A job holding all four nodes for a day, once it runs: pending jobs queue behind it.
fn block_nodes(c: &Up) {
    let desc = JobDescription {
        name: "blocker".into(),
        script: "#!/bin/sh\nsleep 86400\n".into(),
        nodes: Some((4, 4)),
        exclusive: true,
        time_limit: Some(Some(86400)),
        ..job(&c.dir.join("work"), true)
    };
    let _: SubmitReply = c.client().post("/v1/jobs", &desc).expect("blocker");
    let start = Instant::now();
    while c
        .command("squeue", &["-h", "-t", "R", "-o", "%i"])
        .is_none_or(|o| o.trim().is_empty())
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the blocker never ran"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Submits `n` jobs (held, or pending with `pending`) through the API from `clients`
/// threads; seconds taken.
fn submit(c: &Up, n: usize, clients: usize, pending: bool) -> f64 {
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let client = c.client();
            let desc = job(&c.dir.join("work"), pending);
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

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let max: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.replace([',', '_'], "").parse().ok())
        .unwrap_or(1_000_000);
    let pending = std::env::args().any(|a| a == "--pending");
    let env_bytes: usize = login_environment()
        .iter()
        .map(|(k, v)| k.len() + v.len() + 2)
        .sum();
    let c = start_cluster();
    if pending {
        block_nodes(&c);
    }
    let base = settled_rss_kib(&c);
    let mut rows = vec![[
        "0".to_string(),
        format!("{:.1}", base as f64 / 1024.0),
        "-".to_string(),
        format!("{:.1}", database_mib(&c)),
        "-".to_string(),
    ]];
    let mut queued = 0;
    for target in [10_000, 100_000, 1_000_000] {
        if target > max {
            break;
        }
        let secs = submit(&c, target - queued, 32, pending);
        let rate = (target - queued) as f64 / secs;
        queued = target;
        let rss = settled_rss_kib(&c);
        rows.push([
            format_count(queued),
            format!("{:.1}", rss as f64 / 1024.0),
            format!("{:.2}", rss.saturating_sub(base) as f64 / queued as f64),
            format!("{:.1}", database_mib(&c)),
            format!("{rate:.0}"),
        ]);
    }
    println!(
        "{} jobs through the API, 32 clients, each with a {env_bytes}-byte environment \
         of 50 variables",
        if pending { "pending" } else { "held" }
    );
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "jobs queued",
        "controller RSS (MiB)",
        "growth per job (KiB)",
        "database (MiB)",
        "submissions/s",
    ]);
    for r in rows {
        table.add_row(r);
    }
    println!("{table}");
}

fn format_count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
