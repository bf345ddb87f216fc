//! Replay benchmark: `cargo bench -p sluice-sim` prints Markdown tables for the README.
//!
//! 1. Replay throughput: KTH-SP2 under each policy in reference and full mode, and
//!    synthetic scale runs (10,000 nodes × 64 CPUs, load 0.9, `backfill` with Slurm's
//!    defaults). Wall time covers `replay::run` plus `metrics::compute` only, not reading
//!    the trace or generating the workload. Each scenario runs in a child process (this
//!    binary re-executed with `--scenario NAME`), so that its peak resident set (VmHWM)
//!    is its own.
//! 2. Input preparation: trace reading and workload generation times.
//! 3. Memory per queued job, counted exactly by this binary's global allocator.
//!
//! `SLUICE_BENCH_QUICK=1` skips the 1,000,000-job run and replays KTH-SP2 once per
//! scenario instead of five times. Run without `--bench` (as `cargo test --benches`
//! does), the binary goes through the same steps on tiny inputs as a smoke test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sluice_core::{
    BackfillParams, Cluster, JobId, JobRequest, JobSpec, PartitionId, Policy, Scheduler,
};
use sluice_sim::metrics;
use sluice_sim::replay::{self, ReplayOptions};
use sluice_sim::setup::{self, MachineSpec, Mode, SimJob};
use sluice_sim::synth::{self, SynthParams};
use sluice_sim::trace::swf;

/// The system allocator, counting the bytes currently allocated (as requested by the
/// program, without the allocator's own overhead).
struct CountingAlloc;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
            ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Bytes the program holds right now.
fn allocated() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

/// Prefix of the one line a child prints for its parent.
const RESULT_TAG: &str = "sluice-bench-result";

const KTH_TRACE: &str = "traces/swf/KTH-SP2-1996-2.swf.gz";
/// Nodes of the full-mode KTH-SP2 machine (its 100 processors, one per node).
const KTH_NODES: u32 = 100;
const SYNTH_NODES: u32 = 10_000;
const SYNTH_CPUS: u32 = 64;
const SYNTH_LOAD: f64 = 0.9;
/// The overloaded scenario: more work offered than the machine can do.
const OVERLOAD_JOBS: u64 = 4_000;
const OVERLOAD_NODES: u32 = 1_000;
const OVERLOAD_LOAD: f64 = 1.5;

fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PolicyKind {
    Fcfs,
    Easy,
    Conservative,
    Backfill,
}

impl PolicyKind {
    const ALL: [PolicyKind; 4] = [
        PolicyKind::Fcfs,
        PolicyKind::Easy,
        PolicyKind::Conservative,
        PolicyKind::Backfill,
    ];

    fn name(self) -> &'static str {
        match self {
            PolicyKind::Fcfs => "fcfs",
            PolicyKind::Easy => "easy",
            PolicyKind::Conservative => "conservative",
            PolicyKind::Backfill => "backfill",
        }
    }

    fn policy(self) -> Policy {
        match self {
            PolicyKind::Fcfs => Policy::Fcfs,
            PolicyKind::Easy => Policy::Easy,
            PolicyKind::Conservative => Policy::Conservative,
            PolicyKind::Backfill => Policy::Backfill(BackfillParams::default()),
        }
    }

    /// Whether the policy has a backfill pass (EASY's backfilling counts too).
    fn backfills(self) -> bool {
        matches!(self, PolicyKind::Easy | PolicyKind::Backfill)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Workload {
    Kth(Mode),
    Synthetic { jobs: u64, nodes: u32, load: f64 },
}

impl Workload {
    fn label(self) -> String {
        match self {
            Workload::Kth(_) => "KTH-SP2".into(),
            Workload::Synthetic { nodes, load, .. } => {
                format!(
                    "synthetic ({} × {SYNTH_CPUS}, load {load})",
                    group(nodes as u64)
                )
            }
        }
    }

    fn mode(self) -> String {
        match self {
            Workload::Kth(Mode::Reference) => "reference (1 pool)".into(),
            Workload::Kth(Mode::Full) => format!("full ({KTH_NODES} nodes)"),
            Workload::Synthetic { nodes, .. } => format!("full ({} nodes)", group(nodes as u64)),
        }
    }

    fn key(self) -> String {
        match self {
            Workload::Kth(Mode::Reference) => "kth-reference".into(),
            Workload::Kth(Mode::Full) => "kth-full".into(),
            Workload::Synthetic { jobs, nodes, load } => {
                format!("synthetic-{jobs}x{nodes}-load{load}")
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Scenario {
    workload: Workload,
    policy: PolicyKind,
    /// Timed repetitions (the median is reported).
    runs: usize,
}

impl Scenario {
    fn name(&self) -> String {
        format!("{}-{}", self.workload.key(), self.policy.name())
    }
}

/// The benchmark's scenarios; `quick` skips the 1M-job run and repeats less.
fn scenarios(quick: bool) -> Vec<Scenario> {
    let kth_runs = if quick { 1 } else { 5 };
    let mut out = Vec::new();
    for mode in [Mode::Reference, Mode::Full] {
        for policy in PolicyKind::ALL {
            out.push(Scenario {
                workload: Workload::Kth(mode),
                policy,
                runs: kth_runs,
            });
        }
    }
    let sizes: &[u64] = if quick {
        &[100_000]
    } else {
        &[100_000, 1_000_000]
    };
    for &jobs in sizes {
        out.push(Scenario {
            workload: Workload::Synthetic {
                jobs,
                nodes: SYNTH_NODES,
                load: SYNTH_LOAD,
            },
            policy: PolicyKind::Backfill,
            runs: 1,
        });
    }
    // An overloaded machine: the queue grows without bound, and every backfill pass
    // plans bf_max_job_test jobs. This is the expensive case for backfilling.
    for policy in [
        PolicyKind::Easy,
        PolicyKind::Conservative,
        PolicyKind::Backfill,
    ] {
        out.push(Scenario {
            workload: Workload::Synthetic {
                jobs: OVERLOAD_JOBS,
                nodes: OVERLOAD_NODES,
                load: OVERLOAD_LOAD,
            },
            policy,
            runs: 1,
        });
    }
    out
}

/// Tiny scenarios for the smoke test (a run without `--bench`).
fn smoke_scenarios() -> Vec<Scenario> {
    vec![Scenario {
        workload: Workload::Synthetic {
            jobs: 1_000,
            nodes: 100,
            load: SYNTH_LOAD,
        },
        policy: PolicyKind::Backfill,
        runs: 2,
    }]
}

/// A machine and its jobs, ready for replay.
struct Input {
    cluster: Cluster,
    jobs: Vec<SimJob>,
    /// Jobs left out for lack of data (full mode).
    skipped: u64,
    read: Duration,
    prepare: Duration,
}

fn load(w: Workload) -> Input {
    match w {
        Workload::Kth(mode) => {
            let path = shared_dir().join(KTH_TRACE);
            let t = Instant::now();
            let workload = swf::read(&path).unwrap_or_else(|e| {
                panic!(
                    "cannot read {}: {e} (the workload archive of the reference folder \
                         `shared` next to the repository root)",
                    path.display()
                )
            });
            let read = t.elapsed();
            let machine = MachineSpec {
                nodes: (mode == Mode::Full).then_some(KTH_NODES),
                ..Default::default()
            };
            let t = Instant::now();
            let (cluster, jobs, skipped) = setup::prepare(&workload, mode, &machine, &path)
                .unwrap_or_else(|e| panic!("cannot prepare {}: {e}", path.display()));
            let prepare = t.elapsed();
            Input {
                cluster,
                jobs,
                skipped: skipped.no_data,
                read,
                prepare,
            }
        }
        Workload::Synthetic { jobs, nodes, load } => {
            let t = Instant::now();
            let (cluster, jobs) = synth::generate(&SynthParams {
                jobs,
                nodes,
                cpus_per_node: SYNTH_CPUS,
                load,
                seed: 1,
            });
            Input {
                cluster,
                jobs,
                skipped: 0,
                read: Duration::ZERO,
                prepare: t.elapsed(),
            }
        }
    }
}

/// What a child measures and reports to its parent.
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    jobs: u64,
    skipped: u64,
    events: u64,
    rejected: u64,
    backfilled: u64,
    runs: usize,
    median: Duration,
    read: Duration,
    prepare: Duration,
    peak_rss_kib: u64,
}

impl Outcome {
    fn to_line(&self) -> String {
        format!(
            "{RESULT_TAG} jobs={} skipped={} events={} rejected={} backfilled={} runs={} \
             median_ns={} read_ns={} prepare_ns={} peak_rss_kib={}",
            self.jobs,
            self.skipped,
            self.events,
            self.rejected,
            self.backfilled,
            self.runs,
            self.median.as_nanos(),
            self.read.as_nanos(),
            self.prepare.as_nanos(),
            self.peak_rss_kib
        )
    }

    fn parse(line: &str) -> Option<Outcome> {
        let rest = line.strip_prefix(RESULT_TAG)?;
        let field = |key: &str| -> Option<u64> {
            rest.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))?
                .parse()
                .ok()
        };
        let nanos = |key: &str| field(key).map(Duration::from_nanos);
        Some(Outcome {
            jobs: field("jobs")?,
            skipped: field("skipped")?,
            events: field("events")?,
            rejected: field("rejected")?,
            backfilled: field("backfilled")?,
            runs: field("runs")? as usize,
            median: nanos("median_ns")?,
            read: nanos("read_ns")?,
            prepare: nanos("prepare_ns")?,
            peak_rss_kib: field("peak_rss_kib")?,
        })
    }
}

/// Peak resident set of this process (VmHWM), KiB; 0 where /proc is not there.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Loads a scenario's input and replays it `runs` times (in this process).
fn measure(s: &Scenario) -> Outcome {
    let policy = s.policy.policy();
    let input = load(s.workload);
    let jobs = input.jobs.len() as u64;
    let last_submit = input.jobs.iter().map(|j| j.spec.submit).max().unwrap_or(0);
    let mut times = Vec::with_capacity(s.runs);
    let mut seen: Option<(u64, u64, u64)> = None;
    let mut pending = Some((input.cluster, input.jobs));
    for run in 0..s.runs {
        // The last run takes the input itself; the others a copy, made before the clock starts.
        let (cluster, jobs) = if run + 1 == s.runs {
            pending.take().expect("input kept for the last run")
        } else {
            let (c, j) = pending.as_ref().expect("input kept for the last run");
            (c.clone(), j.clone())
        };
        let t = Instant::now();
        let result = replay::run(
            cluster,
            policy.clone(),
            jobs,
            ReplayOptions::default(),
            &mut |_, _| {},
        );
        let m = metrics::compute(&result, last_submit);
        times.push(t.elapsed());
        let counts = (result.events, m.jobs_rejected, m.jobs_backfilled);
        if let Some(first) = seen {
            assert_eq!(first, counts, "{}: runs disagree", s.name());
        }
        seen = Some(counts);
        black_box(m);
    }
    times.sort();
    let (events, rejected, backfilled) = seen.expect("at least one run");
    Outcome {
        jobs,
        skipped: input.skipped,
        events,
        rejected,
        backfilled,
        runs: s.runs,
        median: times[times.len() / 2],
        read: input.read,
        prepare: input.prepare,
        peak_rss_kib: peak_rss_kib(),
    }
}

/// Runs one scenario in a child process (this binary, `--scenario NAME --runs N`).
fn measure_in_child(s: &Scenario) -> Outcome {
    let exe = std::env::current_exe().expect("the path of this benchmark binary");
    let out = Command::new(&exe)
        .args(["--scenario", &s.name(), "--runs", &s.runs.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        panic!(
            "scenario {} failed ({}):\n{stdout}{}",
            s.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
        .lines()
        .find_map(Outcome::parse)
        .unwrap_or_else(|| panic!("scenario {} printed no result line:\n{stdout}", s.name()))
}

/// Child side: measures the named scenario `runs` times and prints its result line.
fn child(name: &str, runs: usize) {
    let all = scenarios(false).into_iter().chain(smoke_scenarios());
    let mut s = all
        .into_iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("no scenario named {name}"));
    s.runs = runs.max(1);
    println!("{}", measure(&s).to_line());
}

/// Shape of a queued job for the memory table.
#[derive(Clone, Copy)]
enum Shape {
    OneNode,
    Exclusive16,
}

impl Shape {
    fn label(self) -> &'static str {
        match self {
            Shape::OneNode => "1 CPU on one node",
            Shape::Exclusive16 => "16 nodes, --exclusive",
        }
    }

    fn request(self) -> JobRequest {
        match self {
            Shape::OneNode => JobRequest::procs(1).on_one_node(),
            Shape::Exclusive16 => {
                let mut r = JobRequest::procs(16);
                r.min_nodes = 16;
                r.max_nodes = 16;
                r.exclusive = true;
                r
            }
        }
    }
}

struct QueueMemory {
    shape: Shape,
    queued: u64,
    after_submit: usize,
    after_pass: usize,
    pass: Duration,
}

fn spec(id: u64, request: JobRequest, time_limit: i64, at: i64) -> JobSpec {
    JobSpec {
        id: JobId(id),
        user: (id % 500) as u32,
        partition: PartitionId(0),
        submit: at,
        begin: at,
        request,
        time_limit,
        priority: u32::MAX.saturating_sub(id as u32),
        acct: Default::default(),
    }
}

/// Fills every node of a `nodes`-node cluster with a one-hour exclusive job, then
/// queues `queued` jobs of `shape` (none can start) and runs one pass; counts the bytes
/// allocated by the queueing and by the pass.
fn queue_memory(shape: Shape, nodes: u32, queued: u64) -> QueueMemory {
    let cluster = Cluster::homogeneous("batch", nodes, SYNTH_CPUS);
    let mut s = Scheduler::new(cluster, Policy::Backfill(BackfillParams::default()));
    let mut blocker = JobRequest::procs(1).on_one_node();
    blocker.exclusive = true;
    for i in 0..nodes as u64 {
        s.submit(spec(i + 1, blocker.clone(), 3600, 0), 0)
            .expect("blocker accepted");
    }
    let started = s.schedule(0).len();
    assert_eq!(started, nodes as usize, "every node busy");
    assert_eq!(s.pending_count(), 0);
    let base = nodes as u64 + 1;
    let before = allocated();
    for i in 0..queued {
        s.submit(spec(base + i, shape.request(), 7200, 1), 1)
            .expect("queued job accepted");
    }
    let after_submit = allocated();
    let t = Instant::now();
    let decisions = s.schedule(1);
    let pass = t.elapsed();
    assert!(decisions.is_empty(), "no queued job can start");
    drop(decisions);
    let after_pass = allocated();
    assert_eq!(s.pending_count() as u64, queued);
    black_box(&s);
    QueueMemory {
        shape,
        queued,
        after_submit: after_submit.saturating_sub(before),
        after_pass: after_pass.saturating_sub(before),
        pass,
    }
}

/// A Markdown table with padded columns.
struct Table {
    header: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&'static str, bool)]) -> Table {
        Table {
            header: columns.iter().map(|c| c.0).collect(),
            right: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }

    fn print(&self) {
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r[i].chars().count())
                .chain([self.header[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        };
        let widths: Vec<usize> = (0..self.header.len()).map(width).collect();
        let line = |cells: Vec<String>| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .zip(&self.right)
                .map(|((c, &w), &right)| {
                    if right {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            println!("| {} |", padded.join(" | "));
        };
        line(self.header.iter().map(|h| h.to_string()).collect());
        let rule: Vec<String> = widths
            .iter()
            .zip(&self.right)
            .map(|(&w, &right)| {
                if right {
                    format!("{}:", "-".repeat(w - 1))
                } else {
                    "-".repeat(w)
                }
            })
            .collect();
        println!("| {} |", rule.join(" | "));
        for r in &self.rows {
            line(r.clone());
        }
    }
}

/// 1234567 → "1,234,567".
fn group(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    groups.join(",")
}

fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.1}", bytes / (1024.0 * 1024.0))
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| matches!(k.trim(), "model name" | "Model" | "cpu model"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn print_machine() {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get().to_string())
        .unwrap_or_else(|_| "unknown".into());
    println!(
        "Machine: {} ({cpus} CPUs available), {} {}; one thread per replay.",
        cpu_model(),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    println!();
}

fn print_replays(results: &[(Scenario, Outcome)]) {
    let mut t = Table::new(&[
        ("workload", false),
        ("policy", false),
        ("mode", false),
        ("jobs", true),
        ("events", true),
        ("wall time (median)", true),
        ("runs", true),
        ("events/s", true),
        ("peak RSS (MiB)", true),
        ("started by backfill", true),
    ]);
    for (s, o) in results {
        let rate = o.events as f64 / o.median.as_secs_f64().max(1e-9);
        t.row(vec![
            s.workload.label(),
            s.policy.name().into(),
            s.workload.mode(),
            group(o.jobs),
            group(o.events),
            duration(o.median),
            o.runs.to_string(),
            group(rate.round() as u64),
            mib(o.peak_rss_kib as f64 * 1024.0),
            if s.policy.backfills() {
                group(o.backfilled)
            } else {
                "—".into()
            },
        ]);
    }
    t.print();
    println!();
    println!(
        "Wall time: `replay::run` + `metrics::compute`, median of the runs. Events: \
         submissions + terminations + wake-up passes (`Replay::events`). Peak RSS: VmHWM \
         of a process that ran only that scenario (input loading included). Backfill: \
         Slurm's defaults (bf_interval=30, bf_window=1440, bf_resolution=60, \
         bf_max_job_test=500)."
    );
    let rejected: Vec<String> = results
        .iter()
        .filter(|(_, o)| o.rejected > 0)
        .map(|(s, o)| format!("{}: {} refused", s.name(), group(o.rejected)))
        .collect();
    if !rejected.is_empty() {
        println!("Jobs refused at submission: {}.", rejected.join(", "));
    }
    println!();
}

fn print_inputs(results: &[(Scenario, Outcome)]) {
    let mut t = Table::new(&[
        ("input", false),
        ("mode", false),
        ("jobs", true),
        ("skipped (no data)", true),
        ("read", true),
        ("prepare / generate", true),
    ]);
    let mut seen: Vec<String> = Vec::new();
    for (s, _) in results {
        let key = s.workload.key();
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        // Median over the children that loaded this input.
        let same: Vec<&Outcome> = results
            .iter()
            .filter(|(x, _)| x.workload.key() == key)
            .map(|(_, o)| o)
            .collect();
        let median = |f: fn(&Outcome) -> Duration| {
            let mut v: Vec<Duration> = same.iter().map(|o| f(o)).collect();
            v.sort();
            v[v.len() / 2]
        };
        let read = median(|o| o.read);
        let (input, read) = match s.workload {
            Workload::Kth(_) => (format!("KTH-SP2 ({KTH_TRACE})"), duration(read)),
            Workload::Synthetic { .. } => ("synth::generate".into(), "—".into()),
        };
        t.row(vec![
            input,
            s.workload.mode(),
            group(same[0].jobs),
            group(same[0].skipped),
            read,
            duration(median(|o| o.prepare)),
        ]);
    }
    t.print();
    println!();
}

fn print_queue_memory(rows: &[QueueMemory], nodes: u32) {
    let mut t = Table::new(&[
        ("queued job", false),
        ("jobs queued", true),
        ("bytes/job after submit", true),
        ("bytes/job after one pass", true),
        ("total after pass (MiB)", true),
        ("pass time", true),
    ]);
    for r in rows {
        let per = |b: usize| format!("{:.0}", b as f64 / r.queued.max(1) as f64);
        t.row(vec![
            r.shape.label().into(),
            group(r.queued),
            per(r.after_submit),
            per(r.after_pass),
            mib(r.after_pass as f64),
            duration(r.pass),
        ]);
    }
    t.print();
    println!();
    println!(
        "`Scheduler` with policy backfill on {} nodes × {SYNTH_CPUS} CPUs, every node held by \
         a one-hour exclusive job; the jobs are submitted (none can start), then one \
         `schedule` runs the main pass and a backfill pass (which plans the first \
         bf_max_job_test = 500). Bytes as requested from the allocator (its own overhead \
         not counted), after minus before, divided by the jobs queued. Goal: under 1 KiB.",
        group(nodes as u64)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        Some(
            args.get(i + 1)
                .unwrap_or_else(|| panic!("{flag} needs a value")),
        )
    };
    if let Some(name) = value("--scenario") {
        let runs = value("--runs").map_or(1, |n| n.parse().expect("--runs N"));
        child(name, runs);
        return;
    }
    // `cargo bench` passes --bench; `cargo test --benches` does not: a smoke test then.
    let bench = args.iter().any(|a| a == "--bench");
    let quick = std::env::var("SLUICE_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let (list, queue_nodes, queued) = if bench {
        (scenarios(quick), SYNTH_NODES, 100_000)
    } else {
        eprintln!("replay bench: smoke test on tiny inputs (run `cargo bench` to measure)");
        (smoke_scenarios(), 100, 1_000)
    };
    let mut results = Vec::new();
    for s in list {
        eprintln!("replay bench: {} ({} run(s))", s.name(), s.runs);
        let o = measure_in_child(&s);
        results.push((s, o));
    }
    eprintln!("replay bench: memory per queued job");
    let memory: Vec<QueueMemory> = [Shape::OneNode, Shape::Exclusive16]
        .into_iter()
        .map(|shape| queue_memory(shape, queue_nodes, queued))
        .collect();
    if !bench {
        for r in &memory {
            assert!(r.after_submit > 0, "queueing jobs allocates");
        }
    }
    print_machine();
    print_replays(&results);
    print_inputs(&results);
    print_queue_memory(&memory, queue_nodes);
}
