//! Job dependencies (`--dependency`): whether a pending job's conditions hold, and the
//! dependency as `squeue %E` and `scontrol show job` print it.
//!
//! Slurm 22.05's rules, as observed: unknown job ids are dropped (the job runs), except
//! that a held job, which Slurm does not test, still shows them `(unfulfilled)`; a
//! condition that holds disappears from the printed list; one that can no longer hold
//! shows `(failed)` and keeps the job pending with `DependencyNeverSatisfied`; each job
//! of a condition is printed as its own `kind:id(state)` item; an OR list (`?`) is
//! satisfied, and gone, as soon as one item holds. `after:ID+MIN` waits MIN minutes
//! after the job started (or was cancelled without starting).

use sluice_conf::dependency::{parse_dependency, Dependency, DependencyKind, Target};
use sluice_proto::types::JobState;

use super::{Controller, Job};
use sluice_core::JobId;

/// Where one condition on one job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DepState {
    /// It holds.
    Satisfied,
    /// It may still hold.
    Waiting,
    /// It can no longer hold.
    Never,
}

impl DepState {
    fn and(self, o: DepState) -> DepState {
        match (self, o) {
            (DepState::Never, _) | (_, DepState::Never) => DepState::Never,
            (DepState::Waiting, _) | (_, DepState::Waiting) => DepState::Waiting,
            _ => DepState::Satisfied,
        }
    }

    fn or(self, o: DepState) -> DepState {
        match (self, o) {
            (DepState::Satisfied, _) | (_, DepState::Satisfied) => DepState::Satisfied,
            (DepState::Waiting, _) | (_, DepState::Waiting) => DepState::Waiting,
            _ => DepState::Never,
        }
    }
}

/// Slurm's message for a dependency it refuses: one it cannot read, or one on the job
/// itself.
pub(super) const PROBLEM: &str = "Job dependency problem";

/// Whether dependency `dep` names a job whose id is in `ids`.
pub(super) fn names_any(dep: &str, ids: &std::ops::Range<u64>) -> bool {
    let conditions = match parse_dependency(dep) {
        Ok(Dependency::All(c) | Dependency::Any(c)) => c,
        Ok(Dependency::Singleton) | Err(_) => return false,
    };
    conditions
        .iter()
        .flat_map(|c| &c.jobs)
        .any(|t| ids.contains(&t.job))
}

/// Slurm's name for a dependency kind.
fn kind_name(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::After => "after",
        DependencyKind::AfterAny => "afterany",
        DependencyKind::AfterOk => "afterok",
        DependencyKind::AfterNotOk => "afternotok",
        DependencyKind::AfterCorr => "aftercorr",
    }
}

impl Controller {
    /// Whether `r`'s dependency `dep` holds at `now` (Unix seconds). A malformed one
    /// (refused at submission, so only from an older record) never holds.
    pub(super) fn dependency_state(&self, r: &Job, dep: &str, now: i64) -> DepState {
        let Ok(parsed) = parse_dependency(dep) else {
            return DepState::Never;
        };
        let (conds, all) = match parsed {
            Dependency::Singleton => return self.singleton_state(r),
            Dependency::All(conds) => (conds, true),
            Dependency::Any(conds) => (conds, false),
        };
        // Unknown ids are dropped: they count as satisfied.
        let states = conds
            .iter()
            .flat_map(|c| c.jobs.iter().map(move |t| (c.kind, t)))
            .map(|(kind, t)| {
                self.target_state(r, kind, t, now)
                    .unwrap_or(DepState::Satisfied)
            });
        if all {
            states.fold(DepState::Satisfied, DepState::and)
        } else {
            states.fold(DepState::Never, DepState::or)
        }
    }

    /// When an `after:ID+MIN` delay of `r`'s dependency lapses, if one is running at
    /// `now`: the controller looks at the job again then.
    pub(super) fn dependency_due(&self, r: &Job, now: i64) -> Option<i64> {
        let Ok(Dependency::All(conds) | Dependency::Any(conds)) =
            parse_dependency(r.desc.dependency.as_deref()?)
        else {
            return None;
        };
        conds
            .iter()
            .filter(|c| c.kind == DependencyKind::After)
            .flat_map(|c| &c.jobs)
            .filter(|t| t.delay_mins > 0)
            .filter_map(|t| {
                Some(
                    self.after_time(self.target(r, DependencyKind::After, t)?)?
                        + 60 * i64::from(t.delay_mins),
                )
            })
            .filter(|&due| due > now)
            .min()
    }

    /// The dependency as `squeue %E` and `scontrol show job` print it: what is still
    /// waited for `(unfulfilled)`, what can no longer hold `(failed)`; `None` when
    /// nothing is left (Slurm prints `(null)`) or the job is not pending.
    pub(super) fn dependency_display(&self, r: &Job, now: i64) -> Option<String> {
        if r.state != JobState::Pending {
            return None;
        }
        let parsed = parse_dependency(r.desc.dependency.as_deref()?).ok()?;
        let (conds, sep) = match parsed {
            Dependency::Singleton => {
                return (self.singleton_state(r) == DepState::Waiting)
                    .then(|| "singleton(unfulfilled)".to_string());
            }
            Dependency::All(conds) => (conds, ","),
            Dependency::Any(conds) => (conds, "?"),
        };
        let mut items = Vec::new();
        for c in &conds {
            for t in &c.jobs {
                let state = match self.target_state(r, c.kind, t, now) {
                    None if r.held() => DepState::Waiting,
                    None => DepState::Satisfied,
                    Some(s) => s,
                };
                if state == DepState::Satisfied {
                    if sep == "?" {
                        return None;
                    }
                    continue;
                }
                let mut item = format!("{}:{}", kind_name(c.kind), t.job);
                if let Some(task) = t.task {
                    item.push_str(&format!("_{task}"));
                }
                if t.delay_mins > 0 {
                    item.push_str(&format!("+{}", t.delay_mins));
                }
                item.push_str(if state == DepState::Never {
                    "(failed)"
                } else {
                    "(unfulfilled)"
                });
                items.push(item);
            }
        }
        (!items.is_empty()).then(|| items.join(sep))
    }

    /// One sentence per job the dependency still waits for or that can no longer
    /// satisfy it, with that job's state: what `sluice explain` shows.
    pub(super) fn dependency_sentences(&self, r: &Job, now: i64) -> Vec<String> {
        let Some(Ok(parsed)) = r.desc.dependency.as_deref().map(parse_dependency) else {
            return Vec::new();
        };
        let conds = match parsed {
            Dependency::Singleton => {
                let others: Vec<String> =
                    self.singleton_blockers(r).map(|j| j.display_id()).collect();
                if others.is_empty() {
                    return Vec::new();
                }
                return vec![format!(
                    "singleton: it waits until no other job of yours named '{}' runs or waits ahead of it (now: job {})",
                    r.desc.name,
                    others.join(", ")
                )];
            }
            Dependency::All(c) => (c, false),
            Dependency::Any(c) => (c, true),
        };
        let (conds, any) = conds;
        let mut out = Vec::new();
        for c in &conds {
            for t in &c.jobs {
                let Some(state) = self.target_state(r, c.kind, t, now) else {
                    continue;
                };
                if state == DepState::Satisfied {
                    continue;
                }
                let mut named = self.targets(r, c.kind, t);
                // An array's tasks in task order.
                named.sort_by_key(|j| (j.array.map(|a| a.1), j.id));
                let states: Vec<String> = named
                    .iter()
                    .map(|j| format!("{} {}", j.display_id(), j.state.name()))
                    .collect();
                let wants = match c.kind {
                    DependencyKind::After if t.delay_mins == 1 => {
                        "to start, then 1 minute".to_string()
                    }
                    DependencyKind::After if t.delay_mins > 0 => {
                        format!("to start, then {} minutes", t.delay_mins)
                    }
                    DependencyKind::After => "to start".to_string(),
                    DependencyKind::AfterAny => "to end".to_string(),
                    DependencyKind::AfterOk => "to complete successfully".to_string(),
                    DependencyKind::AfterNotOk => "to fail".to_string(),
                    DependencyKind::AfterCorr => {
                        "(the task of the same index) to complete successfully".to_string()
                    }
                };
                let verdict = if state == DepState::Never {
                    "so it can never start (scancel it, or scontrol update its Dependency)"
                } else {
                    "not yet"
                };
                let id = match t.task {
                    Some(task) => format!("{}_{task}", t.job),
                    None => t.job.to_string(),
                };
                out.push(format!(
                    "{}:{id}: it waits for job {id} {wants}; {}: {verdict}",
                    kind_name(c.kind),
                    states.join(", ")
                ));
            }
        }
        if any && out.len() > 1 {
            for line in &mut out {
                line.push_str(" (any one of these is enough: `?`)");
            }
        }
        out
    }

    /// `singleton`: waiting while another job of the same name and user runs, or waits
    /// ahead of it.
    fn singleton_state(&self, r: &Job) -> DepState {
        if self.singleton_blockers(r).next().is_some() {
            DepState::Waiting
        } else {
            DepState::Satisfied
        }
    }

    /// The jobs a `singleton` job waits for: its owner's other jobs of the same name
    /// that run, or wait ahead of it.
    fn singleton_blockers<'a>(&'a self, r: &'a Job) -> impl Iterator<Item = &'a Job> {
        self.jobs.values().filter(move |j| {
            j.id != r.id
                && j.uid == r.uid
                && j.desc.name == r.desc.name
                && (j.state == JobState::Running || (j.state == JobState::Pending && j.id < r.id))
        })
    }

    /// The jobs a condition on `t` reads: the task, the job, or every task of an array
    /// named by its id (`aftercorr`: the task with `r`'s own index). Empty when the id
    /// is unknown.
    fn target(&self, r: &Job, kind: DependencyKind, t: &Target) -> Option<&Job> {
        self.targets(r, kind, t).into_iter().next()
    }

    fn targets(&self, r: &Job, kind: DependencyKind, t: &Target) -> Vec<&Job> {
        let task = if kind == DependencyKind::AfterCorr {
            r.array.map(|a| a.1).or(t.task)
        } else {
            t.task
        };
        let job = JobId(t.job);
        let Some(first) = (match task {
            Some(i) => self.jobs.values().find(|j| j.array == Some((job, i))),
            None => self.jobs.get(&job),
        }) else {
            return Vec::new();
        };
        if task.is_none() && first.array.is_some_and(|a| a.0 == job) {
            self.jobs
                .values()
                .filter(|j| j.array.is_some_and(|a| a.0 == job))
                .collect()
        } else {
            vec![first]
        }
    }

    /// When `after` counts a job as begun: its start, or its end when it was cancelled
    /// without starting.
    fn after_time(&self, j: &Job) -> Option<i64> {
        j.start_time.or(if j.state.is_finished() {
            j.end_time
        } else {
            None
        })
    }

    /// The state of one condition on one named job at `now`; `None` for an unknown id.
    fn target_state(
        &self,
        r: &Job,
        kind: DependencyKind,
        t: &Target,
        now: i64,
    ) -> Option<DepState> {
        let targets = self.targets(r, kind, t);
        if targets.is_empty() {
            return None;
        }
        let one = |j: &Job| match kind {
            DependencyKind::After => match self.after_time(j) {
                Some(at) if at + 60 * i64::from(t.delay_mins) <= now => DepState::Satisfied,
                _ => DepState::Waiting,
            },
            DependencyKind::AfterAny => {
                if j.state.is_finished() {
                    DepState::Satisfied
                } else {
                    DepState::Waiting
                }
            }
            DependencyKind::AfterOk | DependencyKind::AfterCorr => match j.state {
                JobState::Completed => DepState::Satisfied,
                s if s.is_finished() => DepState::Never,
                _ => DepState::Waiting,
            },
            DependencyKind::AfterNotOk => match j.state {
                JobState::Completed => DepState::Never,
                s if s.is_finished() => DepState::Satisfied,
                _ => DepState::Waiting,
            },
        };
        Some(
            targets
                .into_iter()
                .map(one)
                .fold(DepState::Satisfied, DepState::and),
        )
    }
}
