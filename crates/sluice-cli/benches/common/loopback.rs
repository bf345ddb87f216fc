//! A controller on loopback with many nodes, their agents (the real agent,
//! `sluice_noded`, over the real signed TCP transport) run in the bench's own process:
//! what the benches measure a large cluster on, on one machine.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Waits until `ok`, at most `limit`.
pub fn wait_until(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The median of `v`.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time (user + system) of process `pid`, seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command's name, in parentheses: field 3 on; utime and stime are 14, 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf reads a constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Resident set of process `pid`, MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// CPU% of `pid` over `window`.
pub fn cpu_percent(pid: u32, window: Duration) -> f64 {
    let before = cpu_seconds(pid);
    let t = Instant::now();
    std::thread::sleep(window);
    100.0 * (cpu_seconds(pid) - before) / t.elapsed().as_secs_f64()
}

/// A controller (`slurmctld -D`) on loopback whose nodes `n00001`.. each have their own
/// port, for agents run in this process ([`start_agents`]); stopped on drop.
pub struct Scale {
    /// Its directory (configuration, state, log).
    pub dir: PathBuf,
    /// The controller.
    pub ctld: Child,
    port: u16,
}

impl Scale {
    /// `nodes` nodes of `cpus` CPUs in one partition `all`, with `extra` lines in
    /// slurm.conf.
    pub fn start(nodes: usize, cpus: u32, extra: &str) -> Scale {
        let dir = std::env::temp_dir().join(format!("sluice-bench-hosts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Ports of this run only, out of the way of a real cluster's 6817/6818.
        // Below the kernel's range of ephemeral ports, so that no agent's own outgoing
        // connection takes a port another agent is to listen on.
        let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|r| r.split_whitespace().next()?.parse::<usize>().ok())
            .unwrap_or(32_768);
        let top = ephemeral.saturating_sub(nodes + 1).max(2_048);
        let port = (top - (std::process::id() as usize % 1_000).min(top - 1_024)) as u16;
        let mut conf = format!(
            "ClusterName=scale\nSlurmctldHost=localhost\nSlurmctldPort={port}\n\
             SlurmdParameters=config_overrides\nStateSaveLocation={d}/state\n\
             SlurmctldPidFile={d}/slurmctld.pid\nAuthInfo=key={d}/cluster.key\n\
             MaxJobCount=1000000\n{extra}",
            d = dir.display()
        );
        for i in 1..=nodes {
            conf.push_str(&format!(
                "NodeName=n{i:05} NodeAddr=127.0.0.1 Port={} CPUs={cpus} RealMemory=250000 \
                 State=UNKNOWN\n",
                port as usize + i
            ));
        }
        conf.push_str(&format!(
            "PartitionName=all Nodes=n[00001-{nodes:05}] Default=YES State=UP \
             MaxTime=UNLIMITED\n"
        ));
        std::fs::write(dir.join("slurm.conf"), conf).unwrap();
        let key = dir.join("cluster.key");
        std::fs::write(&key, format!("{}\n", "5a".repeat(32))).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        // `SLUICE_BENCH_CTLD=PATH`: another build's controller (an older one, to
        // compare in one run); the commands are this build's.
        let ctld_bin = std::env::var_os("SLUICE_BENCH_CTLD")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_sluice")));
        let ctld = Command::new(ctld_bin)
            .args(["ctld", "-D", "-f"])
            .arg(dir.join("slurm.conf"))
            .arg("-L")
            .arg(dir.join("slurmctld.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Scale { dir, ctld, port };
        wait_until(Duration::from_secs(30), "the controller", || {
            s.sinfo().is_some()
        });
        s
    }

    /// `sinfo -h -o "%D %t"`, if the controller answers.
    pub fn sinfo(&self) -> Option<String> {
        use std::os::unix::process::CommandExt;
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg0("sinfo")
            .args(["-h", "-o", "%D %t"])
            .env("SLUICE_STATE_DIR", self.dir.join("state"))
            .stderr(Stdio::null())
            .output()
            .ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// Nodes whose `sinfo` state is `state` exactly.
    pub fn count(&self, state: &str) -> usize {
        self.sinfo()
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, t)| *t == state)
            .filter_map(|(d, _)| d.parse::<usize>().ok())
            .sum()
    }
}

impl Drop for Scale {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.ctld.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.ctld.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Agents of nodes `from..to` of [`Scale`] in this process's runtime, each stopped
/// when its sender is dropped or sent to.
pub fn start_agents(
    rt: &tokio::runtime::Runtime,
    s: &Scale,
    from: usize,
    to: usize,
) -> Vec<(
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
)> {
    let key = sluice_proto::auth::read_private_key(&s.dir.join("cluster.key")).unwrap();
    (from..to)
        .map(|i| {
            let node = format!("n{i:05}");
            let spool = s.dir.join("agents").join(&node);
            std::fs::create_dir_all(&spool).unwrap();
            let setup = sluice_noded::TcpSetup {
                listen: std::net::SocketAddr::from(([127, 0, 0, 1], s.port + i as u16)),
                auth: sluice_proto::auth::Scheme::Key(key.clone()),
                controller: format!("127.0.0.1:{}", s.port),
                backups: Vec::new(),
                vouch_socket: None,
                job_env: Vec::new(),
                hardware: None,
                conf_hash: None,
            };
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let handle = rt.spawn(async move {
                let stop = async move {
                    let _ = rx.await;
                };
                if let Err(e) = sluice_noded::run_with(
                    &spool,
                    &node,
                    sluice_noded::Transport::Tcp(Box::new(setup)),
                    stop,
                )
                .await
                {
                    eprintln!("agent {node}: {e}");
                }
            });
            (tx, handle)
        })
        .collect()
}

impl Scale {
    /// Every node under a maintenance reservation of root's for a day, so that what is
    /// submitted stays queued (the figures are those of a full queue, not of running it).
    pub fn reserve_every_node(&self) {
        let o = self.run(
            "scontrol",
            &[
                "create",
                "reservation",
                "ReservationName=maint",
                "StartTime=now",
                "Duration=1-00:00:00",
                "Nodes=ALL",
                "Users=root",
                "Flags=MAINT",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    /// Submits `jobs` jobs through the API, `job(i, work directory)` each, from eight
    /// threads, and waits until all of them are queued.
    pub fn queue(
        &self,
        jobs: u64,
        job: impl Fn(u64, &str) -> sluice_proto::types::JobDescription + Sync,
    ) {
        let work = self.dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        let work = work.display().to_string();
        let job = &job;
        std::thread::scope(|scope| {
            for c in 0..8u64 {
                let client = sluice_proto::client::Client::new(self.socket());
                let work = work.clone();
                scope.spawn(move || {
                    let mut i = c;
                    while i < jobs {
                        let _: sluice_proto::types::SubmitReply =
                            client.post("/v1/jobs", &job(i, &work)).expect("submission");
                        i += 8;
                    }
                });
            }
        });
        wait_until(Duration::from_secs(600), "the queue", || {
            let o = self.run("squeue", &["-h", "-t", "PD", "-o", "%i"]);
            String::from_utf8_lossy(&o.stdout).lines().count() as u64 == jobs
        });
    }
}

impl Scale {
    /// Runs Slurm command `cmd` (the Sluice binary under that name) against this
    /// controller.
    pub fn run(&self, cmd: &str, args: &[&str]) -> Output {
        use std::os::unix::process::CommandExt;
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg0(cmd)
            .args(args)
            .env("SLUICE_STATE_DIR", self.dir.join("state"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The controller's port (`SlurmctldPort`), on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The controller's Unix socket.
    pub fn socket(&self) -> PathBuf {
        sluice_proto::paths::controller_socket(&self.dir.join("state"))
    }
}
