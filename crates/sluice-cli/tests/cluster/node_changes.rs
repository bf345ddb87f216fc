//! Nodes that join, change or leave while the controller runs.

use crate::harness::Cluster;

const ONE_NODE: &str = "ClusterName=dyn
SlurmctldHost=localhost
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn reconfigure_adds_a_node_a_waiting_job_lands_on_it_and_a_busy_node_may_not_leave() {
    let mut c = Cluster::start_with("reconfnodes", ONE_NODE, &["n1"]);
    let nodes = |c: &Cluster| c.run("sinfo", &["-h", "-N", "-o", "%N %P %c %t"]).stdout;
    let conf = c.dir.join("slurm.conf");
    // n1 is busy with a long job; a second job waits for room.
    let long = c.sbatch(&["-c", "2", "-t", "10", "--wrap", "sleep 300"]);
    c.wait_for("the long job to run", || {
        c.run("squeue", &["-h", "-j", &long.to_string(), "-o", "%T"])
            .stdout
            == "RUNNING\n"
    });
    let waiting = c
        .sbatch(&["-c", "2", "-t", "10", "--wrap", "hostname"])
        .to_string();
    c.wait_for("the second job to wait", || {
        c.run("squeue", &["-h", "-j", &waiting, "-o", "%T %r"])
            .stdout
            == "PENDING Resources\n"
    });
    // n2 joins slurm.conf, and the partition.
    std::fs::write(
        &conf,
        ONE_NODE
            .replace("NodeName=n1 ", "NodeName=n[1-2] ")
            .replace("Nodes=n1", "Nodes=n[1-2]"),
    )
    .unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    // Not responding until its agent registers, then the waiting job runs there.
    assert_eq!(nodes(&c), "n1 debug* 2 alloc\nn2 debug* 2 down*\n");
    c.add_agent("n2");
    c.wait_for("the second job to run on n2", || {
        c.run(
            "sacct",
            &["-n", "-X", "-j", &waiting, "-o", "State,NodeList"],
        )
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
            == ["COMPLETED", "n2"]
    });
    // n1 taken out of slurm.conf while its job runs: refused, naming the job, and
    // nothing changes.
    std::fs::write(
        &conf,
        ONE_NODE
            .replace("NodeName=n1 ", "NodeName=n2 ")
            .replace("Nodes=n1", "Nodes=n2"),
    )
    .unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            format!("slurm_reconfigure error: node n1 has running jobs ({long}): it can change or be removed once they end\n").as_str(),
            1
        )
    );
    assert_eq!(nodes(&c), "n1 debug* 2 alloc\nn2 debug* 2 idle\n");
    // Once the job ends, n1 leaves.
    let o = c.run("scancel", &[&long.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_for("n1 to be idle", || {
        c.run("sinfo", &["-h", "-n", "n1", "-o", "%t"]).stdout == "idle\n"
    });
    let o = c.run("scontrol", &["reconfigure"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(nodes(&c), "n2 debug* 2 idle\n");
    let o = c.run("scontrol", &["show", "node", "n1"]);
    assert_eq!((o.stdout.as_str(), o.code), ("", 1), "{}", o.stderr);
}
