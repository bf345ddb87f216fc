//! Batch scripts and environments are kept in the store, not in the controller's
//! memory, and read back when a job is launched: a held job and a held array, submitted
//! with an exported variable, run their scripts with it and with Slurm's variables,
//! after the controller was killed and restarted while they waited.

use crate::harness::Cluster;

const CONF: &str = "ClusterName=scripts
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

const SCRIPT: &str = "#!/bin/sh
#SBATCH -J kept
echo \"mark=$KEPT_MARK job=$SLURM_JOB_ID task=${SLURM_ARRAY_TASK_ID:-none} name=$SLURM_JOB_NAME\"
";

#[test]
fn held_jobs_run_their_script_and_environment_from_the_store_after_a_restart() {
    let mut c = Cluster::start_with("scripts", CONF, &["n1", "n2"]);
    std::fs::write(c.work().join("kept.sh"), SCRIPT).unwrap();
    let export = "--export=ALL,KEPT_MARK=from the submitter's shell";
    let single = c.sbatch(&["-H", export, "-o", "single.out", "kept.sh"]);
    let array = c.sbatch(&["-H", export, "--array=1-2", "-o", "task-%a.out", "kept.sh"]);
    // Not in memory any more, and the controller that took them is gone.
    c.crash_and_restart_controller();
    c.wait_for("the restarted controller", || {
        let o = c.run("squeue", &["-h"]);
        o.code == 0 && !o.stdout.is_empty()
    });
    for id in [single, array] {
        let o = c.run("scontrol", &["release", &id.to_string()]);
        assert_eq!(o.code, 0, "release {id}: {}", o.stderr);
    }
    assert_eq!(c.wait_ended(single), "COMPLETED");
    c.wait_for("the array to end", || {
        c.run(
            "sacct",
            &["-n", "-P", "-X", "-o", "State", "-j", &array.to_string()],
        )
        .stdout
        .lines()
        .filter(|l| *l == "COMPLETED")
        .count()
            == 2
    });
    let read = |f: &str| std::fs::read_to_string(c.work().join(f)).unwrap_or_default();
    assert_eq!(
        read("single.out"),
        format!("mark=from the submitter's shell job={single} task=none name=kept\n")
    );
    let tasks = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-X",
            "-o",
            "JobID,JobIDRaw",
            "-j",
            &array.to_string(),
        ],
    );
    for line in tasks.stdout.lines() {
        let (shown, raw) = line.split_once('|').expect("two fields");
        let task = shown.rsplit('_').next().unwrap();
        assert_eq!(
            read(&format!("task-{task}.out")),
            format!("mark=from the submitter's shell job={raw} task={task} name=kept\n"),
            "task {shown}"
        );
    }
}

#[test]
fn a_batch_script_gets_sbatchs_arguments_after_it() {
    let c = Cluster::start("scriptargs", CONF);
    std::fs::write(
        c.work().join("args.sh"),
        "#!/bin/sh\necho \"$# [$1] [$2] ${SLURM_SCRIPT_ARGS-unset}\"\n",
    )
    .unwrap();
    let job = c.sbatch(&["-o", "args.out", "args.sh", "two words", "-x"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join("args.out")).unwrap(),
        "2 [two words] [-x] unset\n"
    );
}
