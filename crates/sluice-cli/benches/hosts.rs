//! A cluster over several hosts, measured from outside: `cargo bench -p sluice-cli
//! --bench hosts` prints a table (the README's "Over several hosts").
//!
//! Rows 1-3 run on a lab of the hosts harness (`tests/hosts/hosts.sh`: network
//! namespaces on this machine, which needs root; without root they are skipped, said
//! so): `slurmctld` on `head01`, `slurmd` on `node01`-`node03`, every message over the
//! lab's network, signed with the cluster key.
//! - trivial jobs (`sbatch --wrap true`, submitted by a user on `head01`, 8 at a time)
//!   submitted, run and finished per second;
//! - `srun -N2 -n16` from `head01`, the controller's host (which has no agent: the
//!   login host here): until every task started, and the whole command;
//! - a dead node: its link cut, then its host killed; time until `sinfo` shows it not
//!   responding (`idle*`) and `down*` (`SlurmdTimeout=10`).
//!
//! Row 4 needs no lab: a `slurmctld` on loopback with 1,000 nodes in its slurm.conf and
//! 0, 100, then 1,000 of their agents (the real agent, `sluice_noded`, many in this
//! process, each on its own port, over the real signed TCP transport) registered and
//! idle; the controller's CPU (from `/proc/PID/stat` over 30 s) and resident set.
//!
//! `--only scale` (or `jobs`, `srun`, `dead`) runs one row. Numbers depend on the
//! machine; every host of the lab shares its cores.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[allow(dead_code)]
#[path = "../tests/hosts/harness.rs"]
mod harness;
#[allow(dead_code)]
#[path = "common/loopback.rs"]
mod loopback;

use harness::Hosts;
use loopback::{cpu_percent, cpu_seconds, median, rss_mib, start_agents, wait_until, Scale};

/// Where the lab's configuration is, on every host (the shared home).
const ETC: &str = "/home/etc-slurm";
/// Where the lab's commands are, on every host.
const BIN: &str = "/home/bin";
/// The user's directory, on every host.
const WORK: &str = "/home/lab";
/// The user.
const USER: &str = "nobody";

const LAB_CONF: &str = "ClusterName=benchlab
SlurmctldHost=head01
SlurmdParameters=config_overrides
SlurmdTimeout=10
ReturnToService=1
MaxJobCount=100000
NodeName=node[01-03] CPUs=64 RealMemory=64000 State=UNKNOWN
PartitionName=batch Nodes=node[01-03] Default=YES State=UP
";

fn progress(what: impl std::fmt::Display) {
    eprintln!("[hosts bench] {what}");
    let _ = std::io::stderr().flush();
}

/// `/home/...` of the lab as this machine sees it.
fn here(h: &Hosts, path: &str) -> PathBuf {
    h.home()
        .join(path.strip_prefix("/home/").expect("under /home"))
}

/// A script run on `host` as the user, with the lab's commands on its PATH; its stdout.
fn user_sh(h: &Hosts, host: &str, script: &str) -> String {
    let full =
        format!("cd {WORK} && export PATH={BIN}:$PATH SLURM_CONF={ETC}/slurm.conf && {script}");
    let o = h.run_as(host, USER, &["bash", "-c", &full]);
    assert_eq!(o.code, 0, "on {host}: {script}\n{}{}", o.stdout, o.stderr);
    o.stdout
}

/// `sinfo` on head01: `NODE STATE` lines.
fn node_state(h: &Hosts, node: &str) -> String {
    let o = h.run(
        "head01",
        &[
            "env",
            "XDG_STATE_HOME=/nonexistent",
            &format!("SLURM_CONF={ETC}/slurm.conf"),
            &format!("{BIN}/sinfo"),
            "-h",
            "-N",
            "-n",
            node,
            "-o",
            "%t",
        ],
    );
    o.stdout.trim().to_string()
}

/// The lab: configuration and commands in the shared home, the controller on head01, an
/// agent on each node; stopped (SIGTERM) on drop.
struct Lab {
    h: Hosts,
}

impl Lab {
    fn start() -> Lab {
        progress("bringing up the lab: head01, node01-node03");
        let h = Hosts::up(&["head01", "node[01-03]"], &[]);
        let etc = here(&h, ETC);
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(etc.join("slurm.conf"), LAB_CONF).unwrap();
        let bin = here(&h, BIN);
        std::fs::create_dir_all(&bin).unwrap();
        // As the README installs them: the daemons `sluice`, the commands
        // `sluice-commands`.
        for name in ["slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo"] {
            let binary = match name {
                "slurmctld" | "slurmd" => env!("CARGO_BIN_EXE_sluice"),
                _ => env!("CARGO_BIN_EXE_sluice-commands"),
            };
            std::os::unix::fs::symlink(binary, bin.join(name)).unwrap();
        }
        let work = here(&h, WORK);
        std::fs::create_dir_all(&work).unwrap();
        nix::unistd::chown(
            &work,
            Some(nix::unistd::Uid::from_raw(65534)),
            Some(nix::unistd::Gid::from_raw(65534)),
        )
        .unwrap();
        let lab = Lab { h };
        let conf = format!("{ETC}/slurm.conf");
        let o = lab
            .h
            .run("head01", &[&format!("{BIN}/slurmctld"), "-f", &conf]);
        assert_eq!(o.code, 0, "slurmctld: {}{}", o.stdout, o.stderr);
        let key = etc.join("cluster.key");
        wait_until(Duration::from_secs(30), "the cluster key", || key.exists());
        for node in ["node01", "node02", "node03"] {
            lab.start_agent(node);
        }
        wait_until(Duration::from_secs(60), "three idle nodes", || {
            ["node01", "node02", "node03"]
                .iter()
                .all(|n| node_state(&lab.h, n) == "idle")
        });
        progress("lab up: three idle nodes");
        lab
    }

    fn start_agent(&self, node: &str) {
        let conf = format!("{ETC}/slurm.conf");
        let o = self
            .h
            .run(node, &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", node]);
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    }

    fn stop(&self, host: &str, pid_file: &str) {
        let script = format!(
            "p=$(cat {pid_file} 2>/dev/null) || exit 0; kill -TERM $p; \
             for _ in $(seq 100); do kill -0 $p 2>/dev/null || exit 0; sleep 0.1; done"
        );
        let _ = self.h.sh(host, &script);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for node in ["node01", "node02", "node03"] {
            self.stop(node, "/var/run/slurmd.pid");
        }
        self.stop("head01", "/var/run/slurmctld.pid");
    }
}

/// Row 1: `n` trivial jobs submitted by `sbatch` processes (8 at a time) on head01 and
/// waited for until none is left in the queue; jobs per second.
fn jobs_per_second(lab: &Lab, n: usize) -> f64 {
    let script = format!(
        "s=$(date +%s%N); seq {n} | xargs -P8 -I{{}} sbatch -Q -o /dev/null --wrap true \
         >/dev/null || exit 1; \
         while [ -n \"$(squeue -h -t PD,R,CG | head -1)\" ]; do sleep 0.05; done; \
         e=$(date +%s%N); echo $(( (e - s) / 1000000 ))"
    );
    let ms: f64 = user_sh(&lab.h, "head01", &script).trim().parse().unwrap();
    n as f64 / (ms / 1000.0)
}

/// Row 2: `srun -N2 -n16` on head01: (until its last task started, the whole command) of
/// `srun ... date` and of `srun ... true`, milliseconds.
fn srun_times(lab: &Lab) -> (f64, f64) {
    let script = "s=$(date +%s%N); srun -N2 -n16 date +%s%N > srun.out; \
                  e=$(date +%s%N); echo $s; echo $e; cat srun.out; rm -f srun.out";
    let out = user_sh(&lab.h, "head01", script);
    let v: Vec<u128> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(v.len(), 18, "{out}");
    let last = v[2..].iter().max().unwrap();
    let started = (last - v[0]) as f64 / 1e6;
    let script = "s=$(date +%s%N); srun -N2 -n16 true; e=$(date +%s%N); \
                  echo $(( (e - s) / 1000 ))";
    let whole = user_sh(&lab.h, "head01", script)
        .trim()
        .parse::<f64>()
        .unwrap()
        / 1e3;
    (started, whole)
}

/// Row 3: after `fail` (a cut link, a killed host) on `node`, seconds until it shows
/// `idle*`, then `down*`.
fn detect_dead(lab: &Lab, node: &str, fail: impl FnOnce()) -> (f64, f64) {
    let start = Instant::now();
    fail();
    let mut not_responding = None;
    loop {
        let s = node_state(&lab.h, node);
        let t = start.elapsed().as_secs_f64();
        if s == "idle*" && not_responding.is_none() {
            not_responding = Some(t);
        }
        if s == "down*" {
            return (not_responding.unwrap_or(t), t);
        }
        assert!(t < 120.0, "{node} never went down ({s})");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn lab_rows(rows: &mut Vec<(String, String)>, only: Option<&str>) {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "skipped: the rows over several hosts need root (the hosts harness makes \
             network, UTS, mount and IPC namespaces); run the benchmark as root"
        );
        return;
    }
    let lab = Lab::start();
    if only.is_none_or(|o| o == "jobs") {
        let n = 1000;
        let reps: Vec<f64> = (0..3)
            .map(|i| {
                progress(format_args!("{n} trivial jobs, run {} of 3", i + 1));
                let r = jobs_per_second(&lab, n);
                progress(format_args!("  {r:.0} jobs/s"));
                r
            })
            .collect();
        rows.push((
            format!(
                "trivial jobs submitted (sbatch, 8 at a time), run and finished on 3 hosts \
                 ({n} jobs, median of 3)"
            ),
            format!("{:.0} /s", median(reps)),
        ));
    }
    if only.is_none_or(|o| o == "srun") {
        progress("srun -N2 -n16, 7 times");
        // A first run, not counted: the commands' pages in memory.
        srun_times(&lab);
        let runs: Vec<(f64, f64)> = (0..7).map(|_| srun_times(&lab)).collect();
        progress(format_args!("  {runs:?}"));
        rows.push((
            "`srun -N2 -n16` from the controller's host: until all 16 tasks started \
             (median of 7)"
                .into(),
            format!("{:.0} ms", median(runs.iter().map(|r| r.0).collect())),
        ));
        rows.push((
            "`srun -N2 -n16 true`: the whole command (median of 7)".into(),
            format!("{:.0} ms", median(runs.iter().map(|r| r.1).collect())),
        ));
    }
    if only.is_none_or(|o| o == "dead") {
        let mut cuts = Vec::new();
        for i in 0..3 {
            progress(format_args!("node02's link cut, {} of 3", i + 1));
            let r = detect_dead(&lab, "node02", || lab.h.cut("node02"));
            progress(format_args!(
                "  idle* after {:.1} s, down* after {:.1} s",
                r.0, r.1
            ));
            cuts.push(r);
            lab.h.restore("node02");
            wait_until(Duration::from_secs(60), "node02 back", || {
                node_state(&lab.h, "node02") == "idle"
            });
        }
        progress("node03's host killed");
        let killed = detect_dead(&lab, "node03", || lab.h.kill("node03"));
        progress(format_args!(
            "  idle* after {:.1} s, down* after {:.1} s",
            killed.0, killed.1
        ));
        rows.push((
            "a link cut: until `idle*` (not responding) / `down*`, SlurmdTimeout=10 \
             (median of 3)"
                .into(),
            format!(
                "{:.1} s / {:.1} s",
                median(cuts.iter().map(|r| r.0).collect()),
                median(cuts.iter().map(|r| r.1).collect())
            ),
        ));
        rows.push((
            "a host killed: until `idle*` / `down*`, SlurmdTimeout=10".into(),
            format!("{:.1} s / {:.1} s", killed.0, killed.1),
        ));
    }
    drop(lab);
}

/// Row 4's nodes.
const SCALE_NODES: usize = 1000;

fn scale_rows(rows: &mut Vec<(String, String)>) {
    let window = Duration::from_secs(
        std::env::var("SLUICE_BENCH_WINDOW")
            .ok()
            .and_then(|w| w.parse().ok())
            .unwrap_or(30),
    );
    progress(format_args!(
        "controller with {SCALE_NODES} nodes on loopback; idle agents 0, 100, {SCALE_NODES}"
    ));
    let s = Scale::start(SCALE_NODES, 4, "");
    let pid = s.ctld.id();
    let me = std::process::id();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut agents = Vec::new();
    for target in [0, 100, SCALE_NODES] {
        let have = agents.len();
        if target > have {
            progress(format_args!("starting agents {} to {target}", have + 1));
            agents.extend(start_agents(&rt, &s, have + 1, target + 1));
            let t = Instant::now();
            wait_until(
                Duration::from_secs(300),
                "the agents' registrations",
                || s.count("idle") == target,
            );
            progress(format_args!(
                "  {target} idle after {:.1} s",
                t.elapsed().as_secs_f64()
            ));
            // Settled: registrations done, pings at their pace.
            std::thread::sleep(Duration::from_secs(3));
        }
        progress(format_args!("measuring {} s", window.as_secs()));
        let own_before = cpu_seconds(me);
        let t = Instant::now();
        let cpu = cpu_percent(pid, window);
        let own = 100.0 * (cpu_seconds(me) - own_before) / t.elapsed().as_secs_f64();
        let rss = rss_mib(pid);
        progress(format_args!(
            "  controller {cpu:.1}% CPU, {rss:.1} MiB; the agents (this process) {own:.1}% \
             CPU, {:.1} MiB",
            rss_mib(me)
        ));
        rows.push((
            format!("controller idle, {target} agents registered: CPU (30 s) / resident set"),
            format!("{cpu:.1}% / {rss:.0} MiB"),
        ));
        if target > 0 {
            rows.push((
                format!("  the {target} agents themselves (one process): CPU / resident set"),
                format!("{own:.1}% / {:.0} MiB", rss_mib(me)),
            ));
        }
    }
    progress("stopping the agents");
    let handles: Vec<_> = agents
        .into_iter()
        .map(|(tx, h)| {
            let _ = tx.send(());
            h
        })
        .collect();
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            for h in handles {
                let _ = h.await;
            }
        })
        .await;
    });
    drop(s);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str);
    let mut rows: Vec<(String, String)> = Vec::new();
    if only.is_none_or(|o| o != "scale") {
        lab_rows(&mut rows, only);
    }
    if only.is_none_or(|o| o == "scale") {
        scale_rows(&mut rows);
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["measure", "result"]);
    for (m, r) in rows {
        table.add_row([m, r]);
    }
    println!("{table}");
}
