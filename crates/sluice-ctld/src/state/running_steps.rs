//! The running steps of every job (`squeue -s`, `scontrol show step`): each running
//! batch job's batch step and each step the controller holds running, with what those
//! commands print of the job.

use sluice_core::JobId;
use sluice_proto::steps::ListedStep;
use sluice_proto::types::{JobState, MemoryRequest, StepId, StepRecord};

use super::job::Job;
use super::Controller;

impl Controller {
    /// The running steps of the jobs the caller may see (`hidden`: the only owner it
    /// may see, under `PrivateData=jobs`), job by job: a batch job's batch step, then
    /// its srun steps, each with the seconds it has run by `now`.
    pub fn running_steps(&mut self, hidden: Option<u32>, now: i64) -> Vec<ListedStep> {
        // Only the jobs holding processors are looked at, not the whole table.
        let running: Vec<JobId> = self
            .jobs
            .holding()
            .filter(|j| j.state == JobState::Running)
            .filter(|j| hidden.is_none_or(|uid| j.uid == uid))
            .map(|j| j.id)
            .collect();
        let gpus_tracked = self.conf.accounting_tres.iter().any(|t| t == "gres/gpu");
        let mut out = Vec::new();
        for id in running {
            let job = &self.jobs[&id];
            let listed = |step: &StepRecord| {
                let suspension = job.suspension.as_deref();
                let run = now - step.start - step.suspended_secs_at(suspension, now);
                let batch = step.step == StepId::Batch;
                ListedStep {
                    time_limit: step.time_limit,
                    // Counted where accounting tracks GPUs (`AccountingStorageTRES=gres/gpu`),
                    // as the job's TRES.
                    gpus: if gpus_tracked {
                        step.gpus.iter().map(|g| g.len() as u32).sum()
                    } else {
                        0
                    },
                    job_id: job.id.0,
                    array: job.array.map(|(a, t)| (a.0, t)),
                    step: step.step,
                    name: step.name.clone(),
                    partition: job.partition.to_string(),
                    uid: job.uid,
                    user: job.user.to_string(),
                    start: step.start,
                    run_secs: run.max(0),
                    nodes: step.nodes.clone(),
                    ntasks: step.ntasks,
                    cpus: if batch { 0 } else { step.cpus },
                    mem_mb: if batch {
                        0
                    } else {
                        self.step_memory(job, step)
                    },
                    srun: step.srun.clone(),
                }
            };
            let first = job.node_ids().next();
            if let (false, Some(node)) = (job.desc.interactive, first) {
                // The batch step stands through its job's suspensions: those over are
                // the job's own.
                let batch = StepRecord {
                    time_limit: None,
                    submit_line: None,
                    timed_out: false,
                    gpus: Vec::new(),
                    srun: None,
                    cancelled_by: None,
                    job_id: id.0,
                    step: StepId::Batch,
                    name: "batch".into(),
                    state: JobState::Running,
                    start: job.start_time.unwrap_or_default(),
                    end: None,
                    exit_code: 0,
                    signal: 0,
                    nodes: vec![self.conf.cluster.node(node).name.clone()],
                    ntasks: 1,
                    cpus: 0,
                    held_cpus: Vec::new(),
                    ended_on: Vec::new(),
                    usage: None,
                    run: job.restarts,
                    suspended_secs: job.suspension.as_ref().map_or(0, |s| s.secs),
                };
                out.push(listed(&batch));
            }
            let steps = self
                .steps
                .range((id, StepId::Extern)..=(id, StepId::LAST))
                .map(|(_, s)| s)
                .filter(|s| s.state == JobState::Running);
            out.extend(steps.map(listed));
        }
        out
    }

    /// The memory a step may use over its nodes, MiB: its job's memory per CPU times
    /// the step's CPUs, or its job's memory per node on each of them.
    fn step_memory(&self, job: &Job, step: &StepRecord) -> u64 {
        match job.desc.memory.or(job.mem_default) {
            // Memory per CPU follows the step's own CPUs (`--exact`: those its tasks
            // ask), as sacct's AllocTRES of the step.
            Some(MemoryRequest::PerCpu(m)) => m * u64::from(step.cpus),
            _ => job.mem_per_node * step.nodes.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_proto::types::{MemoryRequest, StepId, StepRequest};

    use crate::state::tests::{alice, conf, desc, root, submit};
    use crate::state::Controller;

    #[test]
    fn a_running_job_lists_its_batch_step_then_its_srun_steps_with_their_memory() {
        // Four tasks at 500 MiB a CPU on two 2-CPU nodes; one srun step on both, started
        // at 10, listed at 25.
        let mut c = Controller::new(conf(2, 2), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let mut d = desc(4, 600);
        d.memory = Some(MemoryRequest::PerCpu(500));
        let (id, _) = submit(&mut c, d, &mut next, 0);
        // A job still pending has no steps to list.
        let (pending, _) = submit(&mut c, desc(4, 600), &mut next, 0);
        c.schedule(5);
        let req = StepRequest {
            ntasks: Some(2),
            name: "inner".into(),
            srun: Some(("login1".into(), 4242)),
            ..Default::default()
        };
        c.start_step(id, &req, &alice(), 10).unwrap();

        let steps = c.running_steps(None, 25);
        let shown: Vec<(String, u32, u64, i64, usize)> = steps
            .iter()
            .map(|s| (s.id(), s.cpus, s.mem_mb, s.run_secs, s.nodes.len()))
            .collect();
        assert_eq!(
            shown,
            [
                (format!("{}.batch", id.0), 0, 0, 20, 1),
                (format!("{}.0", id.0), 4, 2000, 15, 2),
            ]
        );
        assert!(steps.iter().all(|s| s.job_id != pending.0));
        assert_eq!(steps[1].step, StepId::Number(0));
        assert_eq!(steps[1].user, "alice");
        assert_eq!(steps[1].partition, "debug");
        // The srun that asked for the step: its host and pid.
        assert_eq!(steps[1].srun, Some(("login1".to_string(), 4242)));
        assert_eq!(steps[0].srun, None);

        // Under PrivateData=jobs another user sees none of them.
        assert!(c.running_steps(Some(1001), 25).is_empty());
        assert_eq!(c.running_steps(Some(1000), 25).len(), 2);
    }

    #[test]
    fn a_suspension_does_not_count_in_the_run_time_of_any_step() {
        // Started at 5, a step at 10, suspended from 20 to 50, listed at 60: the batch
        // step ran 25 s, the srun step 20 s.
        let mut c = Controller::new(conf(1, 2), Path::new("/s"), vec![], vec![], 0);
        let mut next = 1;
        let (id, _) = submit(&mut c, desc(1, 600), &mut next, 0);
        c.schedule(5);
        c.start_step(id, &StepRequest::default(), &alice(), 10)
            .unwrap();
        c.suspend(id, true, &root(), 20).unwrap();
        let run = |c: &mut Controller, t| -> Vec<i64> {
            c.running_steps(None, t)
                .iter()
                .map(|s| s.run_secs)
                .collect()
        };
        // While suspended, the time stands still.
        assert_eq!(run(&mut c, 40), [15, 10]);
        c.suspend(id, false, &root(), 50).unwrap();
        assert_eq!(run(&mut c, 60), [25, 20]);
    }
}
