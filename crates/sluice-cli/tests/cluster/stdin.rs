//! srun's standard input reaches task 0 (and only task 0), as with Slurm's default.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::Cluster;
use crate::SMALL;

#[test]
fn srun_forwards_its_standard_input_to_task_zero() {
    let c = Cluster::start("stdin", SMALL);
    let mut child = Command::new(c.dir.join("state/bin/srun"))
        .args(["-N", "2", "-n", "2", "-l", "bash", "-c", "wc -l; echo done"])
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
    let mut input = child.stdin.take().unwrap();
    input.write_all(lines.as_bytes()).unwrap();
    drop(input);
    let o = child.wait_with_output().unwrap();
    let mut out: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    out.sort();
    assert_eq!(
        (
            out,
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code()
        ),
        (
            vec![
                "0: 20000".to_string(),
                "0: done".to_string(),
                "1: 0".to_string(),
                "1: done".to_string()
            ],
            String::new(),
            Some(0)
        )
    );
}
