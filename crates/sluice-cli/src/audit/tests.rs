use super::*;
use sluice_proto::audit::PreemptRule;
use sluice_proto::types::JobState;

fn names(uid: u32) -> String {
    match uid {
        0 => "root".into(),
        1000 => "alice".into(),
        other => other.to_string(),
    }
}

fn ev(time: i64, job: u64, what: AuditWhat) -> AuditEvent {
    AuditEvent {
        seq: 0,
        time,
        job_id: job,
        uid: Some(1000),
        what,
    }
}

fn gpus(node: &str, gpus: &[u32], files: &[&str]) -> NodeDevices {
    NodeDevices {
        node: node.into(),
        gpus: gpus.to_vec(),
        files: files.iter().map(|f| f.to_string()).collect(),
    }
}

fn rule() -> PreemptRule {
    PreemptRule {
        rule: "partition_prio".into(),
        winner: "partition high (PriorityTier=10)".into(),
        loser: "partition low (PriorityTier=1)".into(),
    }
}

fn started(pass: &str, rank: u32, nodes: Vec<NodeDevices>) -> AuditWhat {
    AuditWhat::Started {
        run: 0,
        pass: pass.into(),
        priority: 100,
        rank: Some(rank),
        partition: "low".into(),
        reservation: None,
        user: Some("alice".into()),
        nodes,
    }
}

#[test]
fn a_victims_story_reads_one_line_per_event() {
    let by = JobRef {
        job: Some(12),
        uid: Some(1000),
    };
    let g = vec![gpus("g1", &[0, 1], &["/dev/nvidia0", "/dev/nvidia1"])];
    let reply = AuditReply {
        events: vec![
            ev(
                100,
                11,
                AuditWhat::Submitted {
                    user: Some("alice".into()),
                    partition: "low".into(),
                    account: "physics".into(),
                    qos: "normal".into(),
                },
            ),
            ev(100, 11, started("main", 1, g.clone())),
            ev(
                110,
                11,
                AuditWhat::Preempted {
                    by: by.clone(),
                    rule: rule(),
                    mode: "REQUEUE".into(),
                    grace: 5,
                },
            ),
            ev(
                115,
                11,
                AuditWhat::Requeued {
                    run: 0,
                    ended_as: JobState::Preempted,
                    cause: RequeueCause::Preempted { by },
                    released: g.clone(),
                },
            ),
            ev(
                115,
                11,
                AuditWhat::Reason {
                    from: None,
                    to: "BeginTime".into(),
                    limit: false,
                },
            ),
            ev(
                116,
                11,
                AuditWhat::Reason {
                    from: Some("BeginTime".into()),
                    to: "QOSMaxGRESPerUser".into(),
                    limit: true,
                },
            ),
            ev(
                116,
                11,
                AuditWhat::Planned {
                    from: None,
                    to: 200,
                },
            ),
            ev(
                120,
                11,
                AuditWhat::Planned {
                    from: Some(200),
                    to: 180,
                },
            ),
            ev(
                130,
                11,
                AuditWhat::Ended {
                    run: 1,
                    state: JobState::Completed,
                    exit_code: 0,
                    signal: 0,
                    released: vec![gpus("g1", &[2], &[])],
                },
            ),
        ],
        hidden_events: 3,
        ..Default::default()
    };
    let t = timestamp;
    let expected = [
        format!("{} submitted  by alice to partition low, account physics, QOS normal", t(100)),
        format!("{} started    run 0 by the main pass, priority 100, rank 1 in partition low; on g1 (GPU 0-1: /dev/nvidia0,/dev/nvidia1)", t(100)),
        format!("{} preempted  for job 12 under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1); REQUEUE after a grace of 5 s", t(110)),
        format!("{} requeued   preempted for job 12; run 0 kept as PREEMPTED; released g1 (GPU 0-1: /dev/nvidia0,/dev/nvidia1)", t(115)),
        format!("{} pending    reason BeginTime", t(115)),
        format!("{} pending    reason QOSMaxGRESPerUser, a limit reached (was BeginTime)", t(116)),
        format!("{} planned    start {} in the backfill plan", t(116), t(200)),
        format!("{} planned    start {} in the backfill plan (was {})", t(120), t(180), t(200)),
        format!("{} ended      COMPLETED, exit code 0:0; released g1 (GPU 2)", t(130)),
        "(3 events of other users' jobs not shown)".to_string(),
    ];
    assert_eq!(
        story(&reply, false, &names).lines().collect::<Vec<_>>(),
        expected
    );
}

#[test]
fn the_other_side_and_other_actors_are_named_or_hidden() {
    let hidden = JobRef::default();
    let line = |what: AuditWhat| describe_event(&what, &names);
    assert_eq!(
        line(AuditWhat::Preempting {
            victims: vec![
                JobRef {
                    job: Some(11),
                    uid: Some(1000)
                },
                hidden.clone()
            ],
            rule: PreemptRule {
                rule: "cohort_reclaim".into(),
                winner: "account vision (cohort ml)".into(),
                loser: "account nlp (borrowing)".into(),
            },
        }),
        "job 11 and 1 job(s) of other users under cohort reclaim: account vision (cohort ml) over account nlp (borrowing)"
    );
    assert_eq!(
        line(AuditWhat::Held {
            by: Some(0),
            admin: true
        }),
        "by root (operator hold)"
    );
    assert_eq!(
        line(AuditWhat::Cancelled {
            by: Some(1000),
            state: JobState::Running
        }),
        "by alice while RUNNING"
    );
    assert_eq!(
        line(AuditWhat::Requeued {
            run: 2,
            ended_as: JobState::Requeued,
            cause: RequeueCause::NodeFail,
            released: vec![gpus("n1", &[], &[]), gpus("n2", &[], &[])],
        }),
        "its node failed; run 2 kept as REQUEUED; released n1, n2"
    );
    assert_eq!(
        line(AuditWhat::Requeued {
            run: 0,
            ended_as: JobState::NodeFail,
            cause: RequeueCause::Shutdown,
            released: vec![gpus("n1", &[], &[])],
        }),
        "the cluster was stopped; run 0 kept as NODE_FAIL; released n1"
    );
    assert_eq!(
        line(AuditWhat::Preempted {
            by: hidden,
            rule: rule(),
            mode: "CANCEL".into(),
            grace: 0
        }),
        "for a job of another user under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1); CANCEL after a grace of 0 s"
    );
}

#[test]
fn the_holds_table_says_who_held_a_gpu_when_and_why() {
    let hold = |job: u64, run: u32, start: i64, end: Option<i64>, pass: &str| AuditHold {
        job_id: Some(job),
        run,
        uid: Some(1000),
        node: "g1".into(),
        gpus: vec![1],
        start,
        end,
        cause: Some(ev(
            start,
            job,
            started(pass, 1, vec![gpus("g1", &[0, 1], &[])]),
        )),
    };
    let reply = AuditReply {
        holds: vec![
            hold(11, 0, 100, Some(115), "main"),
            hold(12, 0, 115, Some(130), "preempt"),
            hold(11, 1, 130, None, "main"),
        ],
        hidden_holds: 2,
        ..Default::default()
    };
    let t = timestamp;
    let expected = [
        format!(
            "JOBID      USER  NODE GPUS START{} END{} CAUSE",
            " ".repeat(14),
            " ".repeat(16)
        ),
        format!(
            "11         alice g1   1    {} {} main pass, priority 100, rank 1 in low",
            t(100),
            t(115)
        ),
        format!(
            "12         alice g1   1    {} {} preempt pass, priority 100, rank 1 in low",
            t(115),
            t(130)
        ),
        format!(
            "11 (run 1) alice g1   1    {} Unknown{} main pass, priority 100, rank 1 in low",
            t(130),
            " ".repeat(12)
        ),
        "(2 holds of other users' jobs not shown)".to_string(),
    ];
    assert_eq!(
        holds_table(&reply, &names).lines().collect::<Vec<_>>(),
        expected
    );
}

#[test]
fn under_private_users_other_users_are_another_user_and_their_holds_unnamed() {
    // The controller left out whose the job is and who acted (`PrivateData=users`).
    let line = |what: AuditWhat| describe_event(&what, &names);
    assert_eq!(
        line(AuditWhat::Submitted {
            user: None,
            partition: "high".into(),
            account: "physics".into(),
            qos: "normal".into(),
        }),
        "by another user to partition high, account physics, QOS normal"
    );
    assert_eq!(
        line(AuditWhat::Held {
            by: None,
            admin: false
        }),
        "by another user"
    );
    assert_eq!(line(AuditWhat::Released { by: None }), "by another user");
    assert_eq!(
        line(AuditWhat::Updated {
            by: None,
            changes: vec!["TimeLimit=10".into()]
        }),
        "by another user: TimeLimit=10"
    );
    assert_eq!(
        line(AuditWhat::Cancelled {
            by: None,
            state: JobState::Pending
        }),
        "by another user while PENDING"
    );
    assert_eq!(
        line(AuditWhat::Requeued {
            run: 0,
            ended_as: JobState::Requeued,
            cause: RequeueCause::Request { by: None },
            released: vec![],
        }),
        "by another user; run 0 kept as REQUEUED"
    );
    // A job of another user keeps its id (only `PrivateData=jobs` hides it).
    let anonymous = JobRef {
        job: Some(12),
        uid: None,
    };
    assert_eq!(
        line(AuditWhat::Preempted {
            by: anonymous.clone(),
            rule: rule(),
            mode: "CANCEL".into(),
            grace: 0
        }),
        "for job 12 under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1); CANCEL after a grace of 0 s"
    );
    assert_eq!(
        line(AuditWhat::Preempting {
            victims: vec![anonymous],
            rule: rule(),
        }),
        "job 12 under PreemptType=preempt/partition_prio: partition high (PriorityTier=10) over partition low (PriorityTier=1)"
    );
    // Their holds: the job, not whose.
    let mut start = started("preempt", 1, vec![gpus("g1", &[1], &[])]);
    if let AuditWhat::Started { user, .. } = &mut start {
        *user = None;
    }
    let reply = AuditReply {
        holds: vec![AuditHold {
            job_id: Some(12),
            run: 0,
            uid: None,
            node: "g1".into(),
            gpus: vec![1],
            start: 100,
            end: Some(115),
            cause: Some(AuditEvent {
                uid: None,
                ..ev(100, 12, start)
            }),
        }],
        ..Default::default()
    };
    assert_eq!(
        holds_table(&reply, &names).lines().collect::<Vec<_>>(),
        [
            format!(
                "JOBID USER NODE GPUS START{} END{} CAUSE",
                " ".repeat(14),
                " ".repeat(16)
            ),
            format!(
                "12    -    g1   1    {} {} preempt pass, priority 100, rank 1 in low",
                timestamp(100),
                timestamp(115)
            ),
        ]
    );
}
