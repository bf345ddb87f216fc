//! `auth/munge` with the real munged (Debian's `munge` package; CI installs it): a
//! credential names its maker's uid, is bound to its request, and is accepted once; one
//! made with another munge key is refused. Skipped, saying so, where munged is missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_proto::auth::{AuthError, Gate};

/// A munged of the test's own (its socket, key, log, pid and seed in `dir`), stopped on
/// drop.
struct Munged {
    dir: PathBuf,
}

impl Munged {
    /// None, after saying why, where munged is not installed.
    fn start(name: &str) -> Option<Munged> {
        let found = Command::new("munged").arg("--version").output().is_ok()
            && Command::new("unmunge").arg("--version").output().is_ok();
        if !found {
            eprintln!(
                "skipped: munge {name}: munged is not installed (Debian's munge package; CI \
                 installs it)"
            );
            return None;
        }
        let dir = std::env::temp_dir().join(format!("sluice-munge-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut key = vec![0u8; 1024];
        getrandom::fill(&mut key).unwrap();
        std::fs::write(dir.join("key"), &key).unwrap();
        std::fs::set_permissions(dir.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let m = Munged { dir };
        let arg = |k: &str, f: &str| format!("--{k}={}", m.dir.join(f).display());
        let o = Command::new("munged")
            .args([
                "-f".to_string(),
                arg("socket", "sock"),
                arg("key-file", "key"),
                arg("log-file", "log"),
                arg("pid-file", "pid"),
                arg("seed-file", "seed"),
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "munged: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let start = Instant::now();
        while !m.socket().exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "munged did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(m)
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }
}

impl Drop for Munged {
    fn drop(&mut self) {
        let _ = Command::new("munged")
            .arg(format!("--socket={}", self.socket().display()))
            .arg("--stop")
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn encode(socket: &Path, method: &str, path: &str, body: &[u8]) -> String {
    sluice_proto::munge::encode(socket, method, path, body).unwrap()
}

#[test]
fn a_munge_credential_names_its_maker_is_bound_to_its_request_and_is_used_once() {
    let Some(m) = Munged::start("once") else {
        return;
    };
    let gate = Gate::munge(m.socket(), now());
    let body = br#"{"name":"x"}"#;
    let cred = encode(&m.socket(), "POST", "/v1/jobs", body);
    assert!(cred.starts_with("MUNGE:"), "{cred}");
    let c = gate
        .admit(Some(&cred), "POST", "/v1/jobs", body, now())
        .unwrap();
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!((c.uid, c.gid), (uid, gid));
    assert!((c.time - now()).abs() < 60);
    // Once only.
    assert_eq!(
        gate.admit(Some(&cred), "POST", "/v1/jobs", body, now()),
        Err(AuthError::Replayed)
    );
    // Bound to its request.
    let cred = encode(&m.socket(), "POST", "/v1/jobs", body);
    assert_eq!(
        gate.admit(Some(&cred), "POST", "/v1/cancel", body, now()),
        Err(AuthError::BadSignature)
    );
    // Not a munge credential, or a broken one.
    assert_eq!(
        gate.precheck(Some("1:1:1:1:ab"), now()),
        Err(AuthError::Malformed)
    );
    assert!(matches!(
        gate.admit(Some("MUNGE:AAAA:"), "GET", "/v1/ping", b"", now()),
        Err(AuthError::Munge(_))
    ));

    // One made with another munge key: refused, in munge's words.
    let Some(other) = Munged::start("other") else {
        return;
    };
    let cred = encode(&other.socket(), "GET", "/v1/ping", b"");
    match gate.admit(Some(&cred), "GET", "/v1/ping", b"", now()) {
        Err(AuthError::Munge(why)) => assert!(why.contains("Invalid credential"), "{why}"),
        other => panic!("{other:?}"),
    }

    // Through the client, as the commands sign: munge runs, the credential goes along.
    let e = sluice_proto::Client::signed(
        "127.0.0.1:1",
        sluice_proto::Signer::Munge(m.dir.join("no-such-socket")),
    )
    .get::<serde_json::Value>("/v1/ping")
    .unwrap_err();
    assert!(
        matches!(e, sluice_proto::ClientError::Credential { .. }),
        "{e}"
    );
}
