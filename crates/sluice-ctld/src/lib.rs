//! The Sluice controller (slurmctld's job).
//!
//! - [`config`]: the cluster's configuration, from a slurm.conf or this machine.
//! - [`state`]: the state machine around the scheduling core (no I/O).

pub mod config;
pub mod server;
pub mod state;
