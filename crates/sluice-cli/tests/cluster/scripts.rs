//! Batch scripts and environments are kept in the store, not in the controller's
//! memory, and read back when a job is launched: a held job and a held array, submitted
//! with an exported variable, run their scripts with it and with Slurm's variables,
//! after the controller was killed and restarted while they waited; `scontrol write
//! batch_script` reads them back for their owner. A script that is not UTF-8 is taken,
//! from a file or standard input, with a warning.

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
    // Read back for `scontrol write batch_script` too: an array's task gives its
    // array's script; another user is refused and gets no file.
    let task = format!("{array}_2");
    let o = c.run("scontrol", &["write", "batch_script", &task, "-"]);
    assert_eq!((o.code, o.stdout.as_str()), (0, SCRIPT), "{}", o.stderr);
    let o = c.run("scontrol", &["write", "batch_script", &single.to_string()]);
    assert_eq!(
        o.stdout,
        format!("batch script for job {single} written to slurm-{single}.sh\n")
    );
    let written = std::fs::read_to_string(c.work().join(format!("slurm-{single}.sh")));
    assert_eq!(written.ok().as_deref(), Some(SCRIPT));
    let o = c.run_as(65534, "scontrol", &["write", "batch_script", &task, "-"]);
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (1, "", "job script retrieval failed: Invalid user id\n")
    );
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

#[test]
fn a_script_that_is_not_utf8_is_submitted_from_a_file_or_standard_input_with_a_warning() {
    let c = Cluster::start("scriptbytes", CONF);
    // A Latin-1 comment, as an editor set to ISO-8859-1 writes it.
    let script: &[u8] = b"#!/bin/sh\n# Gr\xfc\xdfe aus dem Labor\necho ran\n";
    std::fs::write(c.work().join("latin1.sh"), script).unwrap();
    let warning = "sbatch: warning: batch script line 2 is not valid UTF-8: its invalid \
                   bytes are replaced by U+FFFD in the script the job runs\n";

    let from_file = c.run("sbatch", &["-o", "file.out", "latin1.sh"]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    assert_eq!(from_file.stderr, warning);

    // Through standard input, as `sbatch < latin1.sh` (once refused outright).
    let from_stdin = std::process::Command::new(c.dir.join("state/bin/sbatch"))
        .args(["-o", "stdin.out"])
        .current_dir(c.work())
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env_remove("SLURM_JOB_ID")
        .stdin(std::fs::File::open(c.work().join("latin1.sh")).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&from_stdin.stderr);
    assert_eq!(from_stdin.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, warning);

    for (submitted, out) in [
        (from_file.stdout, "file.out"),
        (
            String::from_utf8_lossy(&from_stdin.stdout).into_owned(),
            "stdin.out",
        ),
    ] {
        let job: u64 = submitted
            .trim()
            .strip_prefix("Submitted batch job ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no job id in {submitted:?}"));
        assert_eq!(c.wait_ended(job), "COMPLETED", "{out}");
        assert_eq!(
            std::fs::read_to_string(c.work().join(out)).unwrap(),
            "ran\n",
            "{out}"
        );
    }
}
