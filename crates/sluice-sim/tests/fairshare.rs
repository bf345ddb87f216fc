//! Fair-share in a replay: stories on a one-processor machine, with exact start times.

use sluice_core::{BackfillParams, Cluster, JobId, JobRequest, JobSpec, PartitionId, Policy, Time};
use sluice_sim::fairshare::FairShareOptions;
use sluice_sim::replay::{self, Replay, ReplayOptions};
use sluice_sim::setup::SimJob;

/// A one-processor job of `user` in `group`, submitted at `submit`, running 1000 s.
fn job(id: u64, user: u32, group: u32, submit: Time) -> SimJob {
    SimJob {
        spec: JobSpec {
            id: JobId(id),
            user,
            partition: PartitionId(0),
            submit,
            begin: submit,
            request: JobRequest::procs(1).on_one_node(),
            time_limit: 1000,
            priority: 0,
            acct: Default::default(),
        },
        run: 1000,
        procs: 1,
        gpu_milli: 0,
        group,
    }
}

fn replay(fairshare: Option<FairShareOptions>) -> Replay {
    // User 1 (group 1) queues three jobs at once; user 2 (group 2) one, a little later.
    let jobs = vec![
        job(1, 1, 1, 0),
        job(2, 1, 1, 0),
        job(3, 1, 1, 0),
        job(4, 2, 2, 10),
    ];
    replay::run(
        Cluster::homogeneous("batch", 1, 1),
        Policy::Backfill(BackfillParams::default()),
        jobs,
        ReplayOptions {
            samples: false,
            fairshare,
            ..Default::default()
        },
        &mut |_, _| {},
    )
}

fn starts(r: &Replay) -> Vec<(u64, Time)> {
    let mut s: Vec<(u64, Time)> = r.records.iter().map(|j| (j.id, j.start)).collect();
    s.sort();
    s
}

#[test]
fn without_fair_share_the_heavy_user_goes_first_in_submission_order() {
    let r = replay(None);
    assert_eq!(starts(&r), vec![(1, 0), (2, 1000), (3, 2000), (4, 3000)]);
    assert!(r.fairness.is_none());
}

#[test]
fn with_fair_share_the_light_user_overtakes_the_heavy_users_queue() {
    // At 300 s the first recalculation charges user 1 its 300 processor-seconds: its
    // account's LevelFS drops to 0.5 (half the shares, all the usage) while user 2's is
    // infinite, so user 2's job (fair-share factor 1 against 0.5) starts next, at 1000.
    let r = replay(Some(FairShareOptions::default()));
    assert_eq!(starts(&r), vec![(1, 0), (2, 2000), (3, 3000), (4, 1000)]);
    let f = r.fairness.expect("fair-share was simulated");
    // Two accounts of equal share; user 1 used 3000 of 4000 processor-seconds.
    assert_eq!(f.accounts[0].account, "g1");
    assert_eq!(f.accounts[0].usage_share, 0.75);
    assert_eq!(f.accounts[0].norm_shares, 0.5);
    // Jain's index of (1.5, 0.5): 4 / (2 × 2.5) = 0.8.
    assert!((f.jain - 0.8).abs() < 1e-12, "{}", f.jain);
    // Per user: user 1 waited (0 + 2000 + 3000) / 3, user 2 990 s.
    let u1 = f.users.iter().find(|u| u.user == 1).unwrap();
    assert_eq!((u1.jobs, u1.mean_wait), (3, 5000.0 / 3.0));
    let u2 = f.users.iter().find(|u| u.user == 2).unwrap();
    assert_eq!(
        (u2.jobs, u2.mean_wait, u2.cpu_hours),
        (1, 990.0, 1000.0 / 3600.0)
    );
    // At the end user 2 has used less: it ranks first.
    assert_eq!((u2.fairshare, u1.fairshare), (1.0, 0.5));
}

#[test]
fn measuring_only_keeps_the_policys_order() {
    let r = replay(Some(FairShareOptions {
        priority: false,
        ..Default::default()
    }));
    assert_eq!(starts(&r), vec![(1, 0), (2, 1000), (3, 2000), (4, 3000)]);
    let f = r.fairness.unwrap();
    // Daily samples from the first recalculation (300 s), when only g1 has usage.
    assert_eq!(f.samples.len(), 1);
    assert_eq!(f.samples[0].jain, 1.0);
}
