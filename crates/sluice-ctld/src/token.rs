//! Tokens as Slurm's `auth/jwt` makes them: JSON Web Tokens signed with HS256 and the
//! key in `AuthAltParameters=jwt_key=FILE`, carrying `iat`, `exp` and `sun` (the Slurm
//! user name). The controller makes them (`scontrol token`) and admits requests that
//! carry one on its TCP listener (`X-SLURM-USER-TOKEN`, or `Authorization: Bearer`),
//! as slurmrestd's clients send them.
//!
//! Only the controller reads the key: a key file that others may read, write or run is
//! refused at start, as Slurm's controller refuses it. Time enters as an argument, so
//! expiry is tested without a clock.

use std::path::{Path, PathBuf};

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The lifespan of a token when none is asked for, seconds (Slurm's
/// `DEFAULT_AUTH_TOKEN_LIFESPAN`).
pub const DEFAULT_LIFESPAN: i64 = 1800;

/// The key that makes and checks tokens, and the limits on asking for them.
pub struct Tokens {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// `max_token_lifespan`: the longest lifespan others than root and the SlurmUser
    /// may ask for.
    pub max_lifespan: Option<i64>,
    /// `disable_token_creation`: only root and the SlurmUser may ask for tokens.
    pub disable_creation: bool,
}

/// Why the key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file could not be read.
    #[error("auth/jwt: cannot read key file '{}': {source}", path.display())]
    Read {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Others than its owner may read, write or run it (Slurm's message).
    #[error("auth/jwt: key file is insecure: '{}' mode=0{mode:o}", path.display())]
    Insecure {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is empty.
    #[error("auth/jwt: key file '{}' is empty", path.display())]
    Empty {
        /// The key file.
        path: PathBuf,
    },
}

/// Why a token was refused: Slurm's error numbers and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Its `exp` has passed (`ESLURM_AUTH_EXPIRED`).
    #[error("Authentication credential expired")]
    Expired,
    /// Not a token, not signed with this key, not HS256, or without `exp` or a user
    /// name (`ESLURM_AUTH_CRED_INVALID`).
    #[error("Invalid authentication credential")]
    Invalid,
}

impl TokenError {
    /// Slurm's error number.
    pub fn errno(self) -> i32 {
        match self {
            TokenError::Expired => 6001,
            TokenError::Invalid => 6000,
        }
    }

    /// Slurm's name of the error number.
    pub fn name(self) -> &'static str {
        match self {
            TokenError::Expired => "ESLURM_AUTH_EXPIRED",
            TokenError::Invalid => "ESLURM_AUTH_CRED_INVALID",
        }
    }
}

/// What a token says, as Slurm writes it.
#[derive(Serialize)]
struct Made<'a> {
    iat: i64,
    exp: i64,
    /// `[s]lurm [u]ser[n]ame`.
    sun: &'a str,
}

/// What a token may say: `sun`, else `username` (as Slurm reads them).
#[derive(Deserialize)]
struct Read {
    exp: Option<i64>,
    sun: Option<String>,
    username: Option<String>,
}

/// A checked token's user and expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The user name it speaks for.
    pub user: String,
    /// When it expires, seconds since the epoch.
    pub exp: i64,
}

impl Tokens {
    /// Tokens with `key` (the key file's bytes, as Slurm uses them).
    pub fn with_key(key: &[u8]) -> Tokens {
        Tokens {
            encoding: EncodingKey::from_secret(key),
            decoding: DecodingKey::from_secret(key),
            max_lifespan: None,
            disable_creation: false,
        }
    }

    /// Loads the key from `path`, refusing a file whose mode lets others at it.
    ///
    /// Errors: the file cannot be read, is empty, or is insecure.
    pub fn load(path: &Path) -> Result<Tokens, KeyError> {
        use std::os::unix::fs::PermissionsExt;
        let read = |source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
        if mode & 0o007 != 0 {
            return Err(KeyError::Insecure {
                path: path.to_path_buf(),
                mode,
            });
        }
        let key = std::fs::read(path).map_err(read)?;
        if key.is_empty() {
            return Err(KeyError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(Tokens::with_key(&key))
    }

    /// A token for `user`, made at `now` and good for `lifespan` seconds.
    pub fn make(&self, user: &str, lifespan: i64, now: i64) -> String {
        let claims = Made {
            iat: now,
            exp: now.saturating_add(lifespan),
            sun: user,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 claims always encode")
    }

    /// The user `token` speaks for, if it is signed with this key, names a user and
    /// has not expired at `now`.
    ///
    /// Errors: [`TokenError::Expired`], or [`TokenError::Invalid`] for anything else.
    pub fn verify(&self, token: &str, now: i64) -> Result<Verified, TokenError> {
        let mut v = Validation::new(Algorithm::HS256);
        // Expiry is checked here against `now`, exactly as Slurm does (no leeway).
        v.validate_exp = false;
        v.required_spec_claims.clear();
        let data = decode::<Read>(token, &self.decoding, &v).map_err(|_| TokenError::Invalid)?;
        let Read { exp, sun, username } = data.claims;
        let exp = exp.ok_or(TokenError::Invalid)?;
        let user = sun
            .or(username)
            .filter(|u| !u.is_empty())
            .ok_or(TokenError::Invalid)?;
        if exp < now {
            return Err(TokenError::Expired);
        }
        Ok(Verified { user, exp })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    const NOW: i64 = 1_700_000_000;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    }

    #[test]
    fn a_token_names_its_user_until_it_expires() {
        let t = Tokens::with_key(b"secret key of the cluster");
        let token = t.make("alice", DEFAULT_LIFESPAN, NOW);
        assert_eq!(token.split('.').count(), 3);
        let want = Verified {
            user: "alice".into(),
            exp: NOW + 1800,
        };
        assert_eq!(t.verify(&token, NOW), Ok(want.clone()));
        assert_eq!(t.verify(&token, NOW + 1800), Ok(want));
        assert_eq!(t.verify(&token, NOW + 1801), Err(TokenError::Expired));
        // Its claims are Slurm's, readable by anyone (signed, not secret).
        let payload = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"iat": NOW, "exp": NOW + 1800, "sun": "alice"})
        );
    }

    #[test]
    fn altered_foreign_and_malformed_tokens_are_invalid() {
        let t = Tokens::with_key(b"secret key of the cluster");
        let token = t.make("alice", 60, NOW);
        let parts: Vec<&str> = token.split('.').collect();
        // Another user's name under alice's signature.
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            b64(&format!(
                r#"{{"iat":{NOW},"exp":{},"sun":"root"}}"#,
                NOW + 60
            )),
            parts[2]
        );
        assert_eq!(t.verify(&forged, NOW), Err(TokenError::Invalid));
        // A token of another cluster's key.
        let foreign = Tokens::with_key(b"another key").make("alice", 60, NOW);
        assert_eq!(t.verify(&foreign, NOW), Err(TokenError::Invalid));
        // Unsigned ("alg": "none"), and no token at all.
        let none = format!("{}.{}.", b64(r#"{"alg":"none","typ":"JWT"}"#), parts[1]);
        assert_eq!(t.verify(&none, NOW), Err(TokenError::Invalid));
        for junk in ["", "abc", "a.b.c", &parts[..2].join(".")] {
            assert_eq!(t.verify(junk, NOW), Err(TokenError::Invalid), "{junk}");
        }
    }

    #[test]
    fn a_token_without_expiry_or_user_is_invalid() {
        let key = b"k";
        let t = Tokens::with_key(key);
        let sign = |claims: serde_json::Value| {
            encode(
                &Header::new(Algorithm::HS256),
                &claims,
                &EncodingKey::from_secret(key),
            )
            .unwrap()
        };
        let no_exp = sign(serde_json::json!({"iat": NOW, "sun": "alice"}));
        assert_eq!(t.verify(&no_exp, NOW), Err(TokenError::Invalid));
        let no_user = sign(serde_json::json!({"iat": NOW, "exp": NOW + 60}));
        assert_eq!(t.verify(&no_user, NOW), Err(TokenError::Invalid));
        let empty_user = sign(serde_json::json!({"exp": NOW + 60, "sun": ""}));
        assert_eq!(t.verify(&empty_user, NOW), Err(TokenError::Invalid));
        let wrong_type = sign(serde_json::json!({"exp": "soon", "sun": "alice"}));
        assert_eq!(t.verify(&wrong_type, NOW), Err(TokenError::Invalid));
        // `username` stands in for `sun`, as Slurm reads it.
        let username = sign(serde_json::json!({"exp": NOW + 60, "username": "bob"}));
        assert_eq!(t.verify(&username, NOW).unwrap().user, "bob");
    }

    #[test]
    fn a_key_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-jwt-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jwt.key");
        std::fs::write(&path, b"0123456789abcdef").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Tokens::load(&path).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!(
                "auth/jwt: key file is insecure: '{}' mode=0644",
                path.display()
            )
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let t = Tokens::load(&path).unwrap();
        let token = Tokens::with_key(b"0123456789abcdef").make("alice", 60, NOW);
        assert_eq!(t.verify(&token, NOW).unwrap().user, "alice");
        std::fs::write(&path, b"").unwrap();
        assert!(matches!(Tokens::load(&path), Err(KeyError::Empty { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
