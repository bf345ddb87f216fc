//! Signed requests between hosts: commands to the controller's TCP listener, the
//! controller and its agents to each other, `srun` to agents.
//!
//! On a Unix socket the caller's uid comes from the kernel (`SO_PEERCRED`). Over TCP
//! nothing vouches for it, so each request carries a credential signed with the
//! *cluster key* (a secret shared by the controller, the agents and whoever may act for
//! users, like MUNGE's key in Slurm): header [`AUTH_HEADER`] with
//! `uid:gid:time:nonce:signature`, where the signature is HMAC-SHA256 over the
//! credential fields, the method, the path and the SHA-256 of the body. A receiver
//! ([`Gate`]) accepts a credential at most [`MAX_SKEW`] seconds from its clock, made
//! after it started, and each `(time, nonce)` once ([`ReplayGuard`]), so a captured
//! request cannot be replayed or altered. Holding the key means being able to speak for
//! any uid: keep it readable only by root (or the cluster's owner), as MUNGE's.
//!
//! Users never hold the key. On every host the node agent *vouches* for local callers,
//! as `munged` does: a command sends it the method, path and body digest of the request
//! it is about to make over its local Unix socket ([`VOUCH_PATH`], [`VouchRequest`]);
//! the agent reads the caller's uid and gid from the socket and answers the credential
//! for them ([`vouch`]), which the command then sends over TCP. A credential is bound to
//! that one request and usable once.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The request header carrying the credential (lower case, as HTTP/1 compares it).
pub const AUTH_HEADER: &str = "x-sluice-auth";

/// Most seconds a credential's time may differ from the controller's clock.
pub const MAX_SKEW: i64 = 300;

/// Bytes of a cluster key.
pub const KEY_LEN: usize = 32;

/// Who a signed request speaks for, and when it was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Credential {
    /// The caller's uid.
    pub uid: u32,
    /// The caller's primary gid.
    pub gid: u32,
    /// When the request was signed, Unix seconds.
    pub time: i64,
    /// A random number, unique per request.
    pub nonce: u64,
}

/// Why a signed request was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// No credential header.
    #[error("request not signed")]
    Missing,
    /// The header is not `uid:gid:time:nonce:signature`.
    #[error("malformed credential")]
    Malformed,
    /// The signature does not match: wrong key, or the request was altered.
    #[error("invalid credential signature")]
    BadSignature,
    /// Signed more than [`MAX_SKEW`] seconds away from the controller's clock.
    #[error("credential expired or from the future")]
    Expired,
    /// This credential was used before.
    #[error("credential replayed")]
    Replayed,
    /// munged refused the credential (`auth/munge`), in its words.
    #[error("munge: {0}")]
    Munge(String),
}

/// A request body's SHA-256, what a credential is bound to.
pub fn body_digest(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

fn mac(key: &[u8], c: &Credential, method: &str, path: &str, digest: &[u8; 32]) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    let head = format!(
        "{}\n{}\n{}\n{}\n{method}\n{path}\n",
        c.uid, c.gid, c.time, c.nonce
    );
    m.update(head.as_bytes());
    m.update(digest);
    m
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The [`AUTH_HEADER`] value for a request `method path` with `body`, signed with `key`.
pub fn sign(key: &[u8], c: &Credential, method: &str, path: &str, body: &[u8]) -> String {
    sign_digest(key, c, method, path, &body_digest(body))
}

/// [`sign`] for a body known by its digest ([`body_digest`]).
pub fn sign_digest(
    key: &[u8],
    c: &Credential,
    method: &str,
    path: &str,
    digest: &[u8; 32],
) -> String {
    let sig = mac(key, c, method, path, digest).finalize().into_bytes();
    format!("{}:{}:{}:{}:{}", c.uid, c.gid, c.time, c.nonce, hex(&sig))
}

/// The time a credential says it was made (Unix seconds), read without checking it: to
/// turn away stale requests before reading their bodies.
///
/// Errors: [`AuthError::Malformed`].
pub fn credential_time(header: &str) -> Result<i64, AuthError> {
    header
        .trim()
        .split(':')
        .nth(2)
        .and_then(|t| t.parse().ok())
        .ok_or(AuthError::Malformed)
}

/// Checks a request's [`AUTH_HEADER`] value against `key` at time `now` (Unix
/// seconds); the credential when it holds. Does not check replays: see
/// [`ReplayGuard`].
///
/// Errors: [`AuthError::Malformed`], [`AuthError::BadSignature`] (compared in constant
/// time), [`AuthError::Expired`].
pub fn verify(
    key: &[u8],
    header: &str,
    method: &str,
    path: &str,
    body: &[u8],
    now: i64,
) -> Result<Credential, AuthError> {
    let parts: Vec<&str> = header.trim().split(':').collect();
    let [uid, gid, time, nonce, sig] = parts[..] else {
        return Err(AuthError::Malformed);
    };
    let c = Credential {
        uid: uid.parse().map_err(|_| AuthError::Malformed)?,
        gid: gid.parse().map_err(|_| AuthError::Malformed)?,
        time: time.parse().map_err(|_| AuthError::Malformed)?,
        nonce: nonce.parse().map_err(|_| AuthError::Malformed)?,
    };
    let sig = unhex(sig).ok_or(AuthError::Malformed)?;
    mac(key, &c, method, path, &body_digest(body))
        .verify_slice(&sig)
        .map_err(|_| AuthError::BadSignature)?;
    if (c.time - now).abs() > MAX_SKEW {
        return Err(AuthError::Expired);
    }
    Ok(c)
}

/// Remembers the credentials accepted in the last [`MAX_SKEW`] seconds (older ones are
/// refused as expired anyway), so that each is accepted once.
#[derive(Debug, Default)]
pub struct ReplayGuard {
    seen: BTreeSet<(i64, u64)>,
}

impl ReplayGuard {
    /// Records `c` at time `now`; [`AuthError::Replayed`] if it was seen before.
    pub fn check(&mut self, c: &Credential, now: i64) -> Result<(), AuthError> {
        let oldest = now - MAX_SKEW;
        while let Some(&first) = self.seen.first() {
            if first.0 >= oldest {
                break;
            }
            self.seen.pop_first();
        }
        if self.seen.insert((c.time, c.nonce)) {
            Ok(())
        } else {
            Err(AuthError::Replayed)
        }
    }
}

/// A receiver's side of signed requests: its key, the credentials it accepted (the
/// replay guard, its only state) and when it last logged a refusal for each peer. Used
/// by the controller's TCP listener and by every agent's.
#[derive(Debug)]
pub struct Gate {
    key: Vec<u8>,
    /// Under `auth/munge`: munged's socket, which checks credentials instead of `key`.
    munge: Option<std::path::PathBuf>,
    seen: Mutex<ReplayGuard>,
    /// When this receiver started (Unix seconds): credentials made before are refused,
    /// since the replay guard of an earlier run is gone.
    started: i64,
    /// Per peer, when a refusal of its requests was last logged.
    logged: Mutex<BTreeMap<String, i64>>,
}

/// Seconds between two log lines about refused requests of one peer.
pub const LOG_EVERY: i64 = 60;

impl Gate {
    /// A gate for `key`, for a receiver started at `started` (Unix seconds).
    pub fn new(key: Vec<u8>, started: i64) -> Gate {
        Gate {
            key,
            munge: None,
            seen: Mutex::new(ReplayGuard::default()),
            started,
            logged: Mutex::new(BTreeMap::new()),
        }
    }

    /// A gate where munged at `socket` checks credentials (`auth/munge`, see
    /// [`crate::munge`]), for a receiver started at `started`.
    pub fn munge(socket: std::path::PathBuf, started: i64) -> Gate {
        Gate {
            munge: Some(socket),
            ..Gate::new(Vec::new(), started)
        }
    }

    /// Whether checking a credential runs munged's decoder (a process: call
    /// [`Gate::admit`] off the async runtime's threads).
    pub fn is_munge(&self) -> bool {
        self.munge.is_some()
    }

    /// The check made on a request's headers alone, before a byte of its body is read:
    /// a credential is there, and its time is within [`MAX_SKEW`] of `now` and not
    /// before this receiver started. A stale or unsigned request costs nothing more.
    ///
    /// Errors: [`AuthError::Missing`], [`AuthError::Malformed`], [`AuthError::Expired`].
    pub fn precheck(&self, header: Option<&str>, now: i64) -> Result<(), AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        if self.munge.is_some() {
            // munged checks its time when it decodes it.
            return match header.trim().starts_with(crate::munge::PREFIX) {
                true => Ok(()),
                false => Err(AuthError::Malformed),
            };
        }
        let time = credential_time(header)?;
        if (time - now).abs() > MAX_SKEW || time < self.started {
            return Err(AuthError::Expired);
        }
        Ok(())
    }

    /// The whole check: [`Gate::precheck`], the signature over `method`, `path` and
    /// `body` ([`verify`]), and that the credential was not used before.
    ///
    /// Errors: those of [`Gate::precheck`] and [`verify`], [`AuthError::Replayed`].
    pub fn admit(
        &self,
        header: Option<&str>,
        method: &str,
        path: &str,
        body: &[u8],
        now: i64,
    ) -> Result<Credential, AuthError> {
        self.precheck(header, now)?;
        if let Some(socket) = &self.munge {
            let d = crate::munge::decode(socket, header.unwrap_or("").trim())?;
            if d.payload != crate::munge::payload(method, path, &body_digest(body)) {
                return Err(AuthError::BadSignature);
            }
            // munged refuses a credential it decoded before: no guard of our own.
            return Ok(Credential {
                uid: d.uid,
                gid: d.gid,
                time: d.time,
                nonce: 0,
            });
        }
        let c = verify(&self.key, header.unwrap_or(""), method, path, body, now)?;
        self.seen
            .lock()
            .expect("the replay guard's lock is never held across a panic")
            .check(&c, now)?;
        Ok(c)
    }

    /// Whether a refusal of `peer`'s request at `now` is to be logged: the first one,
    /// then at most one every [`LOG_EVERY`] seconds, so that a peer with a wrong key
    /// (or a scanner) cannot fill the log.
    pub fn should_log(&self, peer: &str, now: i64) -> bool {
        let mut logged = self.logged.lock().expect("never held across a panic");
        if logged.len() > 10_000 {
            logged.retain(|_, t| now - *t < LOG_EVERY);
        }
        match logged.get(peer) {
            Some(t) if now - *t < LOG_EVERY => false,
            _ => {
                logged.insert(peer.to_string(), now);
                true
            }
        }
    }
}

/// How a daemon proves itself to others over TCP and checks them: the cluster key
/// (`auth/sluice`) or munged (`auth/munge`).
#[derive(Clone)]
pub enum Scheme {
    /// Credentials signed with this cluster key.
    Key(Vec<u8>),
    /// Credentials from munged at this socket.
    Munge(std::path::PathBuf),
}

impl Scheme {
    /// The gate of a receiver started at `started`.
    pub fn gate(&self, started: i64) -> Gate {
        match self {
            Scheme::Key(k) => Gate::new(k.clone(), started),
            Scheme::Munge(s) => Gate::munge(s.clone(), started),
        }
    }

    /// Who signs this daemon's own requests.
    pub fn signer(&self) -> crate::client::Signer {
        match self {
            Scheme::Key(k) => crate::client::Signer::Key(std::sync::Arc::new(k.clone())),
            Scheme::Munge(s) => crate::client::Signer::Munge(s.clone()),
        }
    }

    /// The cluster key, under `auth/sluice`.
    pub fn key(&self) -> Option<&[u8]> {
        match self {
            Scheme::Key(k) => Some(k),
            Scheme::Munge(_) => None,
        }
    }
}

impl std::fmt::Debug for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never the key.
            Scheme::Key(_) => f.write_str("Key"),
            Scheme::Munge(s) => f.debug_tuple("Munge").field(s).finish(),
        }
    }
}

/// The route of an agent's vouching socket (see the module documentation).
pub const VOUCH_PATH: &str = "/v1/credential";

/// What a local caller asks its agent to vouch for: the request it is about to send.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VouchRequest {
    /// The request's method (`POST`).
    pub method: String,
    /// Its path and query (`/v1/jobs`).
    pub path: String,
    /// The SHA-256 of its body, hex ([`body_digest`]).
    pub body_sha256: String,
}

impl VouchRequest {
    /// The request for `method path` with `body`.
    pub fn new(method: &str, path: &str, body: &[u8]) -> VouchRequest {
        VouchRequest {
            method: method.to_string(),
            path: path.to_string(),
            body_sha256: hex(&body_digest(body)),
        }
    }
}

/// The agent's answer: the [`AUTH_HEADER`] value for the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vouched {
    /// `uid:gid:time:nonce:signature`.
    pub credential: String,
}

/// The credential an agent holding `key` gives a local caller whose socket says `uid`
/// and `gid`, at `now`, for the request `req` describes.
///
/// Errors: [`AuthError::Malformed`] when the digest is not 32 hex-encoded bytes.
pub fn vouch(
    key: &[u8],
    uid: u32,
    gid: u32,
    req: &VouchRequest,
    now: i64,
) -> Result<Vouched, AuthError> {
    let digest: [u8; 32] = unhex(&req.body_sha256)
        .and_then(|d| d.try_into().ok())
        .ok_or(AuthError::Malformed)?;
    let c = Credential {
        uid,
        gid,
        time: now,
        nonce: nonce(),
    };
    Ok(Vouched {
        credential: sign_digest(key, &c, &req.method, &req.path, &digest),
    })
}

/// A fresh random nonce.
pub fn nonce() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the system's random source works");
    u64::from_le_bytes(b)
}

/// Reads a cluster key file (hex, as [`create_key`] writes it).
///
/// Errors: the file cannot be read, or does not hold [`KEY_LEN`] hex-encoded bytes
/// (`InvalidData`).
pub fn read_key(path: &Path) -> io::Result<Vec<u8>> {
    let text = std::fs::read_to_string(path)?;
    unhex(text.trim())
        .filter(|k| k.len() == KEY_LEN)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a cluster key", path.display()),
            )
        })
}

/// Reads a cluster key file as a daemon must: [`read_key`], and only if the file is
/// owned by root or by this process's user and nobody else may read or write it (as
/// munged refuses an insecure key): a key others can read lets them speak for anyone.
///
/// Errors: those of [`read_key`]; `PermissionDenied` for a file with group or other
/// permissions or another owner, saying which.
pub fn read_private_key(path: &Path) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    // SAFETY: geteuid cannot fail and touches no memory.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != 0 && meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: owned by uid {}, not by root or this daemon's user",
                path.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: mode {:04o} lets others read or change it; make it 0600",
                path.display(),
                meta.mode() & 0o7777
            ),
        ));
    }
    read_key(path)
}

/// The cluster key at `path`, created (random, mode 0600) when there is none yet.
///
/// Errors: the file cannot be read or written, or holds something else.
pub fn ensure_key(path: &Path) -> io::Result<Vec<u8>> {
    match read_key(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_key(path),
        other => other,
    }
}

/// Writes a new random key to `path`, readable by its owner only.
fn create_key(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut key = vec![0u8; KEY_LEN];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(e.to_string()))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    writeln!(f, "{}", hex(&key))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];

    fn cred(time: i64, nonce: u64) -> Credential {
        Credential {
            uid: 1000,
            gid: 100,
            time,
            nonce,
        }
    }

    #[test]
    fn a_signed_request_verifies_and_any_change_breaks_it() {
        let c = cred(1_000, 42);
        let h = sign(&KEY, &c, "POST", "/v1/jobs", b"{}");
        assert!(h.starts_with("1000:100:1000:42:"));
        assert_eq!(h.len(), "1000:100:1000:42:".len() + 64);
        assert_eq!(verify(&KEY, &h, "POST", "/v1/jobs", b"{}", 1_010), Ok(c));
        // Another body, path, method, key or uid: refused.
        let bad = [
            verify(&KEY, &h, "POST", "/v1/jobs", b"{ }", 1_010),
            verify(&KEY, &h, "POST", "/v1/cancel", b"{}", 1_010),
            verify(&KEY, &h, "GET", "/v1/jobs", b"{}", 1_010),
            verify(&[8; 32], &h, "POST", "/v1/jobs", b"{}", 1_010),
            verify(
                &KEY,
                &h.replacen("1000", "0", 1),
                "POST",
                "/v1/jobs",
                b"{}",
                1_010,
            ),
        ];
        assert!(
            bad.iter().all(|r| *r == Err(AuthError::BadSignature)),
            "{bad:?}"
        );
        assert_eq!(
            verify(&KEY, &h, "POST", "/v1/jobs", b"{}", 1_000 + MAX_SKEW + 1),
            Err(AuthError::Expired)
        );
        assert_eq!(
            verify(&KEY, "1000:100", "POST", "/v1/jobs", b"{}", 1_000),
            Err(AuthError::Malformed)
        );
        assert_eq!(credential_time(&h), Ok(1_000));
        assert_eq!(credential_time("1000:100"), Err(AuthError::Malformed));
        assert_eq!(
            verify(
                &KEY,
                &format!("{}zz", &h[..h.len() - 2]),
                "POST",
                "/v1/jobs",
                b"{}",
                1_000
            ),
            Err(AuthError::Malformed)
        );
    }

    #[test]
    fn a_credential_is_accepted_once_within_the_window() {
        let mut g = ReplayGuard::default();
        assert_eq!(g.check(&cred(1_000, 1), 1_000), Ok(()));
        assert_eq!(g.check(&cred(1_000, 2), 1_000), Ok(()));
        assert_eq!(g.check(&cred(1_000, 1), 1_001), Err(AuthError::Replayed));
        // Past the window the old entries are forgotten (verify refuses them anyway).
        assert_eq!(g.check(&cred(2_000, 3), 2_000), Ok(()));
        assert_eq!(g.seen.len(), 1);
    }

    #[test]
    fn a_key_is_created_once_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cluster.key");
        let k = ensure_key(&path).unwrap();
        assert_eq!(k.len(), KEY_LEN);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(ensure_key(&path).unwrap(), k);
        std::fs::write(&path, "abc\n").unwrap();
        assert_eq!(
            read_key(&path).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_gate_checks_headers_first_then_signature_then_replays() {
        let g = Gate::new(KEY.to_vec(), 1_000);
        let h = sign(&KEY, &cred(1_005, 9), "GET", "/v1/ping", b"");
        assert_eq!(g.precheck(None, 1_010), Err(AuthError::Missing));
        assert_eq!(g.precheck(Some("x"), 1_010), Err(AuthError::Malformed));
        assert_eq!(g.precheck(Some(&h), 1_010), Ok(()));
        // Made before the receiver started: its guard never saw what came before.
        let early = sign(&KEY, &cred(999, 9), "GET", "/v1/ping", b"");
        assert_eq!(g.precheck(Some(&early), 1_010), Err(AuthError::Expired));
        assert_eq!(
            g.admit(Some(&h), "GET", "/v1/jobs", b"", 1_010),
            Err(AuthError::BadSignature)
        );
        assert_eq!(
            g.admit(Some(&h), "GET", "/v1/ping", b"", 1_010),
            Ok(cred(1_005, 9))
        );
        assert_eq!(
            g.admit(Some(&h), "GET", "/v1/ping", b"", 1_011),
            Err(AuthError::Replayed)
        );
        let wrong = Gate::new(vec![8; 32], 1_000);
        let h2 = sign(&KEY, &cred(1_005, 10), "GET", "/v1/ping", b"");
        assert_eq!(
            wrong.admit(Some(&h2), "GET", "/v1/ping", b"", 1_010),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn refusals_are_logged_once_per_peer_per_minute() {
        let g = Gate::new(KEY.to_vec(), 0);
        assert!(g.should_log("10.0.0.2", 100));
        assert!(!g.should_log("10.0.0.2", 159));
        assert!(g.should_log("10.0.0.3", 159));
        assert!(g.should_log("10.0.0.2", 160));
    }

    #[test]
    fn a_vouched_credential_is_the_one_the_key_holder_would_sign() {
        let body = br##"{"script":"#!/bin/sh"}"##;
        let req = VouchRequest::new("POST", "/v1/jobs", body);
        let v = vouch(&KEY, 1000, 100, &req, 2_000).unwrap();
        let g = Gate::new(KEY.to_vec(), 1_000);
        let c = g
            .admit(Some(&v.credential), "POST", "/v1/jobs", body, 2_001)
            .unwrap();
        assert_eq!((c.uid, c.gid, c.time), (1000, 100, 2_000));
        // Bound to that request: another body or path is refused.
        let v = vouch(&KEY, 1000, 100, &req, 2_000).unwrap();
        assert_eq!(
            g.admit(Some(&v.credential), "POST", "/v1/jobs", b"{}", 2_001),
            Err(AuthError::BadSignature)
        );
        let bad = VouchRequest {
            body_sha256: "zz".into(),
            ..req
        };
        assert_eq!(vouch(&KEY, 1, 1, &bad, 0), Err(AuthError::Malformed));
    }

    #[test]
    fn a_daemon_reads_only_a_private_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-pkey-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cluster.key");
        let k = ensure_key(&path).unwrap();
        assert_eq!(read_private_key(&path).unwrap(), k);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_private_key(&path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert!(
            e.to_string()
                .ends_with("mode 0644 lets others read or change it; make it 0600"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
