//! Errors on the wire: a stable code and Slurm's message.
//!
//! The controller answers a refused request with an [`ErrorReply`](crate::types::ErrorReply)
//! carrying an [`ErrorCode`] and the message Slurm prints for it. Whoever reacts to an
//! error (the HTTP status the controller chooses, a command's exit code, a retry in
//! `srun`) decides by the code; the message is for people and is printed as is, never
//! matched.

use serde::{Deserialize, Serialize};

/// What went wrong, as a closed set. The names follow Slurm's error numbers
/// (`slurm_errno.h`) where Slurm has one; each is stable once released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request is refused for what it asks (Slurm's message says why); nothing
    /// changed. Slurm has many numbers for these; the message names the case.
    #[default]
    Invalid,
    /// No such job (`ESLURM_INVALID_JOB_ID`), or one the caller may not see.
    InvalidJobId,
    /// No such node (`ESLURM_INVALID_NODE_NAME`).
    InvalidNodeName,
    /// No such partition (`ESLURM_INVALID_PARTITION_NAME`).
    InvalidPartitionName,
    /// No such device on the node asked about.
    InvalidDevice,
    /// The caller may not do this (`ESLURM_ACCESS_DENIED`).
    AccessDenied,
    /// The caller's credential is missing, forged, stale or replayed
    /// (`SLURM_PROTOCOL_AUTHENTICATION_ERROR`).
    Authentication,
    /// The request is larger than the controller reads.
    TooLarge,
    /// The job or step has ended, or is ending (`ESLURM_ALREADY_DONE`): nothing to do.
    AlreadyDone,
    /// What is asked for is held by others for now, and nothing was taken: ask again
    /// (an agent registering with another controller incarnation; a step whose CPUs
    /// the job's running steps hold).
    Busy,
    /// The state could not be made durable (`ESLURM_WRITING_TO_FILE`); what the request
    /// asked may or may not have happened in memory, nothing was acknowledged.
    Storage,
    /// The controller is shutting down and takes no new work.
    ShuttingDown,
    /// What the request is for is not there yet (a step's tasks still starting): ask
    /// again.
    NotReady,
    /// What the request is for is gone for good (a step's input closed).
    Closed,
    /// The controller could not be reached (an agent asking on a step's behalf).
    ControllerUnreachable,
    /// A bug: the controller could not handle the request (its state is kept).
    Internal,
    /// The user named is not the caller's, or not known (`ESLURM_USER_ID_MISSING`).
    InvalidUserId,
    /// What is asked needs a plugin the cluster is not configured with
    /// (`ESLURM_PLUGIN_NOT_LOADED`: tokens without `AuthAltTypes=auth/jwt`).
    PluginNotLoaded,
    /// This controller stands by (`ESLURM_IN_STANDBY_MODE`): another one is active, or
    /// is being taken over from; ask the next controller.
    InStandby,
    /// An order from a controller older than the one its receiver follows now (a
    /// lower fencing epoch): refused, nothing done; that controller is no longer the
    /// active one.
    Fenced,
}

impl ErrorCode {
    /// The HTTP status the code is answered with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::Invalid => 400,
            ErrorCode::InvalidJobId | ErrorCode::InvalidNodeName | ErrorCode::InvalidDevice => 404,
            ErrorCode::InvalidPartitionName => 400,
            ErrorCode::AccessDenied | ErrorCode::InvalidUserId => 403,
            ErrorCode::PluginNotLoaded => 400,
            ErrorCode::InStandby => 503,
            ErrorCode::Fenced => 409,
            ErrorCode::Authentication => 401,
            ErrorCode::TooLarge => 413,
            ErrorCode::Busy | ErrorCode::AlreadyDone => 409,
            ErrorCode::Storage | ErrorCode::Internal => 500,
            ErrorCode::ShuttingDown | ErrorCode::ControllerUnreachable => 503,
            ErrorCode::NotReady => 404,
            ErrorCode::Closed => 410,
        }
    }

    /// The code a bare HTTP status stands for, for a reply without a code (an older
    /// peer, or a proxy's own error).
    pub fn from_http_status(status: u16) -> ErrorCode {
        match status {
            401 => ErrorCode::Authentication,
            403 => ErrorCode::AccessDenied,
            404 => ErrorCode::InvalidJobId,
            409 => ErrorCode::Busy,
            410 => ErrorCode::Closed,
            413 => ErrorCode::TooLarge,
            503 => ErrorCode::ShuttingDown,
            500..=599 => ErrorCode::Internal,
            _ => ErrorCode::Invalid,
        }
    }
}

/// A refused or failed request: its code and Slurm's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// What went wrong.
    pub code: ErrorCode,
    /// What Slurm prints for it.
    pub message: String,
}

impl ApiError {
    /// An error of `code` saying `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// A request refused for what it asks, with Slurm's message.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Invalid, message)
    }

    /// Slurm's `Invalid job id specified`.
    pub fn invalid_job() -> Self {
        ApiError::new(ErrorCode::InvalidJobId, INVALID_JOB_ID)
    }

    /// Slurm's `Access/permission denied`.
    pub fn access_denied() -> Self {
        ApiError::new(ErrorCode::AccessDenied, ACCESS_DENIED)
    }

    /// A request only super users may make (root, `SlurmUser`, `AdminLevel`
    /// Administrator: nodes, partitions, a reconfiguration) refused as Slurm 22.05's
    /// `validate_super_user` refuses it: `ESLURM_USER_ID_MISSING`, `Invalid user id`.
    pub fn not_super_user() -> Self {
        ApiError::new(ErrorCode::InvalidUserId, INVALID_USER_ID)
    }
}

/// Slurm's message for `ESLURM_INVALID_JOB_ID`.
pub const INVALID_JOB_ID: &str = "Invalid job id specified";
/// Slurm's message for `ESLURM_ACCESS_DENIED`.
pub const ACCESS_DENIED: &str = "Access/permission denied";
/// Slurm's message for `ESLURM_INVALID_NODE_NAME`.
pub const INVALID_NODE_NAME: &str = "Invalid node name specified";
/// Slurm's message for `ESLURM_USER_ID_MISSING`.
pub const INVALID_USER_ID: &str = "Invalid user id";
/// Slurm's message for `ESLURM_PLUGIN_NOT_LOADED`.
pub const PLUGIN_NOT_LOADED: &str = "Required plugin type not loaded or initialized";
/// Slurm's message for `ESLURM_INVALID_TIME_LIMIT`.
pub const INVALID_TIME_LIMIT: &str =
    "Requested time limit is invalid (missing or exceeds some limit)";
/// Slurm's message for `ESLURM_INVALID_PARTITION_NAME`.
pub const INVALID_PARTITION_NAME: &str = "Invalid partition name specified";
/// Slurm's message for `ESLURM_PATHNAME_TOO_LONG`: any string of a submission over its
/// limit, paths or not.
pub const PATHNAME_TOO_LONG: &str = "Pathname of a file, directory or other parameter too long";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_travel_as_stable_names_and_choose_the_status() {
        let e = ApiError::invalid_job();
        let json = serde_json::to_string(&crate::types::ErrorReply::from(e.clone())).unwrap();
        assert_eq!(
            json,
            r#"{"error":"Invalid job id specified","code":"invalid_job_id"}"#
        );
        assert_eq!(e.code.http_status(), 404);
        assert_eq!(ApiError::access_denied().code.http_status(), 403);
        // A reply without a code (an older peer) is read by its status.
        let old: crate::types::ErrorReply = serde_json::from_str(r#"{"error":"x"}"#).unwrap();
        assert_eq!(old.code, None);
        assert_eq!(ErrorCode::from_http_status(403), ErrorCode::AccessDenied);
    }
}
