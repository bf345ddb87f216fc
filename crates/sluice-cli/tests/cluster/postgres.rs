//! The controller's state on PostgreSQL (`StorageType=postgresql` in sluice.conf), on
//! a real server the test starts ([`sluice_store::pg_server`]): jobs submitted are
//! found after a controller crash; a site's SQLite history moved across with
//! `sluice db migrate` reads the same in `sacct`; an unreachable server stops the
//! controller at start with a message naming it; two clusters share one database,
//! each controller seeing its own jobs, `sacct -M`/`-L` the others'.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sluice_store::pg_server::{self, PgServer};

use crate::harness::Cluster;

const CONF: &str = "ClusterName=pg
SlurmctldHost=localhost
NodeName=n1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=n1 Default=YES State=UP
";

/// A sluice.conf for database `db` of `server`, its password in a file only the
/// controller may read (in `dir`).
fn site_conf(server: &PgServer, db: &str, dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let pass = dir.join("dbpass");
    std::fs::write(&pass, format!("{}\n", pg_server::PASSWORD)).unwrap();
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
    format!(
        "StorageType=postgresql\nStorageHost=127.0.0.1\nStoragePort={}\nStorageUser={}\n\
         StorageLoc={db}\nStoragePassFile={}\n",
        server.port(),
        pg_server::ROLE,
        pass.display()
    )
}

/// Every job's accounting, as `sacct` prints it (all users, since long ago).
fn sacct(c: &Cluster) -> String {
    let o = c.run(
        "sacct",
        &[
            "-a",
            "-P",
            "-S",
            "2020-01-01T00:00:00",
            "-o",
            "JobID,JobName,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,AllocCPUS,NodeList",
        ],
    );
    assert_eq!(o.code, 0, "{o:?}");
    o.stdout
}

#[test]
fn jobs_live_in_postgresql_and_survive_a_controller_crash() {
    let Some(server) = pg_server::shared("cluster postgres") else {
        return;
    };
    server.database("cluster_pg");
    let secrets = std::env::temp_dir().join(format!("sluice-pgpass-{}", std::process::id()));
    let site = site_conf(server, "cluster_pg", &secrets);
    let mut c = Cluster::start_with_files("pg", CONF, &["n1"], &[("sluice.conf", &site)]);
    assert!(
        !c.dir.join("state/sluice.db").exists(),
        "no SQLite file: the state is in PostgreSQL"
    );
    let ids: Vec<u64> = (0..5)
        .map(|i| c.sbatch(&["-J", &format!("pg{i}"), "--wrap", "true"]))
        .collect();
    c.wait_for("the jobs to complete", || {
        ids.iter().all(|&j| c.state(j) == "COMPLETED")
    });
    let before = sacct(&c);
    assert_eq!(before.matches("|COMPLETED|").count(), 10, "{before}");
    c.crash_and_restart_controller();
    c.wait_for("the controller to answer again", || {
        c.run("squeue", &[]).code == 0
    });
    assert_eq!(sacct(&c), before);
    let next = c.sbatch(&["--wrap", "true"]);
    assert_eq!(next, ids[4] + 1, "ids go on from PostgreSQL's next id");
    // The rows are PostgreSQL's.
    let mut db = postgres::Client::connect(&server.url("cluster_pg"), postgres::NoTls).unwrap();
    let n: i64 = db
        .query_one("SELECT COUNT(*) FROM cluster_pg.jobs", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 6);
    let _ = std::fs::remove_dir_all(&secrets);
}

#[test]
fn a_sqlite_history_moved_to_postgresql_reads_the_same_in_sacct() {
    let Some(server) = pg_server::shared("cluster migrate") else {
        return;
    };
    let target = server.database("cluster_migrated");
    drop(target);
    let mut c = Cluster::start_with("pgmove", CONF, &["n1"]);
    let mut ids: Vec<u64> = (0..4)
        .map(|i| c.sbatch(&["-J", &format!("hist{i}"), "--wrap", "true"]))
        .collect();
    ids.push(c.sbatch(&["-J", "failing", "--wrap", "exit 3"]));
    c.wait_for("the history to end", || {
        ids.iter()
            .all(|&j| matches!(c.state(j).as_str(), "COMPLETED" | "FAILED"))
    });
    let before = sacct(&c);
    assert!(before.contains("|FAILED|3:0|"), "{before}");
    c.crash_controller();
    // Move it, then point sluice.conf at PostgreSQL.
    let secrets = c.dir.join("secrets");
    let site = site_conf(server, "cluster_migrated", &secrets);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["db", "migrate", "--from"])
        .arg(c.dir.join("state/sluice.db"))
        .args([
            "--to",
            &format!(
                "postgresql://{}@127.0.0.1:{}/cluster_migrated",
                pg_server::ROLE,
                server.port()
            ),
            "--pass-file",
        ])
        .arg(secrets.join("dbpass"))
        .args(["--cluster", "pg"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let sums: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("jobs checksum"))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(sums.len(), 2, "{out}");
    assert_eq!(sums[0], sums[1], "{out}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["jobs", "5", "5"]),
        "{out}"
    );
    std::fs::write(c.dir.join("sluice.conf"), site).unwrap();
    // The SQLite file (and its write-ahead log, as the crash left it) goes away: what
    // sacct reads next is PostgreSQL's.
    for f in ["sluice.db", "sluice.db-wal", "sluice.db-shm"] {
        let _ = std::fs::rename(c.dir.join("state").join(f), secrets.join(f));
    }
    c.restart_controller();
    c.wait_for("the controller on PostgreSQL", || {
        c.run("squeue", &[]).code == 0
    });
    assert_eq!(sacct(&c), before);
    assert!(!c.dir.join("state/sluice.db").exists());
    // A second migration into it is refused.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["db", "migrate", "--from"])
        .arg(secrets.join("sluice.db"))
        .args(["--to", &server.url("cluster_migrated"), "--cluster", "pg"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--replace"), "{err}");
}

#[test]
fn an_unreachable_server_stops_the_controller_at_start_naming_it() {
    let dir = std::env::temp_dir().join(format!("sluice-t-{}-pgdown", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(dir.join("slurm.conf"), CONF).unwrap();
    std::fs::write(
        dir.join("sluice.conf"),
        format!("StorageType=postgresql\nStorageHost=127.0.0.1\nStoragePort={port}\nStorageUser=slurm\nStorageLoc=acct\n"),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["up", "--config"])
        .arg(dir.join("slurm.conf"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "Unable to contact the state database (PostgreSQL slurm@127.0.0.1:{port}/acct)"
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn submissions_fail_while_postgresql_is_down_and_succeed_again_when_it_returns() {
    let Some(server) = PgServer::start("cluster postgres outage") else {
        return;
    };
    server.database("outage");
    let secrets = std::env::temp_dir().join(format!("sluice-pgout-{}", std::process::id()));
    let site = site_conf(&server, "outage", &secrets);
    let c = Cluster::start_files("pgdown", CONF, &[("sluice.conf", &site)]);
    let first = c.sbatch(&["--wrap", "true"]);
    server.pause();
    let o = c.run("sbatch", &["--wrap", "true"]);
    assert_ne!(o.code, 0, "{o:?}");
    assert!(
        o.stderr
            .contains("Batch job submission failed: Unable to contact slurm controller"),
        "{o:?}"
    );
    server.resume();
    // The controller reconnects by itself; the refused job was never acknowledged
    // and never appears.
    let next = c.sbatch(&["--wrap", "true"]);
    c.wait_for("the jobs to complete", || {
        c.state(first) == "COMPLETED" && c.state(next) == "COMPLETED"
    });
    let mut db = postgres::Client::connect(&server.url("outage"), postgres::NoTls).unwrap();
    let ids: Vec<i64> = db
        .query("SELECT id FROM cluster_pg.jobs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0], first as i64);
    assert_eq!(ids[1], next as i64);
    let _ = std::fs::remove_dir_all(&secrets);
}

/// `sacct`'s allocation lines of every user's jobs, `Cluster|JobID|JobName|State`,
/// with `extra` options.
fn jobs_of(c: &Cluster, extra: &[&str]) -> String {
    let mut args = vec![
        "-a",
        "-X",
        "-P",
        "-n",
        "-S",
        "2020-01-01T00:00:00",
        "-o",
        "Cluster,JobID,JobName,State",
    ];
    args.extend(extra);
    let o = c.run("sacct", &args);
    assert_eq!(o.code, 0, "{o:?}");
    o.stdout
}

#[test]
fn two_clusters_share_one_database_each_controller_seeing_its_own_jobs() {
    let Some(server) = pg_server::shared("cluster two clusters") else {
        return;
    };
    server.database("two_clusters");
    let secrets = std::env::temp_dir().join(format!("sluice-pgtwo-{}", std::process::id()));
    let site = site_conf(server, "two_clusters", &secrets);
    let conf = |name: &str| CONF.replace("ClusterName=pg", &format!("ClusterName={name}"));
    let files = [("sluice.conf", site.as_str())];
    // Alpha serves the REST API too (slurmdb's endpoints take a cluster).
    let key = crate::rest::write_key("twoclusters", 0o600);
    let addr = format!("127.0.0.1:{}", crate::rest::free_port());
    let alpha = Cluster::start_full(
        "alpha",
        &format!(
            "{}AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={},max_token_lifespan=3600\n",
            conf("alpha"),
            key.display()
        ),
        &["n1"],
        &["--listen", &addr],
        &files,
    );
    let beta = Cluster::start_with_files("beta", &conf("beta"), &["n1"], &files);
    let a1 = alpha.sbatch(&["-J", "from-alpha", "--wrap", "true"]);
    let b1 = beta.sbatch(&["-J", "from-beta", "--wrap", "true"]);
    let b2 = beta.sbatch(&["-J", "from-beta-too", "--wrap", "true"]);
    assert_eq!(a1, b1, "job ids are per cluster, as in Slurm");
    alpha.wait_for("alpha's job", || alpha.state(a1) == "COMPLETED");
    beta.wait_for("beta's jobs", || {
        beta.state(b1) == "COMPLETED" && beta.state(b2) == "COMPLETED"
    });
    let alpha_rows = format!("alpha|{a1}|from-alpha|COMPLETED\n");
    let beta_rows = format!("beta|{b1}|from-beta|COMPLETED\nbeta|{b2}|from-beta-too|COMPLETED\n");
    // Each controller sees its own jobs by default.
    assert_eq!(jobs_of(&alpha, &[]), alpha_rows);
    assert_eq!(jobs_of(&beta, &[]), beta_rows);
    // -M names others, -M all and -L list every cluster by name.
    assert_eq!(jobs_of(&alpha, &["-M", "beta"]), beta_rows);
    assert_eq!(
        jobs_of(&beta, &["-M", "alpha,beta"]),
        format!("{alpha_rows}{beta_rows}")
    );
    assert_eq!(jobs_of(&alpha, &["-L"]), format!("{alpha_rows}{beta_rows}"));
    assert_eq!(
        jobs_of(&beta, &["-M", "all"]),
        format!("{alpha_rows}{beta_rows}")
    );
    // An unknown cluster has no jobs (Slurm: the header alone, exit 0).
    assert_eq!(jobs_of(&alpha, &["-M", "gamma"]), "");
    // -j names a job of the cluster asked.
    assert_eq!(
        jobs_of(&alpha, &["-M", "beta", "-j", &b2.to_string()]),
        format!("beta|{b2}|from-beta-too|COMPLETED\n")
    );
    let o = alpha.run(
        "sacctmgr",
        &["-n", "-P", "show", "cluster", "format=cluster"],
    );
    assert_eq!(o.stdout, "alpha\nbeta\n", "{o:?}");
    // REST: slurmdb's jobs of the clusters named, else of every cluster; the clusters.
    let o = alpha.run_as(0, "scontrol", &["token"]);
    let token = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap()
        .to_string();
    let user = "root";
    let rest = |path: &str| {
        let (status, v) =
            crate::rest::http(&addr, "GET", path, &crate::rest::as_user(user, &token), "");
        assert_eq!(status, 200, "{path}: {v}");
        v
    };
    let jobs = |v: serde_json::Value| -> Vec<String> {
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                format!(
                    "{}|{}|{}",
                    j["cluster"].as_str().unwrap(),
                    j["job_id"],
                    j["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        jobs(rest("/slurmdb/v0.0.44/jobs?cluster=beta")),
        [
            format!("beta|{b1}|from-beta"),
            format!("beta|{b2}|from-beta-too")
        ]
    );
    assert_eq!(
        jobs(rest("/slurmdb/v0.0.44/jobs")),
        [
            format!("alpha|{a1}|from-alpha"),
            format!("beta|{b1}|from-beta"),
            format!("beta|{b2}|from-beta-too")
        ]
    );
    let names: Vec<String> = rest("/slurmdb/v0.0.44/clusters")["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    // A second live controller named beta, with a configuration of its own, is
    // refused at start, saying what to do.
    let dir = secrets.join("second-beta");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("slurm.conf"), conf("beta")).unwrap();
    std::fs::write(dir.join("sluice.conf"), &site).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["up", "--config"])
        .arg(dir.join("slurm.conf"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("cluster beta is already served by a live controller on host"),
        "{err}"
    );
    assert!(
        err.contains("give this cluster another ClusterName"),
        "{err}"
    );
    // Beta goes on unharmed.
    let b3 = beta.sbatch(&["--wrap", "true"]);
    assert_eq!(b3, b2 + 1);
    let _ = std::fs::remove_dir_all(&secrets);
}
