//! `sdiag`: what the controller counted — jobs submitted, started, completed and
//! cancelled, scheduling cycles, requests by message type and by user — and who may
//! clear it.

use crate::harness::Cluster;
use crate::SMALL;

/// The value after `label` on its line of `text`.
fn figure(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} in\n{text}"));
    line.trim_start()[label.len()..].trim().parse().unwrap()
}

/// The `count:` of a message type's line.
fn rpc_count(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .and_then(|l| l.split("count:").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn sdiag_counts_jobs_cycles_and_requests_and_only_operators_reset_it() {
    let c = Cluster::start("sdiag", SMALL);
    let o = c.run("sdiag", &["-r"]);
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (0, "Reset scheduling statistics\n", "")
    );
    let a = c.sbatch(&["--wrap", "true"]);
    let b = c.sbatch(&["--wrap", "exit 3"]);
    assert_eq!(c.wait_ended(a), "COMPLETED");
    assert_eq!(c.wait_ended(b), "FAILED");
    let held = c.sbatch(&["-H", "--wrap", "true"]);
    let o = c.run("scancel", &[&held.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for _ in 0..3 {
        assert_eq!(c.run("squeue", &[]).code, 0);
    }

    let o = c.run("sdiag", &[]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    let s = &o.stdout;
    assert_eq!(figure(s, "Jobs submitted:"), 3);
    assert_eq!(figure(s, "Jobs started:"), 2);
    assert_eq!(figure(s, "Jobs completed:"), 2);
    assert_eq!(figure(s, "Jobs canceled:"), 1);
    assert_eq!(figure(s, "Jobs failed:"), 0);
    assert_eq!(figure(s, "Jobs pending:"), 0);
    // Every submission tried at once, as slurmctld does: a cycle each at least.
    assert!(figure(s, "Total cycles:") >= 3, "{s}");
    assert!(figure(s, "Max cycle:") >= figure(s, "Last cycle:"), "{s}");
    assert_eq!(rpc_count(s, "REQUEST_SUBMIT_BATCH_JOB"), 3, "{s}");
    assert_eq!(rpc_count(s, "REQUEST_KILL_JOB"), 1, "{s}");
    assert!(rpc_count(s, "REQUEST_JOB_INFO") >= 3, "{s}");
    assert!(rpc_count(s, "REQUEST_COMPLETE_BATCH_SCRIPT") >= 2, "{s}");
    // The requests by user: root made the submissions, and its line counts them all.
    let root = s
        .lines()
        .find(|l| l.trim_start().starts_with("root "))
        .unwrap_or_else(|| panic!("no line for root in\n{s}"));
    assert!(root.contains("(       0) count:"), "{root}");

    // Sorted by id: ascending message numbers.
    let o = c.run("sdiag", &["-i"]);
    let ids: Vec<u32> = o
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Remote Procedure Call statistics by message type"))
        .skip(1)
        .take_while(|l| l.starts_with('\t'))
        .map(|l| {
            l.split('(')
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        ids.len() >= 4 && ids.windows(2).all(|w| w[0] < w[1]),
        "{ids:?}"
    );

    // Another user may look but not clear: Slurm's words, exit 255, nothing cleared.
    let o = c.run_as(65534, "sdiag", &["-r"]);
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (
            255,
            "",
            "slurm_reset_statistics: Access/permission denied\n"
        )
    );
    let o = c.run_as(65534, "sdiag", &[]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(figure(&o.stdout, "Jobs submitted:"), 3);

    // An operator's reset clears the counters and the requests counted.
    c.run("sdiag", &["-r"]);
    let s = c.run("sdiag", &[]).stdout;
    assert_eq!(figure(&s, "Jobs submitted:"), 0);
    assert_eq!(rpc_count(&s, "REQUEST_SUBMIT_BATCH_JOB"), 0, "{s}");
}
