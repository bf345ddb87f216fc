//! `sacct` against a long history: `cargo bench -p sluice-cli --bench sacct` prints a
//! table (the README's "Accounting queries").
//!
//! For each size, a database of that many finished jobs is written through the store's
//! API, as the controller writes them: 50 users, ends spread evenly over the last 30
//! days, records with a 40-variable environment, each job with its batch step and a
//! four-task srun step, both with usage figures (`MaxRSS`, `TotalCPU`, ...). Then
//! `sluice up` (release build) starts on it and each command runs 7 times after one
//! warm-up; the table gives the median of the whole command's wall time and the rows
//! it printed:
//! - `sacct -j ONE` (one job, in the middle of the history);
//! - `sacct -j ONE -o FIELDS` (the same with usage fields);
//! - `sacct -u USER -S DATE -o FIELDS` (one user's last day, usage fields);
//! - `sacct -u USER -S DATE` (one user's last 7 days: about 1 job in 200);
//! - `sacct` (as root: every user's jobs that ended since midnight).
//!
//! Then what usage figures add per step: the record's length, and the database's
//! growth (its files' size, 10,000 jobs written with and without figures).
//!
//! `SLUICE_BENCH_BIN=/path/to/sluice` measures another build of `sluice` against the
//! same databases (a release without the indexed store reads them as well);
//! `SLUICE_BENCH_SIZES=10000,100000` sets the sizes (`1000000` for the README's
//! PostgreSQL table); `SLUICE_BENCH_STORES=sqlite,postgresql` the stores (the default:
//! SQLite only; PostgreSQL on a server of the bench's own, where its binaries are
//! installed, written through the same store API in batches of 1,000 jobs). Numbers
//! depend on the machine; compare rows of one run.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_proto::types::{JobDescription, JobRecord, JobState, StepId, StepRecord};
use sluice_proto::usage::{Stat, StepUsage};
use std::os::unix::fs::PermissionsExt;

use sluice_store::pg_server::{self, PgServer};
use sluice_store::{Location, Member, Store};

const CONF: &str = "ClusterName=bench
SlurmctldHost=localhost
NodeName=b[1-2] CPUs=64 RealMemory=256000 State=UNKNOWN
PartitionName=batch Nodes=b[1-2] Default=YES State=UP
";

const USERS: u64 = 50;
/// The user (of the 50) whose jobs the per-user queries list.
const MEASURED_USER: u64 = 7;
const DAY: i64 = 86_400;
const HISTORY: i64 = 30 * DAY;

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Job `id` of `n`, as the controller stores a finished one.
fn record(id: u64, n: u64, t: i64, with_usage: bool) -> (JobRecord, Vec<StepRecord>) {
    let end = t - HISTORY + (HISTORY * id as i64) / n as i64;
    let start = end - 600;
    // The user the per-user queries ask for is `nobody`, whom every machine's user
    // database knows (`sacct -u` refuses a name it does not); the others are names
    // only.
    let user = match id % USERS {
        MEASURED_USER => "nobody".to_string(),
        u => format!("user{u}"),
    };
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
        uid: match id % USERS {
            MEASURED_USER => 65534,
            u => 1000 + u as u32,
        },
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
    let batch = StepRecord {
        time_limit: None,
        submit_line: None,
        timed_out: false,
        gpus: Vec::new(),
        srun: None,
        cancelled_by: None,
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
        usage: with_usage.then(|| Box::new(usage(&job.nodes[0], 1, id))),
        run: 0,
        suspended_secs: 0,
    };
    // An srun step of four tasks as well.
    let srun = StepRecord {
        time_limit: None,
        timed_out: false,
        gpus: Vec::new(),
        srun: None,
        cancelled_by: None,
        step: StepId::Number(0),
        name: "python".into(),
        ntasks: 4,
        usage: with_usage.then(|| Box::new(usage(&job.nodes[0], 4, id))),
        ..batch.clone()
    };
    (job, vec![batch, srun])
}

/// What `tasks` tasks on `node` used, as an agent reports it at a step's end (the
/// figures vary with the job so that they do not compress alike).
fn usage(node: &str, tasks: u32, id: u64) -> StepUsage {
    let mut all = StepUsage::default();
    for task in 0..tasks {
        let k = id * 7 + u64::from(task);
        let one = StepUsage {
            tasks: 1,
            cpu_ms: Stat::one(590_000 + k % 9_973, node, task),
            user_cpu_ms: 580_000 + k % 7_919,
            system_cpu_ms: 10_000 + k % 997,
            rss: Stat::one(2_000_000_000 + k * 4096 % 1_000_000_000, node, task),
            vmem: Stat::one(3_000_000_000 + k * 8192 % 1_000_000_000, node, task),
            pages: Stat::one(k % 13, node, task),
            disk_read: Stat::one(50_000_000 + k * 512 % 10_000_000, node, task),
            disk_write: Stat::one(10_000_000 + k * 1024 % 10_000_000, node, task),
            gpus: Vec::new(),
            sampled_at: 1_700_000_000 + k as i64,
        };
        all.merge(&one);
    }
    all
}

/// Where a bench's history is kept.
enum Kind {
    Sqlite,
    /// A database of this server's (its `sluice.conf` written beside slurm.conf).
    Postgres(&'static PgServer),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Sqlite => "SQLite",
            Kind::Postgres(_) => "PostgreSQL",
        }
    }

    /// The store's location for `dir`'s cluster (database `bench_N` on PostgreSQL,
    /// made empty), its settings written in `dir/sluice.conf`.
    fn location(&self, dir: &std::path::Path, n: u64) -> Location {
        match self {
            Kind::Sqlite => Location::Sqlite(dir.join("state").join("sluice.db")),
            Kind::Postgres(server) => {
                let db = format!("bench_{n}");
                let target = server.database(&db);
                let pass = dir.join("dbpass");
                std::fs::write(&pass, format!("{}\n", pg_server::PASSWORD)).unwrap();
                std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
                std::fs::write(
                    dir.join("sluice.conf"),
                    format!(
                        "StorageType=postgresql\nStorageHost=127.0.0.1\nStoragePort={}\n\
                         StorageUser={}\nStorageLoc={db}\nStoragePassFile={}\n",
                        server.port(),
                        pg_server::ROLE,
                        pass.display()
                    ),
                )
                .unwrap();
                // The cluster's own tables, as its controller means them.
                Location::Postgres(Box::new(target.for_member(Member {
                    cluster: "bench".into(),
                    host: "bench".into(),
                    listed: vec!["localhost".into()],
                    control_host: String::new(),
                    control_port: 0,
                })))
            }
        }
    }
}

/// A state directory whose database holds `n` finished jobs (their steps with usage
/// figures, or without), in `kind`'s store.
fn history(dir: &std::path::Path, n: u64, t: i64, with_usage: bool, kind: &Kind) {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let keys = sluice_ctld::server::accounting::keys_of_record;
    let (store, writer, _) = Store::open_at(&kind.location(dir, n), 1, keys).unwrap();
    let mut waits: Vec<std::sync::mpsc::Receiver<Result<(), sluice_store::StoreError>>> =
        Vec::new();
    let mut id = 1;
    while id <= n {
        // Bounded: the writer commits what is queued while the next are made.
        if waits.len() > 20_000 {
            for w in waits.drain(..10_000) {
                w.recv().unwrap().unwrap();
            }
        }
        let last = (id + 999).min(n);
        let (mut jobs, mut steps) = (Vec::new(), Vec::new());
        for i in id..=last {
            let (job, job_steps) = record(i, n, t, with_usage);
            let json = serde_json::to_string(&job).unwrap();
            jobs.push((sluice_ctld::server::accounting::job_keys(&job), json));
            steps.extend(job_steps);
        }
        waits.push(store.insert_jobs(id, jobs));
        for s in steps {
            let json = serde_json::to_string(&s).unwrap();
            let number = match s.step {
                StepId::Number(k) => k,
                _ => u32::MAX - 1,
            };
            waits.push(store.put_step(s.job_id, u64::from(number), json));
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
        self.try_sacct(args).ok()
    }

    /// `sacct ARGS`: what it printed, or why it failed (its exit status and stderr).
    fn try_sacct(&self, args: &[&str]) -> Result<String, String> {
        let state = self.dir.join("state");
        let o = Command::new(state.join("bin").join("sacct"))
            .args(args)
            .env("SLUICE_STATE_DIR", &state)
            .output()
            .map_err(|e| e.to_string())?;
        match o.status.success() {
            true => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
            false => Err(format!(
                "sacct {}: {}: {}",
                args.join(" "),
                o.status,
                String::from_utf8_lossy(&o.stderr)
            )),
        }
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
    let run = |args: &[&str]| c.try_sacct(args).unwrap_or_else(|e| panic!("{e}"));
    let lines = run(args).lines().count();
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            run(args);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[3], lines)
}

/// The bytes the database's files take in `dir`'s state directory.
fn db_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("state"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sluice.db"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// What usage figures add per step: the record's JSON length, and the database's
/// growth over `n` jobs (two steps each) written with and without them.
fn step_growth(n: u64, t: i64) -> (f64, f64) {
    let (with, without) = (record(n / 2, n, t, true).1, record(n / 2, n, t, false).1);
    let len = |v: &[StepRecord]| {
        v.iter()
            .map(|s| serde_json::to_string(s).unwrap().len())
            .sum::<usize>() as f64
    };
    let record_bytes = (len(&with) - len(&without)) / with.len() as f64;
    let mut sizes = Vec::new();
    for with_usage in [false, true] {
        let dir = std::env::temp_dir().join(format!(
            "sluice-bench-sacct-size-{}-{with_usage}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        history(&dir, n, t, with_usage, &Kind::Sqlite);
        sizes.push(db_bytes(&dir));
        let _ = std::fs::remove_dir_all(&dir);
    }
    let db_per_step = (sizes[1] as f64 - sizes[0] as f64) / (2 * n) as f64;
    (record_bytes, db_per_step)
}

/// Fills a database of `kind` with `n` jobs, starts `bin`'s cluster on it and adds
/// its rows to `table`.
fn measure_size(table: &mut comfy_table::Table, kind: &Kind, n: u64, bin: &str) {
    let t = now();
    let dir = std::env::temp_dir().join(format!(
        "sluice-bench-sacct-{}-{n}-{}",
        std::process::id(),
        kind.name()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let filled = Instant::now();
    history(&dir, n, t, true, kind);
    eprintln!(
        "{}: {n} jobs written in {:.1} s",
        kind.name(),
        filled.elapsed().as_secs_f64()
    );
    let c = Cluster::start(dir, bin);
    let one = (n / 2).to_string();
    let week = sluice_proto::time::timestamp(t - 7 * DAY);
    let day = sluice_proto::time::timestamp(t - DAY);
    let fields = "JobID,MaxRSS,MaxRSSNode,AveCPU,TotalCPU,MaxDiskRead,TRESUsageInMax";
    let cases: [(String, Vec<&str>); 6] = [
        (format!("sacct -j {one}"), vec!["-j", &one]),
        (
            format!("sacct -j {one} -o (usage fields)"),
            vec!["-j", &one, "-o", fields],
        ),
        (
            "sacct -u USER -S (a day ago) -o (usage fields)".into(),
            vec!["-u", "nobody", "-S", &day, "-o", fields],
        ),
        (
            "sacct -u USER -S (a week ago)".into(),
            vec!["-u", "nobody", "-S", &week],
        ),
        ("sacct -a -S (a day ago)".into(), vec!["-a", "-S", &day]),
        ("sacct (root: since midnight)".into(), vec![]),
    ];
    for (what, args) in cases {
        let (ms, lines) = measure(&c, &args);
        table.add_row([
            kind.name().to_string(),
            n.to_string(),
            what,
            lines.saturating_sub(2).to_string(),
            format!("{ms:.1}"),
        ]);
    }
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
    let kinds: Vec<Kind> = std::env::var("SLUICE_BENCH_STORES")
        .unwrap_or("sqlite".into())
        .split(',')
        .filter_map(|k| match k {
            "sqlite" => Some(Kind::Sqlite),
            "postgresql" => pg_server::shared("sacct bench").map(Kind::Postgres),
            other => panic!("unknown store {other}: sqlite or postgresql"),
        })
        .collect();
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "store",
        "jobs in the database",
        "command",
        "rows",
        "median ms",
    ]);
    for kind in &kinds {
        for &n in &sizes {
            measure_size(&mut table, kind, n, &bin);
        }
    }
    println!("{table}");
    let n = 10_000;
    let (record_bytes, db_bytes) = step_growth(n, now());
    println!(
        "usage figures per step: {record_bytes:.0} bytes of record, \
         {db_bytes:.0} bytes of database ({n} jobs, two steps each, with and without)"
    );
}
