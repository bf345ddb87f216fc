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
    // UNKNOWN and not responding until its agent registers (as a node at a start),
    // then the waiting job runs there.
    assert_eq!(nodes(&c), "n1 debug* 2 alloc\nn2 debug* 2 unk*\n");
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
    assert_eq!(
        (o.stdout.as_str(), o.code),
        ("Node n1 not found\n", 1),
        "{}",
        o.stderr
    );
}

#[test]
fn dynamic_nodes_are_created_take_work_may_not_go_while_busy_and_survive_a_restart() {
    let mut c = Cluster::start_with("dynnodes", ONE_NODE, &["n1"]);
    // FUTURE nodes are shown when asked for (-F), as Slurm's.
    let state = |c: &Cluster| {
        let o = c.run("scontrol", &["-F", "show", "node", "n2"]);
        o.stdout
            .split_whitespace()
            .find(|w| w.starts_with("State="))
            .unwrap_or("")
            .to_string()
    };
    // Operators only, and FUTURE or CLOUD only, as Slurm 22.05.
    let create = [
        "create",
        "nodename=n2",
        "cpus=2",
        "realmemory=1000",
        "state=future",
    ];
    let o = c.run_as(65534, "scontrol", &create);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        ("Error creating the node(s): Invalid user id\n", 1)
    );
    let o = c.run("scontrol", &create[..4]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scontrol: error: Only State=FUTURE and State=CLOUD allowed for nodes created by \
             scontrol\nError creating the node(s): Invalid node state specified\n",
            1
        )
    );
    assert_eq!(state(&c), "");
    let o = c.run("scontrol", &create);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    assert_eq!(state(&c), "State=FUTURE+DYNAMIC_NORM");
    let o = c.run("scontrol", &["show", "node", "n2"]);
    assert_eq!((o.stdout.as_str(), o.code), ("Node n2 not found\n", 1));
    assert_eq!(c.run("sinfo", &["-h", "-N", "-o", "%N"]).stdout, "n1\n");
    // Its agent registers; an operator puts it in the partition; a job runs there.
    c.add_agent("n2");
    c.wait_for("n2 to register", || state(&c) == "State=IDLE+DYNAMIC_NORM");
    let o = c.run(
        "scontrol",
        &["update", "PartitionName=debug", "Nodes=n[1-2]"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let job = c
        .sbatch(&["-w", "n2", "-t", "10", "--wrap", "sleep 300"])
        .to_string();
    c.wait_for("the job to run on n2", || {
        c.run("squeue", &["-h", "-j", &job, "-o", "%T %N"]).stdout == "RUNNING n2\n"
    });
    // Busy: refused with Slurm's message, and it stays.
    let o = c.run("scontrol", &["delete", "nodename=n2"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scontrol: error: failed to delete nodes n2\n\
             delete_node nodename=n2: Requested nodes are busy\n",
            1
        )
    );
    let o = c.run("scontrol", &["delete", "nodename=n9"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scontrol: error: failed to delete nodes n9\n\
             delete_node nodename=n9: Invalid node name specified\n",
            1
        )
    );
    // A restart keeps it, and its running job.
    c.crash_and_restart_controller();
    c.wait_for("the controller and n2 back", || {
        c.run("squeue", &["-h", "-j", &job, "-o", "%T %N"]).stdout == "RUNNING n2\n"
    });
    assert_eq!(
        c.run("scontrol", &["show", "node", "n2"]).code,
        0,
        "n2 is kept across a restart"
    );
    // Once its job is gone it may be deleted, for good.
    assert_eq!(c.run("scancel", &[&job]).code, 0);
    c.wait_for("the job to end", || {
        c.run("squeue", &["-h", "-j", &job]).stdout.is_empty()
    });
    c.wait_for("n2 deleted", || {
        c.run("scontrol", &["delete", "NodeName", "n2"]).code == 0
    });
    assert_eq!(state(&c), "");
    c.crash_and_restart_controller();
    c.wait_for("the controller back", || c.run("sinfo", &["-h"]).code == 0);
    assert_eq!(state(&c), "");
    assert_eq!(c.run("sinfo", &["-h", "-N", "-o", "%N"]).stdout, "n1\n");
}

const ALL_NODES: &str = "ClusterName=dyn
SlurmctldHost=localhost
MaxNodeCount=2
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=1:00:00 State=UP
";

/// Stops agent `a` as a restart of its host's daemon would (SIGTERM) and waits for it.
fn stop_agent(mut a: std::process::Child, signal: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), signal);
    let _ = a.wait();
}

#[test]
fn an_agent_registers_its_own_node_which_takes_work_and_survives_restarts() {
    let mut c = Cluster::start_with("dynreg", ALL_NODES, &["n1"]);
    let show = |c: &Cluster, node: &str| {
        let o = c.run("scontrol", &["show", "node", node]);
        o.stdout
            .split_whitespace()
            .filter(|w| {
                [
                    "NodeName=",
                    "CPUTot=",
                    "RealMemory=",
                    "State=",
                    "Partitions=",
                ]
                .iter()
                .any(|k| w.starts_with(k))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let want = "NodeName=n2 CPUTot=2 RealMemory=1000 State=IDLE+DYNAMIC_NORM Partitions=debug";
    // slurmd -Z --conf: the controller did not know n2; the agent's registration
    // creates it, up and in the partition of Nodes=ALL.
    let conf = ["-Z", "--conf", "CPUs=2 RealMemory=1000"];
    let agent = c.start_agent_with("n2", &conf);
    c.wait_for("n2 to register itself", || show(&c, "n2") == want);
    let job = c
        .sbatch(&["-w", "n2", "-t", "10", "--wrap", "hostname"])
        .to_string();
    c.wait_for("the job to run on n2", || {
        c.run("sacct", &["-n", "-X", "-j", &job, "-o", "State,NodeList"])
            .stdout
            .split_whitespace()
            .collect::<Vec<_>>()
            == ["COMPLETED", "n2"]
    });
    // The same agent started again registers again: the node is unchanged, and once.
    stop_agent(agent, nix::sys::signal::Signal::SIGTERM);
    let agent = c.start_agent_with("n2", &["-Z", "--conf", "CPUs=1 RealMemory=500"]);
    c.crash_and_restart_controller();
    c.wait_for(
        "the controller back and both agents registered again",
        || {
            show(&c, "n2") == want
                && c.run("sinfo", &["-h", "-N", "-o", "%N %P %c %t"]).stdout
                    == "n1 debug* 2 idle\nn2 debug* 2 idle\n"
        },
    );
    // MaxNodeCount=2: a third node may not join; its agent is told why.
    let third = c.start_agent_with("n3", &conf);
    let log = c.dir.join("state").join("logs").join("slurmd-n3.log");
    c.wait_for("n3's registration to be refused", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("Unable to add node, node table is full")
    });
    assert_eq!(show(&c, "n3"), "");
    stop_agent(third, nix::sys::signal::Signal::SIGINT);
    stop_agent(agent, nix::sys::signal::Signal::SIGINT);
}

#[test]
fn an_agent_registering_its_node_drained_leaves_it_drained_until_resumed() {
    let mut c = Cluster::start_with("dynregdrain", ALL_NODES, &["n1"]);
    let state = |c: &Cluster| {
        c.run("sinfo", &["-h", "-N", "-n", "n2", "-o", "%N %t %E"])
            .stdout
    };
    // slurmd -Z --conf "... State=DRAIN": Slurm 22.05 creates the node drained, with
    // no reason; it takes no work.
    let agent = c.start_agent_with(
        "n2",
        &["-Z", "--conf", "CPUs=2 RealMemory=1000 State=DRAIN"],
    );
    c.wait_for("n2 to register itself drained", || {
        state(&c) == "n2 drain none\n"
    });
    let job = c
        .sbatch(&["-w", "n2", "-t", "10", "--wrap", "hostname"])
        .to_string();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        c.run("squeue", &["-h", "-j", &job, "-o", "%T"]).stdout,
        "PENDING\n"
    );
    // Drained still after the controller restarts, until an operator resumes it.
    c.crash_and_restart_controller();
    c.wait_for("the controller back, n2 still drained", || {
        state(&c) == "n2 drain none\n"
    });
    let resumed = c.run("scontrol", &["update", "nodename=n2", "state=resume"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    c.wait_for("the job to run on n2 once resumed", || {
        c.run("sacct", &["-n", "-X", "-j", &job, "-o", "State,NodeList"])
            .stdout
            .split_whitespace()
            .collect::<Vec<_>>()
            == ["COMPLETED", "n2"]
    });
    stop_agent(agent, nix::sys::signal::Signal::SIGINT);
}

#[test]
fn only_an_agent_with_the_cluster_s_trust_may_register_a_node() {
    use std::os::unix::process::CommandExt;
    let c = Cluster::start_with("dynregauth", ALL_NODES, &["n1"]);
    // An ordinary user posing as an agent that registers a dynamic node: refused, and
    // no node joins.
    let socket = c.dir.join("state").join("ctld.sock");
    let body = r#"{"node":"n9","running":[],"dynamic":"NodeName=n9 CPUs=1 RealMemory=100"}"#;
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
             b=sys.argv[2].encode(); \
             s.sendall(b'POST /v1/agent/register HTTP/1.1\\r\\nHost: t\\r\\n\
Content-Type: application/json\\r\\nConnection: close\\r\\n\
Content-Length: %d\\r\\n\\r\\n' % len(b) + b); \
             r=b''.join(iter(lambda: s.recv(4096), b'')); print(r.decode())",
        ])
        .arg(&socket)
        .arg(body)
        .uid(65534)
        .gid(65534)
        .output()
        .expect("python3 runs");
    let reply = String::from_utf8_lossy(&o.stdout);
    assert!(
        reply.contains("Access/permission denied"),
        "{reply}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(c.run("sinfo", &["-h", "-N", "-o", "%N"]).stdout, "n1\n");
    // The same request from root (the agents' user) creates it.
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
             b=sys.argv[2].encode(); \
             s.sendall(b'POST /v1/agent/register HTTP/1.1\\r\\nHost: t\\r\\n\
Content-Type: application/json\\r\\nConnection: close\\r\\n\
Content-Length: %d\\r\\n\\r\\n' % len(b) + b); \
             r=b''.join(iter(lambda: s.recv(4096), b'')); print(r.decode())",
        ])
        .arg(&socket)
        .arg(body)
        .output()
        .expect("python3 runs");
    let reply = String::from_utf8_lossy(&o.stdout);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert_eq!(
        c.run("sinfo", &["-h", "-N", "-o", "%N %c"]).stdout,
        "n1 2\nn9 1\n"
    );
}

#[test]
fn a_job_that_asks_for_a_future_node_waits_as_slurms_does() {
    let c = Cluster::start_with("dynwait", ALL_NODES, &["n1"]);
    let o = c.run(
        "scontrol",
        &[
            "create",
            "nodename=n2",
            "cpus=2",
            "realmemory=1000",
            "state=future",
        ],
    );
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    // In the partition of Nodes=ALL, so accepted; it waits for the node to come.
    let job = c
        .sbatch(&["-w", "n2", "-t", "10", "--wrap", "true"])
        .to_string();
    c.wait_for("the job to wait for n2", || {
        c.run("squeue", &["-h", "-j", &job, "-o", "%T %r"]).stdout
            == "PENDING ReqNodeNotAvail, May be reserved for other job\n"
    });
}
