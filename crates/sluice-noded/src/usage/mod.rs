//! What a job's steps really use on this node (Slurm's `jobacct_gather`): each task's
//! CPU time, peak memory, major faults and I/O, and each allocated GPU's utilisation,
//! memory and power, sampled by the job's supervisor every `JobAcctGatherFrequency`
//! seconds and at each task's end, into [`sluice_proto::usage::StepUsage`].
//!
//! - [`procfs`]: `/proc/PID/{stat,status,io}` parsed, and a task's process tree (walked
//!   by parent id, as `jobacct_gather/linux` does);
//! - [`cgroupfs`]: the step's cgroup files (v2 and v1) parsed;
//! - [`gpu`]: GPU sources (a fake one for tests, AMD's sysfs files);
//! - [`tracker`]: the figures kept per step and task, and the sampler's round;
//! - here: the settings ([`Settings`], from slurm.conf through the daemon that starts the
//!   agent) and the reaping of a task with its `rusage` ([`reap`]), which gives right
//!   final figures however short the task was.

pub mod cgroupfs;
pub mod gpu;
pub mod procfs;
pub mod tracker;
#[cfg(test)]
pub(crate) mod truth;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use serde::{Deserialize, Serialize};

/// Where usage is gathered from (`JobAcctGatherType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Not set in slurm.conf: the step's cgroup where it has one, else `/proc`.
    #[default]
    Auto,
    /// `jobacct_gather/linux`: `/proc` only.
    Proc,
    /// `jobacct_gather/cgroup`: the step's cgroup where it has one, with `/proc` for
    /// each task's figures.
    Cgroup,
    /// `jobacct_gather/none`: nothing.
    Off,
}

/// The agent's gathering settings (passed on to its supervisors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Where from.
    pub source: Source,
    /// Seconds between samples while tasks run; 0: only at their end.
    pub task_secs: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            source: Source::Auto,
            task_secs: 30,
        }
    }
}

static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();

/// Sets how this process's agent gathers its jobs' usage (once, before it runs; the
/// default is [`Settings::default`]).
pub fn gather_with(settings: Settings) {
    let _ = SETTINGS.set(settings);
}

/// The settings [`gather_with`] set.
pub(crate) fn settings() -> Settings {
    SETTINGS.get().copied().unwrap_or_default()
}

/// A reaped task's `rusage` (its own and its waited-for descendants'), in plain units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User CPU, milliseconds.
    pub user_ms: u64,
    /// System CPU, milliseconds.
    pub system_ms: u64,
    /// The largest resident set of the task or one of its descendants, bytes.
    pub max_rss: u64,
    /// Major faults.
    pub major_faults: u64,
    /// Bytes read from and written to block devices (512-byte blocks counted).
    pub block_read: u64,
    /// See [`Rusage::block_read`].
    pub block_write: u64,
}

impl Rusage {
    fn of(ru: &libc::rusage) -> Rusage {
        let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
        Rusage {
            user_ms: ms(ru.ru_utime),
            system_ms: ms(ru.ru_stime),
            max_rss: ru.ru_maxrss.max(0) as u64 * 1024,
            major_faults: ru.ru_majflt.max(0) as u64,
            block_read: ru.ru_inblock.max(0) as u64 * 512,
            block_write: ru.ru_oublock.max(0) as u64 * 512,
        }
    }
}

/// Waits until child `pid` has exited, without reaping it: its `/proc` entries (its
/// CPU time and I/O) can still be read. Blocking.
pub(crate) fn wait_exited(pid: i32) {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes only into `info`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Reaps child `pid` (as `Child::wait` would, whose `Child` must not be waited for
/// again): its exit status and its `rusage`. Blocking.
pub(crate) fn reap(pid: i32) -> (std::io::Result<ExitStatus>, Option<Rusage>) {
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter for wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 writes only into `status` and `ru`.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return (Ok(ExitStatus::from_raw(status)), Some(Rusage::of(&ru)));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return (Err(e), None);
        }
    }
}

/// Clock ticks a second (`/proc`'s CPU times, v1's `cpuacct.stat`).
pub(crate) fn ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Bytes in a memory page (`/proc`'s resident sizes).
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // Reaped by `reap`, not `Child::wait`.
    #[allow(clippy::zombie_processes)]
    fn a_reaped_child_gives_its_status_and_the_cpu_it_burnt() {
        let child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3",
            ])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        wait_exited(pid);
        // Not reaped yet: still in /proc, as a zombie.
        assert!(std::path::Path::new(&format!("/proc/{pid}/stat")).exists());
        let (status, ru) = reap(pid);
        assert_eq!(status.unwrap().code(), Some(3));
        let ru = ru.unwrap();
        assert!(ru.user_ms + ru.system_ms > 0, "{ru:?}");
        assert!(ru.max_rss > 0, "{ru:?}");
        assert!(!std::path::Path::new(&format!("/proc/{pid}/stat")).exists());
    }
}
