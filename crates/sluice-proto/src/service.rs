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

/// Seconds between health checks, when `--health-interval` is not given.
pub const DEFAULT_HEALTH_INTERVAL: u32 = 10;
/// Failures in a row that restart a service, when `--health-retries` is not given.
pub const DEFAULT_HEALTH_RETRIES: u32 = 3;

/// How a service's health stands, as its agent last reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// No check has passed since it (re)started.
    #[default]
    Starting,
    /// Its last check passed.
    Healthy,
    /// Its last check failed (it is restarted after `retries` in a row).
    Unhealthy,
    /// It has no health check.
    None,
}

impl Health {
    /// As `scontrol show job` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Health::Starting => "starting",
            Health::Healthy => "healthy",
            Health::Unhealthy => "unhealthy",
            Health::None => "none",
        }
    }
}

/// Why a service was restarted in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartCause {
    /// Its process exited (with this code / signal, per the policy).
    Exited,
    /// Its health check failed `retries` times in a row.
    Unhealthy,
}

/// What a service's agent tells the controller: its restarts in place so far and its
/// health (sent on every change).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceReport {
    pub job_id: u64,
    /// The job's run (requeue count) this concerns.
    pub run: u32,
    /// Restarts in place of this run so far.
    pub restarts: u32,
    pub health: Health,
    /// The last restart's cause, with the exit code and signal of the process it
    /// replaced.
    #[serde(default)]
    pub last: Option<(RestartCause, i32, i32)>,
    /// When the last restart happened (Unix seconds).
    #[serde(default)]
    pub at: i64,
}

/// A service's state as the controller keeps it (`JobRecord::service_state`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceState {
    /// Restarts in place over all its runs.
    pub restarts: u32,
    /// The run (requeue count) `run_restarts` counts in.
    #[serde(default)]
    pub run: u32,
    /// Restarts in place of the current run (what the agent counts).
    pub run_restarts: u32,
    pub health: Health,
}

impl ServiceSpec {
    /// Whether its process is started again after it exited with `code`/`signal`,
    /// having been restarted `done` times already.
    pub fn restarts_after(&self, code: i32, signal: i32, done: u32) -> bool {
        let wanted = match self.restart {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0 || signal != 0,
        };
        wanted && self.max_restarts.is_none_or(|m| done < m)
    }

    /// The wait before restart number `n` (from 1): 1 s doubling, at most 30 s.
    pub fn backoff_secs(n: u32) -> u64 {
        1u64.checked_shl(n.saturating_sub(1))
            .unwrap_or(u64::MAX)
            .min(30)
    }

    /// What the controller checks of a submitted service (whatever sent it): Slurm-style
    /// messages for contradictions. `array`: the job is an array.
    pub fn check(&self, array: bool) -> Result<(), String> {
        if array {
            return Err("--restart is not supported with --array: a service is one job".into());
        }
        if !valid_name(&self.name) {
            return Err(format!(
                "Invalid --service-name specification: {:?} (letters, digits, '-', '_', '.')",
                self.name
            ));
        }
        if self.max_restarts == Some(0) {
            return Err(
                "Invalid --restart specification: a cap of 0 restarts (give at least 1)".into(),
            );
        }
        if let Some(p) = self.port.filter(|p| *p < 1024) {
            return Err(format!(
                "Invalid --port specification: {p} (1024-65535: the stable address never forwards to a privileged port)"
            ));
        }
        if let Some(h) = &self.health {
            if h.interval_secs == 0 || h.retries == 0 {
                return Err("Invalid --health-interval/--health-retries: at least 1".into());
            }
            if let HealthProbe::Url(u) = &h.probe {
                if url_port(u).is_none() {
                    return Err(format!(
                        "--health-url {u} has no port: give --port or a port in the URL"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `name` may name a service (its stable address's path): letters, digits,
/// `-`, `_` and `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The port of a `http://localhost:PORT/...` health URL.
pub fn url_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    host.rsplit_once(':')?.1.parse().ok().filter(|p| *p > 0)
}

/// The path (with its query) of a health URL: what comes after its host.
pub fn url_path(url: &str) -> &str {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    rest.find('/').map_or("/", |i| &rest[i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(restart: RestartPolicy, max: Option<u32>) -> ServiceSpec {
        ServiceSpec {
            name: "llm".into(),
            restart,
            max_restarts: max,
            health: None,
            port: Some(8000),
        }
    }

    #[test]
    fn on_failure_restarts_only_a_failed_process_and_always_any_up_to_the_cap() {
        let s = spec(RestartPolicy::OnFailure, Some(2));
        assert!(!s.restarts_after(0, 0, 0));
        assert!(s.restarts_after(1, 0, 0));
        assert!(s.restarts_after(0, 9, 1));
        assert!(!s.restarts_after(1, 0, 2));
        let a = spec(RestartPolicy::Always, None);
        assert!(a.restarts_after(0, 0, 0));
        assert!(a.restarts_after(0, 0, 1000));
    }

    #[test]
    fn backoff_doubles_from_one_second_to_thirty() {
        let waits: Vec<u64> = (1..=7).map(ServiceSpec::backoff_secs).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(ServiceSpec::backoff_secs(200), 30);
    }

    #[test]
    fn contradictions_are_refused() {
        assert!(spec(RestartPolicy::Always, None).check(true).is_err());
        assert!(spec(RestartPolicy::Always, Some(0)).check(false).is_err());
        let mut s = spec(RestartPolicy::Always, Some(3));
        assert_eq!(s.check(false), Ok(()));
        s.health = Some(HealthCheck {
            probe: HealthProbe::Url("http://localhost/health".into()),
            interval_secs: 1,
            retries: 3,
        });
        assert!(s.check(false).unwrap_err().contains("has no port"));
        s.name = "a b".into();
        assert!(s.check(false).is_err());
    }

    #[test]
    fn a_health_urls_port_and_path_are_read() {
        assert_eq!(url_port("http://localhost:8000/health"), Some(8000));
        assert_eq!(url_port("http://localhost/health"), None);
        assert_eq!(
            url_path("http://localhost:8000/v1/models?x=1"),
            "/v1/models?x=1"
        );
        assert_eq!(url_path("http://localhost:8000"), "/");
    }
}
