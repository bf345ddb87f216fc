//! Trace replay for Sluice: `sluice sim`.
//!
//! Reads real workload traces ([`trace`]), turns them into a machine and jobs
//! ([`setup`]), replays them through the pure scheduling core on a virtual clock
//! ([`replay`]) and reports the literature's metrics ([`metrics`]), per-job rows
//! ([`output`]), plots ([`plot`]) and, when asked, the audit trail ([`audit`]).

pub mod audit;
pub mod error;
pub mod fairshare;
pub mod fragmentation;
pub mod limits;
pub mod metrics;
pub mod output;
pub mod plot;
pub mod replay;
pub mod reservations;
pub mod setup;
pub mod synth;
#[cfg(feature = "testing")]
pub mod testing;
pub mod trace;

pub use error::SimError;
