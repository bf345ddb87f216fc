//! `scontrol suspend`/`resume`: an operator stops a running job's processes and lets
//! them continue; the job shows SUSPENDED meanwhile and keeps its node.

use crate::harness::Cluster;
use crate::SMALL;

#[test]
fn a_suspended_job_stops_counting_keeps_its_node_and_counts_on_after_resume() {
    let c = Cluster::start("suspend", SMALL);
    let out = c.work().join("count.out");
    let count = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
    };
    // A job counting five times a second on all of n1, and one waiting for n1.
    let job = c.sbatch(&[
        "-w",
        "n1",
        "-c",
        "2",
        "-o",
        out.to_str().unwrap(),
        "--wrap",
        "i=0; while true; do i=$((i+1)); echo $i; sleep 0.2; done",
    ]);
    c.wait_for("the job to count", || count() >= 3);
    let waiting = c.sbatch(&["-w", "n1", "-c", "2", "--wrap", "true"]);

    let o = c.run("scontrol", &["suspend", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let squeue = || c.run("squeue", &["-h", "-o", "%i %t %r"]).stdout;
    let expected = format!("{waiting} PD Resources\n{job} S None\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    // Stopped: its output stands still.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let stopped_at = count();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(count(), stopped_at, "the job counted while suspended");
    let o = c.run(
        "sacct",
        &["-n", "-P", "-o", "JobID,State", "-j", &job.to_string()],
    );
    assert_eq!(
        o.stdout,
        format!("{job}|SUSPENDED\n{job}.batch|SUSPENDED\n")
    );
    let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    assert!(show.contains("JobState=SUSPENDED Reason=None"), "{show}");
    assert!(!show.contains("SuspendTime=None"), "{show}");
    // Not by its owner if the owner is no operator, and not twice.
    let o = c.run_as(65534, "scontrol", &["resume", &job.to_string()]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("Access/permission denied for job {job}\n").as_str()
        )
    );

    let o = c.run("scontrol", &["resume", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let expected = format!("{waiting} PD Resources\n{job} R None\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    c.wait_for("the job to count on", || count() >= stopped_at + 3);
    let o = c.run("scontrol", &["resume", &job.to_string()]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (1, format!("Job is not suspended for job {job}\n").as_str())
    );
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "State,Suspended",
            "-j",
            &job.to_string(),
        ],
    );
    let (state, suspended) = o.stdout.trim().split_once('|').expect("two fields");
    assert_eq!(state, "RUNNING");
    assert!(
        ("00:00:02".."00:01:00").contains(&suspended),
        "suspended for {suspended}"
    );
    c.run("scancel", &[&job.to_string()]);
    assert_eq!(c.wait_ended(waiting), "COMPLETED");
}
