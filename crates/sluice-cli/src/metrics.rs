//! `sluice metrics [ENDPOINT]`: the controller's metrics endpoints as Prometheus reads
//! them (`MetricsType=metrics/openmetrics`), asked the way the Slurm commands ask:
//! over the local socket, or signed over TCP. What an operator runs where the metrics
//! are restricted (`MetricsAuthUsers`, `PrivateData`) and a plain HTTP GET is refused.

use clap::Args;

use crate::slurm::common::{controller, describe};

/// Options of `sluice metrics`.
#[derive(Args, Debug)]
pub struct MetricsArgs {
    /// The endpoint: `jobs`, `nodes`, `partitions`, `scheduler`, `jobs-users-accts`
    /// (Slurm's) or `sluice` (Sluice's own); none: the list of them.
    pub endpoint: Option<String>,
}

/// The path of `endpoint`.
fn path(endpoint: Option<&str>) -> String {
    match endpoint.map(|e| e.trim_matches('/')) {
        None | Some("") | Some("metrics") => "/metrics".into(),
        Some(e) => format!("/metrics/{}", e.trim_start_matches("metrics/")),
    }
}

/// Runs `sluice metrics`.
pub fn run(args: MetricsArgs) -> i32 {
    match controller().get_text(&path(args.endpoint.as_deref())) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(e) => {
            let message = describe(&e);
            let why = message
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default()
                .trim_start_matches("Failed: ");
            eprintln!("sluice metrics: error: {why}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_by_name_or_path() {
        assert_eq!(path(None), "/metrics");
        assert_eq!(path(Some("jobs")), "/metrics/jobs");
        assert_eq!(
            path(Some("/metrics/jobs-users-accts")),
            "/metrics/jobs-users-accts"
        );
        assert_eq!(path(Some("metrics")), "/metrics");
    }
}
