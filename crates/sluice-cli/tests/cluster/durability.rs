//! The controller is killed outright (SIGKILL) again and again while users submit:
//! every job it acknowledged must exist exactly once and run to completion, and jobs
//! that were running must keep running, untouched, across the restarts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::harness::Cluster;

const CONF: &str = "ClusterName=durable
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES State=UP
";

#[test]
fn acknowledged_jobs_survive_controller_crashes_exactly_once() {
    let mut c = Cluster::start_with("durable", CONF, &["n1", "n2"]);
    // Two long jobs, running before the storm; they must not notice it.
    let long = format!("600.{}", std::process::id());
    let steady: Vec<u64> = (0..2)
        .map(|_| c.sbatch(&["-J", "steady", "--wrap", &format!("sleep {long}")]))
        .collect();
    c.wait_for("the steady jobs to run", || {
        steady.iter().all(|&j| c.state(j) == "RUNNING")
    });
    let started = |c: &Cluster| -> Vec<String> {
        steady
            .iter()
            .map(|j| {
                c.run(
                    "sacct",
                    &["-n", "-X", "-P", "-o", "Start", "-j", &j.to_string()],
                )
                .stdout
            })
            .collect()
    };
    let before = started(&c);

    // Four users submit small jobs as fast as they can, while the controller is
    // killed and restarted three times. A refused or failed sbatch is fine (the
    // controller was down); an acknowledged one must be kept.
    let acked: Arc<Mutex<Vec<u64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let dir = c.dir.clone();
    let submitters: Vec<_> = (0..4)
        .map(|_| {
            let (acked, stop, dir) = (acked.clone(), stop.clone(), dir.clone());
            std::thread::spawn(move || {
                let bin = dir.join("state/bin/sbatch");
                while !stop.load(Ordering::Relaxed) {
                    let o = std::process::Command::new(&bin)
                        .args(["-J", "storm", "--wrap", "true"])
                        .current_dir(dir.join("work"))
                        .env("SLUICE_STATE_DIR", dir.join("state"))
                        .output()
                        .unwrap();
                    let out = String::from_utf8_lossy(&o.stdout);
                    if let Some(id) = out.trim().strip_prefix("Submitted batch job ") {
                        acked.lock().unwrap().push(id.parse().unwrap());
                    }
                }
            })
        })
        .collect();
    for pause in [700, 300, 1100] {
        std::thread::sleep(Duration::from_millis(pause));
        c.crash_and_restart_controller();
    }
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    for s in submitters {
        s.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() > 20,
        "the storm submitted only {} jobs",
        acked.len()
    );

    // Every acknowledged job runs to completion; no job id appears twice.
    let mut steady_only: Vec<String> = steady.iter().map(u64::to_string).collect();
    steady_only.sort();
    c.wait_for("the storm's jobs to end", || {
        let mut ids: Vec<String> = c
            .run("squeue", &["-h", "-o", "%i"])
            .stdout
            .split_whitespace()
            .map(str::to_string)
            .collect();
        ids.sort();
        ids == steady_only
    });
    let rows = c
        .run("sacct", &["-n", "-X", "-P", "-o", "JobID,State"])
        .stdout;
    let mut seen: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for line in rows.lines() {
        let (id, state) = line.split_once('|').unwrap();
        seen.entry(id.parse().unwrap()).or_default().push(state);
    }
    for j in &acked {
        assert_eq!(
            seen.get(j).map(Vec::as_slice),
            Some(&["COMPLETED"][..]),
            "job {j}"
        );
    }
    // Jobs that were not acknowledged (their sbatch was cut off) may exist, once.
    assert!(
        seen.values().all(|v| v.len() == 1),
        "duplicate jobs in {rows}"
    );
    // The steady jobs kept running from their original start.
    for &j in &steady {
        assert_eq!(c.state(j), "RUNNING", "job {j}");
    }
    assert_eq!(started(&c), before);
    assert_eq!(crate::harness::pids_of(&["sleep", &long]).len(), 2);
}
