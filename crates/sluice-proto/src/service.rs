//! Service jobs: long-running jobs that Sluice keeps alive (restarted in place when their
//! process exits or their health check fails, started elsewhere when their node dies) and
//! reaches at a stable address (`/services/NAME/` on the controller) wherever they run.
//! What `sbatch --restart=... --health-cmd=... --health-url=... --port=...` sends.

use serde::{Deserialize, Serialize};

/// When a service's process is started again after it exits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    /// Only when it exits non-zero or is killed by a signal (`--restart=on-failure`).
    #[default]
    OnFailure,
    /// Whenever it exits (`--restart=always`).
    Always,
}

/// How a service's health is checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthProbe {
    /// A command run on the service's node, as the job's user: healthy when it exits 0
    /// (`--health-cmd`).
    Command(String),
    /// An HTTP GET on the service's node: healthy on a 2xx answer (`--health-url`).
    Url(String),
}

/// A health check: the probe, how often, and how many failures in a row restart it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    pub probe: HealthProbe,
    /// Seconds between probes.
    pub interval_secs: u32,
    /// Failures in a row after which the service is restarted.
    pub retries: u32,
}

/// What makes a job a service (`JobDescription::service`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceSpec {
    /// The stable name: the service is reached at `/services/NAME/`. Unique among live
    /// services; defaults to the job's name.
    pub name: String,
    /// When to restart its process.
    pub restart: RestartPolicy,
    /// At most this many restarts (`--restart=always:MAX`); `None`: no cap.
    #[serde(default)]
    pub max_restarts: Option<u32>,
    /// Its health check, if any.
    #[serde(default)]
    pub health: Option<HealthCheck>,
    /// The TCP port it listens on, on its node (`--port`): where the stable address
    /// forwards to.
    #[serde(default)]
    pub port: Option<u16>,
}
