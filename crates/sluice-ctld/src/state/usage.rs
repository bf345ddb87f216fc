//! What running steps use, as their nodes' agents last said ([`UsageReport`]s every
//! `JobAcctGatherFrequency` seconds, and each node's final figures with its end report):
//! kept per step and node, merged when asked (`sstat`, the idle-GPU check) and into a
//! step's record when it ends (`sacct`).
//!
//! A node's final figures replace its samples and are not replaced by a later sample. A
//! job's figures are kept for [`KEEP_AFTER_END`] after its end, so that a node whose
//! final word comes after the job ended (its step's tasks outlived the batch script)
//! still replaces its own samples in the step's record rather than adding to them.

use std::collections::{BTreeMap, BTreeSet};

use sluice_core::JobId;
use sluice_proto::error::ApiError;
use sluice_proto::types::{JobState, StepId, StepRecord};
use sluice_proto::usage::{StepUsage, UsageReport};

use super::{Caller, Controller, Effect};

/// How long a job's per-node figures are kept after it ended, seconds.
pub(crate) const KEEP_AFTER_END: i64 = 600;

/// One node's figures for a step.
#[derive(Clone, Debug)]
struct NodeFigures {
    usage: StepUsage,
    /// Its final figures (sent with the end of the step's tasks there).
    last: bool,
}

/// A job run's steps' figures.
#[derive(Debug, Default)]
struct JobFigures {
    run: u32,
    steps: BTreeMap<StepId, BTreeMap<String, NodeFigures>>,
    /// When the job ended (then kept until [`KEEP_AFTER_END`] later).
    ended_at: Option<i64>,
}

/// The running jobs' step figures, per node.
#[derive(Debug, Default)]
pub(crate) struct LiveUsage {
    jobs: BTreeMap<JobId, JobFigures>,
    /// The ended jobs of `jobs` by end (an entry whose job ran again since is stale):
    /// a sweep looks only at those due to go.
    ended: BTreeSet<(i64, JobId)>,
}

impl LiveUsage {
    /// The figures of `run` of `job`, started anew if an earlier run's were kept.
    fn job(&mut self, job: JobId, run: u32) -> Option<&mut JobFigures> {
        let f = self.jobs.entry(job).or_insert_with(|| JobFigures {
            run,
            ..JobFigures::default()
        });
        if f.run < run {
            *f = JobFigures {
                run,
                ..JobFigures::default()
            };
        }
        (f.run == run).then_some(f)
    }

    /// A node's latest figures for a running step; ignored once its final ones came.
    pub(crate) fn sample(&mut self, job: JobId, run: u32, step: StepId, node: &str, u: &StepUsage) {
        let Some(f) = self.job(job, run) else {
            return;
        };
        let nodes = f.steps.entry(step).or_default();
        match nodes.get_mut(node) {
            Some(n) if n.last => {}
            Some(n) => n.usage = u.clone(),
            None => {
                nodes.insert(
                    node.to_string(),
                    NodeFigures {
                        usage: u.clone(),
                        last: false,
                    },
                );
            }
        }
    }

    /// A node's final figures for a step.
    pub(crate) fn last(&mut self, job: JobId, run: u32, step: StepId, node: &str, u: &StepUsage) {
        let Some(f) = self.job(job, run) else {
            return;
        };
        f.steps.entry(step).or_default().insert(
            node.to_string(),
            NodeFigures {
                usage: u.clone(),
                last: true,
            },
        );
    }

    /// A step's figures merged over its nodes (in the nodes' name order), if any node
    /// has said something.
    pub(crate) fn merged(&self, job: JobId, step: StepId) -> Option<Box<StepUsage>> {
        let nodes = self.jobs.get(&job)?.steps.get(&step)?;
        (!nodes.is_empty()).then(|| Box::new(StepUsage::merged(nodes.values().map(|n| &n.usage))))
    }

    /// `job` ended at `now`: its figures go [`KEEP_AFTER_END`] later; jobs that ended
    /// longer ago than that go now.
    pub(crate) fn job_ended(&mut self, job: JobId, now: i64) {
        if let Some(f) = self.jobs.get_mut(&job) {
            if f.ended_at.is_none() {
                f.ended_at = Some(now);
                self.ended.insert((now, job));
            }
        }
        self.sweep(now);
    }

    /// Drops the figures of jobs that ended more than [`KEEP_AFTER_END`] ago. Costs
    /// the jobs dropped, not a look at every job.
    pub(crate) fn sweep(&mut self, now: i64) {
        while let Some(&(t, job)) = self.ended.first() {
            if now - t <= KEEP_AFTER_END {
                break;
            }
            self.ended.pop_first();
            // Unless it ran again since (its figures were started anew).
            if self.jobs.get(&job).is_some_and(|f| f.ended_at == Some(t)) {
                self.jobs.remove(&job);
            }
        }
    }

    /// How many jobs have figures (for tests and memory accounting).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }
}

impl Controller {
    /// An agent's periodic figures for a job run's steps on its node, also watched for
    /// idle GPUs (the effects are the idle-GPU check's, see `idle_gpus.rs`). Figures
    /// for a job or step that does not run (any more), or of an earlier run, change
    /// nothing.
    ///
    /// Errors: the caller is not an agent (root or the SlurmUser).
    pub fn usage_report(
        &mut self,
        report: &UsageReport,
        caller: &Caller,
        now: i64,
    ) -> Result<Vec<Effect>, ApiError> {
        if !caller.admin {
            return Err(ApiError::access_denied());
        }
        self.usage.sweep(now);
        let job = JobId(report.job);
        let Some(r) = self.jobs.get(&job) else {
            return Ok(Vec::new());
        };
        if r.state != JobState::Running || r.restarts != report.run {
            return Ok(Vec::new());
        }
        for (step, u) in &report.steps {
            // An agent knows a step by its number: on its node, that is the step, or
            // the part of a heterogeneous step that runs there.
            let step = match *step {
                StepId::Number(n) if !self.steps.contains_key(&(job, StepId::Number(n))) => self
                    .steps
                    .range((job, StepId::Part(n, 0))..=(job, StepId::Part(n, u32::MAX)))
                    .find(|(_, s)| s.nodes.contains(&report.node))
                    .map_or(StepId::Number(n), |(k, _)| k.1),
                other => other,
            };
            let runs = match step {
                StepId::Batch | StepId::Extern => true,
                StepId::Number(_) | StepId::Part(..) => {
                    self.steps.get(&(job, step)).is_some_and(|s| {
                        s.state == JobState::Running && s.nodes.contains(&report.node)
                    })
                }
            };
            if runs {
                self.usage.sample(job, report.run, step, &report.node, u);
            }
        }
        Ok(self.watch_gpus(report, now))
    }

    /// A running job's steps with what they have used so far (`sstat`): its batch
    /// script's (while it runs) and each running srun step's, merged over their nodes;
    /// `usage` is `None` where no agent has said anything yet. Empty for a job that
    /// does not run. `hidden`: under `PrivateData=jobs`, the only owner whose jobs the
    /// caller may see.
    ///
    /// Errors: Slurm's `Invalid job id specified` for an unknown (or hidden) job.
    pub fn job_usage(&self, job: JobId, hidden: Option<u32>) -> Result<Vec<StepRecord>, ApiError> {
        let r = self
            .jobs
            .get(&job)
            .filter(|r| hidden.is_none_or(|uid| r.uid == uid))
            .ok_or_else(ApiError::invalid_job)?;
        if r.state != JobState::Running {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if !r.desc.interactive {
            let node = r
                .node_ids()
                .next()
                .map(|n| self.conf.cluster.node(n).name.clone());
            out.push(StepRecord {
                time_limit: None,
                submit_line: None,
                timed_out: false,
                gpus: Vec::new(),
                srun: None,
                cancelled_by: None,
                job_id: job.0,
                step: StepId::Batch,
                name: "batch".into(),
                state: JobState::Running,
                start: r.start_time.unwrap_or_default(),
                end: None,
                exit_code: 0,
                signal: 0,
                nodes: node.into_iter().collect(),
                ntasks: 1,
                cpus: r.alloc.first().map_or(1, |s| s.cpus),
                held_cpus: Vec::new(),
                ended_on: Vec::new(),
                usage: self.usage.merged(job, StepId::Batch),
                run: r.restarts,
                suspended_secs: 0,
            });
        }
        let steps = self
            .steps
            .range((job, StepId::Number(0))..=(job, StepId::LAST))
            .map(|(_, s)| s)
            .filter(|s| s.state == JobState::Running);
        for s in steps {
            let mut s = s.clone();
            s.usage = self.usage.merged(job, s.step);
            s.held_cpus.clear();
            s.ended_on.clear();
            out.push(s);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod story;

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::usage::Stat;

    fn rss(node: &str, task: u32, bytes: u64) -> StepUsage {
        StepUsage {
            tasks: 1,
            rss: Stat::one(bytes, node, task),
            ..StepUsage::default()
        }
    }

    /// The one job's figures in `live`, ended at `end`, are still there
    /// [`KEEP_AFTER_END`] later, and gone a second after.
    fn kept_until_then_dropped(live: &mut LiveUsage, end: i64) {
        live.sweep(end + KEEP_AFTER_END);
        assert_eq!(live.len(), 1);
        live.sweep(end + 1 + KEEP_AFTER_END);
        assert_eq!(live.len(), 0);
    }

    #[test]
    fn a_nodes_sample_is_replaced_by_its_next_and_its_final_figures_by_nothing() {
        let mut live = LiveUsage::default();
        let (job, step) = (JobId(7), StepId::Number(0));
        live.sample(job, 0, step, "n1", &rss("n1", 0, 100));
        live.sample(job, 0, step, "n2", &rss("n2", 1, 50));
        live.sample(job, 0, step, "n1", &rss("n1", 0, 300));
        let u = live.merged(job, step).unwrap();
        assert_eq!((u.tasks, u.rss.max, u.rss.tot), (2, 300, 350));
        live.last(job, 0, step, "n2", &rss("n2", 1, 80));
        live.sample(job, 0, step, "n2", &rss("n2", 1, 10)); // late sample: ignored
        let u = live.merged(job, step).unwrap();
        assert_eq!((u.tasks, u.rss.min, u.rss.min_node.as_str()), (2, 80, "n2"));
    }

    #[test]
    fn an_earlier_runs_figures_give_way_and_are_not_taken_afterwards() {
        let mut live = LiveUsage::default();
        let job = JobId(9);
        live.sample(job, 0, StepId::Batch, "n1", &rss("n1", 0, 100));
        live.sample(job, 1, StepId::Batch, "n1", &rss("n1", 0, 7));
        live.sample(job, 0, StepId::Batch, "n1", &rss("n1", 0, 100)); // stale run
        assert_eq!(live.merged(job, StepId::Batch).unwrap().rss.max, 7);
    }

    #[test]
    fn an_ended_jobs_figures_are_kept_for_late_final_words_then_dropped() {
        let mut live = LiveUsage::default();
        live.sample(JobId(1), 0, StepId::Number(0), "n1", &rss("n1", 0, 1));
        live.job_ended(JobId(1), 1000);
        live.last(JobId(1), 0, StepId::Number(0), "n1", &rss("n1", 0, 5));
        assert_eq!(live.merged(JobId(1), StepId::Number(0)).unwrap().rss.max, 5);
        kept_until_then_dropped(&mut live, 1000);
    }

    #[test]
    fn final_figures_that_come_after_the_end_go_in_time_too() {
        // A short step's only figures, its node's final word, after the job ended:
        // the controller marks them ended when they come (`step_ended_on`).
        let mut live = LiveUsage::default();
        live.job_ended(JobId(4), 1000);
        live.last(JobId(4), 0, StepId::Number(0), "n2", &rss("n2", 0, 5));
        live.job_ended(JobId(4), 1001);
        kept_until_then_dropped(&mut live, 1001);
    }

    #[test]
    fn a_job_that_runs_again_keeps_its_new_runs_figures_past_its_first_end() {
        let mut live = LiveUsage::default();
        let job = JobId(3);
        live.sample(job, 0, StepId::Batch, "n1", &rss("n1", 0, 1));
        live.job_ended(job, 1000);
        // Requeued: its second run reports before the first run's figures are due to go.
        live.sample(job, 1, StepId::Batch, "n1", &rss("n1", 0, 9));
        live.sweep(1001 + KEEP_AFTER_END);
        assert_eq!(live.merged(job, StepId::Batch).unwrap().rss.max, 9);
        live.job_ended(job, 2000);
        kept_until_then_dropped(&mut live, 2000);
    }
}
