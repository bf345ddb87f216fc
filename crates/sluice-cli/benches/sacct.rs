//! `sacct` against a long history: `cargo bench -p sluice-cli --bench sacct` prints a
//! table (the README's "Accounting queries").
//!
//! For each size, a database of that many finished jobs (each with its batch step) is
//! written through the store's API, as the controller writes them: 50 users, ends
//! spread evenly over the last 30 days, records with a 40-variable environment. Then
//! `sluice up` (release build) starts on it and each command runs 7 times after one
//! warm-up; the table gives the median of the whole command's wall time and the rows
//! it printed:
//! - `sacct -j ONE` (one job, in the middle of the history);
//! - `sacct -u USER -S DATE` (one user's last 7 days: about 1 job in 200);
//! - `sacct` (as root: every user's jobs that ended since midnight).
//!
//! `SLUICE_BENCH_BIN=/path/to/sluice` measures another build of `sluice` against the
//! same databases (a release without the indexed store reads them as well);
//! `SLUICE_BENCH_SIZES=10000,100000` sets the sizes. Numbers depend on the machine;
//! compare rows of one run.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_proto::types::{JobDescription, JobRecord, JobState, StepId, StepRecord};
use sluice_store::Store;

const CONF: &str = "ClusterName=bench
SlurmctldHost=localhost
NodeName=b[1-2] CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=batch Nodes=b[1-2] Default=YES State=UP
";

const USERS: u64 = 50;
const DAY: i64 = 86_400;
const HISTORY: i64 = 30 * DAY;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Job `id` of `n`, as the controller stores a finished one.
fn record(id: u64, n: u64, t: i64) -> (JobRecord, StepRecord) {
    let end = t - HISTORY + (HISTORY * id as i64) / n as i64;
    let start = end - 600;
    let user = format!("user{}", id % USERS);
    let environment = (0..40)
        .map(|i| {
            (
                format!("VARIABLE_{i}"),
                format!("/some/path/value/{i}/{user}"),
            )
        })
        .collect();
    let job = JobRecord {
        id,
        uid: 1000 + (id % USERS) as u32,
        gid: 1000,
        user: user.clone(),
        group: "users".into(),
        account: format!("acct{}", id % 7),
        partition: "batch".into(),
        qos: "normal".into(),
        state: JobState::Completed,
        reason: "None".into(),
        submit_time: start - 30,
        start_time: Some(start),
        end_time: Some(end),
        nodes: vec![format!("b{}", 1 + id % 2)],
        tasks_per_node: vec![1],
        cpus_per_node: vec![4],
        ntasks: 1,
        cpus_per_task: 4,
        min_nodes: 1,
        mem_per_node: 4096,
        stdout: format!("/home/{user}/slurm-{id}.out"),
        stderr: format!("/home/{user}/slurm-{id}.out"),
        stdin: "/dev/null".into(),
        tres_req: vec![("cpu".into(), 4), ("mem".into(), 4096), ("node".into(), 1)],
        tres_alloc: vec![("cpu".into(), 4), ("mem".into(), 4096), ("node".into(), 1)],
        desc: JobDescription {
            name: format!("analysis-{}", id % 13),
            work_dir: format!("/home/{user}"),
            script: "#!/bin/bash\n#SBATCH -c 4\nmodule load python\npython analyse.py\n".into(),
            environment,
            ..JobDescription::default()
        },
        ..JobRecord::default()
    };
    let step = StepRecord {
        job_id: id,
        step: StepId::Batch,
        name: "batch".into(),
        state: JobState::Completed,
        start,
        end: Some(end),
        exit_code: 0,
        signal: 0,
        nodes: job.nodes.clone(),
        ntasks: 1,
        cpus: 4,
        held_cpus: Vec::new(),
        ended_on: Vec::new(),
        usage: None,
        run: 0,
    };
    (job, step)
}

/// A state directory whose database holds `n` finished jobs.
fn history(dir: &std::path::Path, n: u64, t: i64) {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let keys = sluice_ctld::server::accounting::keys_of_record;
    let (store, writer, _) = Store::open(&state.join("sluice.db"), 1, keys).unwrap();
    let mut waits = Vec::new();
    let mut id = 1;
    while id <= n {
        let last = (id + 999).min(n);
        let (mut jobs, mut steps) = (Vec::new(), Vec::new());
        for i in id..=last {
            let (job, step) = record(i, n, t);
            let json = serde_json::to_string(&job).unwrap();
            jobs.push((sluice_ctld::server::accounting::job_keys(&job), json));
            steps.push(step);
        }
        waits.push(store.insert_jobs(id, jobs));
        for s in steps {
            let json = serde_json::to_string(&s).unwrap();
            waits.push(store.put_step(s.job_id, u64::from(u32::MAX - 1), json));
        }
        id = last + 1;
    }
    for w in waits {
        w.recv().unwrap().unwrap();
    }
    drop(store);
    drop(writer);
}

struct Cluster {
    dir: PathBuf,
    up: Child,
}

impl Cluster {
    fn start(dir: PathBuf, bin: &str) -> Cluster {
        std::fs::write(dir.join("slurm.conf"), CONF).unwrap();
        let up = Command::new(bin)
            .args(["up", "--config"])
            .arg(dir.join("slurm.conf"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let c = Cluster { dir, up };
        let start = Instant::now();
        while c.sacct(&["-j", "1"]).is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(300),
                "cluster did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        c
    }

    fn sacct(&self, args: &[&str]) -> Option<String> {
        let state = self.dir.join("state");
        let o = Command::new(state.join("bin").join("sacct"))
            .args(args)
            .env("SLUICE_STATE_DIR", &state)
            .output()
            .ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.up.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.up.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Median wall time of 7 runs (after one warm-up), ms, and the lines printed.
fn measure(c: &Cluster, args: &[&str]) -> (f64, usize) {
    let lines = c.sacct(args).expect("sacct runs").lines().count();
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            c.sacct(args).expect("sacct runs");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[3], lines)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let bin = std::env::var("SLUICE_BENCH_BIN").unwrap_or(env!("CARGO_BIN_EXE_sluice").into());
    let sizes: Vec<u64> = std::env::var("SLUICE_BENCH_SIZES")
        .unwrap_or("10000,100000".into())
        .split(',')
        .map(|s| s.parse().expect("a size"))
        .collect();
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["jobs in the database", "command", "rows", "median ms"]);
    for n in sizes {
        let t = now();
        let dir =
            std::env::temp_dir().join(format!("sluice-bench-sacct-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let filled = Instant::now();
        history(&dir, n, t);
        eprintln!(
            "{n} jobs written in {:.1} s",
            filled.elapsed().as_secs_f64()
        );
        let c = Cluster::start(dir, &bin);
        let one = (n / 2).to_string();
        let week = sluice_proto::time::timestamp(t - 7 * DAY);
        let cases: [(String, Vec<&str>); 3] = [
            (format!("sacct -j {one}"), vec!["-j", &one]),
            (
                "sacct -u user7 -S (a week ago)".into(),
                vec!["-u", "user7", "-S", &week],
            ),
            ("sacct (root: since midnight)".into(), vec![]),
        ];
        for (what, args) in cases {
            let (ms, lines) = measure(&c, &args);
            table.add_row([
                n.to_string(),
                what,
                lines.saturating_sub(2).to_string(),
                format!("{ms:.1}"),
            ]);
        }
    }
    println!("{table}");
}
