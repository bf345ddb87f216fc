//! `srun --pty`: the pseudo-terminal of a step's task 0, as slurmstepd makes it. The
//! supervisor keeps the master side: what srun types is written to it, what the task
//! writes is read from it and sent to srun as it comes (a shell's prompt ends no line),
//! and srun's window size is set on it. The slave side is the task's standard input,
//! output and error, and its controlling terminal, so the terminal's line discipline
//! does what a local one does: Ctrl-C and Ctrl-Z signal the task's foreground process
//! group, not srun.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};

use sluice_proto::types::{TaskEvent, WindowSize};
use tokio::sync::mpsc::Sender;

/// A new pseudo-terminal of `size`, its slave side given to `uid` (group `tty` where
/// there is one, else `gid`; mode 0620, as login programs leave it) so that the task
/// may open it again by name (`tty`, `ssh`, editors). Returns (master, slave).
pub(crate) fn open(size: WindowSize, uid: u32, gid: u32) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let ws = nix::pty::Winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair = nix::pty::openpty(Some(&ws), None).map_err(std::io::Error::from)?;
    let group = nix::unistd::Group::from_name("tty")
        .ok()
        .flatten()
        .map_or(gid, |g| g.gid.as_raw());
    let fd = pair.slave.as_raw_fd();
    // SAFETY: fcntl, fchown and fchmod on descriptors this function owns.
    unsafe {
        // Neither side may leak into the supervisor's other children (another task
        // holding the slave would keep the terminal from hanging up at the end).
        for f in [pair.master.as_raw_fd(), fd] {
            if libc::fcntl(f, libc::F_SETFD, libc::FD_CLOEXEC) == -1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // Only root may give a file away; an agent of another user leaves it its own.
        let _ = libc::fchown(fd, uid, group);
        let _ = libc::fchmod(fd, 0o620);
    }
    Ok((pair.master, pair.slave))
}

/// A new terminal for a task ([`open`]): its master side, and three ends of its slave
/// side for the task's standard input, output and error.
pub(crate) fn for_task(
    size: WindowSize,
    uid: u32,
    gid: u32,
) -> std::io::Result<(File, [std::process::Stdio; 3])> {
    let (master, slave) = open(size, uid, gid)?;
    let ends = [
        std::process::Stdio::from(slave.try_clone()?),
        std::process::Stdio::from(slave.try_clone()?),
        std::process::Stdio::from(slave),
    ];
    Ok((File::from(master), ends))
}

/// Sets the terminal of `fd` (a pseudo-terminal's master) to `size`; the kernel sends
/// SIGWINCH to its foreground process group. Anything else (a pipe) is left alone.
pub(crate) fn resize(fd: &impl AsRawFd, size: WindowSize) {
    let ws = libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from a pointer to a live value.
    unsafe {
        let _ = libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &ws);
    }
}

/// In the task's child, after `setsid`: its standard input (the slave side) becomes its
/// controlling terminal. Async-signal-safe: one ioctl.
pub(crate) fn make_controlling() -> std::io::Result<()> {
    // SAFETY: TIOCSCTTY takes an integer argument; fd 0 is the slave side here.
    if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Sends what task `task` writes to its terminal (`master`) to `tx` as it comes, as
/// standard output: a read's bytes at once, but never a character cut in two (its
/// first bytes wait for the rest). Ends when the terminal's last slave descriptor is
/// closed (Linux reads EIO then).
pub(crate) fn forward_output(
    task: u32,
    master: File,
    tx: Sender<TaskEvent>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut master = master;
        let mut chunk = vec![0u8; 16 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let n = match master.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            if n == 0 {
                break;
            }
            pending.extend_from_slice(&chunk[..n]);
            let whole = whole_characters(&pending);
            if whole == 0 {
                continue;
            }
            let data = String::from_utf8_lossy(&pending[..whole]).into_owned();
            pending.drain(..whole);
            // srun went away: keep draining so the task does not block.
            let _ = tx.blocking_send(TaskEvent::Output {
                task,
                stream: 1,
                data,
            });
        }
        if !pending.is_empty() {
            let data = String::from_utf8_lossy(&pending).into_owned();
            let _ = tx.blocking_send(TaskEvent::Output {
                task,
                stream: 1,
                data,
            });
        }
    })
}

/// How many of `bytes`' first bytes can be sent now: all but an incomplete UTF-8
/// character at the end (invalid bytes go as they are, replaced).
fn whole_characters(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_a_read_waits_for_its_rest() {
        let euro = "€".as_bytes();
        assert_eq!(whole_characters(b"ab"), 2);
        assert_eq!(whole_characters(&[b'a', euro[0], euro[1]]), 1);
        assert_eq!(whole_characters(euro), 3);
        // Not UTF-8 at all: sent (replaced) rather than held for ever.
        assert_eq!(whole_characters(&[b'a', 0xff, b'b']), 3);
    }

    #[test]
    fn a_terminal_takes_its_size_and_a_new_one() {
        let Ok((master, slave)) = open(WindowSize { rows: 24, cols: 80 }, 0, 0) else {
            return;
        };
        let size = |fd: &OwnedFd| {
            let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
            // SAFETY: TIOCGWINSZ writes one winsize to a pointer to a live value.
            unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
            (ws.ws_row, ws.ws_col)
        };
        assert_eq!(size(&slave), (24, 80));
        resize(
            &master,
            WindowSize {
                rows: 50,
                cols: 132,
            },
        );
        assert_eq!(size(&slave), (50, 132));
    }
}
