//! Borrowing stories (cohorts of accounts, see `sluice_core::borrow`): the machine,
//! the cohort's quotas, the running jobs, the job that arrives, and the exact starts,
//! reasons and victims — driven the way the controller drives the core (every job is
//! reported ended by the caller, a reclaimed one after its grace time).
//!
//! Unless a story says otherwise: two nodes of 64 CPUs and 8 GPUs (16 GPUs), one
//! partition, `PreemptType=preempt/none`. Accounts `vision` (association 1, user
//! association 11) and `nlp` (2, user 12) form cohort `ml`; `other` (3, user 13) is in
//! no cohort.

mod common;

use common::*;
use sluice_core::limits::{AccountLimits, Assoc, AssocId, TresKind};
use sluice_core::{
    Cluster, Cohort, CohortMember, Decision, JobId, Partition, Pass, PendingReason, PreemptConfig,
    PreemptMode, PreemptType, Scheduler, Secs, Time,
};

const VISION: u32 = 11;
const NLP: u32 = 12;
const OTHER: u32 = 13;
const GPU: TresKind = TresKind::Gres(0);
const RQ: PreemptMode = PreemptMode::Requeue;

fn accounts() -> AccountLimits {
    let mut db = AccountLimits::default();
    let mut add = |id: u32, parent: Option<u32>, user: bool| {
        db.assocs.insert(
            AssocId(id),
            Assoc {
                parent: parent.map(AssocId),
                user,
                ..Assoc::default()
            },
        );
    };
    add(0, None, false);
    for a in 1..=3 {
        add(a, Some(0), false);
        add(10 + a, Some(a), true);
    }
    db
}

/// A member: account, GPU quota, GPU borrow limit (`None`: no `BorrowLimit`), grace.
fn member(account: u32, quota: u64, limit: Option<u64>, grace: Secs) -> CohortMember {
    CohortMember {
        account: AssocId(account),
        quota: vec![(GPU, quota)],
        borrow_limit: limit.map(|l| vec![(GPU, l)]).unwrap_or_default(),
        grace_time: grace,
    }
}

fn sched(c: Cluster, members: Vec<CohortMember>) -> Scheduler {
    let mut s = Scheduler::new(c, backfill(10_000));
    s.set_account_limits(accounts());
    s.set_cohorts(vec![Cohort {
        name: "ml".into(),
        members,
    }]);
    s
}

/// `n` nodes of 64 CPUs and 8 GPUs.
fn gpus(n: usize) -> Cluster {
    gpu_cluster(&vec![(64, 8); n])
}

/// A job of user association `user` asking `g` GPUs on one node.
fn gjob(id: u64, user: u32, g: u32) -> JobBuilder {
    job(id).acct(Some(user), None).gpus(g).one_node().time(1000)
}

fn arrive(s: &mut Scheduler, j: JobBuilder, t: Time) -> Vec<Decision> {
    s.submit(j.submit(t).spec(), t).unwrap();
    s.schedule(t)
}

fn end(s: &mut Scheduler, id: u64, t: Time) -> Vec<Decision> {
    assert!(s.job_ended(JobId(id), t).is_some(), "job {id} not running");
    s.schedule(t)
}

/// The preemptions among `d`: (victim, by, mode, grace, reclaim).
fn preemptions(d: &[Decision]) -> Vec<(u64, u64, PreemptMode, Secs, bool)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Preempt {
                victim,
                by,
                mode,
                grace,
                reclaim,
                ..
            } => Some((victim.0, by.0, *mode, *grace, *reclaim)),
            _ => None,
        })
        .collect()
}

/// The starts among `d`: (job, pass).
fn starts(d: &[Decision]) -> Vec<(u64, Pass)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start { job, pass, .. } => Some((job.0, *pass)),
            _ => None,
        })
        .collect()
}

fn reason(s: &Scheduler, id: u64) -> PendingReason {
    s.job(JobId(id)).unwrap().reason
}

fn borrowed(s: &Scheduler, ids: &[u64]) -> Vec<bool> {
    ids.iter().map(|&i| s.borrowed(JobId(i))).collect()
}

#[test]
fn an_account_borrows_up_to_its_borrow_limit() {
    // vision Quota=gpu:8 BorrowLimit=gpu:4, nlp Quota=gpu:8, on 24 GPUs. Four 4-GPU
    // vision jobs at 0: two within the quota, the third borrows (12 ≤ 8 + 4), the
    // fourth would reach 16 and waits although 12 GPUs are free.
    let mut s = sched(
        gpus(3),
        vec![member(1, 8, Some(4), 60), member(2, 8, None, 30)],
    );
    let mut all = Vec::new();
    for id in 1..=4 {
        all.extend(starts(&arrive(&mut s, gjob(id, VISION, 4), 0)));
    }
    assert_eq!(all, vec![(1, Pass::Main), (2, Pass::Main), (3, Pass::Main)]);
    assert_eq!(borrowed(&s, &[1, 2, 3]), vec![false, false, true]);
    assert_eq!(reason(&s, 4), PendingReason::Limit("CohortBorrowLimit"));
    assert_eq!(reason(&s, 4).as_str(), "CohortBorrowLimit");
    // A job of an account in no cohort takes free GPUs as always.
    let d = arrive(&mut s, gjob(5, OTHER, 8), 1);
    assert_eq!(starts(&d), vec![(5, Pass::Main)]);
    // Job 1 ends at 100: vision runs 8, and job 4 borrows up to 8 + 4.
    let d = end(&mut s, 1, 100);
    assert_eq!(starts(&d), vec![(4, Pass::Main)]);
    assert_eq!(borrowed(&s, &[4]), vec![true]);
}

#[test]
fn nothing_is_borrowed_when_the_cohort_uses_all_its_quota() {
    // 24 GPUs, both quotas 8, no borrow limit. nlp runs 8 GPUs, vision 8: a further
    // vision job would bring the cohort to 20 of its 16 and waits with CohortQuota,
    // with 8 GPUs free. When nlp's job ends at 100 it borrows nlp's unused quota.
    let mut s = sched(
        gpus(3),
        vec![member(1, 8, None, 60), member(2, 8, None, 30)],
    );
    arrive(&mut s, gjob(1, NLP, 8), 0);
    arrive(&mut s, gjob(2, VISION, 8), 0);
    let d = arrive(&mut s, gjob(3, VISION, 4), 0);
    assert!(starts(&d).is_empty());
    assert_eq!(reason(&s, 3), PendingReason::Limit("CohortQuota"));
    let d = end(&mut s, 1, 100);
    assert_eq!(starts(&d), vec![(3, Pass::Main)]);
    assert_eq!(borrowed(&s, &[2, 3]), vec![false, true]);
}

#[test]
fn an_owner_reclaims_a_borrowed_job_which_is_requeued_after_its_grace() {
    // 16 GPUs, both quotas 8, nlp GraceTime=30. nlp fills the machine at 0 with four
    // 4-GPU jobs, the last two borrowed. At 10 vision asks 4 GPUs, within its
    // guarantee: the youngest borrowed job (4) is preempted (REQUEUE, nlp's grace), and
    // vision's job starts exactly when the grace ends, at 40, on what job 4 freed.
    let mut s = sched(
        gpus(2),
        vec![member(1, 8, None, 60), member(2, 8, None, 30)],
    );
    for id in 1..=4 {
        arrive(&mut s, gjob(id, NLP, 4), 0);
    }
    assert_eq!(borrowed(&s, &[1, 2, 3, 4]), vec![false, false, true, true]);
    let d = arrive(&mut s, gjob(5, VISION, 4), 10);
    assert_eq!(preemptions(&d), vec![(4, 5, RQ, 30, true)]);
    assert_eq!(reason(&s, 5), PendingReason::Resources);
    assert!(s.schedule(39).is_empty());
    let d = end(&mut s, 4, 40);
    assert_eq!(starts(&d), vec![(5, Pass::Preempt)]);
    assert_eq!(s.job(JobId(5)).unwrap().start, Some(40));
    // The caller queues job 4 again: nlp would borrow, but vision uses its quota now.
    let d = arrive(&mut s, gjob(4, NLP, 4), 40);
    assert!(d.is_empty());
    assert_eq!(reason(&s, 4), PendingReason::Limit("CohortQuota"));
    // When vision's job ends, job 4 borrows again.
    let d = end(&mut s, 5, 1040);
    assert_eq!(starts(&d), vec![(4, Pass::Main)]);
    assert!(s.borrowed(JobId(4)));
}

#[test]
fn borrowed_victims_are_chosen_before_ordinary_ones() {
    // Partitions low (tier 1) and high (tier 10) over both nodes,
    // preempt/partition_prio, REQUEUE. vision Quota=gpu:14, nlp Quota=gpu:2. At 0 nlp
    // runs 2 GPUs (within) and 6 borrowed on one node; at 5 `other` (no cohort) takes
    // the other node's 8, in low. At 10 vision asks 6 GPUs in high: job 1 alone would
    // do and has run less, but the borrowed job 3 is taken back instead.
    let mut c = gpus(2);
    c.partitions[0].name = "low".into();
    let mut high = Partition::new("high", c.partitions[0].nodes.clone());
    high.priority_tier = 10;
    c.partitions.push(high);
    c.preempt = PreemptConfig {
        kind: PreemptType::PartitionPrio,
        mode: PreemptMode::Requeue,
        exempt_time: 0,
        gang: false,
        time_slice: 0,
    };
    let mut s = sched(c, vec![member(1, 14, None, 60), member(2, 2, None, 30)]);
    arrive(&mut s, gjob(2, NLP, 2), 0);
    arrive(&mut s, gjob(3, NLP, 6), 0);
    arrive(&mut s, gjob(1, OTHER, 8), 5);
    assert_eq!(borrowed(&s, &[2, 3, 1]), vec![false, true, false]);
    let d = arrive(&mut s, gjob(4, VISION, 6).partition(1), 10);
    assert_eq!(preemptions(&d), vec![(3, 4, RQ, 30, true)]);
    let d = end(&mut s, 3, 40);
    assert_eq!(starts(&d), vec![(4, Pass::Preempt)]);
}

#[test]
fn a_job_beyond_its_guarantee_reclaims_nothing() {
    // 16 GPUs, both quotas 8. vision runs 4 GPUs, nlp 12 (4 borrowed). At 10 vision
    // asks 8 more: that is beyond its quota, so it would borrow, and the cohort has
    // nothing to lend: it waits with CohortQuota and preempts nothing. A 4-GPU vision
    // job, within the guarantee, then takes the borrowed job back.
    let mut s = sched(
        gpus(2),
        vec![member(1, 8, None, 60), member(2, 8, None, 30)],
    );
    arrive(&mut s, gjob(1, VISION, 4), 0);
    for id in 2..=4 {
        arrive(&mut s, gjob(id, NLP, 4), 0);
    }
    assert_eq!(borrowed(&s, &[1, 2, 3, 4]), vec![false, false, false, true]);
    let d = arrive(&mut s, gjob(5, VISION, 8), 10);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(reason(&s, 5), PendingReason::Limit("CohortQuota"));
    let d = arrive(&mut s, gjob(6, VISION, 4), 10);
    assert_eq!(preemptions(&d), vec![(4, 6, RQ, 30, true)]);
}

#[test]
fn no_cohorts_no_change() {
    // Without cohorts, the same jobs run as they always did: no holds, nothing borrowed.
    let mut s = Scheduler::new(gpus(2), backfill(10_000));
    s.set_account_limits(accounts());
    for id in 1..=4 {
        arrive(&mut s, gjob(id, NLP, 4), 0);
    }
    let d = arrive(&mut s, gjob(5, VISION, 4), 10);
    assert!(d.is_empty());
    assert_eq!(reason(&s, 5), PendingReason::Resources);
    assert_eq!(borrowed(&s, &[1, 2, 3, 4]), vec![false; 4]);
}
