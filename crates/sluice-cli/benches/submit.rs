//! Where the time of one `sbatch` goes: `cargo bench -p sluice-cli --bench submit`
//! prints a table (the README's "One submission, piece by piece").
//!
//! A serial loop of `sbatch --parsable -o /dev/null --wrap true` against a live cluster
//! (`sluice up`, four nodes of 64 CPUs: every job starts and runs at once, as in a
//! loop of submissions on an idle cluster; blocks of 50 back to back, the rate is
//! submissions over the loop's time), then, one at a time with the machine left to
//! settle (the jobs before ended) before each, the pieces one submission is made of
//! (and last the loop again with `-H`: held jobs, which do not run, so that the
//! submissions are timed without the work of their jobs):
//! - the operating system's own cost of a process (`/bin/true`: fork, exec, exit, wait);
//! - the start of the `sluice` binary as a Slurm command (`sbatch --version`: loading
//!   and relocating the binary, the Rust runtime, dispatch by `argv[0]`, and exit);
//! - a connection to the controller's socket (connect and close, in this process);
//! - the controller's time: `POST /v1/jobs` of the description `sbatch` sends, from this
//!   process (the request read, the job checked, its id committed to disk — SQLite WAL,
//!   `synchronous=FULL` — and the answer);
//! - what is left is the client's own work: options, script, environment, the request
//!   written and the answer read.
//!
//! Medians over the rounds (default 300 submissions in the loop and 300 rounds of
//! pieces; `SLUICE_BENCH_ROUNDS=N`). With
//! `SLUICE_BENCH_BASELINE=/path/to/an/earlier/sluice`, the same measures run on a
//! second cluster of that binary too, alternating the two builds within every round,
//! so that both columns share the machine's moments of load; the table then shows
//! both, before and after.
//!
//! Numbers depend on the machine and on what else runs; compare columns of one run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// A `sluice up` of `binary` in a directory of its own, `name` in its name.
fn start_cluster(binary: &Path, name: &str) -> Up {
    let dir = up::fresh_dir(&format!(
        "sluice-bench-submit-{}-{name}",
        std::process::id()
    ));
    Up::start(binary, dir, CONF, None).until_idle(4)
}

/// Seconds `cmd args` takes on `c`, from spawn to exit; it must succeed.
fn timed(c: &Up, cmd: &Path, args: &[&str]) -> f64 {
    let t = Instant::now();
    let status = Command::new(cmd)
        .args(args)
        .current_dir(c.dir.join("work"))
        .env("SLUICE_STATE_DIR", c.state())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(status.success(), "{} {args:?} failed", cmd.display());
    secs
}

/// What `sbatch --parsable -o /dev/null --wrap true` sends from this process to `c`.
fn description(c: &Up) -> JobDescription {
    let mut environment: Vec<(String, String)> = std::env::vars().collect();
    environment.push(("SLUICE_STATE_DIR".into(), c.state().display().to_string()));
    JobDescription {
        name: "wrap".into(),
        work_dir: c.dir.join("work").display().to_string(),
        script: "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n".into(),
        environment,
        output: Some("/dev/null".into()),
        submit_host: "localhost".into(),
        command: "(null)".into(),
        ..JobDescription::default()
    }
}

/// The measures of one build, seconds each.
#[derive(Default)]
struct Samples {
    /// The serial loop's submissions, back to back.
    serial: Vec<f64>,
    /// The same loop with `-H`: held jobs, which do not run.
    held: Vec<f64>,
    /// One submission alone.
    sbatch: Vec<f64>,
    version: Vec<f64>,
    connect: Vec<f64>,
    post: Vec<f64>,
}

const SBATCH: [&str; 5] = ["--parsable", "-o", "/dev/null", "--wrap", "true"];
const SBATCH_HELD: [&str; 6] = ["--parsable", "-H", "-o", "/dev/null", "--wrap", "true"];

/// Submissions in a row of the serial loop.
const BLOCK: usize = 50;

/// Lets the jobs submitted before end, and the machine settle, before a measure.
fn settle() {
    std::thread::sleep(Duration::from_millis(25));
}

/// One round of pieces on `c`, each alone.
fn pieces(c: &Up, desc: &JobDescription, s: &mut Samples) {
    let sbatch = c.bin("sbatch");
    settle();
    s.version.push(timed(c, &sbatch, &["--version"]));
    let socket = sluice_proto::paths::controller_socket(&c.state());
    let t = Instant::now();
    drop(std::os::unix::net::UnixStream::connect(&socket).expect("connect"));
    s.connect.push(t.elapsed().as_secs_f64());
    settle();
    let t = Instant::now();
    let _: SubmitReply = c.client().post("/v1/jobs", desc).expect("submission");
    s.post.push(t.elapsed().as_secs_f64());
    settle();
    s.sbatch.push(timed(c, &sbatch, &SBATCH));
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(secs: f64) -> String {
    format!("{:.2} ms", secs * 1000.0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds: usize = std::env::var("SLUICE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let this = Path::new(env!("CARGO_BIN_EXE_sluice")).to_path_buf();
    let baseline = std::env::var_os("SLUICE_BENCH_BASELINE").map(PathBuf::from);

    let mut builds = vec![("this build".to_string(), start_cluster(&this, "this"))];
    if let Some(b) = &baseline {
        builds.insert(0, ("baseline".to_string(), start_cluster(b, "baseline")));
    }
    let descs: Vec<JobDescription> = builds.iter().map(|(_, c)| description(c)).collect();
    let mut samples: Vec<Samples> = builds.iter().map(|_| Samples::default()).collect();
    let n = builds.len();
    // The serial loop, a block of each build in turn.
    for b in 0..rounds.div_ceil(BLOCK) {
        for k in 0..n {
            let i = (b + k) % n;
            let (c, s) = (&builds[i].1, &mut samples[i]);
            settle();
            let sbatch = c.bin("sbatch");
            for _ in 0..BLOCK.min(rounds - b * BLOCK) {
                s.serial.push(timed(c, &sbatch, &SBATCH));
            }
        }
    }
    // The pieces, alternating which build goes first.
    let mut floor = Vec::new();
    let true_bin = Path::new("/bin/true");
    for r in 0..rounds {
        settle();
        floor.push(timed(&builds[0].1, true_bin, &[]));
        for k in 0..n {
            let i = (r + k) % n;
            pieces(&builds[i].1, &descs[i], &mut samples[i]);
        }
    }
    // The loop of held jobs, which do not run: the submissions alone. Last, as they
    // stay queued.
    for b in 0..rounds.div_ceil(BLOCK) {
        for k in 0..n {
            let i = (b + k) % n;
            let (c, s) = (&builds[i].1, &mut samples[i]);
            settle();
            let sbatch = c.bin("sbatch");
            for _ in 0..BLOCK.min(rounds - b * BLOCK) {
                s.held.push(timed(c, &sbatch, &SBATCH_HELD));
            }
        }
    }

    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    let mut header = vec![format!("one submission, median of {rounds}")];
    header.extend(builds.iter().map(|(name, _)| name.clone()));
    table.set_header(header);
    let row = |name: &str, f: &dyn Fn(&Samples) -> String| {
        let mut cells = vec![name.to_string()];
        cells.extend(samples.iter().map(f));
        cells
    };
    let total = |s: &Samples| s.serial.iter().sum::<f64>();
    table.add_row(row("serial `sbatch --wrap true`, submissions/s", &|s| {
        format!("{:.0} /s", s.serial.len() as f64 / total(s))
    }));
    table.add_row(row("- in that loop, one submission", &|s| {
        ms(median(&s.serial))
    }));
    table.add_row(row(
        "serial `sbatch -H ...` (held: no job runs), /s",
        &|s| format!("{:.0} /s", s.held.len() as f64 / s.held.iter().sum::<f64>()),
    ));
    table.add_row(row(
        "`sbatch --parsable -o /dev/null --wrap true` alone",
        &|s| ms(median(&s.sbatch)),
    ));
    table.add_row(row("- process start: `sbatch --version`", &|s| {
        ms(median(&s.version))
    }));
    table.add_row(row("  (of which any process: `/bin/true`)", &|_| {
        ms(median(&floor))
    }));
    table.add_row(row("- connection to the controller's socket", &|s| {
        ms(median(&s.connect))
    }));
    table.add_row(row(
        "- controller: `POST /v1/jobs`, id on disk, answer",
        &|s| ms(median(&s.post)),
    ));
    table.add_row(row("- the client's own work (the rest)", &|s| {
        ms((median(&s.sbatch) - median(&s.version) - median(&s.post)).max(0.0))
    }));
    println!("{table}");
}
