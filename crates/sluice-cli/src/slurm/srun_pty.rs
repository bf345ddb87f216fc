//! `srun --pty`, srun's side: its terminal in raw mode while the step runs (every key
//! goes to task 0's pseudo-terminal on its node, whose line discipline makes Ctrl-C,
//! Ctrl-Z and the rest signals there), its window size sent at the launch and on every
//! SIGWINCH, and the terminal restored at the end, however srun ends, as Slurm's srun
//! does (`atexit`).

use std::sync::Mutex;

use sluice_proto::types::{StdinChunk, WindowSize};
use sluice_proto::Client;

/// The terminal's settings before raw mode, put back at the end.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// The size of the terminal on srun's standard input; the error of `TIOCGWINSZ` when
/// it is not a terminal (Slurm's srun says it and disregards `--pty`).
pub fn window_size() -> std::io::Result<WindowSize> {
    // SAFETY: a zeroed winsize is a valid value for TIOCGWINSZ to overwrite.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize to a pointer to a live value.
    if unsafe { libc::ioctl(libc::STDIN_FILENO, libc::TIOCGWINSZ, &mut ws) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(WindowSize {
        rows: ws.ws_row,
        cols: ws.ws_col,
    })
}

/// Blocks SIGWINCH in this thread and those it starts later, so that
/// [`forward_window_changes`]'s thread alone takes it. Call before any thread starts.
pub fn block_window_changes() {
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGWINCH);
    let _ = set.thread_block();
}

/// Puts srun's terminal (standard input) in raw mode: the task's terminal does the
/// output processing (its line ends come as `\r\n` already); [`restore`] undoes it,
/// and so does srun's exit, whichever way it exits.
pub fn raw_mode() {
    // SAFETY: tcgetattr fills a termios it is given; cfmakeraw and tcsetattr read it.
    unsafe {
        let mut term: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut term) != 0 {
            return;
        }
        *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(term);
        libc::atexit(restore_at_exit);
        libc::cfmakeraw(&mut term);
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &term);
    }
}

/// Puts back the terminal's settings from before [`raw_mode`] (once).
pub fn restore() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(term) = saved {
        // SAFETY: tcsetattr reads the termios saved by raw_mode.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &term);
        }
    }
}

extern "C" fn restore_at_exit() {
    restore();
}

/// Sends each new size of srun's terminal to task 0's node (`agent`), for step `step`
/// of job `job`, in a thread of its own (SIGWINCH must be blocked:
/// [`block_window_changes`]).
pub fn forward_window_changes(agent: String, job: u64, step: u32) {
    std::thread::spawn(move || {
        let mut set = nix::sys::signal::SigSet::empty();
        set.add(nix::sys::signal::Signal::SIGWINCH);
        let client = Client::endpoint(&agent, &super::common::agent_signer());
        while set.wait().is_ok() {
            let Ok(size) = window_size() else { continue };
            let chunk = StdinChunk {
                job_id: job,
                step,
                data: Vec::new(),
                eof: false,
                window: Some(size),
            };
            // Tried again while a chunk of input is being written.
            let _ = super::srun::send_chunk(&client, &chunk);
        }
    });
}
