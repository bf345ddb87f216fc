//! Paths a job names, used with its owner's rights.
//!
//! The supervisor runs as root, and a job names paths of its own: its output and error
//! files (and their directories, which Sluice creates), its input file, its working
//! directory. Opened as root, `-o /etc/passwd` would truncate that file and hand it to
//! the user, and `-i /etc/shadow` would feed it to the script. slurmstepd drops its
//! privileges to the user's before it opens them; so does the supervisor, without
//! touching the identity of its other threads, which keep working as root:
//!
//! - a file is opened, created or searched by [`as_user`], on a thread of its own that
//!   takes the owner's groups, then their group and user as its *effective* ids
//!   (`setgroups`, `setresgid`, `setresuid` with the real and saved ids kept: made as
//!   Linux system calls, they change this thread alone, where the C library's wrappers
//!   change every thread's). An effective uid other than 0 leaves the thread no
//!   capability, so the kernel checks every path as it would for the user — the file
//!   system through the fs ids that follow the effective ones, and what checks the
//!   effective uid itself (`/proc/sys`) too. The thread ends with the work, and its
//!   identity with it;
//! - the working directory is entered by the job's own process after it has become the
//!   user ([`Chdir`]), between fork and exec, and a directory it cannot enter sends it
//!   to `/tmp` with slurmstepd's words in its error file.

// The system calls below take 32-bit ids on 64-bit Linux; on 32-bit targets the same
// names are the old 16-bit calls.
#[cfg(target_pointer_width = "32")]
compile_error!("fs_identity: per-thread identity calls are written for 64-bit Linux");

use std::ffi::CString;
use std::io;

use nix::unistd::Gid;

/// Runs `f` with user `uid`'s rights (primary group `gid`, supplementary groups
/// `groups`), on a thread that ends with it.
///
/// Errors: no thread can be made, the identity cannot be taken, or `f`'s own.
pub(crate) fn as_user<T: Send>(
    uid: u32,
    gid: u32,
    groups: &[Gid],
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    let groups: Vec<libc::gid_t> = groups.iter().map(|g| g.as_raw()).collect();
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("as-owner".into())
            .spawn_scoped(s, || {
                take(uid, gid, &groups)?;
                f()
            })?
            .join()
            .unwrap_or_else(|_| {
                Err(io::Error::other(
                    "a file of the job's owner: the work failed",
                ))
            })
    })
}

/// Makes this thread's effective (and so file-system) identity user `uid`, group `gid`,
/// groups `groups`; its real and saved ids stay the supervisor's.
fn take(uid: u32, gid: u32, groups: &[libc::gid_t]) -> io::Result<()> {
    const KEEP: libc::c_long = -1;
    // SAFETY: system calls on the calling thread's own credentials, the list valid for
    // its length, the answers written to locals. As system calls (not the C library's
    // wrappers, which change every thread of the process) they change this thread
    // alone. Groups and group first: they need the capability the uid's change drops.
    unsafe {
        if libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()) != 0
            || libc::syscall(libc::SYS_setresgid, KEEP, libc::c_long::from(gid), KEEP) != 0
            || libc::syscall(libc::SYS_setresuid, KEEP, libc::c_long::from(uid), KEEP) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let (mut r, mut e, mut s) = (0 as libc::uid_t, 0 as libc::uid_t, 0 as libc::uid_t);
        let (mut gr, mut ge, mut gs) = (0 as libc::gid_t, 0 as libc::gid_t, 0 as libc::gid_t);
        libc::syscall(libc::SYS_getresuid, &mut r, &mut e, &mut s);
        libc::syscall(libc::SYS_getresgid, &mut gr, &mut ge, &mut gs);
        if e != uid || ge != gid {
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
    /// slurmstepd's notice up to the reason (`slurmstepd-n1: error: couldn't chdir to
    /// `DIR': `), written when the process goes to `/tmp` instead.
    notice: Vec<u8>,
    /// How many times it is written.
    times: usize,
}

/// The end of [`Chdir`]'s notice, after the reason.
const GOING_TO_TMP: &[u8] = b": going to /tmp instead\n";

/// The reason for each errno (strerror's words, `Unknown error N` beyond), made once.
fn reasons() -> &'static [Vec<u8>] {
    static REASONS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    REASONS.get_or_init(|| {
        (0..134)
            .map(|e| sluice_proto::oserror::describe(&io::Error::from_raw_os_error(e)).into_bytes())
            .collect()
    })
}

impl Chdir {
    /// Entering `dir`; `who` names the supervisor in the notice (`slurmstepd-n1`),
    /// written `times` times: slurmstepd writes it once for the step (the batch script's,
    /// or an srun step's on a node) and once for each task, so that a batch script and
    /// the first task of a step on a node write it twice, the step's other tasks once.
    ///
    /// A directory longer than a path can be (`PATH_MAX`, which fails anyway) is shown
    /// cut there: the notice goes to a pipe the supervisor reads only once the process
    /// has started, so that it must fit in the pipe's buffer.
    pub(crate) fn new(dir: &str, who: &str, times: usize) -> Chdir {
        reasons();
        let mut shown = dir.len().min(libc::PATH_MAX as usize);
        while !dir.is_char_boundary(shown) {
            shown -= 1;
        }
        let cut = if shown < dir.len() { "..." } else { "" };
        Chdir {
            dir: CString::new(dir).unwrap_or_else(|_| c"/nonexistent/\u{1}".to_owned()),
            notice: format!("{who}: error: couldn't chdir to `{}{cut}': ", &dir[..shown])
                .into_bytes(),
            times,
        }
    }

    /// Enters the directory, or `/tmp` with the notice on standard error (see
    /// [`Chdir::new`]). Async-signal-safe: for the child between fork and exec.
    pub(crate) fn enter(&self) -> io::Result<()> {
        // SAFETY: chdir and writev with valid, NUL-terminated or sized buffers made
        // before the fork (the reasons by `Chdir::new`).
        unsafe {
            if libc::chdir(self.dir.as_ptr()) == 0 {
                return Ok(());
            }
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let table = reasons();
            let reason: &[u8] = usize::try_from(errno)
                .ok()
                .and_then(|e| table.get(e))
                .map_or(&b"Unknown error"[..], |r| r.as_slice());
            let parts = [
                libc::iovec {
                    iov_base: self.notice.as_ptr() as *mut _,
                    iov_len: self.notice.len(),
                },
                libc::iovec {
                    iov_base: reason.as_ptr() as *mut _,
                    iov_len: reason.len(),
                },
                libc::iovec {
                    iov_base: GOING_TO_TMP.as_ptr() as *mut _,
                    iov_len: GOING_TO_TMP.len(),
                },
            ];
            for _ in 0..self.times {
                libc::writev(2, parts.as_ptr(), 3);
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

    #[test]
    fn a_notice_for_a_directory_longer_than_a_path_is_cut_to_fit_a_pipe() {
        let long = format!("/{}", "d/".repeat(60_000));
        let c = Chdir::new(&long, "slurmstepd-n1", 2);
        let notice = String::from_utf8(c.notice.clone()).unwrap();
        assert!(notice.len() < 4_200, "{}", notice.len());
        assert!(
            notice.ends_with("...': "),
            "{}",
            &notice[notice.len() - 20..]
        );
        let short = Chdir::new("/nonexistent/x", "slurmstepd-n1", 2);
        assert_eq!(
            short.notice,
            b"slurmstepd-n1: error: couldn't chdir to `/nonexistent/x': "
        );
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    /// nobody's uid, gid and groups where this machine has that user, and we are root.
    fn nobody() -> Option<(u32, u32, Vec<Gid>)> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (to take another user's identity)");
            return None;
        }
        let u = nix::unistd::User::from_name("nobody").ok().flatten()?;
        let groups = nix::unistd::getgrouplist(c"nobody", u.gid).ok()?;
        Some((u.uid.as_raw(), u.gid.as_raw(), groups))
    }

    #[test]
    fn a_users_file_is_opened_with_their_rights_not_roots() {
        let Some((uid, gid, groups)) = nobody() else {
            return;
        };
        // Under /tmp (searchable by everyone), whatever TMPDIR says.
        let dir = Path::new("/tmp").join(format!("sluice-fs-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // root's file in root's closed directory: nobody may not touch it.
        let closed = dir.join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let secret = closed.join("secret");
        std::fs::write(&secret, "root's").unwrap();
        let denied = as_user(uid, gid, &groups, || std::fs::File::open(&secret));
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        let denied = as_user(uid, gid, &groups, || {
            std::fs::File::create(closed.join("new"))
        });
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root's");
        assert!(!closed.join("new").exists());
        // A file they may create is theirs, from the start.
        let open = dir.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        as_user(uid, gid, &groups, || {
            std::fs::write(open.join("out"), "mine")
        })
        .unwrap();
        let meta = std::fs::metadata(open.join("out")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
        // What checks the effective uid rather than file modes: a kernel setting root
        // alone may write (a user's notice there would rename the host).
        let setting = || {
            std::fs::OpenOptions::new()
                .append(true)
                .open("/proc/sys/kernel/hostname")
        };
        let root_may = setting().is_ok();
        let denied = as_user(uid, gid, &groups, setting).unwrap_err();
        if root_may {
            assert_eq!(denied.kind(), io::ErrorKind::PermissionDenied);
        } else {
            eprintln!("/proc/sys is read-only here: checked only that the user is refused");
        }
        // The process itself, and this thread, are still root's.
        assert!(nix::unistd::geteuid().is_root());
        std::fs::write(closed.join("still-root"), "yes").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_that_cannot_be_entered_sends_the_process_to_tmp_with_slurms_words() {
        let c = Chdir::new("/nonexistent/sluice", "slurmstepd-n1", 2);
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
        let c = Chdir::new("/", "slurmstepd-n1", 2);
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
