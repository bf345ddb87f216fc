//! `scontrol token [username=U] [lifespan=S]`: asks the controller for a token (Slurm's
//! auth/jwt) and prints `SLURM_JWT=...`. The controller makes it: the key never
//! leaves it. Only root and the SlurmUser may ask one for another user.

use sluice_proto::client::{Client, ClientError};
use sluice_proto::token::{TokenReply, TokenRequest, TOKEN_PATH};

use super::common::describe;

/// The largest lifespan, for `lifespan=infinite` (Slurm's `INT_MAX - 1`).
const INFINITE: i64 = i32::MAX as i64 - 1;

/// The request `args` (the words after `token`) make.
///
/// Errors: the line to print, as scontrol prints it.
fn request(args: &[String]) -> Result<TokenRequest, String> {
    let mut req = TokenRequest::default();
    for a in args {
        let lower = a.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("lifespan=").map(|_| &a[9..]) {
            req.lifespan = Some(
                if v.eq_ignore_ascii_case("infinite") || v.eq_ignore_ascii_case("unlimited") {
                    INFINITE
                } else {
                    match v.parse::<i64>() {
                        Ok(n) if n > 0 && n < i64::from(i32::MAX) => n,
                        Ok(n) if n >= i64::from(i32::MAX) => {
                            return Err(format!(
                                "scontrol: error: Numeric argument ({n}) too large for lifespan."
                            ))
                        }
                        _ => {
                            return Err(format!(
                                "scontrol: error: Invalid numeric value \"{v}\" for lifespan."
                            ))
                        }
                    }
                },
            );
        } else if lower.starts_with("username=") {
            req.username = Some(a[9..].to_string());
        } else {
            return Err(format!("Invalid option: `{a}`"));
        }
    }
    Ok(req)
}

/// Runs `scontrol token ARGS`; the exit status.
pub fn run(client: &Client, args: &[String]) -> i32 {
    let req = match request(args) {
        Ok(r) => r,
        Err(line) => {
            eprintln!("{line}");
            return 1;
        }
    };
    match client.post::<_, TokenReply>(TOKEN_PATH, &req) {
        Ok(r) => {
            println!("SLURM_JWT={}", r.token);
            0
        }
        Err(e) => {
            match &e {
                ClientError::Status { message, .. } => {
                    eprintln!("scontrol: error: slurm_fetch_token: error with request: {message}")
                }
                other => eprintln!(
                    "scontrol: error: slurm_fetch_token: error receiving response: {}",
                    describe(other)
                ),
            }
            eprintln!("Error fetching token");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_as_scontrol_reads_them() {
        assert_eq!(request(&[]).unwrap(), TokenRequest::default());
        let r = request(&words(&["UserName=bob", "LIFESPAN=60"])).unwrap();
        assert_eq!(r.username.as_deref(), Some("bob"));
        assert_eq!(r.lifespan, Some(60));
        assert_eq!(
            request(&words(&["lifespan=infinite"])).unwrap().lifespan,
            Some(INFINITE)
        );
        assert_eq!(
            request(&words(&["life=5"])).unwrap_err(),
            "Invalid option: `life=5`"
        );
        assert_eq!(
            request(&words(&["lifespan=abc"])).unwrap_err(),
            "scontrol: error: Invalid numeric value \"abc\" for lifespan."
        );
    }
}
