//! Stories of the controller's fair-share: the tree real Slurm 22.05 was sampled with
//! (crates/sluice-cli/tests/samples/sprio/README.md), usage charged by the decay
//! thread, restarts and usage resets.

use super::*;
use crate::accounts::Requester;
use sluice_proto::accounts::{AccountsRequest, AssocChange, Change, QosChange};

fn admin() -> Requester {
    Requester {
        name: "root".into(),
        superuser: true,
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn settings(shares: u32, priority: Option<u32>) -> AssocChange {
    AssocChange {
        shares: Some(acct::Shares::Value(shares)),
        priority: priority.map(Change::Set),
        ..Default::default()
    }
}

fn apply(a: &mut Accounts, req: AccountsRequest) {
    a.change(&admin(), &req, &[], true).expect("change applies");
}

fn account(a: &mut Accounts, name: &str, parent: Option<&str>, shares: u32, prio: Option<u32>) {
    apply(
        a,
        AccountsRequest::AddAccounts {
            names: names(&[name]),
            description: None,
            organization: None,
            parent: parent.map(str::to_string),
            settings: settings(shares, prio),
        },
    );
}

fn user(a: &mut Accounts, name: &str, acct: &str, shares: u32, prio: Option<u32>) {
    apply(
        a,
        AccountsRequest::AddUsers {
            names: names(&[name]),
            accounts: names(&[acct]),
            default_account: None,
            partitions: Vec::new(),
            admin_level: None,
            settings: settings(shares, prio),
        },
    );
}

fn qos(a: &mut Accounts, name: &str, priority: u32) {
    apply(
        a,
        AccountsRequest::AddQos {
            names: names(&[name]),
            settings: QosChange {
                priority: Some(Change::Set(priority)),
                ..Default::default()
            },
        },
    );
}

/// root (with user root), chem (40, priority 20; bob), phys (60; alice with 2 shares
/// and priority 5; sub-account theory with 30 and alice in it); QOS high 100, low 10.
fn sample_accounts() -> Accounts {
    let mut a = Accounts::new("c", &names(&["cpu", "mem", "node", "billing"]));
    qos(&mut a, "high", 100);
    qos(&mut a, "low", 10);
    account(&mut a, "phys", None, 60, None);
    account(&mut a, "chem", None, 40, Some(20));
    account(&mut a, "theory", Some("phys"), 30, None);
    user(&mut a, "alice", "phys", 2, Some(5));
    user(&mut a, "alice", "theory", 1, None);
    user(&mut a, "bob", "chem", 1, None);
    a
}

fn engine() -> PriorityEngine {
    let settings = PrioritySettings {
        multifactor: true,
        ..Default::default()
    };
    PriorityEngine::new(
        settings,
        String::new(),
        GresTable::default(),
        ClusterTotals::default(),
        1,
    )
}

fn assoc(a: &Accounts, user: &str, account: &str) -> u32 {
    a.association(user, account, None).expect("exists").id
}

fn fairshare(e: &PriorityEngine, id: u32) -> f64 {
    e.factors(Some(id), 0, 1, JobFactors::default()).fairshare
}

#[test]
fn fair_tree_ranks_the_sampled_tree_as_real_slurm_does() {
    let a = sample_accounts();
    let mut e = engine();
    e.rebuild(&a);
    // The decay thread's first run notes the time; alice's 2-CPU job in phys runs
    // 136 s until the second.
    let alice_phys = assoc(&a, "alice", "phys");
    e.tick(1000, &[]);
    let rows = e.tick(
        1136,
        &[RunCharge {
            assoc: alice_phys,
            billing: 2.0,
            usage_factor: 1.0,
            start: 1000,
            end: None,
        }],
    );
    // sshare -a: bob and root 1.0 (no usage, tied with the unused chem), alice in
    // theory 0.5, alice in phys 0.25.
    assert_eq!(fairshare(&e, assoc(&a, "bob", "chem")), 1.0);
    assert_eq!(fairshare(&e, assoc(&a, "root", "root")), 1.0);
    assert_eq!(fairshare(&e, assoc(&a, "alice", "theory")), 0.5);
    assert_eq!(fairshare(&e, alice_phys), 0.25);
    // Association factor: alice/phys 5 of the largest 20 (chem's, inherited by bob).
    let f = e.factors(Some(alice_phys), 100, 1, JobFactors::default());
    assert_eq!((f.assoc, f.qos), (0.25, 1.0));
    let bob = e.factors(Some(assoc(&a, "bob", "chem")), 10, 1, JobFactors::default());
    assert_eq!((bob.assoc, bob.qos), (1.0, 0.1));
    // Usage charged with the decay over the 136 s, up the chain; rows to save.
    let usage = 2.0 * 136.0 * e.decay.factor.powf(136.0);
    let saved: BTreeMap<&str, f64> = rows
        .iter()
        .map(|r| (r.key.as_str(), r.record.as_ref().unwrap().parse().unwrap()))
        .collect();
    assert_eq!(saved[alice_phys.to_string().as_str()], usage);
    assert_eq!(saved[LAST_DECAY], 1136.0);
    // sshare -a's rows, in its order.
    let report = e.shares_report(|_| String::new(), |_| String::new(), |_| String::new());
    let listed: Vec<(u32, &str, Option<&str>, Option<&str>)> = report
        .rows
        .iter()
        .map(|r| {
            (
                r.depth,
                r.account.as_str(),
                r.user.as_deref(),
                r.raw_shares.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "root", None, None),
            (1, "root", Some("root"), Some("1")),
            (1, "chem", None, Some("40")),
            (2, "chem", Some("bob"), Some("1")),
            (1, "phys", None, Some("60")),
            (2, "phys", Some("alice"), Some("2")),
            (2, "theory", None, Some("30")),
            (3, "theory", Some("alice"), Some("1")),
        ]
    );
    let phys = &report.rows[4];
    assert!((phys.norm_shares - 0.594059).abs() < 1e-6);
    assert_eq!(phys.raw_usage, usage);
    assert_eq!(phys.effective_usage, 1.0);
    assert_eq!(report.rows[6].norm_shares, 30.0 / 32.0);
    assert_eq!(report.rows[6].level_fs, Some(f64::INFINITY));
}

#[test]
fn usage_survives_a_rebuild_and_a_restart_and_is_cleared_by_a_reset_period() {
    let mut a = sample_accounts();
    let mut e = engine();
    e.rebuild(&a);
    let bob = assoc(&a, "bob", "chem");
    e.tick(0, &[]);
    let charge = RunCharge {
        assoc: bob,
        billing: 4.0,
        usage_factor: 0.5,
        start: 0,
        end: Some(100),
    };
    let rows = e.tick(200, &[charge]);
    let node = e.node_of(bob).unwrap();
    let used = e.tree.get(node).usage_raw;
    // 100 s (decayed over them) × 4 billing × UsageFactor 0.5.
    assert_eq!(used, 200.0 * e.decay.factor.powf(100.0));
    // A sacctmgr change rebuilds the tree: bob keeps his usage.
    user(&mut a, "carol", "chem", 1, None);
    e.rebuild(&a);
    assert_eq!(e.tree.get(e.node_of(bob).unwrap()).usage_raw, used);
    // A restart: a fresh engine restores the saved rows, and the decay goes on from
    // the saved time.
    let mut restarted = engine();
    restarted.rebuild(&a);
    restarted.restore_usage(&rows);
    assert_eq!(
        restarted
            .tree
            .get(restarted.node_of(bob).unwrap())
            .usage_raw,
        used
    );
    assert_eq!(restarted.last_tick(), Some(200));
    assert_eq!(restarted.next_tick(), Some(500));
    // PriorityUsageResetPeriod=DAILY: the run after midnight starts from nothing.
    let mut daily = engine();
    daily.settings.usage_reset = UsageReset::Daily;
    daily.rebuild(&a);
    daily.restore_usage(&rows);
    daily.tick(86_399, &[]);
    assert!(daily.tree.get(daily.node_of(bob).unwrap()).usage_raw > 0.0);
    daily.tick(86_400, &[]);
    assert_eq!(daily.tree.get(daily.node_of(bob).unwrap()).usage_raw, 0.0);
}

#[test]
fn reset_periods_fall_on_slurms_boundaries() {
    // 2026-11-29 was a Sunday; 2026-12-01 the first of a month; 2027-01-01 of a year.
    let day = |y, m, d| days_from_civil(y, m, d) * 86_400;
    assert_eq!(
        civil_from_days(days_from_civil(2026, 11, 29)),
        (2026, 11, 29)
    );
    let sunday = day(2026, 11, 29);
    assert!(reset_between(UsageReset::Weekly, sunday - 1, sunday));
    assert!(!reset_between(
        UsageReset::Weekly,
        sunday,
        sunday + 6 * 86_400
    ));
    assert!(reset_between(
        UsageReset::Monthly,
        day(2026, 11, 30),
        day(2026, 12, 1) + 5
    ));
    assert!(!reset_between(
        UsageReset::Quarterly,
        day(2026, 11, 30),
        day(2026, 12, 1) + 5
    ));
    assert!(reset_between(
        UsageReset::Quarterly,
        day(2026, 12, 31),
        day(2027, 1, 1)
    ));
    assert!(reset_between(
        UsageReset::Yearly,
        day(2026, 12, 31),
        day(2027, 1, 1)
    ));
    assert!(!reset_between(UsageReset::None, 0, day(2027, 1, 1)));
}
