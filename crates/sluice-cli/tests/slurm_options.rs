//! The Slurm commands' command lines, walked by the one getopt_long parser
//! (`sluice_conf::getopt`): each command's option errors exactly as it prints them
//! (message and exit status), and the forms getopt_long accepts. No cluster is needed:
//! a refused line fails before any controller is asked, an accepted one fails later,
//! when the controller cannot be reached.

use assert_cmd::Command;

/// Runs `sluice args` (`sluice squeue ...` is `squeue ...`): exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("sluice")
        .expect("the sluice binary is built")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env("SLUICE_STATE_DIR", "/nonexistent/sluice-options-test")
        .env_remove("SLUICE_CONTROLLER")
        .env_remove("SLURM_JOB_ID")
        .write_stdin("")
        .output()
        .expect("sluice runs");
    (
        out.status.code(),
        String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    )
}

fn line(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

#[test]
fn option_errors_are_worded_as_each_command_words_them() {
    let cases: &[(&str, &str, i32)] = &[
        // sbatch, srun, salloc: getopt's words; unknown long options as sbatch's own.
        (
            "sbatch --no-such-option --wrap true",
            "sbatch: unrecognized option '--no-such-option'\n\
             Try \"sbatch --help\" for more information\n",
            255,
        ),
        ("sbatch -Z", "sbatch: error: invalid option -- 'Z'\n", 255),
        (
            "sbatch --time",
            "sbatch: error: option '--time' requires an argument\n",
            255,
        ),
        (
            "sbatch -t",
            "sbatch: error: option requires an argument -- 't'\n",
            255,
        ),
        (
            "sbatch --hold=yes",
            "sbatch: error: option '--hold' doesn't allow an argument\n",
            255,
        ),
        (
            "sbatch --nod 2",
            "sbatch: error: option '--nod' is ambiguous; possibilities: '--nodelist' '--nodes'\n",
            255,
        ),
        (
            "srun --bogus",
            "srun: error: unrecognized option '--bogus'\n",
            255,
        ),
        (
            "salloc -t",
            "salloc: error: option requires an argument -- 't'\n",
            255,
        ),
        // The query commands: `CMD: error: ...`, exit 1.
        (
            "squeue --bogus=1",
            "squeue: error: unrecognized option '--bogus=1'\n",
            1,
        ),
        ("squeue -z", "squeue: error: unrecognized option '-z'\n", 1),
        (
            "squeue foo",
            "squeue: error: unrecognized option 'foo'\n",
            1,
        ),
        (
            "squeue -t",
            "squeue: error: option '--states' requires an argument\n",
            1,
        ),
        (
            "squeue --state",
            "squeue: error: option '--states' requires an argument\n",
            1,
        ),
        (
            "squeue --sta",
            "squeue: error: option '--sta' is ambiguous; possibilities: '--start' '--states'\n",
            1,
        ),
        (
            "sinfo -o",
            "sinfo: error: option '-o' requires an argument\n",
            1,
        ),
        ("sinfo foo", "sinfo: error: unrecognized option 'foo'\n", 1),
        (
            "scancel -z",
            "scancel: error: unrecognized option '-z'\n",
            1,
        ),
        (
            "scancel --signal",
            "scancel: error: option '--signal' requires an argument\n",
            1,
        ),
        (
            "scancel -5",
            "scancel: error: unrecognized option '-5'\n",
            1,
        ),
        ("sacct -Xz", "sacct: error: unrecognized option '-z'\n", 1),
        (
            "sacct positional -X foo",
            "sacct: error: Unknown arguments:\nsacct: error:  positional -X foo\n",
            1,
        ),
        (
            "sacct -S",
            "sacct: error: option '-S' requires an argument\n",
            1,
        ),
        (
            "sprio --bogus",
            "sprio: error: unrecognized option '--bogus'\n",
            1,
        ),
        (
            "sprio -j",
            "sprio: error: option '-j' requires an argument\n",
            1,
        ),
        (
            "sshare -A",
            "sshare: error: option '-A' requires an argument\n",
            1,
        ),
        (
            "sshare foo",
            "sshare: error: unrecognized option 'foo'\n",
            1,
        ),
        (
            "sacctmgr -x show",
            "sacctmgr: invalid option -- 'x'\nTry \"sacctmgr --help\" for more information\n",
            1,
        ),
        (
            "sacctmgr --pars show user",
            "sacctmgr: option '--pars' is ambiguous; possibilities: '--parsable' '--parsable2'\n\
             Try \"sacctmgr --help\" for more information\n",
            1,
        ),
        // scontrol takes words that are no option as command words, as it always has.
        ("scontrol --foo", "invalid keyword: --foo\n", 1),
    ];
    for (args, stderr, code) in cases {
        assert_eq!(
            run(&line(args)),
            (Some(*code), stderr.to_string()),
            "{args}"
        );
    }
}

#[test]
fn getopt_long_forms_are_accepted_by_every_command() {
    // Abbreviated long names, clustered flags, values attached to short options,
    // `--opt=value` and `--opt value`, `--` ending the options.
    for args in [
        "sbatch --job-na=x --parti debug --wr true",
        "sbatch -Hv -Jx --wrap=true",
        "squeue --noh --form=%i",
        "squeue -hl -uroot",
        "squeue --us root -tR",
        "sinfo --Node --lo -hN",
        "scancel -bf 5",
        "scancel --sig=USR1 5 --",
        "scancel -uroot",
        "sacct -nXP -ojobid --star=now",
        "sacct --units M",
        "sprio --use=root -lw",
        "sshare -aP --acc=root",
    ] {
        let (code, stderr) = run(&line(args));
        assert!(
            code == Some(1) && stderr.contains("Unable to contact slurm controller"),
            "{args}: {code:?} {stderr}"
        );
    }
    let (code, stderr) = run(&["sprio", "--he"]);
    assert_eq!(
        (code, stderr.as_str()),
        (Some(0), ""),
        "sprio --he is --help"
    );
}
