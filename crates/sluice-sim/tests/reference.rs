//! Reference mode reproduces the Hebrew University simulator's published results: every
//! job's row, and the averages of the table in `SIMULATOR-REFERENCE.md`.
//!
//! The replay goes through the library exactly as `sluice sim --reference` does
//! (`trace::swf::read`, `setup::prepare` with `Mode::Reference`, `replay::run`,
//! `metrics::compute` with the last submission time).

use std::io::Read;
use std::path::{Path, PathBuf};

use sluice_core::Policy;
use sluice_sim::metrics::{self, Metrics};
use sluice_sim::output::JOBS_HEADER;
use sluice_sim::replay::{self, ReplayOptions};
use sluice_sim::setup::{self, MachineSpec, Mode};
use sluice_sim::trace;

/// One per-job row: id submit start finish run est procs.
type Row = [i64; 7];

/// The shared reference material, next to the repository root. Missing material is a
/// failure, never a silent pass.
fn shared() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        dir.join("SIMULATOR-REFERENCE.md").is_file()
            && dir.join("traces/swf").is_dir()
            && dir.join("traces/reference").is_dir(),
        "reference data missing: expected SIMULATOR-REFERENCE.md, traces/swf/ and \
         traces/reference/ under {} (the reference folder `shared` next to the \
         repository root, which holds the workload archive and its reference results); \
         put that folder there to run this test",
        dir.display()
    );
    dir
}

fn read_gz(path: &Path) -> String {
    let file =
        std::fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("cannot decompress {}: {e}", path.display()));
    text
}

/// Parses a reference per-job file: the header, then rows sorted by id.
fn reference_rows(path: &Path) -> Vec<Row> {
    let text = read_gz(path);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(JOBS_HEADER),
        "{}: unexpected header",
        path.display()
    );
    lines
        .enumerate()
        .map(|(i, line)| {
            let v: Vec<i64> = line
                .split('\t')
                .map(|f| {
                    f.parse()
                        .unwrap_or_else(|_| panic!("{}:{}: bad field '{f}'", path.display(), i + 2))
                })
                .collect();
            v.try_into().unwrap_or_else(|v: Vec<i64>| {
                panic!(
                    "{}:{}: expected 7 fields, found {}",
                    path.display(),
                    i + 2,
                    v.len()
                )
            })
        })
        .collect()
}

/// Replays `trace` in reference mode under `policy`, as `sluice sim --reference` does.
/// Returns the rows sorted by id and the metrics.
fn replay_reference(trace_path: &Path, policy: Policy, procs: u32) -> (Vec<Row>, Metrics) {
    let workload = trace::swf::read(trace_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", trace_path.display()));
    let (cluster, jobs, skipped) = setup::prepare(
        &workload,
        Mode::Reference,
        &MachineSpec::default(),
        trace_path,
    )
    .unwrap_or_else(|e| panic!("preparing {}: {e}", trace_path.display()));
    assert_eq!(skipped.no_data, 0, "reference mode skips no job");
    assert_eq!(
        cluster.total_cpus(),
        u64::from(procs),
        "{}: machine size from the MaxProcs header",
        trace_path.display()
    );
    assert_eq!(
        jobs.len(),
        workload.jobs.len(),
        "reference mode replays every job"
    );
    let last_submit = jobs.iter().map(|j| j.spec.submit).max().unwrap_or(0);
    let result = replay::run(
        cluster,
        policy,
        jobs,
        ReplayOptions::default(),
        &mut |_, _| {},
    );
    assert!(
        result.rejected.is_empty(),
        "jobs refused in reference mode: {:?}",
        &result.rejected[..result.rejected.len().min(10)]
    );
    let m = metrics::compute(&result, last_submit);
    let mut rows: Vec<Row> = result
        .records
        .iter()
        .map(|r| {
            [
                r.id as i64,
                r.submit,
                r.start,
                r.finish,
                r.run,
                r.est,
                r.procs as i64,
            ]
        })
        .collect();
    rows.sort_by_key(|r| r[0]);
    (rows, m)
}

/// Asserts that the rows are those of the reference, naming the first job that differs.
fn assert_rows_match(expected: &[Row], actual: &[Row], what: &str) {
    const COLUMNS: [&str; 7] = ["id", "submit", "start", "finish", "run", "est", "procs"];
    let show = |r: &Row| {
        COLUMNS
            .iter()
            .zip(r)
            .map(|(c, v)| format!("{c}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Some(i) = (0..expected.len().min(actual.len())).find(|&i| expected[i] != actual[i]) {
        let (e, a) = (&expected[i], &actual[i]);
        let job = if e[0] == a[0] {
            format!("job {}", e[0])
        } else {
            format!("job {} (expected) / job {} (replayed)", e[0], a[0])
        };
        panic!(
            "{what}: first differing {job} (row {} of {}):\n  expected {}\n  replayed {}",
            i + 1,
            expected.len(),
            show(e),
            show(a)
        );
    }
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: {} rows replayed, {} in the reference (first {} agree)",
        actual.len(),
        expected.len(),
        expected.len().min(actual.len())
    );
}

/// Asserts that `SIMULATOR-REFERENCE.md` has the table row these constants come from, so
/// the test and the document cannot drift apart.
fn assert_documented(trace_name: &str, procs: u32, policy: &str, wait: &str, bsld: &str, n: u64) {
    let doc_path = shared().join("SIMULATOR-REFERENCE.md");
    let doc = std::fs::read_to_string(&doc_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", doc_path.display()));
    let want = [
        trace_name.to_string(),
        procs.to_string(),
        policy.to_string(),
        wait.to_string(),
        bsld.to_string(),
        n.to_string(),
    ];
    let found = doc.lines().any(|l| {
        let cells: Vec<&str> = l
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        cells == want
    });
    assert!(
        found,
        "{} has no table row | {} |",
        doc_path.display(),
        want.join(" | ")
    );
}

struct Expected {
    swf: &'static str,
    trace_name: &'static str,
    procs: u32,
    reference: &'static str,
    policy_name: &'static str,
    avg_wait_min: &'static str,
    avg_bounded_slowdown: &'static str,
    jobs_counted: u64,
}

fn check(policy: Policy, e: Expected) {
    let root = shared();
    assert_documented(
        e.trace_name,
        e.procs,
        e.policy_name,
        e.avg_wait_min,
        e.avg_bounded_slowdown,
        e.jobs_counted,
    );
    let trace_path = root.join("traces/swf").join(e.swf);
    let reference = root.join("traces/reference").join(e.reference);
    let expected = reference_rows(&reference);
    assert!(!expected.is_empty(), "{}: no rows", reference.display());
    let (rows, m) = replay_reference(&trace_path, policy, e.procs);
    let what = format!("{} under {}", e.trace_name, e.policy_name);
    assert_rows_match(&expected, &rows, &what);
    assert_eq!(
        m.jobs_finished,
        expected.len() as u64,
        "{what}: jobs finished"
    );
    assert_eq!(m.jobs_rejected, 0, "{what}: jobs rejected");
    assert_eq!(m.jobs_counted, e.jobs_counted, "{what}: jobs counted");
    assert_eq!(
        format!("{:.4}", m.avg_wait_min),
        e.avg_wait_min,
        "{what}: average wait (min), {}",
        m.avg_wait_min
    );
    assert_eq!(
        format!("{:.4}", m.avg_bounded_slowdown),
        e.avg_bounded_slowdown,
        "{what}: average bounded slowdown, {}",
        m.avg_bounded_slowdown
    );
}

const SDSC: &str = "SDSC-SP2-1998-first5000.swf.gz";
const KTH: &str = "KTH-SP2-1996-2.swf.gz";

#[test]
fn sdsc_sp2_first5000_fcfs_matches_reference() {
    check(
        Policy::Fcfs,
        Expected {
            swf: SDSC,
            trace_name: "SDSC-SP2-1998-first5000",
            procs: 128,
            reference: "sdsc5k_Fcfs.tsv.gz",
            policy_name: "FCFS",
            avg_wait_min: "261.1139",
            avg_bounded_slowdown: "140.0598",
            jobs_counted: 4558,
        },
    );
}

#[test]
fn sdsc_sp2_first5000_easy_matches_reference() {
    check(
        Policy::Easy,
        Expected {
            swf: SDSC,
            trace_name: "SDSC-SP2-1998-first5000",
            procs: 128,
            reference: "sdsc5k_Easy.tsv.gz",
            policy_name: "EASY",
            avg_wait_min: "60.7247",
            avg_bounded_slowdown: "17.7201",
            jobs_counted: 4559,
        },
    );
}

#[test]
fn sdsc_sp2_first5000_conservative_matches_reference() {
    check(
        Policy::Conservative,
        Expected {
            swf: SDSC,
            trace_name: "SDSC-SP2-1998-first5000",
            procs: 128,
            reference: "sdsc5k_Conservative.tsv.gz",
            policy_name: "Conservative",
            avg_wait_min: "64.1361",
            avg_bounded_slowdown: "17.2852",
            jobs_counted: 4559,
        },
    );
}

#[test]
fn kth_sp2_easy_matches_reference() {
    check(
        Policy::Easy,
        Expected {
            swf: KTH,
            trace_name: "KTH-SP2-1996-2",
            procs: 100,
            reference: "kth_Easy.tsv.gz",
            policy_name: "EASY",
            avg_wait_min: "115.4961",
            avg_bounded_slowdown: "93.1436",
            jobs_counted: 28202,
        },
    );
}

#[test]
fn kth_sp2_conservative_matches_reference() {
    check(
        Policy::Conservative,
        Expected {
            swf: KTH,
            trace_name: "KTH-SP2-1996-2",
            procs: 100,
            reference: "kth_Conservative.tsv.gz",
            policy_name: "Conservative",
            avg_wait_min: "122.2578",
            avg_bounded_slowdown: "88.6200",
            jobs_counted: 28202,
        },
    );
}
