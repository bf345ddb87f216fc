//! A lab of hosts for tests: `tests/hosts/hosts.sh` (at the repository's root) makes
//! them from namespaces on this machine, and [`Hosts`] drives it: it brings a lab up in
//! an instance of its own (so tests may run side by side), runs commands on a host as
//! root or as a user, cuts and restores links, kills and restarts hosts, and tears the
//! lab down on drop, after a panic too. Should the test process itself die, the
//! script's watchdog (`up --owner`) tears the lab down.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The script.
pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/hosts/hosts.sh");

/// Where the script keeps its instances (`/run/sluice-hosts/ID`).
const RUN_ROOT: &str = "/run/sluice-hosts";

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl From<std::process::Output> for Output {
    fn from(o: std::process::Output) -> Output {
        Output {
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            code: o.status.code().unwrap_or(-1),
        }
    }
}

/// True where this process may make a lab (it is root); else says on stderr that `test`
/// is skipped and why. As root a test runs, and a lab that cannot be made fails it.
pub fn can_make_hosts(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!(
        "skipped: {test}: needs root (the hosts harness makes network, UTS, mount and IPC \
         namespaces); run the tests as root to run it"
    );
    false
}

/// The python of the AI lab's virtual environment (`tests/ai/venv.sh`: Ray, Dask's
/// distributed, jupyter-server, batchspawner), from `SLUICE_AI_PYTHON`; None, after saying
/// on stderr that `test` is skipped, where it is not set. With `SLUICE_REQUIRE_AI=1` (as in
/// CI) a missing environment fails the test instead.
pub fn ai_python(test: &str) -> Option<PathBuf> {
    let why = match std::env::var_os("SLUICE_AI_PYTHON").map(PathBuf::from) {
        Some(p) if p.is_file() => return Some(p),
        Some(p) => format!("SLUICE_AI_PYTHON={} is not a file", p.display()),
        None => "SLUICE_AI_PYTHON is not set (run tests/ai/venv.sh and export what it prints)"
            .to_string(),
    };
    if std::env::var("SLUICE_REQUIRE_AI").as_deref() == Ok("1") {
        panic!("SLUICE_REQUIRE_AI=1 but {why}");
    }
    eprintln!("skipped: {test}: {why}");
    None
}

/// The script run with `args`, its output captured.
pub fn script(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(SCRIPT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("bash runs the hosts script")
        .into()
}

/// A lab that is up: torn down on drop.
pub struct Hosts {
    id: u32,
    hosts: Vec<(String, Ipv4Addr)>,
    home: PathBuf,
    /// Every namespace its holders have had, for [`Footprint`].
    namespaces: Vec<String>,
    up: bool,
}

impl Hosts {
    /// Brings up hosts `names` (each a name or a range, `node[01-04]`) in a free instance;
    /// None, after saying why, where this process cannot ([`can_make_hosts`]).
    pub fn up_or_skip(test: &str, names: &[&str]) -> Option<Hosts> {
        can_make_hosts(test).then(|| Hosts::up(names, &[]))
    }

    /// Brings up hosts `names` with more options of `hosts.sh up` (`--bind SRC:DST`,
    /// `--home DIR`); panics with the script's error if it cannot.
    pub fn up(names: &[&str], options: &[&str]) -> Hosts {
        let owner = std::process::id().to_string();
        let mut args = vec!["-i", "auto", "up", "--owner", &owner];
        args.extend(options);
        args.extend(names);
        let o = script(&args);
        assert_eq!(o.code, 0, "hosts.sh {args:?} failed:\n{}", o.stderr);
        let mut lines = o.stdout.lines();
        let id: u32 = lines
            .next()
            .and_then(|l| l.strip_prefix("instance "))
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("unexpected output of hosts.sh up: {}", o.stdout));
        let hosts = lines
            .map(|l| {
                let (name, addr) = l.split_once(' ').expect("NAME ADDRESS");
                (name.to_string(), addr.parse().expect("an IPv4 address"))
            })
            .collect();
        let home = match options.iter().position(|o| *o == "--home") {
            Some(i) => PathBuf::from(options[i + 1]),
            None => instance_dir(id).join("home"),
        };
        let mut h = Hosts {
            id,
            hosts,
            home,
            namespaces: Vec::new(),
            up: true,
        };
        h.note_namespaces();
        h
    }

    fn note_namespaces(&mut self) {
        for ns in recorded_namespaces(self.id) {
            if !self.namespaces.contains(&ns) {
                self.namespaces.push(ns);
            }
        }
    }

    /// The instance (`hosts.sh -i ID`).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The hosts' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.hosts.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// A host's address.
    pub fn address(&self, host: &str) -> Ipv4Addr {
        self.hosts
            .iter()
            .find(|(n, _)| n == host)
            .unwrap_or_else(|| panic!("no host {host}"))
            .1
    }

    /// The shared home (mounted as `/home` on every host), as this machine sees it.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A host's own `/var/spool`, as this machine sees it (kept across kill and start).
    pub fn spool(&self, host: &str) -> PathBuf {
        instance_dir(self.id).join("node").join(host).join("spool")
    }

    fn id_arg(&self) -> String {
        self.id.to_string()
    }

    /// A command that runs `args` on `host` as root, starting in `/`. The process it
    /// spawns *is* the program (same pid: signals and waits reach it).
    pub fn command(&self, host: &str, args: &[&str]) -> Command {
        let mut c = Command::new("bash");
        c.arg(SCRIPT)
            .args(["-i", &self.id_arg(), "exec", host, "--"])
            .args(args);
        c
    }

    /// [`Hosts::command`] as `user`: a name, a uid, or `uid:gid` (with a passwd entry:
    /// its groups, `HOME`, `USER`; without: no supplementary groups).
    pub fn command_as(&self, host: &str, user: &str, args: &[&str]) -> Command {
        let mut c = Command::new("bash");
        c.arg(SCRIPT)
            .args(["-i", &self.id_arg(), "exec", "-u", user, host, "--"])
            .args(args);
        c
    }

    /// Runs `args` on `host` as root; what it printed and its exit status.
    pub fn run(&self, host: &str, args: &[&str]) -> Output {
        capture(self.command(host, args))
    }

    /// Runs `args` on `host` as `user` ([`Hosts::command_as`]).
    pub fn run_as(&self, host: &str, user: &str, args: &[&str]) -> Output {
        capture(self.command_as(host, user, args))
    }

    /// Runs a bash script on `host` as root.
    pub fn sh(&self, host: &str, script: &str) -> Output {
        self.run(host, &["bash", "-c", script])
    }

    /// [`Hosts::sh`] that must succeed; its stdout.
    pub fn sh_ok(&self, host: &str, script: &str) -> String {
        let o = self.sh(host, script);
        assert_eq!(o.code, 0, "on {host}: {script}\n{}", o.stderr);
        o.stdout
    }

    fn control(&self, args: &[&str]) {
        let mut all = vec!["-i".to_string(), self.id_arg()];
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = script(&all);
        assert_eq!(o.code, 0, "hosts.sh {all:?} failed:\n{}", o.stderr);
    }

    /// Cuts `host`'s network link (its eth0 loses carrier; nothing reaches it).
    pub fn cut(&self, host: &str) {
        self.control(&["link", "down", host]);
    }

    /// Restores `host`'s network link.
    pub fn restore(&self, host: &str) {
        self.control(&["link", "up", host]);
    }

    /// Kills every process of `host` and its link, as a power cut would.
    pub fn kill(&self, host: &str) {
        self.control(&["kill", host]);
    }

    /// Starts a killed `host` again: fresh `/tmp` and `/run`, the same spool.
    pub fn start(&mut self, host: &str) {
        self.control(&["start", host]);
        self.note_namespaces();
    }

    /// The processes running on `host` (its holder excepted).
    pub fn processes(&self, host: &str) -> Vec<i32> {
        let o = script(&["-i", &self.id_arg(), "pids", host]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout.lines().filter_map(|l| l.parse().ok()).collect()
    }

    /// What a teardown must leave no trace of.
    pub fn footprint(&self) -> Footprint {
        let mut namespaces = self.namespaces.clone();
        for ns in recorded_namespaces(self.id) {
            if !namespaces.contains(&ns) {
                namespaces.push(ns);
            }
        }
        Footprint {
            id: self.id,
            namespaces,
        }
    }

    /// Tears the lab down now; Err with the script's complaint if something stayed.
    pub fn down(mut self) -> Result<(), String> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<(), String> {
        if !std::mem::replace(&mut self.up, false) {
            return Ok(());
        }
        let o = script(&["-i", &self.id_arg(), "down"]);
        if o.code == 0 {
            Ok(())
        } else {
            Err(format!("hosts.sh -i {} down: {}", self.id, o.stderr))
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            if std::thread::panicking() {
                eprintln!("{e}");
            } else {
                panic!("{e}");
            }
        }
    }
}

fn capture(mut c: Command) -> Output {
    c.stdin(Stdio::null())
        .output()
        .expect("bash runs the hosts script")
        .into()
}

fn instance_dir(id: u32) -> PathBuf {
    Path::new(RUN_ROOT).join(id.to_string())
}

/// The namespaces the holders of instance `id` recorded (`net:[N]`, ...).
fn recorded_namespaces(id: u32) -> Vec<String> {
    let dir = instance_dir(id);
    let mut records = vec![dir.join("switch/ns")];
    if let Ok(nodes) = std::fs::read_dir(dir.join("node")) {
        records.extend(nodes.flatten().map(|e| e.path().join("ns")));
    }
    records
        .iter()
        .filter_map(|r| std::fs::read_to_string(r).ok())
        .flat_map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// What an instance of the lab made: after a teardown, [`Footprint::leftovers`] must be
/// empty.
#[derive(Debug, Clone)]
pub struct Footprint {
    pub id: u32,
    pub namespaces: Vec<String>,
}

impl Footprint {
    /// The footprint of instance `id` as its directory records it now (a lab the test
    /// made with the script directly).
    pub fn of(id: u32) -> Footprint {
        Footprint {
            id,
            namespaces: recorded_namespaces(id),
        }
    }

    /// Everything of the lab still on this machine: its directory; processes tagged
    /// with its instance or inside one of its namespaces; interfaces named after it
    /// (`ip link`); named network namespaces (`ip netns list`); mounts of its directory
    /// or of its namespaces in this machine's mount table.
    pub fn leftovers(&self) -> Vec<String> {
        let mut left = Vec::new();
        let dir = instance_dir(self.id);
        if dir.exists() {
            left.push(format!("directory {}", dir.display()));
        }
        // A namespace's number is reused once it is gone: one of ours that another lab
        // (of a test running alongside) now has is that lab's.
        let others: Vec<String> = std::fs::read_dir(RUN_ROOT)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|id| *id != self.id)
            .flat_map(recorded_namespaces)
            .collect();
        let tag = format!("sluice-hosts:{}:", self.id);
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let argv0 = std::fs::read(e.path().join("cmdline"))
                .map(|c| {
                    let first = c.split(|b| *b == 0).next().unwrap_or_default();
                    String::from_utf8_lossy(first).into_owned()
                })
                .unwrap_or_default();
            if argv0.starts_with(&tag) {
                left.push(format!("process {pid} ({argv0})"));
                continue;
            }
            if argv0.starts_with("sluice-hosts:") {
                continue;
            }
            let namespaces: Vec<String> = ["net", "uts", "mnt", "ipc"]
                .iter()
                .filter_map(|kind| std::fs::read_link(e.path().join("ns").join(kind)).ok())
                .map(|ns| ns.to_string_lossy().into_owned())
                .collect();
            if namespaces.iter().any(|ns| others.contains(ns)) {
                continue;
            }
            if let Some(ns) = namespaces.iter().find(|ns| self.namespaces.contains(ns)) {
                left.push(format!("process {pid} ({argv0}) in {ns}"));
            }
        }
        let prefix = format!("sluh{}", self.id);
        let ours = |name: &str| {
            name.strip_prefix(&prefix).is_some_and(|rest| {
                rest == "br"
                    || rest
                        .strip_prefix('p')
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        };
        let links = command_output("ip", &["-o", "link", "show"]);
        for line in links.lines() {
            let name = line.split(": ").nth(1).unwrap_or_default();
            let name = name.split('@').next().unwrap_or_default();
            if ours(name) {
                left.push(format!("interface {name}"));
            }
        }
        for line in command_output("ip", &["netns", "list"]).lines() {
            if line.starts_with("sluh") || line.starts_with("sluice") {
                left.push(format!("network namespace {line}"));
            }
        }
        let dir_text = dir.display().to_string();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        for line in mounts.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let (root, point) = (fields.get(3), fields.get(4));
            let under = |f: Option<&&str>| {
                f.is_some_and(|f| {
                    f.strip_prefix(&dir_text)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
            };
            if under(root)
                || under(point)
                || root.is_some_and(|r| self.namespaces.iter().any(|ns| ns == r))
            {
                left.push(format!("mount {line}"));
            }
        }
        left
    }

    /// Waits up to `patience` for [`Footprint::leftovers`] to be empty; what was left.
    pub fn wait_gone(&self, patience: Duration) -> Vec<String> {
        let start = Instant::now();
        loop {
            let left = self.leftovers();
            if left.is_empty() || start.elapsed() > patience {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(o.status.success(), "{cmd} {args:?} failed");
    String::from_utf8_lossy(&o.stdout).into_owned()
}
