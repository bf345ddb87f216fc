//! A real cluster for tests: `sluice up` in the background with its own state
//! directory, and the Slurm commands run against it as a user would run them.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Real Slurm 22.05's captured output `name` (a file of `slurm-samples/`) from the
/// reference folder `../shared` next to the repository root. A test that compares with
/// it fails, saying so, where the folder is missing: it never passes without it.
pub fn reference_sample(name: &str) -> String {
    // crates/sluice-cli -> the repository root -> the folder holding it.
    let beside_root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(3);
    let path = beside_root
        .unwrap_or(Path::new("/"))
        .join("shared/slurm-samples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reference data missing: cannot read {} ({e}). This test compares with real \
             Slurm 22.05's captured output in slurm-samples/ of the reference folder \
             `shared` next to the repository root (../shared: slurm-samples/, traces/, \
             seeds/, SIMULATOR-REFERENCE.md); put that folder there to run it",
            path.display()
        )
    })
}

/// A running `sluice up`; stopped (Ctrl-C) and its directory removed on drop.
pub struct Cluster {
    pub dir: PathBuf,
    child: Child,
    /// Agents started by the test rather than by `sluice up`.
    agents: Vec<Child>,
    /// Extra arguments of `sluice up`.
    up_args: Vec<String>,
}

/// How long a test waits for something that should take well under a second, before
/// it fails. Generous: CI machines are shared.
const PATIENCE: Duration = Duration::from_secs(60);

impl Cluster {
    /// Starts a cluster described by `slurm_conf` (file contents) in a fresh directory
    /// named after `name`, and waits until every node is idle.
    pub fn start(name: &str, slurm_conf: &str) -> Cluster {
        Self::start_with(name, slurm_conf, &[])
    }

    /// A cluster whose controller runs alone (so that a test may kill and restart it)
    /// and whose agents, one per name in `nodes`, the test starts itself.
    pub fn start_with(name: &str, slurm_conf: &str, nodes: &[&str]) -> Cluster {
        Self::start_full(name, slurm_conf, nodes, &[], &[])
    }

    /// [`Cluster::start`] with more configuration files next to the slurm.conf
    /// (`(file name, contents)`: gres.conf, cgroup.conf, topology.conf).
    pub fn start_files(name: &str, slurm_conf: &str, files: &[(&str, &str)]) -> Cluster {
        Self::start_full(name, slurm_conf, &[], &[], files)
    }

    /// [`Cluster::start_with`] with more configuration files next to the slurm.conf.
    pub fn start_with_files(
        name: &str,
        slurm_conf: &str,
        nodes: &[&str],
        files: &[(&str, &str)],
    ) -> Cluster {
        Self::start_full(name, slurm_conf, nodes, &[], files)
    }

    /// [`Cluster::start`] with extra arguments for `sluice up`.
    pub fn start_args(name: &str, slurm_conf: &str, up_args: &[&str]) -> Cluster {
        Self::start_full(name, slurm_conf, &[], up_args, &[])
    }

    pub fn start_full(
        name: &str,
        slurm_conf: &str,
        nodes: &[&str],
        up_args: &[&str],
        files: &[(&str, &str)],
    ) -> Cluster {
        let up_args: Vec<String> = up_args.iter().map(|a| a.to_string()).collect();
        let dir = std::env::temp_dir().join(format!("sluice-t-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("work")).unwrap();
        // Open to every user, as /tmp is (sticky): the tests that submit as a second
        // user have their output files there, which the agent opens as their owner.
        {
            use std::os::unix::fs::PermissionsExt;
            let open = std::fs::Permissions::from_mode(0o1777);
            std::fs::set_permissions(dir.join("work"), open).unwrap();
        }
        std::fs::write(dir.join("slurm.conf"), slurm_conf).unwrap();
        for (file, contents) in files {
            std::fs::write(dir.join(file), contents).unwrap();
        }
        let child = Self::spawn_up(&dir, !nodes.is_empty(), &up_args);
        let mut c = Cluster {
            dir,
            child,
            agents: Vec::new(),
            up_args,
        };
        for n in nodes {
            let a = c.start_agent(n);
            c.agents.push(a);
        }
        // Every node idle; with agents named, every node of theirs (a node of the
        // slurm.conf without an agent may be meant to stay away).
        c.wait_for("all nodes idle", || {
            let o = c.run("sinfo", &["-h", "-N", "-o", "%N %t"]);
            o.code == 0
                && !o.stdout.is_empty()
                && o.stdout.lines().all(|l| {
                    let (node, state) = l.trim().split_once(' ').unwrap_or(("", ""));
                    state == "idle" || !(nodes.is_empty() || nodes.contains(&node))
                })
        });
        c
    }

    fn spawn_up(dir: &Path, controller_only: bool, up_args: &[String]) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("up.log"))
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
        cmd.arg("up")
            .arg("--config")
            .arg(dir.join("slurm.conf"))
            .arg("--state-dir")
            .arg(dir.join("state"));
        if controller_only {
            cmd.arg("--controller-only");
        }
        cmd.args(up_args);
        cmd.stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sluice up starts")
    }

    /// Kills the controller outright (SIGKILL) and starts it again at once.
    pub fn crash_and_restart_controller(&mut self) {
        self.crash_controller();
        self.restart_controller();
    }

    /// Kills the controller outright (SIGKILL); [`Cluster::restart_controller`] starts
    /// it again.
    pub fn crash_controller(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the controller again (alone: the agents are the test's).
    pub fn restart_controller(&mut self) {
        self.child = Self::spawn_up(&self.dir, true, &self.up_args);
    }

    /// Stops `sluice up` as Ctrl-C does (SIGINT: its agents end their jobs) and waits
    /// for it; [`Cluster::start_up_again`] starts it again.
    pub fn stop_up(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let _ = self.child.wait();
    }

    /// Kills `sluice up` outright (SIGKILL: no clean stop), then stops the agents it
    /// leaves behind (SIGINT: they end their jobs), as a crashed host would leave them.
    pub fn kill_up(&mut self) {
        self.crash_controller();
        let state = self.dir.join("state");
        stop_agents_of(&state);
        let dir = state.display().to_string();
        self.wait_for("the agents and their jobs to be gone", || {
            pids_of(&["--state-dir", &dir]).is_empty() && supervisors_of(&state).is_empty()
        });
    }

    /// Starts `sluice up` again on the same state (with its agents) and waits until
    /// every node is back.
    pub fn start_up_again(&mut self) {
        self.child = Self::spawn_up(&self.dir, false, &self.up_args);
        self.wait_for("the nodes to be back", || {
            let o = self.run("sinfo", &["-h", "-N", "-o", "%t"]);
            o.code == 0
                && !o.stdout.is_empty()
                && o.stdout
                    .lines()
                    .all(|l| matches!(l.trim(), "idle" | "alloc" | "mix"))
        });
    }

    /// The directory jobs are submitted from.
    pub fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// Runs Slurm command `cmd` (through the links `sluice up` made) from the work
    /// directory, with the cluster's state directory in the environment.
    pub fn run(&self, cmd: &str, args: &[&str]) -> Output {
        self.run_in(&self.work(), cmd, args)
    }

    /// [`Cluster::run`] from directory `cwd`.
    pub fn run_in(&self, cwd: &Path, cmd: &str, args: &[&str]) -> Output {
        self.run_full(cwd, None, cmd, args)
    }

    /// [`Cluster::run`] as user `uid` (group of the same number, no others): for a test run by
    /// root that needs a second user.
    pub fn run_as(&self, uid: u32, cmd: &str, args: &[&str]) -> Output {
        self.run_full(&self.work(), Some((uid, uid)), cmd, args)
    }

    /// [`Cluster::run`] as user `uid` with primary group `gid` (no others).
    pub fn run_as_ids(&self, uid: u32, gid: u32, cmd: &str, args: &[&str]) -> Output {
        self.run_full(&self.work(), Some((uid, gid)), cmd, args)
    }

    fn run_full(&self, cwd: &Path, ids: Option<(u32, u32)>, cmd: &str, args: &[&str]) -> Output {
        use std::os::unix::process::CommandExt;
        let bin = self.dir.join("state").join("bin");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(bin.join(cmd));
        // argv[0] as a shell passes it to a command found on PATH: the name typed, which
        // getopt's messages start with (`sbatch: unrecognized option ...`).
        command.arg0(cmd);
        if let Some((uid, gid)) = ids {
            // Setting the uid drops root's supplementary groups too.
            command.uid(uid).gid(gid);
        }
        let o = match command
            .args(args)
            .current_dir(cwd)
            .env("PATH", path)
            .env("SLUICE_STATE_DIR", self.dir.join("state"))
            .env_remove("SLURM_CONF")
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_TIME_FORMAT")
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) => o,
            // Before `sluice up` has made its links.
            Err(e) => {
                return Output {
                    stdout: String::new(),
                    stderr: format!("{cmd}: {e}"),
                    code: -1,
                }
            }
        };
        Output {
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            code: o.status.code().unwrap_or(-1),
        }
    }

    /// Fills both nodes of the two-node test cluster (`crate::SMALL`: 2 CPUs each) for
    /// five minutes with one job named `name`, so that what is submitted next waits;
    /// its id.
    pub fn occupy(&self, name: &str) -> u64 {
        self.sbatch(&[
            "-J",
            name,
            "-N",
            "2",
            "-c",
            "2",
            "-t",
            "5",
            "--wrap",
            "sleep 600",
        ])
    }

    /// Submits with `sbatch` and returns the job id; panics with sbatch's error if it
    /// refuses.
    pub fn sbatch(&self, args: &[&str]) -> u64 {
        let o = self.run("sbatch", args);
        assert_eq!(o.code, 0, "sbatch {args:?} failed: {}", o.stderr);
        o.stdout
            .trim()
            .strip_prefix("Submitted batch job ")
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("unexpected sbatch output {:?}", o.stdout))
    }

    /// Waits until `done` holds; panics naming `what` after [`PATIENCE`].
    pub fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `probe` returns the same text twice in a row 200 ms apart and it
    /// equals `expected`, then returns it; on timeout returns the last text, so that the
    /// caller's assertion shows the difference.
    pub fn settle(&self, expected: &str, mut probe: impl FnMut() -> String) -> String {
        let start = Instant::now();
        loop {
            let a = probe();
            if a == expected {
                std::thread::sleep(Duration::from_millis(200));
                let b = probe();
                if b == a {
                    return b;
                }
            }
            if start.elapsed() > PATIENCE {
                return a;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A job's state as `sacct` reports it (allocation line only).
    pub fn state(&self, job: u64) -> String {
        self.run(
            "sacct",
            &["-n", "-X", "-P", "-o", "State", "-j", &job.to_string()],
        )
        .stdout
        .trim()
        .to_string()
    }

    /// Waits until `job` has ended and returns its final state: accounting has it (at
    /// once for a job told to end, as Slurm's) and it is no longer `COMPLETING` (its
    /// processes are gone, its batch script's end and output are in).
    pub fn wait_ended(&self, job: u64) -> String {
        let mut state = String::new();
        self.wait_for(&format!("job {job} to end"), || {
            state = self.state(job);
            !state.is_empty()
                && !matches!(
                    state.as_str(),
                    "PENDING" | "RUNNING" | "COMPLETING" | "SUSPENDED"
                )
                && self
                    .run(
                        "squeue",
                        &["-h", "-t", "all", "-j", &job.to_string(), "-o", "%T"],
                    )
                    .stdout
                    .trim()
                    != "COMPLETING"
        });
        state
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGINT: the cluster stops, the agents end their jobs (SIGTERM would leave
        // them running under their supervisors).
        for a in &mut self.agents {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(a.id() as i32),
                nix::sys::signal::Signal::SIGINT,
            );
            let _ = a.wait();
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Agents of a controller the test killed (`crash_and_restart_controller`) are
        // nobody's children any more: found by their state directory; and so are the
        // supervisors of jobs whose agent a test killed and did not restart.
        stop_agents_of(&self.dir.join("state"));
        stop_supervisors_of(&self.dir.join("state"));
        if std::thread::panicking() {
            eprintln!(
                "cluster state kept for inspection in {}",
                self.dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Processes whose command line has `words` as consecutive arguments.
/// Processes whose whole command line is `words` (not merely containing them, as a
/// wrapper's does).
pub fn pids_running(words: &[&str]) -> Vec<i32> {
    pids_of(words)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<String> = c
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                args == words
            })
        })
        .collect()
}

pub fn pids_of(words: &[&str]) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let hit = args
            .windows(words.len())
            .any(|w| w.iter().zip(words).all(|(a, b)| a == b));
        if hit {
            found.push(pid);
        }
    }
    found
}

impl Cluster {
    /// Starts another agent for `node` (after the test killed or stopped its agent),
    /// kept with the test's own agents: stopped (SIGINT) and waited for at the end.
    pub fn add_agent(&mut self, node: &str) {
        let a = self.start_agent(node);
        self.agents.push(a);
    }

    /// Starts a node agent for `node` by hand (as `sluice up` does).
    pub fn start_agent(&self, node: &str) -> Child {
        self.start_agent_with(node, &[])
    }

    /// [`Cluster::start_agent`] with more flags (`-Z --conf ...`).
    pub fn start_agent_with(&self, node: &str, flags: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["agent", "--node", node, "--state-dir"])
            .arg(self.dir.join("state"))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the agent starts")
    }
}

/// The job supervisors (`slurmstepd stepd DIR`) whose directory is under state
/// directory `state`.
pub fn supervisors_of(state: &Path) -> Vec<i32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.get(1) == Some(&&b"stepd"[..])
            && args
                .get(2)
                .is_some_and(|d| Path::new(std::ffi::OsStr::from_bytes(d)).starts_with(state))
        {
            found.push(pid);
        }
    }
    found
}

/// Ends the jobs of supervisors left in state directory `state` (SIGTERM: each ends its
/// job and leaves), and waits for them a little.
fn stop_supervisors_of(state: &Path) {
    let left = supervisors_of(state);
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let start = Instant::now();
    while !supervisors_of(state).is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGINT to every `sluice agent` process working in state directory `state` (the
/// cluster stops: they end their jobs).
fn stop_agents_of(state: &Path) {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    let wanted = state.as_os_str().as_encoded_bytes();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let is_agent = args.get(1) == Some(&&b"agent"[..]);
        if is_agent
            && args
                .windows(2)
                .any(|w| w[0] == b"--state-dir" && w[1] == wanted)
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGINT,
            );
        }
    }
}
