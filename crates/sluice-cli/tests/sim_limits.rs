//! `sluice sim` on input that is valid in form but not in substance: absurd numbers,
//! options that do not go together, jobs a partition can never start, output that
//! cannot be written. Each must give one clear error (or an honest report) and leave
//! nothing half-written.

use std::path::PathBuf;
use std::process::Stdio;

use assert_cmd::Command;

fn temp(test: &str, name: &str, contents: Option<&str>) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "sluice-sim-limits-{}-{test}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    if let Some(c) = contents {
        std::fs::write(&p, c).unwrap();
    }
    p
}

const HEADER: &str = "; MaxProcs: 8\n; MaxNodes: 8\n";

fn job(id: u32, submit: i64, run: &str, procs: &str, req_time: &str) -> String {
    format!("{id} {submit} -1 {run} {procs} -1 -1 {procs} {req_time} -1 1 1 1 -1 1 -1 -1 -1\n")
}

fn sluice() -> Command {
    Command::cargo_bin("sluice").unwrap()
}

/// Runs and returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = sluice().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_absurd_run_time_is_refused_with_its_line() {
    let trace = HEADER.to_string()
        + &job(1, 0, "10", "1", "100")
        + &job(2, 5, "9223372036854775807", "1", "9223372036854775807");
    let p = temp("absurd", "t.swf", Some(&trace));
    let (code, out, err) = run(&["sim", "--trace", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "sluice sim: error: {}:4: field 4 (run time) is out of range: '9223372036854775807'\n",
            p.display()
        )
    );
}

#[test]
fn negative_counts_other_than_unknown_are_refused() {
    let trace = HEADER.to_string() + &job(1, 0, "10", "-5", "100");
    let p = temp("negative", "t.swf", Some(&trace));
    let (code, out, err) = run(&["sim", "--trace", p.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        format!(
            "sluice sim: error: {}:3: field 5 (allocated processors) is negative (only -1, unknown, may be): '-5'\n",
            p.display()
        )
    );
    let trace = HEADER.to_string() + &job(1, 0, "10", "2.5", "100");
    let p = temp("decimal", "t.swf", Some(&trace));
    let (code, _, err) = run(&["sim", "--trace", p.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(":3: field 5 (allocated processors) is not a whole number: '2.5'"),
        "{err}"
    );
}

#[test]
fn jobs_a_partition_can_never_start_are_reported_not_lost() {
    // Two jobs; the partition's MaxTime is one hour and the second asks for two.
    let conf = "ClusterName=t\nNodeName=n[1-2] CPUs=4 RealMemory=1000\nPartitionName=p Nodes=n[1-2] Default=YES MaxTime=1:00:00\n";
    let c = temp("limits", "slurm.conf", Some(conf));
    let trace =
        HEADER.to_string() + &job(1, 0, "100", "2", "3600") + &job(2, 10, "100", "2", "7200");
    let t = temp("limits", "t.swf", Some(&trace));
    let (code, out, err) = run(&[
        "sim",
        "--trace",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs_finished"], 1);
    assert_eq!(v["jobs_never_started"], 1);
    assert_eq!(v["never_started_by_reason"]["PartitionTimeLimit"], 1);
    let (_, table, _) = run(&[
        "sim",
        "--trace",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
    ]);
    assert!(
        table.contains("1 jobs never started: PartitionTimeLimit"),
        "{table}"
    );

    // Every node down: nothing can start, and the report says why.
    let down = conf.replace("RealMemory=1000", "RealMemory=1000 State=DOWN");
    let c = temp("down", "slurm.conf", Some(&down));
    let (_, out, _) = run(&[
        "sim",
        "--trace",
        t.to_str().unwrap(),
        "--config",
        c.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs_finished"], 0);
    let reason = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher \
                  priority partitions";
    assert_eq!(v["never_started_by_reason"][reason], 2);
}

#[test]
fn options_that_do_not_apply_are_usage_errors() {
    let ship = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/traces/SDSC-SP2-1998-first5000.swf.gz"
    );
    for args in [
        vec!["sim", "--synthetic", "jobs=10", "--procs", "8"],
        vec!["sim", "--synthetic", "jobs=10", "--trace", ship],
        vec!["sim", "--trace", ship, "--procs", "0"],
        vec!["sim", "--trace", ship, "--reference", "--nodes", "4"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
    }
    let (code, _, err) = run(&["sim", "--trace", ship, "--cluster-spec", "/nonexistent"]);
    assert_eq!(code, 1);
    assert!(
        err.ends_with(": --cluster-spec goes with a Tiresias job list, not this trace\n"),
        "{err}"
    );
}

#[test]
fn synthetic_runs_take_the_backfill_parameters() {
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "sim",
            "--synthetic",
            "jobs=400,nodes=8,cpus=4,load=1.2",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let default = json(&[]);
    let slow = json(&["--scheduler-parameters", "bf_interval=3600,bf_window=10"]);
    assert_eq!(
        default["trace"],
        "synthetic jobs=400,nodes=8,cpus=4,load=1.2"
    );
    assert_eq!(default["policy"], "backfill");
    assert_ne!(
        default["avg_wait_min"], slow["avg_wait_min"],
        "the parameters must change the schedule"
    );
}

#[test]
fn a_bad_output_path_fails_before_the_replay_and_leaves_nothing() {
    let ship = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/traces/SDSC-SP2-1998-first5000.swf.gz"
    );
    let ok = temp("outputs", "jobs.tsv", None);
    let (code, out, err) = run(&[
        "sim",
        "--trace",
        ship,
        "--jobs-out",
        ok.to_str().unwrap(),
        "--plot",
        "/nonexistent-dir/x.svg",
    ]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "sluice sim: error: /nonexistent-dir/x.svg: No such file or directory\n"
    );
    assert!(!ok.exists(), "no partial result may be left behind");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let ship = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/traces/SDSC-SP2-1998-first5000.swf.gz"
    );
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sluice"))
        .args(["sim", "--trace", ship])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the report is written, like `| head -0`: the write
    // fails with EPIPE, which must end the run quietly, not in a panic.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
