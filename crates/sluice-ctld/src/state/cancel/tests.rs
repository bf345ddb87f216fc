//! Cancels and signals as Slurm's controller answers them, job by job.

use std::path::Path;

use sluice_core::JobId;
use sluice_proto::error::ErrorCode;
use sluice_proto::types::{CancelRefusal, CancelRequest, JobState};

use super::super::tests::{alice, conf, desc, submit};
use super::super::{Caller, Controller, Effect};

fn bob() -> Caller {
    Caller {
        uid: 2000,
        gid: 2000,
        admin: false,
    }
}

/// Two CPUs: bob's job runs on one and his second waits behind alice's, which runs on
/// the other; alice has one more waiting. Returns (alice running, alice waiting, bob
/// running, bob waiting).
fn shared_cluster(private: bool) -> (Controller, [JobId; 4]) {
    let mut conf = conf(1, 2);
    if private {
        conf.private_data = crate::config::PrivateData::parse("jobs").unwrap();
    }
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let bobs = |c: &mut Controller, next: &mut u64| {
        let p = c.prepare(desc(1, 600), &bob(), "bob", "bob", 0).unwrap();
        let id = JobId(*next);
        *next += p.ids();
        c.accept(p.jobs(id), 0);
        id
    };
    let bob_running = bobs(&mut c, &mut next);
    let (alice_running, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    let bob_waiting = bobs(&mut c, &mut next);
    let (alice_waiting, _) = submit(&mut c, desc(1, 600), &mut next, 0);
    c.schedule(0);
    (c, [alice_running, alice_waiting, bob_running, bob_waiting])
}

fn denied(job: JobId) -> CancelRefusal {
    CancelRefusal {
        job: job.0,
        named: job.to_string(),
        error: "Access/permission denied".into(),
        code: ErrorCode::AccessDenied,
        with: Vec::new(),
    }
}

#[test]
fn a_filter_cancels_the_callers_matches_and_refuses_each_other_one() {
    let (mut c, [a_run, a_wait, b_run, b_wait]) = shared_cluster(false);
    // `scancel -n job` as alice: both her jobs go; bob's are refused one by one,
    // the pending one first, as Slurm's scancel asks about them.
    let req = CancelRequest {
        name: Some("job".into()),
        ..Default::default()
    };
    let done = c.cancel(&req, &alice(), 5).unwrap();
    assert_eq!(done.refused, [denied(b_wait), denied(b_run)]);
    let state = |c: &Controller, id| c.job(id).unwrap().state;
    assert_eq!(state(&c, a_wait), JobState::Cancelled);
    assert!(c.job(a_run).unwrap().completing());
    assert_eq!(state(&c, b_run), JobState::Running);
    assert_eq!(state(&c, b_wait), JobState::Pending);
}

#[test]
fn a_filter_passes_over_jobs_private_data_hides_without_a_word() {
    let (mut c, [_, a_wait, _, b_wait]) = shared_cluster(true);
    let req = CancelRequest {
        states: vec![JobState::Pending],
        ..Default::default()
    };
    let done = c.cancel(&req, &alice(), 5).unwrap();
    assert_eq!(done.refused, []);
    assert_eq!(c.job(a_wait).unwrap().state, JobState::Cancelled);
    assert_eq!(c.job(b_wait).unwrap().state, JobState::Pending);
}

#[test]
fn naming_a_job_the_caller_may_not_touch_refuses_the_whole_request() {
    let (mut c, [_, a_wait, _, b_wait]) = shared_cluster(false);
    let req = CancelRequest {
        jobs: vec![(a_wait.0, None), (b_wait.0, None)],
        ..Default::default()
    };
    let e = c.cancel(&req, &alice(), 5).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            ErrorCode::AccessDenied,
            format!("Kill job error on job id {b_wait}: Access/permission denied").as_str()
        )
    );
    assert_eq!(c.job(a_wait).unwrap().state, JobState::Pending);
}

#[test]
fn a_signal_reaches_running_jobs_and_is_refused_for_pending_ones() {
    let (mut c, [a_run, a_wait, ..]) = shared_cluster(false);
    // `scancel -s USR1 RUNNING PENDING`: the running job is signalled, the pending one
    // refused on its own (scancel asks again), and nothing else changes.
    let req = CancelRequest {
        jobs: vec![(a_run.0, None), (a_wait.0, None)],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    let done = c.cancel(&req, &alice(), 5).unwrap();
    assert_eq!(
        done.refused,
        [CancelRefusal {
            job: a_wait.0,
            named: a_wait.to_string(),
            error: "Job can not be altered now, try again later".into(),
            code: ErrorCode::Busy,
            with: Vec::new(),
        }]
    );
    let signalled: Vec<(JobId, i32)> = done
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Signal { job_id, signal, .. } => Some((*job_id, *signal)),
            _ => None,
        })
        .collect();
    assert_eq!(signalled, [(a_run, libc::SIGUSR1)]);
    assert_eq!(c.job(a_wait).unwrap().state, JobState::Pending);
    assert_eq!(c.job(a_run).unwrap().state, JobState::Running);
}

#[test]
fn a_suspended_job_takes_no_signal_but_is_cancelled() {
    let (mut c, [a_run, ..]) = shared_cluster(false);
    let root = Caller {
        uid: 0,
        gid: 0,
        admin: true,
    };
    c.suspend(a_run, true, &root, 3).unwrap();
    let mut req = CancelRequest {
        jobs: vec![(a_run.0, None)],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    let done = c.cancel(&req, &alice(), 5).unwrap();
    assert_eq!(done.refused.len(), 1);
    assert_eq!(done.refused[0].code, ErrorCode::Busy);
    assert!(!done
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Signal { .. })));
    req.signal = None;
    let done = c.cancel(&req, &alice(), 6).unwrap();
    assert_eq!(done.refused, []);
    assert!(c.job(a_run).unwrap().completing());
}

#[test]
fn an_arrays_unstarted_tasks_are_refused_as_one_job() {
    let mut c = Controller::new(conf(1, 1), Path::new("/s"), vec![], vec![], 0);
    // bob's held array of four tasks: one record each in Sluice, one job in Slurm.
    let mut d = desc(1, 600);
    d.array = Some((vec![0, 1, 2, 3], None));
    d.hold = true;
    let p = c.prepare(d, &bob(), "bob", "bob", 0).unwrap();
    let array = JobId(1);
    c.accept(p.jobs(array), 0);
    let req = CancelRequest {
        user: Some("bob".into()),
        ..Default::default()
    };
    let done = c.cancel(&req, &alice(), 5).unwrap();
    let refused: Vec<(String, usize)> = done
        .refused
        .iter()
        .map(|r| (r.named.clone(), r.with.len()))
        .collect();
    assert_eq!(refused, [("1_[0-3]".to_string(), 3)]);
    // bob's own signal to it: one refusal too, every record asked about again.
    let req = CancelRequest {
        jobs: vec![(array.0, None)],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    let done = c.cancel(&req, &bob(), 6).unwrap();
    assert_eq!(done.refused.len(), 1);
    assert_eq!(done.refused[0].code, ErrorCode::Busy);
    let mut all: Vec<u64> = done.refused[0].with.clone();
    all.push(done.refused[0].job);
    all.sort_unstable();
    assert_eq!(all, [1, 2, 3, 4]);
}

#[test]
fn a_job_asked_about_again_after_it_ended_is_refused_as_done() {
    let (mut c, [a_run, a_wait, ..]) = shared_cluster(false);
    // `scancel -s USR1 PENDING` is refused; the job is cancelled before scancel asks
    // again, and the second ask finds it ended (exit 229 in Slurm's scancel), and a
    // record gone from the controller unknown.
    let req = CancelRequest {
        jobs: vec![(a_wait.0, None)],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    assert_eq!(
        c.cancel(&req, &alice(), 5).unwrap().refused[0].code,
        ErrorCode::Busy
    );
    let kill = CancelRequest {
        jobs: vec![(a_wait.0, None)],
        ..Default::default()
    };
    c.cancel(&kill, &alice(), 6).unwrap();
    let again = CancelRequest {
        records: vec![a_wait.0, 999, a_run.0],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    let done = c.cancel(&again, &alice(), 11).unwrap();
    let refused: Vec<(u64, ErrorCode, &str)> = done
        .refused
        .iter()
        .map(|r| (r.job, r.code, r.error.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            (
                a_wait.0,
                ErrorCode::AlreadyDone,
                "Job/step already completing or completed"
            ),
            (999, ErrorCode::InvalidJobId, "Invalid job id specified"),
        ]
    );
    // The running one among them still takes the signal.
    assert!(done.effects.iter().any(
        |e| matches!(e, Effect::Signal { job_id, signal, .. } if *job_id == a_run && *signal == libc::SIGUSR1)
    ));
}

/// The steps `effects` signal: (job, step, signal), and the steps made cancelled.
fn signalled_steps(effects: &[Effect]) -> Vec<(JobId, Option<u32>, i32, Vec<String>)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Signal {
                job_id,
                step,
                signal,
                nodes,
                ..
            } => Some((*job_id, *step, *signal, nodes.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_heterogeneous_steps_parts_are_cancelled_together_and_a_signal_reaches_its_first() {
    use sluice_proto::types::{StepId, StepRequest};
    // A 4-task job on two 2-CPU nodes running `srun -n2 A : -n2 B`: part 0 on
    // node01, part 1 on node02, both step 0.
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
    c.start_step(id, &part(0, None, None), &alice(), 1).unwrap();
    c.start_step(id, &part(1, Some(0), Some("node01")), &alice(), 1)
        .unwrap();
    let step = |signal| CancelRequest {
        steps: vec![(id.0, None, 0)],
        signal,
        ..Default::default()
    };
    // `scancel -s USR1 J.0`: the first part's tasks only, as Slurm's scancel sends it.
    let done = c.cancel(&step(Some(libc::SIGUSR1)), &alice(), 2).unwrap();
    assert_eq!(
        signalled_steps(&done.effects),
        [(id, Some(0), libc::SIGUSR1, vec!["node01".to_string()])]
    );
    // `scancel J.0`: every part, each recorded cancelled by its caller.
    let done = c.cancel(&step(None), &alice(), 3).unwrap();
    assert_eq!(
        signalled_steps(&done.effects),
        [
            (id, Some(0), libc::SIGKILL, vec!["node01".to_string()]),
            (id, Some(0), libc::SIGKILL, vec!["node02".to_string()]),
        ]
    );
    for p in 0..2 {
        assert_eq!(
            c.steps[&(id, StepId::Part(0, p))].cancelled_by,
            Some(alice().uid)
        );
    }
}

#[test]
fn a_heterogeneous_jobs_step_is_named_by_its_component_and_cancelled_in_all() {
    use sluice_proto::types::StepRequest;
    // A hetjob of two one-task components on two nodes, each running step 0 of
    // `srun --het-group=0,1`.
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let mut d = desc(2, 600);
    d.het_components.push(desc(2, 600));
    let (leader, _) = submit(&mut c, d, &mut next, 0);
    let member = JobId(leader.0 + 1);
    c.schedule(0);
    let req = StepRequest {
        ntasks: Some(1),
        argv: vec!["sleep".into()],
        overlap: true,
        step_id: Some(0),
        ..Default::default()
    };
    c.start_step(leader, &req, &alice(), 1).unwrap();
    c.start_step(member, &req, &alice(), 1).unwrap();
    let nodes = |c: &Controller, id: JobId| c.job(id).unwrap().nodes.clone();
    // `scancel -s USR1 J+1.0`: the second component's step 0, on its node.
    let mut cancel = CancelRequest {
        steps: vec![(member.0, None, 0)],
        signal: Some(libc::SIGUSR1),
        ..Default::default()
    };
    let done = c.cancel(&cancel, &alice(), 2).unwrap();
    assert_eq!(
        signalled_steps(&done.effects),
        [(member, Some(0), libc::SIGUSR1, nodes(&c, member))]
    );
    // `scancel J+1.0`: that srun's step in every component, as its srun aborts.
    cancel.signal = None;
    let done = c.cancel(&cancel, &alice(), 3).unwrap();
    assert_eq!(
        signalled_steps(&done.effects),
        [
            (member, Some(0), libc::SIGKILL, nodes(&c, member)),
            (leader, Some(0), libc::SIGKILL, nodes(&c, leader)),
        ]
    );
    for id in [leader, member] {
        assert_eq!(
            c.steps[&(id, sluice_proto::types::StepId::Number(0))].cancelled_by,
            Some(alice().uid)
        );
    }
}

#[test]
fn srun_ending_its_step_after_a_failed_task_terminates_it_on_every_node() {
    use sluice_proto::types::{StepId, StepRequest};
    // Alice's 4-task job on two 2-CPU nodes runs `srun -K -n4`; a task fails, and her
    // srun ends the step (Slurm's SIG_TERM_KILL).
    let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let (id, _) = submit(&mut c, desc(4, 600), &mut next, 0);
    c.schedule(0);
    let (plan, _) = c
        .start_step(id, &StepRequest::default(), &alice(), 1)
        .unwrap();
    let terminate = CancelRequest {
        steps: vec![(id.0, None, plan.step)],
        terminate: true,
        ..Default::default()
    };
    // Not bob's to end.
    let refused = c.cancel(&terminate, &bob(), 2).unwrap_err();
    assert_eq!(refused.code, ErrorCode::AccessDenied);
    // Hers: SIGTERM, then SIGKILL after KillWait, on both nodes; no SIGKILL at once.
    let done = c.cancel(&terminate, &alice(), 2).unwrap();
    assert!(signalled_steps(&done.effects).is_empty());
    let ended: Vec<(Vec<String>, u32, i64, bool)> = done
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::TerminateStep {
                nodes,
                job_id,
                step,
                kill_wait,
                time_limit,
            } if *job_id == id => Some((nodes.clone(), *step, *kill_wait, *time_limit)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ended,
        [(
            vec!["node01".to_string(), "node02".to_string()],
            plan.step,
            c.conf.kill_wait,
            false
        )]
    );
    // Recorded as no one's cancel, as Slurm records it: the step's end says how.
    let s = &c.steps[&(id, StepId::Number(plan.step))];
    assert_eq!((s.state, s.cancelled_by), (JobState::Running, None));
    c.end_step(id, plan.step, 0, libc::SIGTERM, &alice(), 3)
        .unwrap();
    let s = &c.steps[&(id, StepId::Number(plan.step))];
    assert_eq!(
        (s.state, s.exit_code, s.signal),
        (JobState::Cancelled, 0, libc::SIGTERM)
    );
}
