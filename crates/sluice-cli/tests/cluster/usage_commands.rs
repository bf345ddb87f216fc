//! Issue 23's truth check through the commands themselves: a job that touches a known
//! amount of memory and burns a known CPU time shows them, within 10 % of what the job
//! measured of itself, in `sstat` while it runs and in `sacct` once it ended — the
//! text a user reads, in Slurm's units (`205012K`, `00:00:03`, `00:03.051`).

use crate::harness::Cluster;

/// Touches 200 MiB, burns 3 s of CPU, writes what it measured of itself (CPU seconds,
/// peak RSS in KiB) to `truth.txt`, then idles so that `sstat` finds it running.
const WORKLOAD: &str = "import resource, time\n\
b = bytearray(200 << 20)\n\
for i in range(0, len(b), 4096):\n    b[i] = 1\n\
while time.process_time() < 3.0:\n    pass\n\
u = resource.getrusage(resource.RUSAGE_SELF)\n\
open('truth.txt.part', 'w').write(f'{u.ru_utime + u.ru_stime} {u.ru_maxrss}\\n')\n\
import os; os.rename('truth.txt.part', 'truth.txt')\n\
time.sleep(8)\n";

/// `205012K` (sstat's and sacct's size with its unit) in KiB.
fn kib(text: &str) -> f64 {
    let t = text.trim();
    let (n, unit) = t.split_at(t.len() - 1);
    let n: f64 = n.parse().unwrap_or_else(|_| panic!("size {t:?}"));
    n * match unit {
        "K" => 1.0,
        "M" => 1024.0,
        "G" => 1024.0 * 1024.0,
        _ => panic!("size {t:?}"),
    }
}

/// `[DD-][HH:]MM:SS[.mmm]` in seconds.
fn seconds(text: &str) -> f64 {
    let t = text.trim();
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().unwrap(), r),
        None => (0.0, t),
    };
    let parts: Vec<f64> = rest
        .split(':')
        .map(|p| p.parse().unwrap_or_else(|_| panic!("time {t:?}")))
        .collect();
    days * 86_400.0 + parts.iter().fold(0.0, |acc, p| acc * 60.0 + p)
}

fn within(measured: f64, truth: f64, what: &str) {
    assert!(
        (measured - truth).abs() <= truth * 0.10,
        "{what}: the command shows {measured}, the job measured {truth}"
    );
}

#[test]
fn sstat_and_sacct_show_what_a_job_used_within_ten_percent() {
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs python3 for the workload");
        return;
    }
    let c = Cluster::start("usage-commands", crate::SMALL);
    std::fs::write(c.work().join("w.py"), WORKLOAD).unwrap();
    let job = c.sbatch(&["--acctg-freq=task=1", "--wrap", "exec python3 w.py"]);
    let truth_file = c.work().join("truth.txt");
    c.wait_for("the job's own figures", || truth_file.exists());
    let truth = std::fs::read_to_string(&truth_file).unwrap();
    let (cpu, rss) = truth.trim().split_once(' ').unwrap();
    let (cpu, rss): (f64, f64) = (cpu.parse().unwrap(), rss.parse().unwrap());

    // While it runs: sstat of its batch step, once a sample after the burn has come.
    let step = format!("{job}.batch");
    let mut shown = String::new();
    c.wait_for("sstat to show the burnt CPU", || {
        let o = c.run(
            "sstat",
            &["-j", &step, "-n", "-P", "-o", "JobID,MaxRSS,MinCPU,NTasks"],
        );
        shown = o.stdout.clone();
        o.code == 0
            && shown
                .split('|')
                .nth(2)
                .is_some_and(|t| !t.is_empty() && seconds(t) >= cpu * 0.9)
    });
    let f: Vec<&str> = shown.trim().split('|').collect();
    assert_eq!((f[0], f[3]), (step.as_str(), "1"), "{shown}");
    within(kib(f[1]), rss, "sstat MaxRSS, KiB");
    // MinCPU is in whole seconds.
    within(seconds(f[2]), cpu.floor(), "sstat MinCPU, s");

    // Once it ended: sacct, with TotalCPU to the millisecond.
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let o = c.run(
        "sacct",
        &[
            "-j",
            &step,
            "-n",
            "-P",
            "-o",
            "JobID,MaxRSS,TotalCPU,AveRSS",
        ],
    );
    let f: Vec<&str> = o.stdout.trim().split('|').collect();
    assert_eq!(f.len(), 4, "{}{}", o.stdout, o.stderr);
    assert_eq!(f[0], step);
    within(kib(f[1]), rss, "sacct MaxRSS, KiB");
    within(seconds(f[2]), cpu, "sacct TotalCPU, s");
    within(kib(f[3]), rss, "sacct AveRSS (one task), KiB");
}
