//! Running processes for jobs: batch scripts and srun tasks, as their owners. This is
//! the work of a job's supervisor (`stepd`, slurmstepd's role), in a process of its own
//! beside the agent: one [`Exec`] per job run on this node.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{Gid, Pid, Uid};
use sluice_proto::service::{Health, HealthProbe, RestartCause, ServiceSpec};
use sluice_proto::types::{
    JobEnded, JobRecord, JobState, LaunchBatch, LaunchTasks, StepId, TaskEvent,
};
use sluice_proto::usage::StepUsage;
use tokio::sync::mpsc::Sender;

use crate::{cgroup, devices, leftovers, now};

/// The standard input of a step's tasks here that read srun's: (task, its pipe, or
/// its pseudo-terminal's master side under `srun --pty`).
pub(crate) type TaskInputs = Vec<(u32, File)>;

/// One run of one job on this node, as its supervisor runs it: its batch script (on
/// the job's first node) and its srun steps' tasks here.
pub(crate) struct Exec {
    /// This node's name.
    pub(crate) node: String,
    /// The uid the agent (and so the supervisor) runs as.
    pub(crate) own_uid: u32,
    /// The job.
    pub(crate) job: u64,
    /// Which run of it (its restart count).
    pub(crate) run: u32,
    /// The supervisor's directory: its record, socket, remembered process groups, end.
    pub(crate) dir: PathBuf,
    /// The node's jobs directory, where batch scripts are written.
    pub(crate) jobs_dir: PathBuf,
    /// Its processes and what was asked of them.
    pub(crate) procs: Mutex<Procs>,
    /// Standard input of steps' tasks here that read srun's, fed by srun: step →
    /// (owner uid, each task's pipe). Taken out while being written.
    pub(crate) stdins: Mutex<BTreeMap<u32, (u32, TaskInputs)>>,
    /// Where its memory cgroups are made; None: no limits here.
    pub(crate) memory: Option<cgroup::Memory>,
    /// Where its device cgroups are made; Err says why devices cannot be confined.
    pub(crate) devices: Result<devices::Devices, String>,
    /// Bumped whenever `procs` changes in a way the supervisor's watchers (the agent)
    /// or its exit check care about.
    pub(crate) changed: tokio::sync::watch::Sender<u64>,
    /// The events of the srun steps that ran here, kept until srun has them all
    /// (`stepd::StepLog`).
    pub(crate) steps: Mutex<BTreeMap<u32, crate::stepd::StepLog>>,
    /// Bumped whenever a step's events change (one more, one sent, the last).
    pub(crate) output: tokio::sync::watch::Sender<u64>,
    /// What its steps use here (`usage.rs`).
    pub(crate) usage: Mutex<crate::usage::tracker::Tracker>,
    /// Steps whose events srun had all before the agent's watch saw their end: step →
    /// (exit code, signal, when), kept in the status a while for the agent to report.
    pub(crate) forgotten: Mutex<BTreeMap<u32, (i32, i32, std::time::Instant)>>,
    /// Steps cancelled (`scancel JOB.STEP`) while their tasks were not all launched
    /// here: step → whether its srun was told already. Killed as they are launched.
    pub(crate) cancelled_early: Mutex<BTreeMap<u32, bool>>,
    /// The last sampling round's figures of the running steps, numbered.
    pub(crate) sampled: Mutex<(u64, Vec<(StepId, StepUsage)>)>,
}

/// A job run's processes here and what was asked of them.
#[derive(Debug, Default)]
pub(crate) struct Procs {
    /// A batch script runs (or ran) here; else only srun tasks do.
    pub(crate) batch: bool,
    /// The batch script's process (and session/process group) id, while it runs.
    pub(crate) pid: Option<i32>,
    /// Process groups of srun tasks of this job here.
    pub(crate) task_groups: Vec<i32>,
    /// The step of each of `task_groups`.
    pub(crate) group_steps: BTreeMap<i32, u32>,
    /// Set when the controller (or the time limit) ended the job: the state to report.
    pub(crate) ending: Option<JobState>,
    /// A time limit set after the launch (`scontrol update`), seconds from the start;
    /// `Some(None)`: unlimited.
    pub(crate) time_limit: Option<Option<i64>>,
    /// The job's GRES device files here, resolved at its launch, when its devices are
    /// confined (`ConstrainDevices=yes`): its srun steps here are confined by them too.
    pub(crate) devices: Option<Arc<devices::JobDevices>>,
    /// The batch script's end, once it has ended (kept, on disk too, until the
    /// controller has it).
    pub(crate) ended: Option<JobEnded>,
    /// The controller acknowledged the end (or nobody will report it: a shutdown).
    pub(crate) acknowledged: bool,
    /// srun steps being started here: the supervisor stays for them.
    pub(crate) launching: usize,
    /// The supervisor is leaving: no new step is taken.
    pub(crate) closing: bool,
    /// A service's restarts in place and health, for the agent to report
    /// (`service.rs`).
    pub(crate) service: Option<sluice_proto::service::ServiceReport>,
    /// Its processes are stopped by an operator (`scontrol suspend`): since when.
    pub(crate) suspended: Option<i64>,
    /// Seconds its processes stood stopped in suspensions that are over: its time
    /// limit (and a `--signal` before it) comes this much later.
    pub(crate) suspended_secs: i64,
    /// Suspended through the cgroup v2 freezer (its job cgroup's `cgroup.freeze`)
    /// rather than with SIGSTOP.
    pub(crate) frozen: bool,
}

impl Exec {
    /// Its processes, locked.
    pub(crate) fn procs(&self) -> MutexGuard<'_, Procs> {
        self.procs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Its steps' usage figures, locked.
    pub(crate) fn tracker(&self) -> MutexGuard<'_, crate::usage::tracker::Tracker> {
        self.usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells the watchers that something changed.
    pub(crate) fn touch(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// The batch script has ended as `ended`: kept on disk first (the agent may be
    /// down; a new one reads it there), then known to the watchers.
    pub(crate) fn batch_ended(&self, ended: JobEnded) {
        if let Err(e) = crate::stepd::write_whole(&self.dir.join(crate::stepd::END), &ended, true) {
            tracing::error!(
                "{}: job {}: cannot keep its end in {}: {e}",
                self.node,
                self.job,
                self.dir.display()
            );
        }
        self.procs().ended = Some(ended);
        self.touch();
    }
}

/// How a job's output and error files are opened: made where missing (0644), written
/// at their end.
fn appending() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.create(true).append(true).mode(0o644);
    o
}

/// Who a process runs as.
#[derive(Clone)]
struct Owner {
    uid: u32,
    gid: u32,
    user: CString,
    /// The agent must switch to this user (it is root and the job is someone else's).
    switch: bool,
    /// The user's groups (`getgrouplist`: the primary group included), looked up once,
    /// when first needed.
    groups: std::sync::OnceLock<Vec<Gid>>,
}

impl Owner {
    fn of(own_uid: u32, r: &JobRecord) -> Result<Owner, String> {
        let switch = own_uid == 0 && r.uid != 0;
        if own_uid != 0 && r.uid != own_uid {
            return Err(format!(
                "this node's agent runs as uid {own_uid} and cannot run jobs of uid {}",
                r.uid
            ));
        }
        Ok(Owner {
            uid: r.uid,
            gid: r.gid,
            user: CString::new(r.user.clone())
                .unwrap_or_else(|_| CString::new("nobody").expect("static")),
            switch,
            groups: std::sync::OnceLock::new(),
        })
    }

    /// The owner's groups, from the name service the first time.
    fn groups(&self) -> nix::Result<&[Gid]> {
        if let Some(groups) = self.groups.get() {
            return Ok(groups);
        }
        let groups = nix::unistd::getgrouplist(&self.user, Gid::from_raw(self.gid))?;
        Ok(self.groups.get_or_init(|| groups))
    }

    /// The identity this owner's processes take, resolved now, in the supervisor, before
    /// any fork: the supplementary groups come from the name service (`/etc/group`,
    /// LDAP, ...), which reads files, allocates and takes locks — none of which a child
    /// of this multi-threaded process may do between fork and exec, where another thread may
    /// have held such a lock at the fork (what `initgroups` there would risk: the child
    /// would wait forever for a lock nobody is left to release). A job has the groups
    /// its owner had when it (or its step) was launched.
    ///
    /// Errors: the groups cannot be read.
    fn identity(&self) -> Result<Identity, String> {
        if !self.switch {
            return Ok(Identity { switch: None });
        }
        let groups = self.groups().map_err(|e| {
            format!(
                "cannot read the groups of user {}: {}",
                self.user.to_string_lossy(),
                e.desc()
            )
        })?;
        Ok(Identity {
            switch: Some(Switch {
                uid: Uid::from_raw(self.uid),
                gid: Gid::from_raw(self.gid),
                groups: groups.to_vec(),
            }),
        })
    }

    /// Runs `f` with the owner's rights on files (`fs_identity`): a path the job names
    /// is opened, created or searched as its owner could, never as the supervisor's
    /// root. A job of the supervisor's own user runs `f` here.
    fn as_owner<T: Send>(
        &self,
        f: impl FnOnce() -> std::io::Result<T> + Send,
    ) -> std::io::Result<T> {
        if self.switch {
            let groups = self.groups().map_err(std::io::Error::from)?;
            crate::fs_identity::as_user(self.uid, self.gid, groups, f)
        } else {
            f()
        }
    }

    /// Opens an output file as its owner, creating its directory where missing (as
    /// the owner: theirs, where they may make it), unless that is in the job's working
    /// directory `work_dir` and it is missing: a working directory is never made (a
    /// mistyped `-D` fails the job, as in Slurm, rather than run it in a new one). A
    /// file or directory made here takes the job's `umask` too (`SLURM_UMASK`: a
    /// submitter's 077 makes its output 0600, as slurmstepd opens it).
    fn open_output(
        &self,
        path: &str,
        append: bool,
        work_dir: &str,
        umask: Option<libc::mode_t>,
    ) -> std::io::Result<File> {
        let mask = umask.unwrap_or(0o022);
        self.as_owner(|| {
            if let Some(dir) = Path::new(path).parent() {
                let in_missing_work_dir =
                    dir.starts_with(work_dir) && !Path::new(work_dir).exists();
                if !dir.as_os_str().is_empty() && !dir.exists() && !in_missing_work_dir {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o777 & !mask)
                        .create(dir)?;
                }
            }
            // Always O_APPEND (truncated first unless appending), as slurmstepd opens
            // it: slurmstepd's own lines (`*** JOB 12 ON n1 CANCELLED ... ***`) then
            // land after what the job wrote instead of under its next write.
            // A new file's mode is the job's umask alone: the agent's own umask (a
            // narrower 022 under 002) does not narrow it further, as it does not in
            // slurmstepd, which runs with the job's.
            let mode = 0o666 & !mask;
            let f = match appending().create_new(true).mode(mode).open(path) {
                Ok(f) => {
                    // Best effort: a file system without modes (vfat) keeps its own.
                    let _ = f.set_permissions(std::fs::Permissions::from_mode(mode));
                    f
                }
                // Not made here (there already, or a server that says why not
                // differently): opened as it is.
                Err(_) => appending().mode(mode).open(path)?,
            };
            // (Only a regular file is truncated: `-o /dev/null` is not one.)
            if !append && f.metadata()?.is_file() {
                f.set_len(0)?;
            }
            Ok(f)
        })
    }

    /// Opens the error file to add a line of slurmstepd's (a notice) as its owner:
    /// never waiting (a FIFO without a reader refuses at once rather than holding the
    /// supervisor), never truncating, making no directory.
    fn open_notice(&self, path: &str) -> std::io::Result<File> {
        self.as_owner(|| appending().custom_flags(libc::O_NONBLOCK).open(path))
    }

    /// Opens an input file as its owner.
    fn open_input(&self, path: &str) -> std::io::Result<File> {
        self.as_owner(|| File::open(path))
    }
}

/// The cgroup that step `step` (`batch`, `step_0`, ...) of job `r` runs in here, with the
/// job's memory limit; None when the job has none (`mem_per_node` 0) or this node cannot
/// enforce it (the agent said so at start; a failure for this job alone is logged here).
fn memory_step(exec: &Exec, r: &JobRecord, step: &str) -> Option<cgroup::Step> {
    let memory = exec.memory.as_ref()?;
    if r.mem_per_node == 0 {
        return None;
    }
    match memory.step(r.id, r.restarts, step, r.mem_per_node) {
        Ok(s) => Some(s),
        Err(why) => {
            tracing::warn!(
                "{}: job {}: memory limit not enforced: {why}",
                exec.node,
                r.id
            );
            None
        }
    }
}

/// The job's GRES device files here, resolved, when the launch order asks to confine
/// its devices (`ConstrainDevices=yes`) and this host can; None otherwise. Files that
/// are not here (a GPU-less machine's gres.conf) are left out, said in one line of the
/// agent's log, as is a host that cannot confine devices.
fn job_devices(exec: &Exec, order: &LaunchBatch) -> Option<Arc<devices::JobDevices>> {
    resolve_devices(exec, order.devices.as_ref()?)
}

/// Job `id`'s GRES device files `files` resolved here (see [`job_devices`]); None when
/// this host cannot confine devices (logged).
pub(crate) fn resolve_devices(
    exec: &Exec,
    files: &[sluice_proto::types::DeviceFile],
) -> Option<Arc<devices::JobDevices>> {
    let id = exec.job;
    if let Err(why) = &exec.devices {
        tracing::warn!(
            "{}: job {id}: device access not confined (ConstrainDevices=yes): {why}",
            exec.node
        );
        return None;
    }
    let (resolved, skipped) = devices::JobDevices::resolve(files);
    if !skipped.is_empty() {
        tracing::info!(
            "{}: job {id}: ConstrainDevices: left out GRES device files that are not \
             device files here: {}",
            exec.node,
            skipped.join(", ")
        );
    }
    Some(Arc::new(resolved))
}

/// The device cgroup that step `step` of job `r` runs in here, denying it the devices
/// of `job` it may not open (a step with GPUs `step_gpus` is held to them); None when
/// nothing is denied, or on a failure (logged here: the job runs unconfined).
fn devices_step(
    exec: &Exec,
    r: &JobRecord,
    step: &str,
    job: &devices::JobDevices,
    step_gpus: &[u32],
) -> Option<devices::Step> {
    let d = exec.devices.as_ref().ok()?;
    match d.step(r.id, r.restarts, step, job, step_gpus) {
        Ok(s) => s,
        Err(why) => {
            tracing::warn!(
                "{}: job {}: device access not confined: {why}",
                exec.node,
                r.id
            );
            None
        }
    }
}

/// Who a process is started as, everything the child needs resolved beforehand (see
/// [`Owner::identity`]).
#[derive(Clone)]
struct Identity {
    /// The user, primary group and supplementary groups to switch to; None when the
    /// process stays the agent's user (a job of the agent's own user).
    switch: Option<Switch>,
}

/// The user a process switches to between fork and exec.
#[derive(Clone)]
struct Switch {
    uid: Uid,
    gid: Gid,
    /// The owner's supplementary groups (`getgrouplist`: the primary group included).
    groups: Vec<Gid>,
}

impl Identity {
    /// A command that starts in a session of its own, as this identity, in the cgroups
    /// whose `cgroup.procs` files are `cgroups` (memory, devices), in directory `cwd`
    /// (or `/tmp`, with supervisor `who`'s notice `notices` times, when the user cannot
    /// enter it: see [`crate::fs_identity::Chdir`]).
    #[allow(clippy::too_many_arguments)]
    fn command(
        &self,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: &str,
        cgroups: &[CString],
        who: &str,
        notices: usize,
    ) -> Command {
        let mut cmd = Command::new(program);
        // The environment is installed by the child itself (with its own pid in
        // `SLURM_TASK_PID`): the command keeps the inherited one, which it would
        // otherwise put back after the closure below.
        cmd.args(args);
        let mut task_env = crate::task_env::TaskEnv::new(env);
        // Entered by the child once it is the user (not by `current_dir`, which the
        // child would enter still as root).
        let chdir = crate::fs_identity::Chdir::new(cwd, who, notices);
        // Moved into the closure, made here: the child only reads them.
        let switch = self.switch.clone();
        let cgroups = cgroups.to_vec();
        // SAFETY: between fork and exec the child makes only async-signal-safe system
        // calls, and neither allocates nor takes a lock: open, write and close of
        // cgroup.procs (`join_self`: the paths were made beforehand, the pid is written
        // from a stack buffer), setsid, setgroups (the list was resolved beforehand, by
        // `Owner::identity`), setgid, setuid, chdir (and a write of its notice made
        // beforehand, `fs_identity::Chdir`), and the environment's install (getpid and
        // writes into buffers made before the fork). Errors become `io::Error`s from
        // their errno, which allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                // Joined first, while still privileged, and before anything is started
                // that could escape the limits. A failure leaves the job unlimited rather
                // than failed.
                for procs in &cgroups {
                    let _ = cgroup::join_self(procs);
                }
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                if let Some(s) = &switch {
                    // Groups first: only root may set them, and after setuid it is not.
                    nix::unistd::setgroups(&s.groups).map_err(std::io::Error::from)?;
                    nix::unistd::setgid(s.gid).map_err(std::io::Error::from)?;
                    nix::unistd::setuid(s.uid).map_err(std::io::Error::from)?;
                }
                chdir.enter()?;
                task_env.install();
                Ok(())
            });
        }
        cmd
    }
}

/// The umask a job's or step's environment asks its processes to start with
/// (`SLURM_UMASK`, octal, which sbatch and srun set to their own), as slurmstepd reads
/// it; none where it is missing or unreadable.
fn submitted_umask(env: &[(String, String)]) -> Option<libc::mode_t> {
    // The last of the name, as the environment's install takes it.
    let (_, v) = env.iter().rev().find(|(k, _)| k == "SLURM_UMASK")?;
    libc::mode_t::from_str_radix(v.trim(), 8)
        .ok()
        .map(|m| m & 0o777)
}

/// Has `cmd`'s process set `umask` before it starts.
fn with_umask(cmd: &mut Command, umask: Option<libc::mode_t>) {
    if let Some(mask) = umask {
        // SAFETY: umask is async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
    }
}

/// The `cgroup.procs` files a step's processes join: its memory and device cgroups.
fn cgroup_procs(memory: Option<&cgroup::Step>, devices: Option<&devices::Step>) -> Vec<CString> {
    memory
        .map(|m| m.procs().to_owned())
        .into_iter()
        .chain(devices.map(|d| d.procs().to_owned()))
        .collect()
}

fn state_of(status: &ExitStatus) -> (JobState, i32, i32) {
    match (status.code(), status.signal()) {
        (Some(0), _) => (JobState::Completed, 0, 0),
        (Some(c), _) => (JobState::Failed, c, 0),
        (None, Some(s)) => (JobState::Failed, 0, s),
        _ => (JobState::Failed, 1, 0),
    }
}

/// How long a service's process must have run for its next restart's backoff to start
/// over at one second.
const STEADY: Duration = Duration::from_secs(60);

/// Runs a batch script to its end and keeps its end ([`Exec::batch_ended`]) for the
/// agent to report. A service's script is started again in place as its restart
/// policy and health check say (`service.rs`), after a backoff and up to its cap;
/// beyond the cap the job ends `FAILED`.
pub(crate) async fn batch(exec: Arc<Exec>, order: LaunchBatch) {
    let r = &order.job;
    let id = r.id;
    let spec = r.desc.service.clone();
    let report = |restarts: u32, health, last| sluice_proto::service::ServiceReport {
        job_id: id,
        run: r.restarts,
        restarts,
        health,
        last,
        at: now(),
    };
    if let Some(s) = &spec {
        let health = if s.health.is_some() {
            Health::Starting
        } else {
            Health::None
        };
        exec.procs().service = Some(report(0, health, None));
    }
    let mut restarts = 0;
    // Restarts in a row, for the backoff: a process that ran `STEADY` starts it over.
    let mut streak = 0;
    // A restart in place appends to the output files the first start opened, as a
    // requeued run does: what an earlier process said before it died is kept.
    let mut this_start = order.clone();
    let (state, code, signal) = loop {
        let began = tokio::time::Instant::now();
        let (state, code, signal, unhealthy) = batch_once(&exec, &this_start).await;
        this_start.job.desc.append = true;
        if began.elapsed() >= STEADY {
            streak = 0;
        }
        let Some(s) = spec.as_ref().filter(|_| exec.procs().ending.is_none()) else {
            break (state, code, signal);
        };
        let capped = s.max_restarts.is_some_and(|m| restarts >= m);
        let again = if unhealthy {
            !capped
        } else {
            s.restarts_after(code, signal, restarts)
        };
        if !again {
            // Past its cap a service has failed, however its last process ended.
            let state = if capped { JobState::Failed } else { state };
            break (state, code, signal);
        }
        restarts += 1;
        streak += 1;
        let cause = if unhealthy {
            RestartCause::Unhealthy
        } else {
            RestartCause::Exited
        };
        let wait = ServiceSpec::backoff_secs(streak);
        tracing::info!(
            "{}: service job {id}: {cause:?} (exit {code}:{signal}); restart {restarts} in {wait}s",
            exec.node
        );
        // The backoff, cut short by an end the controller asks for.
        let until = tokio::time::Instant::now() + Duration::from_secs(wait);
        while tokio::time::Instant::now() < until && exec.procs().ending.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if let Some(ending) = exec.procs().ending {
            break (ending, code, signal);
        }
        let health = if s.health.is_some() {
            Health::Starting
        } else {
            Health::None
        };
        exec.procs().service = Some(report(restarts, health, Some((cause, code, signal))));
        exec.touch();
    };
    let ended_at = now();
    end_leftovers(&exec, order.kill_wait).await;
    exec.batch_ended(JobEnded {
        job_id: id,
        run: r.restarts,
        node: exec.node.clone(),
        state,
        exit_code: code,
        signal,
        end: ended_at,
        // This node's figures of the batch step (the script's process tree).
        usage: exec.tracker().usage(StepId::Batch).map(Box::new),
    });
}

/// Runs the batch script once, to its end: how it ended, and whether its health check
/// ended it (a service's).
async fn batch_once(exec: &Arc<Exec>, order: &LaunchBatch) -> (JobState, i32, i32, bool) {
    let exec = exec.clone();
    let order = order.clone();
    let r = &order.job;
    let id = r.id;
    let memory = memory_step(&exec, r, "batch");
    {
        let mut t = exec.tracker();
        t.job_frequency(r.desc.acctg_freq.as_deref());
        t.cgroup(StepId::Batch, memory.as_ref().map(cgroup::Step::place));
        if let Some(gpus) = r
            .nodes
            .iter()
            .position(|n| *n == exec.node)
            .and_then(|i| r.gpus_per_node.get(i))
        {
            t.gpus(StepId::Batch, gpus);
        }
    }
    let job_devices = job_devices(&exec, &order);
    if let Some(d) = &job_devices {
        exec.procs().devices = Some(d.clone());
    }
    let devices = job_devices
        .as_ref()
        .and_then(|d| devices_step(&exec, r, "batch", d, &[]));
    // `--export=NONE`: the owner's login environment under the job's, read off the
    // supervisor's runtime (a login shell may take its time).
    let login = if crate::login_env::asked(&order.environment) {
        let (e, job) = (exec.clone(), order.job.clone());
        match tokio::task::spawn_blocking(move || login_environment(&e, &job)).await {
            Ok(Ok(env)) => env,
            Ok(Err(why)) => {
                tracing::error!(
                    "{}: job {id}: Unable to get user's local environment: {why}",
                    exec.node
                );
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    } else {
        Vec::new()
    };
    let started = start_batch(
        &exec,
        &order,
        login,
        &cgroup_procs(memory.as_ref(), devices.as_ref()),
    );
    let child = match started {
        Ok(c) => c,
        Err(why) => {
            let _ = tokio::task::spawn_blocking(move || {
                if let Some(m) = memory {
                    m.finish();
                }
                if let Some(d) = devices {
                    d.finish();
                }
            })
            .await;
            tracing::warn!("{}: job {id}: {why}", exec.node);
            // (Written before what failed, where it was the output or input.)
            let _ = std::fs::remove_file(script_path(&exec.jobs_dir, r));
            // Tell the user where they will look.
            if let Ok(owner) = Owner::of(exec.own_uid, r) {
                if let Ok(mut f) = owner.open_notice(&r.stderr) {
                    let _ = writeln!(f, "{}: error: {why}", stepd(&exec.node));
                }
            }
            return (JobState::Failed, 1, 0, false);
        }
    };
    let pid = child.id() as i32;
    crate::tree::own_child(pid);
    // Remembered first: a supervisor killed from here on leaves its job to be ended.
    let key = format!("{id}.batch");
    leftovers::remember(&exec.dir, &key, pid);
    exec.tracker().task_started(StepId::Batch, 0, pid);
    tracing::info!(
        "{}: Launching batch job {id} for UID {} (run {}, pid {pid})",
        exec.node,
        r.uid,
        r.restarts
    );
    let ended_before_start = {
        let mut procs = exec.procs();
        procs.pid = Some(pid);
        procs.ending
    };
    exec.touch();
    if ended_before_start.is_some() {
        // The controller ended the job while its script was being started: the order
        // found no process then, so it is carried out now.
        kill_job(exec.clone(), order.kill_wait);
    }
    if let Ok(owner) = Owner::of(exec.own_uid, r) {
        notices().insert(
            (exec.node.clone(), id, r.restarts),
            (r.stderr.clone(), owner),
        );
    }
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
    let waiter = exec.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(wait_measured(&waiter, StepId::Batch, 0, child));
    });
    let start = r.start_time.unwrap_or_else(now);
    let mut limit = r.time_limit;
    let mut deadline = limit.map(|l| start + l);
    let mut signal_at = r
        .desc
        .signal
        .and_then(|(sig, before, batch_only)| deadline.map(|d| (d - before, sig, batch_only)));
    let mut timed_out = false;
    let until = |t: i64| tokio::time::sleep(Duration::from_secs((t - now()).max(0) as u64));
    // A service's health check: the first probe one interval after the start.
    let check = r.desc.service.as_ref().and_then(|s| s.health.clone());
    let every = Duration::from_secs(check.as_ref().map_or(3600, |c| c.interval_secs.max(1)) as u64);
    let mut next_probe = tokio::time::Instant::now() + every;
    let mut checks = crate::service::Checks::default();
    let mut unhealthy = false;
    let status = loop {
        // `scontrol update TimeLimit=` moves the deadline, and a --signal not yet sent.
        let changed = exec.procs().time_limit.filter(|l| *l != limit);
        if let Some(l) = changed {
            limit = l;
            deadline = l.map(|l| start + l);
            signal_at = signal_at.and_then(|(_, sig, batch_only)| {
                let (_, before, _) = r.desc.signal.expect("a pending signal was asked for");
                deadline.map(|d| (d - before, sig, batch_only))
            });
        }
        // Suspended time does not count: while suspended nothing is due, and after it
        // all comes as much later as it lasted.
        let (stopped, shift) = {
            let procs = exec.procs();
            (procs.suspended.is_some(), procs.suspended_secs)
        };
        let due = |t: Option<i64>| match t {
            Some(t) if !stopped => t + shift,
            _ => i64::MAX / 4,
        };
        let sig_sleep = until(due(signal_at.map(|s| s.0)));
        let limit_sleep = until(if timed_out {
            i64::MAX / 4
        } else {
            due(deadline)
        });
        tokio::select! {
            st = &mut done_rx => break st.ok().and_then(Result::ok),
            _ = sig_sleep, if signal_at.is_some() && !stopped => {
                let (_, sig, batch_only) = signal_at.take().expect("guarded");
                signal_job(&exec, sig, batch_only);
            }
            _ = limit_sleep, if deadline.is_some() && !timed_out && !stopped => {
                timed_out = true;
                let first = {
                    let mut procs = exec.procs();
                    let first = procs.ending.is_none();
                    procs.ending.get_or_insert(JobState::Timeout);
                    first
                };
                // Already being ended (cancelled, requeued): its processes have had
                // their SIGTERM.
                if first {
                    end_notice(&exec.node, id, r.restarts, JobState::Timeout);
                    kill_job(exec.clone(), order.kill_wait);
                }
            }
            _ = tokio::time::sleep_until(next_probe), if check.is_some() && !unhealthy => {
                let c = check.as_ref().expect("guarded");
                let ok = probe(&exec, &order, &c.probe, every).await;
                next_probe = tokio::time::Instant::now() + every;
                let restart = checks.record(ok, c.retries);
                let changed = {
                    let mut procs = exec.procs();
                    let s = procs.service.as_mut();
                    match s {
                        Some(s) if s.health != checks.health() => {
                            s.health = checks.health();
                            s.at = now();
                            true
                        }
                        _ => false,
                    }
                };
                if changed {
                    exec.touch();
                }
                if restart && exec.procs().ending.is_none() {
                    tracing::info!(
                        "{}: service job {id}: {} health checks failed in a row; restarting it",
                        exec.node,
                        c.retries
                    );
                    unhealthy = true;
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            // Look at the limit again now and then.
            _ = tokio::time::sleep(Duration::from_secs(1)), if !timed_out => {}
        }
    };
    if r.desc.service.is_some() {
        // What the service's script left in its process group goes with it (a
        // server it started in the background), before it is started again.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
    leftovers::forget(&exec.dir, &key);
    notices().remove(&(exec.node.clone(), id, r.restarts));
    // The batch step is over: what it left in its cgroup is killed, and an OOM kill in
    // it is reported as slurmstepd reports it, on the job's stderr.
    exec.tracker().cgroup_ending(StepId::Batch);
    let oom_kills = tokio::task::spawn_blocking(move || {
        let kills = memory.map_or(0, cgroup::Step::finish);
        if let Some(d) = devices {
            d.finish();
        }
        kills
    })
    .await
    .unwrap_or(0);
    if oom_kills > 0 {
        if let Ok(mut f) = Owner::of(exec.own_uid, r)
            .and_then(|o| o.open_notice(&r.stderr).map_err(|e| e.to_string()))
        {
            let _ = writeln!(f, "{}", cgroup::oom_message(&exec.node, oom_kills, &key));
        }
    }
    let (ending, tasks_left, script) = {
        let mut procs = exec.procs();
        let script = procs.pid.take();
        (procs.ending, !procs.task_groups.is_empty(), script)
    };
    // What the script left behind in its session (background processes, one that
    // ignored or missed SIGTERM) is killed at once, as slurmstepd SIGKILLs the batch
    // step's processes once its script is done: the job does not stay running (or
    // COMPLETING) for KillWait on it. srun tasks lead sessions of their own: they, and
    // whatever left the script's session, end as below.
    if let Some(sid) = script {
        tokio::task::spawn_blocking(move || crate::tree::signal_session(Signal::SIGKILL, sid))
            .await
            .ok();
    }
    // Step tasks still running here end with the job, as slurmd ends them: SIGCONT
    // and SIGTERM (already sent when the controller ended the job), SIGKILL after
    // KillWait. (`end_leftovers` waits for them, and for any other process of the
    // job, before the end is reported.)
    if tasks_left && ending.is_none() {
        kill_job(exec.clone(), order.kill_wait);
    }
    let (state, code, signal) = match &status {
        Some(s) => state_of(s),
        None => (JobState::Failed, 1, 0),
    };
    // As slurmstepd: an OOM kill anywhere in the batch step makes the job
    // OUT_OF_MEMORY with Slurm's SIG_OOM, whatever the script's own exit (it may have
    // survived its killed child); an end the controller asked for (a cancel, the time
    // limit) still wins.
    let (state, code, signal) = match ending {
        Some(s) => (s, code, signal),
        None if oom_kills > 0 => (JobState::OutOfMemory, 0, cgroup::OOM_SIGNAL),
        None => (state, code, signal),
    };
    tracing::info!(
        "{}: [{id}.batch] done with job: {} ExitCode={code}:{signal}",
        exec.node,
        state.name()
    );
    let _ = std::fs::remove_file(script_path(&exec.jobs_dir, r));
    (state, code, signal, unhealthy)
}

/// One health probe of a service: its command (as the job's user, in its working
/// directory and environment; healthy when it exits 0 within `limit`), or an HTTP GET
/// on this node (healthy on a 2xx answer within `limit`).
async fn probe(exec: &Exec, order: &LaunchBatch, probe: &HealthProbe, limit: Duration) -> bool {
    let limit = limit.min(Duration::from_secs(10));
    match probe {
        HealthProbe::Url(u) => match sluice_proto::service::url_port(u) {
            Some(port) => {
                crate::service::http_ok(port, sluice_proto::service::url_path(u), limit).await
            }
            None => false,
        },
        HealthProbe::Command(c) => {
            let r = &order.job;
            let Ok(identity) = Owner::of(exec.own_uid, r).and_then(|o| o.identity()) else {
                return false;
            };
            let mut cmd = identity.command(
                "/bin/sh",
                &["-c".to_string(), c.clone()],
                &order.environment,
                &r.desc.work_dir,
                &[],
                &stepd(&exec.node),
                2,
            );
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let Ok(mut child) = cmd.spawn() else {
                return false;
            };
            let pid = child.id() as i32;
            crate::tree::own_child(pid);
            let waited = tokio::task::spawn_blocking(move || {
                let status = child.wait();
                crate::tree::own_child_reaped(pid);
                status
            });
            match tokio::time::timeout(limit, waited).await {
                Ok(Ok(Ok(status))) => status.success(),
                _ => {
                    // Too slow: it and what it started go.
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                    false
                }
            }
        }
    }
}

/// Where a run's batch script is written in the node's jobs directory: one file per
/// run, so a run that is ending never removes the script of the run after it.
pub(crate) fn script_path(jobs_dir: &Path, r: &JobRecord) -> PathBuf {
    jobs_dir.join(format!("{}.{}.sh", r.id, r.restarts))
}

/// Waits for task `task` of `step` (process `child`) to end and reaps it: its tree is
/// read once more as it has exited, and its `rusage` taken (`usage::tracker`).
/// Blocking.
fn wait_measured(
    exec: &Exec,
    step: StepId,
    task: u32,
    child: std::process::Child,
) -> std::io::Result<ExitStatus> {
    let pid = child.id() as i32;
    crate::usage::wait_exited(pid);
    exec.tracker().task_exiting(step, task);
    let (status, rusage) = crate::usage::reap(pid);
    crate::tree::own_child_reaped(pid);
    exec.tracker().task_ended(step, task, rusage);
    // Reaped here: `child` is not waited for again.
    drop(child);
    status
}

/// The login environment of job `r`'s owner (`login_env`), read by running their
/// login shell as them.
fn login_environment(exec: &Exec, r: &JobRecord) -> Result<Vec<(String, String)>, String> {
    let owner = Owner::of(exec.own_uid, r)?;
    let identity = owner.identity()?;
    let user = nix::unistd::User::from_uid(Uid::from_raw(r.uid))
        .ok()
        .flatten()
        .ok_or_else(|| format!("no user {} in the password database", r.uid))?;
    let (program, args, env, cwd) = crate::login_env::command(
        &user.name,
        r.uid,
        &user.dir.display().to_string(),
        &user.shell.display().to_string(),
    );
    let mut cmd = identity.command(&program, &args, &env, &cwd, &[], "slurmstepd", 2);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| {
        format!(
            "cannot run {program}: {}",
            sluice_proto::oserror::describe(&e)
        )
    })?;
    crate::login_env::collect(child, crate::login_env::TIMEOUT)
}

/// Starts job `order`'s batch script, its environment the order's over `base` (the
/// owner's login environment for `--export=NONE`, else nothing).
fn start_batch(
    exec: &Exec,
    order: &LaunchBatch,
    base: Vec<(String, String)>,
    cgroups: &[CString],
) -> Result<std::process::Child, String> {
    let r = &order.job;
    let owner = Owner::of(exec.own_uid, r)?;
    let identity = owner.identity()?;
    let script = script_path(&exec.jobs_dir, r);
    std::fs::write(&script, &r.desc.script).map_err(|e| format!("cannot write the script: {e}"))?;
    let _ = std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700));
    if owner.switch {
        let _ = nix::unistd::chown(
            &script,
            Some(Uid::from_raw(owner.uid)),
            Some(Gid::from_raw(owner.gid)),
        );
    }
    // The submitter's umask: its output files are made with it, and the script runs
    // with it (`with_umask` below).
    let umask = submitted_umask(&order.environment);
    let open = |path: &str, which: &str| {
        owner
            .open_output(path, r.desc.append, &r.desc.work_dir, umask)
            .map_err(|e| {
                format!(
                    "Could not open {which} file {path}: {}",
                    sluice_proto::oserror::describe(&e)
                )
            })
    };
    let out = open(&r.stdout, "stdout")?;
    let err = if r.stderr == r.stdout {
        out.try_clone().map_err(|e| e.to_string())?
    } else {
        open(&r.stderr, "stderr")?
    };
    let input: Stdio = if r.stdin == "/dev/null" {
        Stdio::null()
    } else {
        owner.open_input(&r.stdin).map(Stdio::from).map_err(|e| {
            format!(
                "Could not open stdin file {}: {}",
                r.stdin,
                sluice_proto::oserror::describe(&e)
            )
        })?
    };
    let mut environment = base;
    environment.extend(order.environment.iter().cloned());
    // slurmstepd's default when the job brings none.
    if !environment.iter().any(|(k, _)| k == "TMPDIR") {
        environment.push(("TMPDIR".into(), "/tmp".into()));
    }
    // The submitter's umask, which the script runs with and no longer sees (as
    // slurmstepd takes it out of a batch script's environment; its sruns pass their
    // own on).
    environment.retain(|(k, _)| k != "SLURM_UMASK");
    let mut cmd = identity.command(
        &script.display().to_string(),
        &r.desc.script_args,
        &environment,
        &r.desc.work_dir,
        cgroups,
        &stepd(&exec.node),
        2,
    );
    with_umask(&mut cmd, umask);
    cmd.stdout(out).stderr(err).stdin(input);
    // The script was just written: a process forked elsewhere in this process at that
    // moment holds the written file open until it execs, and exec then fails with
    // ETXTBSY. That passes within moments; try again.
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e)
                if e.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32) && tries < 100 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => {
                return other.map_err(|e| {
                    format!(
                        "cannot run the batch script: {}",
                        sluice_proto::oserror::describe(&e)
                    )
                })
            }
        }
    }
}

/// Sends `signal` to the job's processes here: the batch shell only, or its srun tasks
/// (Slurm's default, which leaves the batch shell alone even when it runs no tasks).
pub(crate) fn signal_job(exec: &Exec, signal: i32, batch_only: bool) {
    let procs = exec.procs();
    if batch_only {
        if let Some(pid) = procs.pid {
            raw_kill(pid, signal);
        }
    } else {
        for g in &procs.task_groups {
            raw_kill(-*g, signal);
        }
    }
}

/// `kill(2)` with any signal number, real-time ones included (which `nix`'s `Signal`
/// does not name): a number no signal has is refused by the kernel (`EINVAL`) and,
/// as Slurm's slurmstepd does, ignored. A negative `pid` is a process group.
fn raw_kill(pid: i32, signal: i32) {
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    let _ = unsafe { libc::kill(pid, signal) };
}

/// Sends `signal` to the tasks of step `step` here (its srun aborts it).
pub(crate) fn signal_step(exec: &Exec, step: u32, signal: i32) {
    let procs = exec.procs();
    for (g, _) in procs.group_steps.iter().filter(|(_, s)| **s == step) {
        raw_kill(-*g, signal);
    }
}

/// Stops (`suspend`) or continues the job's processes here, at the controller's
/// request (`scontrol suspend`/`resume`, or preemption by suspension): through the
/// cgroup v2 freezer where the job has a cgroup here (`cgroup.freeze` of its job
/// cgroup: every process in it, steps started later included, as Slurm's
/// `proctrack/cgroup` does), else SIGSTOP or SIGCONT to the batch script's process
/// group and to every srun task's, as Slurm's `proctrack/linuxproc` does. Its time
/// limit does not run while they are stopped. Asking twice the same changes nothing.
pub(crate) fn suspend_job(exec: &Exec, suspend: bool) {
    let mut procs = exec.procs();
    let now = now();
    match (suspend, procs.suspended) {
        (true, None) => procs.suspended = Some(now),
        (false, Some(since)) => {
            procs.suspended_secs += (now - since).max(0);
            procs.suspended = None;
        }
        _ => return,
    }
    if suspend {
        procs.frozen = freeze(exec, true);
        if procs.frozen {
            return;
        }
    } else if std::mem::take(&mut procs.frozen) && freeze(exec, false) {
        return;
    }
    let sig = if suspend {
        Signal::SIGSTOP
    } else {
        Signal::SIGCONT
    };
    for g in procs
        .pid
        .into_iter()
        .chain(procs.task_groups.iter().copied())
    {
        let _ = killpg(Pid::from_raw(g), sig);
    }
}

/// Freezes (or thaws) the job's cgroup v2 here; false when it has none (no memory
/// cgroups here, cgroup v1) or the write failed: signals do it then.
fn freeze(exec: &Exec, freeze: bool) -> bool {
    let Some(memory) = exec.memory.as_ref() else {
        return false;
    };
    if memory.version() != cgroup::Version::V2 {
        return false;
    }
    let file = memory
        .node_dir()
        .join(cgroup::job_dir_name(exec.job, exec.run))
        .join("cgroup.freeze");
    file.exists() && cgroup::write(&file, if freeze { "1" } else { "0" }).is_ok()
}

/// Ends the job at the controller's request: reported as `state`.
/// An order for a job already being ended changes nothing: its processes have had
/// their SIGTERM (a second would run a batch script's trap again) and get SIGKILL
/// after the first order's `KillWait`.
pub(crate) fn terminate(exec: Arc<Exec>, state: JobState, kill_wait: i64) {
    let (first, again) = {
        let mut procs = exec.procs();
        let again = procs.ending.is_some();
        let first = !again && procs.ended.is_none();
        procs.ending.get_or_insert(state);
        (first, again)
    };
    if again {
        return;
    }
    if first {
        end_notice(&exec.node, exec.job, exec.run, state);
    }
    kill_job(exec, kill_wait);
}

/// Ends the job as its cluster stops (`sluice up` stopping): SIGTERM, SIGKILL after
/// `grace` seconds, no notice in its output, and its end reported to nobody.
pub(crate) fn shut_down(exec: Arc<Exec>, grace: i64) {
    {
        let mut procs = exec.procs();
        procs.ending.get_or_insert(JobState::NodeFail);
        procs.acknowledged = true;
    }
    exec.touch();
    kill_job(exec, grace);
}

/// The stderr file (and its owner) of each batch job running here, keyed by node, job
/// and run: where slurmstepd's notice of an end the job did not choose goes.
fn notices() -> std::sync::MutexGuard<'static, Notices> {
    static NOTICES: Mutex<Notices> = Mutex::new(std::collections::BTreeMap::new());
    NOTICES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

type Notices = std::collections::BTreeMap<(String, u64, u32), (String, Owner)>;

/// How slurmstepd on node `node` names itself in the lines it writes to a job's output:
/// `slurmstepd-n1`, as Slurm 22.05 does with one slurmd per node name (Debian's build,
/// the reference the differential suite compares against; a build without that
/// support says plain `slurmstepd`).
pub(crate) fn stepd(node: &str) -> String {
    format!("slurmstepd-{node}")
}

/// Writes slurmstepd's notice that batch job `job` is being ended (cancelled, requeued,
/// preempted or at its time limit) to its stderr, as Slurm does:
/// `slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT 2026-11-29T20:04:20 DUE TO TIME LIMIT ***`.
fn end_notice(node: &str, job: u64, run: u32, state: JobState) {
    let why = match state {
        JobState::Cancelled => "",
        JobState::Timeout => " DUE TO TIME LIMIT",
        JobState::Requeued => " DUE TO JOB REQUEUE",
        JobState::Preempted => " DUE TO PREEMPTION",
        _ => return,
    };
    let Some((path, owner)) = notices().get(&(node.to_string(), job, run)).cloned() else {
        return;
    };
    if let Ok(mut f) = owner.open_notice(&path) {
        let _ = writeln!(
            f,
            "{}: error: *** JOB {job} ON {node} CANCELLED AT {}{why} ***",
            stepd(node),
            sluice_proto::time::timestamp(now())
        );
    }
}

/// SIGCONT and SIGTERM to all of the job's process groups here, SIGKILL `kill_wait`
/// seconds later to those left.
///
/// Every other process the job started here goes the same way: those that left its
/// process groups (their own group or session, `setsid`, a daemon) are still the
/// supervisor's descendants (`tree.rs`).
fn kill_job(exec: Arc<Exec>, kill_wait: i64) {
    let groups = |exec: &Exec| -> Vec<i32> {
        let procs = exec.procs();
        procs
            .pid
            .into_iter()
            .chain(procs.task_groups.iter().copied())
            .collect()
    };
    // A frozen job is thawed first, so that its processes see SIGTERM.
    if std::mem::take(&mut exec.procs().frozen) {
        freeze(&exec, false);
    }
    // The groups signalled: a group killpg could not reach is left to the pass over
    // the descendants.
    let signalled: Vec<i32> = groups(&exec)
        .into_iter()
        .filter(|&g| {
            let _ = killpg(Pid::from_raw(g), Signal::SIGCONT);
            killpg(Pid::from_raw(g), Signal::SIGTERM).is_ok()
        })
        .collect();
    // Each process once: those in the groups have had theirs.
    crate::tree::signal_descendants(Signal::SIGCONT, &signalled);
    crate::tree::signal_descendants(Signal::SIGTERM, &signalled);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(kill_wait.max(0) as u64)).await;
        for g in groups(&exec) {
            let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
        }
        let left = crate::tree::signal_descendants(Signal::SIGKILL, &[]);
        if left > 0 {
            tracing::info!(
                "{}: job {}: {left} process(es) of it still there after KillWait={kill_wait}s: killed",
                exec.node,
                exec.job
            );
        }
    });
}

/// What the job left running here once its batch script has ended (its steps' tasks,
/// processes that left the script's session: the rest was killed with its end) is ended — SIGTERM, SIGKILL
/// after `kill_wait` (already under way when the job was told to end) — and waited
/// for, so that the script's end is reported only once nothing of the job is left on
/// this node.
async fn end_leftovers(exec: &Arc<Exec>, kill_wait: i64) {
    let left = |exec: &Exec| !exec.procs().task_groups.is_empty() || !crate::tree::none_left();
    if !left(exec) {
        return;
    }
    if exec.procs().ending.is_none() {
        kill_job(exec.clone(), kill_wait);
    }
    // SIGKILL comes at `kill_wait`; a process stuck in the kernel may take longer.
    let until = tokio::time::Instant::now() + Duration::from_secs(kill_wait.max(0) as u64 + 30);
    while left(exec) && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts a step's tasks on this node and streams their output and exits to `tx`.
///
/// `fetched` are the job's devices here as the controller gave them, for a node that
/// did not launch the job's batch script (its other nodes, interactive allocations).
pub(crate) fn tasks(
    exec: Arc<Exec>,
    record: JobRecord,
    order: LaunchTasks,
    fetched: Option<Arc<devices::JobDevices>>,
    tx: Sender<TaskEvent>,
) {
    let owner = match Owner::of(exec.own_uid, &record) {
        Ok(o) => o,
        Err(message) => {
            let _ = tx.try_send(TaskEvent::Error { message });
            return;
        }
    };
    let Some(program) = order.argv.first().cloned() else {
        let _ = tx.try_send(TaskEvent::Error {
            message: "no command".into(),
        });
        return;
    };
    tracing::info!(
        "{}: launch task StepId={}.{} request from UID:{} GID:{}: {} task(s) here",
        exec.node,
        order.job_id,
        order.step,
        record.uid,
        record.gid,
        order.tasks.len()
    );
    // Once for the step's tasks here, before any is forked.
    let identity = match owner.identity() {
        Ok(i) => i,
        Err(message) => {
            let _ = tx.try_send(TaskEvent::Error { message });
            return;
        }
    };
    // The step's cgroups here, ended by the last of its tasks to end (or by this
    // function, should they all end before it has started them all). Its devices are
    // confined by the job's batch launch here (an srun step only narrows them, to the
    // GPUs of its tasks here, so what srun says of them is never trusted further).
    let step_name = format!("step_{}", order.step);
    let job_devices = exec.procs().devices.clone().or(fetched);
    let mut step_gpus: Vec<u32> = order.task_gpus.iter().flatten().copied().collect();
    step_gpus.sort_unstable();
    step_gpus.dedup();
    let end = Arc::new(StepEnd {
        left: AtomicUsize::new(order.tasks.len() + 1),
        memory: Mutex::new(memory_step(&exec, &record, &step_name)),
        devices: Mutex::new(
            job_devices
                .as_ref()
                .and_then(|d| devices_step(&exec, &record, &step_name, d, &step_gpus)),
        ),
        name: format!("{}.{}", order.job_id, order.step),
        node: exec.node.clone(),
        task: order.tasks.first().copied().unwrap_or(0),
        exec: exec.clone(),
        step: StepId::Number(order.step),
    });
    let step_id = end.step;
    {
        let mut t = exec.tracker();
        t.job_frequency(record.desc.acctg_freq.as_deref());
        t.cgroup(
            step_id,
            end.memory
                .lock()
                .expect("lock")
                .as_ref()
                .map(cgroup::Step::place),
        );
        t.gpus(step_id, &step_gpus);
    }
    let procs = cgroup_procs(
        end.memory.lock().expect("lock").as_ref(),
        end.devices.lock().expect("lock").as_ref(),
    );
    let gtids = order
        .tasks
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // What slurmstepd sets on each node whatever srun's environment holds (Snakemake's
    // srun has none of the job's variables but its id; and a batch script's
    // SLURM_CPUS_ON_NODE is its first node's): the step's CPUs here, as slurmd counts
    // them (all of the job's, or with `--exact` or `-c` what the step's tasks ask).
    let cpus_on_node = order
        .cpus
        .or_else(|| {
            record
                .nodes
                .iter()
                .position(|n| *n == exec.node)
                .and_then(|i| record.cpus_per_node.get(i).copied())
        })
        .unwrap_or(1);
    // Whether the job holds whole GPUs (not shards) on any of its nodes.
    let whole_gpus = record.gpus_per_node.iter().any(|g| !g.is_empty());
    // The pipes of the tasks reading srun's input, made known once all are started:
    // srun's first chunk then reaches every one of them.
    let mut stdins: TaskInputs = Vec::new();
    for (local, &task) in order.tasks.iter().enumerate() {
        let mut env = order.environment.clone();
        env.retain(|(k, _)| {
            !matches!(
                k.as_str(),
                "SLURM_PROCID"
                    | "SLURM_LOCALID"
                    | "SLURM_NODEID"
                    | "SLURM_GTIDS"
                    | "SLURM_CPUS_ON_NODE"
                    | "SLURM_JOB_UID"
                    | "SLURM_JOB_GID"
                    | "SLURM_JOB_USER"
                    | "SLURM_TOPOLOGY_ADDR"
                    | "SLURM_TOPOLOGY_ADDR_PATTERN"
            )
        });
        env.push(("SLURM_CPUS_ON_NODE".into(), cpus_on_node.to_string()));
        env.push(("SLURM_JOB_UID".into(), record.uid.to_string()));
        env.push(("SLURM_JOB_GID".into(), record.gid.to_string()));
        env.push(("SLURM_JOB_USER".into(), record.user.clone()));
        env.push(("SLURM_PROCID".into(), task.to_string()));
        env.push(("SLURM_LOCALID".into(), local.to_string()));
        env.push(("SLURM_NODEID".into(), order.node_index.to_string()));
        env.push(("SLURM_GTIDS".into(), gtids.clone()));
        env.push(("SLURMD_NODENAME".into(), exec.node.clone()));
        // Where the node is in the network's topology: without a switch hierarchy
        // known to the agent, the node itself.
        env.push(("SLURM_TOPOLOGY_ADDR".into(), exec.node.clone()));
        env.push(("SLURM_TOPOLOGY_ADDR_PATTERN".into(), "node".into()));
        // The step's GPU count on this node, as Slurm's gres/gpu plugin sets it for
        // each of its tasks, whatever srun's environment held (a batch script's
        // SLURM_GPUS_ON_NODE is its first node's; a step may hold fewer).
        if whole_gpus {
            env.retain(|(k, _)| k != "SLURM_GPUS_ON_NODE");
            if !step_gpus.is_empty() {
                env.push(("SLURM_GPUS_ON_NODE".into(), step_gpus.len().to_string()));
            }
        }
        if let Some(g) = order.task_gpus.get(local).filter(|g| !g.is_empty()) {
            let list = g.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
            env.retain(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "CUDA_VISIBLE_DEVICES"
                        | "ROCR_VISIBLE_DEVICES"
                        | "GPU_DEVICE_ORDINAL"
                        | "ZE_AFFINITY_MASK"
                )
            });
            for k in [
                "CUDA_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES",
                "GPU_DEVICE_ORDINAL",
                "ZE_AFFINITY_MASK",
            ] {
                env.push((k.into(), list.clone()));
            }
            env.push(("SLURM_STEP_GPUS".into(), list));
        } else if whole_gpus {
            // None here: the first node's GPUs that srun's environment names are not
            // this task's (Slurm unsets them).
            env.retain(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "CUDA_VISIBLE_DEVICES"
                        | "ROCR_VISIBLE_DEVICES"
                        | "GPU_DEVICE_ORDINAL"
                        | "ZE_AFFINITY_MASK"
                        | "SLURM_STEP_GPUS"
                )
            });
        }
        let mut cmd = identity.command(
            &program,
            &order.argv[1..],
            &env,
            &order.work_dir,
            &procs,
            &stepd(&exec.node),
            // Once for the step on this node and once for each of its tasks here, as
            // slurmstepd writes it: the first task writes the step's too.
            if local == 0 { 2 } else { 1 },
        );
        with_umask(&mut cmd, submitted_umask(&env));
        let feed = order.stdin && order.stdin_task.is_none_or(|t| t == task);
        // `srun --pty`: task 0 on a terminal of its own (its master side kept here).
        let mut terminal: Option<File> = None;
        if let Some(size) = order.pty.filter(|_| task == 0) {
            match crate::pty::for_task(size, record.uid, record.gid) {
                Ok((master, [input, output, error])) => {
                    cmd.stdin(input).stdout(output).stderr(error);
                    // SAFETY: one ioctl, after the session is made.
                    unsafe {
                        cmd.pre_exec(crate::pty::make_controlling);
                    }
                    terminal = Some(master);
                }
                Err(e) => {
                    let _ = tx.blocking_send_or_try(TaskEvent::Error {
                        message: format!("{}: cannot open a pseudo-terminal: {e}", exec.node),
                    });
                }
            }
        }
        if terminal.is_none() {
            cmd.stdin(if feed { Stdio::piped() } else { Stdio::null() })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        }
        let spawned = cmd.spawn();
        // The slave side's copies held for the child are closed here, so that the
        // terminal hangs up (its reader ends) once the task's processes are gone.
        drop(cmd);
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send_or_try(TaskEvent::Output {
                    task,
                    stream: 2,
                    data: format!(
                        "{}: error: execve(): {program}: {}\n",
                        stepd(&exec.node),
                        sluice_proto::oserror::describe(&e)
                    ),
                });
                let _ = tx.blocking_send_or_try(TaskEvent::Exit {
                    task,
                    code: 2,
                    signal: 0,
                });
                end.done(&tx);
                continue;
            }
        };
        let pid = child.id() as i32;
        crate::tree::own_child(pid);
        exec.tracker().task_started(step_id, task, pid);
        // Known here so that the controller's terminate and signal orders reach the
        // task, whether or not this node runs the job's batch script.
        {
            let mut procs = exec.procs();
            procs.task_groups.push(pid);
            procs.group_steps.insert(pid, order.step);
            // A step started while its job stands suspended stops at once, as the
            // job's other processes are (it goes on when they do).
            if procs.suspended.is_some() && !procs.frozen {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGSTOP);
            }
        }
        if let Some(pipe) = child.stdin.take() {
            stdins.push((task, File::from(std::os::fd::OwnedFd::from(pipe))));
        }
        let key = format!("{}.task-{pid}", order.job_id);
        leftovers::remember(&exec.dir, &key, pid);
        let reader = match terminal {
            Some(master) => {
                match master.try_clone() {
                    Ok(input) if feed => stdins.push((task, input)),
                    _ => {}
                }
                crate::pty::forward_output(task, master, tx.clone())
            }
            None => forward_output(task, child.stdout.take(), child.stderr.take(), tx.clone()),
        };
        let tx = tx.clone();
        let exec = exec.clone();
        let step = order.step;
        let end = end.clone();
        std::thread::spawn(move || {
            let status = wait_measured(&exec, step_id, task, child);
            leftovers::forget(&exec.dir, &key);
            // Its input goes nowhere now; its pipe is closed.
            {
                let mut stdins = exec.stdins.lock().expect("lock");
                if let Some((_, pipes)) = stdins.get_mut(&step) {
                    pipes.retain(|(t, _)| *t != task);
                    if pipes.is_empty() {
                        stdins.remove(&step);
                    }
                }
            }
            let _ = reader.join();
            {
                let mut procs = exec.procs();
                procs.task_groups.retain(|g| *g != pid);
                procs.group_steps.remove(&pid);
            }
            exec.touch();
            let (code, signal) = match &status {
                Ok(s) => (s.code().unwrap_or(0), s.signal().unwrap_or(0)),
                Err(_) => (1, 0),
            };
            end.done(&tx);
            let _ = tx.blocking_send(TaskEvent::Exit { task, code, signal });
        });
    }
    if !stdins.is_empty() {
        exec.stdins
            .lock()
            .expect("lock")
            .insert(order.step, (record.uid, stdins));
    }
    end.done(&tx);
}

/// Sends task `task`'s standard output and error to `tx` line by line (a last line
/// without a newline at the end), in the order the task wrote them: one thread watches
/// both pipes, so that a line written to stderr before one written to stdout (a
/// shell's note of a signal, then its trap's output) reaches srun first, as through
/// slurmstepd. Lines both ready at once go stderr first.
fn forward_output(
    task: u32,
    stdout: Option<std::process::ChildStdout>,
    stderr: Option<std::process::ChildStderr>,
    tx: Sender<TaskEvent>,
) -> std::thread::JoinHandle<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::io::Read;
    use std::os::fd::{AsFd, OwnedFd};
    std::thread::spawn(move || {
        // (stream, pipe, bytes read but not yet sent), stderr first.
        let mut pipes: Vec<(u8, File, Vec<u8>)> = [
            (2u8, stderr.map(OwnedFd::from)),
            (1u8, stdout.map(OwnedFd::from)),
        ]
        .into_iter()
        .filter_map(|(stream, fd)| fd.map(|fd| (stream, File::from(fd), Vec::new())))
        .collect();
        let send = |stream: u8, bytes: &[u8]| {
            let data = String::from_utf8_lossy(bytes).into_owned();
            // srun went away: keep draining so the task does not block.
            let _ = tx.blocking_send(TaskEvent::Output { task, stream, data });
        };
        let mut chunk = vec![0u8; 64 * 1024];
        while !pipes.is_empty() {
            let ready: Vec<bool> = {
                let mut fds: Vec<PollFd> = pipes
                    .iter()
                    .map(|(_, f, _)| PollFd::new(f.as_fd(), PollFlags::POLLIN))
                    .collect();
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) => fds
                        .iter()
                        .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                        .collect(),
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => vec![true; fds.len()],
                }
            };
            let mut closed = Vec::new();
            for (i, (stream, file, pending)) in pipes.iter_mut().enumerate() {
                if !ready[i] {
                    continue;
                }
                let n = match file.read(&mut chunk) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => 0,
                };
                if n == 0 {
                    if !pending.is_empty() {
                        send(*stream, pending);
                    }
                    closed.push(i);
                    continue;
                }
                pending.extend_from_slice(&chunk[..n]);
                while let Some(at) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=at).collect();
                    send(*stream, &line);
                }
            }
            for i in closed.into_iter().rev() {
                pipes.remove(i);
            }
        }
    })
}

/// A step's share of this node, ended once: `left` counts its tasks still running here,
/// plus one for the launch itself.
struct StepEnd {
    left: AtomicUsize,
    memory: Mutex<Option<cgroup::Step>>,
    devices: Mutex<Option<devices::Step>>,
    /// The step as Slurm names it: `JOB.STEP`.
    name: String,
    /// This node's name.
    node: String,
    /// The task whose stderr carries slurmstepd's messages: the first one here.
    task: u32,
    /// The supervisor's figures, whose step cgroup is read a last time at its end.
    exec: Arc<Exec>,
    /// The step.
    step: StepId,
}

impl StepEnd {
    /// One task (or the launch) is done. The last one removes the step's cgroups, off
    /// the async runtime as that may wait for stragglers, and tells srun of OOM kills on
    /// the step's stderr, as slurmstepd does, before the stream ends.
    fn done(self: &Arc<Self>, tx: &Sender<TaskEvent>) {
        if self.left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        self.exec.tracker().cgroup_ending(self.step);
        let memory = self.memory.lock().expect("lock").take();
        let devices = self.devices.lock().expect("lock").take();
        if memory.is_none() && devices.is_none() {
            return;
        }
        let (end, tx) = (self.clone(), tx.clone());
        let report = move || {
            let kills = memory.map_or(0, cgroup::Step::finish);
            if let Some(d) = devices {
                d.finish();
            }
            if kills > 0 {
                let _ = tx.blocking_send(TaskEvent::Output {
                    task: end.task,
                    stream: 2,
                    data: format!("{}\n", cgroup::oom_message(&end.node, kills, &end.name)),
                });
                let _ = tx.blocking_send(TaskEvent::OutOfMemory {
                    task: end.task,
                    kills: kills as u32,
                });
            }
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::spawn(report);
        } else {
            report();
        }
    }
}

trait SendOrTry {
    fn blocking_send_or_try(&self, e: TaskEvent) -> Result<(), ()>;
}

impl SendOrTry for Sender<TaskEvent> {
    /// Sends from either a runtime thread (try) or a plain thread (blocking).
    fn blocking_send_or_try(&self, e: TaskEvent) -> Result<(), ()> {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.try_send(e).map_err(|_| ())
        } else {
            self.blocking_send(e).map_err(|_| ())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events `forward_output` sends for a shell running `script`.
    fn output_of(script: &str) -> Vec<(u8, String)> {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let reader = forward_output(7, child.stdout.take(), child.stderr.take(), tx);
        child.wait().unwrap();
        reader.join().unwrap();
        let mut got = Vec::new();
        while let Ok(e) = rx.try_recv() {
            match e {
                TaskEvent::Output { task, stream, data } => {
                    assert_eq!(task, 7);
                    got.push((stream, data));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        got
    }

    #[test]
    fn output_keeps_the_order_the_task_wrote_it_in_across_streams() {
        // A shell's note of a signal (stderr), then its trap's line (stdout), then more.
        assert_eq!(
            output_of("echo 'User defined signal 1' >&2; echo 'step got USR1'; printf 'a\\nb'"),
            vec![
                (2, "User defined signal 1\n".to_string()),
                (1, "step got USR1\n".to_string()),
                (1, "a\n".to_string()),
                // The last line, without its newline, at the end.
                (1, "b".to_string()),
            ]
        );
    }

    #[test]
    fn slurmstepd_names_its_node() {
        assert_eq!(stepd("n1"), "slurmstepd-n1");
    }

    /// `id`'s numbers: uid, gid and the sorted group list.
    fn ids(out: &str) -> (u32, u32, Vec<u32>) {
        let mut lines = out.lines();
        let mut num = || lines.next().unwrap_or_default().trim().to_string();
        let (uid, gid, groups) = (num(), num(), num());
        let mut groups: Vec<u32> = groups
            .split_whitespace()
            .map(|g| g.parse().unwrap())
            .collect();
        groups.sort_unstable();
        (uid.parse().unwrap(), gid.parse().unwrap(), groups)
    }

    /// As root (as agents run): processes started as another user by many threads at
    /// once — while yet more threads read the group database and allocate, as a busy
    /// agent's do, the moments a child of the old code could inherit a held lock —
    /// each run as that user, with its primary group and exactly its supplementary
    /// groups (not root's), and none hangs between fork and exec.
    #[test]
    fn processes_started_at_once_by_many_threads_run_as_their_owner() {
        use std::sync::atomic::AtomicBool;
        use std::time::Instant;
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (to start processes as another user, as agents do)");
            return;
        }
        let Ok(Some(user)) = nix::unistd::User::from_uid(Uid::from_raw(65534)) else {
            eprintln!("skipped: needs a user 65534 (nobody) to run processes as");
            return;
        };
        let owner = Owner {
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            user: CString::new(user.name.clone()).unwrap(),
            switch: true,
            groups: std::sync::OnceLock::new(),
        };
        let mut expected: Vec<u32> = nix::unistd::getgrouplist(&owner.user, user.gid)
            .unwrap()
            .iter()
            .map(|g| g.as_raw())
            .collect();
        expected.sort_unstable();
        expected.dedup();
        assert!(!expected.contains(&0), "{expected:?}");
        // This process, root, gets supplementary group 0 (harmless: it is root's own
        // group): a child that kept the agent's groups would show it.
        nix::unistd::setgroups(&[Gid::from_raw(0)]).unwrap();
        let expected = (owner.uid, owner.gid, expected);

        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..4)
            .map(|_| {
                let (stop, name) = (stop.clone(), owner.user.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let groups = nix::unistd::getgrouplist(&name, Gid::from_raw(65534));
                        let _ = nix::unistd::Group::from_gid(Gid::from_raw(0));
                        let _ = std::hint::black_box((groups, vec![0u8; 4096]));
                    }
                })
            })
            .collect();
        let starters: Vec<_> = (0..16)
            .map(|_| {
                let owner = owner.clone();
                std::thread::spawn(move || {
                    (0..8)
                        .map(|_| {
                            let identity = owner.identity().unwrap();
                            let mut child = identity
                                .command(
                                    "sh",
                                    &["-c".into(), "id -u; id -g; id -G".into()],
                                    &[("PATH".into(), "/usr/bin:/bin".into())],
                                    "/",
                                    &[],
                                    "slurmstepd",
                                    2,
                                )
                                .stdout(Stdio::piped())
                                .spawn()
                                .unwrap();
                            let start = Instant::now();
                            loop {
                                if child.try_wait().unwrap().is_some() {
                                    break;
                                }
                                if start.elapsed() > Duration::from_secs(60) {
                                    let _ = child.kill();
                                    panic!("a child hung between fork and exec");
                                }
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            let mut out = String::new();
                            std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out)
                                .unwrap();
                            ids(&out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let seen: Vec<(u32, u32, Vec<u32>)> = starters
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        stop.store(true, Ordering::Relaxed);
        for b in busy {
            b.join().unwrap();
        }
        assert_eq!(seen.len(), 128);
        for s in seen {
            assert_eq!(s, expected);
        }
    }

    /// A process of the agent's own user keeps the agent's identity (nothing to switch).
    #[test]
    fn a_process_of_the_agents_own_user_keeps_its_identity() {
        let owner = Owner {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            user: CString::new("whoever").unwrap(),
            switch: false,
            groups: std::sync::OnceLock::new(),
        };
        let identity = owner.identity().unwrap();
        assert!(identity.switch.is_none());
        let out = identity
            .command(
                "sh",
                &["-c".into(), "id -u; id -g; id -G".into()],
                &[("PATH".into(), "/usr/bin:/bin".into())],
                "/",
                &[],
                "slurmstepd",
                2,
            )
            .output()
            .unwrap();
        let (uid, gid, _) = ids(&String::from_utf8_lossy(&out.stdout));
        assert_eq!((uid, gid), (owner.uid, owner.gid));
    }
}
