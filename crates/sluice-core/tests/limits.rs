//! Accounting limits and partition policy, each a short story: the machine, the
//! accounts and their limits, the jobs, and the exact start times and pending reasons
//! Slurm would give (names as real Slurm 22.05 prints them; see
//! `crates/sluice-cli/tests/samples/limits/`).
//!
//! The accounts in every story: `root` (1) over the accounts `phys` (2) and `chem` (3);
//! alice (uid 1001) and bob (1002) in `phys` (associations 10 and 11), carol (1003) in
//! `chem` (12). QOS `normal` (1), `gpu` (2), `part` (3).

mod common;

use common::*;
use sluice_core::limits::{AccountLimits, Assoc, AssocId, Enforce, Limits, Qos, QosId, TresKind};
use sluice_core::partition_policy::{NotAllowed, OverSubscribe};
use sluice_core::{JobId, Partition, PendingReason, Scheduler, SubmitError};

const ALICE: (u32, u32) = (1001, 10);
const BOB: (u32, u32) = (1002, 11);
const CAROL: (u32, u32) = (1003, 12);

/// The accounts above, with `limits` enforced (and `safe` when asked).
fn accounts(safe: bool) -> AccountLimits {
    let mut db = AccountLimits {
        enforce: Enforce { limits: true, safe },
        ..Default::default()
    };
    let assoc = |parent: Option<u32>, user: bool| Assoc {
        parent: parent.map(AssocId),
        user,
        limits: Limits::default(),
    };
    db.assocs.insert(AssocId(1), assoc(None, false));
    db.assocs.insert(AssocId(2), assoc(Some(1), false));
    db.assocs.insert(AssocId(3), assoc(Some(1), false));
    db.assocs.insert(AssocId(10), assoc(Some(2), true));
    db.assocs.insert(AssocId(11), assoc(Some(2), true));
    db.assocs.insert(AssocId(12), assoc(Some(3), true));
    for q in 1..=3 {
        db.qos.insert(QosId(q), Qos::default());
    }
    db
}

fn assoc(db: &mut AccountLimits, id: u32) -> &mut Limits {
    &mut db.assocs.get_mut(&AssocId(id)).unwrap().limits
}

fn qos(db: &mut AccountLimits, id: u32) -> &mut Qos {
    db.qos.get_mut(&QosId(id)).unwrap()
}

/// A job of `who` (uid, association) in QOS `normal`.
fn by(id: u64, who: (u32, u32)) -> JobBuilder {
    job(id).user(who.0).acct(Some(who.1), Some(1))
}

fn reason(s: &Scheduler, id: u64) -> PendingReason {
    s.job(JobId(id)).unwrap().reason
}

fn limit(name: &'static str) -> PendingReason {
    PendingReason::Limit(name)
}

fn scheduler(c: sluice_core::Cluster, db: AccountLimits) -> Scheduler {
    let mut s = Scheduler::new(c, backfill(10_000));
    s.set_account_limits(db);
    s
}

fn replay_with(c: sluice_core::Cluster, db: AccountLimits, jobs: &[JobBuilder]) -> Replay {
    let mut h = Harness::new(c, backfill(10_000));
    h.sched.set_account_limits(db);
    h.run(jobs)
}

#[test]
fn grp_gres_holds_the_second_gpu_job_and_lets_others_pass() {
    // One node, 4 CPUs, 2 GPUs. phys may hold one GPU. Alice's two GPU jobs come
    // first; the second waits with AssocGrpGRES. Carol (chem), behind both, is not
    // blocked by it and starts at once; alice's second starts when her first ends.
    let mut db = accounts(false);
    assoc(&mut db, 2).grp_tres = vec![(TresKind::Gres(0), 1)];
    let jobs = [
        by(1, ALICE).gpus(1).time(100).priority(3),
        by(2, ALICE).gpus(1).time(100).priority(2),
        by(3, CAROL).gpus(1).time(50).priority(1),
    ];
    let mut s = scheduler(gpu_cluster(&[(4, 2)]), db.clone());
    for j in &jobs {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 2), limit("AssocGrpGRES"));
    assert_eq!(s.job(JobId(2)).unwrap().planned_start, None);
    let r = replay_with(gpu_cluster(&[(4, 2)]), db, &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 0)]);
}

#[test]
fn raising_a_limit_lets_the_held_job_start_at_the_next_pass() {
    let mut db = accounts(false);
    assoc(&mut db, 2).grp_tres = vec![(TresKind::Gres(0), 1)];
    let mut s = scheduler(gpu_cluster(&[(4, 2)]), db.clone());
    s.submit(by(1, ALICE).gpus(1).time(100).spec(), 0).unwrap();
    s.submit(by(2, ALICE).gpus(1).time(100).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 1);
    assert_eq!(reason(&s, 2), limit("AssocGrpGRES"));
    assoc(&mut db, 2).grp_tres = vec![(TresKind::Gres(0), 2)];
    s.set_account_limits(db);
    let started = s.schedule(5);
    assert_eq!(started.len(), 1);
    assert_eq!(s.job(JobId(2)).unwrap().start, Some(5));
}

#[test]
fn group_limits_count_the_whole_subtree_at_every_level() {
    // root may hold 2 CPUs in all: alice's 1-CPU job and carol's 1-CPU job run (in
    // different accounts), bob's waits on root's AssocGrpCpuLimit.
    let mut db = accounts(false);
    assoc(&mut db, 1).grp_tres = vec![(TresKind::Cpu, 2)];
    let r = replay_with(
        cluster(1, 8),
        db,
        &[
            by(1, ALICE).time(100).priority(3),
            by(2, CAROL).time(100).priority(2),
            by(3, BOB).time(100).priority(1),
        ],
    );
    assert_eq!(r.starts(), vec![(1, 0), (2, 0), (3, 100)]);
}

#[test]
fn job_count_limits_grp_jobs_and_inherited_max_jobs() {
    // phys: MaxJobs=1, inherited by each of its users separately; chem: GrpJobs=1.
    let mut db = accounts(false);
    assoc(&mut db, 2).max_jobs = Some(1);
    assoc(&mut db, 3).grp_jobs = Some(1);
    let mut s = scheduler(cluster(1, 8), db);
    for j in [
        by(1, ALICE).time(100),
        by(2, ALICE).time(100),
        by(3, BOB).time(100),
        by(4, CAROL).time(100),
        by(5, CAROL).time(100),
    ] {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 2), limit("AssocMaxJobsLimit"));
    assert_eq!(reason(&s, 5), limit("AssocGrpJobsLimit"));
    assert_eq!(s.running_count(), 3);
}

#[test]
fn per_job_limits_wall_cpus_nodes_and_memory_per_node() {
    // Alice: MaxWall 10 minutes, MaxTRESPerJob cpu=2,node=1, MaxTRESPerNode mem=1000.
    let mut db = accounts(false);
    let l = assoc(&mut db, 10);
    l.max_wall = Some(600);
    l.max_tres_per_job = vec![(TresKind::Cpu, 2), (TresKind::Node, 1)];
    l.max_tres_per_node = vec![(TresKind::Mem, 1000)];
    let mut c = cluster(2, 8);
    for n in &mut c.nodes {
        n.capacity.mem_mib = 4000;
    }
    let mut s = scheduler(c, db);
    let mut big_mem = by(5, ALICE).time(60);
    big_mem.request.mem = sluice_core::MemRequest::PerNode(2000);
    for j in [
        by(1, ALICE).time(1200),
        by(2, ALICE).procs(3).time(60),
        by(3, ALICE).procs(2).nodes(2).time(60),
        by(4, ALICE).procs(2).time(600),
        big_mem,
    ] {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 1), limit("AssocMaxWallDurationPerJobLimit"));
    assert_eq!(reason(&s, 2), limit("AssocMaxCpuPerJobLimit"));
    assert_eq!(reason(&s, 3), limit("AssocMaxNodePerJobLimit"));
    assert_eq!(s.job(JobId(4)).unwrap().start, Some(0));
    assert_eq!(reason(&s, 5), limit("AssocMaxMemPerNode"));
}

#[test]
fn grp_tres_run_mins_frees_up_as_running_jobs_near_their_end() {
    // phys may have 10 CPU-minutes left to run. Alice's first job (1 CPU, 10 min) uses
    // them all; her second (1 CPU, 1 min) waits with AssocGrpCPURunMinutesLimit, and
    // may start once the first has 9 minutes or less to go: at t=60.
    let mut db = accounts(false);
    assoc(&mut db, 2).grp_tres_run_mins = vec![(TresKind::Cpu, 10)];
    let mut s = scheduler(cluster(1, 8), db);
    s.submit(by(1, ALICE).time(600).spec(), 0).unwrap();
    s.submit(by(2, ALICE).time(60).spec(), 0).unwrap();
    s.schedule(0);
    assert_eq!(reason(&s, 2), limit("AssocGrpCPURunMinutesLimit"));
    assert!(s.schedule(59).is_empty());
    assert_eq!(s.schedule(60).len(), 1);
}

#[test]
fn grp_tres_mins_with_safe_starts_only_what_can_finish_within_the_budget() {
    // phys may use 10 CPU-minutes ever. Under `safe`, alice's 10-minute job fits the
    // budget exactly and starts; her 1-minute job would go over it (10 in flight + 1)
    // and waits with AssocGrpCPUMinutesLimit, even after the first ends.
    let mut db = accounts(true);
    assoc(&mut db, 2).grp_tres_mins = vec![(TresKind::Cpu, 10)];
    let mut s = scheduler(cluster(1, 8), db);
    s.submit(by(1, ALICE).time(600).spec(), 0).unwrap();
    s.submit(by(2, ALICE).time(60).spec(), 0).unwrap();
    s.schedule(0);
    assert_eq!(s.job(JobId(1)).unwrap().start, Some(0));
    assert_eq!(reason(&s, 2), limit("AssocGrpCPUMinutesLimit"));
    s.job_ended(JobId(1), 600);
    assert!(s.schedule(600).is_empty());
    assert_eq!(reason(&s, 2), limit("AssocGrpCPUMinutesLimit"));
}

#[test]
fn grp_tres_mins_without_safe_stops_new_jobs_once_used_up_until_usage_decays() {
    // Without `safe`, both jobs start at 0 (nothing used yet). By t=600 phys has used
    // 11 CPU-minutes, so a job submitted then waits. Usage decays with a half-life of
    // 10 minutes: after ten half-lives (t=6600) almost nothing is left and it starts.
    let mut db = accounts(false);
    assoc(&mut db, 2).grp_tres_mins = vec![(TresKind::Cpu, 10)];
    let mut s = scheduler(cluster(1, 8), db);
    s.decay_limit_usage(0, 600);
    s.submit(by(1, ALICE).time(600).spec(), 0).unwrap();
    s.submit(by(2, ALICE).time(60).spec(), 0).unwrap();
    assert_eq!(s.schedule(0).len(), 2);
    s.job_ended(JobId(2), 60);
    s.job_ended(JobId(1), 600);
    s.submit(by(3, BOB).time(60).spec(), 600).unwrap();
    assert!(s.schedule(600).is_empty());
    assert_eq!(reason(&s, 3), limit("AssocGrpCPUMinutesLimit"));
    s.decay_limit_usage(6600, 600);
    assert_eq!(s.schedule(6600).len(), 1);
}

#[test]
fn qos_per_user_limits_hold_one_user_not_the_other() {
    // QOS gpu: MaxTRESPerUser gres/gpu=1, MaxJobsPerUser=2. Alice's second GPU job
    // waits (QOSMaxGRESPerUser), bob's starts; carol's third job waits on
    // QOSMaxJobsPerUserLimit.
    let mut db = accounts(false);
    let q = &mut qos(&mut db, 2).limits;
    q.max_tres_per_user = vec![(TresKind::Gres(0), 1)];
    q.max_jobs_per_user = Some(2);
    let mut s = scheduler(gpu_cluster(&[(8, 4)]), db);
    for (j, who) in [
        (job(1).gpus(1), ALICE),
        (job(2).gpus(1), ALICE),
        (job(3).gpus(1), BOB),
        (job(4), CAROL),
        (job(5), CAROL),
        (job(6), CAROL),
    ] {
        let j = j.user(who.0).acct(Some(who.1), Some(2)).time(100);
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 2), limit("QOSMaxGRESPerUser"));
    assert_eq!(s.job(JobId(3)).unwrap().start, Some(0));
    assert_eq!(s.job(JobId(5)).unwrap().start, Some(0));
    assert_eq!(reason(&s, 6), limit("QOSMaxJobsPerUserLimit"));
}

#[test]
fn qos_group_and_per_account_limits() {
    // QOS gpu: GrpTRES cpu=4 and MaxJobsPerAccount=1 (phys's users share one job).
    let mut db = accounts(false);
    let q = &mut qos(&mut db, 2).limits;
    q.grp_tres = vec![(TresKind::Cpu, 4)];
    q.max_jobs_per_account = Some(1);
    let mut s = scheduler(cluster(1, 16), db);
    for j in [
        job(1).user(ALICE.0).acct(Some(10), Some(2)).procs(2),
        job(2).user(BOB.0).acct(Some(11), Some(2)).procs(1),
        job(3).user(CAROL.0).acct(Some(12), Some(2)).procs(3),
    ] {
        s.submit(j.time(100).spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 2), limit("MaxJobsPerAccount"));
    assert_eq!(reason(&s, 3), limit("QOSGrpCpuLimit"));
}

#[test]
fn a_qos_limit_overrides_the_associations_and_the_partition_qos_comes_first() {
    // Alice's association: MaxTRESPerJob cpu=1. QOS gpu allows 4 CPUs per job, which
    // wins: her 2-CPU job runs. The partition's QOS `part` allows 2: her 3-CPU job in
    // QOS gpu waits on it (QOSMaxCpuPerJobLimit), unless gpu has OverPartQOS.
    for over in [false, true] {
        let mut db = accounts(false);
        assoc(&mut db, 10).max_tres_per_job = vec![(TresKind::Cpu, 1)];
        qos(&mut db, 2).limits.max_tres_per_job = vec![(TresKind::Cpu, 4)];
        qos(&mut db, 2).flags.over_part_qos = over;
        qos(&mut db, 3).limits.max_tres_per_job = vec![(TresKind::Cpu, 2)];
        let mut c = cluster(1, 16);
        c.partitions
            .push(Partition::new("p", c.partitions[0].nodes.clone()));
        db.partition_qos = vec![None, Some(QosId(3))];
        let mut s = scheduler(c, db);
        let two = job(1).user(ALICE.0).acct(Some(10), Some(2)).procs(2);
        let three = job(2)
            .user(ALICE.0)
            .acct(Some(10), Some(2))
            .procs(3)
            .partition(1);
        s.submit(two.time(100).spec(), 0).unwrap();
        s.submit(three.time(100).spec(), 0).unwrap();
        s.schedule(0);
        assert_eq!(s.job(JobId(1)).unwrap().start, Some(0));
        if over {
            assert_eq!(s.job(JobId(2)).unwrap().start, Some(0));
        } else {
            assert_eq!(reason(&s, 2), limit("QOSMaxCpuPerJobLimit"));
        }
    }
}

#[test]
fn submit_limits_refuse_the_job_counting_waiting_jobs_too() {
    // Alice: MaxSubmitJobs=2. One job is queued, one waits outside the queue (held):
    // a third is refused with AssocMaxSubmitJobLimit. Once the held one is gone, it
    // is accepted. chem: GrpSubmitJobs=1; QOS gpu: MaxSubmitJobsPerUser=1.
    let mut db = accounts(false);
    assoc(&mut db, 10).max_submit_jobs = Some(2);
    assoc(&mut db, 3).grp_submit_jobs = Some(1);
    qos(&mut db, 2).limits.max_submit_jobs_per_user = Some(1);
    let mut s = scheduler(cluster(1, 8), db);
    s.submit(by(1, ALICE).spec(), 0).unwrap();
    s.note_waiting(&by(2, ALICE).spec());
    let error = SubmitError::AccountingPolicy("AssocMaxSubmitJobLimit");
    assert_eq!(s.check(&by(3, ALICE).spec()), Err(error.clone()));
    assert_eq!(s.submit(by(3, ALICE).spec(), 0), Err(error.clone()));
    assert_eq!(
        error.to_string(),
        "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    );
    s.forget_waiting(JobId(2), 1);
    assert_eq!(s.submit(by(3, ALICE).spec(), 1), Ok(()));
    // The held job entering the queue is not counted twice.
    s.note_waiting(&by(4, CAROL).spec());
    assert_eq!(s.submit(by(4, CAROL).spec(), 1), Ok(()));
    assert_eq!(
        s.submit(by(5, CAROL).spec(), 1),
        Err(SubmitError::AccountingPolicy("AssocGrpSubmitJobsLimit"))
    );
    s.submit(job(6).user(BOB.0).acct(Some(11), Some(2)).spec(), 1)
        .unwrap();
    assert_eq!(
        s.submit(job(7).user(BOB.0).acct(Some(11), Some(2)).spec(), 1),
        Err(SubmitError::AccountingPolicy("QOSMaxSubmitJobPerUserLimit"))
    );
}

#[test]
fn deny_on_limit_refuses_what_would_otherwise_wait() {
    // QOS gpu: MaxTRESPerJob cpu=1, MaxWall 10 min. Without DenyOnLimit a 2-CPU job
    // waits; with it, it is refused, as is a 20-minute job, and a job over its
    // association's own limit.
    let mut db = accounts(false);
    qos(&mut db, 2).limits.max_tres_per_job = vec![(TresKind::Cpu, 1)];
    qos(&mut db, 2).limits.max_wall = Some(600);
    assoc(&mut db, 11).max_tres_per_job = vec![(TresKind::Cpu, 1)];
    let alice = |id: u64| job(id).user(ALICE.0).acct(Some(10), Some(2));
    let mut s = scheduler(cluster(1, 8), db.clone());
    assert_eq!(s.submit(alice(1).procs(2).spec(), 0), Ok(()));
    s.schedule(0);
    assert_eq!(reason(&s, 1), limit("QOSMaxCpuPerJobLimit"));

    qos(&mut db, 2).flags.deny_on_limit = true;
    let s = scheduler(cluster(1, 8), db.clone());
    assert_eq!(
        s.check(&alice(1).procs(2).spec()),
        Err(SubmitError::AccountingPolicy("QOSMaxCpuPerJobLimit"))
    );
    assert_eq!(
        s.check(&alice(2).time(1200).spec()),
        Err(SubmitError::AccountingPolicy(
            "QOSMaxWallDurationPerJobLimit"
        ))
    );
    qos(&mut db, 2).limits = Limits::default();
    let s = scheduler(cluster(1, 8), db);
    let bob = job(3).user(BOB.0).acct(Some(11), Some(2)).procs(2);
    assert_eq!(
        s.check(&bob.spec()),
        Err(SubmitError::AccountingPolicy("AssocMaxCpuPerJobLimit"))
    );
}

#[test]
fn no_reserve_jobs_get_no_backfill_reservation() {
    // One node, 4 CPUs. Job 1 holds 2 CPUs until t=100. Job 2 (high priority) wants
    // all 4; job 3 (low) wants 2 for 200 s. Normally job 2 is reserved at t=100 and job
    // 3 may not delay it: 3 starts at 200. With job 2 in a NoReserve QOS nothing is
    // reserved: job 3 backfills at the next backfill pass (t=2) and job 2 starts when
    // it is done, at 202.
    for no_reserve in [false, true] {
        let mut db = accounts(false);
        qos(&mut db, 2).flags.no_reserve = no_reserve;
        let jobs = [
            by(1, ALICE).procs(2).time(100).priority(9),
            job(2)
                .user(BOB.0)
                .acct(Some(11), Some(2))
                .procs(4)
                .time(100)
                .submit(1)
                .priority(8),
            by(3, CAROL).procs(2).time(200).submit(1).priority(1),
        ];
        let r = replay_with(cluster(1, 4), db, &jobs);
        let expected = if no_reserve {
            vec![(1, 0), (2, 202), (3, 2)]
        } else {
            vec![(1, 0), (2, 100), (3, 200)]
        };
        assert_eq!(r.starts(), expected, "NoReserve={no_reserve}");
    }
}

#[test]
fn limits_are_not_enforced_without_the_limits_option() {
    let mut db = accounts(false);
    db.enforce.limits = false;
    assoc(&mut db, 2).grp_jobs = Some(0);
    let r = replay_with(cluster(1, 4), db, &[by(1, ALICE).time(10)]);
    assert_eq!(r.starts(), vec![(1, 0)]);
}

#[test]
fn partition_min_nodes_and_access_reasons() {
    // Partition 0: MinNodes=2. A one-node job waits with PartitionNodeLimit, a two-node
    // job runs. Jobs the caller found not allowed wait with Slurm's reasons.
    let mut c = cluster(2, 4);
    c.partitions[0].min_nodes = 2;
    let mut s = Scheduler::new(c, backfill(10_000));
    let mut account = job(3).procs(2).nodes(2).time(10).spec();
    account.acct.not_allowed = Some(NotAllowed::Account);
    let mut qos = job(4).procs(2).nodes(2).time(10).spec();
    qos.acct.not_allowed = Some(NotAllowed::Qos);
    s.submit(job(1).time(10).spec(), 0).unwrap();
    s.submit(job(2).procs(2).nodes(2).time(10).spec(), 0)
        .unwrap();
    s.submit(account, 0).unwrap();
    s.submit(qos, 0).unwrap();
    s.schedule(0);
    assert_eq!(reason(&s, 1), PendingReason::PartitionNodeLimit);
    assert_eq!(s.job(JobId(2)).unwrap().start, Some(0));
    assert_eq!(reason(&s, 3).as_str(), "AccountNotAllowed");
    assert_eq!(reason(&s, 4).as_str(), "QOSNotAllowed");
}

#[test]
fn oversubscribe_exclusive_gives_every_job_whole_nodes() {
    // Two nodes of 4 CPUs, OverSubscribe=EXCLUSIVE: three 1-CPU jobs take a node each;
    // the third waits for one (Resources) and starts at t=10.
    let mut c = cluster(2, 4);
    c.partitions[0].oversubscribe = OverSubscribe::Exclusive;
    let jobs = [job(1).time(10), job(2).time(20), job(3).time(10)];
    let r = replay(c, backfill(10_000), &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 0), (3, 10)]);
    assert_eq!(r.get(1).alloc.cpus(), 4);
}

#[test]
fn exclusive_user_keeps_other_users_off_a_busy_node() {
    // Two nodes of 4 CPUs in partition a (ExclusiveUser=YES) and b (shared) over the
    // same nodes. User 1's 1-CPU job in a takes node 1 whole; user 2's 2-CPU job in b
    // goes to node 2; user 3's 3-CPU job in b would fit beside job 1, but waits until
    // job 1 ends at t=10.
    let mut c = cluster(2, 4);
    c.partitions[0].exclusive_user = true;
    c.partitions
        .push(Partition::new("b", c.partitions[0].nodes.clone()));
    let jobs = [
        job(1).time(10).user(1),
        job(2).procs(2).time(20).user(2).partition(1),
        job(3).procs(3).time(10).user(3).partition(1),
    ];
    let r = replay(c, backfill(10_000), &jobs);
    assert_eq!(r.starts(), vec![(1, 0), (2, 0), (3, 10)]);
    assert_eq!(r.get(1).alloc.cpus(), 4);
    assert_eq!(r.get(2).alloc.cpus(), 2);
}

#[test]
fn overlapping_partitions_share_nodes_and_each_gets_resources_then_priority() {
    // Partitions a and b over the same node of 2 CPUs. Job 1 (a) takes both. In b, job
    // 2 is the first that cannot start (Resources), job 3 behind it waits on Priority;
    // job 4 in a finds a's only node kept for job 2's partition (Slurm 22.05: "Nodes
    // required for job are DOWN, DRAINED or reserved for jobs in higher priority
    // partitions"). When job 1 ends at 100, job 2 (highest priority) starts, then 3
    // and 4 in priority order.
    let mut c = cluster(1, 2);
    c.partitions
        .push(Partition::new("b", c.partitions[0].nodes.clone()));
    let mut s = Scheduler::new(c, backfill(10_000));
    let jobs = [
        job(1).procs(2).time(100).priority(9),
        job(2).procs(2).time(100).priority(8).partition(1),
        job(3).procs(2).time(100).priority(7).partition(1),
        job(4).procs(2).time(100).priority(6),
    ];
    for j in &jobs {
        s.submit(j.spec(), 0).unwrap();
    }
    s.schedule(0);
    assert_eq!(reason(&s, 2), PendingReason::Resources);
    assert_eq!(reason(&s, 3), PendingReason::Priority);
    assert_eq!(reason(&s, 4), PendingReason::NodesUnavailable);
    let r = replay(
        {
            let mut c = cluster(1, 2);
            c.partitions
                .push(Partition::new("b", c.partitions[0].nodes.clone()));
            c
        },
        backfill(10_000),
        &jobs,
    );
    assert_eq!(r.starts(), vec![(1, 0), (2, 100), (3, 200), (4, 300)]);
}

#[test]
fn a_job_of_two_partitions_is_not_started_where_the_partition_qos_holds_it() {
    // Partition 0 `batch` (no QOS) is full; partition 1 `p`, over the same node,
    // has QOS `part` allowing 2 CPUs per job. A 3-CPU job of batch,p does not start
    // in p: it waits in batch, with the reason of the last partition tried, p's limit
    // (as Slurm's last queue entry of the job leaves it).
    let mut db = accounts(false);
    qos(&mut db, 3).limits.max_tres_per_job = vec![(TresKind::Cpu, 2)];
    let mut c = cluster(1, 4);
    c.partitions
        .push(Partition::new("p", c.partitions[0].nodes.clone()));
    db.partition_qos = vec![None, Some(QosId(3))];
    let mut s = scheduler(c, db);
    s.submit(job(1).user(ALICE.0).procs(2).time(100).spec(), 0)
        .unwrap();
    s.schedule(0);
    s.submit(job(2).user(ALICE.0).procs(3).time(100).spec(), 1)
        .unwrap();
    s.set_partitions(
        JobId(2),
        &[sluice_core::PartitionId(0), sluice_core::PartitionId(1)],
        1,
    );
    s.schedule(1);
    let j = s.job(JobId(2)).unwrap();
    assert_eq!(
        (j.start, j.spec.partition),
        (None, sluice_core::PartitionId(0))
    );
    assert_eq!(reason(&s, 2), limit("QOSMaxCpuPerJobLimit"));
    // Listed the other way round it waits in batch too, batch's Resources last.
    s.set_partitions(
        JobId(2),
        &[sluice_core::PartitionId(1), sluice_core::PartitionId(0)],
        1,
    );
    s.schedule(2);
    let j = s.job(JobId(2)).unwrap();
    assert_eq!(
        (j.start, j.spec.partition),
        (None, sluice_core::PartitionId(0))
    );
    assert_eq!(reason(&s, 2), PendingReason::Resources);
}
