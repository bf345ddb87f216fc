//! Specialized cores (`CoreSpecCount`): kept from jobs, shown as Slurm shows them.

use crate::commands::pick;
use crate::harness::Cluster;

/// Two nodes of 2 cores, one of each kept for the system.
const SPEC: &str = "ClusterName=spec
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=1000 CoreSpecCount=1 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn specialized_cores_are_kept_from_jobs_and_shown_as_in_slurm() {
    let c = Cluster::start("corespec", SPEC);
    // As real Slurm 22.05 shows a node of 4 cores with CoreSpecCount=1 (compat
    // scenario 150), here with 2: the last core kept, CfgTRES without it.
    let keys = [
        "CPUAlloc",
        "CPUEfctv",
        "CPUTot",
        "CoreSpecCount",
        "CPUSpecList",
        "CfgTRES",
    ];
    let node = |name: &str| pick(&c.run("scontrol", &["show", "node", name]).stdout, &keys);
    assert_eq!(
        node("n1"),
        "CPUAlloc=0 CPUEfctv=1 CPUTot=2 CoreSpecCount=1 CPUSpecList=1 \
         CfgTRES=cpu=1,mem=1000M,billing=1"
    );
    let o = c.run("scontrol", &["show", "partition", "debug"]);
    assert_eq!(
        pick(&o.stdout, &["TotalCPUs", "TotalNodes"]),
        "TotalCPUs=4 TotalNodes=2"
    );
    let sinfo = || c.run("sinfo", &["-h", "-N", "-o", "%N %c %C %T"]).stdout;
    assert_eq!(sinfo(), "n1 2 0/2/0/2 idle\nn2 2 0/2/0/2 idle\n");

    // Both cores of a node: more than it gives jobs.
    let o = c.run("sbatch", &["-N1", "-n2", "--wrap", "true"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
            1
        )
    );
    // One core: the node is then allocated, its kept core counted idle.
    c.sbatch(&["-w", "n1", "-n1", "-t", "5", "--wrap", "sleep 600"]);
    let expected = "n1 2 1/1/0/2 allocated\nn2 2 0/2/0/2 idle\n";
    assert_eq!(c.settle(expected, sinfo), expected);
    assert_eq!(
        node("n1"),
        "CPUAlloc=1 CPUEfctv=1 CPUTot=2 CoreSpecCount=1 CPUSpecList=1 \
         CfgTRES=cpu=1,mem=1000M,billing=1"
    );
}
