//! Finished jobs leave the controller's memory after `MinJobAge`, as slurmctld's do:
//! `squeue` and `scontrol` forget them, `sacct` keeps them, and they stop counting
//! towards `MaxJobCount`, so a cluster takes new work however many jobs it has run.

use crate::harness::Cluster;

const CONF: &str = "ClusterName=purge
SlurmctldHost=localhost
MinJobAge=2
MaxJobCount=3
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

#[test]
fn finished_jobs_are_forgotten_after_min_job_age_but_stay_in_accounting() {
    let c = Cluster::start("purge", CONF);
    let first: Vec<u64> = (0..3).map(|_| c.sbatch(&["--wrap", "true"])).collect();
    // A fourth while three are in memory: Slurm's refusal.
    let o = c.run("sbatch", &["--wrap", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "sbatch: error: Batch job submission failed: Resource temporarily unavailable (MaxJobCount reached)\n",
            1
        )
    );
    for &j in &first {
        assert_eq!(c.wait_ended(j), "COMPLETED");
    }
    // Within MinJobAge squeue still lists them; then they are gone from it.
    let listed = |c: &Cluster| c.run("squeue", &["-h", "-t", "all", "-o", "%i"]).stdout;
    c.wait_for("the finished jobs to leave squeue", || {
        listed(&c).is_empty()
    });
    let show = |c: &Cluster| {
        let o = c.run("scontrol", &["show", "job", &first[0].to_string()]);
        (o.stderr, o.code)
    };
    c.wait_for("the finished jobs to be forgotten", || show(&c).1 == 1);
    assert_eq!(
        show(&c),
        (
            "slurm_load_jobs error: Invalid job id specified\n".to_string(),
            1
        )
    );
    // Accounting keeps every one of them.
    let ids = first
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let rows = c
        .run(
            "sacct",
            &["-n", "-X", "-P", "-o", "JobID,State", "-j", &ids],
        )
        .stdout;
    let expected: String = first.iter().map(|j| format!("{j}|COMPLETED\n")).collect();
    assert_eq!(rows, expected);
    // And the cluster takes three more; the refused one used up no id.
    let next: Vec<u64> = (0..3).map(|_| c.sbatch(&["--wrap", "true"])).collect();
    assert_eq!(next, vec![first[2] + 1, first[2] + 2, first[2] + 3]);
}
