//! `srun --pty`: an interactive shell on the allocated node, driven as a user at a
//! terminal drives it. The test holds a pseudo-terminal's master side (the user's
//! keyboard and screen); srun runs on its slave side as its controlling terminal.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::Cluster;
use crate::SMALL;

/// A command running on a terminal of its own, as if typed at it.
struct Terminal {
    master: std::fs::File,
    /// The slave side, kept to read the terminal's settings after the command.
    slave: OwnedFd,
    /// Everything the command wrote, as read from the master side.
    screen: Arc<Mutex<Vec<u8>>>,
    /// How much of `screen` earlier expectations consumed.
    seen: usize,
    child: Child,
}

impl Terminal {
    /// Starts `cmd args` of cluster `c` on a new 24x80 terminal, its controlling
    /// terminal, in a session of its own.
    fn start(c: &Cluster, cmd: &str, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Self::start_as(c, None, cmd, args, env)
    }

    /// [`Terminal::start`] as user `uid` (group of the same number) when given.
    fn start_as(
        c: &Cluster,
        uid: Option<u32>,
        cmd: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Terminal {
        let ws = nix::pty::Winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pair = nix::pty::openpty(Some(&ws), None).unwrap();
        let bin = c.dir.join("state/bin");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(bin.join(cmd));
        command
            .arg0(cmd)
            .args(args)
            .current_dir(c.work())
            .env("PATH", path)
            .env("SLUICE_STATE_DIR", c.dir.join("state"))
            .env("TERM", "xterm")
            .env_remove("SLURM_CONF")
            .env_remove("SLURM_JOB_ID")
            .stdin(Stdio::from(pair.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pair.slave.try_clone().unwrap()))
            .stderr(Stdio::from(pair.slave.try_clone().unwrap()));
        for (k, v) in env {
            command.env(k, v);
        }
        if let Some(uid) = uid {
            command.uid(uid).gid(uid);
        }
        // SAFETY: setsid and one ioctl between fork and exec.
        unsafe {
            command.pre_exec(|| {
                nix::unistd::setsid()?;
                if libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let master = std::fs::File::from(pair.master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), screen.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            master,
            slave: pair.slave,
            screen,
            seen: 0,
            child,
        }
    }

    /// Types `keys`.
    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits until the screen, after what earlier expectations consumed, shows
    /// `needle`; returns what came before it (and consumes both).
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = {
                let screen = self.screen.lock().unwrap();
                String::from_utf8_lossy(&screen[self.seen..]).into_owned()
            };
            if let Some(at) = text.find(needle) {
                self.seen += text[..at + needle.len()].len();
                return text[..at].to_string();
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {needle:?}; it shows:\n{text:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The terminal (as seen by the user) takes a new size: the kernel tells its
    /// foreground process (srun) with SIGWINCH.
    fn resize(&self, rows: u16, cols: u16) {
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one winsize from a pointer to a live value.
        assert_eq!(
            unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &ws) },
            0
        );
    }

    /// The terminal's local modes (echo, canonical input, signals).
    fn local_modes(&self) -> libc::tcflag_t {
        // SAFETY: tcgetattr fills the termios it is given.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.slave.as_raw_fd(), &mut t), 0);
            t.c_lflag
        }
    }

    /// Waits for the command to end: its exit status.
    fn wait(&mut self) -> Option<i32> {
        self.child.wait().unwrap().code()
    }
}

/// The interactive shell every test types into: no start-up files, a prompt of its own.
const SHELL: &[&str] = &["--pty", "bash", "--norc", "--noprofile", "-i"];
const PROMPT: &str = "pty-prompt> ";

/// Types `line` (and Enter) and waits for the next prompt; what the shell printed
/// in between, without the echoed line.
fn command(t: &mut Terminal, line: &str) -> String {
    t.type_keys(&format!("{line}\r"));
    t.expect(&format!("{line}\r\n"));
    t.expect(PROMPT)
}

/// Drives one shell under `srun --pty` on the terminal `t` (its first prompt not yet
/// seen) through a user's session: what `tty` says, a resize, Ctrl-C and Ctrl-Z to
/// the remote foreground process, and `exit 3`.
fn interactive_session(t: &mut Terminal, node: &str) {
    t.expect(PROMPT);
    let tty = command(t, "tty; echo node=$SLURMD_NODENAME");
    assert!(tty.starts_with("/dev/pts/"), "{tty:?}");
    assert!(tty.ends_with(&format!("\r\nnode={node}\r\n")), "{tty:?}");
    assert_eq!(command(t, "stty size"), "24 80\r\n");
    // A resize reaches the shell's terminal (asynchronously: asked until it shows).
    t.resize(50, 132);
    let mut size = String::new();
    for _ in 0..100 {
        size = command(t, "stty size");
        if size == "50 132\r\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(size, "50 132\r\n");
    // Ctrl-C interrupts the remote foreground process, not srun: the shell is back.
    t.type_keys("sleep 300\r");
    t.expect("sleep 300\r\n");
    in_foreground("sleep\x00300\x00");
    t.type_keys("\x03");
    t.expect(PROMPT);
    assert_eq!(command(t, "echo status=$?"), "status=130\r\n");
    // Ctrl-Z stops it: the shell's job control has it as a stopped job.
    t.type_keys("sleep 301\r");
    t.expect("sleep 301\r\n");
    in_foreground("sleep\x00301\x00");
    t.type_keys("\x1a");
    let stopped = t.expect(PROMPT);
    assert!(stopped.contains("Stopped"), "{stopped:?}");
    assert!(command(t, "jobs").contains("Stopped                 sleep 301"));
    // (Waited for: a stopped job the shell has not yet seen die would make it refuse
    // to exit, "There are stopped jobs.")
    command(t, "kill -9 %1; wait %1");
    t.type_keys("exit 3\r");
}

/// Waits until a process whose command line is `cmdline` runs in its terminal's
/// foreground: a key typed before then reaches the shell, which ignores it, not the
/// command (as a user who types Ctrl-C the very moment they press Enter would see).
fn in_foreground(cmdline: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let dir = e.path();
            std::fs::read(dir.join("cmdline")).is_ok_and(|c| c == cmdline.as_bytes())
                && std::fs::read_to_string(dir.join("stat")).is_ok_and(|stat| {
                    // pid (comm) state ppid pgrp session tty_nr tpgid ...
                    let f: Vec<&str> = stat
                        .rsplit_once(')')
                        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
                    f.len() > 5 && f[2] == f[5] && f[0] != "Z"
                })
        });
        if found {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{cmdline:?} never ran in the foreground"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The shell's environment: its prompt, and readline without bracketed paste (whose
/// escapes would frame every command's output).
fn shell_env(c: &Cluster) -> Vec<(&'static str, String)> {
    let inputrc = c.work().join("inputrc");
    std::fs::write(&inputrc, "set enable-bracketed-paste off\n").unwrap();
    vec![
        ("PS1", PROMPT.to_string()),
        ("INPUTRC", inputrc.display().to_string()),
    ]
}

#[test]
fn srun_pty_gives_an_interactive_shell_with_a_terminal_on_the_node() {
    let c = Cluster::start("pty", SMALL);
    let env = shell_env(&c);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut t = Terminal::start(&c, "srun", SHELL, &env);
    let cooked = libc::ICANON | libc::ECHO | libc::ISIG;
    interactive_session(&mut t, "n1");
    assert_eq!(t.wait(), Some(3), "the shell's exit status is srun's");
    // srun said how its task ended, and gave the terminal back as it found it.
    t.expect("srun: error: n1: task 0: Exited with exit code 3");
    assert_eq!(t.local_modes() & cooked, cooked);

    // The same from inside an interactive allocation: salloc, then srun --pty there.
    let mut t = Terminal::start(
        &c,
        "salloc",
        &["-N", "1", "-w", "n2", "srun"]
            .iter()
            .chain(SHELL)
            .copied()
            .collect::<Vec<_>>(),
        &env,
    );
    interactive_session(&mut t, "n2");
    t.expect("srun: error: n2: task 0: Exited with exit code 3");
    assert_eq!(t.wait(), Some(3), "salloc's status is its command's");
    assert_eq!(t.local_modes() & cooked, cooked);

    // The shell runs as the job's owner, who owns its terminal too.
    if nix::unistd::geteuid().is_root() {
        let mut t = Terminal::start_as(&c, Some(NOBODY), "srun", SHELL, &env);
        t.expect(PROMPT);
        assert_eq!(
            command(&mut t, "id -u; stat -c %u $(tty)"),
            format!("{NOBODY}\r\n{NOBODY}\r\n")
        );
        t.type_keys("exit\r");
        assert_eq!(t.wait(), Some(0));
    }
}

/// A user other than the test's own (root's), when run as root.
const NOBODY: u32 = 65534;

#[test]
fn srun_pty_without_a_terminal_says_so_and_runs_the_command() {
    let c = Cluster::start("pty-none", SMALL);
    // Standard input is /dev/null (`Cluster::run`), as in a script or a pipeline.
    let o = c.run("srun", &["--pty", "bash", "-c", "tty; exit 3"]);
    assert_eq!(o.stdout, "not a tty\n");
    assert_eq!(
        o.stderr,
        "srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device\n\
         srun: error: Not using a pseudo-terminal, disregarding --pty option\n\
         srun: error: n1: task 0: Exited with exit code 3\n"
    );
    assert_eq!(o.code, 3);
    // Its input and output are the terminal's: files for them are refused, as Slurm does.
    let o = c.run("srun", &["--pty", "-o", "out", "true"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "srun: error: --error/--input/--output are incompatible with --pty\n",
            1
        )
    );
}
