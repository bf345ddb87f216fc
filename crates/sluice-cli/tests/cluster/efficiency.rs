//! Efficiency reports on real finished jobs: `seff JOBID` in the layout of Slurm's
//! contribs/seff and `sluice report efficiency --json`, their figures against what a
//! job really used; `sreport`'s layout and errors (its figures are unit-tested: a fresh
//! job lies in the current hour, which a period rounded to the hour may leave out).

use std::process::Command;

use crate::harness::Cluster;

/// Runs `sluice report efficiency ARGS` against the cluster.
fn report(c: &Cluster, args: &[&str]) -> (String, String, i32) {
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["report", "efficiency"])
        .args(args)
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env_remove("SLUICE_CONTROLLER")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

/// `Job Wall-clock time: 00:00:SS` as seconds.
fn wall(seff: &str) -> i64 {
    let line = seff
        .lines()
        .find_map(|l| l.strip_prefix("Job Wall-clock time: "))
        .unwrap_or_else(|| panic!("no wall-clock line in {seff}"));
    let p: Vec<i64> = line.split(':').map(|x| x.parse().unwrap()).collect();
    p[0] * 3600 + p[1] * 60 + p[2]
}

#[test]
fn seff_and_the_efficiency_report_describe_finished_jobs() {
    let c = Cluster::start("efficiency", crate::SMALL);
    let user = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap();
    let group = nix::unistd::Group::from_gid(nix::unistd::getegid())
        .unwrap()
        .unwrap();
    // Two CPUs on each node for up to 5 minutes, 100 MiB per node, for about 2 s;
    // one CPU with 50 MiB per CPU that fails.
    let two = c.sbatch(&[
        "-N",
        "2",
        "-c",
        "2",
        "-t",
        "5",
        "--mem=100M",
        "--wrap",
        "sleep 2",
    ]);
    let one = c.sbatch(&["-t", "1", "--mem-per-cpu=50M", "--wrap", "exit 3"]);
    assert_eq!(c.wait_ended(two), "COMPLETED");
    assert_eq!(c.wait_ended(one), "FAILED");

    let o = c.run("seff", &[&two.to_string()]);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{o:?}");
    let secs = wall(&o.stdout);
    assert!((2..=10).contains(&secs), "{}", o.stdout);
    let hms = |s: i64| format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[..6],
        [
            format!("Job ID: {two}").as_str(),
            "Cluster: small",
            format!("User/Group: {}/{}", user.name, group.name).as_str(),
            "State: COMPLETED (exit code 0)",
            "Nodes: 2",
            "Cores per node: 2",
        ]
    );
    assert!(lines[6].starts_with("CPU Utilized: "), "{}", o.stdout);
    assert!(
        lines[7].starts_with("CPU Efficiency: ")
            && lines[7].ends_with(&format!(" of {} core-walltime", hms(secs * 4))),
        "{}",
        o.stdout
    );
    assert!(lines[9].starts_with("Memory Utilized: "), "{}", o.stdout);
    assert!(
        lines[10].starts_with("Memory Efficiency: ")
            && lines[10].ends_with("% of 200.00 MB (100.00 MB/node)"),
        "{}",
        o.stdout
    );

    let o = c.run("seff", &[&one.to_string()]);
    assert!(
        o.stdout.contains("State: FAILED (exit code 3)\nCores: 1\n"),
        "{o:?}"
    );
    assert!(
        o.stdout.contains("% of 50.00 MB (50.00 MB/core)\n"),
        "{o:?}"
    );

    // seff's errors: an unknown job, no job, a word that is no job id.
    let o = c.run("seff", &["999999"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", "Job not found.\n", 2)
    );
    let o = c.run("seff", &[]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.starts_with("Usage: seff [Options] <Jobid>\n"),
        "{o:?}"
    );
    let o = c.run("seff", &["abc"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("seff: fatal: Bad job/step specified: abc\n", 1)
    );

    // The report: both jobs, the same elapsed time, time efficiency against the
    // limits, memory asked in all.
    let (out, err, code) = report(&c, &["-j", &format!("{two},{one}"), "--json"]);
    assert_eq!((err.as_str(), code), ("", 0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "{out}");
    let j = &jobs[0];
    assert_eq!(j["job_id"], two);
    assert_eq!(
        (j["cpus"].as_u64(), j["nodes"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(j["elapsed_s"].as_i64(), Some(secs));
    assert_eq!(j["time_limit_s"], 300);
    let time_eff = j["time_efficiency"].as_f64().unwrap();
    assert!((time_eff - secs as f64 / 3.0).abs() < 1e-9, "{out}");
    assert_eq!(j["mem_requested_bytes"], 200 * 1024 * 1024);
    assert_eq!(j["gpu_efficiency"], serde_json::Value::Null);
    assert_eq!(jobs[1]["state"], "FAILED");
    assert_eq!(jobs[1]["mem_requested_bytes"], 50 * 1024 * 1024);
    let users = v["users"].as_array().unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["name"], user.name.as_str());
    assert_eq!(users[0]["jobs"], 2);
    // The table names both jobs and sums per user and account.
    let (out, _, code) = report(&c, &["-j", &two.to_string()]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&two.to_string()) && out.contains("Per user") && out.contains("Per account"),
        "{out}"
    );
    // Another user sees their own jobs (none) unless they name users, as with sacct.
    let o = c.run_as(65534, "sluice", &["report", "efficiency", "--json"]);
    assert_eq!(o.code, 0, "{o:?}");
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(0), "{}", o.stdout);
    let o = c.run_as(
        65534,
        "sluice",
        &["report", "efficiency", "--json", "-u", &user.name],
    );
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(2), "{}", o.stdout);
    let (_, err, code) = report(&c, &["-j", "abc"]);
    assert_eq!(
        (err.as_str(), code),
        ("sluice report efficiency: error: Invalid job id: abc\n", 1)
    );
}

#[test]
fn sreport_prints_slurms_layout_and_errors() {
    let c = Cluster::start("sreport", crate::SMALL);
    // A period before the cluster existed: the headers alone.
    let o = c.run(
        "sreport",
        &[
            "-P",
            "cluster",
            "utilization",
            "start=2020-01-01",
            "end=2020-01-02",
        ],
    );
    let dashes = "-".repeat(80);
    assert_eq!(
        (o.stdout, o.stderr.as_str(), o.code),
        (
            format!(
                "{dashes}\nCluster Utilization 2020-01-01T00:00:00 - 2020-01-01T23:59:59\n\
                 Usage reported in CPU Minutes\n{dashes}\n\
                 Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported\n"
            ),
            "",
            0
        )
    );
    let o = c.run(
        "sreport",
        &[
            "-t",
            "percent",
            "-n",
            "user",
            "topusage",
            "start=2020-01-01",
            "end=2020-01-02",
        ],
    );
    assert_eq!((o.stdout.as_str(), o.code), ("", 0), "{o:?}");
    let o = c.run(
        "sreport",
        &[
            "cluster",
            "AccountUtilizationByUser",
            "start=2020-01-01T00:00",
            "end=2020-01-01T01:00",
            "-t",
            "hourper",
        ],
    );
    assert!(o.stdout.contains("Cluster/Account/User Utilization 2020-01-01T00:00:00 - 2020-01-01T00:59:59 (3600 secs)\nUsage reported in CPU Hours/Percentage of Total\n"), "{o:?}");
    assert!(o.stdout.ends_with("  Cluster         Account     Login     Proper Name              Used            Energy \n--------- --------------- --------- --------------- ----------------- ----------------- \n"), "{o:?}");
    // Errors as sreport says them.
    let o = c.run("sreport", &["cluster", "bogus"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with("Not valid report bogus\nValid cluster reports are, "),
        "{o:?}"
    );
    let o = c.run("sreport", &["bogus"]);
    assert_eq!((o.stderr.as_str(), o.code), ("invalid keyword: bogus\n", 1));
    let o = c.run("sreport", &["user"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("too few arguments for keyword:user\n", 1)
    );
    let o = c.run("sreport", &["-x"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "sreport: invalid option -- 'x'\nTry \"sreport --help\" for more information\n",
            1
        )
    );
    let o = c.run(
        "sreport",
        &[
            "-n",
            "cluster",
            "utilization",
            "format=bogus,Cluster",
            "start=2020-01-01",
            "end=2020-01-02",
        ],
    );
    assert_eq!((o.stderr.as_str(), o.code), (" Unknown field 'bogus'\n", 1));
}

/// A job that burns 5 s of CPU holding 300 MiB: seff and the report show what it says it
/// used within 10 % (the agents' usage gathering fills the steps' figures).
#[test]
fn seff_and_the_report_measure_what_a_job_used() {
    let c = Cluster::start(
        "efficiency-measured",
        &crate::SMALL.replace(
            "SlurmctldHost=localhost\n",
            "SlurmctldHost=localhost\nJobAcctGatherFrequency=1\n",
        ),
    );
    // The job says what it used itself (its CPU time and peak memory, as the kernel
    // counts them): the truth the reports are held to.
    std::fs::write(
        c.work().join("burn.py"),
        "import os, resource, time\n\
         a = bytearray(300 * 1024 * 1024)\n\
         for i in range(0, len(a), 4096):\n    a[i] = 1\n\
         t = time.process_time()\n\
         while time.process_time() - t < 5:\n    pass\n\
         u = os.times()\n\
         print(u.user + u.system, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n",
    )
    .unwrap();
    let job = c.sbatch(&["-t", "2", "--mem=600M", "--wrap", "python3 burn.py"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let said = std::fs::read_to_string(c.work().join(format!("slurm-{job}.out"))).unwrap();
    let mut words = said.split_whitespace();
    let true_cpu: f64 = words.next().and_then(|w| w.parse().ok()).unwrap();
    let true_mib: f64 = words
        .next()
        .and_then(|w| w.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap();
    assert!(true_cpu >= 5.0 && true_mib >= 300.0, "{said}");
    let within = |v: f64, truth: f64| (v - truth).abs() <= truth * 0.1;
    let (out, _, code) = report(&c, &["-j", &job.to_string(), "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let j = &v["jobs"][0];
    let cpu_s = j["cpu_time_ms"].as_f64().unwrap() / 1000.0;
    assert!(
        within(cpu_s, true_cpu),
        "CPU {cpu_s} s, truly {true_cpu}: {out}"
    );
    let mib = j["mem_used_bytes"].as_f64().unwrap() / (1024.0 * 1024.0);
    assert!(
        within(mib, true_mib),
        "memory {mib} MiB, truly {true_mib}: {out}"
    );
    let eff = j["mem_efficiency"].as_f64().unwrap();
    assert!((eff - mib / 600.0 * 100.0).abs() < 1e-6, "{out}");
    let o = c.run("seff", &[&job.to_string()]);
    let used = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Memory Utilized: "))
        .and_then(|m| m.strip_suffix(" MB"))
        .and_then(|m| m.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{}", o.stdout));
    assert!((used - mib).abs() < 0.01, "{}", o.stdout);
    let secs = (j["cpu_time_ms"].as_u64().unwrap() + 500) / 1000;
    assert!(
        o.stdout
            .contains(&format!("CPU Utilized: 00:00:{secs:02}\n")),
        "{}",
        o.stdout
    );
}
