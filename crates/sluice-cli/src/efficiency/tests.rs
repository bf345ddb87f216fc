use sluice_proto::types::StepId;
use sluice_proto::usage::{GpuUsage, Stat};

use super::*;

const MIB: u64 = 1024 * 1024;

fn job(id: u64, user: &str, account: &str, cpus: &[u32], gpus: &[u32]) -> JobRecord {
    JobRecord {
        id,
        user: user.into(),
        account: account.into(),
        state: JobState::Completed,
        nodes: (1..=cpus.len()).map(|i| format!("n{i}")).collect(),
        cpus_per_node: cpus.to_vec(),
        gpus_per_node: gpus.iter().map(|&g| (0..g).collect()).collect(),
        ..JobRecord::default()
    }
}

/// A step whose tasks used `cpu_ms` of CPU time each and peaked at `rss` MiB each.
fn step(job_id: u64, step: StepId, cpu_ms: &[u64], rss: &[u64], gpus: Vec<GpuUsage>) -> StepRecord {
    let mut u = StepUsage::default();
    for (t, (&c, &r)) in cpu_ms.iter().zip(rss).enumerate() {
        u.merge(&StepUsage {
            tasks: 1,
            cpu_ms: Stat::one(c, "n1", t as u32),
            rss: Stat::one(r * MIB, "n1", t as u32),
            ..StepUsage::default()
        });
    }
    u.gpus = gpus;
    StepRecord {
        time_limit: None,
        submit_line: None,
        timed_out: false,
        gpus: Vec::new(),
        srun: None,
        cancelled_by: None,
        job_id,
        step,
        name: String::new(),
        state: JobState::Completed,
        start: 0,
        end: None,
        exit_code: 0,
        signal: 0,
        nodes: vec!["n1".into()],
        ntasks: cpu_ms.len() as u32,
        cpus: 1,
        held_cpus: vec![],
        ended_on: vec![],
        usage: Some(Box::new(u)),
        run: 0,
        suspended_secs: 0,
    }
}

fn gpu(index: u32, samples: u32, util_sum: u64) -> GpuUsage {
    GpuUsage {
        node: "n1".into(),
        index,
        samples,
        util_sum,
        ..GpuUsage::default()
    }
}

/// Three jobs: ann's two in `phys` (one with a limit, one with GPUs and none), bob's
/// running one in `bio` without figures yet, and a pending one.
fn story() -> (Vec<JobRecord>, Vec<StepRecord>) {
    let a = JobRecord {
        start_time: Some(1000),
        end_time: Some(1100),
        time_limit: Some(400),
        tres_alloc: vec![("cpu".into(), 4), ("mem".into(), 1024)],
        ..job(1, "ann", "phys", &[4], &[])
    };
    let b = JobRecord {
        start_time: Some(2000),
        end_time: Some(2200),
        desc: sluice_proto::types::JobDescription {
            memory: Some(MemoryRequest::PerCpu(512)),
            ..Default::default()
        },
        ..job(2, "ann", "phys", &[2], &[2])
    };
    let c = JobRecord {
        state: JobState::Running,
        start_time: Some(5000),
        time_limit: Some(3600),
        tres_alloc: vec![("cpu".into(), 8), ("mem".into(), 8192)],
        ..job(3, "bob", "bio", &[4, 4], &[])
    };
    let pending = JobRecord {
        state: JobState::Pending,
        ..job(4, "bob", "bio", &[], &[])
    };
    let steps = vec![
        // A: 100 s of CPU in the batch step, 2 × 100 s in step 0, whose two tasks
        // peaked at 384 and 128 MiB (512 together: the most of one step).
        step(1, StepId::Batch, &[100_000], &[256], vec![]),
        step(
            1,
            StepId::Number(0),
            &[100_000, 100_000],
            &[384, 128],
            vec![],
        ),
        // B: 40 s of CPU, 1 GiB; GPU 0 at 50 % in the batch step and 90 % in step 0
        // (ten samples each: 70 % in all), GPU 1 idle.
        step(
            2,
            StepId::Batch,
            &[40_000],
            &[1024],
            vec![gpu(0, 10, 500), gpu(1, 10, 0)],
        ),
        step(2, StepId::Number(0), &[0], &[1], vec![gpu(0, 10, 900)]),
    ];
    (vec![a, b, c, pending], steps)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn each_job_gets_its_cpu_memory_gpu_and_time_efficiency() {
    let (jobs, steps) = story();
    let refs: Vec<&JobRecord> = jobs.iter().collect();
    let e = jobs_efficiency(&refs, &steps, 5600);
    assert_eq!(e.len(), 3, "the pending job is left out");
    let (a, b, c) = (&e[0], &e[1], &e[2]);
    // A: 300 s of CPU over 100 s × 4 CPUs; 512 MiB of 1 GiB; 100 s of 400.
    assert_eq!(
        (a.elapsed_s, a.cpus, a.cpu_time_ms, a.core_seconds),
        (100, 4, 300_000, 400)
    );
    assert!(close(a.cpu_efficiency, 75.0));
    assert_eq!(a.mem_used_bytes, 512 * MIB);
    assert_eq!(a.max_rss_bytes, 384 * MIB);
    assert_eq!(a.mem_requested_bytes, Some(1024 * MIB));
    assert!(close(a.mem_efficiency, 50.0));
    assert!(close(a.time_efficiency, 25.0));
    assert_eq!(a.gpu_efficiency, None);
    // B: 40 s over 200 s × 2 CPUs; 1 GiB of 2 × 512 MiB (asked per CPU); GPUs 70 and
    // 0 %; no time limit.
    assert!(close(b.cpu_efficiency, 10.0));
    assert_eq!(b.mem_requested_bytes, Some(1024 * MIB));
    assert!(close(b.mem_efficiency, 100.0));
    assert!(close(b.gpu_efficiency, 35.0));
    assert_eq!((b.gpus, b.gpu_seconds), (2, 400));
    assert_eq!(b.time_efficiency, None);
    // C: running, counted up to now (600 s), nothing measured yet.
    assert_eq!(
        (c.elapsed_s, c.core_seconds, c.state.as_str()),
        (600, 4800, "RUNNING")
    );
    assert!(close(c.cpu_efficiency, 0.0));
    assert!(close(c.mem_efficiency, 0.0));
    assert!(close(c.time_efficiency, 100.0 / 6.0));
    assert_eq!(c.gpu_efficiency, None);
}

#[test]
fn users_and_accounts_sum_weighted_by_core_and_gpu_hours() {
    let (jobs, steps) = story();
    let refs: Vec<&JobRecord> = jobs.iter().collect();
    let e = jobs_efficiency(&refs, &steps, 5600);
    let users = summarize(&e, |j| &j.user);
    assert_eq!(users.len(), 2);
    let ann = &users[0];
    assert_eq!(
        (ann.name.as_str(), ann.jobs, ann.core_seconds),
        ("ann", 2, 800)
    );
    // 340 s of CPU over 800 core-seconds.
    assert!(close(ann.cpu_efficiency, 42.5));
    // 50 % and 100 %, each job 400 core-seconds.
    assert!(close(ann.mem_efficiency, 75.0));
    // Only B has GPUs.
    assert!(close(ann.gpu_efficiency, 35.0));
    // Only A has a limit: 400 core-seconds used of 1600 asked.
    assert!(close(ann.time_efficiency, 25.0));
    let bob = &users[1];
    assert_eq!(bob.gpu_efficiency, None);
    assert!(close(bob.time_efficiency, 4800.0 / 28800.0 * 100.0));
    let accounts = summarize(&e, |j| &j.account);
    assert_eq!(
        accounts
            .iter()
            .map(|s| (s.name.as_str(), s.jobs))
            .collect::<Vec<_>>(),
        [("bio", 1), ("phys", 2)]
    );
    assert_eq!(accounts[1].cpu_efficiency, ann.cpu_efficiency);
}

#[test]
fn memory_without_tres_comes_from_the_request() {
    let mut j = job(1, "ann", "a", &[2, 2], &[1, 1]);
    assert_eq!(allocated_mem_mib(&j), None);
    j.desc.memory = Some(MemoryRequest::PerNode(1000));
    assert_eq!(allocated_mem_mib(&j), Some(2000));
    j.desc.memory = Some(MemoryRequest::PerGpu(300));
    assert_eq!(allocated_mem_mib(&j), Some(600));
    j.tres_alloc = vec![("mem".into(), 4096)];
    assert_eq!(allocated_mem_mib(&j), Some(4096));
}
