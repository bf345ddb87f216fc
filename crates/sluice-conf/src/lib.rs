//! Slurm's configuration files and value syntax, for Sluice.
//!
//! - [`slurm_conf`]: `slurm.conf` into a [`sluice_core::Cluster`] plus settings.
//! - [`gres_conf`]: `gres.conf`, and each node's GRES devices merged with slurm.conf.
//! - [`topology_conf`]: `topology.conf`, a tree of switches or blocks of nodes.
//! - [`cgroup_conf`]: `cgroup.conf` (`ConstrainDevices`).
//! - [`hostlist`]: `node[01-04,7]` expressions, expand and compress.
//! - [`duration`]: durations (`2-12:00:00`, `UNLIMITED`), as given and as printed, and
//!   memory sizes (`4G`).
//! - [`getopt`]: command lines as glibc's `getopt_long` reads them, for every Slurm command.
//! - [`site_conf`]: Sluice's own `sluice.conf` (the audit trail's retention).
//! - [`log_conf`]: the daemons' log files and levels (`SlurmctldLogFile`, `SlurmdDebug`).
//! - [`acct_gather_conf`]: usage gathering (`JobAcctGatherType`, `JobAcctGatherFrequency`).
//! - [`net_conf`]: where the daemons are and how callers authenticate (`SlurmctldHost`,
//!   ports, spool directories, `AuthType`).

pub mod acct_gather_conf;
pub mod array;
pub mod cgroup_conf;
pub mod cohorts_conf;
pub mod dependency;
pub mod duration;
#[doc(hidden)]
pub mod fuzzing;
pub mod getopt;
pub mod gres_conf;
pub mod hostlist;
pub mod input_env;
pub mod keys;
pub mod log_conf;
pub mod net_conf;
pub mod options;
pub mod pbs;
pub mod preempt_conf;
pub mod priority_conf;
mod reader;
pub mod service_options;
pub mod site_conf;
pub mod slurm_conf;
pub mod storage_conf;
mod tokenize;
pub mod topology_conf;

pub use slurm_conf::{ConfError, SlurmConf};
