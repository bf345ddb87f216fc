//! The running steps of the cluster's jobs, as `squeue -s` and `scontrol show step`
//! read them (`GET /v1/steps`): each step with what those commands print of its job
//! (partition, owner, array task), so that a listing is one request.

use serde::{Deserialize, Serialize};

use crate::types::StepId;

/// One running step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListedStep {
    /// Its job's id (an array task's own id).
    pub job_id: u64,
    /// For an array task: the array's id and the task's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<(u64, u32)>,
    /// The step.
    pub step: StepId,
    /// Its name (the command's, or `batch`).
    pub name: String,
    /// Its job's partition.
    pub partition: String,
    /// Its owner's uid.
    pub uid: u32,
    /// Its owner's name.
    pub user: String,
    /// When it started, Unix seconds.
    pub start: i64,
    /// Seconds it has run (its suspensions left out), as the controller counted them
    /// when it answered.
    pub run_secs: i64,
    /// Its nodes, in order.
    pub nodes: Vec<String>,
    /// Tasks.
    pub ntasks: u32,
    /// CPUs it holds (0 for the batch step, as Slurm counts it).
    pub cpus: u32,
    /// Memory it may use over all its nodes, MiB (0 for the batch step).
    pub mem_mb: u64,
    /// The host and process id of the srun that started it; none for the batch step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srun: Option<(String, u32)>,
    /// Its own time limit, seconds; none: unlimited (its job's applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<i64>,
    /// GPUs it asked for and holds, over its nodes (`srun --gres=gpu:N`); 0 for a
    /// step that asked for none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gpus: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ListedStep {
    /// Its id as Slurm prints it: `JOB.STEP`, an array task's `ARRAY_TASK.STEP`.
    pub fn id(&self) -> String {
        match self.array {
            Some((a, t)) => format!("{a}_{t}.{}", self.step),
            None => format!("{}.{}", self.job_id, self.step),
        }
    }

    /// Its step number as Slurm orders steps ([`StepId::slurm_number`]).
    pub fn order(&self) -> u32 {
        self.step.slurm_number()
    }

    /// Its trackable resources as `scontrol show step` prints them (`cpu=4,mem=2000M,
    /// node=2`); `None` for the batch step, whose are its job's.
    pub fn tres(&self) -> Option<String> {
        (self.step != StepId::Batch).then(|| {
            let gpus = if self.gpus > 0 {
                format!("gres/gpu={},", self.gpus)
            } else {
                String::new()
            };
            // No memory (nodes without `RealMemory`) is left out, as in the job's.
            let mem = if self.mem_mb > 0 {
                format!("mem={}M,", self.mem_mb)
            } else {
                String::new()
            };
            format!("cpu={},{gpus}{mem}node={}", self.cpus, self.nodes.len())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: StepId, array: Option<(u64, u32)>) -> ListedStep {
        ListedStep {
            time_limit: None,
            gpus: 0,
            srun: None,
            job_id: 12,
            array,
            step,
            name: "x".into(),
            partition: "p".into(),
            uid: 0,
            user: "root".into(),
            start: 0,
            run_secs: 0,
            nodes: vec!["n1".into(), "n2".into()],
            ntasks: 2,
            cpus: 4,
            mem_mb: 2000,
        }
    }

    #[test]
    fn ids_name_the_array_task_and_the_step() {
        assert_eq!(step(StepId::Number(0), None).id(), "12.0");
        assert_eq!(step(StepId::Batch, None).id(), "12.batch");
        assert_eq!(step(StepId::Part(3, 1), None).id(), "12.3+1");
        assert_eq!(step(StepId::Number(1), Some((10, 4))).id(), "10_4.1");
    }

    #[test]
    fn numbered_steps_come_before_the_batch_and_extern_steps() {
        let order: Vec<u32> = [StepId::Extern, StepId::Batch, StepId::Number(7)]
            .into_iter()
            .map(|s| step(s, None).order())
            .collect();
        assert!(order[2] < order[1] && order[1] < order[0], "{order:?}");
    }

    #[test]
    fn the_batch_step_has_no_trackable_resources_of_its_own() {
        assert_eq!(step(StepId::Batch, None).tres(), None);
        assert_eq!(
            step(StepId::Number(0), None).tres().as_deref(),
            Some("cpu=4,mem=2000M,node=2")
        );
    }
}
