//! How well jobs used what they held: CPU, memory, GPU and time efficiency, per job and
//! summed per user and account, from the accounting records (`sacct`'s jobs and their
//! steps' [`StepUsage`]). What `seff` and `sluice report efficiency` print.
//!
//! Per job (`None` where a figure cannot be had):
//! - **CPU**: the CPU time of all its steps (`TotalCPU`) over `Elapsed` × allocated CPUs.
//! - **Memory**: the most memory one step's tasks held at once — the sum of the tasks'
//!   peaks (`TRESUsageInTot`'s `mem`, what `seff` reads), the step with the most — over
//!   the memory allocated to the job (`AllocTRES`'s `mem`, all nodes).
//! - **GPU**: the mean utilisation of the job's GPUs: each GPU's samples over all its
//!   steps averaged (a GPU sampled by two steps counts each sample once), then the mean
//!   over the GPUs sampled; `None` without a sample.
//! - **Time**: `Elapsed` over the time limit (`None` for an unlimited job): how much of
//!   the wall time asked for, which backfill planned around, was used.
//!
//! Summed over jobs ([`Summary`]): CPU is the CPU time over the core-seconds held
//! (so weighted by core-hours), memory the mean of the jobs' memory efficiencies
//! weighted by their core-hours, GPU the mean of the jobs' GPU efficiencies weighted by
//! their GPU-hours, time the core-seconds used over the core-seconds asked (each job's
//! elapsed and limit times its CPUs: again core-hour weighted). Jobs without the figure
//! are left out of that figure's sum.

use std::collections::BTreeMap;

use serde::Serialize;
use sluice_proto::types::{JobRecord, JobState, MemoryRequest, StepRecord};
use sluice_proto::usage::StepUsage;

/// One job's efficiency figures. Serialized as `sluice report efficiency --json` prints
/// each job (field names are part of that interface).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobEfficiency {
    /// The job id.
    pub job_id: u64,
    /// `123_4` for an array task, the id otherwise.
    pub display_id: String,
    /// Owner.
    pub user: String,
    /// Account.
    pub account: String,
    /// State (`COMPLETED`, `RUNNING`, ...).
    pub state: String,
    /// Nodes allocated.
    pub nodes: u32,
    /// CPUs allocated (all nodes).
    pub cpus: u32,
    /// GPUs allocated (all nodes).
    pub gpus: u32,
    /// Seconds it ran (until now while running).
    pub elapsed_s: i64,
    /// Time limit, seconds (`None`: unlimited).
    pub time_limit_s: Option<i64>,
    /// CPU time of all its steps, milliseconds.
    pub cpu_time_ms: u64,
    /// CPUs × elapsed seconds.
    pub core_seconds: u64,
    /// GPUs × elapsed seconds.
    pub gpu_seconds: u64,
    /// CPU efficiency, percent (`None` when it held no CPU time).
    pub cpu_efficiency: Option<f64>,
    /// Memory allocated, bytes (`None`: not known).
    pub mem_requested_bytes: Option<u64>,
    /// The step peak memory (sum over its tasks' peaks, the largest step), bytes.
    pub mem_used_bytes: u64,
    /// The largest one task's peak (`MaxRSS`), bytes.
    pub max_rss_bytes: u64,
    /// Memory efficiency, percent.
    pub mem_efficiency: Option<f64>,
    /// GPU efficiency (mean utilisation), percent; `None` without GPU samples.
    pub gpu_efficiency: Option<f64>,
    /// Time efficiency, percent; `None` without a time limit.
    pub time_efficiency: Option<f64>,
}

/// Percent `part` of `whole`, `None` for an empty whole.
fn percent(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole * 100.0)
}

/// The memory allocated to `job` in all, MiB: `AllocTRES`'s `mem`, or from the request
/// for records without it (`None` when neither says: all of each node's memory).
pub fn allocated_mem_mib(job: &JobRecord) -> Option<u64> {
    if let Some((_, m)) = job.tres_alloc.iter().find(|(t, _)| t == "mem") {
        return (*m > 0).then_some(*m);
    }
    let cpus: u64 = job.cpus_per_node.iter().map(|&c| u64::from(c)).sum();
    let gpus: u64 = job.gpus_per_node.iter().map(|g| g.len() as u64).sum();
    let total = match job.memory_request()? {
        MemoryRequest::PerNode(m) => m * job.nodes.len() as u64,
        MemoryRequest::PerCpu(m) => m * cpus,
        MemoryRequest::PerGpu(m) => m * gpus,
    };
    (total > 0).then_some(total)
}

/// The step whose tasks together held the most memory (`seff`'s choice): its usage.
pub fn peak_step<'a>(steps: &[&'a StepRecord]) -> Option<&'a StepUsage> {
    let mut best: Option<&StepUsage> = None;
    for s in steps {
        if let Some(u) = &s.usage {
            if best.is_none_or(|b| u.rss.tot > b.rss.tot) {
                best = Some(u);
            }
        }
    }
    best
}

/// The CPU time of all of `steps`, milliseconds.
pub fn cpu_time_ms(steps: &[&StepRecord]) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.usage.as_ref())
        .map(|u| u.cpu_ms.tot)
        .sum()
}

/// The mean utilisation of the GPUs sampled in `steps`, percent: each GPU's samples
/// over all the steps, then the mean over the GPUs. `None` without a sample.
pub fn gpu_util(steps: &[&StepRecord]) -> Option<f64> {
    let mut per_gpu: BTreeMap<(&str, u32), (u64, u64)> = BTreeMap::new();
    for u in steps.iter().filter_map(|s| s.usage.as_ref()) {
        for g in &u.gpus {
            let e = per_gpu.entry((g.node.as_str(), g.index)).or_default();
            e.0 += g.util_sum;
            e.1 += u64::from(g.samples);
        }
    }
    let means: Vec<f64> = per_gpu
        .values()
        .filter(|(_, n)| *n > 0)
        .map(|(sum, n)| *sum as f64 / *n as f64)
        .collect();
    (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
}

/// `job`'s figures from its `steps` (those of its latest run); a job still running
/// counts up to `now`.
pub fn job_efficiency(job: &JobRecord, steps: &[&StepRecord], now: i64) -> JobEfficiency {
    let elapsed = match job.start_time {
        Some(s) => (job.end_time.unwrap_or(now) - s).max(0),
        None => 0,
    };
    let cpus: u32 = job.cpus_per_node.iter().sum();
    let gpus: u32 = job.gpus_per_node.iter().map(|g| g.len() as u32).sum();
    let cpu_ms = cpu_time_ms(steps);
    let core_seconds = u64::from(cpus) * elapsed as u64;
    let peak = peak_step(steps);
    let mem_used = peak.map_or(0, |u| u.rss.tot);
    let max_rss = steps
        .iter()
        .filter_map(|s| s.usage.as_ref())
        .map(|u| u.rss.max)
        .max()
        .unwrap_or(0);
    let mem_req = allocated_mem_mib(job).map(|m| m * 1024 * 1024);
    JobEfficiency {
        job_id: job.id,
        display_id: job.display_id(),
        user: job.user.clone(),
        account: job.account.clone(),
        state: job.state.name().to_string(),
        nodes: job.nodes.len() as u32,
        cpus,
        gpus,
        elapsed_s: elapsed,
        time_limit_s: job.time_limit,
        cpu_time_ms: cpu_ms,
        core_seconds,
        gpu_seconds: u64::from(gpus) * elapsed as u64,
        cpu_efficiency: percent(cpu_ms as f64 / 1000.0, core_seconds as f64),
        mem_requested_bytes: mem_req,
        mem_used_bytes: mem_used,
        max_rss_bytes: max_rss,
        mem_efficiency: mem_req.and_then(|r| percent(mem_used as f64, r as f64)),
        gpu_efficiency: gpu_util(steps),
        time_efficiency: job
            .time_limit
            .and_then(|l| percent(elapsed as f64, l as f64)),
    }
}

/// The figures of every job in `jobs` that started, with the steps of `steps` that
/// belong to it, in the order given.
pub fn jobs_efficiency(jobs: &[&JobRecord], steps: &[StepRecord], now: i64) -> Vec<JobEfficiency> {
    let mut by_job: BTreeMap<u64, Vec<&StepRecord>> = BTreeMap::new();
    for s in steps {
        by_job.entry(s.job_id).or_default().push(s);
    }
    jobs.iter()
        .filter(|j| j.start_time.is_some() && j.state != JobState::Pending)
        .map(|j| {
            let own = by_job.get(&j.id).map_or(&[][..], Vec::as_slice);
            job_efficiency(j, own, now)
        })
        .collect()
}

/// Efficiency summed over jobs (one user's, one account's). Serialized as
/// `sluice report efficiency --json` prints each user and account.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// The user or account.
    pub name: String,
    /// Jobs summed.
    pub jobs: u64,
    /// CPUs × elapsed seconds, all jobs.
    pub core_seconds: u64,
    /// GPUs × elapsed seconds, all jobs.
    pub gpu_seconds: u64,
    /// CPU time, all jobs, milliseconds.
    pub cpu_time_ms: u64,
    /// CPU time over core-seconds, percent.
    pub cpu_efficiency: Option<f64>,
    /// The jobs' memory efficiencies weighted by their core-seconds, percent.
    pub mem_efficiency: Option<f64>,
    /// The jobs' GPU efficiencies weighted by their GPU-seconds, percent.
    pub gpu_efficiency: Option<f64>,
    /// Core-seconds used over core-seconds asked (elapsed and limit × CPUs), percent.
    pub time_efficiency: Option<f64>,
}

/// Weighted sums kept while summing.
#[derive(Default)]
struct Acc {
    s: Summary,
    mem: (f64, f64),
    gpu: (f64, f64),
    time: (f64, f64),
}

impl Acc {
    fn add(&mut self, j: &JobEfficiency) {
        self.s.jobs += 1;
        self.s.core_seconds += j.core_seconds;
        self.s.gpu_seconds += j.gpu_seconds;
        self.s.cpu_time_ms += j.cpu_time_ms;
        let w = j.core_seconds as f64;
        if let Some(m) = j.mem_efficiency {
            self.mem.0 += m * w;
            self.mem.1 += w;
        }
        if let Some(g) = j.gpu_efficiency {
            self.gpu.0 += g * j.gpu_seconds as f64;
            self.gpu.1 += j.gpu_seconds as f64;
        }
        if let Some(l) = j.time_limit_s {
            self.time.0 += w;
            self.time.1 += (l.max(0) as u64 * u64::from(j.cpus)) as f64;
        }
    }

    fn finish(mut self) -> Summary {
        self.s.cpu_efficiency = percent(
            self.s.cpu_time_ms as f64 / 1000.0,
            self.s.core_seconds as f64,
        );
        let mean = |(sum, w): (f64, f64)| (w > 0.0).then(|| sum / w);
        self.s.mem_efficiency = mean(self.mem);
        self.s.gpu_efficiency = mean(self.gpu);
        self.s.time_efficiency = percent(self.time.0, self.time.1);
        self.s
    }
}

/// `jobs` summed by `key` (user or account), ordered by name.
pub fn summarize(jobs: &[JobEfficiency], key: impl Fn(&JobEfficiency) -> &str) -> Vec<Summary> {
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    for j in jobs {
        let acc = by.entry(key(j).to_string()).or_default();
        acc.s.name = key(j).to_string();
        acc.add(j);
    }
    by.into_values().map(Acc::finish).collect()
}

#[cfg(test)]
mod tests;
