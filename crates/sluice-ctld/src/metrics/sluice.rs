//! `GET /metrics/sluice`: what Slurm's metrics cannot say, under names of Sluice's own
//! (`sluice_...`, which no Slurm metric starts with).
//!
//! - GPUs idle while GPU jobs wait: per partition and in all, the GPUs of usable nodes
//!   (up, answering, neither drained nor in maintenance) held by no job, when a GPU job
//!   waits in the scheduler's queue there (held jobs and jobs waiting on a dependency
//!   do not count: nothing could start them); and of those the fragmented ones, on
//!   nodes with fewer idle GPUs than the fewest per node any waiting GPU job there asks:
//!   idle, yet no waiting job could use them.
//! - Each GPU's occupancy: allocated or not (whole or in shards), and by which jobs of
//!   which users.
//! - Each partition's next job (the first in the scheduler's queue order): its id,
//!   priority, time waited, and its forecast start (`squeue --start`'s).
//! - Running jobs flagged for idle GPUs (sluice.conf's `IdleGpuThreshold` for
//!   `IdleGpuTime`): how many, and each one's idle and held GPUs and for how long.
//! - The audit trail's events (`sluice audit`) recorded since the controller started,
//!   by kind.

use std::collections::BTreeMap;

use super::{LoopFigures, MetricSet};

/// The metrics of `f` (its `sluice` part: without it, none).
pub fn metrics(f: &LoopFigures) -> MetricSet {
    let mut m = MetricSet::new();
    let Some(s) = &f.sluice else {
        return m;
    };
    // Idle GPUs per node (usable nodes only).
    let mut idle: BTreeMap<usize, u64> = BTreeMap::new();
    for g in &s.gpus {
        let usable = f.nodes.get(g.node).is_some_and(|n| n.usable());
        if usable && g.holders.is_empty() {
            *idle.entry(g.node).or_default() += 1;
        }
    }
    // Per node: the fewest GPUs per node a job waiting in one of its partitions asks.
    let mut node_need: BTreeMap<usize, u64> = BTreeMap::new();
    for (pi, p) in f.partitions.iter().enumerate() {
        let w = s.waiting.get(pi).copied().unwrap_or_default();
        if w.jobs == 0 {
            continue;
        }
        for &n in &p.nodes {
            let need = node_need.entry(n).or_insert(u64::MAX);
            *need = (*need).min(w.min_per_node);
        }
    }
    let fragmented = |node: usize, need: u64| {
        let i = idle.get(&node).copied().unwrap_or(0);
        if i > 0 && i < need {
            i
        } else {
            0
        }
    };
    let idle_all: u64 = idle.values().sum();
    let (mut while_wait, mut frag_all) = (0, 0);
    for (&n, &need) in &node_need {
        while_wait += idle.get(&n).copied().unwrap_or(0);
        frag_all += fragmented(n, need);
    }
    m.gauge(
        "sluice_gpus_idle",
        "GPUs of usable nodes (up, answering, not drained, not in maintenance) that no job holds",
        idle_all,
    );
    m.gauge(
        "sluice_gpus_idle_while_gpu_jobs_wait",
        "Idle GPUs on nodes of partitions where a GPU job waits in the queue",
        while_wait,
    );
    m.gauge(
        "sluice_gpus_idle_fragmented",
        "Idle GPUs while GPU jobs wait, on nodes with fewer idle GPUs than the fewest per node any waiting job there asks",
        frag_all,
    );
    for (pi, p) in f.partitions.iter().enumerate() {
        let w = s.waiting.get(pi).copied().unwrap_or_default();
        let labels = [("partition", p.name.as_str())];
        let p_idle: u64 = p
            .nodes
            .iter()
            .map(|n| idle.get(n).copied().unwrap_or(0))
            .sum();
        let p_frag: u64 = if w.jobs > 0 {
            p.nodes.iter().map(|&n| fragmented(n, w.min_per_node)).sum()
        } else {
            0
        };
        m.gauge_with(
            "sluice_partition_gpus_idle",
            "GPUs of the partition's usable nodes that no job holds",
            &labels,
            p_idle,
        );
        m.gauge_with(
            "sluice_partition_gpu_jobs_waiting",
            "GPU jobs waiting in the partition's queue (not held, no dependency pending)",
            &labels,
            w.jobs,
        );
        m.gauge_with(
            "sluice_partition_gpu_jobs_waiting_min_gpus_per_node",
            "The fewest GPUs per node any GPU job waiting in the partition asks (0: none waits)",
            &labels,
            w.min_per_node,
        );
        m.gauge_with(
            "sluice_partition_gpus_idle_while_jobs_wait",
            "The partition's idle GPUs while a GPU job waits in it (0 when none waits)",
            &labels,
            if w.jobs > 0 { p_idle } else { 0 },
        );
        m.gauge_with(
            "sluice_partition_gpus_idle_fragmented",
            "The partition's idle GPUs on nodes with fewer idle GPUs than the fewest per node any GPU job waiting in it asks",
            &labels,
            p_frag,
        );
    }
    for g in &s.gpus {
        let node = f.nodes.get(g.node).map_or("", |n| n.name.as_str());
        let index = g.index.to_string();
        m.gauge_with(
            "sluice_gpu_allocated",
            "Whether a running job holds the GPU (whole or in shards)",
            &[
                ("node", node),
                ("index", &index),
                ("type", g.gpu_type.as_deref().unwrap_or("")),
            ],
            !g.holders.is_empty(),
        );
    }
    for g in &s.gpus {
        let node = f.nodes.get(g.node).map_or("", |n| n.name.as_str());
        let index = g.index.to_string();
        for (job, user) in &g.holders {
            m.gauge_with(
                "sluice_gpu_job",
                "A running job holding the GPU (1 per job and GPU)",
                &[
                    ("node", node),
                    ("index", &index),
                    ("job", &job.to_string()),
                    ("user", user),
                ],
                1u32,
            );
        }
    }
    for h in &s.heads {
        let Some(p) = f.partitions.get(h.partition) else {
            continue;
        };
        let labels = [("partition", p.name.as_str())];
        m.gauge_with(
            "sluice_partition_head_job_id",
            "The partition's next job: the first of its jobs in the queue's order",
            &labels,
            h.job,
        );
        m.gauge_with(
            "sluice_partition_head_job_priority",
            "The priority of the partition's next job",
            &labels,
            h.priority,
        );
        m.gauge_with(
            "sluice_partition_head_job_waited_seconds",
            "How long the partition's next job has waited since its submission",
            &labels,
            (s.now - h.submit).max(0),
        );
        if let Some(start) = h.start {
            m.gauge_with(
                "sluice_partition_head_job_forecast_start_timestamp_seconds",
                "When the partition's next job is forecast to start (Unix time; squeue --start)",
                &labels,
                start,
            );
            m.gauge_with(
                "sluice_partition_head_job_forecast_wait_seconds",
                "How long until the partition's next job is forecast to start",
                &labels,
                (start - s.now).max(0),
            );
        }
    }
    m.gauge(
        "sluice_jobs_with_idle_gpus",
        "Running jobs flagged because their GPUs stayed under IdleGpuThreshold for IdleGpuTime",
        s.idle_gpu_jobs.len(),
    );
    for j in &s.idle_gpu_jobs {
        let job = j.job.to_string();
        let labels = [
            ("job", job.as_str()),
            ("user", &j.user),
            ("account", &j.account),
        ];
        m.gauge_with(
            "sluice_job_gpus_idle",
            "GPUs of a flagged running job that stayed idle (under IdleGpuThreshold for IdleGpuTime)",
            &labels,
            j.idle,
        );
        m.gauge_with(
            "sluice_job_gpus_held",
            "GPUs a job flagged for idle GPUs holds",
            &labels,
            j.held,
        );
        m.gauge_with(
            "sluice_job_gpus_idle_seconds",
            "How long the longest-idle GPU of a flagged job has been idle",
            &labels,
            (s.now - j.since).max(0),
        );
    }
    for (kind, count) in &s.audit {
        m.counter_with(
            "sluice_audit_events_total",
            "Audit trail events recorded since the controller started, by kind",
            &[("kind", kind)],
            *count,
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::super::{GpuStat, GpuWait, HeadJob, IdleGpuJob, NodeStat, PartNodes, SluiceFigures};
    use super::*;

    fn gpu(node: usize, index: u32, holders: &[(u64, &str)]) -> GpuStat {
        GpuStat {
            node,
            index,
            gpu_type: Some("a100".into()),
            holders: holders.iter().map(|(j, u)| (*j, u.to_string())).collect(),
        }
    }

    fn node(name: &str, state: &'static str) -> NodeStat {
        NodeStat {
            name: name.into(),
            state,
            responding: true,
            cpus: 8,
            gpus: 4,
            ..Default::default()
        }
    }

    /// The value of sample `sample` (name and labels as written) in `text`.
    fn value(text: &str, sample: &str) -> Option<String> {
        text.lines().find_map(|l| {
            l.strip_prefix(sample)?
                .strip_prefix(' ')
                .map(str::to_string)
        })
    }

    fn figures() -> LoopFigures {
        // g1: 4 GPUs, 3 held (one of them by two jobs in shards): 1 idle.
        // g2: 4 GPUs, none held: 4 idle. g3: drained, its 4 GPUs idle but unusable.
        let gpus = vec![
            gpu(0, 0, &[(10, "alice")]),
            gpu(0, 1, &[(10, "alice")]),
            gpu(0, 2, &[(11, "bob"), (12, "carol")]),
            gpu(0, 3, &[]),
            gpu(1, 0, &[]),
            gpu(1, 1, &[]),
            gpu(1, 2, &[]),
            gpu(1, 3, &[]),
            gpu(2, 0, &[]),
        ];
        LoopFigures {
            nodes: vec![
                node("g1", "mixed"),
                node("g2", "idle"),
                node("g3", "drained"),
            ],
            partitions: vec![
                PartNodes {
                    name: "gpu".into(),
                    nodes: vec![0, 1, 2],
                },
                PartNodes {
                    name: "small".into(),
                    nodes: vec![0],
                },
            ],
            sluice: Some(SluiceFigures {
                now: 1000,
                gpus,
                waiting: vec![
                    GpuWait {
                        jobs: 2,
                        min_per_node: 2,
                    },
                    GpuWait::default(),
                ],
                heads: vec![HeadJob {
                    partition: 0,
                    job: 42,
                    priority: 7,
                    submit: 900,
                    start: Some(1300),
                }],
                idle_gpu_jobs: vec![IdleGpuJob {
                    job: 43,
                    user: "alice".into(),
                    account: "vision".into(),
                    idle: 3,
                    held: 4,
                    since: 400,
                }],
                audit: vec![("submitted", 5), ("started", 3)],
            }),
        }
    }

    #[test]
    fn jobs_flagged_for_idle_gpus_each_with_their_idle_and_held_gpus() {
        let text = metrics(&figures()).render();
        let v = |s: &str| value(&text, s).unwrap_or_else(|| panic!("no {s} in\n{text}"));
        let labels = "{account=\"vision\",job=\"43\",user=\"alice\"}";
        assert_eq!(v("sluice_jobs_with_idle_gpus"), "1");
        assert_eq!(v(&format!("sluice_job_gpus_idle{labels}")), "3");
        assert_eq!(v(&format!("sluice_job_gpus_held{labels}")), "4");
        assert_eq!(v(&format!("sluice_job_gpus_idle_seconds{labels}")), "600");
    }

    #[test]
    fn idle_and_fragmented_gpus_while_gpu_jobs_wait() {
        let text = metrics(&figures()).render();
        let v = |s: &str| value(&text, s).unwrap_or_else(|| panic!("no {s} in\n{text}"));
        assert_eq!(v("sluice_gpus_idle"), "5");
        assert_eq!(v("sluice_gpus_idle_while_gpu_jobs_wait"), "5");
        // g1's one idle GPU serves no waiting job (each asks at least 2 per node).
        assert_eq!(v("sluice_gpus_idle_fragmented"), "1");
        assert_eq!(v("sluice_partition_gpus_idle{partition=\"gpu\"}"), "5");
        assert_eq!(
            v("sluice_partition_gpus_idle_while_jobs_wait{partition=\"gpu\"}"),
            "5"
        );
        assert_eq!(
            v("sluice_partition_gpus_idle_fragmented{partition=\"gpu\"}"),
            "1"
        );
        assert_eq!(
            v("sluice_partition_gpu_jobs_waiting{partition=\"gpu\"}"),
            "2"
        );
        // Nothing waits in `small`: its idle GPU is idle, not idle while jobs wait.
        assert_eq!(v("sluice_partition_gpus_idle{partition=\"small\"}"), "1");
        assert_eq!(
            v("sluice_partition_gpus_idle_while_jobs_wait{partition=\"small\"}"),
            "0"
        );
        assert_eq!(
            v("sluice_partition_gpus_idle_fragmented{partition=\"small\"}"),
            "0"
        );
    }

    #[test]
    fn each_gpu_its_jobs_and_each_partition_its_next_job() {
        let text = metrics(&figures()).render();
        let v = |s: &str| value(&text, s);
        assert_eq!(
            v("sluice_gpu_allocated{index=\"2\",node=\"g1\",type=\"a100\"}").as_deref(),
            Some("1")
        );
        assert_eq!(
            v("sluice_gpu_allocated{index=\"3\",node=\"g1\",type=\"a100\"}").as_deref(),
            Some("0")
        );
        assert_eq!(
            v("sluice_gpu_job{index=\"2\",job=\"12\",node=\"g1\",user=\"carol\"}").as_deref(),
            Some("1")
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("sluice_gpu_job{"))
                .count(),
            4
        );
        let p = "{partition=\"gpu\"}";
        assert_eq!(
            v(&format!("sluice_partition_head_job_id{p}")).as_deref(),
            Some("42")
        );
        assert_eq!(
            v(&format!("sluice_partition_head_job_waited_seconds{p}")).as_deref(),
            Some("100")
        );
        assert_eq!(
            v(&format!(
                "sluice_partition_head_job_forecast_start_timestamp_seconds{p}"
            ))
            .as_deref(),
            Some("1300")
        );
        assert_eq!(
            v(&format!(
                "sluice_partition_head_job_forecast_wait_seconds{p}"
            ))
            .as_deref(),
            Some("300")
        );
        assert_eq!(v("sluice_partition_head_job_id{partition=\"small\"}"), None);
        assert!(text.contains("# TYPE sluice_audit_events_total counter\n"));
        assert_eq!(
            v("sluice_audit_events_total{kind=\"submitted\"}").as_deref(),
            Some("5")
        );
        // Every name is Sluice's own.
        assert!(metrics(&figures())
            .names()
            .all(|n| n.starts_with("sluice_")));
        assert!(metrics(&LoopFigures::default()).is_empty());
    }
}
