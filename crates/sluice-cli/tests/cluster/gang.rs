//! Preemption by suspension on a live cluster (`PreemptMode=SUSPEND,GANG`): a low-tier
//! job's processes are really stopped while a high-tier job runs on its CPUs, and go
//! on when it has ended; operators (`AdminLevel=Operator`) may suspend and resume.

use crate::harness::Cluster;
use crate::SMALL;

/// One node of 2 CPUs in `low` (`PriorityTier=1`) and `high` (`PriorityTier=10`),
/// `preempt/partition_prio` with `SUSPEND,GANG`.
const TIERS: &str = "ClusterName=gang
SlurmctldHost=localhost
PreemptType=preempt/partition_prio
PreemptMode=SUSPEND,GANG
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=low Nodes=n1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1
PartitionName=high Nodes=n1 MaxTime=1:00:00 State=UP PriorityTier=10
";

/// The state letter of process `pid` (`/proc/PID/stat`'s third field), and whether its
/// cgroup is frozen (cgroup v2 `cgroup.events`).
fn stopped(pid: &str) -> (String, bool) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest[..1].to_string())
        .unwrap_or_default();
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let frozen = cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .and_then(|path| {
            std::fs::read_to_string(format!("/sys/fs/cgroup{path}/cgroup.events")).ok()
        })
        .is_some_and(|events| events.lines().any(|l| l == "frozen 1"));
    (state, frozen)
}

#[test]
fn a_high_job_suspends_the_low_job_whose_processes_stop_and_go_on_after_it() {
    let c = Cluster::start("gang", TIERS);
    let out = c.work().join("count.out");
    let pid_file = c.work().join("low.pid");
    let count = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let low = c.sbatch(&[
        "-p",
        "low",
        "-c",
        "2",
        "-o",
        out.to_str().unwrap(),
        "--wrap",
        &format!(
            "echo $$ > {}; i=0; while true; do i=$((i+1)); echo $i; sleep 0.2; done",
            pid_file.display()
        ),
    ]);
    c.wait_for("the low job to count", || count() >= 3);
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();

    // The high job needs both CPUs: the low job is suspended and the high job runs at
    // once beside it.
    let high = c.sbatch(&["-p", "high", "-c", "2", "--wrap", "sleep 4"]);
    let squeue = || c.run("squeue", &["-h", "-o", "%i %P %t"]).stdout;
    let expected = format!("{high} high R\n{low} low S\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    c.wait_for("the low job's shell to be stopped", || {
        let (state, frozen) = stopped(&pid);
        state == "T" || frozen
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let stopped_at = count();
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(count(), stopped_at, "the low job counted while suspended");
    let show = c.run("scontrol", &["show", "job", &low.to_string()]).stdout;
    assert!(show.contains("JobState=SUSPENDED"), "{show}");
    // Its resources are the high job's: no operator resumes it meanwhile.
    let o = c.run("scontrol", &["resume", &low.to_string()]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("Requested operation is presently disabled for job {low}\n").as_str()
        )
    );

    // The high job ends: the low job goes on where it stood.
    assert_eq!(c.wait_ended(high), "COMPLETED");
    let expected = format!("{low} low R\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    c.wait_for("the low job to count on", || count() >= stopped_at + 3);
    assert_ne!(stopped(&pid).0, "T");
    let o = c.run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "State,Suspended",
            "-j",
            &low.to_string(),
        ],
    );
    let (state, suspended) = o.stdout.trim().split_once('|').expect("two fields");
    assert_eq!(state, "RUNNING");
    assert!(
        ("00:00:03".."00:01:00").contains(&suspended),
        "suspended for {suspended}"
    );
    c.run("scancel", &[&low.to_string()]);
    assert!(c.wait_ended(low).starts_with("CANCELLED"));
}

#[test]
fn an_operator_by_admin_level_suspends_and_resumes_others_jobs() {
    let c = Cluster::start("operators", SMALL);
    let job = c.sbatch(&["-w", "n1", "--wrap", "sleep 300"]);
    c.wait_for("the job to run", || c.state(job) == "RUNNING");
    let id = job.to_string();
    // nobody (65534) is no operator yet.
    let o = c.run_as(65534, "scontrol", &["suspend", &id]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            1,
            format!("Access/permission denied for job {job}\n").as_str()
        )
    );
    let o = c.run("sacctmgr", &["-i", "add", "user", "nobody", "account=root"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = c.run(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            "nobody",
            "set",
            "adminlevel=Operator",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = c.run_as(65534, "scontrol", &["suspend", &id]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(c.state(job), "SUSPENDED");
    let o = c.run_as(65534, "scontrol", &["resume", &id]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(c.state(job), "RUNNING");
    c.run("scancel", &[&id]);
}

#[test]
fn a_step_asked_for_while_its_job_is_suspended_waits_and_counts_only_its_own_suspension() {
    let c = Cluster::start("stepsusp", SMALL);
    let job = c.sbatch(&["-w", "n1", "-c", "1", "--wrap", "sleep 300"]);
    c.wait_for("the job to run", || c.state(job) == "RUNNING");
    let id = job.to_string();
    let o = c.run("scontrol", &["suspend", &id]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    std::thread::sleep(std::time::Duration::from_secs(2));
    // srun inside the suspended job (as from its batch script, by SLURM_JOB_ID): no step yet, srun says so once and waits, as
    // Slurm's srun does.
    let out = c.work().join("step.out");
    let state = c.dir.join("state");
    let bin = state.join("bin");
    let mut srun = std::process::Command::new(bin.join("srun"))
        .args([
            "--overlap",
            "-n1",
            "bash",
            "-c",
            &format!(
                "while true; do echo x >> {}; sleep 0.2; done",
                out.display()
            ),
        ])
        .current_dir(c.work())
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("SLUICE_STATE_DIR", &state)
        .env_remove("SLURM_CONF")
        .env("SLURM_JOB_ID", &id)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!out.exists(), "a step ran while its job was suspended");
    let o = c.run("scontrol", &["resume", &id]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    c.wait_for("the step to run", || {
        if let Ok(Some(status)) = srun.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(srun.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("srun ended ({status}): {err}");
        }
        std::fs::read_to_string(&out).is_ok_and(|o| o.lines().count() >= 3)
    });
    // The job stood suspended about 4 s; the step, started after, none of it.
    let o = c.run("sacct", &["-n", "-P", "-o", "JobID,Suspended", "-j", &id]);
    let suspended = |row: &str| {
        o.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{row}|")))
            .unwrap_or_else(|| panic!("no {row} in {}", o.stdout))
            .to_string()
    };
    assert!(suspended(&id).as_str() >= "00:00:03", "{}", o.stdout);
    assert_eq!(suspended(&format!("{id}.0")), "00:00:00", "{}", o.stdout);
    c.run("scancel", &[&id]);
    let _ = srun.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(srun.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.starts_with(&format!(
            "srun: Job {job} step creation temporarily disabled, retrying (Requested operation is presently disabled)\nsrun: Step created for job {job}\n"
        )),
        "{err}"
    );
}

/// One node of 2 CPUs in `shared` (`OverSubscribe=FORCE:2`) under `PreemptMode=GANG`,
/// slices of 5 s.
const SLICED: &str = "ClusterName=slices
SlurmctldHost=localhost
PreemptMode=GANG
SchedulerTimeSlice=5
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=shared Nodes=n1 Default=YES MaxTime=1:00:00 State=UP OverSubscribe=FORCE:2
";

#[test]
fn two_jobs_on_the_same_cpus_take_turns_their_processes_stopped_and_continued() {
    let c = Cluster::start("slices", SLICED);
    let counter = |name: &str| {
        let out = c.work().join(format!("{name}.out"));
        let id = c.sbatch(&[
            "-c",
            "2",
            "-o",
            out.to_str().unwrap(),
            "--wrap",
            "i=0; while true; do i=$((i+1)); echo $i; sleep 0.2; done",
        ]);
        (id, out)
    };
    let count = |out: &std::path::Path| {
        std::fs::read_to_string(out)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let (a, a_out) = counter("a");
    c.wait_for("job a to count", || count(&a_out) >= 3);
    // Job b is allocated the same CPUs: it starts suspended, a runs on.
    let (b, b_out) = counter("b");
    let squeue = || {
        [a, b]
            .iter()
            .map(|id| {
                c.run("squeue", &["-h", "-j", &id.to_string(), "-o", "%i %t %N"])
                    .stdout
            })
            .collect::<String>()
    };
    let expected = format!("{a} R n1\n{b} S n1\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    // Within two slices b gets the node and a is stopped.
    let expected = format!("{a} S n1\n{b} R n1\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    c.wait_for("job b to count", || count(&b_out) >= 3);
    let a_at = count(&a_out);
    std::thread::sleep(std::time::Duration::from_secs(1));
    let state = |id: u64| {
        c.run("squeue", &["-h", "-j", &id.to_string(), "-o", "%t"])
            .stdout
    };
    if state(a) == "S\n" {
        assert_eq!(count(&a_out), a_at, "job a counted while suspended");
    }
    // And back.
    let expected = format!("{a} R n1\n{b} S n1\n");
    assert_eq!(c.settle(&expected, squeue), expected);
    let show = c.run("scontrol", &["show", "job", &b.to_string()]).stdout;
    assert!(show.contains("JobState=SUSPENDED"), "{show}");
    assert!(!show.contains("SuspendTime=None"), "{show}");
    c.run("scancel", &[&a.to_string(), &b.to_string()]);
    assert!(c.wait_ended(a).starts_with("CANCELLED"));
    assert!(c.wait_ended(b).starts_with("CANCELLED"));
    let o = c.run(
        "sacct",
        &["-n", "-X", "-P", "-o", "Suspended", "-j", &b.to_string()],
    );
    assert_ne!(o.stdout.trim(), "00:00:00", "job b stood suspended");
}
