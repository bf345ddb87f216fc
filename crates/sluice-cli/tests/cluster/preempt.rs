//! Preemption on a live cluster: a low-tier job is signalled when a high-tier job
//! arrives, given its grace, requeued under its id, and runs again after the high job.

use crate::harness::Cluster;

/// One node of 2 CPUs in `low` (`PriorityTier=1`, `GraceTime=5`) and `high`
/// (`PriorityTier=10`), `preempt/partition_prio` with `REQUEUE`.
const TIERS: &str = "ClusterName=tiers
SlurmctldHost=localhost
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=low Nodes=n1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1 GraceTime=5
PartitionName=high Nodes=n1 MaxTime=1:00:00 State=UP PriorityTier=10
";

#[test]
fn a_low_job_is_signalled_requeued_and_completes_after_the_high_job() {
    let c = Cluster::start("preempt", TIERS);
    // The first run traps SIGTERM, says so and keeps going (it is killed at the end of
    // its grace); the second run finishes at once.
    let script = "#!/bin/bash\n\
                  echo start ${SLURM_RESTART_COUNT:-0}\n\
                  if [ -n \"$SLURM_RESTART_COUNT\" ]; then echo done $SLURM_RESTART_COUNT; exit 0; fi\n\
                  trap 'echo got SIGTERM' TERM\n\
                  for i in $(seq 600); do sleep 0.1; done\n";
    std::fs::write(c.work().join("low.sh"), script).unwrap();
    let low = c.sbatch(&["-p", "low", "-c", "2", "-o", "low.out", "low.sh"]);
    c.wait_for("the low job to run", || c.state(low) == "RUNNING");
    c.wait_for("the low job's script to start", || {
        std::fs::read_to_string(c.work().join("low.out")).is_ok_and(|o| o.contains("start 0"))
    });
    let high = c.sbatch(&["-p", "high", "-c", "2", "--wrap", "sleep 1"]);
    c.wait_for("the low job to get SIGTERM", || {
        std::fs::read_to_string(c.work().join("low.out")).is_ok_and(|o| o.contains("got SIGTERM"))
    });
    // During the 5 s grace the high job waits for resources, and scontrol shows when
    // the low job was preempted and the grace's end as its end.
    let o = c.run("squeue", &["-h", "-j", &high.to_string(), "-o", "%T %r"]);
    assert_eq!(o.stdout, "PENDING Resources\n");
    let o = c.run("scontrol", &["show", "job", &low.to_string()]);
    let field = |name: &str| {
        o.stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_string))
            .unwrap_or_else(|| panic!("no {name} in {}", o.stdout))
    };
    let secs = |t: String| -> i64 {
        let hms: Vec<i64> = t[11..].split(':').map(|x| x.parse().unwrap()).collect();
        hms[0] * 3600 + hms[1] * 60 + hms[2]
    };
    assert_eq!(field("PreemptEligibleTime"), field("StartTime"));
    assert_eq!(
        secs(field("EndTime")) - secs(field("PreemptTime")),
        5,
        "{}",
        o.stdout
    );
    assert_eq!(c.wait_ended(high), "COMPLETED");
    assert_eq!(c.wait_ended(low), "COMPLETED");
    let out = std::fs::read_to_string(c.work().join("low.out")).unwrap();
    // The first run: its signal, then (at the grace's end) the kill, with the line the
    // requeue writes; the second run from the start, restart count 1.
    assert!(out.starts_with("start 0\ngot SIGTERM\n"), "{out}");
    assert!(out.contains("DUE TO JOB REQUEUE ***\n"), "{out}");
    assert!(out.ends_with("start 1\ndone 1\n"), "{out}");
    // sacct -D keeps the preempted run.
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-X",
            "-D",
            "-o",
            "JobID,Partition,State",
            "-j",
            &low.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("{low}|low|PREEMPTED\n{low}|low|COMPLETED\n")
    );
    // Each run with its own batch step, as Slurm keeps them: the preempted run's was
    // cancelled with it; without -D, the last run's alone.
    let steps = |duplicates: bool| {
        let mut args = vec!["-n", "-P", "-o", "JobID,State,ExitCode"];
        if duplicates {
            args.push("-D");
        }
        let low = low.to_string();
        args.extend(["-j", &low]);
        c.run("sacct", &args).stdout
    };
    assert_eq!(
        steps(true),
        format!(
            "{low}|PREEMPTED|0:0\n{low}.batch|CANCELLED|0:15\n\
             {low}|COMPLETED|0:0\n{low}.batch|COMPLETED|0:0\n"
        )
    );
    assert_eq!(
        steps(false),
        format!("{low}|COMPLETED|0:0\n{low}.batch|COMPLETED|0:0\n")
    );
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-X",
            "-o",
            "JobID,State",
            "-j",
            &high.to_string(),
        ],
    );
    assert_eq!(o.stdout, format!("{high}|COMPLETED\n"));
}

/// [`TIERS`] with a 30 s grace: time for the controller to crash and come back while
/// the low job is still in it. The victim ignores SIGTERM: at its grace's end it is
/// killed after `KillWait`, and its preemptor starts once it is gone (as in Slurm), so
/// `KillWait` is short (Slurm's default, 30 s, would add half a minute).
const LONG_GRACE: &str = "ClusterName=tiers
SlurmctldHost=localhost
KillWait=2
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=low Nodes=n1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1 GraceTime=30
PartitionName=high Nodes=n1 MaxTime=1:00:00 State=UP PriorityTier=10
";

#[test]
fn a_preemption_under_way_survives_a_controller_crash() {
    let mut c = Cluster::start("preempt-crash", LONG_GRACE);
    // The first run traps SIGTERM and says so each time (it is killed at the end of its
    // grace); the second run finishes at once.
    let script = "#!/bin/bash\n\
                  echo start ${SLURM_RESTART_COUNT:-0}\n\
                  if [ -n \"$SLURM_RESTART_COUNT\" ]; then echo done $SLURM_RESTART_COUNT; exit 0; fi\n\
                  trap 'echo got SIGTERM' TERM\n\
                  for i in $(seq 1200); do sleep 0.1; done\n";
    std::fs::write(c.work().join("low.sh"), script).unwrap();
    let low = c.sbatch(&["-p", "low", "-c", "2", "-o", "low.out", "low.sh"]);
    c.wait_for("the low job's script to start", || {
        std::fs::read_to_string(c.work().join("low.out")).is_ok_and(|o| o.contains("start 0"))
    });
    let high = c.sbatch(&["-p", "high", "-c", "2", "--wrap", "sleep 1"]);
    c.wait_for("the low job to get SIGTERM", || {
        std::fs::read_to_string(c.work().join("low.out")).is_ok_and(|o| o.contains("got SIGTERM"))
    });
    let times = |c: &Cluster| -> Vec<String> {
        let o = c.run("scontrol", &["show", "job", &low.to_string()]);
        ["PreemptTime", "EndTime"]
            .iter()
            .map(|name| {
                o.stdout
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_string))
                    .unwrap_or_else(|| panic!("no {name} in {}", o.stdout))
            })
            .collect()
    };
    let before = times(&c);
    // The controller is killed in the low job's grace and comes back: the preemption
    // goes on with the same times, the high job still waiting for it.
    c.crash_and_restart_controller();
    c.wait_for("the controller to answer again", || {
        c.run("squeue", &[]).code == 0
    });
    assert_eq!(times(&c), before);
    let o = c.run("squeue", &["-h", "-j", &high.to_string(), "-o", "%T"]);
    assert_eq!(o.stdout, "PENDING\n");
    assert_eq!(c.wait_ended(high), "COMPLETED");
    assert_eq!(c.wait_ended(low), "COMPLETED");
    // Signalled once during its grace (not preempted a second time after the
    // restart), then killed at its end with the requeue's notice.
    let out = std::fs::read_to_string(c.work().join("low.out")).unwrap();
    let (grace, _) = out
        .split_once("DUE TO JOB REQUEUE ***\n")
        .unwrap_or_else(|| panic!("no requeue notice: {out}"));
    assert_eq!(grace.matches("got SIGTERM").count(), 1, "{out}");
    assert!(out.ends_with("start 1\ndone 1\n"), "{out}");
    // The audit trail tells the preemption once, from both sides.
    for (job, kind) in [(low, "preempted"), (high, "preempting")] {
        let o = c.run("sluice", &["audit", &job.to_string(), "--json"]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        let n = o
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<sluice_proto::audit::AuditEvent>(l).unwrap())
            .filter(|e| e.what.kind() == kind)
            .count();
        assert_eq!(n, 1, "{kind} events of {job}: {}", o.stdout);
    }
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-P",
            "-X",
            "-D",
            "-o",
            "JobID,State",
            "-j",
            &low.to_string(),
        ],
    );
    assert_eq!(o.stdout, format!("{low}|PREEMPTED\n{low}|COMPLETED\n"));
}
