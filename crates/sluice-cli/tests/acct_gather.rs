//! Usage gathering's settings refused at daemon start (issue 23's bad input): an
//! unknown `JobAcctGatherType` or a malformed `JobAcctGatherFrequency` stops `slurmd`
//! and `sluice up` before anything starts, with the file, the line and Slurm's words,
//! and exit code 1.

use assert_cmd::Command;

/// Writes a one-node slurm.conf with `extra` added in a fresh directory; its path.
fn conf(name: &str, extra: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-gather-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("slurm.conf");
    std::fs::write(
        &path,
        format!(
            "ClusterName=c\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\n\
             PartitionName=p Nodes=n1 Default=YES\n{extra}\n"
        ),
    )
    .unwrap();
    path
}

/// Runs `sluice args`: exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("sluice")
        .expect("the sluice binary is built")
        .args(args)
        .env_remove("SLUICE_CONTROLLER")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .expect("sluice runs");
    (
        out.status.code(),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

#[test]
fn an_unknown_gather_type_or_a_malformed_frequency_stops_the_daemons() {
    let cases = [
        (
            "type",
            "JobAcctGatherType=jobacct_gather/bogus",
            "slurm.conf:5: cannot create jobacct_gather context for jobacct_gather/bogus",
        ),
        (
            "freq",
            "JobAcctGatherFrequency=task=abc",
            "slurm.conf:5: Invalid JobAcctGatherFrequency specification: task=abc",
        ),
    ];
    for (name, line, said) in cases {
        let path = conf(name, line);
        let p = path.to_str().unwrap();
        let (code, err) = run(&["agent", "-D", "-f", p, "-N", "n1"]);
        assert_eq!(code, Some(1), "slurmd: {err}");
        assert!(err.starts_with("slurmd: error: "), "{err}");
        assert!(err.contains(said), "slurmd: {err}");
        let state = path.parent().unwrap().join("state");
        let (code, err) = run(&["up", "--config", p, "--state-dir", state.to_str().unwrap()]);
        assert_eq!(code, Some(1), "sluice up: {err}");
        assert!(err.contains(said), "sluice up: {err}");
        // Nothing was started.
        assert!(
            !state.join("logs").exists(),
            "sluice up started before refusing"
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
    // Slurm's own values start nothing wrong.
    let path = conf(
        "ok",
        "JobAcctGatherType=jobacct_gather/none\nJobAcctGatherFrequency=task=10,energy=0",
    );
    let (code, err) = run(&["agent", "-D", "-f", path.to_str().unwrap(), "-N", "nobody"]);
    // Refused for the unknown node, past the gathering settings.
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a node of"), "{err}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
