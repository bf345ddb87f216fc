//! Stories of `sacctmgr`'s rules, as real Slurm 22.05 keeps them.

use super::*;
use sluice_proto::accounts::{parse_tres, LimitsChange};

fn tracked() -> Vec<String> {
    ["cpu", "mem", "energy", "node", "billing", "gres/gpu"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn admin() -> Requester {
    Requester {
        name: "root".into(),
        superuser: true,
    }
}

fn nobody() -> Requester {
    Requester {
        name: "nobody".into(),
        superuser: false,
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn add_account(a: &mut Accounts, name: &str, parent: Option<&str>) -> ChangeOutcome {
    a.change(
        &admin(),
        &AccountsRequest::AddAccounts {
            names: names(&[name]),
            description: None,
            organization: None,
            parent: parent.map(str::to_string),
            settings: AssocChange::default(),
        },
        &[],
        true,
    )
    .unwrap()
    .0
}

fn add_user(
    a: &mut Accounts,
    user: &str,
    accounts: &[&str],
) -> Result<ChangeOutcome, AccountsError> {
    a.change(
        &admin(),
        &AccountsRequest::AddUsers {
            names: names(&[user]),
            accounts: names(accounts),
            default_account: None,
            partitions: Vec::new(),
            admin_level: None,
            settings: AssocChange::default(),
        },
        &[],
        true,
    )
    .map(|r| r.0)
}

/// `(account, user, shares)` of every association, in sacctmgr's order.
fn tree(a: &Accounts) -> Vec<String> {
    a.snapshot(ClusterRecord::default())
        .associations
        .iter()
        .map(|l| {
            format!(
                "{}{}|{}|{}",
                " ".repeat(l.depth as usize),
                l.record.account,
                l.record.user.clone().unwrap_or_default(),
                l.record.shares
            )
        })
        .collect()
}

#[test]
fn a_fresh_cluster_has_root_its_user_and_qos_normal() {
    let a = Accounts::new("c", &tracked());
    assert_eq!(tree(&a), ["root||1", " root|root|1"]);
    assert_eq!(a.default_account("root"), Some("root"));
    assert_eq!(
        a.user("root").unwrap().admin_level,
        AdminLevel::Administrator
    );
    let root_user = a.association("root", "root", None).unwrap();
    assert_eq!(
        a.allowed_qos(root_user.id),
        BTreeSet::from(["normal".to_string()])
    );
    assert_eq!(a.qos("normal").unwrap().usage_factor, 1.0);
    // The records a fresh database gets: two associations, one account, user, QOS.
    let rows = a.all_rows();
    let kinds: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["account", "assoc", "assoc", "qos", "user"]);
}

#[test]
fn accounts_form_a_tree_and_users_join_existing_accounts() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "physics", None);
    let out = add_account(&mut a, "theory", Some("physics"));
    assert_eq!(out.accounts, ["theory"]);
    assert_eq!(out.associations[0].parent.as_deref(), Some("physics"));
    add_account(&mut a, "chem", None);
    // The first account a user is added to becomes the default.
    let out = add_user(&mut a, "alice", &["physics"]).unwrap();
    assert_eq!(out.users, ["alice"]);
    add_user(&mut a, "alice", &["theory"]).unwrap();
    assert_eq!(a.default_account("alice"), Some("physics"));
    // Users and sub-accounts listed as sacctmgr lists them: users first, by name.
    assert_eq!(
        tree(&a),
        [
            "root||1",
            " root|root|1",
            " chem||1",
            " physics||1",
            "  physics|alice|1",
            "  theory||1",
            "   theory|alice|1"
        ]
    );
    // The chain of parents and the organization defaults.
    let at = a.association("alice", "theory", Some("debug")).unwrap();
    let chain: Vec<String> = a
        .chain(at.id)
        .iter()
        .map(|c| format!("{}/{}", c.account, c.user.clone().unwrap_or_default()))
        .collect();
    assert_eq!(chain, ["theory/alice", "theory/", "physics/", "root/"]);
    let snap = a.snapshot(ClusterRecord::default());
    let theory = snap.accounts.iter().find(|x| x.name == "theory").unwrap();
    assert_eq!(
        (theory.description.as_str(), theory.organization.as_str()),
        ("theory", "physics")
    );
    // Children newest first (Slurm's nested sets).
    let physics = a.account_association("physics").unwrap().id;
    let kids: Vec<String> = a
        .children(physics)
        .iter()
        .map(|c| c.user.clone().unwrap_or(c.account.clone()))
        .collect();
    assert_eq!(kids, ["alice", "theory"]);
}

#[test]
fn adding_refuses_what_cannot_be_and_changes_nothing() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "physics", None);
    let before = a.all_rows();
    assert_eq!(
        add_user(&mut a, "bob", &["nosuch"]),
        Err(AccountsError::NoSuchAccount("nosuch".into()))
    );
    assert_eq!(
        add_user(&mut a, "bob", &[]),
        Err(AccountsError::NeedAccount)
    );
    let again = a.change(
        &admin(),
        &AccountsRequest::AddAccounts {
            names: names(&["physics"]),
            description: None,
            organization: None,
            parent: None,
            settings: AssocChange::default(),
        },
        &[],
        true,
    );
    assert_eq!(again.unwrap_err(), AccountsError::NothingNew);
    let orphan = a.change(
        &admin(),
        &AccountsRequest::AddAccounts {
            names: names(&["z"]),
            description: None,
            organization: None,
            parent: Some("nosuch".into()),
            settings: AssocChange::default(),
        },
        &[],
        true,
    );
    assert_eq!(
        orphan.unwrap_err(),
        AccountsError::NoSuchParent {
            parent: "nosuch".into(),
            cluster: "c".into()
        }
    );
    // A TRES accounting does not track.
    let untracked = a.change(
        &admin(),
        &AccountsRequest::AddUsers {
            names: names(&["bob"]),
            accounts: names(&["physics"]),
            default_account: None,
            partitions: Vec::new(),
            admin_level: None,
            settings: AssocChange {
                limits: LimitsChange {
                    grp_tres: Some(parse_tres("gres/gpu:a100=2").unwrap()),
                    ..LimitsChange::default()
                },
                ..AssocChange::default()
            },
        },
        &[],
        true,
    );
    assert_eq!(
        untracked.unwrap_err(),
        AccountsError::UnknownTres("gres/gpu:a100".into())
    );
    assert_eq!(a.all_rows(), before, "refusals change nothing");
}

#[test]
fn shares_and_limits_are_modified_and_max_limits_inherited() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "physics", None);
    add_account(&mut a, "theory", Some("physics"));
    add_user(&mut a, "alice", &["physics", "theory"]).unwrap();
    let set = |a: &mut Accounts, account: &str, change: AssocChange| {
        a.change(
            &admin(),
            &AccountsRequest::ModifyAccounts {
                filter: AssocFilter {
                    accounts: names(&[account]),
                    ..AssocFilter::default()
                },
                description: None,
                organization: None,
                settings: change,
            },
            &[],
            true,
        )
        .unwrap()
        .0
    };
    let out = set(
        &mut a,
        "physics",
        AssocChange {
            limits: LimitsChange {
                grp_tres: Some(parse_tres("cpu=100").unwrap()),
                max_submit_jobs: Some(Change::Set(50)),
                max_wall: Some(Change::Set(1440)),
                ..LimitsChange::default()
            },
            ..AssocChange::default()
        },
    );
    // Slurm reports the users that inherit the changed Max* limits as modified too.
    let listed: Vec<String> = out
        .associations
        .iter()
        .map(|r| format!("{}/{}", r.account, r.user.clone().unwrap_or_default()))
        .collect();
    assert_eq!(listed, ["physics/", "physics/alice", "theory/alice"]);
    let alice = a.association("alice", "theory", None).unwrap().id;
    let e = a.effective(alice).unwrap();
    assert_eq!(e.limits.max_submit_jobs, Some(50), "inherited");
    assert_eq!(e.limits.max_wall, Some(1440));
    assert!(
        e.limits.grp_tres.is_empty(),
        "Grp* limits are not inherited"
    );
    assert_eq!(
        a.association_by_id(alice).unwrap().limits.max_submit_jobs,
        None,
        "its own value stays unset"
    );
    // The user's own value wins; fair-share shares belong to each association.
    a.change(
        &admin(),
        &AccountsRequest::ModifyUsers {
            filter: AssocFilter {
                users: names(&["alice"]),
                accounts: names(&["theory"]),
                ..AssocFilter::default()
            },
            default_account: None,
            admin_level: None,
            settings: AssocChange {
                shares: Some(Shares::Value(10)),
                limits: LimitsChange {
                    max_submit_jobs: Some(Change::Set(5)),
                    ..LimitsChange::default()
                },
                ..AssocChange::default()
            },
        },
        &[],
        true,
    )
    .unwrap();
    let e = a.effective(alice).unwrap();
    assert_eq!(
        (e.shares, e.limits.max_submit_jobs),
        (Shares::Value(10), Some(5))
    );
    // -1 clears.
    set(
        &mut a,
        "physics",
        AssocChange {
            limits: LimitsChange {
                grp_tres: Some(parse_tres("cpu=-1").unwrap()),
                max_wall: Some(Change::Clear),
                ..LimitsChange::default()
            },
            ..AssocChange::default()
        },
    );
    let p = a.account_association("physics").unwrap();
    assert!(p.limits.grp_tres.is_empty() && p.limits.max_wall.is_none());
    assert_eq!(p.limits.max_submit_jobs, Some(50));
    // parent= moves an account (and it becomes its new parent's newest child).
    let out = set(
        &mut a,
        "theory",
        AssocChange {
            parent: Some("root".into()),
            ..AssocChange::default()
        },
    );
    assert_eq!(
        out.associations[0].parent.as_deref(),
        Some("physics"),
        "the old parent"
    );
    assert_eq!(a.effective(alice).unwrap().limits.max_submit_jobs, Some(5));
    let theory = a.account_association("theory").unwrap().id;
    assert_eq!(a.chain(theory).len(), 2);
    // An account cannot move under itself.
    let before = a.all_rows();
    let err = a
        .change(
            &admin(),
            &AccountsRequest::ModifyAccounts {
                filter: AssocFilter {
                    accounts: names(&["root"]),
                    ..AssocFilter::default()
                },
                description: None,
                organization: None,
                settings: AssocChange {
                    parent: Some("theory".into()),
                    ..AssocChange::default()
                },
            },
            &[],
            true,
        )
        .unwrap_err();
    assert_eq!(err, AccountsError::Loop("root".into()));
    assert_eq!(a.all_rows(), before);
}

#[test]
fn default_accounts_must_be_associated_and_follow_deletions() {
    let mut a = Accounts::new("c", &tracked());
    for acct in ["p1", "p2", "chem"] {
        add_account(&mut a, acct, None);
    }
    add_user(&mut a, "alice", &["p1"]).unwrap();
    add_user(&mut a, "alice", &["p2"]).unwrap();
    let modify = |a: &mut Accounts, d: &str| {
        a.change(
            &admin(),
            &AccountsRequest::ModifyUsers {
                filter: AssocFilter {
                    users: names(&["alice"]),
                    ..AssocFilter::default()
                },
                default_account: Some(d.into()),
                admin_level: None,
                settings: AssocChange::default(),
            },
            &[],
            true,
        )
    };
    assert_eq!(
        modify(&mut a, "chem").unwrap_err(),
        AccountsError::NotAssociated {
            account: "chem".into(),
            users: names(&["alice"]),
            cluster: "c".into()
        }
    );
    assert_eq!(a.default_account("alice"), Some("p1"));
    // Deleting the default association makes the next one the default.
    let del = |a: &mut Accounts, accounts: &[&str]| {
        a.change(
            &admin(),
            &AccountsRequest::DeleteUsers {
                filter: AssocFilter {
                    users: names(&["alice"]),
                    accounts: names(accounts),
                    ..AssocFilter::default()
                },
            },
            &[],
            true,
        )
        .unwrap()
        .0
    };
    let out = del(&mut a, &["p1"]);
    assert_eq!(out.associations.len(), 1);
    assert!(out.users_without_associations.is_empty());
    assert_eq!(a.default_account("alice"), Some("p2"));
    // The last one takes the user with it.
    let out = del(&mut a, &["p2"]);
    assert_eq!(out.users_without_associations, ["alice"]);
    assert!(a.user("alice").is_none());
}

#[test]
fn deleting_an_account_takes_its_subtree_unless_jobs_are_active() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "chem", None);
    add_account(&mut a, "a1", Some("chem"));
    add_user(&mut a, "carol", &["chem"]).unwrap();
    add_user(&mut a, "u1", &["a1"]).unwrap();
    let delete = |a: &mut Accounts, active: &[ActiveJob]| {
        a.change(
            &admin(),
            &AccountsRequest::DeleteAccounts {
                names: names(&["chem"]),
            },
            active,
            true,
        )
    };
    let job = ActiveJob {
        id: 7,
        cluster: "c".into(),
        account: "a1".into(),
        user: "u1".into(),
    };
    let before = a.all_rows();
    assert_eq!(
        delete(&mut a, std::slice::from_ref(&job)).unwrap_err(),
        AccountsError::JobsActive(vec![job])
    );
    assert_eq!(a.all_rows(), before);
    let (out, rows) = delete(&mut a, &[]).unwrap();
    assert_eq!(out.accounts, ["chem"]);
    assert_eq!(tree(&a), ["root||1", " root|root|1"]);
    // As Slurm 22.05: the sub-account's record and the users stay, without defaults.
    assert!(a
        .snapshot(ClusterRecord::default())
        .accounts
        .iter()
        .any(|x| x.name == "a1"));
    assert_eq!(a.user("u1").unwrap().default_account, None);
    // The rows written: the account, four associations gone; users updated.
    let gone: Vec<String> = rows
        .iter()
        .filter(|r| r.record.is_none())
        .map(|r| format!("{}:{}", r.kind, r.key))
        .collect();
    assert_eq!(gone.len(), 5, "{gone:?}");
    assert!(gone.contains(&"account:chem".to_string()));
    // Nothing left to delete.
    assert_eq!(
        delete(&mut a, &[]).unwrap_err(),
        AccountsError::NothingDeleted
    );
}

#[test]
fn only_operators_and_administrators_change_anything() {
    let mut a = Accounts::new("c", &tracked());
    let request = AccountsRequest::AddAccounts {
        names: names(&["x"]),
        description: None,
        organization: None,
        parent: None,
        settings: AssocChange::default(),
    };
    // sacctmgr shows what an add would do, then the refusal.
    let (check, _) = a.change(&nobody(), &request, &[], false).unwrap();
    assert!(!check.permitted);
    assert_eq!(check.accounts, ["x"]);
    assert_eq!(
        a.change(&nobody(), &request, &[], true).unwrap_err(),
        AccountsError::PermissionDenied
    );
    let delete = AccountsRequest::DeleteAccounts {
        names: names(&["root"]),
    };
    assert_eq!(
        a.change(&nobody(), &delete, &[], false).unwrap_err(),
        AccountsError::PermissionDenied
    );
    assert!(a
        .snapshot(ClusterRecord::default())
        .accounts
        .iter()
        .all(|x| x.name != "x"));
    // An Operator may add accounts but not QOS; an Administrator may.
    add_account(&mut a, "ops", None);
    add_user(&mut a, "olga", &["ops"]).unwrap();
    a.change(
        &admin(),
        &AccountsRequest::ModifyUsers {
            filter: AssocFilter {
                users: names(&["olga"]),
                ..AssocFilter::default()
            },
            default_account: None,
            admin_level: Some(AdminLevel::Operator),
            settings: AssocChange::default(),
        },
        &[],
        true,
    )
    .unwrap();
    let olga = Requester {
        name: "olga".into(),
        superuser: false,
    };
    assert!(a.change(&olga, &request, &[], true).is_ok());
    let qos = AccountsRequest::AddQos {
        names: names(&["high"]),
        settings: QosChange::default(),
    };
    assert_eq!(
        a.change(&olga, &qos, &[], true).unwrap_err(),
        AccountsError::PermissionDenied
    );
    assert!(a.change(&admin(), &qos, &[], true).is_ok());
}

#[test]
fn a_check_changes_nothing() {
    let mut a = Accounts::new("c", &tracked());
    let before = a.all_rows();
    let (out, rows) = a
        .change(
            &admin(),
            &AccountsRequest::AddAccounts {
                names: names(&["physics"]),
                description: Some("Physics".into()),
                organization: None,
                parent: None,
                settings: AssocChange::default(),
            },
            &[],
            false,
        )
        .unwrap();
    assert_eq!(out.accounts, ["physics"]);
    assert!(rows.is_empty());
    assert_eq!(a.all_rows(), before);
}

#[test]
fn qos_lists_default_qos_and_deltas() {
    let mut a = Accounts::new("c", &tracked());
    for q in ["high", "low"] {
        a.change(
            &admin(),
            &AccountsRequest::AddQos {
                names: names(&[q]),
                settings: QosChange::default(),
            },
            &[],
            true,
        )
        .unwrap();
    }
    add_account(&mut a, "physics", None);
    add_user(&mut a, "alice", &["physics"]).unwrap();
    let modify = |a: &mut Accounts, change: AssocChange| {
        a.change(
            &admin(),
            &AccountsRequest::ModifyUsers {
                filter: AssocFilter {
                    users: names(&["alice"]),
                    ..AssocFilter::default()
                },
                default_account: None,
                admin_level: None,
                settings: change,
            },
            &[],
            true,
        )
    };
    modify(
        &mut a,
        AssocChange {
            qos: Some(ListChange::Add(BTreeSet::from(["high".to_string()]))),
            ..AssocChange::default()
        },
    )
    .unwrap();
    let id = a.association("alice", "physics", None).unwrap().id;
    assert_eq!(
        a.allowed_qos(id),
        BTreeSet::from(["high".to_string(), "normal".to_string()])
    );
    // A default QOS the association may not use is refused.
    let err = modify(
        &mut a,
        AssocChange {
            default_qos: Some(Change::Set("low".into())),
            ..AssocChange::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, AccountsError::DefaultQosNotAllowed { .. }));
    assert_eq!(a.effective(id).unwrap().default_qos, None);
    // Submissions: default QOS, allowed list, unknown QOS, with and without enforcement.
    let enforce = AccountingEnforce::parse("associations,qos").unwrap();
    let job = |a: &Accounts, acct: Option<&str>, qos: Option<&str>, e: &AccountingEnforce| {
        a.resolve_job("alice", acct, "debug", qos, e)
    };
    assert_eq!(job(&a, None, None, &enforce).unwrap().qos, "normal");
    assert_eq!(job(&a, None, Some("high"), &enforce).unwrap().qos, "high");
    assert_eq!(job(&a, None, Some("low"), &enforce), Err(BAD_QOS));
    assert_eq!(job(&a, None, Some("nosuch"), &enforce), Err(BAD_QOS));
    let assoc_only = AccountingEnforce::parse("associations").unwrap();
    assert_eq!(job(&a, None, Some("low"), &assoc_only).unwrap().qos, "low");
    assert_eq!(job(&a, None, Some("nosuch"), &assoc_only).unwrap().qos, "");
    assert_eq!(job(&a, Some("chem"), None, &assoc_only), Err(BAD_ACCOUNT));
    let none = AccountingEnforce::default();
    let j = job(&a, Some("Chem"), None, &none).unwrap();
    assert_eq!((j.account.as_str(), j.association), ("chem", None));
    let j = a.resolve_job("nobody", None, "debug", None, &none).unwrap();
    assert_eq!((j.account.as_str(), j.qos.as_str()), ("nobody", "normal"));
    assert_eq!(
        a.resolve_job("nobody", None, "debug", None, &assoc_only),
        Err(BAD_ACCOUNT)
    );
    // Deleting a QOS takes it out of every list.
    a.change(
        &admin(),
        &AccountsRequest::DeleteQos {
            names: names(&["high"]),
        },
        &[],
        true,
    )
    .unwrap();
    assert_eq!(a.allowed_qos(id), BTreeSet::from(["normal".to_string()]));
    // With `normal` deleted too, a job naming no QOS has none it may use: refused
    // under `qos` enforcement, not given a QOS that no longer exists.
    a.change(
        &admin(),
        &AccountsRequest::DeleteQos {
            names: names(&["normal"]),
        },
        &[],
        true,
    )
    .unwrap();
    assert_eq!(job(&a, None, None, &enforce), Err(BAD_QOS));
}

#[test]
fn partition_associations_are_found_first() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "p1", None);
    add_user(&mut a, "bob", &["p1"]).unwrap();
    a.change(
        &admin(),
        &AccountsRequest::AddUsers {
            names: names(&["bob"]),
            accounts: names(&["p1"]),
            default_account: None,
            partitions: names(&["gpu"]),
            admin_level: None,
            settings: AssocChange {
                shares: Some(Shares::Value(5)),
                ..AssocChange::default()
            },
        },
        &[],
        true,
    )
    .unwrap();
    let on = |p: &str| a.association("bob", "p1", Some(p)).unwrap().shares;
    assert_eq!(
        (on("gpu"), on("debug")),
        (Shares::Value(5), Shares::Value(1))
    );
}

#[test]
fn records_survive_a_round_trip_through_rows() {
    let mut a = Accounts::new("c", &tracked());
    add_account(&mut a, "physics", None);
    add_user(&mut a, "alice", &["physics"]).unwrap();
    let rows = a.all_rows();
    let (b, fresh) = Accounts::restore("c", &tracked(), &rows).unwrap();
    assert!(
        fresh.is_empty(),
        "nothing to write for a database with rows"
    );
    assert_eq!(b.all_rows(), rows);
    assert_eq!(tree(&b), tree(&a));
    // New ids continue after the stored ones.
    let mut b = b;
    add_account(&mut b, "chem", None);
    let ids: BTreeSet<u32> = b.associations().map(|x| x.id).collect();
    assert_eq!(ids.len(), 5);
    let (_, fresh) = Accounts::restore("c", &tracked(), &[]).unwrap();
    assert_eq!(fresh.len(), 5, "a fresh database gets the defaults written");
}
