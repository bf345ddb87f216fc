//! Why a job waits: never-fits numbers, node verdicts, limit holds, queue rank.

use super::*;
use crate::cluster::NodeState;
use crate::decision::Pass;
use crate::limits::check::Measure;
use crate::limits::usage::Scope;
use crate::limits::{AccountLimits, Assoc, Enforce, Limits, TresKind};

#[test]
fn no_node_has_sixteen_gpus() {
    // Two 8-GPU nodes of 64 CPUs and a 128-CPU node without GPUs. A job asking 16 GPUs
    // on one node can never run; nor can one asking 8 GPUs with 100 CPUs: the node with
    // 128 CPUs has no GPUs.
    let s = Scheduler::new(machine(&[(64, 8), (64, 8), (128, 0)]), backfill());
    let sixteen = job(1).gpus(16);
    let never = never_fits::check(&s, &sixteen);
    assert_eq!(
        never,
        Some(NeverFits::Gpus {
            wanted: 16,
            largest: 8
        })
    );
    assert_eq!(
        never.unwrap().to_string(),
        "no node has 16 GPUs; the largest has 8"
    );
    let wide = job(2).gpus(8).cpus(100);
    let never = never_fits::check(&s, &wide).unwrap();
    assert_eq!(
        never.to_string(),
        "no node with 8 GPUs has 100 CPUs; the largest has 64"
    );
    assert_eq!(never_fits::check(&s, &job(3).gpus(8).cpus(64)), None);
}

#[test]
fn a_time_limit_over_max_time_never_fits_and_a_shorter_one_starts_now() {
    // The partition's MaxTime is one hour; the job asks two. It waits with
    // PartitionTimeLimit forever; with 60 minutes it would start at once.
    let mut c = machine(&[(32, 8)]);
    c.partitions[0].max_time = Some(3600);
    let s = started(c, vec![job(1).gpus(1).time(7200)]);
    let e = explain_at(&s, 1, 0);
    assert_eq!(e.reason, PendingReason::PartitionTimeLimit);
    let never = NeverFits::TimeLimit {
        limit: 7200,
        max_time: 3600,
    };
    assert_eq!(
        never.to_string(),
        "its time limit (02:00:00) exceeds the partition's MaxTime (01:00:00)"
    );
    assert_eq!(e.never_fits, Some(never.clone()));
    assert_eq!(e.start, Err(NoStart::NeverFits(never)));
    assert_eq!(e.counterfactuals.len(), 1);
    let cf = &e.counterfactuals[0];
    assert_eq!(cf.change, Change::TimeLimit { minutes: 60 });
    assert_eq!((cf.at, cf.nodes.clone()), (0, ids(&[0])));
    assert_eq!(cf.spec.time_limit, 3600);
}

#[test]
fn nodes_in_the_same_situation_are_grouped() {
    // Five nodes of 32 CPUs and 8 GPUs. node01 is DOWN, node02 DRAIN. Jobs 1 and 2 take
    // 4 CPUs and 4 GPUs on node03 and node04; job 3 takes 4 CPUs and all 8 GPUs of
    // node05, all for an hour. Job 4 wants 8 GPUs on one node: nowhere now.
    let c = machine(&[(32, 8); 5]);
    let mut s = Scheduler::new(c, backfill());
    s.set_node_state(NodeId(0), NodeState::Down);
    s.set_node_state(NodeId(1), NodeState::Drain);
    for j in [
        job(1).cpus(4).gpus(4).on(2).prio(9),
        job(2).cpus(4).gpus(4).on(3).prio(8),
        job(3).cpus(4).gpus(8).on(4).prio(7),
        job(4).cpus(4).gpus(8),
    ] {
        s.submit(j, 0).unwrap();
    }
    s.schedule(0);
    let e = explain_at(&s, 4, 0);
    assert_eq!(e.reason, PendingReason::Resources);
    assert_eq!(e.never_fits, None);
    let busy = |gpus_left| NodeVerdict::Busy {
        free: gpus_free(28, gpus_left),
        needs: gpu_share(4, 8),
        scarce: vec![Dimension::Gres(GPU)],
    };
    assert_eq!(
        e.nodes,
        vec![
            NodeGroup {
                verdict: NodeVerdict::Down,
                nodes: ids(&[0])
            },
            NodeGroup {
                verdict: NodeVerdict::Drain,
                nodes: ids(&[1])
            },
            NodeGroup {
                verdict: busy(4),
                nodes: ids(&[2, 3])
            },
            NodeGroup {
                verdict: busy(0),
                nodes: ids(&[4])
            },
        ]
    );
    // At 3600 all three end; the best fit among equals is the lowest: node03, freed by
    // job 1.
    assert_eq!(
        e.start,
        Ok(PredictedStart {
            at: 3600,
            nodes: ids(&[2]),
            pass: Pass::Main,
            waits_for: vec![RunningEnd {
                job: JobId(1),
                end: 3600
            }],
        })
    );
}

/// The accounts: `root` (1) over `phys` (2); alice (1001) and bob (1002) in `phys`
/// (associations 10 and 11). `phys` may hold 8 GPUs at once.
fn phys_with_eight_gpus() -> AccountLimits {
    let mut db = AccountLimits {
        enforce: Enforce {
            limits: true,
            safe: false,
        },
        ..Default::default()
    };
    let assoc = |parent: Option<u32>, user: bool| Assoc {
        parent: parent.map(AssocId),
        user,
        limits: Limits::default(),
    };
    db.assocs.insert(AssocId(1), assoc(None, false));
    db.assocs.insert(AssocId(2), assoc(Some(1), false));
    db.assocs.insert(AssocId(10), assoc(Some(2), true));
    db.assocs.insert(AssocId(11), assoc(Some(2), true));
    db.assocs.get_mut(&AssocId(2)).unwrap().limits.grp_tres = vec![(TresKind::Gres(GPU), 8)];
    db
}

#[test]
fn a_limit_hold_shows_the_usage_and_the_users_own_part() {
    // Two nodes of 32 CPUs and 8 GPUs. phys may hold 8 GPUs. Alice runs 4 GPUs for an
    // hour, bob 2 for two hours (both on node01, best fit). Alice's next job asks 4:
    // 6 + 4 > 8, held by AssocGrpGRES although node02 is idle. It starts when her first
    // job ends, at 3600 (node01, 6 GPUs free, fits best); with 2 GPUs it would start now.
    let mut s = Scheduler::new(machine(&[(32, 8), (32, 8)]), backfill());
    s.set_account_limits(phys_with_eight_gpus());
    for j in [
        job(1).gpus(4).by(1001, 10).prio(3),
        job(2).gpus(2).by(1002, 11).time(7200).prio(2),
        job(3).gpus(4).by(1001, 10).prio(1),
    ] {
        s.submit(j, 0).unwrap();
    }
    s.schedule(0);
    let e = explain_at(&s, 3, 0);
    assert_eq!(e.reason, PendingReason::Limit("AssocGrpGRES"));
    assert_eq!(
        e.limits,
        vec![LimitHold {
            reason: "AssocGrpGRES",
            scope: Some(Scope::Assoc(AssocId(2))),
            measure: Measure::Tres(TresKind::Gres(GPU)),
            limit: 8,
            in_use: 6,
            own: Some(4),
            job: 4,
        }]
    );
    let start = e.start.unwrap();
    assert_eq!((start.at, start.nodes), (3600, ids(&[0])));
    assert_eq!(
        start.waits_for,
        vec![RunningEnd {
            job: JobId(1),
            end: 3600
        }]
    );
    assert_eq!(e.counterfactuals.len(), 1);
    let cf = &e.counterfactuals[0];
    assert_eq!(cf.change, Change::GpusPerNode { gpus: 2 });
    assert_eq!((cf.at, cf.nodes.clone()), (0, ids(&[0])));
}

#[test]
fn queue_rank_counts_the_jobs_ahead_in_its_own_partition() {
    // Partitions `gpu` (node01) and `cpu` (node02), 8 CPUs and 4 GPUs each, both full
    // for an hour. Pending in `gpu`: job 3 (priority 30: 4 CPUs, 2 GPUs), job 4
    // (priority 20: 1 CPU), job 2 (priority 10: 2 CPUs, 1 GPU). Job 5 in `cpu` has the
    // highest priority and does not count. Job 7 (priority 25) waits for its `--begin`
    // in two hours: it is ahead, but does not compete with job 2 now.
    let mut c = machine(&[(8, 4), (8, 4)]);
    let mut later = job(7).cpus(8).prio(25);
    later.begin = 7200;
    c.partitions[0].nodes = ids(&[0]);
    c.partitions.push(Partition::new("cpu", ids(&[1])));
    let s = started(
        c,
        vec![
            job(1).cpus(8).prio(99),
            job(6).cpus(8).part(1).prio(99),
            job(2).cpus(2).gpus(1).prio(10),
            job(3).cpus(4).gpus(2).prio(30),
            job(4).prio(20),
            job(5).part(1).prio(40),
            later,
        ],
    );
    let e = explain_at(&s, 2, 0);
    assert_eq!(
        e.queue,
        QueuePosition {
            rank: 4,
            of: 4,
            ahead: 2,
            waiting_ahead: 1,
            ahead_demand: Demand {
                cpus: 5,
                gpus: 2,
                nodes: 2
            },
        }
    );
    assert_eq!(explain_at(&s, 3, 0).queue.rank, 1);
}

#[test]
fn a_reserved_node_is_named_by_its_reservation() {
    // Two nodes of 8 GPUs; `maint` holds node02 from now for a day. Job 1 holds node01
    // for an hour, so job 2 (8 GPUs) finds node01 busy and node02 reserved.
    let mut s = Scheduler::new(machine(&[(32, 8), (32, 8)]), backfill());
    let req = crate::reservation::ReservationRequest {
        name: "maint".into(),
        start: 0,
        end: 86_400,
        nodes: ids(&[1]),
        users: crate::reservation::AccessList {
            names: vec![0],
            negated: false,
        },
        ..Default::default()
    };
    let r = s.plan_reservation(&req, 0).unwrap();
    s.add_reservation(r, 0);
    for j in [job(1).gpus(8).prio(2), job(2).gpus(8).prio(1)] {
        s.submit(j, 0).unwrap();
    }
    s.schedule(0);
    let e = explain_at(&s, 2, 0);
    assert_eq!(e.nodes[1].verdict, NodeVerdict::Reserved("maint".into()));
    assert_eq!(e.nodes[1].nodes, ids(&[1]));
    assert_eq!(e.start.map(|p| p.at), Ok(3600));
}

#[test]
fn explain_answers_only_for_pending_jobs() {
    let s = started(machine(&[(32, 8)]), vec![job(1).gpus(8), job(2).gpus(8)]);
    assert!(explain(&s, JobId(1), 0, &ExplainOptions::default()).is_none());
    assert!(explain(&s, JobId(9), 0, &ExplainOptions::default()).is_none());
    assert!(explain(&s, JobId(2), 0, &ExplainOptions::default()).is_some());
}

#[test]
fn a_job_naming_its_node_is_not_told_another_node_fits() {
    // Two idle-ish nodes of 8 CPUs: job 1 fills node02 for an hour. Job 2 asks for
    // node02 only (`-w`): node01, idle, is not among its nodes, not "fits".
    let mut s = Scheduler::new(machine(&[(8, 0), (8, 0)]), backfill());
    s.submit(job(1).cpus(8).on(1).prio(9), 0).unwrap();
    s.submit(job(2).cpus(8).on(1), 0).unwrap();
    s.schedule(0);
    let e = explain_at(&s, 2, 0);
    assert_eq!(
        e.nodes[0],
        NodeGroup {
            verdict: NodeVerdict::NotListed,
            nodes: ids(&[0])
        }
    );
    assert!(
        matches!(e.nodes[1].verdict, NodeVerdict::Busy { .. }),
        "{:?}",
        e.nodes
    );
}
