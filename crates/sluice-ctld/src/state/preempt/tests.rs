//! Preemption stories in the controller, with the exact effects: one 4-CPU node in
//! partitions `low` (`PriorityTier=1`, `GraceTime=5`) and `high` (`PriorityTier=10`),
//! `PreemptType=preempt/partition_prio`, `PreemptMode=REQUEUE`.

use std::path::Path;

use sluice_core::{
    Cluster, JobId, Node, NodeId, Partition, PreemptConfig, PreemptMode, PreemptType,
};
use sluice_proto::types::{JobDescription, JobEnded, JobState};

use crate::config::ClusterConfig;
use crate::state::{Caller, Controller, Effect};

fn conf(low_mode: Option<PreemptMode>) -> ClusterConfig {
    let mut c = ClusterConfig::this_machine();
    let mut cluster = Cluster::default();
    cluster.nodes.push(Node::new("node01", 4, 1000));
    let mut low = Partition::new("low", vec![NodeId(0)]);
    low.is_default = true;
    low.grace_time = 5;
    low.preempt_mode = low_mode;
    let mut high = Partition::new("high", vec![NodeId(0)]);
    high.priority_tier = 10;
    cluster.partitions = vec![low, high];
    cluster.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Requeue,
        exempt_time: 0,
        gang: false,
        time_slice: 0,
    };
    c.cluster = cluster;
    c.topology = vec![(1, 4, 1)];
    c.node_gres = vec![String::new()];
    c.cluster_name = "test".into();
    c
}

fn submit(c: &mut Controller, partition: &str, id: u64, now: i64) -> Vec<Effect> {
    let d = JobDescription {
        name: partition.into(),
        ntasks: Some(4),
        time_limit: Some(Some(600)),
        partition: Some(partition.into()),
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        submit_host: "login".into(),
        ..Default::default()
    };
    let caller = Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    };
    let p = c
        .prepare(d, &caller, "alice", "alice", now)
        .expect("accepted");
    let mut effects = c.accept(p.jobs(JobId(id)), now);
    effects.extend(c.schedule(now));
    effects
}

fn launched(effects: &[Effect]) -> Vec<u64> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Launch { order, .. } => Some(order.job.id),
            _ => None,
        })
        .collect()
}

/// (job, signal, batch only) of every signal sent.
fn signals(effects: &[Effect]) -> Vec<(u64, i32, bool)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Signal {
                job_id,
                signal,
                batch_only,
                ..
            } => Some((job_id.0, *signal, *batch_only)),
            _ => None,
        })
        .collect()
}

fn terminations(effects: &[Effect]) -> Vec<(u64, JobState)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Terminate { job_id, state, .. } => Some((job_id.0, *state)),
            _ => None,
        })
        .collect()
}

fn runs(effects: &[Effect]) -> Vec<(u64, JobState, Option<i64>, u32)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistRun(r) => Some((r.id, r.state, r.end_time, r.restarts)),
            _ => None,
        })
        .collect()
}

fn end(id: u64, run: u32, state: JobState, now: i64) -> JobEnded {
    JobEnded {
        job_id: id,
        run,
        node: "node01".into(),
        state,
        exit_code: 0,
        signal: 0,
        end: now,
        usage: None,
    }
}

#[test]
fn a_requeued_victim_is_signalled_killed_after_its_grace_and_runs_again() {
    let mut c = Controller::new(conf(None), Path::new("/s"), vec![], vec![], 0);
    assert_eq!(launched(&submit(&mut c, "low", 1, 0)), vec![1]);
    // At 10 the high job arrives: job 1 gets SIGTERM (batch shell and steps) and 5 s.
    let effects = submit(&mut c, "high", 2, 10);
    assert_eq!(signals(&effects), vec![(1, 15, true), (1, 15, false)]);
    assert!(launched(&effects).is_empty());
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Running);
    assert_eq!(c.job(JobId(2)).unwrap().reason, "Resources");
    assert_eq!(c.next_wakeup(), Some(15));
    // scontrol show job: when it was preempted, and its grace's end as its end.
    assert_eq!(
        c.job(JobId(1)).unwrap().preemption.map(|p| *p),
        Some(sluice_proto::types::PreemptionTimes {
            eligible: Some(0),
            at: 10,
            grace_end: 15
        })
    );
    assert!(terminations(&c.schedule(14)).is_empty());
    // At 15 its grace is over: killed, its run kept as PREEMPTED, queued again, and
    // COMPLETING until its processes are gone: the high job waits for that.
    let effects = c.schedule(15);
    assert_eq!(terminations(&effects), vec![(1, JobState::Requeued)]);
    assert_eq!(runs(&effects), vec![(1, JobState::Preempted, Some(15), 0)]);
    assert!(
        launched(&effects).is_empty(),
        "the victim's processes are still there"
    );
    let r = c.job(JobId(1)).unwrap();
    assert_eq!(
        (r.state, r.restarts, r.completing()),
        (JobState::Pending, 1, true)
    );
    // The killed run's end: the high job starts on the node; then the high job's end:
    // job 1 runs again, restart count 1.
    let effects = c.job_ended(&end(1, 0, JobState::Requeued, 16), 16);
    assert_eq!(launched(&effects), vec![2]);
    assert!(!c.job(JobId(1)).unwrap().completing());
    let effects = c.job_ended(&end(2, 0, JobState::Completed, 100), 100);
    let order = effects
        .iter()
        .find_map(|e| match e {
            Effect::Launch { order, .. } => Some(order),
            _ => None,
        })
        .expect("job 1 relaunched");
    assert_eq!(order.job.id, 1);
    let env: std::collections::BTreeMap<_, _> = order.environment.iter().cloned().collect();
    assert_eq!(env["SLURM_RESTART_COUNT"], "1");
}

#[test]
fn a_requeue_victim_that_leaves_during_its_grace_is_requeued_at_once() {
    let mut c = Controller::new(conf(None), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, "low", 1, 0);
    submit(&mut c, "high", 2, 10);
    // It caught SIGTERM and exited 0 at 12: kept as PREEMPTED, pending again; the high
    // job starts at 12, and no kill is sent at 15.
    let effects = c.job_ended(&end(1, 0, JobState::Completed, 12), 12);
    assert_eq!(runs(&effects), vec![(1, JobState::Preempted, Some(12), 0)]);
    assert_eq!(launched(&effects), vec![2]);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Pending);
    assert!(terminations(&c.schedule(15)).is_empty());
}

#[test]
fn a_cancelled_victim_ends_preempted() {
    let mut c = Controller::new(
        conf(Some(PreemptMode::Cancel)),
        Path::new("/s"),
        vec![],
        vec![],
        0,
    );
    submit(&mut c, "low", 1, 0);
    let effects = submit(&mut c, "high", 2, 10);
    assert_eq!(signals(&effects).len(), 2);
    let effects = c.schedule(15);
    assert_eq!(terminations(&effects), vec![(1, JobState::Preempted)]);
    assert!(
        launched(&effects).is_empty(),
        "the node is busy until the end"
    );
    let r = c.job(JobId(1)).unwrap();
    assert!(r.completing(), "COMPLETING from its kill on");
    let effects = c.job_ended(&end(1, 0, JobState::Preempted, 16), 16);
    assert_eq!(launched(&effects), vec![2]);
    // Its end is when it was told to end, as Slurm's EndTime.
    let r = c.job(JobId(1)).unwrap();
    assert_eq!((r.state, r.end_time), (JobState::Preempted, Some(15)));
    assert!(!r.completing());
    // A victim that exits by itself during its grace ends PREEMPTED too.
    let mut c = Controller::new(
        conf(Some(PreemptMode::Cancel)),
        Path::new("/s"),
        vec![],
        vec![],
        0,
    );
    submit(&mut c, "low", 1, 0);
    submit(&mut c, "high", 2, 10);
    let effects = c.job_ended(&end(1, 0, JobState::Completed, 12), 12);
    assert_eq!(launched(&effects), vec![2]);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Preempted);
}

/// The kinds of the preemption events among `c`'s audit events (`preempted`,
/// `preempting`), by job.
fn preemption_events(c: &mut Controller) -> Vec<(u64, &'static str)> {
    c.take_audit()
        .into_iter()
        .map(|e| (e.job_id, e.what.kind()))
        .filter(|(_, k)| k.starts_with("preempt"))
        .collect()
}

/// The controller restarted at `now` from `c`'s records (as the store holds them), its
/// one agent registering with `running`.
fn restarted(
    c: &Controller,
    mode: Option<PreemptMode>,
    running: &[(JobId, u32)],
    now: i64,
) -> (Controller, Vec<Effect>) {
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf(mode), Path::new("/s"), jobs, steps, now);
    let effects = c.agent_registered("node01", running, now);
    (c, effects)
}

#[test]
fn a_requeue_victim_in_its_grace_is_still_ended_at_its_deadline_after_a_restart() {
    let mut c = Controller::new(conf(None), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, "low", 1, 0);
    c.take_audit();
    // At 10 the high job preempts job 1 (grace 5): its record, with the preemption,
    // is written before it is signalled.
    let effects = submit(&mut c, "high", 2, 10);
    let written = effects.iter().position(|e| {
        matches!(e, Effect::Persist(r) if r.id == 1 && r.preempting.as_ref().is_some_and(|p| p.by == 2 && p.deadline == 15))
    });
    let signalled = effects
        .iter()
        .position(|e| matches!(e, Effect::Signal { .. }));
    assert!(written.is_some() && written < signalled, "{effects:?}");
    assert_eq!(
        preemption_events(&mut c),
        vec![(2, "preempting"), (1, "preempted")]
    );
    // At 12 the controller restarts; job 1 still runs on node01. Nothing is preempted
    // again: no signal, no new event, the same grace's end.
    let (mut c, effects) = restarted(&c, None, &[(JobId(1), 0)], 12);
    assert!(signals(&effects).is_empty(), "{effects:?}");
    assert!(launched(&effects).is_empty());
    assert_eq!(c.job(JobId(2)).unwrap().reason, "Resources");
    assert_eq!(
        c.job(JobId(1))
            .unwrap()
            .preemption
            .map(|p| (p.at, p.grace_end)),
        Some((10, 15))
    );
    assert_eq!(c.next_wakeup(), Some(15));
    assert!(terminations(&c.schedule(14)).is_empty());
    // At 15 as planned: job 1 is requeued, its run kept as PREEMPTED; job 2 starts
    // once that run's processes are gone from node01 (as Slurm starts a preemptor
    // once its victim has completed).
    let effects = c.schedule(15);
    assert_eq!(terminations(&effects), vec![(1, JobState::Requeued)]);
    assert_eq!(runs(&effects), vec![(1, JobState::Preempted, Some(15), 0)]);
    assert!(launched(&effects).is_empty(), "{effects:?}");
    assert!(c.job(JobId(1)).unwrap().completing());
    let effects = c.job_ended(&end(1, 0, JobState::Requeued, 16), 16);
    assert_eq!(launched(&effects), vec![2]);
    assert!(preemption_events(&mut c).is_empty());
}

#[test]
fn a_victim_whose_grace_ran_out_while_the_controller_was_down_is_ended_at_once() {
    let mut c = Controller::new(conf(None), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, "low", 1, 0);
    submit(&mut c, "high", 2, 10);
    // Back at 30, long after the grace's end at 15: job 1 is ended at once; job 2
    // starts once its processes are gone from node01.
    let (mut c, effects) = restarted(&c, None, &[(JobId(1), 0)], 30);
    assert!(signals(&effects).is_empty(), "{effects:?}");
    assert_eq!(terminations(&effects), vec![(1, JobState::Requeued)]);
    assert!(launched(&effects).is_empty(), "{effects:?}");
    let effects = c.job_ended(&end(1, 0, JobState::Requeued, 31), 31);
    assert_eq!(launched(&effects), vec![2]);
    assert!(preemption_events(&mut c).is_empty());
}

#[test]
fn a_cancel_victim_being_terminated_is_ended_again_after_a_restart() {
    let mode = Some(PreemptMode::Cancel);
    let mut c = Controller::new(conf(mode), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, "low", 1, 0);
    submit(&mut c, "high", 2, 10);
    // At 15 its end is ordered; the controller stops before the end is reported.
    assert_eq!(
        terminations(&c.schedule(15)),
        vec![(1, JobState::Preempted)]
    );
    // Its agent still runs it: the end is ordered again, not a new preemption.
    let (mut c, effects) = restarted(&c, mode, &[(JobId(1), 0)], 16);
    let ends: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::EndRun { job_id, state, .. } => Some((job_id.0, *state)),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![(1, JobState::Preempted)]);
    assert!(signals(&effects).is_empty(), "{effects:?}");
    // Its end reported: PREEMPTED, and job 2 starts.
    let effects = c.job_ended(&end(1, 0, JobState::Preempted, 17), 17);
    assert_eq!(launched(&effects), vec![2]);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Preempted);
    assert!(preemption_events(&mut c).is_empty());
}

/// Borrowing (cohorts.conf): on the one 4-CPU node, in `low` only, accounts `nlp`
/// (alice) and `vision` (bob) form cohort `ml` with `Quota=cpu=2` each; nlp's
/// `GraceTime=7`.
#[test]
fn a_borrowed_job_is_reclaimed_with_its_members_grace_and_requeued() {
    use crate::accounts::Requester;
    use sluice_conf::cohorts_conf;
    use sluice_proto::accounts::AccountsRequest;
    let mut conf = conf(None);
    conf.cohorts = cohorts_conf::parse_str(
        "Cohort=ml Account=nlp Quota=cpu=2 GraceTime=7\n\
         Cohort=ml Account=vision Quota=cpu=2\n",
        Path::new("cohorts.conf"),
    )
    .unwrap();
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let admin = Requester {
        name: "root".into(),
        superuser: true,
    };
    for (user, account) in [("alice", "nlp"), ("bob", "vision")] {
        let requests = [
            AccountsRequest::AddAccounts {
                names: vec![account.into()],
                description: None,
                organization: None,
                parent: None,
                settings: Default::default(),
            },
            AccountsRequest::AddUsers {
                names: vec![user.into()],
                accounts: vec![account.into()],
                default_account: None,
                partitions: Vec::new(),
                admin_level: None,
                settings: Default::default(),
            },
        ];
        for r in requests {
            c.change_accounts(&admin, &r, true).unwrap();
        }
    }
    let submit = |c: &mut Controller, user: &str, uid: u32, cpus: u32, id: u64, now: i64| {
        let d = JobDescription {
            ntasks: Some(cpus),
            time_limit: Some(Some(600)),
            work_dir: "/tmp".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            submit_host: "login".into(),
            ..Default::default()
        };
        let caller = Caller {
            uid,
            gid: uid,
            admin: false,
        };
        let p = c.prepare(d, &caller, user, user, now).expect("accepted");
        let mut effects = c.accept(p.jobs(JobId(id)), now);
        effects.extend(c.schedule(now));
        effects
    };
    // nlp's 4-CPU job starts at 0, two CPUs borrowed from vision's quota.
    assert_eq!(launched(&submit(&mut c, "alice", 1000, 4, 1, 0)), vec![1]);
    assert!(c.sched.borrowed(sluice_core::JobId(1)));
    // At 10 bob's 2-CPU job, within vision's quota, takes them back: SIGTERM, 7 s.
    let effects = submit(&mut c, "bob", 1001, 2, 2, 10);
    assert_eq!(signals(&effects), vec![(1, 15, true), (1, 15, false)]);
    assert_eq!(c.next_wakeup(), Some(17));
    assert!(terminations(&c.schedule(16)).is_empty());
    let effects = c.schedule(17);
    assert_eq!(terminations(&effects), vec![(1, JobState::Requeued)]);
    assert!(
        launched(&effects).is_empty(),
        "until job 1's processes are gone"
    );
    // Job 1's run is gone: bob's job starts; job 1 is queued again, and waits: the
    // cohort has no quota left to lend it.
    let effects = c.job_ended(&end(1, 0, JobState::Requeued, 18), 18);
    assert_eq!(launched(&effects), vec![2]);
    c.schedule(18);
    assert_eq!(c.job(JobId(1)).unwrap().reason, "CohortQuota");
}

#[test]
fn the_audit_trail_tells_the_preemption_story_from_both_sides() {
    use sluice_proto::audit::{AuditWhat, JobRef, NodeDevices, PreemptRule, RequeueCause};
    let mut c = Controller::new(conf(None), Path::new("/s"), vec![], vec![], 0);
    submit(&mut c, "low", 1, 0);
    c.take_audit();
    submit(&mut c, "high", 2, 10);
    c.schedule(15);
    // Its processes gone at 16: the preemptor starts then.
    c.job_ended(&end(1, 0, JobState::Requeued, 16), 16);
    let story: Vec<(i64, u64, AuditWhat)> = c
        .take_audit()
        .into_iter()
        .filter(|e| !matches!(e.what, AuditWhat::Submitted { .. }))
        .map(|e| (e.time, e.job_id, e.what))
        .collect();
    let rule = PreemptRule {
        rule: "partition_prio".into(),
        winner: "partition high (PriorityTier=10)".into(),
        loser: "partition low (PriorityTier=1)".into(),
    };
    let job = |id| JobRef {
        job: Some(id),
        uid: Some(1000),
    };
    let node01 = vec![NodeDevices {
        node: "node01".into(),
        ..Default::default()
    }];
    let p2 = c.job(JobId(2)).unwrap().priority;
    assert_eq!(
        story,
        vec![
            (
                10,
                2,
                AuditWhat::Preempting {
                    victims: vec![job(1)],
                    rule: rule.clone()
                }
            ),
            (
                10,
                1,
                AuditWhat::Preempted {
                    by: job(2),
                    rule,
                    mode: "REQUEUE".into(),
                    grace: 5
                }
            ),
            (
                10,
                2,
                AuditWhat::Reason {
                    from: None,
                    to: "Resources".into(),
                    limit: false
                }
            ),
            // The backfill plan, which knows of job 1's time limit, not of its grace.
            (
                10,
                2,
                AuditWhat::Planned {
                    from: None,
                    to: 600
                }
            ),
            (
                15,
                1,
                AuditWhat::Requeued {
                    run: 0,
                    ended_as: JobState::Preempted,
                    cause: RequeueCause::Preempted { by: job(2) },
                    released: node01.clone(),
                }
            ),
            (
                15,
                1,
                AuditWhat::Reason {
                    from: None,
                    to: "BeginTime".into(),
                    limit: false
                }
            ),
            (
                16,
                2,
                AuditWhat::Started {
                    run: 0,
                    pass: "preempt".into(),
                    priority: p2,
                    rank: Some(1),
                    partition: "high".into(),
                    reservation: None,
                    user: Some("alice".into()),
                    nodes: node01,
                }
            ),
            // Queued again once its last run is gone; the node is the high job's.
            (
                16,
                1,
                AuditWhat::Reason {
                    from: Some("BeginTime".into()),
                    to: "Resources".into(),
                    limit: false
                }
            ),
        ]
    );
}

#[test]
fn a_preempted_service_is_requeued_where_the_partition_says_cancel() {
    let mut c = Controller::new(
        conf(Some(PreemptMode::Cancel)),
        Path::new("/s"),
        vec![],
        vec![],
        0,
    );
    let d = JobDescription {
        name: "llm".into(),
        ntasks: Some(4),
        partition: Some("low".into()),
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        submit_host: "login".into(),
        requeue: Some(false),
        service: Some(sluice_proto::service::ServiceSpec {
            name: "llm".into(),
            restart: sluice_proto::service::RestartPolicy::Always,
            max_restarts: None,
            health: None,
            port: Some(8000),
        }),
        ..Default::default()
    };
    let caller = Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    };
    let p = c
        .prepare(d, &caller, "alice", "alice", 0)
        .expect("accepted");
    c.accept(p.jobs(JobId(1)), 0);
    assert_eq!(launched(&c.schedule(0)), vec![1]);
    // Always requeueable, and no DefaultTime: the partition's MaxTime (none here).
    let r = c.job(JobId(1)).unwrap();
    assert_eq!((r.desc.requeue, r.time_limit), (Some(true), None));
    submit(&mut c, "high", 2, 10);
    let effects = c.schedule(15);
    assert_eq!(terminations(&effects), vec![(1, JobState::Requeued)]);
    assert_eq!(runs(&effects), vec![(1, JobState::Preempted, Some(15), 0)]);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Pending);
}

/// In order, the suspensions (`true`) and resumes (`false`) ordered and the launches.
fn suspend_story(effects: &[Effect]) -> Vec<(u64, &'static str)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Suspend {
                job_id,
                suspend: true,
                ..
            } => Some((job_id.0, "stop")),
            Effect::Suspend { job_id, .. } => Some((job_id.0, "continue")),
            Effect::Launch { order, .. } => Some((order.job.id, "launch")),
            _ => None,
        })
        .collect()
}

#[test]
fn a_suspend_victim_is_stopped_before_the_high_job_launches_and_continues_after_it() {
    // low's mode is SUSPEND. Job 1 runs from 0; high job 2 arrives at 10: job 1 is
    // stopped (SUSPENDED, no signal, no grace), then job 2 is launched on the node. Job
    // 2 ends at 100: job 1 continues, RUNNING again after 90 s suspended, its end 90 s
    // later.
    let mut c = Controller::new(
        conf(Some(PreemptMode::Suspend)),
        Path::new("/s"),
        vec![],
        vec![],
        0,
    );
    submit(&mut c, "low", 1, 0);
    let effects = submit(&mut c, "high", 2, 10);
    assert_eq!(suspend_story(&effects), vec![(1, "stop"), (2, "launch")]);
    assert!(signals(&effects).is_empty());
    let r = c.job(JobId(1)).unwrap();
    assert_eq!(r.state, JobState::Suspended);
    assert_eq!(r.suspension.and_then(|s| s.for_job), Some(2));
    // No operator resumes it while job 2 holds its CPUs.
    let root = Caller {
        uid: 0,
        gid: 0,
        admin: true,
    };
    let e = c.suspend(JobId(1), false, &root, 50).unwrap_err();
    assert_eq!(e.message, "Requested operation is presently disabled");

    let effects = c.job_ended(&end(2, 0, JobState::Completed, 100), 100);
    assert_eq!(suspend_story(&effects), vec![(1, "continue")]);
    let r = c.job(JobId(1)).unwrap();
    assert_eq!(r.state, JobState::Running);
    assert_eq!(r.suspension.map(|s| (s.secs, s.for_job)), Some((90, None)));
}
