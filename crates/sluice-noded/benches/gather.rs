//! The agent's cost of gathering usage (issue 23, item 6): the CPU time one sampling
//! round takes with 64 tasks running on the node (each a shell with a child, as a task
//! running a program is), and that as a share of one core at the default
//! `JobAcctGatherFrequency` (30 s). A round reads every process's `/proc/PID/stat` once
//! (the trees are walked by parent id) and each task's processes' `status` and `io`,
//! so the host's other processes count too: their number is printed.
//!
//! `cargo bench -p sluice-noded --bench gather`

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use sluice_noded::usage::tracker::Tracker;
use sluice_noded::usage::{Settings, Source};
use sluice_proto::types::StepId;

/// This thread's CPU time, microseconds.
fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

fn main() {
    let tasks: u32 = std::env::var("GATHER_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let rounds = 50;
    let mut children: Vec<std::process::Child> = (0..tasks)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "sleep 600; :"])
                .stdin(Stdio::null())
                .spawn()
                .expect("sh runs")
        })
        .collect();
    // Let each shell start its child.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut tracker = Tracker::new(
        "bench",
        Settings {
            source: Source::Proc,
            task_secs: 30,
        },
        Path::new("/proc"),
        None,
    );
    for (i, c) in children.iter().enumerate() {
        tracker.task_started(StepId::Number(0), i as u32, c.id() as i32);
    }
    let host_procs = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                .count()
        })
        .unwrap_or(0);
    // One round to warm the caches, then the measured ones.
    let first = tracker.sample();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].1.tasks, tasks);
    let (cpu0, wall0) = (thread_cpu_us(), Instant::now());
    for _ in 0..rounds {
        std::hint::black_box(tracker.sample());
    }
    let cpu_us = (thread_cpu_us() - cpu0) as f64 / f64::from(rounds);
    let wall_us = wall0.elapsed().as_micros() as f64 / f64::from(rounds);
    for c in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
    println!("usage gathering, one sampling round ({rounds} rounds averaged)");
    println!(
        "{:>6} {:>13} {:>14} {:>15} {:>20}",
        "tasks", "host procs", "CPU ms/round", "wall ms/round", "% of a core at 30 s"
    );
    println!(
        "{:>6} {:>13} {:>14.2} {:>15.2} {:>20.4}",
        tasks,
        host_procs,
        cpu_us / 1000.0,
        wall_us / 1000.0,
        cpu_us / 1000.0 / 30_000.0 * 100.0
    );
}
