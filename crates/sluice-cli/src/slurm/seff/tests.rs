use sluice_proto::types::{JobDescription, StepId, StepRecord};
use sluice_proto::usage::{Stat, StepUsage};

use super::*;

fn step(job_id: u64, step: StepId, cpu_ms: u64, rss_kb: &[u64]) -> StepRecord {
    let mut u = StepUsage::default();
    for (t, &r) in rss_kb.iter().enumerate() {
        u.merge(&StepUsage {
            tasks: 1,
            cpu_ms: Stat::one(cpu_ms / rss_kb.len() as u64, "n1", t as u32),
            rss: Stat::one(r * 1024, "n1", t as u32),
            ..StepUsage::default()
        });
    }
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
        nodes: vec![],
        ntasks: rss_kb.len() as u32,
        cpus: 1,
        held_cpus: vec![],
        ended_on: vec![],
        usage: Some(Box::new(u)),
        run: 0,
        suspended_secs: 0,
    }
}

fn job() -> JobRecord {
    JobRecord {
        id: 42,
        user: "ann".into(),
        group: "staff".into(),
        state: JobState::Completed,
        exit_code: 0,
        start_time: Some(1000),
        end_time: Some(1000 + 3723),
        nodes: vec!["n1".into(), "n2".into()],
        cpus_per_node: vec![4, 4],
        tres_alloc: vec![("cpu".into(), 8), ("mem".into(), 8192)],
        ..JobRecord::default()
    }
}

#[test]
fn a_finished_job_in_seffs_layout() {
    let j = job();
    // 2 h 3 min 50.4 s of CPU; step 0's four tasks peaked at 1, 1, 1 and 3 GiB
    // (6 GiB: more than the batch step's 512 MiB).
    let steps = [
        step(42, StepId::Batch, 1_000_000, &[512 * 1024]),
        step(
            42,
            StepId::Number(0),
            6_430_400,
            &[1 << 20, 1 << 20, 1 << 20, 3 << 20],
        ),
    ];
    let refs: Vec<&StepRecord> = steps.iter().collect();
    assert_eq!(
        layout(&j, &refs, "alpha", 99_999),
        "Job ID: 42\n\
         Cluster: alpha\n\
         User/Group: ann/staff\n\
         State: COMPLETED (exit code 0)\n\
         Nodes: 2\n\
         Cores per node: 4\n\
         CPU Utilized: 02:03:50\n\
         CPU Efficiency: 24.95% of 08:16:24 core-walltime\n\
         Job Wall-clock time: 01:02:03\n\
         Memory Utilized: 6.00 GB\n\
         Memory Efficiency: 75.00% of 8.00 GB (4.00 GB/node)\n\
         The task which had the largest memory consumption differs by 200.00% from the average task max memory consumption\n"
    );
}

#[test]
fn one_core_running_array_task_per_cpu_memory_and_warning() {
    let j = JobRecord {
        id: 50,
        array: Some((48, 2)),
        state: JobState::Running,
        end_time: None,
        nodes: vec!["n1".into()],
        cpus_per_node: vec![1],
        tres_alloc: vec![],
        desc: JobDescription {
            memory: Some(MemoryRequest::PerCpu(100)),
            ..Default::default()
        },
        ..job()
    };
    let out = layout(&j, &[], "alpha", 1060);
    assert_eq!(
        out,
        "Job ID: 50\n\
         Array Job ID: 48_2\n\
         Cluster: alpha\n\
         User/Group: ann/staff\n\
         State: RUNNING\n\
         Cores: 1\n\
         CPU Utilized: 00:00:00\n\
         CPU Efficiency: 0.00% of 00:01:00 core-walltime\n\
         Job Wall-clock time: 00:01:00\n\
         Memory Utilized: 0.00 MB\n\
         Memory Efficiency: 0.00% of 100.00 MB (100.00 MB/core)\n\
         WARNING: Efficiency statistics can only be obtained after the job has ended as seff tool is based on the accounting database data.\n"
    );
}

#[test]
fn a_pending_job_has_no_efficiency() {
    let j = JobRecord {
        state: JobState::Pending,
        start_time: None,
        end_time: None,
        nodes: vec![],
        cpus_per_node: vec![],
        ..job()
    };
    assert_eq!(
        layout(&j, &[], "c", 0),
        "Job ID: 42\nCluster: c\nUser/Group: ann/staff\nState: PENDING\nCores: 1\n\
         Efficiency not available for jobs in the PENDING state.\n"
    );
}

#[test]
fn kilobytes_print_in_the_largest_unit_below_1024() {
    assert_eq!(kbytes(0.0), "0.00 MB");
    assert_eq!(kbytes(512.0), "512.00 KB");
    assert_eq!(kbytes(1536.0), "1.50 MB");
    assert_eq!(kbytes(8.0 * 1024.0 * 1024.0), "8.00 GB");
}

#[test]
fn debug_mode_prints_the_raw_figures_first() {
    let j = JobRecord {
        tres_req: vec![("cpu".into(), 8), ("mem".into(), 8192)],
        ..job()
    };
    let steps = [step(42, StepId::Batch, 1_600, &[1536])];
    let refs: Vec<&StepRecord> = steps.iter().collect();
    assert_eq!(
        debug_lines(&j, &refs, "alpha", 0),
        "Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks Reqmem PerNode Cput Walltime Mem ExitStatus\n\
         Slurm data: 42  ann staff COMPLETED alpha 8 2 8388608 1 2 3723 1536 0\n\n"
    );
}
