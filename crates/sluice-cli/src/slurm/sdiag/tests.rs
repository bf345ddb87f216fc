use super::*;
use sluice_proto::diag::{BackfillStats, JobCounters, MainStats};

/// The figures of real Slurm 22.05's `sdiag` in `slurm-samples/sdiag_head.txt`.
fn sampled() -> DiagReport {
    DiagReport {
        now: 1_795_982_696,
        since: 1_795_982_649,
        server_threads: 3,
        jobs: JobCounters {
            submitted: 10,
            started: 5,
            completed: 3,
            canceled: 0,
            failed: 0,
        },
        states_at: 1_795_982_679,
        pending: 5,
        running: 2,
        main: MainStats {
            last_us: 177,
            max_us: 1483,
            cycles: 5,
            sum_us: 4057,
            depth_sum: 7,
            queue_len: 2,
        },
        backfill: BackfillStats {
            cycles: 1,
            last_when: Some(1_795_982_677),
            last_us: 566,
            max_us: 566,
            sum_us: 566,
            last_depth: 2,
            last_depth_try: 2,
            depth_sum: 2,
            depth_try_sum: 2,
            queue_len: 2,
            queue_len_sum: 2,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn the_report_is_printed_as_slurm_prints_it() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/slurm-samples/sdiag_head.txt"
    );
    let Ok(sample) = std::fs::read_to_string(path) else {
        eprintln!(
            "skipped: the_report_is_printed_as_slurm_prints_it: {path} is absent (real \
             Slurm 22.05's captured output, in the reference folder `shared` next to the \
             repository root)"
        );
        return;
    };
    // The sample's times are in UTC; ours are printed in this machine's zone.
    let mut expected: String = sample
        .lines()
        .filter(|l| !l.starts_with("$ ") && !l.starts_with("--- exit"))
        .map(|l| format!("{l}\n"))
        .collect();
    for (t, utc) in [
        (1_795_982_696, "Sun Nov 29 20:04:56 2026"),
        (1_795_982_649, "Sun Nov 29 20:04:09 2026"),
        (1_795_982_679, "Sun Nov 29 20:04:39 2026"),
        (1_795_982_677, "Sun Nov 29 20:04:37 2026"),
    ] {
        expected = expected.replace(utc, &ctime2(t));
    }
    let ours = render(&sampled(), Sort::Count, &|uid| uid.to_string());
    let head: String = ours.lines().take(40).map(|l| format!("{l}\n")).collect();
    assert_eq!(head, expected);
}

fn rpc(name: &str, id: u32, count: u32, total_us: u64) -> RpcCount {
    RpcCount {
        name: name.into(),
        id,
        count,
        total_us,
    }
}

#[test]
fn requests_are_listed_in_slurm_s_columns_and_orders() {
    let mut r = sampled();
    r.by_type = vec![
        rpc("REQUEST_PING", 1008, 2, 30),
        rpc("REQUEST_JOB_INFO", 2003, 5, 500),
        rpc("REQUEST_SUBMIT_BATCH_JOB", 4003, 5, 2000),
    ];
    r.by_user = vec![rpc("", 0, 12, 2530)];
    let text = render(&r, Sort::Count, &|_| "root".into());
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Remote Procedure Call statistics by message type"))
        .collect();
    assert_eq!(
        lines[1],
        "\tREQUEST_JOB_INFO                        ( 2003) count:5      ave_time:100    \
         total_time:500"
    );
    assert_eq!(
        lines[2].split('(').next().unwrap().trim(),
        "REQUEST_SUBMIT_BATCH_JOB"
    );
    assert_eq!(lines[3].split('(').next().unwrap().trim(), "REQUEST_PING");
    assert_eq!(
        lines[6],
        "\troot            (       0) count:12     ave_time:210    total_time:2530"
    );
    assert_eq!(lines[8..], ["Pending RPC statistics", "\tNo pending RPCs"]);
    let order = |by: Sort| {
        let mut v = r.by_type.clone();
        sort(&mut v, by);
        v.iter().map(|t| t.id).collect::<Vec<_>>()
    };
    assert_eq!(order(Sort::Id), [1008, 2003, 4003]);
    assert_eq!(order(Sort::Time), [4003, 2003, 1008]);
    assert_eq!(order(Sort::MeanTime), [4003, 2003, 1008]);
}

#[test]
fn options_are_sdiag_s() {
    let p = |a: &[&str]| parse(a.iter().map(|s| s.to_string()).collect());
    assert!(p(&["-r"]).unwrap().reset);
    assert_eq!(p(&["-i"]).unwrap().sort, Sort::Id);
    assert_eq!(p(&["--sort-by-time2"]).unwrap().sort, Sort::MeanTime);
    assert_eq!(p(&["--usage"]).unwrap().stop, Some(USAGE));
    let refused = p(&["-x"]).unwrap_err();
    assert_eq!(refused.code, 1);
    assert!(refused
        .stderr
        .ends_with("Try \"sdiag --help\" for more information\n"));
}
