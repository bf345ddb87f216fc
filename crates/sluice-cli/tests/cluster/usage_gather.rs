//! Usage gathering end to end (issue 23's "done when", agent side): a job whose batch
//! script and srun step each touch 200 MiB and burn 2 s of CPU shows them, within
//! 10 %, in the controller's records of both steps (what `sacct` reads), and its
//! figures arrive while it runs (what `sstat` reads), sampled every second.

use sluice_proto::types::{AccountingQuery, StepId};
use sluice_proto::usage::StepUsage;

use crate::harness::Cluster;

/// Touches 200 MiB, spins until the process has used 2 s of CPU, then idles a while
/// (for a sample of the running step to be sent).
const WORKLOAD: &str = "import time\n\
b = b'x' * (200 << 20)\n\
while time.process_time() < 2.0:\n    pass\n\
time.sleep(2)\n\
print(len(b))\n";

fn within(value: u64, truth: u64, what: &str) {
    let (v, t) = (value as f64, truth as f64);
    assert!(
        (v - t).abs() <= t * 0.10,
        "{what}: measured {value}, truth {truth} (more than 10 % apart)"
    );
}

fn truthful(u: &StepUsage, step: &str) {
    assert_eq!(u.tasks, 1, "{step}");
    within(u.cpu_ms.tot, 2000, &format!("{step}: CPU time, ms"));
    within(u.rss.max, 200 << 20, &format!("{step}: peak RSS, bytes"));
    assert_eq!(
        (u.rss.max_node.as_str(), u.rss.max_task),
        ("n1", 0),
        "{step}"
    );
}

#[test]
fn a_jobs_steps_report_the_memory_and_cpu_they_really_used() {
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs python3 for the workload");
        return;
    }
    let conf = format!("{}JobAcctGatherFrequency=task=1\n", crate::SMALL);
    let c = Cluster::start("usage-gather", &conf);
    std::fs::write(c.work().join("w.py"), WORKLOAD).unwrap();
    let job = c.sbatch(&[
        "-w",
        "n1",
        "--wrap",
        "python3 w.py && srun -n1 python3 w.py",
    ]);
    let client =
        sluice_proto::Client::new(sluice_proto::paths::controller_socket(&c.dir.join("state")));
    // While it runs: the batch step's figures so far, from the periodic reports.
    c.wait_for("the running batch step's figures", || {
        client.job_usage(job).is_ok_and(|steps| {
            steps.iter().any(|s| {
                s.step == StepId::Batch && s.usage.as_ref().is_some_and(|u| u.cpu_ms.tot > 0)
            })
        })
    });
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let acct: sluice_proto::types::Accounting = client
        .post(
            "/v1/accounting",
            &AccountingQuery {
                jobs: vec![job],
                ..AccountingQuery::default()
            },
        )
        .unwrap();
    let usage = |id: StepId| {
        acct.steps
            .iter()
            .find(|s| s.job_id == job && s.step == id)
            .and_then(|s| s.usage.clone())
            .unwrap_or_else(|| panic!("step {id} has no usage: {:?}", acct.steps))
    };
    // The batch step: the script's own python (srun's client adds a little CPU).
    let batch = usage(StepId::Batch);
    assert_eq!(batch.tasks, 1);
    within(batch.rss.max, 200 << 20, "batch: peak RSS, bytes");
    assert!(
        batch.cpu_ms.tot >= 1800 && batch.cpu_ms.tot <= 2800,
        "batch: CPU {} ms",
        batch.cpu_ms.tot
    );
    truthful(&usage(StepId::Number(0)), "step 0");
}
