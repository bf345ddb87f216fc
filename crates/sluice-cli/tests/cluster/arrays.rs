//! Job arrays: the throttle, the queue's compact line for the tasks still to run, each
//! task's files and variables, cancelling single tasks, and `MaxArraySize`.

use crate::harness::Cluster;
use crate::SMALL;

/// A command that waits until file `gate` exists in the work directory, then runs `then`.
fn gated(gate: &str, then: &str) -> String {
    format!("while [ ! -e {gate} ]; do sleep 0.1; done; {then}")
}

#[test]
fn an_array_runs_two_tasks_at_a_time_and_each_task_knows_its_index() {
    let c = Cluster::start("array", SMALL);
    let job = c.sbatch(&[
        "-J",
        "arr",
        "--array=0-5%2",
        "-t",
        "1",
        "-o",
        "arr-%A_%a.out",
        "--wrap",
        &gated(
            "go",
            "echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID count $SLURM_ARRAY_TASK_COUNT; \
             sleep 0.3",
        ),
    ]);
    // Four CPUs are free, but two tasks run; the rest wait on one line, throttle shown.
    let expected =
        format!("{job}_[2-5%2] arr PD (JobArrayTaskLimit)\n{job}_0 arr R n1\n{job}_1 arr R n1\n");
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t %R"]).stdout;
    assert_eq!(c.settle(&expected, squeue), expected);
    // -r: one line per task.
    let o = c.run("squeue", &["-h", "-r", "-o", "%i %t"]);
    assert_eq!(
        o.stdout,
        format!("{job}_2 PD\n{job}_3 PD\n{job}_4 PD\n{job}_5 PD\n{job}_0 R\n{job}_1 R\n")
    );

    // Let them go, watching that never more than two run at once.
    std::fs::write(c.work().join("go"), "").unwrap();
    let mut most = 0;
    c.wait_for("every task to end", || {
        let running = c
            .run("squeue", &["-h", "-r", "-t", "R", "-o", "%i"])
            .stdout
            .lines()
            .count();
        most = most.max(running);
        c.run("squeue", &["-h", "-o", "%i"]).stdout.is_empty()
    });
    assert_eq!(most, 2);
    let o = c.run(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "-o",
            "JobID,JobName,State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    );
    let expected: String = (0..6)
        .map(|t| format!("{job}_{t}|arr|COMPLETED|0:0\n"))
        .collect();
    assert_eq!(o.stdout, expected);
    for t in 0..6 {
        let out = std::fs::read_to_string(c.work().join(format!("arr-{job}_{t}.out")));
        assert_eq!(
            out.unwrap(),
            format!("task {t} of {job} count 6\n"),
            "task {t}"
        );
    }
}

#[test]
fn single_array_tasks_are_cancelled_and_oversized_arrays_refused() {
    let c = Cluster::start("arraycancel", &format!("MaxArraySize=8\n{SMALL}"));
    // Four tasks, all running (four CPUs), until the gate opens.
    let run = c.sbatch(&["-J", "run", "--array=1-4", "--wrap", &gated("go", "true")]);
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t"]).stdout;
    let expected = format!("{run}_1 run R\n{run}_2 run R\n{run}_3 run R\n{run}_4 run R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    // A held array waits as one line; cancelling two of its tasks narrows it.
    let held = c.sbatch(&["-J", "held", "-H", "--array=0-5", "--wrap", "true"]);
    let expected = format!("{held}_[0-5] held PD\n{expected}");
    assert_eq!(c.settle(&expected, squeue), expected);

    let o = c.run("scancel", &[&format!("{run}_3"), &format!("{held}_[2-3]")]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let expected =
        format!("{held}_[0-1,4-5] held PD\n{run}_1 run R\n{run}_2 run R\n{run}_4 run R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    std::fs::write(c.work().join("go"), "").unwrap();
    let me = nix::unistd::getuid();
    let acct = |job: u64| {
        c.run(
            "sacct",
            &[
                "-X",
                "-n",
                "-P",
                "-o",
                "JobID,State",
                "-j",
                &job.to_string(),
            ],
        )
        .stdout
    };
    let expected = format!(
        "{run}_1|COMPLETED\n{run}_2|COMPLETED\n{run}_3|CANCELLED by {me}\n{run}_4|COMPLETED\n"
    );
    assert_eq!(c.settle(&expected, || acct(run)), expected);
    // The whole rest of an array goes with its id, as one record (Slurm's meta
    // record). Tasks 2 and 3, cancelled on their own before they ever started, left
    // no record, as in Slurm.
    assert_eq!(c.run("scancel", &[&held.to_string()]).code, 0);
    let expected = format!("{held}_[0-1,4-5]|CANCELLED by {me}\n");
    assert_eq!(c.settle(&expected, || acct(held)), expected);

    // Indices must stay below MaxArraySize.
    let o = c.run("scontrol", &["show", "config"]);
    assert!(
        o.stdout.lines().any(|l| l == "MaxArraySize            = 8"),
        "{}",
        o.stdout
    );
    // A million indices out of bounds too: refused as the others, not lost in a
    // request too large to send.
    for spec in [
        "--array=0-8",
        "--array=8",
        "--array=1,9",
        "--array=0-999999",
    ] {
        let o = c.run("sbatch", &[spec, "--wrap", "true"]);
        assert_eq!(
            (o.stdout.as_str(), o.stderr.as_str(), o.code),
            (
                "",
                "sbatch: error: Batch job submission failed: Invalid job array specification\n",
                1
            ),
            "{spec}"
        );
    }
    let o = c.run("sbatch", &["--array=0-7", "-H", "--wrap", "true"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}
