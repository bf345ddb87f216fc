//! Accounts and associations on a live cluster: `sacctmgr` adds them, submissions are
//! checked against them with `AccountingStorageEnforce=associations`, and they survive
//! a controller crash. Expected output is real Slurm 22.05's (the samples in
//! `tests/samples/sacctmgr/`); the cluster is named as the one they were captured on,
//! so that nothing needs normalising.

use crate::harness::{Cluster, Output};

const CONF: &str = "ClusterName=refslurm
SlurmctldHost=localhost
AccountingStorageEnforce=associations
NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES MaxTime=1:00:00 State=UP
";

/// A sample's stdout, stderr and exit status.
fn sample(name: &str) -> Output {
    let path = format!(
        "{}/tests/samples/sacctmgr/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let body = text.split_once('\n').unwrap().1;
    let at = body.rfind("--- exit ").unwrap();
    let code = body[at + 9..].trim().parse().unwrap();
    let (stdout, stderr) = match body[..at].split_once("--- stderr\n") {
        Some((o, e)) => (o.to_string(), e.to_string()),
        None => (body[..at].to_string(), String::new()),
    };
    Output {
        stdout,
        stderr,
        code,
    }
}

#[test]
fn associations_decide_submissions_and_survive_a_controller_crash() {
    let mut c = Cluster::start_with("accounts", CONF, &["n1"]);
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    // The owner of the cluster is its administrator.
    let o = c.run(
        "sacctmgr",
        &[
            "-i",
            "add",
            "account",
            "physics",
            "Description=Physics",
            "Organization=sci",
        ],
    );
    assert_eq!(o, sample("009_add_account"));
    let o = c.run("sacctmgr", &["-i", "add", "user", &me, "account=physics"]);
    let association = format!("  U = {me:<9.9} A = physics    C = refslurm  \n");
    let expected = if me == "root" {
        // root exists from the start (with its association under root).
        format!(" Associations =\n{association} Non Default Settings\n")
    } else {
        format!(" Adding User(s)\n  {me}\n Associations =\n{association} Non Default Settings\n")
    };
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (expected.as_str(), "", 0)
    );

    // Without --account a job gets the user's default account; with it, that one.
    let default_account = if me == "root" { "root" } else { "physics" };
    let plain = c.sbatch(&["-H", "--wrap", "true"]);
    let named = c.sbatch(&["-H", "-A", "physics", "--wrap", "true"]);
    let accounts = || {
        c.run("squeue", &["-h", "-o", "%i %a %q", "-t", "PD"])
            .stdout
    };
    // Held, neither has a start time: the latest first, as Slurm's squeue lists them.
    let expected = format!("{named} physics normal\n{plain} {default_account} normal\n");
    assert_eq!(c.settle(&expected, accounts), expected);
    let acct = c.run(
        "sacct",
        &["-n", "-X", "-P", "-o", "Account", "-j", &named.to_string()],
    );
    assert_eq!(acct.stdout, "physics\n");

    // An account the user has no association with is refused, as Slurm refuses it,
    // and uses no job id.
    let refused = |c: &Cluster| {
        let o = c.run("sbatch", &["-A", "nosuch", "--wrap", "true"]);
        assert_eq!(
            (o.stdout.as_str(), o.stderr.as_str(), o.code),
            (
                "",
                "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n",
                1
            )
        );
    };
    refused(&c);
    let next = c.sbatch(&["-H", "--wrap", "true"]);
    assert_eq!(next, named + 1, "the refusal used no job id");

    let assoc = format!(
        "Cluster|Account|User|Partition|Share|Priority|GrpJobs|GrpTRES|GrpSubmit|GrpWall|GrpTRESMins|MaxJobs|MaxTRES|MaxTRESPerNode|MaxSubmit|MaxWall|MaxTRESMins|QOS|Def QOS|GrpTRESRunMins\n\
         refslurm|root|||1|||||||||||||normal||\n\
         refslurm|root|root||1|||||||||||||normal||\n\
         refslurm|physics|||1|||||||||||||normal||\n\
         refslurm|physics|{me}||1|||||||||||||normal||\n"
    );
    let show = |c: &Cluster| c.run("sacctmgr", &["show", "assoc", "-P"]);
    assert_eq!(show(&c).stdout, assoc);

    // Killed outright and restarted, the controller still knows them.
    c.crash_and_restart_controller();
    c.wait_for("the controller to answer again", || show(&c).code == 0);
    assert_eq!(show(&c).stdout, assoc);
    refused(&c);
    c.sbatch(&["-H", "-A", "physics", "--wrap", "true"]);
    // And a deletion is refused while jobs of the account are pending.
    let o = c.run("sacctmgr", &["-i", "delete", "account", "physics"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with(" Error with request: Job(s) active, cancel job(s) before remove\n"),
        "{}",
        o.stderr
    );
}

#[test]
fn modifying_the_root_account_lists_it_without_a_parent() {
    let c = Cluster::start("rootqos", CONF);
    // As real Slurm 22.05 lists it (compat scenario 155): the root account alone,
    // then the associations that take the change from it.
    let o = c.run(
        "sacctmgr",
        &["-i", "modify", "account", "root", "set", "qos=normal"],
    );
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            " Modified account associations...\n  C = refslurm   A = root\n  \
             C = refslurm   A = root                 U = root     \n",
            "",
            0
        )
    );
}
