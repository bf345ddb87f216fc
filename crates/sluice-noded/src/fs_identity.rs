//! Paths a job names, used with its owner's rights.
//!
//! The supervisor runs as root, and a job names paths of its own: its output and error
//! files (and their directories, which Sluice creates), its input file, its working
//! directory. Opened as root, `-o /etc/passwd` would truncate that file and hand it to
//! the user, and `-i /etc/shadow` would feed it to the script. slurmstepd drops its
//! privileges to the user's before it opens them; so does the supervisor, without
//! touching the identity of the process, whose other threads keep working as root:
//!
//! - a file is opened, created or searched by [`as_user`], on a thread of its own that
//!   takes the owner's groups, group and user **for file access only** (`setgroups`,
//!   `setfsgid`, `setfsuid`: per thread when made as Linux system calls, where the C
//!   library would change every thread's). Taking a user's file-system uid drops the
//!   capabilities that would override file permissions, so the kernel checks the
//!   path as it would for the user. The thread ends with the work, and its identity
//!   with it;
//! - the working directory is entered by the job's own process after it has become the
//!   user ([`Chdir`]), between fork and exec, and a directory it cannot enter sends it
//!   to `/tmp` with slurmstepd's words in its error file.

use std::ffi::{CStr, CString};
use std::io;

use nix::unistd::Gid;

/// Runs `f` with user `uid`'s rights on files (primary group `gid`, the groups of `user`
/// in the name service), on a thread that ends with it.
///
/// Errors: the groups cannot be read, the identity cannot be taken, or `f`'s own.
pub(crate) fn as_user<T: Send>(
    uid: u32,
    gid: u32,
    user: &CStr,
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    let groups: Vec<libc::gid_t> = nix::unistd::getgrouplist(user, Gid::from_raw(gid))
        .map_err(io::Error::from)?
        .iter()
        .map(|g| g.as_raw())
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            take(uid, gid, &groups)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| {
            Err(io::Error::other(
                "a file of the job's owner: the work failed",
            ))
        })
    })
}

/// Makes this thread's file-system identity user `uid`, group `gid`, groups `groups`.
fn take(uid: u32, gid: u32, groups: &[libc::gid_t]) -> io::Result<()> {
    // SAFETY: system calls on the calling thread's own credentials, the list valid for
    // its length. As system calls (not the C library's wrappers, which change every
    // thread of the process) they change this thread alone.
    unsafe {
        if libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::syscall(libc::SYS_setfsgid, gid);
        libc::syscall(libc::SYS_setfsuid, uid);
        // Both answer the previous value and never fail: an invalid id (-1) changes
        // nothing and tells the current one.
        let now_uid = libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32;
        let now_gid = libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32;
        if now_uid != uid || now_gid != gid {
            return Err(io::Error::other(format!(
                "cannot take the identity of uid {uid} for its files"
            )));
        }
    }
    Ok(())
}

/// The working directory a process enters between fork and exec, after it has become
/// its user, made beforehand (nothing is allocated in the child).
pub(crate) struct Chdir {
    dir: CString,
    /// slurmstepd's error for each reason a directory cannot be entered (the last for
    /// any other), written when the process goes to `/tmp` instead.
    notices: Vec<(i32, Vec<u8>)>,
}

impl Chdir {
    /// Entering `dir`; `who` names the supervisor in the notice (`slurmstepd-n1`).
    pub(crate) fn new(dir: &str, who: &str) -> Chdir {
        let notice = |why: &str| {
            format!("{who}: error: couldn't chdir to `{dir}': {why}: going to /tmp instead\n")
                .into_bytes()
        };
        let notices = [
            libc::ENOENT,
            libc::EACCES,
            libc::ENOTDIR,
            libc::ELOOP,
            libc::ENAMETOOLONG,
        ]
        .into_iter()
        .map(|e| {
            (
                e,
                notice(&sluice_proto::oserror::describe(
                    &io::Error::from_raw_os_error(e),
                )),
            )
        })
        .chain([(0, notice("Invalid argument"))])
        .collect();
        Chdir {
            dir: CString::new(dir).unwrap_or_else(|_| c"/nonexistent/\u{1}".to_owned()),
            notices,
        }
    }

    /// Enters the directory, or `/tmp` with the notice on standard error (twice, as
    /// slurmstepd writes it: once for the job and once for its task). Async-signal-safe:
    /// for the child between fork and exec.
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: chdir and write with valid, NUL-terminated or sized buffers made
        // before the fork.
        unsafe {
            if libc::chdir(self.dir.as_ptr()) == 0 {
                return Ok(());
            }
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let notice = self
                .notices
                .iter()
                .find(|(e, _)| *e == errno)
                .or(self.notices.last())
                .map(|(_, n)| n);
            if let Some(n) = notice {
                for _ in 0..2 {
                    libc::write(2, n.as_ptr().cast(), n.len());
                }
            }
            if libc::chdir(c"/tmp".as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// nobody's uid and gid where this machine has that user, and we are root.
    fn nobody() -> Option<(u32, u32, CString)> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (to take another user's identity)");
            return None;
        }
        let u = nix::unistd::User::from_name("nobody").ok().flatten()?;
        Some((
            u.uid.as_raw(),
            u.gid.as_raw(),
            CString::new("nobody").unwrap(),
        ))
    }

    #[test]
    fn a_users_file_is_opened_with_their_rights_not_roots() {
        let Some((uid, gid, name)) = nobody() else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("sluice-fs-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // root's file in root's closed directory: nobody may not touch it.
        let closed = dir.join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let secret = closed.join("secret");
        std::fs::write(&secret, "root's").unwrap();
        let denied = as_user(uid, gid, &name, || std::fs::File::open(&secret));
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        let denied = as_user(uid, gid, &name, || {
            std::fs::File::create(closed.join("new"))
        });
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's");
        assert!(!closed.join("new").exists());
        // A file they may create is theirs, from the start.
        let open = dir.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        as_user(uid, gid, &name, || std::fs::write(open.join("out"), "mine")).unwrap();
        let meta = std::fs::metadata(open.join("out")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
        // The process itself, and this thread, are still root's.
        assert!(nix::unistd::geteuid().is_root());
        std::fs::write(closed.join("still-root"), "yes").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_that_cannot_be_entered_sends_the_process_to_tmp_with_slurms_words() {
        let c = Chdir::new("/nonexistent/sluice", "slurmstepd-n1");
        let out = unsafe {
            use std::os::unix::process::CommandExt;
            let c = std::sync::Arc::new(c);
            std::process::Command::new("/bin/pwd")
                .pre_exec(move || c.enter())
                .output()
                .unwrap()
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/tmp\n");
        let line = "slurmstepd-n1: error: couldn't chdir to `/nonexistent/sluice': No such file or directory: going to /tmp instead\n";
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("{line}{line}")
        );
        let c = Chdir::new("/", "slurmstepd-n1");
        let out = unsafe {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("/bin/pwd")
                .pre_exec(move || c.enter())
                .output()
                .unwrap()
        };
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/\n");
        assert!(out.stderr.is_empty());
    }
}
