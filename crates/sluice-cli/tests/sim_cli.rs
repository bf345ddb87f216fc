//! `sluice sim` end to end: the binary, its files, its JSON, and its errors.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// The shared reference material, next to the repository root. Missing material is a
/// failure, never a silent pass.
fn shared() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        dir.join("traces/swf").is_dir()
            && dir.join("traces/reference").is_dir()
            && dir.join("traces/gpu").is_dir(),
        "reference data missing: expected traces/swf/, traces/reference/ and \
         traces/gpu/ under {} (the reference folder `shared` next to the repository \
         root, which holds the workload archive and its reference results); put that \
         folder there to run this test",
        dir.display()
    );
    dir
}

fn swf(name: &str) -> PathBuf {
    shared().join("traces/swf").join(name)
}

fn gpu(name: &str) -> PathBuf {
    shared().join("traces/gpu").join(name)
}

const KTH: &str = "KTH-SP2-1996-2.swf.gz";
const SDSC: &str = "SDSC-SP2-1998-first5000.swf.gz";

/// A file under the temporary directory, unique to this process and test, removed when
/// dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(test: &str, name: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "sluice-sim-cli-{}-{test}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&p);
        TempFile(p)
    }

    fn with(test: &str, name: &str, contents: &str) -> Self {
        let f = Self::new(test, name);
        std::fs::write(&f.0, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", f.0.display()));
        f
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn show(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn sluice() -> Command {
    let mut c = Command::cargo_bin("sluice").expect("the sluice binary is built");
    c.env_remove("RUST_BACKTRACE");
    c
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out = sluice().args(args).output().expect("sluice runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs `sluice` expecting success; returns stdout.
fn run_ok(args: &[&str]) -> String {
    let r = run(args);
    assert_eq!(
        r.code,
        Some(0),
        "sluice {} failed:\n{}",
        args.join(" "),
        r.stderr
    );
    r.stdout
}

fn run_json(args: &[&str]) -> Value {
    let out = run_ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| {
        panic!(
            "sluice {}: stdout is not JSON ({e}):\n{out}",
            args.join(" ")
        )
    })
}

fn json_u64(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("JSON has no integer '{key}': {v}"))
}

fn json_f64(v: &Value, key: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("JSON has no number '{key}': {v}"))
}

/// Runs `sluice` expecting the single-line failure of `sluice sim` (exit 1, nothing on
/// stdout); returns that line.
fn run_error(args: &[&str]) -> String {
    let r = run(args);
    assert_eq!(
        r.code,
        Some(1),
        "sluice {}: exit code (stderr: {})",
        args.join(" "),
        r.stderr
    );
    assert_eq!(r.stdout, "", "sluice {}: stdout", args.join(" "));
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "sluice {}: expected exactly one line on stderr, got:\n{}",
        args.join(" "),
        r.stderr
    );
    let line = lines[0].to_string();
    assert!(
        line.starts_with("sluice sim: error: "),
        "sluice {}: error line: {line}",
        args.join(" ")
    );
    line
}

fn read_gz(path: &Path) -> Vec<u8> {
    let file =
        std::fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("cannot decompress {}: {e}", path.display()));
    bytes
}

/// Per-job rows of a `--jobs-out` file: id → (submit, start, finish, run, est, procs).
fn jobs_rows(text: &str) -> Vec<[i64; 7]> {
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("id\tsubmit\tstart\tfinish\trun\test\tprocs"),
        "per-job header"
    );
    lines
        .map(|l| {
            let v: Vec<i64> = l
                .split('\t')
                .map(|f| {
                    f.parse()
                        .unwrap_or_else(|_| panic!("bad field in row: {l}"))
                })
                .collect();
            v.try_into()
                .unwrap_or_else(|_| panic!("expected 7 fields in row: {l}"))
        })
        .collect()
}

/// Parses a CSV with a header into rows of column → value.
fn csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("CSV header")
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            assert_eq!(f.len(), header.len(), "{}: row {l}", path.display());
            header
                .iter()
                .cloned()
                .zip(f.into_iter().map(str::to_string))
                .collect()
        })
        .collect()
}

fn int(row: &HashMap<String, String>, col: &str) -> i64 {
    row[col]
        .parse()
        .unwrap_or_else(|_| panic!("column {col}: not an integer: {row:?}"))
}

/// The value cell of the human table's row labelled `label`.
fn table_value(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('┆')?;
            (k.trim_matches(|c: char| c == '│' || c.is_whitespace()) == label).then(|| {
                v.trim_matches(|c: char| c == '│' || c.is_whitespace())
                    .to_string()
            })
        })
        .unwrap_or_else(|| panic!("no table row '{label}' in:\n{out}"))
}

/// The most of a resource held at once by jobs `(start, finish, amount)` (a job ending
/// at `t` frees its share for one starting at `t`).
fn peak_usage(jobs: impl Iterator<Item = (i64, i64, i64)>) -> i64 {
    let mut events: Vec<(i64, i64)> = jobs.flat_map(|(s, f, n)| [(s, n), (f, -n)]).collect();
    events.sort(); // at equal times the releases (negative) come first
    let (mut now, mut peak) = (0, 0);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    peak
}

// ---------------------------------------------------------------------------------------
// Reference mode: files and JSON

#[test]
fn kth_easy_reference_jobs_out_and_json_match_the_reference() {
    let out = TempFile::new("kth_easy_reference", "jobs.tsv");
    let trace = swf(KTH);
    let v = run_json(&[
        "sim",
        "--reference",
        "--policy",
        "easy",
        "--trace",
        trace.to_str().unwrap(),
        "--jobs-out",
        &out.show(),
        "--json",
    ]);

    // The per-job file is byte for byte the reference result.
    let expected = read_gz(&shared().join("traces/reference/kth_Easy.tsv.gz"));
    let actual = std::fs::read(out.path()).expect("--jobs-out wrote its file");
    if actual != expected {
        let (e, a) = (
            String::from_utf8_lossy(&expected),
            String::from_utf8_lossy(&actual),
        );
        let (el, al): (Vec<&str>, Vec<&str>) = (e.lines().collect(), a.lines().collect());
        let i = (0..el.len().min(al.len()))
            .find(|&i| el[i] != al[i])
            .unwrap_or(el.len().min(al.len()));
        panic!(
            "--jobs-out differs from kth_Easy.tsv at line {} ({} bytes vs {} expected):\n  \
             expected {:?}\n  written  {:?}",
            i + 1,
            actual.len(),
            expected.len(),
            el.get(i),
            al.get(i)
        );
    }

    // The JSON carries the reference averages.
    let rows = jobs_rows(&String::from_utf8(expected).unwrap());
    assert_eq!(json_u64(&v, "jobs_finished"), rows.len() as u64);
    assert_eq!(json_u64(&v, "jobs_rejected"), 0);
    assert_eq!(json_u64(&v, "jobs_counted"), 28202);
    assert_eq!(format!("{:.4}", json_f64(&v, "avg_wait_min")), "115.4961");
    assert_eq!(
        format!("{:.4}", json_f64(&v, "avg_bounded_slowdown")),
        "93.1436"
    );
    // Utilisation from the reference rows: busy processor-seconds over P × makespan,
    // P = 100 (the trace's MaxProcs).
    let busy: i64 = rows.iter().map(|r| r[6] * r[4]).sum();
    let first_submit = rows.iter().map(|r| r[1]).min().unwrap();
    let last_finish = rows.iter().map(|r| r[3]).max().unwrap();
    let makespan = last_finish - first_submit;
    assert_eq!(json_u64(&v, "makespan_s") as i64, makespan);
    let util = busy as f64 / (100.0 * makespan as f64);
    let got = json_f64(&v, "utilization");
    assert!(
        (got - util).abs() < 1e-12,
        "utilization {got}, expected {util} from the reference rows"
    );
    assert!(util > 0.5 && util < 1.0, "sanity: {util}");
}

#[test]
fn plot_writes_an_svg() {
    let plot = TempFile::new("plot_writes_an_svg", "plot.svg");
    let trace = swf(SDSC);
    run_ok(&[
        "sim",
        "--reference",
        "--policy",
        "conservative",
        "--trace",
        trace.to_str().unwrap(),
        "--plot",
        &plot.show(),
        "--json",
    ]);
    let svg = std::fs::read_to_string(plot.path()).expect("--plot wrote its file");
    assert!(
        svg.starts_with("<svg"),
        "starts with: {:?}",
        &svg[..svg.len().min(80)]
    );
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "a complete SVG document"
    );
    assert!(
        svg.contains("policy: conservative"),
        "titled with the policy"
    );
    assert!(
        svg.contains("pending jobs") && svg.contains("utilisation"),
        "both panels"
    );
    assert!(svg.contains("<polyline"), "curves are drawn");
}

// ---------------------------------------------------------------------------------------
// Bad input: one clear line naming the file (and line), exit 1, nothing on stdout

const JOB: &str = "0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1";

#[test]
fn a_failed_run_removes_only_the_outputs_it_created() {
    // The second output's directory does not exist: the run fails before replaying.
    // The per-job file it had just created is removed again; one that existed before
    // (a result being replaced, or a device such as /dev/null) is left in place.
    let t = "failed_run_outputs";
    let trace = TempFile::with(t, "trace.swf", &format!("; MaxProcs: 8\n1 {JOB}\n"));
    let bad = std::env::temp_dir().join("sluice-no-such-dir/plot.svg");
    let fresh = TempFile::new(t, "fresh.tsv");
    let args = |jobs_out: &str| {
        run_error(&[
            "sim",
            "--trace",
            &trace.show(),
            "--jobs-out",
            jobs_out,
            "--plot",
            &bad.display().to_string(),
        ])
    };
    let line = args(&fresh.show());
    assert!(
        line.starts_with(&format!("sluice sim: error: {}: ", bad.display())),
        "{line}"
    );
    assert!(!fresh.path().exists(), "the file it created is gone");
    let kept = TempFile::with(t, "kept.tsv", "an earlier result\n");
    args(&kept.show());
    assert!(kept.path().exists(), "a file that was there is not removed");
}

#[test]
fn malformed_job_line_names_file_and_line() {
    let t = "malformed_job_line";
    let jobs_out = TempFile::new(t, "jobs.tsv");
    // Line 1 is the header; the third job line (line 4) has 17 fields.
    let f = TempFile::with(
        t,
        "trace.swf",
        &format!(
            "; MaxProcs: 8\n1 {JOB}\n2 {JOB}\n3 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1\n4 {JOB}\n"
        ),
    );
    let line = run_error(&["sim", "--trace", &f.show(), "--jobs-out", &jobs_out.show()]);
    assert_eq!(
        line,
        format!(
            "sluice sim: error: {}:4: expected 18 fields, found 17",
            f.show()
        )
    );
    assert!(
        !jobs_out.path().exists(),
        "no per-job file is written for a trace that cannot be read"
    );
    // 19 fields are as wrong as 17.
    let g = TempFile::with(
        t,
        "trace19.swf",
        &format!("; MaxProcs: 8\n1 {JOB}\n2 {JOB} 7\n"),
    );
    let line = run_error(&["sim", "--trace", &g.show()]);
    assert_eq!(
        line,
        format!(
            "sluice sim: error: {}:3: expected 18 fields, found 19",
            g.show()
        )
    );
}

#[test]
fn non_numeric_field_names_file_line_and_field() {
    let t = "non_numeric_field";
    let f = TempFile::with(
        t,
        "trace.swf",
        "; MaxProcs: 8\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n\
         2 5 -1 1x0 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n",
    );
    let line = run_error(&["sim", "--trace", &f.show()]);
    let prefix = format!("sluice sim: error: {}:3: ", f.show());
    assert!(line.starts_with(&prefix), "'{line}' starts with '{prefix}'");
    assert!(
        line.contains("field 4") && line.contains("'1x0'"),
        "names the field and the value: {line}"
    );
}

#[test]
fn missing_file_is_named() {
    let missing = TempFile::new("missing_file", "no-such-trace.swf");
    let line = run_error(&["sim", "--trace", &missing.show()]);
    let prefix = format!("sluice sim: error: {}: ", missing.show());
    assert!(line.starts_with(&prefix), "'{line}' starts with '{prefix}'");
    assert!(line.contains("No such file"), "says why: {line}");
}

#[test]
fn header_without_max_procs_needs_procs() {
    let t = "no_max_procs";
    let f = TempFile::with(
        t,
        "trace.swf",
        "; Computer: nowhere\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n",
    );
    for mode in [&[][..], &["--reference"][..]] {
        let mut args = vec!["sim", "--trace", f.0.to_str().unwrap()];
        args.extend_from_slice(mode);
        let line = run_error(&args);
        let prefix = format!("sluice sim: error: {}: ", f.show());
        assert!(line.starts_with(&prefix), "'{line}' starts with '{prefix}'");
        assert!(
            line.contains("MaxProcs") && line.contains("--procs"),
            "says what is missing and how to give it: {line}"
        );
    }
    // With --procs the same trace replays.
    let v = run_json(&["sim", "--trace", &f.show(), "--procs", "8", "--json"]);
    assert_eq!(json_u64(&v, "jobs_finished"), 1);
}

#[test]
fn empty_trace_is_an_error() {
    let t = "empty_trace";
    let empty = TempFile::with(t, "empty.swf", "");
    let header_only = TempFile::with(t, "header.swf", "; MaxProcs: 8\n;\n");
    for f in [&empty, &header_only] {
        let line = run_error(&["sim", "--trace", &f.show()]);
        assert_eq!(
            line,
            format!("sluice sim: error: {}: no jobs in trace", f.show())
        );
    }
}

#[test]
fn alibaba_pod_list_needs_a_node_list() {
    let pods = gpu("alibaba_openb_pod_list_default.csv");
    let line = run_error(&["sim", "--trace", pods.to_str().unwrap()]);
    assert!(line.contains("--node-list"), "says what to add: {line}");
}

/// The error module promises every error names the file; this one names none.
#[test]
fn alibaba_pod_list_without_node_list_names_the_pod_list() {
    let pods = gpu("alibaba_openb_pod_list_default.csv");
    let line = run_error(&["sim", "--trace", pods.to_str().unwrap()]);
    assert!(
        line.contains(pods.to_str().unwrap()),
        "names the pod list: {line}"
    );
}

#[test]
fn unknown_policy_is_a_usage_error() {
    let trace = swf(SDSC);
    let r = run(&[
        "sim",
        "--trace",
        trace.to_str().unwrap(),
        "--policy",
        "fifo",
    ]);
    assert_eq!(r.code, Some(2), "clap's usage error: {}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(
        r.stderr.lines().next(),
        Some("error: invalid value 'fifo' for '--policy <POLICY>'"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("[possible values: fcfs, easy, conservative, backfill]"),
        "lists the policies: {}",
        r.stderr
    );
}

#[test]
fn bad_synthetic_list_is_an_error() {
    let line = run_error(&["sim", "--synthetic", "jobs=abc"]);
    assert!(
        line.starts_with("sluice sim: error: --synthetic: ") && line.contains("'jobs=abc'"),
        "names the option and the item: {line}"
    );
}

// ---------------------------------------------------------------------------------------
// GPU traces

#[test]
fn tiresias_trace_finishes_every_job_and_counts_gpu_seconds() {
    let jobs = gpu("tiresias_60_job.csv");
    let spec = gpu("tiresias_cluster_spec.csv");
    let rows = csv(&jobs);
    assert_eq!(rows.len(), 60, "the trace has 60 jobs");
    let gpu_seconds: i64 = rows
        .iter()
        .map(|r| int(r, "num_gpu") * int(r, "duration"))
        .sum();
    let v = run_json(&[
        "sim",
        "--trace",
        jobs.to_str().unwrap(),
        "--cluster-spec",
        spec.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(json_u64(&v, "jobs_finished"), 60);
    assert_eq!(json_u64(&v, "jobs_rejected"), 0);
    assert_eq!(json_u64(&v, "jobs_timed_out"), 0);
    assert_eq!(json_f64(&v, "gpu_seconds"), gpu_seconds as f64);
}

#[test]
fn alibaba_trace_accounts_for_every_scheduled_pod() {
    let t = "alibaba_trace";
    let pods_path = gpu("alibaba_openb_pod_list_default.csv");
    let nodes_path = gpu("alibaba_openb_node_list_gpu_node.csv");
    let jobs_out = TempFile::new(t, "jobs.tsv");
    let pods = csv(&pods_path);
    let scheduled: Vec<&HashMap<String, String>> = pods
        .iter()
        .filter(|p| !p["scheduled_time"].is_empty())
        .collect();
    assert!(
        !scheduled.is_empty() && scheduled.len() < pods.len(),
        "the trace has scheduled and unscheduled pods"
    );
    let id_of = |p: &HashMap<String, String>| -> i64 {
        p["name"]
            .rsplit('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("pod name without a number: {}", p["name"]))
    };
    let v = run_json(&[
        "sim",
        "--trace",
        pods_path.to_str().unwrap(),
        "--node-list",
        nodes_path.to_str().unwrap(),
        "--jobs-out",
        &jobs_out.show(),
        "--json",
    ]);
    let finished = json_u64(&v, "jobs_finished");
    let rejected = json_u64(&v, "jobs_rejected");
    let rows = jobs_rows(&std::fs::read_to_string(jobs_out.path()).expect("--jobs-out"));
    assert_eq!(rows.len() as u64, finished, "one row per finished pod");
    let finished_ids: BTreeSet<i64> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(finished_ids.len(), rows.len(), "no pod finishes twice");
    if rejected > 0 {
        eprintln!("{rejected} pods rejected:");
        for p in scheduled
            .iter()
            .filter(|p| !finished_ids.contains(&id_of(p)))
        {
            eprintln!("  {p:?}");
        }
        // Why: the core's reasons, from the same replay through the library.
        let w = sluice_sim::trace::alibaba::read(&pods_path, &nodes_path).expect("reads");
        let policy = sluice_core::Policy::Backfill(Default::default());
        let (cluster, jobs, _) = sluice_sim::setup::prepare(
            &w,
            sluice_sim::setup::Mode::Full,
            &Default::default(),
            &pods_path,
        )
        .expect("prepares");
        let r = sluice_sim::replay::run(cluster, policy, jobs, Default::default(), &mut |_, _| {});
        for (id, why) in &r.rejected {
            eprintln!("  pod {id}: {why}");
        }
    }
    assert_eq!(
        finished + rejected,
        scheduled.len() as u64,
        "every pod with a scheduled_time is either finished or rejected"
    );
    // GPU-seconds of the finished pods, from the CSV: a pod with one GPU and
    // 0 < gpu_milli < 1000 holds that fraction of a GPU, others num_gpu whole GPUs, for
    // deletion_time - scheduled_time seconds (at least 1).
    let gpu_milli = |p: &HashMap<String, String>| {
        let (n, m) = (int(p, "num_gpu"), int(p, "gpu_milli"));
        if n == 1 && m > 0 && m < 1000 {
            m
        } else {
            n * 1000
        }
    };
    let milli_seconds: i128 = scheduled
        .iter()
        .filter(|p| finished_ids.contains(&id_of(p)))
        .map(|p| {
            let run = (int(p, "deletion_time") - int(p, "scheduled_time")).max(1);
            i128::from(gpu_milli(p)) * i128::from(run)
        })
        .sum();
    let want = milli_seconds as f64 / 1000.0;
    let got = json_f64(&v, "gpu_seconds");
    assert!(
        (got - want).abs() <= want * 1e-9,
        "gpu_seconds {got}, expected {want}"
    );

    // Never more GPUs or CPUs held at once than the node list has.
    let by_id: HashMap<i64, &HashMap<String, String>> =
        scheduled.iter().map(|p| (id_of(p), *p)).collect();
    let nodes = csv(&nodes_path);
    let total_gpu_milli: i64 = nodes.iter().map(|n| int(n, "gpu") * 1000).sum();
    let total_cpus: i64 = nodes.iter().map(|n| int(n, "cpu_milli") / 1000).sum();
    let peak_gpu = peak_usage(rows.iter().map(|r| (r[2], r[3], gpu_milli(by_id[&r[0]]))));
    let peak_cpu = peak_usage(
        rows.iter()
            .map(|r| (r[2], r[3], (int(by_id[&r[0]], "cpu_milli") + 999) / 1000)),
    );
    assert!(
        peak_gpu <= total_gpu_milli,
        "{peak_gpu} GPU thousandths held at once; the nodes have {total_gpu_milli}"
    );
    assert!(
        peak_cpu <= total_cpus,
        "{peak_cpu} CPUs held at once; the nodes have {total_cpus}"
    );
}

// ---------------------------------------------------------------------------------------
// A machine from slurm.conf

#[test]
fn config_replays_sdsc_in_full_mode() {
    let t = "config_full_mode";
    let conf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sluice-conf/tests/data/seed-slurm.conf");
    let trace = swf(SDSC);
    let jobs_out = TempFile::new(t, "jobs.tsv");
    // The seed configuration: node[01-04] with 128 CPUs each; the default partition
    // `train` is node[01-03] with MaxTime=48:00:00.
    const ALL_CPUS: i64 = 4 * 128;
    const TRAIN_CPUS: i64 = 3 * 128;
    const TRAIN_MAX_TIME: i64 = 48 * 3600;

    // Jobs the full mode can replay: a run time and processors (allocated, or
    // requested where the allocation is unknown). id -> (submit, run, procs, limit).
    let text = String::from_utf8(read_gz(&trace)).unwrap();
    let mut total = 0u64;
    let mut usable: HashMap<i64, [i64; 4]> = HashMap::new();
    for l in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(';'))
    {
        // Field 6 (average CPU time) is a decimal in this trace; the fields used here
        // are integers.
        let f: Vec<f64> = l
            .split_whitespace()
            .map(|x| x.parse().unwrap_or_else(|_| panic!("bad SWF field '{x}'")))
            .collect();
        assert_eq!(f.len(), 18, "SWF line: {l}");
        total += 1;
        let f: Vec<i64> = f.into_iter().map(|x| x as i64).collect();
        let procs = if f[4] > 0 { f[4] } else { f[7] };
        let limit = if f[8] > 0 { f[8] } else { TRAIN_MAX_TIME };
        if f[3] > 0 && procs > 0 {
            usable.insert(f[0], [f[1], f[3], procs, limit]);
        }
    }
    let skipped = total - usable.len() as u64;
    assert!(skipped > 0, "the trace has jobs to skip");

    let (c, tr, out) = (
        conf.to_str().unwrap(),
        trace.to_str().unwrap(),
        jobs_out.show(),
    );
    let v = run_json(&[
        "sim",
        "--trace",
        tr,
        "--config",
        c,
        "--jobs-out",
        &out,
        "--json",
    ]);
    let finished = json_u64(&v, "jobs_finished");
    let rejected = json_u64(&v, "jobs_rejected");
    assert_eq!(finished + rejected, usable.len() as u64);

    // Each finished job is a usable trace job, submitted when the trace says, limited
    // by its requested time (or the partition's MaxTime), running until it ends or
    // reaches that limit.
    let rows = jobs_rows(&std::fs::read_to_string(jobs_out.path()).expect("--jobs-out"));
    assert_eq!(rows.len() as u64, finished);
    let mut timed_out = 0u64;
    for r in &rows {
        let [id, submit, start, finish, run, est, procs] = *r;
        let Some(&[t_submit, t_run, t_procs, t_limit]) = usable.get(&id) else {
            panic!("job {id} finished but is not a usable trace job");
        };
        assert_eq!(
            (submit, run, est, procs),
            (t_submit, t_run.min(t_limit), t_limit, t_procs),
            "job {id}: (submit, run, est, procs)"
        );
        assert!(start >= submit && finish == start + run, "job {id}: {r:?}");
        timed_out += u64::from(t_run > t_limit);
    }
    assert_eq!(json_u64(&v, "jobs_timed_out"), timed_out);

    // The machine is the configuration's: jobs go to the default partition (never more
    // than its 384 CPUs busy at once), and utilisation is over all 512 CPUs, not the
    // trace's 128.
    let peak = peak_usage(rows.iter().map(|r| (r[2], r[3], r[6])));
    assert!(
        peak <= TRAIN_CPUS && peak > 128,
        "peak busy CPUs {peak}: more than the trace's machine, at most the partition's"
    );
    let busy: i64 = rows.iter().map(|r| r[6] * r[4]).sum();
    let makespan =
        rows.iter().map(|r| r[3]).max().unwrap() - rows.iter().map(|r| r[1]).min().unwrap();
    assert_eq!(json_u64(&v, "makespan_s") as i64, makespan);
    let util = busy as f64 / (ALL_CPUS as f64 * makespan as f64);
    let got = json_f64(&v, "utilization");
    assert!(
        (got - util).abs() < 1e-12,
        "utilization {got}, expected {util} on {ALL_CPUS} CPUs"
    );

    // The human table reports the skipped jobs.
    let table = run_ok(&["sim", "--trace", tr, "--config", c]);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|l| l.contains("policy backfill") && l.contains("full mode")),
        "{table}"
    );
    assert_eq!(
        table_value(&table, "jobs skipped (no run time or processors)"),
        skipped.to_string()
    );
    assert_eq!(table_value(&table, "jobs finished"), finished.to_string());
    assert_eq!(table_value(&table, "jobs rejected"), rejected.to_string());
}

/// Nodes of two kinds declared interleaved (a1 and a2 alike, b1 between them): three
/// 8-CPU jobs on 16 CPUs cannot all run at once.
#[test]
fn interleaved_node_kinds_are_not_double_booked() {
    let t = "interleaved_nodes";
    let conf = TempFile::with(
        t,
        "slurm.conf",
        "ClusterName=t\n\
         NodeName=a1 CPUs=4 RealMemory=1000\n\
         NodeName=b1 CPUs=8 RealMemory=1000\n\
         NodeName=a2 CPUs=4 RealMemory=1000\n\
         PartitionName=p Nodes=a1,b1,a2 Default=YES MaxTime=1:00:00 State=UP\n",
    );
    let job = |id: u32| format!("{id} 0 -1 100 8 -1 -1 8 200 -1 1 1 1 -1 1 -1 -1 -1\n");
    let trace = TempFile::with(
        t,
        "trace.swf",
        &format!("; MaxProcs: 16\n{}{}{}", job(1), job(2), job(3)),
    );
    let jobs_out = TempFile::new(t, "jobs.tsv");
    let v = run_json(&[
        "sim",
        "--trace",
        &trace.show(),
        "--config",
        &conf.show(),
        "--jobs-out",
        &jobs_out.show(),
        "--json",
    ]);
    assert_eq!(json_u64(&v, "jobs_finished"), 3);
    let rows = jobs_rows(&std::fs::read_to_string(jobs_out.path()).expect("--jobs-out"));
    let peak = peak_usage(rows.iter().map(|r| (r[2], r[3], r[6])));
    assert!(
        peak <= 16,
        "{peak} CPUs busy at once on a 16-CPU machine: {rows:?}"
    );
    let starts: Vec<i64> = rows.iter().map(|r| r[2]).collect();
    assert_eq!(
        starts,
        [0, 0, 100],
        "the third job waits for one of the first two"
    );
}

/// Two leaf switches of two 4-GPU nodes each. Job 0 takes one GPU node of s0 at 0;
/// job 1 asks 8 GPUs (two nodes) at 1. Following the topology it takes both nodes of
/// s1; ignoring it, the two lowest free nodes, one under each switch.
#[test]
fn a_two_node_gpu_job_stays_under_one_switch_unless_the_topology_is_ignored() {
    let spec = TempFile::with(
        "switch",
        "spec.csv",
        "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n2,2,4,32,64\n",
    );
    let jobs = TempFile::with(
        "switch",
        "jobs.csv",
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n\
         0,4,0,10,vgg19,100,10\n\
         1,8,1,10,vgg19,100,10\n",
    );
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "sim".to_string(),
            "--trace".to_string(),
            jobs.show(),
            "--cluster-spec".to_string(),
            spec.show(),
            "--json".to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &'static [&'static str]| {
        let a = args(extra);
        run_json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let aware = run(&[]);
    assert_eq!(json_u64(&aware, "multi_node_jobs_in_topology"), 1);
    assert_eq!(json_f64(&aware, "multi_node_one_switch"), 1.0);
    let flat = run(&["--ignore-topology"]);
    assert_eq!(json_u64(&flat, "multi_node_jobs_in_topology"), 1);
    assert_eq!(json_f64(&flat, "multi_node_one_switch"), 0.0);
}

/// `--placement` takes the rule names the core knows, and refuses others (a usage
/// error, exit 2) with the list.
#[test]
fn placement_names_are_checked() {
    let r = run(&[
        "sim",
        "--trace",
        &gpu("tiresias_60_job.csv").display().to_string(),
        "--cluster-spec",
        &gpu("tiresias_cluster_spec.csv").display().to_string(),
        "--placement",
        "random",
    ]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains(
            "unknown placement 'random' (expected one of best-fit, cpu-best-fit, first-fit, least-loaded)"
        ),
        "{}",
        r.stderr
    );
}

/// A small SWF: on one processor, user 1 (group 5) queues three 1000-second jobs at
/// time 0, user 2 (group 6) one at time 10.
const FAIR_SWF: &str = "; MaxProcs: 1\n; MaxNodes: 1\n\
1 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
2 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
3 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
4 10 -1 1000 1 -1 -1 1 1000 -1 1 2 6 -1 -1 -1 -1 -1\n";

/// On two processors, user 1 (group 5) queues three 1000-second jobs at time 0, user
/// 2 (group 6) one at time 10.
const LIMITS_SWF: &str = "; MaxProcs: 2\n; MaxNodes: 1\n\
1 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
2 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
3 0 -1 1000 1 -1 -1 1 1000 -1 1 1 5 -1 -1 -1 -1 -1\n\
4 10 -1 1000 1 -1 -1 1 1000 -1 1 2 6 -1 -1 -1 -1 -1\n";

#[test]
fn limits_hold_an_accounts_jobs_to_one_at_a_time() {
    // Account g5 may run one job at a time (GrpJobs=1): its jobs run one after the
    // other though a processor is free; user 2's job starts at once.
    let trace = TempFile::with("limits", "t.swf", LIMITS_SWF);
    let limits = TempFile::with("limits", "limits", "account g5 grpjobs=1\n");
    let jobs = TempFile::new("limits", "jobs.tsv");
    run_ok(&[
        "sim",
        "--trace",
        &trace.show(),
        "--limits",
        &limits.show(),
        "--jobs-out",
        &jobs.show(),
    ]);
    let rows = jobs_rows(&std::fs::read_to_string(jobs.path()).unwrap());
    let starts: Vec<(i64, i64)> = rows.iter().map(|r| (r[0], r[2])).collect();
    assert_eq!(starts, vec![(1, 0), (2, 1000), (3, 2000), (4, 10)]);
    // A line sacctmgr would refuse names the file and line.
    let bad = TempFile::with(
        "limits",
        "bad",
        "account g5 grpjobs=1\naccount g6 maxjobs=x\n",
    );
    let err = run_error(&["sim", "--trace", &trace.show(), "--limits", &bad.show()]);
    assert!(
        err.contains(&format!(
            "{}:2: 'maxjobs=x': Invalid value for MaxJobs (x)",
            bad.show()
        )),
        "{err}"
    );
}

#[test]
fn fairshare_lets_a_light_user_overtake_and_writes_per_user_figures() {
    let trace = TempFile::with("fair", "t.swf", FAIR_SWF);
    let jobs = TempFile::new("fair", "jobs.tsv");
    let users = TempFile::new("fair", "users.tsv");
    let plot = TempFile::new("fair", "fair.svg");
    let out = run_ok(&[
        "sim",
        "--trace",
        &trace.show(),
        "--fairshare",
        "--jobs-out",
        &jobs.show(),
        "--fairness-out",
        &users.show(),
        "--fairness-plot",
        &plot.show(),
    ]);
    // User 2's job starts at 1000, ahead of user 1's second and third jobs.
    let rows = jobs_rows(&std::fs::read_to_string(jobs.path()).unwrap());
    let starts: Vec<(i64, i64)> = rows.iter().map(|r| (r[0], r[2])).collect();
    assert_eq!(starts, vec![(1, 0), (2, 2000), (3, 3000), (4, 1000)]);
    assert_eq!(
        std::fs::read_to_string(users.path()).unwrap(),
        "user\taccount\tjobs\tcpu_hours\tusage_share\tnorm_shares\tmean_wait_s\tfairshare\n\
         1\tg5\t3\t0.833\t0.750000\t0.500000\t1666.7\t0.500000\n\
         2\tg6\t1\t0.278\t0.250000\t0.500000\t990.0\t1.000000\n"
    );
    assert!(
        out.contains("fair-share: Jain's index of usage/share over accounts 0.8000"),
        "{out}"
    );
    assert!(
        out.lines()
            .next()
            .unwrap()
            .ends_with("— full mode — multifactor priority with fair-share"),
        "{out}"
    );
    let svg = std::fs::read_to_string(plot.path()).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("g5 (share 0.500)"),
        "{svg:.200}"
    );
}

#[test]
fn an_accounts_map_puts_users_in_named_accounts_and_bad_lines_are_refused() {
    let trace = TempFile::with("accounts", "t.swf", FAIR_SWF);
    let map = TempFile::with("accounts", "map", "# uid account\n1 physics\n2 physics\n");
    let v = run_json(&[
        "sim",
        "--trace",
        &trace.show(),
        "--fairshare",
        "--accounts",
        &map.show(),
        "--json",
    ]);
    let accounts = v["fairness"]["accounts"].as_array().expect("accounts");
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["account"], "physics");
    assert_eq!(json_u64(&accounts[0], "jobs"), 4);
    assert_eq!(json_f64(&v["fairness"], "jain_index"), 1.0);
    let bad = TempFile::with("accounts", "bad", "1 physics extra\n");
    let line = run_error(&[
        "sim",
        "--trace",
        &trace.show(),
        "--fairshare",
        "--accounts",
        &bad.show(),
    ]);
    assert!(line.ends_with(":1: expected `UID ACCOUNT`"), "{line}");
}

const COHORTS_SWF: &str = "; MaxProcs: 2\n; MaxNodes: 1\n\
1 0 -1 1000 2 -1 -1 2 1000 -1 1 2 6 -1 -1 -1 -1 -1\n\
2 10 -1 100 1 -1 -1 1 100 -1 1 1 5 -1 -1 -1 -1 -1\n";

#[test]
fn cohorts_let_an_account_borrow_and_its_owner_take_it_back() {
    // Accounts g5 and g6 share a cohort with one processor each. g6's 2-processor job
    // borrows g5's at 0; g5's job at 10 takes it back: job 1 is requeued after g6's
    // 5-second grace, job 2 starts at 15, and job 1 borrows again when it ends, at 115.
    let trace = TempFile::with("cohorts", "t.swf", COHORTS_SWF);
    let cohorts = TempFile::with(
        "cohorts",
        "cohorts.conf",
        "Cohort=c Account=g5 Quota=cpu=1\nCohort=c Account=g6 Quota=cpu=1 GraceTime=5\n",
    );
    let jobs = TempFile::new("cohorts", "jobs.tsv");
    let out = run_ok(&[
        "sim",
        "--trace",
        &trace.show(),
        "--cohorts",
        &cohorts.show(),
        "--jobs-out",
        &jobs.show(),
    ]);
    let rows = jobs_rows(&std::fs::read_to_string(jobs.path()).unwrap());
    let starts: Vec<(i64, i64)> = rows.iter().map(|r| (r[0], r[2])).collect();
    assert_eq!(starts, vec![(1, 115), (2, 15)]);
    assert!(
        out.contains("borrowing: 2 runs started borrowed, 1 reclaim preemptions"),
        "{out}"
    );
    // A bad line names the file and line.
    let bad = TempFile::with("cohorts", "bad.conf", "Cohort=c Account=g5\n");
    let err = run_error(&["sim", "--trace", &trace.show(), "--cohorts", &bad.show()]);
    assert!(
        err.contains(&format!("{}:1: a member line needs Quota=", bad.show())),
        "{err}"
    );
}

#[test]
fn audit_out_writes_the_replays_decisions_as_audit_json_lines() {
    // 8 processors on two 4-CPU nodes (n0, n1), bf_interval 30 s (Slurm's default).
    // Job 1 (4 procs) starts at 0 by the main pass on n0 and runs 100 s. Job 2 (8
    // procs, user 1001) arrives at 5 and waits for n0. Job 3 (4 procs, limit 40 s,
    // would run 50 s) arrives at 10; the backfill pass due at 35 starts it on n1; it is
    // killed at its limit at 75 (TIMEOUT). Job 2 starts at 100 by the main pass.
    let t = "audit_out";
    let trace = TempFile::with(
        t,
        "trace.swf",
        "; MaxProcs: 8\n; MaxNodes: 2\n\
         1 0 -1 100 4 -1 -1 4 100 -1 1 1000 7 -1 1 -1 -1 -1\n\
         2 5 -1 30 8 -1 -1 8 60 -1 1 1001 7 -1 1 -1 -1 -1\n\
         3 10 -1 50 4 -1 -1 4 40 -1 1 1000 7 -1 1 -1 -1 -1\n",
    );
    let out = TempFile::new(t, "audit.jsonl");
    run_ok(&["sim", "--trace", &trace.show(), "--audit-out", &out.show()]);
    let text = std::fs::read_to_string(out.path()).expect("the audit file is written");
    let n0 = r#"{"node":"n0","gpus":[],"files":[]}"#;
    let n1 = r#"{"node":"n1","gpus":[],"files":[]}"#;
    let both = format!("{n0},{n1}");
    let submitted = |seq: u32, time: i64, id: u64, uid: u32| {
        format!(
            r#"{{"seq":{seq},"time":{time},"job_id":{id},"uid":{uid},"kind":"submitted","detail":{{"user":"{uid}","partition":"batch","account":"g7","qos":"normal"}}}}"#
        )
    };
    let started = |seq: u32, time: i64, id: u64, uid: u32, pass: &str, prio: u32, nodes: &str| {
        format!(
            r#"{{"seq":{seq},"time":{time},"job_id":{id},"uid":{uid},"kind":"started","detail":{{"run":0,"pass":"{pass}","priority":{prio},"rank":null,"partition":"batch","reservation":null,"user":"{uid}","nodes":[{nodes}]}}}}"#
        )
    };
    let ended = |seq: u32, time: i64, id: u64, uid: u32, state: &str, nodes: &str| {
        format!(
            r#"{{"seq":{seq},"time":{time},"job_id":{id},"uid":{uid},"kind":"ended","detail":{{"run":0,"state":"{state}","exit_code":0,"signal":0,"released":[{nodes}]}}}}"#
        )
    };
    // Priorities count down in submission order (the backfill policy's FIFO order).
    let expected = [
        submitted(1, 0, 1, 1000),
        started(2, 0, 1, 1000, "main", 4294967295, n0),
        submitted(3, 5, 2, 1001),
        submitted(4, 10, 3, 1000),
        started(5, 35, 3, 1000, "backfill", 4294967293, n1),
        ended(6, 75, 3, 1000, "TIMEOUT", n1),
        ended(7, 100, 1, 1000, "COMPLETED", n0),
        started(8, 100, 2, 1001, "main", 4294967294, &both),
        ended(9, 130, 2, 1001, "COMPLETED", &both),
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    // A path that cannot be written fails before the replay and leaves nothing.
    let bad = format!("{}/no/such/dir/audit.jsonl", std::env::temp_dir().display());
    let line = run_error(&["sim", "--trace", &trace.show(), "--audit-out", &bad]);
    assert!(
        line.starts_with(&format!("sluice sim: error: {bad}: ")),
        "{line}"
    );
}
