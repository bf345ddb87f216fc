//! The seeds' lab under `AuthType=auth/munge`: every host runs the real munged (Debian's
//! `munge` package; CI installs it) with one munge key, and Sluice's daemons and
//! commands use its credentials instead of a cluster key. Skipped, saying so, where
//! munged is not installed or the test is not root.

use std::process::Command;
use std::time::Duration;

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, lay_out, read, seed, wait_for, Daemons, BIN, ETC, USER, WORK,
};

/// Starts munged on `host` with the key at `key` (a path on the hosts), listening on
/// `socket`.
fn munged(h: &Hosts, host: &str, key: &str, socket: &str) {
    let script = format!(
        "mkdir -p /run/munge /var/lib/munge /var/log/munge && \
         munged -f --socket={socket} --key-file={key} --log-file=/var/log/munge/munged.log \
         --pid-file={socket}.pid --seed-file=/var/lib/munge/munged.seed"
    );
    let o = h.sh(host, &script);
    assert_eq!(o.code, 0, "munged on {host}: {}", o.stderr);
}

fn munge_key(path: &std::path::Path) {
    let mut key = vec![0u8; 1024];
    getrandom_fill(&mut key);
    std::fs::write(path, &key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn getrandom_fill(buf: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(buf)
        .unwrap();
}

#[test]
fn under_auth_munge_a_users_job_runs_across_hosts_and_another_munge_key_is_refused() {
    let name = "under_auth_munge_a_users_job_runs_across_hosts";
    if Command::new("munged").arg("--version").output().is_err() {
        eprintln!(
            "skipped: {name}: munged is not installed (Debian's munge package; CI installs it)"
        );
        return;
    }
    let Some(h) = Hosts::up_or_skip(name, &["head01", "node[01-02]"]) else {
        return;
    };
    lay_out(&h, "AuthType=auth/munge\n");
    let daemons = Daemons(&h);
    let conf = format!("{ETC}/slurm.conf");
    munge_key(&here(&h, ETC).join("munge.key"));
    for host in ["head01", "node01", "node02"] {
        munged(
            &h,
            host,
            &format!("{ETC}/munge.key"),
            "/run/munge/munge.socket.2",
        );
    }
    let o = h.run("head01", &[&format!("{BIN}/slurmctld"), "-f", &conf]);
    assert_eq!(o.code, 0, "slurmctld: {}{}", o.stdout, o.stderr);
    for node in ["node01", "node02"] {
        let o = h.run(node, &[&format!("{BIN}/slurmd"), "-f", &conf, "-N", node]);
        assert_eq!(o.code, 0, "slurmd on {node}: {}{}", o.stdout, o.stderr);
    }
    wait_for(Duration::from_secs(60), "two idle nodes", || {
        let o = as_root(&h, "head01", "sinfo", &["-h", "-o", "%D %t"]);
        let idle: u32 = o
            .stdout
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, t)| *t == "idle")
            .filter_map(|(d, _)| d.parse::<u32>().ok())
            .sum();
        (idle == 2).then_some(())
    });
    // No cluster key: munge's key is the only secret.
    assert!(!here(&h, ETC).join("cluster.key").exists());

    let submit = format!(
        "cd {WORK} && export PATH={BIN}:$PATH SLURM_CONF={conf} && sbatch --parsable -p train \
         -N2 -w node01,node02 -o {WORK}/munge-%j.out --wrap 'hostname; id -un; srun -l hostname | sort'"
    );
    let o = h.run_as("node02", USER, &["bash", "-c", &submit]);
    assert_eq!(o.code, 0, "sbatch on node02: {}", o.stderr);
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
    let out = read(&here(&h, WORK).join(format!("munge-{job}.out")));
    assert_eq!(state, "COMPLETED", "job output:\n{out}");
    assert_eq!(out, "node01\nnobody\n0: node01\n1: node02\n");
    let o = as_root(
        &h,
        "node01",
        "sacct",
        &["-n", "-X", "-P", "-o", "User", "-j", &job.to_string()],
    );
    assert_eq!(o.stdout, "nobody\n", "{}", o.stderr);

    // A host whose munged has another key: its credentials are refused.
    munge_key(&here(&h, WORK).join("other-munge.key"));
    munged(
        &h,
        "node01",
        &format!("{WORK}/other-munge.key"),
        "/run/munge/other.socket",
    );
    let other = here(&h, "/home/etc-other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("slurm.conf"),
        format!(
            "{}AuthType=auth/munge\nAuthInfo=socket=/run/munge/other.socket\n",
            seed("seed-slurm.conf")
        ),
    )
    .unwrap();
    let o = h.run_as(
        "node01",
        USER,
        &[
            "env",
            "SLURM_CONF=/home/etc-other/slurm.conf",
            &format!("{BIN}/squeue"),
        ],
    );
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "slurm_load_jobs error: Protocol authentication error (munge: Invalid credential)\n",
            1
        )
    );
    let ctld_log = h.spool("head01").join("slurmctld/slurmctld.log");
    let node01 = h.address("node01").to_string();
    wait_for(Duration::from_secs(10), "the refusal in the log", || {
        read(&ctld_log)
            .contains(&format!(
                "refused a request from {node01}: Protocol authentication error (munge: Invalid credential)"
            ))
            .then_some(())
    });
    drop(daemons);
    h.down().unwrap();
}
