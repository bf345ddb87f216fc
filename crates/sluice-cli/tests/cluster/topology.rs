//! Topology-aware placement on a live cluster: `TopologyPlugin` with the topology.conf
//! next to the slurm.conf, `--switches` and `--segment`.

use crate::harness::Cluster;

/// Four 2-CPU nodes; `plugin` names the topology.
fn conf(plugin: &str) -> String {
    format!(
        "ClusterName=topo
SlurmctldHost=localhost
TopologyPlugin={plugin}
NodeName=n[1-4] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-4] Default=YES MaxTime=1:00:00 State=UP
"
    )
}

/// The nodes squeue shows for a running job, once it runs.
fn nodes_of(c: &Cluster, job: u64) -> String {
    let mut out = String::new();
    c.wait_for("the job to run", || {
        let o = c.run("squeue", &["-h", "-j", &job.to_string(), "-o", "%t %N"]);
        out = o.stdout.trim().to_string();
        out.starts_with("R ")
    });
    out["R ".len()..].to_string()
}

/// n1 and n2 hang off leaf switch s0, n3 and n4 off s1. With n1 busy, a two-node job
/// takes both nodes of s1 rather than the two lowest free nodes (n2, n3) across both
/// switches; a job allowed one switch at most, wanting three nodes, waits.
#[test]
fn a_two_node_job_takes_the_nodes_of_one_switch() {
    let c = Cluster::start_files(
        "tree",
        &conf("topology/tree"),
        &[(
            "topology.conf",
            "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n",
        )],
    );
    let busy = c.sbatch(&["-w", "n1", "-c", "2", "--wrap", "sleep 600"]);
    assert_eq!(nodes_of(&c, busy), "n1");
    let pair = c.sbatch(&["-N", "2", "-c", "2", "--wrap", "sleep 600"]);
    assert_eq!(nodes_of(&c, pair), "n[3-4]");
    c.run("scancel", &[&pair.to_string()]);
    let three = c.sbatch(&["-N", "3", "--switches=1@10:00", "--wrap", "true"]);
    let state = c.settle("PD", || {
        c.run("squeue", &["-h", "-j", &three.to_string(), "-o", "%t"])
            .stdout
            .trim()
            .to_string()
    });
    assert_eq!(
        state, "PD",
        "three nodes exist free, but not under one switch"
    );
    c.run("scancel", &[&busy.to_string(), &three.to_string()]);
}

/// Blocks of two nodes (b1 = n[1-2], b2 = n[3-4]). With n1 and n3 busy a two-node job
/// with `--segment=1` takes one node from each block; with `--segment=2` it needs a
/// whole free block and waits. A segment larger than a block is refused.
#[test]
fn segments_stay_inside_blocks() {
    let c = Cluster::start_files(
        "block",
        &conf("topology/block"),
        &[(
            "topology.conf",
            "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2,4\n",
        )],
    );
    let busy = c.sbatch(&["-N", "2", "-w", "n[1,3]", "-c", "2", "--wrap", "sleep 600"]);
    assert_eq!(nodes_of(&c, busy), "n[1,3]");
    let singles = c.sbatch(&["-N", "2", "--segment=1", "--wrap", "sleep 600"]);
    assert_eq!(nodes_of(&c, singles), "n[2,4]");
    c.run("scancel", &[&singles.to_string()]);
    c.wait_ended(singles);
    let whole = c.sbatch(&["-N", "2", "--segment=2", "--wrap", "sleep 600"]);
    let state = c
        .run("squeue", &["-h", "-j", &whole.to_string(), "-o", "%t"])
        .stdout;
    assert_eq!(state.trim(), "PD");
    let refused = c.run("sbatch", &["-N", "2", "--segment=4", "--wrap", "true"]);
    assert_eq!(
        (refused.code, refused.stderr.as_str()),
        (
            1,
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
        )
    );
    c.run("scancel", &[&busy.to_string(), &whole.to_string()]);
}
