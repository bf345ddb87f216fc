//! Idle GPUs, caught while it matters: a running job whose GPUs its agents keep seeing
//! under sluice.conf's `IdleGpuThreshold` for `IdleGpuTime` is flagged — a line in the
//! log, an audit event, the job's record (`scontrol show job`, `sluice explain`, the
//! metrics) and, where the site says so, its `IdleGpuCommand` run and the job
//! cancelled (`IdleGpuAction=cancel`). The flag goes once every GPU is busy again.
//!
//! Each GPU is watched from the agents' usage reports ([`UsageReport`]): a GPU seen
//! under the threshold is idle since that report, until a report sees it at or above.
//! A GPU reported by several of the job's steps counts once, at its busiest.

use std::collections::BTreeMap;

use sluice_core::JobId;
use sluice_proto::audit::AuditWhat;
use sluice_proto::types::{CancelRequest, JobState};
use sluice_proto::usage::{IdleGpus, UsageReport};

use super::{Caller, Controller, Effect};

/// One job run's GPUs: since when each (node, index) has been under the threshold.
#[derive(Debug, Default)]
struct Watched {
    run: u32,
    below_since: BTreeMap<(String, u32), Option<i64>>,
}

/// The running jobs' GPUs.
#[derive(Debug, Default)]
pub(crate) struct IdleWatch {
    jobs: BTreeMap<JobId, Watched>,
}

impl IdleWatch {
    /// Forgets a job (it ended, or was requeued).
    pub(crate) fn forget(&mut self, job: JobId) {
        self.jobs.remove(&job);
    }

    /// Takes a report's GPUs (each at its busiest over the report's steps) and says
    /// which are idle: `(how many, since when the longest-idle)`, or `None`.
    fn observe(
        &mut self,
        report: &UsageReport,
        threshold: u32,
        after: i64,
        now: i64,
    ) -> Option<(u32, i64)> {
        let w = self.jobs.entry(JobId(report.job)).or_default();
        if w.run != report.run {
            *w = Watched {
                run: report.run,
                ..Watched::default()
            };
        }
        let mut busiest: BTreeMap<(String, u32), u32> = BTreeMap::new();
        for g in report.steps.iter().flat_map(|(_, u)| &u.gpus) {
            let b = busiest.entry((g.node.clone(), g.index)).or_default();
            *b = (*b).max(g.util_now);
        }
        for (gpu, util) in busiest {
            let since = w.below_since.entry(gpu).or_default();
            if util < threshold {
                since.get_or_insert(now);
            } else {
                *since = None;
            }
        }
        let idle: Vec<i64> = w
            .below_since
            .values()
            .flatten()
            .copied()
            .filter(|t| now - t >= after)
            .collect();
        let oldest = idle.iter().min()?;
        Some((idle.len() as u32, *oldest))
    }
}

impl Controller {
    /// Watches a usage report's GPUs for the idle-GPU check and flags (or clears) the
    /// job: the effects of flagging (the site's command, a cancellation).
    pub(super) fn watch_gpus(&mut self, report: &UsageReport, now: i64) -> Vec<Effect> {
        let site = self.conf.site.idle_gpu.clone();
        let id = JobId(report.job);
        if site.after <= 0 {
            return Vec::new();
        }
        let Some(r) = self.jobs.get(&id) else {
            return Vec::new();
        };
        if r.state != JobState::Running || r.restarts != report.run {
            return Vec::new();
        }
        let held: u32 = r.alloc.iter().map(|s| s.gpus.len() as u32).sum();
        let seen = self.idle.observe(report, site.threshold, site.after, now);
        let note = seen.map(|(idle, since)| IdleGpus {
            held: held.max(idle),
            idle,
            since,
            threshold: site.threshold,
        });
        let was = r.idle_gpus.as_deref().copied();
        if was.map(|w| (w.idle, w.since)) == note.map(|n| (n.idle, n.since)) {
            return Vec::new();
        }
        let r = self.jobs.get_mut(&id).expect("checked");
        r.idle_gpus = note.map(Box::new);
        let Some(note) = note else {
            tracing::info!("JobId={id} GPUs busy again");
            return vec![self.persist(id)];
        };
        if was.is_some() {
            return Vec::new(); // still flagged; the record shows the new count
        }
        tracing::warn!("JobId={id} {}", note.describe(now));
        let r = &self.jobs[&id];
        self.audit.push(now, r, AuditWhat::IdleGpus { gpus: note });
        let mut effects = vec![self.persist(id)];
        if let Some(command) = &site.command {
            let nodes: Vec<String> = r
                .node_ids()
                .map(|n| self.conf.cluster.node(n).name.clone())
                .collect();
            let env = [
                ("SLUICE_JOB_ID", id.0.to_string()),
                ("SLUICE_JOB_USER", r.user.to_string()),
                ("SLUICE_JOB_ACCOUNT", r.account.to_string()),
                ("SLUICE_JOB_NODES", sluice_conf::hostlist::compress(&nodes)),
                ("SLUICE_GPUS_HELD", note.held.to_string()),
                ("SLUICE_GPUS_IDLE", note.idle.to_string()),
                ("SLUICE_IDLE_SINCE", note.since.to_string()),
            ];
            effects.push(Effect::Notify {
                command: command.clone(),
                env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            });
        }
        if site.cancel {
            tracing::warn!("JobId={id} cancelled for idle GPUs (IdleGpuAction=cancel)");
            let req = CancelRequest {
                jobs: vec![(id.0, None)],
                ..CancelRequest::default()
            };
            let operator = Caller {
                uid: 0,
                gid: 0,
                admin: true,
            };
            match self.cancel(&req, &operator, now) {
                Ok(done) => effects.extend(done.effects),
                Err(e) => tracing::error!("JobId={id} could not be cancelled for idle GPUs: {e}"),
            }
        }
        effects
    }
}

#[cfg(test)]
mod story;
