//! Usage gathering end to end (issue 23's "done when", agent side): a job whose batch
//! script and srun step each touch 200 MiB and burn 2 s of CPU shows them, within
//! 10 %, in the controller's records of both steps (what `sacct` reads), and its
//! figures arrive while it runs (what `sstat` reads), sampled every second as its
//! `--acctg-freq` asks (the node's default is 30 s); the fake
//! GPU provider's figures reach the records, and an idle GPU in them gets its job
//! flagged by the controller's idle-GPU check.

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
    let c = Cluster::start("usage-gather", crate::SMALL);
    std::fs::write(c.work().join("w.py"), WORKLOAD).unwrap();
    let job = c.sbatch(&[
        "-w",
        "n1",
        "--acctg-freq=task=1",
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

/// Ends the agent the test started, even when the test fails.
struct OwnAgent(std::process::Child);

impl Drop for OwnAgent {
    fn drop(&mut self) {
        // SIGINT: it ends its jobs too (as `sluice up` stopping).
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.0.wait();
    }
}

/// One node `g1` with two GPUs, sampled every second, whose agent (started by the
/// test) has the fake GPU provider: the cluster, its agent, and a writer of the fake
/// figures (utilisation %, memory MiB; 200 W) of both GPUs.
fn fake_gpu_cluster(name: &str, files: &[(&str, &str)]) -> (Cluster, OwnAgent, impl Fn(u32, u32)) {
    let conf = "ClusterName=usagegpu
SlurmctldHost=localhost
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=g1 CPUs=2 RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=g1 Default=YES MaxTime=1:00:00 State=UP
JobAcctGatherFrequency=task=1
";
    let c = Cluster::start_files(name, conf, files);
    let state = c.dir.join("state");
    let fake = c.dir.join("gpus.json");
    let gpus = {
        let fake = fake.clone();
        move |util: u32, mem: u32| {
            std::fs::write(
                &fake,
                format!(
                    r#"{{"0": {{"util": {util}, "mem_mib": {mem}, "power_w": 200}}, "1": {{"util": {util}, "mem_mib": {mem}, "power_w": 200}}}}"#
                ),
            )
            .unwrap()
        }
    };
    gpus(90, 1000);
    // The agent `sluice up` started goes (SIGTERM: its jobs, none, would run on); the
    // test's own, with the fake provider in its environment, takes over the node.
    let state_s = state.display().to_string();
    let words = ["agent", "--node", "g1", "--state-dir", &state_s];
    for pid in crate::harness::pids_of(&words) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    c.wait_for("the first agent to stop", || {
        crate::harness::pids_of(&words).is_empty()
    });
    let agent = OwnAgent(
        std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(words)
            .args(["--acct-gather-frequency", "task=1"])
            .env("SLUICE_FAKE_GPU_USAGE", &fake)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the agent starts"),
    );
    let socket = sluice_proto::paths::agent_socket(&state, "g1");
    c.wait_for("the test's agent to listen", || {
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    (c, agent, gpus)
}

/// The fake GPU provider (`SLUICE_FAKE_GPU_USAGE`, the agent's environment) drives a
/// job's GPUs: the figures it gives, changed while the job runs, are what the batch
/// step's record holds for the GPU the job was given, and its running figures arrive.
#[test]
fn a_jobs_gpus_are_sampled_from_the_fake_provider() {
    let (c, _agent, gpus) = fake_gpu_cluster("usage-gpu", &[]);
    let state = c.dir.join("state");
    let job = c.sbatch(&["--gpus=1", "--wrap", "sleep 4"]);
    let client = sluice_proto::Client::new(sluice_proto::paths::controller_socket(&state));
    // While it runs: its GPU's figures so far.
    let mut seen = None;
    c.wait_for("the running job's GPU figures", || {
        seen = client.job_usage(job).ok().and_then(|steps| {
            steps
                .into_iter()
                .find(|s| s.step == StepId::Batch)
                .and_then(|s| s.usage)
                .filter(|u| !u.gpus.is_empty())
        });
        seen.is_some()
    });
    let running = seen.unwrap();
    assert_eq!(running.gpus.len(), 1, "one GPU: {running:?}");
    assert_eq!(
        (running.gpus[0].node.as_str(), running.gpus[0].util_now),
        ("g1", 90)
    );
    // Busier memory, idler GPU, for the rest of its run.
    gpus(10, 3000);
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
    let u = acct
        .steps
        .iter()
        .find(|s| s.step == StepId::Batch)
        .and_then(|s| s.usage.clone())
        .unwrap_or_else(|| panic!("the batch step has no usage: {:?}", acct.steps));
    assert_eq!(u.gpus.len(), 1, "{u:?}");
    let g = &u.gpus[0];
    assert!(g.samples >= 2, "{g:?}");
    assert_eq!((g.util_max, g.util_now), (90, 10), "{g:?}");
    assert_eq!((g.mem_max, g.mem_now), (3000 << 20, 3000 << 20), "{g:?}");
    assert!(g.util_mean() > 10.0 && g.util_mean() < 90.0, "{g:?}");
    assert_eq!(
        g.power_sum_mw,
        Some(u64::from(g.samples) * 200_000),
        "{g:?}"
    );
}

/// Idle GPUs caught from the agents' real reports: a job whose GPU the fake provider
/// shows at 1 % is flagged (`IdleGPUs=1/1` in `scontrol show job`) once sluice.conf's
/// `IdleGpuTime` has passed, and the flag goes once the GPU works again.
#[test]
fn a_job_whose_gpu_idles_is_flagged_and_unflagged_when_it_works() {
    let (c, _agent, gpus) = fake_gpu_cluster(
        "usage-idle",
        &[("sluice.conf", "IdleGpuThreshold=5\nIdleGpuTime=0:02\n")],
    );
    gpus(1, 500);
    let job = c.sbatch(&["--gpus=1", "--wrap", "sleep 60"]);
    let show = || c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    c.wait_for("the idle GPU to be flagged", || {
        show().contains("IdleGPUs=1/1")
    });
    gpus(80, 500);
    c.wait_for("the flag to go", || {
        let s = show();
        s.contains("JobState=RUNNING") && !s.contains("IdleGPUs=")
    });
    c.run("scancel", &[&job.to_string()]);
    c.wait_ended(job);
}
