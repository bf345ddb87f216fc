//! `AuthType=auth/munge`: credentials made and checked by each host's `munged` (Debian's
//! `munge` package), as Slurm's sites run it, instead of Sluice's cluster key.
//!
//! A caller asks its host's munged (the `munge` command) to encode a payload naming the
//! request it is about to send — `sluice`, its method, its path and its body's SHA-256
//! — and sends the credential (`MUNGE:...:`) in [`crate::auth::AUTH_HEADER`]. munged
//! puts the caller's uid and gid into it, as the kernel gives them. The receiver asks
//! its own munged to decode it (the `unmunge` command): munged checks it was made with
//! the same key, within its time to live, and never decoded before on this host; the
//! receiver checks the payload names the request it got. The munge key is munged's
//! (`/etc/munge/munge.key`), shared by every host; Sluice never reads it.
//!
//! The commands `munge` and `unmunge` are run from `PATH`: a request costs a few
//! milliseconds more than with the cluster key.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::auth::{body_digest, AuthError};

/// How a munge credential starts.
pub const PREFIX: &str = "MUNGE:";

/// What a credential for `method path` with body digest `digest` carries.
pub fn payload(method: &str, path: &str, digest: &[u8; 32]) -> String {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sluice\n{method}\n{path}\n{hex}")
}

/// A credential for `method path` with `body`, from munged at `socket`, for this
/// process's uid and gid.
///
/// Errors: `munge` cannot be run or munged refuses, as a message.
pub fn encode(socket: &Path, method: &str, path: &str, body: &[u8]) -> Result<String, String> {
    let out = Command::new("munge")
        .arg("-S")
        .arg(socket)
        .arg("-s")
        .arg(payload(method, path, &body_digest(body)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run munge: {}", crate::oserror::describe(&e)))?;
    if !out.status.success() {
        return Err(last_line(&out.stderr));
    }
    let cred = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if cred.starts_with(PREFIX) {
        Ok(cred)
    } else {
        Err(format!("munge gave no credential: {cred:?}"))
    }
}

/// What munged says of a credential it decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The uid of whoever made it.
    pub uid: u32,
    /// Their gid.
    pub gid: u32,
    /// When it was made, Unix seconds.
    pub time: i64,
    /// Its payload.
    pub payload: String,
}

/// Decodes `cred` with munged at `socket`.
///
/// Errors: [`AuthError::Replayed`] (decoded before on this host), [`AuthError::Expired`]
/// (past its time to live, or from the future), [`AuthError::Munge`] for the rest (a
/// credential of another key, a malformed one, munged not running), with munge's words.
pub fn decode(socket: &Path, cred: &str) -> Result<Decoded, AuthError> {
    let mut child = Command::new("unmunge")
        .arg("-S")
        .arg(socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| AuthError::Munge(format!("cannot run unmunge: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(cred.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| AuthError::Munge(format!("unmunge: {e}")))?;
    match out.status.code() {
        Some(0) => parse(&String::from_utf8_lossy(&out.stdout)),
        // munge's EMUNGE_CRED_REPLAYED, EMUNGE_CRED_EXPIRED, EMUNGE_CRED_REWOUND.
        Some(17) => Err(AuthError::Replayed),
        Some(15) | Some(16) => Err(AuthError::Expired),
        _ => Err(AuthError::Munge(last_line(&out.stderr))),
    }
}

/// The metadata and payload `unmunge` prints: `KEY: value` lines (values ending in
/// their number in parentheses, `UID: root (0)`), a blank line, the payload.
fn parse(text: &str) -> Result<Decoded, AuthError> {
    let malformed = || AuthError::Munge("unexpected output of unmunge".into());
    let (meta, payload) = text.split_once("\n\n").ok_or_else(malformed)?;
    let number = |key: &str| -> Option<i64> {
        let line = meta.lines().find(|l| l.starts_with(&format!("{key}:")))?;
        let inner = line.rsplit_once('(')?.1.strip_suffix(')')?;
        inner.trim().parse().ok()
    };
    Ok(Decoded {
        uid: number("UID")
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(malformed)?,
        gid: number("GID")
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(malformed)?,
        time: number("ENCODE_TIME").ok_or_else(malformed)?,
        payload: payload.to_string(),
    })
}

/// The last line of a command's error output (`unmunge: Error: Invalid credential`
/// gives `Invalid credential`).
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("failed");
    line.split_once("Error: ")
        .map_or(line, |(_, m)| m)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmunges_output_is_read_for_who_when_and_what() {
        let text = "STATUS:          Success (0)\nENCODE_HOST:     node01 (10.0.0.2)\n\
                    ENCODE_TIME:     2026-12-01 17:25:09 +0000 (1796145909)\n\
                    DECODE_TIME:     2026-12-01 17:25:09 +0000 (1796145909)\nTTL:             300\n\
                    UID:             nobody (65534)\nGID:             nogroup (65534)\n\
                    LENGTH:          17\n\nsluice\nGET\n/v1/ping\nabc";
        assert_eq!(
            parse(text),
            Ok(Decoded {
                uid: 65534,
                gid: 65534,
                time: 1_796_145_909,
                payload: "sluice\nGET\n/v1/ping\nabc".into()
            })
        );
        assert!(parse("STATUS: x").is_err());
        assert_eq!(
            last_line(b"unmunge: Error: Invalid credential format\n"),
            "Invalid credential format"
        );
    }
}
