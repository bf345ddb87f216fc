//! What a job step really used, as the node agents measure it (Slurm's
//! `jobacct_gather`): CPU time, memory, disk I/O and, on GPU nodes, each allocated GPU's
//! utilisation, memory and power.
//!
//! Each agent measures the tasks of a step on its node and sends a [`StepUsage`] for
//! them: every `JobAcctGatherFrequency` seconds while the step runs ([`UsageReport`],
//! what `sstat` and the idle-GPU check read) and once more with the step's end (in
//! `StepEnded`, or `JobEnded` for the batch step). The controller merges the nodes'
//! figures ([`StepUsage::merge`]) into the step's record, which `sacct` reads.
//!
//! The figures follow Slurm's accounting: for each quantity the largest task's value
//! with its node and task ([`Stat::max`]), the smallest ([`Stat::min`]) and the sum over
//! the tasks ([`Stat::tot`]; Slurm's `Ave*` fields are that sum over the tasks).

use serde::{Deserialize, Serialize};

use crate::client::{Client, ClientError};
use crate::types::{StepId, StepRecord};

/// One quantity over a step's tasks: the largest and smallest task's value (with the
/// node and task that had it) and the sum over all tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    /// The largest value of one task.
    pub max: u64,
    /// The node of that task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub max_node: String,
    /// That task's id in the step (Slurm's global task id).
    #[serde(default)]
    pub max_task: u32,
    /// The smallest value of one task.
    pub min: u64,
    /// The node of that task.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub min_node: String,
    /// That task's id.
    #[serde(default)]
    pub min_task: u32,
    /// The sum over the tasks.
    pub tot: u64,
}

impl Stat {
    /// One task's value.
    pub fn one(value: u64, node: &str, task: u32) -> Stat {
        Stat {
            max: value,
            max_node: node.to_string(),
            max_task: task,
            min: value,
            min_node: node.to_string(),
            min_task: task,
            tot: value,
        }
    }

    /// Adds another set of tasks' figures (`self` and `other` cover different tasks).
    /// On equal values the task already held stays (the lower node or task, when the
    /// figures are added in that order), so merging is deterministic.
    pub fn merge(&mut self, other: &Stat) {
        if other.max > self.max {
            self.max = other.max;
            self.max_node.clone_from(&other.max_node);
            self.max_task = other.max_task;
        }
        if other.min < self.min {
            self.min = other.min;
            self.min_node.clone_from(&other.min_node);
            self.min_task = other.min_task;
        }
        self.tot = self.tot.saturating_add(other.tot);
    }

    /// The mean over `tasks` tasks (0 for none).
    pub fn ave(&self, tasks: u32) -> u64 {
        if tasks == 0 {
            0
        } else {
            self.tot / u64::from(tasks)
        }
    }
}

/// One GPU allocated to a step, as sampled on its node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuUsage {
    /// The node.
    pub node: String,
    /// The GPU's index on its node (the index in `gres.conf`'s order, which
    /// `CUDA_VISIBLE_DEVICES` uses).
    pub index: u32,
    /// How many samples were taken.
    pub samples: u32,
    /// The sum of the samples' utilisation, percent (0–100 each): the mean is
    /// [`GpuUsage::util_mean`].
    pub util_sum: u64,
    /// Highest utilisation seen, percent.
    pub util_max: u32,
    /// Utilisation at the last sample, percent.
    pub util_now: u32,
    /// Highest memory used, bytes.
    pub mem_max: u64,
    /// Memory used at the last sample, bytes.
    pub mem_now: u64,
    /// The sum of the samples' power draw, milliwatts (`None` where the GPU does not
    /// say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_sum_mw: Option<u64>,
}

impl GpuUsage {
    /// Mean utilisation over the samples, percent.
    pub fn util_mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.util_sum as f64 / f64::from(self.samples)
        }
    }

    /// Mean power draw over the samples, milliwatts.
    pub fn power_mean_mw(&self) -> Option<u64> {
        self.power_sum_mw
            .map(|p| p / u64::from(self.samples.max(1)))
    }
}

/// A step's GPU figures as TRES usage quantities (`gres/gpuutil`, `gres/gpumem`), `None`
/// without sampled GPUs. Slurm 23.02+ measures them per task; Sluice samples each
/// allocated GPU, and counts each GPU as one "task" of these two quantities: `gpuutil`
/// is a GPU's mean utilisation over the step's life (percent, rounded), `gpumem` its
/// highest memory use (bytes); Max and Min are the busiest and idlest GPU (with its
/// node, and its index on that node as the task), Tot the sum over the GPUs and Ave
/// their mean.
pub fn gpu_stats(gpus: &[GpuUsage]) -> Option<(Stat, Stat)> {
    let mut all: Option<(Stat, Stat)> = None;
    for g in gpus {
        let util = Stat::one(g.util_mean().round() as u64, &g.node, g.index);
        let mem = Stat::one(g.mem_max, &g.node, g.index);
        match &mut all {
            Some((u, m)) => {
                u.merge(&util);
                m.merge(&mem);
            }
            None => all = Some((util, mem)),
        }
    }
    all
}

/// What a step's tasks used: on one node (as an agent reports it) or on all of its
/// nodes (merged by the controller).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUsage {
    /// How many tasks the figures cover.
    pub tasks: u32,
    /// CPU time, user and system, milliseconds (`TotalCPU`, `AveCPU`, `MinCPU`).
    pub cpu_ms: Stat,
    /// User CPU time of all tasks, milliseconds (`UserCPU`).
    pub user_cpu_ms: u64,
    /// System CPU time of all tasks, milliseconds (`SystemCPU`).
    pub system_cpu_ms: u64,
    /// Each task's peak resident memory, bytes (`MaxRSS`, `AveRSS`; TRES `mem`).
    pub rss: Stat,
    /// Each task's peak virtual memory, bytes (`MaxVMSize`, `AveVMSize`; TRES `vmem`).
    pub vmem: Stat,
    /// Each task's major page faults (`MaxPages`, `AvePages`; TRES `pages`).
    pub pages: Stat,
    /// Bytes each task read (`MaxDiskRead`, `AveDiskRead`; TRES `fs/disk` in).
    pub disk_read: Stat,
    /// Bytes each task wrote (`MaxDiskWrite`, `AveDiskWrite`; TRES `fs/disk` out).
    pub disk_write: Stat,
    /// The step's GPUs (empty on nodes without GPUs or where they cannot be sampled).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuUsage>,
    /// When the figures were taken, Unix seconds.
    #[serde(default)]
    pub sampled_at: i64,
}

impl StepUsage {
    /// Adds another node's (or other tasks') figures. A GPU both name (same node and
    /// index) keeps `other`'s, the later figures.
    pub fn merge(&mut self, other: &StepUsage) {
        if self.tasks == 0 {
            let gpus = std::mem::take(&mut self.gpus);
            *self = other.clone();
            for g in gpus {
                if !self
                    .gpus
                    .iter()
                    .any(|h| h.node == g.node && h.index == g.index)
                {
                    self.gpus.push(g);
                }
            }
            self.sort_gpus();
            return;
        }
        if other.tasks > 0 {
            self.tasks += other.tasks;
            self.cpu_ms.merge(&other.cpu_ms);
            self.user_cpu_ms = self.user_cpu_ms.saturating_add(other.user_cpu_ms);
            self.system_cpu_ms = self.system_cpu_ms.saturating_add(other.system_cpu_ms);
            self.rss.merge(&other.rss);
            self.vmem.merge(&other.vmem);
            self.pages.merge(&other.pages);
            self.disk_read.merge(&other.disk_read);
            self.disk_write.merge(&other.disk_write);
        }
        for g in &other.gpus {
            match self
                .gpus
                .iter_mut()
                .find(|h| h.node == g.node && h.index == g.index)
            {
                Some(h) => *h = g.clone(),
                None => self.gpus.push(g.clone()),
            }
        }
        self.sort_gpus();
        self.sampled_at = self.sampled_at.max(other.sampled_at);
    }

    /// Merges every node's figures, in the order given.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a StepUsage>) -> StepUsage {
        let mut all = StepUsage::default();
        for p in parts {
            all.merge(p);
        }
        all
    }

    /// The mean utilisation of the step's GPUs over its life, percent (`None` without
    /// sampled GPUs).
    pub fn gpu_util_mean(&self) -> Option<f64> {
        if self.gpus.is_empty() {
            return None;
        }
        Some(self.gpus.iter().map(GpuUsage::util_mean).sum::<f64>() / self.gpus.len() as f64)
    }

    fn sort_gpus(&mut self) {
        self.gpus
            .sort_by(|a, b| (&a.node, a.index).cmp(&(&b.node, b.index)));
    }
}

/// A running job flagged for idle GPUs: of the GPUs it holds, how many its agents have
/// seen under the site's threshold (sluice.conf's `IdleGpuThreshold`, percent) for at
/// least `IdleGpuTime`, and since when the longest-idle of them has been.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleGpus {
    /// GPUs the job holds.
    pub held: u32,
    /// Of those, how many are idle.
    pub idle: u32,
    /// Since when (Unix seconds) the longest-idle of them has been under the threshold.
    pub since: i64,
    /// The threshold, percent utilisation.
    pub threshold: u32,
}

impl IdleGpus {
    /// `holds 8 GPUs; 7 idle (under 5% utilisation) for the last 42 min` (at `now`;
    /// seconds under a minute).
    pub fn describe(&self, now: i64) -> String {
        let secs = (now - self.since).max(0);
        let span = if secs < 60 {
            format!("{secs} s")
        } else {
            format!("{} min", secs / 60)
        };
        let gpus = if self.held == 1 { "GPU" } else { "GPUs" };
        format!(
            "holds {} {gpus}; {} idle (under {}% utilisation) for the last {span}",
            self.held, self.idle, self.threshold
        )
    }
}

/// An agent's periodic report of its running steps' usage on its node (every
/// `JobAcctGatherFrequency` seconds): what `sstat` shows and what the idle-GPU check
/// watches. Each report replaces the node's earlier figures for those steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// The job.
    pub job: u64,
    /// Its run (`SLURM_RESTART_COUNT`).
    pub run: u32,
    /// The reporting node.
    pub node: String,
    /// Each running step's figures on this node so far.
    pub steps: Vec<(StepId, StepUsage)>,
}

/// The controller's routes for usage.
impl Client {
    /// `POST /v1/agent/usage`: an agent's periodic figures (agents only).
    pub fn usage_report(&self, report: &UsageReport) -> Result<(), ClientError> {
        self.post::<_, serde_json::Value>("/v1/agent/usage", report)
            .map(|_| ())
    }

    /// `GET /v1/jobs/{id}/usage` (`sstat`): a running job's running steps (its batch
    /// script included) with what they used so far, merged over their nodes; empty for
    /// a job that does not run.
    pub fn job_usage(&self, job: u64) -> Result<Vec<StepRecord>, ClientError> {
        self.get(&format!("/v1/jobs/{job}/usage"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, first_task: u32, rss: &[u64]) -> StepUsage {
        let mut u = StepUsage::default();
        for (i, r) in rss.iter().enumerate() {
            let task = first_task + i as u32;
            let one = StepUsage {
                tasks: 1,
                rss: Stat::one(*r, name, task),
                cpu_ms: Stat::one(1000, name, task),
                user_cpu_ms: 900,
                system_cpu_ms: 100,
                ..StepUsage::default()
            };
            u.merge(&one);
        }
        u
    }

    #[test]
    fn two_nodes_merge_into_the_largest_and_smallest_task_and_their_sum() {
        let a = node("n1", 0, &[10, 30]);
        let b = node("n2", 2, &[50, 5]);
        let all = StepUsage::merged([&a, &b]);
        assert_eq!(all.tasks, 4);
        assert_eq!(
            (all.rss.max, all.rss.max_node.as_str(), all.rss.max_task),
            (50, "n2", 2)
        );
        assert_eq!(
            (all.rss.min, all.rss.min_node.as_str(), all.rss.min_task),
            (5, "n2", 3)
        );
        assert_eq!(all.rss.tot, 95);
        assert_eq!(all.rss.ave(all.tasks), 23);
        assert_eq!(all.cpu_ms.tot, 4000);
        assert_eq!((all.user_cpu_ms, all.system_cpu_ms), (3600, 400));
        // Merging in the other order gives the same figures.
        assert_eq!(StepUsage::merged([&b, &a]).rss, all.rss);
    }

    #[test]
    fn an_idle_flag_says_how_long_in_minutes_or_under_one_in_seconds() {
        let f = IdleGpus {
            held: 8,
            idle: 7,
            since: 1000,
            threshold: 5,
        };
        assert_eq!(
            f.describe(1000 + 42 * 60 + 59),
            "holds 8 GPUs; 7 idle (under 5% utilisation) for the last 42 min"
        );
        let one = IdleGpus {
            held: 1,
            idle: 1,
            ..f
        };
        assert_eq!(
            one.describe(1010),
            "holds 1 GPU; 1 idle (under 5% utilisation) for the last 10 s"
        );
    }

    #[test]
    fn a_gpu_reported_again_keeps_the_later_figures() {
        let gpu = |util| GpuUsage {
            node: "n1".into(),
            index: 1,
            samples: 2,
            util_sum: util,
            ..GpuUsage::default()
        };
        let mut u = StepUsage {
            gpus: vec![gpu(20)],
            ..StepUsage::default()
        };
        u.merge(&StepUsage {
            gpus: vec![gpu(140)],
            ..StepUsage::default()
        });
        assert_eq!(u.gpus.len(), 1);
        assert_eq!(u.gpu_util_mean(), Some(70.0));
    }
}
