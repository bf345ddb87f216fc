//! Multifactor priority on a live cluster: usage charged by the decay thread makes
//! fair-share put an unused account's job ahead of a busy account's older one, as
//! `sprio` and `sshare` show, and the queue follows it.

use crate::harness::Cluster;

/// One node of 2 CPUs; fair-share, job size, partition and QOS weights (no age, so
/// that priorities do not move while the test looks); the decay thread every second.
const CONF: &str = "ClusterName=prio
SlurmctldHost=localhost
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityWeightQOS=2000
PriorityCalcPeriod=0:01
";

#[test]
fn fair_share_puts_the_unused_account_first() {
    let c = Cluster::start_with("priority", CONF, &["n1"]);
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    for args in [
        vec!["-i", "add", "account", "heavy,light"],
        vec!["-i", "add", "user", &me, "account=heavy,light"],
    ] {
        let o = c.run("sacctmgr", &args);
        assert_eq!(o.code, 0, "sacctmgr {args:?}: {}", o.stderr);
    }
    // heavy's job takes the node, and the decay thread charges it.
    let busy = c.sbatch(&["-A", "heavy", "-n", "2", "--wrap", "sleep 600"]);
    c.wait_for("heavy to have usage", || {
        let o = c.run("sshare", &["-A", "heavy", "-P", "-n"]);
        o.stdout.split('|').nth(4).is_some_and(|u| u != "0")
    });
    // Both accounts then queue a whole-node job; heavy's is older.
    let older = c.sbatch(&["-A", "heavy", "-n", "2", "--wrap", "true"]);
    let newer = c.sbatch(&["-A", "light", "-n", "2", "--wrap", "sleep 1"]);
    // Fair Tree: root's own user and light are unused (tied first), heavy is last of
    // three users: 1/3 of 10000. Job size: the whole machine, 1000; partition 1000.
    let expected = format!(
        "  JOBID   PRIORITY  FAIRSHARE    JOBSIZE  PARTITION        QOS\n\
         {older:>7}       5333       3333       1000       1000          0\n\
         {newer:>7}      12000      10000       1000       1000          0\n"
    );
    let sprio = || {
        c.run("sprio", &["-o", "%.7i %.10Y %.10F %.10J %.10P %.10Q"])
            .stdout
    };
    assert_eq!(c.settle(&expected, sprio), expected);
    // sshare: light has no usage and its user the full factor.
    let o = c.run("sshare", &["-A", "light", "-a", "-P"]);
    assert_eq!(
        o.stdout,
        format!(
            "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\n\
             light||1|0.333333|0|0.000000|\n\
             \x20light|{me}|1|1.000000|0|0.000000|1.000000\n"
        )
    );
    // With -l: LevelFS infinite (no usage), no running jobs' TRES-minutes.
    let o = c.run("sshare", &["-A", "light", "-a", "-l", "-P", "-n"]);
    let idle = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0";
    assert_eq!(
        o.stdout,
        format!(
            "light||1|0.333333|0|0.000000|0.000000||inf||{idle}\n\
             \x20light|{me}|1|1.000000|0|0.000000|0.000000|1.000000|inf||{idle}\n"
        )
    );
    // squeue shows the same priorities, highest first.
    let o = c.run("squeue", &["-h", "-t", "PD", "-o", "%i %Q"]);
    assert_eq!(o.stdout, format!("{newer} 12000\n{older} 5333\n"));
    // The node frees: light's job runs first, heavy's only after it.
    assert_eq!(c.run("scancel", &[&busy.to_string()]).code, 0);
    assert_eq!(c.wait_ended(newer), "COMPLETED");
    assert_eq!(c.wait_ended(older), "COMPLETED");
    let times = |job: u64| {
        c.run(
            "sacct",
            &["-n", "-X", "-P", "-o", "Start,End", "-j", &job.to_string()],
        )
        .stdout
    };
    let (newer_end, older_start) = (times(newer), times(older));
    let newer_end = newer_end.trim().split('|').nth(1).unwrap().to_string();
    let older_start = older_start.split('|').next().unwrap().to_string();
    assert!(
        older_start >= newer_end,
        "heavy's job started at {older_start}, before light's ended at {newer_end}"
    );
    // It accrued age from its submission (eligible at once).
    let o = c.run("scontrol", &["show", "job", &older.to_string()]);
    let field = |name: &str| {
        o.stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_string))
            .unwrap()
    };
    assert_eq!(field("AccrueTime"), field("SubmitTime"));
}
