//! `scontrol update`: an operator drains, downs and resumes nodes (kept across a
//! controller crash), and changes jobs' limits, names and partitions.

use crate::harness::Cluster;
use crate::SMALL;

const TWO_PARTITIONS: &str = "ClusterName=upd
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
PartitionName=other Nodes=n1 MaxTime=1:00:00 State=UP
";

#[test]
fn an_operator_drains_downs_and_resumes_nodes_and_the_state_survives_a_crash() {
    let mut c = Cluster::start_with("drain", SMALL, &["n1", "n2"]);
    let states = |c: &Cluster| c.run("sinfo", &["-h", "-N", "-o", "%N %t"]).stdout;
    // A drain needs a reason, and unknown nodes or states are refused; nothing changes.
    let o = c.run("scontrol", &["update", "NodeName=n1", "State=DRAIN"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "You must specify a reason when DOWNING or DRAINING a node. Request denied\n",
            1
        )
    );
    let o = c.run("scontrol", &["update", "NodeName=n9", "State=RESUME"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_update error: Invalid node name specified\n", 1)
    );
    let o = c.run(
        "scontrol",
        &["update", "NodeName=n1", "State=SLEEPY", "Reason=x"],
    );
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_update error: Invalid node state specified\n", 1)
    );
    assert_eq!(states(&c), "n1 idle\nn2 idle\n");

    let o = c.run(
        "scontrol",
        &["update", "NodeName=n1", "State=DRAIN", "Reason=new disks"],
    );
    assert_eq!((o.stdout.as_str(), o.stderr.as_str(), o.code), ("", "", 0));
    assert_eq!(states(&c), "n1 drain\nn2 idle\n");
    let me = crate::commands::user();
    let reasons = c.run("sinfo", &["-R"]).stdout;
    let lines: Vec<&str> = reasons.lines().collect();
    assert_eq!(
        lines[0],
        "REASON               USER      TIMESTAMP           NODELIST"
    );
    assert!(
        lines[1].starts_with(&format!("new disks            {me:<9} 20"))
            && lines[1].ends_with(" n1"),
        "{reasons}"
    );
    assert_eq!(lines.len(), 2);
    let show = c.run("scontrol", &["show", "node", "n1"]).stdout;
    assert!(show.contains("State=IDLE+DRAIN "), "{show}");
    assert!(
        show.contains(&format!("   Reason=new disks [{me}@20")),
        "{show}"
    );

    // Two jobs wanting a whole node: one runs on n2, the other waits for n1.
    let a = c.sbatch(&["-c", "2", "--wrap", "sleep 600"]);
    let b = c.sbatch(&["-c", "2", "--wrap", "sleep 600"]);
    c.wait_for("job a to run", || c.state(a) == "RUNNING");
    let queue = |c: &Cluster| c.run("squeue", &["-h", "-o", "%i %t %R"]).stdout;
    let expected = format!("{b} PD (Resources)\n{a} R n2\n");
    assert_eq!(c.settle(&expected, || queue(&c)), expected);

    // The drain outlives the controller.
    c.crash_and_restart_controller();
    c.wait_for("the agents to come back", || {
        states(&c) == "n1 drain\nn2 alloc\n"
    });

    // Resumed, n1 takes job b; n2 set DOWN loses job a, which goes back to the queue.
    let o = c.run("scontrol", &["update", "NodeName=n1", "State=RESUME"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_for("job b to run", || c.state(b) == "RUNNING");
    let o = c.run(
        "scontrol",
        &["update", "NodeName=n2", "State=DOWN", "Reason=fan"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let expected = format!("{a} PD (Resources)\n{b} R n1\n");
    assert_eq!(c.settle(&expected, || queue(&c)), expected);
    assert_eq!(states(&c), "n1 alloc\nn2 down\n");
    let o = c.run("scontrol", &["update", "NodeName=n2", "State=RESUME"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let expected = format!("{a} R n2\n{b} R n1\n");
    assert_eq!(c.settle(&expected, || queue(&c)), expected);
    let restarts = c
        .run(
            "sacct",
            &["-n", "-X", "-P", "-o", "Restarts", "-j", &a.to_string()],
        )
        .stdout;
    assert_eq!(restarts, "1\n");
    assert_eq!(c.run("scancel", &[&a.to_string(), &b.to_string()]).code, 0);
}

#[test]
fn owners_change_time_limits_names_and_partitions() {
    let c = Cluster::start("jobupd", TWO_PARTITIONS);
    let held = c.sbatch(&["-H", "-t", "10", "-J", "first", "--wrap", "true"]);
    let id = held.to_string();
    let show = |what: &str| {
        c.run("squeue", &["-h", "-j", &id, "-o", what])
            .stdout
            .trim()
            .to_string()
    };
    assert_eq!(show("%l %j %P"), "10:00 first debug");
    let o = c.run(
        "scontrol",
        &[
            "update",
            &format!("JobId={id}"),
            "TimeLimit=5",
            "JobName=second",
            "Partition=other",
        ],
    );
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(show("%l %j %P"), "5:00 second other");
    // +T and -T lengthen and shorten the limit, as in Slurm.
    let upd = |v: &str| {
        c.run("scontrol", &["update", &format!("JobId={id}"), v])
            .code
    };
    assert_eq!(upd("TimeLimit=+5"), 0);
    assert_eq!(show("%l"), "10:00");
    assert_eq!(upd("TimeLimit=-3"), 0);
    assert_eq!(show("%l"), "7:00");
    assert_eq!(upd("TimeLimit=5"), 0);
    // Bad values change nothing.
    for (args, err) in [
        (
            vec!["Partition=nosuch"],
            format!("Invalid partition name specified for job {id}\n"),
        ),
        // Not a time: refused by scontrol itself, as Slurm's (scenario 076).
        (
            vec!["TimeLimit=abc"],
            "scontrol: error: Invalid TimeLimit value\n".to_string(),
        ),
        (
            vec!["Colour=blue"],
            "Update of this parameter is not supported: Colour=blue\nRequest aborted\n".to_string(),
        ),
    ] {
        let mut all = vec!["update".to_string(), format!("JobId={id}")];
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = c.run("scontrol", &all);
        assert_eq!((o.stderr.as_str(), o.code), (err.as_str(), 1), "{args:?}");
    }
    assert_eq!(show("%l %j %P"), "5:00 second other");
    // A job the other partition could never run (two nodes; it has one) stays put.
    let wide = c.sbatch(&["-H", "-N", "2", "--wrap", "true"]);
    let o = c.run(
        "scontrol",
        &["update", &format!("JobId={wide}"), "Partition=other"],
    );
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            format!("Requested node configuration is not available for job {wide}\n").as_str(),
            1
        )
    );
    let o = c.run("squeue", &["-h", "-j", &wide.to_string(), "-o", "%P"]);
    assert_eq!(o.stdout, "debug\n");
    let o = c.run("scontrol", &["update", "JobId=999999", "TimeLimit=5"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("Invalid job id specified for job 999999\n", 1)
    );

    // A running job's limit lowered to three seconds: its agent ends it at once.
    let long = c.sbatch(&["-t", "10", "--wrap", "sleep 600"]);
    c.wait_for("the job to run", || c.state(long) == "RUNNING");
    let o = c.run(
        "scontrol",
        &["update", &format!("JobId={long}"), "TimeLimit=0:03"],
    );
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(c.wait_ended(long), "TIMEOUT");
    let limit = c
        .run(
            "sacct",
            &["-n", "-X", "-P", "-o", "Timelimit", "-j", &long.to_string()],
        )
        .stdout;
    assert_eq!(limit, "00:00:03\n");
}

#[test]
fn an_operator_changes_partitions_until_the_controller_restarts() {
    let mut c = Cluster::start_with("partupd", TWO_PARTITIONS, &["n1", "n2"]);
    let parts = |c: &Cluster| c.run("sinfo", &["-h", "-o", "%P %a %l %D"]).stdout;
    let before = "debug* up 1:00:00 2\nother up 1:00:00 1\n";
    assert_eq!(parts(&c), before);
    // Only super users: a user is refused and nothing changes.
    let o = c.run_as(
        65534,
        "scontrol",
        &["update", "PartitionName=other", "State=DOWN"],
    );
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_update error: Invalid user id\n", 1)
    );
    // One refused change refuses the others given with it.
    let o = c.run(
        "scontrol",
        &["update", "PartitionName=other", "State=DOWN", "Nodes=n9"],
    );
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_update error: Invalid node name specified\n", 1)
    );
    assert_eq!(parts(&c), before);
    // Limits that would keep every job waiting are refused.
    let o = c.run(
        "scontrol",
        &[
            "update",
            "PartitionName=other",
            "DefaultTime=30",
            "MaxTime=10",
        ],
    );
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "slurm_update error: DefaultTime would exceed MaxTime for partition other\n",
            1
        )
    );
    assert_eq!(parts(&c), before);
    // The default moves with Default=YES; the other changes show at once.
    let o = c.run(
        "scontrol",
        &[
            "update",
            "PartitionName=other",
            "State=DOWN",
            "MaxTime=10",
            "Nodes=n[1-2]",
            "Default=YES",
        ],
    );
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(parts(&c), "debug up 1:00:00 2\nother* down 10:00 2\n");
    // A job sent to the new default waits while it is down.
    let o = c.run("sbatch", &["--parsable", "-t", "5", "--wrap", "true"]);
    let id = o.stdout.trim().to_string();
    c.wait_for("the job to be judged", || {
        c.run("squeue", &["-h", "-j", &id, "-o", "%P %T %r"]).stdout
            == "other PENDING PartitionDown\n"
    });
    // As Slurm without ReconfigFlags=KeepPartInfo: a restart reads slurm.conf again.
    c.crash_and_restart_controller();
    c.wait_for("the partitions of slurm.conf", || parts(&c) == before);
}

#[test]
fn reconfigure_reads_slurm_confs_partitions_again_and_refuses_what_needs_a_restart() {
    let c = Cluster::start_with("reconf", TWO_PARTITIONS, &["n1", "n2"]);
    let parts = |c: &Cluster| c.run("sinfo", &["-h", "-o", "%P %a %l %D"]).stdout;
    let conf = c.dir.join("slurm.conf");
    // An operator's change, then slurm.conf edited: reconfigure takes the file's.
    let o = c.run("scontrol", &["update", "PartitionName=debug", "State=DOWN"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    std::fs::write(
        &conf,
        TWO_PARTITIONS.replace(
            "PartitionName=other Nodes=n1 MaxTime=1:00:00",
            "PartitionName=other Nodes=n[1-2] MaxTime=30 # wider",
        ),
    )
    .unwrap();
    // Users may not.
    let o = c.run_as(65534, "scontrol", &["reconfigure"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("slurm_reconfigure error: Invalid user id\n", 1)
    );
    assert_eq!(parts(&c), "debug* down 1:00:00 2\nother up 1:00:00 1\n");
    let o = c.run("scontrol", &["reconfig"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(parts(&c), "debug* up 1:00:00 2\nother up 30:00 2\n");
    // A line that needs a restart changed: refused, naming it, and nothing else
    // changes either.
    std::fs::write(
        &conf,
        TWO_PARTITIONS
            .replace("ClusterName=upd", "ClusterName=other")
            .replace(
                "MaxTime=1:00:00 State=UP\nPartitionName=other",
                "MaxTime=5 State=UP\nPartitionName=other",
            ),
    )
    .unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "slurm_reconfigure error: only nodes and partitions change without a restart; restart the controller for this change: ClusterName=other\n",
            1
        )
    );
    assert_eq!(parts(&c), "debug* up 1:00:00 2\nother up 30:00 2\n");
    // A partition added: refused too.
    std::fs::write(
        &conf,
        format!("{TWO_PARTITIONS}PartitionName=third Nodes=n2\n"),
    )
    .unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "slurm_reconfigure error: adding, removing or reordering partitions, or changing a partition's QOS, needs a restart of the controller\n",
            1
        )
    );
}

#[test]
fn an_administrator_by_adminlevel_changes_nodes_and_partitions_and_an_operator_does_not() {
    // Needs a second user: root runs the test, `nobody` (65534) is the other.
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run commands as a second user");
        return;
    }
    let c = Cluster::start("superuser", SMALL);
    let sacctmgr = |args: &[&str]| {
        let o = c.run("sacctmgr", args);
        assert_eq!(o.code, 0, "{o:?}");
    };
    let drain = || {
        c.run_as(
            65534,
            "scontrol",
            &["update", "NodeName=n2", "State=DRAIN", "Reason=maint"],
        )
    };
    let max_time = || {
        c.run_as(
            65534,
            "scontrol",
            &["update", "PartitionName=debug", "MaxTime=20"],
        )
    };
    let node_state = || c.run("sinfo", &["-h", "-n", "n2", "-o", "%t"]).stdout;
    let partition_limit = || c.run("sinfo", &["-h", "-p", "debug", "-o", "%l"]).stdout;
    // Slurm's validate_super_user refuses with ESLURM_USER_ID_MISSING.
    let denied = "slurm_update error: Invalid user id";
    // A plain user, then an operator (Slurm's validate_operator: jobs and reservations),
    // is refused; nothing changes (compat 228).
    sacctmgr(&["-i", "add", "user", "nobody", "account=root"]);
    for level in ["none", "operator"] {
        let set = format!("adminlevel={level}");
        if level != "none" {
            sacctmgr(&["-i", "modify", "user", "nobody", "set", &set]);
        }
        let o = drain();
        assert!(o.code == 1 && o.stderr.contains(denied), "{level}: {o:?}");
        let o = max_time();
        assert!(o.code == 1 && o.stderr.contains(denied), "{level}: {o:?}");
        assert_eq!(node_state(), "idle\n");
        assert_eq!(partition_limit(), "1:00:00\n");
        // Reservations are an operator's (Slurm's validate_operator), not a user's.
        let name = format!("ReservationName=r_{level}");
        let o = c.run_as(
            65534,
            "scontrol",
            &[
                "create",
                "reservation",
                &name,
                "starttime=now+1hour",
                "duration=30",
                "nodes=n1",
                "users=root",
            ],
        );
        match level {
            "operator" => assert_eq!(o.stdout, "Reservation created: r_operator\n", "{o:?}"),
            _ => assert_eq!(
                (o.stderr.as_str(), o.code),
                ("Error creating the reservation: Invalid user id\n", 1)
            ),
        }
    }
    // An administrator is a super user (Slurm's validate_super_user).
    sacctmgr(&[
        "-i",
        "modify",
        "user",
        "nobody",
        "set",
        "adminlevel=administrator",
    ]);
    let o = drain();
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(node_state(), "drain\n");
    let o = max_time();
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(partition_limit(), "20:00\n");
    let o = c.run_as(
        65534,
        "scontrol",
        &["update", "NodeName=n2", "State=RESUME"],
    );
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        c.settle("idle\n", node_state),
        "idle\n",
        "resumed by the administrator"
    );
}
