//! When a job starts: the forward simulation's prediction.

use super::*;
use crate::decision::Pass;

#[test]
fn the_predicted_start_is_the_end_of_the_running_job_it_waits_for() {
    // Two 8-GPU nodes: job 1 holds node01 for an hour, job 2 node02 for two. Job 3
    // wants 8 GPUs: it starts when job 1 ends, on node01. Nothing would start it sooner.
    let s = started(
        machine(&[(32, 8), (32, 8)]),
        vec![
            job(1).gpus(8).on(0).prio(3),
            job(2).gpus(8).on(1).time(7200).prio(2),
            job(3).gpus(8).prio(1),
        ],
    );
    let e = explain_at(&s, 3, 0);
    assert_eq!(
        e.start,
        Ok(PredictedStart {
            at: 3600,
            nodes: ids(&[0]),
            pass: Pass::Main,
            waits_for: vec![RunningEnd {
                job: JobId(1),
                end: 3600
            }],
        })
    );
    assert_eq!(e.counterfactuals, vec![]);
}

#[test]
fn under_backfill_a_job_behind_can_delay_the_job_so_the_simulation_keeps_it() {
    // Nodes z, w, x of 8 GPUs. Jobs 1 and 2 hold 4 GPUs of z and of w until 100, job 3
    // all of x until 200. Job A (4) wants 8 GPUs for 1000 s, then the explained job T
    // (5) the same, then job b (6): 4 GPUs for 110 s.
    // The backfill pass at 0 plans A on z and T on w from 120 (ends rounded to 60 s),
    // and b fits on z until then: it starts. At 100 A finds z half taken and starts on
    // w; T waits for z until b ends at 110. Without b, A takes z and T w, both at 100:
    // a job behind T changed when T starts, which is why it is simulated.
    let jobs = |with_b: bool| {
        let mut j = vec![
            job(1).gpus(4).time(100).on(0).prio(9),
            job(2).gpus(4).time(100).on(1).prio(9),
            job(3).gpus(8).time(200).on(2).prio(9),
            job(4).gpus(8).time(1000).prio(3),
            job(5).gpus(8).time(1000).prio(2),
        ];
        if with_b {
            j.push(job(6).gpus(4).time(110).prio(1));
        }
        j
    };
    let with_b = started(machine(&[(32, 8); 3]), jobs(true));
    assert_eq!(with_b.job(JobId(6)).unwrap().start, Some(0));
    let e = explain_at(&with_b, 5, 0);
    let start = e.start.unwrap();
    assert_eq!((start.at, start.nodes), (110, ids(&[0])));
    assert_eq!(
        start.waits_for,
        vec![
            RunningEnd {
                job: JobId(1),
                end: 100
            },
            RunningEnd {
                job: JobId(6),
                end: 110
            }
        ]
    );
    let without_b = started(machine(&[(32, 8); 3]), jobs(false));
    let start = explain_at(&without_b, 5, 0).start.unwrap();
    assert_eq!((start.at, start.nodes), (100, ids(&[1])));
}

#[test]
fn a_preemptor_starts_when_its_victim_is_gone_after_its_grace() {
    // One 8-GPU node in `low` (tier 1, GraceTime 60 s) and `high` (tier 2), under
    // preempt/partition_prio with CANCEL. Job 1 (low) holds the node for an hour; job 2
    // (high) arrives at 0, before any pass. The first simulated pass preempts job 1,
    // which ends 60 s later; job 2 starts then, by the preemption pass.
    let mut c = machine(&[(32, 8)]);
    c.partitions[0].grace_time = 60;
    let mut high = Partition::new("high", ids(&[0]));
    high.priority_tier = 2;
    c.partitions.push(high);
    c.preempt = crate::preempt::PreemptConfig {
        kind: crate::preempt::PreemptType::PartitionPrio,
        mode: crate::preempt::PreemptMode::Cancel,
        exempt_time: 0,
        gang: false,
        time_slice: 0,
    };
    let mut s = started(c, vec![job(1).gpus(8)]);
    s.submit(job(2).gpus(8).part(1), 0).unwrap();
    let start = explain_at(&s, 2, 0).start.unwrap();
    assert_eq!((start.at, start.pass), (60, Pass::Preempt));
    assert_eq!(
        start.waits_for,
        vec![RunningEnd {
            job: JobId(1),
            end: 60
        }]
    );
}

#[test]
fn one_forecast_answers_for_every_pending_job_until_the_state_changes() {
    // The story of the job behind the backfill (above): jobs 4 and 5 pending, job 6
    // backfilled. One forecast made at 0 gives job 4 its start at 100 on node02 and job 5
    // its start at 110 on node01, exactly what explaining each of them finds.
    let mut s = started(
        machine(&[(32, 8); 3]),
        vec![
            job(1).gpus(4).time(100).on(0).prio(9),
            job(2).gpus(4).time(100).on(1).prio(9),
            job(3).gpus(8).time(200).on(2).prio(9),
            job(4).gpus(8).time(1000).prio(3),
            job(5).gpus(8).time(1000).prio(2),
            job(6).gpus(4).time(110).prio(1),
        ],
    );
    let f = forecast(&s, 0, 365 * 86_400, 100);
    assert_eq!(f.counts(), (2, 0));
    assert_eq!(
        (f.start_time(JobId(4)), f.start_time(JobId(5))),
        (Some(100), Some(110))
    );
    for id in [4, 5] {
        let own = explain_at(&s, id, 0);
        let from_forecast =
            explain_with(&s, JobId(id), 0, &ExplainOptions::default(), Some(&f)).unwrap();
        assert_eq!(from_forecast, own, "job {id}");
    }
    // It holds until the simulation's next step (the ends at 100), not at it.
    assert_eq!(f.next_step, Some(100));
    assert!(f.holds_for(&s, 99));
    assert!(!f.holds_for(&s, 100));
    // A controller's pass in between (it calls one every second) changes nothing.
    let generation = s.generation();
    assert_eq!(s.schedule(30), vec![]);
    assert_eq!(s.generation(), generation);
    assert!(f.holds_for(&s, 30));
    // Any change to the state makes it stale: job 5 cancelled, job 4 comes alone.
    s.cancel_pending(JobId(5), 50);
    assert!(!f.holds_for(&s, 50));
    let e = explain_with(&s, JobId(4), 50, &ExplainOptions::default(), Some(&f)).unwrap();
    assert_eq!(e, explain_at(&s, 4, 50));
}

#[test]
fn a_forecast_cut_by_its_pass_budget_says_not_before_as_explain_does() {
    // One node, three one-hour jobs queued behind a running one: with a budget of two
    // passes the forecast sees job 2 start at 3600 and the others cut at 3600.
    let s = started(
        machine(&[(1, 0)]),
        vec![
            job(1).prio(4),
            job(2).prio(3),
            job(3).prio(2),
            job(4).prio(1),
        ],
    );
    let f = forecast(&s, 0, 365 * 86_400, 2);
    assert_eq!(f.start_time(JobId(2)), Some(3600));
    assert_eq!(
        f.start_of(&s, JobId(3)),
        Some(Err(NoStart::Budget { at: 3600 }))
    );
    assert!(f.cut_short());
    let options = ExplainOptions {
        max_passes: 2,
        counterfactuals: false,
        ..ExplainOptions::default()
    };
    for id in [2, 3, 4] {
        let own = explain(&s, JobId(id), 0, &options).unwrap();
        let from_forecast = explain_with(&s, JobId(id), 0, &options, Some(&f)).unwrap();
        assert_eq!(from_forecast.start, own.start, "job {id}");
    }
    assert_eq!(f.start_of(&s, JobId(1)), None, "job 1 was running");
}

#[test]
fn a_job_waiting_for_its_begin_time_does_not_wait_for_jobs_ending_before_it() {
    // One 8-GPU node, job 1 on it for an hour. Job 2 may begin in two hours: it starts
    // then, waiting for no running job. Job 3 may begin in half an hour: it waits for
    // job 1 too.
    let mut early = job(3).gpus(8).prio(1);
    early.begin = 1800;
    let mut late = job(2).gpus(8).prio(2);
    late.begin = 7200;
    let s = started(
        machine(&[(32, 8)]),
        vec![job(1).gpus(8).prio(9), late, early],
    );
    let p = explain_at(&s, 2, 0).start.unwrap();
    assert_eq!((p.at, p.waits_for), (7200, vec![]));
    let p = explain_at(&s, 3, 0).start.unwrap();
    assert_eq!(
        (p.at, p.waits_for),
        (
            3600,
            vec![RunningEnd {
                job: JobId(1),
                end: 3600
            }]
        )
    );
}

#[test]
fn a_forecast_with_a_smaller_budget_than_explains_is_used_only_where_it_starts_the_job() {
    // The same queue: a forecast of two passes starts job 2 and gives up on job 3;
    // explaining job 3 with the default budget of 100 passes simulates it again and
    // finds its start at 7200.
    let s = started(
        machine(&[(1, 0)]),
        vec![job(1).prio(4), job(2).prio(3), job(3).prio(2)],
    );
    let short = forecast(&s, 0, 365 * 86_400, 2);
    let options = ExplainOptions {
        counterfactuals: false,
        ..ExplainOptions::default()
    };
    let e = explain_with(&s, JobId(3), 0, &options, Some(&short)).unwrap();
    assert_eq!(e.start.map(|p| p.at), Ok(7200));
    let e = explain_with(&s, JobId(2), 0, &options, Some(&short)).unwrap();
    assert_eq!(e.start.map(|p| p.at), Ok(3600));
}
