//! A throwaway PostgreSQL server for tests: `initdb` in a temporary directory, the
//! server on 127.0.0.1 at a free port (and its Unix socket in that directory),
//! password authentication (scram-sha-256) for the role `sluice`. As root it runs as
//! the `postgres` user (or `nobody`), since the server refuses root.
//!
//! [`shared`] starts one per test process, each test taking a database of its own
//! ([`PgServer::database`]); it is stopped and its directory removed when the process
//! exits (a watchdog waits for the end of its standard input). [`PgServer::start`]
//! starts one a test owns (to stop and start it again), torn down when dropped.
//!
//! Where no PostgreSQL is installed, [`shared`] and [`PgServer::start`] say so and
//! return `None` (the test skips), unless `SLUICE_REQUIRE_POSTGRES=1`, where they
//! panic (CI must not skip).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::PgTarget;

/// The role the tests connect as (the server's superuser).
pub const ROLE: &str = "sluice";
/// Its password.
pub const PASSWORD: &str = "sluice-test-pw";

/// A PostgreSQL server of a test's own.
pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_user: Option<(u32, u32)>,
    child: Mutex<Option<Child>>,
}

/// Where `initdb`, `postgres` and `pg_ctl` are: Debian's directories (the newest), or
/// the `PATH`.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("postgres").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(b) = found.pop() {
        return Some(b);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
    })
}

/// Whether the tests must fail, rather than skip, without PostgreSQL.
fn required() -> bool {
    std::env::var("SLUICE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// `None` and a line saying why `test` skips, or a panic under
/// `SLUICE_REQUIRE_POSTGRES=1`.
fn skip<T>(test: &str) -> Option<T> {
    assert!(
        !required(),
        "{test}: no PostgreSQL found (initdb in /usr/lib/postgresql/*/bin or PATH) and \
         SLUICE_REQUIRE_POSTGRES=1: install Debian's postgresql package"
    );
    eprintln!(
        "skipped {test}: no PostgreSQL found (install postgresql; SLUICE_REQUIRE_POSTGRES=1 \
         makes this a failure)"
    );
    None
}

/// The uid and gid of `name`, from /etc/passwd.
fn user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name) && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The server every test of this process shares, started at the first call; `None`
/// (with a line saying so) where PostgreSQL is not installed.
///
/// Panics: the server cannot be started, or it is missing under
/// `SLUICE_REQUIRE_POSTGRES=1`.
pub fn shared(test: &str) -> Option<&'static PgServer> {
    static SHARED: OnceLock<Option<(PgServer, Child)>> = OnceLock::new();
    let s = SHARED.get_or_init(|| {
        let server = PgServer::start_quiet()?;
        // The watchdog: when this process ends, its end of the pipe closes, and the
        // server is stopped and its directory removed.
        let pid = server
            .child
            .lock()
            .unwrap()
            .as_ref()
            .map(|c| c.id())
            .expect("started");
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "read _; kill -INT {pid}; while kill -0 {pid} 2>/dev/null; do sleep 0.1; done; \
                 rm -rf '{}'",
                server.dir.display()
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server's watchdog");
        Some((server, watchdog))
    });
    match s {
        Some((server, _)) => Some(server),
        None => skip(test),
    }
}

static COUNT: AtomicU32 = AtomicU32::new(0);

impl PgServer {
    /// Starts a server of its own; `None` (with a line saying so) where PostgreSQL is
    /// not installed.
    ///
    /// Panics: the server cannot be started, or it is missing under
    /// `SLUICE_REQUIRE_POSTGRES=1`.
    pub fn start(test: &str) -> Option<PgServer> {
        match PgServer::start_quiet() {
            Some(s) => Some(s),
            None => skip(test),
        }
    }

    fn start_quiet() -> Option<PgServer> {
        let bin = binaries()?;
        let dir = std::env::temp_dir().join(format!(
            "sluice-pg-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the server's directory");
        let as_user = if nix_is_root() {
            Some(
                user("postgres")
                    .or_else(|| user("nobody"))
                    .expect("a user to run PostgreSQL as"),
            )
        } else {
            None
        };
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).expect("the password file");
        if let Some((uid, gid)) = as_user {
            for p in [&dir, &pwfile] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown");
            }
        }
        let server = PgServer {
            dir,
            bin,
            port: free_port(),
            as_user,
            child: Mutex::new(None),
        };
        let out = server
            .command("initdb")
            .args([
                "-D",
                &server.data(),
                "-U",
                ROLE,
                "-A",
                "scram-sha-256",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-E", "UTF8", "--locale=C"])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.resume();
        Some(server)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// `program` of the server's binaries, run as the server's user.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut c = match self.as_user {
            Some((uid, gid)) => {
                let mut c = Command::new("setpriv");
                c.args([
                    &format!("--reuid={uid}"),
                    &format!("--regid={gid}"),
                    "--clear-groups",
                ])
                .arg(&path);
                c
            }
            None => Command::new(&path),
        };
        c.current_dir(&self.dir);
        c
    }

    /// The port it listens on, at 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of its Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// A `postgresql://` URL of database `db` (with the password).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgresql://{ROLE}:{PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// A new, empty database `name` (dropped first if it exists), as a target.
    pub fn database(&self, name: &str) -> PgTarget {
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .expect("connect to the test server");
        c.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
            .expect("drop a test database");
        c.batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .expect("create a test database");
        PgTarget::from_url(&self.url(name)).expect("a URL")
    }

    /// Stops the server (fast shutdown: connections are cut), keeping its data.
    pub fn pause(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }

    /// Starts the server (again) on its data and port, and waits until it answers.
    ///
    /// Panics: it does not answer within 60 s.
    pub fn resume(&self) {
        let mut slot = self.child.lock().unwrap();
        if slot.is_some() {
            return;
        }
        let log = std::fs::File::create(self.dir.join("server.log")).expect("the log");
        if let Some((uid, gid)) = self.as_user {
            let _ = std::os::unix::fs::chown(self.dir.join("server.log"), Some(uid), Some(gid));
        }
        let child = self
            .command("postgres")
            .args(["-D", &self.data(), "-p", &self.port.to_string()])
            .args(["-k", &self.dir.display().to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=300",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start postgres");
        *slot = Some(child);
        drop(slot);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if postgres::Client::connect(&self.url("postgres"), postgres::NoTls).is_ok() {
                return;
            }
            if let Some(c) = self.child.lock().unwrap().as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!(
                        "postgres exited ({status}): {}",
                        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
                    );
                }
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not answer in 60 s: {}",
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.pause();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn nix_is_root() -> bool {
    // The effective uid, without a dependency: /proc/self/status's `Uid:` line.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
