//! Stories of the controller's state machine: submissions, starts, ends, arrays,
//! dependencies, holds, cancels, requeues and steps, with the exact effects expected.

use super::*;
use sluice_core::{Cluster, Node, Partition};
use sluice_proto::explain::{Explanation, SuggestionSearch};
use sluice_proto::reservations::{ListChange, ListOp, ReservationChange, ReservationOp};
use sluice_proto::types::{CancelRequest, RequeueFlags};

/// `nodes` nodes of `cpus` CPUs in one default partition `debug` (an hour at most).
pub(crate) fn conf(nodes: u32, cpus: u32) -> ClusterConfig {
    let mut c = ClusterConfig::this_machine();
    let mut cluster = Cluster::default();
    for i in 1..=nodes {
        cluster
            .nodes
            .push(Node::new(format!("node{i:02}"), cpus, 1000));
    }
    let mut p = Partition::new("debug", (0..nodes).map(NodeId).collect());
    p.is_default = true;
    p.max_time = Some(3600);
    cluster.partitions.push(p);
    c.cluster = cluster;
    c.topology = vec![(1, cpus, 1); nodes as usize];
    c.node_gres = vec![String::new(); nodes as usize];
    c.cluster_name = "test".into();
    c
}

/// The texts of the causes `explain` gives for pending job `id` (for alice, at 0).
fn cause_texts(c: &Controller, id: JobId) -> Vec<String> {
    let e = c.explain(id, None, &alice(), 0).expect("explained");
    e.causes.into_iter().map(|c| c.text).collect()
}

pub(crate) fn alice() -> Caller {
    Caller {
        uid: 1000,
        gid: 1000,
        admin: false,
    }
}

pub(crate) fn desc(ntasks: u32, time: i64) -> JobDescription {
    JobDescription {
        name: "job".into(),
        ntasks: Some(ntasks),
        time_limit: Some(Some(time)),
        work_dir: "/home/alice".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        submit_host: "login".into(),
        ..Default::default()
    }
}

/// Submits as the server does: prepare, make durable (here: ids from `next`), accept.
pub(crate) fn submit(
    c: &mut Controller,
    d: JobDescription,
    next: &mut u64,
    now: i64,
) -> (JobId, Vec<Effect>) {
    // The controller numbers as the caller does (its own ids are refused in a
    // dependency).
    c.next_job_id = *next;
    let p = c
        .prepare(d, &alice(), "alice", "alice", now)
        .expect("accepted");
    let first = *next;
    *next += p.ids();
    c.next_job_id = *next;
    let jobs = p.jobs(JobId(first));
    drop(c.inserted(&jobs, None, now));
    (JobId(first), c.accept(jobs, now))
}

pub(crate) fn launches(effects: &[Effect]) -> Vec<(u64, Vec<String>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Launch { order, .. } => Some((order.job.id, order.job.nodes.clone())),
            _ => None,
        })
        .collect()
}

pub(crate) fn ended(id: JobId, state: JobState, code: i32, now: i64) -> JobEnded {
    JobEnded {
        job_id: id.0,
        run: 0,
        node: "node01".into(),
        state,
        exit_code: code,
        signal: 0,
        end: now,
        usage: None,
    }
}

#[test]
fn a_job_starts_on_its_nodes_with_its_environment_and_ends_completed() {
    // Two 4-CPU nodes. A 6-task job needs both: node01 gets 4 tasks, node02 gets 2.
    let mut c = Controller::new(conf(2, 4), Path::new("/state"), vec![], vec![], 0);
    let mut next = 10;
    let (id, _) = submit(&mut c, desc(6, 600), &mut next, 100);
    let effects = c.schedule(100);
    assert_eq!(
        launches(&effects),
        vec![(10, vec!["node01".into(), "node02".into()])]
    );
    let Some(Effect::Launch { node, order }) =
        effects.iter().find(|e| matches!(e, Effect::Launch { .. }))
    else {
        unreachable!()
    };
    assert_eq!(node, "node01");
    let env: BTreeMap<_, _> = order.environment.iter().cloned().collect();
    assert_eq!(env["SLURM_JOB_ID"], "10");
    assert_eq!(env["SLURM_JOB_NODELIST"], "node[01-02]");
    assert_eq!(env["SLURM_NTASKS"], "6");
    assert_eq!(env["SLURM_TASKS_PER_NODE"], "4,2");
    assert_eq!(env["SLURM_JOB_NUM_NODES"], "2");
    assert_eq!(env["SLURM_SUBMIT_DIR"], "/home/alice");
    assert_eq!(env["SLUICE_STATE_DIR"], "/state");
    assert_eq!(order.job.stdout, "/home/alice/slurm-10.out");
    let effects = c.job_ended(&ended(id, JobState::Completed, 0, 160), 160);
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.start_time, r.end_time),
        (JobState::Completed, Some(100), Some(160))
    );
    assert!(effects.iter().any(|e| matches!(e, Effect::PersistStep(s) if s.step == StepId::Batch && s.state == JobState::Completed)));
}

fn launch_env(effects: &[Effect], id: JobId) -> BTreeMap<String, String> {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Launch { order, .. } if order.job.id == id.0 => {
                Some(order.environment.iter().cloned().collect())
            }
            _ => None,
        })
        .expect("launched")
}

#[test]
fn an_array_gets_one_id_per_task_and_honours_its_throttle() {
    // --array=0-3%2 as job 1: tasks 0-2 take ids 2-4, task 3 (the last to start) keeps
    // the array's own id 1, as in Slurm.
    let mut c = Controller::new(conf(4, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2, 3], Some(2)));
    let (first, _) = submit(&mut c, d, &mut next, 0);
    assert_eq!((first.0, next), (1, 5));
    let effects = c.schedule(0);
    assert_eq!(
        launches(&effects).iter().map(|l| l.0).collect::<Vec<_>>(),
        [2, 3],
        "tasks 0 and 1, throttle %2"
    );
    assert_eq!(c.job(JobId(4)).unwrap().reason, "JobArrayTaskLimit");
    assert_eq!(c.job(first).unwrap().display_id(), "1_3");
    let env = launch_env(&effects, JobId(2));
    assert_eq!(
        (
            env["SLURM_JOB_ID"].as_str(),
            env["SLURM_ARRAY_JOB_ID"].as_str(),
            env["SLURM_ARRAY_TASK_ID"].as_str()
        ),
        ("2", "1", "0")
    );
    assert_eq!(env["SLURM_ARRAY_TASK_COUNT"], "4");
    assert_eq!(c.job(JobId(2)).unwrap().stdout, "/home/alice/slurm-1_0.out");
    let effects = c.job_ended(&ended(JobId(2), JobState::Completed, 0, 10), 10);
    assert_eq!(
        launches(&effects).iter().map(|l| l.0).collect::<Vec<_>>(),
        [4],
        "task 2"
    );
    let effects = c.job_ended(&ended(JobId(3), JobState::Completed, 0, 20), 20);
    assert_eq!(
        launches(&effects).iter().map(|l| l.0).collect::<Vec<_>>(),
        [1],
        "task 3, last, under the array's id"
    );
    let env = launch_env(&effects, JobId(1));
    assert_eq!(
        (
            env["SLURM_JOB_ID"].as_str(),
            env["SLURM_ARRAY_TASK_ID"].as_str()
        ),
        ("1", "3")
    );
    assert_eq!(c.job(JobId(1)).unwrap().stdout, "/home/alice/slurm-1_3.out");
}

/// Four 1-CPU nodes and `--hold --array=0-3` submitted as job 1 (tasks 0-2 are ids
/// 2-4, task 3, the array's own record, is id 1); the next id to give.
pub(crate) fn held_array() -> (Controller, u64) {
    let mut c = Controller::new(conf(4, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2, 3], None));
    d.hold = true;
    submit(&mut c, d, &mut next, 0);
    (c, next)
}

/// `scancel` by alice, at 5, of `jobs` (ids, with their task if one is named).
fn cancel_ids(c: &mut Controller, jobs: Vec<(u64, Option<u32>)>) -> Vec<Effect> {
    let req = CancelRequest {
        jobs,
        ..Default::default()
    };
    c.cancel(&req, &alice(), 5).unwrap().effects
}

#[test]
fn array_tasks_cancelled_before_they_start_leave_no_record() {
    // --hold --array=0-3 as job 1: tasks 0-2 are ids 2-4, task 3 is id 1.
    let (mut c, _) = held_array();
    // `scancel 1_1`: task 1's record (id 3) is gone, and its index from the remainder.
    let effects = cancel_ids(&mut c, vec![(1, Some(1))]);
    assert!(effects.contains(&Effect::Forget(JobId(3))));
    assert_eq!(c.job(JobId(3)), None);
    assert_eq!(
        c.job(JobId(1)).unwrap().array_pending,
        Some((vec![0, 2, 3], None))
    );
    // `scancel 1_3`, the task holding the array's id: task 2 (the highest left)
    // takes it over, under id 1, and its own record (id 4) goes.
    let effects = cancel_ids(&mut c, vec![(1, Some(3))]);
    assert!(effects.contains(&Effect::Forget(JobId(4))));
    let head = c.job(JobId(1)).unwrap();
    assert_eq!(
        (head.array, head.state, head.array_pending.clone()),
        (Some((1, 2)), JobState::Pending, Some((vec![0, 2], None)))
    );
    assert_eq!(head.reason, "JobHeldUser");
    // The whole array: what is left is cancelled as one record, the array's own
    // (`1_[0,2]`), keeping its reason, as Slurm's meta record; task 0's goes.
    let effects = cancel_ids(&mut c, vec![(1, None)]);
    assert_eq!(
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Forget(_)))
            .collect::<Vec<_>>(),
        [&Effect::Forget(JobId(2))]
    );
    assert_eq!(c.job(JobId(2)), None);
    let r = c.job(JobId(1)).unwrap();
    assert_eq!(
        (r.display_id(), r.state, r.reason.as_str()),
        ("1_[0,2]".to_string(), JobState::Cancelled, "JobHeldUser")
    );
}

#[test]
fn a_task_changed_on_its_own_keeps_its_record_when_cancelled() {
    // --hold --array=0-3 as job 1: tasks 0-2 are ids 2-4, task 3 is id 1. Task 1
    // (id 3) is updated on its own, so it has a record of its own, as in Slurm.
    let (mut c, _) = held_array();
    let limit = vec![("TimeLimit".to_string(), "4".to_string())];
    c.update_job_verb(JobId(1), Some(&[1]), &limit, &alice(), 1)
        .unwrap();
    // `scancel 1_1`: cancelled, and listed so, not forgotten.
    let effects = cancel_ids(&mut c, vec![(1, Some(1))]);
    assert!(!effects.contains(&Effect::Forget(JobId(3))));
    let r = c.job(JobId(3)).unwrap();
    assert_eq!(
        (r.display_id(), r.state),
        ("1_1".to_string(), JobState::Cancelled)
    );
    // Task 2 too, then the whole array: the others fold into the array's record.
    c.update_job_verb(JobId(1), Some(&[2]), &limit, &alice(), 6)
        .unwrap();
    cancel_ids(&mut c, vec![(1, None)]);
    let shown: Vec<String> = [1, 3, 4]
        .iter()
        .map(|&id| c.job(JobId(id)).unwrap().display_id())
        .collect();
    assert_eq!(shown, ["1_[0,3]", "1_1", "1_2"]);
    assert_eq!(c.job(JobId(2)), None);
}

#[test]
fn tasks_of_an_array_cancelled_before_they_started_are_answered_for_its_record() {
    // --hold --array=0-3 as job 1, cancelled whole: one record, `1_[0-3]`, CANCELLED.
    let (mut c, _) = held_array();
    let req = CancelRequest {
        jobs: vec![(1, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 5).unwrap();
    assert_eq!(c.job(JobId(1)).unwrap().display_id(), "1_[0-3]");
    // Each task is found in that record, as Slurm finds it in its meta record.
    assert_eq!(c.task_record(JobId(1), 2), Some(JobId(1)));
    assert_eq!(c.task_record(JobId(1), 7), None);
    // Held or released by one of its ids, it is answered for all of them; a task it
    // never had is answered apart.
    let (_, lines) = c
        .hold_verb(JobId(1), Some(&[2]), true, false, &alice(), 6)
        .unwrap();
    assert_eq!(lines, ["1_0-3: Job has already finished"]);
    let (_, lines) = c
        .hold_verb(JobId(1), Some(&[1, 7]), false, false, &alice(), 6)
        .unwrap();
    assert_eq!(
        lines,
        [
            "1_0-3: Job has already finished",
            "1_7: Invalid job id specified"
        ]
    );
    // An update of one task the same way; the record is not touched.
    let limit = vec![("TimeLimit".to_string(), "3".to_string())];
    let (effects, lines) = c
        .update_job_verb(JobId(1), Some(&[3]), &limit, &alice(), 6)
        .unwrap();
    assert_eq!(lines, ["1_0-3: Job has already finished"]);
    assert!(effects.is_empty());
    // Not put back by a requeue (Slurm would put back all four): refused, unchanged.
    let (effects, lines) = c
        .requeue_as(JobId(1), Some(1), RequeueFlags::default(), &alice(), 6)
        .unwrap();
    assert_eq!(lines, ["1_0-3: Requested operation is presently disabled"]);
    assert!(!effects.iter().any(|e| matches!(e, Effect::Persist(_))));
    let e = c.requeue(JobId(1), None, &alice(), 6).unwrap_err();
    assert_eq!(e.message, "Requested operation is presently disabled");
    // Whose it is comes first.
    let bob = Caller {
        uid: 1001,
        gid: 1001,
        admin: false,
    };
    let e = c.requeue(JobId(1), Some(2), &bob, 6).unwrap_err();
    assert_eq!(e.message, "Access/permission denied");
    let r = c.job(JobId(1)).unwrap();
    assert_eq!(
        (r.state, r.display_id()),
        (JobState::Cancelled, "1_[0-3]".into())
    );
}

#[test]
fn a_finished_job_refuses_every_update_and_tasks_are_answered_each_on_their_own() {
    // Four 1-CPU nodes; job 1 runs and ends, then a held array (ids 2-4, tasks 0-2).
    let mut c = Controller::new(conf(4, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (done, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    c.job_ended(&ended(done, JobState::Completed, 0, 10), 10);
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2], None));
    d.hold = true;
    let (array, _) = submit(&mut c, d, &mut next, 20);
    let bob = Caller {
        uid: 1001,
        gid: 1001,
        admin: false,
    };
    // As Slurm's `_update_job`: finished comes first, whatever is asked and by whom.
    let name = vec![("JobName".to_string(), "x".to_string())];
    let e = c.update_job(done, &name, &bob, 30).unwrap_err();
    assert_eq!(e.message, "Job has already finished");
    // A bad partition for the whole array: every task refused, a line for them.
    let part = vec![("Partition".to_string(), "nosuch".to_string())];
    let (effects, lines) = c.update_job_verb(array, None, &part, &alice(), 30).unwrap();
    assert_eq!(
        lines,
        [format!("{array}_0-2: Invalid partition name specified")]
    );
    assert!(effects.is_empty());
    // Refused for one task named: that task is split from the record all the same.
    let (_, lines) = c
        .update_job_verb(array, Some(&[0]), &part, &alice(), 30)
        .unwrap();
    assert_eq!(
        lines,
        [format!("{array}_0: Invalid partition name specified")]
    );
    assert!(c.job(c.task_record(array, 0).unwrap()).unwrap().split);
    // A limit for one task and one the array lacks: the task is changed, on its own.
    let limit = vec![("TimeLimit".to_string(), "4".to_string())];
    let (_, lines) = c
        .update_job_verb(array, Some(&[9]), &limit, &alice(), 30)
        .unwrap();
    assert_eq!(lines, [format!("{array}_9: Invalid job id specified")]);
    let (_, lines) = c
        .update_job_verb(array, Some(&[1]), &limit, &alice(), 30)
        .unwrap();
    assert!(lines.is_empty());
    let task = c.job(c.task_record(array, 1).unwrap()).unwrap();
    assert_eq!((task.time_limit, task.split), (Some(240), true));
}

#[test]
fn a_range_covering_an_arrays_whole_pending_record_changes_it_whole() {
    // --begin=later --array=0-3 as job 1: tasks 0-2 are ids 2-4, task 3 is id 1.
    let mut c = Controller::new(conf(4, 1), Path::new("/s"), vec![], vec![], 0);
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2, 3], None));
    d.begin = Some(3600);
    submit(&mut c, d, &mut 1, 0);
    let split = |c: &Controller| -> Vec<bool> {
        (1..=4).map(|id| c.job(JobId(id)).unwrap().split).collect()
    };
    // Held, then released, by ranges naming every task of the record (and more): no
    // task is apart.
    c.hold_verb(JobId(1), Some(&[0, 1, 2, 3]), true, false, &alice(), 5)
        .unwrap();
    assert!((1..=4).all(|id| c.job(JobId(id)).unwrap().held()));
    let (_, lines) = c
        .hold_verb(JobId(1), Some(&[0, 1, 2, 3, 9]), false, false, &alice(), 5)
        .unwrap();
    assert_eq!(lines, ["1_0-3: No error", "1_9: Invalid job id specified"]);
    assert_eq!(split(&c), [false; 4]);
    assert!((1..=4).all(|id| !c.job(JobId(id)).unwrap().held()));
    // Held by a range naming part of it: those tasks are split from the record.
    c.hold_verb(JobId(1), Some(&[1, 2]), true, false, &alice(), 6)
        .unwrap();
    assert_eq!(split(&c), [false, false, true, true]);
    // An update of one task of two left in the record splits it; of the last one
    // left, it does not (that record is the task itself then).
    let limit = vec![("TimeLimit".to_string(), "4".to_string())];
    c.update_job_verb(JobId(1), Some(&[0]), &limit, &alice(), 7)
        .unwrap();
    assert_eq!(split(&c), [false, true, true, true]);
    c.update_job_verb(JobId(1), Some(&[3]), &limit, &alice(), 7)
        .unwrap();
    assert_eq!(split(&c), [false, true, true, true]);
}

#[test]
fn records_chosen_by_their_ids_are_cancelled_as_a_filter_cancels_them() {
    // Two identical controllers: a held array (job 1, tasks 0-2 as ids 2-4) and a
    // job named `other`; one cancels `--name=job`, the other the records the REST
    // API's filter chose, by their own ids. Same effects, same records.
    let setup = || {
        let (mut c, mut next) = held_array();
        let mut other = desc(1, 600);
        other.name = "other".into();
        other.hold = true;
        submit(&mut c, other, &mut next, 0);
        c
    };
    let (mut by_name, mut by_ids) = (setup(), setup());
    let named = by_name
        .cancel(
            &CancelRequest {
                name: Some("job".into()),
                ..Default::default()
            },
            &alice(),
            5,
        )
        .unwrap();
    let chosen = by_ids
        .cancel(
            &CancelRequest {
                records: vec![1, 2, 3, 4],
                ..Default::default()
            },
            &alice(),
            5,
        )
        .unwrap();
    assert_eq!(chosen, named);
    for id in 1..=5 {
        assert_eq!(by_ids.job(JobId(id)), by_name.job(JobId(id)), "job {id}");
    }
    assert_eq!(by_ids.job(JobId(5)).unwrap().state, JobState::Pending);
    assert_eq!(by_ids.job(JobId(1)).unwrap().state, JobState::Cancelled);
}

/// One 1-CPU node with a running job, one waiting for it (Resources) and one held:
/// the controller and the three ids.
fn running_waiting_held() -> (Controller, [JobId; 3]) {
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (running, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let (waiting, _) = submit(&mut c, desc(1, 600), &mut next, 1);
    let mut held = desc(1, 600);
    held.hold = true;
    let (held, _) = submit(&mut c, held, &mut next, 1);
    c.schedule(2);
    (c, [running, waiting, held])
}

#[test]
fn a_cancelled_pending_job_keeps_the_reason_it_waited_for() {
    // One 1-CPU node: a running job, one waiting for it (Resources), one held.
    let (mut c, [running, waiting, held]) = running_waiting_held();
    assert_eq!(c.job(waiting).unwrap().reason, "Resources");
    let req = CancelRequest {
        jobs: vec![(waiting.0, None), (held.0, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 3).unwrap();
    let shown = |id: JobId| {
        let r = c.job(id).unwrap();
        (r.state, r.reason)
    };
    assert_eq!(shown(waiting), (JobState::Cancelled, "Resources".into()));
    assert_eq!(shown(held), (JobState::Cancelled, "JobHeldUser".into()));
    assert_eq!(shown(running), (JobState::Running, "None".into()));
}

#[test]
fn a_finished_job_keeps_the_priority_it_had_and_a_held_one_stays_at_0() {
    // As Slurm 22.05 shows them (compat scenario 196): one 1-CPU node; a running job,
    // one waiting for it and one held are cancelled, and a fourth job completes.
    let (mut c, [running, waiting, held]) = running_waiting_held();
    let priority = |c: &Controller, id: JobId| c.job(id).unwrap().priority;
    let before = [running, waiting].map(|id| priority(&c, id));
    assert!(before.iter().all(|&p| p > 0), "{before:?}");
    assert_eq!(priority(&c, held), 0);
    let req = CancelRequest {
        jobs: vec![(waiting.0, None), (held.0, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 3).unwrap();
    c.job_ended(&ended(running, JobState::Completed, 0, 4), 4);
    assert_eq!(c.job(running).unwrap().state, JobState::Completed);
    assert_eq!(c.job(waiting).unwrap().state, JobState::Cancelled);
    assert_eq!([running, waiting].map(|id| priority(&c, id)), before);
    assert_eq!(priority(&c, held), 0);
}

#[test]
fn a_job_depending_on_itself_is_refused_and_its_id_not_given_again() {
    let mut c = Controller::new(conf(2, 1), Path::new("/s"), vec![], vec![], 0);
    let prepare = |c: &mut Controller, dep: String| {
        let mut d = desc(1, 600);
        d.dependency = Some(dep);
        c.prepare(d, &alice(), "alice", "alice", 0)
    };
    let mut next = 1;
    let (first, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    let first = first.0;
    // The next id is its own: alone, among others, or in an OR list.
    for (n, dep) in [
        (1, format!("afterok:{}", first + 1)),
        (2, format!("afterany:{first}:{}", first + 2)),
        (3, format!("afterok:{first}?afternotok:{}", first + 3)),
    ] {
        let e = prepare(&mut c, dep.clone()).unwrap_err();
        assert_eq!(e.message, "Job dependency problem", "{dep}");
        assert_eq!(c.next_job_id, first + 1 + n, "{dep}: its id is spent");
    }
    assert_eq!(c.jobs.len(), 1, "nothing recorded");
    // An earlier job, or a later one, is not the job itself.
    let p = prepare(&mut c, format!("afterok:{first}:{}", first + 9)).unwrap();
    assert_eq!(c.allocate(&p)[0].id.0, first + 4);
}

#[test]
fn a_switch_wait_is_settled_at_submission_and_for_older_records() {
    let mut c = Controller::new(conf(2, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(1, 600);
    d.switches = Some((1, Some(90_000)));
    let (capped, _) = submit(&mut c, d, &mut next, 0);
    assert_eq!(c.job(capped).unwrap().desc.switches, Some((1, Some(300))));
    // A record written before the wait was settled shows the wait it waits.
    let (old, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    Arc::make_mut(&mut c.jobs.get_mut(&old).unwrap().desc).switches = Some((2, None));
    assert_eq!(c.job(old).unwrap().desc.switches, Some((2, Some(300))));
}

#[test]
fn dependencies_wait_then_start_or_are_never_satisfied() {
    let mut c = Controller::new(conf(2, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (a, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    let mut d = desc(1, 600);
    d.dependency = Some(format!("afterok:{a}"));
    let (b, _) = submit(&mut c, d, &mut next, 0);
    let mut d = desc(1, 600);
    d.dependency = Some(format!("afternotok:{a}"));
    let (n, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(b).unwrap().reason, "Dependency");
    assert_eq!(c.job(b).unwrap().state, JobState::Pending);
    let effects = c.job_ended(&ended(a, JobState::Completed, 0, 50), 50);
    assert_eq!(launches(&effects), vec![(b.0, vec!["node01".into()])]);
    assert_eq!(c.job(n).unwrap().reason, "DependencyNeverSatisfied");
}

#[test]
fn dependencies_show_each_job_unfulfilled_or_failed_as_slurm_prints_them() {
    // One CPU: job 1 runs, job 2 (held) never starts; the others wait on them.
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (a, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    let mut d = desc(1, 600);
    d.hold = true;
    let (h, _) = submit(&mut c, d, &mut next, 0);
    let dep = |c: &mut Controller, next: &mut u64, s: String| {
        let mut d = desc(1, 600);
        d.dependency = Some(s);
        submit(c, d, next, 0).0
    };
    let both = dep(&mut c, &mut next, format!("afterok:{h}:{a}"));
    let either = dep(&mut c, &mut next, format!("afterok:{h}?afternotok:{h}"));
    let later = dep(&mut c, &mut next, format!("after:{a}+5"));
    let unknown = dep(&mut c, &mut next, "afterok:999999".into());
    c.schedule(0);
    let shown = |c: &Controller, id: JobId| {
        let r = c.job(id).unwrap();
        (r.reason.clone(), r.dependency_status.clone())
    };
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        shown(&c, both),
        (
            "Dependency".into(),
            s("afterok:2(unfulfilled),afterok:1(unfulfilled)")
        )
    );
    assert_eq!(
        shown(&c, either),
        (
            "Dependency".into(),
            s("afterok:2(unfulfilled)?afternotok:2(unfulfilled)")
        )
    );
    // explain names each job with its state; an OR list says one is enough.
    let texts = cause_texts(&c, either);
    assert_eq!(
        texts,
        [
            "afterok:2: it waits for job 2 to complete successfully; 2 PENDING: not yet \
             (any one of these is enough: `?`)",
            "afternotok:2: it waits for job 2 to fail; 2 PENDING: not yet \
             (any one of these is enough: `?`)",
        ]
    );
    // Job 1 started at 0: `after:1+5` holds from 300 s on.
    assert_eq!(
        shown(&c, later),
        ("Dependency".into(), s("after:1+5(unfulfilled)"))
    );
    assert_eq!(c.next_wakeup(), Some(300));
    // A job id that does not exist is dropped: the job queues (behind job 1).
    assert_eq!(shown(&c, unknown).1, None);

    // Job 1 fails: `afterok:1` can no longer hold; the OR list still waits on job 2.
    c.job_ended(&ended(a, JobState::Failed, 1, 100), 100);
    c.schedule(100);
    assert_eq!(
        shown(&c, both),
        (
            "DependencyNeverSatisfied".into(),
            s("afterok:2(unfulfilled),afterok:1(failed)")
        )
    );
    assert_eq!(c.job(later).unwrap().state, JobState::Pending);
    // At 300 it enters the queue, behind the job that took the CPU at 100.
    c.schedule(300);
    assert_eq!(c.job(later).unwrap().reason, "Resources");
    assert_eq!(shown(&c, later).1, None);
    // Job 2 cancelled while held: `afternotok:2` holds, and the OR list is gone.
    let req = CancelRequest {
        jobs: vec![(h.0, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 310).unwrap();
    c.schedule(310);
    assert_eq!(shown(&c, either).1, None);
}

#[test]
fn hold_release_cancel_and_permissions() {
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (busy, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let mut d = desc(1, 600);
    d.hold = true;
    let (held, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(held).unwrap().reason, "JobHeldUser");
    let bob = Caller {
        uid: 1001,
        gid: 1001,
        admin: false,
    };
    // Another user's job: Slurm's `Invalid user id`.
    assert_eq!(
        c.set_hold(held, None, false, &bob, 1).unwrap_err().message,
        "Invalid user id"
    );
    // Holding a running job lets it run on, held (see the requeue stories), as in
    // Slurm; released, it is as it was.
    c.set_hold(busy, None, true, &alice(), 1).unwrap();
    assert_eq!(c.job(busy).unwrap().state, JobState::Running);
    assert!(c.job(busy).unwrap().held());
    c.set_hold(busy, None, false, &alice(), 1).unwrap();
    assert!(!c.job(busy).unwrap().held());
    // An operator's hold: only an operator releases it; uhold hands it to the owner.
    let root = Caller {
        uid: 0,
        gid: 0,
        admin: true,
    };
    c.set_hold(held, None, true, &root, 1).unwrap();
    assert_eq!(c.job(held).unwrap().reason, "JobHeldAdmin");
    assert_eq!(
        c.set_hold(held, None, false, &alice(), 1),
        Err(ApiError::access_denied())
    );
    // Nor may the owner turn it into a hold of her own (`uhold`) to release that.
    c.user_hold(held, None, &alice(), 1).unwrap();
    assert_eq!(c.job(held).unwrap().reason, "JobHeldAdmin");
    c.user_hold(held, None, &root, 1).unwrap();
    assert_eq!(c.job(held).unwrap().reason, "JobHeldUser");
    c.set_hold(held, None, false, &alice(), 1).unwrap();
    assert_eq!(c.job(held).unwrap().reason, "Resources");
    let req = CancelRequest {
        jobs: vec![(held.0, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 2).unwrap();
    let r = c.job(held).unwrap();
    assert_eq!((r.state, r.cancelled_by), (JobState::Cancelled, Some(1000)));
    let req = CancelRequest {
        jobs: vec![(busy.0, None)],
        ..Default::default()
    };
    let effects = c.cancel(&req, &alice(), 3).unwrap().effects;
    // Who cancelled it and that it is COMPLETING from now are written first (durably),
    // then its processes are told to end.
    assert!(
        matches!(&effects[..], [Effect::Persist(r), Effect::Terminate { job_id, state: JobState::Cancelled, .. }]
            if r.id == busy.0 && r.cancelled_by == Some(1000) && *job_id == busy
                && r.completing() && r.end_time == Some(3)),
        "{effects:?}"
    );
}

#[test]
fn requeue_keeps_the_id_appends_output_and_counts_restarts() {
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 7;
    let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let effects = c.requeue(id, None, &alice(), 30).unwrap();
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::Terminate {
            state: JobState::Requeued,
            ..
        }
    )));
    // Its first run's batch step is kept for `sacct -D`: CANCELLED by SIGTERM (0:15).
    let batch: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistStep(s) if s.step == StepId::Batch => {
                Some((s.run, s.state, s.exit_code, s.signal, s.end))
            }
            _ => None,
        })
        .collect();
    assert_eq!(batch, [(0, JobState::Cancelled, 0, 15, Some(30))]);
    // It waits, as Slurm's requeued jobs do (for its begin time), until the first run
    // has ended: an agent runs one run of a job at a time.
    assert!(launches(&effects).is_empty());
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.reason.as_str(), r.restarts),
        (JobState::Pending, "None", 1)
    );
    // No two-minute wait: once the first run's end is in, the job starts again.
    let first_end = JobEnded {
        run: 0,
        ..ended(id, JobState::Requeued, 0, 31)
    };
    let relaunch = launches(&c.job_ended(&first_end, 31));
    assert_eq!(relaunch, vec![(7, vec!["node01".into()])]);
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.restarts, r.desc.append),
        (JobState::Running, 1, true)
    );
    // The end of the first run, told again, changes nothing.
    assert!(c.job_ended(&first_end, 32).is_empty());
    assert_eq!(c.job(id).unwrap().state, JobState::Running);
}

#[test]
fn a_step_holds_the_jobs_cpus_on_its_nodes_unless_exact() {
    // A 3-task job on two 2-CPU nodes: node01 holds 2 of its CPUs, node02 1.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(3, 600), &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(id).unwrap().cpus_per_node, vec![2, 1]);
    // Each step on its own (overlapping the ones before, which still run).
    let mut step = |req: StepRequest| {
        let req = StepRequest {
            overlap: true,
            ..req
        };
        let (_, effects) = c.start_step(id, &req, &alice(), 1).unwrap();
        effects
            .iter()
            .find_map(|e| match e {
                Effect::PersistStep(s) => Some((s.nodes.clone(), s.cpus)),
                _ => None,
            })
            .unwrap()
    };
    // `srun -n 1`: one task, but all of the job's CPUs on node01 (Slurm 22.05).
    assert_eq!(
        step(StepRequest {
            ntasks: Some(1),
            ..Default::default()
        }),
        (vec!["node01".to_string()], 2)
    );
    // `srun -n 1 --exact` and `srun -n 1 -c 1` (which implies --exact): one CPU.
    assert_eq!(
        step(StepRequest {
            ntasks: Some(1),
            exact: true,
            ..Default::default()
        }),
        (vec!["node01".to_string()], 1)
    );
    assert_eq!(
        step(StepRequest {
            ntasks: Some(1),
            cpus_per_task: Some(1),
            ..Default::default()
        }),
        (vec!["node01".to_string()], 1)
    );
    // A plain `srun`: every task, every CPU.
    assert_eq!(
        step(StepRequest::default()),
        (vec!["node01".to_string(), "node02".to_string()], 3)
    );
    // `srun -w node02 -n 1`: that node's CPU.
    assert_eq!(
        step(StepRequest {
            ntasks: Some(1),
            nodelist: Some("node02".into()),
            ..Default::default()
        }),
        (vec!["node02".to_string()], 1)
    );
}

#[test]
fn the_batch_environment_names_the_cluster_its_controller_and_the_node_as_slurm_does() {
    let mut conf = conf(1, 4);
    conf.cluster_name = "lab".into();
    conf.net.controllers =
        vec![sluice_conf::net_conf::ControllerHost::parse("head(10.0.0.1)").unwrap()];
    conf.net.slurmctld_port = 7817;
    let r = JobRecord {
        id: 7,
        nodes: vec!["gpu03".into(), "gpu04".into()],
        cpus_per_node: vec![2, 2],
        tasks_per_node: vec![1, 1],
        ntasks: 2,
        ..Default::default()
    };
    let env: BTreeMap<String, String> = batch_environment(&r, &conf, Path::new("/s"))
        .into_iter()
        .collect();
    let get = |k: &str| env.get(k).map(String::as_str);
    assert_eq!(
        get("SLURM_WORKING_CLUSTER"),
        Some("lab:10.0.0.1:7817:9728:109")
    );
    assert_eq!(get("SLURM_TOPOLOGY_ADDR"), Some("gpu03"), "the batch host");
    assert_eq!(get("SLURM_TOPOLOGY_ADDR_PATTERN"), Some("node"));
    assert_eq!(get("SLURM_NODE_ALIASES"), Some("(null)"));
    assert_eq!(
        get("SLURM_TASK_PID"),
        None,
        "filled in by the agent's child"
    );
}

#[test]
fn steps_ended_by_a_signal_are_cancelled_not_failed() {
    // A one-minute job with two srun steps: one killed by a signal of its own before
    // the limit, one terminated when the limit comes.
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    c.schedule(0);
    // Side by side: the second overlaps the first.
    for overlap in [false, true] {
        let req = StepRequest {
            overlap,
            ..Default::default()
        };
        c.start_step(id, &req, &alice(), 1).unwrap();
    }
    let ended = |effects: Vec<Effect>| {
        effects
            .iter()
            .find_map(|e| match e {
                Effect::PersistStep(s) => Some((s.state, s.exit_code, s.signal)),
                _ => None,
            })
            .unwrap()
    };
    // As slurmdbd records a step whose wait status says "signalled": CANCELLED.
    let early = c.end_step(id, 0, 0, 15, &alice(), 30).unwrap();
    assert_eq!(ended(early), (JobState::Cancelled, 0, 15));
    let at_limit = c.end_step(id, 1, 0, 15, &alice(), 61).unwrap();
    assert_eq!(ended(at_limit), (JobState::Cancelled, 0, 15));
    // The job itself times out, its shell killed by the signal: its batch step is
    // cancelled as well.
    let effects = c.job_ended(&timed_out(id, 0, 15, 62), 62);
    assert_eq!(
        step_states(&effects),
        [(StepId::Batch, JobState::Cancelled, 0, 15)]
    );
}

#[test]
fn a_timed_out_jobs_steps_are_cancelled_and_its_shell_failed_if_it_exited_in_error() {
    // A third step whose srun never reported: it ends with the job, signalled; the
    // shell, left to exit on its own after its srun was killed, exits 1.
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    c.schedule(0);
    c.start_step(id, &StepRequest::default(), &alice(), 1)
        .unwrap();
    let effects = c.job_ended(&timed_out(id, 1, 0, 62), 62);
    assert_eq!(
        step_states(&effects),
        [
            (StepId::Batch, JobState::Failed, 1, 0),
            (StepId::Number(0), JobState::Cancelled, 0, 15)
        ]
    );
}

fn timed_out(id: JobId, exit_code: i32, signal: i32, now: i64) -> JobEnded {
    JobEnded {
        signal,
        ..ended(id, JobState::Timeout, exit_code, now)
    }
}

fn step_states(effects: &[Effect]) -> Vec<(StepId, JobState, i32, i32)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistStep(s) => Some((s.step, s.state, s.exit_code, s.signal)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_batch_environment_has_slurms_task_and_memory_variables() {
    let conf = conf(1, 4);
    let mut r = JobRecord {
        id: 7,
        nodes: vec!["node01".into()],
        cpus_per_node: vec![3],
        tasks_per_node: vec![1],
        ntasks: 1,
        cpus_per_task: 3,
        mem_per_node: 1500,
        mem_default: Some(MemoryRequest::PerCpu(500)),
        ..Default::default()
    };
    r.desc.cpus_per_task = Some(3);
    let env = |r: &JobRecord| -> BTreeMap<String, String> {
        batch_environment(r, &conf, Path::new("/s"))
            .into_iter()
            .filter(|(k, _)| {
                k.starts_with("SLURM_NTASKS")
                    || k.starts_with("SLURM_NPROCS")
                    || k.starts_with("SLURM_MEM")
                    || k.starts_with("SLURM_GPUS")
            })
            .collect()
    };
    let vars = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // `sbatch -c 3` under DefMemPerCPU=500: memory per CPU, no task count.
    assert_eq!(env(&r), vars(&[("SLURM_MEM_PER_CPU", "500")]));
    // salloc's command sees only the memory asked, not the partition's default.
    assert!(!allocation_variables(&r, "test")
        .iter()
        .any(|(k, _)| k.starts_with("SLURM_MEM")));
    // `-N 2 --ntasks-per-node=2 --mem=700`: the tasks asked, memory per node.
    r.desc.ntasks_per_node = Some(2);
    r.ntasks = 4;
    r.desc.memory = Some(MemoryRequest::PerNode(700));
    r.mem_default = None;
    r.mem_per_node = 700;
    assert_eq!(
        env(&r),
        vars(&[
            ("SLURM_MEM_PER_NODE", "700"),
            ("SLURM_NPROCS", "4"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_NTASKS_PER_NODE", "2"),
        ])
    );
    // `-n 2 --gpus-per-task=1 --mem-per-cpu=300`.
    r.desc.ntasks_per_node = None;
    r.desc.ntasks = Some(2);
    r.ntasks = 2;
    r.desc.memory = Some(MemoryRequest::PerCpu(300));
    r.desc.gpus_per_task = Some((None, 1));
    assert_eq!(
        env(&r),
        vars(&[
            ("SLURM_GPUS_PER_TASK", "1"),
            ("SLURM_MEM_PER_CPU", "300"),
            ("SLURM_NPROCS", "2"),
            ("SLURM_NTASKS", "2"),
        ])
    );
    // No memory asked and no default: neither variable.
    r.desc.memory = None;
    r.desc.gpus_per_task = Some((Some("a100".into()), 2));
    assert_eq!(
        env(&r),
        vars(&[
            ("SLURM_GPUS_PER_TASK", "a100:2"),
            ("SLURM_NPROCS", "2"),
            ("SLURM_NTASKS", "2"),
        ])
    );
}

#[test]
fn steps_spread_tasks_over_the_allocation_in_blocks() {
    let mut c = Controller::new(conf(2, 8), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(16, 600);
    d.nodes = Some((2, 2));
    d.ntasks_per_node = Some(8);
    let (id, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    let (plan, _) = c
        .start_step(
            id,
            &StepRequest {
                argv: vec!["hostname".into()],
                name: "hostname".into(),
                ..Default::default()
            },
            &alice(),
            5,
        )
        .unwrap();
    assert_eq!(plan.step, 0);
    assert_eq!(plan.ntasks, 16);
    assert_eq!(plan.nodes[0].2, (0..8).collect::<Vec<u32>>());
    assert_eq!(plan.nodes[1].2, (8..16).collect::<Vec<u32>>());
    let (plan, _) = c
        .start_step(
            id,
            &StepRequest {
                ntasks: Some(2),
                // Beside step 0, which still holds every CPU.
                overlap: true,
                ..Default::default()
            },
            &alice(),
            6,
        )
        .unwrap();
    assert_eq!(
        (plan.step, plan.nodes.len()),
        (1, 2),
        "one task on each node"
    );
    let err = c
        .start_step(
            id,
            &StepRequest {
                ntasks: Some(17),
                ..Default::default()
            },
            &alice(),
            7,
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        format!("Unable to create step for job {id}: More processors requested than permitted")
    );
    // -w and -x choose among the allocation's nodes.
    let step_on = |c: &mut Controller, nodelist: Option<&str>, exclude: Option<&str>| {
        c.start_step(
            id,
            &StepRequest {
                ntasks: Some(2),
                nodelist: nodelist.map(str::to_string),
                exclude: exclude.map(str::to_string),
                overlap: true,
                ..Default::default()
            },
            &alice(),
            8,
        )
        .map(|(plan, _)| {
            plan.nodes
                .iter()
                .map(|n| (n.0.clone(), n.2.clone()))
                .collect::<Vec<_>>()
        })
        .map_err(|e| e.message)
    };
    assert_eq!(
        step_on(&mut c, Some("node02"), None),
        Ok(vec![("node02".to_string(), vec![0, 1])])
    );
    assert_eq!(
        step_on(&mut c, None, Some("node01")),
        Ok(vec![("node02".to_string(), vec![0, 1])])
    );
    let not_available = format!(
        "Unable to create step for job {id}: Requested node configuration is not available"
    );
    assert_eq!(
        step_on(&mut c, Some("node09"), None),
        Err(not_available.clone())
    );
    assert_eq!(
        step_on(&mut c, None, Some("node[01-02]")),
        Err(not_available)
    );
}

#[test]
fn a_step_waits_for_the_cpus_the_jobs_running_steps_hold_unless_it_overlaps() {
    // A 4-task job on one 4-CPU node.
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    let start = |c: &mut Controller, req: StepRequest| {
        c.start_step(id, &req, &alice(), 1)
            .map(|(plan, _)| plan.step)
            .map_err(|e| (e.code, e.message))
    };
    let busy = Err((
        ErrorCode::Busy,
        format!("Job {id} step creation temporarily disabled, retrying (Requested nodes are busy)"),
    ));
    // `srun -n 1 --exact` twice: one CPU each, side by side.
    let exact = StepRequest {
        ntasks: Some(1),
        exact: true,
        ..Default::default()
    };
    assert_eq!(start(&mut c, exact.clone()), Ok(0));
    assert_eq!(start(&mut c, exact.clone()), Ok(1));
    // `srun -n 3` needs three: two are free, so it waits; it was not made a step.
    let three = StepRequest {
        ntasks: Some(3),
        ..Default::default()
    };
    assert_eq!(start(&mut c, three.clone()), busy);
    // With --overlap it runs beside them.
    assert_eq!(
        start(
            &mut c,
            StepRequest {
                overlap: true,
                ..three.clone()
            }
        ),
        Ok(2)
    );
    // Step 0 ends: three CPUs are free (the overlapping step holds none).
    c.end_step(id, 0, 0, 0, &alice(), 2).unwrap();
    assert_eq!(start(&mut c, three.clone()), Ok(3));
    // Without --exact step 3 holds every CPU of the node: the next one waits even for
    // one CPU, until step 3 ends.
    assert_eq!(start(&mut c, exact.clone()), busy);
    c.end_step(id, 3, 0, 0, &alice(), 3).unwrap();
    c.end_step(id, 1, 0, 0, &alice(), 3).unwrap();
    assert_eq!(start(&mut c, exact.clone()), Ok(4));
    // A requeued job's new run: the steps of its first run, whose srun never said they
    // ended, hold nothing.
    assert_eq!(start(&mut c, exact.clone()), Ok(5), "beside step 4");
    c.requeue(id, None, &alice(), 10).unwrap();
    c.job_ended(
        &JobEnded {
            run: 0,
            ..ended(id, JobState::Requeued, 0, 11)
        },
        11,
    );
    c.schedule(12);
    assert_eq!(c.job(id).unwrap().state, JobState::Running);
    let again = |c: &mut Controller| {
        c.start_step(
            id,
            &StepRequest {
                ntasks: Some(4),
                ..Default::default()
            },
            &alice(),
            13,
        )
        .map(|(plan, _)| plan.step)
        .map_err(|e| e.message)
    };
    assert_eq!(again(&mut c), Ok(0), "all four CPUs are the new run's");
    // More than the job holds at all is refused, not waited for.
    assert_eq!(
        start(
            &mut c,
            StepRequest {
                ntasks: Some(5),
                ..Default::default()
            }
        )
        .map_err(|e| e.1),
        Err(format!(
            "Unable to create step for job {id}: More processors requested than permitted"
        ))
    );
}

#[test]
fn refusals_change_nothing_and_use_slurms_words() {
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    let mut d = desc(1, 60);
    d.partition = Some("nosuch".into());
    assert_eq!(
        c.prepare(d, &alice(), "a", "a", 0).unwrap_err().message,
        BAD_PARTITION
    );
    assert_eq!(
        c.prepare(desc(5, 60), &alice(), "a", "a", 0)
            .unwrap_err()
            .message,
        NODE_CONFIG
    );
    let mut d = desc(1, 60);
    d.gres = vec![sluice_proto::types::GresRequest {
        name: "gpu".into(),
        gres_type: None,
        count: 1,
    }];
    assert_eq!(
        c.prepare(d, &alice(), "a", "a", 0).unwrap_err().message,
        "Invalid generic resource (gres) specification"
    );
    assert!(c.visible_jobs(0).is_empty());
    let _ = c.schedule(0);
}

#[test]
fn a_restart_takes_back_running_and_pending_jobs() {
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (a, _) = submit(&mut c, desc(2, 600), &mut next, 0);
    c.schedule(0);
    let (b, _) = submit(&mut c, desc(1, 600), &mut next, 1);
    c.schedule(1);
    let (jobs, steps) = c.accounting();
    let mut c2 = Controller::new(conf(1, 2), Path::new("/s"), jobs, steps, 2);
    c2.agent_registered("node01", &[(a, 0)], 2);
    assert_eq!(c2.job(a).unwrap().state, JobState::Running);
    assert_eq!(
        c2.job(b).unwrap().state,
        JobState::Pending,
        "the node is still full"
    );
    let effects = c2.job_ended(&ended(a, JobState::Completed, 0, 10), 10);
    assert_eq!(launches(&effects), vec![(b.0, vec!["node01".into()])]);
}

#[test]
fn a_running_job_cancelled_just_before_a_restart_is_still_ended() {
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (a, _) = submit(&mut c, desc(2, 600), &mut next, 0);
    c.schedule(0);
    // scancel at 5: who cancelled is written before the end is ordered.
    let req = CancelRequest {
        jobs: vec![(a.0, None)],
        ..Default::default()
    };
    let effects = c.cancel(&req, &alice(), 5).unwrap().effects;
    let written = effects.iter().position(
        |e| matches!(e, Effect::Persist(r) if r.id == a.0 && r.cancelled_by == Some(1000)),
    );
    let ordered = effects
        .iter()
        .position(|e| matches!(e, Effect::Terminate { .. }));
    assert!(written.is_some() && written < ordered, "{effects:?}");
    // The controller restarts before the end is reported, the order perhaps never
    // sent: the agent registers with the job still running, and its end is ordered
    // again rather than the job going on.
    let (jobs, steps) = c.accounting();
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), jobs, steps, 6);
    let effects = c.agent_registered("node01", &[(a, 0)], 6);
    assert!(
        effects.contains(&Effect::EndRun {
            node: "node01".into(),
            job_id: a,
            run: 0,
            state: JobState::Cancelled,
        }),
        "{effects:?}"
    );
    c.job_ended(&ended(a, JobState::Cancelled, 0, 7), 7);
    assert_eq!(c.job(a).unwrap().state, JobState::Cancelled);
}

#[test]
fn finished_jobs_are_purged_unless_a_dependency_or_their_array_still_needs_them() {
    // One node of 4 CPUs; MinJobAge 10 s.
    let mut conf = conf(1, 4);
    conf.min_job_age = 10;
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    // Job 1 fails; job 2 waits on its success (never), job 3 is unrelated.
    let (failed, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    let mut d = desc(1, 60);
    d.dependency = Some(format!("afterok:{failed}"));
    let (waiting, _) = submit(&mut c, d, &mut next, 0);
    let (other, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    // An array of two tasks: task 1 ends early, task 0 runs on.
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1], None));
    let (array, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    c.job_ended(&ended(failed, JobState::Failed, 1, 1), 1);
    c.job_ended(&ended(other, JobState::Completed, 0, 1), 1);
    c.job_ended(&ended(JobId(array.0 + 1), JobState::Completed, 0, 1), 1);
    c.schedule(1);
    assert_eq!(c.job(waiting).unwrap().reason, "DependencyNeverSatisfied");

    // Within MinJobAge nothing goes; past it, only the unrelated job.
    assert_eq!(c.purge(5), 0);
    assert_eq!(c.purge(100), 1);
    assert!(c.job(other).is_none());
    assert!(c.job(failed).is_some(), "job 2's dependency reads it");
    assert!(c.job(JobId(array.0 + 1)).is_some(), "its array still runs");
    assert_eq!(c.job(waiting).unwrap().reason, "DependencyNeverSatisfied");

    // Once job 2 is gone and the array has ended, the rest go too.
    let cancel = CancelRequest {
        jobs: vec![(waiting.0, None), (array.0, None)],
        ..Default::default()
    };
    c.cancel(&cancel, &alice(), 100).unwrap();
    c.job_ended(&ended(array, JobState::Cancelled, 0, 100), 100);
    assert_eq!(c.purge(200), 4);
    assert!(c.visible_jobs(200).is_empty());
}

#[test]
fn a_request_naming_one_job_the_caller_may_not_touch_changes_none() {
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (busy, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let (mine, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    // A job of bob's, submitted as the server would for him.
    let bob = Caller {
        uid: 1001,
        gid: 1001,
        admin: false,
    };
    let p = c.prepare(desc(1, 600), &bob, "bob", "bob", 0).unwrap();
    let his = JobId(next);
    next += p.ids();
    c.accept(p.jobs(his), 0);
    let _ = next;
    let req = CancelRequest {
        jobs: vec![(mine.0, None), (his.0, None)],
        ..Default::default()
    };
    assert_eq!(
        c.cancel(&req, &alice(), 1),
        Err(ApiError::new(
            sluice_proto::error::ErrorCode::AccessDenied,
            format!("Kill job error on job id {his}: Access/permission denied")
        ))
    );
    assert_eq!(c.job(mine).unwrap().state, JobState::Pending);
    assert_eq!(c.job(his).unwrap().state, JobState::Pending);
    assert_eq!(c.job(busy).unwrap().state, JobState::Running);
}

#[test]
fn gpu_jobs_get_the_cpus_and_memory_that_come_with_each_gpu() {
    // One node of 32 CPUs, 64 GB and 4 GPUs; the partition gives 4 CPUs and 1000 MiB
    // with each GPU unless the job says otherwise.
    let text = "ClusterName=g\nGresTypes=gpu\n\
                NodeName=g1 CPUs=32 RealMemory=64000 Gres=gpu:4\n\
                PartitionName=gpu Nodes=g1 Default=YES DefCpuPerGPU=4 DefMemPerGPU=1000\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let mut conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    conf.gpu_defaults[0] = crate::config::GpuDefaults {
        cpus_per_gpu: Some(4),
        mem_per_gpu_mib: Some(1000),
    };
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let gpus = |n: u32| {
        vec![sluice_proto::types::GresRequest {
            name: "gpu".into(),
            gres_type: None,
            count: n,
        }]
    };
    // Two GPUs, nothing else said: 8 CPUs and 2000 MiB.
    let mut d = desc(1, 60);
    d.gres = gpus(2);
    let (a, _) = submit(&mut c, d, &mut next, 0);
    // One GPU with its own CPUs per GPU and memory: those.
    let mut d = desc(1, 60);
    d.gres = gpus(1);
    d.cpus_per_gpu = Some(2);
    d.memory = Some(MemoryRequest::PerNode(500));
    let (b, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    let got = |id: JobId| {
        let r = c.job(id).unwrap();
        (
            r.state,
            r.cpus_per_node.clone(),
            r.mem_per_node,
            r.gpus_per_node.clone(),
        )
    };
    assert_eq!(got(a), (JobState::Running, vec![8], 2000, vec![vec![0, 1]]));
    assert_eq!(got(b), (JobState::Running, vec![2], 500, vec![vec![2]]));
}

#[test]
fn gpu_options_together_are_one_constraint_not_a_sum() {
    // Two nodes of 4 GPUs. `-N2 --gpus=3 --gpus-per-node=2` is two GPUs on each node (3
    // spread evenly is 2 per node, and 2 per node asked): 2 + 2, not 2 + 2 on each.
    let text = "ClusterName=g\nGresTypes=gpu\n\
                NodeName=g[1-2] CPUs=8 RealMemory=8000 Gres=gpu:4\n\
                PartitionName=gpu Nodes=g[1-2] Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(2, 60);
    d.nodes = Some((2, 2));
    d.gpus = Some((None, 3));
    d.gpus_per_node = Some((None, 2));
    let (id, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.gpus_per_node.clone()),
        (JobState::Running, vec![vec![0, 1], vec![0, 1]])
    );
}

#[test]
fn a_job_asking_no_memory_gets_def_mem_per_cpu() {
    // DefMemPerCPU=1000: three one-CPU tasks on one node hold 3000 MiB there.
    let text = "ClusterName=m\nDefMemPerCPU=1000\n\
                NodeName=m1 CPUs=8 RealMemory=8000\n\
                PartitionName=p Nodes=m1 Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(3, 60), &mut next, 0);
    c.schedule(0);
    let r = c.job(id).unwrap();
    assert_eq!((r.state, r.mem_per_node), (JobState::Running, 3000));
    // Shown as asked (`MinMemoryCPU=1000M`), as Slurm shows its default.
    assert_eq!(r.memory_request(), Some(MemoryRequest::PerCpu(1000)));
}

#[test]
fn a_resumed_node_takes_work_once_its_agent_has_answered() {
    // One 4-CPU node, drained at t=10; a job waits. Resumed at t=100, the node is
    // `idle*` (its agent not heard from since) and takes nothing until its agent answers
    // a ping sent two seconds or more after the resume: at t=101 not yet, at t=102 the
    // job starts. The node's agent registered at t=5; the job's end makes it busy
    // until t=130.
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    c.agent_registered("node01", &[], 5);
    c.update_node("node01", "DRAIN", Some("disks"), &root(), 10)
        .unwrap();
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 20);
    assert!(launches(&c.schedule(20)).is_empty());
    let effects = c
        .update_node("node01", "RESUME", None, &root(), 100)
        .unwrap();
    assert!(launches(&effects).is_empty());
    let n = &c.nodes()[0];
    assert_eq!(
        (n.state.as_str(), n.agent_up, n.reason.as_deref()),
        ("idle", false, None)
    );
    assert_eq!(
        c.job(id).unwrap().reason,
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority \
         partitions"
    );
    assert!(launches(&c.agents_answered(&["node01".into()], 101)).is_empty());
    assert_eq!(
        launches(&c.agents_answered(&["node01".into()], 102)),
        vec![(id.0, vec!["node01".to_string()])]
    );
    let n = &c.nodes()[0];
    assert_eq!(
        (n.agent_up, n.agent_start, n.last_busy),
        (true, Some(5), Some(5))
    );
    c.job_ended(&ended(id, JobState::Completed, 0, 130), 130);
    assert_eq!(c.nodes()[0].last_busy, Some(130));
}

#[test]
fn enforced_associations_decide_who_may_submit_to_which_account() {
    // AccountingStorageEnforce=associations,qos: alice may submit only once she has an
    // association, and only with a QOS it allows; a refusal uses no job id.
    let mut conf = conf(1, 4);
    conf.enforce = sluice_conf::slurm_conf::AccountingEnforce::parse("associations,qos").unwrap();
    let mut c = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let try_submit = |c: &mut Controller, account: Option<&str>, qos: Option<&str>| {
        let d = JobDescription {
            account: account.map(str::to_string),
            qos: qos.map(str::to_string),
            ..desc(1, 60)
        };
        c.prepare(d, &alice(), "alice", "alice", 0)
            .map(|p| p.jobs(JobId(1))[0].clone())
    };
    assert_eq!(
        try_submit(&mut c, None, None).unwrap_err().message,
        crate::accounts::BAD_ACCOUNT
    );
    let admin = Requester {
        name: "root".into(),
        superuser: true,
    };
    let add = |c: &mut Controller, request: AccountsRequest| {
        c.change_accounts(&admin, &request, true).unwrap().1
    };
    let effects = add(
        &mut c,
        AccountsRequest::AddAccounts {
            names: vec!["physics".into()],
            description: None,
            organization: None,
            parent: None,
            settings: Default::default(),
        },
    );
    assert!(
        matches!(effects.as_slice(), [Effect::PersistAccounts(rows)] if rows.len() == 2),
        "the account and its association are written: {effects:?}"
    );
    add(
        &mut c,
        AccountsRequest::AddUsers {
            names: vec!["alice".into()],
            accounts: vec!["physics".into()],
            default_account: None,
            partitions: Vec::new(),
            admin_level: None,
            settings: Default::default(),
        },
    );
    let r = try_submit(&mut c, None, None).unwrap();
    assert_eq!((&*r.account, &*r.qos), ("physics", "normal"));
    let r = try_submit(&mut c, Some("PHYSICS"), Some("normal")).unwrap();
    assert_eq!(&*r.account, "physics");
    assert_eq!(
        try_submit(&mut c, Some("chem"), None).unwrap_err().message,
        crate::accounts::BAD_ACCOUNT
    );
    assert_eq!(
        try_submit(&mut c, None, Some("nosuch"))
            .unwrap_err()
            .message,
        crate::accounts::BAD_QOS
    );
    // A job pending in the account keeps it from being deleted.
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    let delete = AccountsRequest::DeleteAccounts {
        names: vec!["physics".into()],
    };
    let err = c.change_accounts(&admin, &delete, true).unwrap_err();
    assert_eq!(
        err,
        AccountsError::JobsActive(vec![ActiveJob {
            id: id.0,
            cluster: "test".into(),
            account: "physics".into(),
            user: "alice".into()
        }])
    );
}

#[test]
fn without_enforcement_jobs_keep_todays_accounts() {
    let mut c = Controller::new(conf(1, 4), Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let d = JobDescription {
        account: Some("anything".into()),
        ..desc(1, 60)
    };
    let r = c
        .prepare(d, &alice(), "alice", "alice", 0)
        .unwrap()
        .jobs(JobId(1))[0]
        .clone();
    assert_eq!((&*r.account, &*r.qos), ("anything", "normal"));
    let r = c
        .prepare(desc(1, 60), &alice(), "alice", "alice", 0)
        .unwrap()
        .jobs(JobId(1))[0]
        .clone();
    assert_eq!(
        &*r.account, "alice",
        "a user without association: their name"
    );
}

/// A reservation request as `scontrol create reservation` sends it.
fn resv_req(name: &str, nodes: &str, start: i64, secs: i64, users: &[&str]) -> ReservationChange {
    ReservationChange {
        op: Some(ReservationOp::Create),
        name: (!name.is_empty()).then(|| name.to_string()),
        start: Some(start),
        duration: Some(secs),
        nodes: Some(nodes.into()),
        users: Some(ListChange {
            op: ListOp::Set,
            items: users.iter().map(|u| u.to_string()).collect(),
        }),
        ..Default::default()
    }
}

pub(crate) fn root() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        admin: true,
    }
}

/// Persisted reservation rows of some effects, as (name, record present).
fn resv_rows(effects: &[Effect]) -> Vec<(String, bool)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistReservation { name, record } => Some((name.clone(), record.is_some())),
            _ => None,
        })
        .collect()
}

#[test]
fn reservations_are_for_operators_named_like_slurms_kept_and_restored() {
    let uids: BTreeMap<String, u32> = [("alice".to_string(), 1000)].into();
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    // Only operators: alice is refused with Slurm's words.
    let r = c.change_reservation(
        &resv_req("", "node01", 100, 3600, &["alice"]),
        &uids,
        &alice(),
        0,
    );
    assert_eq!(r.unwrap_err().message, "Invalid user id");
    // Unknown users are refused too.
    let r = c.change_reservation(
        &resv_req("", "node01", 100, 3600, &["bob"]),
        &uids,
        &root(),
        0,
    );
    assert_eq!(r.unwrap_err().message, "Invalid user id");
    let r = c.change_reservation(
        &resv_req("", "node09", 100, 3600, &["alice"]),
        &uids,
        &root(),
        0,
    );
    assert_eq!(r.unwrap_err().message, "Invalid node name specified");
    // Without a name: USER_ID, the id counting from 1; the record written first.
    let (name, effects) = c
        .change_reservation(
            &resv_req("", "node01", 100, 3600, &["alice"]),
            &uids,
            &root(),
            0,
        )
        .unwrap();
    assert_eq!(name, "alice_1");
    assert_eq!(resv_rows(&effects), vec![("alice_1".to_string(), true)]);
    let listed = c.reservation_records(0);
    assert_eq!(listed[0].flags, vec!["SPEC_NODES".to_string()]);
    assert_eq!((listed[0].cores, listed[0].state.as_str()), (2, "INACTIVE"));

    // Submissions: only to reservations that exist and admit the user.
    let mut d = desc(1, 600);
    d.reservation = Some("nosuch".into());
    let e = c.prepare(d, &alice(), "alice", "alice", 0).unwrap_err();
    assert_eq!(e.message, "Requested reservation is invalid");
    let mut next = 1;
    let mut d = desc(2, 600);
    d.reservation = Some("alice_1".into());
    let (job, effects) = submit(&mut c, d, &mut next, 0);
    assert!(launches(&effects).is_empty());
    c.schedule(0);
    assert_eq!(c.job(job).unwrap().reason, "Reservation");
    // At its start the job runs there.
    let effects = c.schedule(100);
    assert_eq!(launches(&effects), vec![(job.0, vec!["node01".into()])]);

    // A restart from the records: the same reservation, the next id after it.
    let rows: Vec<(String, String)> = effects_rows(&c);
    let (jobs, steps) = c.accounting();
    let mut c2 = Controller::new(conf(2, 2), Path::new("/s"), jobs, steps, 200);
    c2.restore_reservations(&rows, 200);
    assert_eq!(c2.reservation_records(200)[0].name, "alice_1");
    assert_eq!(c2.reservation_records(200)[0].state, "ACTIVE");
    let (name, _) = c2
        .change_reservation(
            &resv_req("", "node02", 100_000, 60, &["alice"]),
            &uids,
            &root(),
            200,
        )
        .unwrap();
    assert_eq!(name, "alice_2");
    // In use: not deleted.
    c2.agent_registered("node01", &[(job, 0)], 200);
    let mut del = ReservationChange {
        op: Some(ReservationOp::Delete),
        name: Some("alice_1".into()),
        ..Default::default()
    };
    assert_eq!(
        c2.change_reservation(&del, &uids, &root(), 200)
            .unwrap_err()
            .message,
        "Requested reservation is in use"
    );
    del.name = Some("alice_2".into());
    let (_, effects) = c2.change_reservation(&del, &uids, &root(), 200).unwrap();
    assert_eq!(resv_rows(&effects), vec![("alice_2".to_string(), false)]);
}

/// The reservation rows a controller would have written (its records now).
fn effects_rows(c: &Controller) -> Vec<(String, String)> {
    c.reservation_records(0)
        .into_iter()
        .map(|r| (r.name.clone(), serde_json::to_string(&r).unwrap()))
        .collect()
}

#[test]
fn accounting_limits_hold_jobs_refuse_submissions_and_follow_sacctmgr() {
    // AccountingStorageEnforce=limits on one node of 4 CPUs. physics: GrpTRES cpu=1;
    // alice in physics: MaxSubmitJobs=3, MaxWall 10 minutes.
    use sluice_proto::accounts::{AssocChange, AssocFilter, Change, LimitsChange};
    let mut conf = conf(1, 4);
    conf.enforce = sluice_conf::slurm_conf::AccountingEnforce::parse("limits").unwrap();
    let mut c = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let admin = Requester {
        name: "root".into(),
        superuser: true,
    };
    let cpus = |n: i64| -> AssocChange {
        AssocChange {
            limits: LimitsChange {
                grp_tres: Some([("cpu".to_string(), u64::try_from(n).ok())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    };
    let request = AccountsRequest::AddAccounts {
        names: vec!["physics".into()],
        description: None,
        organization: None,
        parent: None,
        settings: cpus(1),
    };
    c.change_accounts(&admin, &request, true).unwrap();
    let user_limits = AssocChange {
        limits: LimitsChange {
            max_submit_jobs: Some(Change::Set(3)),
            max_wall: Some(Change::Set(10)),
            ..Default::default()
        },
        ..Default::default()
    };
    let request = AccountsRequest::AddUsers {
        names: vec!["alice".into()],
        accounts: vec!["physics".into()],
        default_account: None,
        partitions: Vec::new(),
        admin_level: None,
        settings: user_limits,
    };
    c.change_accounts(&admin, &request, true).unwrap();

    // A job naming no time gets alice's MaxWall (10 min, shorter than the partition's
    // hour); one asking 20 minutes waits with AssocMaxWallDurationPerJobLimit.
    let mut next = 1;
    let no_time = JobDescription {
        time_limit: None,
        ..desc(1, 0)
    };
    let (first, _) = submit(&mut c, no_time, &mut next, 0);
    assert_eq!(c.job(first).unwrap().time_limit, Some(600));
    assert_eq!(launches(&c.schedule(0)).len(), 1);
    let (long, _) = submit(&mut c, desc(1, 1200), &mut next, 0);
    let (second, _) = submit(&mut c, desc(1, 60), &mut next, 0);
    c.schedule(1);
    let reason = |c: &Controller, id: JobId| c.job(id).unwrap().reason;
    assert_eq!(reason(&c, long), "AssocMaxWallDurationPerJobLimit");
    assert_eq!(reason(&c, second), "AssocGrpCpuLimit");

    // A fourth job is over MaxSubmitJobs: refused with Slurm's two lines, no id used.
    let err = c
        .prepare(desc(1, 60), &alice(), "alice", "alice", 2)
        .unwrap_err();
    assert_eq!(
        err.message,
        "AssocMaxSubmitJobLimit\nJob violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    );

    // sacctmgr raises physics to 2 CPUs: the held job starts at the next pass.
    let request = AccountsRequest::ModifyAccounts {
        filter: AssocFilter {
            accounts: vec!["physics".into()],
            ..Default::default()
        },
        description: None,
        organization: None,
        settings: cpus(2),
    };
    c.change_accounts(&admin, &request, true).unwrap();
    let effects = c.schedule(3);
    assert_eq!(
        launches(&effects).iter().map(|l| l.0).collect::<Vec<_>>(),
        vec![second.0]
    );
}

#[test]
fn partition_access_lists_refuse_groups_and_hold_accounts_with_slurms_words() {
    // AllowGroups=hpc refuses alice (group alice); AllowAccounts=physics leaves her job
    // in account chem pending with Slurm's sentence.
    let mut conf = conf(1, 4);
    conf.cluster.partitions[0].access.allow_groups = Some(vec!["hpc".into()]);
    let mut c = Controller::new(conf.clone(), Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    assert_eq!(
        c.prepare(desc(1, 60), &alice(), "alice", "alice", 0)
            .unwrap_err()
            .message,
        "User's group not permitted to use this partition"
    );
    conf.cluster.partitions[0].access = Default::default();
    conf.cluster.partitions[0].access.allow_accounts = Some(vec!["physics".into()]);
    let mut c = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let mut next = 1;
    let d = JobDescription {
        account: Some("chem".into()),
        ..desc(1, 60)
    };
    let (id, _) = submit(&mut c, d, &mut next, 0);
    assert!(launches(&c.schedule(0)).is_empty());
    assert_eq!(
        c.job(id).unwrap().reason,
        "Job's account not permitted to use this partition (debug allows physics not chem)"
    );
}

#[test]
fn enforce_part_limits_refuses_what_the_partition_does_not_allow_with_slurms_words() {
    // One node of 2 CPUs, MaxTime one hour. With EnforcePartLimits=ALL: real Slurm
    // 22.05's refusals (enforce_err_*); without it, the job over MaxTime waits.
    let mut strict = conf(1, 2);
    strict.enforce_part_limits = true;
    let mut c = Controller::new(strict, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let mut refusal = |d: JobDescription| {
        c.prepare(d, &alice(), "alice", "alice", 0)
            .unwrap_err()
            .message
    };
    assert_eq!(
        refusal(desc(1, 2 * 86_400)),
        "Requested time limit is invalid (missing or exceeds some limit)"
    );
    assert_eq!(
        refusal(desc(100, 60)),
        "More processors requested than permitted"
    );
    let wide = JobDescription {
        nodes: Some((5, 5)),
        ..desc(1, 60)
    };
    assert_eq!(refusal(wide), "More processors requested than permitted");
    // Two nodes fit in its two CPUs, but it has one node (the compat suite's 040).
    let two = JobDescription {
        nodes: Some((2, 2)),
        ..desc(1, 60)
    };
    assert_eq!(refusal(two), "Node count specification invalid");
    let fat = JobDescription {
        cpus_per_task: Some(64),
        ..desc(1, 60)
    };
    assert_eq!(refusal(fat), "More processors requested than permitted");

    let mut c = Controller::new(conf(1, 2), Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 2 * 86_400), &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(id).unwrap().reason, "PartitionTimeLimit");
    // scontrol show config shows the setting even when it is not set, as Slurm does.
    let shown = |c: &Controller| {
        c.config()
            .entries
            .into_iter()
            .find(|(k, _)| k == "EnforcePartLimits")
            .map(|(_, v)| v)
    };
    assert_eq!(shown(&c).as_deref(), Some("NO"));
}

#[test]
fn a_deleted_reservations_jobs_are_held_and_bad_requests_are_refused() {
    let uids: BTreeMap<String, u32> = [("alice".to_string(), 1000)].into();
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let (name, _) = c
        .change_reservation(
            &resv_req("r", "node01", 100, 600, &["alice"]),
            &uids,
            &root(),
            0,
        )
        .unwrap();
    // An account that does not exist: refused as Slurm refuses it.
    let mut bad = resv_req("s", "node02", 100, 600, &["alice"]);
    bad.accounts = Some(ListChange {
        op: ListOp::Set,
        items: vec!["nosuch".into()],
    });
    assert_eq!(
        c.change_reservation(&bad, &uids, &root(), 0)
            .unwrap_err()
            .message,
        "Invalid account or account/partition combination specified"
    );
    // A job longer than the reservation could never start in it: refused.
    let mut d = desc(1, 601);
    d.reservation = Some(name.clone());
    assert_eq!(
        c.prepare(d, &alice(), "alice", "alice", 0)
            .unwrap_err()
            .message,
        "Requested time limit is invalid (missing or exceeds some limit)"
    );
    // A job waiting for the reservation is held when it is deleted, as Slurm holds
    // it, and runs anywhere once released.
    let mut next = 1;
    let mut d = desc(1, 60);
    d.reservation = Some(name.clone());
    let (job, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    assert_eq!(c.job(job).unwrap().reason, "Reservation");
    let deleted = name.clone();
    let del = ReservationChange {
        op: Some(ReservationOp::Delete),
        name: Some(name),
        ..Default::default()
    };
    c.change_reservation(&del, &uids, &root(), 10).unwrap();
    c.schedule(10);
    let r = c.job(job).unwrap();
    assert_eq!(
        (r.state, r.hold, r.reason.as_str(), r.desc.reservation),
        (
            JobState::Pending,
            Some(Hold::ReservationDeleted(deleted)),
            "ReservationDeleted",
            None
        )
    );
    let effects = c.set_hold(job, None, false, &root(), 20).unwrap();
    assert_eq!(
        launches(&effects),
        vec![(job.0, vec!["node01".to_string()])]
    );
}

#[test]
fn private_data_jobs_hides_other_users_jobs_from_explain() {
    // One CPU: bob's job runs for ten minutes, alice's waits for it.
    let mut conf = conf(1, 1);
    conf.private_data = crate::config::PrivateData::parse("jobs,usage").unwrap();
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let bob = Caller {
        uid: 2000,
        gid: 2000,
        admin: false,
    };
    let p = c.prepare(desc(1, 600), &bob, "bob", "bob", 0).unwrap();
    let theirs = JobId(1);
    c.accept(p.jobs(theirs), 0);
    let mut next = 2;
    let (mine, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    assert_eq!(
        c.explain(theirs, None, &alice(), 10),
        Err(ApiError::invalid_job())
    );
    let e = c.explain(mine, None, &alice(), 10).unwrap();
    let x = e.expected.unwrap();
    assert_eq!(x.start, 600);
    assert_eq!(
        x.waits_for,
        [sluice_proto::explain::Awaited {
            job_id: None,
            user: None,
            end: 600
        }]
    );
    // An operator sees whose it is; without PrivateData everyone does.
    let root = Caller {
        uid: 0,
        gid: 0,
        admin: true,
    };
    let x = c.explain(mine, None, &root, 10).unwrap().expected.unwrap();
    assert_eq!(
        (x.waits_for[0].job_id, x.waits_for[0].user.as_deref()),
        (Some(theirs.0), Some("bob"))
    );
    assert_eq!(
        crate::config::PrivateData::parse("jobs,nosuch"),
        Err("PrivateData: unknown value 'nosuch'".to_string())
    );
    // PrivateData=users alone: the job is named, not whose it is.
    c.conf.private_data = crate::config::PrivateData::parse("users").unwrap();
    let x = c
        .explain(mine, None, &alice(), 10)
        .unwrap()
        .expected
        .unwrap();
    assert_eq!(
        (x.waits_for[0].job_id, x.waits_for[0].user.as_deref()),
        (Some(theirs.0), None)
    );
}

#[test]
fn a_job_the_configuration_no_longer_fits_fails_with_bad_constraints_in_its_story() {
    // Job 1 (8 tasks) is held on two nodes of 4 CPUs. The controller restarts with one
    // node: released, the job can never run there; it fails with BadConstraints, and
    // the audit trail says so.
    let mut before = Controller::new(conf(2, 4), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(8, 60);
    d.hold = true;
    let (id, _) = submit(&mut before, d, &mut next, 0);
    let record = before.job(id).expect("held").clone();
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![record], vec![], 10);
    c.take_audit();
    c.set_hold(id, None, false, &alice(), 20).expect("released");
    let r = c.job(id).expect("kept");
    assert_eq!(
        (r.state, r.reason.as_str()),
        (JobState::Failed, "BadConstraints")
    );
    let story: Vec<String> = c
        .take_audit()
        .iter()
        .map(|e| format!("{} {}", e.what.kind(), e.what.detail_json()))
        .collect();
    assert_eq!(
        story,
        [
            r#"released {"by":1000}"#.to_string(),
            r#"reason {"from":"JobHeldUser","limit":false,"to":"BadConstraints"}"#.to_string(),
            r#"ended {"exit_code":0,"released":[],"run":0,"signal":0,"state":"FAILED"}"#
                .to_string(),
        ]
    );
}

#[test]
fn a_dependency_on_an_array_names_its_tasks_in_task_order() {
    // --hold --array=0-2 as job 1 (task 2 holds id 1, tasks 0 and 1 ids 2 and 3); job 4
    // waits for the whole array to succeed.
    let mut c = Controller::new(conf(4, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2], None));
    d.hold = true;
    submit(&mut c, d, &mut next, 0);
    let mut after = desc(1, 600);
    after.dependency = Some("afterok:1".into());
    let (waiting, _) = submit(&mut c, after, &mut next, 0);
    let texts = cause_texts(&c, waiting);
    assert_eq!(
        texts,
        ["afterok:1: it waits for job 1 to complete successfully; \
          1_0 PENDING, 1_1 PENDING, 1_2 PENDING: not yet"]
    );
}

#[test]
fn explain_without_suggestions_answers_from_the_forecast_and_says_it_skipped_them() {
    // Two CPUs: job 1 holds one for ten minutes; job 2 asks both for an hour, from 600;
    // job 3 asks one for a quarter of an hour: it would delay job 2, so it waits until
    // job 2 ends (4200), unless it asks at most 9 minutes (ending before 600). With the
    // forecast made, the quick answer has the same start as the full one and says the
    // suggestions were skipped. The full one (its search complete) finds one CPU for
    // job 2, and the shorter time for job 3.
    let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let (two, _) = submit(&mut c, desc(2, 3600), &mut next, 0);
    let (three, _) = submit(&mut c, desc(1, 900), &mut next, 0);
    c.schedule(1);
    let work = c.forecast_wanted(1).expect("a forecast is due");
    c.forecast_made(work.make(), 1);

    let quick = |id| {
        let work = c.explain_begin(id, None, &alice(), 2, false).unwrap();
        c.explain_finish(work.compute(), &alice())
    };
    let options = |e: &Explanation| {
        e.suggestions
            .iter()
            .map(|s| (s.option.clone(), s.start))
            .collect::<Vec<_>>()
    };
    let q = quick(two);
    let full = c.explain(two, None, &alice(), 2).unwrap();
    assert_eq!(q.expected.as_ref().map(|x| x.start), Some(600));
    assert_eq!(q.expected, full.expected);
    assert_eq!(
        (q.suggestions.len(), q.suggestion_search),
        (0, SuggestionSearch::Skipped)
    );
    eprintln!("{:?}", full.suggestions);

    let q = quick(three);
    let full = c.explain(three, None, &alice(), 2).unwrap();
    assert_eq!(q.expected.as_ref().map(|x| x.start), Some(4200));
    assert_eq!(q.suggestion_search, SuggestionSearch::Skipped);
    assert_eq!(full.suggestion_search, SuggestionSearch::Complete);
    // At the next backfill pass (bf_interval 30 after the pass at 1), ending by 600.
    assert_eq!(options(&full), [("--time=9".to_string(), 31)]);
}

#[test]
fn a_new_forecast_waits_four_times_as_long_as_the_last_took() {
    // One CPU, busy for an hour, a job waiting. A forecast begun at 10 is done at 13
    // (three seconds): though the queue changes at once, the next is not begun before
    // 25; a forecast done within its second pauses a second.
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    submit(&mut c, desc(1, 3600), &mut next, 0);
    c.schedule(0);
    submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(10);
    let work = c.forecast_wanted(10).expect("a forecast is due");
    assert!(c.forecast_wanted(11).is_none(), "one at a time");
    c.forecast_made(work.make(), 13);
    submit(&mut c, desc(1, 600), &mut next, 14);
    c.schedule(14);
    assert!(c.forecast_wanted(14).is_none());
    assert!(c.forecast_wanted(24).is_none());
    let work = c.forecast_wanted(25).expect("due after the pause");
    c.forecast_made(work.make(), 25);
    submit(&mut c, desc(1, 600), &mut next, 25);
    c.schedule(25);
    assert!(c.forecast_wanted(25).is_none());
    assert!(c.forecast_wanted(26).is_some());
}

#[test]
fn a_job_waiting_for_its_begin_time_is_shown_starting_then_as_slurm_shows_it() {
    // One CPU, busy for an hour; a job that may begin at 7200 waits. With no forecast
    // and no plan for it, squeue --start shows its begin time, as Slurm's does; the
    // same job without --begin shows its backfill plan (when the first job ends).
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    submit(&mut c, desc(1, 3600), &mut next, 0);
    let mut later = desc(1, 600);
    later.begin = Some(7200);
    let (begins, _) = submit(&mut c, later, &mut next, 0);
    let (plain, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let shown = |id| {
        let r = c.job(id).unwrap();
        (r.reason, r.planned_start)
    };
    assert_eq!(shown(begins), ("BeginTime".to_string(), Some(7200)));
    assert_eq!(shown(plain), ("Resources".to_string(), Some(3600)));
}

/// Every job's record as the store would hold it, by id.
fn stored_records(c: &Controller) -> Vec<JobRecord> {
    c.accounting().0
}

#[test]
fn records_read_back_at_start_are_the_records_written() {
    // Jobs in every kind of state the store keeps, on three 2-CPU nodes: running on
    // two nodes, requeued with its run still ending, held, waiting on a dependency,
    // over its array's throttle, cancelled while pending (keeping its reason), ended.
    let mut c = Controller::new(conf(3, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (wide, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    let (requeued, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    let (ended_one, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    c.job_ended(&ended(ended_one, JobState::Completed, 0, 5), 5);
    c.requeue(requeued, None, &alice(), 6).unwrap();
    let (held, _) = submit(
        &mut c,
        JobDescription {
            hold: true,
            ..desc(1, 60)
        },
        &mut next,
        7,
    );
    let (waiting, _) = submit(
        &mut c,
        JobDescription {
            dependency: Some(format!("afterok:{}", wide.0)),
            ..desc(1, 60)
        },
        &mut next,
        7,
    );
    let (queued, _) = submit(&mut c, desc(4, 60), &mut next, 7);
    let (array, _) = submit(
        &mut c,
        JobDescription {
            array: Some((vec![0, 1, 2], Some(1))),
            ..desc(1, 60)
        },
        &mut next,
        7,
    );
    c.schedule(8);
    let cancel = CancelRequest {
        jobs: vec![(queued.0, None)],
        ..Default::default()
    };
    c.cancel(&cancel, &alice(), 9).unwrap();
    let shown = |c: &Controller, id: JobId| {
        let r = c.job(id).unwrap();
        (r.state, r.reason, r.nodes, r.ending_run.map(|e| e.node))
    };
    assert_eq!(
        [wide, requeued, held, waiting, queued, array].map(|id| shown(&c, id)),
        [
            (
                JobState::Running,
                "None".to_string(),
                vec!["node01".to_string(), "node02".to_string()],
                None
            ),
            // (Requeued, its run on node03 still completing: no reason yet, as Slurm.)
            (
                JobState::Pending,
                "None".into(),
                vec![],
                Some("node03".into())
            ),
            (JobState::Pending, "JobHeldUser".into(), vec![], None),
            (JobState::Pending, "Dependency".into(), vec![], None),
            (JobState::Cancelled, "Resources".into(), vec![], None),
            (JobState::Pending, "JobArrayTaskLimit".into(), vec![], None),
        ]
    );
    let written = stored_records(&c);
    let again = Controller::new(conf(3, 2), Path::new("/s"), written.clone(), vec![], 10);
    assert_eq!(stored_records(&again), written);
}

/// One 4-CPU node of 1000 MiB, `ReturnToService=rts`, `SlurmdTimeout=300`, the
/// controller running as uid 64030 (its `SlurmUser`); the agent registered at t=5.
fn liveness(rts: u8) -> Controller {
    let mut conf = conf(1, 4);
    conf.net.return_to_service = rts;
    conf.net.slurmd_timeout = 300;
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    c.set_slurm_uid(64030);
    c.agent_registered("node01", &[], 5);
    c
}

/// node01 as `sinfo` and `scontrol show node` get it: state, responding, reason, who
/// set it and when.
fn node01(c: &Controller) -> (String, bool, Option<String>, Option<(u32, i64)>) {
    let n = c.nodes().remove(0);
    (n.state, n.agent_up, n.reason, n.reason_set)
}

/// The node records an effect list keeps in the store: node name, serialised record
/// (removals left out).
pub(crate) fn node_rows(effects: &[Effect]) -> Vec<(String, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistNode {
                name,
                record: Some(r),
            } => Some((name.clone(), r.clone())),
            _ => None,
        })
        .collect()
}

/// The node records an effect list writes: (node, kept state and reason or removed).
fn node_writes(effects: &[Effect]) -> Vec<(String, Option<(String, String)>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistNode { name, record } => Some((
                name.clone(),
                record.as_ref().map(|r| {
                    let o: NodeOverride = serde_json::from_str(r).unwrap();
                    (o.state, o.reason)
                }),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn a_node_silent_past_slurmd_timeout_is_down_not_responding_and_stays_down_under_return_to_service_0(
) {
    // Its agent goes at t=10: `idle*` (no reason yet, as Slurm's NOT_RESPONDING flag),
    // DOWN at t=310 with Slurm's reason, set by SlurmUser then, and written to the
    // store. ReturnToService=0: its agent registering again at t=400 leaves it DOWN
    // (now responding: `down`, no `*`) until an operator resumes it.
    let mut c = liveness(0);
    c.agent_silent("node01", 10);
    assert_eq!(node01(&c), ("idle".into(), false, None, None));
    assert!(c.silent_expired(309).is_empty());
    let effects = c.silent_expired(310);
    assert_eq!(
        node_writes(&effects),
        [(
            "node01".to_string(),
            Some(("DOWN".to_string(), "Not responding".to_string()))
        )]
    );
    assert_eq!(
        node01(&c),
        (
            "down".into(),
            false,
            Some("Not responding".into()),
            Some((64030, 310))
        )
    );
    let effects = c.agent_registered("node01", &[], 400);
    assert!(node_writes(&effects).is_empty());
    assert_eq!(
        node01(&c),
        (
            "down".into(),
            true,
            Some("Not responding".into()),
            Some((64030, 310))
        )
    );
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 401);
    assert!(launches(&c.schedule(401)).is_empty());
    // The operator resumes it; its agent's next answer lets the job start.
    c.update_node("node01", "RESUME", None, &root(), 410)
        .unwrap();
    assert_eq!(
        launches(&c.agents_answered(&["node01".into()], 412)),
        [(id.0, vec!["node01".to_string()])]
    );
}

#[test]
fn return_to_service_1_brings_back_only_a_node_down_for_not_responding() {
    let mut c = liveness(1);
    c.agent_silent("node01", 10);
    c.silent_expired(310);
    let effects = c.agent_registered("node01", &[], 400);
    assert_eq!(node_writes(&effects), [("node01".to_string(), None)]);
    assert_eq!(node01(&c), ("idle".into(), true, None, None));
    // Set DOWN by an operator, it stays down when its agent registers again.
    c.update_node("node01", "DOWN", Some("bad fan"), &root(), 500)
        .unwrap();
    let effects = c.agent_registered("node01", &[], 510);
    assert!(node_writes(&effects).is_empty());
    assert_eq!(
        (node01(&c).0, node01(&c).2),
        ("down".into(), Some("bad fan".into()))
    );
}

#[test]
fn return_to_service_2_brings_back_any_down_node_but_not_a_drained_one() {
    let mut c = liveness(2);
    c.update_node("node01", "DOWN", Some("bad fan"), &root(), 500)
        .unwrap();
    let effects = c.agent_registered("node01", &[], 510);
    assert_eq!(node_writes(&effects), [("node01".to_string(), None)]);
    assert_eq!(node01(&c), ("idle".into(), true, None, None));
    c.update_node("node01", "DRAIN", Some("disks"), &root(), 520)
        .unwrap();
    c.agent_registered("node01", &[], 530);
    assert_eq!(
        (node01(&c).0, node01(&c).2),
        ("drained".into(), Some("disks".into()))
    );
}

#[test]
fn undrain_takes_away_only_the_drain_of_a_down_node_as_slurm_does() {
    let mut c = liveness(0);
    c.update_node("node01", "DOWN", Some("cabling"), &root(), 500)
        .unwrap();
    // DRAIN on a DOWN node: DOWN beneath its drain (`DOWN+DRAIN`, `drain` to sinfo),
    // the new reason.
    let effects = c
        .update_node("node01", "DRAIN", Some("disks"), &root(), 510)
        .unwrap();
    assert_eq!(
        node_writes(&effects),
        [(
            "node01".to_string(),
            Some(("DOWN+DRAIN".into(), "disks".into()))
        )]
    );
    assert_eq!(
        (node01(&c).0, node01(&c).2, c.nodes()[0].down),
        ("drained".into(), Some("disks".into()), true)
    );
    // UNDRAIN: still DOWN with its reason, asked to register again: not responding
    // until its agent answers.
    let effects = c
        .update_node("node01", "UNDRAIN", None, &root(), 520)
        .unwrap();
    assert_eq!(
        node_writes(&effects),
        [("node01".to_string(), Some(("DOWN".into(), "disks".into())))]
    );
    assert_eq!(
        (node01(&c).0, node01(&c).1, node01(&c).2),
        ("down".into(), false, Some("disks".into()))
    );
    // ReturnToService=0: its answer leaves it DOWN, responding; nothing starts there.
    let mut next = 1;
    submit(&mut c, desc(1, 60), &mut next, 521);
    let effects = c.agents_answered(&["node01".into()], 523);
    assert!(node_writes(&effects).is_empty());
    assert!(launches(&effects).is_empty());
    assert_eq!(
        (node01(&c).0, node01(&c).1, node01(&c).2),
        ("down".into(), true, Some("disks".into()))
    );
    // UNDRAIN of a plain DOWN node changes nothing but the answer awaited.
    c.update_node("node01", "UNDRAIN", None, &root(), 530)
        .unwrap();
    assert_eq!(
        (node01(&c).0, node01(&c).1, node01(&c).2),
        ("down".into(), false, Some("disks".into()))
    );
    // DOWN on a drained node keeps the drain beneath it.
    let mut c = liveness(0);
    c.update_node("node01", "DRAIN", Some("disks"), &root(), 500)
        .unwrap();
    c.update_node("node01", "DOWN", Some("cabling"), &root(), 510)
        .unwrap();
    assert_eq!(
        (node01(&c).0, node01(&c).2, c.nodes()[0].down),
        ("drained".into(), Some("cabling".into()), true)
    );
    c.update_node("node01", "UNDRAIN", None, &root(), 520)
        .unwrap();
    assert_eq!(
        (node01(&c).0, node01(&c).2, c.nodes()[0].down),
        ("down".into(), Some("cabling".into()), false)
    );
}

#[test]
fn an_undrained_down_node_returns_to_service_when_its_agent_answers_under_return_to_service_2() {
    let mut c = liveness(2);
    c.update_node("node01", "DOWN", Some("cabling"), &root(), 500)
        .unwrap();
    c.update_node("node01", "UNDRAIN", None, &root(), 510)
        .unwrap();
    assert_eq!(
        (node01(&c).0, node01(&c).1, node01(&c).2),
        ("down".into(), false, Some("cabling".into()))
    );
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 511);
    assert!(launches(&c.schedule(511)).is_empty());
    // Its answer stands for Slurm's registration: back in service, the job starts.
    let effects = c.agents_answered(&["node01".into()], 512);
    assert_eq!(node_writes(&effects), [("node01".to_string(), None)]);
    assert_eq!(launches(&effects), [(id.0, vec!["node01".to_string()])]);
    assert!(node01(&c).1);
    assert_eq!(node01(&c).2, None);
}

/// What an agent found: `cpus` CPUs on one socket, `mem` MiB, `gpus` GPUs.
fn found(cpus: u32, mem: u64, gpus: Option<u64>) -> sluice_proto::types::NodeHardware {
    sluice_proto::types::NodeHardware {
        cpus,
        boards: 1,
        sockets: 1,
        cores: cpus,
        threads: 1,
        real_memory: mem,
        gres: gpus
            .map(|g| vec![("gpu".to_string(), g)])
            .unwrap_or_default(),
    }
}

fn registration(hardware: sluice_proto::types::NodeHardware) -> Registration {
    Registration {
        node: "node01".into(),
        from: Some("10.0.0.1".into()),
        hardware: Some(hardware),
        ..Registration::default()
    }
}

#[test]
fn an_agent_finding_less_than_configured_drains_its_node_with_slurms_reason() {
    // node01 is configured with 4 CPUs and 1000 MiB. Its agent finds 2 CPUs and
    // 500 MiB: drained, by SlurmUser, in Slurm's words and order.
    let mut c = liveness(1);
    let effects = c
        .register_agent(&registration(found(2, 500, None)), 20)
        .unwrap();
    let reason = "Low socket*core*thread count, Low CPUs, Low RealMemory (reported:500 < \
                  100.00% of configured:1000)";
    assert_eq!(
        node_writes(&effects),
        [(
            "node01".to_string(),
            Some(("DRAIN".to_string(), reason.to_string()))
        )]
    );
    assert_eq!(
        node01(&c),
        (
            "drained".into(),
            true,
            Some(reason.into()),
            Some((64030, 20))
        )
    );
    // Enough of everything (more is fine): nothing changes.
    let mut c = liveness(1);
    let effects = c
        .register_agent(&registration(found(8, 2000, None)), 20)
        .unwrap();
    assert!(node_writes(&effects).is_empty());
    assert_eq!(node01(&c), ("idle".into(), true, None, None));
    // SlurmdParameters=config_overrides: nothing is checked.
    let mut conf = conf(1, 4);
    conf.net.config_overrides = true;
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let effects = c
        .register_agent(&registration(found(1, 10, None)), 20)
        .unwrap();
    assert!(node_writes(&effects).is_empty());
    assert_eq!(node01(&c).0, "idle");
}

#[test]
fn an_agent_finding_fewer_gpus_than_configured_drains_its_node() {
    let text = "ClusterName=g\nGresTypes=gpu\nNodeName=node01 CPUs=4 RealMemory=1000 \
                Gres=gpu:4\nPartitionName=p Nodes=node01 Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    c.register_agent(&registration(found(4, 1000, Some(0))), 20)
        .unwrap();
    assert_eq!(
        (node01(&c).0, node01(&c).2),
        (
            "drained".into(),
            Some("gres/gpu count reported lower than configured (0 < 4)".into())
        )
    );
}

#[test]
fn a_second_agent_claiming_a_registered_answering_node_is_refused() {
    // The agent at 10.0.0.1 holds node01; one at 10.0.0.2 claiming it is refused and
    // the first keeps it. Once the first is gone (silent), the second may take over; a
    // node the controller does not know is refused too.
    let mut c = liveness(1);
    c.register_agent(&registration(found(4, 1000, None)), 10)
        .unwrap();
    let mut other = registration(found(4, 1000, None));
    other.from = Some("10.0.0.2".into());
    let e = c.register_agent(&other, 11).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            ErrorCode::Invalid,
            "Node node01 is already registered from 10.0.0.1"
        )
    );
    assert!(node01(&c).1);
    // Its own agent again, restarted: welcome.
    c.register_agent(&registration(found(4, 1000, None)), 12)
        .unwrap();
    c.agent_silent("node01", 20);
    c.register_agent(&other, 21).unwrap();
    assert_eq!(node01(&c), ("idle".into(), true, None, None));
    let mut unknown = registration(found(4, 1000, None));
    unknown.node = "node09".into();
    let e = c.register_agent(&unknown, 22).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidNodeName);
    // A different slurm.conf is only warned about.
    c.set_conf_hash(Some("ours".into()));
    let mut differs = registration(found(4, 1000, None));
    differs.from = Some("10.0.0.2".into());
    differs.conf_hash = Some("theirs".into());
    assert!(node_writes(&c.register_agent(&differs, 30).unwrap()).is_empty());
    assert_eq!(node01(&c), ("idle".into(), true, None, None));
}

#[test]
fn a_tcp_agent_that_stops_answering_is_not_responding_and_comes_back_when_it_answers() {
    let mut c = liveness(0);
    c.agents_unanswered(&["node01".into()], 10);
    assert_eq!(node01(&c), ("idle".into(), false, None, None));
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(1, 60), &mut next, 11);
    assert!(launches(&c.schedule(11)).is_empty());
    // It answers again before SlurmdTimeout: responding, the job starts.
    assert_eq!(
        launches(&c.agents_answered(&["node01".into()], 12)),
        [(id.0, vec!["node01".to_string()])]
    );
    assert!(node01(&c).1);
    // Silent past SlurmdTimeout: DOWN, not responding.
    c.agents_unanswered(&["node01".into()], 20);
    c.silent_expired(320);
    assert_eq!(node01(&c).0, "down");
}

#[test]
fn a_node_cut_off_longer_than_slurmd_timeout_goes_down_and_its_stale_run_is_killed() {
    // Two nodes over TCP, SlurmdTimeout=10. A requeueable job runs on one of them. Its
    // agent cannot be reached at t=10 (a cut link): the node takes no new work but the
    // job stays; it answers again at t=12 and is back. Cut off again from t=20, it is
    // DOWN at t=30, not before, and the job runs again on the other node. When the
    // cut-off agent registers again with its run, that stale run is killed.
    let mut cf = conf(2, 4);
    cf.net.slurmd_timeout = 10;
    let mut c = Controller::new(cf, Path::new("/s"), vec![], vec![], 0);
    c.agent_registered("node01", &[], 0);
    c.agent_registered("node02", &[], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 1);
    let started = launches(&c.schedule(1));
    assert_eq!(started.len(), 1);
    let first = started[0].1[0].clone();
    let other = if first == "node01" {
        "node02"
    } else {
        "node01"
    };
    let agent_up =
        |c: &Controller, n: &str| c.nodes().iter().find(|x| x.name == n).unwrap().agent_up;

    c.agents_unanswered(std::slice::from_ref(&first), 10);
    assert!(!agent_up(&c, &first));
    assert!(c.silent_expired(11).is_empty());
    c.agents_answered(std::slice::from_ref(&first), 12);
    assert!(agent_up(&c, &first));
    assert!(c.silent_expired(25).is_empty());

    c.agents_unanswered(std::slice::from_ref(&first), 20);
    assert!(c.silent_expired(29).is_empty());
    assert_eq!(c.job(id).unwrap().state, JobState::Running);
    let effects = c.silent_expired(30);
    assert_eq!(launches(&effects), vec![(id.0, vec![other.to_string()])]);
    // The lost run is kept for `sacct -D` as Slurm's accounting has it.
    let kept: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistRun(run) => Some((run.restarts, run.state)),
            _ => None,
        })
        .collect();
    assert_eq!(kept, vec![(0, JobState::NodeFail)]);
    let r = c.job(id).unwrap();
    assert_eq!((r.state, r.restarts), (JobState::Running, 1));
    let n = c.nodes().into_iter().find(|x| x.name == first).unwrap();
    assert_eq!(n.state, "down");

    let effects = c.agent_registered(&first, &[(id, 0)], 40);
    let ends: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::EndRun {
                node,
                job_id,
                run,
                state,
            } => Some((node.clone(), job_id.0, *run, *state)),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![(first.clone(), id.0, 0, JobState::NodeFail)]);
    assert_eq!(c.job(id).unwrap().restarts, 1);
}

#[test]
fn a_job_whose_second_node_dies_is_ended_on_its_first_before_it_runs_again() {
    // Three 4-CPU nodes; an 8-task requeueable job holds node01 and node02, its batch
    // script on node01 and an srun step on both. node02's agent is lost: the job's copy on node01 (its script,
    // its ranks there hung on their dead peers) is ended, as Slurm kills a job on all
    // its nodes before it requeues it; node02 gets no order. The job runs again only
    // once node01 reports that end: never two copies at once.
    let mut c = Controller::new(conf(3, 4), Path::new("/s"), vec![], vec![], 0);
    for n in ["node01", "node02", "node03"] {
        c.agent_registered(n, &[], 0);
    }
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(8, 600), &mut next, 1);
    let two = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    assert_eq!(
        launches(&c.schedule(1)),
        vec![(id.0, two("node01", "node02"))]
    );
    // Its srun step across both nodes.
    c.start_step(id, &StepRequest::default(), &alice(), 2)
        .unwrap();
    let effects = c.agent_lost("node02", 20);
    // Its batch step and its srun step end with the lost run, CANCELLED (the srun,
    // killed with the run, never reports it), not RUNNING for ever in `sacct -D`.
    let steps: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistStep(s) => Some((s.step, s.run, s.state, s.end)),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (StepId::Batch, 0, JobState::Cancelled, Some(20)),
            (StepId::Number(0), 0, JobState::Cancelled, Some(20))
        ]
    );
    let terminated: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Terminate {
                nodes,
                job_id,
                state,
            } => Some((nodes.clone(), job_id.0, *state)),
            _ => None,
        })
        .collect();
    assert_eq!(
        terminated,
        vec![(vec!["node01".to_string()], id.0, JobState::Requeued)]
    );
    assert_eq!(launches(&effects), vec![]);
    let r = c.job(id).unwrap();
    assert_eq!((r.state, r.restarts), (JobState::Pending, 1));
    assert_eq!(launches(&c.schedule(21)), vec![]);

    let effects = c.job_ended(&ended(id, JobState::Requeued, 0, 22), 22);
    assert_eq!(launches(&effects), vec![(id.0, two("node01", "node03"))]);
    assert_eq!(c.job(id).unwrap().restarts, 1);
}

#[test]
fn a_two_node_job_whose_launch_could_not_be_delivered_runs_again_at_once() {
    // Its batch host's agent is up but did not take the launch: nothing ran, so nothing
    // is ended on its nodes and the job does not wait for an end that will not come.
    let mut c = Controller::new(conf(3, 4), Path::new("/s"), vec![], vec![], 0);
    for n in ["node01", "node02", "node03"] {
        c.agent_registered(n, &[], 0);
    }
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(8, 600), &mut next, 1);
    assert_eq!(launches(&c.schedule(1)).len(), 1);
    let effects = c.launch_refused(id, 0, 2);
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Terminate { .. })),
        "{effects:?}"
    );
    assert_eq!(launches(&effects).len(), 1, "{effects:?}");
    assert_eq!(c.job(id).unwrap().restarts, 1);
}

#[test]
fn a_finished_job_keeps_why_it_ended_as_slurm_sets_it_and_across_a_restart() {
    // Six one-task jobs on one 8-CPU node, each ending its own way.
    let mut c = Controller::new(conf(1, 8), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let ends = [
        (JobState::Completed, 0, 0, "None"),
        (JobState::Failed, 3, 0, "NonZeroExitCode"),
        (JobState::Failed, 0, 9, "JobLaunchFailure"),
        (JobState::Timeout, 0, 15, "TimeLimit"),
        (JobState::NodeFail, 0, 0, "NodeDown"),
        (JobState::OutOfMemory, 0, OOM_SIGNAL, "OutOfMemory"),
    ];
    let ids: Vec<JobId> = ends
        .iter()
        .map(|_| submit(&mut c, desc(1, 600), &mut next, 0).0)
        .collect();
    assert_eq!(launches(&c.schedule(0)).len(), ends.len());
    for (&id, &(state, code, signal, why)) in ids.iter().zip(&ends) {
        let mut report = ended(id, state, code, 10);
        report.signal = signal;
        let effects = c.job_ended(&report, 10);
        assert_eq!(c.job(id).unwrap().state, state);
        assert_eq!(c.job(id).unwrap().reason, why, "{state:?}");
        // What the store keeps says so too.
        let stored = effects.iter().find_map(|e| match e {
            Effect::Persist(r) if r.id == id.0 => Some(r.reason.clone()),
            _ => None,
        });
        assert_eq!(stored.as_deref(), Some(why), "{state:?}");
    }
    // A job cancelled while it waited keeps why it waited; one cancelled running, None.
    let (held, _) = submit(&mut c, desc(1, 600), &mut next, 20);
    c.set_hold(held, None, true, &alice(), 20).unwrap();
    let (running, _) = submit(&mut c, desc(1, 600), &mut next, 20);
    c.schedule(20);
    assert_eq!(c.job(running).unwrap().state, JobState::Running);
    let req = CancelRequest {
        jobs: vec![(held.0, None), (running.0, None)],
        ..Default::default()
    };
    c.cancel(&req, &alice(), 21).unwrap();
    let mut report = ended(running, JobState::Cancelled, 0, 22);
    report.signal = 15;
    c.job_ended(&report, 22);
    assert_eq!(
        (c.job(held).unwrap().state, c.job(held).unwrap().reason),
        (JobState::Cancelled, "JobHeldUser".to_string())
    );
    assert_eq!(
        (
            c.job(running).unwrap().state,
            c.job(running).unwrap().reason
        ),
        (JobState::Cancelled, "None".to_string())
    );

    // A restarted controller reads the reasons back from its records.
    let (jobs, steps) = c.accounting();
    let c2 = Controller::new(conf(1, 8), Path::new("/s"), jobs.clone(), steps, 30);
    for (&id, &(_, _, _, why)) in ids.iter().zip(&ends) {
        assert_eq!(c2.job(id).unwrap().reason, why);
    }
    // A record written before Sluice kept why a job ended (its reason `None`) reads
    // back with Slurm's.
    let mut old = jobs.into_iter().find(|r| r.id == ids[1].0).unwrap();
    old.reason = "None".into();
    let job = Job::from_record(old, &conf(1, 8));
    assert_eq!(job.reason, Reason::NonZeroExitCode);
}

#[test]
fn identical_submissions_share_their_description_until_one_is_changed() {
    // A loop of sbatch with the same options: one description in memory, not one per
    // job; `scontrol update` of one job changes that job only.
    let mut c = Controller::new(conf(1, 4), Path::new("/state"), vec![], vec![], 0);
    let allocate = |c: &mut Controller, d: JobDescription| {
        let p = c
            .prepare(d, &alice(), "alice", "alice", 0)
            .expect("accepted");
        let jobs = c.allocate(&p);
        let id = jobs[0].id;
        c.accept(jobs, 0);
        id
    };
    let held = JobDescription {
        hold: true,
        ..desc(1, 60)
    };
    let a = allocate(&mut c, held.clone());
    let b = allocate(&mut c, held.clone());
    let other = allocate(
        &mut c,
        JobDescription {
            name: "other".into(),
            ..held.clone()
        },
    );
    assert!(Arc::ptr_eq(&c.jobs[&a].desc, &c.jobs[&b].desc));
    assert!(!Arc::ptr_eq(&c.jobs[&a].desc, &c.jobs[&other].desc));
    assert!(c.jobs[&a].desc.script.is_empty(), "kept in the store");
    c.update_job(a, &[("JobName".into(), "renamed".into())], &alice(), 1)
        .expect("updated");
    let names: Vec<String> = [a, b, other]
        .iter()
        .map(|&id| c.job(id).expect("known").desc.name)
        .collect();
    assert_eq!(names, ["renamed", "job", "other"]);
}

#[test]
fn a_step_ends_when_every_agent_says_its_tasks_ended_even_without_its_srun() {
    // A 3-task job on two 2-CPU nodes; its step runs on both.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(3, 600), &mut next, 0);
    c.schedule(0);
    let (plan, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 1)
        .unwrap();
    let ended = |node: &str, exit_code, signal| sluice_proto::types::StepEnded {
        job: id.0,
        run: 0,
        step: plan.step,
        node: node.into(),
        exit_code,
        signal,
        usage: None,
    };
    let state = |c: &Controller| {
        let s = &c.steps[&(id, StepId::Number(plan.step))];
        (s.state, s.exit_code, s.signal)
    };
    // Only agents (root, the SlurmUser) may say so; a node the step is not on is refused.
    assert!(c
        .step_ended_on(&ended("node01", 0, 0), &alice(), 2)
        .is_err());
    assert!(c.step_ended_on(&ended("node09", 0, 0), &root(), 2).is_err());
    // A word about an earlier run's step of that number changes nothing.
    let stale = sluice_proto::types::StepEnded {
        run: 1,
        ..ended("node01", 3, 0)
    };
    assert!(c.step_ended_on(&stale, &root(), 2).unwrap().is_empty());
    // One node of two: the step still runs, the node's word kept.
    let effects = c.step_ended_on(&ended("node01", 3, 0), &root(), 2).unwrap();
    assert!(matches!(effects.as_slice(), [Effect::PersistStep(s)] if s.ended_on.len() == 1));
    assert_eq!(state(&c), (JobState::Running, 0, 0));
    // The other: it ends, as Slurm records it: on node02 the task killed by a signal
    // outweighs its other's exit code 1, and across nodes node01's exit code 3
    // outweighs node02's signal (the largest wait status).
    let effects = c.step_ended_on(&ended("node02", 1, 9), &root(), 3).unwrap();
    assert!(matches!(effects.as_slice(), [Effect::PersistStep(_)]));
    assert_eq!(state(&c), (JobState::Failed, 3, 0));
    // srun's word after that changes nothing.
    assert!(c
        .end_step(id, plan.step, 0, 0, &alice(), 4)
        .unwrap()
        .is_empty());
    assert_eq!(state(&c), (JobState::Failed, 3, 0));
    // Without a signal, the worst exit code of its nodes.
    let (plan, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 4)
        .unwrap();
    for (node, code) in [("node01", 3), ("node02", 1)] {
        let done = sluice_proto::types::StepEnded {
            step: plan.step,
            ..ended(node, code, 0)
        };
        c.step_ended_on(&done, &root(), 4).unwrap();
    }
    let s = &c.steps[&(id, StepId::Number(plan.step))];
    assert_eq!((s.state, s.exit_code, s.signal), (JobState::Failed, 3, 0));

    // Out of memory on one node: the step is OUT_OF_MEMORY (0:125) as srun reports it.
    let (plan, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 5)
        .unwrap();
    let oom = |node: &str, exit_code, signal| sluice_proto::types::StepEnded {
        job: id.0,
        run: 0,
        step: plan.step,
        node: node.into(),
        exit_code,
        signal,
        usage: None,
    };
    c.step_ended_on(&oom("node01", 0, 125), &root(), 6).unwrap();
    c.step_ended_on(&oom("node02", 2, 0), &root(), 6).unwrap();
    let s = &c.steps[&(id, StepId::Number(plan.step))];
    assert_eq!(
        (s.state, s.exit_code, s.signal),
        (JobState::OutOfMemory, 0, 125)
    );
}

#[test]
fn a_hetjobs_script_gets_each_components_variables_by_slurms_names() {
    // `#SBATCH -n1 -c1 --mem=100`, `#SBATCH hetjob`, `#SBATCH -n2 -c1 --mem=200 -N1`:
    // the names real Slurm 22.05 set in that batch script, for each component.
    let component = |id: u64, offset: u32, node: &str, tasks: u32, mem: u64| {
        let mut r = JobRecord {
            id,
            nodes: vec![node.into()],
            cpus_per_node: vec![tasks],
            tasks_per_node: vec![tasks],
            ntasks: tasks,
            cpus_per_task: 1,
            mem_per_node: mem,
            account: "root".into(),
            partition: "debug".into(),
            qos: "normal".into(),
            het: Some(sluice_proto::types::HetJob {
                job_id: 15,
                offset,
                size: 2,
            }),
            ..Default::default()
        };
        r.desc.name = "het.sh".into();
        r.desc.ntasks = Some(tasks);
        r.desc.cpus_per_task = Some(1);
        r.desc.memory = Some(MemoryRequest::PerNode(mem));
        r
    };
    let env: BTreeMap<String, String> = het_variables(&[
        component(15, 0, "n2", 1, 100),
        component(16, 1, "n1", 2, 200),
    ])
    .into_iter()
    .collect();
    let per_group = [
        "CPUS_PER_TASK",
        "JOB_ACCOUNT",
        "JOB_CPUS_PER_NODE",
        "JOB_ID",
        "JOB_NAME",
        "JOB_NODELIST",
        "JOB_NUM_NODES",
        "JOB_PARTITION",
        "JOB_QOS",
        "MEM_PER_NODE",
        "NPROCS",
        "NTASKS",
        "TASKS_PER_NODE",
    ];
    let mut expected: Vec<String> = vec!["SLURM_HET_SIZE".into(), "SLURM_PACK_SIZE".into()];
    for name in per_group {
        for spelling in ["HET", "PACK"] {
            for n in 0..2 {
                expected.push(format!("SLURM_{name}_{spelling}_GROUP_{n}"));
            }
        }
    }
    expected.sort();
    assert_eq!(env.keys().cloned().collect::<Vec<_>>(), expected);
    // Real Slurm's values there.
    for (k, v) in [
        ("SLURM_HET_SIZE", "2"),
        ("SLURM_JOB_ID_HET_GROUP_1", "16"),
        ("SLURM_JOB_NODELIST_PACK_GROUP_0", "n2"),
        ("SLURM_JOB_CPUS_PER_NODE_HET_GROUP_1", "2"),
        ("SLURM_TASKS_PER_NODE_HET_GROUP_1", "2"),
        ("SLURM_MEM_PER_NODE_HET_GROUP_1", "200"),
        ("SLURM_NTASKS_PACK_GROUP_1", "2"),
    ] {
        assert_eq!(env[k], v, "{k}");
    }
}

#[test]
fn a_hetjobs_components_number_their_steps_as_one() {
    // A hetjob of two one-task components, running on two nodes.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(2, 600);
    d.het_components.push(desc(2, 600));
    let (leader, _) = submit(&mut c, d, &mut next, 0);
    let member = JobId(leader.0 + 1);
    c.schedule(0);
    assert_eq!(c.job(member).unwrap().state, JobState::Running);
    let step = |c: &mut Controller, id: JobId, step_id: Option<u32>| {
        let req = StepRequest {
            ntasks: Some(1),
            argv: vec!["true".into()],
            name: "true".into(),
            overlap: true,
            step_id,
            ..Default::default()
        };
        c.start_step(id, &req, &alice(), 1)
            .map(|(plan, _)| plan.step)
    };
    // A step in the second component alone takes 0; the leader's next is then 1, not
    // 0 again: `N+0.0` and `N+1.0` would be two different steps.
    assert_eq!(step(&mut c, member, None).unwrap(), 0);
    assert_eq!(step(&mut c, leader, None).unwrap(), 1);
    // A heterogeneous step: the first component's id, taken in the next one too.
    assert_eq!(step(&mut c, member, Some(1)).unwrap(), 1);
    assert_eq!(step(&mut c, member, None).unwrap(), 2);
    assert_eq!(step(&mut c, leader, None).unwrap(), 3);
    // An id a component has already used is refused there.
    let dup = step(&mut c, leader, Some(3)).unwrap_err();
    assert!(dup.message.contains("Duplicate job step id"), "{dup:?}");
}

#[test]
fn the_parts_of_a_heterogeneous_step_in_one_allocation_are_steps_of_their_own() {
    // A 4-task job on two 2-CPU nodes; `srun -n2 A : -n2 B` in it: part 0 on node01,
    // part 1 (excluding node01, as srun asks) on node02, under one step id.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    let part = |p: u32, step_id: Option<u32>, exclude: Option<&str>| StepRequest {
        ntasks: Some(2),
        nodes: Some(1),
        part: Some(p),
        step_id,
        exclude: exclude.map(str::to_string),
        ..Default::default()
    };
    let (first, _) = c.start_step(id, &part(0, None, None), &alice(), 1).unwrap();
    let (second, _) = c
        .start_step(id, &part(1, Some(first.step), Some("node01")), &alice(), 1)
        .unwrap();
    assert_eq!((first.step, second.step), (0, 0));
    assert_eq!(
        (first.nodes[0].0.as_str(), second.nodes[0].0.as_str()),
        ("node01", "node02")
    );
    // The same part twice is refused; the next step takes the next id.
    assert!(c
        .start_step(id, &part(1, Some(0), Some("node01")), &alice(), 1)
        .is_err());
    let state = |c: &Controller, p: u32| {
        let s = &c.steps[&(id, StepId::Part(0, p))];
        (s.state, s.exit_code, s.step.to_string())
    };
    // Each part ends with its own tasks: srun's word for part 1 (`0+1`), an agent's
    // for part 0 (found by its node).
    c.end_step(id, StepId::Part(0, 1), 1, 0, &alice(), 2)
        .unwrap();
    let ended = sluice_proto::types::StepEnded {
        job: id.0,
        run: 0,
        step: 0,
        node: "node01".into(),
        exit_code: 0,
        signal: 0,
        usage: None,
    };
    c.step_ended_on(&ended, &root(), 3).unwrap();
    assert_eq!(state(&c, 0), (JobState::Completed, 0, "0+0".to_string()));
    assert_eq!(state(&c, 1), (JobState::Failed, 1, "0+1".to_string()));
    let (next_step, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 4)
        .unwrap();
    assert_eq!(next_step.step, 1);
}

#[test]
fn a_singleton_inserted_eligible_accrues_nothing_if_another_of_its_name_is_queued_first() {
    // Two `--dependency=singleton` jobs of one name, both given ids and inserted before
    // either is accepted (their inserts commit together): each was alone under its
    // name when inserted, so each record carries the time it accrues age from, and
    // the first accepted is queued without another write. The second finds the first
    // queued: it waits on its dependency, accrues nothing until that is satisfied,
    // and that change is written.
    let mut c = Controller::new(conf(1, 4), Path::new("/state"), vec![], vec![], 0);
    let single = || JobDescription {
        name: "alone".into(),
        dependency: Some("singleton".into()),
        ..desc(1, 60)
    };
    let mut allocated = Vec::new();
    for _ in 0..2 {
        let mut p = c
            .prepare(single(), &alice(), "alice", "alice", 5)
            .expect("accepted");
        let jobs = c.allocate(&p);
        let Effect::Insert { records, .. } = c.inserted(&jobs, p.take_script(), 5) else {
            panic!("an insert");
        };
        assert_eq!(records[0].accrue_time, Some(5), "eligible when inserted");
        allocated.push(jobs);
    }
    let second = allocated.pop().unwrap();
    let first = allocated.pop().unwrap();
    let (a, b) = (first[0].id, second[0].id);
    assert!(c.accept(first, 6).is_empty(), "nothing more to write");
    let effects = c.accept(second, 6);
    assert!(
        matches!(&effects[..], [Effect::Persist(r)] if r.id == b.0 && r.accrue_time.is_none()),
        "{effects:?}"
    );
    assert_eq!(c.job(a).unwrap().accrue_time, Some(5));
    assert_eq!(c.job(b).unwrap().reason, "Dependency");
}

#[test]
fn a_singleton_arrays_tasks_after_its_first_are_inserted_waiting_and_accepted_without_a_write() {
    // `sbatch --array=0-3 --dependency=singleton`: the tasks share a name, so only the
    // first is alone under it. It is inserted eligible (it accrues age from its
    // submission); the other three wait for it from the start, so their records say
    // so when inserted and queuing the array writes nothing more (each task was
    // written again at accept before: four tasks, three writes).
    let mut c = Controller::new(conf(1, 4), Path::new("/state"), vec![], vec![], 0);
    let array = JobDescription {
        name: "alone".into(),
        dependency: Some("singleton".into()),
        array: Some((vec![0, 1, 2, 3], None)),
        ..desc(1, 60)
    };
    let mut p = c
        .prepare(array, &alice(), "alice", "alice", 5)
        .expect("accepted");
    let jobs = c.allocate(&p);
    let Effect::Insert { records, .. } = c.inserted(&jobs, p.take_script(), 5) else {
        panic!("an insert");
    };
    let accrues: Vec<Option<i64>> = records.iter().map(|r| r.accrue_time).collect();
    assert_eq!(accrues, [Some(5), None, None, None]);
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    assert!(c.accept(jobs, 6).is_empty(), "nothing more to write");
    let reasons: Vec<String> = ids
        .iter()
        .map(|&id| c.job(id).unwrap().reason.clone())
        .collect();
    assert_eq!(reasons[1..], ["Dependency", "Dependency", "Dependency"]);
    assert_ne!(reasons[0], "Dependency");
}

#[test]
fn jobs_get_the_lowest_processors_free_on_their_node_in_one_pass_and_after_an_end() {
    // One node of 4 CPUs. Jobs 1 and 2 (one CPU each) start in one pass, job 3 in the
    // next; job 1 ends, and job 4 gets the processor it held.
    let mut c = Controller::new(conf(1, 4), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (j1, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    let (j2, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let (j3, _) = submit(&mut c, desc(1, 600), &mut next, 1);
    c.schedule(1);
    let ids = |c: &Controller, j| c.job(j).unwrap().cpu_ids_per_node;
    assert_eq!(
        [ids(&c, j1), ids(&c, j2), ids(&c, j3)],
        [vec![vec![0]], vec![vec![1]], vec![vec![2]]]
    );
    c.job_ended(&ended(j1, JobState::Completed, 0, 2), 2);
    let (j4, _) = submit(&mut c, desc(1, 600), &mut next, 3);
    c.schedule(3);
    assert_eq!(ids(&c, j4), vec![vec![0]]);
}

#[test]
fn an_array_task_changed_on_its_own_is_split_from_the_array_as_slurms() {
    // --hold --array=0-3 as job 1: tasks 0-2 are ids 2-4, task 3 (the array's own
    // record, holding the remainder) is id 1.
    let (mut c, _) = held_array();
    let split = |c: &Controller| -> Vec<u64> {
        (1..=4)
            .filter(|&id| c.job(JobId(id)).unwrap().split)
            .collect()
    };
    // The whole array changed: no task on its own.
    c.update_job(JobId(1), &[("TimeLimit".into(), "5".into())], &alice(), 1)
        .expect("updated");
    assert_eq!(split(&c), Vec::<u64>::new());
    // `scontrol update JobId=1_1 TimeLimit=3`: task 1 (id 3) is split.
    c.update_job_verb(
        JobId(1),
        Some(&[1]),
        &[("TimeLimit".into(), "3".into())],
        &alice(),
        2,
    )
    .expect("updated");
    assert_eq!(split(&c), [3]);
    // `scontrol hold 1_3`: the array's own record (id 1) too, as Slurm splits task 3
    // off its array's record; `release 1_0`: task 0 (id 2).
    c.set_hold(JobId(1), Some(3), true, &alice(), 3)
        .expect("held");
    assert_eq!(split(&c), [1, 3]);
    c.set_hold(JobId(1), Some(0), false, &alice(), 3)
        .expect("released");
    assert_eq!(split(&c), [1, 2, 3]);
}

/// `conf(2, cpus)` with a second partition `short` of node01 only.
pub(crate) fn with_short(cpus: u32) -> ClusterConfig {
    let mut c = conf(2, cpus);
    c.cluster
        .partitions
        .push(Partition::new("short", vec![NodeId(0)]));
    c
}

#[test]
fn a_job_of_two_partitions_shows_both_while_it_waits_and_runs_in_one() {
    // node01 is in debug and short, node02 in debug only. Job 1 fills node01 from
    // short. Job 2 lists short,debug: it starts on node02, in debug, and says so.
    let mut c = Controller::new(with_short(2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(2, 600);
    d.partition = Some("short".into());
    let (a, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    let mut d = desc(2, 600);
    d.partition = Some("short,debug".into());
    let (b, _) = submit(&mut c, d.clone(), &mut next, 1);
    assert_eq!(c.job(b).unwrap().partition, "short,debug");
    assert_eq!(launches(&c.schedule(1)), vec![(b.0, vec!["node02".into()])]);
    assert_eq!(c.job(b).unwrap().partition, "debug");

    // Job 3 of short,debug waits with both listed, and a restart keeps it so: stored
    // with the list, it is in short again and starts where room comes first.
    let (j3, _) = submit(&mut c, d, &mut next, 2);
    c.schedule(2);
    assert_eq!(c.job(j3).unwrap().partition, "short,debug");
    let (jobs, steps) = c.accounting();
    let mut c2 = Controller::new(with_short(2), Path::new("/s"), jobs, steps, 3);
    c2.agent_registered("node01", &[(a, 0)], 3);
    c2.agent_registered("node02", &[(b, 0)], 3);
    assert_eq!(c2.job(j3).unwrap().partition, "short,debug");
    let effects = c2.job_ended(&ended(b, JobState::Completed, 0, 10), 10);
    assert_eq!(launches(&effects), vec![(j3.0, vec!["node02".into()])]);
    assert_eq!(c2.job(j3).unwrap().partition, "debug");

    // A name in the list the cluster does not have refuses the job.
    let mut d = desc(1, 60);
    d.partition = Some("short,nosuch".into());
    assert_eq!(
        c2.prepare(d, &alice(), "a", "a", 10).unwrap_err().message,
        BAD_PARTITION
    );
}

#[test]
fn a_steps_gpus_spread_over_its_nodes_and_follow_its_tasks() {
    // Two nodes of 4 CPUs and 4 GPUs; a job of 2 nodes, 4 tasks, 4 GPUs on each.
    let text = "ClusterName=g\nGresTypes=gpu\n\
                NodeName=g[1-2] CPUs=4 RealMemory=8000 Gres=gpu:4\n\
                PartitionName=gpu Nodes=g[1-2] Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(4, 600);
    d.nodes = Some((2, 2));
    d.gres = vec![sluice_proto::types::GresRequest {
        name: "gpu".into(),
        gres_type: None,
        count: 4,
    }];
    let (id, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    // The GPUs each node's tasks see together.
    let gpus = |c: &mut Controller, req: &StepRequest| -> Vec<BTreeSet<u32>> {
        let (plan, _) = c.start_step(id, req, &alice(), 1).unwrap();
        plan.task_gpus
            .iter()
            .map(|node| node.iter().flatten().copied().collect())
            .collect()
    };
    // `srun --gpus=3 --overlap`: three over both nodes, two on the first, one on the
    // second (not three on each).
    let spread = StepRequest {
        gpus: Some(3),
        overlap: true,
        ..Default::default()
    };
    let held = gpus(&mut c, &spread);
    assert_eq!(held.iter().map(BTreeSet::len).collect::<Vec<_>>(), [2, 1]);
    // `srun -n2 --gpus-per-task=1 --overlap`: a task on each node, a GPU each; with
    // `-N1`, both tasks on one node, two GPUs there (not all four of the job's).
    let per_task = StepRequest {
        ntasks: Some(2),
        gpus_per_task: Some(1),
        overlap: true,
        ..Default::default()
    };
    let held = gpus(&mut c, &per_task);
    assert_eq!(held.iter().map(BTreeSet::len).collect::<Vec<_>>(), [1, 1]);
    let per_task = StepRequest {
        ntasks: Some(2),
        nodes: Some(1),
        gpus_per_task: Some(1),
        overlap: true,
        ..Default::default()
    };
    let held = gpus(&mut c, &per_task);
    assert_eq!(held.iter().map(BTreeSet::len).collect::<Vec<_>>(), [2]);
    // Without --overlap a step holds what it takes: `-n2 --exact --gpus=8` takes all
    // eight with one CPU on each node, and a one-task `--gpus-per-task=1` step after
    // it waits for a GPU, though a CPU is free on each node.
    let all = StepRequest {
        ntasks: Some(2),
        exact: true,
        gpus: Some(8),
        ..Default::default()
    };
    let held = gpus(&mut c, &all);
    assert_eq!(held.iter().map(BTreeSet::len).collect::<Vec<_>>(), [4, 4]);
    let one = StepRequest {
        ntasks: Some(1),
        exact: true,
        gpus_per_task: Some(1),
        ..Default::default()
    };
    let err = c.start_step(id, &one, &alice(), 1).unwrap_err();
    assert_eq!(err.code, ErrorCode::Busy);
    let one_cpu = StepRequest {
        gpus_per_node: Some(0),
        ..one
    };
    assert!(c.start_step(id, &one_cpu, &alice(), 1).is_ok());
}

#[test]
fn steps_asking_for_gpus_get_their_own_and_wait_for_those_others_hold() {
    // One node of 8 CPUs and 4 GPUs; a 4-task job with 2 GPUs (0 and 1).
    let text = "ClusterName=g\nGresTypes=gpu\nAccountingStorageTRES=gres/gpu\n\
                NodeName=g1 CPUs=8 RealMemory=8000 Gres=gpu:4\n\
                PartitionName=gpu Nodes=g1 Default=YES\n";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(4, 600);
    d.gres = vec![sluice_proto::types::GresRequest {
        name: "gpu".into(),
        gres_type: None,
        count: 2,
    }];
    let (id, _) = submit(&mut c, d, &mut next, 0);
    c.schedule(0);
    let start = |c: &mut Controller, req: &StepRequest| {
        c.start_step(id, req, &alice(), 1)
            .map(|(plan, _)| (plan.step, plan.task_gpus))
            .map_err(|e| (e.code, e.message))
    };
    // `srun -n1 --exact --gres=gpu:1` twice: GPU 0, then GPU 1.
    let one = StepRequest {
        ntasks: Some(1),
        exact: true,
        gpus_per_node: Some(1),
        ..Default::default()
    };
    assert_eq!(start(&mut c, &one), Ok((0, vec![vec![vec![0]]])));
    assert_eq!(start(&mut c, &one), Ok((1, vec![vec![vec![1]]])));
    // A third waits for one of them; one that overlaps takes GPU 0 beside them; one
    // asking for none that overlaps gets both.
    assert_eq!(
        start(&mut c, &one),
        Err((
            ErrorCode::Busy,
            format!(
                "Job {id} step creation temporarily disabled, retrying (Requested nodes are busy)"
            ),
        ))
    );
    let overlap = StepRequest {
        overlap: true,
        ..one.clone()
    };
    assert_eq!(start(&mut c, &overlap), Ok((2, vec![vec![vec![0]]])));
    let none = StepRequest {
        ntasks: Some(1),
        overlap: true,
        ..Default::default()
    };
    assert_eq!(start(&mut c, &none), Ok((3, vec![vec![vec![0, 1]]])));
    // Their listing counts what each holds.
    let listed: Vec<(String, Option<String>)> = c
        .running_steps(None, 2)
        .iter()
        .map(|s| (s.id(), s.tres()))
        .collect();
    assert_eq!(
        listed[1],
        (format!("{id}.0"), Some("cpu=1,gres/gpu=1,node=1".into()))
    );
    assert_eq!(listed[4].1.as_deref(), Some("cpu=4,gres/gpu=2,node=1"));
    // Without --overlap, a step asking for none asks for all of the job's, as Slurm
    // copies the job's request to it: it waits while others hold them.
    let all_of_them = StepRequest {
        ntasks: Some(1),
        exact: true,
        ..Default::default()
    };
    assert_eq!(
        start(&mut c, &all_of_them),
        Err((
            ErrorCode::Busy,
            format!(
                "Job {id} step creation temporarily disabled, retrying (Requested nodes are busy)"
            ),
        ))
    );
    // Step 1 ends: GPU 1 is free again for the next.
    c.end_step(id, 1, 0, 0, &alice(), 3).unwrap();
    assert_eq!(start(&mut c, &one), Ok((4, vec![vec![vec![1]]])));
    // More GPUs than the job has there is refused.
    let three = StepRequest {
        gpus_per_node: Some(3),
        ..one.clone()
    };
    assert_eq!(
        start(&mut c, &three),
        Err((
            ErrorCode::Invalid,
            format!(
                "Unable to create step for job {id}: Invalid generic resource (gres) specification"
            )
        ))
    );
}

#[test]
fn enforced_limits_refuse_a_job_of_two_partitions_when_all_or_any_would() {
    // debug (MaxTime one hour) and short (MaxTime 30 min); a 40-minute job of
    // short,debug. EnforcePartLimits=ALL refuses it (short would), ANY takes it
    // (debug would not refuse it) and refuses a two-hour one (both would).
    let mut conf = with_short(2);
    conf.cluster.partitions[1].max_time = Some(1800);
    conf.enforce_part_limits = true;
    let job = |secs| JobDescription {
        partition: Some("short,debug".into()),
        ..desc(1, secs)
    };
    let over = "Requested time limit is invalid (missing or exceeds some limit)";
    let mut all = conf.clone();
    all.enforce_part_limits_all = true;
    let mut c = Controller::new(all, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let refused =
        |c: &mut Controller, d| c.prepare(d, &alice(), "a", "a", 0).err().map(|e| e.message);
    assert_eq!(refused(&mut c, job(2400)).as_deref(), Some(over));
    assert_eq!(refused(&mut c, job(600)), None);
    let mut c = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    assert_eq!(refused(&mut c, job(2400)), None);
    assert_eq!(refused(&mut c, job(7200)).as_deref(), Some(over));
}

#[test]
fn a_job_its_first_partition_could_never_run_waits_in_the_others() {
    // short has node01 only; a two-node job of short,debug is accepted (debug could
    // run it, as Slurm's _select_nodes_parts finds) and runs in debug. Empty names in
    // the list are passed over; a list of none is refused.
    let mut c = Controller::new(with_short(2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let d = JobDescription {
        partition: Some("short,,debug,".into()),
        nodes: Some((2, 2)),
        ..desc(2, 600)
    };
    let (id, _) = submit(&mut c, d, &mut next, 0);
    assert_eq!(c.job(id).unwrap().partition, "short,debug");
    assert_eq!(
        launches(&c.schedule(0)),
        vec![(id.0, vec!["node01".into(), "node02".into()])]
    );
    assert_eq!(c.job(id).unwrap().partition, "debug");
    let none = JobDescription {
        partition: Some(",".into()),
        ..desc(1, 60)
    };
    assert_eq!(
        c.prepare(none, &alice(), "a", "a", 0).unwrap_err().message,
        BAD_PARTITION
    );
}
