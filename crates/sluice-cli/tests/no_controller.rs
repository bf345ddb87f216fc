//! With no controller to ask, the Slurm commands say so in Slurm 22.05's words: the
//! listing commands name the call that failed (`slurm_load_jobs error: ...`), as tools
//! that parse their stderr expect. No cluster is needed.

use std::path::PathBuf;

/// A directory of links named for the commands, each to the `sluice` binary.
fn links() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-no-ctld-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["squeue", "sinfo", "scontrol", "sbatch"] {
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("sluice"), dir.join(name)).unwrap();
    }
    dir
}

#[test]
fn commands_without_a_controller_fail_in_slurms_words() {
    let dir = links();
    let refused = "Unable to contact slurm controller (connect failure)";
    let cases: [(&str, &[&str], String); 6] = [
        ("squeue", &[], format!("slurm_load_jobs error: {refused}\n")),
        (
            "squeue",
            &["-j", "5"],
            format!("slurm_load_jobs error: {refused}\n"),
        ),
        ("sinfo", &[], format!("slurm_load_partitions: {refused}\n")),
        (
            "scontrol",
            &["show", "job"],
            format!("slurm_load_jobs error: {refused}\n"),
        ),
        (
            "scontrol",
            &["show", "job", "5"],
            format!("slurm_load_jobs error: {refused}\n"),
        ),
        (
            "sbatch",
            &["--wrap", "true"],
            format!("sbatch: error: Batch job submission failed: {refused}\n"),
        ),
    ];
    for (cmd, args, stderr) in cases {
        let out = assert_cmd::Command::new(dir.join(cmd))
            .args(args)
            .env("SLUICE_STATE_DIR", "/nonexistent/sluice-no-controller-test")
            .env_remove("SLUICE_CONTROLLER")
            .env_remove("SLURM_CONF")
            .output()
            .expect("the command runs");
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned()
            ),
            (Some(1), String::new(), stderr),
            "{cmd} {args:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
