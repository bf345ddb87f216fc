//! Time limits: a job past its limit ends TIMEOUT with slurmstepd's notice in its output,
//! and `--signal` warns it beforehand (the batch shell with `B:`, the steps without).

use crate::harness::Cluster;
use crate::SMALL;

/// True for `slurmstepd-<node>: error: *** JOB <job> ON <node> CANCELLED AT <time><why>
/// ***` with a time shaped `2026-11-29T20:04:20` (slurmstepd names its node).
pub fn is_notice(line: &str, job: u64, node: &str, why: &str) -> bool {
    let Some(rest) = line.strip_prefix(&format!(
        "slurmstepd-{node}: error: *** JOB {job} ON {node} CANCELLED AT "
    )) else {
        return false;
    };
    let Some(time) = rest.strip_suffix(&format!("{why} ***")) else {
        return false;
    };
    time.len() == 19
        && time.char_indices().all(|(i, ch)| match i {
            4 | 7 => ch == '-',
            10 => ch == 'T',
            13 | 16 => ch == ':',
            _ => ch.is_ascii_digit(),
        })
}

#[test]
fn a_job_past_its_time_limit_ends_timeout_with_slurmstepds_notice() {
    let c = Cluster::start("timeout", SMALL);
    let job = c.sbatch(&["-J", "late", "-t", "0:02", "--wrap", "echo start; sleep 60"]);
    assert_eq!(c.wait_ended(job), "TIMEOUT");
    let out = std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0], "start");
    assert!(
        is_notice(lines[1], job, "n1", " DUE TO TIME LIMIT"),
        "{out}"
    );

    // As Slurm accounts it: the job TIMEOUT 0:0, its batch step cancelled by SIGTERM.
    let o = c.run(
        "sacct",
        &[
            "-P",
            "-o",
            "JobID,JobName,State,ExitCode,Timelimit",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "JobID|JobName|State|ExitCode|Timelimit\n\
             {job}|late|TIMEOUT|0:0|00:00:02\n\
             {job}.batch|batch|CANCELLED|0:15|\n"
        )
    );
    let o = c.run(
        "sacct",
        &["-X", "-n", "-P", "-o", "Elapsed", "-j", &job.to_string()],
    );
    assert!(
        o.stdout == "00:00:02\n" || o.stdout == "00:00:03\n",
        "{}",
        o.stdout
    );
}

#[test]
fn signal_before_the_limit_reaches_the_batch_shell_with_b_and_only_the_steps_without() {
    let c = Cluster::start("signal", SMALL);
    // B: the batch shell gets USR1 seven seconds before its ten are up, and ends there.
    std::fs::write(
        c.work().join("batch.sh"),
        "#!/bin/bash\n\
         trap 'echo batch got USR1; exit 0' USR1\n\
         echo start\n\
         while true; do sleep 0.1; done\n",
    )
    .unwrap();
    let shell = c.sbatch(&["-t", "0:10", "--signal=B:USR1@7", "batch.sh"]);
    // Without B:, the job's steps get it and the batch shell does not.
    std::fs::write(
        c.work().join("steps.sh"),
        "#!/bin/bash\n\
         trap 'echo batch got USR1' USR1\n\
         srun bash -c 'trap \"echo step got USR1; exit 0\" USR1; \
         sleep 600 & wait'\n\
         echo step ended\n",
    )
    .unwrap();
    let steps = c.sbatch(&["-t", "0:10", "--signal=USR1@7", "steps.sh"]);
    assert_eq!(c.wait_ended(shell), "COMPLETED");
    assert_eq!(c.wait_ended(steps), "COMPLETED");
    let out =
        |job: u64| std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    assert_eq!(out(shell), "start\nbatch got USR1\n");
    assert_eq!(out(steps), "step got USR1\nstep ended\n");
    // Both ended when warned, three seconds in: well before their limit.
    for job in [shell, steps] {
        let o = c.run(
            "sacct",
            &["-X", "-n", "-P", "-o", "Elapsed", "-j", &job.to_string()],
        );
        assert!(
            ["00:00:02\n", "00:00:03\n", "00:00:04\n"].contains(&o.stdout.as_str()),
            "job {job}: {}",
            o.stdout
        );
    }
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-o",
            "JobID,State,ExitCode",
            "-j",
            &format!("{shell},{steps}"),
        ],
    );
    assert_eq!(
        o.stdout,
        format!(
            "{shell}|COMPLETED|0:0\n{shell}.batch|COMPLETED|0:0\n\
             {steps}|COMPLETED|0:0\n{steps}.batch|COMPLETED|0:0\n{steps}.0|COMPLETED|0:0\n"
        )
    );
}

#[test]
fn an_srun_step_ended_by_the_time_limit_is_cancelled_by_sigterm() {
    let c = Cluster::start("timeoutstep", SMALL);
    let job = c.sbatch(&["-J", "late", "-t", "0:03", "--wrap", "srun sleep 60"]);
    assert_eq!(c.wait_ended(job), "TIMEOUT");
    // As real Slurm 22.05 records it (compat scenario 153): the step CANCELLED with
    // the signal that ended it, not FAILED.
    let step = || {
        c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-o",
                "JobID,State,ExitCode",
                "-j",
                &format!("{job}.0"),
            ],
        )
        .stdout
    };
    let expected = format!("{job}.0|CANCELLED|0:15\n");
    assert_eq!(c.settle(&expected, step), expected);
}
