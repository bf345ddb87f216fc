//! GPU requests a cluster cannot meet are refused at submission with Slurm's words
//! (`../shared/slurm-samples/gpu_err_*.txt`, `err_gpus_none_configured.txt`), and
//! the CPUs and memory that come with each GPU follow the partition's defaults.

use crate::harness::{self, Cluster};
use crate::SMALL;

const GPUS: &str = "ClusterName=gpus
SlurmctldHost=localhost
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=g1 CPUs=8 Sockets=1 CoresPerSocket=8 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
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

    // A job asked with --gpus-per-task: its steps bind each task its own GPU by default
    // (sbatch passes SLURM_GPUS_PER_TASK on to srun); a one-task step gets its GPU
    // without the binding variable, as in Slurm 22.05.
    let job = c.sbatch(&[
        "-n",
        "2",
        "--gpus-per-task=1",
        "-o",
        "per-task-%j.out",
        "--wrap",
        "srun -l bash -c 'echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS $SLURMD_TRES_BIND' | sort; \
         srun -n 1 bash -c 'echo one: $CUDA_VISIBLE_DEVICES $SLURMD_TRES_BIND'",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("per-task-{job}.out"))).unwrap(),
        "0: 0 0 gpu:per_task:1\n1: 1 1 gpu:per_task:1\none: 0\n"
    );

    // A step's SLURM_GPUS_ON_NODE counts its own GPUs on the node, not the job's (Slurm's
    // gres/gpu plugin sets it for each step): what Ray's --num-gpus is taken from.
    let job = c.sbatch(&[
        "--gres=gpu:2",
        "-o",
        "on-node-%j.out",
        "--wrap",
        "echo batch: $SLURM_GPUS_ON_NODE; \
         srun -n1 --gpus-per-task=1 bash -c 'echo one: $SLURM_GPUS_ON_NODE $CUDA_VISIBLE_DEVICES'; \
         srun -n1 bash -c 'echo all: $SLURM_GPUS_ON_NODE $CUDA_VISIBLE_DEVICES'",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("on-node-{job}.out"))).unwrap(),
        "batch: 2\none: 1 0\nall: 2 0,1\n"
    );

    // Accounting: the job and its steps hold its GPUs, memory and CPUs (Slurm's
    // shape, `gpu_sacct_steps.txt`, taken with `AccountingStorageTRES=gres/gpu`:
    // without it Slurm does not account GPUs; a step without `--exact` holds all of
    // the job's CPUs on its node).
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
             {job}.0|cpu=4,gres/gpu=2,mem=2000M,node=1\n"
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

/// A node of three GPUs for [`with_constrain_devices_a_job_opens_only_its_gpus`].
const DEVICES: &str = "ClusterName=gpudev
SlurmctldHost=localhost
GresTypes=gpu
NodeName=g1 CPUs=4 RealMemory=4000 Gres=gpu:3 State=UNKNOWN
PartitionName=gpu Nodes=g1 Default=YES MaxTime=1:00:00 State=UP
";

/// Ends the agent that `sluice up` started before the controller was restarted alone
/// (it outlives that `sluice up`), even when the test fails.
struct EndAgent(Vec<i32>);

impl Drop for EndAgent {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        for &pid in &self.0 {
            let start = std::time::Instant::now();
            while std::path::Path::new(&format!("/proc/{pid}")).exists()
                && start.elapsed() < std::time::Duration::from_secs(20)
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}

/// cgroup.conf's `ConstrainDevices=yes`: a job opens the device files of its own GPUs
/// and gets "Operation not permitted" for the others'; an srun step is held to its own
/// GPUs; a GPU whose file is missing (as on a machine without GPUs) costs one line in
/// the agent's log and nothing else. The GPUs' files are character devices made here
/// with the numbers of /dev/full (1:7) and /dev/random (1:8); the third is never made.
#[test]
fn with_constrain_devices_a_job_opens_only_its_gpus() {
    let cgroups = match sluice_noded::devices::probe() {
        Ok(dir) => dir,
        Err(why) => {
            eprintln!("skipped: this host cannot confine devices (no devices cgroup): {why}");
            return;
        }
    };
    let mut c = Cluster::start("gpudev", DEVICES);
    let dev = c.dir.join("dev");
    std::fs::create_dir_all(&dev).unwrap();
    for (name, minor) in [("nvidia0", "7"), ("nvidia1", "8")] {
        let made = std::process::Command::new("mknod")
            .arg(dev.join(name))
            .args(["c", "1", minor])
            .status();
        if !made.is_ok_and(|s| s.success()) || std::fs::File::open(dev.join(name)).is_err() {
            eprintln!(
                "skipped: cannot make and open device files in {}",
                dev.display()
            );
            return;
        }
    }
    // Slurm reads gres.conf and cgroup.conf next to slurm.conf; the controller reads
    // them again as it restarts (the agent stays, and registers with the new one).
    std::fs::write(
        c.dir.join("gres.conf"),
        format!("Name=gpu File={}/nvidia[0-2]\n", dev.display()),
    )
    .unwrap();
    std::fs::write(
        c.dir.join("cgroup.conf"),
        "ConstrainDevices=yes\nConstrainRAMSpace=yes\n",
    )
    .unwrap();
    let state = c.dir.join("state").display().to_string();
    let _agent = EndAgent(harness::pids_of(&[
        "agent",
        "--node",
        "g1",
        "--state-dir",
        &state,
    ]));
    c.crash_and_restart_controller();
    c.wait_for("g1 idle again", || {
        c.run("sinfo", &["-h", "-N", "-o", "%t"]).stdout.trim() == "idle"
    });

    // Each GPU's file: opened, or why not.
    std::fs::write(
        c.work().join("probe.sh"),
        format!(
            "for g in 0 1 2; do\n  \
               if e=$(head -c1 {}/nvidia$g 2>&1 >/dev/null); then echo \"nvidia$g: ok\";\n  \
               else echo \"nvidia$g: ${{e##*: }}\"; fi\n\
             done\n",
            dev.display()
        ),
    )
    .unwrap();
    let output =
        |job: u64| std::fs::read_to_string(c.work().join(format!("{job}.out"))).unwrap_or_default();
    let (ok, denied, missing) = ("ok", "Operation not permitted", "No such file or directory");
    let lines = |states: [&str; 3]| {
        format!(
            "nvidia0: {}\nnvidia1: {}\nnvidia2: {}\n",
            states[0], states[1], states[2]
        )
    };

    // GPU 0, held while a second job gets GPU 1.
    let first = c.sbatch(&[
        "--gpus=1",
        "-t",
        "5",
        "-o",
        "%j.out",
        "--wrap",
        "bash probe.sh; sleep 600",
    ]);
    c.wait_for("the first job's probe", || {
        output(first).lines().count() == 3
    });
    assert_eq!(output(first), lines([ok, denied, missing]));
    let second = c.sbatch(&["--gpus=1", "-o", "%j.out", "--wrap", "bash probe.sh"]);
    assert_eq!(c.wait_ended(second), "COMPLETED");
    assert_eq!(output(second), lines([denied, ok, missing]));
    assert_eq!(c.run("scancel", &[&first.to_string()]).code, 0);
    c.wait_ended(first);

    // No GPUs: none of their files.
    let none = c.sbatch(&["-o", "%j.out", "--wrap", "bash probe.sh"]);
    assert_eq!(c.wait_ended(none), "COMPLETED");
    assert_eq!(output(none), lines([denied, denied, missing]));

    // Two GPUs: the batch step opens both; a step given one GPU only its own.
    let two = c.sbatch(&[
        "--gpus=2",
        "-o",
        "%j.out",
        "--wrap",
        "bash probe.sh; srun -n1 --gpus-per-task=1 bash probe.sh",
    ]);
    assert_eq!(c.wait_ended(two), "COMPLETED");
    assert_eq!(
        output(two),
        format!(
            "{}{}",
            lines([ok, ok, missing]),
            lines([ok, denied, missing])
        )
    );

    // An interactive allocation (srun outside a job) launches no batch script: the
    // agent asks the controller for the job's devices, and confines its steps as well.
    let interactive = c.run("srun", &["--gpus=1", "bash", "probe.sh"]);
    assert_eq!(
        (interactive.code, interactive.stdout.as_str()),
        (0, lines([ok, denied, missing]).as_str()),
        "{}",
        interactive.stderr
    );

    // One log line per job for the missing file; no job cgroup left behind.
    let log =
        std::fs::read_to_string(c.dir.join("state").join("logs").join("slurmd-g1.log")).unwrap();
    let notes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("ConstrainDevices"))
        .collect();
    assert_eq!(notes.len(), 5, "{log}");
    for n in notes {
        assert!(
            n.ends_with(&format!(
                "{}/nvidia2 (No such file or directory)",
                dev.display()
            )),
            "{n}"
        );
    }
    let node_dir = cgroups.join(sluice_noded::cgroup::node_dir_name(
        &c.dir.join("state"),
        "g1",
    ));
    assert!(node_dir.is_dir(), "{} exists", node_dir.display());
    c.wait_for("the job device cgroups to go", || {
        std::fs::read_dir(&node_dir).map_or(true, |d| {
            d.flatten()
                .all(|e| !e.file_name().to_string_lossy().starts_with("job_"))
        })
    });
}

/// Two GPU nodes for [`gpus_are_chosen_by_type_and_nvlink`]: g1's four GPUs are NVLinked
/// in the pairs 0+2 and 1+3 (gres.conf's `Links=`), m1 has two a100 (0-1) and two
/// v100 (2-3).
const TOPOLOGY: &str = "ClusterName=gputopo
SlurmctldHost=localhost
GresTypes=gpu
NodeName=g1 CPUs=4 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
NodeName=m1 CPUs=4 RealMemory=4000 Gres=gpu:a100:2,gpu:v100:2 State=UNKNOWN
PartitionName=linked Nodes=g1 Default=YES MaxTime=1:00:00 State=UP
PartitionName=mixed Nodes=m1 MaxTime=1:00:00 State=UP
";

const TOPOLOGY_GRES: &str = "NodeName=g1 Name=gpu File=/dev/nvidia0 Links=-1,0,2,0
NodeName=g1 Name=gpu File=/dev/nvidia1 Links=0,-1,0,2
NodeName=g1 Name=gpu File=/dev/nvidia2 Links=2,0,-1,0
NodeName=g1 Name=gpu File=/dev/nvidia3 Links=0,2,0,-1
NodeName=m1 Name=gpu Type=a100 File=/dev/nvidia[0-1]
NodeName=m1 Name=gpu Type=v100 File=/dev/nvidia[2-3]
";

/// Which GPUs a job sees: a linked pair for a 2-GPU job, the other half of a pair
/// already broken for a 1-GPU job, and on a node of two types only the indices of the
/// type asked for.
#[test]
fn gpus_are_chosen_by_type_and_nvlink() {
    let mut c = Cluster::start_with("gputopo", TOPOLOGY, &["g1", "m1"]);
    // gres.conf is read next to slurm.conf when the controller starts.
    std::fs::write(c.dir.join("gres.conf"), TOPOLOGY_GRES).unwrap();
    c.crash_and_restart_controller();
    c.wait_for("both nodes idle again", || {
        let o = c.run("sinfo", &["-h", "-N", "-o", "%t"]);
        o.code == 0 && o.stdout.lines().count() == 2 && o.stdout.lines().all(|l| l == "idle")
    });
    let visible = |args: &[&str]| -> String {
        let mut all = args.to_vec();
        all.extend(["-o", "%j.out", "--wrap", "echo $CUDA_VISIBLE_DEVICES"]);
        let job = c.sbatch(&all);
        assert_eq!(c.wait_ended(job), "COMPLETED", "{args:?}");
        std::fs::read_to_string(c.work().join(format!("{job}.out"))).unwrap()
    };

    // A linked pair, not the two lowest indices.
    assert_eq!(visible(&["--gpus=2"]), "0,2\n");
    // GPU 0 held: a 1-GPU job takes 2, its pair's other half, and leaves 1+3 whole.
    let holder = c.sbatch(&["--gpus=1", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("the holder to run", || c.state(holder) == "RUNNING");
    assert_eq!(visible(&["--gres=gpu:1"]), "2\n");
    assert_eq!(visible(&["--gpus=2"]), "1,3\n");
    assert_eq!(c.run("scancel", &[&holder.to_string()]).code, 0);
    c.wait_ended(holder);

    // Types: only the indices of the type asked for.
    assert_eq!(visible(&["-p", "mixed", "--gres=gpu:v100:1"]), "2\n");
    assert_eq!(visible(&["-p", "mixed", "--gpus=v100:2"]), "2,3\n");
    assert_eq!(visible(&["-p", "mixed", "--gres=gpu:a100:1"]), "0\n");
    assert_eq!(visible(&["-p", "mixed", "--gpus=2"]), "0,1\n");
}

/// One node of two GPUs with four shards each (no gres.conf: slurm.conf's count spread
/// over the GPUs).
const SHARDS: &str = "ClusterName=shards
SlurmctldHost=localhost
GresTypes=gpu,shard
NodeName=s1 CPUs=8 RealMemory=8000 Gres=gpu:2,shard:8 State=UNKNOWN
PartitionName=gpu Nodes=s1 Default=YES MaxTime=1:00:00 State=UP
";

/// Shard jobs share a GPU (the same `CUDA_VISIBLE_DEVICES`), a whole-GPU job gets the
/// other one, and neither use takes a GPU the other holds: a whole-GPU job waits while
/// its GPU is shared, a shard job while whole-GPU jobs hold every GPU.
#[test]
fn shard_jobs_share_a_gpu_and_whole_gpu_jobs_do_not_take_it() {
    let c = Cluster::start("shards", SHARDS);
    let refused = |args: &[&str], stderr: &str| {
        let mut all = args.to_vec();
        all.extend(["--wrap", "true"]);
        let o = c.run("sbatch", &all);
        assert_eq!((o.stderr.as_str(), o.code), (stderr, 1), "{args:?}");
    };
    refused(
        &["--gres=gpu:1,shard:1"],
        "sbatch: error: Invalid generic resource (gres) specification\n",
    );
    refused(
        &["--gres=shard:9"],
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
    );
    let output =
        |job: u64| std::fs::read_to_string(c.work().join(format!("{job}.out"))).unwrap_or_default();
    // Each job prints its GPUs and shards, and stays.
    let job = |gres: &str| {
        c.sbatch(&[
            &format!("--gres={gres}"),
            "-t",
            "5",
            "-o",
            "%j.out",
            "--wrap",
            "echo \"${CUDA_VISIBLE_DEVICES:-none} ${SLURM_SHARDS_ON_NODE:-none}\"; sleep 600",
        ])
    };
    let printed = |job: u64| {
        c.wait_for(&format!("job {job}'s line"), || output(job).ends_with('\n'));
        output(job)
    };
    let reason = |job: u64| {
        c.run("squeue", &["-h", "-j", &job.to_string(), "-o", "%T %r"])
            .stdout
    };
    let a = job("shard:2");
    let b = job("shard:1");
    assert_eq!(printed(a), "0 2\n");
    assert_eq!(printed(b), "0 1\n");
    let w1 = job("gpu:1");
    assert_eq!(printed(w1), "1 none\n");
    // GPU 0 is shared: no whole GPU is free.
    let w2 = job("gpu:1");
    assert_eq!(
        c.settle("PENDING Resources\n", || reason(w2)),
        "PENDING Resources\n"
    );
    for j in [a, b] {
        assert_eq!(c.run("scancel", &[&j.to_string()]).code, 0);
        c.wait_ended(j);
    }
    assert_eq!(printed(w2), "0 none\n");
    // Whole-GPU jobs hold both GPUs: a shard job waits, and gets the first GPU freed.
    let s = job("shard:1");
    assert_eq!(
        c.settle("PENDING Resources\n", || reason(s)),
        "PENDING Resources\n"
    );
    assert_eq!(c.run("scancel", &[&w1.to_string()]).code, 0);
    assert_eq!(printed(s), "1 1\n");
    assert_eq!(c.run("scancel", &[&w2.to_string(), &s.to_string()]).code, 0);
    c.wait_ended(s);
}

/// `--gpu-bind` gives each task of a step the GPUs it names (`SLURMD_TRES_BIND` says
/// so), and `--gpus-per-socket` counts GPUs per socket asked with `--sockets-per-node`,
/// which it needs.
#[test]
fn gpu_bind_maps_tasks_to_gpus_and_gpus_per_socket_needs_sockets() {
    let c = Cluster::start("gpubind", GPUS);
    let o = c.run(
        "srun",
        &[
            "-n",
            "2",
            "--gpus=2",
            "--gpu-bind=map_gpu:1,0",
            "-l",
            "bash",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES $SLURMD_TRES_BIND",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut lines: Vec<&str> = o.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0: 1 gpu:map_gpu:1,0", "1: 0 gpu:map_gpu:1,0"]);
    let o = c.run("srun", &["--gpu-bind=blah", "true"]);
    assert_eq!(
        o.stderr,
        "srun: error: Invalid --gpu-bind argument: gpu:blah\n"
    );
    assert_ne!(o.code, 0);

    let o = c.run("sbatch", &["--gpus-per-socket=1", "--wrap", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code, o.stdout.as_str()),
        (
            "sbatch: error: --gpus-per-socket option requires --sockets-per-node specification\n",
            1,
            ""
        )
    );
    // The node has one socket: two GPUs per socket of one socket.
    let job = c.sbatch(&[
        "--gpus-per-socket=2",
        "--sockets-per-node=1",
        "-o",
        "%j.out",
        "--wrap",
        "echo $CUDA_VISIBLE_DEVICES",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("{job}.out"))).unwrap(),
        "0,1\n"
    );
    let o = c.run(
        "sbatch",
        &[
            "--gpus-per-socket=1",
            "--sockets-per-node=2",
            "--wrap",
            "true",
        ],
    );
    assert_eq!(
        o.stderr,
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    );
}

/// `sinfo` puts nodes on one line only when the fields it shows agree: nodes with other
/// GPUs get their own line, as in Slurm, while the node list and count sum up the rest.
#[test]
fn sinfo_keeps_nodes_with_other_gres_apart() {
    let c = Cluster::start(
        "sinfo-gres",
        "ClusterName=mixed
SlurmctldHost=localhost
GresTypes=gpu
NodeName=a[1-2] CPUs=4 RealMemory=4000 Gres=gpu:a100:2 State=UNKNOWN
NodeName=h1 CPUs=4 RealMemory=4000 Gres=gpu:h100:4 State=UNKNOWN
PartitionName=gpu Nodes=a[1-2],h1 Default=YES MaxTime=1:00:00 State=UP
",
    );
    assert_eq!(
        c.run("sinfo", &["-h", "-o", "%N %D %c %G"]).stdout,
        "a[1-2] 2 4 gpu:a100:2\nh1 1 4 gpu:h100:4\n"
    );
    assert_eq!(c.run("sinfo", &["-h", "-o", "%D %c"]).stdout, "3 4\n");
}

/// `scontrol show node` counts GPUs in the node's TRES when accounting tracks them, as
/// Slurm's sample shows: configured and allocated.
#[test]
fn a_nodes_tres_count_its_gpus() {
    let c = Cluster::start(
        "node-tres",
        "ClusterName=nodetres
SlurmctldHost=localhost
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=g1 CPUs=4 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=g1 Default=YES MaxTime=1:00:00 State=UP
",
    );
    let tres = |c: &Cluster| -> Vec<String> {
        c.run("scontrol", &["show", "node", "g1"])
            .stdout
            .split_whitespace()
            .filter(|w| w.starts_with("CfgTRES=") || w.starts_with("AllocTRES="))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        tres(&c),
        ["CfgTRES=cpu=4,mem=4000M,billing=4,gres/gpu=4", "AllocTRES="]
    );
    let job = c.sbatch(&["--gpus=2", "--mem=1000", "--wrap", "sleep 600"]);
    c.wait_for("the job to run", || c.state(job) == "RUNNING");
    assert_eq!(
        tres(&c),
        [
            "CfgTRES=cpu=4,mem=4000M,billing=4,gres/gpu=4",
            "AllocTRES=cpu=1,mem=1000M,gres/gpu=2"
        ]
    );
    // The job's own record ends as Slurm's does for `--gpus`.
    let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    assert!(
        show.ends_with("   Power=\n   TresPerJob=gres:gpu:2\n   \n\n"),
        "{show}"
    );
    c.run("scancel", &[&job.to_string()]);
}
