//! The binaries installed beside `sluice` that do one part of its work in a smaller
//! process: `sluice-stepd` (a job's supervisor, which an agent starts for every job)
//! and `sluice-commands` (Slurm's commands, which `sluice up` links their names to).
//!
//! One is used only where it is of the same build (it answers `--build-id` with the
//! build `sluice` was made with) and trusted as `sluice` is: a file owned by `sluice`'s
//! owner or root that nobody else may write. `sluice` runs as root; it runs only what
//! whoever installed it installed, never a stale binary left beside a newer one.

use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `name` beside binary `exe` (its real path, links resolved), opened, where it is
/// trusted and answers `--build-id` with `build`; its descriptor is 3 or above, so
/// that it is never a standard one of a process started from it. `Ok(None)`: none is
/// installed; `Err`: one is, but is not used, and why.
pub fn beside(exe: &Path, name: &str, build: &str) -> Result<Option<std::fs::File>, String> {
    let path = exe.with_file_name(name);
    let Ok(file) = std::fs::File::open(&path) else {
        return Ok(None);
    };
    let shown = path.display();
    let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
    let owner = std::fs::metadata(exe).map_err(|e| format!("{}: {e}", exe.display()))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.uid() != owner.uid() && meta.uid() != 0 {
        return Err(format!(
            "{shown} is owned by uid {}, not by root or {}'s owner (uid {})",
            meta.uid(),
            exe.display(),
            owner.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{shown} may be written by others than its owner (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    let file = above_standard(file).map_err(|e| format!("{shown}: {e}"))?;
    // Asked by its path: the file is trusted as `exe` is, so what replaces it there is
    // its installer's; the descriptor keeps the one found from then on.
    answers_build(&path.to_string_lossy(), build).map_err(|why| format!("{shown} {why}"))?;
    Ok(Some(file))
}

/// `file` with a descriptor of 3 or above (a copy, where it was a standard one: a
/// daemon started with its standard streams closed).
fn above_standard(file: std::fs::File) -> std::io::Result<std::fs::File> {
    if file.as_raw_fd() > 2 {
        return Ok(file);
    }
    // SAFETY: F_DUPFD_CLOEXEC on an open descriptor.
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made, owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Whether `program --build-id` answers `build` within five seconds; why not, if not.
pub fn answers_build(program: &str, build: &str) -> Result<(), String> {
    use std::io::Read;
    let mut child = Command::new(program)
        .arg("--build-id")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot be run: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("did not answer --build-id within 5 s".into());
            }
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    match out.trim() {
        found if status.success() && found == build => Ok(()),
        found if status.success() => Err(format!("is of build {found}, not {build}")),
        _ => Err(format!("did not answer --build-id ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Writes an executable script `name` in `dir` and waits until it can be run (a
    /// fork by another test's thread while it was open for writing makes it busy to
    /// execute, ETXTBSY, for a moment).
    fn script(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        for _ in 0..100 {
            match Command::new(&path).arg("--probe").output() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => return,
            }
        }
    }

    #[test]
    fn a_companion_is_used_only_where_trusted_and_of_the_same_build() {
        let dir = std::env::temp_dir().join(format!("sluice-companion-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("sluice");
        std::fs::write(&exe, b"\x7fELF").unwrap();
        assert!(beside(&exe, "sluice-stepd", "0.1.0-a").unwrap().is_none());

        // A stand-in answering as build "0.1.0-a" would.
        let answer = "#!/bin/sh\n[ \"$1\" = --build-id ] && echo 0.1.0-a\n";
        script(&dir, "sluice-stepd", answer);
        let found = beside(&exe, "sluice-stepd", "0.1.0-a")
            .unwrap()
            .expect("used");
        assert!(found.as_raw_fd() > 2);
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", found.as_raw_fd())).unwrap();
        assert_eq!(opened, dir.join("sluice-stepd"));
        let why = beside(&exe, "sluice-stepd", "0.1.0-b").unwrap_err();
        assert!(why.ends_with("is of build 0.1.0-a, not 0.1.0-b"), "{why}");

        // One anybody may write is not run.
        let stepd = dir.join("sluice-stepd");
        std::fs::set_permissions(&stepd, std::fs::Permissions::from_mode(0o757)).unwrap();
        let why = beside(&exe, "sluice-stepd", "0.1.0-a").unwrap_err();
        assert!(
            why.contains("may be written by others than its owner (mode 757)"),
            "{why}"
        );
        // Nor one of another owner than `sluice`'s (or root): checked where the test
        // may give it one.
        std::fs::set_permissions(&stepd, std::fs::Permissions::from_mode(0o755)).unwrap();
        if nix::unistd::geteuid().is_root() {
            let nobody = Some(nix::unistd::Uid::from_raw(65534));
            nix::unistd::chown(&stepd, nobody, None).unwrap();
            let why = beside(&exe, "sluice-stepd", "0.1.0-a").unwrap_err();
            assert!(why.contains("is owned by uid 65534, not by root"), "{why}");
            nix::unistd::chown(&stepd, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
            assert!(beside(&exe, "sluice-stepd", "0.1.0-a").unwrap().is_some());
        } else {
            eprintln!("skipped: the owner check needs root to give the file another owner");
        }
        // Nor one that cannot be run, or does not answer.
        std::fs::set_permissions(&stepd, std::fs::Permissions::from_mode(0o644)).unwrap();
        let why = beside(&exe, "sluice-stepd", "0.1.0-a").unwrap_err();
        assert!(why.contains("cannot be run"), "{why}");
        script(&dir, "sluice-stepd", "#!/bin/sh\nexit 3\n");
        let why = beside(&exe, "sluice-stepd", "0.1.0-a").unwrap_err();
        assert!(why.contains("did not answer --build-id"), "{why}");
        std::fs::create_dir(dir.join("sluice-commands")).unwrap();
        let why = beside(&exe, "sluice-commands", "0.1.0-a").unwrap_err();
        assert!(why.ends_with("is not a file"), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
