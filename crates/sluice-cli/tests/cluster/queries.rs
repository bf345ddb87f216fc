//! `sacct`, `squeue` and `sinfo` as clients read them: their selections, formats and
//! headers, checked against real Slurm 22.05's output (`shared/slurm-samples`).

use crate::commands::{pick, show_job, user};
use crate::harness::Cluster;
use crate::SMALL;

/// A fixed-width sacct line: `(value, width, left-justified)` cells, each followed by a
/// space.
fn sacct_line(cells: &[(&str, usize, bool)]) -> String {
    let mut s = String::new();
    for (v, w, left) in cells {
        if *left {
            s.push_str(&format!("{v:<w$} "));
        } else {
            s.push_str(&format!("{v:>w$} "));
        }
    }
    s.push('\n');
    s
}

#[test]
fn sacct_shows_jobs_and_their_steps_in_every_format() {
    let c = Cluster::start("sacct", SMALL);
    std::fs::write(
        c.work().join("steps.sh"),
        "#!/bin/bash\nsrun hostname > /dev/null\n",
    )
    .unwrap();
    std::fs::write(
        c.work().join("fails.sh"),
        "#!/bin/bash\nsrun bash -c 'exit 3'\nexit 2\n",
    )
    .unwrap();
    let good = c.sbatch(&["-J", "steps", "steps.sh"]);
    let bad = c.sbatch(&["-J", "fails", "fails.sh"]);
    assert_eq!(c.wait_ended(good), "COMPLETED");
    assert_eq!(c.wait_ended(bad), "FAILED");
    let sacct = |args: &[&str]| {
        let o = c.run("sacct", args);
        assert_eq!((o.code, o.stderr.as_str()), (0, ""), "sacct {args:?}");
        o.stdout
    };
    let (g, b) = (good.to_string(), bad.to_string());

    // Fixed width: JobID left, the rest right, a dashed rule under the header.
    let line = |id: &str, name: &str, state: &str, code: &str| {
        sacct_line(&[
            (id, 12, true),
            (name, 10, false),
            (state, 10, false),
            (code, 8, false),
        ])
    };
    assert_eq!(
        sacct(&["-j", &g, "--format=JobID,JobName,State,ExitCode"]),
        [
            line("JobID", "JobName", "State", "ExitCode"),
            line("------------", "----------", "----------", "--------"),
            line(&g, "steps", "COMPLETED", "0:0"),
            line(&format!("{g}.batch"), "batch", "COMPLETED", "0:0"),
            line(&format!("{g}.0"), "hostname", "COMPLETED", "0:0"),
        ]
        .concat()
    );
    // Elapsed is [D-]HH:MM:SS; these jobs took no time to speak of.
    let elapsed = sacct(&["-j", &g, "-n", "-P", "-o", "Elapsed"]);
    assert_eq!(elapsed.lines().count(), 3);
    assert!(
        elapsed.lines().all(|l| l == "00:00:00" || l == "00:00:01"),
        "{elapsed}"
    );

    // -P and --parsable2: `|` between fields; -p: after each field too.
    let failed = format!(
        "JobID|JobName|State|ExitCode\n\
         {b}|fails|FAILED|2:0\n\
         {b}.batch|batch|FAILED|2:0\n\
         {b}.0|bash|FAILED|3:0\n"
    );
    assert_eq!(
        sacct(&["-P", "-o", "JobID,JobName,State,ExitCode", "-j", &b]),
        failed
    );
    assert_eq!(
        sacct(&[
            "--parsable2",
            "--format=jobid,jobname,state,exitcode",
            "--jobs",
            &b
        ]),
        failed
    );
    assert_eq!(
        sacct(&["-p", "-o", "JobID,State", "-j", &b]),
        format!("JobID|State|\n{b}|FAILED|\n{b}.batch|FAILED|\n{b}.0|FAILED|\n")
    );
    // -X: allocations only; -n: no header; several jobs, by list or repeated -j.
    let both = format!("{g}|steps|COMPLETED\n{b}|fails|FAILED\n");
    let parsable = ["-X", "-n", "-P", "-o", "JobID,JobName,State"];
    assert_eq!(
        sacct(&[&parsable[..], &["-j", &format!("{g},{b}")]].concat()),
        both
    );
    assert_eq!(
        sacct(&[&parsable[..], &["-j", &g, "-j", &b]].concat()),
        both
    );
    assert_eq!(
        sacct(&[&parsable[..], &["--name=fails"]].concat()),
        format!("{b}|fails|FAILED\n")
    );
    // A time window: the last hour has both; a day long past, neither.
    assert_eq!(
        sacct(&[&parsable[..], &["-S", "now-1hour", "-E", "now"]].concat()),
        both
    );
    assert_eq!(
        sacct(
            &[
                &parsable[..],
                &["--starttime=2001-01-01", "--endtime=2001-01-02"]
            ]
            .concat()
        ),
        ""
    );
    // Widths: `%N` after a field's name.
    assert_eq!(
        sacct(&["-X", "-j", &b, "-o", "jobid,jobname%20,state"]),
        format!(
            "JobID                     JobName      State \n\
             ------------ -------------------- ---------- \n\
             {b:<12}                fails     FAILED \n"
        )
    );

    // A job that never was: the header alone; a field that is not: an error.
    assert_eq!(
        sacct(&["-j", "999999"]),
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n\
         ------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
    );
    let o = c.run("sacct", &["-o", "JobID,Bogus"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("sacct: error: Invalid field requested: \"Bogus\"\n", 1)
    );
}

#[test]
fn squeue_selects_and_formats_the_queue() {
    let c = Cluster::start("squeue", SMALL);
    let me = user();
    let me8: String = me.chars().take(8).collect();
    let busy = c.occupy("busy");
    let pend = c.sbatch(&["-J", "pend", "-t", "3", "--wrap", "true"]);
    let held = c.sbatch(&["-J", "held", "-H", "-t", "3:30", "--wrap", "true"]);
    let ids = |args: &[&str]| {
        let mut all = vec!["-h", "-o", "%i"];
        all.extend(args);
        let o = c.run("squeue", &all);
        assert_eq!((o.code, o.stderr.as_str()), (0, ""), "squeue {args:?}");
        o.stdout
            .lines()
            .map(|l| l.parse::<u64>().unwrap())
            .collect::<Vec<_>>()
    };
    let expected = format!("{pend} PD (Resources)\n{held} PD (JobHeldUser)\n{busy} R n[1-2]\n");
    assert_eq!(
        c.settle(&expected, || c
            .run("squeue", &["-h", "-o", "%i %t %R"])
            .stdout),
        expected
    );

    // Selections: user, states (short, long, any case), ids, partition.
    assert_eq!(ids(&["-u", &me]), [pend, held, busy]);
    let uid = nix::unistd::getuid().to_string();
    assert_eq!(ids(&["-u", &uid]), [pend, held, busy]);
    let o = c.run("squeue", &["-u", "no_such_user_here"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", "squeue: error: Invalid user: no_such_user_here\n", 1)
    );
    assert_eq!(ids(&["-t", "PD"]), [pend, held]);
    assert_eq!(ids(&["--states=running"]), [busy]);
    assert_eq!(ids(&["-t", "pd,R"]), [pend, held, busy]);
    assert_eq!(ids(&["-j", &held.to_string()]), [held]);
    assert_eq!(ids(&["--jobs", &format!("{busy},{pend}")]), [pend, busy]);
    assert_eq!(ids(&["-p", "debug"]), [pend, held, busy]);
    assert_eq!(
        ids(&["-j", &pend.to_string(), "-t", "R"]),
        Vec::<u64>::new()
    );

    // The default format, with and without its header.
    let row = |id: u64, name: &str, time: &str, nodes: &str, why: &str| {
        format!(
            "{id:>18} {:>9} {name:>8} {me8:>8} PD {time:>10} {nodes:>6} {why}\n",
            "debug"
        )
    };
    let header =
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n";
    let pending = row(pend, "pend", "0:00", "1", "(Resources)")
        + &row(held, "held", "0:00", "1", "(JobHeldUser)");
    assert_eq!(
        c.run("squeue", &["-t", "PD"]).stdout,
        format!("{header}{pending}")
    );
    assert_eq!(c.run("squeue", &["-h", "-t", "PD"]).stdout, pending);

    // -o with the common codes.
    let o = c.run(
        "squeue",
        &["-t", "PD", "-o", "%i %P %j %u %T %M %l %D %R %C"],
    );
    assert_eq!(
        o.stdout,
        format!(
            "JOBID PARTITION NAME USER STATE TIME TIME_LIMIT NODES NODELIST(REASON) CPUS\n\
             {pend} debug pend {me} PENDING 0:00 3:00 1 (Resources) 1\n\
             {held} debug held {me} PENDING 0:00 3:30 1 (JobHeldUser) 1\n"
        )
    );
    let o = c.run(
        "squeue",
        &[
            "-h",
            "-j",
            &busy.to_string(),
            "-o",
            "%i %P %j %u %T %M %l %D %R %C",
        ],
    );
    let (head, tail) = (
        format!("{busy} debug busy {me} RUNNING 0:"),
        " 5:00 2 n[1-2] 4\n",
    );
    assert!(
        o.stdout.starts_with(&head) && o.stdout.ends_with(tail),
        "{}",
        o.stdout
    );

    // -O: fields padded to their widths (20 unless given; `.` right-justifies), nothing
    // between them.
    let o = c.run(
        "squeue",
        &["-t", "PD", "-O", "JobID:8,Name:6,State:.9,TimeLimit"],
    );
    assert_eq!(
        o.stdout,
        format!(
            "JOBID   NAME      STATETIME_LIMIT          \n\
             {pend:<8}pend    PENDING3:00                \n\
             {held:<8}held    PENDING3:30                \n"
        )
    );

    // --start: pending jobs, when and where they are expected to start (once the
    // controller's forecast has them).
    c.wait_for("the forecast", || {
        c.run(
            "squeue",
            &["-h", "--start", "-o", "%Y", "-j", &pend.to_string()],
        )
        .stdout
            == "n1\n"
    });
    let start = pick(&show_job(&c, pend), &["StartTime"]);
    let start = start.trim_start_matches("StartTime=");
    assert_eq!(start.len(), 19, "{start}");
    let o = c.run("squeue", &["--start"]);
    assert_eq!(
        o.stdout,
        format!(
            "             JOBID PARTITION     NAME     USER ST          START_TIME  NODES \
             SCHEDNODES           NODELIST(REASON)\n\
             {pend:>18}     debug     pend {me8:>8} PD {start:>19}      1 n1                   \
             (Resources)\n\
             {held:>18}     debug     held {me8:>8} PD {:>19}      1 (null)               \
             (JobHeldUser)\n",
            "N/A"
        )
    );
    // -l: the date, then long state names and the limit.
    let o = c.run("squeue", &["-l", "-t", "PD"]);
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", o.stdout);
    assert_eq!(
        lines[1],
        "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES \
         NODELIST(REASON)"
    );
    assert_eq!(
        lines[2],
        format!("{pend:>18}     debug     pend {me8:>8}  PENDING       0:00      3:00      1 (Resources)")
    );
}

#[test]
fn sacct_takes_bundled_short_options() {
    // Snakemake's Slurm plugin looks for an account with `sacct -nu "$USER" -o
    // Account%256`: getopt's bundles, as Slurm's sacct takes them.
    let c = Cluster::start("sacct-bundles", SMALL);
    let job = c.sbatch(&["-A", "physics", "--wrap", "true"]);
    c.wait_ended(job);
    let me = user();
    let o = c.run("sacct", &["-nu", &me, "-o", "Account%256"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(o.stdout.lines().next().map(str::trim), Some("physics"));
    let id = job.to_string();
    let o = c.run("sacct", &["-nXP", "-oJobID,State", "-j", &id]);
    assert_eq!((o.stdout, o.code), (format!("{job}|COMPLETED\n"), 0));
}

#[test]
fn sacct_takes_users_by_name_or_uid_and_refuses_one_it_does_not_know() {
    let c = Cluster::start("sacct-users", SMALL);
    let job = c.sbatch(&["--wrap", "true"]);
    c.wait_ended(job);
    let uid = nix::unistd::getuid().as_raw().to_string();
    for who in [user(), uid] {
        let o = c.run("sacct", &["-nXP", "-oJobID", "-u", &who]);
        assert_eq!((o.stdout, o.code), (format!("{job}\n"), 0), "-u {who}");
    }
    // As Slurm's sacct: an error, not an empty listing.
    let o = c.run("sacct", &["-nXP", "-oJobID", "-u", "no-such-user-here"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", "sacct: error: Invalid user id: no-such-user-here\n", 1)
    );
}

#[test]
fn sacct_with_job_dot_step_prints_only_that_step() {
    // Snakemake's plugin asks `sacct -j ID.N --format=Reason --noheader` for steps 0 to
    // 9 of a failed job: Slurm prints the step's row alone (its Reason blank), and
    // nothing for a step that does not exist.
    let c = Cluster::start("sacct-steps", SMALL);
    let job = c.sbatch(&["--wrap", "srun true; exit 3"]);
    assert_eq!(c.wait_ended(job), "FAILED");
    let sacct = |sel: &str| {
        let o = c.run(
            "sacct",
            &["-n", "-P", "-o", "JobID,Reason,State", "-j", sel],
        );
        assert_eq!((o.stderr.as_str(), o.code), ("", 0), "{sel}");
        o.stdout
    };
    assert_eq!(sacct(&format!("{job}.0")), format!("{job}.0||COMPLETED\n"));
    assert_eq!(
        sacct(&format!("{job}.batch")),
        format!("{job}.batch||FAILED\n")
    );
    assert_eq!(sacct(&format!("{job}.7")), "");
    assert_eq!(
        sacct(&format!("{job}.7,{job}")),
        format!("{job}|None|FAILED\n{job}.batch||FAILED\n{job}.0||COMPLETED\n")
    );
    let o = c.run(
        "sacct",
        &["-j", &format!("{job}.0"), "--format=Reason", "--noheader"],
    );
    assert_eq!(o.stdout.trim(), "");
}

#[test]
fn sacct_selects_by_partition_account_array_task_state_and_owner() {
    // The controller selects in its database what sacct asks for: -r and -A as Slurm's
    // (they were accepted and ignored), array ids and tasks, states, and, for a user
    // other than root without -a or -j, their own jobs only.
    let conf = format!("{SMALL}PartitionName=other Nodes=n[1-2] State=UP\n");
    let c = Cluster::start("sacct-select", &conf);
    let a = c.sbatch(&["--wrap", "true"]);
    let b = c.sbatch(&["-p", "other", "--wrap", "exit 1"]);
    let arr = c.sbatch(&["-a", "1-2", "--wrap", "true"]);
    assert_eq!(c.wait_ended(a), "COMPLETED");
    assert_eq!(c.wait_ended(b), "FAILED");
    for t in ["1", "2"] {
        c.settle("COMPLETED", || {
            let o = c.run(
                "sacct",
                &["-n", "-X", "-P", "-o", "State", "-j", &format!("{arr}_{t}")],
            );
            o.stdout.trim().to_string()
        });
    }
    let ids = |uid: u32, args: &[&str]| {
        let mut all = vec!["-n", "-X", "-P", "-o", "JobID"];
        all.extend_from_slice(args);
        let o = c.run_as(uid, "sacct", &all);
        assert_eq!((o.stderr.as_str(), o.code), ("", 0), "{args:?}");
        o.stdout.lines().map(str::to_string).collect::<Vec<_>>()
    };
    let (a, b) = (a.to_string(), b.to_string());
    let (t1, t2) = (format!("{arr}_1"), format!("{arr}_2"));
    let (a, b, t1, t2) = (a.as_str(), b.as_str(), t1.as_str(), t2.as_str());
    assert_eq!(ids(0, &[]), [a, b, t1, t2]);
    assert_eq!(ids(0, &["-r", "other"]), [b]);
    assert_eq!(ids(0, &["--partition=debug,other", "-s", "F"]), [b]);
    assert_eq!(ids(0, &["-A", "root", "-r", "debug"]), [a, t1, t2]);
    assert_eq!(ids(0, &["-A", "nosuch"]), Vec::<String>::new());
    assert_eq!(ids(0, &["-j", &arr.to_string()]), [t1, t2]);
    assert_eq!(ids(0, &["-j", t2]), [t2]);
    assert_eq!(ids(0, &["-j", &format!("{b},{t1}")]), [b, t1]);
    assert_eq!(
        ids(0, &["-s", "CD", "-S", "now+1hour"]),
        Vec::<String>::new()
    );
    assert_eq!(ids(0, &["-E", "2000-01-01"]), Vec::<String>::new());
    // nobody: none of their own since midnight; all with -a, or a job named.
    const NOBODY: u32 = 65534;
    assert_eq!(ids(NOBODY, &[]), Vec::<String>::new());
    assert_eq!(ids(NOBODY, &["-a", "-s", "F"]), [b]);
    assert_eq!(ids(NOBODY, &["-j", a]), [a]);
    assert_eq!(ids(NOBODY, &["-u", "root", "-r", "other"]), [b]);
}

#[test]
fn squeue_takes_every_slurm_job_state_name_as_a_filter() {
    // A script waiting for its jobs to leave the queue asks `squeue -t PENDING,RUNNING,
    // CONFIGURING,COMPLETING`: states Sluice never reports are still valid filters,
    // matching nothing, as in Slurm.
    let c = Cluster::start("squeue-states", SMALL);
    let job = c.sbatch(&["-t", "5", "--wrap", "sleep 600"]);
    c.wait_for("it runs", || c.state(job) == "RUNNING");
    let o = c.run(
        "squeue",
        &[
            "-h",
            "-o",
            "%i %T",
            "-t",
            "PENDING,RUNNING,CONFIGURING,COMPLETING",
        ],
    );
    assert_eq!(
        (o.stdout, o.stderr, o.code),
        (format!("{job} RUNNING\n"), String::new(), 0)
    );
    let o = c.run("squeue", &["-h", "-t", "CG,cf,S,suspended,REQUEUE_HOLD"]);
    assert_eq!((o.stdout.as_str(), o.code), ("", 0));
    // Real squeue's words: the state, then the states it knows (its message ends with a
    // newline of its own).
    let o = c.run("squeue", &["-h", "-t", "RUNNIN"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "squeue: error: Invalid job state specified: RUNNIN\n\
             squeue: error: Valid job states include: PENDING,RUNNING,SUSPENDED,COMPLETED,\
             CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,\
             COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,\
             REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED\n\n",
            1
        )
    );
}

#[test]
fn sinfo_follows_nodes_from_idle_to_mixed_to_allocated() {
    let c = Cluster::start("sinfo", SMALL);
    let sinfo = |args: &[&str]| {
        let o = c.run("sinfo", args);
        assert_eq!((o.code, o.stderr.as_str()), (0, ""), "sinfo {args:?}");
        o.stdout
    };
    let header = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n";
    assert_eq!(
        sinfo(&[]),
        format!("{header}debug*       up    1:00:00      2   idle n[1-2]\n")
    );
    let short = ["-o", "%N %c %m %t"];
    assert_eq!(
        sinfo(&short),
        "NODELIST CPUS MEMORY STATE\nn[1-2] 2 1000 idle\n"
    );

    // One CPU of n1 in use.
    c.sbatch(&["-w", "n1", "-t", "5", "--wrap", "sleep 600"]);
    let expected = "NODELIST CPUS MEMORY STATE\nn1 2 1000 mix\nn2 2 1000 idle\n";
    assert_eq!(c.settle(expected, || sinfo(&short)), expected);
    let long = sinfo(&["-N", "-l"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(
        lines[1..],
        [
            "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE \
             REASON              ",
            "n1             1    debug*       mixed 2       2:1:1   1000        0      1   (null) \
             none                ",
            "n2             1    debug*        idle 2       2:1:1   1000        0      1   (null) \
             none                ",
        ],
        "{long}"
    );

    // All of n2 as well.
    c.sbatch(&["-w", "n2", "-c", "2", "-t", "5", "--wrap", "sleep 600"]);
    let expected = "NODELIST CPUS MEMORY STATE\nn1 2 1000 mix\nn2 2 1000 alloc\n";
    assert_eq!(c.settle(expected, || sinfo(&short)), expected);
    assert_eq!(
        sinfo(&[]),
        format!(
            "{header}debug*       up    1:00:00      1    mix n1\n\
             debug*       up    1:00:00      1  alloc n2\n"
        )
    );
    assert_eq!(
        sinfo(&["-h", "-N", "-o", "%N %t %C"]),
        "n1 mix 1/1/0/2\nn2 alloc 2/0/0/2\n"
    );
    // Without a state field the two share a line, as in Slurm.
    assert_eq!(sinfo(&["-o", "%C"]), "CPUS(A/I/O/T)\n3/1/0/4\n");
}

#[test]
fn commands_print_what_real_slurm_printed_in_the_differential_suite() {
    // Differences compat/run.py found against real Slurm 22.05, now the same.
    let c = Cluster::start("compat-fixes", SMALL);
    let job = c.sbatch(&["--wrap", "true"]);
    c.wait_ended(job);
    let id = job.to_string();
    // A finished job named by -j is listed only with -t.
    let o = c.run("squeue", &["-h", "-j", &id, "-o", "%i %T"]);
    assert_eq!((o.stdout.as_str(), o.code), ("", 0));
    let o = c.run("squeue", &["-h", "-t", "all", "-j", &id, "-o", "%i %T"]);
    assert_eq!(o.stdout, format!("{job} COMPLETED\n"));
    // getopt's words for an unknown sbatch option.
    let o = c.run("sbatch", &["--no-such-option", "--wrap", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "sbatch: unrecognized option '--no-such-option'\nTry \"sbatch --help\" for more information\n",
            255
        )
    );
    let o = c.run("sacct", &["positional"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "sacct: error: Unknown arguments:\nsacct: error:  positional\n",
            1
        )
    );
    let o = c.run("scontrol", &["show", "job", "abc"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("scontrol_print_job error: Invalid job id specified\n", 1)
    );
    let o = c.run("scontrol", &["nosuchcommand"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("invalid keyword: nosuchcommand\n", 1)
    );
    // squeue %m: the memory asked for, in Slurm's units.
    let held = c.sbatch(&["--hold", "--mem=900", "--wrap", "true"]);
    let o = c.run("squeue", &["-h", "-j", &held.to_string(), "-o", "%m"]);
    assert_eq!(o.stdout, "900M\n");
}

#[test]
fn sbatch_quiet_submits_without_a_word() {
    let c = Cluster::start("sbatch-quiet", SMALL);
    let o = c.run("sbatch", &["-Q", "--hold", "--wrap", "true"]);
    assert_eq!((o.stdout.as_str(), o.stderr.as_str(), o.code), ("", "", 0));
    let o = c.run("squeue", &["-h", "-o", "%T %r"]);
    assert_eq!(o.stdout, "PENDING JobHeldUser\n");
}

#[test]
fn under_private_data_jobs_a_user_lists_only_their_own_jobs_and_an_operator_every_job() {
    // Needs a second user: root runs the test, `nobody` (65534) is the other.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run commands as a second user");
        return;
    }
    let conf = SMALL.replace(
        "SlurmctldHost=localhost\n",
        "SlurmctldHost=localhost\nPrivateData=jobs\n",
    );
    let c = Cluster::start("privjobs", &conf);
    let mine = c.sbatch(&["-H", "--wrap", "true"]);
    let o = c.run_as(
        65534,
        "sbatch",
        &["--parsable", "-H", "-D", "/tmp", "--wrap", "true"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    let theirs: u64 = o.stdout.trim().parse().unwrap();
    let ids = |o: crate::harness::Output| -> Vec<u64> {
        o.stdout
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    };
    // root sees both; nobody sees only its own, asked for all, by id or by user.
    // (Both held: the latest first, as Slurm's squeue lists jobs without a start time.)
    assert_eq!(ids(c.run("squeue", &["-h", "-o", "%i"])), [theirs, mine]);
    assert_eq!(
        ids(c.run_as(65534, "squeue", &["-h", "-o", "%i"])),
        [theirs]
    );
    assert_eq!(
        ids(c.run_as(
            65534,
            "squeue",
            &["-h", "-o", "%i", "-j", &mine.to_string()]
        )),
        Vec::<u64>::new()
    );
    assert_eq!(
        ids(c.run_as(65534, "squeue", &["-h", "-o", "%i", "-u", "root"])),
        Vec::<u64>::new()
    );
    let shown = |o: &crate::harness::Output| o.stdout.contains(&format!("JobId={mine} "));
    let o = c.run_as(65534, "scontrol", &["show", "job", &mine.to_string()]);
    assert!(!shown(&o) && o.code == 1, "{o:?}");
    let explained = |c: &Cluster| {
        let o = c.run_as(65534, "sluice", &["explain", &mine.to_string()]);
        o.code == 0
    };
    assert!(!explained(&c));
    let state_of_mine = || {
        let o = c.run(
            "squeue",
            &["-h", "-t", "all", "-j", &mine.to_string(), "-o", "%T"],
        );
        o.stdout.trim().to_string()
    };
    // Refused as Slurm refuses it (compat 227): its error number, 2002, as the status.
    let o = c.run_as(65534, "scancel", &[&mine.to_string()]);
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (
            210,
            format!("scancel: error: Kill job error on job id {mine}: Access/permission denied\n")
                .as_str()
        )
    );
    assert_eq!(state_of_mine(), "PENDING");
    // An operator by AdminLevel sees every job, as root does (Slurm's
    // validate_operator), from the moment sacctmgr makes them one until it unmakes them.
    let sacctmgr = |args: &[&str]| {
        let o = c.run("sacctmgr", args);
        assert_eq!(o.code, 0, "{o:?}");
    };
    sacctmgr(&[
        "-i",
        "add",
        "user",
        "nobody",
        "account=root",
        "adminlevel=operator",
    ]);
    assert_eq!(
        ids(c.run_as(65534, "squeue", &["-h", "-o", "%i"])),
        [theirs, mine]
    );
    let o = c.run_as(65534, "scontrol", &["show", "job", &mine.to_string()]);
    assert!(shown(&o), "{o:?}");
    assert!(explained(&c));
    let o = c.run_as(
        65534,
        "scontrol",
        &["write", "batch_script", &mine.to_string(), "-"],
    );
    assert!(o.stdout.contains("true"), "{o:?}");
    // ...and acts on every job, as Slurm lets an operator: root's job cancelled.
    let o = c.run_as(65534, "scancel", &[&mine.to_string()]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(state_of_mine(), "CANCELLED");
    sacctmgr(&["-i", "modify", "user", "nobody", "set", "adminlevel=none"]);
    assert_eq!(
        ids(c.run_as(65534, "squeue", &["-h", "-o", "%i"])),
        [theirs]
    );
    // And without PrivateData both see both (the default).
    let open = Cluster::start("openjobs", SMALL);
    let a = open.sbatch(&["-H", "--wrap", "true"]);
    let o = open.run_as(
        65534,
        "sbatch",
        &["--parsable", "-H", "-D", "/tmp", "--wrap", "true"],
    );
    let b: u64 = o.stdout.trim().parse().unwrap();
    assert_eq!(
        ids(open.run_as(65534, "squeue", &["-h", "-o", "%i"])),
        [b, a]
    );
}
