//! Process groups a job's supervisor started, remembered on disk in its directory, so
//! that a supervisor that died (SIGKILL, a crash) does not leave its job running unseen:
//! nobody could report that job's end, so the agent that finds the dead supervisor ends
//! them, and the controller requeues or fails the job (`NODE_FAIL`), as Slurm does for
//! jobs on a failed node. (A supervisor that lives is never reaped: its job is ended by
//! the controller's word only; see `supervisors.rs`.) An agent also reaps groups that
//! agents from before job supervisors remembered beside the job scripts.
//!
//! Each group is the group id and the leader's start time (field 22 of
//! `/proc/PID/stat`, in clock ticks since boot), so that a recycled process id is never
//! mistaken for a job, kept under a key: as an extended attribute of the directory,
//! `user.sluice.<key>.pgid`, where its file system takes one, else as a file
//! `<key>.pgid` in it. The attribute makes no file: every job remembers its batch
//! script's group, and a file made and removed per job is one more inode for the file
//! system to allocate (ext4 without a journal scans past those freed in the last
//! seconds, so that the cost grows with the rate jobs run at).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The leader's start time, if the process exists.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; fields after it
    // follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

/// The extended attributes' names: `user.sluice.<key>.pgid`.
const PREFIX: &str = "user.sluice.";
const SUFFIX: &str = ".pgid";

/// Remembers process group `pgid` under `key` in `dir`.
pub(crate) fn remember(dir: &Path, key: &str, pgid: i32) {
    if let Some(t) = start_time(pgid) {
        let value = format!("{pgid} {t}\n");
        if attr::set(dir, &format!("{PREFIX}{key}{SUFFIX}"), value.as_bytes()).is_err() {
            let _ = std::fs::write(dir.join(format!("{key}{SUFFIX}")), value);
        }
    }
}

/// Forgets the group remembered under `key`: it has ended.
pub(crate) fn forget(dir: &Path, key: &str) {
    if attr::remove(dir, &format!("{PREFIX}{key}{SUFFIX}")).is_err() {
        let _ = std::fs::remove_file(dir.join(format!("{key}{SUFFIX}")));
    }
}

/// Kills (SIGKILL) every remembered group whose leader is still the process that was
/// started, and forgets them all. Returns how many were killed.
pub(crate) fn reap(dir: &Path) -> usize {
    let mut killed = 0;
    for name in attr::names(dir) {
        if !(name.starts_with(PREFIX) && name.ends_with(SUFFIX)) {
            continue;
        }
        if let Some(value) = attr::get(dir, &name) {
            killed += usize::from(kill_if_same(&String::from_utf8_lossy(&value)));
        }
        let _ = attr::remove(dir, &name);
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return killed;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("pgid") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        killed += usize::from(kill_if_same(&text));
        let _ = std::fs::remove_file(&path);
    }
    killed
}

/// Kills the group `text` remembers (`PGID START`) if its leader is the process that
/// was started; whether it did.
fn kill_if_same(text: &str) -> bool {
    let mut it = text.split_whitespace().map(|v| v.parse::<i64>().ok());
    if let (Some(Some(pgid)), Some(Some(t))) = (it.next(), it.next()) {
        let pgid = pgid as i32;
        if pgid > 1 && start_time(pgid) == Some(t as u64) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            return true;
        }
    }
    false
}

/// A directory's extended attributes, by path (the system calls; `nix` has none).
mod attr {
    use super::*;

    fn c(s: impl AsRef<[u8]>) -> std::io::Result<CString> {
        CString::new(s.as_ref()).map_err(std::io::Error::other)
    }

    /// Sets `name` to `value`; fails where the file system takes no such attribute.
    pub(super) fn set(dir: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
        let (path, name) = (c(dir.as_os_str().as_bytes())?, c(name)?);
        // SAFETY: two NUL-terminated strings and a buffer of `value.len()` bytes, all
        // alive for the call.
        let rc = unsafe {
            libc::setxattr(
                path.as_ptr(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        done(rc)
    }

    /// Removes `name`; fails where it is not there.
    pub(super) fn remove(dir: &Path, name: &str) -> std::io::Result<()> {
        let (path, name) = (c(dir.as_os_str().as_bytes())?, c(name)?);
        // SAFETY: two NUL-terminated strings alive for the call.
        done(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) })
    }

    /// A system call's result: 0 is done, else its errno.
    fn done(rc: libc::c_int) -> std::io::Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The value of `name`, if it is there.
    pub(super) fn get(dir: &Path, name: &str) -> Option<Vec<u8>> {
        let (path, name) = (c(dir.as_os_str().as_bytes()).ok()?, c(name).ok()?);
        let mut buf = vec![0u8; 256];
        // SAFETY: two NUL-terminated strings and a writable buffer of `buf.len()`
        // bytes, all alive for the call.
        let n = unsafe {
            libc::getxattr(
                path.as_ptr(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        buf.truncate(usize::try_from(n).ok()?);
        Some(buf)
    }

    /// The names of its attributes (none where there are none, or none can be read).
    pub(super) fn names(dir: &Path) -> Vec<String> {
        let Ok(path) = c(dir.as_os_str().as_bytes()) else {
            return Vec::new();
        };
        // SAFETY: a NUL-terminated string; a null buffer of size 0 asks for the size.
        let size = unsafe { libc::listxattr(path.as_ptr(), std::ptr::null_mut(), 0) };
        let Ok(size) = usize::try_from(size) else {
            return Vec::new();
        };
        if size == 0 {
            return Vec::new();
        }
        // Room for some added between the two calls.
        let mut buf = vec![0u8; size + 1024];
        // SAFETY: a NUL-terminated string and a writable buffer of `buf.len()` bytes.
        let n = unsafe { libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(n) = usize::try_from(n) else {
            return Vec::new();
        };
        buf[..n]
            .split(|b| *b == 0)
            .filter(|n| !n.is_empty())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A directory `name` of its own, and a `sleep` leading a process group of its own.
    fn sleeper(name: &str) -> (std::path::PathBuf, std::process::Child) {
        let dir = std::env::temp_dir().join(format!("sluice-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        (dir, child)
    }

    #[test]
    fn a_remembered_group_is_killed_and_a_recycled_id_is_not() {
        let (dir, mut child) = sleeper("leftovers");
        let pgid = child.id() as i32;
        remember(&dir, "7.batch", pgid);
        // Kept as the directory's attribute (no file), or as a file where its file
        // system takes no attributes: one of the two.
        let attribute = attr::get(&dir, "user.sluice.7.batch.pgid");
        let file = dir.join("7.batch.pgid").exists();
        assert!(attribute.is_some() != file, "{attribute:?} {file}");
        if let Some(value) = attribute {
            assert!(String::from_utf8(value)
                .unwrap()
                .starts_with(&format!("{pgid} ")));
        }
        // A file naming a live process with another start time is not acted on.
        std::fs::write(
            dir.join("8.batch.pgid"),
            format!("{} 1\n", std::process::id()),
        )
        .unwrap();
        assert_eq!(reap(&dir), 1);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert!(attr::names(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_group_that_ended_is_forgotten_and_never_killed() {
        let (dir, mut child) = sleeper("forget");
        let pgid = child.id() as i32;
        remember(&dir, "9.task-1", pgid);
        forget(&dir, "9.task-1");
        assert!(attr::names(&dir).is_empty());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert_eq!(reap(&dir), 0);
        assert_eq!(child.try_wait().unwrap(), None, "still running");
        child.kill().unwrap();
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
