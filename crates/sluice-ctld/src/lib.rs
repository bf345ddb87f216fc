//! The Sluice controller (slurmctld's job).
//!
//! - [`config`]: the cluster's configuration, from a slurm.conf or this machine.
//! - [`gpu_detect`]: the GPUs on this machine (NVML, the NVIDIA driver's files, AMD's
//!   sysfs), as gres.conf's `AutoDetect` finds them.
//! - [`accounts`]: accounts, users, associations and QOS (`sacctmgr`'s rules, no I/O).
//! - [`state`]: the state machine around the scheduling core (no I/O).
//! - [`metrics`]: Slurm's metrics endpoints and Sluice's own, as text (no I/O).
//! - [`token`]: Slurm's auth/jwt tokens, made and checked with the cluster's JWT key.

pub mod accounts;
pub mod config;
pub mod gpu_detect;
pub mod metrics;
pub mod priority;
pub mod server;
pub mod state;
pub mod token;
