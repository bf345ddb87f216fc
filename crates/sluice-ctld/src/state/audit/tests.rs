//! Audit stories: the exact events the controller records for its decisions.

use std::path::Path;

use sluice_core::{Cluster, JobId, Node, NodeId, Partition};
use sluice_proto::audit::{AuditEvent, AuditWhat, NodeDevices};
use sluice_proto::types::{JobDescription, JobState};

use crate::config::ClusterConfig;
use crate::state::{Caller, Controller};

/// Two nodes of 2 CPUs in partition `debug`, Slurm's backfill (`bf_interval=30`,
/// `bf_resolution=60`).
fn conf() -> ClusterConfig {
    let mut c = ClusterConfig::this_machine();
    let mut cluster = Cluster::default();
    for name in ["node01", "node02"] {
        cluster.nodes.push(Node::new(name, 2, 1000));
    }
    let mut p = Partition::new("debug", vec![NodeId(0), NodeId(1)]);
    p.is_default = true;
    cluster.partitions.push(p);
    c.cluster = cluster;
    c.topology = vec![(1, 2, 1); 2];
    c.node_gres = vec![String::new(); 2];
    c.cluster_name = "test".into();
    c
}

fn alice() -> Caller {
    Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    }
}

/// Submits `tasks` one-CPU tasks for `time` seconds as alice, as job `id`.
fn submit(c: &mut Controller, id: u64, tasks: u32, time: i64, hold: bool, now: i64) {
    let d = JobDescription {
        name: format!("j{id}"),
        ntasks: Some(tasks),
        time_limit: Some(Some(time)),
        hold,
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        submit_host: "login".into(),
        ..Default::default()
    };
    let p = c
        .prepare(d, &alice(), "alice", "alice", now)
        .expect("accepted");
    let jobs = p.jobs(JobId(id));
    drop(c.inserted(&jobs, None, now));
    c.accept(jobs, now);
}

/// (time, job, what) of the events recorded since the last look.
fn events(c: &mut Controller) -> Vec<(i64, u64, AuditWhat)> {
    c.take_audit()
        .into_iter()
        .map(|e: AuditEvent| {
            assert_eq!(e.uid, Some(1000));
            (e.time, e.job_id, e.what)
        })
        .collect()
}

fn submitted() -> AuditWhat {
    AuditWhat::Submitted {
        user: Some("alice".into()),
        partition: "debug".into(),
        account: "alice".into(),
        qos: "normal".into(),
    }
}

fn reason(from: Option<&str>, to: &str) -> AuditWhat {
    AuditWhat::Reason {
        from: from.map(str::to_string),
        to: to.into(),
        limit: false,
    }
}

fn on(node: &str) -> NodeDevices {
    NodeDevices {
        node: node.into(),
        gpus: vec![],
        files: vec![],
    }
}

#[test]
fn a_backfilled_start_records_its_pass_and_rank_and_the_waiting_job_its_reason_and_plan() {
    // Job 1 (2 CPUs, 1000 s) fills node01. Job 2 needs both nodes and waits for it;
    // job 3 (2 CPUs, 300 s) fits on node02 before job 2's planned start, so the
    // backfill pass starts it, second in its partition's queue.
    let mut c = Controller::new(conf(), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, 1, 2, 1000, false, 0);
    c.schedule(0);
    let prio = |c: &Controller, id| c.job(JobId(id)).unwrap().priority;
    let p1 = prio(&c, 1);
    assert_eq!(
        events(&mut c),
        vec![
            (0, 1, submitted()),
            (
                0,
                1,
                AuditWhat::Started {
                    run: 0,
                    pass: "main".into(),
                    priority: p1,
                    rank: Some(1),
                    partition: "debug".into(),
                    reservation: None,
                    user: Some("alice".into()),
                    nodes: vec![on("node01")],
                }
            ),
        ]
    );
    submit(&mut c, 2, 4, 100, false, 1);
    submit(&mut c, 3, 2, 300, false, 1);
    let p3 = prio(&c, 3);
    c.schedule(1);
    assert_eq!(
        events(&mut c),
        vec![
            (1, 2, submitted()),
            (1, 3, submitted()),
            (
                1,
                3,
                AuditWhat::Started {
                    run: 0,
                    pass: "backfill".into(),
                    priority: p3,
                    rank: Some(2),
                    partition: "debug".into(),
                    reservation: None,
                    user: Some("alice".into()),
                    nodes: vec![on("node02")],
                }
            ),
            (1, 2, reason(None, "Resources")),
            // Job 1's end (1000) rounded up to bf_resolution.
            (
                1,
                2,
                AuditWhat::Planned {
                    from: None,
                    to: 1020
                }
            ),
        ]
    );
    // Later passes plan the same start: nothing new is recorded.
    c.schedule(10);
    c.schedule(31);
    assert_eq!(events(&mut c), vec![]);
    // Job 1 ends early: job 2's plan moves up to job 3's end (301, rounded up).
    c.job_ended(&ended(1, 200), 200);
    assert_eq!(
        events(&mut c),
        vec![
            (
                200,
                1,
                AuditWhat::Ended {
                    run: 0,
                    state: JobState::Completed,
                    exit_code: 0,
                    signal: 0,
                    released: vec![on("node01")],
                }
            ),
            (
                200,
                2,
                AuditWhat::Planned {
                    from: Some(1020),
                    to: 360
                }
            ),
        ]
    );
    c.job_ended(&ended(3, 290), 290);
    let p2 = prio(&c, 2);
    let what = events(&mut c)
        .into_iter()
        .map(|e| (e.1, e.2))
        .collect::<Vec<_>>();
    assert_eq!(
        what,
        vec![
            (
                3,
                AuditWhat::Ended {
                    run: 0,
                    state: JobState::Completed,
                    exit_code: 0,
                    signal: 0,
                    released: vec![on("node02")],
                }
            ),
            (
                2,
                AuditWhat::Started {
                    run: 0,
                    pass: "main".into(),
                    priority: p2,
                    rank: Some(1),
                    partition: "debug".into(),
                    reservation: None,
                    user: Some("alice".into()),
                    nodes: vec![on("node01"), on("node02")],
                }
            )
        ]
    );
}

fn ended(id: u64, now: i64) -> sluice_proto::types::JobEnded {
    sluice_proto::types::JobEnded {
        job_id: id,
        run: 0,
        node: "node01".into(),
        state: JobState::Completed,
        exit_code: 0,
        signal: 0,
        end: now,
        usage: None,
    }
}

#[test]
fn a_hold_and_a_release_record_who_and_the_reasons_they_bring() {
    let mut c = Controller::new(conf(), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, 1, 4, 1000, false, 0);
    submit(&mut c, 2, 2, 100, true, 0);
    c.schedule(0);
    let of_2: Vec<_> = events(&mut c).into_iter().filter(|e| e.1 == 2).collect();
    assert_eq!(
        of_2,
        vec![
            (0, 2, submitted()),
            (
                0,
                2,
                AuditWhat::Held {
                    by: Some(1000),
                    admin: false
                }
            ),
            (0, 2, reason(None, "JobHeldUser")),
        ]
    );
    let root = Caller {
        uid: 0,
        gid: 0,
        admin: true,
    };
    c.set_hold(JobId(2), None, true, &root, 5).unwrap();
    c.set_hold(JobId(2), None, false, &root, 7).unwrap();
    assert_eq!(
        events(&mut c),
        vec![
            (
                5,
                2,
                AuditWhat::Held {
                    by: Some(0),
                    admin: true
                }
            ),
            (5, 2, reason(Some("JobHeldUser"), "JobHeldAdmin")),
            (7, 2, AuditWhat::Released { by: Some(0) }),
            (7, 2, reason(Some("JobHeldAdmin"), "Resources")),
            (
                7,
                2,
                AuditWhat::Planned {
                    from: None,
                    to: 1020
                }
            ),
        ]
    );
    let req = sluice_proto::types::CancelRequest {
        jobs: vec![(2, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 9).unwrap();
    assert_eq!(
        events(&mut c),
        vec![(
            9,
            2,
            AuditWhat::Cancelled {
                by: Some(1000),
                state: JobState::Pending
            }
        )]
    );
}
