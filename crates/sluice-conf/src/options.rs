//! Job options as `sbatch`, `srun` and `salloc` take them: on the command line and in
//! `#SBATCH` lines at the top of a script.
//!
//! The words are walked by [`crate::getopt`], the one option parser of every Slurm
//! command, with Slurm's getopt rules: `--key=value` and `--key value`, unique prefixes
//! of long names, short options with the value attached or separate (`-n4`, `-n 4`),
//! bundled flags (`-Hv`), and the first argument that is not an option ends option
//! parsing (it is the script or the command; what follows belongs to it). `#SBATCH`
//! lines go through the same [`parse_args`] as the command line. Each command has
//! its own table, Slurm 22.05's (dumped from its binaries: names, order, value kinds,
//! aliases), so that getopt refuses, abbreviates and finds ambiguous exactly what
//! Slurm's does; each entry says what Sluice does with it ([`Support`]: a real option
//! Sluice does not act on is accepted with a warning or refused, never mistaken for
//! another). Values are checked here, and a bad one gives the message Slurm gives
//! (`Invalid --time specification`).

use crate::array::{parse_array, ArraySpec};
use crate::dependency::{parse_dependency, Dependency};
use crate::duration::{parse_mem_mib, parse_time};
use crate::getopt::{Getopt, Opt, Order, Parsed};

/// Which command is parsing (a few options belong to one of them only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `sbatch`.
    Sbatch,
    /// `srun`.
    Srun,
    /// `salloc`.
    Salloc,
}

impl Command {
    /// The command's name, as it prefixes messages.
    pub fn name(self) -> &'static str {
        match self {
            Command::Sbatch => "sbatch",
            Command::Srun => "srun",
            Command::Salloc => "salloc",
        }
    }
}

/// Memory requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// `--mem`: MiB per node (0: all of each node's memory, as in Slurm).
    PerNode(u64),
    /// `--mem-per-cpu`: MiB per allocated CPU.
    PerCpu(u64),
    /// `--mem-per-gpu`: MiB per allocated GPU.
    PerGpu(u64),
}

/// `--open-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Append to existing output files.
    Append,
    /// Truncate them (Slurm's default).
    Truncate,
}

/// `--export`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Export {
    /// `ALL` (the default): the submitter's whole environment, plus any `NAME=value`.
    All(Vec<String>),
    /// `NONE`: only the Slurm variables (and any `NAME=value` given).
    None(Vec<String>),
    /// A list of names (and `NAME=value`s) to export, nothing else.
    Only(Vec<String>),
}

/// `--signal=[{R|B}:]SIG[@TIME]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalSpec {
    /// Signal number.
    pub signal: i32,
    /// Seconds before the time limit (Slurm's default 60).
    pub before: i64,
    /// `B:` — signal only the batch shell.
    pub batch_only: bool,
}

/// One `--gres` item: `gpu`, `gpu:2`, `gpu:a100:2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GresRequest {
    /// GRES name (`gpu`, `shard`, ...).
    pub name: String,
    /// Type (`a100`), if asked.
    pub gres_type: Option<String>,
    /// Count per node.
    pub count: u32,
}

/// Everything a job submission can say about the job. `None` means "not given" (the
/// controller applies Slurm's defaults).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobOptions {
    /// `-J/--job-name`.
    pub job_name: Option<String>,
    /// `-o/--output` pattern.
    pub output: Option<String>,
    /// `-e/--error` pattern.
    pub error: Option<String>,
    /// `-i/--input` pattern.
    pub input: Option<String>,
    /// `-p/--partition` (comma-separated list allowed by Slurm; the first is used).
    pub partition: Option<String>,
    /// `-A/--account`.
    pub account: Option<String>,
    /// `-q/--qos`.
    pub qos: Option<String>,
    /// `-n/--ntasks`.
    pub ntasks: Option<u32>,
    /// `-N/--nodes`: minimum and maximum node count.
    pub nodes: Option<(u32, u32)>,
    /// `-c/--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--ntasks-per-node`.
    pub ntasks_per_node: Option<u32>,
    /// `-t/--time` in seconds; `Some(None)` is UNLIMITED.
    pub time: Option<Option<i64>>,
    /// `--time-min` in seconds.
    pub time_min: Option<Option<i64>>,
    /// `-D/--chdir`.
    pub chdir: Option<String>,
    /// `--mem`, `--mem-per-cpu` or `--mem-per-gpu` (the last given wins, as in Slurm).
    pub memory: Option<Memory>,
    /// `--gres` items.
    pub gres: Vec<GresRequest>,
    /// `-G/--gpus` total: optional type and count.
    pub gpus: Option<(Option<String>, u32)>,
    /// `--gpus-per-node`.
    pub gpus_per_node: Option<(Option<String>, u32)>,
    /// `--gpus-per-task`.
    pub gpus_per_task: Option<(Option<String>, u32)>,
    /// `--gpus-per-socket`.
    pub gpus_per_socket: Option<(Option<String>, u32)>,
    /// `--sockets-per-node`.
    pub sockets_per_node: Option<u32>,
    /// `--cpus-per-gpu`.
    pub cpus_per_gpu: Option<u32>,
    /// `--gpu-bind` as given (checked: [`GpuBind::parse`] accepts it).
    pub gpu_bind: Option<String>,
    /// `--exclusive` (any form).
    pub exclusive: bool,
    /// `-s/--oversubscribe`.
    pub oversubscribe: bool,
    /// `--exact` (srun): the step gets only the CPUs its tasks ask for.
    pub exact: bool,
    /// `--overlap` (srun): the step may use CPUs the job's running steps hold (and
    /// holds none itself that others must wait for).
    pub overlap: bool,
    /// `--pty` (srun): task 0 runs on a pseudo-terminal, srun's terminal in raw mode.
    pub pty: bool,
    /// `--requeue` (true) or `--no-requeue` (false).
    pub requeue: Option<bool>,
    /// `--open-mode`.
    pub open_mode: Option<OpenMode>,
    /// `--export`.
    pub export: Option<Export>,
    /// `--comment`.
    pub comment: Option<String>,
    /// `--acctg-freq`, as given (checked).
    pub acctg_freq: Option<String>,
    /// `--wckey`.
    pub wckey: Option<String>,
    /// `-H/--hold`.
    pub hold: bool,
    /// The umask a script's `#PBS -W umask=` line asks its job to run with (Slurm has
    /// no option for it): the submitter's own where none.
    pub umask: Option<u32>,
    /// `--ignore-pbs` (or `SBATCH_IGNORE_PBS`): the script's `#PBS` and `#BSUB` lines
    /// are not read ([`crate::pbs`]).
    pub ignore_pbs: bool,
    /// `--parsable`.
    pub parsable: bool,
    /// `--test-only` (sbatch): say when and where the job would start, submit nothing.
    pub test_only: bool,
    /// `-W/--wait` (sbatch, salloc's `--wait-all-nodes` aside).
    pub wait: bool,
    /// srun's `-W/--wait=SECONDS`: once the first task has exited, how long the others
    /// have before the step is ended (0: no limit).
    pub max_wait: Option<u32>,
    /// srun's `-K/--kill-on-bad-exit[=0|1]`: end the step once a task exits non-zero
    /// (unset: the cluster's `KillOnBadExit`).
    pub kill_on_bad_exit: Option<bool>,
    /// `-a/--array`.
    pub array: Option<ArraySpec>,
    /// `-a/--array` as written: its length is checked once every source is read
    /// ([`check_lengths`]).
    pub array_text: Option<String>,
    /// `--mail-user` (no mail is sent; its length is checked as Slurm's controller
    /// checks it, [`check_lengths`]).
    pub mail_user: Option<String>,
    /// `-d/--dependency`.
    pub dependency: Option<Dependency>,
    /// `-d/--dependency` as written (the controller checks it again against its jobs).
    pub dependency_text: Option<String>,
    /// `-b/--begin` as given (the controller resolves it against its clock).
    pub begin: Option<String>,
    /// `--signal`.
    pub signal: Option<SignalSpec>,
    /// `--switches=count[@max-time]` (or `SBATCH_REQ_SWITCH`): most leaf switches.
    pub switches: Option<u32>,
    /// How long (seconds) to wait for them: `--switches=...@max-time` or
    /// `SBATCH_WAIT4SWITCH` (`None`: the cluster's `max_switch_wait`). Kept apart from
    /// the count, as Slurm keeps it: a wait without a count asks nothing.
    pub switch_wait: Option<i64>,
    /// `--segment=N`: runs of N nodes, each inside one base block (block topology).
    pub segment: Option<u32>,
    /// `--wrap` command (sbatch).
    pub wrap: Option<String>,
    /// `-C/--constraint`.
    pub constraint: Option<String>,
    /// `-w/--nodelist`.
    pub nodelist: Option<String>,
    /// `-x/--exclude`.
    pub exclude: Option<String>,
    /// `--nice` adjustment.
    pub nice: Option<i32>,
    /// salloc's `--kill-command[=signal]`: the signal sent to the command when the
    /// allocation is revoked (SIGTERM when none is named, Slurm's default for a
    /// command that is not an interactive shell).
    pub kill_command: Option<i32>,
    /// salloc's `--no-shell`: obtain the allocation and exit at once.
    pub no_shell: bool,
    /// `--reservation`.
    pub reservation: Option<String>,
    /// `srun --het-group`: the heterogeneous job components to run the step in, as
    /// given (`1`, `0,2`, `1-3`).
    pub het_group: Option<String>,
    /// `-Q/--quiet`.
    pub quiet: bool,
    /// `-v/--verbose` count.
    pub verbose: u32,
    /// `-l/--label` (srun).
    pub label: bool,
    /// `-u/--unbuffered` (srun).
    pub unbuffered: bool,
    /// `--mpi` (srun).
    pub mpi: Option<String>,
    /// `--cpu-bind` (srun).
    pub cpu_bind: Option<String>,
    /// `-V/--version`: print Slurm's version and exit (the options after it are not
    /// read).
    pub version: bool,
    /// `-h/--help`: print the command's help and exit (the options after it are not
    /// read).
    pub help: bool,
    /// `--usage`: print the command's short synopsis and exit.
    pub usage: bool,
    /// Warnings for options accepted without effect.
    pub warnings: Vec<String>,
    /// The kinds of memory option given (`mem`, `mem-per-cpu`, `mem-per-gpu`), each
    /// with whether its latest value came from the environment: Slurm takes one kind
    /// from the command line and the script's directives together, and gives way to it
    /// over another kind from the environment ([`check_memory_kinds`]).
    pub memory_asked: Vec<(&'static str, bool)>,
    /// Whether the words being parsed come from the environment (`input_env`).
    pub from_env: bool,
    /// sbatch's service options (`--restart`, `--health-*`, `--port`, `--service-name`).
    pub service: crate::service_options::ServiceOptions,
}

/// A bad option or value. `message` is Slurm's text, shown as `sbatch: error: MESSAGE`
/// (or, for getopt's own refusals, as glibc prints them); Slurm's clients exit with
/// status 255 for these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// What is wrong.
    pub message: String,
    /// Whether getopt itself refused the word (`message` is glibc's text): Slurm's
    /// commands print it as `PROGRAM: MESSAGE` followed by `Try "CMD --help" for
    /// more information`, without `error:`.
    pub getopt: bool,
    /// Whether Slurm reports this one as a refused submission (`Batch job submission
    /// failed: ...`, exit 1) rather than as a usage error (exit 255): its controller,
    /// not its client, checks it.
    pub refused: bool,
    /// Whether Slurm's client stops on it with `CMD: fatal: MESSAGE`, exit 1.
    pub fatal: bool,
    /// Whether Slurm's client stops on it with `CMD: error: MESSAGE`, exit 1 rather
    /// than 255: the numbers its `parse_int` reads (`-n 0`).
    pub exit_1: bool,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OptionError {}

/// The longest `--mail-user` Slurm's controller takes.
const MAIL_USER_MAX: usize = 1024;

/// A string over the length Slurm's controller takes: a refused submission.
fn too_long() -> OptionError {
    OptionError {
        refused: true,
        ..err(sluice_proto::error::PATHNAME_TOO_LONG)
    }
}

pub(crate) fn err(message: impl Into<String>) -> OptionError {
    OptionError {
        refused: false,
        getopt: false,
        fatal: false,
        exit_1: false,
        message: message.into(),
    }
}

/// What Sluice does with one of a command's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Sluice acts on it.
    Acts,
    /// Accepted with a warning, without effect (yet): a real Slurm option is never
    /// mistaken for another.
    Warns,
    /// Refused (`option --multi-prog is not supported by Sluice`): honouring it is beyond
    /// Sluice, and ignoring it would change what the command does.
    Refuses,
}

/// sbatch's options: Slurm 22.05's table, in its order, each with what Sluice does with it.
const SBATCH: &[Opt<Support>] = &[
    Opt::required("account", Some('A')).tag(Support::Acts),
    Opt::required("acctg-freq", None).tag(Support::Acts),
    Opt::required("array", Some('a')).tag(Support::Acts),
    Opt::required("batch", None).tag(Support::Warns),
    Opt::required("begin", Some('b')).tag(Support::Acts),
    Opt::required("bb", None).tag(Support::Warns),
    Opt::required("bbf", None).tag(Support::Warns),
    Opt::required("cluster-constraint", None).tag(Support::Warns),
    Opt::required("chdir", Some('D')).tag(Support::Acts),
    Opt::required("cluster", None).tag(Support::Warns),
    Opt::required("clusters", Some('M')).tag(Support::Warns),
    Opt::required("comment", None).tag(Support::Acts),
    Opt::required("container", None).tag(Support::Warns),
    Opt::required("context", None).tag(Support::Warns),
    Opt::flag("contiguous", None).tag(Support::Warns),
    Opt::required("constraint", Some('C')).tag(Support::Acts),
    Opt::required("core-spec", Some('S')).tag(Support::Warns),
    Opt::required("cores-per-socket", None).tag(Support::Warns),
    Opt::required("cpu-freq", None).tag(Support::Warns),
    Opt::required("cpus-per-gpu", None).tag(Support::Acts),
    Opt::required("cpus-per-task", Some('c')).tag(Support::Acts),
    Opt::required("deadline", None).tag(Support::Warns),
    Opt::required("delay-boot", None).tag(Support::Warns),
    Opt::required("dependency", Some('d')).tag(Support::Acts),
    Opt::required("distribution", Some('m')).tag(Support::Warns),
    Opt::required("error", Some('e')).tag(Support::Acts),
    Opt::required("exclude", Some('x')).tag(Support::Acts),
    Opt::optional("exclusive", None).tag(Support::Acts),
    Opt::required("export", None).tag(Support::Acts),
    Opt::required("export-file", None).tag(Support::Warns),
    Opt::required("extra-node-info", Some('B')).tag(Support::Warns),
    Opt::optional("get-user-env", None).tag(Support::Warns),
    Opt::required("gid", None).tag(Support::Refuses),
    Opt::required("gpu-bind", None).tag(Support::Acts),
    Opt::required("gpu-freq", None).tag(Support::Warns),
    Opt::required("gpus", Some('G')).tag(Support::Acts),
    Opt::required("gpus-per-node", None).tag(Support::Acts),
    Opt::required("gpus-per-socket", None).tag(Support::Acts),
    Opt::required("gpus-per-task", None).tag(Support::Acts),
    Opt::required("gres", None).tag(Support::Acts),
    Opt::required("gres-flags", None).tag(Support::Warns),
    Opt::flag("help", Some('h')).tag(Support::Acts),
    Opt::required("hint", None).tag(Support::Warns),
    Opt::flag("hold", Some('H')).tag(Support::Acts),
    Opt::flag("ignore-pbs", None).tag(Support::Acts),
    Opt::required("input", Some('i')).tag(Support::Acts),
    Opt::required("job-name", Some('J')).tag(Support::Acts),
    Opt::required("kill-on-invalid-dep", None).tag(Support::Refuses),
    Opt::required("licenses", Some('L')).tag(Support::Warns),
    Opt::required("mail-type", None).tag(Support::Warns),
    Opt::required("mail-user", None).tag(Support::Warns),
    Opt::required("mcs-label", None).tag(Support::Warns),
    Opt::required("mem", None).tag(Support::Acts),
    Opt::required("mem-bind", None).tag(Support::Warns),
    Opt::required("mem-per-cpu", None).tag(Support::Acts),
    Opt::required("mem-per-gpu", None).tag(Support::Acts),
    Opt::required("mincpus", None).tag(Support::Refuses),
    Opt::required("network", None).tag(Support::Warns),
    Opt::optional("nice", None).tag(Support::Acts),
    Opt::optional("no-kill", Some('k')).tag(Support::Warns),
    Opt::flag("no-requeue", None).tag(Support::Acts),
    Opt::required("nodefile", Some('F')).tag(Support::Refuses),
    Opt::required("nodelist", Some('w')).tag(Support::Acts),
    Opt::required("nodes", Some('N')).tag(Support::Acts),
    Opt::required("ntasks", Some('n')).tag(Support::Acts),
    Opt::required("ntasks-per-core", None).tag(Support::Warns),
    Opt::required("ntasks-per-gpu", None).tag(Support::Warns),
    Opt::required("ntasks-per-node", None).tag(Support::Acts),
    Opt::required("ntasks-per-socket", None).tag(Support::Warns),
    Opt::required("ntasks-per-tres", None).tag(Support::Warns),
    Opt::required("open-mode", None).tag(Support::Acts),
    Opt::required("output", Some('o')).tag(Support::Acts),
    Opt::flag("overcommit", Some('O')).tag(Support::Warns),
    Opt::flag("oversubscribe", Some('s')).tag(Support::Acts),
    Opt::flag("parsable", None).tag(Support::Acts),
    Opt::required("partition", Some('p')).tag(Support::Acts),
    Opt::required("power", None).tag(Support::Warns),
    Opt::required("prefer", None).tag(Support::Warns),
    Opt::required("priority", None).tag(Support::Warns),
    Opt::required("profile", None).tag(Support::Warns),
    Opt::optional("propagate", None).tag(Support::Warns),
    Opt::required("qos", Some('q')).tag(Support::Acts),
    Opt::flag("quiet", Some('Q')).tag(Support::Acts),
    Opt::flag("reboot", None).tag(Support::Warns),
    Opt::flag("requeue", None).tag(Support::Acts),
    Opt::required("reservation", None).tag(Support::Acts),
    Opt::required("signal", None).tag(Support::Acts),
    Opt::required("sockets-per-node", None).tag(Support::Acts),
    Opt::flag("spread-job", None).tag(Support::Warns),
    Opt::required("switches", None).tag(Support::Acts),
    Opt::required("tasks-per-node", None)
        .alias_of("ntasks-per-node")
        .tag(Support::Acts),
    Opt::flag("test-only", None).tag(Support::Acts),
    Opt::required("thread-spec", None).tag(Support::Warns),
    Opt::required("threads-per-core", None).tag(Support::Warns),
    Opt::required("time", Some('t')).tag(Support::Acts),
    Opt::required("time-min", None).tag(Support::Acts),
    Opt::required("tmp", None).tag(Support::Refuses),
    Opt::required("uid", None).tag(Support::Refuses),
    Opt::flag("use-min-nodes", None).tag(Support::Warns),
    Opt::flag("verbose", Some('v')).tag(Support::Acts),
    Opt::flag("version", Some('V')).tag(Support::Acts),
    Opt::flag("usage", None).tag(Support::Acts),
    Opt::flag("wait", Some('W')).tag(Support::Acts),
    Opt::required("wait-all-nodes", None).tag(Support::Warns),
    Opt::required("wckey", None).tag(Support::Acts),
    Opt::required("wrap", None).tag(Support::Acts),
    // Sluice's own addition (Slurm 23.11's): by its whole name only.
    Opt::required("segment", None)
        .exact_only()
        .tag(Support::Acts),
    // Service jobs, beyond Slurm (`service_options.rs`): by their whole names only.
    Opt::required("restart", None)
        .exact_only()
        .tag(Support::Acts),
    Opt::required("health-cmd", None)
        .exact_only()
        .tag(Support::Acts),
    Opt::required("health-url", None)
        .exact_only()
        .tag(Support::Acts),
    Opt::required("health-interval", None)
        .exact_only()
        .tag(Support::Acts),
    Opt::required("health-retries", None)
        .exact_only()
        .tag(Support::Acts),
    Opt::required("port", None).exact_only().tag(Support::Acts),
    Opt::required("service-name", None)
        .exact_only()
        .tag(Support::Acts),
];

/// srun's options: Slurm 22.05's table, in its order, each with what Sluice does with it.
const SRUN: &[Opt<Support>] = &[
    Opt::required("accel-bind", None).tag(Support::Refuses),
    Opt::required("account", Some('A')).tag(Support::Acts),
    Opt::required("acctg-freq", None).tag(Support::Acts),
    Opt::optional("bcast", None).tag(Support::Refuses),
    Opt::required("bcast-exclude", None).tag(Support::Refuses),
    Opt::required("begin", Some('b')).tag(Support::Acts),
    Opt::required("bb", None).tag(Support::Warns),
    Opt::required("bbf", None).tag(Support::Warns),
    Opt::required("cluster-constraint", None).tag(Support::Warns),
    Opt::required("chdir", Some('D')).tag(Support::Acts),
    Opt::required("cluster", None).tag(Support::Warns),
    Opt::required("clusters", Some('M')).tag(Support::Warns),
    Opt::required("comment", None).tag(Support::Acts),
    Opt::optional("compress", None).tag(Support::Refuses),
    Opt::required("container", None).tag(Support::Warns),
    Opt::required("context", None).tag(Support::Warns),
    Opt::flag("contiguous", None).tag(Support::Warns),
    Opt::required("constraint", Some('C')).tag(Support::Acts),
    Opt::required("core-spec", Some('S')).tag(Support::Warns),
    Opt::required("cores-per-socket", None).tag(Support::Warns),
    Opt::required("cpu-bind", None).tag(Support::Acts),
    Opt::required("cpu_bind", None)
        .alias_of("cpu-bind")
        .tag(Support::Acts),
    Opt::required("cpu-freq", None).tag(Support::Warns),
    Opt::required("cpus-per-gpu", None).tag(Support::Acts),
    Opt::required("cpus-per-task", Some('c')).tag(Support::Acts),
    Opt::required("deadline", None).tag(Support::Warns),
    Opt::flag("debugger-test", None).tag(Support::Refuses),
    Opt::required("delay-boot", None).tag(Support::Warns),
    Opt::required("dependency", Some('d')).tag(Support::Acts),
    Opt::flag("disable-status", Some('X')).tag(Support::Refuses),
    Opt::required("distribution", Some('m')).tag(Support::Warns),
    Opt::required("epilog", None).tag(Support::Refuses),
    Opt::required("error", Some('e')).tag(Support::Acts),
    Opt::flag("exact", None).tag(Support::Acts),
    Opt::required("exclude", Some('x')).tag(Support::Acts),
    Opt::optional("exclusive", None).tag(Support::Acts),
    Opt::required("export", None).tag(Support::Acts),
    Opt::required("extra-node-info", Some('B')).tag(Support::Warns),
    Opt::required("gid", None).tag(Support::Refuses),
    Opt::required("gpu-bind", None).tag(Support::Acts),
    Opt::required("gpu-freq", None).tag(Support::Warns),
    Opt::required("gpus", Some('G')).tag(Support::Acts),
    Opt::required("gpus-per-node", None).tag(Support::Acts),
    Opt::required("gpus-per-socket", None).tag(Support::Acts),
    Opt::required("gpus-per-task", None).tag(Support::Acts),
    Opt::required("gres", None).tag(Support::Acts),
    Opt::required("gres-flags", None).tag(Support::Warns),
    Opt::flag("help", Some('h')).tag(Support::Acts),
    Opt::required("het-group", None).tag(Support::Acts),
    Opt::required("hint", None).tag(Support::Warns),
    Opt::flag("hold", Some('H')).tag(Support::Acts),
    Opt::optional("immediate", Some('I')).tag(Support::Refuses),
    Opt::required("input", Some('i')).tag(Support::Acts),
    Opt::flag("interactive", None).tag(Support::Refuses),
    Opt::required("jobid", None).tag(Support::Refuses),
    Opt::required("job-name", Some('J')).tag(Support::Acts),
    Opt::optional("kill-on-bad-exit", Some('K')).tag(Support::Acts),
    Opt::flag("label", Some('l')).tag(Support::Acts),
    Opt::required("licenses", Some('L')).tag(Support::Warns),
    Opt::required("mail-type", None).tag(Support::Warns),
    Opt::required("mail-user", None).tag(Support::Warns),
    Opt::required("threads", Some('T')).tag(Support::Refuses),
    Opt::required("mcs-label", None).tag(Support::Warns),
    Opt::required("mem", None).tag(Support::Acts),
    Opt::required("mem-bind", None).tag(Support::Warns),
    Opt::required("mem-per-cpu", None).tag(Support::Acts),
    Opt::required("mem-per-gpu", None).tag(Support::Acts),
    Opt::required("mincpus", None).tag(Support::Refuses),
    Opt::required("mpi", None).tag(Support::Acts),
    Opt::required("msg-timeout", None).tag(Support::Refuses),
    Opt::flag("multi-prog", None).tag(Support::Refuses),
    Opt::required("network", None).tag(Support::Warns),
    Opt::optional("nice", None).tag(Support::Acts),
    Opt::flag("no-allocate", Some('Z')).tag(Support::Refuses),
    Opt::optional("no-kill", Some('k')).tag(Support::Warns),
    Opt::required("nodefile", Some('F')).tag(Support::Refuses),
    Opt::required("nodelist", Some('w')).tag(Support::Acts),
    Opt::required("nodes", Some('N')).tag(Support::Acts),
    Opt::required("ntasks", Some('n')).tag(Support::Acts),
    Opt::required("ntasks-per-core", None).tag(Support::Warns),
    Opt::required("ntasks-per-gpu", None).tag(Support::Warns),
    Opt::required("ntasks-per-node", None).tag(Support::Acts),
    Opt::required("ntasks-per-socket", None).tag(Support::Warns),
    Opt::required("ntasks-per-tres", None).tag(Support::Warns),
    Opt::required("open-mode", None).tag(Support::Acts),
    Opt::required("output", Some('o')).tag(Support::Acts),
    Opt::flag("overcommit", Some('O')).tag(Support::Warns),
    Opt::optional("overlap", None).tag(Support::Acts),
    Opt::flag("oversubscribe", Some('s')).tag(Support::Acts),
    Opt::required("pack-group", None)
        .alias_of("het-group")
        .tag(Support::Acts),
    Opt::required("partition", Some('p')).tag(Support::Acts),
    Opt::required("power", None).tag(Support::Warns),
    Opt::required("prefer", None).tag(Support::Warns),
    Opt::flag("preserve-env", Some('E')).tag(Support::Refuses),
    Opt::required("priority", None).tag(Support::Warns),
    Opt::required("profile", None).tag(Support::Warns),
    Opt::required("prolog", None).tag(Support::Refuses),
    Opt::optional("propagate", None).tag(Support::Warns),
    Opt::flag("pty", None).tag(Support::Acts),
    Opt::required("qos", Some('q')).tag(Support::Acts),
    Opt::flag("quiet", Some('Q')).tag(Support::Acts),
    Opt::flag("quit-on-interrupt", None).tag(Support::Refuses),
    Opt::flag("reboot", None).tag(Support::Warns),
    Opt::required("relative", Some('r')).tag(Support::Refuses),
    Opt::required("reservation", None).tag(Support::Acts),
    Opt::optional("resv-ports", None).tag(Support::Refuses),
    Opt::optional("send-libs", None).tag(Support::Refuses),
    Opt::required("signal", None).tag(Support::Acts),
    Opt::required("slurmd-debug", None).tag(Support::Refuses),
    Opt::required("sockets-per-node", None).tag(Support::Acts),
    Opt::flag("spread-job", None).tag(Support::Warns),
    Opt::required("switches", None).tag(Support::Acts),
    Opt::required("task-epilog", None).tag(Support::Refuses),
    Opt::required("task-prolog", None).tag(Support::Refuses),
    Opt::required("tasks-per-node", None)
        .alias_of("ntasks-per-node")
        .tag(Support::Acts),
    Opt::flag("test-only", None).tag(Support::Acts),
    Opt::required("thread-spec", None).tag(Support::Warns),
    Opt::required("threads-per-core", None).tag(Support::Warns),
    Opt::required("time", Some('t')).tag(Support::Acts),
    Opt::required("time-min", None).tag(Support::Acts),
    Opt::required("tmp", None).tag(Support::Refuses),
    Opt::required("uid", None).tag(Support::Refuses),
    Opt::flag("unbuffered", Some('u')).tag(Support::Acts),
    Opt::flag("use-min-nodes", None).tag(Support::Warns),
    Opt::flag("verbose", Some('v')).tag(Support::Acts),
    Opt::flag("version", Some('V')).tag(Support::Acts),
    Opt::flag("usage", None).tag(Support::Acts),
    Opt::required("wait", Some('W')).tag(Support::Acts),
    Opt::required("wckey", None).tag(Support::Acts),
    Opt::flag("whole", None).tag(Support::Refuses),
    Opt::optional("x11", None).tag(Support::Refuses),
    // Sluice's own addition (Slurm 23.11's): by its whole name only.
    Opt::required("segment", None)
        .exact_only()
        .tag(Support::Acts),
];

/// salloc's options: Slurm 22.05's table, in its order, each with what Sluice does with it.
const SALLOC: &[Opt<Support>] = &[
    Opt::required("account", Some('A')).tag(Support::Acts),
    Opt::required("acctg-freq", None).tag(Support::Acts),
    Opt::required("begin", Some('b')).tag(Support::Acts),
    Opt::flag("bell", None).tag(Support::Warns),
    Opt::required("bb", None).tag(Support::Warns),
    Opt::required("bbf", None).tag(Support::Warns),
    Opt::required("cluster-constraint", None).tag(Support::Warns),
    Opt::required("chdir", Some('D')).tag(Support::Acts),
    Opt::required("cluster", None).tag(Support::Warns),
    Opt::required("clusters", Some('M')).tag(Support::Warns),
    Opt::required("comment", None).tag(Support::Acts),
    Opt::required("container", None).tag(Support::Warns),
    Opt::required("context", None).tag(Support::Warns),
    Opt::flag("contiguous", None).tag(Support::Warns),
    Opt::required("constraint", Some('C')).tag(Support::Acts),
    Opt::required("core-spec", Some('S')).tag(Support::Warns),
    Opt::required("cores-per-socket", None).tag(Support::Warns),
    Opt::required("cpu-freq", None).tag(Support::Warns),
    Opt::required("cpus-per-gpu", None).tag(Support::Acts),
    Opt::required("cpus-per-task", Some('c')).tag(Support::Acts),
    Opt::required("deadline", None).tag(Support::Warns),
    Opt::required("delay-boot", None).tag(Support::Warns),
    Opt::required("dependency", Some('d')).tag(Support::Acts),
    Opt::required("distribution", Some('m')).tag(Support::Warns),
    Opt::required("exclude", Some('x')).tag(Support::Acts),
    Opt::optional("exclusive", None).tag(Support::Acts),
    Opt::required("extra-node-info", Some('B')).tag(Support::Warns),
    Opt::optional("get-user-env", None).tag(Support::Warns),
    Opt::required("gid", None).tag(Support::Refuses),
    Opt::required("gpu-bind", None).tag(Support::Acts),
    Opt::required("gpu-freq", None).tag(Support::Warns),
    Opt::required("gpus", Some('G')).tag(Support::Acts),
    Opt::required("gpus-per-node", None).tag(Support::Acts),
    Opt::required("gpus-per-socket", None).tag(Support::Acts),
    Opt::required("gpus-per-task", None).tag(Support::Acts),
    Opt::required("gres", None).tag(Support::Acts),
    Opt::required("gres-flags", None).tag(Support::Warns),
    Opt::flag("help", Some('h')).tag(Support::Acts),
    Opt::required("hint", None).tag(Support::Warns),
    Opt::flag("hold", Some('H')).tag(Support::Acts),
    Opt::optional("immediate", Some('I')).tag(Support::Refuses),
    Opt::required("job-name", Some('J')).tag(Support::Acts),
    Opt::optional("kill-command", Some('K')).tag(Support::Acts),
    Opt::required("licenses", Some('L')).tag(Support::Warns),
    Opt::required("mail-type", None).tag(Support::Warns),
    Opt::required("mail-user", None).tag(Support::Warns),
    Opt::required("mcs-label", None).tag(Support::Warns),
    Opt::required("mem", None).tag(Support::Acts),
    Opt::required("mem-bind", None).tag(Support::Warns),
    Opt::required("mem-per-cpu", None).tag(Support::Acts),
    Opt::required("mem-per-gpu", None).tag(Support::Acts),
    Opt::required("mincpus", None).tag(Support::Refuses),
    Opt::required("network", None).tag(Support::Warns),
    Opt::optional("nice", None).tag(Support::Acts),
    Opt::flag("no-bell", None).tag(Support::Warns),
    Opt::optional("no-kill", Some('k')).tag(Support::Warns),
    Opt::flag("no-shell", None).tag(Support::Acts),
    Opt::required("nodefile", Some('F')).tag(Support::Refuses),
    Opt::required("nodelist", Some('w')).tag(Support::Acts),
    Opt::required("nodes", Some('N')).tag(Support::Acts),
    Opt::required("ntasks", Some('n')).tag(Support::Acts),
    Opt::required("ntasks-per-core", None).tag(Support::Warns),
    Opt::required("ntasks-per-gpu", None).tag(Support::Warns),
    Opt::required("ntasks-per-node", None).tag(Support::Acts),
    Opt::required("ntasks-per-socket", None).tag(Support::Warns),
    Opt::required("ntasks-per-tres", None).tag(Support::Warns),
    Opt::flag("overcommit", Some('O')).tag(Support::Warns),
    Opt::flag("oversubscribe", Some('s')).tag(Support::Acts),
    Opt::required("partition", Some('p')).tag(Support::Acts),
    Opt::required("power", None).tag(Support::Warns),
    Opt::required("prefer", None).tag(Support::Warns),
    Opt::required("priority", None).tag(Support::Warns),
    Opt::required("profile", None).tag(Support::Warns),
    Opt::required("qos", Some('q')).tag(Support::Acts),
    Opt::flag("quiet", Some('Q')).tag(Support::Acts),
    Opt::flag("reboot", None).tag(Support::Warns),
    Opt::required("reservation", None).tag(Support::Acts),
    Opt::required("signal", None).tag(Support::Acts),
    Opt::required("sockets-per-node", None).tag(Support::Acts),
    Opt::flag("spread-job", None).tag(Support::Warns),
    Opt::required("switches", None).tag(Support::Acts),
    Opt::required("tasks-per-node", None)
        .alias_of("ntasks-per-node")
        .tag(Support::Acts),
    Opt::required("thread-spec", None).tag(Support::Warns),
    Opt::required("threads-per-core", None).tag(Support::Warns),
    Opt::required("time", Some('t')).tag(Support::Acts),
    Opt::required("time-min", None).tag(Support::Acts),
    Opt::required("tmp", None).tag(Support::Refuses),
    Opt::required("uid", None).tag(Support::Refuses),
    Opt::flag("use-min-nodes", None).tag(Support::Warns),
    Opt::flag("verbose", Some('v')).tag(Support::Acts),
    Opt::flag("version", Some('V')).tag(Support::Acts),
    Opt::flag("usage", None).tag(Support::Acts),
    Opt::required("wait-all-nodes", None).tag(Support::Warns),
    Opt::required("wckey", None).tag(Support::Acts),
    Opt::optional("x11", None).tag(Support::Refuses),
    // Sluice's own addition (Slurm 23.11's): by its whole name only.
    Opt::required("segment", None)
        .exact_only()
        .tag(Support::Acts),
];

/// Turns flag `name` off again, as Slurm's reset of an option does: what an input
/// environment variable such as `SBATCH_REQUEUE=0` asks (see [`crate::input_env`]).
/// Flags without effect in Sluice have nothing to undo.
pub fn reset_flag(opts: &mut JobOptions, name: &str) {
    match name {
        "requeue" | "no-requeue" => opts.requeue = None,
        "wait" => opts.wait = false,
        "verbose" => opts.verbose = 0,
        "label" => opts.label = false,
        "exact" => opts.exact = false,
        "unbuffered" => opts.unbuffered = false,
        _ => {}
    }
}

/// The option table of `command`: Slurm 22.05's, each entry tagged with what Sluice
/// does with it.
pub fn option_table(command: Command) -> &'static [Opt<Support>] {
    match command {
        Command::Sbatch => SBATCH,
        Command::Srun => SRUN,
        Command::Salloc => SALLOC,
    }
}

/// Parses options from `args` (without the program name) into `opts`. Returns the
/// arguments after the options: for `sbatch` the script and its arguments, for `srun`
/// the command and its arguments.
///
/// `--version`, `--help` and `--usage` end the walk (`opts.version`, `opts.help`,
/// `opts.usage`), as Slurm's commands print their version, help or usage and exit there.
///
/// Errors: getopt's refusals (`unrecognized option '--foo=1'`, `option '--time'
/// requires an argument`, glibc's words, [`OptionError::getopt`]), an option Sluice
/// refuses ([`Support::Refuses`]), a bad value (Slurm's message for it).
pub fn parse_args(
    command: Command,
    args: &[String],
    opts: &mut JobOptions,
) -> Result<Vec<String>, OptionError> {
    let mut walk = Getopt::new(
        option_table(command),
        args.iter().cloned(),
        Order::RequireOrder,
    );
    // The memory options given on command lines and in directives: Slurm takes one
    // kind at a time (those of the environment are checked once all is read).
    let exclusive = |opts: &JobOptions| -> Result<(), OptionError> {
        if !opts.from_env && opts.memory_asked.iter().filter(|(_, env)| !env).count() > 1 {
            return Err(OptionError {
                fatal: true,
                ..err("--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.")
            });
        }
        Ok(())
    };
    while let Some(item) = walk.next() {
        let item = item.map_err(|e| OptionError {
            getopt: true,
            ..err(e.to_string())
        })?;
        match item {
            Parsed::Opt(f) => match f.opt.tag {
                Support::Acts if matches!(f.name(), "version" | "help" | "usage") => {
                    match f.name() {
                        "version" => opts.version = true,
                        "help" => opts.help = true,
                        _ => opts.usage = true,
                    }
                    return Ok(Vec::new());
                }
                Support::Acts => {
                    let name = f.opt.name;
                    if !matches!(name, "mem" | "mem-per-cpu" | "mem-per-gpu") {
                        apply(opts, f.name(), f.value.as_deref())?;
                        continue;
                    }
                    // A kind asked on a command line or in a directive stands over
                    // another kind from the environment (Slurm's `set_by_cli`), whose
                    // value is still read (a bad one is refused); the same kind from the
                    // environment replaces it.
                    let env = opts.from_env;
                    let stands = opts
                        .memory
                        .filter(|_| env && opts.memory_asked.iter().any(|(k, e)| !e && *k != name));
                    opts.memory_asked.retain(|(k, _)| *k != name);
                    opts.memory_asked.push((name, env));
                    apply(opts, f.name(), f.value.as_deref())?;
                    if stands.is_some() {
                        opts.memory = stands;
                    }
                }
                // `--no-kill=off` asks for what Sluice does (a node's failure ends
                // the job): nothing to warn of.
                Support::Warns if f.name() == "no-kill" && !no_kill(f.value.as_deref())? => {}
                // A mail type Slurm cannot read is refused even though no mail is sent.
                Support::Warns
                    if f.name() == "mail-type" && !mail_type_known(f.value.as_deref()) =>
                {
                    return Err(err("Invalid --mail-type specification"));
                }
                Support::Warns => {
                    if f.name() == "mail-user" {
                        opts.mail_user = f.value.clone();
                    }
                    opts.warnings.push(format!(
                        "option --{} is accepted but has no effect in Sluice yet",
                        f.name()
                    ));
                }
                Support::Refuses => {
                    return Err(err(format!(
                        "option --{} is not supported by Sluice",
                        f.name()
                    )))
                }
            },
            Parsed::Operand(first) => {
                exclusive(opts)?;
                let mut rest = vec![first];
                rest.extend(walk.remaining().iter().cloned());
                return Ok(rest);
            }
        }
    }
    exclusive(opts)?;
    Ok(Vec::new())
}

/// Whether `--mail-type`'s list names at least one type Slurm knows (its other words
/// are passed over, as Slurm's `parse_mail_type` passes them over).
fn mail_type_known(list: Option<&str>) -> bool {
    const TYPES: [&str; 13] = [
        "NONE",
        "ARRAY_TASKS",
        "BEGIN",
        "END",
        "FAIL",
        "INVALID_DEPEND",
        "REQUEUE",
        "ALL",
        "STAGE_OUT",
        "TIME_LIMIT",
        "TIME_LIMIT_90",
        "TIME_LIMIT_80",
        "TIME_LIMIT_50",
    ];
    list.unwrap_or("")
        .split(',')
        .any(|w| TYPES.iter().any(|t| t.eq_ignore_ascii_case(w)))
}

/// Checks, once the command line, the directives and the environment are all read,
/// the lengths of the strings Slurm's controller holds to a limit that Sluice's client
/// alone sees (`_test_job_desc_fields`): the `--array` string (4 KiB, however few tasks
/// it names) and `--mail-user` (1 KiB). The controller checks the others.
///
/// Errors: Slurm's `Pathname of a file, directory or other parameter too long`, a
/// refused submission.
pub fn check_lengths(opts: &JobOptions) -> Result<(), OptionError> {
    let over = |s: &Option<String>, max: usize| s.as_ref().is_some_and(|s| s.len() > max);
    if over(&opts.array_text, crate::array::MAX_INDEX_STRING)
        || over(&opts.mail_user, MAIL_USER_MAX)
    {
        Err(too_long())
    } else {
        Ok(())
    }
}

/// Checks the memory options once the command line, the directives and the
/// environment are all read, as Slurm's `_validate_memory_options`: where none was
/// given on a command line or in a directive, two kinds from the environment are
/// refused (`SBATCH_MEM_PER_CPU` and `SBATCH_MEM_PER_NODE`).
pub fn check_memory_kinds(opts: &JobOptions) -> Result<(), OptionError> {
    let from_env = opts.memory_asked.iter().filter(|(_, env)| *env).count();
    if from_env > 1 && opts.memory_asked.iter().all(|(_, env)| *env) {
        return Err(OptionError {
            fatal: true,
            ..err("SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive.")
        });
    }
    Ok(())
}

/// The option words of a script's `#SBATCH` lines (or `#SRUN`...: `prefix` is the
/// directive, e.g. `#SBATCH`), in order. Directives are read from the top of the script
/// until the first line that is neither blank nor a comment; each directive is split
/// into words like a shell would (quotes group, `#` after a space starts a comment).
pub fn script_directives(script: &str, prefix: &str) -> Vec<String> {
    let mut words = Vec::new();
    for (n, line) in script.lines().enumerate() {
        let t = line.trim();
        if n == 0 && t.starts_with("#!") {
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if !t.starts_with('#') {
            break;
        }
        if let Some(rest) = t.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                words.extend(split_words(rest));
            }
        }
    }
    words
}

/// Splits a directive into words: whitespace separates, single and double quotes group,
/// and a `#` that starts a word begins a comment.
pub(crate) fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None => match c {
                '"' | '\'' => {
                    quote = Some(c);
                    in_word = true;
                }
                c if c.is_whitespace() => {
                    if in_word {
                        out.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                '#' if !in_word => break,
                c => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Whether `--no-kill[=VALUE]` asks to keep the job when a node fails: no value or
/// `set` does, `off` or `no` does not (Slurm's `arg_set_no_kill`, case-insensitive);
/// any other value is refused as Slurm refuses it.
fn no_kill(value: Option<&str>) -> Result<bool, OptionError> {
    match value {
        None => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("set") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("off") || v.eq_ignore_ascii_case("no") => Ok(false),
        Some(_) => Err(err("Invalid --no-kill specification")),
    }
}

/// A count Slurm reads with `parse_int`, which exits 1 on a bad one.
fn positive(value: &str, option: &str) -> Result<u32, OptionError> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| OptionError {
            exit_1: true,
            ..err(format!("Invalid numeric value \"{value}\" for --{option}."))
        })
}

/// A number of seconds Slurm reads with `parse_int` (0 allowed), which exits 1 on a bad
/// one.
pub(crate) fn non_negative(value: &str, option: &str) -> Result<u32, OptionError> {
    value.trim().parse::<u32>().map_err(|_| OptionError {
        exit_1: true,
        ..err(format!("Invalid numeric value \"{value}\" for --{option}."))
    })
}

/// Parses `[type:]count` as in `--gpus=a100:2`.
fn typed_count(value: &str, option: &str) -> Result<(Option<String>, u32), OptionError> {
    let bad = || err(format!("Invalid --{option} specification"));
    let (t, n) = match value.rsplit_once(':') {
        Some((t, n)) => (Some(t), n),
        None => (None, value),
    };
    // 0 is a count Slurm takes: no GPUs (shown as asked, `TresPerJob=gres:gpu:0`).
    let n = n.parse::<u32>().map_err(|_| bad())?;
    if t.is_some_and(|t| t.is_empty() || t.contains(':')) {
        return Err(bad());
    }
    Ok((t.map(str::to_string), n))
}

/// Parses a `--gres` list: `gpu`, `gpu:2`, `gpu:a100:2`, comma-separated. A count of 0
/// is taken (none of it, shown as asked); a GRES named twice is not. Slurm's client
/// checks the list before it submits, and exits 1 on a bad one.
pub fn parse_gres(value: &str) -> Result<Vec<GresRequest>, OptionError> {
    let bad = || OptionError {
        exit_1: true,
        ..err("Invalid generic resource (gres) specification")
    };
    let mut out = Vec::new();
    for item in value.split(',') {
        let parts: Vec<&str> = item.split(':').collect();
        let is_count = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (name, gres_type, count) = match parts.as_slice() {
            [n] => (*n, None, 1),
            [n, c] if is_count(c) => (*n, None, c.parse().map_err(|_| bad())?),
            [n, t] => (*n, Some(*t), 1),
            [n, t, c] if is_count(c) => (*n, Some(*t), c.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
        let twice = out
            .iter()
            .any(|g: &GresRequest| g.name == name && g.gres_type.as_deref() == gres_type);
        if name.is_empty() || gres_type == Some("") || twice {
            return Err(bad());
        }
        out.push(GresRequest {
            name: name.to_string(),
            gres_type: gres_type.map(str::to_string),
            count,
        });
    }
    Ok(out)
}

/// Signal names and numbers as `kill -l` knows them on Linux.
pub fn signal_number(name: &str) -> Option<i32> {
    let n = name.trim();
    if let Ok(v) = n.parse::<i32>() {
        return (1..=64).contains(&v).then_some(v);
    }
    let n = n.to_ascii_uppercase();
    let n = n.strip_prefix("SIG").unwrap_or(&n);
    Some(match n {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ABRT" => 6,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CONT" => 18,
        "STOP" => 19,
        "TSTP" => 20,
        "URG" => 23,
        "XCPU" => 24,
        "XFSZ" => 25,
        "VTALRM" => 26,
        "PROF" => 27,
        "WINCH" => 28,
        _ => return None,
    })
}

/// `--switches=count[@max-time]` (Slurm's sbatch(1)): a positive count (Slurm's
/// `parse_int`: anything else exits 1), and, after `@`, a time in `--time` syntax. The
/// wait is `None` without `@` (one given before stays), `Some(None)` where the time
/// cannot be read (Slurm then asks for no particular wait: the cluster's maximum).
fn parse_switches(value: &str) -> Result<(u32, Option<Option<i64>>), OptionError> {
    let (count, wait) = match value.split_once('@') {
        Some((c, w)) => (c, Some(w)),
        None => (value, None),
    };
    let count = switch_count(count, value)?;
    Ok((count, wait.map(switch_wait)))
}

/// The count of `--switches` (or `SBATCH_REQ_SWITCH`): a positive number, as Slurm's
/// `parse_int` reads it; `whole` is what the message names.
fn switch_count(count: &str, whole: &str) -> Result<u32, OptionError> {
    count
        .parse::<u32>()
        .ok()
        .filter(|&c| c > 0)
        .ok_or_else(|| OptionError {
            exit_1: true,
            ..err(format!("Invalid numeric value \"{whole}\" for --switches."))
        })
}

/// The wait of `--switches=...@WAIT` (or `SBATCH_WAIT4SWITCH`), in seconds: `None`
/// where it cannot be read, as Slurm's `time_str2secs` gives no time then.
fn switch_wait(wait: &str) -> Option<i64> {
    parse_time(wait).ok().map(|t| t.unwrap_or(i64::MAX))
}

/// Sets what a variable without an option of its own asks (`SBATCH_REQ_SWITCH`,
/// `SBATCH_WAIT4SWITCH`: the two halves of `--switches`); `name` is one of
/// [`ENV_ONLY`].
pub(crate) fn set_env_only(o: &mut JobOptions, name: &str, value: &str) -> Result<(), OptionError> {
    match name {
        "switch-req" => o.switches = Some(switch_count(value, value)?),
        "switch-wait" => o.switch_wait = switch_wait(value),
        _ => unreachable!("{name} is not a variable-only setting"),
    }
    Ok(())
}

/// Settings only a variable gives (Slurm's options without a name).
pub(crate) const ENV_ONLY: &[&str] = &["switch-req", "switch-wait"];

fn parse_signal(value: &str) -> Result<SignalSpec, OptionError> {
    let bad = || err("Invalid --signal specification");
    let (flags, rest) = match value.split_once(':') {
        Some((f, r)) if f.chars().all(|c| c == 'B' || c == 'R') && !f.is_empty() => (f, r),
        _ => ("", value),
    };
    let (sig, before) = match rest.split_once('@') {
        Some((s, t)) => (
            s,
            t.parse::<i64>()
                .ok()
                .filter(|t| (0..=65535).contains(t))
                .ok_or_else(bad)?,
        ),
        None => (rest, 60),
    };
    Ok(SignalSpec {
        signal: signal_number(sig).ok_or_else(bad)?,
        before,
        batch_only: flags.contains('B'),
    })
}

/// Acts on option `name` (an option Sluice [`Support::Acts`] on) with `value`.
fn apply(o: &mut JobOptions, name: &str, value: Option<&str>) -> Result<(), OptionError> {
    let v = value.unwrap_or("");
    let s = || Some(v.to_string());
    match name {
        "account" => o.account = s(),
        "array" => {
            o.array_text = s();
            // Slurm's controller checks the string's length before what it says: one
            // over 4 KiB is refused by `check_lengths` (unless a later source replaces
            // it), whatever it holds.
            o.array = if v.len() > crate::array::MAX_INDEX_STRING {
                None
            } else {
                Some(parse_array(v).map_err(|m| OptionError {
                    refused: true,
                    ..err(m)
                })?)
            };
        }
        "begin" => o.begin = s(),
        "chdir" => o.chdir = s(),
        "comment" => o.comment = s(),
        "acctg-freq" => {
            // Checked as Slurm checks it.
            crate::acct_gather_conf::Frequency::parse(v, "--acctg-freq").map_err(err)?;
            o.acctg_freq = s();
        }
        "constraint" => o.constraint = s(),
        "cpus-per-gpu" => o.cpus_per_gpu = Some(positive(v, name)?),
        "cpus-per-task" => o.cpus_per_task = Some(positive(v, name)?),
        "cpu-bind" => o.cpu_bind = s(),
        "dependency" => {
            o.dependency = Some(parse_dependency(v).map_err(|m| OptionError {
                refused: true,
                ..err(m)
            })?);
            o.dependency_text = s();
        }
        "error" => o.error = s(),
        "exclude" => o.exclude = s(),
        "exact" => o.exact = true,
        "overlap" => o.overlap = true,
        "pty" => o.pty = true,
        // Slurm's words: none (or `exclusive`), `user`, `mcs`, and `oversubscribe`,
        // which shares the nodes after all.
        "exclusive" => match v.to_ascii_lowercase().as_str() {
            "" | "exclusive" | "user" | "mcs" => {
                o.exclusive = true;
                o.oversubscribe = false;
            }
            "oversubscribe" => {
                o.exclusive = false;
                o.oversubscribe = true;
            }
            _ => return Err(err("Invalid --exclusive specification")),
        },
        "oversubscribe" => o.oversubscribe = true,
        "export" => o.export = Some(parse_export(v)),
        "gpu-bind" => {
            GpuBind::parse(v).map_err(err)?;
            o.gpu_bind = s();
        }
        "gpus" => o.gpus = Some(typed_count(v, name)?),
        "gpus-per-node" => o.gpus_per_node = Some(typed_count(v, name)?),
        "gpus-per-socket" => o.gpus_per_socket = Some(typed_count(v, name)?),
        "gpus-per-task" => o.gpus_per_task = Some(typed_count(v, name)?),
        "gres" => {
            if !v.eq_ignore_ascii_case("none") {
                o.gres = parse_gres(v)?;
            }
        }
        "hold" => o.hold = true,
        "ignore-pbs" => o.ignore_pbs = true,
        "input" => o.input = s(),
        "job-name" => o.job_name = s(),
        "label" => o.label = true,
        // As Slurm's srun reads it (`parse_int`): no value is 1, a number other than 0
        // is on, anything else refused.
        "kill-on-bad-exit" => {
            o.kill_on_bad_exit = Some(match value {
                Some(v) => non_negative(v, name)? != 0,
                None => true,
            })
        }
        "mem" => {
            o.memory = Some(Memory::PerNode(
                parse_mem_mib(v).map_err(|_| err("Invalid --mem specification"))?,
            ))
        }
        "mem-per-cpu" => {
            o.memory = Some(Memory::PerCpu(
                parse_mem_mib(v).map_err(|_| err("Invalid --mem-per-cpu specification"))?,
            ))
        }
        "mem-per-gpu" => {
            o.memory = Some(Memory::PerGpu(
                parse_mem_mib(v).map_err(|_| err("Invalid --mem-per-gpu specification"))?,
            ))
        }
        "mpi" => o.mpi = s(),
        "nice" => {
            o.nice = Some(if v.is_empty() {
                100
            } else {
                v.parse::<i32>()
                    .map_err(|_| err(format!("Invalid --nice value: {v}")))?
            })
        }
        "kill-command" => {
            o.kill_command = Some(if v.is_empty() {
                15
            } else {
                signal_number(v).ok_or_else(|| err(format!("Invalid signal name {v}")))?
            })
        }
        "no-requeue" => o.requeue = Some(false),
        "no-shell" => o.no_shell = true,
        "nodelist" => o.nodelist = s(),
        "nodes" => o.nodes = Some(parse_node_range(v)?),
        "ntasks" => o.ntasks = Some(positive(v, name)?),
        "ntasks-per-node" => o.ntasks_per_node = Some(positive(v, name)?),
        "open-mode" => {
            o.open_mode = Some(match v {
                "append" | "a" => OpenMode::Append,
                "truncate" | "t" => OpenMode::Truncate,
                _ => return Err(err("Invalid --open-mode argument")),
            })
        }
        "output" => o.output = s(),
        "parsable" => o.parsable = true,
        "partition" => o.partition = s(),
        "qos" => o.qos = s(),
        "quiet" => o.quiet = true,
        "requeue" => o.requeue = Some(true),
        "reservation" => o.reservation = s(),
        "het-group" => o.het_group = s(),
        "signal" => o.signal = Some(parse_signal(v)?),
        "sockets-per-node" => o.sockets_per_node = Some(positive(v, name)?),
        "switches" => {
            let (count, wait) = parse_switches(v)?;
            o.switches = Some(count);
            if let Some(wait) = wait {
                o.switch_wait = wait;
            }
        }
        "segment" => {
            o.segment = Some(
                v.parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| err("Invalid --segment specification"))?,
            )
        }
        "time" => o.time = Some(parse_time(v).map_err(|_| err("Invalid --time specification"))?),
        "time-min" => {
            o.time_min = Some(parse_time(v).map_err(|_| err("Invalid --time-min specification"))?)
        }
        "unbuffered" => o.unbuffered = true,
        "verbose" => o.verbose += 1,
        // sbatch's is a flag; srun's takes seconds.
        "wait" => match value {
            Some(v) => o.max_wait = Some(non_negative(v, name)?),
            None => o.wait = true,
        },
        "test-only" => o.test_only = true,
        "wckey" => o.wckey = s(),
        "wrap" => o.wrap = s(),
        other if o.service.take(other, v) => {}
        other => unreachable!("option table and handler disagree on --{other}"),
    }
    Ok(())
}

/// Slurm's check of `--gpus-per-socket` when a job is submitted (by sbatch and salloc,
/// and by srun when it creates an allocation): it needs `--sockets-per-node`, which
/// says how many sockets' GPUs a node gives. Errors: Slurm's message, which its
/// commands print as `CMD: error: MESSAGE` and exit 1.
pub fn check_gpus_per_socket(o: &JobOptions) -> Result<(), String> {
    if o.gpus_per_socket.is_some() && o.sockets_per_node.is_none() {
        return Err("--gpus-per-socket option requires --sockets-per-node specification".into());
    }
    Ok(())
}

/// `--gpu-bind`: which of a step's GPUs on a node each of its tasks there sees
/// (srun(1)). Tasks are counted by their index on the node (`SLURM_LOCALID`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuBind {
    /// `verbose,` was given (Slurm then logs each task's binding).
    pub verbose: bool,
    /// The binding.
    pub kind: GpuBindKind,
}

/// The binding of a [`GpuBind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuBindKind {
    /// `closest`: the GPUs nearest each task's socket (all of them when the GPUs' cores
    /// are not known).
    Closest,
    /// `single:N`: `N` tasks per GPU, in block order over the GPUs.
    Single(u32),
    /// `map_gpu:LIST`: one GPU id per task, as (id, repetitions) runs of the list
    /// (`0*2,1` is `[(0, 2), (1, 1)]`); the list is reused from its start when tasks
    /// outnumber it.
    MapGpu(Vec<(u32, u32)>),
    /// `mask_gpu:LIST`: one bit mask of GPU ids per task (bit `i` is GPU `i`), as
    /// (mask, repetitions) runs; reused like `map_gpu`.
    MaskGpu(Vec<(u64, u32)>),
    /// `none`: no binding, every task sees all the step's GPUs on its node (also when
    /// `--gpus-per-task` is given).
    None,
    /// `per_task:N`: `N` GPUs per task, in order (what `--gpus-per-task` implies).
    PerTask(u32),
}

impl GpuBind {
    /// Parses a `--gpu-bind` value as Slurm's `tres_bind_verify_cmdline` checks it:
    /// an optional `verbose,`, then (case-insensitively) a word starting with `c`
    /// (`closest`) or `n` (`none`), `single:N`, `per_task:N`, `map_gpu:LIST` with
    /// decimal ids or `mask_gpu:LIST` with hexadecimal masks (`0x` optional), where a
    /// list item may carry a repetition count (`0*4`).
    ///
    /// Errors: Slurm's `Invalid --gpu-bind argument: gpu:VALUE` for anything else, for an
    /// empty list, and (unlike Slurm, which takes them) for `single:0` and `per_task:0`.
    pub fn parse(value: &str) -> Result<GpuBind, String> {
        let bad = || format!("Invalid --gpu-bind argument: gpu:{value}");
        let lower = value.to_ascii_lowercase();
        let (verbose, rest) = match lower.strip_prefix("verbose,") {
            Some(r) => (true, r),
            None => (false, lower.as_str()),
        };
        let count = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(bad);
        let kind = if let Some(list) = rest.strip_prefix("map_gpu:") {
            GpuBindKind::MapGpu(
                parse_bind_list(list, |t| {
                    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| t.parse::<u32>().ok())
                        .flatten()
                })
                .ok_or_else(bad)?,
            )
        } else if let Some(list) = rest.strip_prefix("mask_gpu:") {
            GpuBindKind::MaskGpu(
                parse_bind_list(list, |t| {
                    let t = t.strip_prefix("0x").unwrap_or(t);
                    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit()))
                        .then(|| u64::from_str_radix(t, 16).ok())
                        .flatten()
                })
                .ok_or_else(bad)?,
            )
        } else if let Some(n) = rest.strip_prefix("single:") {
            GpuBindKind::Single(count(n)?)
        } else if let Some(n) = rest.strip_prefix("per_task:") {
            GpuBindKind::PerTask(count(n)?)
        } else if rest.starts_with('c') {
            GpuBindKind::Closest
        } else if rest.starts_with('n') {
            GpuBindKind::None
        } else {
            return Err(bad());
        };
        Ok(GpuBind { verbose, kind })
    }
}

/// A comma-separated list of `VALUE[*COUNT]`, each value read by `value`; `None` when
/// an item is malformed or the list is empty.
fn parse_bind_list<T>(list: &str, value: impl Fn(&str) -> Option<T>) -> Option<Vec<(T, u32)>> {
    let mut out = Vec::new();
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let (v, times) = match item.split_once('*') {
            Some((v, n)) => (v, n.parse::<u32>().ok()?),
            None => (item, 1),
        };
        out.push((value(v)?, times));
    }
    out.iter().any(|(_, n)| *n > 0).then_some(out)
}

/// `-N min[-max]`, refused in the words of Slurm's `verify_node_count`.
fn parse_node_range(v: &str) -> Result<(u32, u32), OptionError> {
    let num = |x: &str| {
        x.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| err(format!("\"{x}\" is not a valid node count")))
    };
    match v.split_once('-') {
        Some((a, b)) => {
            let (lo, hi) = (num(a)?, num(b)?);
            if hi < lo {
                return Err(err(format!(
                    "Maximum node count {hi} is less than minimum node count {lo}"
                )));
            }
            Ok((lo, hi))
        }
        None => {
            let n = num(v)?;
            Ok((n, n))
        }
    }
}

fn parse_export(v: &str) -> Export {
    let mut items: Vec<String> = v.split(',').map(str::to_string).collect();
    match items.first().map(|s| s.to_ascii_uppercase()) {
        Some(f) if f == "ALL" => {
            items.remove(0);
            Export::All(items)
        }
        Some(f) if f == "NONE" => {
            items.remove(0);
            Export::None(items)
        }
        _ => Export::Only(items),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn parse(s: &str) -> Result<(JobOptions, Vec<String>), OptionError> {
        let mut o = JobOptions::default();
        let rest = parse_args(Command::Sbatch, &words(s), &mut o)?;
        Ok((o, rest))
    }

    #[test]
    fn memory_per_node_cpu_and_gpu_are_one_choice_per_command_line() {
        for line in [
            "--mem=10G --mem-per-cpu=1G script.sh",
            "--mem-per-gpu=1G --mem=1G",
            "--mem-per-cpu=1G --mem-per-gpu=2G --mem-per-cpu=3G",
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.fatal, "{line}");
            assert_eq!(
                e.message,
                "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
            );
        }
        // The same one twice: the last wins, as for any option.
        let (o, _) = parse("--mem=1G --mem=2G").unwrap();
        assert_eq!(o.memory, Some(Memory::PerNode(2048)));
        // One on the command line and another in the script's directives: both count
        // as the command line's (Slurm's `set_by_cli`), and are refused alike.
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &words("--mem=1G"), &mut o).unwrap();
        let e = parse_args(Command::Sbatch, &words("--mem-per-cpu=100"), &mut o).unwrap_err();
        assert!(e.fatal);
        // The same kind in both: the command line's value.
        let mut o = JobOptions::default();
        parse_args(Command::Sbatch, &words("--mem=1G"), &mut o).unwrap();
        parse_args(Command::Sbatch, &words("--mem=2G"), &mut o).unwrap();
        assert_eq!(o.memory, Some(Memory::PerNode(2048)));
    }

    #[test]
    fn kill_on_bad_exit_is_read_as_srun_reads_it() {
        let srun = |s: &str| {
            let mut o = JobOptions::default();
            parse_args(Command::Srun, &words(s), &mut o).unwrap();
            o.kill_on_bad_exit
        };
        assert_eq!(srun("true"), None);
        assert_eq!(srun("-K true"), Some(true));
        assert_eq!(srun("-K0 true"), Some(false));
        assert_eq!(srun("-K1 true"), Some(true));
        assert_eq!(srun("--kill-on-bad-exit true"), Some(true));
        assert_eq!(srun("--kill-on-bad-exit=0 true"), Some(false));
        assert_eq!(srun("--kill-on-bad-exit=2 true"), Some(true));
        // parse_int's reading: a number or nothing.
        for bad in ["yes", "2x", "-1"] {
            let mut o = JobOptions::default();
            let e = parse_args(
                Command::Srun,
                &words(&format!("--kill-on-bad-exit={bad} true")),
                &mut o,
            )
            .unwrap_err();
            assert_eq!(
                e.message,
                format!("Invalid numeric value \"{bad}\" for --kill-on-bad-exit.")
            );
        }
    }

    #[test]
    fn srun_wait_takes_seconds_and_sbatch_wait_is_a_flag() {
        let srun = |s: &str| {
            let mut o = JobOptions::default();
            parse_args(Command::Srun, &words(s), &mut o).map(|_| (o.max_wait, o.wait))
        };
        assert_eq!(srun("-W 5 true").unwrap(), (Some(5), false));
        assert_eq!(srun("--wait=0 true").unwrap(), (Some(0), false));
        assert_eq!(
            srun("-W x true").unwrap_err().message,
            "Invalid numeric value \"x\" for --wait."
        );
        let (o, _) = parse("--wait script.sh").unwrap();
        assert_eq!((o.max_wait, o.wait), (None, true));
    }

    #[test]
    fn long_and_short_forms() {
        let (o, rest) = parse(
            "-J name -n4 -N 2-3 --cpus-per-task=2 --time 1:00:00 -p gpu --mem=4G script.sh a b",
        )
        .unwrap();
        assert_eq!(o.job_name.as_deref(), Some("name"));
        assert_eq!(o.ntasks, Some(4));
        assert_eq!(o.nodes, Some((2, 3)));
        assert_eq!(o.cpus_per_task, Some(2));
        assert_eq!(o.time, Some(Some(3600)));
        assert_eq!(o.partition.as_deref(), Some("gpu"));
        assert_eq!(o.memory, Some(Memory::PerNode(4096)));
        assert_eq!(rest, ["script.sh", "a", "b"]);
    }

    #[test]
    fn long_options_may_be_abbreviated_when_unambiguous() {
        let (o, rest) = parse("--job-na=abbr --parti debug --wr x").unwrap();
        assert_eq!(o.job_name.as_deref(), Some("abbr"));
        assert_eq!(o.partition.as_deref(), Some("debug"));
        assert_eq!(o.wrap.as_deref(), Some("x"));
        assert!(rest.is_empty());
        let e = parse("--nod 2 job.sh").unwrap_err();
        assert_eq!(
            e.message,
            "option '--nod' is ambiguous; possibilities: '--nodefile' '--nodelist' '--nodes'"
        );
    }

    #[test]
    fn options_after_the_script_belong_to_the_script() {
        let (o, rest) = parse("-n 2 job.sh -n 5 --time=1").unwrap();
        assert_eq!(o.ntasks, Some(2));
        assert_eq!(o.time, None);
        assert_eq!(rest, ["job.sh", "-n", "5", "--time=1"]);
    }

    #[test]
    fn bundled_flags_and_flags_with_optional_values() {
        let (o, _) = parse("-Hv --exclusive --parsable --requeue").unwrap();
        assert!(o.hold && o.exclusive && o.parsable);
        assert_eq!((o.verbose, o.requeue), (1, Some(true)));
        let (o, _) = parse("--exclusive=user --nice").unwrap();
        assert!(o.exclusive);
        assert_eq!(o.nice, Some(100));
    }

    #[test]
    fn gpu_and_gres_requests() {
        let (o, _) = parse("--gres=gpu:rtxpro6000:8 --gpus=a100:2 --gpus-per-task=1 --cpus-per-gpu=4 --mem-per-gpu=8G").unwrap();
        assert_eq!(
            o.gres,
            vec![GresRequest {
                name: "gpu".into(),
                gres_type: Some("rtxpro6000".into()),
                count: 8
            }]
        );
        assert_eq!(o.gpus, Some((Some("a100".into()), 2)));
        assert_eq!(o.gpus_per_task, Some((None, 1)));
        assert_eq!(o.cpus_per_gpu, Some(4));
        assert_eq!(o.memory, Some(Memory::PerGpu(8192)));
        // Slurm's client refuses a bad list itself, with exit status 1.
        let e = parse("--gres=gpu:x:").unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.exit_1),
            ("Invalid generic resource (gres) specification", true)
        );
        // A GRES named twice is refused; a count of 0 is taken, asking for none.
        assert!(parse("--gres=gpu:2,gpu:1").is_err());
        let (o, _) = parse("--gres=gpu:0,gpu:a100:1 --gpus=0 --gpus-per-node=0").unwrap();
        assert_eq!(o.gres.iter().map(|g| g.count).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(
            (o.gpus, o.gpus_per_node),
            (Some((None, 0)), Some((None, 0)))
        );
    }

    #[test]
    fn gpu_bind_values_as_slurm_checks_them() {
        let bind = |v: &str| GpuBind::parse(v);
        let kind = |v: &str| bind(v).unwrap().kind;
        assert_eq!(kind("closest"), GpuBindKind::Closest);
        assert_eq!(kind("NONE"), GpuBindKind::None);
        assert_eq!(kind("single:2"), GpuBindKind::Single(2));
        assert_eq!(kind("per_task:1"), GpuBindKind::PerTask(1));
        assert_eq!(
            kind("map_gpu:1,0"),
            GpuBindKind::MapGpu(vec![(1, 1), (0, 1)])
        );
        assert_eq!(
            kind("map_gpu:0*4,1*4"),
            GpuBindKind::MapGpu(vec![(0, 4), (1, 4)])
        );
        assert_eq!(
            kind("mask_gpu:0x3,C*2"),
            GpuBindKind::MaskGpu(vec![(3, 1), (12, 2)])
        );
        assert_eq!(
            bind("verbose,map_gpu:1").unwrap(),
            GpuBind {
                verbose: true,
                kind: GpuBindKind::MapGpu(vec![(1, 1)])
            }
        );
        for bad in [
            "blah",
            "map_gpu:",
            "map_gpu:x",
            "map_gpu:1*",
            "mask_gpu:0xg",
            "single:0",
            "per_task:",
            "verbose,",
        ] {
            assert_eq!(
                bind(bad).unwrap_err(),
                format!("Invalid --gpu-bind argument: gpu:{bad}"),
                "{bad}"
            );
        }
        // On the command line: checked as it is parsed, kept as given.
        let (o, _) = parse("--gpu-bind=verbose,map_gpu:1,0").unwrap();
        assert_eq!(o.gpu_bind.as_deref(), Some("verbose,map_gpu:1,0"));
        assert_eq!(
            parse("--gpu-bind=blah").unwrap_err().message,
            "Invalid --gpu-bind argument: gpu:blah"
        );
    }

    #[test]
    fn switches_and_segment_take_slurms_forms() {
        let (o, _) = parse("--switches=2").unwrap();
        assert_eq!((o.switches, o.switch_wait), (Some(2), None));
        let (o, _) = parse("--switches=1@1:30").unwrap();
        assert_eq!((o.switches, o.switch_wait), (Some(1), Some(90)));
        // A wait that cannot be read asks for none in particular; a count must be read.
        let (o, _) = parse("--switches=1@1:30 --switches=3@soon").unwrap();
        assert_eq!((o.switches, o.switch_wait), (Some(3), None));
        let (o, _) = parse("--switches=1@1:30 --switches=3").unwrap();
        assert_eq!((o.switches, o.switch_wait), (Some(3), Some(90)));
        assert!(parse("--switches=0").unwrap_err().exit_1);
        let (o, _) = parse("--segment=4").unwrap();
        assert_eq!(o.segment, Some(4));
        assert_eq!(
            parse("--switches=abc").unwrap_err().message,
            "Invalid numeric value \"abc\" for --switches."
        );
        assert_eq!(
            parse("--segment=0").unwrap_err().message,
            "Invalid --segment specification"
        );
    }

    #[test]
    fn gpus_per_socket_needs_sockets_per_node() {
        let (o, _) = parse("--gpus-per-socket=a100:2").unwrap();
        assert_eq!(o.gpus_per_socket, Some((Some("a100".into()), 2)));
        assert_eq!(
            check_gpus_per_socket(&o),
            Err("--gpus-per-socket option requires --sockets-per-node specification".into())
        );
        let (o, _) = parse("--gpus-per-socket=2 --sockets-per-node=2").unwrap();
        assert_eq!(o.sockets_per_node, Some(2));
        assert!(o.warnings.is_empty(), "{:?}", o.warnings);
        assert_eq!(check_gpus_per_socket(&o), Ok(()));
        assert_eq!(
            parse("--sockets-per-node=x").unwrap_err().message,
            "Invalid numeric value \"x\" for --sockets-per-node."
        );
    }

    #[test]
    fn signal_array_dependency_export() {
        let (o, _) = parse(
            "--signal=B:USR2@90 --array=0-9%2 -d afterok:5 --export=NONE,FOO=1 --open-mode=append",
        )
        .unwrap();
        assert_eq!(
            o.signal,
            Some(SignalSpec {
                signal: 12,
                before: 90,
                batch_only: true
            })
        );
        assert_eq!(
            o.array.as_ref().map(|a| (a.indices.len(), a.throttle)),
            Some((10, Some(2)))
        );
        assert!(matches!(o.dependency, Some(Dependency::All(_))));
        assert_eq!(o.export, Some(Export::None(vec!["FOO=1".into()])));
        assert_eq!(o.open_mode, Some(OpenMode::Append));
        let (o, _) = parse("--signal=SIGTERM").unwrap();
        assert_eq!(
            o.signal,
            Some(SignalSpec {
                signal: 15,
                before: 60,
                batch_only: false
            })
        );
    }

    #[test]
    fn bad_values_give_slurms_messages() {
        let cases = [
            ("-t abc", "Invalid --time specification"),
            ("--mem=abc", "Invalid --mem specification"),
            ("-n x", "Invalid numeric value \"x\" for --ntasks."),
            ("-n 0", "Invalid numeric value \"0\" for --ntasks."),
            ("--array=5-1", "Invalid job array specification"),
            ("-d foo:1", "Job dependency problem"),
            ("--frobnicate", "unrecognized option '--frobnicate'"),
            ("-Z", "invalid option -- 'Z'"),
            ("--time", "option '--time' requires an argument"),
            ("--hold=yes", "option '--hold' doesn't allow an argument"),
            (
                "-N 3-2",
                "Maximum node count 2 is less than minimum node count 3",
            ),
            ("-N abc", "\"abc\" is not a valid node count"),
            ("-N 2-x", "\"x\" is not a valid node count"),
            ("--exclusive=foo", "Invalid --exclusive specification"),
            ("--signal=FOO", "Invalid --signal specification"),
        ];
        for (args, want) in cases {
            assert_eq!(parse(args).unwrap_err().message, want, "{args}");
        }
    }

    #[test]
    fn each_command_has_slurms_own_table() {
        let run = |command, s: &str| {
            let mut o = JobOptions::default();
            parse_args(command, &words(s), &mut o).map(|rest| (o, rest))
        };
        let refusal = |command, s: &str| {
            let e = run(command, s).unwrap_err();
            (e.getopt, e.message)
        };
        // What one command has and another has not (glibc's words, as Slurm prints
        // them: an unknown long option quoted whole).
        for (command, s) in [
            (Command::Sbatch, "--label"),
            (Command::Sbatch, "--cpu-bind=none"),
            (Command::Srun, "--array=1-2"),
            (Command::Srun, "--wrap=x"),
            (Command::Salloc, "--output=x"),
        ] {
            assert_eq!(
                refusal(command, s),
                (true, format!("unrecognized option '{s}'")),
                "{command:?} {s}"
            );
        }
        let (o, rest) = run(Command::Srun, "-l -u --cpu_bind=none hostname").unwrap();
        assert!(o.label && o.unbuffered);
        assert_eq!(o.cpu_bind.as_deref(), Some("none"));
        assert_eq!(rest, ["hostname"]);
        // srun's --wait takes seconds; sbatch's is a flag.
        let (_, rest) = run(Command::Srun, "-W 5 hostname").unwrap();
        assert_eq!(rest, ["hostname"]);
        assert_eq!(
            refusal(Command::Sbatch, "--wait=5"),
            (true, "option '--wait' doesn't allow an argument".into())
        );
        // salloc's -K is --kill-command.
        let (o, _) = run(Command::Salloc, "-KINT").unwrap();
        assert_eq!(o.kill_command, Some(2));
        // --tasks-per-node is --ntasks-per-node under another name.
        let (o, _) = run(Command::Sbatch, "--tasks-per-node=3").unwrap();
        assert_eq!(o.ntasks_per_node, Some(3));
        // A real option Sluice cannot honour is refused in its own words.
        assert_eq!(
            refusal(Command::Srun, "--multi-prog conf"),
            (
                false,
                "option --multi-prog is not supported by Sluice".into()
            )
        );
        let (o, rest) = run(Command::Srun, "--pty bash").unwrap();
        assert!(o.pty);
        assert_eq!(rest, ["bash"]);
        // Options that would change where or as whom a job runs are refused rather
        // than accepted without effect.
        for (command, line, name) in [
            (Command::Sbatch, "--mincpus=2 --wrap x", "mincpus"),
            (Command::Srun, "--mincpus=2 true", "mincpus"),
            (Command::Salloc, "--mincpus=2", "mincpus"),
            (Command::Sbatch, "--tmp=100 --wrap x", "tmp"),
            (Command::Srun, "--tmp=100 true", "tmp"),
            (Command::Salloc, "--tmp=100", "tmp"),
            (
                Command::Sbatch,
                "--kill-on-invalid-dep=yes --wrap x",
                "kill-on-invalid-dep",
            ),
            (Command::Sbatch, "--uid=nobody --wrap x", "uid"),
            (Command::Sbatch, "--gid=nogroup --wrap x", "gid"),
            (Command::Srun, "--uid=nobody true", "uid"),
            (Command::Salloc, "--gid=nogroup", "gid"),
        ] {
            assert_eq!(
                refusal(command, line),
                (false, format!("option --{name} is not supported by Sluice")),
                "{command:?} {line}"
            );
        }
        // --version ends the line: what follows is not read.
        let (o, rest) = run(Command::Sbatch, "-V --bogus").unwrap();
        assert!(o.version && rest.is_empty());
        // --segment (Slurm 23.11's) answers to its whole name only: `--s` stays
        // ambiguous among 22.05's options alone.
        let (o, _) = run(Command::Sbatch, "--segment=2 --wrap x").unwrap();
        assert_eq!(o.segment, Some(2));
        assert_eq!(
            refusal(Command::Sbatch, "--seg=2"),
            (true, "unrecognized option '--seg=2'".into())
        );
        assert_eq!(
            refusal(Command::Sbatch, "--s"),
            (
                true,
                "option '--s' is ambiguous; possibilities: '--signal' '--sockets-per-node' \
                 '--spread-job' '--switches'"
                    .into()
            )
        );
    }

    #[test]
    fn the_tables_are_slurms() {
        // Every entry either names an option once, or is another name of an earlier
        // one of the same value kind; letters are unique.
        for command in [Command::Sbatch, Command::Srun, Command::Salloc] {
            let t = option_table(command);
            for (i, o) in t.iter().enumerate() {
                assert!(
                    !t[..i].iter().any(|p| p.long == o.long),
                    "{command:?}: --{} twice",
                    o.long
                );
                if o.name != o.long {
                    assert!(
                        t.iter().any(|p| p.long == o.name && p.has_arg == o.has_arg),
                        "{command:?}: --{} stands for no option",
                        o.long
                    );
                }
                if let Some(c) = o.short {
                    assert!(
                        !t[..i].iter().any(|p| p.short == Some(c)),
                        "{command:?}: -{c} twice"
                    );
                }
            }
        }
        // sbatch: 107 (Slurm's and `--segment`) and the 7 service options (Sluice's own).
        assert_eq!((SBATCH.len(), SRUN.len(), SALLOC.len()), (114, 132, 96));
    }

    #[test]
    fn a_mail_type_slurm_cannot_read_is_refused() {
        for bad in ["--mail-type=bogus", "--mail-type=", "--mail-type=,"] {
            let e = parse(&format!("{bad} job.sh")).unwrap_err();
            assert_eq!(e.message, "Invalid --mail-type specification", "{bad}");
        }
        // Unknown words beside a known type are passed over, as Slurm passes them over.
        for good in [
            "--mail-type=begin,bogus",
            "--mail-type=TIME_LIMIT_80",
            "--mail-type=none",
        ] {
            assert!(parse(&format!("{good} job.sh")).is_ok(), "{good}");
        }
    }

    #[test]
    fn an_array_string_or_mail_address_over_slurms_limit_is_a_refused_submission() {
        let checked = |line: &str| check_lengths(&parse(line).unwrap().0);
        let refused = |line: &str| {
            let e = checked(line).unwrap_err();
            assert!(e.refused, "a controller's refusal (exit 1)");
            e.message
        };
        // 4,096 bytes of array indexes are taken, 4,097 refused, however few tasks,
        // and before what they say is read.
        let taken = format!("10{}", ",1".repeat(2047));
        let over = format!("1{}", ",1".repeat(2048));
        assert_eq!((taken.len(), over.len()), (4096, 4097));
        assert!(checked(&format!("--array={taken} job.sh")).is_ok());
        let too_long = "Pathname of a file, directory or other parameter too long";
        assert_eq!(refused(&format!("--array={over} job.sh")), too_long);
        assert_eq!(refused(&format!("--array=x{over} job.sh")), too_long);
        // The mail address alike, at 1,024 bytes.
        let mail = |n: usize| format!("--mail-user={} job.sh", "u".repeat(n));
        assert!(checked(&mail(1024)).is_ok());
        assert_eq!(refused(&mail(1025)), too_long);
        // Only the value that stands counts: a later source replacing a long one.
        let mut opts = parse(&format!(
            "--array={over} --mail-user={} job.sh",
            "u".repeat(1025)
        ))
        .unwrap()
        .0;
        parse_args(
            Command::Sbatch,
            &["--array=1-3".into(), "--mail-user=a@b".into()],
            &mut opts,
        )
        .unwrap();
        assert!(check_lengths(&opts).is_ok());
        assert_eq!(opts.array.map(|a| a.indices), Some(vec![1, 2, 3]));
    }

    #[test]
    fn unimplemented_real_options_warn_instead_of_failing() {
        let (o, rest) = parse("--mail-type=END --mail-user=a@b -m block job.sh").unwrap();
        assert_eq!(o.warnings.len(), 3);
        assert_eq!(
            o.warnings[0],
            "option --mail-type is accepted but has no effect in Sluice yet"
        );
        assert_eq!(rest, ["job.sh"]);
    }

    #[test]
    fn a_malformed_acctg_freq_is_refused_in_slurms_words() {
        let (o, _) = parse("--acctg-freq=task=10,energy=0 job.sh").unwrap();
        assert_eq!(o.acctg_freq.as_deref(), Some("task=10,energy=0"));
        assert!(o.warnings.is_empty());
        let e = parse("--acctg-freq=task=abc job.sh").unwrap_err();
        assert_eq!(e.message, "Invalid --acctg-freq specification: task=abc");
    }

    #[test]
    fn sbatch_directives_stop_at_the_first_command() {
        let script = "#!/bin/bash\n#SBATCH --job-name=qwen-finetune\n#SBATCH --partition=train   \n\n# a comment\n#SBATCH -N 2 --ntasks-per-node=8 # two nodes\n#SBATCH  --comment=\"two words\"\n#SBATCHX --bogus\necho hi\n#SBATCH --time=5\n";
        assert_eq!(
            script_directives(script, "#SBATCH"),
            [
                "--job-name=qwen-finetune",
                "--partition=train",
                "-N",
                "2",
                "--ntasks-per-node=8",
                "--comment=two words"
            ]
        );
    }

    #[test]
    fn sbatch_lines_are_read_as_the_command_line_is() {
        // The same getopt rules: prefixes, clusters, attached values, `=`, ambiguity.
        let script =
            "#!/bin/sh\n#SBATCH --job-na=abbr -Hvn4\n#SBATCH --parti debug --time=5\necho\n";
        let mut o = JobOptions::default();
        let rest = parse_args(
            Command::Sbatch,
            &script_directives(script, "#SBATCH"),
            &mut o,
        );
        assert_eq!(rest, Ok(vec![]));
        assert_eq!(o.job_name.as_deref(), Some("abbr"));
        assert!(o.hold);
        assert_eq!((o.verbose, o.ntasks), (1, Some(4)));
        assert_eq!(o.partition.as_deref(), Some("debug"));
        assert_eq!(o.time, Some(Some(300)));
        let bad = "#!/bin/sh\n#SBATCH --nod 2\n";
        assert_eq!(
            parse_args(Command::Sbatch, &script_directives(bad, "#SBATCH"), &mut o)
                .unwrap_err()
                .message,
            "option '--nod' is ambiguous; possibilities: '--nodefile' '--nodelist' '--nodes'"
        );
    }

    #[test]
    fn the_seed_job_script_parses() {
        let script = include_str!("../tests/data/seed-job.sh");
        let mut o = JobOptions::default();
        let rest = parse_args(
            Command::Sbatch,
            &script_directives(script, "#SBATCH"),
            &mut o,
        )
        .unwrap();
        assert!(rest.is_empty());
        assert_eq!(o.job_name.as_deref(), Some("qwen-finetune"));
        assert_eq!(o.partition.as_deref(), Some("train"));
        assert_eq!(o.nodes, Some((2, 2)));
        assert_eq!(o.ntasks_per_node, Some(8));
        assert_eq!(o.gres.len(), 1);
        assert_eq!(o.time, Some(Some(12 * 3600)));
        assert_eq!(o.output.as_deref(), Some("logs/%j.out"));
    }
}
