//! The Slurm commands' command lines, walked by the one getopt_long parser
//! (`sluice_conf::getopt`): each command's option errors exactly as real Slurm 22.05
//! prints them (message and exit status), and the forms getopt_long accepts. No
//! cluster is needed: a refused line fails before any controller is asked, an
//! accepted one fails later, when the controller cannot be reached.
//!
//! Every expected text here is real Slurm's: Debian's 22.05.8 commands (`/usr/bin`),
//! run by name with a `slurm.conf` and no daemon (`../shared/tools/real-slurm`), print
//! exactly these bytes; `compat/scenarios/019-option-errors.scn` replays them against
//! real Slurm in the differential suite.

use std::path::Path;

use assert_cmd::Command;

/// What a command printed and its exit status.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `program args` with `stdin`, where `program` is `sluice` (then `args` starts
/// with the Slurm command: `sluice squeue ...` is `squeue ...`) or a path that is a link
/// to it.
fn run_as(program: &Path, args: &[&str], stdin: &str) -> Ran {
    let out = Command::new(program)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env("SLUICE_STATE_DIR", "/nonexistent/sluice-options-test")
        .env_remove("SLUICE_CONTROLLER")
        .env_remove("SLURM_JOB_ID")
        .write_stdin(stdin)
        .output()
        .expect("sluice runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

fn sluice() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("sluice")
}

/// Runs `sluice args`: exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let r = run_as(&sluice(), args, "");
    (r.code, r.stderr)
}

fn line(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// Real Slurm 22.05.8's answers: command line, exit status, standard error (standard
/// output is empty). An unknown or ambiguous long option is quoted as typed, `=value`
/// included; a missing or unwanted value names the option in full; every command but
/// sacct adds its `Try "CMD --help"` line; none says `error:`. The job commands exit
/// 255, the others 1.
const REAL: &[(&str, i32, &str)] = &[
        ("sbatch --no-such-option --wrap true", 255, "sbatch: unrecognized option '--no-such-option'\nTry \"sbatch --help\" for more information\n"),
        ("sbatch --foo=bar --wrap true", 255, "sbatch: unrecognized option '--foo=bar'\nTry \"sbatch --help\" for more information\n"),
        ("sbatch -Z", 255, "sbatch: invalid option -- 'Z'\nTry \"sbatch --help\" for more information\n"),
        ("sbatch -t", 255, "sbatch: option requires an argument -- 't'\nTry \"sbatch --help\" for more information\n"),
        ("sbatch --time", 255, "sbatch: option '--time' requires an argument\nTry \"sbatch --help\" for more information\n"),
        ("sbatch --hold=yes", 255, "sbatch: option '--hold' doesn't allow an argument\nTry \"sbatch --help\" for more information\n"),
        ("sbatch --nod 2", 255, "sbatch: option '--nod' is ambiguous; possibilities: '--nodefile' '--nodelist' '--nodes'\nTry \"sbatch --help\" for more information\n"),
        ("sbatch --label", 255, "sbatch: unrecognized option '--label'\nTry \"sbatch --help\" for more information\n"),
        ("srun --bogus", 255, "srun: unrecognized option '--bogus'\nTry \"srun --help\" for more information\n"),
        ("srun --bogus=1 true", 255, "srun: unrecognized option '--bogus=1'\nTry \"srun --help\" for more information\n"),
        ("srun -z", 255, "srun: invalid option -- 'z'\nTry \"srun --help\" for more information\n"),
        ("srun -t", 255, "srun: option requires an argument -- 't'\nTry \"srun --help\" for more information\n"),
        ("srun --time", 255, "srun: option '--time' requires an argument\nTry \"srun --help\" for more information\n"),
        ("srun --nod 2", 255, "srun: option '--nod' is ambiguous; possibilities: '--nodefile' '--nodelist' '--nodes'\nTry \"srun --help\" for more information\n"),
        ("srun --hold=1", 255, "srun: option '--hold' doesn't allow an argument\nTry \"srun --help\" for more information\n"),
        ("srun --array=1-2 true", 255, "srun: unrecognized option '--array=1-2'\nTry \"srun --help\" for more information\n"),
        ("salloc --bogus", 255, "salloc: unrecognized option '--bogus'\nTry \"salloc --help\" for more information\n"),
        ("salloc -z", 255, "salloc: invalid option -- 'z'\nTry \"salloc --help\" for more information\n"),
        ("salloc -t", 255, "salloc: option requires an argument -- 't'\nTry \"salloc --help\" for more information\n"),
        ("salloc --time", 255, "salloc: option '--time' requires an argument\nTry \"salloc --help\" for more information\n"),
        ("salloc --nod 2", 255, "salloc: option '--nod' is ambiguous; possibilities: '--nodefile' '--nodelist' '--nodes'\nTry \"salloc --help\" for more information\n"),
        ("salloc --hold=1", 255, "salloc: option '--hold' doesn't allow an argument\nTry \"salloc --help\" for more information\n"),
        ("salloc --output=x", 255, "salloc: unrecognized option '--output=x'\nTry \"salloc --help\" for more information\n"),
        ("squeue --bogus", 1, "squeue: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n"),
        ("squeue --bogus=1", 1, "squeue: unrecognized option '--bogus=1'\nTry \"squeue --help\" for more information\n"),
        ("squeue -z", 1, "squeue: invalid option -- 'z'\nTry \"squeue --help\" for more information\n"),
        ("squeue -hz", 1, "squeue: invalid option -- 'z'\nTry \"squeue --help\" for more information\n"),
        ("squeue -o", 1, "squeue: option requires an argument -- 'o'\nTry \"squeue --help\" for more information\n"),
        ("squeue --format", 1, "squeue: option '--format' requires an argument\nTry \"squeue --help\" for more information\n"),
        ("squeue --state", 1, "squeue: option '--states' requires an argument\nTry \"squeue --help\" for more information\n"),
        ("squeue --sta", 1, "squeue: option '--sta' is ambiguous; possibilities: '--start' '--states'\nTry \"squeue --help\" for more information\n"),
        ("squeue --sta=R", 1, "squeue: option '--sta=R' is ambiguous; possibilities: '--start' '--states'\nTry \"squeue --help\" for more information\n"),
        ("squeue --noheader=1", 1, "squeue: option '--noheader' doesn't allow an argument\nTry \"squeue --help\" for more information\n"),
        ("sinfo --bogus=1", 1, "sinfo: unrecognized option '--bogus=1'\nTry \"sinfo --help\" for more information\n"),
        ("sinfo -z", 1, "sinfo: invalid option -- 'z'\nTry \"sinfo --help\" for more information\n"),
        ("sinfo -o", 1, "sinfo: option requires an argument -- 'o'\nTry \"sinfo --help\" for more information\n"),
        ("sinfo --format", 1, "sinfo: option '--format' requires an argument\nTry \"sinfo --help\" for more information\n"),
        ("sinfo --sta", 1, "sinfo: option '--states' requires an argument\nTry \"sinfo --help\" for more information\n"),
        ("sinfo --n", 1, "sinfo: option '--n' is ambiguous; possibilities: '--nodes' '--noconvert' '--noheader'\nTry \"sinfo --help\" for more information\n"),
        ("sinfo --noheader=1", 1, "sinfo: option '--noheader' doesn't allow an argument\nTry \"sinfo --help\" for more information\n"),
        ("scancel --bogus=1", 1, "scancel: unrecognized option '--bogus=1'\nTry \"scancel --help\" for more information\n"),
        ("scancel -z", 1, "scancel: invalid option -- 'z'\nTry \"scancel --help\" for more information\n"),
        ("scancel -5", 1, "scancel: invalid option -- '5'\nTry \"scancel --help\" for more information\n"),
        ("scancel -s", 1, "scancel: option requires an argument -- 's'\nTry \"scancel --help\" for more information\n"),
        ("scancel --signal", 1, "scancel: option '--signal' requires an argument\nTry \"scancel --help\" for more information\n"),
        ("scancel --s", 1, "scancel: option '--s' is ambiguous; possibilities: '--sibling' '--signal' '--state'\nTry \"scancel --help\" for more information\n"),
        ("scancel --batch=1", 1, "scancel: option '--batch' doesn't allow an argument\nTry \"scancel --help\" for more information\n"),
        ("sacct --bogus=1", 1, "sacct: unrecognized option '--bogus=1'\n"),
        ("sacct -z", 1, "sacct: invalid option -- 'z'\n"),
        ("sacct -Xz", 1, "sacct: invalid option -- 'z'\n"),
        ("sacct -S", 1, "sacct: option requires an argument -- 'S'\n"),
        ("sacct --format", 1, "sacct: option '--format' requires an argument\n"),
        ("sacct --s", 1, "sacct: option '--s' is ambiguous; possibilities: '--state' '--starttime'\n"),
        ("sacct --noheader=1", 1, "sacct: option '--noheader' doesn't allow an argument\n"),
        ("scontrol --foo", 1, "scontrol: unrecognized option '--foo'\nTry \"scontrol --help\" for more information\n"),
        ("scontrol --bogus=1", 1, "scontrol: unrecognized option '--bogus=1'\nTry \"scontrol --help\" for more information\n"),
        ("scontrol -z", 1, "scontrol: invalid option -- 'z'\nTry \"scontrol --help\" for more information\n"),
        ("scontrol -M", 1, "scontrol: option requires an argument -- 'M'\nTry \"scontrol --help\" for more information\n"),
        ("scontrol --clusters", 1, "scontrol: option '--clusters' requires an argument\nTry \"scontrol --help\" for more information\n"),
        ("scontrol --c", 1, "scontrol: option '--cluster' requires an argument\nTry \"scontrol --help\" for more information\n"),
        ("scontrol --oneliner=1", 1, "scontrol: option '--oneliner' doesn't allow an argument\nTry \"scontrol --help\" for more information\n"),
        ("scontrol show --bogus", 1, "scontrol: unrecognized option '--bogus'\nTry \"scontrol --help\" for more information\n"),
        ("sprio --bogus=1", 1, "sprio: unrecognized option '--bogus=1'\nTry \"sprio --help\" for more information\n"),
        ("sprio -z", 1, "sprio: invalid option -- 'z'\nTry \"sprio --help\" for more information\n"),
        ("sprio -o", 1, "sprio: option requires an argument -- 'o'\nTry \"sprio --help\" for more information\n"),
        ("sprio --format", 1, "sprio: option '--format' requires an argument\nTry \"sprio --help\" for more information\n"),
        ("sprio --n", 1, "sprio: option '--n' is ambiguous; possibilities: '--noheader' '--norm'\nTry \"sprio --help\" for more information\n"),
        ("sprio --noheader=1", 1, "sprio: option '--noheader' doesn't allow an argument\nTry \"sprio --help\" for more information\n"),
        ("sshare --bogus=1", 1, "sshare: unrecognized option '--bogus=1'\nTry \"sshare --help\" for more information\n"),
        ("sshare -z", 1, "sshare: invalid option -- 'z'\nTry \"sshare --help\" for more information\n"),
        ("sshare -A", 1, "sshare: option requires an argument -- 'A'\nTry \"sshare --help\" for more information\n"),
        ("sshare --accounts", 1, "sshare: option '--accounts' requires an argument\nTry \"sshare --help\" for more information\n"),
        ("sshare --noheader=1", 1, "sshare: option '--noheader' doesn't allow an argument\nTry \"sshare --help\" for more information\n"),
        ("sshare -q", 1, "getopt error, returned q\n"),
        ("sshare -t 5", 1, "getopt error, returned t\n"),
        ("sacctmgr --bogus=1", 1, "sacctmgr: unrecognized option '--bogus=1'\nTry \"sacctmgr --help\" for more information\n"),
        ("sacctmgr -z", 1, "sacctmgr: invalid option -- 'z'\nTry \"sacctmgr --help\" for more information\n"),
        ("sacctmgr -x show", 1, "sacctmgr: invalid option -- 'x'\nTry \"sacctmgr --help\" for more information\n"),
        ("sacctmgr --pars", 1, "sacctmgr: option '--pars' is ambiguous; possibilities: '--parsable' '--parsable2'\nTry \"sacctmgr --help\" for more information\n"),
        ("sacctmgr --noheader=1", 1, "sacctmgr: option '--noheader' doesn't allow an argument\nTry \"sacctmgr --help\" for more information\n"),
        ("sacctmgr show user -1", 1, "sacctmgr: invalid option -- '1'\nTry \"sacctmgr --help\" for more information\n"),
];

/// Real Slurm 22.05.8's answers to values its commands check before asking a
/// controller (as `REAL`).
const REAL_VALUES: &[(&str, i32, &str)] = &[
    ("squeue -t BOGUS", 1, "squeue: error: Invalid job state specified: BOGUS\nsqueue: error: Valid job states include: PENDING,RUNNING,SUSPENDED,COMPLETED,CANCELLED,FAILED,TIMEOUT,NODE_FAIL,PREEMPTED,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY,COMPLETING,CONFIGURING,RESIZING,RESV_DEL_HOLD,REQUEUED,REQUEUE_FED,REQUEUE_HOLD,REVOKED,SIGNALING,SPECIAL_EXIT,STAGE_OUT,STOPPED\n\n"),
    ("squeue -jx", 1, "squeue: error: Invalid job id: x\n"),
    ("sprio -j x", 1, "sprio: error: Invalid job id: x\n"),
    ("scancel -s FOO 5", 1, "Unknown job signal: FOO\n"),
    ("scancel -t BOGUS 5", 1, "Invalid job state specified: BOGUS\nValid job states are PENDING, RUNNING, and SUSPENDED\n"),
    ("sacct -s BOGUS", 1, "sacct: fatal: unrecognized job state value 'BOGUS'\n"),
];

#[test]
fn option_errors_are_worded_as_real_slurm_words_them() {
    for (args, code, stderr) in REAL.iter().chain(REAL_VALUES) {
        assert_eq!(
            run(&line(args)),
            (Some(*code), stderr.to_string()),
            "{args}"
        );
    }
}

#[test]
fn operands_a_command_cannot_take() {
    // squeue (and sprio) refuse a word that is no option with their usage on standard
    // output; squeue takes one as the list of a bare `-j`.
    let usage = "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n\
        \x20             [-n name] [-o format] [-p partitions] [--qos qos]\n\
        \x20             [--reservation reservation] [--sort fields] [--start]\n\
        \x20             [--step step_id] [-t states] [-u user_name] [--usage]\n\
        \x20             [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n\
        \t      [-ahjlrsv]\n";
    for (args, word) in [("squeue foo", "foo"), ("squeue -j 5 6", "6")] {
        let r = run_as(&sluice(), &line(args), "");
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr),
            (
                Some(1),
                usage,
                format!("squeue: error: Unrecognized option: {word}\n")
            ),
            "{args}"
        );
    }
    // `--usage` itself names only what squeue takes (Slurm's names options Sluice's
    // squeue refuses).
    let r = run_as(&sluice(), &["squeue", "--usage"], "");
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (
            Some(0),
            "Usage: squeue [-h] [--jobs[=job(s)]] [--json] [-l] [-n job_name(s)] [--me]\n\
             \x20             [--noconvert] [-o format] [-O format] [-p partition(s)]\n\
             \x20             [-w hostlist] [-A account(s)] [-q qos(s)] [-R name] [-i seconds]\n\
             \x20             [-S fields] [-r] [--array-unique] [-L license(s)] [-P] [-v]\n\
             \x20             [--start] [--steps[=step(s)]] [-t states] [-u user_name(s)]\n"
        )
    );
    // sinfo and sshare ignore such words; scancel takes them as job ids, after every
    // option is read.
    for args in ["sinfo foo", "sshare foo", "squeue -j 5", "sprio -j 5"] {
        let (code, stderr) = run(&line(args));
        assert!(
            code == Some(1) && stderr.contains("Unable to contact slurm controller"),
            "{args}: {code:?} {stderr}"
        );
    }
    // sacct lists them, one a line, once every option is read (real sacct, with its
    // database up, as compat/scenarios/019-option-errors.scn shows).
    assert_eq!(
        run(&line("sacct positional -X foo")),
        (
            Some(1),
            "sacct: error: Unknown arguments:\n\
             sacct: error:  positional\n\
             sacct: error:  foo\n"
                .to_string()
        )
    );
    assert_eq!(
        run(&line("sacct positional -o NoSuchField")),
        (
            Some(1),
            "sacct: error: Invalid field requested: \"NoSuchField\"\n".to_string()
        )
    );
    assert_eq!(
        run(&line("scancel abc --bogus")),
        (
            Some(1),
            "scancel: unrecognized option '--bogus'\n\
             Try \"scancel --help\" for more information\n"
                .to_string()
        )
    );
}

#[test]
fn getopt_names_the_program_as_it_was_run() {
    // glibc starts its messages with argv[0] as run; sbatch names its `#SBATCH` lines'
    // walk `sbatch`, whatever its path (real sbatch, run as /usr/bin/sbatch, does).
    let dir = std::env::temp_dir().join(format!("sluice-options-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| {
        let p = dir.join(name);
        std::os::unix::fs::symlink(sluice(), &p).unwrap();
        p
    };
    let squeue = path("squeue");
    let r = run_as(&squeue, &["--bogus"], "");
    assert_eq!(
        r.stderr,
        format!(
            "{}: unrecognized option '--bogus'\nTry \"squeue --help\" for more information\n",
            squeue.display()
        )
    );
    let sbatch = path("sbatch");
    let r = run_as(&sbatch, &["-Z"], "");
    assert_eq!(
        (r.code, r.stderr),
        (
            Some(255),
            format!(
                "{}: invalid option -- 'Z'\nTry \"sbatch --help\" for more information\n",
                sbatch.display()
            )
        )
    );
    for (script, stderr) in [
        (
            "#!/bin/sh\n#SBATCH --bogus=1\ntrue\n",
            "sbatch: unrecognized option '--bogus=1'\nTry \"sbatch --help\" for more information\n",
        ),
        (
            "#!/bin/sh\n#SBATCH --nod=2\ntrue\n",
            "sbatch: option '--nod=2' is ambiguous; possibilities: '--nodefile' '--nodelist' \
             '--nodes'\nTry \"sbatch --help\" for more information\n",
        ),
        (
            "#!/bin/sh\n#SBATCH -t\ntrue\n",
            "sbatch: option requires an argument -- 't'\nTry \"sbatch --help\" for more information\n",
        ),
        (
            "#!/bin/sh\n#SBATCH foo\ntrue\n",
            "sbatch: error: Invalid directive found in batch script: foo\n",
        ),
    ] {
        let r = run_as(&sbatch, &[], script);
        assert_eq!((r.code, r.stderr.as_str()), (Some(255), stderr), "{script}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_options_sluice_does_not_implement_are_refused_by_name() {
    // Slurm's tables are whole, so these are options (abbreviations and ambiguities as
    // Slurm's); Sluice says it does not support them rather than ignore them.
    for (args, code, stderr) in [
        (
            "sacct -t",
            1,
            "sacct: error: option -t is not supported by Sluice\n",
        ),
        (
            "srun --multi-prog conf",
            255,
            "srun: error: option --multi-prog is not supported by Sluice\n",
        ),
    ] {
        assert_eq!(run(&line(args)), (Some(code), stderr.to_string()), "{args}");
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
        "squeue --use root -tR",
        "squeue --jobs=5 -j5",
        "sinfo --Node --lon -hN",
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
    for cmd in [
        "sbatch", "srun", "salloc", "squeue", "sacct", "scancel", "sprio", "sshare",
    ] {
        let r = run_as(&sluice(), &[cmd, "-V", "--bogus"], "");
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (Some(0), "slurm 22.05.8\n", ""),
            "{cmd} -V ends the line"
        );
    }
}
