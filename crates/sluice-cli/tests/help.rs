//! `--help` and `--usage` of every Slurm command Sluice provides, run by its name (a
//! link to the `sluice` binary) as a user types it: exit status 0, the text on standard
//! output, nothing on standard error, and Slurm's first line. No cluster is needed:
//! help is printed before any controller is asked (the controller named here does not
//! exist, so a command that asked would fail).

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// What a command printed and its exit status.
#[derive(Debug, PartialEq)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(program: &Path, args: &[&str]) -> Ran {
    let out = Command::new(program)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env("SLUICE_STATE_DIR", "/nonexistent/sluice-help-test")
        .env_remove("SLUICE_CONTROLLER")
        .env_remove("SLURM_JOB_ID")
        .output()
        .expect("the command runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// A directory of links named for the Slurm commands, each to the `sluice` binary.
/// `tag` keeps each test's directory its own (tests run side by side).
fn links(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-help-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in COMMANDS {
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("sluice"), dir.join(name)).unwrap();
    }
    dir
}

const COMMANDS: [&str; 14] = [
    "sbatch", "srun", "salloc", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sacctmgr",
    "sprio", "sshare", "sdiag", "sreport", "sstat",
];

/// The first line's start, as real Slurm 22.05's: `Usage: CMD`, except where the
/// command prints its own layout (scontrol's and sacctmgr's command lists, sacct's
/// option list).
fn first_line(cmd: &str, option: &str) -> String {
    match (cmd, option) {
        ("scontrol" | "sacctmgr", _) => format!("{cmd} [<OPTION>] [<COMMAND>]\n"),
        ("sacct", "--help") => "sacct [<OPTION>]\n".into(),
        ("sstat", "--help") => "sstat [<OPTION>] -j <job(.stepid)>\n".into(),
        _ => format!("Usage: {cmd} "),
    }
}

#[test]
fn every_command_answers_help_and_usage_on_stdout_with_status_0() {
    let dir = links("every");
    for cmd in COMMANDS {
        for option in ["--help", "--usage"] {
            let r = run(&dir.join(cmd), &[option]);
            assert_eq!(
                (r.code, r.stderr.as_str()),
                (Some(0), ""),
                "{cmd} {option}: {r:?}"
            );
            assert!(
                r.stdout.starts_with(&first_line(cmd, option)),
                "{cmd} {option}: {}",
                r.stdout
            );
            assert!(r.stdout.ends_with('\n'), "{cmd} {option}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_job_commands_help_shows_slurms_groups_and_what_sluice_refuses() {
    let dir = links("groups");
    let sbatch = run(&dir.join("sbatch"), &["--help"]).stdout;
    assert!(sbatch.starts_with(
        "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]\n\n\
         Parallel run options:\n"
    ));
    for line in [
        "\n  -p, --partition=partition   ",
        "\n  -t, --time=minutes          ",
        "\n      --wrap=command          ",
        "\nConstraint options:\n",
        "\nGPU scheduling options:\n",
        "\n  -h, --help                  ",
        "\n      --usage                 ",
        "\nNot supported by Sluice: --gid, --kill-on-invalid-dep, --mincpus, --nodefile,\n  --tmp, --uid\n",
    ] {
        assert!(
            sbatch.contains(line),
            "sbatch --help lacks {line:?}:\n{sbatch}"
        );
    }
    let srun = run(&dir.join("srun"), &["--help"]).stdout;
    assert!(srun.starts_with("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]"));
    assert!(srun.contains("\n  -l, --label    "), "{srun}");
    assert!(srun.contains(" --multi-prog,"), "{srun}");
    assert!(srun.contains("\n      --pty    "), "{srun}");
    let usage = run(&dir.join("srun"), &["--usage"]).stdout;
    assert!(usage.ends_with(" executable [args...]\n"), "{usage}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dash_h_is_help_where_slurms_is_and_noheader_where_it_is_that() {
    let dir = links("dash_h");
    for cmd in ["sbatch", "srun", "salloc", "sacct", "scontrol"] {
        assert_eq!(
            run(&dir.join(cmd), &["-h"]),
            run(&dir.join(cmd), &["--help"]),
            "{cmd} -h"
        );
    }
    // squeue's and sinfo's -h is --noheader: they go on to ask the controller (and
    // fail here, where there is none, in Slurm's words) instead of printing help.
    for (cmd, call) in [
        ("squeue", "slurm_load_jobs error"),
        ("sinfo", "slurm_load_partitions"),
    ] {
        let r = run(&dir.join(cmd), &["-h"]);
        assert_eq!(r.code, Some(1), "{cmd} -h: {r:?}");
        assert_eq!(r.stdout, "", "{cmd} -h");
        assert_eq!(
            r.stderr,
            format!("{call}: Unable to contact slurm controller (connect failure)\n")
        );
    }
    // Help ends the command line: nothing after it is read.
    let r = run(&dir.join("sbatch"), &["--help", "--bogus", "--time=x"]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
    assert_eq!(r.stdout, run(&dir.join("sbatch"), &["--help"]).stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn field_lists_and_scontrols_help_command() {
    let dir = links("fields");
    let r = run(&dir.join("sacct"), &["--helpformat"]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
    let first = r.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "Account             AllocCPUS           AllocNodes          AllocTRES          "
    );
    assert_eq!(r, run(&dir.join("sacct"), &["-e"]));
    let help = run(&dir.join("scontrol"), &["help"]);
    assert_eq!((help.code, help.stderr.as_str()), (Some(0), ""));
    assert_eq!(help, run(&dir.join("scontrol"), &["--help"]));
    assert!(help.stdout.contains("\n     show <ENTITY> [<ID>]     "));
    let _ = std::fs::remove_dir_all(&dir);
}
