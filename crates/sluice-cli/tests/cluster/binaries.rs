//! The three binaries `sluice up` puts to work: the Slurm commands' names link to
//! `sluice-commands` (the commands alone), each job's supervisor runs from
//! `sluice-stepd` (the supervisor alone, named `slurmstepd` as Slurm's), and the
//! daemons are `sluice` itself.

use std::path::PathBuf;

use crate::harness::{supervisors_of, Cluster};

#[test]
fn commands_link_to_the_commands_binary_and_a_jobs_supervisor_runs_from_its_own() {
    let c = Cluster::start("binaries", crate::SMALL);
    let state = c.dir.join("state");
    // (Paths with their links resolved, as `/proc/PID/exe` gives them.)
    let real = |path: &str| std::fs::canonicalize(path).unwrap();
    let link = |name: &str| real(state.join("bin").join(name).to_str().unwrap());
    let commands = real(env!("CARGO_BIN_EXE_sluice-commands"));
    let sluice = real(env!("CARGO_BIN_EXE_sluice"));
    for name in [
        "sbatch", "squeue", "scontrol", "sacct", "srun", "salloc", "sstat",
    ] {
        assert_eq!(link(name), commands, "{name}");
    }
    assert_eq!(link("sluice"), sluice);
    assert_eq!(link("slurmrestd"), sluice);

    // The commands work through it: a job is submitted and listed.
    let job = c.sbatch(&["--wrap", "sleep 300"]);
    assert_eq!(c.settle("RUNNING", || c.state(job)), "RUNNING");
    let listed = c.run("squeue", &["-h", "-j", &job.to_string(), "-o", "%i %T"]);
    assert_eq!(listed.stdout.trim(), format!("{job} RUNNING"));

    // Its supervisor is the supervisor's binary, under slurmstepd's name.
    let supervisors = supervisors_of(&state);
    assert_eq!(supervisors.len(), 1, "{supervisors:?}");
    let proc = PathBuf::from(format!("/proc/{}", supervisors[0]));
    let exe = std::fs::read_link(proc.join("exe")).unwrap();
    assert_eq!(exe, real(env!("CARGO_BIN_EXE_sluice-stepd")));
    let comm = std::fs::read_to_string(proc.join("comm")).unwrap();
    assert_eq!(comm.trim(), "slurmstepd");
    let argv0 = std::fs::read(proc.join("cmdline")).unwrap();
    assert!(argv0.starts_with(b"slurmstepd\0stepd\0"), "{argv0:?}");

    let cancel = c.run("scancel", &[&job.to_string()]);
    assert_eq!(cancel.code, 0, "{}", cancel.stderr);
    assert_eq!(c.wait_ended(job), "CANCELLED by 0");
}
