//! What would start a job sooner: counterfactuals, and the hook they use.

use super::*;
use crate::scheduler::SubmitError;

#[test]
fn a_shorter_time_limit_backfills_now() {
    // One node of 8 GPUs. Job 1 holds 4 GPUs until 3700. Job 2 (ahead) wants all 8 for
    // an hour: reserved from job 1's end (3720 in the plan, at bf_resolution). Job 3
    // wants the 4 idle GPUs for two hours: it would run into job 2's reservation, so it
    // waits until job 2 ends, at 3700 + 3600 = 7300.
    // At 100, with --time=60 it would end at 3700 and fit before the reservation (3720):
    // the next backfill pass (due: the last was at 0) starts it at once. 61 minutes
    // would end at 3760 and run into it.
    let s = started(
        machine(&[(32, 8)]),
        vec![
            job(1).gpus(4).time(3700).prio(3),
            job(2).gpus(8).prio(2),
            job(3).gpus(4).time(7200).prio(1),
        ],
    );
    let e = explain_at(&s, 3, 100);
    let start = e.start.unwrap();
    assert_eq!((start.at, start.nodes), (7300, ids(&[0])));
    assert_eq!(
        start.waits_for,
        vec![RunningEnd {
            job: JobId(1),
            end: 3700
        }]
    );
    assert_eq!(e.counterfactuals.len(), 1);
    let cf = &e.counterfactuals[0];
    assert_eq!(cf.change, Change::TimeLimit { minutes: 60 });
    assert_eq!((cf.at, cf.nodes.clone()), (100, ids(&[0])));
    assert_eq!(cf.spec.time_limit, 3600);
}

#[test]
fn fewer_gpus_would_start_it_now() {
    // One node of 8 GPUs; job 1 holds 4 for an hour. Job 2 wants 8: it starts at 3600.
    // A shorter time limit changes nothing (the GPUs are missing now); with 4 GPUs it
    // starts at once.
    let s = started(
        machine(&[(32, 8)]),
        vec![job(1).gpus(4).prio(2), job(2).gpus(8).prio(1)],
    );
    let e = explain_at(&s, 2, 0);
    assert_eq!(e.start.as_ref().map(|p| p.at), Ok(3600));
    assert_eq!(e.counterfactuals.len(), 1);
    let cf = &e.counterfactuals[0];
    assert_eq!(cf.change, Change::GpusPerNode { gpus: 4 });
    assert_eq!((cf.at, cf.nodes.clone()), (0, ids(&[0])));
    assert_eq!(cf.spec.request.gres_per_node[GPU], 4);
    assert!(
        !e.counterfactuals_cut,
        "every change was simulated to the end"
    );
}

#[test]
fn a_search_cut_short_by_its_budget_says_so() {
    // As above, with one pass for all the suggestions: the first change tried (a
    // one-minute limit) is still pending when its pass is spent, and fewer GPUs are
    // never tried. Nothing is suggested, and the answer says the search was cut short
    // (fewer GPUs would help), rather than that nothing helps.
    let s = started(
        machine(&[(32, 8)]),
        vec![job(1).gpus(4).prio(2), job(2).gpus(8).prio(1)],
    );
    let options = ExplainOptions {
        counterfactual_passes: 1,
        ..Default::default()
    };
    let e = explain(&s, JobId(2), 0, &options).unwrap();
    assert_eq!(e.start.as_ref().map(|p| p.at), Ok(3600));
    assert_eq!(e.counterfactuals, vec![]);
    assert!(e.counterfactuals_cut);
}

#[test]
fn another_partition_would_start_it_now() {
    // `gpu` is node01, `spare` node02. Job 1 holds node01's 8 GPUs for an hour; job 2
    // waits for them until 3600. The user may also use `spare`, idle: there it starts
    // now, on node02.
    let mut c = machine(&[(32, 8), (32, 8)]);
    c.partitions[0].nodes = ids(&[0]);
    c.partitions.push(Partition::new("spare", ids(&[1])));
    let s = started(c, vec![job(1).gpus(8).prio(2), job(2).gpus(8).prio(1)]);
    let spare = Alternative {
        partition: Some(PartitionId(1)),
        qos: None,
        priority: None,
    };
    let options = ExplainOptions {
        alternatives: vec![spare.clone()],
        ..Default::default()
    };
    let e = explain(&s, JobId(2), 0, &options).unwrap();
    assert_eq!(e.start.as_ref().map(|p| p.at), Ok(3600));
    assert_eq!(e.counterfactuals.len(), 1);
    let cf = &e.counterfactuals[0];
    assert_eq!(cf.change, Change::Alternative(spare));
    assert_eq!((cf.at, cf.nodes.clone()), (0, ids(&[1])));
    assert_eq!(cf.spec.partition, PartitionId(1));
}

#[test]
fn no_suggestion_is_shown_when_none_helps() {
    // One node of 8 GPUs with feature `a100`, in `gpu` and in `all`. Job 1 holds it
    // whole for an hour. Job 2 asks one GPU, one CPU, one minute, exclusive, on an
    // `a100`: without --exclusive, without the constraint, or in `all`, it still waits
    // for job 1; nothing shorter or smaller exists. It starts at 3600 and nothing is
    // suggested.
    let mut c = machine(&[(32, 8)]);
    let a100 = c.feature_bit("a100").unwrap();
    c.nodes[0].features = a100;
    c.partitions.push(Partition::new("all", ids(&[0])));
    let mut two = job(2).gpus(1).time(60).prio(1);
    two.request.exclusive = true;
    two.request.features_any = a100;
    let s = started(c, vec![job(1).gpus(8).prio(2), two]);
    let options = ExplainOptions {
        alternatives: vec![Alternative {
            partition: Some(PartitionId(1)),
            qos: None,
            priority: None,
        }],
        ..Default::default()
    };
    let e = explain(&s, JobId(2), 0, &options).unwrap();
    assert_eq!(e.start.as_ref().map(|p| p.at), Ok(3600));
    assert_eq!(e.counterfactuals, vec![]);
    assert!(!e.counterfactuals_cut, "nothing helps, for certain");
}

#[test]
fn update_pending_keeps_the_place_in_the_queue_and_refuses_others() {
    // Jobs 2 and 3 wait behind job 1 with equal priority. Job 2 asks for fewer GPUs:
    // it stays ahead of job 3. A running job, an unknown one, or a request no node can
    // hold are refused, changing nothing.
    let mut s = started(
        machine(&[(32, 8)]),
        vec![job(1).gpus(8), job(2).gpus(8), job(3).gpus(8)],
    );
    s.update_pending(job(2).gpus(2), 10).unwrap();
    let order: Vec<u64> = s.pending().map(|j| j.id().0).collect();
    assert_eq!(order, vec![2, 3]);
    assert_eq!(s.job(JobId(2)).unwrap().spec.request.gres_per_node[GPU], 2);
    assert_eq!(
        s.update_pending(job(1).gpus(2), 10),
        Err(SubmitError::NotPending(JobId(1)))
    );
    assert_eq!(
        s.update_pending(job(7), 10),
        Err(SubmitError::NotPending(JobId(7)))
    );
    assert_eq!(
        s.update_pending(job(3).gpus(16), 10),
        Err(SubmitError::NodeConfigUnavailable)
    );
    assert_eq!(s.job(JobId(3)).unwrap().spec.request.gres_per_node[GPU], 8);
}
