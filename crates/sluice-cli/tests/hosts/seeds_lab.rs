//! The seeds' lab for real: `head01` runs `slurmctld`, `node01`–`node04` each run
//! `slurmd -N`, from the seeds' `slurm.conf` and `gres.conf` verbatim (one copy, shared
//! through the home directory with the cluster key, as an operator would copy them to
//! every host). Every message between hosts crosses the lab's network, signed with the
//! cluster key; users never hold it: their commands get credentials from their host's
//! agent. (`srun` inside the job and as a job of its own crosses hosts too.)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{Hosts, Output};

/// Where the lab's configuration is, on every host (the shared home).
pub const ETC: &str = "/home/etc-slurm";
/// Where the lab's commands are, on every host.
pub const BIN: &str = "/home/bin";
/// The unprivileged user's directory, on every host.
pub const WORK: &str = "/home/lab";
/// The user: nobody, who exists everywhere and owns nothing.
pub const USER: &str = "nobody";

pub fn seed(file: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../sluice-conf/tests/data/");
    std::fs::read_to_string(format!("{path}{file}")).unwrap()
}

/// `/home/...` of the hosts as this machine sees it.
pub fn here(h: &Hosts, path: &str) -> PathBuf {
    h.home()
        .join(path.strip_prefix("/home/").expect("a path under /home"))
}

/// Lays out the shared home: the seeds' configuration (with `extra` lines after it), the
/// multi-call binary under the daemons' and commands' names, a directory of the user's.
pub fn lay_out(h: &Hosts, extra: &str) {
    let etc = here(h, ETC);
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(
        etc.join("slurm.conf"),
        // The seeds' nodes (128 CPUs, 1 TB, GPUs) are virtual here, each a namespace of
        // this machine: their agents' resources are not checked, as Slurm sites do.
        format!(
            "{}SlurmdParameters=config_overrides\n{extra}",
            seed("seed-slurm.conf")
        ),
    )
    .unwrap();
    std::fs::write(etc.join("gres.conf"), seed("seed-gres.conf")).unwrap();
    let bin = here(h, BIN);
    std::fs::create_dir_all(&bin).unwrap();
    for name in [
        "slurmctld",
        "slurmd",
        "sbatch",
        "srun",
        "squeue",
        "sinfo",
        "sacct",
        "scontrol",
        "scancel",
        "salloc",
    ] {
        // As the README installs them: the daemons are `sluice`, the commands
        // `sluice-commands` (and the agents start `sluice-stepd` beside `sluice`).
        let binary = match name {
            "slurmctld" | "slurmd" => env!("CARGO_BIN_EXE_sluice"),
            _ => env!("CARGO_BIN_EXE_sluice-commands"),
        };
        std::os::unix::fs::symlink(binary, bin.join(name)).unwrap();
    }
    let work = here(h, WORK);
    std::fs::create_dir_all(&work).unwrap();
    nix::unistd::chown(
        &work,
        Some(nix::unistd::Uid::from_raw(65534)),
        Some(nix::unistd::Gid::from_raw(65534)),
    )
    .unwrap();
}

/// A command of the lab, run on `host` as root with `SLURM_CONF` set.
pub fn as_root(h: &Hosts, host: &str, cmd: &str, args: &[&str]) -> Output {
    let conf = format!("SLURM_CONF={ETC}/slurm.conf");
    let exe = format!("{BIN}/{cmd}");
    // Root's home is this machine's: no cluster of its own (`sluice up`) may answer.
    let mut all = vec![
        "env",
        "XDG_STATE_HOME=/nonexistent",
        conf.as_str(),
        exe.as_str(),
    ];
    all.extend(args);
    h.run(host, &all)
}

/// Waits up to `limit` for `check` to give Some.
pub fn wait_for<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Stops the lab's daemons as an operator would (SIGTERM, then waiting for them), when
/// dropped, after a panic too: agents that stop remove the cgroups they made on this
/// machine, which a teardown's SIGKILL would leave behind.
pub struct Daemons<'a>(pub &'a Hosts);

impl Drop for Daemons<'_> {
    fn drop(&mut self) {
        for node in self.0.names().into_iter().filter(|n| n.starts_with("node")) {
            stop_daemon(self.0, node, "/var/run/slurmd.pid");
        }
        stop_daemon(self.0, "head01", "/var/run/slurmctld.pid");
    }
}

/// Stops the daemon whose pid file on `host` is `pid_file` (SIGTERM), waiting up to ten
/// seconds for it to end.
pub fn stop_daemon(h: &Hosts, host: &str, pid_file: &str) {
    let script = format!(
        "p=$(cat {pid_file} 2>/dev/null) || exit 0; kill -TERM $p; \
         for _ in $(seq 100); do kill -0 $p 2>/dev/null || exit 0; sleep 0.1; done"
    );
    let _ = h.sh(host, &script);
}

/// The `PATH` the user's commands run with on the lab's hosts: the lab's commands and
/// the system's (root's own tools, under `/root`, are not the user's to run).
pub const USER_PATH: &str = "/home/bin:/usr/local/bin:/usr/bin:/bin";

/// Starts `slurmctld` on `head01` (waiting for its key) and `slurmd -N NODE` on each of
/// `nodes`' own hosts, and waits for those nodes to be idle.
pub fn start_cluster(h: &Hosts, nodes: &[&str]) {
    let conf = format!("{ETC}/slurm.conf");
    start_controller(h);
    for node in nodes {
        let o = h.run(node, &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", node]);
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    }
    wait_for(Duration::from_secs(60), "the nodes idle", || {
        let states = node_states(h);
        nodes
            .iter()
            .all(|n| states.iter().any(|(m, t)| m == n && t == "idle"))
            .then_some(())
    });
}

/// Starts `slurmctld` on `head01` (it detaches) and waits for the cluster key.
pub fn start_controller(h: &Hosts) {
    let o = h.run(
        "head01",
        &[
            &format!("{BIN}/slurmctld"),
            "-f",
            &format!("{ETC}/slurm.conf"),
        ],
    );
    assert_eq!(o.code, 0, "slurmctld: {}{}", o.stdout, o.stderr);
    let key = here(h, ETC).join("cluster.key");
    wait_for(Duration::from_secs(30), "the controller's key", || {
        key.exists().then_some(())
    });
}

/// Each node's state as `sinfo -N` on `head01` shows it (`idle`, `mix*`, `down*`, ...).
pub fn node_states(h: &Hosts) -> Vec<(String, String)> {
    let o = as_root(h, "head01", "sinfo", &["-h", "-N", "-o", "%N %t"]);
    let mut v: Vec<(String, String)> = o
        .stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Runs a bash script on `host` as the user, in their directory, with the lab's
/// commands on `PATH` and `SLURM_CONF` set.
pub fn user_sh(h: &Hosts, host: &str, script: &str) -> Output {
    let cmd =
        format!("cd {WORK} && export PATH={USER_PATH} SLURM_CONF={ETC}/slurm.conf && {script}");
    h.run_as(host, USER, &["bash", "-c", &cmd])
}

/// `sbatch --parsable ARGS` by the user on `host`: the job's id.
pub fn submit(h: &Hosts, host: &str, args: &str) -> u64 {
    let o = user_sh(h, host, &format!("sbatch --parsable {args}"));
    assert_eq!(o.code, 0, "sbatch {args}: {}", o.stderr);
    o.stdout.trim().parse().expect("a job id")
}

/// The job's `State|ExitCode` as `sacct -X` on `head01` reports it.
pub fn job_state(h: &Hosts, job: u64) -> String {
    as_root(
        h,
        "head01",
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "State,ExitCode",
            "-j",
            &job.to_string(),
        ],
    )
    .stdout
    .trim()
    .to_string()
}

/// Waits up to `limit` for `job` to end; its `State|ExitCode`.
pub fn job_ended(h: &Hosts, job: u64, limit: Duration) -> String {
    wait_for(limit, &format!("job {job}'s end"), || {
        let s = job_state(h, job);
        (!s.is_empty() && !s.starts_with("PENDING") && !s.starts_with("RUNNING")).then_some(s)
    })
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_users_job_from_node01_runs_on_two_other_hosts_and_a_wrong_key_is_refused() {
    let Some(h) = Hosts::up_or_skip(
        "a_users_job_from_node01_runs_on_two_other_hosts",
        &["head01", "node[01-04]"],
    ) else {
        return;
    };
    lay_out(&h, "");
    let daemons = Daemons(&h);
    let conf = format!("{ETC}/slurm.conf");
    let ctld_log = h.spool("head01").join("slurmctld/slurmctld.log");

    // The controller detaches as Slurm's does; it makes the cluster key, private.
    let o = h.run("head01", &[&format!("{BIN}/slurmctld"), "-f", &conf]);
    assert_eq!(o.code, 0, "slurmctld: {}{}", o.stdout, o.stderr);
    let key = here(&h, ETC).join("cluster.key");
    wait_for(Duration::from_secs(30), "the controller's key", || {
        key.exists().then_some(())
    });
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&key).unwrap();
        assert_eq!((meta.mode() & 0o777, meta.uid()), (0o600, 0));
    }
    // One agent on each node's own host, named as Slurm's multiple-slurmd names them.
    for node in ["node01", "node02", "node03", "node04"] {
        let o = h.run(
            node,
            &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", node, "-v"],
        );
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    }
    wait_for(Duration::from_secs(60), "four idle nodes", || {
        let o = as_root(&h, "head01", "sinfo", &["-h", "-o", "%D %t"]);
        let idle: u32 = o
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, t)| *t == "idle")
            .filter_map(|(d, _)| d.parse::<u32>().ok())
            .sum();
        (idle == 4).then_some(())
    });

    // The user cannot read the key, yet submits from node01 as themselves: node01's
    // agent vouches for them.
    let o = h.run_as("node01", USER, &["cat", &format!("{ETC}/cluster.key")]);
    assert_ne!(o.code, 0, "the user read the cluster key");
    let submit = format!(
        "cd {WORK} && export PATH={BIN}:$PATH SLURM_CONF={conf} && sbatch --parsable -p train -N2 -w node02,node03 \
         -o {WORK}/job-%j.out --wrap 'hostname; id; srun -l hostname | sort'"
    );
    let o = h.run_as("node01", USER, &["bash", "-c", &submit]);
    assert_eq!(o.code, 0, "sbatch on node01: {}", o.stderr);
    let job: u64 = o.stdout.trim().parse().expect("a job id");
    let state = wait_for(Duration::from_secs(60), "the job's end", || {
        let o = as_root(
            &h,
            "head01",
            "sacct",
            &["-n", "-X", "-P", "-o", "State", "-j", &job.to_string()],
        );
        let s = o.stdout.trim().to_string();
        (!matches!(s.as_str(), "" | "PENDING" | "RUNNING")).then_some(s)
    });
    let out = read(&here(&h, WORK).join(format!("job-{job}.out")));
    assert_eq!(
        state,
        "COMPLETED",
        "job output:\n{out}\n{}",
        read(&ctld_log)
    );
    // Its script ran on its first node as the user; its step's tasks on both hosts.
    assert_eq!(
        out,
        "node02\nuid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\n0: node02\n1: node03\n"
    );
    let o = as_root(
        &h,
        "node04",
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "User,NodeList",
            "-j",
            &job.to_string(),
        ],
    );
    assert_eq!(o.stdout, "nobody|node[02-03]\n", "{}", o.stderr);
    // srun as a job of its own, from one host to another, streaming back.
    let o = h.run_as(
        "node03",
        USER,
        &[
            "bash",
            "-c",
            &format!("cd {WORK} && SLURM_CONF={conf} {BIN}/srun -p interactive hostname"),
        ],
    );
    assert_eq!((o.stdout.as_str(), o.code), ("node04\n", 0), "{}", o.stderr);

    // A client with another key: refused, and the controller logs it with its address.
    let wrong = here(&h, WORK).join("wrong.key");
    std::fs::write(&wrong, format!("{}\n", "ab".repeat(32))).unwrap();
    let o = h.run(
        "node03",
        &[
            "env",
            "XDG_STATE_HOME=/nonexistent",
            "SLUICE_CONTROLLER=head01:6817",
            &format!("SLUICE_KEY_FILE={WORK}/wrong.key"),
            &format!("{BIN}/squeue"),
        ],
    );
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "slurm_load_jobs error: Protocol authentication error (invalid credential signature)\n",
            1
        )
    );
    let node03 = h.address("node03").to_string();
    let log = wait_for(Duration::from_secs(10), "the refusal in the log", || {
        let log = read(&ctld_log);
        log.contains(&format!(
            "refused a request from {node03}: Protocol authentication error (invalid credential signature)"
        ))
        .then_some(log)
    });
    // Every agent registered over the network, each from its own host.
    for node in ["node01", "node02", "node03", "node04"] {
        assert!(
            log.contains(&format!("Node {node} now responding")),
            "{log}"
        );
    }

    // An agent with another key: node04's, restarted with one. The controller refuses
    // its registration and logs it; the agent logs the refusal; the node stays out of
    // service, not responding (`idle*`: no work goes to it, and it would go down after
    // SlurmdTimeout, 300 s, as Slurm's; a stopped agent no longer takes its node down
    // at once, since its jobs would run on).
    stop_daemon(&h, "node04", "/var/run/slurmd.pid");
    let etc_wrong = here(&h, "/home/etc-wrong");
    std::fs::create_dir_all(&etc_wrong).unwrap();
    std::fs::write(
        etc_wrong.join("slurm.conf"),
        format!(
            "{}\nAuthInfo=key={WORK}/wrong.key\n",
            seed("seed-slurm.conf")
        ),
    )
    .unwrap();
    std::fs::write(etc_wrong.join("gres.conf"), seed("seed-gres.conf")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let o = h.run(
        "node04",
        &[
            &format!("{BIN}/slurmd"),
            "-f",
            "/home/etc-wrong/slurm.conf",
            "-N",
            "node04",
        ],
    );
    assert_eq!(o.code, 0, "slurmd on node04: {}{}", o.stdout, o.stderr);
    let agent_log = h.spool("node04").join("slurmd/slurmd.log");
    wait_for(
        Duration::from_secs(20),
        "the agent's log of the refusal",
        || {
            read(&agent_log)
            .contains(
                "node04: the controller refused this agent's credential (is the cluster key the \
                 controller's?): Protocol authentication error (invalid credential signature)",
            )
            .then_some(())
        },
    );
    let node04 = h.address("node04").to_string();
    wait_for(
        Duration::from_secs(20),
        "the controller's log of it",
        || {
            read(&ctld_log)
                .contains(&format!(
                    "refused a request from {node04}: Protocol authentication error"
                ))
                .then_some(())
        },
    );
    // (Found once the controller has not heard from it for two heartbeats and pings
    // it: a few seconds after it stopped.)
    wait_for(
        Duration::from_secs(20),
        "node04 idle* (not responding)",
        || {
            let o = as_root(
                &h,
                "head01",
                "sinfo",
                &["-h", "-p", "interactive", "-o", "%N %t"],
            );
            (o.stdout == "node04 idle*\n").then_some(())
        },
    );
    drop(daemons);
    h.down().unwrap();
}
