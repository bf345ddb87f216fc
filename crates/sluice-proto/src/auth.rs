//! Signed requests for the controller's TCP listener.
//!
//! On the Unix socket the caller's uid comes from the kernel (`SO_PEERCRED`). Over TCP
//! nothing vouches for it, so each request carries a credential signed with the
//! *cluster key* (a secret shared by the controller and whoever may act for users,
//! like MUNGE's key in Slurm): header [`AUTH_HEADER`] with
//! `uid:gid:time:nonce:signature`, where the signature is HMAC-SHA256 over the
//! credential fields, the method, the path and the SHA-256 of the body. The controller
//! accepts a credential at most [`MAX_SKEW`] seconds from its clock and each
//! `(time, nonce)` once ([`ReplayGuard`]), so a captured request cannot be replayed or
//! altered. Holding the key means being able to speak for any uid: keep it readable
//! only by root (or the cluster's owner), as MUNGE's.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use hmac::{Hmac, Mac};
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
}

fn mac(key: &[u8], c: &Credential, method: &str, path: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    let head = format!(
        "{}\n{}\n{}\n{}\n{method}\n{path}\n",
        c.uid, c.gid, c.time, c.nonce
    );
    m.update(head.as_bytes());
    m.update(&Sha256::digest(body));
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
    let sig = mac(key, c, method, path, body).finalize().into_bytes();
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
    mac(key, &c, method, path, body)
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
}
