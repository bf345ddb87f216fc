//! Sluice's wire types and client.
//!
//! - [`accounts`]: accounts, users, associations and QOS (`sacctmgr`).
//! - [`audit`]: the audit trail's events and device holds (`sluice audit`).
//! - [`types`]: what the commands, the controller and the node agents send each other
//!   (JSON over HTTP on Unix sockets).
//! - [`priority`]: multifactor priorities and fair-share figures (`sprio`, `sshare`).
//! - [`reservations`]: advance reservations (`scontrol create reservation`).
//! - [`explain`]: why a job waits and what would start it (`sluice explain`).
//! - [`listing`]: the filters of a job listing (`squeue`, `scontrol show job`).
//! - [`client`]: a blocking client for the commands.
//! - [`error`]: errors on the wire, with stable codes.
//! - [`paths`]: where a cluster's state directory and sockets are.
//! - [`service`]: service jobs (restart policy, health check, stable address).
//! - [`usage`]: what job steps really used (CPU, memory, I/O, GPUs), as agents measure it.
//! - [`token`]: asking the controller for an auth/jwt token (`scontrol token`).

pub mod accounts;
pub mod audit;
pub mod auth;
pub mod client;
pub mod diag;
pub mod error;
pub mod explain;
pub mod listing;
pub mod munge;
pub mod oserror;
pub mod paths;
pub mod pattern;
pub mod priority;
pub mod reservations;
pub mod service;
pub mod steps;
pub mod time;
pub mod token;
pub mod types;
pub mod usage;

pub use client::{Client, ClientError, Signer};
