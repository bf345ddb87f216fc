//! Accounting limits on a live cluster (`AccountingStorageEnforce=limits`): a job over
//! its account's `GrpTRES` waits with Slurm's reason and starts once `sacctmgr` raises
//! the limit; a submission over `MaxSubmitJobs` is refused with real Slurm 22.05's
//! words (the samples in `tests/samples/limits/`).

use crate::harness::Cluster;

const CONF: &str = "ClusterName=refslurm
SlurmctldHost=localhost
AccountingStorageEnforce=associations,limits,qos
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

/// The stderr of a sample in `tests/samples/limits/`, with its job id-free lines.
fn sample_stderr(name: &str) -> String {
    let path = format!(
        "{}/tests/samples/limits/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let stderr = text.split_once("--- stderr\n").unwrap().1;
    stderr[..stderr.rfind("--- exit ").unwrap()].to_string()
}

#[test]
fn a_job_over_grp_tres_waits_until_sacctmgr_raises_the_limit() {
    let c = Cluster::start_with("acctlimits", CONF, &["n1"]);
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    let sacctmgr = |args: &[&str]| {
        let o = c.run("sacctmgr", args);
        assert_eq!(o.code, 0, "sacctmgr {args:?}: {}", o.stderr);
    };
    sacctmgr(&["-i", "add", "account", "physics", "grptres=cpu=1"]);
    sacctmgr(&[
        "-i",
        "add",
        "user",
        &me,
        "account=physics",
        "maxsubmitjobs=3",
    ]);

    // physics may hold one CPU: the second job waits with AssocGrpCpuLimit (as in
    // sample 017), on a node with a CPU to spare.
    let first = c.sbatch(&["-A", "physics", "-o", "/dev/null", "--wrap", "sleep 300"]);
    let second = c.sbatch(&["-A", "physics", "-o", "/dev/null", "--wrap", "sleep 300"]);
    let queue = || c.run("squeue", &["-h", "-o", "%i %a %t %r"]).stdout;
    // (squeue lists pending jobs first, as Slurm's does.)
    let expected = format!("{second} physics PD AssocGrpCpuLimit\n{first} physics R None\n");
    assert_eq!(c.settle(&expected, queue), expected);

    // A third job is accepted (MaxSubmitJobs=3); a fourth is refused as Slurm does.
    let third = c.sbatch(&["-H", "-A", "physics", "-o", "/dev/null", "--wrap", "true"]);
    let o = c.run(
        "sbatch",
        &["-H", "-A", "physics", "-o", "/dev/null", "--wrap", "true"],
    );
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        ("", sample_stderr("031_max_submit_second").as_str(), 1)
    );

    // Raised to two CPUs, the held job starts.
    sacctmgr(&["-i", "modify", "account", "physics", "set", "grptres=cpu=2"]);
    let expected = format!(
        "{third} physics PD JobHeldUser\n{first} physics R None\n{second} physics R None\n"
    );
    assert_eq!(c.settle(&expected, queue), expected);
}
