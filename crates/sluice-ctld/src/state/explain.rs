//! `sluice explain`: the controller's side. What only the controller knows (holds,
//! dependencies, array throttles, names, privacy) is written here; what the scheduler
//! decides (limits, resources, queue place, expected start, counterfactuals) comes from
//! the core's [`sluice_core::explain`], turned into sentences with the cluster's names.

use sluice_proto::error::ApiError;
use std::sync::Arc;

use sluice_conf::duration::format_span;
use sluice_core::explain::{Alternative, ExplainOptions, Forecast, NoStart};
use sluice_core::limits::QosId;
use sluice_core::{JobId, PartitionId, PartitionState, Scheduler};
use sluice_proto::explain::{
    Awaited, Cause, Expected, Explanation, Priority, Resources, SuggestionSearch,
};
use sluice_proto::time::timestamp;
use sluice_proto::types::JobState;

use super::dependency::DepState;
use super::{Caller, Controller, Job, Reason};
use sluice_proto::types::Hold;

fn cause(family: &str, reason: &str, text: String) -> Cause {
    Cause {
        family: family.into(),
        reason: reason.into(),
        text,
    }
}

/// An explanation in the making: what the controller knew under its lock, and the copy
/// of the scheduler the core explains the job on without it (forward simulations take
/// from milliseconds to seconds; the controller goes on meanwhile).
pub struct ExplainWork {
    e: Explanation,
    core: Option<CoreWork>,
}

/// The core's part of an explanation.
struct CoreWork {
    /// The copy to explain on; `None` when the answer was computed under the lock.
    sched: Option<Scheduler>,
    now: i64,
    options: ExplainOptions,
    forecast: Option<Arc<Forecast>>,
    priority: Priority,
    answer: Option<sluice_core::Explanation>,
}

impl ExplainWork {
    /// Runs the core's part (simulations included): call it without the lock.
    pub fn compute(mut self) -> Self {
        if let Some(c) = &mut self.core {
            if let Some(sched) = c.sched.take() {
                let job = JobId(self.e.job_id);
                c.answer = sluice_core::explain::explain_with(
                    &sched,
                    job,
                    c.now,
                    &c.options,
                    c.forecast.as_deref(),
                );
            }
        }
        self
    }
}

impl Controller {
    /// Explains job `id` (or array task `task` of it) for `caller` at `now`: the three
    /// steps of [`Controller::explain_begin`], [`ExplainWork::compute`] and
    /// [`Controller::explain_finish`] at once.
    ///
    /// Errors: Slurm's `Invalid job id specified` for an unknown job, and for another
    /// user's job under `PrivateData=jobs` (as Slurm hides it).
    pub fn explain(
        &self,
        id: JobId,
        task: Option<u32>,
        caller: &Caller,
        now: i64,
    ) -> Result<Explanation, ApiError> {
        let work = self.explain_begin(id, task, caller, now, true)?.compute();
        Ok(self.explain_finish(work, caller))
    }

    /// The first step of explaining job `id` (or array task `task` of it) for `caller`
    /// at `now`, under the lock: what only the controller knows, and a copy of the
    /// scheduler for the core when the job is queued. With `suggest` false, the search
    /// for suggestions is skipped; then, when the forecast answers for the job, the core
    /// answers here at once (about a millisecond) and no copy is made. Errors as
    /// [`Controller::explain`].
    pub fn explain_begin(
        &self,
        id: JobId,
        task: Option<u32>,
        caller: &Caller,
        now: i64,
        suggest: bool,
    ) -> Result<ExplainWork, ApiError> {
        // A plain id is that record (an array's pending remainder holds its array's id).
        let found = match task {
            None if self.jobs.contains_key(&id) => vec![id],
            _ => self.select(id, task),
        };
        let r = found
            .first()
            .and_then(|id| self.jobs.get(id))
            .ok_or_else(ApiError::invalid_job)?;
        if self.hidden_from(caller, r.uid) {
            return Err(ApiError::invalid_job());
        }
        let live = self.record(r, r.listed_desc());
        let mut e = Explanation {
            job_id: r.id.0,
            display_id: r.display_id(),
            state: live.state.name().to_string(),
            reason: live.reason.clone(),
            now,
            ..Default::default()
        };
        let mut core = None;
        if r.state == JobState::Pending {
            e.causes = self.outside_causes(r, now);
            let priority = Priority {
                value: live.priority,
                factors: self.priority_factors(r, now),
                ..Default::default()
            };
            if self.sched.job(r.id).is_some() {
                let options = ExplainOptions {
                    alternatives: self.alternatives(r, now),
                    counterfactuals: suggest,
                    ..ExplainOptions::default()
                };
                let forecast = self.forecast_at(now);
                let job = r.id;
                // Without suggestions and with a forecast that holds for the job, the
                // core only reads: cheaper than a copy.
                let answers = forecast
                    .as_ref()
                    .is_some_and(|f| f.passes >= options.max_passes || f.start_time(job).is_some());
                let (sched, answer) = if !suggest && answers {
                    let answer = sluice_core::explain::explain_with(
                        &self.sched,
                        job,
                        now,
                        &options,
                        forecast.as_deref(),
                    );
                    (None, answer)
                } else {
                    (Some(self.sched.clone()), None)
                };
                e.suggestion_search = if suggest {
                    SuggestionSearch::None
                } else {
                    SuggestionSearch::Skipped
                };
                core = Some(CoreWork {
                    sched,
                    now,
                    options,
                    forecast,
                    priority,
                    answer,
                });
            } else {
                e.priority = Some(priority);
                if e.causes.is_empty() {
                    e.no_start = Some("it is not in the scheduler's queue".into());
                }
            }
        } else {
            e.history = self.history(r, now);
        }
        Ok(ExplainWork { e, core })
    }

    /// The last step, under the lock again: the core's answer in the cluster's names.
    pub fn explain_finish(&self, work: ExplainWork, caller: &Caller) -> Explanation {
        let ExplainWork { mut e, core } = work;
        let Some(core) = core else {
            return e;
        };
        match (self.jobs.get(&JobId(e.job_id)), core.answer) {
            (Some(r), Some(x)) => self.explain_queued(r, caller, core.priority, &x, &mut e),
            _ => {
                e.priority = Some(core.priority);
                if e.causes.is_empty() {
                    e.no_start = Some("it is not in the scheduler's queue".into());
                }
            }
        }
        e
    }

    /// slurm.conf's `PrivateData`.
    pub fn private_data(&self) -> crate::config::PrivateData {
        self.conf.private_data
    }

    /// Whether `PrivateData=users` hides who `uid` is from `caller`.
    pub(super) fn user_hidden_from(&self, caller: &Caller, uid: u32) -> bool {
        self.conf.private_data.users && !caller.admin && caller.uid != uid
    }

    /// Whether `PrivateData=jobs` hides `uid`'s jobs from `caller`.
    pub(super) fn hidden_from(&self, caller: &Caller, uid: u32) -> bool {
        self.conf.private_data.jobs && !caller.admin && caller.uid != uid
    }

    /// What keeps a pending job out of the scheduler's queue: holds, its previous run
    /// still ending, its dependency, its array's throttle.
    fn outside_causes(&self, r: &Job, now: i64) -> Vec<Cause> {
        let mut out = Vec::new();
        if let Some(hold) = &r.hold {
            let c = if let Hold::ReservationDeleted(name) = hold {
                cause(
                    "hold",
                    "ReservationDeleted",
                    format!(
                        "its reservation {name} was deleted; it is held until released \
                         (scontrol release {})",
                        r.display_id()
                    ),
                )
            } else if hold.requeued() && hold.owners() {
                cause(
                    "hold",
                    Reason::RequeuedHeld.as_str(),
                    format!(
                        "requeued held; its owner or an operator releases it (scontrol release {})",
                        r.display_id()
                    ),
                )
            } else if hold.requeued() {
                cause(
                    "hold",
                    Reason::RequeuedHeld.as_str(),
                    format!(
                        "requeued held, then held by an operator; only an operator may release it (scontrol release {})",
                        r.display_id()
                    ),
                )
            } else if *hold == Hold::Admin {
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
        if r.ending_run.as_ref().is_some_and(|e| e.run != r.restarts) {
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
            if let (Some(limit), Reason::ArrayTaskLimit) = (limit, r.reason) {
                out.push(cause(
                    "limit",
                    "JobArrayTaskLimit",
                    format!("its array runs at most {limit} of its tasks at a time (%{limit})"),
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
                    format_span(begin - now)
                ),
            ));
        }
        out
    }

    /// The parts only the scheduler knows, from the core's explanation of the job (when
    /// it is in the scheduler's queue): the cause behind its reason and every limit
    /// holding it, its resources node by node, its priority and place, its expected
    /// start and the running jobs it waits for, and what would start it sooner.
    fn explain_queued(
        &self,
        r: &Job,
        caller: &Caller,
        mut priority: Priority,
        x: &sluice_core::Explanation,
        e: &mut Explanation,
    ) {
        priority.rank = x.queue.rank;
        priority.of = x.queue.of;
        priority.ahead = x.queue.ahead;
        priority.waiting_ahead = x.queue.waiting_ahead;
        priority.ahead_cpus = x.queue.ahead_demand.cpus;
        priority.ahead_gpus = x.queue.ahead_demand.gpus;
        priority.ahead_nodes = x.queue.ahead_demand.nodes;
        e.priority = Some(priority);
        if let Some(c) = self.reason_cause(r, x.reason, &x.queue) {
            e.causes.push(c);
        }
        if let Some(h) = r.het {
            // A heterogeneous job starts whole: which component it waits for.
            let size = h.size;
            let text = match self.sched.het_waiting_on(r.id, self.sched.last_pass()) {
                Some(m) => format!(
                    "heterogeneous job {}: its {size} components start together, and \
                     component {}+{} does not fit now beside the others",
                    h.job_id,
                    h.job_id,
                    m.0 - h.job_id
                ),
                None => format!(
                    "heterogeneous job {}: its {size} components start together",
                    h.job_id
                ),
            };
            e.causes.push(cause("hetjob", x.reason.as_str(), text));
        }
        // Every limit holding it, its reason's first (Slurm's precedence).
        e.causes
            .extend(x.limits.iter().map(|h| self.limit_cause(h)));
        e.resources = Some(Resources {
            never: x.never_fits.as_ref().map(|n| n.to_string()),
            nodes: x.nodes.iter().map(|g| self.node_line(g)).collect(),
        });
        match &x.start {
            Ok(p) => {
                e.expected = Some(Expected {
                    start: p.at,
                    nodes: self.hostlist(&p.nodes),
                    pass: p.pass.as_str().into(),
                    waits_for: p
                        .waits_for
                        .iter()
                        .map(|w| {
                            let owner = self.jobs.get(&w.job);
                            let hide = owner.is_none_or(|o| self.hidden_from(caller, o.uid));
                            // `PrivateData=users`: the job, not whose it is.
                            let anonymous =
                                hide || owner.is_some_and(|o| self.user_hidden_from(caller, o.uid));
                            Awaited {
                                job_id: (!hide).then_some(w.job.0),
                                user: owner.filter(|_| !anonymous).map(|o| o.user.to_string()),
                                end: w.end,
                            }
                        })
                        .collect(),
                    ..Default::default()
                });
            }
            Err(why) => {
                e.no_start = Some(match x.limits.iter().find(|h| h.never_passes()) {
                    Some(h) => format!(
                        "it can never start: it alone adds {} {}, more than the limit of {} ({})",
                        h.job,
                        self.measure(h.measure),
                        h.limit,
                        h.reason
                    ),
                    None => why.to_string(),
                })
            }
        }
        if let Some(expected) = &mut e.expected {
            expected.planned = self.expected_start(r.id, x.planned);
            expected.plan_differs = expected.planned != Some(expected.start);
        }
        e.suggestions = x
            .counterfactuals
            .iter()
            .map(|c| self.suggestion(r, c))
            .collect();
        // Out of passes, the simulations looked no further than the unchanged one. (Still
        // pending otherwise: nothing was left to happen, or a year passed.)
        e.not_before = match &x.start {
            Err(NoStart::Budget { at }) => {
                let begin = self.sched.job(r.id).map_or(*at, |j| j.spec.begin);
                Some((*at).max(begin))
            }
            _ => None,
        };
        if e.suggestion_search != SuggestionSearch::Skipped {
            let starts_now = x.start.as_ref().is_ok_and(|p| p.at <= x.now);
            e.suggestion_search = if x.counterfactuals_cut {
                SuggestionSearch::Cut
            } else if starts_now {
                SuggestionSearch::None
            } else {
                SuggestionSearch::Complete
            };
        }
    }

    /// The job's weighted priority factors as `sprio -l` names them (multifactor only;
    /// factors of zero left out).
    fn priority_factors(&self, r: &Job, now: i64) -> Vec<(String, f64)> {
        if !self.priority.multifactor() {
            return Vec::new();
        }
        let Ok(spec) = self.core_spec(r) else {
            return Vec::new();
        };
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
        factors
    }

    /// The other partitions (up, and open to the job's account, QOS and group) and the
    /// other QOS of its association that the owner may use, each with the priority the
    /// job would have there.
    fn alternatives(&self, r: &Job, now: i64) -> Vec<Alternative> {
        let mut out = Vec::new();
        let priority_with = |changed: &Job| -> Option<u32> {
            if !self.priority.multifactor() {
                return None;
            }
            let spec = self.core_spec(changed).ok()?;
            Some(
                self.priority
                    .priority(&self.job_factors(changed, &spec), now)
                    .priority
                    .max(1),
            )
        };
        let groups = [r.group.to_string()];
        for (i, p) in self.conf.cluster.partitions.iter().enumerate() {
            if *p.name == *r.partition || p.state != PartitionState::Up {
                continue;
            }
            if p.access.check(&r.account, &r.qos, &groups, false).is_err() {
                continue;
            }
            let mut changed = r.clone();
            changed.partition = p.name.clone().into();
            out.push(Alternative {
                partition: Some(PartitionId(i as u16)),
                qos: None,
                priority: priority_with(&changed),
            });
        }
        if let Some(assoc) = self.assoc_of(r) {
            for name in self.accounts.allowed_qos(assoc) {
                if *name == *r.qos {
                    continue;
                }
                let Some(q) = self.accounts.qos(&name) else {
                    continue;
                };
                let mut changed = r.clone();
                changed.qos = name.clone().into();
                out.push(Alternative {
                    partition: None,
                    qos: Some(QosId(q.id)),
                    priority: priority_with(&changed),
                });
            }
        }
        out
    }

    /// A started job's story from its record: when and where each run started, by
    /// which pass, and how it ended or was preempted.
    fn history(&self, r: &Job, now: i64) -> Vec<String> {
        let mut out = Vec::new();
        if r.restarts > 0 {
            out.push(format!(
                "requeued {} time{} before this run",
                r.restarts,
                if r.restarts == 1 { "" } else { "s" }
            ));
        }
        if let Some(start) = r.start_time {
            let pass = match r.start_pass {
                Some(sluice_proto::types::StartPass::Backfill) => "backfill",
                _ => "main",
            };
            out.push(format!(
                "started {} on {} by the {pass} pass",
                timestamp(start),
                sluice_conf::hostlist::compress(&self.node_names(r))
            ));
            if let Some(s) = r.suspension.as_deref() {
                let secs = s.secs_at(r.end_time.unwrap_or(now));
                match s.since {
                    Some(since) if r.state == JobState::Running => out.push(format!(
                        "suspended by an operator since {} after running {}; it keeps its \
                         nodes, and its time limit waits until it is resumed",
                        timestamp(since),
                        sluice_conf::duration::format_time(Some(s.pre_secs))
                    )),
                    _ => out.push(format!(
                        "stood suspended {} in all; its time limit moved on by that",
                        sluice_conf::duration::format_time(Some(secs))
                    )),
                }
            }
            if let (JobState::Running, Some(limit)) = (r.state, r.time_limit) {
                let over = r.suspension.as_ref().map_or(0, |s| s.secs);
                if !r.suspended() {
                    out.push(format!(
                        "reaches its time limit at {}",
                        timestamp(start + limit + over)
                    ));
                }
            }
            if let Some(idle) = r.idle_gpus.as_deref() {
                out.push(idle.describe(now));
            }
        }
        if let Some(svc) = &r.desc.service {
            out.push(super::service::describe(svc, r.service.as_deref(), r.state));
        }
        match (r.end_time, r.start_time) {
            (Some(end), Some(_)) => out.push(format!(
                "ended {} {} (exit code {})",
                timestamp(end),
                r.state.name(),
                r.exit_code
            )),
            (Some(end), None) => out.push(format!(
                "{} {} without having started",
                r.state.name(),
                timestamp(end)
            )),
            _ => {}
        }
        out
    }
}
