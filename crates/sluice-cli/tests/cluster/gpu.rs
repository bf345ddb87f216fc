//! GPU requests a cluster cannot meet are refused at submission with Slurm's words
//! (`../shared/slurm-samples/gpu_err_*.txt`, `err_gpus_none_configured.txt`), and
//! the CPUs and memory that come with each GPU follow the partition's defaults.

use crate::harness::Cluster;
use crate::SMALL;

const GPUS: &str = "ClusterName=gpus
SlurmctldHost=localhost
GresTypes=gpu
NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=g1 Default=YES MaxTime=1:00:00 DefCpuPerGPU=2 DefMemPerGPU=1000 State=UP
";

#[test]
fn impossible_gpu_requests_get_slurms_errors() {
    let c = Cluster::start("gpuerr", GPUS);
    let refused = |args: &[&str], stderr: &str| {
        let mut all = args.to_vec();
        all.extend(["--wrap", "true"]);
        let o = c.run("sbatch", &all);
        assert_eq!(
            (o.stderr.as_str(), o.code, o.stdout.as_str()),
            (stderr, 1, ""),
            "{args:?}"
        );
    };
    refused(
        &["--gres=tpu:1"],
        "sbatch: error: Invalid generic resource (gres) specification\n",
    );
    refused(
        &["--gres=gpu:x"],
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
    );
    refused(
        &["--gpus=5"],
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
    );
    // Two GPUs, nothing else said: the partition's 2 CPUs and 1000 MiB per GPU.
    let job = c.sbatch(&["--gres=gpu:2", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("it runs", || c.state(job) == "RUNNING");
    let o = c.run("squeue", &["-h", "-j", &job.to_string(), "-o", "%C %m"]);
    assert_eq!(o.stdout, "4 2000M\n");
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    // Its GPUs are free again only once it has ended.
    c.wait_ended(job);

    // The job's GPU variables, as in `gpu_job_env.txt`.
    let job = c.sbatch(&[
        "--gpus=2",
        "-o",
        "env-%j.out",
        "--wrap",
        "env | grep -E '^(SLURM_GPUS|SLURM_JOB_GPUS|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL)=' | sort",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("env-{job}.out"))).unwrap(),
        "CUDA_VISIBLE_DEVICES=0,1\nGPU_DEVICE_ORDINAL=0,1\nSLURM_GPUS=2\nSLURM_JOB_GPUS=0,1\n"
    );

    // One GPU per task under srun: each task sees its own.
    let o = c.run(
        "srun",
        &[
            "-n",
            "2",
            "--gpus-per-task=1",
            "-l",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS $SLURMD_TRES_BIND",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut lines: Vec<&str> = o.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0: 0 0 gpu:per_task:1", "1: 1 1 gpu:per_task:1"]);

    // Accounting: the job and its steps hold its GPUs and memory (Slurm's shape,
    // `gpu_sacct_steps.txt`).
    let job = c.sbatch(&["--gres=gpu:2", "-t", "5", "--wrap", "srun true"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let o = c.run(
        "sacct",
        &["-n", "-P", "-o", "JobID,AllocTRES", "-j", &job.to_string()],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{job}|billing=4,cpu=4,gres/gpu=2,mem=2000M,node=1\n\
             {job}.batch|cpu=4,gres/gpu=2,mem=2000M,node=1\n\
             {job}.0|cpu=1,gres/gpu=2,mem=2000M,node=1\n"
        )
    );
}

#[test]
fn a_cluster_without_gpus_refuses_gpu_jobs() {
    let c = Cluster::start("nogpu", SMALL);
    let o = c.run("sbatch", &["--gpus=1", "--wrap", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "sbatch: error: Invalid generic resource (gres) specification\n",
            1
        )
    );
}
