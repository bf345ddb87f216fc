//! The audit trail on a live cluster: `sluice audit` reconstructs a preemption story
//! from both sides, and says who held a GPU when and why.

use sluice_proto::audit::{AuditEvent, AuditHold, AuditWhat, JobRef};
use sluice_proto::time::timestamp;

use crate::harness::Cluster;

/// One node of 4 CPUs and 4 GPUs (device files from gres.conf) in `low`
/// (`PriorityTier=1`, `GraceTime=5`) and `high` (`PriorityTier=10`),
/// `preempt/partition_prio` with `REQUEUE`; `KillWait=2` (a victim that ignores SIGTERM
/// is killed 2 s after its grace).
const GPU_TIERS: &str = "ClusterName=audit
SlurmctldHost=localhost
GresTypes=gpu
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
KillWait=2
NodeName=g1 CPUs=4 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=low Nodes=g1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1 GraceTime=5
PartitionName=high Nodes=g1 MaxTime=1:00:00 State=UP PriorityTier=10
";

const GRES: &str = "NodeName=g1 Name=gpu File=/dev/nvidia[0-3]\n";

/// The retention, in sluice.conf (read next to slurm.conf).
const SITE: &str = "PurgeAuditAfter=30days\n";

/// A job's events, from `sluice audit JOB --json`.
fn events(c: &Cluster, job: u64) -> Vec<AuditEvent> {
    let o = c.run("sluice", &["audit", &job.to_string(), "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The time of a job's first event of `kind` (the nth, from 0).
fn time_of(events: &[AuditEvent], kind: &str, nth: usize) -> i64 {
    events
        .iter()
        .filter(|e| e.what.kind() == kind)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {kind} #{nth} in {events:?}"))
        .time
}

/// `sluice audit JOB`'s lines, without the reasons and plans a pending job goes
/// through (how many depends on when passes run), each as `(time, rest)`.
fn story(c: &Cluster, job: u64) -> Vec<(String, String)> {
    let o = c.run("sluice", &["audit", &job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .lines()
        .map(|l| {
            let (time, rest) = l.split_once(' ').expect("a time first");
            (time.to_string(), rest.to_string())
        })
        .filter(|(_, rest)| !rest.starts_with("pending ") && !rest.starts_with("planned "))
        .collect()
}

#[test]
fn sluice_audit_tells_a_preemption_story_and_who_held_a_gpu() {
    let c = Cluster::start_files(
        "audit",
        GPU_TIERS,
        &[("gres.conf", GRES), ("sluice.conf", SITE)],
    );
    // The first run traps SIGTERM and keeps going until it is killed at its grace's
    // end; the second finishes at once.
    let script = "#!/bin/bash\n\
                  if [ -n \"$SLURM_RESTART_COUNT\" ]; then exit 0; fi\n\
                  trap 'echo got SIGTERM' TERM\n\
                  echo start\n\
                  for i in $(seq 600); do sleep 0.1; done\n";
    std::fs::write(c.work().join("victim.sh"), script).unwrap();
    let victim = c.sbatch(&[
        "-p",
        "low",
        "-c",
        "4",
        "--gres=gpu:4",
        "-o",
        "v.out",
        "victim.sh",
    ]);
    c.wait_for("the victim's script to start", || {
        std::fs::read_to_string(c.work().join("v.out")).is_ok_and(|o| o.contains("start"))
    });
    let priority = |job: u64| {
        c.run("squeue", &["-h", "-j", &job.to_string(), "-o", "%Q"])
            .stdout
            .trim()
            .to_string()
    };
    let pv = priority(victim);
    let preemptor = c.sbatch(&["-p", "high", "-c", "1", "--gres=gpu:2", "--wrap", "sleep 1"]);
    let pp = priority(preemptor);
    assert_eq!(c.wait_ended(preemptor), "COMPLETED");
    assert_eq!(c.wait_ended(victim), "COMPLETED");

    // The victim's story: submitted, started on all four GPUs, preempted for the
    // high job under the partition rule with its 5 s grace, requeued, started again
    // once the high job was gone, completed.
    let files = "/dev/nvidia0,/dev/nvidia1,/dev/nvidia2,/dev/nvidia3";
    let v = story(&c, victim);
    let rest: Vec<&str> = v.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(
        rest,
        vec![
            format!("submitted  by {} to partition low, account {}, QOS normal", me(), me_account()),
            format!("started    run 0 by the main pass, priority {pv}, rank 1 in partition low; on g1 (GPU 0-3: {files})"),
            format!("preempted  for job {preemptor} under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1); REQUEUE after a grace of 5 s"),
            format!("requeued   preempted for job {preemptor}; run 0 kept as PREEMPTED; released g1 (GPU 0-3: {files})"),
            format!("started    run 1 by the main pass, priority {pv}, rank 1 in partition low; on g1 (GPU 0-3: {files})"),
            format!("ended      COMPLETED, exit code 0:0; released g1 (GPU 0-3: {files})"),
        ]
    );
    let ve = events(&c, victim);
    // The requeue comes at the grace's end (the script ignores SIGTERM), not before.
    assert!(time_of(&ve, "requeued", 0) - time_of(&ve, "preempted", 0) >= 5);
    let times: Vec<String> = ["submitted", "started", "preempted", "requeued"]
        .iter()
        .map(|k| timestamp(time_of(&ve, k, 0)))
        .chain([
            timestamp(time_of(&ve, "started", 1)),
            timestamp(time_of(&ve, "ended", 0)),
        ])
        .collect();
    assert_eq!(v.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(), times);

    // The preemptor's side: it chose the victim, and the preempt pass started it on
    // what the victim freed.
    let p = story(&c, preemptor);
    let rest: Vec<&str> = p.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(
        rest,
        vec![
            format!("submitted  by {} to partition high, account {}, QOS normal", me(), me_account()),
            format!("preempting job {victim} under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1)"),
            format!("started    run 0 by the preempt pass, priority {pp}, rank 1 in partition high; on g1 (GPU 0-1: /dev/nvidia0,/dev/nvidia1)"),
            "ended      COMPLETED, exit code 0:0; released g1 (GPU 0-1: /dev/nvidia0,/dev/nvidia1)".to_string(),
        ]
    );
    let pe = events(&c, preemptor);
    // It starts once the victim's processes are gone (the victim is COMPLETING from its
    // requeue until then), never before.
    assert!(time_of(&pe, "started", 0) >= time_of(&ve, "requeued", 0));
    assert!(matches!(
        &pe.iter().find(|e| e.what.kind() == "started").unwrap().what,
        AuditWhat::Started { pass, .. } if pass == "preempt"
    ));

    // Who held GPU 1 of g1, when and why: the victim's first run, the preemptor, the
    // victim's second run.
    let o = c.run(
        "sluice",
        &[
            "audit",
            "--node",
            "g1",
            "--gpu",
            "1",
            "--since",
            "2020-01-01",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let t = |events: &[AuditEvent], kind: &str, nth: usize| timestamp(time_of(events, kind, nth));
    let me = me();
    let v_cause = format!("main pass, priority {pv}, rank 1 in low");
    let p_cause = format!("preempt pass, priority {pp}, rank 1 in high");
    let cells: Vec<[String; 7]> = vec![
        ["JOBID", "USER", "NODE", "GPUS", "START", "END", "CAUSE"].map(str::to_string),
        [
            victim.to_string(),
            me.clone(),
            "g1".into(),
            "1".into(),
            t(&ve, "started", 0),
            t(&ve, "requeued", 0),
            v_cause.clone(),
        ],
        [
            preemptor.to_string(),
            me.clone(),
            "g1".into(),
            "1".into(),
            t(&pe, "started", 0),
            t(&pe, "ended", 0),
            p_cause,
        ],
        [
            format!("{victim} (run 1)"),
            me.clone(),
            "g1".into(),
            "1".into(),
            t(&ve, "started", 1),
            t(&ve, "ended", 0),
            v_cause,
        ],
    ];
    assert_eq!(o.stdout, table(&cells));
    // A GPU g1 does not have: an error, not an empty table.
    let o = c.run("sluice", &["audit", "--node", "g1", "--gpu", "4"]);
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (
            1,
            "",
            "sluice audit: error: Node g1 has no GPU 4 (it has 4: 0-3)\n"
        )
    );
}

/// Rows as `sluice audit --node` lays them out: every column but the last padded to
/// its widest cell, one space between.
fn table(rows: &[[String; 7]]) -> String {
    let mut width = [0usize; 7];
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i == 6 {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$} ", w = width[i]));
            }
        }
        out.push('\n');
    }
    out
}

/// The user running the tests (who submits the jobs).
fn me() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default()
}

/// Their default account without accounting enforcement: their name.
fn me_account() -> String {
    me()
}

/// One plain node.
const PLAIN: &str = "ClusterName=audit2
SlurmctldHost=localhost
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn audit_and_explain_take_array_tasks_and_refuse_what_is_not_a_job_or_a_node() {
    let c = Cluster::start("audit2", PLAIN);
    let array = c.sbatch(&["--array=0-1", "-o", "/dev/null", "--wrap", "true"]);
    let task = format!("{array}_1");
    c.wait_for("both tasks to end", || {
        let o = c.run(
            "sacct",
            &[
                "-n",
                "-X",
                "-P",
                "-o",
                "JobID,State",
                "-j",
                &array.to_string(),
            ],
        );
        o.stdout == format!("{array}_0|COMPLETED\n{array}_1|COMPLETED\n")
    });
    let raw = c.run("sacct", &["-n", "-X", "-P", "-o", "JobIDRaw", "-j", &task]);
    let raw: u64 = raw.stdout.trim().parse().expect("the task's own id");
    // `sluice audit 12_1` is the story of that task's record.
    let o = c.run("sluice", &["audit", &task, "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let jobs: Vec<u64> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<AuditEvent>(l).unwrap().job_id)
        .collect();
    assert!(!jobs.is_empty());
    assert_eq!(jobs, vec![raw; jobs.len()]);
    // The array's own id names its last task, and explain says so.
    let o = c.run("sluice", &["explain", &array.to_string()]);
    assert_eq!(
        o.stdout.lines().take(2).collect::<Vec<_>>(),
        [
            format!("(job {array} is array task {array}_1 as Slurm numbers them; `sluice explain {array}_N` for another task)"),
            format!("Job {array}_1: COMPLETED"),
        ]
    );
    // `scontrol update` is part of the story, with who changed what.
    let held = c.sbatch(&["--hold", "-t", "30", "--wrap", "true"]);
    let o = c.run(
        "scontrol",
        &[
            "update",
            &format!("JobId={held}"),
            "TimeLimit=10",
            "Comment=smaller",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let rest: Vec<String> = story(&c, held).into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        rest,
        [
            format!(
                "submitted  by {} to partition debug, account {}, QOS normal",
                me(),
                me_account()
            ),
            format!("held       by {}", me()),
            format!("updated    by {}: TimeLimit=10 Comment=smaller", me()),
        ]
    );
    // Steps, ranges, unknown tasks, jobs and nodes: one clear error each, exit code 1.
    for (args, message) in [
        (
            vec!["audit", "5.batch"],
            "sluice audit: error: Invalid job id specified: 5.batch",
        ),
        (
            vec!["audit", &format!("{array}_[0-1]")],
            &*format!("sluice audit: error: Invalid job id specified: {array}_[0-1]"),
        ),
        (
            vec!["audit", &format!("{array}_7")],
            &*format!("sluice audit: error: Invalid job id specified: {array}_7"),
        ),
        (
            vec!["audit", "--node", "nosuch"],
            "sluice audit: error: Invalid node name specified",
        ),
        (
            vec!["audit", "--node", "n1", "--gpu", "0"],
            "sluice audit: error: Node n1 has no GPU 0 (it has no GPUs)",
        ),
        (
            vec!["audit", "--node", "n1", "--gpu", "0", "--json"],
            "sluice audit: error: Node n1 has no GPU 0 (it has no GPUs)",
        ),
        (
            vec!["audit", "99999", "--json"],
            "sluice audit: error: No audit events for job 99999",
        ),
        (
            vec!["audit", "--since", "2026-01-02", "--until", "2026-01-01"],
            "sluice audit: error: --since must be earlier than --until",
        ),
        (
            vec!["explain", "5.batch"],
            "sluice explain: error: Invalid job id specified: 5.batch",
        ),
        (
            vec!["explain", "99999"],
            "sluice explain: error: Invalid job id specified: 99999",
        ),
    ] {
        let o = c.run("sluice", &args);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (1, "", &*format!("{message}\n")),
            "{args:?}"
        );
    }
}

/// One node of 2 GPUs in `low` (`PriorityTier=1`) and `high` (`PriorityTier=10`);
/// `preempt/partition_prio` in `CANCEL` mode without grace; `PrivateData=users` (not
/// `jobs`): users see each other's jobs, not whose they are.
const PRIVATE_USERS: &str = "ClusterName=auditpriv
SlurmctldHost=localhost
GresTypes=gpu
PrivateData=users
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
NodeName=g1 CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=low Nodes=g1 Default=YES MaxTime=1:00:00 State=UP PriorityTier=1
PartitionName=high Nodes=g1 MaxTime=1:00:00 State=UP PriorityTier=10
";

/// The second user of the privacy test.
const NOBODY: u32 = 65534;

/// JSON lines as `T`s.
fn parse<T: serde::de::DeserializeOwned>(out: &str) -> Vec<T> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A job's event as a user who may not know whose the job is sees it: without its
/// owner and who acted on it (the reader being neither).
fn anonymous(mut e: AuditEvent) -> AuditEvent {
    e.uid = None;
    match &mut e.what {
        AuditWhat::Submitted { user, .. } | AuditWhat::Started { user, .. } => *user = None,
        AuditWhat::Held { by, .. } | AuditWhat::Released { by } => *by = None,
        _ => {}
    }
    e
}

#[test]
fn under_private_data_users_a_user_sees_other_users_jobs_without_whose_they_are() {
    // A second user needs root to become it (as the memory test needs a cgroup).
    let nobody = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(NOBODY))
        .ok()
        .flatten()
        .map(|u| u.name);
    let (true, Some(nobody)) = (nix::unistd::geteuid().is_root(), nobody) else {
        eprintln!("skipped: needs root and a user {NOBODY} to run as a second user");
        return;
    };
    let c = Cluster::start_files(
        "auditpriv",
        PRIVATE_USERS,
        &[("gres.conf", "NodeName=g1 Name=gpu File=/dev/nvidia[0-1]\n")],
    );
    // Nobody's job holds both GPUs; root's, held at first, preempts it once released.
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "-p",
            "low",
            "-c",
            "2",
            "--gres=gpu:2",
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 60",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let victim: u64 = o
        .stdout
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("unexpected sbatch output {:?}", o.stdout));
    c.wait_for("nobody's job to run", || c.state(victim) == "RUNNING");
    let preemptor = c.sbatch(&[
        "-p",
        "high",
        "-c",
        "1",
        "--gres=gpu:1",
        "--hold",
        "-o",
        "/dev/null",
        "--wrap",
        "true",
    ]);
    let o = c.run("scontrol", &["release", &preemptor.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(c.wait_ended(preemptor), "COMPLETED");
    assert_eq!(c.wait_ended(victim), "PREEMPTED");

    let as_nobody = |args: &[&str]| {
        let o = c.run_as(NOBODY, "sluice", args);
        assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{args:?}");
        o.stdout
    };
    // Each line without its time, and without the reasons and plans a pending job
    // goes through.
    let rest = |out: String| -> Vec<String> {
        out.lines()
            .map(|l| l.split_once(' ').expect("a time first").1.to_string())
            .filter(|r| !r.starts_with("pending ") && !r.starts_with("planned "))
            .collect()
    };
    let (p, v) = (preemptor.to_string(), victim.to_string());
    // The priority each started with.
    let started_with = |job: u64| {
        let e = events(&c, job);
        match &e.iter().find(|e| e.what.kind() == "started").unwrap().what {
            AuditWhat::Started { priority, .. } => *priority,
            _ => unreachable!(),
        }
    };
    let (pp, pv) = (started_with(preemptor), started_with(victim));
    // Root's job as nobody sees it: every event, nobody named but the victim (its own).
    let story = |who: &str| {
        vec![
            format!("submitted  by {who} to partition high, account {}, QOS normal", me_account()),
            format!("held       by {who}"),
            format!("released   by {who}"),
            format!("preempting job {victim} under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1)"),
            format!("started    run 0 by the preempt pass, priority {pp}, rank 1 in partition high; on g1 (GPU 0: /dev/nvidia0)"),
            "ended      COMPLETED, exit code 0:0; released g1 (GPU 0: /dev/nvidia0)".to_string(),
        ]
    };
    assert_eq!(rest(as_nobody(&["audit", &p])), story("another user"));
    // Root, an operator, sees who.
    assert_eq!(rest(c.run("sluice", &["audit", &p]).stdout), story(&me()));
    // The JSON lines leave out the same: owner, user, who held and released.
    let recorded = events(&c, preemptor);
    let seen: Vec<AuditEvent> = parse(&as_nobody(&["audit", &p, "--json"]));
    assert_eq!(
        seen,
        recorded.into_iter().map(anonymous).collect::<Vec<_>>()
    );
    assert!(seen.iter().any(|e| matches!(&e.what,
        AuditWhat::Preempting { victims, .. } if victims == &[JobRef { job: Some(victim), uid: Some(NOBODY) }])));

    // Nobody's own job names nobody, and the preemptor without its owner.
    let files = "/dev/nvidia0,/dev/nvidia1";
    assert_eq!(
        rest(as_nobody(&["audit", &v])),
        [
            format!("submitted  by {nobody} to partition low, account {nobody}, QOS normal"),
            format!("started    run 0 by the main pass, priority {pv}, rank 1 in partition low; on g1 (GPU 0-1: {files})"),
            format!("preempted  for job {preemptor} under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1); CANCEL after a grace of 0 s"),
            format!("ended      PREEMPTED, exit code 0:15; released g1 (GPU 0-1: {files})"),
        ]
    );
    let mut expected = events(&c, victim);
    for e in &mut expected {
        if let AuditWhat::Preempted { by, .. } = &mut e.what {
            assert_eq!(by.uid, Some(0));
            by.uid = None;
        }
    }
    assert_eq!(
        parse::<AuditEvent>(&as_nobody(&["audit", &v, "--json"])),
        expected
    );

    // Who held GPU 0: nobody's job by name, root's without.
    let ve = events(&c, victim);
    let pe = events(&c, preemptor);
    let t = |events: &[AuditEvent], kind: &str| timestamp(time_of(events, kind, 0));
    let holds = |root_is: &str| {
        table(&[
            ["JOBID", "USER", "NODE", "GPUS", "START", "END", "CAUSE"].map(str::to_string),
            [
                v.clone(),
                nobody.clone(),
                "g1".into(),
                "0".into(),
                t(&ve, "started"),
                t(&ve, "ended"),
                format!("main pass, priority {pv}, rank 1 in low"),
            ],
            [
                p.clone(),
                root_is.into(),
                "g1".into(),
                "0".into(),
                t(&pe, "started"),
                t(&pe, "ended"),
                format!("preempt pass, priority {pp}, rank 1 in high"),
            ],
        ])
    };
    let gpu0 = [
        "audit",
        "--node",
        "g1",
        "--gpu",
        "0",
        "--since",
        "2020-01-01",
    ];
    assert_eq!(as_nobody(&gpu0), holds("-"));
    assert_eq!(c.run("sluice", &gpu0).stdout, holds(&me()));
    let node = ["audit", "--node", "g1", "--since", "2020-01-01", "--json"];
    let mut expected: Vec<AuditHold> = parse(&c.run("sluice", &node).stdout);
    for h in expected.iter_mut().filter(|h| h.job_id == Some(preemptor)) {
        h.uid = None;
        h.cause = h.cause.take().map(anonymous);
    }
    assert_eq!(expected.len(), 2);
    assert_eq!(parse::<AuditHold>(&as_nobody(&node)), expected);
}
