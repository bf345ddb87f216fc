//! The input environment variables of `sbatch`, `salloc` and `srun`: options a site or
//! a user sets once (`SBATCH_ACCOUNT=proj`, `SALLOC_PARTITION=gpu`,
//! `SLURM_KILL_BAD_EXIT=1`), read as Slurm 22.05's commands read them. They count as
//! options given before the command line and after a script's `#SBATCH` lines: the
//! command line overrides them, and they override the script.

use crate::getopt::HasArg;
use crate::options::{option_table, Command};

/// `sbatch`'s variables, each with the long option it stands for, in Slurm's order
/// (a later one of the same option wins).
const SBATCH: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_BURST_BUFFER", "bb"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DEBUG", "verbose"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SLURM_HINT", "hint"),
    ("SBATCH_HINT", "hint"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WCKEY", "wckey"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
];

/// `salloc`'s variables, as [`SBATCH`].
const SALLOC: &[(&str, &str)] = &[
    ("SALLOC_ACCOUNT", "account"),
    ("SALLOC_ACCTG_FREQ", "acctg-freq"),
    ("SALLOC_BELL", "bell"),
    ("SALLOC_BURST_BUFFER", "bb"),
    ("SALLOC_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SALLOC_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SALLOC_CONTAINER", "container"),
    ("SALLOC_CONSTRAINT", "constraint"),
    ("SALLOC_CORE_SPEC", "core-spec"),
    ("SALLOC_CPU_FREQ_REQ", "cpu-freq"),
    ("SALLOC_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SALLOC_DEBUG", "verbose"),
    ("SALLOC_DELAY_BOOT", "delay-boot"),
    ("SALLOC_EXCLUSIVE", "exclusive"),
    ("SALLOC_GPUS", "gpus"),
    ("SALLOC_GPU_BIND", "gpu-bind"),
    ("SALLOC_GPU_FREQ", "gpu-freq"),
    ("SALLOC_GPUS_PER_NODE", "gpus-per-node"),
    ("SALLOC_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SALLOC_GPUS_PER_TASK", "gpus-per-task"),
    ("SALLOC_GRES", "gres"),
    ("SALLOC_GRES_FLAGS", "gres-flags"),
    ("SALLOC_IMMEDIATE", "immediate"),
    ("SALLOC_HINT", "hint"),
    ("SLURM_HINT", "hint"),
    ("SALLOC_KILL_CMD", "kill-command"),
    ("SALLOC_MEM_BIND", "mem-bind"),
    ("SALLOC_MEM_PER_CPU", "mem-per-cpu"),
    ("SALLOC_MEM_PER_GPU", "mem-per-gpu"),
    ("SALLOC_MEM_PER_NODE", "mem"),
    ("SALLOC_NETWORK", "network"),
    ("SALLOC_NO_BELL", "no-bell"),
    ("SALLOC_NO_KILL", "no-kill"),
    ("SALLOC_OVERCOMMIT", "overcommit"),
    ("SALLOC_PARTITION", "partition"),
    ("SALLOC_POWER", "power"),
    ("SALLOC_PROFILE", "profile"),
    ("SALLOC_QOS", "qos"),
    ("SALLOC_REQ_SWITCH", "switches"),
    ("SALLOC_RESERVATION", "reservation"),
    ("SALLOC_SIGNAL", "signal"),
    ("SALLOC_SPREAD_JOB", "spread-job"),
    ("SALLOC_THREAD_SPEC", "thread-spec"),
    ("SALLOC_THREADS_PER_CORE", "threads-per-core"),
    ("SALLOC_TIMELIMIT", "time"),
    ("SALLOC_USE_MIN_NODES", "use-min-nodes"),
    ("SALLOC_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SALLOC_WCKEY", "wckey"),
];

/// `srun`'s variables that ask for something of the step or job. Slurm's srun also
/// reads the variables its own allocation sets (`SLURM_JOB_ID`, `SLURM_NTASKS`,
/// `SLURM_JOB_NUM_NODES`, `SLURM_MEM_PER_CPU`, ...) to run inside it; Sluice's srun
/// reads those from the job's record instead, so they are not options here.
const SRUN: &[(&str, &str)] = &[
    ("SLURM_ACCOUNT", "account"),
    ("SLURM_CONSTRAINT", "constraint"),
    ("SRUN_CPUS_PER_TASK", "cpus-per-task"),
    ("SLURM_DEPENDENCY", "dependency"),
    ("SLURM_EXACT", "exact"),
    ("SLURM_KILL_BAD_EXIT", "kill-on-bad-exit"),
    ("SLURM_LABELIO", "label"),
    ("SLURM_OVERLAP", "overlap"),
    ("SLURM_PARTITION", "partition"),
    ("SLURM_QOS", "qos"),
    ("SLURM_RESERVATION", "reservation"),
    ("SLURM_SIGNAL", "signal"),
    ("SLURM_TIMELIMIT", "time"),
    ("SLURM_UNBUFFEREDIO", "unbuffered"),
    ("SLURM_WAIT", "wait"),
    ("SLURM_WCKEY", "wckey"),
];

/// The variables `command` reads, each with its long option.
pub fn variables(command: Command) -> &'static [(&'static str, &'static str)] {
    match command {
        Command::Sbatch => SBATCH,
        Command::Salloc => SALLOC,
        Command::Srun => SRUN,
    }
}

/// The option words the environment gives `command` (`get` reads a variable): a flag
/// whatever its value (`SBATCH_REQUEUE=1` is `--requeue`), an option with a value as
/// `--name=value`. An option that needs a value is left out when the variable is
/// empty, as no value was given.
pub fn words(command: Command, get: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let table = option_table(command);
    let mut out = Vec::new();
    for &(var, name) in variables(command) {
        let Some(value) = get(var) else { continue };
        let Some(opt) = table.iter().find(|o| o.long == name) else {
            continue;
        };
        match opt.has_arg {
            HasArg::No => out.push(format!("--{name}")),
            HasArg::Optional => out.push(format!("--{name}={value}")),
            HasArg::Required if !value.is_empty() => out.push(format!("--{name}={value}")),
            HasArg::Required => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{parse_args, JobOptions};

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn every_variable_names_an_option_its_command_has() {
        for command in [Command::Sbatch, Command::Salloc, Command::Srun] {
            for (var, name) in variables(command) {
                assert!(
                    option_table(command).iter().any(|o| o.long == *name),
                    "{var}: {} has no --{name}",
                    command.name()
                );
            }
        }
    }

    #[test]
    fn values_flags_and_empty_values() {
        let vars = [
            ("SBATCH_PARTITION", "short"),
            ("SBATCH_REQUEUE", "whatever"),
            ("SBATCH_EXCLUSIVE", "user"),
            ("SBATCH_ACCOUNT", ""),
            ("SALLOC_QOS", "high"),
        ];
        assert_eq!(
            words(Command::Sbatch, env(&vars)),
            ["--exclusive=user", "--partition=short", "--requeue"]
        );
        assert_eq!(words(Command::Salloc, env(&vars)), ["--qos=high"]);
    }

    #[test]
    fn the_command_line_overrides_the_environment() {
        let vars = [("SBATCH_TIMELIMIT", "10"), ("SBATCH_PARTITION", "short")];
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &words(Command::Sbatch, env(&vars)), &mut o).unwrap();
        parse_args(Command::Sbatch, &["-t".into(), "5".into()], &mut o).unwrap();
        assert_eq!(
            (o.time, o.partition.as_deref()),
            (Some(Some(300)), Some("short"))
        );
    }

    #[test]
    fn srun_reads_kill_on_bad_exit_and_wait() {
        let vars = [("SLURM_KILL_BAD_EXIT", "1"), ("SLURM_WAIT", "7")];
        let mut o = JobOptions::default();
        parse_args(Command::Srun, &words(Command::Srun, env(&vars)), &mut o).unwrap();
        assert_eq!((o.kill_on_bad_exit, o.max_wait), (Some(true), Some(7)));
    }
}
