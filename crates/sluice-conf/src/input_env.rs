//! The input environment variables of `sbatch`, `salloc` and `srun`: options a site or
//! a user sets once (`SBATCH_ACCOUNT=proj`, `SALLOC_PARTITION=gpu`,
//! `SLURM_KILL_BAD_EXIT=1`), read as Slurm 22.05's commands read them. They count as
//! options given before the command line and after a script's `#SBATCH` lines: the
//! command line overrides them, and they override the script.

use crate::getopt::HasArg;
use crate::options::{
    option_table, parse_args, reset_flag, set_env_only, Command, JobOptions, OptionError, ENV_ONLY,
};

/// `sbatch`'s variables, each with the long option it stands for, in Slurm's order
/// (a later one of the same option wins). `switch-req` and `switch-wait` are settings
/// only a variable gives (the two halves of `--switches`).
const SBATCH: &[(&str, &str)] = &[
    ("SBATCH_IGNORE_PBS", "ignore-pbs"),
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
    ("SBATCH_REQ_SWITCH", "switch-req"),
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
    ("SBATCH_WAIT4SWITCH", "switch-wait"),
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
    ("SALLOC_REQ_SWITCH", "switch-req"),
    ("SALLOC_RESERVATION", "reservation"),
    ("SALLOC_SIGNAL", "signal"),
    ("SALLOC_SPREAD_JOB", "spread-job"),
    ("SALLOC_THREAD_SPEC", "thread-spec"),
    ("SALLOC_THREADS_PER_CORE", "threads-per-core"),
    ("SALLOC_TIMELIMIT", "time"),
    ("SALLOC_USE_MIN_NODES", "use-min-nodes"),
    ("SALLOC_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SALLOC_WAIT4SWITCH", "switch-wait"),
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
    ("SLURM_REQ_SWITCH", "switch-req"),
    ("SLURM_RESERVATION", "reservation"),
    ("SLURM_SIGNAL", "signal"),
    ("SLURM_TIMELIMIT", "time"),
    ("SLURM_UNBUFFEREDIO", "unbuffered"),
    ("SLURM_WAIT", "wait"),
    ("SLURM_WAIT4SWITCH", "switch-wait"),
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

/// What the environment asks of `command`, read from its variables ([`read`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FromEnv {
    /// Option words: a flag set (`--requeue`), an option with its value
    /// (`--partition=short`), an optional value left out when empty (`--kill-on-bad-exit`).
    pub words: Vec<String>,
    /// Flags the environment turns off (`SBATCH_REQUEUE=0`), as Slurm resets them.
    pub resets: Vec<&'static str>,
    /// The variables read, each with its option's name, to say which one a message is
    /// about.
    pub from: Vec<(&'static str, &'static str)>,
    /// The value of a variable that sets `--verbose` (`SBATCH_DEBUG=2`): the level
    /// itself, where `-v` on a command line adds one.
    pub verbose: Option<String>,
    /// Settings only a variable gives (`switch-req`, `switch-wait`), with their
    /// variable and value.
    pub env_only: Vec<(&'static str, &'static str, String)>,
}

/// Reads `command`'s variables (`get` reads one) as Slurm's `slurm_process_option`
/// reads them: a flag is set by an empty value, `yes` or a non-zero number and turned
/// off by anything else; an optional value that is empty is no value. An option that
/// needs a value is left out when it is empty, where Slurm passes the empty value on
/// (`SBATCH_TIMELIMIT=` is refused there; COMPATIBILITY.md, `empty-input-variable`).
pub fn read(command: Command, get: impl Fn(&str) -> Option<String>) -> FromEnv {
    let table = option_table(command);
    let mut out = FromEnv::default();
    for &(var, name) in variables(command) {
        let Some(value) = get(var) else { continue };
        if ENV_ONLY.contains(&name) {
            if !value.is_empty() {
                out.env_only.push((var, name, value));
            }
            continue;
        }
        let Some(opt) = table.iter().find(|o| o.long == name) else {
            continue;
        };
        out.from.push((var, name));
        match opt.has_arg {
            // Slurm's `--verbose` reads the number a variable gives (`arg_set_verbose`).
            HasArg::No if flag_set(&value) && name == "verbose" => out.verbose = Some(value),
            HasArg::No if flag_set(&value) => out.words.push(format!("--{name}")),
            HasArg::No => out.resets.push(name),
            HasArg::Optional if value.is_empty() => out.words.push(format!("--{name}")),
            HasArg::Optional => out.words.push(format!("--{name}={value}")),
            HasArg::Required if !value.is_empty() => out.words.push(format!("--{name}={value}")),
            HasArg::Required => {}
        }
    }
    out
}

/// Whether a flag's variable sets it: empty, `yes`, or a whole non-zero number (after
/// any leading blanks, as C's `strtol` reads it).
pub fn flag_set(value: &str) -> bool {
    value.is_empty()
        || value.eq_ignore_ascii_case("yes")
        || value.trim_start().parse::<i64>().is_ok_and(|n| n != 0)
}

impl FromEnv {
    /// Applies what the environment asks to `opts`. Sluice's own word on one of its
    /// options (refused, or without effect) names the variable it came from
    /// (`SALLOC_IMMEDIATE: option --immediate is not supported by Sluice`); a bad value
    /// is reported in Slurm's words.
    pub fn apply(&self, command: Command, opts: &mut JobOptions) -> Result<(), OptionError> {
        let before = opts.warnings.len();
        // Parsed as the environment's: memory asked in a script's `#SBATCH` line stands
        // over a variable of another kind (`parse_args`).
        opts.from_env = true;
        let named = |text: String| -> String {
            match self
                .from
                .iter()
                .find(|(_, name)| text.starts_with(&format!("option --{name} ")))
            {
                Some((var, _)) => format!("{var}: {text}"),
                None => text,
            }
        };
        let parsed = parse_args(command, &self.words, opts);
        opts.from_env = false;
        if let Err(mut e) = parsed {
            e.message = named(e.message);
            return Err(e);
        }
        for w in &mut opts.warnings[before..] {
            *w = named(std::mem::take(w));
        }
        for name in &self.resets {
            reset_flag(opts, name);
        }
        for (_, name, value) in &self.env_only {
            set_env_only(opts, name, value)?;
        }
        if let Some(level) = &self.verbose {
            // Read as Slurm's `parse_int` reads it: empty is 0, a negative number or
            // anything else exits 1.
            opts.verbose = match level.as_str() {
                "" => 0,
                v => crate::options::non_negative(v.trim_start(), "verbose")?,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    /// The options `vars` give `command`, nothing else, or the refusal.
    fn from_vars(command: Command, vars: &[(&str, &str)]) -> Result<JobOptions, OptionError> {
        let mut o = JobOptions::default();
        read(command, env(vars)).apply(command, &mut o)?;
        Ok(o)
    }

    fn applied(command: Command, vars: &[(&str, &str)], then: &[&str]) -> JobOptions {
        let mut o = JobOptions::default();
        read(command, env(vars)).apply(command, &mut o).unwrap();
        let then: Vec<String> = then.iter().map(|w| w.to_string()).collect();
        parse_args(command, &then, &mut o).unwrap();
        o
    }

    #[test]
    fn every_variable_names_an_option_its_command_has() {
        for command in [Command::Sbatch, Command::Salloc, Command::Srun] {
            for (var, name) in variables(command) {
                assert!(
                    option_table(command).iter().any(|o| o.long == *name)
                        || ENV_ONLY.contains(name),
                    "{var}: {} has no --{name}",
                    command.name()
                );
            }
        }
    }

    #[test]
    fn values_flags_and_empty_values_are_read_as_slurm_reads_them() {
        let vars = [
            ("SBATCH_PARTITION", "short"),
            ("SBATCH_REQUEUE", "yes"),
            ("SBATCH_WAIT", "0"),
            ("SBATCH_EXCLUSIVE", "user"),
            ("SBATCH_ACCOUNT", ""),
            ("SALLOC_QOS", "high"),
        ];
        let e = read(Command::Sbatch, env(&vars));
        assert_eq!(
            e.words,
            ["--exclusive=user", "--partition=short", "--requeue"]
        );
        assert_eq!(e.resets, ["wait"]);
        assert_eq!(read(Command::Salloc, env(&vars)).words, ["--qos=high"]);
        // An empty optional value is no value: a bare -K.
        let k = read(Command::Srun, env(&[("SLURM_KILL_BAD_EXIT", "")]));
        assert_eq!(k.words, ["--kill-on-bad-exit"]);
    }

    #[test]
    fn a_flag_turned_off_undoes_a_script_line() {
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &["--requeue".to_string()], &mut o).unwrap();
        read(Command::Sbatch, env(&[("SBATCH_REQUEUE", "no")]))
            .apply(Command::Sbatch, &mut o)
            .unwrap();
        assert_eq!(o.requeue, None);
        let o = applied(Command::Srun, &[("SLURM_LABELIO", "0")], &["-l"]);
        assert!(o.label, "the command line's -l stands");
        let o = applied(Command::Srun, &[("SLURM_LABELIO", "1")], &[]);
        assert!(o.label);
    }

    #[test]
    fn the_command_line_overrides_the_environment() {
        let o = applied(
            Command::Sbatch,
            &[("SBATCH_TIMELIMIT", "10"), ("SBATCH_PARTITION", "short")],
            &["-t", "5"],
        );
        assert_eq!(
            (o.time, o.partition.as_deref()),
            (Some(Some(300)), Some("short"))
        );
        // A memory option on the command line wins over another kind from the
        // environment, as Slurm lets it.
        let o = applied(
            Command::Salloc,
            &[("SALLOC_MEM_PER_CPU", "1G")],
            &["--mem=2G"],
        );
        assert_eq!(o.memory, Some(crate::options::Memory::PerNode(2048)));
    }

    #[test]
    fn srun_reads_kill_on_bad_exit_and_wait() {
        let o = applied(
            Command::Srun,
            &[("SLURM_KILL_BAD_EXIT", "1"), ("SLURM_WAIT", "7")],
            &[],
        );
        assert_eq!((o.kill_on_bad_exit, o.max_wait), (Some(true), Some(7)));
    }

    #[test]
    fn the_switch_variables_give_the_count_and_the_wait_apart() {
        let both = [("SBATCH_REQ_SWITCH", "2"), ("SBATCH_WAIT4SWITCH", "1:30")];
        let o = applied(Command::Sbatch, &both, &[]);
        assert_eq!((o.switches, o.switch_wait), (Some(2), Some(90)));
        // The command line's count keeps the variable's wait; its own wait wins.
        let wait = [("SBATCH_WAIT4SWITCH", "1:30")];
        let o = applied(Command::Sbatch, &wait, &["--switches=4"]);
        assert_eq!((o.switches, o.switch_wait), (Some(4), Some(90)));
        let o = applied(Command::Sbatch, &wait, &["--switches=4@2:00"]);
        assert_eq!((o.switches, o.switch_wait), (Some(4), Some(120)));
        // A wait alone asks nothing; a wait that cannot be read is no wait.
        let o = applied(Command::Salloc, &[("SALLOC_WAIT4SWITCH", "1:30")], &[]);
        assert_eq!((o.switches, o.switch_wait), (None, Some(90)));
        let soon = [("SLURM_REQ_SWITCH", "1"), ("SLURM_WAIT4SWITCH", "soon")];
        let o = applied(Command::Srun, &soon, &[]);
        assert_eq!((o.switches, o.switch_wait), (Some(1), None));
        // The count variable takes a count alone, refused as Slurm refuses it (exit 1).
        for bad in ["2@5", "x", "0"] {
            let e = from_vars(Command::Sbatch, &[("SBATCH_REQ_SWITCH", bad)]).unwrap_err();
            assert_eq!(
                e.message,
                format!("Invalid numeric value \"{bad}\" for --switches.")
            );
            assert!(e.exit_1, "{bad}");
        }
    }

    #[test]
    fn messages_name_the_variable() {
        let mut o = JobOptions::default();
        let e = read(Command::Salloc, env(&[("SALLOC_IMMEDIATE", "5")]))
            .apply(Command::Salloc, &mut o)
            .unwrap_err();
        assert_eq!(
            e.message,
            "SALLOC_IMMEDIATE: option --immediate is not supported by Sluice"
        );
        let mut o = JobOptions::default();
        read(Command::Sbatch, env(&[("SBATCH_NETWORK", "x")]))
            .apply(Command::Sbatch, &mut o)
            .unwrap();
        assert_eq!(
            o.warnings,
            ["SBATCH_NETWORK: option --network is accepted but has no effect in Sluice yet"]
        );
    }

    #[test]
    fn a_debug_variable_gives_the_level_and_the_command_line_adds_to_it() {
        let level =
            |v: &str, then: &[&str]| applied(Command::Sbatch, &[("SBATCH_DEBUG", v)], then).verbose;
        assert_eq!(level("3", &[]), 3);
        assert_eq!(level(" 2", &[]), 2, "strtol skips leading blanks");
        assert_eq!(level("3", &["-v"]), 4);
        assert_eq!(level("", &[]), 0);
        assert_eq!(level("0", &["-vv"]), 2);
        // Not a flag's "set" (Slurm resets it): no error.
        assert_eq!(level("x", &[]), 0);
        for bad in ["yes", "-2"] {
            let e = from_vars(Command::Sbatch, &[("SBATCH_DEBUG", bad)]).unwrap_err();
            assert_eq!(
                e.message,
                format!("Invalid numeric value \"{bad}\" for --verbose.")
            );
            assert!(e.exit_1, "{bad}: Slurm's parse_int exits 1");
        }
    }

    #[test]
    fn no_kill_reads_slurms_words_and_refuses_others() {
        let o = applied(Command::Sbatch, &[("SBATCH_NO_KILL", "")], &[]);
        assert_eq!(o.warnings.len(), 1, "set: Sluice says it has no effect");
        let o = applied(Command::Sbatch, &[("SBATCH_NO_KILL", "off")], &[]);
        assert_eq!(o.warnings, Vec::<String>::new(), "off is what Sluice does");
        let o = applied(Command::Sbatch, &[], &["--no-kill=NO"]);
        assert_eq!(o.warnings, Vec::<String>::new());
        let e = from_vars(Command::Sbatch, &[("SBATCH_NO_KILL", "0")]).unwrap_err();
        assert_eq!(e.message, "Invalid --no-kill specification");
        assert!(
            !e.exit_1 && !e.refused && !e.fatal,
            "a usage error: exit 255"
        );
    }

    #[test]
    fn a_scripts_memory_wins_over_a_variable_of_another_kind() {
        use crate::options::Memory;
        let script = |vars: &[(&str, &str)]| {
            let mut o = JobOptions::default();
            parse_args(Command::Sbatch, &["--mem=3G".to_string()], &mut o).unwrap();
            read(Command::Sbatch, env(vars))
                .apply(Command::Sbatch, &mut o)
                .unwrap();
            o.memory
        };
        assert_eq!(
            script(&[("SBATCH_MEM_PER_CPU", "1G")]),
            Some(Memory::PerNode(3072))
        );
        assert_eq!(
            script(&[("SBATCH_MEM_PER_NODE", "1G")]),
            Some(Memory::PerNode(1024)),
            "the same option: the variable's value"
        );
        assert_eq!(script(&[]), Some(Memory::PerNode(3072)));
    }

    #[test]
    fn memory_kinds_are_exclusive_as_slurm_checks_them_once_all_is_read() {
        use crate::options::{check_memory_kinds, Memory};
        let words = |w: &[&str]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        // A directive's kind and another on the command line: both "command line".
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &words(&["--mem=300"]), &mut o).unwrap();
        let e = parse_args(Command::Sbatch, &words(&["--mem-per-cpu=150"]), &mut o).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.fatal),
            (
                "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.",
                true
            )
        );
        // Two kinds from the environment alone are refused in the environment's words...
        let vars = [
            ("SBATCH_MEM_PER_CPU", "100"),
            ("SBATCH_MEM_PER_NODE", "200"),
        ];
        let mut o = from_vars(Command::Sbatch, &vars).unwrap();
        let e = check_memory_kinds(&o).unwrap_err();
        assert!(
            e.fatal
                && e.message
                    .starts_with("SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU")
        );
        // ...unless the command line picks one.
        parse_args(Command::Sbatch, &words(&["--mem=1G"]), &mut o).unwrap();
        assert_eq!(check_memory_kinds(&o), Ok(()));
        assert_eq!(o.memory, Some(Memory::PerNode(1024)));
        // The environment giving the directive's own kind again makes it the
        // environment's: the command line may then pick another.
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &words(&["--mem=300"]), &mut o).unwrap();
        read(Command::Sbatch, env(&[("SBATCH_MEM_PER_NODE", "200")]))
            .apply(Command::Sbatch, &mut o)
            .unwrap();
        parse_args(Command::Sbatch, &words(&["--mem-per-cpu=150"]), &mut o).unwrap();
        assert_eq!(check_memory_kinds(&o), Ok(()));
        assert_eq!(o.memory, Some(Memory::PerCpu(150)));
    }

    #[test]
    fn salloc_reads_memory_kinds_as_sbatch_does() {
        use crate::options::{check_memory_kinds, Memory};
        let vars = [
            ("SALLOC_MEM_PER_CPU", "100"),
            ("SALLOC_MEM_PER_NODE", "200"),
        ];
        let o = from_vars(Command::Salloc, &vars).unwrap();
        assert!(check_memory_kinds(&o).unwrap_err().fatal);
        let o = applied(Command::Salloc, &vars, &["--mem-per-gpu=50"]);
        assert_eq!(check_memory_kinds(&o), Ok(()));
        assert_eq!(o.memory, Some(Memory::PerGpu(50)));
    }
}
