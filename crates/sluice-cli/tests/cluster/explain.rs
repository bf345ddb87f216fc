//! `sluice explain` on a live cluster, one story per reason family: the causes with
//! their exact numbers, nodes grouped, the queue place, the expected start (equal to
//! `squeue --start`'s, the running jobs it waits for named) and the suggestions that
//! really help.

use sluice_proto::explain::{Explanation, SuggestionSearch};
use sluice_proto::time::timestamp;

use crate::harness::Cluster;

/// Two nodes of 2 CPUs: `debug` (both, one hour) and `short` (n1, 30 minutes); a
/// backfill pass every second on a one-second grid, so that its plan is exact.
const CONF: &str = "ClusterName=explain
SlurmctldHost=localhost
SchedulerParameters=bf_interval=1,bf_resolution=1
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
PartitionName=short Nodes=n1 MaxTime=30 State=UP
";

fn explain(c: &Cluster, job: u64) -> Explanation {
    let o = c.run("sluice", &["explain", "--json", &job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

/// One field of `squeue --start` for `job` (`%S` the start, `%Y` the nodes), trimmed.
fn squeue_start(c: &Cluster, job: u64, field: &str) -> String {
    let o = c.run(
        "squeue",
        &["-h", "--start", "-o", field, "-j", &job.to_string()],
    );
    o.stdout.trim().to_string()
}

fn causes(e: &Explanation) -> Vec<(String, String)> {
    e.causes
        .iter()
        .map(|c| (c.reason.clone(), c.text.clone()))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

/// Two running jobs fill the nodes: n1 for ten minutes, n2 for twenty; their ids.
fn fill(c: &Cluster) -> (u64, u64) {
    let a = c.sbatch(&[
        "-w",
        "n1",
        "-c",
        "2",
        "-t",
        "10",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 600",
    ]);
    let b = c.sbatch(&[
        "-w",
        "n2",
        "-c",
        "2",
        "-t",
        "20",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 600",
    ]);
    c.wait_for("both to run", || {
        c.state(a) == "RUNNING" && c.state(b) == "RUNNING"
    });
    (a, b)
}

#[test]
fn resources_and_priority_say_what_they_wait_for_and_what_would_start_them_sooner() {
    let c = Cluster::start("explain", CONF);
    let (a, b) = fill(&c);
    // Both nodes for half an hour: it waits for both running jobs' time limits.
    let wide = c.sbatch(&["-N", "2", "-c", "2", "-t", "30", "--wrap", "true"]);
    // One node for a quarter of an hour, behind it.
    let small = c.sbatch(&["-c", "2", "-t", "15", "--wrap", "true"]);
    // Wait for a backfill pass to plan both.
    let start_of = |job: u64| {
        c.run(
            "squeue",
            &["-h", "--start", "-o", "%S", "-j", &job.to_string()],
        )
        .stdout
    };
    c.wait_for("the backfill plan", || {
        start_of(small).trim() != "N/A" && start_of(wide).trim() != "N/A"
    });

    let e = explain(&c, wide);
    assert_eq!(
        (e.state.as_str(), e.reason.as_str()),
        ("PENDING", "Resources")
    );
    assert_eq!(
        causes(&e),
        [pair(
            "Resources",
            "no set of nodes in partition debug can hold it now (see Resources)"
        )]
    );
    let r = e.resources.as_ref().unwrap();
    assert_eq!(r.never, None);
    assert_eq!(
        r.nodes
            .iter()
            .map(|n| (n.nodes.as_str(), n.text.as_str()))
            .collect::<Vec<_>>(),
        [("n[1-2]", "0 of 2 CPUs free, needs 2")]
    );
    let p = e.priority.as_ref().unwrap();
    assert_eq!((p.rank, p.of, p.ahead), (1, 2, 0));
    // Expected when job b reaches its time limit (20 minutes after it started), on both
    // nodes, as squeue --start says; it waits for a (10 minutes) and b.
    let x = e.expected.as_ref().unwrap();
    let b_start = c
        .run("squeue", &["-h", "-o", "%S", "-j", &b.to_string()])
        .stdout;
    let a_start = c
        .run("squeue", &["-h", "-o", "%S", "-j", &a.to_string()])
        .stdout;
    assert_eq!(timestamp(x.start - 1200), b_start.trim());
    assert_eq!((x.nodes.as_str(), x.plan_differs), ("n[1-2]", false));
    assert_eq!(start_of(wide).trim(), timestamp(x.start));
    let waits: Vec<(Option<u64>, i64)> = x.waits_for.iter().map(|w| (w.job_id, w.end)).collect();
    let a_end = x.waits_for[0].end;
    assert_eq!(timestamp(a_end - 600), a_start.trim());
    assert_eq!(waits, [(Some(a), a_end), (Some(b), x.start)]);
    // On one node it would start when a ends.
    let s: Vec<(&str, i64, &str)> = e
        .suggestions
        .iter()
        .map(|s| (s.option.as_str(), s.start, s.nodes.as_str()))
        .collect();
    assert_eq!(s, [("-N 1 -n 1", a_end, "n1")]);
    assert_eq!(e.suggestion_search, SuggestionSearch::Complete);

    // The job behind it: Priority, second of two; it starts after the wide job unless
    // it fits before it (ten minutes). In `short` it would not start sooner: n1 is kept
    // for the wide job there too, and a quarter of an hour from a's end would delay it.
    let e = explain(&c, small);
    assert_eq!(
        causes(&e),
        [pair(
            "Priority",
            "1 job ahead of it in partition debug comes first (it is 2 of 2)"
        )]
    );
    let p = e.priority.as_ref().unwrap();
    assert_eq!((p.rank, p.ahead, p.ahead_cpus, p.ahead_nodes), (2, 1, 4, 2));
    let x = e.expected.as_ref().unwrap();
    let wide_end = explain(&c, wide).expected.unwrap().start + 1800;
    assert_eq!((x.start, x.nodes.as_str()), (wide_end, "n1"));
    assert_eq!(start_of(small).trim(), timestamp(x.start));
    let s: Vec<(&str, i64, &str)> = e
        .suggestions
        .iter()
        .map(|s| (s.option.as_str(), s.start, s.nodes.as_str()))
        .collect();
    assert_eq!(s, [("--time=10", a_end, "n1")]);

    // The same as text.
    let o = c.run("sluice", &["explain", &small.to_string()]);
    let text: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(text[0], format!("Job {small}: PENDING (Priority)"));
    // The expected start (from the quick answer), then the suggestions (searched for
    // in a second request).
    let at = |prefix: &str| text.iter().position(|l| l.starts_with(prefix));
    let (expected, sooner) = (at("Expected start: "), at("What would start it sooner:"));
    assert!(expected.is_some() && expected < sooner, "{}", o.stdout);
    assert_eq!(sooner, Some(text.len() - 2), "one suggestion, last");
    assert!(
        text.contains(
            &format!(
                "  --time=10  starts {} on n1: a time limit of 00:10:00 or less (it asks 00:15:00)",
                timestamp(a_end)
            )
            .as_str()
        ),
        "{}",
        o.stdout
    );
    assert!(
        text.contains(&"Queue: 2 of 2 queued in its partition (held and dependent jobs are not queued); 1 job ahead of it asking 4 CPUs, 0 GPUs, 2 nodes together"),
        "{}",
        o.stdout
    );

    // A running job: its run, and its story from the audit trail.
    let o = c.run("sluice", &["explain", &a.to_string()]);
    let story = format!("  {} started    run 0 by the main pass", a_start.trim());
    assert!(
        o.stdout
            .starts_with(&format!("Job {a}: RUNNING\nIts run:\n")),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains(&format!("Its story (sluice audit {a}):\n"))
            && o.stdout.lines().any(|l| l.starts_with(&story)),
        "{}",
        o.stdout
    );
    let e = explain(&c, a);
    assert_eq!(
        e.history,
        [
            format!("started {} on n1 by the main pass", a_start.trim()),
            format!("reaches its time limit at {}", timestamp(a_end)),
        ]
    );
}

#[test]
fn holds_dependencies_begin_times_partition_limits_and_reservations_are_explained() {
    let c = Cluster::start("explain2", CONF);
    let (a, _) = fill(&c);
    let held = c.sbatch(&["-H", "--wrap", "true"]);
    let dep = c.sbatch(&["-d", &format!("afterok:{a}"), "--wrap", "true"]);
    let begin = c.sbatch(&["--begin", "now+2hours", "--wrap", "true"]);
    let long = c.sbatch(&["-p", "short", "-t", "40", "--wrap", "true"]);
    c.wait_for("the reasons", || {
        c.run("squeue", &["-h", "-o", "%r", "-j", &long.to_string()])
            .stdout
            == "PartitionTimeLimit\n"
    });

    let e = explain(&c, held);
    assert_eq!(
        causes(&e),
        [pair(
            "JobHeldUser",
            &format!("held by its owner; scontrol release {held} lets it queue")
        )]
    );
    assert_eq!((e.expected.is_none(), e.resources.is_none()), (true, true));

    let e = explain(&c, dep);
    assert_eq!(
        causes(&e),
        [pair(
            "Dependency",
            &format!(
                "afterok:{a}: it waits for job {a} to complete successfully; {a} RUNNING: not yet"
            )
        )]
    );

    let e = explain(&c, begin);
    assert_eq!(e.causes.len(), 1, "{:?}", e.causes);
    assert_eq!(e.causes[0].reason, "BeginTime");
    // Both nodes are free by then: it is expected at its begin time.
    let at = e.expected.as_ref().unwrap().start;
    assert!(
        e.causes[0].text.starts_with(&format!(
            "it may not start before {} (--begin), in ",
            timestamp(at)
        )),
        "{:?}",
        e.causes
    );
    assert!((7000..=7200).contains(&(at - e.now)), "{at} {}", e.now);

    let e = explain(&c, long);
    assert_eq!(
        causes(&e),
        [pair(
            "PartitionTimeLimit",
            "its time limit 00:40:00 exceeds partition short's MaxTime 00:30:00"
        )]
    );
    let r = e.resources.as_ref().unwrap();
    assert_eq!(
        r.never.as_deref(),
        Some("its time limit (00:40:00) exceeds the partition's MaxTime (00:30:00)")
    );
    assert_eq!(
        e.no_start.as_deref(),
        Some("it can never start: its time limit (00:40:00) exceeds the partition's MaxTime (00:30:00)")
    );
    // With 30 minutes it would start on n1 when job a reaches its ten-minute limit.
    let a_start = c
        .run("squeue", &["-h", "-o", "%S", "-j", &a.to_string()])
        .stdout;
    let first = &e.suggestions[0];
    assert_eq!(
        (first.option.as_str(), first.nodes.as_str()),
        ("--time=30", "n1")
    );
    assert_eq!(timestamp(first.start - 600), a_start.trim());

    // A reservation for another user on n2 from now on: a job for n2 waits for it.
    let o = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "reservationname=maint",
            "starttime=now",
            "duration=120",
            "nodes=n2",
            "users=nobody",
            "flags=ignore_jobs",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let wants_n2 = c.sbatch(&["-w", "n2", "-t", "5", "--wrap", "true"]);
    c.wait_for("its reason", || {
        !c.run("squeue", &["-h", "-o", "%r", "-j", &wants_n2.to_string()])
            .stdout
            .starts_with("None")
    });
    let e = explain(&c, wants_n2);
    let r = e.resources.as_ref().unwrap();
    assert!(
        r.nodes
            .iter()
            .any(|n| n.nodes == "n2" && n.text == "reserved for others (reservation maint)"),
        "{:?} {:?}",
        e.causes,
        r.nodes
    );
}

/// Accounting limits: an account may hold 2 CPUs.
const LIMITS: &str = "ClusterName=explain3
SlurmctldHost=localhost
AccountingStorageEnforce=associations,limits,qos
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn a_limit_is_explained_with_its_usage_and_the_users_own_share() {
    let c = Cluster::start("explain3", LIMITS);
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    for args in [
        vec!["-i", "add", "account", "physics", "grptres=cpu=2"],
        vec!["-i", "add", "user", me.as_str(), "account=physics"],
    ] {
        let o = c.run("sacctmgr", &args);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    let first = c.sbatch(&[
        "-A",
        "physics",
        "-c",
        "2",
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 300",
    ]);
    c.wait_for("it to run", || c.state(first) == "RUNNING");
    let second = c.sbatch(&["-A", "physics", "-c", "1", "--wrap", "true"]);
    c.wait_for("its reason", || {
        c.run("squeue", &["-h", "-o", "%r", "-j", &second.to_string()])
            .stdout
            == "AssocGrpCpuLimit\n"
    });
    let e = explain(&c, second);
    assert_eq!(
        causes(&e),
        [pair(
            "AssocGrpCpuLimit",
            "account physics allows 2 cpu; 2 in use (2 of it this user's own); this job adds 1"
        )]
    );
    // A job asking more than the limit alone waits for ever (as in Slurm): explain says
    // it can never start, not merely that it does not start within the horizon.
    let wide = c.sbatch(&["-A", "physics", "-N", "2", "-c", "2", "--wrap", "true"]);
    c.wait_for("its reason", || {
        c.run("squeue", &["-h", "-o", "%r", "-j", &wide.to_string()])
            .stdout
            == "AssocGrpCpuLimit\n"
    });
    assert_eq!(
        explain(&c, wide).no_start.as_deref(),
        Some(
            "it can never start: it alone adds 4 cpu, more than the limit of 2 (AssocGrpCpuLimit)"
        )
    );
}

/// Slurm's backfill defaults (a pass every 30 s on a one-minute grid), but a pass
/// plans one job only: Slurm's `squeue --start` would show `N/A` for the others.
const ONE_PLANNED: &str = "ClusterName=forecast
SlurmctldHost=localhost
SchedulerParameters=bf_max_job_test=1
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn squeue_start_shows_the_forecast_explain_gives_for_every_queued_job() {
    let c = Cluster::start("forecast", ONE_PLANNED);
    let (a, b) = fill(&c);
    // Three one-node jobs of a quarter of an hour queue behind a (n1, ten minutes) and
    // b (n2, twenty minutes): the first starts when a ends, the second when b ends, the
    // third when the first ends.
    let queued: Vec<u64> = (0..3)
        .map(|_| c.sbatch(&["-c", "2", "-t", "15", "-o", "/dev/null", "--wrap", "true"]))
        .collect();
    let shown = |job: u64| squeue_start(&c, job, "%S");
    c.wait_for("the forecast of the last job", || shown(queued[2]) != "N/A");
    let started = |job: u64| {
        let s = c
            .run("squeue", &["-h", "-o", "%S", "-j", &job.to_string()])
            .stdout;
        s.trim().to_string()
    };
    let (a_start, b_start) = (started(a), started(b));
    let expected: Vec<(i64, String)> = queued
        .iter()
        .map(|&job| {
            let x = explain(&c, job).expected.expect("an expected start");
            assert!(
                !x.plan_differs,
                "job {job}: squeue --start shows {:?}",
                x.planned
            );
            assert_eq!(shown(job), timestamp(x.start), "job {job}");
            let sched_nodes = c
                .run(
                    "squeue",
                    &["-h", "--start", "-o", "%Y", "-j", &job.to_string()],
                )
                .stdout;
            assert_eq!(sched_nodes.trim(), x.nodes, "job {job}: SCHEDNODES");
            (x.start, x.nodes)
        })
        .collect();
    let a_end = expected[0].0;
    assert_eq!(timestamp(a_end - 600), a_start);
    assert_eq!(timestamp(expected[1].0 - 1200), b_start);
    assert_eq!(
        expected,
        [
            (a_end, "n1".to_string()),
            (expected[1].0, "n2".to_string()),
            (a_end + 900, "n1".to_string())
        ]
    );
}

#[test]
fn without_a_forecast_squeue_start_shows_the_backfill_plan_and_explain_says_so() {
    // ForecastPasses=0 in sluice.conf: no forecast. A backfill pass every second plans
    // one job only, so the first queued job shows its plan and the second N/A, as in
    // Slurm; explain still gives the second one's start, and says what squeue shows.
    let conf = ONE_PLANNED.replace(
        "bf_max_job_test=1",
        "bf_max_job_test=1,bf_interval=1,bf_resolution=1",
    );
    let c = Cluster::start_files(
        "noforecast",
        &conf,
        &[("sluice.conf", "ForecastPasses=0\n")],
    );
    let (a, _) = fill(&c);
    let queued: Vec<u64> = (0..2)
        .map(|_| c.sbatch(&["-c", "2", "-t", "15", "-o", "/dev/null", "--wrap", "true"]))
        .collect();
    let shown = |job: u64| squeue_start(&c, job, "%S");
    c.wait_for("the backfill plan of the first", || {
        shown(queued[0]) != "N/A"
    });
    let first = explain(&c, queued[0]).expected.unwrap();
    assert_eq!(
        (shown(queued[0]), first.plan_differs),
        (timestamp(first.start), false)
    );
    let a_start = c
        .run("squeue", &["-h", "-o", "%S", "-j", &a.to_string()])
        .stdout;
    assert_eq!(timestamp(first.start - 600), a_start.trim());
    assert_eq!(shown(queued[1]), "N/A");
    let second = explain(&c, queued[1]).expected.unwrap();
    assert_eq!((second.planned, second.plan_differs), (None, true));
    let text = c.run("sluice", &["explain", &queued[1].to_string()]).stdout;
    assert!(
        text.contains("  squeue --start shows N/A: neither the controller's last forecast nor the backfill plan starts it yet"),
        "{text}"
    );
}
