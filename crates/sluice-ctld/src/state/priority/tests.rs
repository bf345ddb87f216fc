//! Stories of multifactor priority in the controller: fair-share reorders the queue
//! after the decay thread runs, and usage survives a restart.

use std::path::Path;

use sluice_proto::accounts::{AccountsRequest, AssocChange};
use sluice_proto::types::{JobDescription, JobEnded, JobState};
use sluice_store::AccountRow;

use crate::accounts::Requester;
use crate::config::ClusterConfig;
use crate::state::{Caller, Controller, Effect};
use sluice_core::JobId;

/// One node of 2 CPUs; fair-share weight 10000, age 1000 over a day; the decay thread
/// every 10 s (`0:10`, minutes:seconds).
const CONF: &str = "ClusterName=test
NodeName=n1 CPUs=2 RealMemory=1000
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
PriorityMaxAge=1-0
PriorityCalcPeriod=0:10
";

/// `sacctmgr add account NAMES` with `settings`.
fn accounts(names: &[&str], settings: AssocChange) -> AccountsRequest {
    AccountsRequest::AddAccounts {
        names: names.iter().map(|n| n.to_string()).collect(),
        description: None,
        organization: None,
        parent: None,
        settings,
    }
}

/// `sacctmgr add user NAME account=ACCOUNT`.
fn user(name: &str, account: &str) -> AccountsRequest {
    AccountsRequest::AddUsers {
        names: vec![name.into()],
        accounts: vec![account.into()],
        default_account: None,
        partitions: Vec::new(),
        admin_level: None,
        settings: AssocChange::default(),
    }
}

/// Carries out a change as root; its effects.
fn change(c: &mut Controller, request: AccountsRequest) -> Vec<Effect> {
    let admin = Requester {
        name: "root".into(),
        superuser: true,
    };
    c.change_accounts(&admin, &request, true).unwrap().1
}

fn controller() -> (Controller, Vec<AccountRow>) {
    let parsed = sluice_conf::slurm_conf::parse_str(CONF, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 0);
    let mut rows = c.restore_accounts(&[]).unwrap();
    // Two accounts of one share each: heavy (alice) and light (bob).
    let requests = [
        accounts(&["heavy", "light"], AssocChange::default()),
        user("alice", "heavy"),
        user("bob", "light"),
    ];
    for r in requests {
        rows.extend(usage_rows(&change(&mut c, r)));
    }
    (c, rows)
}

/// Submits a 2-CPU job of `user` in `account` at `now`, as job `id`.
fn submit(c: &mut Controller, user: &str, account: &str, id: u64, now: i64) -> Vec<Effect> {
    let d = JobDescription {
        name: "job".into(),
        ntasks: Some(2),
        time_limit: Some(Some(600)),
        account: Some(account.into()),
        work_dir: "/tmp".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        ..Default::default()
    };
    let uid = if user == "alice" { 1000 } else { 1001 };
    let caller = Caller {
        uid,
        gid: uid,
        admin: false,
    };
    let p = c.prepare(d, &caller, user, user, now).expect("accepted");
    let records = p.jobs(JobId(id));
    let mut effects = c.accept(records, now);
    effects.extend(c.schedule(now));
    effects
}

fn usage_rows(effects: &[Effect]) -> Vec<AccountRow> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::PersistAccounts(rows) => Some(rows.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn the_light_account_overtakes_the_heavy_one_once_usage_is_counted() {
    let (mut c, mut rows) = controller();
    // t=0: alice's job 1 takes the node; the decay thread's first run notes the time.
    let e = submit(&mut c, "alice", "heavy", 1, 0);
    assert_eq!(c.job(JobId(1)).unwrap().state, JobState::Running);
    assert_eq!(c.next_wakeup(), Some(10));
    rows.extend(usage_rows(&e));
    // t=5: alice queues job 2; t=6: bob queues job 3. No usage counted yet: both have
    // the full fair-share factor, and job 2 is older.
    submit(&mut c, "alice", "heavy", 2, 5);
    submit(&mut c, "bob", "light", 3, 6);
    assert_eq!(c.job(JobId(2)).unwrap().priority, 10_000);
    assert_eq!(c.job(JobId(3)).unwrap().priority, 10_000);
    // t=10: the decay thread charges job 1's 10 s × 2 CPUs to alice and heavy. Fair
    // Tree: root's user and light are unused (tied, top rank), heavy comes last:
    // alice 1/3, bob 1. Age: 5 s and 4 s of a day.
    let e = c.schedule(10);
    rows.extend(usage_rows(&e));
    let report = c.priority_report(10);
    let line = |id: u64| {
        let j = report.jobs.iter().find(|j| j.job_id == id).unwrap();
        (j.priority, j.fairshare.weighted, j.age.weighted)
    };
    assert_eq!(
        line(2),
        (3333, 10_000.0 * (1.0 / 3.0), 1000.0 * 5.0 / 86_400.0)
    );
    assert_eq!(line(3), (10_000, 10_000.0, 1000.0 * 4.0 / 86_400.0));
    assert_eq!(c.job(JobId(2)).unwrap().priority, 3333);
    // sshare: alice's usage is job 1's 20 CPU-seconds (decayed over them).
    let shares = c.shares_report(10);
    let alice = shares
        .rows
        .iter()
        .find(|r| r.user.as_deref() == Some("alice"))
        .unwrap();
    assert!((alice.raw_usage - 20.0).abs() < 0.01, "{}", alice.raw_usage);
    assert_eq!(alice.fairshare, Some(1.0 / 3.0));
    // t=50: job 1 ends; bob's job 3 starts before alice's older job 2.
    let ended = JobEnded {
        job_id: 1,
        run: 0,
        node: "n1".into(),
        state: JobState::Completed,
        exit_code: 0,
        signal: 0,
        end: 50,
        usage: None,
    };
    c.job_ended(&ended, 50);
    c.schedule(50);
    assert_eq!(c.job(JobId(3)).unwrap().state, JobState::Running);
    assert_eq!(c.job(JobId(2)).unwrap().state, JobState::Pending);

    // A restart: the saved rows give the new controller the same usage and the time
    // of the last decay run (the next is due at t=20).
    let parsed = sluice_conf::slurm_conf::parse_str(CONF, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut again = Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), 50);
    again.restore_accounts(&rows).unwrap();
    let shares = again.shares_report(50);
    let alice_again = shares
        .rows
        .iter()
        .find(|r| r.user.as_deref() == Some("alice"))
        .unwrap();
    assert_eq!(alice_again.raw_usage, alice.raw_usage);
    assert_eq!(alice_again.fairshare, Some(1.0 / 3.0));
    assert_eq!(again.next_wakeup(), Some(20));
}

#[test]
fn used_grp_tres_mins_survive_a_restart() {
    // AccountingStorageEnforce=limits; heavy may use 20 CPU-minutes in all. alice's
    // 2-CPU job runs its whole 10 minutes: her next job is held, before and after a
    // restart from the saved rows. (No decay: PriorityDecayHalfLife=0.)
    let conf_text = format!("{CONF}AccountingStorageEnforce=limits\nPriorityDecayHalfLife=0\n");
    let parsed = sluice_conf::slurm_conf::parse_str(&conf_text, Path::new("slurm.conf")).unwrap();
    let make = |now| {
        let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
        Controller::new(conf, Path::new("/tmp"), Vec::new(), Vec::new(), now)
    };
    let mut c = make(0);
    let mut rows = c.restore_accounts(&[]).unwrap();
    let limit = AssocChange {
        limits: sluice_proto::accounts::LimitsChange {
            grp_tres_mins: Some([("cpu".to_string(), Some(20))].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    for r in [accounts(&["heavy"], limit), user("alice", "heavy")] {
        rows.extend(usage_rows(&change(&mut c, r)));
    }
    rows.extend(usage_rows(&submit(&mut c, "alice", "heavy", 1, 0)));
    assert_eq!(
        c.job(JobId(1)).unwrap().state,
        JobState::Running,
        "{}",
        c.job(JobId(1)).unwrap().reason
    );
    let ended = JobEnded {
        job_id: 1,
        run: 0,
        node: "n1".into(),
        state: JobState::Completed,
        exit_code: 0,
        signal: 0,
        end: 600,
        usage: None,
    };
    // The decay thread's run at 600 saves 20 CPU-minutes for heavy (and alice).
    rows.extend(usage_rows(&c.job_ended(&ended, 600)));
    rows.extend(usage_rows(&submit(&mut c, "alice", "heavy", 2, 601)));
    assert_eq!(c.job(JobId(2)).unwrap().reason, "AssocGrpCPUMinutesLimit");
    let saved: Vec<&AccountRow> = rows
        .iter()
        .filter(|r| r.kind == "limit_usage" && r.key.starts_with("assoc:"))
        .collect();
    assert!(!saved.is_empty());
    assert!(saved
        .iter()
        .all(|r| r.record.as_deref().unwrap().starts_with("[20.0,")));
    // sshare's GrpTRESRaw: the same minutes, every tracked TRES, for heavy and alice
    // (the job's 2 CPUs, 1 node and its memory for 10 minutes); its ID the
    // association's.
    let shares = c.shares_report(601);
    for (account, user) in [("heavy", None), ("heavy", Some("alice"))] {
        let row = shares
            .rows
            .iter()
            .find(|r| r.account == account && r.user.as_deref() == user)
            .unwrap();
        assert!(
            row.grp_tres_raw.starts_with("cpu=20,mem=") && row.grp_tres_raw.contains(",node=10,"),
            "{user:?}: {}",
            row.grp_tres_raw
        );
        assert!(row.assoc_id.is_some());
    }

    let jobs = vec![c.job(JobId(2)).unwrap()];
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut again = Controller::new(conf, Path::new("/tmp"), jobs, Vec::new(), 620);
    again.restore_accounts(&rows).unwrap();
    again.schedule(620);
    let r = again.job(JobId(2)).unwrap();
    assert_eq!(
        (r.state, r.reason.as_str()),
        (JobState::Pending, "AssocGrpCPUMinutesLimit")
    );
}

#[test]
fn a_job_waiting_in_two_partitions_has_a_priority_in_each() {
    // The partition factor is each partition's PriorityJobFactor over the highest.
    let text = "ClusterName=test
NodeName=n1 CPUs=1 RealMemory=1000
PartitionName=low Nodes=n1 Default=YES PriorityJobFactor=1
PartitionName=high Nodes=n1 PriorityJobFactor=4
PriorityType=priority/multifactor
PriorityWeightPartition=1000
";
    let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
    let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
    let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
    let mut next = 1;
    let desc = |partition: &str| JobDescription {
        partition: Some(partition.into()),
        ..crate::state::tests::desc(1, 600)
    };
    // Job 1 takes the node; job 2 waits in both partitions, job 3 in one.
    crate::state::tests::submit(&mut c, desc("low"), &mut next, 0);
    c.schedule(0);
    crate::state::tests::submit(&mut c, desc("low,high"), &mut next, 0);
    crate::state::tests::submit(&mut c, desc("high"), &mut next, 0);
    c.schedule(0);
    let report = c.priority_report(0);
    let lines: Vec<(u64, &str, f64)> = report
        .jobs
        .iter()
        .map(|j| (j.job_id, j.partition.as_str(), j.partition_factor.weighted))
        .collect();
    assert_eq!(
        lines,
        [(2, "low", 250.0), (2, "high", 1000.0), (3, "high", 1000.0)]
    );
}
