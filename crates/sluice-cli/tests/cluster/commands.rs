//! `scontrol`: jobs as they wait, run and end; nodes, partitions and host lists; hold,
//! release and requeue. Expected output is real Slurm 22.05's (`shared/slurm-samples`).

use crate::harness::{self, Cluster};
use crate::SMALL;

/// The test's user and group as Slurm prints them: `name(id)`.
pub fn me() -> (String, String) {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or(uid.to_string(), |u| u.name);
    let group = nix::unistd::Group::from_gid(gid)
        .ok()
        .flatten()
        .map_or(gid.to_string(), |g| g.name);
    (format!("{user}({uid})"), format!("{group}({gid})"))
}

/// The test's user name.
pub fn user() -> String {
    let (u, _) = me();
    u.split('(').next().unwrap_or_default().to_string()
}

/// The `Key=Value` words of `scontrol show` output for `keys`, in that order, joined by
/// spaces (`Key=?` for a key that is missing).
pub fn pick(out: &str, keys: &[&str]) -> String {
    keys.iter()
        .map(|k| {
            out.split_whitespace()
                .find(|w| w.split_once('=').is_some_and(|(key, _)| key == *k))
                .map_or(format!("{k}=?"), str::to_string)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

const JOB_KEYS: &[&str] = &[
    "JobId",
    "JobName",
    "UserId",
    "GroupId",
    "JobState",
    "Reason",
    "ExitCode",
    "TimeLimit",
    "NodeList",
    "NumNodes",
    "NumCPUs",
    "NumTasks",
    "WorkDir",
    "StdOut",
];

pub fn show_job(c: &Cluster, job: u64) -> String {
    let o = c.run("scontrol", &["show", "job", &job.to_string()]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (0, ""),
        "scontrol show job {job}"
    );
    o.stdout
}

#[test]
fn scontrol_show_job_follows_jobs_from_pending_through_running_to_their_end() {
    let c = Cluster::start("showjob", SMALL);
    let (user, group) = me();
    let w = c.work().display().to_string();
    // A job holds both nodes whole; another waits behind it for resources.
    let big = c.sbatch(&[
        "-J",
        "big",
        "-N",
        "2",
        "--ntasks-per-node=1",
        "-c",
        "2",
        "--mem-per-cpu=100M",
        "-t",
        "5",
        "--wrap",
        "sleep 600",
    ]);
    let wait = c.sbatch(&[
        "-J",
        "wait",
        "-t",
        "0:30",
        "-o",
        "wait-%j.out",
        "--wrap",
        "echo done",
    ]);
    let expected = format!("{wait} PD (Resources)\n{big} R n[1-2]\n");
    let squeue = || c.run("squeue", &["-h", "-o", "%i %t %R"]).stdout;
    assert_eq!(c.settle(&expected, squeue), expected);

    let out = show_job(&c, wait);
    assert_eq!(
        pick(&out, JOB_KEYS),
        format!(
            "JobId={wait} JobName=wait UserId={user} GroupId={group} JobState=PENDING \
             Reason=Resources ExitCode=0:0 TimeLimit=00:00:30 NodeList= NumNodes=1 NumCPUs=1 \
             NumTasks=1 WorkDir={w} StdOut={w}/wait-{wait}.out"
        )
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("JobId={wait} JobName=wait"));
    assert!(lines.contains(&"   JobState=PENDING Reason=Resources Dependency=(null)"));
    assert!(lines.contains(&"   NodeList="), "{out}");
    assert_eq!(
        pick(&out, &["RunTime", "Restarts"]),
        "RunTime=00:00:00 Restarts=0"
    );

    let out = show_job(&c, big);
    assert_eq!(
        pick(&out, JOB_KEYS),
        format!(
            "JobId={big} JobName=big UserId={user} GroupId={group} JobState=RUNNING \
             Reason=None ExitCode=0:0 TimeLimit=00:05:00 NodeList=n[1-2] NumNodes=2 NumCPUs=4 \
             NumTasks=2 WorkDir={w} StdOut={w}/slurm-{big}.out"
        )
    );
    assert_eq!(
        pick(&out, &["BatchHost", "CPUs/Task"]),
        "BatchHost=n1 CPUs/Task=2"
    );
    let run = pick(&out, &["RunTime"]);
    assert!(run.starts_with("RunTime=00:00:0"), "{run}");
    // Line for line the keys real Slurm prints for a running job, in its order.
    let keys = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('$') && !l.starts_with("---"))
            .map(|l| {
                l.split_whitespace()
                    .map(|w| w.split('=').next().unwrap_or_default().to_string())
                    .collect()
            })
            .collect()
    };
    let sample = harness::reference_sample("scontrol_show_job_running.txt");
    assert_eq!(keys(&out), keys(&sample), "{out}");

    // Cancelling the big job lets the waiting one run, and end.
    assert_eq!(c.run("scancel", &[&big.to_string()]).code, 0);
    assert_eq!(c.wait_ended(wait), "COMPLETED");
    let out = show_job(&c, wait);
    assert_eq!(
        pick(&out, JOB_KEYS),
        format!(
            "JobId={wait} JobName=wait UserId={user} GroupId={group} JobState=COMPLETED \
             Reason=None ExitCode=0:0 TimeLimit=00:00:30 NodeList=n1 NumNodes=1 NumCPUs=1 \
             NumTasks=1 WorkDir={w} StdOut={w}/wait-{wait}.out"
        )
    );
    let run = pick(&out, &["RunTime"]);
    assert!(
        run == "RunTime=00:00:00" || run == "RunTime=00:00:01",
        "{run}"
    );
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("wait-{wait}.out"))).unwrap(),
        "done\n"
    );
    c.wait_ended(big);
    assert_eq!(
        pick(
            &show_job(&c, big),
            &["JobState", "Reason", "ExitCode", "NodeList"]
        ),
        "JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=n[1-2]"
    );

    // A failing job says why it ended; one killed at its limit, likewise.
    let fails = c.sbatch(&["-J", "fails", "--wrap", "exit 3"]);
    assert_eq!(c.wait_ended(fails), "FAILED");
    assert_eq!(
        pick(&show_job(&c, fails), &["JobState", "Reason", "ExitCode"]),
        "JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0"
    );
    let late = c.sbatch(&["-J", "late", "-t", "0:01", "--wrap", "sleep 60"]);
    assert_eq!(c.wait_ended(late), "TIMEOUT");
    assert_eq!(
        pick(
            &show_job(&c, late),
            &["JobState", "Reason", "ExitCode", "TimeLimit"]
        ),
        "JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 TimeLimit=00:00:01"
    );
    // A script killed by a signal failed, as Slurm 22.05 says, to launch.
    let killed = c.sbatch(&["-J", "killed", "--wrap", "kill -9 $$"]);
    assert_eq!(c.wait_ended(killed), "FAILED");
    assert_eq!(
        pick(&show_job(&c, killed), &["JobState", "Reason", "ExitCode"]),
        "JobState=FAILED Reason=JobLaunchFailure ExitCode=0:9"
    );
    // squeue gives the same reasons, and shows a failed or timed-out job's where a
    // finished job's nodes go.
    let ended = format!("{wait},{fails},{late},{killed}");
    let q = c.run(
        "squeue",
        &["-h", "-t", "all", "-j", &ended, "-o", "%j %T %r %R"],
    );
    assert_eq!(q.code, 0, "{}", q.stderr);
    let mut lines: Vec<&str> = q.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "fails FAILED NonZeroExitCode (NonZeroExitCode)",
            "killed FAILED JobLaunchFailure (JobLaunchFailure)",
            "late TIMEOUT TimeLimit (TimeLimit)",
            "wait COMPLETED None n1",
        ]
    );

    // -o: one line per job, the same pairs.
    let o = c.run("scontrol", &["-o", "show", "job", &wait.to_string()]);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout.lines().count(), 1, "{}", o.stdout);
    assert!(
        o.stdout.starts_with(&format!(
            "JobId={wait} JobName=wait UserId={user} GroupId={group} "
        )),
        "{}",
        o.stdout
    );
    assert_eq!(
        pick(&o.stdout, JOB_KEYS),
        pick(&show_job(&c, wait), JOB_KEYS)
    );

    // An id that never was.
    let o = c.run("scontrol", &["show", "job", "999999"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", "slurm_load_jobs error: Invalid job id specified\n", 1)
    );
}

#[test]
fn scontrol_shows_nodes_partitions_and_host_lists() {
    let c = Cluster::start("shownode", SMALL);
    let node = |name: &str| {
        let o = c.run("scontrol", &["show", "node", name]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        pick(
            &o.stdout,
            &[
                "NodeName",
                "CPUAlloc",
                "CPUTot",
                "RealMemory",
                "State",
                "Partitions",
            ],
        )
    };
    assert_eq!(
        node("n1"),
        "NodeName=n1 CPUAlloc=0 CPUTot=2 RealMemory=1000 State=IDLE Partitions=debug"
    );
    // One CPU of n1 taken: MIXED; both: ALLOCATED.
    let one = c.sbatch(&["-w", "n1", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("n1 mixed", || node("n1").contains("State=MIXED"));
    assert_eq!(
        node("n1"),
        "NodeName=n1 CPUAlloc=1 CPUTot=2 RealMemory=1000 State=MIXED Partitions=debug"
    );
    let two = c.sbatch(&["-w", "n1", "--mem=512M", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("n1 allocated", || node("n1").contains("State=ALLOCATED"));
    let o = c.run("scontrol", &["show", "node", "n1"]);
    assert_eq!(pick(&o.stdout, &["AllocTRES"]), "AllocTRES=cpu=2,mem=512M");
    assert_eq!(
        node("n1"),
        "NodeName=n1 CPUAlloc=2 CPUTot=2 RealMemory=1000 State=ALLOCATED Partitions=debug"
    );
    assert_eq!(
        node("n2"),
        "NodeName=n2 CPUAlloc=0 CPUTot=2 RealMemory=1000 State=IDLE Partitions=debug"
    );
    // Without a name, every node, n1 first.
    let all = c.run("scontrol", &["show", "node"]).stdout;
    let names: Vec<&str> = all
        .lines()
        .filter_map(|l| l.strip_prefix("NodeName="))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(names, ["n1", "n2"]);
    let o = c.run("scontrol", &["show", "node", "n9"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("Node n9 not found\n", "", 1)
    );
    assert_eq!(
        c.run("scancel", &[&one.to_string(), &two.to_string()]).code,
        0
    );

    let o = c.run("scontrol", &["show", "partition"]);
    assert_eq!(o.code, 0);
    assert!(
        o.stdout.starts_with("PartitionName=debug\n"),
        "{}",
        o.stdout
    );
    assert_eq!(
        pick(
            &o.stdout,
            &[
                "PartitionName",
                "Default",
                "MaxTime",
                "Nodes",
                "State",
                "TotalCPUs",
                "TotalNodes"
            ]
        ),
        "PartitionName=debug Default=YES MaxTime=01:00:00 Nodes=n[1-2] State=UP TotalCPUs=4 \
         TotalNodes=2"
    );
    let o = c.run("scontrol", &["-o", "show", "partition", "debug"]);
    assert_eq!(o.stdout.lines().count(), 1);
    assert!(o.stdout.starts_with("PartitionName=debug AllowGroups=ALL "));
    let o = c.run("scontrol", &["show", "partition", "nosuch"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", "Partition nosuch not found\n", 1)
    );

    // Host lists, both ways.
    let o = c.run("scontrol", &["show", "hostnames", "n[1-3]"]);
    assert_eq!((o.stdout.as_str(), o.code), ("n1\nn2\nn3\n", 0));
    let o = c.run("scontrol", &["show", "hostlist", "n1,n2,n3"]);
    assert_eq!((o.stdout.as_str(), o.code), ("n[1-3]\n", 0));
    // Inside a job, the job's nodes.
    let job = c.sbatch(&[
        "-N",
        "2",
        "-o",
        "hosts.out",
        "--wrap",
        "scontrol show hostnames",
    ]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join("hosts.out")).unwrap(),
        "n1\nn2\n"
    );
}

#[test]
fn a_held_job_waits_until_released_and_unknown_ids_are_refused() {
    let c = Cluster::start("hold", SMALL);
    // Both nodes busy, so the job is still pending when it is held.
    let busy = c.occupy("wrap");
    let job = c.sbatch(&["-J", "later", "-t", "1", "--wrap", "echo ran"]);
    let squeue = || c.run("squeue", &["-h", "-o", "%i %j %t %R"]).stdout;
    let expected = format!("{job} later PD (Resources)\n{busy} wrap R n[1-2]\n");
    assert_eq!(c.settle(&expected, squeue), expected);

    // An operator's hold is an admin hold; uhold makes it the user's.
    let o = c.run("scontrol", &["hold", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let expected = format!("{job} later PD (JobHeldAdmin)\n{busy} wrap R n[1-2]\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    let o = c.run("scontrol", &["uhold", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let expected = format!("{job} later PD (JobHeldUser)\n{busy} wrap R n[1-2]\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    assert_eq!(
        pick(&show_job(&c, job), &["JobState", "Reason", "EligibleTime"]),
        "JobState=PENDING Reason=JobHeldUser EligibleTime=Unknown"
    );
    // Held, it stays behind even once the nodes are free.
    assert_eq!(c.run("scancel", &[&busy.to_string()]).code, 0);
    c.wait_ended(busy);
    let expected = format!("{job} later PD (JobHeldUser)\n");
    assert_eq!(c.settle(&expected, squeue), expected);

    let o = c.run("scontrol", &["release", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(c.wait_ended(job), "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap(),
        "ran\n"
    );

    // Holding what has ended, or what never was, fails as Slurm's does.
    let o = c.run("scontrol", &["hold", &job.to_string()]);
    assert_eq!(
        (o.stderr, o.code),
        (
            format!(
                "Job has already finished for job {job}\n\
                 slurm_suspend error: Job has already finished\n"
            ),
            1
        )
    );
    let o = c.run("scontrol", &["release", "999999"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "Invalid job id specified for job 999999\n\
             slurm_suspend error: Invalid job id specified\n",
            1
        )
    );
    let o = c.run("scontrol", &["requeue", "999999"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("Invalid job id specified for job 999999\n", 1)
    );
}

#[test]
fn a_job_requeuing_itself_sees_scontrol_requeue_succeed() {
    // submitit's checkpoint handler runs `scontrol requeue $SLURM_JOB_ID` from inside
    // the job and fails the job if it does not exit 0. The requeue sends the job's
    // processes SIGTERM, scontrol among them: scontrol must still report its success.
    let c = Cluster::start("selfrequeue", SMALL);
    let script = "#!/bin/bash\n\
                  trap 'echo TERM' TERM\n\
                  if [ -z \"$SLURM_RESTART_COUNT\" ]; then\n\
                  scontrol requeue $SLURM_JOB_ID\n\
                  echo requeue exit $?\n\
                  exit 0\n\
                  fi\n\
                  echo run $SLURM_RESTART_COUNT\n";
    std::fs::write(c.work().join("self.sh"), script).unwrap();
    let job = c.sbatch(&["-t", "5", "self.sh"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let out = std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    assert!(out.contains("requeue exit 0\n"), "{out}");
    assert!(out.ends_with("run 1\n"), "{out}");
}

#[test]
fn scontrol_requeue_is_not_ended_by_the_sigterm_its_requeue_sends() {
    // Deterministically, the race the test above can lose: a controller that takes
    // the request, and SIGTERM (what the requeue sends the job) before the answer.
    use std::io::{Read, Write};
    let dir = std::env::temp_dir().join(format!("sluice-t-{}-requeue-term", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(dir.join("ctld.sock")).unwrap();
    let scontrol = dir.join("scontrol");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sluice"), &scontrol).unwrap();
    let mut child = std::process::Command::new(&scontrol)
        .args(["requeue", "42"])
        .env("SLUICE_STATE_DIR", &dir)
        .env_remove("SLURM_CONF")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&request).contains("/v1/jobs/42/requeue") {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "no request");
        request.extend_from_slice(&buf[..n]);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "scontrol died of SIGTERM"
    );
    conn.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stderr).as_ref()),
        (Some(0), "")
    );
}

#[test]
fn a_requeued_job_runs_again_under_its_id_and_appends_its_output() {
    let c = Cluster::start("requeue", SMALL);
    let script = "#!/bin/bash\n\
                  echo run ${SLURM_RESTART_COUNT:-0} of $SLURM_JOB_ID\n\
                  sleep 600\n";
    std::fs::write(c.work().join("again.sh"), script).unwrap();
    let job = c.sbatch(&["-J", "again", "-t", "5", "again.sh"]);
    let out = c.work().join(format!("slurm-{job}.out"));
    let first = format!("run 0 of {job}\n");
    c.wait_for("the first run's line", || {
        std::fs::read_to_string(&out).unwrap_or_default() == first
    });

    let o = c.run("scontrol", &["requeue", &job.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    // The second run appends below the first, and below slurmstepd's notice of the
    // first run's end.
    c.wait_for("the second run's line", || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("run 1 of")
    });
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], format!("run 0 of {job}"));
    assert!(
        lines[1].starts_with(&format!(
            "slurmstepd-n1: error: *** JOB {job} ON n1 CANCELLED AT "
        )) && lines[1].ends_with(" DUE TO JOB REQUEUE ***"),
        "{text}"
    );
    assert_eq!(lines[2], format!("run 1 of {job}"));
    assert_eq!(c.state(job), "RUNNING");
    assert_eq!(
        pick(&show_job(&c, job), &["JobId", "JobState", "Restarts"]),
        format!("JobId={job} JobState=RUNNING Restarts=1")
    );

    // Cancelled now, it is accounted as one job (its latest run), and scontrol still
    // counts the restart (Slurm 22.05's sacct has no Restarts field).
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    let me = nix::unistd::getuid();
    assert_eq!(c.wait_ended(job), format!("CANCELLED by {me}"));
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
        format!("{job}|CANCELLED by {me}|0:0\n{job}.batch|CANCELLED|0:15\n")
    );
    // With --duplicates, the run the requeue ended comes first.
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
            &job.to_string(),
        ],
    );
    assert_eq!(
        o.stdout,
        format!("{job}|REQUEUED\n{job}|CANCELLED by {me}\n")
    );
    assert_eq!(
        pick(&show_job(&c, job), &["JobState", "Restarts"]),
        "JobState=CANCELLED Restarts=1"
    );

    // A job that may not be requeued is refused.
    let once = c.sbatch(&["--no-requeue", "-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("it runs", || c.state(once) == "RUNNING");
    let o = c.run("scontrol", &["requeue", &once.to_string()]);
    assert_eq!(
        (o.stderr, o.code),
        (
            format!("Requested operation is presently disabled for job {once}\n"),
            1
        )
    );
    assert_eq!(c.state(once), "RUNNING");
}
