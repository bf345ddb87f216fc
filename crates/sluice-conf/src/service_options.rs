//! sbatch's service options (`--restart`, `--health-cmd`, `--health-url`,
//! `--health-interval`, `--health-retries`, `--port`, `--service-name`): kept as given
//! while the options are read, then turned into the job's
//! [`sluice_proto::service::ServiceSpec`] once all are known, with Slurm-style messages
//! for values and combinations that make no sense.

use sluice_proto::service::{
    HealthCheck, HealthProbe, RestartPolicy, ServiceSpec, DEFAULT_HEALTH_INTERVAL,
    DEFAULT_HEALTH_RETRIES,
};

/// Why sbatch refuses the service options: the message it prints as `sbatch: error:
/// MESSAGE`, and its exit code, as Slurm's sbatch exits: 255 for a value it cannot read
/// (as for `--cpus-per-task=abc`), 1 for options that contradict each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub exit_code: i32,
}

impl Refusal {
    /// A value that cannot be read (exit 255).
    fn value(message: String) -> Refusal {
        Refusal {
            message,
            exit_code: 255,
        }
    }

    /// Options that contradict each other (exit 1).
    fn conflict(message: String) -> Refusal {
        Refusal {
            message,
            exit_code: 1,
        }
    }
}

/// The lowest port a service may declare: the stable address never forwards to a
/// privileged port.
pub const LOWEST_PORT: u32 = 1024;

/// The service options as given (the last of each wins, `#SBATCH` lines first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceOptions {
    pub restart: Option<String>,
    pub health_cmd: Option<String>,
    pub health_url: Option<String>,
    pub health_interval: Option<String>,
    pub health_retries: Option<String>,
    pub port: Option<String>,
    pub service_name: Option<String>,
}

impl ServiceOptions {
    /// Keeps `value` of service option `name`; false when `name` is none of them.
    pub fn take(&mut self, name: &str, value: &str) -> bool {
        let slot = match name {
            "restart" => &mut self.restart,
            "health-cmd" => &mut self.health_cmd,
            "health-url" => &mut self.health_url,
            "health-interval" => &mut self.health_interval,
            "health-retries" => &mut self.health_retries,
            "port" => &mut self.port,
            "service-name" => &mut self.service_name,
            _ => return false,
        };
        *slot = Some(value.to_string());
        true
    }

    /// The job's service, if these options declare one (`--restart`, `--port` or
    /// `--service-name`); `job_name` names it by default. `array`: the job is an array.
    ///
    /// Errors: what sbatch prints and its exit code ([`Refusal`]).
    pub fn spec(&self, job_name: &str, array: bool) -> Result<Option<ServiceSpec>, Refusal> {
        let declared = self.restart.is_some() || self.port.is_some() || self.service_name.is_some();
        if !declared {
            for (given, name) in [
                (&self.health_cmd, "--health-cmd"),
                (&self.health_url, "--health-url"),
                (&self.health_interval, "--health-interval"),
                (&self.health_retries, "--health-retries"),
            ] {
                if given.is_some() {
                    return Err(Refusal::conflict(format!(
                        "{name} needs a service: give --restart (or --port)"
                    )));
                }
            }
            return Ok(None);
        }
        let (restart, max_restarts) = match &self.restart {
            None => (RestartPolicy::OnFailure, None),
            Some(r) => parse_restart(r).map_err(Refusal::value)?,
        };
        let port = match &self.port {
            None => None,
            Some(p) => Some(
                p.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|p| (LOWEST_PORT..=65535).contains(p))
                    .ok_or_else(|| {
                        Refusal::value(format!(
                            "Invalid --port specification: {p} ({LOWEST_PORT}-65535)"
                        ))
                    })? as u16,
            ),
        };
        let probe = match (&self.health_cmd, &self.health_url) {
            (Some(_), Some(_)) => {
                return Err(Refusal::conflict(
                    "--health-cmd and --health-url are mutually exclusive".into(),
                ))
            }
            (Some(c), None) => Some(HealthProbe::Command(c.clone())),
            (None, Some(u)) => Some(HealthProbe::Url(health_url(u, port)?)),
            (None, None) => None,
        };
        let number = |v: &Option<String>, name: &str, default: u32| -> Result<u32, Refusal> {
            match v {
                None => Ok(default),
                Some(s) => s
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        Refusal::value(format!("Invalid numeric value \"{s}\" for --{name}."))
                    }),
            }
        };
        let interval = number(
            &self.health_interval,
            "health-interval",
            DEFAULT_HEALTH_INTERVAL,
        )?;
        let retries = number(
            &self.health_retries,
            "health-retries",
            DEFAULT_HEALTH_RETRIES,
        )?;
        if probe.is_none() && (self.health_interval.is_some() || self.health_retries.is_some()) {
            return Err(Refusal::conflict(
                "--health-interval and --health-retries need --health-cmd or --health-url".into(),
            ));
        }
        let spec = ServiceSpec {
            name: self
                .service_name
                .clone()
                .unwrap_or_else(|| job_name.to_string()),
            restart,
            max_restarts,
            health: probe.map(|probe| HealthCheck {
                probe,
                interval_secs: interval,
                retries,
            }),
            port,
        };
        if !sluice_proto::service::valid_name(&spec.name) {
            return Err(Refusal::value(format!(
                "Invalid --service-name specification: {:?} (letters, digits, '-', '_', '.')",
                spec.name
            )));
        }
        spec.check(array).map_err(Refusal::conflict)?;
        Ok(Some(spec))
    }
}

/// `on-failure|always[:MAX]`.
fn parse_restart(v: &str) -> Result<(RestartPolicy, Option<u32>), String> {
    let bad = || format!("Invalid --restart specification: {v} (on-failure|always[:MAX])");
    let (policy, max) = match v.split_once(':') {
        Some((p, m)) => (p, Some(m.parse::<u32>().map_err(|_| bad())?)),
        None => (v, None),
    };
    let policy = match policy {
        "on-failure" => RestartPolicy::OnFailure,
        "always" => RestartPolicy::Always,
        _ => return Err(bad()),
    };
    if max == Some(0) {
        return Err(format!(
            "Invalid --restart specification: {v} (a cap of 0 restarts: give at least 1)"
        ));
    }
    Ok((policy, max))
}

/// A health URL on the service's own node, as the agent probes it:
/// `http://localhost[:PORT]/PATH` or just `/PATH` (the port then from `--port`).
fn health_url(u: &str, port: Option<u16>) -> Result<String, Refusal> {
    let (host, path) = if let Some(rest) = u.strip_prefix("http://") {
        match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        }
    } else if u.starts_with('/') {
        ("localhost", u)
    } else {
        return Err(Refusal::value(format!(
            "Invalid --health-url specification: {u} (http://localhost[:PORT]/PATH or /PATH)"
        )));
    };
    let (name, url_port) = match host.rsplit_once(':') {
        Some((h, p)) => (
            h,
            Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                Refusal::value(format!("Invalid --health-url specification: {u}"))
            })?),
        ),
        None => (host, None),
    };
    if !matches!(name, "localhost" | "127.0.0.1") {
        return Err(Refusal::value(format!(
            "Invalid --health-url specification: {u} (the service's own node: localhost)"
        )));
    }
    let Some(p) = url_port.or(port) else {
        return Err(Refusal::conflict(format!(
            "--health-url {u} has no port: give --port or a port in the URL"
        )));
    };
    Ok(format!("http://localhost:{p}{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> ServiceOptions {
        let mut o = ServiceOptions::default();
        for (k, v) in pairs {
            assert!(o.take(k, v));
        }
        o
    }

    #[test]
    fn no_service_option_is_no_service() {
        assert_eq!(ServiceOptions::default().spec("job", false), Ok(None));
    }

    #[test]
    fn a_full_service_is_read_with_its_defaults() {
        let s = opts(&[
            ("restart", "always:5"),
            ("port", "8000"),
            ("health-url", "/health"),
        ])
        .spec("llm", false)
        .unwrap()
        .unwrap();
        assert_eq!(s.name, "llm");
        assert_eq!(s.restart, RestartPolicy::Always);
        assert_eq!(s.max_restarts, Some(5));
        assert_eq!(s.port, Some(8000));
        let h = s.health.unwrap();
        assert_eq!(
            h.probe,
            HealthProbe::Url("http://localhost:8000/health".into())
        );
        assert_eq!((h.interval_secs, h.retries), (10, 3));
        let s = opts(&[("port", "8080"), ("service-name", "api")])
            .spec("job", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.name.as_str(), s.restart, s.max_restarts),
            ("api", RestartPolicy::OnFailure, None)
        );
    }

    #[test]
    fn bad_values_and_contradictions_are_refused_with_their_reason() {
        let refusal =
            |pairs: &[(&str, &str)], array: bool| opts(pairs).spec("j", array).unwrap_err();
        let e = |pairs: &[(&str, &str)], array: bool| refusal(pairs, array).message;
        // Values sbatch cannot read exit 255, as Slurm's sbatch does for a bad value;
        // contradictions exit 1.
        for bad in [
            ("port", "70000"),
            ("port", "0"),
            ("port", "443"),
            ("port", "abc"),
            ("restart", "sometimes"),
            ("restart", "always:0"),
            ("service-name", "a b"),
        ] {
            assert_eq!(refusal(&[bad], false).exit_code, 255, "{bad:?}");
        }
        assert_eq!(refusal(&[("restart", "always")], true).exit_code, 1);
        assert_eq!(
            refusal(&[("restart", "always"), ("health-url", "/h")], false).exit_code,
            1
        );
        assert!(e(&[("port", "443")], false).contains("1024-65535"));
        assert!(e(&[("restart", "always")], true).contains("--array"));
        assert!(e(&[("restart", "always:0")], false).contains("cap of 0"));
        assert!(e(&[("restart", "sometimes")], false).starts_with("Invalid --restart"));
        assert!(
            e(&[("restart", "always"), ("health-url", "/health")], false).contains("has no port")
        );
        assert!(e(
            &[("restart", "always"), ("health-url", "http://localhost/h")],
            false
        )
        .contains("has no port"));
        assert!(e(&[("port", "70000")], false).starts_with("Invalid --port"));
        assert!(e(&[("port", "0")], false).starts_with("Invalid --port"));
        assert!(e(&[("health-cmd", "true")], false).contains("needs a service"));
        assert!(e(
            &[
                ("restart", "always"),
                ("health-url", "http://example.com:80/")
            ],
            false
        )
        .contains("own node"));
        assert!(e(&[("restart", "always"), ("health-retries", "2")], false)
            .contains("need --health-cmd"));
    }
}
