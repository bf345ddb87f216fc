//! `sbatch --export=NONE`: the job runs in its owner's login environment (as Slurm
//! 22.05's slurmd gets it, `su - USER -c env` style), not the submitter's, with the
//! job's own variables on top.

use std::collections::BTreeMap;

use crate::harness::Cluster;
use crate::SMALL;

#[test]
fn export_none_gives_the_job_its_owners_login_environment() {
    let c = Cluster::start("export-none", SMALL);
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap();
    // The submitter's own variables (cargo's, here) stay behind; the one named after
    // NONE goes along.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let job = c.sbatch(&["--export=NONE,GIVEN=yes", "-o", "env.out", "--wrap", "env"]);
    assert_eq!(c.wait_ended(job), "COMPLETED");
    let out = std::fs::read_to_string(c.work().join("env.out")).unwrap();
    let env: BTreeMap<&str, &str> = out.lines().filter_map(|l| l.split_once('=')).collect();
    let name = me.name.as_str();
    let home = me.dir.display().to_string();
    let shell = me.shell.display().to_string();
    let mail = format!("/var/mail/{name}");
    for (k, v) in [
        ("HOME", home.as_str()),
        ("USER", name),
        ("LOGNAME", name),
        ("SHELL", shell.as_str()),
        ("MAIL", mail.as_str()),
        ("GIVEN", "yes"),
        ("ENVIRONMENT", "BATCH"),
        ("HOSTNAME", "n1"),
        ("SLURM_GET_USER_ENV", "1"),
        ("SLURM_EXPORT_ENV", "NONE,GIVEN=yes"),
        ("SLURM_JOB_ID", job.to_string().as_str()),
    ] {
        assert_eq!(env.get(k).copied(), Some(v), "{k} in:\n{out}");
    }
    // A login PATH, not the submitter's (which names the cluster's command links).
    let path = env.get("PATH").copied().unwrap_or_default();
    assert!(path.contains("/usr/bin"), "{path}");
    assert!(!path.contains("state/bin"), "{path}");
    assert_eq!(env.get("CARGO_MANIFEST_DIR"), None, "{out}");
}
