//! Stories of `COMPLETING`: a job told to end holds its nodes until every node has
//! reported its processes gone, or is declared down.

use super::super::tests::{alice, conf, desc, submit};
use super::super::*;
use sluice_proto::types::{CancelRequest, RunGone};

fn agent() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        admin: true,
    }
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

fn terminations(effects: &[Effect]) -> Vec<(u64, Vec<String>, JobState)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Terminate {
                job_id,
                nodes,
                state,
            } => Some((job_id.0, nodes.clone(), *state)),
            _ => None,
        })
        .collect()
}

fn batch_end(id: JobId, run: u32, state: JobState, now: i64) -> JobEnded {
    JobEnded {
        job_id: id.0,
        run,
        node: "node01".into(),
        state,
        exit_code: 0,
        signal: 15,
        end: now,
        usage: None,
    }
}

fn gone(id: JobId, run: u32, node: &str) -> RunGone {
    RunGone {
        job_id: id.0,
        run: Some(run),
        node: node.into(),
    }
}

/// Two 2-CPU nodes with their agents up; job 1 (4 tasks) runs on both with a step
/// on both since 1; job 2 (2 tasks) waits for it.
fn two_node_job_and_a_waiting_one() -> (Controller, JobId, JobId) {
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    c.agent_registered("node01", &[], 0);
    c.agent_registered("node02", &[], 0);
    let mut next = 1;
    let (big, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    assert_eq!(launched(&c.schedule(0)), vec![1]);
    let (plan, _) = c
        .start_step(big, &StepRequest::default(), &alice(), 1)
        .unwrap();
    assert_eq!(plan.nodes.len(), 2, "{plan:?}");
    let (small, _) = submit(&mut c, desc(2, 600), &mut next, 2);
    assert!(launched(&c.schedule(2)).is_empty());
    (c, big, small)
}

#[test]
fn a_cancelled_job_holds_its_nodes_until_every_node_has_reported_its_processes_gone() {
    let (mut c, big, small) = two_node_job_and_a_waiting_one();
    // Cancelled at 10: COMPLETING from now (its EndTime), both nodes told to end it.
    let effects = c
        .cancel(
            &CancelRequest {
                jobs: vec![(big.0, None)],
                ..Default::default()
            },
            &alice(),
            10,
        )
        .unwrap()
        .effects;
    assert_eq!(
        terminations(&effects),
        vec![(
            1,
            vec!["node01".into(), "node02".into()],
            JobState::Cancelled
        )]
    );
    let r = c.job(big).unwrap();
    assert_eq!((r.shown_state(), r.end_time), ("COMPLETING", Some(10)));
    assert!(launched(&effects).is_empty());
    // Accounting has it CANCELLED at once, as Slurm's.
    let stored = effects
        .iter()
        .find_map(|e| match e {
            Effect::Persist(r) if r.id == big.0 => Some(r.state),
            _ => None,
        })
        .unwrap();
    assert_eq!(stored, JobState::Cancelled);
    // No new step in a job being ended.
    assert!(c
        .start_step(big, &StepRequest::default(), &alice(), 11)
        .is_err());
    // Its batch script is gone at 12 (node01): CANCELLED, ended at 10, still
    // completing on node02, whose CPUs nobody gets yet.
    let effects = c.job_ended(&batch_end(big, 0, JobState::Cancelled, 12), 12);
    assert!(launched(&effects).is_empty());
    let r = c.job(big).unwrap();
    assert_eq!(
        (r.state, r.end_time, r.shown_state()),
        (JobState::Cancelled, Some(10), "COMPLETING")
    );
    assert!(launched(&c.schedule(13)).is_empty());
    // Only an agent says a run is gone.
    assert!(c.run_gone(&gone(big, 0, "node02"), &alice(), 14).is_err());
    // node02 has nothing of it left at 15: the job is over, the waiting job starts.
    let effects = c.run_gone(&gone(big, 0, "node02"), &agent(), 15).unwrap();
    assert_eq!(launched(&effects), vec![small.0]);
    let r = c.job(big).unwrap();
    assert_eq!((r.shown_state(), r.completing()), ("CANCELLED", false));
    // Said again, it changes nothing.
    assert!(c
        .run_gone(&gone(big, 0, "node02"), &agent(), 16)
        .unwrap()
        .is_empty());
}

#[test]
fn a_requeued_job_runs_again_only_once_every_node_has_reported_its_last_run_gone() {
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    c.agent_registered("node01", &[], 0);
    c.agent_registered("node02", &[], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    c.start_step(id, &StepRequest::default(), &alice(), 1)
        .unwrap();
    let effects = c.requeue(id, None, &alice(), 10).unwrap();
    assert_eq!(
        terminations(&effects),
        vec![(
            1,
            vec!["node01".into(), "node02".into()],
            JobState::Requeued
        )]
    );
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.shown_state(), r.restarts),
        (JobState::Pending, "COMPLETING", 1)
    );
    // Its batch script's end: its step (which saves a checkpoint on SIGTERM) still
    // runs on node02.
    assert!(launched(&c.job_ended(&batch_end(id, 0, JobState::Requeued, 11), 11)).is_empty());
    assert!(c.job(id).unwrap().completing());
    // Gone from node02 too: it runs again.
    let effects = c.run_gone(&gone(id, 0, "node02"), &agent(), 14).unwrap();
    assert_eq!(launched(&effects), vec![1]);
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.restarts, r.completing()),
        (JobState::Running, 1, false)
    );
}

#[test]
fn a_node_declared_down_is_not_waited_for() {
    let (mut c, big, small) = two_node_job_and_a_waiting_one();
    c.cancel(
        &CancelRequest {
            jobs: vec![(big.0, None)],
            ..Default::default()
        },
        &alice(),
        10,
    )
    .unwrap();
    c.job_ended(&batch_end(big, 0, JobState::Cancelled, 12), 12);
    assert!(c.job(big).unwrap().completing());
    // node02 never answers again: past SlurmdTimeout it is DOWN, and the job is over
    // (its CPUs on node01 free; node02's are down).
    c.agent_lost("node02", 100);
    let r = c.job(big).unwrap();
    assert_eq!((r.state, r.completing()), (JobState::Cancelled, false));
    assert_eq!(c.node_usage().completing, vec![0, 0]);
    let _ = small;
}

#[test]
fn a_batch_job_at_its_time_limit_is_told_to_end_on_every_node() {
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    c.agent_registered("node01", &[], 0);
    c.agent_registered("node02", &[], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 60), &mut next, 0);
    c.schedule(0);
    assert_eq!(c.next_wakeup(), Some(60));
    assert!(terminations(&c.schedule(59)).is_empty());
    let effects = c.schedule(60);
    assert_eq!(
        terminations(&effects),
        vec![(1, vec!["node01".into(), "node02".into()], JobState::Timeout)]
    );
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.shown_state(), r.reason.as_str(), r.end_time),
        ("COMPLETING", "TimeLimit", Some(60))
    );
    // Told once.
    assert!(terminations(&c.schedule(61)).is_empty());
    // No step ran on node02: the batch script's end is the end of it.
    c.job_ended(&batch_end(id, 0, JobState::Timeout, 63), 63);
    let r = c.job(id).unwrap();
    assert_eq!(
        (r.state, r.completing(), r.end_time),
        (JobState::Timeout, false, Some(60))
    );
}

#[test]
fn a_restarted_controller_still_holds_a_completing_jobs_nodes() {
    let (mut c, big, _) = two_node_job_and_a_waiting_one();
    let effects = c
        .cancel(
            &CancelRequest {
                jobs: vec![(big.0, None)],
                ..Default::default()
            },
            &alice(),
            10,
        )
        .unwrap()
        .effects;
    let stored: Vec<JobRecord> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Persist(r) => Some((**r).clone()),
            _ => None,
        })
        .collect();
    // The controller restarts from what it wrote: the job still completes, its
    // nodes held, until its batch script's end and node02's word.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), stored, vec![], 20);
    c.agent_registered("node01", &[(big, 0)], 20);
    c.agent_registered("node02", &[(big, 0)], 20);
    let r = c.job(big).unwrap();
    assert_eq!((r.shown_state(), r.end_time), ("COMPLETING", Some(10)));
    c.job_ended(&batch_end(big, 0, JobState::Cancelled, 21), 21);
    assert!(c.job(big).unwrap().completing());
    c.run_gone(&gone(big, 0, "node02"), &agent(), 22).unwrap();
    let r = c.job(big).unwrap();
    assert_eq!(
        (r.state, r.completing(), r.end_time),
        (JobState::Cancelled, false, Some(10))
    );
}

#[test]
fn a_requeued_jobs_running_step_is_recorded_cancelled_by_sigterm() {
    let (mut c, big, _) = two_node_job_and_a_waiting_one();
    // `scontrol requeue` at 10 while its srun step runs: the step ends with the run,
    // CANCELLED by the SIGTERM that ends it (`0:15` in sacct), as Slurm 22.05 records
    // it.
    let effects = c.requeue(big, None, &agent(), 10).unwrap();
    let steps: Vec<(JobState, i32, i32, Option<i64>)> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistStep(s) if s.step == StepId::Number(0) => {
                Some((s.state, s.exit_code, s.signal, s.end))
            }
            _ => None,
        })
        .collect();
    assert_eq!(steps, [(JobState::Cancelled, 0, 15, Some(10))]);
}
