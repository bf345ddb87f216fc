//! Service jobs on the controller (`sluice_proto::service`): what a submission of one
//! must satisfy (its name unique among live services, its options consistent), and
//! what its agent reports — each restart in place (counted, audited with its cause)
//! and its health — kept on the job for `scontrol show job`, `squeue` and explain.
//! The restarts themselves are the agent's (`sluice-noded`'s `service.rs`); a service
//! whose node dies is requeued like any job (it is always requeueable).

use sluice_core::JobId;
use sluice_proto::audit::AuditWhat;
use sluice_proto::error::ApiError;
use sluice_proto::service::{RestartPolicy, ServiceReport, ServiceSpec, ServiceState};
use sluice_proto::types::JobState;

use super::{Caller, Controller, Effect};

impl Controller {
    /// What a submitted service must satisfy beyond its own options: no live job (not
    /// ended) is a service of the same name.
    pub(super) fn check_service(&self, s: &ServiceSpec, array: bool) -> Result<(), String> {
        s.check(array)?;
        if let Some(other) = self.jobs.values().find(|j| {
            !j.state.is_finished() && j.desc.service.as_ref().is_some_and(|o| o.name == s.name)
        }) {
            return Err(format!(
                "Service name {} is already taken by job {}",
                s.name, other.id
            ));
        }
        Ok(())
    }

    /// An agent's word on a running service: its restarts in place of run `report.run`
    /// so far and its health. Each new restart is counted and audited.
    ///
    /// Errors: the caller is no agent.
    pub fn service_report(
        &mut self,
        report: &ServiceReport,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::access_denied());
        }
        let id = JobId(report.job_id);
        let Some(r) = self.jobs.get_mut(&id) else {
            return Ok(Vec::new());
        };
        if r.state != JobState::Running || r.restarts != report.run || r.desc.service.is_none() {
            return Ok(Vec::new()); // stale: an earlier run, or already ended
        }
        let st = r.service.get_or_insert_with(Default::default);
        if st.run != report.run {
            st.run = report.run;
            st.run_restarts = 0;
        }
        let new = report.restarts.saturating_sub(st.run_restarts);
        let first = st.restarts + 1;
        st.restarts += new;
        st.run_restarts = st.run_restarts.max(report.restarts);
        let changed = new > 0 || st.health != report.health;
        st.health = report.health;
        if !changed {
            return Ok(Vec::new());
        }
        if new > 0 {
            let (cause, exit_code, signal) =
                report
                    .last
                    .unwrap_or((sluice_proto::service::RestartCause::Exited, 0, 0));
            tracing::info!(
                "service JobId={id} restarted in place ({cause:?}, exit {exit_code}:{signal}); \
                 {} restart(s) in all",
                first + new - 1
            );
            let r = &self.jobs[&id];
            for restart in first..first + new {
                self.audit.push(
                    report.at.max(r.start_time.unwrap_or(0)).min(now),
                    r,
                    AuditWhat::ServiceRestarted {
                        run: report.run,
                        restart,
                        cause,
                        exit_code,
                        signal,
                    },
                );
            }
        }
        Ok(vec![self.persist(id)])
    }
}

/// The line `sluice explain` adds for a service: its name, port, policy, restarts and
/// health.
pub(super) fn describe(svc: &ServiceSpec, st: Option<&ServiceState>, state: JobState) -> String {
    let st = st.cloned().unwrap_or_default();
    let policy = match (svc.restart, svc.max_restarts) {
        (RestartPolicy::Always, None) => "always restarted".to_string(),
        (RestartPolicy::OnFailure, None) => "restarted when it fails".to_string(),
        (RestartPolicy::Always, Some(m)) => format!("always restarted, at most {m} times"),
        (RestartPolicy::OnFailure, Some(m)) => {
            format!("restarted when it fails, at most {m} times")
        }
    };
    let port = svc
        .port
        .map(|p| format!(" on port {p}"))
        .unwrap_or_default();
    let health = match (&svc.health, state) {
        (None, _) => String::new(),
        (Some(_), JobState::Running) => format!(", {}", st.health.name()),
        (Some(_), _) => String::new(),
    };
    format!(
        "service {}{port}: {policy}; restarted in place {} time{} so far{health}",
        svc.name,
        st.restarts,
        if st.restarts == 1 { "" } else { "s" }
    )
}

/// A service's state for a new run (requeued): the restarts so far stay, its health
/// starts again.
pub(super) fn requeued(st: &mut ServiceState) {
    st.run_restarts = 0;
    st.health = Default::default();
}

#[cfg(test)]
mod tests;
