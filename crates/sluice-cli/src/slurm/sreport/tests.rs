use sluice_proto::accounts::{AssociationListing, AssociationRecord};
use sluice_proto::time::{parse_timestamp, timestamp};
use sluice_proto::types::{JobRecord, JobState, NodeInfo};

use super::period::{parse_report_time, report_period, Period};
use super::print::{usage_width, Layout, Parsable, TimeFormat};
use super::reports::{account_by_user, top_usage, utilization, Data, Settings};
use super::usage::{cluster_count, cluster_tres};

/// 2026-12-01T10:00:00, local time: the period's start in these tests.
fn t0() -> i64 {
    parse_timestamp("2026-12-01T10:00:00", 0).unwrap()
}

fn run(user: &str, account: &str, cpus: u32, start: Option<i64>, end: Option<i64>) -> JobRecord {
    JobRecord {
        user: user.into(),
        account: account.into(),
        state: if end.is_some() {
            JobState::Completed
        } else {
            JobState::Running
        },
        submit_time: start.unwrap_or(0) - 60,
        accrue_time: None,
        start_time: start,
        end_time: end,
        nodes: vec!["n1".into()],
        cpus_per_node: vec![cpus],
        tres_alloc: vec![("cpu".into(), u64::from(cpus))],
        tres_req: vec![("cpu".into(), u64::from(cpus))],
        ..JobRecord::default()
    }
}

/// Two nodes of four CPUs; over the hour from t0 (now: t0 + 4000 s):
/// - ann's job on 4 CPUs from half an hour before to 10 minutes in: 2400 CPU-s;
/// - bob's job on 2 CPUs from 50 minutes in, still running: 1200 (to the hour's end),
///   after waiting a minute: 120 planned;
/// - cid's job asking 8 CPUs, eligible from 30 minutes in, never started: 14400 planned;
/// - an earlier run of ann's (requeued) on 1 CPU for 100 s inside: 100.
fn story() -> Data {
    let t = t0();
    let mut pending = run("cid", "bio", 8, None, None);
    pending.state = JobState::Pending;
    pending.submit_time = t - 7200;
    pending.accrue_time = Some(t + 1800);
    pending.tres_alloc.clear();
    let mut requeued = run("ann", "phys", 1, Some(t + 100), Some(t + 200));
    requeued.state = JobState::Requeued;
    let node = |name: &str| NodeInfo {
        name: name.into(),
        cpus: 4,
        cfg_tres: "cpu=4,mem=4000M,billing=4".into(),
        ..NodeInfo::default()
    };
    Data {
        cluster: "alpha".into(),
        runs: vec![
            run("ann", "phys", 4, Some(t - 1800), Some(t + 600)),
            run("bob", "bio", 2, Some(t + 3000), None),
            pending,
            requeued,
        ],
        around: Some(t - 86400),
        nodes: vec![node("n1"), node("n2")],
        assocs: tree(),
        now: t + 4000,
    }
}

fn assoc(
    depth: u32,
    account: &str,
    user: Option<&str>,
    parent: Option<&str>,
) -> AssociationListing {
    AssociationListing {
        record: AssociationRecord {
            account: account.into(),
            user: user.map(str::to_string),
            parent: parent.map(str::to_string),
            ..AssociationRecord::default()
        },
        depth,
        lft: 0,
    }
}

/// root → bio (bob, cid), phys (ann), in sacctmgr's order.
fn tree() -> Vec<AssociationListing> {
    vec![
        assoc(0, "root", None, None),
        assoc(1, "bio", None, Some("root")),
        assoc(2, "bio", Some("bob"), Some("bio")),
        assoc(2, "bio", Some("cid"), Some("bio")),
        assoc(1, "phys", None, Some("root")),
        assoc(2, "phys", Some("ann"), Some("phys")),
    ]
}

fn hour() -> Period {
    Period {
        start: t0(),
        end: t0() + 3600,
    }
}

fn args(a: &[&str]) -> Vec<String> {
    let t = t0();
    let mut v: Vec<String> = vec![
        format!("start={}", timestamp(t)),
        format!("end={}", timestamp(t + 3600)),
    ];
    v.extend(a.iter().map(|s| s.to_string()));
    v
}

fn settings(format: TimeFormat, parsable: Option<Parsable>) -> Settings {
    Settings {
        format,
        layout: Layout {
            parsable,
            header: true,
        },
        tres: vec![],
        clusters: vec![],
    }
}

#[test]
fn jobs_across_the_periods_edges_count_only_inside_it() {
    let d = story();
    let runs: Vec<&JobRecord> = d.runs.iter().collect();
    let count = cluster_count(&d.nodes, "cpu");
    assert_eq!(count, 8);
    assert_eq!(cluster_count(&d.nodes, "mem"), 8000);
    let c = cluster_tres(&runs, "cpu", count, 3600, &hour(), d.now);
    assert_eq!(c.alloc, 2400 + 1200 + 100);
    assert_eq!(c.plan, 14400 + 120);
    assert_eq!(c.idle, 8 * 3600 - 3700 - 14520);
    assert_eq!((c.down, c.pdown, c.over), (0, 0, 0));
    assert_eq!(c.reported(), 28800);
    // Beyond a capacity of 2 CPUs: the excess comes off planned time and shows as
    // over-committed, what is reported stays the capacity.
    let c = cluster_tres(&runs, "cpu", 2, 3600, &hour(), d.now);
    assert_eq!((c.alloc, c.idle), (3700, 0));
    assert_eq!(c.over, 3700 + 14520 - 7200);
    assert_eq!(c.plan, 14520 - c.over);
    assert_eq!(c.reported(), 7200);
}

#[test]
fn cluster_utilization_in_sreports_layout() {
    let d = story();
    let out = utilization(&args(&[]), &d, &settings(TimeFormat::Mins, None));
    let title = format!(
        "Cluster Utilization {} - {}",
        sluice_proto::time::shown(t0()),
        sluice_proto::time::shown(t0() + 3599)
    );
    let dashes = "-".repeat(80);
    // 3700 CPU-s is 62 minutes, idle 10580 s 176, planned 242, reported 480; the
    // headers cut to the columns' widths.
    assert_eq!(
        out.stdout,
        format!(
            "{dashes}\n{title}\nUsage reported in CPU Minutes\n{dashes}\n\
             \x20 Cluster Allocate     Down PLND Dow     Idle  Planned Reported \n\
             --------- -------- -------- -------- -------- -------- -------- \n\
             \x20   alpha       62        0        0      176      242      480 \n"
        )
    );
    assert_eq!((out.stderr.as_str(), out.code), ("", 0));
    let out = utilization(
        &args(&[]),
        &d,
        &settings(TimeFormat::Percent, Some(Parsable::NoEnding)),
    );
    assert!(out
        .stdout
        .contains("Usage reported in Percentage of Total\n"));
    assert!(out.stdout.ends_with(
        "Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported\n\
         alpha|12.85%|0.00%|0.00%|36.74%|50.42%|100.00%\n"
    ));
    let out = utilization(
        &args(&["format=Cluster,TresCount,Allocated"]),
        &d,
        &settings(TimeFormat::HoursPer, Some(Parsable::Ending)),
    );
    assert!(out
        .stdout
        .ends_with("Cluster|TRES Count|Allocated|\nalpha|8|1(12.85%)|\n"));
}

#[test]
fn a_period_without_records_has_the_headers_alone() {
    let mut d = story();
    d.around = None;
    let out = utilization(
        &args(&[]),
        &d,
        &settings(TimeFormat::Mins, Some(Parsable::NoEnding)),
    );
    assert!(out
        .stdout
        .ends_with("----\nCluster|Allocated|Down|PLND Down|Idle|Planned|Reported\n"));
    let out = top_usage(&args(&[]), &d, &settings(TimeFormat::Mins, None));
    assert!(out.stdout.ends_with(
        "  Cluster     Login     Proper Name         Account     Used   Energy \n\
         --------- --------- --------------- --------------- -------- -------- \n"
    ));
}

#[test]
fn account_utilization_by_user_follows_the_tree() {
    let d = story();
    let out = account_by_user(
        &args(&[]),
        &d,
        &settings(TimeFormat::Secs, Some(Parsable::NoEnding)),
    );
    assert!(out.stdout.contains(&format!(
        "Cluster/Account/User Utilization {} - {} (3600 secs)\n",
        sluice_proto::time::shown(t0()),
        sluice_proto::time::shown(t0() + 3599)
    )));
    // cid used nothing in the period: no line.
    assert!(
        out.stdout.ends_with(
            "Cluster|Account|Login|Proper Name|Used|Energy\n\
         alpha|root|||3700|0\n\
         alpha|bio|||1200|0\n\
         alpha|bio|bob||1200|0\n\
         alpha|phys|||2500|0\n\
         alpha|phys|ann||2500|0\n"
        ),
        "{}",
        out.stdout
    );
    let out = account_by_user(
        &args(&["accounts=phys", "tree", "format=Account,Login,Used"]),
        &d,
        &settings(TimeFormat::Mins, None),
    );
    // The account left-justified and indented by depth, a user's line one deeper.
    assert!(out.stdout.ends_with(&format!(
        "{:<20} {:>9} {:>8} \n{} {} {} \n{:<20} {:>9} {:>8} \n{:<20} {:>9} {:>8} \n",
        "Account",
        "Login",
        "Used",
        "-".repeat(20),
        "-".repeat(9),
        "-".repeat(8),
        " phys",
        "",
        "42",
        "  phys",
        "ann",
        "42"
    )));
}

#[test]
fn top_usage_orders_users_by_usage() {
    let d = story();
    let out = top_usage(
        &args(&["format=Login,Account,Used", "TopCount=1"]),
        &d,
        &settings(TimeFormat::Secs, Some(Parsable::NoEnding)),
    );
    assert!(out.stdout.contains("Top 1 Users "));
    assert!(out.stdout.ends_with("Login|Account|Used\nann|phys|2500\n"));
    let out = top_usage(
        &args(&["users=bob", "format=Login,Used", "bogus=1"]),
        &d,
        &settings(TimeFormat::Percent, Some(Parsable::NoEnding)),
    );
    assert!(out.stdout.ends_with("Login|Used\nbob|4.17%\n"));
    assert_eq!(
        (out.stderr.as_str(), out.code),
        (
            " Unknown condition: bogus=1\nUse keyword set to modify value\n",
            1
        )
    );
}

#[test]
fn periods_are_rounded_to_the_hour_and_at_least_one_hour_long() {
    let t = |s: &str| parse_timestamp(s, 0).unwrap();
    let p = report_period(
        t("2026-12-01T10:29:31"),
        t("2026-12-01T10:10:00"),
        t("2026-12-05"),
    );
    assert_eq!(
        (timestamp(p.start), timestamp(p.end)),
        ("2026-12-01T11:00:00".into(), "2026-12-01T12:00:00".into())
    );
    // Defaults: yesterday, midnight to midnight.
    let now = t("2026-12-05T15:20:00");
    let p = report_period(0, 0, now);
    assert_eq!(
        (timestamp(p.start), timestamp(p.end)),
        ("2026-12-04T00:00:00".into(), "2026-12-05T00:00:00".into())
    );
    assert_eq!(parse_report_time("12/01/26", now), Some(t("2026-12-01")));
    assert_eq!(parse_report_time("11/30", now), Some(t("2026-11-30")));
    assert_eq!(
        parse_report_time("16:00", now),
        Some(t("2026-12-05T16:00:00"))
    );
    assert_eq!(parse_report_time("bogus", now), None);
}

#[test]
fn time_formats_as_sreport_matches_and_prints_them() {
    assert_eq!(TimeFormat::parse("hours"), Some(TimeFormat::Hours));
    assert_eq!(TimeFormat::parse("h"), Some(TimeFormat::Hours));
    assert_eq!(TimeFormat::parse("p"), Some(TimeFormat::Percent));
    assert_eq!(TimeFormat::parse("minper"), Some(TimeFormat::MinsPer));
    assert_eq!(TimeFormat::parse("min"), Some(TimeFormat::Mins));
    assert_eq!(TimeFormat::parse("hourp"), None);
    assert_eq!(TimeFormat::parse("x"), None);
    assert_eq!(TimeFormat::Mins.show(90, 0), "2");
    assert_eq!(TimeFormat::MinsPer.show(90, 900), "2(10.00%)");
    assert_eq!(usage_width(99_999_999, TimeFormat::Mins), 8);
    assert_eq!(usage_width(100_000_000, TimeFormat::Mins), 9);
    assert_eq!(usage_width(5, TimeFormat::SecsPer), 17);
}

#[test]
fn a_period_reaching_past_now_reports_up_to_now() {
    let mut d = story();
    d.now = t0() + 1800;
    d.runs.truncate(1);
    let out = utilization(
        &args(&["format=Allocated,Idle,Reported"]),
        &d,
        &settings(TimeFormat::Secs, Some(Parsable::NoEnding)),
    );
    // Half the hour: 8 CPUs × 1800 s, ann's 2400 CPU-s allocated.
    assert!(
        out.stdout
            .ends_with("Allocated|Idle|Reported\n2400|12000|14400\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn topcount_reads_a_leading_number_as_strtol() {
    let d = story();
    let run = |v: &str| {
        top_usage(
            &args(&[&format!("TopCount={v}"), "format=Login"]),
            &d,
            &settings(TimeFormat::Secs, Some(Parsable::NoEnding)),
        )
    };
    assert!(run("1x").stdout.ends_with("Login\nann\n"));
    assert!(run("-1").stdout.contains("Top 4294967295 Users"));
    let bad = run("abc");
    assert_eq!(
        (bad.stderr.as_str(), bad.code),
        ("sreport: error: Invalid value for TopCount (abc)\n", 1)
    );
    assert!(bad.stdout.ends_with("Login\nann\nbob\n"));
}
