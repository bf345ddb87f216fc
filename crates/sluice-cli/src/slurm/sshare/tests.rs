//! `sshare` prints exactly what real Slurm 22.05 printed for the same figures
//! (`tests/samples/sshare/`; set-up in `tests/samples/sprio/README.md`), as root.

use sluice_proto::priority::{ShareRow, SharesReport};

use super::{format_columns, help_format, parse, render};
use crate::slurm::sample_file::read_dir;

const RUN: &str =
    "cpu=56,mem=57446,energy=0,node=28,billing=56,fs/disk=0,vmem=0,pages=0,gres/gpu=0";
const IDLE: &str = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0,gres/gpu=0";

#[allow(clippy::too_many_arguments)]
fn row(
    depth: u32,
    account: &str,
    user: Option<&str>,
    shares: Option<&str>,
    norm_shares: f64,
    usage: f64,
    effective: f64,
    fairshare: Option<f64>,
    level_fs: Option<f64>,
) -> ShareRow {
    ShareRow {
        depth,
        account: account.into(),
        user: user.map(str::to_string),
        raw_shares: shares.map(str::to_string),
        norm_shares,
        raw_usage: usage,
        norm_usage: (depth > 0).then_some(usage / 354.0),
        effective_usage: effective,
        fairshare,
        level_fs,
        grp_tres_mins: String::new(),
        tres_run_mins: if usage > 0.0 { RUN } else { IDLE }.into(),
        ..Default::default()
    }
}

/// phys's (and alice's) decayed usage: 0.659229 of the root's 354.
const PHYS: f64 = 233.3672;

/// The sampled tree: alice's job in phys ran and runs.
fn sampled() -> SharesReport {
    let inf = Some(f64::INFINITY);
    let mut root = row(0, "root", None, None, 0.0, 354.0, 1.0, None, None);
    root.tres_run_mins = RUN.into();
    SharesReport {
        fair_tree: true,
        rows: vec![
            root,
            row(
                1,
                "root",
                Some("root"),
                Some("1"),
                1.0 / 101.0,
                0.0,
                0.0,
                Some(1.0),
                inf,
            ),
            row(
                1,
                "chem",
                None,
                Some("40"),
                40.0 / 101.0,
                0.0,
                0.0,
                None,
                inf,
            ),
            row(
                2,
                "chem",
                Some("bob"),
                Some("1"),
                1.0,
                0.0,
                0.0,
                Some(1.0),
                inf,
            ),
            row(
                1,
                "phys",
                None,
                Some("60"),
                60.0 / 101.0,
                PHYS,
                PHYS / 354.0,
                None,
                Some((60.0 / 101.0) / (PHYS / 354.0)),
            ),
            row(
                2,
                "phys",
                Some("alice"),
                Some("2"),
                2.0 / 32.0,
                PHYS,
                1.0,
                Some(0.25),
                Some(0.0625),
            ),
            row(
                2,
                "theory",
                None,
                Some("30"),
                30.0 / 32.0,
                0.0,
                0.0,
                None,
                inf,
            ),
            row(
                3,
                "theory",
                Some("alice"),
                Some("1"),
                1.0,
                0.0,
                0.0,
                Some(0.5),
                inf,
            ),
        ],
    }
}

#[test]
fn every_sample_is_printed_exactly() {
    let samples = read_dir("sshare", "sshare");
    assert!(samples.len() >= 12, "{} samples", samples.len());
    let report = sampled();
    for s in samples {
        let args = s
            .command
            .split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect();
        let o = parse(args).unwrap();
        assert_eq!(
            render(&o, &report, "root", "compat").unwrap(),
            s.stdout,
            "{} ({})",
            s.name,
            s.command
        );
        assert_eq!((s.stderr.as_str(), s.code), ("", 0));
    }
}

#[test]
fn classic_fair_share_has_no_level_fs_column_and_bad_options_are_refused() {
    let mut report = sampled();
    report.fair_tree = false;
    let o = parse(vec!["-l".into(), "-A".into(), "chem".into(), "-P".into()]).unwrap();
    assert_eq!(
        render(&o, &report, "root", "compat").unwrap(),
        "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins\n\
         chem||40|0.396040|0|0.000000|0.000000|||cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0,gres/gpu=0\n"
    );
    // Real sshare's words for these (glibc's, then sshare's hint).
    let stderr = |args: &[&str]| {
        parse(args.iter().map(|a| a.to_string()).collect())
            .unwrap_err()
            .stderr
    };
    let hint = "Try \"sshare --help\" for more information\n";
    assert_eq!(
        stderr(&["-x"]),
        format!("sshare: invalid option -- 'x'\n{hint}")
    );
    assert_eq!(
        stderr(&["-A"]),
        format!("sshare: option requires an argument -- 'A'\n{hint}")
    );
    // Letters in sshare's getopt string that its code does not handle.
    assert_eq!(stderr(&["-q"]), "getopt error, returned q\n");
    assert_eq!(stderr(&["-t", "5"]), "getopt error, returned t\n");
    // -h is -n; words that are no option are ignored.
    let o = parse(vec!["-h".into(), "foo".into()]).unwrap();
    assert!(o.no_header);
}

#[test]
fn format_names_fields_by_prefix_with_widths_and_sides() {
    let mut report = sampled();
    report.rows.truncate(2);
    report.rows[1].assoc_id = Some(2);
    report.rows[1].grp_tres_raw = IDLE.into();
    let show = |args: &[&str]| {
        let o = parse(args.iter().map(|a| a.to_string()).collect()).unwrap();
        render(&o, &report, "root", "compat")
    };
    // Real sshare 22.05: `sshare -n -P -o account,fairshare`.
    assert_eq!(
        show(&["-n", "-P", "-o", "account,fairshare"]).unwrap(),
        "root|\n root|1.000000\n"
    );
    // `A` is Account, `Eff` EffectvUsage, `c` Cluster; `%N` right-justifies, `%-N`
    // left-justifies, as sshare's columns do.
    assert_eq!(
        show(&["-o", "A%8,c,Eff%-6", "-o", "id,GrpTRESRaw%12"]).unwrap(),
        " Account    Cluster Effec+     ID   GrpTRESRaw \n\
         -------- ---------- ------ ------ ------------ \n\
         \x20   root     compat 1.000+                     \n\
         \x20   root     compat 0.000+      2 cpu=0,mem=0+ \n"
    );
    assert_eq!(
        show(&["-o", "account,bogus"]).unwrap_err(),
        "bogus",
        "the first field not known"
    );
    assert_eq!(format_columns("User%0").unwrap(), [(14, 10)]);
    assert_eq!(format_columns("User%-3x").unwrap(), [(14, -3)]);
}

#[test]
fn helpformat_lists_the_fields_four_to_a_line() {
    assert_eq!(
        help_format(),
        "Account           Cluster           EffectvUsage      FairShare        \n\
         GrpTRESMins       GrpTRESRaw        ID                LevelFS          \n\
         NormShares        NormUsage         Partition         RawShares        \n\
         RawUsage          TRESRunMins       User             \n"
    );
}
