//! The agent's side of its jobs' supervisors (`stepd.rs`): starting one for a job run,
//! talking to it over its socket, watching it for the batch script's end (reported to
//! the controller until acknowledged, then acknowledged to the supervisor), and, when
//! the agent starts, adopting those an earlier agent left running.
//!
//! Architecture invariant: the agent never ends a job on its own. A job whose
//! supervisor runs is ended by the controller's word only (a cancel, a requeue, or the
//! registration's reconciliation of a run the controller no longer gives this node);
//! what the agent ends by itself are processes nobody supervises any more (a
//! supervisor that died: its remembered process groups), since nobody could report
//! their end.

use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use sluice_proto::types::{JobEnded, JobState, LaunchBatch};
use sluice_proto::usage::UsageReport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::unix::OwnedReadHalf;

use crate::stepd::{self, Launch, Reply, Request, Status};
use crate::{leftovers, now, report, App, Running};

/// How long a supervisor may take to answer after it was started (or, when adopted,
/// while it holds its lock without answering yet).
const START_PATIENCE: Duration = Duration::from_secs(30);

/// A supervisor, reached at its socket.
#[derive(Debug)]
pub(crate) struct Handle {
    pub(crate) dir: PathBuf,
    pub(crate) socket: stepd::Endpoint,
}

/// The events following a supervisor's reply, one JSON line each.
pub(crate) type EventLines = Lines<BufReader<OwnedReadHalf>>;

impl Handle {
    /// Sends `request` and reads the reply; the connection's further lines follow.
    pub(crate) async fn open(&self, request: &Request) -> Result<(Reply, EventLines), String> {
        let socket = &self.socket;
        let stream = socket
            .connect()
            .await
            .map_err(|e| format!("{socket}: {e}"))?;
        let (read, mut write) = stream.into_split();
        let mut line = serde_json::to_vec(request).expect("requests serialise");
        line.push(b'\n');
        write
            .write_all(&line)
            .await
            .map_err(|e| format!("{socket}: {e}"))?;
        // The supervisor reads one line: the write half may go (it shuts the writing
        // direction only).
        drop(write);
        let mut lines = BufReader::new(read).lines();
        let reply = lines
            .next_line()
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "slurmstepd closed the connection".to_string())?;
        let reply: Reply = serde_json::from_str(&reply).map_err(|e| e.to_string())?;
        Ok((reply, lines))
    }

    /// Sends `request`; its reply.
    pub(crate) async fn ask(&self, request: &Request) -> Result<Reply, String> {
        self.open(request).await.map(|(reply, _)| reply)
    }
}

/// The directory of the supervisor of run `run` of `job` in the node's jobs directory.
pub(crate) fn dir_of(jobs_dir: &Path, job: u64, run: u32) -> PathBuf {
    jobs_dir.join(format!("{job}.{run}"))
}

/// The job and run a supervisor's directory (its name) belongs to.
fn run_of(dir: &Path) -> Option<(u64, u32)> {
    let name = dir.file_name()?.to_str()?;
    let (job, run) = name.split_once('.')?;
    Some((job.parse().ok()?, run.parse().ok()?))
}

/// Whether a live supervisor holds the lock in `dir` (its record; a separate `lock`
/// file where a supervisor of an earlier version runs): tried without waiting, and
/// released at once when it was free.
///
/// Only a lock file that is not there is free: one that cannot be opened (out of
/// descriptors, say) counts as held, so that a live supervisor is never taken for dead.
fn held(dir: &Path) -> bool {
    let open = |name: &str| std::fs::File::open(dir.join(name));
    let f = match open(stepd::OLD_LOCK) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match open(stepd::LAUNCH) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
            Err(_) => return true,
        },
        Err(_) => return true,
    };
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).is_err()
}

/// Whether the lock in `dir` is still held after up to a second of tries.
async fn held_for_a_moment(dir: &Path) -> bool {
    for _ in 0..100 {
        if !held(dir) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Where supervisors log: set by the program that runs the agent (the agent's own log
/// file and level).
static LOG: std::sync::OnceLock<(PathBuf, String)> = std::sync::OnceLock::new();

/// Has the agents' job supervisors log to `file` at Slurm debug level `level` (as
/// slurmstepd logs to slurmd's log file). Without it they log to the agent's standard
/// error, which they inherit.
pub fn log_to(file: PathBuf, level: &str) {
    let _ = LOG.set((file, level.to_string()));
}

/// Starts the supervisor of run `run` of `job` (its batch script `batch`, or srun tasks
/// only) and waits until it answers.
///
/// Errors: its directory cannot be made, or it does not start.
pub(crate) async fn start(
    agent: &App,
    job: u64,
    run: u32,
    batch: Option<LaunchBatch>,
) -> Result<Arc<Handle>, String> {
    let dir = dir_of(&agent.jobs_dir(), job, run);
    let (name, token) = stepd::Endpoint::fresh().map_err(|e| format!("{}: {e}", dir.display()))?;
    let launch = Launch {
        node: agent.node.clone(),
        job,
        run,
        own_uid: agent.own_uid,
        jobs_dir: agent.jobs_dir(),
        memory: agent.memory.clone(),
        devices: agent.devices.clone(),
        batch,
        log: LOG.get().cloned(),
        gather: crate::usage::settings(),
        socket: Some(name),
        token: Some(token),
    };
    let socket = stepd::Endpoint::of(&dir, &launch);
    let made = dir.clone();
    let spawned = tokio::task::spawn_blocking(move || spawn(&made, &launch))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    let child = match spawned {
        Ok(child) => child,
        Err(why) => {
            // Nothing runs: a later agent must not find its record and report the run
            // again.
            let _ = std::fs::remove_dir_all(&dir);
            return Err(why);
        }
    };
    let handle = Arc::new(Handle { dir, socket });
    let start = Instant::now();
    loop {
        if handle.socket.connect().await.is_ok() {
            return Ok(handle);
        }
        if child.is_finished() || start.elapsed() > START_PATIENCE {
            let _ = std::fs::remove_dir_all(&handle.dir);
            return Err(format!(
                "slurmstepd for job {job} did not start (see the agent's log)"
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The supervisors' own binary, `sluice-stepd` beside the agent's, opened when the agent
/// starts ([`find_supervisor_binary`]); `None` where there is none.
static SUPERVISOR_BINARY: OnceLock<Option<std::fs::File>> = OnceLock::new();

/// The build `sluice-stepd` must answer `--build-id` with ([`expect_build`]).
static EXPECTED_BUILD: OnceLock<&'static str> = OnceLock::new();

/// Names the build this agent is of (`sluice`'s build identifier), before it starts:
/// only a `sluice-stepd` of the same build starts its supervisors. Without it, they
/// start from the agent's own binary.
pub fn expect_build(build: &'static str) {
    let _ = EXPECTED_BUILD.set(build);
}

/// Finds, once, the binary this agent (of node `node`) starts its jobs' supervisors
/// from: `sluice-stepd` installed next to the agent's own binary (the supervisor's code
/// alone, a seventh of the size, so that each job's supervisor starts faster and holds
/// half the memory for as long as the job runs) where it is trusted and of the agent's
/// build ([`expect_build`], [`crate::companion::beside`]), or else the agent's own
/// binary (`sluice`, which is a supervisor too when run as `stepd`); which, and why,
/// is logged. The file is kept open: an upgrade that installs a new binary under the
/// same name while the agent runs does not change what the agent starts.
pub(crate) fn find_supervisor_binary(node: &str) {
    SUPERVISOR_BINARY.get_or_init(|| {
        let exe = std::fs::read_link("/proc/self/exe").ok()?;
        let build = EXPECTED_BUILD.get()?;
        match crate::companion::beside(&exe, "sluice-stepd", build) {
            Ok(Some(file)) => {
                let path = exe.with_file_name("sluice-stepd");
                tracing::info!("{node}: jobs' supervisors start from {}", path.display());
                Some(file)
            }
            Ok(None) => None,
            Err(why) => {
                tracing::warn!(
                    "{node}: {why}: jobs' supervisors start from the agent's own binary, {}",
                    exe.display()
                );
                None
            }
        }
    });
}

/// The program a supervisor is started as: the binary [`find_supervisor_binary`] found,
/// through the agent's descriptor of it, or the agent's own binary.
fn supervisor_program() -> PathBuf {
    match SUPERVISOR_BINARY.get().and_then(Option::as_ref) {
        Some(file) => PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())),
        None => PathBuf::from("/proc/self/exe"),
    }
}

/// Makes the supervisor's directory and record and starts it, holding its lock from
/// before the start (see `stepd.rs`); a thread waits for its exit. Blocking.
fn spawn(dir: &Path, launch: &Launch) -> Result<std::thread::JoinHandle<()>, String> {
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    // What an earlier try left (a launch retried after a failed start).
    let _ = std::fs::remove_dir_all(dir);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(io)?;
    // The record is the lock too (one file fewer per job): locked before a byte of it
    // is written, so that a new agent never reads a record being written as that of a
    // supervisor that died.
    let mut lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(stepd::LAUNCH))
        .map_err(io)?;
    // (flock(2) itself, not nix's `Flock`, whose drop would unlock the lock the child
    // shares: closing this copy later leaves it held.)
    // SAFETY: the descriptor is open, owned by `lock`.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    let record = serde_json::to_vec(launch).map_err(|e| format!("{}: {e}", dir.display()))?;
    lock.write_all(&record).map_err(io)?;
    // No step between fork and exec, so that the agent is spawned (`posix_spawn`,
    // with the C library's `addchdir`: glibc 2.29 and later) rather than forked (a
    // copy of its memory map per job): the lock goes as the supervisor's standard
    // input, which it moves to a descriptor of its own before it starts anything
    // (`Stepd::run`), and it is in a process group of its own from its start, so
    // that the agent's end, or a signal to the agent's process group (Ctrl-C or
    // Ctrl-Z where `sluice up` runs in a terminal), does not reach it.
    let mut cmd = Command::new(supervisor_program());
    cmd.arg0("slurmstepd")
        .arg("stepd")
        .arg(dir)
        .arg("--lock-fd")
        .arg("0")
        .stdin(Stdio::from(lock))
        .stdout(Stdio::null())
        .process_group(0)
        .current_dir("/");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start slurmstepd: {e}"))?;
    // The child holds the lock now; this copy is closed with `cmd` (not unlocked).
    drop(cmd);
    Ok(std::thread::spawn(move || {
        let _ = child.wait();
    }))
}

/// Runs a batch job: its supervisor started, then watched. A supervisor that cannot be
/// started fails the job (reported as any end).
pub(crate) async fn launch_batch(agent: App, order: LaunchBatch) {
    let (job, run) = (order.job.id, order.job.restarts);
    match start(&agent, job, run, Some(order)).await {
        Ok(handle) => attach(&agent, job, run, handle),
        Err(why) => {
            tracing::error!("{}: job {job}: {why}", agent.node);
            {
                let mut jobs = agent.jobs.lock().expect("lock");
                if let Some(e) = jobs.get_mut(&job).filter(|e| e.run == run) {
                    e.reporting = true;
                }
            }
            let ended = JobEnded {
                job_id: job,
                run,
                node: agent.node.clone(),
                state: JobState::Failed,
                exit_code: 1,
                signal: 0,
                end: now(),
                usage: None,
            };
            report(agent.clone(), ended).await;
            reported(&agent, job, run);
        }
    }
}

/// The supervisor of run `run` of `job` answers: the orders that came before it did
/// are passed on, and it is watched.
pub(crate) fn attach(agent: &App, job: u64, run: u32, handle: Arc<Handle>) {
    let pending = {
        let mut jobs = agent.jobs.lock().expect("lock");
        match jobs.get_mut(&job).filter(|e| e.run == run) {
            Some(e) => {
                e.stepd = Some(handle.clone());
                std::mem::take(&mut e.pending)
            }
            None => Vec::new(),
        }
    };
    let a = agent.clone();
    tokio::spawn(async move {
        for request in pending {
            let _ = handle.ask(&request).await;
        }
        watching(a, job, run, handle).await;
    });
}

/// Follows a supervisor's status until it leaves: its batch script's end is reported,
/// and each step whose tasks here have all ended (once per step).
async fn watching(agent: App, job: u64, run: u32, handle: Arc<Handle>) {
    let mut reporting = false;
    let mut steps_told = std::collections::BTreeSet::new();
    let mut round_sent = 0;
    let mut service_sent = None;
    let sending = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dir = handle.dir.clone();
    let mut rounds = 0u32;
    loop {
        if let Ok((Reply::Ok, mut lines)) = handle.open(&Request::Watch).await {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(status) = serde_json::from_str::<Status>(&line) else {
                    continue;
                };
                for &(step, exit_code, signal) in &status.steps_ended {
                    if steps_told.insert(step) {
                        let ended = sluice_proto::types::StepEnded {
                            job,
                            run,
                            step,
                            node: agent.node.clone(),
                            exit_code,
                            signal,
                            usage: status
                                .steps_usage
                                .iter()
                                .find(|(s, _)| *s == step)
                                .map(|(_, u)| Box::new(u.clone())),
                        };
                        tokio::spawn(crate::report_step(agent.clone(), ended));
                    }
                }
                if status.usage_round > round_sent && !status.usage.is_empty() {
                    round_sent = status.usage_round;
                    let report = UsageReport {
                        job,
                        run,
                        node: agent.node.clone(),
                        steps: status.usage.clone(),
                    };
                    crate::send_usage(&agent, report, &sending);
                }
                // A service's restarts and health, sent on every change (before its end).
                if status.service.is_some() && status.service != service_sent {
                    service_sent = status.service.clone();
                    if let Some(report) = service_sent.clone() {
                        crate::send_service(&agent, report).await;
                    }
                }
                if let Some(ended) = status.ended.filter(|_| !reporting) {
                    reporting = true;
                    start_report(&agent, job, run, Some(handle.clone()), ended);
                }
            }
        }
        // It left (its directory went before its connections), or died: a supervisor
        // killed outright closes its connections and its lock as it exits, in an order of
        // the kernel's, so that its lock is tried again for a moment. One that still holds
        // it lives on: it is watched again.
        if reporting || !dir.exists() {
            break;
        }
        if !held_for_a_moment(&dir).await {
            reporting = unsupervised(&agent, job, run, &dir);
            break;
        }
        rounds += 1;
        if rounds == 10 {
            tracing::warn!(
                "{}: job {job} (run {run}): its slurmstepd holds its lock but does not \
                 answer; tried again every 10 s",
                agent.node
            );
        }
        if rounds >= 10 {
            tokio::time::sleep(Duration::from_secs(9)).await;
        }
    }
    let mut jobs = agent.jobs.lock().expect("lock");
    if let Some(e) = jobs.get_mut(&job).filter(|e| e.run == run) {
        if e.stepd.as_ref().is_some_and(|s| Arc::ptr_eq(s, &handle)) {
            e.stepd = None;
            if e.told_to_end {
                // Nothing of the run is left here: the controller waits for this word
                // (the job is COMPLETING until every node has said it).
                tokio::spawn(crate::report_gone(agent.clone(), job, Some(run)));
            }
        }
        if e.stepd.is_none() && !e.reporting && !reporting {
            jobs.remove(&job);
        }
    }
}

/// What is left of a supervisor that is gone without leaving (it died: killed, or the
/// host restarted) in `dir`: its batch script's end if it had written it (reported
/// now; true), else its processes are ended (nobody could report them) and the job is
/// reported `NODE_FAIL` if its batch script ran here (true).
fn unsupervised(agent: &App, job: u64, run: u32, dir: &Path) -> bool {
    if let Ok(ended) = stepd::read_json::<JobEnded>(&dir.join(stepd::END)) {
        start_report(agent, job, run, None, ended);
        return true;
    }
    let launch = stepd::read_json::<Launch>(&dir.join(stepd::LAUNCH)).ok();
    let killed = leftovers::reap(dir);
    let _ = std::fs::remove_dir_all(dir);
    // Its batch script, beside the directory (`run::script_path`).
    if let Some(parent) = dir.parent() {
        let _ = std::fs::remove_file(parent.join(format!("{job}.{run}.sh")));
    }
    tracing::error!(
        "{}: job {job}: its slurmstepd is gone without an end; ended {killed} process \
         group(s) it left",
        agent.node
    );
    if launch.is_some_and(|l| l.batch.is_some()) {
        let ended = JobEnded {
            job_id: job,
            run,
            node: agent.node.clone(),
            state: JobState::NodeFail,
            exit_code: 0,
            signal: 0,
            end: now(),
            usage: None,
        };
        start_report(agent, job, run, None, ended);
        return true;
    }
    false
}

/// Reports `ended` to the controller until it is acknowledged, then tells the
/// supervisor (`handle`; None, or gone: its directory is removed here).
fn start_report(agent: &App, job: u64, run: u32, handle: Option<Arc<Handle>>, ended: JobEnded) {
    {
        let mut jobs = agent.jobs.lock().expect("lock");
        if let Some(e) = jobs.get_mut(&job).filter(|e| e.run == run) {
            e.reporting = true;
        }
    }
    let agent = agent.clone();
    tokio::spawn(async move {
        report(agent.clone(), ended).await;
        let told = match &handle {
            Some(h) => h.ask(&Request::Acknowledged).await == Ok(Reply::Ok),
            None => false,
        };
        if !told {
            let dir = dir_of(&agent.jobs_dir(), job, run);
            if !held(&dir) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        reported(&agent, job, run);
    });
}

/// The controller has run `run` of `job`'s end: no registration lists it any more, and
/// its entry goes once its supervisor has left.
fn reported(agent: &App, job: u64, run: u32) {
    let mut jobs = agent.jobs.lock().expect("lock");
    if let Some(e) = jobs.get_mut(&job).filter(|e| e.run == run) {
        e.reporting = false;
        e.reported = true;
        if e.stepd.is_none() {
            jobs.remove(&job);
        }
    }
}

/// Adopts the supervisors an earlier agent of this node left in its jobs directory,
/// before this one registers: each one running is watched and listed as its job; the
/// end of one that ended meanwhile is reported; what one that died left is ended.
/// Returns the runs adopted (whose cgroups stay).
pub(crate) async fn adopt(agent: &App) -> Vec<(u64, u32)> {
    let mut adopted = Vec::new();
    let Ok(entries) = std::fs::read_dir(agent.jobs_dir()) else {
        return adopted;
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let Some((job, run)) = run_of(&dir) else {
            continue;
        };
        // Its socket is named in its record (a file beside it, for a supervisor of an
        // earlier version); one without a record is gone or never started.
        let socket = match stepd::read_json::<Launch>(&dir.join(stepd::LAUNCH)) {
            Ok(launch) => stepd::Endpoint::of(&dir, &launch),
            Err(_) => stepd::Endpoint::File(dir.join(stepd::SOCKET)),
        };
        let handle = Arc::new(Handle {
            dir: dir.clone(),
            socket,
        });
        let mut first: Option<Status> = None;
        let start = Instant::now();
        while held(&dir) && start.elapsed() < START_PATIENCE {
            if let Ok((Reply::Ok, mut lines)) = handle.open(&Request::Watch).await {
                if let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(status) = serde_json::from_str::<Status>(&line) {
                        first = Some(status);
                        break;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match first {
            Some(status) => {
                tracing::info!(
                    "{}: adopted job {job} (run {run}){}: its slurmstepd runs on",
                    agent.node,
                    if status.batch {
                        ""
                    } else {
                        ", srun tasks only"
                    }
                );
                agent.jobs.lock().expect("lock").insert(
                    job,
                    Running {
                        run,
                        batch: status.batch,
                        ..Running::default()
                    },
                );
                adopted.push((job, run));
                // Watched from now on, as the agent that started it did (an end it
                // keeps is in the first status the watch reads, and reported then).
                attach(agent, job, run, handle);
            }
            None if held(&dir) => {
                // Its cgroups stay: its job may well run.
                adopted.push((job, run));
                tracing::error!(
                    "{}: job {job}: its slurmstepd holds {} but does not answer; left alone",
                    agent.node,
                    dir.display()
                );
            }
            None => {
                agent.jobs.lock().expect("lock").insert(
                    job,
                    Running {
                        run,
                        batch: true,
                        ..Running::default()
                    },
                );
                if unsupervised(agent, job, run, &dir) {
                    adopted.push((job, run));
                } else {
                    agent.jobs.lock().expect("lock").remove(&job);
                }
            }
        }
    }
    adopted
}

/// Ends every job here now and waits (at most `limit`) until their supervisors have
/// left: the cluster stops (`sluice up`), and nobody will report those ends.
pub(crate) async fn shut_down_all(agent: &App, grace: i64, limit: Duration) {
    let handles: Vec<Arc<Handle>> = agent
        .jobs
        .lock()
        .expect("lock")
        .values()
        .filter_map(|e| e.stepd.clone())
        .collect();
    for h in &handles {
        let _ = h.ask(&Request::Shutdown { grace }).await;
    }
    let start = Instant::now();
    while start.elapsed() < limit && handles.iter().any(|h| h.dir.exists()) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The job's supervisor here, started (for srun tasks only) if it has none: the one of
/// run `run`, while it runs.
///
/// Errors: the job runs here as another run, or its supervisor does not start.
pub(crate) async fn for_tasks(agent: &App, job: u64, run: u32) -> Result<Arc<Handle>, String> {
    let _one_at_a_time = agent.starting.lock().await;
    let start = Instant::now();
    loop {
        let state = {
            let jobs = agent.jobs.lock().expect("lock");
            jobs.get(&job)
                .map(|e| (e.run, e.stepd.clone(), e.batch, e.reporting || e.reported))
        };
        match state {
            Some((r, _, _, _)) if r != run => {
                return Err(format!("job {job} runs here as run {r}, not {run}"))
            }
            Some((_, Some(h), _, _)) => return Ok(h),
            // Its batch supervisor is starting: it will answer.
            Some((_, None, true, false)) if start.elapsed() < START_PATIENCE => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some((_, None, true, _)) => return Err(format!("job {job} has ended here")),
            // A supervisor of tasks only that is leaving: its entry goes with it.
            Some((_, None, false, _)) if start.elapsed() < START_PATIENCE => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some(_) => return Err(format!("job {job}: slurmstepd did not leave")),
            None => break,
        }
    }
    agent.jobs.lock().expect("lock").insert(
        job,
        Running {
            run,
            ..Running::default()
        },
    );
    match start_tasks_only(agent, job, run).await {
        Ok(h) => Ok(h),
        Err(why) => {
            let mut jobs = agent.jobs.lock().expect("lock");
            if jobs
                .get(&job)
                .is_some_and(|e| e.run == run && e.stepd.is_none())
            {
                jobs.remove(&job);
            }
            Err(why)
        }
    }
}

async fn start_tasks_only(agent: &App, job: u64, run: u32) -> Result<Arc<Handle>, String> {
    let handle = start(agent, job, run, None).await?;
    attach(agent, job, run, handle.clone());
    Ok(handle)
}

/// The supervisor of a tasks-only job that answered `Closing` is leaving: waits until
/// it has (its entry is gone), at most [`START_PATIENCE`].
pub(crate) async fn until_gone(agent: &App, job: u64, handle: &Arc<Handle>) {
    let start = Instant::now();
    while start.elapsed() < START_PATIENCE {
        let there = agent
            .jobs
            .lock()
            .expect("lock")
            .get(&job)
            .and_then(|e| e.stepd.clone())
            .is_some_and(|h| Arc::ptr_eq(&h, handle));
        if !there {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supervisors_directory_names_its_job_and_run() {
        let dir = dir_of(Path::new("/spool/n1.jobs"), 42, 3);
        assert_eq!(dir, Path::new("/spool/n1.jobs/42.3"));
        assert_eq!(run_of(&dir), Some((42, 3)));
        assert_eq!(run_of(Path::new("/spool/n1.jobs/42.3.sh")), None);
        assert_eq!(run_of(Path::new("/spool/n1.jobs/x.1")), None);
    }

    #[test]
    fn a_lock_nobody_holds_is_free_and_a_held_one_is_not() {
        let dir = std::env::temp_dir().join(format!("sluice-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!held(&dir), "no record: nobody");
        let f = std::fs::File::create(dir.join(stepd::LAUNCH)).unwrap();
        assert!(!held(&dir));
        let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).unwrap();
        assert!(held(&dir));
        drop(lock);
        assert!(!held(&dir));
        // A supervisor of an earlier version holds a `lock` file of its own.
        let f = std::fs::File::create(dir.join(stepd::OLD_LOCK)).unwrap();
        let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).unwrap();
        assert!(held(&dir));
        drop(lock);
        assert!(!held(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
