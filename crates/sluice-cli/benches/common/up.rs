//! A live cluster as users run it: `sluice up` (controller and agents in one process) in
//! a directory of its own, measured from outside through its commands and its socket.
//! The start-up shared by the benches that time commands, submissions and memory of a
//! small cluster (`cluster`, `listing`, `queue_memory`, `submit`, `sacct`); a large
//! cluster on loopback is `loopback.rs`'s.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use sluice_proto::Client;

/// A `sluice up` in directory `dir` (its `slurm.conf`, its state under `state`, the
/// commands' working directory `work`), stopped (SIGINT, as Ctrl-C) and its directory
/// removed on drop.
pub struct Up {
    /// Its directory.
    pub dir: PathBuf,
    /// The `sluice up` process.
    pub up: Child,
}

/// `name` under the temporary directory, emptied, with an empty `work` in it.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("work")).unwrap();
    dir
}

impl Up {
    /// Starts `bin up` in `dir` with `conf` as its slurm.conf (and `site`, if any, as
    /// its sluice.conf); returns at once (see [`Up::until`]).
    pub fn start(bin: &Path, dir: PathBuf, conf: &str, site: Option<&str>) -> Up {
        std::fs::write(dir.join("slurm.conf"), conf).unwrap();
        if let Some(site) = site {
            std::fs::write(dir.join("sluice.conf"), site).unwrap();
        }
        let up = Command::new(bin)
            .args(["up", "--config"])
            .arg(dir.join("slurm.conf"))
            .arg("--state-dir")
            .arg(dir.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Up { dir, up }
    }

    /// Waits until `ready`, asked every `every`, at most `limit` (then panics: the
    /// cluster did not start).
    pub fn until(self, limit: Duration, every: Duration, mut ready: impl FnMut(&Up) -> bool) -> Up {
        let start = Instant::now();
        while !ready(&self) {
            assert!(start.elapsed() < limit, "cluster did not start");
            std::thread::sleep(every);
        }
        self
    }

    /// Waits until `sinfo` shows `nodes` idle nodes, at most a minute.
    pub fn until_idle(self, nodes: usize) -> Up {
        self.until(Duration::from_secs(60), Duration::from_millis(50), |c| {
            c.command("sinfo", &["-h", "-N", "-o", "%t"])
                .is_some_and(|o| o.lines().filter(|l| l.trim() == "idle").count() == nodes)
        })
    }

    /// Its state directory.
    pub fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Command `cmd` of this cluster (a link to `sluice` in its state directory).
    pub fn bin(&self, cmd: &str) -> PathBuf {
        self.state().join("bin").join(cmd)
    }

    /// A client of its controller's socket.
    pub fn client(&self) -> Client {
        Client::new(sluice_proto::paths::controller_socket(&self.state()))
    }

    /// Runs `cmd args` as a user of this cluster does, in `work`.
    pub fn run(&self, cmd: &str, args: &[&str]) -> std::io::Result<Output> {
        Command::new(self.bin(cmd))
            .args(args)
            .current_dir(self.dir.join("work"))
            .env("SLUICE_STATE_DIR", self.state())
            .output()
    }

    /// What `cmd args` printed, if it succeeded.
    pub fn command(&self, cmd: &str, args: &[&str]) -> Option<String> {
        let o = self.run(cmd, args).ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// Resident memory of the controller (`sluice up`), KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.up.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.up.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.up.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
