//! The issue's truth check, at the supervisor's level (`run::batch`, `run::tasks`, as
//! slurmstepd runs them): a task that touches 200 MiB and burns 2 s of CPU shows both
//! within 10 % in its end report, and a step's GPUs carry the fake provider's figures.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_proto::types::{JobRecord, LaunchBatch, LaunchTasks, StepId, TaskEvent};

use super::gpu::FakeGpus;
use super::tracker::Tracker;
use super::{Settings, Source};
use crate::run::{self, Exec};

/// Touches 200 MiB (bytes filled, not merely reserved), then spins until the process
/// has used 2 s of CPU in all.
const WORKLOAD: &str = "import time\n\
b = b'x' * (200 << 20)\n\
while time.process_time() < 2.0:\n    pass\n\
print(len(b))\n";

fn python() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.exists())
}

/// A supervisor's state for job 7 on `node`, its directory `dir`, with no cgroups.
pub(crate) fn exec(
    dir: &Path,
    node: &str,
    gpus: Option<Box<dyn super::gpu::GpuSource>>,
) -> Arc<Exec> {
    std::fs::create_dir_all(dir).unwrap();
    Arc::new(Exec {
        node: node.to_string(),
        own_uid: nix::unistd::geteuid().as_raw(),
        job: 7,
        run: 0,
        dir: dir.to_path_buf(),
        jobs_dir: dir.to_path_buf(),
        procs: Default::default(),
        stdins: Default::default(),
        memory: None,
        devices: Err("not here".into()),
        changed: tokio::sync::watch::channel(0u64).0,
        steps: Default::default(),
        output: tokio::sync::watch::channel(0u64).0,
        usage: Mutex::new(Tracker::new(
            node,
            Settings {
                source: Source::Proc,
                task_secs: 1,
            },
            Path::new("/proc"),
            gpus,
        )),
        sampled: Default::default(),
        forgotten: Default::default(),
        cancelled_early: Default::default(),
    })
}

fn record(dir: &Path) -> JobRecord {
    let mut r = JobRecord {
        id: 7,
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        user: "me".into(),
        nodes: vec!["n1".into()],
        gpus_per_node: vec![vec![0, 1]],
        stdout: dir.join("out").display().to_string(),
        stderr: dir.join("out").display().to_string(),
        stdin: "/dev/null".into(),
        ..JobRecord::default()
    };
    r.desc.work_dir = dir.display().to_string();
    r
}

fn env() -> Vec<(String, String)> {
    vec![(
        "PATH".into(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
    )]
}

fn within(value: u64, truth: u64, what: &str) {
    let (v, t) = (value as f64, truth as f64);
    assert!(
        (v - t).abs() <= t * 0.10,
        "{what}: measured {value}, truth {truth} (more than 10 % apart)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_script_that_touches_200_mib_and_burns_2_s_reports_them() {
    let Some(py) = python() else {
        eprintln!("skipped: needs python3 for the workload");
        return;
    };
    let dir = std::env::temp_dir().join(format!("sluice-truth-b-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let exec = exec(&dir, "n1", None);
    let mut r = record(&dir);
    std::fs::write(dir.join("w.py"), WORKLOAD).unwrap();
    r.desc.script = format!(
        "#!/bin/sh\n{} {}\n",
        py.display(),
        dir.join("w.py").display()
    );
    let order = LaunchBatch {
        job: r,
        environment: env(),
        kill_wait: 2,
        incarnation: String::new(),
        devices: None,
    };
    run::batch(exec.clone(), order).await;
    let ended = exec.procs().ended.clone().expect("the script ended");
    assert_eq!(
        ended.exit_code,
        0,
        "{}",
        std::fs::read_to_string(dir.join("out")).unwrap_or_default()
    );
    let u = ended.usage.expect("the batch step's figures");
    assert_eq!(u.tasks, 1);
    within(u.cpu_ms.tot, 2000, "CPU time, ms");
    within(
        u.user_cpu_ms + u.system_cpu_ms,
        2000,
        "user + system CPU, ms",
    );
    within(u.rss.max, 200 << 20, "peak RSS, bytes");
    assert_eq!((u.rss.max_node.as_str(), u.rss.max_task), ("n1", 0));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_tasks_are_measured_and_its_gpus_carry_the_fake_figures() {
    let Some(py) = python() else {
        eprintln!("skipped: needs python3 for the workload");
        return;
    };
    let dir = std::env::temp_dir().join(format!("sluice-truth-s-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("gpus.json");
    std::fs::write(
        &fake,
        r#"{"1": {"util": 80, "mem_mib": 1000, "power_w": 250}}"#,
    )
    .unwrap();
    let exec = exec(&dir, "n2", Some(Box::new(FakeGpus::at(&fake))));
    std::fs::write(dir.join("w.py"), WORKLOAD).unwrap();
    let order = LaunchTasks {
        job_id: 7,
        step: 0,
        node_index: 0,
        tasks: vec![4, 5],
        task_gpus: vec![vec![1], vec![1]],
        cpus: None,
        argv: vec![
            py.display().to_string(),
            dir.join("w.py").display().to_string(),
        ],
        environment: env(),
        work_dir: dir.display().to_string(),
        stdin: false,
        stdin_task: None,
        pty: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<TaskEvent>(256);
    let e = exec.clone();
    let r = record(&dir);
    tokio::task::spawn_blocking(move || run::tasks(e, r, order, None, tx))
        .await
        .unwrap();
    // Two sampling rounds while the tasks run, the GPU busier in the second.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let first = exec.tracker().sample();
    std::fs::write(
        &fake,
        r#"{"1": {"util": 40, "mem_mib": 3000, "power_w": 150}}"#,
    )
    .unwrap();
    let second = exec.tracker().sample();
    assert_eq!(first.len(), 1, "the step runs: {first:?}");
    assert_eq!(second[0].0, StepId::Number(0));
    let mut exits = 0;
    while let Some(ev) = rx.recv().await {
        if let TaskEvent::Exit { code, .. } = ev {
            assert_eq!(code, 0);
            exits += 1;
        }
    }
    assert_eq!(exits, 2);
    let u = exec.tracker().usage(StepId::Number(0)).unwrap();
    assert_eq!(u.tasks, 2);
    within(u.cpu_ms.tot, 4000, "both tasks' CPU time, ms");
    within(u.cpu_ms.min, 2000, "one task's CPU time, ms");
    within(u.rss.max, 200 << 20, "one task's peak RSS");
    assert!([4, 5].contains(&u.rss.max_task) && u.rss.max_node == "n2");
    assert_eq!(u.gpus.len(), 1);
    let g = &u.gpus[0];
    assert_eq!((g.node.as_str(), g.index, g.samples), ("n2", 1, 2));
    assert_eq!((g.util_sum, g.util_max, g.util_now), (120, 80, 40));
    assert_eq!((g.mem_max, g.mem_now), (3000 << 20, 3000 << 20));
    assert_eq!(g.power_sum_mw, Some(400_000));
    std::fs::remove_dir_all(&dir).unwrap();
}
