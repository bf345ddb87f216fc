//! `slurmctld` with a backup controller listed (`SlurmctldHost` twice), its state in
//! PostgreSQL, on this one host: the backup's host (`backup01`) does not run here, so
//! this controller takes the lease and stays the active one. A restart of the
//! PostgreSQL server under it changes nothing that users see (a submission made while
//! the server is down waits for it, no id is lost, the controller stays active with
//! its epoch); a newer fencing epoch makes it step down, and started again as a
//! standby (then active again, alone) it keeps its process and pid file. A command
//! on this host, which has no agent, while its controller is gone (its socket left
//! behind) waits for an active controller rather than failing at once.

use std::os::unix::fs::PermissionsExt;

use sluice_store::pg_server::{self, PgServer};

use crate::daemons::{free_port, read, Site};

/// Lays out `site`: slurm.conf with a backup controller on `backup01` (nothing
/// listens at its address), and sluice.conf keeping the state in database `db` of
/// `server`. Returns the slurm.conf path.
fn lay_out(site: &Site, server: &PgServer, db: &str) -> String {
    let d = site.dir.display().to_string();
    std::fs::write(
        site.conf(),
        format!(
            "ClusterName=ha\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldHost=backup01(127.0.0.9)\n\
             SlurmctldPort={}\nStateSaveLocation={d}/ctld\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\nAuthInfo=socket={d}/auth.sock\n\
             NodeName=n1 NodeAddr=127.0.0.1 Port={} CPUs=2 RealMemory=1000\n\
             PartitionName=p Nodes=n1 Default=YES MaxTime=10:00 State=UP\n",
            free_port(),
            free_port()
        ),
    )
    .unwrap();
    let pass = site.dir.join("dbpass");
    std::fs::write(&pass, format!("{}\n", pg_server::PASSWORD)).unwrap();
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(
        site.dir.join("sluice.conf"),
        format!(
            "StorageType=postgresql\nStorageHost=127.0.0.1\nStoragePort={}\nStorageUser={}\n\
             StorageLoc={db}\nStoragePassFile={}\n",
            server.port(),
            pg_server::ROLE,
            pass.display()
        ),
    )
    .unwrap();
    site.conf().display().to_string()
}

fn log(site: &Site) -> String {
    read(&site.dir.join("log/slurmctld.log"))
}

/// The pid in the controller's pid file.
fn pid(site: &Site) -> i32 {
    read(&site.dir.join("slurmctld.pid"))
        .trim()
        .parse()
        .expect("a pid")
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Starts the controller (it detaches) and waits until it is the active one.
fn start_active(site: &Site, conf: &str) {
    let (out, err, code) = site.run("slurmctld", &["-f", conf]);
    assert_eq!(code, 0, "{out}{err}");
    site.wait_for("the controller to take over", || {
        log(site).contains("taking over as the active controller")
            && site.dir.join("slurmctld.pid").exists()
            && site.dir.join("ctld/ctld.sock").exists()
    });
}

fn submit(site: &Site) -> u64 {
    let (out, err, code) = site.run("sbatch", &["--parsable", "--wrap", "true"]);
    assert_eq!(code, 0, "{out}{err}\n{}", log(site));
    out.trim().parse().expect("an id")
}

/// The ids of the jobs in the controller's queue, in order.
fn queued(site: &Site) -> Vec<u64> {
    let (out, err, code) = site.run("squeue", &["-h", "-o", "%i"]);
    assert_eq!(code, 0, "{err}");
    let mut ids: Vec<u64> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    ids.sort();
    ids
}

/// The ids of the cluster's job rows in database `db` of `server`.
fn rows(server: &PgServer, db: &str) -> Vec<u64> {
    let mut c = postgres::Client::connect(&server.url(db), postgres::NoTls).unwrap();
    c.query("SELECT id FROM cluster_ha.jobs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, i64>(0) as u64)
        .collect()
}

#[test]
fn a_postgresql_restart_leaves_the_active_controller_active_and_no_job_lost() {
    let Some(server) = PgServer::start("backup controller, PostgreSQL restarted") else {
        return;
    };
    server.database("ha_restart");
    let site = Site::new("ha-restart");
    let conf = lay_out(&site, &server, "ha_restart");
    start_active(&site, &conf);
    let pid = pid(&site);
    let before: Vec<u64> = (0..3).map(|_| submit(&site)).collect();

    // The database restarts, a submission arriving while it is down: it waits for the
    // server and is acknowledged once committed.
    let (during, after) = std::thread::scope(|s| {
        server.pause();
        let during = s.spawn(|| submit(&site));
        std::thread::sleep(std::time::Duration::from_secs(2));
        assert!(!during.is_finished(), "answered while the database is down");
        server.resume();
        let during = during.join().unwrap();
        (during, submit(&site))
    });
    let ids: Vec<u64> = before.iter().copied().chain([during, after]).collect();
    let first = before[0];
    assert_eq!(ids, (first..first + 5).collect::<Vec<_>>(), "no id lost");
    assert_eq!(queued(&site), ids);
    assert_eq!(rows(&server, "ha_restart"), ids);
    // Still the active controller, the same process, with the lease taken again.
    site.wait_for("the lease taken again", || {
        log(&site).contains("took the controller lease again")
    });
    let l = log(&site);
    assert!(!l.contains("stepping down"), "{l}");
    assert_eq!(l.matches("taking over as the active controller").count(), 1);
    assert!(alive(pid));
    // (backup01's address is this host's loopback too: only the primary's line says.)
    let (out, _, _) = site.run("scontrol", &["ping"]);
    assert!(
        out.starts_with("Slurmctld(primary) at localhost is UP\n"),
        "{out}"
    );
}

#[test]
fn a_controller_stepping_down_without_d_keeps_its_pid() {
    let Some(server) = pg_server::shared("backup controller, stepping down") else {
        return;
    };
    server.database("ha_step_down");
    let site = Site::new("ha-step-down");
    let conf = lay_out(&site, server, "ha_step_down");
    start_active(&site, &conf);
    let pid = pid(&site);
    let first = submit(&site);
    // Another controller took over (as far as the database says): this one steps
    // down, stands by, and (the lease free, nobody else here) takes over again.
    let mut db = postgres::Client::connect(&server.url("ha_step_down"), postgres::NoTls).unwrap();
    db.execute(
        "UPDATE cluster_ha.meta SET value = value + 1 WHERE key = 'epoch:ha'",
        &[],
    )
    .unwrap();
    site.wait_for("the controller to step down and take over again", || {
        log(&site)
            .matches("taking over as the active controller")
            .count()
            == 2
    });
    let l = log(&site);
    assert!(
        l.contains("stepping down: the fencing epoch is 2: another controller took over"),
        "{l}"
    );
    assert!(l.contains("(epoch 3)"), "{l}");
    assert_eq!(
        read(&site.dir.join("slurmctld.pid")).trim(),
        pid.to_string(),
        "the pid file names the same process"
    );
    assert!(alive(pid), "{l}");
    site.wait_for("the controller's socket", || {
        site.run("squeue", &["-h"]).2 == 0
    });
    assert_eq!(submit(&site), first + 1);
}

#[test]
fn a_command_beside_a_killed_controller_waits_for_an_active_one() {
    let Some(server) = pg_server::shared("backup controller, killed") else {
        return;
    };
    server.database("ha_killed");
    let site = Site::new("ha-killed");
    let conf = lay_out(&site, server, "ha_killed");
    start_active(&site, &conf);
    let first = submit(&site);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid(&site)),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    site.wait_for("the controller's end", || !alive(pid(&site)));
    assert!(
        site.dir.join("ctld/ctld.sock").exists(),
        "the killed controller's socket is left"
    );
    // No agent here, and the local controller's socket answers nothing: the command
    // asks the controllers in turn (SlurmctldTimeout and more) until one is active.
    let next = std::thread::scope(|s| {
        let waiting = s.spawn(|| submit(&site));
        std::thread::sleep(std::time::Duration::from_secs(2));
        assert!(
            !waiting.is_finished(),
            "gave up while no controller is active"
        );
        let (out, err, code) = site.run("slurmctld", &["-f", &conf]);
        assert_eq!(code, 0, "{out}{err}");
        waiting.join().unwrap()
    });
    assert_eq!(next, first + 1);
    assert_eq!(queued(&site), [first, next]);
}
