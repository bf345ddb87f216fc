//! A job's supervisor on a node (slurmstepd's role): the process that owns one run of
//! one job here — its batch script's process group, its srun steps' tasks, their
//! cgroups, its time limit (SIGTERM, SIGKILL after `KillWait`, `TIMEOUT`), its signals,
//! its output files and its exit status — so that the job outlives the agent that
//! started it.
//!
//! The agent starts one per job run on its node (for the batch script, or for the first
//! srun step of a job whose batch script runs elsewhere) by executing its own binary
//! again in a hidden mode (`slurmstepd stepd DIR`; [`Stepd::prepare`]), in a session of
//! its own, detached from the agent: killing, restarting or upgrading the agent leaves
//! it running. Everything it needs is in its directory in the agent's spool
//! (`<jobs dir>/<job>.<run>/`, mode 0700, the agent's):
//!
//! ```text
//! launch.json   what to run ([`Launch`]), written by the agent before it starts it;
//!               flock'ed by the supervisor for its whole life (taken by the agent
//!               before a byte is written and inherited, so no moment exists where a
//!               live supervisor does not hold it): a new agent tells a dead
//!               supervisor from one starting up by trying it (supervisors of
//!               earlier versions hold a file `lock` instead)
//! stepd.sock    its Unix socket (0600), for a supervisor of an earlier version: today's
//!               listen on a name of the abstract namespace, written in launch.json
//!               with a token callers must send first ([`Endpoint`]); only root and
//!               the agent's user are answered, and the agent talks only to a socket
//!               of root or its own user
//! end.json      the batch script's end ([`sluice_proto::types::JobEnded`]), written
//!               durably before anyone is told, removed with the directory once the
//!               controller has it
//! (attributes) its process groups with their leaders' start times, as extended
//!               attributes of the directory (`leftovers.rs`; `*.pgid` files where
//!               its file system has none): what a new agent ends if the supervisor
//!               itself died
//! ```
//!
//! The agent talks to it over the socket, one [`Request`] per connection (a JSON line)
//! answered by a [`Reply`] line: `Watch` keeps the connection and sends a [`Status`]
//! line now and on every change (the agent learns the batch script's end this way);
//! `Tasks` is followed by the step's [`sluice_proto::types::TaskEvent`] lines, which the
//! agent passes on to srun as they are. A new agent finds the supervisors in its spool,
//! watches them as the one before did, and lists their jobs in its registration
//! (`supervisors.rs`).
//!
//! The supervisor leaves once nothing is left for it: its batch script has ended and
//! the controller has acknowledged the end (the agent says `Acknowledged`), and no task
//! runs here; a supervisor of srun tasks only, once it has been idle for
//! [`IDLE_EXIT`] (a step launched as it leaves is answered `Closing`, and the agent
//! starts another).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sluice_proto::error::ErrorCode;
use sluice_proto::types::{
    DeviceFile, JobEnded, JobRecord, JobState, LaunchBatch, LaunchTasks, StdinChunk, StepId,
    TaskEvent,
};
use sluice_proto::usage::StepUsage;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};

use crate::run::{self, Exec};
use crate::{cgroup, devices};

/// The supervisor's record in its directory: what to run.
pub(crate) const LAUNCH: &str = "launch.json";
/// Held by the live supervisor of an earlier version, which locked a file of its own
/// (today's lock their record, [`LAUNCH`]).
pub(crate) const OLD_LOCK: &str = "lock";
/// Its socket.
pub(crate) const SOCKET: &str = "stepd.sock";
/// The batch script's end.
pub(crate) const END: &str = "end.json";

/// How long a supervisor of srun tasks only stays without tasks, for the next step.
pub(crate) const IDLE_EXIT: Duration = Duration::from_secs(5);

/// How many bytes of a step's events already sent to the agent are kept, for a new
/// agent to send again to an srun whose stream broke with the old one (what was still
/// on its way then).
const REPLAY: usize = 4 << 20;

/// How many bytes of a step's events not yet sent it may hold; beyond, its tasks wait
/// (their output pipes fill) until the agent takes them.
const BACKLOG: usize = 4 << 20;

/// How long a finished step's events are kept for an srun that has not said it has
/// them all (its stream broke with the agent, and it will ask again).
const RETAIN: Duration = Duration::from_secs(120);

/// One srun step's events on this node, numbered from 0 in the order its tasks made
/// them: what the agent streams to srun. srun counts the events it gets; after its
/// stream broke (the agent was restarted) it asks the new agent for those from its
/// count on (`Attach`), and says when it has them all (`StepDone`).
#[derive(Debug)]
pub(crate) struct StepLog {
    /// The uid of the step's owner: only they (or root) may follow it.
    owner: u32,
    /// The number of `events[0]`.
    base: u64,
    /// The events kept, each a JSON line.
    events: std::collections::VecDeque<Vec<u8>>,
    /// Events before this one were sent to a connection.
    sent: u64,
    /// Bytes of the kept events that were sent, and of those not yet sent.
    sent_bytes: usize,
    unsent_bytes: usize,
    /// When its last event was made (its tasks have all ended).
    finished: Option<Instant>,
    /// The connection streaming it (a new one takes over from an old one).
    streamer: u64,
    /// Its tasks' end here so far, as srun sums it up: the worst exit code, the
    /// highest signal, and whether the memory limit killed one.
    worst: (i32, i32, bool),
}

impl StepLog {
    /// How its tasks ended here, once they all have: (exit code, signal), out of memory
    /// as srun reports it (`0`, [`crate::cgroup::OOM_SIGNAL`]).
    fn ended(&self) -> Option<(i32, i32)> {
        self.finished?;
        let (code, signal, oom) = self.worst;
        Some(if oom {
            (0, crate::cgroup::OOM_SIGNAL)
        } else {
            (code, signal)
        })
    }

    /// Takes `event` into the summary of how its tasks ended.
    fn count(&mut self, event: &TaskEvent) {
        let w = &mut self.worst;
        match event {
            TaskEvent::Exit { code, signal, .. } => {
                w.0 = w.0.max(*code);
                w.1 = w.1.max(*signal);
            }
            TaskEvent::OutOfMemory { .. } => w.2 = true,
            TaskEvent::Error { .. } => w.0 = w.0.max(1),
            _ => {}
        }
    }
}

impl StepLog {
    fn new(owner: u32) -> StepLog {
        StepLog {
            owner,
            base: 0,
            events: Default::default(),
            sent: 0,
            sent_bytes: 0,
            unsent_bytes: 0,
            finished: None,
            streamer: 0,
            worst: (0, 0, false),
        }
    }

    /// Event `n` was sent: sent events beyond [`REPLAY`] bytes are forgotten.
    fn sent(&mut self, n: u64) {
        while self.sent <= n {
            if let Some(e) = self.events.get((self.sent - self.base) as usize) {
                self.sent_bytes += e.len();
                self.unsent_bytes -= e.len();
            }
            self.sent += 1;
        }
        while self.sent_bytes > REPLAY && self.base < self.sent {
            let Some(e) = self.events.pop_front() else {
                break;
            };
            self.sent_bytes -= e.len();
            self.base += 1;
        }
    }
}

/// What a supervisor runs, written by the agent in its directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Launch {
    /// The node's name.
    pub(crate) node: String,
    /// The job.
    pub(crate) job: u64,
    /// Its run (restart count).
    pub(crate) run: u32,
    /// The agent's uid: the only one (besides root) the socket answers.
    pub(crate) own_uid: u32,
    /// The node's jobs directory (batch scripts are written there).
    pub(crate) jobs_dir: PathBuf,
    /// Where memory cgroups are made; None: no limits on this node.
    pub(crate) memory: Option<cgroup::Memory>,
    /// Where device cgroups are made; Err says why devices cannot be confined here.
    pub(crate) devices: Result<devices::Devices, String>,
    /// The batch script to run; None: only srun steps' tasks run here.
    pub(crate) batch: Option<LaunchBatch>,
    /// Where the supervisor logs (the agent's log file) and at which Slurm level.
    #[serde(default)]
    pub(crate) log: Option<(PathBuf, String)>,
    /// How its steps' usage is gathered (the agent's settings).
    #[serde(default)]
    pub(crate) gather: crate::usage::Settings,
    /// The name of its socket in the abstract namespace ([`Endpoint`]); None: the file
    /// [`SOCKET`] in its directory (a supervisor of an earlier version).
    #[serde(default)]
    pub(crate) socket: Option<String>,
    /// What a caller sends first on that socket to be answered ([`Endpoint`]).
    #[serde(default)]
    pub(crate) token: Option<String>,
}

/// Where a supervisor listens: a name of the abstract socket namespace, so that no file
/// is made and removed for it per job; or, for a supervisor of an earlier version, the
/// file [`SOCKET`] in its directory (0600, in a 0700 directory).
///
/// An abstract name has no file mode, and every bound one is listed in `/proc/net/unix`
/// for anyone in the network namespace: the name is no secret once bound, and one a
/// dead supervisor freed could be taken by anyone. So each side checks the other: the
/// supervisor answers only root and the agent's user, and only a caller whose first
/// line is its token (128 random bits in its record, which only the agent's user
/// reads: root in a container that shares the host's network but not its files cannot
/// send it); the agent talks only to a socket of root or its own user, and sends the
/// token of the supervisor it means (a dead one's, to whoever took its name, is worth
/// nothing).
#[derive(Clone, Debug)]
pub(crate) enum Endpoint {
    Abstract { name: String, token: String },
    File(PathBuf),
}

/// 128 random bits, in hex.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    // SAFETY: a writable buffer of 16 bytes.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(std::io::Error::last_os_error());
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Endpoint {
    /// A new name and token for a supervisor about to start.
    pub(crate) fn fresh() -> std::io::Result<(String, String)> {
        Ok((format!("sluice-stepd/{}", random_hex()?), random_hex()?))
    }

    /// The endpoint of the supervisor whose record is `launch`, in `dir`.
    pub(crate) fn of(dir: &Path, launch: &Launch) -> Endpoint {
        match (&launch.socket, &launch.token) {
            (Some(name), Some(token)) => Endpoint::Abstract {
                name: name.clone(),
                token: token.clone(),
            },
            _ => Endpoint::File(dir.join(SOCKET)),
        }
    }

    /// The address as tokio takes it: an abstract name after a NUL byte.
    fn address(&self) -> PathBuf {
        match self {
            Endpoint::Abstract { name, .. } => {
                use std::os::unix::ffi::OsStringExt;
                let mut bytes = vec![0u8];
                bytes.extend_from_slice(name.as_bytes());
                PathBuf::from(std::ffi::OsString::from_vec(bytes))
            }
            Endpoint::File(path) => path.clone(),
        }
    }

    /// The token a caller must send first; None for a supervisor of an earlier version.
    fn token(&self) -> Option<&str> {
        match self {
            Endpoint::Abstract { token, .. } => Some(token),
            Endpoint::File(_) => None,
        }
    }

    /// Listens on it.
    fn listen(&self) -> std::io::Result<UnixListener> {
        if let Endpoint::File(path) = self {
            let _ = std::fs::remove_file(path);
        }
        let l = UnixListener::bind(self.address())?;
        if let Endpoint::File(path) = self {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(l)
    }

    /// Connects to it (never waiting on a full backlog: refused then), a supervisor of
    /// root or of this process's user only, and sends the token where it has one.
    pub(crate) async fn connect(&self) -> std::io::Result<UnixStream> {
        let mut stream = UnixStream::connect(self.address()).await?;
        let peer = stream.peer_cred()?.uid();
        if peer != 0 && peer != nix::unistd::geteuid().as_raw() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{self} is held by uid {peer}, not a slurmstepd"),
            ));
        }
        if let Some(token) = self.token() {
            stream.write_all(format!("{token}\n").as_bytes()).await?;
        }
        Ok(stream)
    }

    /// Stops listening: the file is removed (a name goes with its socket).
    fn close(&self) {
        if let Endpoint::File(path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Abstract { name, .. } => write!(f, "@{name}"),
            Endpoint::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One request to a supervisor.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Request {
    /// Its [`Status`] now and at every change, until it leaves.
    Watch,
    /// A signal to the batch shell (`batch_only`) or to the steps' tasks.
    Signal { signal: i32, batch_only: bool },
    /// End the job: SIGCONT and SIGTERM, SIGKILL after `kill_wait`, reported as
    /// `state`.
    Terminate { state: JobState, kill_wait: i64 },
    /// The job's new time limit (seconds from its start; None: unlimited).
    TimeLimit { limit: Option<i64> },
    /// Stop (`suspend`) or continue the job's processes here.
    Suspend { suspend: bool },
    /// The controller has the batch script's end.
    Acknowledged,
    /// Start a step's tasks here; the reply is followed by their events.
    Tasks {
        record: Box<JobRecord>,
        order: Box<LaunchTasks>,
        /// The job's device files here, from the controller (a node that did not
        /// launch its batch script), when its devices are confined.
        devices: Option<Vec<DeviceFile>>,
    },
    /// srun's input for a step's tasks, from user `uid`.
    Stdin { uid: u32, chunk: StdinChunk },
    /// A step's events from the `from`-th on, for user `uid` (srun again, after its
    /// stream broke); the reply is followed by them.
    Attach { step: u32, from: u64, uid: u32 },
    /// User `uid`'s srun has all of a step's events: they may go.
    StepDone { step: u32, uid: u32 },
    /// User `uid`'s srun aborts a step: `signal` to its tasks here.
    SignalStep { step: u32, signal: i32, uid: u32 },
    /// The controller cancels a step (`scancel JOB.STEP`): its srun is told (a
    /// [`TaskEvent::Cancelled`] first in its stream) and its tasks here are killed.
    CancelStep { step: u32 },
    /// A step reached its own time limit (`time_limit`) or is cancelled by its srun
    /// (`srun -K`): its srun is told, its tasks here get SIGCONT and SIGTERM, and
    /// SIGKILL `kill_wait` seconds later.
    // Its name on the wire is the one supervisors that outlive an agent's upgrade know
    // (a step at its time limit), and one that says nothing more is that.
    #[serde(rename = "step_time_limit")]
    TerminateStep {
        step: u32,
        kill_wait: i64,
        #[serde(default = "at_time_limit")]
        time_limit: bool,
    },
    /// The cluster stops (`sluice up`): end the job now and leave, reporting nothing.
    Shutdown { grace: i64 },
}

/// What a [`Request::TerminateStep`] from an agent older than `time_limit` meant.
fn at_time_limit() -> bool {
    true
}

/// A supervisor's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reply {
    /// Done (for `Tasks`: the events follow).
    Ok,
    /// Refused, as the agent would refuse it.
    Error { code: ErrorCode, message: String },
    /// The supervisor is leaving: start another.
    Closing,
}

/// A supervisor's state, as `Watch` sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Status {
    /// The job.
    pub(crate) job: u64,
    /// Its run.
    pub(crate) run: u32,
    /// A batch script runs (or ran) here.
    pub(crate) batch: bool,
    /// The batch script's process, while it runs.
    pub(crate) pid: Option<i32>,
    /// Process groups of srun tasks running here.
    pub(crate) tasks: usize,
    /// The batch script's end, until the controller has it.
    pub(crate) ended: Option<JobEnded>,
    /// The steps whose tasks here have all ended (while their events are kept): step,
    /// exit code, signal.
    #[serde(default)]
    pub(crate) steps_ended: Vec<(u32, i32, i32)>,
    /// Those steps' figures here (`usage.rs`), where gathered.
    #[serde(default)]
    pub(crate) steps_usage: Vec<(u32, StepUsage)>,
    /// The number of the last sampling round (the agent sends each round's figures to
    /// the controller once).
    #[serde(default)]
    pub(crate) usage_round: u64,
    /// That round's figures of the steps running then.
    #[serde(default)]
    pub(crate) usage: Vec<(StepId, StepUsage)>,
    /// A service's restarts in place and health (`service.rs`).
    #[serde(default)]
    pub(crate) service: Option<sluice_proto::service::ServiceReport>,
}

/// Writes `value` as JSON to `path`, whole or not at all (a temporary file renamed over
/// it); with `sync`, on disk once this returns (the file and the directory synced: what
/// a job's end needs, which nobody else keeps until the controller has it).
pub(crate) fn write_whole<T: Serialize>(path: &Path, value: &T, sync: bool) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(value).map_err(std::io::Error::other)?)?;
        if sync {
            f.sync_all()?;
        }
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|_| sync) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads the JSON in `path`.
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// A supervisor about to run: its record read (see the module's documentation).
pub struct Stepd {
    dir: PathBuf,
    launch: Launch,
    lock_fd: Option<i32>,
}

impl Stepd {
    /// Reads the supervisor's command line (after the mode word `stepd`): its
    /// directory, and `--lock-fd N` (the lock it inherited from the agent).
    ///
    /// Errors: the command line or the record cannot be read.
    pub fn prepare(args: &[String]) -> Result<Stepd, String> {
        let mut dir = None;
        let mut lock_fd = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--lock-fd" => {
                    lock_fd = it.next().and_then(|v| v.parse().ok());
                }
                other => dir = Some(PathBuf::from(other)),
            }
        }
        let dir = dir.ok_or("usage: slurmstepd stepd DIR [--lock-fd N]")?;
        let launch: Launch = read_json(&dir.join(LAUNCH))?;
        Ok(Stepd {
            dir,
            launch,
            lock_fd,
        })
    }

    /// Where it logs (the agent's log file) and at which Slurm debug level, if the
    /// agent logs to a file.
    pub fn log(&self) -> Option<(&Path, &str)> {
        self.launch
            .log
            .as_ref()
            .map(|(p, l)| (p.as_path(), l.as_str()))
    }

    /// Runs the job to its end and until the controller has its end; returns the
    /// process's exit status.
    pub fn run(self) -> i32 {
        // (In a process group of its own since the agent spawned it.)
        if let Some(fd) = self.lock_fd {
            keep_lock(fd);
        }
        // One thread: a supervisor waits for its job and answers a few requests, and
        // starts once per job run, so that worker threads would cost more to start
        // (and to hand work between) than they could save.
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("slurmstepd: cannot start: {e}");
                return 1;
            }
        };
        runtime.block_on(serve(self.dir, self.launch))
    }
}

/// Keeps the inherited lock `fd` with this process alone: its children (the job's
/// processes) must not keep it held once it is gone. A lock passed as a standard
/// descriptor (the agent passes it as standard input) is moved above them, closed on
/// exec, and `/dev/null` takes its place.
fn keep_lock(fd: i32) {
    if fd > 2 {
        let _ = nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
        return;
    }
    // SAFETY: plain descriptor calls on descriptors this process owns; the copy keeps
    // the lock (it belongs to the open file, which stays open) and is never closed.
    unsafe {
        if libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) < 0 {
            let _ = libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            return;
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, fd);
            libc::close(null);
        } else {
            let _ = libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// The supervisor's life: its socket, its job, until nothing is left for it.
async fn serve(dir: PathBuf, launch: Launch) -> i32 {
    // SIGTERM is heard from before the job starts: its default action would end the
    // supervisor and leave the job running unsupervised.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    // The job's processes stay its descendants whatever session they make (`tree.rs`);
    // those given to it that end are reaped as they do.
    crate::tree::become_subreaper();
    let mut child_ended =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let mut orphans = crate::tree::Orphans::default();
    let socket = Endpoint::of(&dir, &launch);
    let token: Option<Arc<str>> = socket.token().map(Arc::from);
    let listener = match socket.listen() {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(
                "{}: job {}: slurmstepd cannot listen on {socket}: {e}",
                launch.node,
                launch.job,
            );
            return 1;
        }
    };
    let (changed, _) = tokio::sync::watch::channel(0u64);
    let exec = Arc::new(Exec {
        node: launch.node.clone(),
        own_uid: launch.own_uid,
        job: launch.job,
        run: launch.run,
        dir: dir.clone(),
        jobs_dir: launch.jobs_dir.clone(),
        procs: Default::default(),
        stdins: Default::default(),
        memory: launch.memory.clone(),
        devices: launch.devices.clone(),
        changed,
        steps: Default::default(),
        output: tokio::sync::watch::channel(0u64).0,
        usage: std::sync::Mutex::new(
            crate::usage::tracker::Tracker::new(
                &launch.node,
                launch.gather,
                Path::new("/proc"),
                None,
            )
            .detecting_gpus(),
        ),
        sampled: Default::default(),
        forgotten: Default::default(),
        cancelled_early: Default::default(),
    });
    tokio::spawn(sample_every(exec.clone()));
    tracing::info!(
        "{}: slurmstepd (sluice) for job {} run {} started, pid {}{}",
        launch.node,
        launch.job,
        launch.run,
        std::process::id(),
        if launch.batch.is_some() {
            ""
        } else {
            " (srun tasks only)"
        }
    );
    if let Some(order) = launch.batch.clone() {
        exec.procs().batch = true;
        tokio::spawn(run::batch(exec.clone(), order));
    }
    let mut idle_since: Option<Instant> = None;
    loop {
        tokio::select! {
            conn = listener.accept() => {
                if let Ok((stream, _)) = conn {
                    tokio::spawn(connection(exec.clone(), launch.own_uid, token.clone(), stream));
                }
            }
            // SIGTERM (an operator, or a test cleaning up): the job ends now.
            _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {
                tracing::info!("{}: job {}: slurmstepd got SIGTERM: ending the job", exec.node, exec.job);
                run::shut_down(exec.clone(), 2);
            }
            _ = async { match child_ended.as_mut() { Some(c) => { c.recv().await; } None => std::future::pending().await } } => {
                orphans.reap();
            }
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
        if may_leave(&exec, &mut idle_since, &mut orphans) {
            break;
        }
    }
    drop(listener);
    socket.close();
    // Watchers see the connection close as this process exits.
    let _ = std::fs::remove_dir_all(&dir);
    tracing::info!(
        "{}: slurmstepd for job {} run {} done",
        exec.node,
        exec.job,
        exec.run
    );
    0
}

/// Samples the job's running steps every `JobAcctGatherFrequency` seconds (never with
/// 0, or when nothing is gathered), off the runtime's thread; each round's figures go
/// to the watching agent (`Status::usage`).
async fn sample_every(exec: Arc<Exec>) {
    if exec.tracker().off() {
        return;
    }
    // Counted in whole seconds and the frequency read each time: a job's --acctg-freq
    // replaces the node's once its launch is read.
    let mut waited = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
        let secs = exec.tracker().interval();
        if secs == 0 || waited < secs {
            continue;
        }
        waited = 0;
        let e = exec.clone();
        let Ok(figures) = tokio::task::spawn_blocking(move || e.tracker().sample()).await else {
            continue;
        };
        if figures.is_empty() {
            continue;
        }
        {
            let mut s = exec.sampled.lock().expect("lock");
            s.0 += 1;
            s.1 = figures;
        }
        exec.touch();
    }
}

/// Whether nothing is left for the supervisor (see the module's documentation); once
/// it says so, the supervisor is closing and takes no new step.
fn may_leave(
    exec: &Exec,
    idle_since: &mut Option<Instant>,
    orphans: &mut crate::tree::Orphans,
) -> bool {
    let mut procs = exec.procs();
    let batch_over = procs.ended.is_some() && procs.acknowledged;
    // Finished steps' events go once srun has them, once they are old, once the batch
    // script whose srun would ask for them has ended, once the job is being ended (its
    // sruns are), or once the cluster stops.
    let shut_down = procs.acknowledged && !procs.batch;
    let ending = procs.ending.is_some();
    let steps_left = {
        let mut steps = exec.steps.lock().expect("lock");
        steps.retain(|_, log| {
            log.finished
                .is_none_or(|at| at.elapsed() < RETAIN && !batch_over && !shut_down && !ending)
        });
        !steps.is_empty()
    };
    let idle = procs.pid.is_none()
        && procs.task_groups.is_empty()
        && procs.launching == 0
        && !steps_left
        && (!procs.batch || batch_over);
    // Nothing the job started may be left either (checked last: it reads /proc).
    let idle = idle && {
        orphans.reap();
        crate::tree::none_left()
    };
    if !idle {
        *idle_since = None;
        return false;
    }
    // A job being ended leaves at once: its node reports it gone.
    let leave = procs.batch
        || procs.acknowledged
        || ending
        || idle_since.get_or_insert_with(Instant::now).elapsed() >= IDLE_EXIT;
    if leave {
        procs.closing = true;
    }
    leave
}

/// The supervisor's state for `Watch`.
fn status(exec: &Exec) -> Status {
    // Taken and let go before the processes' lock (never both held here).
    let (mut steps_ended, mut kept): (Vec<(u32, i32, i32)>, Vec<u32>) = {
        let steps = exec.steps.lock().expect("lock");
        (
            steps
                .iter()
                .filter_map(|(step, log)| log.ended().map(|(c, s)| (*step, c, s)))
                .collect(),
            steps.keys().copied().collect(),
        )
    };
    {
        let mut forgotten = exec.forgotten.lock().expect("lock");
        forgotten.retain(|_, (_, _, at)| at.elapsed() < RETAIN);
        for (step, (code, signal, _)) in forgotten.iter() {
            if !kept.contains(step) {
                steps_ended.push((*step, *code, *signal));
                kept.push(*step);
            }
        }
    }
    let steps_usage = {
        let mut t = exec.tracker();
        // Figures of steps whose events are gone are not needed any more.
        t.retain(|id| match id {
            StepId::Number(n) => kept.contains(&n),
            _ => true,
        });
        steps_ended
            .iter()
            .filter_map(|(step, _, _)| t.usage(StepId::Number(*step)).map(|u| (*step, u)))
            .collect()
    };
    let (usage_round, usage) = exec.sampled.lock().expect("lock").clone();
    let procs = exec.procs();
    Status {
        job: exec.job,
        run: exec.run,
        batch: procs.batch,
        pid: procs.pid,
        tasks: procs.task_groups.len(),
        ended: procs.ended.clone().filter(|_| !procs.acknowledged),
        steps_ended,
        steps_usage,
        usage_round,
        usage,
        service: procs.service.clone(),
    }
}

/// Writes `value` as one JSON line.
async fn send_line<T: Serialize>(w: &mut (impl AsyncWriteExt + Unpin), value: &T) -> bool {
    let mut line = serde_json::to_vec(value).expect("messages serialise");
    line.push(b'\n');
    w.write_all(&line).await.is_ok() && w.flush().await.is_ok()
}

/// Whether `told` is `token`: compared whole, in a time that does not depend on where
/// they differ.
fn same_token(told: &str, token: &str) -> bool {
    told.len() == token.len()
        && told
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |d, (a, b)| d | (a ^ b))
            == 0
}

/// One connection: one request, its answer (and, for `Watch` and `Tasks`, what follows).
async fn connection(exec: Arc<Exec>, own_uid: u32, token: Option<Arc<str>>, stream: UnixStream) {
    let peer = stream.peer_cred().map(|c| c.uid()).unwrap_or(u32::MAX);
    let (read, mut write) = stream.into_split();
    let denied = Reply::Error {
        code: ErrorCode::AccessDenied,
        message: "only the node's agent may talk to slurmstepd".into(),
    };
    if peer != 0 && peer != own_uid {
        let _ = send_line(&mut write, &denied).await;
        return;
    }
    let mut lines = BufReader::new(read).lines();
    if let Some(token) = token {
        let told = match lines.next_line().await {
            Ok(Some(line)) => line,
            _ => return,
        };
        if !same_token(&told, &token) {
            let _ = send_line(&mut write, &denied).await;
            return;
        }
    }
    let Ok(Some(line)) = lines.next_line().await else {
        return;
    };
    let request: Request = match serde_json::from_str(&line) {
        Ok(r) => r,
        Err(e) => {
            let _ = send_line(
                &mut write,
                &Reply::Error {
                    code: ErrorCode::Invalid,
                    message: format!("bad request: {e}"),
                },
            )
            .await;
            return;
        }
    };
    let reply = match request {
        Request::Watch => {
            if !send_line(&mut write, &Reply::Ok).await {
                return;
            }
            let mut changes = exec.changed.subscribe();
            loop {
                if !send_line(&mut write, &status(&exec)).await {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        }
        Request::Signal { signal, batch_only } => {
            run::signal_job(&exec, signal, batch_only);
            Reply::Ok
        }
        Request::Terminate { state, kill_wait } => {
            tracing::debug!(
                "{}: job {}: terminate order ({}), KillWait {kill_wait}s",
                exec.node,
                exec.job,
                state.name()
            );
            run::terminate(exec.clone(), state, kill_wait);
            Reply::Ok
        }
        Request::TimeLimit { limit } => {
            exec.procs().time_limit = Some(limit);
            Reply::Ok
        }
        Request::Suspend { suspend } => {
            run::suspend_job(&exec, suspend);
            Reply::Ok
        }
        Request::Acknowledged => {
            exec.procs().acknowledged = true;
            let _ = std::fs::remove_file(exec.dir.join(END));
            exec.touch();
            Reply::Ok
        }
        Request::Shutdown { grace } => {
            run::shut_down(exec.clone(), grace);
            Reply::Ok
        }
        Request::Stdin { uid, chunk } => stdin(&exec, uid, chunk).await,
        Request::SignalStep { step, signal, uid } => {
            let owner = exec.steps.lock().expect("lock").get(&step).map(|l| l.owner);
            match owner {
                Some(o) if o != uid && uid != 0 => Reply::Error {
                    code: ErrorCode::AccessDenied,
                    message: "Access/permission denied".into(),
                },
                // Nothing of the step here (yet, or any more): nothing to signal.
                None => Reply::Ok,
                Some(_) => {
                    run::signal_step(&exec, step, signal);
                    Reply::Ok
                }
            }
        }
        Request::CancelStep { step } => {
            cancel_step(&exec, step);
            Reply::Ok
        }
        Request::TerminateStep {
            step,
            kill_wait,
            time_limit,
        } => {
            terminate_step(exec.clone(), step, kill_wait, time_limit);
            Reply::Ok
        }
        Request::StepDone { step, uid } => {
            let mut steps = exec.steps.lock().expect("lock");
            match steps.get(&step) {
                Some(log) if log.owner == uid || uid == 0 => {
                    // Its end stays in the status a while, should srun have been
                    // quicker than the agent's watch: the agent reports it (and its
                    // figures) all the same.
                    if let Some((code, signal)) = log.ended() {
                        exec.forgotten
                            .lock()
                            .expect("lock")
                            .insert(step, (code, signal, Instant::now()));
                    }
                    steps.remove(&step);
                    drop(steps);
                    exec.touch();
                    Reply::Ok
                }
                Some(_) => Reply::Error {
                    code: ErrorCode::AccessDenied,
                    message: "Access/permission denied".into(),
                },
                None => Reply::Ok,
            }
        }
        Request::Attach { step, from, uid } => {
            let known = exec.steps.lock().expect("lock").get(&step).map(|l| l.owner);
            let refusal = match known {
                None => Some(Reply::Error {
                    code: ErrorCode::NotReady,
                    message: format!("step {}.{step} has no events here", exec.job),
                }),
                Some(owner) if owner != uid && uid != 0 => Some(Reply::Error {
                    code: ErrorCode::AccessDenied,
                    message: "Access/permission denied".into(),
                }),
                Some(_) => None,
            };
            if let Some(r) = refusal {
                let _ = send_line(&mut write, &r).await;
                return;
            }
            if send_line(&mut write, &Reply::Ok).await {
                tracing::info!(
                    "{}: job {}: srun follows step {step} again from its event {from}",
                    exec.node,
                    exec.job
                );
                stream_step(&exec, step, from, &mut write).await;
            }
            return;
        }
        Request::Tasks {
            record,
            order,
            devices,
        } => {
            let closing = {
                let mut procs = exec.procs();
                if !procs.closing {
                    procs.launching += 1;
                }
                procs.closing
            };
            if closing {
                let _ = send_line(&mut write, &Reply::Closing).await;
                return;
            }
            exec.touch();
            let step = order.step;
            exec.steps
                .lock()
                .expect("lock")
                .insert(step, StepLog::new(record.uid));
            let ok = send_line(&mut write, &Reply::Ok).await;
            let (tx, rx) = tokio::sync::mpsc::channel::<TaskEvent>(256);
            // The events are kept in the step's log, from which this connection (and,
            // should it break, srun's next one) streams them.
            tokio::spawn(keep_events(exec.clone(), step, rx));
            let fetched = devices.and_then(|files| run::resolve_devices(&exec, &files));
            run::tasks(exec.clone(), *record, *order, fetched, tx);
            // Cancelled while it started here: it ends now.
            launched(&exec, step);
            exec.procs().launching -= 1;
            exec.touch();
            if ok {
                stream_step(&exec, step, 0, &mut write).await;
            }
            return;
        }
    };
    let _ = send_line(&mut write, &reply).await;
}

/// Cancels step `step` here (`scancel JOB.STEP`): a `Cancelled` event in its stream,
/// for its srun to say the step is aborted, then SIGKILL to its tasks. A step whose
/// tasks are not all launched here yet is remembered, and its tasks are killed as soon
/// as they are ([`launched`]); one whose tasks have all ended is left alone.
fn cancel_step(exec: &Exec, step: u32) {
    let told = {
        let mut steps = exec.steps.lock().expect("lock");
        match steps.get_mut(&step) {
            Some(log) if log.finished.is_none() => {
                log.unsent_bytes += push_cancelled(exec, &mut log.events, false);
                true
            }
            Some(_) => return,
            None => false,
        }
    };
    // Its tasks may still be starting (read after the steps' lock is let go: the
    // processes' lock is never taken inside it): killed too once they have.
    if !told || exec.procs().launching > 0 {
        exec.cancelled_early
            .lock()
            .expect("lock")
            .insert(step, told);
    }
    if told {
        exec.output.send_modify(|n| *n += 1);
        run::signal_step(exec, step, libc::SIGKILL);
    }
}

/// After step `step`'s tasks here were launched: a cancel that came first ends them
/// now (its event in the stream unless it is there already).
fn launched(exec: &Exec, step: u32) {
    let Some(told) = exec.cancelled_early.lock().expect("lock").remove(&step) else {
        return;
    };
    if !told {
        if let Some(log) = exec.steps.lock().expect("lock").get_mut(&step) {
            log.unsent_bytes += push_cancelled(exec, &mut log.events, false);
        }
        exec.output.send_modify(|n| *n += 1);
    }
    run::signal_step(exec, step, libc::SIGKILL);
}

/// Ends step `step` here, at its own time limit (`time_limit`) or cancelled by its
/// srun (`-K`): a `Cancelled` event saying which in its stream, SIGCONT and SIGTERM to
/// its tasks, SIGKILL to those left `kill_wait` seconds later, as slurmstepd ends a
/// step at its limit or on SIG_TERM_KILL. A step whose tasks have all ended here is
/// left alone.
fn terminate_step(exec: std::sync::Arc<Exec>, step: u32, kill_wait: i64, time_limit: bool) {
    {
        let mut steps = exec.steps.lock().expect("lock");
        match steps.get_mut(&step) {
            Some(log) if log.finished.is_none() => {
                log.unsent_bytes += push_cancelled(&exec, &mut log.events, time_limit);
            }
            // srun ends a step whose tasks here are not launched yet (`-K`, a task
            // elsewhere failed first): cancelled as `scancel JOB.STEP` cancels it, its
            // tasks killed as soon as they are.
            None if !time_limit => {
                drop(steps);
                cancel_step(&exec, step);
                return;
            }
            _ => return,
        }
    }
    // Tasks still being launched here: killed once they are.
    if !time_limit && exec.procs().launching > 0 {
        exec.cancelled_early
            .lock()
            .expect("lock")
            .insert(step, true);
    }
    exec.output.send_modify(|n| *n += 1);
    run::signal_step(&exec, step, libc::SIGCONT);
    run::signal_step(&exec, step, libc::SIGTERM);
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(kill_wait.max(0) as u64));
        run::signal_step(&exec, step, libc::SIGKILL);
    });
}

/// Puts a `Cancelled` event at the end of `events` (`time_limit`: the step reached
/// its own time limit); its length.
fn push_cancelled(
    exec: &Exec,
    events: &mut std::collections::VecDeque<Vec<u8>>,
    time_limit: bool,
) -> usize {
    let e = TaskEvent::Cancelled {
        node: exec.node.clone(),
        at: crate::now(),
        time_limit,
    };
    let mut line = serde_json::to_vec(&e).expect("events serialise");
    line.push(b'\n');
    let n = line.len();
    events.push_back(line);
    n
}

/// Keeps the events of step `step` as its tasks make them, in its log; holds them back
/// (and so the tasks' output) while more than [`BACKLOG`] bytes wait to be sent.
async fn keep_events(exec: Arc<Exec>, step: u32, mut rx: tokio::sync::mpsc::Receiver<TaskEvent>) {
    let mut changes = exec.output.subscribe();
    while let Some(e) = rx.recv().await {
        let mut line = serde_json::to_vec(&e).expect("events serialise");
        line.push(b'\n');
        loop {
            changes.borrow_and_update();
            {
                let mut steps = exec.steps.lock().expect("lock");
                let Some(log) = steps.get_mut(&step) else {
                    // Forgotten (srun said it has them all): the rest goes nowhere.
                    break;
                };
                if log.unsent_bytes < BACKLOG {
                    log.count(&e);
                    log.unsent_bytes += line.len();
                    log.events.push_back(std::mem::take(&mut line));
                    break;
                }
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
        exec.output.send_modify(|n| *n += 1);
    }
    if let Some(log) = exec.steps.lock().expect("lock").get_mut(&step) {
        log.finished = Some(Instant::now());
    }
    exec.output.send_modify(|n| *n += 1);
    // The watching agent tells the controller (`Status::steps_ended`).
    exec.touch();
}

/// Streams step `step`'s events from the `from`-th on to `write`, until its last one
/// (or until another connection takes over, or this one breaks). Events no longer kept
/// are said to be lost, and the stream goes on from the first kept.
async fn stream_step(exec: &Exec, step: u32, mut from: u64, write: &mut OwnedWriteHalf) {
    let mut changes = exec.output.subscribe();
    let me = {
        let mut steps = exec.steps.lock().expect("lock");
        let Some(log) = steps.get_mut(&step) else {
            return;
        };
        log.streamer += 1;
        log.streamer
    };
    loop {
        changes.borrow_and_update();
        enum Next {
            Line(Vec<u8>),
            Lost(u64),
            Wait,
            /// The step's last event was sent.
            Last,
            /// Nothing more for this connection.
            End,
        }
        let next = {
            let mut steps = exec.steps.lock().expect("lock");
            match steps.get_mut(&step) {
                None => Next::End,
                Some(log) if log.streamer != me => Next::End,
                Some(log) if from < log.base => {
                    let lost = log.base - from;
                    from = log.base;
                    Next::Lost(lost)
                }
                Some(log) => match log.events.get((from - log.base) as usize) {
                    Some(line) => {
                        let line = line.clone();
                        log.sent(from);
                        from += 1;
                        Next::Line(line)
                    }
                    None if log.finished.is_some() => Next::Last,
                    None => Next::Wait,
                },
            }
        };
        let written = match next {
            Next::Line(line) => write.write_all(&line).await.is_ok(),
            Next::Lost(n) => {
                let e = TaskEvent::Error {
                    message: format!(
                        "{}: {n} event(s) of step {}.{step}'s output were lost while \
                         the node's agent was away",
                        exec.node, exec.job
                    ),
                };
                send_line(write, &e).await
            }
            Next::Wait => {
                if write.flush().await.is_err() || changes.changed().await.is_err() {
                    return;
                }
                true
            }
            Next::Last => {
                let _ = send_line(write, &TaskEvent::End).await;
                return;
            }
            Next::End => return,
        };
        if !written {
            return;
        }
        exec.output.send_modify(|n| *n += 1);
    }
}

/// srun's input for the tasks of a step here that read it: the chunk written to each
/// of them in order, their input closed at the end. A task that stopped reading (it
/// ended) gets no more; once none is left, srun is told so. Only the job's owner (or
/// root) may write it.
async fn stdin(exec: &Arc<Exec>, uid: u32, c: StdinChunk) -> Reply {
    let (owner, pipes) = {
        let mut stdins = exec.stdins.lock().expect("lock");
        match stdins.get(&c.step) {
            None => {
                return Reply::Error {
                    code: ErrorCode::NotReady,
                    message: "no such task input".into(),
                }
            }
            // Checked before the pipes are taken out: nobody else can hold them up.
            Some((owner, _)) if *owner != uid && uid != 0 => {
                return Reply::Error {
                    code: ErrorCode::AccessDenied,
                    message: "Access/permission denied".into(),
                }
            }
            Some(_) => stdins.remove(&c.step).expect("present"),
        }
    };
    let step = c.step;
    let eof = c.eof;
    let written = tokio::task::spawn_blocking(move || {
        if let Some(size) = c.window {
            for (_, pipe) in &pipes {
                crate::pty::resize(pipe, size);
            }
        }
        pipes
            .into_iter()
            .filter_map(|(task, mut pipe)| {
                pipe.write_all(&c.data)
                    .and_then(|()| pipe.flush())
                    .ok()
                    .map(|()| (task, pipe))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    if written.is_empty() {
        // Every task stopped reading (they ended): the rest of the input goes nowhere.
        return Reply::Error {
            code: ErrorCode::Closed,
            message: "the tasks' input is closed".into(),
        };
    }
    if !eof {
        exec.stdins
            .lock()
            .expect("lock")
            .insert(step, (owner, written));
    }
    Reply::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_supervisors_abstract_socket_is_reached_with_its_token_and_a_name_taken_by_another_user_is_refused(
    ) {
        let (name, token) = Endpoint::fresh().unwrap();
        assert_ne!(Endpoint::fresh().unwrap().0, name);
        assert_ne!(name.trim_start_matches("sluice-stepd/"), token);
        let mine = Endpoint::Abstract {
            name: name.clone(),
            token: token.clone(),
        };
        let listener = mine.listen().unwrap();
        let accepted = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut first = String::new();
            BufReader::new(stream).read_line(&mut first).await.unwrap();
            first
        });
        drop(mine.connect().await.unwrap());
        // The caller's first line is the token.
        assert_eq!(accepted.await.unwrap(), format!("{token}\n"));
        assert!(same_token(&token, &token));
        assert!(!same_token(&token[1..], &token));
        assert!(!same_token(
            &format!("0{}", &token[1..]),
            &format!("1{}", &token[1..])
        ));

        // A name held by a process of another user (it could take one a dead supervisor
        // freed) is never talked to.
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: the refusal needs root (to listen as another user)");
            return;
        }
        let (taken, token) = Endpoint::fresh().unwrap();
        let script = format!(
            "import socket,time\ns=socket.socket(socket.AF_UNIX)\ns.bind('\\0{taken}')\n\
             s.listen()\nprint('up',flush=True)\ntime.sleep(30)"
        );
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut squatter = std::process::Command::new("python3")
            .args(["-c", &script])
            .uid(65534)
            .gid(65534)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut up = String::new();
        std::io::BufReader::new(squatter.stdout.take().unwrap())
            .read_line(&mut up)
            .unwrap();
        assert_eq!(up, "up\n");
        let refused = Endpoint::Abstract { name: taken, token }
            .connect()
            .await
            .unwrap_err();
        squatter.kill().unwrap();
        squatter.wait().unwrap();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("uid 65534"), "{refused}");
    }

    #[test]
    fn a_step_time_limit_keeps_the_name_older_supervisors_know() {
        // An order from an agent that knew only time limits reads as one.
        let old: Request =
            serde_json::from_str(r#"{"step_time_limit":{"step":1,"kill_wait":5}}"#).unwrap();
        assert!(matches!(
            old,
            Request::TerminateStep {
                step: 1,
                kill_wait: 5,
                time_limit: true
            }
        ));
        // srun's `-K` goes under the same name, saying it is no time limit.
        let new = serde_json::to_value(Request::TerminateStep {
            step: 2,
            kill_wait: 5,
            time_limit: false,
        })
        .unwrap();
        assert_eq!(new["step_time_limit"]["time_limit"], false);
    }

    #[test]
    fn requests_and_replies_are_json_lines_of_their_own() {
        let r = serde_json::to_string(&Request::Terminate {
            state: JobState::Cancelled,
            kill_wait: 30,
        })
        .unwrap();
        assert_eq!(r, r#"{"terminate":{"state":"CANCELLED","kill_wait":30}}"#);
        assert_eq!(
            serde_json::to_string(&Request::Watch).unwrap(),
            r#""watch""#
        );
        assert_eq!(
            serde_json::to_string(&Reply::Closing).unwrap(),
            r#""closing""#
        );
        let back: Request = serde_json::from_str(r#"{"time_limit":{"limit":null}}"#).unwrap();
        assert!(matches!(back, Request::TimeLimit { limit: None }));
    }

    #[test]
    fn a_step_cancelled_before_its_tasks_start_here_is_killed_as_they_start() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let dir = std::env::temp_dir().join(format!("sluice-early-{}", std::process::id()));
        let exec = crate::usage::truth::exec(&dir, "n1", None);
        // The controller's order comes first: nothing of step 3 here yet.
        cancel_step(&exec, 3);
        assert_eq!(exec.cancelled_early.lock().unwrap().get(&3), Some(&false));
        // srun's launch: its log, then its task in a process group of its own.
        exec.steps.lock().unwrap().insert(3, StepLog::new(0));
        let mut task = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = task.id() as i32;
        exec.procs().group_steps.insert(pid, 3);
        launched(&exec, 3);
        // Killed, and its srun told the step was cancelled, once.
        assert_eq!(task.wait().unwrap().signal(), Some(libc::SIGKILL));
        let events: Vec<String> = exec.steps.lock().unwrap()[&3]
            .events
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        assert_eq!(events.len(), 1);
        assert!(events[0].contains("cancelled"), "{events:?}");
        assert!(exec.cancelled_early.lock().unwrap().is_empty());
        // A step with nothing pending is left alone by its launch.
        launched(&exec, 4);
        assert!(exec.steps.lock().unwrap().get(&4).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_is_written_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("sluice-stepd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(END);
        let ended = JobEnded {
            job_id: 7,
            run: 1,
            node: "n1".into(),
            state: JobState::Completed,
            exit_code: 0,
            signal: 0,
            end: 1_700_000_000,
            usage: None,
        };
        write_whole(&path, &ended, true).unwrap();
        assert_eq!(read_json::<JobEnded>(&path).unwrap(), ended);
        // No temporary file is left beside it.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
