//! `slurmctld` and `slurmd` with Slurm's flags, on this one host: the controller and two
//! agents with distinct names and ports (Slurm's multiple-slurmd), each detached, with
//! its own pid file, log file and spool directory from slurm.conf; orders and `srun`'s
//! tasks cross TCP signed with the cluster key. Runs as any user.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A free loopback port (bound and released).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A site in a directory of its own; its daemons are stopped (SIGTERM, by their pid
/// files) and the directory removed on drop.
pub(crate) struct Site {
    pub(crate) dir: PathBuf,
}

impl Site {
    pub(crate) fn new(name: &str) -> Site {
        let dir = std::env::temp_dir().join(format!("sluice-d-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        for n in [
            "slurmctld",
            "slurmd",
            "sbatch",
            "sinfo",
            "sacct",
            "srun",
            "squeue",
            "scontrol",
        ] {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_sluice"), dir.join("bin").join(n))
                .unwrap();
        }
        Site { dir }
    }

    pub(crate) fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// Runs `cmd` of this site with `SLURM_CONF` (and nothing else) saying where it is.
    pub(crate) fn run(&self, cmd: &str, args: &[&str]) -> (String, String, i32) {
        let o = Command::new(self.dir.join("bin").join(cmd))
            .args(args)
            .current_dir(&self.dir)
            .env("SLURM_CONF", self.conf())
            .env("XDG_STATE_HOME", self.dir.join("no-state"))
            .env_remove("SLUICE_STATE_DIR")
            .env_remove("SLUICE_CONTROLLER")
            .env_remove("SLURM_JOB_ID")
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code().unwrap_or(-1),
        )
    }

    pub(crate) fn wait_for(&self, what: &str, mut done: impl FnMut() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}; controller log:\n{}",
                read(&self.dir.join("log/slurmctld.log"))
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub(crate) fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

impl Drop for Site {
    fn drop(&mut self) {
        for pid_file in ["slurmd.n1.pid", "slurmd.n2.pid", "slurmctld.pid"] {
            let Some(pid) = std::fs::read_to_string(self.dir.join(pid_file))
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok())
            else {
                continue;
            };
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let start = Instant::now();
            while nix::sys::signal::kill(pid, None).is_ok()
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn slurmctld_and_two_slurmd_on_one_host_run_a_job_across_both_agents() {
    let site = Site::new("duo");
    let d = site.dir.display().to_string();
    let (ctld, p1, p2) = (free_port(), free_port(), free_port());
    std::fs::write(
        site.conf(),
        format!(
            "ClusterName=duo\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctld}\n\
             StateSaveLocation={d}/ctld\nSlurmdSpoolDir={d}/spool/%n\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.%n.log\n\
             AuthInfo=socket={d}/auth.sock\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={p1} CPUs=2 RealMemory=1000\n\
             NodeName=n2 NodeAddr=127.0.0.1 Port={p2} CPUs=2 RealMemory=1000\n\
             PartitionName=p Nodes=n[1-2] Default=YES MaxTime=10:00 State=UP\n"
        ),
    )
    .unwrap();
    let conf = site.conf().display().to_string();

    // Flags as Slurm's daemons take them, and their errors.
    assert_eq!(
        site.run("slurmctld", &["-V"]),
        ("slurm 22.05.8\n".to_string(), String::new(), 0)
    );
    let (_, err, code) = site.run("slurmd", &["-x"]);
    assert!(
        err.starts_with("slurmd: invalid option -- 'x'\nUsage: slurmd"),
        "{err}"
    );
    assert_eq!(code, 1);
    // An agent before the controller made the key: it says what to do.
    let (_, err, code) = site.run("slurmd", &["-f", &conf, "-N", "n1"]);
    assert!(
        err.starts_with(&format!(
            "slurmd: error: cannot read the cluster key {d}/cluster.key"
        )),
        "{err}"
    );
    assert_eq!(code, 1);

    // The controller detaches, makes the key and writes its pid file.
    assert_eq!(site.run("slurmctld", &["-f", &conf]).2, 0);
    site.wait_for("the controller's pid file", || {
        site.dir.join("slurmctld.pid").exists() && site.dir.join("ctld/ctld.sock").exists()
    });
    let (_, err, code) = site.run("slurmd", &["-f", &conf, "-N", "n9"]);
    assert_eq!(
        (err.as_str(), code),
        (
            format!(
                "slurmd: error: Unable to determine this slurmd's NodeName: n9 is not a node of \
                 {conf}\n"
            )
            .as_str(),
            1
        )
    );
    // Two agents on this host, by name.
    for n in ["n1", "n2"] {
        assert_eq!(site.run("slurmd", &["-f", &conf, "-N", n]).2, 0);
    }
    site.wait_for("two idle nodes", || {
        site.run("sinfo", &["-h", "-o", "%D %t"]).0 == "2 idle\n"
    });
    // `sinfo -n` shows only the nodes named (a host list), as Slurm's does.
    assert_eq!(
        site.run("sinfo", &["-h", "-n", "n[2-3]", "-o", "%N %t"]).0,
        "n2 idle\n"
    );
    let (_, err, code) = site.run("sinfo", &["-n", "n[2-"]);
    assert_eq!(
        (err.as_str(), code),
        ("sinfo: error: 'n[2-' invalid entry for --nodes\n", 1)
    );
    for (n, p) in [("n1", p1), ("n2", p2)] {
        let log = read(&site.dir.join(format!("log/slurmd.{n}.log")));
        assert!(
            log.contains(&format!(
                "{n}: listening on 0.0.0.0:{p} (requests signed with the cluster key)"
            )),
            "{log}"
        );
        assert!(site.dir.join(format!("spool/{n}/agents")).is_dir());
    }

    // A job over both agents; its step's tasks reach them over TCP.
    let (out, err, code) = site.run(
        "sbatch",
        &[
            "--parsable",
            "-N2",
            "-n2",
            "-o",
            &format!("{d}/job.out"),
            "--wrap",
            &format!("{d}/bin/srun -l printenv SLURMD_NODENAME | sort"),
        ],
    );
    assert_eq!((err.as_str(), code), ("", 0));
    let job = out.trim().to_string();
    site.wait_for("the job's end", || {
        let s = site
            .run("sacct", &["-n", "-X", "-P", "-o", "State", "-j", &job])
            .0;
        !matches!(s.trim(), "" | "PENDING" | "RUNNING")
    });
    assert_eq!(
        site.run(
            "sacct",
            &["-n", "-X", "-P", "-o", "State,NodeList", "-j", &job]
        )
        .0,
        "COMPLETED|n[1-2]\n"
    );
    assert_eq!(read(&site.dir.join("job.out")), "0: n1\n1: n2\n");
}

#[test]
fn a_backup_controller_is_refused_with_sqlite_saying_why() {
    let site = Site::new("backup-sqlite");
    let conf = format!(
        "ClusterName=c\nSlurmctldHost=elsewhere\nSlurmctldHost=localhost\n\
         StateSaveLocation={}\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n",
        site.dir.join("state").display()
    );
    std::fs::write(site.conf(), conf).unwrap();
    let (out, err, code) = site.run("slurmctld", &["-D"]);
    assert_eq!((out.as_str(), code), ("", 1), "{err}");
    assert!(
        err.contains(
            "is a backup controller (SlurmctldHost #2), which needs the state in PostgreSQL \
             (StorageType=postgresql in sluice.conf): controllers cannot share a SQLite file \
             safely"
        ),
        "{err}"
    );
    assert!(!site.dir.join("state/sluice.db").exists(), "nothing opened");
}

#[test]
fn slurmd_z_registers_a_node_the_controller_did_not_know_and_takes_work_over_tcp() {
    let site = Site::new("dynamic");
    let d = site.dir.display().to_string();
    let (ctld, p1, slurmd_port) = (free_port(), free_port(), free_port());
    std::fs::write(
        site.conf(),
        format!(
            "ClusterName=dyn\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={ctld}\n\
             SlurmdPort={slurmd_port}\n\
             StateSaveLocation={d}/ctld\nSlurmdSpoolDir={d}/spool/%n\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.%n.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.%n.log\n\
             AuthInfo=socket={d}/auth.sock\nSlurmdParameters=config_overrides\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={p1} CPUs=2 RealMemory=1000\n\
             PartitionName=p Nodes=ALL Default=YES MaxTime=10:00 State=UP\n"
        ),
    )
    .unwrap();
    let conf = site.conf().display().to_string();
    // `--conf` is for -Z, and may not name the node or its port (Slurm's words).
    let (_, err, code) = site.run("slurmd", &["-f", &conf, "-N", "n2", "--conf", "CPUs=1"]);
    assert_eq!(
        (err.as_str(), code),
        ("slurmd: error: --conf works with -Z only\n", 1)
    );
    let (_, err, code) = site.run(
        "slurmd",
        &["-f", &conf, "-N", "n2", "-Z", "--conf", "CPUs=1 Port=7"],
    );
    assert_eq!(
        (err.as_str(), code),
        ("slurmd: error: option 'Port=' not allowed in --conf\n", 1)
    );
    assert_eq!(site.run("slurmctld", &["-f", &conf]).2, 0);
    site.wait_for("the controller", || {
        site.dir.join("ctld/ctld.sock").exists()
    });
    assert_eq!(site.run("slurmd", &["-f", &conf, "-N", "n1"]).2, 0);
    // n2 is in no line of slurm.conf: its agent registers it, listening on SlurmdPort.
    let (_, err, code) = site.run(
        "slurmd",
        &[
            "-f",
            &conf,
            "-N",
            "n2",
            "-Z",
            "--conf",
            "CPUs=1 RealMemory=500",
        ],
    );
    assert_eq!((err.as_str(), code), ("", 0));
    site.wait_for("two idle nodes", || {
        site.run("sinfo", &["-h", "-N", "-o", "%N %c %m %t"]).0 == "n1 2 1000 idle\nn2 1 500 idle\n"
    });
    let show = site.run("scontrol", &["show", "node", "n2"]).0;
    assert!(
        show.contains("NodeAddr=127.0.0.1 NodeHostName=n2")
            && show.contains("State=IDLE+DYNAMIC_NORM"),
        "{show}"
    );
    // A job there: its order reaches the agent over TCP, where it registered from.
    let (out, err, code) = site.run(
        "sbatch",
        &[
            "--parsable",
            "-w",
            "n2",
            "-o",
            &format!("{d}/job.out"),
            "--wrap",
            "hostname",
        ],
    );
    assert_eq!((err.as_str(), code), ("", 0));
    let job = out.trim().to_string();
    site.wait_for("the job's end on n2", || {
        site.run(
            "sacct",
            &["-n", "-X", "-P", "-o", "State,NodeList", "-j", &job],
        )
        .0 == "COMPLETED|n2\n"
    });
}
