//! `--help` and `--usage` of sbatch, srun and salloc, from their option tables
//! (`sluice_conf::options`): an option Sluice acts on is described here, in Slurm's
//! groups; one it accepts without effect or refuses is named, by its tag in the table,
//! on a line at the end. One list serves the three commands: an entry shows for each
//! command whose table has the option and acts on it.

use sluice_conf::getopt::Opt;
use sluice_conf::options::{option_table, Command, Support};

use super::help::{e, list_line, names, render, synopsis, Group};

/// The descriptions, in Slurm's groups.
#[rustfmt::skip]
pub const GROUPS: &[Group] = &[
    Group {
        title: "Parallel run options:",
        entries: &[
            e("array", "indexes", "submit a job array with these task ids (1-9:2%4)"),
            e("account", "name", "charge the job to this account"),
            e("acctg-freq", "task=secs", "how often the job's usage is sampled (task=30; 0: at its end)"),
            e("begin", "time", "do not start the job before this time"),
            e("comment", "text", "a comment kept with the job"),
            e("cpus-per-task", "ncpus", "CPUs each task needs"),
            e("dependency", "type:jobid[:time]", "start only once these jobs are in this state"),
            e("chdir", "directory", "working directory of the job"),
            e("error", "file", "standard error to this file (%j, %A, %a, %x...)"),
            e("export", "names", "environment to pass: ALL, NONE or a list of names"),
            e("hold", "", "submit the job held (scontrol release starts it)"),
            e("ignore-pbs", "", "do not read the script's #PBS and #BSUB lines"),
            e("input", "file", "standard input from this file"),
            e("job-name", "name", "the job's name"),
            e("kill-command", "signal", "signal sent to the command if the allocation ends"),
            e("kill-on-bad-exit", "[0|1]", "end the step once a task exits non-zero"),
            e("label", "", "prefix each output line with its task number"),
            e("mpi", "type", "accepted: tasks start as with --mpi=none"),
            e("ntasks", "ntasks", "number of tasks"),
            e("nice", "value", "lower the job's priority by this much"),
            e("no-requeue", "", "never requeue the job"),
            e("no-shell", "", "get the allocation, run nothing, and exit"),
            e("ntasks-per-node", "n", "tasks on each node"),
            e("nodes", "N", "number of nodes (min[-max])"),
            e("output", "file", "standard output to this file (%j, %A, %a, %x...)"),
            e("open-mode", "append|truncate", "how output files are opened"),
            e("partition", "partition", "run in this partition"),
            e("pty", "", "run task 0 on a pseudo-terminal (an interactive shell)"),
            e("parsable", "", "print only the job id (and cluster) when submitted"),
            e("qos", "qos", "quality of service of the job"),
            e("quiet", "", "print errors only"),
            e("requeue", "", "the job may be requeued"),
            e("signal", "[{R|B}:]num[@time]", "send this signal so long before the time limit"),
            e("switches", "count[@time]", "most leaf switches, and how long to wait for them"),
            e("segment", "N", "place nodes in runs of N inside one topology block"),
            e("test-only", "", "say when and where the job would start; submit nothing"),
            e("time", "minutes", "time limit ([days-]hours:minutes:seconds, UNLIMITED)"),
            e("time-min", "minutes", "least time limit the scheduler may choose"),
            e("unbuffered", "", "accepted: output is relayed as it arrives"),
            e("verbose", "", "say more (repeat for more still)"),
            e("wait", "seconds", "sbatch: exit only when the job ends, with its exit status\nsrun: how long the other tasks may run once one has exited"),
            e("wckey", "wckey", "workload characterization key"),
            e("wrap", "command", "run this command line in a generated sh script"),
        ],
    },
    Group {
        title: "Constraint options:",
        entries: &[
            e("constraint", "list", "nodes with these features (& | [ ] *)"),
            e("mem", "MB", "memory per node (0: all of it; K, M, G, T suffixes)"),
            e("reservation", "name", "run in this reservation"),
            e("nodelist", "hosts", "run on these nodes"),
            e("exclude", "hosts", "never run on these nodes"),
        ],
    },
    Group {
        title: "Consumable resources related options:",
        entries: &[
            e("exclusive", "user", "whole nodes, shared with no other job"),
            e(
                "oversubscribe",
                "",
                "share CPUs with other jobs (OverSubscribe=YES:N, time-sliced)",
            ),
            e("exact", "", "the step gets only the CPUs its tasks ask for"),
            e("overlap", "", "the step may share CPUs with the job's other steps"),
            e(
                "het-group",
                "value",
                "run the step in these components of a heterogeneous job",
            ),
            e("mem-per-cpu", "MB", "memory per allocated CPU"),
        ],
    },
    Group {
        title: "Affinity/Multi-core options:",
        entries: &[
            e("sockets-per-node", "S", "sockets each node must have"),
            e("cpu-bind", "type", "accepted: no per-task binding"),
        ],
    },
    Group {
        title: "GPU scheduling options:",
        entries: &[
            e("cpus-per-gpu", "n", "CPUs per allocated GPU"),
            e("gpus", "[type:]n", "GPUs for the whole job"),
            e("gpu-bind", "...", "bind tasks to GPUs (closest, single:n, map_gpu...)"),
            e("gpus-per-node", "[type:]n", "GPUs on each node"),
            e("gpus-per-socket", "[type:]n", "GPUs on each allocated socket"),
            e("gpus-per-task", "[type:]n", "GPUs for each task"),
            e("gres", "list", "generic resources per node (gpu:a100:2,...)"),
            e("mem-per-gpu", "MB", "memory per allocated GPU"),
        ],
    },
    Group {
        title: "Service options (Sluice's own, beyond Slurm):",
        entries: &[
            e("restart", "on-failure|always[:max]", "a service: restarted in place when it exits (at most max times)"),
            e("port", "N", "the TCP port the service listens on (also declares a service)"),
            e("service-name", "name", "its stable name (default: the job name; unique while it lives)"),
            e("health-cmd", "command", "health check: healthy when this exits 0 (as the job's user)"),
            e("health-url", "url", "health check: GET http://localhost[:PORT]/path answers 2xx"),
            e("health-interval", "secs", "seconds between health checks (10)"),
            e("health-retries", "n", "failed checks in a row that restart the service (3)"),
        ],
    },
    Group {
        title: "Help options:",
        entries: &[
            e("help", "", "this help"),
            e("usage", "", "a short summary of the options"),
        ],
    },
    Group {
        title: "Other options:",
        entries: &[e("version", "", "print the Slurm version and exit")],
    },
];

/// The first line of `--help`, as Slurm's (heterogeneous jobs' `:` included).
fn usage_line(command: Command) -> &'static str {
    match command {
        Command::Sbatch => {
            "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]\n"
        }
        Command::Srun => {
            "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] \
             executable(N) [args(N)...]\n"
        }
        Command::Salloc => {
            "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]\n"
        }
    }
}

fn acts(o: &Opt<Support>) -> bool {
    o.tag == Support::Acts
}

/// `command --help`.
pub fn help(command: Command) -> String {
    let table = option_table(command);
    let mut out = String::from(usage_line(command));
    out.push_str(&render(GROUPS, table, 30, acts));
    out.push('\n');
    out.push_str(&list_line(
        "Accepted without effect in Sluice:",
        &names(table, |o| o.tag == Support::Warns),
    ));
    out.push_str(&list_line(
        "Not supported by Sluice:",
        &names(table, |o| o.tag == Support::Refuses),
    ));
    out
}

/// `command --usage`.
pub fn usage(command: Command) -> String {
    let tail = match command {
        Command::Sbatch => "script [args...]",
        Command::Srun => "executable [args...]",
        Command::Salloc => "[command [args...]]",
    };
    synopsis(command.name(), GROUPS, option_table(command), acts, tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::help::listed;

    const COMMANDS: [Command; 3] = [Command::Sbatch, Command::Srun, Command::Salloc];

    #[test]
    fn every_entry_is_an_option_of_some_job_command() {
        for entry in GROUPS.iter().flat_map(|g| g.entries) {
            assert!(
                COMMANDS
                    .iter()
                    .any(|&c| option_table(c).iter().any(|o| o.long == entry.long)),
                "--{} is no option of sbatch, srun or salloc",
                entry.long
            );
        }
        // Each entry names an option by its own long name, not by an alias.
        for c in COMMANDS {
            for entry in GROUPS.iter().flat_map(|g| g.entries) {
                if let Some(o) = crate::slurm::help::find(option_table(c), entry.long) {
                    assert_eq!(o.name, o.long, "{}: --{}", c.name(), entry.long);
                }
            }
        }
    }

    #[test]
    fn every_option_sluice_acts_on_is_described_and_every_other_named() {
        for c in COMMANDS {
            let table = option_table(c);
            let listed = listed(GROUPS, table);
            let text = help(c);
            for o in table {
                let name = format!("--{}", o.name);
                match o.tag {
                    Support::Acts => assert!(listed.contains(&o.name), "{}: {name}", c.name()),
                    _ => assert!(
                        text.contains(&format!(" {name},")) || text.contains(&format!(" {name}\n")),
                        "{}: {name} is not named",
                        c.name()
                    ),
                }
            }
        }
    }

    #[test]
    fn help_is_slurms_shape() {
        let text = help(Command::Sbatch);
        assert!(text.starts_with(
            "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]\n\n\
             Parallel run options:\n\
             \x20 -a, --array=indexes         submit a job array"
        ));
        assert!(text.contains("\n  -h, --help                  this help\n"));
        assert!(text.contains("\n      --nice[=value]          lower"));
        assert!(text.contains("\nNot supported by Sluice: --gid, --kill-on-invalid-dep,"));
        // srun's own options show in srun's help only; sbatch's -W is a flag, srun's
        // takes seconds.
        assert!(help(Command::Srun).contains("\n  -l, --label "));
        assert!(!text.contains("--label"));
        assert!(text.contains("\n  -W, --wait    "));
        assert!(help(Command::Srun).contains("\n  -W, --wait=seconds "));
        for c in COMMANDS {
            let u = usage(c);
            assert!(u.starts_with(&format!("Usage: {} [", c.name())), "{u}");
            assert!(u.lines().all(|l| l.len() <= 78), "{u}");
            assert!(!u.contains("--gid"), "{u}");
        }
        assert!(usage(Command::Sbatch).ends_with(" script [args...]\n"));
    }
}
