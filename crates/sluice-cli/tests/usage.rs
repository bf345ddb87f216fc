//! Usage errors of Sluice's own cluster commands (`sluice explain`, `sluice audit`):
//! clap's message on stderr, nothing on stdout, exit code 1 as the Slurm commands'
//! errors (clap's own code is 2); `--help` still exits 0. No cluster is needed: the
//! command line is refused before any controller is asked.

use assert_cmd::Command;

/// Runs `sluice args`: exit code, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("sluice")
        .expect("the sluice binary is built")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        // No controller anywhere: a command that got past its parsing would fail
        // differently.
        .env("SLUICE_STATE_DIR", "/nonexistent/sluice-usage-test")
        .env_remove("SLUICE_CONTROLLER")
        .output()
        .expect("sluice runs");
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

#[test]
fn explain_and_audit_usage_errors_exit_1_with_clap_s_message() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["explain"],
            "error: the following required arguments were not provided:\n  <JOB>\n\n\
             Usage: sluice explain <JOB>\n\nFor more information, try '--help'.\n",
        ),
        (
            &["explain", "--frob", "5"],
            "error: unexpected argument '--frob' found\n\n  \
             tip: to pass '--frob' as a value, use '-- --frob'\n\n\
             Usage: sluice explain [OPTIONS] <JOB>\n\nFor more information, try '--help'.\n",
        ),
        (
            &["audit", "--nosuch"],
            "error: unexpected argument '--nosuch' found\n\n  \
             tip: to pass '--nosuch' as a value, use '-- --nosuch'\n\n\
             Usage: sluice audit [OPTIONS] [JOBID]\n\nFor more information, try '--help'.\n",
        ),
        (
            &["audit", "--node", "g1", "--gpu", "x"],
            "error: invalid value 'x' for '--gpu <INDEX>': invalid digit found in string\n\n\
             For more information, try '--help'.\n",
        ),
        (
            &["audit", "--gpu", "1"],
            "error: the following required arguments were not provided:\n  --node <NODE>\n\n\
             Usage: sluice audit --node <NODE> --gpu <INDEX> [JOBID]\n\n\
             For more information, try '--help'.\n",
        ),
    ];
    for (args, stderr) in cases {
        assert_eq!(
            run(args),
            (Some(1), String::new(), stderr.to_string()),
            "sluice {}",
            args.join(" ")
        );
    }
}

#[test]
fn help_and_version_still_exit_0() {
    for args in [
        &["explain", "--help"][..],
        &["audit", "--help"],
        &["--version"],
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!((code, stderr.as_str()), (Some(0), ""), "sluice {args:?}");
        assert!(!stdout.is_empty(), "sluice {args:?}");
    }
    assert_eq!(
        run(&["--version"]).1,
        format!("sluice {}\n", env!("CARGO_PKG_VERSION"))
    );
}
