//! Process groups a job's supervisor started, remembered on disk in its directory, so
//! that a supervisor that died (SIGKILL, a crash) does not leave its job running unseen:
//! nobody could report that job's end, so the agent that finds the dead supervisor ends
//! them, and the controller requeues or fails the job (`NODE_FAIL`), as Slurm does for
//! jobs on a failed node. (A supervisor that lives is never reaped: its job is ended by
//! the controller's word only; see `supervisors.rs`.) An agent also reaps groups that
//! agents from before job supervisors remembered beside the job scripts.
//!
//! Each group is a file `<key>.pgid` holding the group id and the leader's start time
//! (field 22 of `/proc/PID/stat`, in clock ticks since boot), so that a recycled process
//! id is never mistaken for a job.

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

/// Remembers process group `pgid` under `key` in `dir`.
pub(crate) fn remember(dir: &Path, key: &str, pgid: i32) {
    if let Some(t) = start_time(pgid) {
        let _ = std::fs::write(dir.join(format!("{key}.pgid")), format!("{pgid} {t}\n"));
    }
}

/// Forgets the group remembered under `key`: it has ended.
pub(crate) fn forget(dir: &Path, key: &str) {
    let _ = std::fs::remove_file(dir.join(format!("{key}.pgid")));
}

/// Kills (SIGKILL) every remembered group whose leader is still the process that was
/// started, and forgets them all. Returns how many were killed.
pub(crate) fn reap(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut killed = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("pgid") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut it = text.split_whitespace().map(|v| v.parse::<i64>().ok());
        if let (Some(Some(pgid)), Some(Some(t))) = (it.next(), it.next()) {
            let pgid = pgid as i32;
            if pgid > 1 && start_time(pgid) == Some(t as u64) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                killed += 1;
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_remembered_group_is_killed_and_a_recycled_id_is_not() {
        let dir = std::env::temp_dir().join(format!("sluice-leftovers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        remember(&dir, "7.batch", pgid);
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
