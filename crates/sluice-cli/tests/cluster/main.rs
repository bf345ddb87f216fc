//! End-to-end tests against a real cluster: `sluice up` with its controller and node
//! agents, driven by the Slurm commands exactly as users type them.

mod accounting;
mod accounts;
mod acct_limits;
mod arrays;
mod audit;
mod backup_controller;
mod binaries;
mod cancel;
mod commands;
mod completing;
mod core_spec;
mod daemons;
mod diag;
mod durability;
mod efficiency;
mod enforce;
mod explain;
mod export_none;
mod gang;
mod gpu;
mod harness;
mod hetjobs;
mod limits;
mod logs;
mod memory;
mod metrics;
mod node_changes;
mod openapi;
mod owners;
mod postgres;
mod preempt;
mod priority;
mod pty;
mod purge;
mod queries;
mod reservations;
mod rest;
mod rest_db;
mod rest_update;
mod restarts;
mod salloc;
mod scripts;
mod service_address;
mod services;
mod sstat;
mod stdin;
mod suspend;
mod tasks;
mod tcp;
mod topology;
mod ui;
mod update;
mod usage_commands;
mod usage_gather;

use harness::Cluster;

fn seed(file: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../sluice-conf/tests/data/");
    std::fs::read_to_string(format!("{path}{file}")).unwrap()
}

/// Two small nodes of 2 CPUs in one partition.
const SMALL: &str = "ClusterName=small
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn the_seed_job_script_runs_sixteen_ranks_on_two_nodes() {
    // The seeds' slurm.conf and gres.conf verbatim (four nodes of 128 CPUs and 8
    // rtxpro6000 GPUs, `AutoDetect=nvml`, run on this machine by agents that trust the
    // configuration), and their job script with the training program replaced by one
    // that prints what each rank sees.
    let c = Cluster::start_files(
        "seed",
        &seed("seed-slurm.conf"),
        &[("gres.conf", &seed("seed-gres.conf"))],
    );
    let script = seed("seed-job.sh");
    let launch = script
        .find("srun python")
        .expect("the seed script runs srun");
    let script = format!(
        "{}srun bash -c 'echo rank $SLURM_PROCID node $SLURM_NODEID local $SLURM_LOCALID \
         of $SLURM_NTASKS on $SLURMD_NODENAME in $SLURM_JOB_NODELIST \
         head $(scontrol show hostnames | head -1) gpus $CUDA_VISIBLE_DEVICES'\n",
        &script[..launch]
    );
    std::fs::write(c.work().join("job.sh"), script).unwrap();
    std::fs::create_dir_all(c.work().join("logs")).unwrap();
    let job = c.sbatch(&["job.sh"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");

    let out = std::fs::read_to_string(c.work().join(format!("logs/{job}.out"))).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_by_key(|l| l.split(' ').nth(1).and_then(|r| r.parse::<u32>().ok()));
    let expected: Vec<String> = (0..16)
        .map(|rank| {
            format!(
                "rank {rank} node {} local {} of 16 on node0{} in node[01-02] head node01 \
                 gpus 0,1,2,3,4,5,6,7",
                rank / 8,
                rank % 8,
                rank / 8 + 1
            )
        })
        .collect();
    assert_eq!(lines, expected);

    let acct = c.run(
        "sacct",
        &[
            "-P",
            "-o",
            "JobID,JobName,Partition,AllocCPUS,State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        acct.stdout,
        format!(
            "JobID|JobName|Partition|AllocCPUS|State|ExitCode\n\
             {job}|qwen-finetune|train|16|COMPLETED|0:0\n\
             {job}.batch|batch||8|COMPLETED|0:0\n\
             {job}.0|bash||16|COMPLETED|0:0\n"
        )
    );
}

#[test]
fn bad_submissions_get_slurms_errors_and_burn_no_job_id() {
    let c = Cluster::start("bad", SMALL);
    let first = c.sbatch(&["--wrap", "true"]);
    let cases: &[(&[&str], &str, i32)] = &[
        (
            &["-t", "abc", "--wrap", "true"],
            "sbatch: error: Invalid --time specification\n",
            255,
        ),
        (
            &["--mem=abc", "--wrap", "true"],
            "sbatch: error: Invalid --mem specification\n",
            255,
        ),
        (
            &["--array=1-x", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Invalid job array specification\n",
            1,
        ),
        (
            &["-p", "nosuch", "--wrap", "true"],
            "sbatch: error: invalid partition specified: nosuch\n\
             sbatch: error: Batch job submission failed: Invalid partition name specified\n",
            1,
        ),
        (
            &["--mem=100T", "--wrap", "true"],
            "sbatch: error: Memory specification can not be satisfied\n\
             sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1,
        ),
        (
            // CPUs, not memory, are what no node has (real Slurm 22.05, differential
            // suite): the CPU line only.
            &["-c", "3", "--mem=100M", "--wrap", "true"],
            "sbatch: error: CPU count per node can not be satisfied\n\
             sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1,
        ),
        (
            // Memory per CPU is compared as given: 600M per CPU fits a node of 1000M,
            // though two CPUs need 1200M.
            &["-c", "2", "--mem-per-cpu=600", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1,
        ),
        (
            &["-N", "3", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1,
        ),
        (
            &["missing.sh"],
            "sbatch: error: Unable to open file missing.sh\n",
            1,
        ),
        (
            &["-w", "n9", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Invalid node name specified\n",
            1,
        ),
        (
            &["-x", "n[1-2]", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1,
        ),
        (
            &["-d", "afterok:abc", "--wrap", "true"],
            "sbatch: error: Batch job submission failed: Job dependency problem\n",
            1,
        ),
        (
            &["--begin=garbage", "--wrap", "true"],
            "Invalid time specification (pos=0): garbage\n\
             sbatch: error: Invalid --begin specification\n",
            255,
        ),
        (
            &["-N", "2-1", "--wrap", "true"],
            "sbatch: error: Maximum node count 1 is less than minimum node count 2\n",
            255,
        ),
        (
            // Slurm's parse_int exits 1, not 255.
            &["--ntasks-per-node=0", "--wrap", "true"],
            "sbatch: error: Invalid numeric value \"0\" for --ntasks-per-node.\n",
            1,
        ),
        (
            &["--exclusive=foo", "--wrap", "true"],
            "sbatch: error: Invalid --exclusive specification\n",
            255,
        ),
    ];
    for (args, stderr, code) in cases {
        let o = c.run("sbatch", args);
        assert_eq!(
            (o.stderr.as_str(), o.code, o.stdout.as_str()),
            (*stderr, *code, ""),
            "sbatch {args:?}"
        );
    }
    // Nothing was queued and no id was used up.
    assert_eq!(c.sbatch(&["--wrap", "true"]), first + 1);
    let o = c.run("squeue", &["-j", "999999"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_load_jobs error: Invalid job id specified\n", 1)
    );
}

#[test]
fn test_only_says_when_and_where_a_job_would_start_and_submits_nothing() {
    let c = Cluster::start("testonly", SMALL);
    let o = c.run("sbatch", &["--test-only", "-N", "2", "--wrap", "sleep 1"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{}", o.stderr);
    // `sbatch: Job N to start at YYYY-MM-DDTHH:MM:SS using 2 processors on nodes ...`
    let (head, tail) = o.stderr.split_once(" to start at ").expect(&o.stderr);
    let id: u64 = head
        .strip_prefix("sbatch: Job ")
        .and_then(|n| n.parse().ok())
        .expect(&o.stderr);
    assert_eq!(tail.len(), "2026-01-01T00:00:00".len() + tail[19..].len());
    assert_eq!(
        &tail[19..],
        " using 2 processors on nodes n[1-2] in partition debug\n"
    );
    // Nothing was queued, and the id it named is the next submission's.
    assert_eq!(c.run("squeue", &["-h"]).stdout, "");
    assert_eq!(c.sbatch(&["--wrap", "true"]), id);
    // Checked as a submission is.
    let o = c.run("sbatch", &["--test-only", "-p", "nosuch", "--wrap", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code, o.stdout.as_str()),
        (
            "sbatch: error: invalid partition specified: nosuch\n\
             allocation failure: Invalid partition name specified\n",
            1,
            ""
        )
    );
    // srun's too: it says where, and runs nothing.
    let sbatch_job = c.sbatch(&["--wrap", "true"]);
    assert_eq!(c.wait_ended(sbatch_job), "COMPLETED");
    let queue = c.run("squeue", &["-h", "-t", "all"]).stdout;
    let marker = c.work().join("ran");
    let o = c.run(
        "srun",
        &["--test-only", "-N", "1", "touch", marker.to_str().unwrap()],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.starts_with("srun: Job "), "{}", o.stderr);
    assert!(
        o.stderr
            .ends_with(" using 1 processors on nodes n1 in partition debug\n"),
        "{}",
        o.stderr
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!marker.exists());
    assert_eq!(c.run("squeue", &["-h", "-t", "all"]).stdout, queue);
}

#[test]
fn every_pending_job_says_why_it_waits() {
    // Both nodes are taken by two jobs of 2 CPUs each for ten minutes. Behind them:
    // one job waiting for resources, one behind it by priority, one held, one waiting
    // on a dependency, one asked to begin in an hour. squeue lists pending jobs by
    // priority, held ones (priority 0) last, as Slurm's does.
    let c = Cluster::start("reasons", SMALL);
    let run1 = c.sbatch(&["-J", "run1", "-c", "2", "-t", "10", "--wrap", "sleep 600"]);
    let run2 = c.sbatch(&["-J", "run2", "-c", "2", "-t", "10", "--wrap", "sleep 600"]);
    let res = c.sbatch(&["-J", "pend_res", "-t", "3", "--wrap", "true"]);
    let pri = c.sbatch(&["-J", "pend_pri", "-t", "3", "--wrap", "true"]);
    let held = c.sbatch(&["-J", "held", "-H", "-t", "3", "--wrap", "true"]);
    let dep = c.sbatch(&[
        "-J",
        "dep",
        "-d",
        &format!("afterok:{run1}"),
        "--wrap",
        "true",
    ]);
    let begin = c.sbatch(&["-J", "begin", "--begin=now+1hour", "--wrap", "true"]);
    let expected = format!(
        "{res} pend_res PD (Resources)\n\
         {pri} pend_pri PD (Priority)\n\
         {dep} dep PD (Dependency)\n\
         {begin} begin PD (BeginTime)\n\
         {held} held PD (JobHeldUser)\n\
         {run1} run1 R n1\n\
         {run2} run2 R n2\n"
    );
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t %R"]).stdout;
    assert_eq!(c.settle(&expected, squeue), expected);
    let dependency = || {
        let show = c.run("scontrol", &["show", "job", &dep.to_string()]).stdout;
        show.split_whitespace()
            .find(|w| w.starts_with("Dependency="))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        dependency(),
        format!("Dependency=afterok:{run1}(unfulfilled)")
    );

    // Releasing the held job and cancelling the running ones lets the queue drain in
    // order; the dependency on a cancelled job can never be met.
    assert_eq!(c.run("scontrol", &["release", &held.to_string()]).code, 0);
    assert_eq!(
        c.run("scancel", &[&run1.to_string(), &run2.to_string()])
            .code,
        0
    );
    for job in [res, pri, held] {
        assert_eq!(c.wait_ended(job), "COMPLETED", "job {job}");
    }
    // sacct names who cancelled, as Slurm's does.
    let me = nix::unistd::getuid();
    assert_eq!(c.wait_ended(run1), format!("CANCELLED by {me}"));
    let expected =
        format!("{dep} dep PD (DependencyNeverSatisfied)\n{begin} begin PD (BeginTime)\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    assert_eq!(dependency(), format!("Dependency=afterok:{run1}(failed)"));
}

#[test]
fn srun_runs_tasks_across_nodes_with_labels() {
    let c = Cluster::start("srun", SMALL);
    let o = c.run(
        "srun",
        &[
            "-N",
            "2",
            "-n",
            "4",
            "-l",
            "bash",
            "-c",
            "echo $SLURM_PROCID/$SLURM_NTASKS on $SLURMD_NODENAME",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut lines: Vec<&str> = o.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "0: 0/4 on n1",
            "1: 1/4 on n1",
            "2: 2/4 on n2",
            "3: 3/4 on n2"
        ]
    );
    // -w and -x choose the nodes; n1 would be the first choice otherwise.
    let on = |args: &[&str]| -> String {
        let mut all = args.to_vec();
        all.extend(["bash", "-c", "echo $SLURM_PROCID on $SLURMD_NODENAME"]);
        let o = c.run("srun", &all);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let mut lines: Vec<&str> = o.stdout.lines().collect();
        lines.sort();
        lines.join(",")
    };
    assert_eq!(on(&["-w", "n2"]), "0 on n2");
    assert_eq!(on(&["-n", "2", "-x", "n1"]), "0 on n2,1 on n2");
    assert_eq!(on(&["-w", "n[1-2]"]), "0 on n1,1 on n2");
    // A failing task fails srun with its exit code, and the job is accounted FAILED.
    let o = c.run("srun", &["-n", "1", "bash", "-c", "exit 3"]);
    assert_eq!(o.code, 3);
    assert_eq!(
        o.stderr,
        "srun: error: n1: task 0: Exited with exit code 3\n"
    );
    // A task killed by a signal: 128 + the signal; for SIGTERM and SIGKILL srun also
    // says it ended the step (`srun: Force Terminated StepId=JOB.0`), as Slurm's does.
    let o = c.run("srun", &["-n", "1", "bash", "-c", "kill -USR1 $$"]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (138, "srun: error: n1: task 0: User defined signal 1\n")
    );
    let o = c.run("srun", &["-n", "1", "bash", "-c", "kill -TERM $$"]);
    let (error, forced) = o.stderr.split_once('\n').unwrap_or_default();
    assert_eq!(
        (o.code, error),
        (143, "srun: error: n1: task 0: Terminated"),
        "{}",
        o.stderr
    );
    let step = forced
        .strip_prefix("srun: Force Terminated StepId=")
        .and_then(|s| s.strip_suffix(".0\n"));
    assert!(
        step.is_some_and(|job| job.parse::<u64>().is_ok()),
        "{}",
        o.stderr
    );
}

#[test]
fn steps_are_named_hold_the_jobs_cpus_and_give_it_its_derived_exit_code() {
    let c = Cluster::start("steps", SMALL);
    let job = c.sbatch(&[
        "-J",
        "steps",
        "-n",
        "2",
        "-t",
        "5",
        "--wrap",
        "srun -n 1 true; srun -n 1 --exact true; srun -J named -n 1 bash -c 'exit 5'; exit 2",
    ]);
    assert_eq!(c.wait_ended(job), "FAILED");
    let o = c.run(
        "sacct",
        &[
            "-P",
            "-o",
            "JobID,JobName,AllocCPUS,ExitCode,DerivedExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    // A step holds the job's two CPUs unless --exact; `-J` names it; the job's
    // DerivedExitCode is its worst srun step's, not its batch script's.
    assert_eq!(
        o.stdout,
        format!(
            "JobID|JobName|AllocCPUS|ExitCode|DerivedExitCode\n\
             {job}|steps|2|2:0|5:0\n\
             {job}.batch|batch|2|2:0|\n\
             {job}.0|true|2|0:0|\n\
             {job}.1|true|1|0:0|\n\
             {job}.2|named|2|5:0|\n"
        )
    );
    // A step whose srun is killed (SIGKILL: it cannot say anything) ends when its
    // tasks do, as its agents tell the controller: the next step, which needs the
    // job's CPUs, starts then rather than waiting for the job's end.
    let job = c.sbatch(&[
        "-n",
        "2",
        "-t",
        "2",
        "--wrap",
        "srun -n 2 sleep 3 & sleep 1; kill -9 $!; srun -n 2 true && echo next step ran",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let out = std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    assert!(out.ends_with("next step ran\n"), "{out}");
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("{job}|COMPLETED|0:0\n{job}.batch|COMPLETED|0:0\n{job}.0|COMPLETED|0:0\n{job}.1|COMPLETED|0:0\n")
    );
    // Fewer tasks than the job's nodes, without -N: one node per task, and srun says so.
    let job = c.sbatch(&[
        "-N",
        "2",
        "-t",
        "5",
        "--wrap",
        "srun -n 1 bash -c 'echo on $SLURMD_NODENAME'",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap(),
        "srun: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1\non n1\n"
    );
}
