//! `sluice explain`: the controller's side. What only the controller knows (holds,
//! dependencies, array throttles, names, privacy) is written here; what the scheduler
//! decides (limits, resources, queue place, expected start, counterfactuals) comes from
//! the core's [`sluice_core::explain`], turned into sentences with the cluster's names.

use sluice_proto::explain::{Cause, Explanation, Priority};
use sluice_proto::time::timestamp;
use sluice_proto::types::{JobRecord, JobState};

use super::dependency::DepState;
use super::{Caller, Controller, BAD_JOB, ENDING_RUN};

/// A duration in words as people read it: `2h 30m`, `45s`.
pub(super) fn span(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d}d"));
    }
    if h > 0 {
        parts.push(format!("{h}h"));
    }
    if m > 0 {
        parts.push(format!("{m}m"));
    }
    if sec > 0 || parts.is_empty() {
        parts.push(format!("{sec}s"));
    }
    parts.join(" ")
}

fn cause(family: &str, reason: &str, text: String) -> Cause {
    Cause {
        family: family.into(),
        reason: reason.into(),
        text,
    }
}

impl Controller {
    /// Explains job `id` (or array task `task` of it) for `caller` at `now`.
    ///
    /// Errors: Slurm's `Invalid job id specified` for an unknown job, and for another
    /// user's job under `PrivateData=jobs` (as Slurm hides it).
    pub fn explain(
        &self,
        id: u64,
        task: Option<u32>,
        caller: &Caller,
        now: i64,
    ) -> Result<Explanation, String> {
        let found = self.select(id, task);
        let r = found
            .first()
            .and_then(|id| self.jobs.get(id))
            .ok_or_else(|| BAD_JOB.to_string())?;
        if self.hidden_from(caller, r.uid) {
            return Err(BAD_JOB.into());
        }
        let live = self.live(r);
        let mut e = Explanation {
            job_id: r.id,
            display_id: r.display_id(),
            state: live.state.name().to_string(),
            reason: live.reason.clone(),
            now,
            ..Default::default()
        };
        if r.state == JobState::Pending {
            e.causes = self.outside_causes(r, now);
            self.explain_queued(r, caller, now, &mut e);
        } else {
            e.history = self.history(r);
        }
        Ok(e)
    }

    /// slurm.conf's `PrivateData`.
    pub fn private_data(&self) -> crate::config::PrivateData {
        self.conf.private_data
    }

    /// Whether `PrivateData=jobs` hides `uid`'s jobs from `caller`.
    pub(super) fn hidden_from(&self, caller: &Caller, uid: u32) -> bool {
        self.conf.private_data.jobs && !caller.admin && caller.uid != uid
    }

    /// What keeps a pending job out of the scheduler's queue: holds, its previous run
    /// still ending, its dependency, its array's throttle.
    fn outside_causes(&self, r: &JobRecord, now: i64) -> Vec<Cause> {
        let mut out = Vec::new();
        if r.held {
            let c = if let Some(name) = r.details.get(super::reservations::RESV_DELETED) {
                cause(
                    "hold",
                    "ReservationDeleted",
                    format!(
                        "its reservation {name} was deleted; it is held until released \
                         (scontrol release {})",
                        r.display_id()
                    ),
                )
            } else if r.details.contains_key("admin_hold") {
                cause(
                    "hold",
                    "JobHeldAdmin",
                    format!(
                        "held by an operator; only an operator may release it (scontrol release {})",
                        r.display_id()
                    ),
                )
            } else {
                cause(
                    "hold",
                    "JobHeldUser",
                    format!(
                        "held by its owner; scontrol release {} lets it queue",
                        r.display_id()
                    ),
                )
            };
            out.push(c);
        }
        if r.details.contains_key(ENDING_RUN) {
            out.push(cause(
                "begin",
                "BeginTime",
                "its previous run is still ending; it queues again once that run is gone".into(),
            ));
        }
        if let Some(dep) = r.desc.dependency.as_deref() {
            let state = self.dependency_state(r, dep, now);
            if state != DepState::Satisfied {
                let reason = if state == DepState::Never {
                    "DependencyNeverSatisfied"
                } else {
                    "Dependency"
                };
                for text in self.dependency_sentences(r, now) {
                    out.push(cause("dependency", reason, text));
                }
            }
        }
        if let Some((array, _)) = r.array {
            let limit = self
                .jobs
                .get(&array)
                .and_then(|a| a.array_pending.as_ref())
                .and_then(|p| p.1);
            if let (Some(limit), "JobArrayTaskLimit") = (limit, r.reason.as_str()) {
                out.push(cause(
                    "limit",
                    "JobArrayTaskLimit",
                    format!("its array allows {limit} tasks at a time (%{limit}), and {limit} are running or queued"),
                ));
            }
        }
        if let Some(begin) = r.desc.begin.filter(|&b| b > now) {
            out.push(cause(
                "begin",
                "BeginTime",
                format!(
                    "it may not start before {} (--begin), in {}",
                    timestamp(begin),
                    span(begin - now)
                ),
            ));
        }
        out
    }

    /// The parts only the scheduler knows; filled in from the core's explanation.
    fn explain_queued(&self, r: &JobRecord, _caller: &Caller, now: i64, e: &mut Explanation) {
        let live = self.live(r);
        if self.priority.multifactor() {
            if let Ok(spec) = self.core_spec(r) {
                let row = self.priority.job_row(&self.job_factors(r, &spec), now);
                let mut factors = vec![
                    ("AGE".to_string(), row.age.weighted),
                    ("ASSOC".to_string(), row.assoc.weighted),
                    ("FAIRSHARE".to_string(), row.fairshare.weighted),
                    ("JOBSIZE".to_string(), row.job_size.weighted),
                    ("PARTITION".to_string(), row.partition_factor.weighted),
                    ("QOS".to_string(), row.qos.weighted),
                ];
                for t in &row.tres {
                    factors.push((t.name.to_uppercase(), t.factor.weighted));
                }
                factors.retain(|(_, v)| *v != 0.0);
                e.priority = Some(Priority {
                    value: live.priority,
                    factors,
                    ..Default::default()
                });
            }
        }
        if e.priority.is_none() {
            e.priority = Some(Priority {
                value: live.priority,
                ..Default::default()
            });
        }
    }

    /// A started job's story from its record: when and where each run started, by
    /// which pass, and how it ended or was preempted.
    fn history(&self, r: &JobRecord) -> Vec<String> {
        let mut out = Vec::new();
        if r.restarts > 0 {
            out.push(format!(
                "requeued {} time{} before this run",
                r.restarts,
                if r.restarts == 1 { "" } else { "s" }
            ));
        }
        if let Some(start) = r.start_time {
            let pass = r.details.get("scheduler").map_or("main", |s| {
                if s == "Backfill" {
                    "backfill"
                } else {
                    "main"
                }
            });
            out.push(format!(
                "started {} on {} by the {pass} pass",
                timestamp(start),
                sluice_conf::hostlist::compress(&r.nodes)
            ));
        }
        if let Some(at) = r
            .details
            .get("preempt_time")
            .and_then(|t| t.parse::<i64>().ok())
        {
            out.push(format!("preempted at {}", timestamp(at)));
        }
        if let Some(end) = r.end_time {
            out.push(format!(
                "ended {} {} (exit code {})",
                timestamp(end),
                r.state.name(),
                r.exit_code
            ));
        }
        out
    }
}
