//! Asking the controller for a token (`scontrol token`, Slurm's `REQUEST_AUTH_TOKEN`):
//! a JSON Web Token that HTTP clients send to the controller's TCP listener as
//! `X-SLURM-USER-TOKEN` (or `Authorization: Bearer`), in place of the cluster credential.

use serde::{Deserialize, Serialize};

/// Where the request goes.
pub const TOKEN_PATH: &str = "/v1/token";

/// `scontrol token [username=U] [lifespan=S]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRequest {
    /// Whom the token speaks for; the caller when absent. Only root and the SlurmUser
    /// may name someone else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Seconds it is good for; the default (1800) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifespan: Option<i64>,
}

/// The token made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenReply {
    /// The JSON Web Token.
    pub token: String,
}
