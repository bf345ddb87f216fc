//! srun's standard input reaches every task, as with Slurm's default (`--input=all`),
//! or only the task `--input=N` names.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::Cluster;
use crate::SMALL;

/// Runs `srun -N 2 -n 2 -l ARGS bash -c 'wc -l; echo done'` with 20000 lines on its
/// standard input: its sorted output lines, stderr and exit status.
fn count_lines(c: &Cluster, args: &[&str]) -> (Vec<String>, String, Option<i32>) {
    let mut child = Command::new(c.dir.join("state/bin/srun"))
        .args(["-N", "2", "-n", "2", "-l"])
        .args(args)
        .args(["bash", "-c", "wc -l; echo done"])
        .current_dir(c.work())
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // More than one chunk's worth, so that order and completeness both matter.
    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    // (srun --input=none never reads it: it may end first.)
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(lines.as_bytes());
    drop(input);
    let o = child.wait_with_output().unwrap();
    let mut out: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    (
        out,
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code(),
    )
}

#[test]
fn srun_forwards_its_standard_input_to_every_task_or_the_one_asked() {
    let c = Cluster::start("stdin", SMALL);
    let lines = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert_eq!(
        count_lines(&c, &[]),
        (
            lines(&["0: 20000", "0: done", "1: 20000", "1: done"]),
            String::new(),
            Some(0)
        )
    );
    assert_eq!(
        count_lines(&c, &["--input=1"]),
        (
            lines(&["0: 0", "0: done", "1: 20000", "1: done"]),
            String::new(),
            Some(0)
        )
    );
    assert_eq!(
        count_lines(&c, &["--input=none"]),
        (
            lines(&["0: 0", "0: done", "1: 0", "1: done"]),
            String::new(),
            Some(0)
        )
    );
}
