//! Job memory limits through the kernel's memory cgroup, as Slurm's `task/cgroup` plugin
//! sets them with `ConstrainRAMSpace=yes`, `ConstrainSwapSpace=yes`,
//! `AllowedRAMSpace=100`, `AllowedSwapSpace=0` and `MinRAMSpace=30`: a job may use the
//! memory it was allocated on a node (`--mem`, or `--mem-per-cpu` times its CPUs there),
//! swap included, and no more; past that the kernel's OOM killer ends one of its
//! processes, and the agent reports the kill.
//!
//! Both interfaces are handled: cgroup v2 (the unified hierarchy, when its
//! `cgroup.controllers` lists `memory`) and cgroup v1 (a hierarchy with the `memory`
//! controller), both found from `/proc/self/mountinfo`. The agent's cgroups live under its
//! own (from `/proc/self/cgroup`), so that jobs stay inside whatever limits the agent
//! itself runs under (a container, a systemd service); on cgroup v2, whose cgroups with
//! processes cannot give their children controllers, under the nearest ancestor that
//! already gives its children the memory controller:
//!
//! ```text
//! <agent's cgroup>/sluice/<node>.<cluster>/job_<id>_<run>/batch
//!                                                        /step_<n>
//! ```
//!
//! Several agents of one `sluice up` share a host, and several clusters may (each test
//! of the cluster suite starts its own, all with nodes `n1`, `n2`), so the path has the
//! node name and `<cluster>`, a hash of the cluster's state directory ([`node_dir_name`]).
//! The job's cgroup carries the limit, so that all of the job's steps on the node share
//! it (Slurm's job cgroup); each step gets a leaf of its own below it, with the same
//! limit, so that an OOM kill is charged to the step it happened in (Slurm's step
//! cgroups; cgroup v2 also allows processes only in leaves once a cgroup's children have
//! controllers). A process joins its step's leaf in the child, between fork and exec
//! ([`join_self`]), so that nothing it starts escapes the limit.
//!
//! When a step's processes here have ended, what they left running in its leaf is killed
//! (as Slurm's `proctrack/cgroup` does), its OOM-kill count is read (v1:
//! `memory.oom_control`, v2: `memory.events`, field `oom_kill`), and the leaf is removed;
//! the job's cgroup goes with its last leaf.
//!
//! Architecture invariant: nothing here ever fails a job. A host without a usable memory
//! cgroup (not root, a read-only `/sys/fs/cgroup`, a container without delegation) runs
//! jobs without limits; the agent says so once, at start.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// The smallest limit set, in MiB: Slurm's default `MinRAMSpace` (30 MB), so that a tiny
/// `--mem` does not kill the job's shell before it starts.
pub const MIN_LIMIT_MIB: u64 = 30;

/// The signal number an OOM-killed job reports (`ExitCode` `0:125` in `sacct`): Slurm's
/// `SIG_OOM` (253) as sacct decodes it from a wait status (its low seven bits).
pub const OOM_SIGNAL: i32 = 125;

/// How long a cgroup that still lists processes may take to empty before it is left
/// behind (removal retries on `EBUSY` meanwhile).
pub(crate) const PATIENCE: Duration = Duration::from_secs(2);

/// Serialises making and removing job cgroups within one process (memory and devices
/// alike); [`lock`] adds the lock between processes (an agent and the job supervisors
/// it started, see `stepd`).
static LOCK: Mutex<()> = Mutex::new(());

/// Held while job cgroups under a node's directory are made or removed, so that a step
/// starting never sees its job's cgroup removed under it by a step ending: this
/// process's mutex, and an exclusive `flock` of the node's cgroup directory itself
/// (cgroupfs directories take `flock` as any file does), which the agent and every job
/// supervisor of the node take alike.
pub(crate) struct Held {
    _mutex: std::sync::MutexGuard<'static, ()>,
    _flock: Option<nix::fcntl::Flock<std::fs::File>>,
}

/// Takes [`Held`] for the node whose job cgroups live in `node_dir`. A directory that
/// cannot be opened (already removed) is locked by the mutex alone.
pub(crate) fn lock(node_dir: &Path) -> Held {
    let mutex = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let flock = std::fs::File::open(node_dir)
        .ok()
        .and_then(|f| nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive).ok());
    Held {
        _mutex: mutex,
        _flock: flock,
    }
}

/// Which cgroup interface holds the memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Version {
    /// The legacy interface: one hierarchy per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// The parts of one `/proc/self/mountinfo` line that locate a cgroup hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    /// The directory of the hierarchy that is mounted (field 4; `/` for its root).
    pub(crate) root: String,
    /// Where it is mounted (field 5).
    pub(crate) mount_point: PathBuf,
    /// The filesystem type (`cgroup`, `cgroup2`, ...).
    pub(crate) fs_type: String,
    /// The per-superblock options; for cgroup v1 they name the controllers.
    pub(crate) super_options: Vec<String>,
}

/// Undoes the octal escapes (`\040` for a space) of mountinfo fields.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses one line of `/proc/self/mountinfo` (see proc(5)): `ID PARENT MAJ:MIN ROOT
/// MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS`.
pub(crate) fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let right: Vec<&str> = right.split(' ').collect();
    if left.len() < 6 || right.len() < 3 {
        return None;
    }
    Some(Mount {
        root: unescape(left[3]),
        mount_point: PathBuf::from(unescape(left[4])),
        fs_type: right[0].to_string(),
        super_options: right[2].trim_end().split(',').map(str::to_string).collect(),
    })
}

/// The hierarchies that may hold the memory controller, in the order they are tried:
/// every cgroup2 mount (whether it has `memory` is seen in its `cgroup.controllers`), then
/// every cgroup v1 mount with the `memory` controller.
pub(crate) fn memory_hierarchies(mountinfo: &str) -> Vec<(Version, Mount)> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mountinfo_line).collect();
    let v2 = mounts
        .iter()
        .filter(|m| m.fs_type == "cgroup2")
        .map(|m| (Version::V2, m.clone()));
    let v1 = mounts
        .iter()
        .filter(|m| m.fs_type == "cgroup" && m.super_options.iter().any(|o| o == "memory"))
        .map(|m| (Version::V1, m.clone()));
    v2.chain(v1).collect()
}

/// The calling process's cgroup in the hierarchy of `version` (for v1, the memory
/// controller's), from the text of `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` lines;
/// v2's is `0::PATH`).
pub(crate) fn own_cgroup(proc_self_cgroup: &str, version: Version) -> Option<String> {
    own_cgroup_of(proc_self_cgroup, version, "memory")
}

/// [`own_cgroup`] for the v1 hierarchy of `controller` (`memory`, `devices`).
pub(crate) fn own_cgroup_of(
    proc_self_cgroup: &str,
    version: Version,
    controller: &str,
) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut it = line.splitn(3, ':');
        let (id, controllers, path) = (it.next()?, it.next()?, it.next()?);
        let hit = match version {
            Version::V2 => id == "0" && controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == controller),
        };
        hit.then(|| path.to_string())
    })
}

/// The directory of cgroup `path` (as `/proc/self/cgroup` names it) under `mount`.
pub(crate) fn cgroup_dir(mount: &Mount, path: &str) -> PathBuf {
    let root = mount.root.trim_end_matches('/');
    let rel = match path.strip_prefix(root) {
        Some(rest) if !root.is_empty() && (rest.is_empty() || rest.starts_with('/')) => rest,
        _ => path,
    };
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(rel)
    }
}

/// The OOM-kill count in the text of v1's `memory.oom_control` or v2's `memory.events`
/// (both have a line `oom_kill N`); None when the field is missing (kernels before 4.13).
pub(crate) fn oom_kills(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == "oom_kill")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// The line slurmstepd on node `node` writes to a step's stderr when the kernel killed
/// `kills` of its processes for memory; `step` as Slurm names it (`12.batch`, `12.0`).
/// No newline.
pub(crate) fn oom_message(node: &str, kills: u64, step: &str) -> String {
    format!(
        "{}: error: Detected {kills} oom_kill event{} in StepId={step}. \
         Some of the step tasks have been OOM Killed.",
        crate::run::stepd(node),
        if kills == 1 { "" } else { "s" }
    )
}

/// FNV-1a, 64 bits: a hash that stays the same across builds and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The name of the directory, under `<agent's cgroup>/sluice`, that holds the job cgroups
/// of node `node` of the cluster whose state directory is `state_dir`: `<node>.<hash of
/// the state directory's canonical path and, where it exists, its device and inode, 16
/// hex digits>`. One path may name several directories on one machine: hosts made of
/// mount namespaces (the hosts harness) each bind a spool of their own at
/// `/var/spool/slurmd`, and two such labs' `node01` must not share job cgroups.
pub fn node_dir_name(state_dir: &Path, node: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let dir = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let mut key = dir.as_os_str().as_bytes().to_vec();
    if let Ok(m) = std::fs::metadata(&dir) {
        key.extend(m.dev().to_le_bytes());
        key.extend(m.ino().to_le_bytes());
    }
    format!("{}.{:016x}", node.replace('/', "_"), fnv1a(&key))
}

/// Writes `n` in decimal into `buf` without allocating; returns the digits.
fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` file is `procs`.
///
/// For the child between fork and exec: it makes only async-signal-safe calls (open,
/// getpid, write, close) and does not allocate.
pub(crate) fn join_self(procs: &CStr) -> nix::Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let fd = nix::fcntl::open(procs, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    // SAFETY: `fd` was just opened here and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = [0u8; 10];
    let pid = decimal(nix::unistd::getpid().as_raw() as u32, &mut buf);
    nix::unistd::write(&fd, pid).map(drop)
}

pub(crate) fn io_error(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

pub(crate) fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| io_error(path, e))
}

/// Creates `dir`; true when it was made now (false: it was there).
pub(crate) fn make_dir(dir: &Path) -> Result<bool, String> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error(dir, e)),
    }
}

/// Removes cgroup `dir`, retrying for [`PATIENCE`] while it is busy (processes still
/// leaving). A missing one is removed already.
pub(crate) fn remove(dir: &Path) -> std::io::Result<()> {
    let start = Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(Errno::EBUSY as i32) && start.elapsed() < PATIENCE =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The subdirectories (child cgroups) of `dir`.
pub(crate) fn children(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs every process in cgroup `dir` until none is listed, for at most
/// [`PATIENCE`].
pub(crate) fn kill_all(dir: &Path) {
    let start = Instant::now();
    loop {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() || start.elapsed() > PATIENCE {
            return;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The cgroup v2 directories where the agents' cgroups may go, in the order tried: the
/// agent's own cgroup `own`, then its ancestors up to the hierarchy's root `mount_point`.
pub(crate) fn with_ancestors(own: &Path, mount_point: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![own.to_path_buf()];
    if own.starts_with(mount_point) {
        let mut dir = own;
        while dir != mount_point {
            let Some(parent) = dir.parent() else { break };
            dirs.push(parent.to_path_buf());
            dir = parent;
        }
    }
    dirs
}

/// Whether cgroup v2 `dir` already gives its children the memory controller.
fn subtree_has_memory(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.subtree_control"))
        .is_ok_and(|t| t.split_whitespace().any(|c| c == "memory"))
}

/// Lets the children of cgroup v2 `dir` have memory limits (`+memory` in its
/// `cgroup.subtree_control`).
fn enable_memory(dir: &Path) -> Result<(), String> {
    let path = dir.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
    if enabled.split_whitespace().any(|c| c == "memory") {
        return Ok(());
    }
    write(&path, "+memory")
}

/// Sets the limit of cgroup `dir` to `bytes` of memory, swap included.
fn set_limit(version: Version, dir: &Path, bytes: u64) -> Result<(), String> {
    let bytes = bytes.to_string();
    match version {
        Version::V1 => {
            // A new cgroup has no limit: memory first, then memory+swap (which may never
            // be below it). memsw exists only with swap accounting.
            write(&dir.join("memory.limit_in_bytes"), &bytes)?;
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write(&memsw, &bytes)?;
            }
        }
        Version::V2 => {
            write(&dir.join("memory.max"), &bytes)?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write(&swap, "0")?;
            }
        }
    }
    Ok(())
}

/// The memory cgroups of one node agent: where they live and which interface writes them.
/// (A job's supervisor gets them from the agent, in its launch record.)
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Memory {
    version: Version,
    /// `<agent's cgroup>/sluice/<node>`.
    node_dir: PathBuf,
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self.version {
            Version::V1 => "v1",
            Version::V2 => "v2",
        };
        write!(f, "cgroup {v} at {}", self.node_dir.display())
    }
}

impl Memory {
    /// Which cgroup interface holds the limits.
    pub(crate) fn version(&self) -> Version {
        self.version
    }

    /// `<agent's cgroup>/sluice/<node>`: where this node's job cgroups are made.
    pub(crate) fn node_dir(&self) -> &Path {
        &self.node_dir
    }

    /// Finds the memory controller and makes (or takes over) the directory for the job
    /// cgroups of node `node` of the cluster with state directory `state_dir`
    /// ([`node_dir_name`]), checking that limits can be written there. Err says why jobs
    /// on this node cannot get memory limits.
    pub fn detect(state_dir: &Path, node: &str) -> Result<Memory, String> {
        Self::detect_named(&node_dir_name(state_dir, node))
    }

    fn detect_named(name: &str) -> Result<Memory, String> {
        let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
        let mountinfo = read("/proc/self/mountinfo")?;
        let own = read("/proc/self/cgroup")?;
        let mut why = Vec::new();
        for (version, mount) in memory_hierarchies(&mountinfo) {
            if version == Version::V2 {
                let controllers = mount.mount_point.join("cgroup.controllers");
                let listed = std::fs::read_to_string(controllers).unwrap_or_default();
                if !listed.split_whitespace().any(|c| c == "memory") {
                    continue;
                }
            }
            let Some(path) = own_cgroup(&own, version) else {
                continue;
            };
            let own_dir = cgroup_dir(&mount, &path);
            let bases = match version {
                Version::V1 => vec![own_dir.clone()],
                Version::V2 => with_ancestors(&own_dir, &mount.mount_point),
            };
            for base in bases {
                // v2 lets a cgroup with processes (the agent's, under systemd) give its
                // children no controllers: an ancestor that already gives them memory
                // is used instead (never one that would have to be changed for it).
                if base != own_dir && !subtree_has_memory(&base) {
                    continue;
                }
                match Self::prepare(version, &base, name) {
                    Ok(m) => return Ok(m),
                    Err(e) => why.push(e),
                }
            }
        }
        why.dedup(); // a hierarchy mounted twice fails twice alike
        if why.is_empty() {
            Err("no cgroup hierarchy with the memory controller is mounted".into())
        } else {
            Err(why.join("; "))
        }
    }

    fn prepare(version: Version, base: &Path, name: &str) -> Result<Memory, String> {
        if !base.is_dir() {
            return Err(io_error(base, "no such cgroup"));
        }
        let top = base.join("sluice");
        let node_dir = top.join(name);
        let made = (|| {
            if version == Version::V2 {
                enable_memory(base)?;
            }
            make_dir(&top)?;
            if version == Version::V2 {
                enable_memory(&top)?;
            }
            make_dir(&node_dir)?;
            if version == Version::V2 {
                enable_memory(&node_dir)?;
            }
            // A cgroup like a job's, to be sure that limits can be written.
            let probe = node_dir.join(format!("probe_{}", std::process::id()));
            make_dir(&probe)?;
            let set = set_limit(version, &probe, MIN_LIMIT_MIB << 20);
            let _ = std::fs::remove_dir(&probe);
            set
        })();
        match made {
            Ok(()) => Ok(Memory { version, node_dir }),
            Err(e) => {
                let _ = std::fs::remove_dir(&node_dir);
                let _ = std::fs::remove_dir(&top);
                Err(e)
            }
        }
    }

    /// Makes the cgroup of step `step` (`batch`, `step_0`, ...) of run `run` of job `job`,
    /// inside the job's cgroup (made if needed), both limited to `limit_mib` MiB (at least
    /// [`MIN_LIMIT_MIB`]) of memory and swap together.
    pub(crate) fn step(
        &self,
        job: u64,
        run: u32,
        step: &str,
        limit_mib: u64,
    ) -> Result<Step, String> {
        let bytes = limit_mib.max(MIN_LIMIT_MIB).saturating_mul(1 << 20);
        let job_dir = self.node_dir.join(job_dir_name(job, run));
        let dir = job_dir.join(step);
        let _held = lock(&self.node_dir);
        let made = (|| {
            if make_dir(&job_dir)? {
                set_limit(self.version, &job_dir, bytes)?;
                if self.version == Version::V2 {
                    enable_memory(&job_dir)?;
                }
            }
            make_dir(&dir)?;
            set_limit(self.version, &dir, bytes)?;
            CString::new(
                dir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            )
            .map_err(|e| e.to_string())
        })();
        match made {
            Ok(procs) => Ok(Step {
                version: self.version,
                job_dir,
                dir,
                procs,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                let _ = std::fs::remove_dir(&job_dir);
                Err(e)
            }
        }
    }

    /// Ends whatever runs in this node's job cgroups but those of the runs `keep` (jobs
    /// whose supervisors the agent adopted: `(job, run)`) and removes them: what a job
    /// whose supervisor is gone left. Returns how many job cgroups were removed.
    pub(crate) fn sweep_except(&self, keep: &[(u64, u32)]) -> usize {
        sweep_node(&self.node_dir, keep)
    }

    /// [`Memory::sweep_except`] nothing: every job cgroup of the node ends, then the
    /// node's directory, and `sluice` above it when no other agent uses it.
    pub(crate) fn close(&self) {
        close_node(&self.node_dir);
    }

    /// Removes the node's directory, and `sluice` above it, if no job cgroup is left in
    /// them (an agent stopping while its jobs run on under their supervisors keeps them).
    pub(crate) fn close_if_empty(&self) {
        close_if_empty(&self.node_dir);
    }
}

/// The name of the cgroup of run `run` of job `job` under a node's directory.
pub(crate) fn job_dir_name(job: u64, run: u32) -> String {
    format!("job_{job}_{run}")
}

/// Ends whatever runs in the job cgroups (and their step cgroups) under `node_dir`, but
/// those of the runs `keep`, and removes them. Returns how many job cgroups were
/// removed. For every controller the agent uses (memory, devices).
pub(crate) fn sweep_node(node_dir: &Path, keep: &[(u64, u32)]) -> usize {
    let kept: Vec<String> = keep.iter().map(|&(j, r)| job_dir_name(j, r)).collect();
    let mut removed = 0;
    for job in children(node_dir) {
        let name = job.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if kept.iter().any(|k| k == name) {
            continue;
        }
        for leaf in children(&job) {
            kill_all(&leaf);
            if let Err(e) = remove(&leaf) {
                tracing::warn!("cannot remove cgroup {}: {e}", leaf.display());
            }
        }
        kill_all(&job);
        let _held = lock(node_dir);
        match remove(&job) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!("cannot remove cgroup {}: {e}", job.display()),
        }
    }
    removed
}

/// [`sweep_node`], then removes `node_dir`, and `sluice` above it when no other agent
/// uses it.
pub(crate) fn close_node(node_dir: &Path) {
    sweep_node(node_dir, &[]);
    close_if_empty(node_dir);
}

/// Removes `node_dir`, and `sluice` above it, where no cgroup is left in them.
pub(crate) fn close_if_empty(node_dir: &Path) {
    let _ = std::fs::remove_dir(node_dir);
    if let Some(top) = node_dir.parent() {
        let _ = std::fs::remove_dir(top);
    }
}

/// One step's cgroup on this node, made by [`Memory::step`].
#[derive(Debug)]
pub(crate) struct Step {
    version: Version,
    job_dir: PathBuf,
    dir: PathBuf,
    procs: CString,
}

impl Step {
    /// Its `cgroup.procs`, for [`join_self`] in a child about to exec.
    pub(crate) fn procs(&self) -> &CStr {
        &self.procs
    }

    /// Its directory and interface, where its usage is read (`usage::cgroupfs`).
    pub(crate) fn place(&self) -> (PathBuf, Version) {
        (self.dir.clone(), self.version)
    }

    /// Once the step's own processes have ended: kills what they left in the cgroup,
    /// reads how many processes the kernel's OOM killer ended there, and removes the
    /// cgroup, and the job's when no other step of the job is left here. Returns the
    /// OOM-kill count (0 where the kernel does not count them). Blocks up to a few
    /// seconds.
    pub(crate) fn finish(self) -> u64 {
        kill_all(&self.dir);
        let counter = match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        let kills = std::fs::read_to_string(self.dir.join(counter))
            .ok()
            .and_then(|t| oom_kills(&t))
            .unwrap_or(0);
        if let Err(e) = remove(&self.dir) {
            tracing::warn!("cannot remove cgroup {}: {e}", self.dir.display());
        }
        let _held = lock(self.job_dir.parent().unwrap_or(&self.job_dir));
        // Busy while another step of the job still runs here: the last one removes it.
        let _ = std::fs::remove_dir(&self.job_dir);
        kills
    }
}

/// Whether this host lets node agents started by this process limit jobs' memory, found
/// as an agent finds it at start (with a throw-away node name). Ok is the directory that
/// holds the agents' cgroups (`<own cgroup>/sluice`, with one directory per node); Err
/// says why jobs would run without limits.
pub fn probe() -> Result<PathBuf, String> {
    let m = Memory::detect_named(&format!("probe-{}", std::process::id()))?;
    m.close();
    Ok(m.node_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
23 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 master:3 - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
50 23 0:40 /jobs /mnt/my\\040cgroups ro,relatime - cgroup cgroup ro,cpuacct,memory
";

    #[test]
    fn mountinfo_lines_give_root_mount_point_type_and_controllers() {
        assert_eq!(
            parse_mountinfo_line(
                "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 master:3 - cgroup cgroup rw,memory"
            ),
            Some(Mount {
                root: "/".into(),
                mount_point: "/sys/fs/cgroup/memory".into(),
                fs_type: "cgroup".into(),
                super_options: vec!["rw".into(), "memory".into()],
            })
        );
        // Escaped spaces, a subtree mounted, no optional fields.
        assert_eq!(
            parse_mountinfo_line(
                "50 23 0:40 /jobs /mnt/my\\040cgroups ro,relatime - cgroup cgroup ro,cpuacct,memory"
            ),
            Some(Mount {
                root: "/jobs".into(),
                mount_point: "/mnt/my cgroups".into(),
                fs_type: "cgroup".into(),
                super_options: vec!["ro".into(), "cpuacct".into(), "memory".into()],
            })
        );
        assert_eq!(
            parse_mountinfo_line(
                "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
            )
            .map(|m| (m.fs_type, m.super_options)),
            Some(("cgroup2".into(), vec!["rw".into(), "nsdelegate".into()]))
        );
        assert_eq!(
            parse_mountinfo_line("31 23 0:28 / /sys/fs/cgroup rw,relatime"),
            None
        );
        assert_eq!(parse_mountinfo_line(""), None);
    }

    #[test]
    fn cgroup2_mounts_come_first_then_v1_memory_hierarchies() {
        let found: Vec<(Version, PathBuf)> = memory_hierarchies(MOUNTINFO)
            .into_iter()
            .map(|(v, m)| (v, m.mount_point))
            .collect();
        assert_eq!(
            found,
            [
                (Version::V2, PathBuf::from("/sys/fs/cgroup/unified")),
                (Version::V1, PathBuf::from("/sys/fs/cgroup/memory")),
                (Version::V1, PathBuf::from("/mnt/my cgroups")),
            ]
        );
    }

    #[test]
    fn the_own_cgroup_is_read_per_hierarchy_and_placed_under_the_mount() {
        let proc_cgroup = "12:pids:/user.slice\n4:memory:/process_api/7195\n\
                           2:cpu,cpuacct:/\n0::/user.slice/session-3.scope\n";
        assert_eq!(
            own_cgroup(proc_cgroup, Version::V1).as_deref(),
            Some("/process_api/7195")
        );
        assert_eq!(
            own_cgroup(proc_cgroup, Version::V2).as_deref(),
            Some("/user.slice/session-3.scope")
        );
        assert_eq!(own_cgroup("3:cpu:/\n", Version::V1), None);
        assert_eq!(own_cgroup("3:cpu:/\n", Version::V2), None);

        let mounts = memory_hierarchies(MOUNTINFO);
        let v1 = &mounts[1].1;
        assert_eq!(
            cgroup_dir(v1, "/process_api/7195"),
            PathBuf::from("/sys/fs/cgroup/memory/process_api/7195")
        );
        assert_eq!(cgroup_dir(v1, "/"), PathBuf::from("/sys/fs/cgroup/memory"));
        // A mounted subtree: the path is relative to it.
        let sub = &mounts[2].1;
        assert_eq!(
            cgroup_dir(sub, "/jobs/a"),
            PathBuf::from("/mnt/my cgroups/a")
        );
        assert_eq!(cgroup_dir(sub, "/jobs"), PathBuf::from("/mnt/my cgroups"));
        assert_eq!(
            cgroup_dir(sub, "/jobsx"),
            PathBuf::from("/mnt/my cgroups/jobsx")
        );
    }

    #[test]
    fn on_cgroup_v2_the_ancestors_are_tried_nearest_first() {
        assert_eq!(
            with_ancestors(
                Path::new("/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope"),
                Path::new("/sys/fs/cgroup")
            ),
            [
                PathBuf::from("/sys/fs/cgroup/user.slice/user-0.slice/session-3.scope"),
                PathBuf::from("/sys/fs/cgroup/user.slice/user-0.slice"),
                PathBuf::from("/sys/fs/cgroup/user.slice"),
                PathBuf::from("/sys/fs/cgroup"),
            ]
        );
        assert_eq!(
            with_ancestors(Path::new("/sys/fs/cgroup"), Path::new("/sys/fs/cgroup")),
            [PathBuf::from("/sys/fs/cgroup")]
        );
        assert_eq!(
            with_ancestors(Path::new("/elsewhere/a"), Path::new("/sys/fs/cgroup")),
            [PathBuf::from("/elsewhere/a")]
        );
    }

    #[test]
    fn oom_kills_are_read_from_v1_oom_control_and_v2_memory_events() {
        // cgroup v1 memory.oom_control.
        assert_eq!(
            oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"),
            Some(2)
        );
        // A kernel before 4.13 has no count.
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), None);
        // cgroup v2 memory.events: `oom` and `oom_group_kill` are other counts.
        assert_eq!(
            oom_kills("low 0\nhigh 0\nmax 31\noom 3\noom_kill 1\noom_group_kill 0\n"),
            Some(1)
        );
        assert_eq!(
            oom_kills("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"),
            Some(0)
        );
    }

    #[test]
    fn the_oom_message_is_slurmstepds() {
        assert_eq!(
            oom_message("n1", 1, "42.batch"),
            "slurmstepd-n1: error: Detected 1 oom_kill event in StepId=42.batch. \
             Some of the step tasks have been OOM Killed."
        );
        assert_eq!(
            oom_message("gpu07", 3, "42.0"),
            "slurmstepd-gpu07: error: Detected 3 oom_kill events in StepId=42.0. \
             Some of the step tasks have been OOM Killed."
        );
    }

    #[test]
    fn node_directories_are_named_by_node_and_cluster() {
        // FNV-1a's published test vectors.
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(
            node_dir_name(Path::new("/nonexistent/state"), "n1"),
            format!("n1.{:016x}", fnv1a(b"/nonexistent/state"))
        );
        assert_ne!(
            node_dir_name(Path::new("/nonexistent/a"), "n1"),
            node_dir_name(Path::new("/nonexistent/b"), "n1")
        );
        assert!(node_dir_name(Path::new("/x"), "a/b").starts_with("a_b."));
        // An existing directory is named by what it is, not only by its path: the
        // same path in two mount namespaces is two directories.
        let dir = std::env::temp_dir();
        let path = std::fs::canonicalize(&dir).unwrap();
        let name = node_dir_name(&dir, "n1");
        assert_ne!(
            name,
            format!("n1.{:016x}", fnv1a(path.as_os_str().as_encoded_bytes()))
        );
        assert_eq!(name, node_dir_name(&path, "n1"));
    }

    #[test]
    fn pids_are_written_in_decimal_without_allocating() {
        let mut buf = [0u8; 10];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(7, &mut buf), b"7");
        assert_eq!(decimal(4194304, &mut buf), b"4194304");
        assert_eq!(decimal(u32::MAX, &mut buf), b"4294967295");
        assert_eq!(unescape("a\\040b\\134c\\9"), "a b\\c\\9");
    }

    /// On a host where agents can limit memory: a child that joins a step's cgroup and
    /// allocates past the limit is killed and counted, and the cgroups go away.
    #[test]
    fn a_process_over_its_limit_is_oom_killed_and_counted() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let node = format!("unit-{}", std::process::id());
        let memory = match Memory::detect_named(&node) {
            Ok(m) => m,
            Err(why) => {
                eprintln!("skipped: no writable memory cgroup here: {why}");
                return;
            }
        };
        let run = |limit: u64, mib: u64| {
            let step = memory.step(7, 0, "batch", limit).unwrap();
            let job_dir = step.job_dir.clone();
            let procs = step.procs().to_owned();
            let mut cmd = std::process::Command::new("python3");
            cmd.arg("-c")
                .arg(format!("b = b'x' * ({mib} * 1024 * 1024)"));
            // SAFETY: join_self is async-signal-safe.
            unsafe {
                cmd.pre_exec(move || join_self(&procs).map_err(std::io::Error::from));
            }
            let status = cmd.status().unwrap();
            let kills = step.finish();
            assert!(!job_dir.exists(), "{} is removed", job_dir.display());
            (status.code(), status.signal(), kills)
        };
        assert_eq!(run(50, 200), (None, Some(9), 1));
        assert_eq!(run(200, 50), (Some(0), None, 0));
        memory.close();
        assert!(!memory.node_dir.exists());
    }
}
