//! Slurm's five endpoints, as its `metrics/openmetrics` plugin writes them: the same
//! metric names, help texts, labels (`node`, `partition`, `username`, `account`) and
//! order (`openmetrics.c`, Slurm 25.11, with the GPU figures its next release adds:
//! `slurm_node_gpus`, `slurm_node_gpus_alloc`, `slurm_jobs_gpus_alloc`,
//! `slurm_partition_jobs_gpus_alloc`, `slurm_partition_gpus`, and the users' and
//! accounts' `..._jobs_gpus_alloc`). Every one is a gauge.
//!
//! Figures Sluice has no counterpart for are 0, as on a Slurm cluster without the
//! feature: configuring, boot-failed or deadline jobs, powering or rebooting nodes
//! (a cloud node not started counts as powered down), agent threads, the DBD queue,
//! the scheduler's exit reasons. Memory is in MiB, as Slurm gives it despite the
//! `_bytes` names.

use sluice_proto::diag::DiagReport;

use super::{JobStats, MetricSet, NodeCounts, NodeStat, PartStats, UsersAccounts};

/// `GET /metrics/jobs`.
pub fn jobs(s: &JobStats) -> MetricSet {
    let mut m = MetricSet::new();
    for (name, help, value) in job_rows(s) {
        m.gauge(&format!("slurm_{name}"), help, value);
    }
    m
}

fn job_rows(s: &JobStats) -> [(&'static str, &'static str, u64); 30] {
    [
        (
            "jobs_bootfail",
            "Number of jobs in BootFail state",
            s.bootfail,
        ),
        (
            "jobs_cancelled",
            "Number of jobs in Cancelled state",
            s.cancelled,
        ),
        (
            "jobs_completed",
            "Number of jobs in Completed state",
            s.completed,
        ),
        (
            "jobs_completing",
            "Number of jobs in Completing state",
            s.completing,
        ),
        (
            "jobs_configuring",
            "Number of jobs in Configuring state",
            s.configuring,
        ),
        (
            "jobs_cpus_alloc",
            "Total number of Cpus allocated by jobs",
            s.cpus_alloc,
        ),
        (
            "jobs_deadline",
            "Number of jobs in Deadline state",
            s.deadline,
        ),
        (
            "jobs_expediting",
            "Number of jobs in Expediting state",
            s.expediting,
        ),
        ("jobs_failed", "Number of jobs in Failed state", s.failed),
        (
            "jobs_fed_requeued",
            "Number of jobs requeued in a federation",
            s.fed_requeued,
        ),
        ("jobs_finished", "Number of finished jobs", s.finished),
        (
            "jobs_gpus_alloc",
            "Total number of GPUs allocated by jobs",
            s.gpus_alloc,
        ),
        ("jobs_hold", "Number of jobs in Hold state", s.hold),
        ("jobs", "Total number of jobs", s.job_cnt),
        (
            "jobs_memory_alloc",
            "Total memory bytes allocated by jobs",
            s.memory_alloc,
        ),
        (
            "jobs_node_failed",
            "Number of jobs in Node Failed state",
            s.node_failed,
        ),
        (
            "jobs_nodes_alloc",
            "Total number of nodes allocated by jobs",
            s.nodes_alloc,
        ),
        (
            "jobs_outofmemory",
            "Number of jobs in Out of Memory state",
            s.oom,
        ),
        ("jobs_pending", "Number of jobs in Pending state", s.pending),
        (
            "jobs_powerup_node",
            "Number of jobs in PowerUp Node state",
            s.powerup_node,
        ),
        (
            "jobs_preempted",
            "Number of jobs in Preempted state",
            s.preempted,
        ),
        (
            "jobs_requeued",
            "Number of jobs in Requeued state",
            s.requeued,
        ),
        (
            "jobs_resizing",
            "Number of jobs in Resizing state",
            s.resizing,
        ),
        ("jobs_revoked", "Number of jobs in Rvoked state", s.revoked),
        ("jobs_running", "Number of jobs in Running state", s.running),
        (
            "jobs_signaling",
            "Number of jobs being signaled",
            s.signaling,
        ),
        (
            "jobs_stageout",
            "Number of jobs in StageOut state",
            s.stageout,
        ),
        ("jobs_started", "Number of started jobs", s.started),
        (
            "jobs_suspended",
            "Number of jobs in Suspended state",
            s.suspended,
        ),
        ("jobs_timeout", "Number of jobs in Timeout state", s.timeout),
    ]
}

/// `GET /metrics/jobs-users-accts`: the job figures of each user (label `username`)
/// and of each account (label `account`).
pub fn users_accounts(ua: &UsersAccounts) -> MetricSet {
    let mut m = MetricSet::new();
    for (prefix, key, list) in [
        ("user", "username", &ua.users),
        ("account", "account", &ua.accounts),
    ] {
        for (who, s) in list {
            for (name, help, value) in ua_rows(s) {
                m.gauge_with(
                    &format!("slurm_{prefix}_{name}"),
                    help,
                    &[(key, who)],
                    value,
                );
            }
        }
    }
    m
}

fn ua_rows(s: &JobStats) -> [(&'static str, &'static str, u64); 30] {
    [
        (
            "jobs_bootfail",
            "Number of jobs in BootFail state",
            s.bootfail,
        ),
        (
            "jobs_cancelled",
            "Number of jobs in Cancelled state",
            s.cancelled,
        ),
        (
            "jobs_completed",
            "Number of jobs in Completed state",
            s.completed,
        ),
        (
            "jobs_completing",
            "Number of jobs in Completing state",
            s.completing,
        ),
        (
            "jobs_configuring",
            "Number of jobs in Configuring state",
            s.configuring,
        ),
        (
            "jobs_cpus_alloc",
            "Total number of Cpus allocated by jobs",
            s.cpus_alloc,
        ),
        (
            "jobs_deadline",
            "Number of jobs in Deadline state",
            s.deadline,
        ),
        (
            "jobs_expediting",
            "Number of jobs in Expediting state",
            s.expediting,
        ),
        ("jobs_failed", "Number of jobs in Failed state", s.failed),
        (
            "jobs_fed_requeued",
            "Number of jobs requeued in a federation",
            s.fed_requeued,
        ),
        ("jobs_finished", "Number of finished jobs", s.finished),
        (
            "jobs_gpus_alloc",
            "Total number of GPUs allocated by jobs",
            s.gpus_alloc,
        ),
        ("jobs_hold", "Number of jobs in Hold state", s.hold),
        ("jobs", "Total number of jobs", s.job_cnt),
        (
            "jobs_memory_alloc",
            "Total memory bytes allocated by jobs",
            s.memory_alloc,
        ),
        (
            "jobs_node_failed",
            "Number of jobs in Node Failed state",
            s.node_failed,
        ),
        (
            "jobs_nodes_alloc",
            "Total number of nodes allocated by jobs",
            s.nodes_alloc,
        ),
        (
            "jobs_outofmemory",
            "Number of jobs in Out of Memory state",
            s.oom,
        ),
        ("jobs_pending", "Number of jobs in Pending state", s.pending),
        (
            "jobs_powerup_node",
            "Number of jobs in PowerUp Node state",
            s.powerup_node,
        ),
        (
            "jobs_preempted",
            "Number of jobs in Preempted state",
            s.preempted,
        ),
        (
            "jobs_requeued",
            "Number of jobs in Requeued state",
            s.requeued,
        ),
        (
            "jobs_resizing",
            "Number of jobs in Resizing state",
            s.resizing,
        ),
        ("jobs_revoked", "Number of jobs revoked", s.revoked),
        ("jobs_running", "Number of jobs in Running state", s.running),
        (
            "jobs_signaling",
            "Number of jobs being signaled",
            s.signaling,
        ),
        (
            "jobs_stageout",
            "Number of jobs in StageOut state",
            s.stageout,
        ),
        ("jobs_started", "Number of started jobs", s.started),
        (
            "jobs_suspended",
            "Number of jobs in Suspended state",
            s.suspended,
        ),
        ("jobs_timeout", "Number of jobs in Timeout state", s.timeout),
    ]
}

/// `GET /metrics/nodes`: each node's figures (label `node`), then the counts.
pub fn nodes(nodes: &[NodeStat]) -> MetricSet {
    let mut m = MetricSet::new();
    for n in nodes {
        let rows: [(&str, &str, u64); 10] = [
            (
                "node_cpus",
                "Total number of cpus in the node",
                u64::from(n.cpus),
            ),
            (
                "node_cpus_alloc",
                "Allocated cpus in the node",
                u64::from(n.cpus_alloc),
            ),
            (
                "node_cpus_effective",
                "CPUs allocatable to jobs not reserved for system usage",
                u64::from(n.cpus),
            ),
            (
                "node_cpus_idle",
                "Idle cpus in the node",
                u64::from(n.cpus.saturating_sub(n.cpus_alloc)),
            ),
            ("node_gpus", "Total number of GPUs in the node", n.gpus),
            (
                "node_gpus_alloc",
                "Number of GPUs currently allocated by jobs on the node",
                n.gpus_alloc,
            ),
            (
                "node_memory_alloc_bytes",
                "Bytes allocated to jobs in the node",
                n.mem_alloc_mib,
            ),
            (
                "node_memory_effective_bytes",
                "Memory allocatable to jobs not reserved for system usage",
                n.mem_mib,
            ),
            (
                "node_memory_free_bytes",
                "Free memory in bytes of the node",
                n.mem_free_mib,
            ),
            (
                "node_memory_bytes",
                "Total memory in bytes of the node",
                n.mem_mib,
            ),
        ];
        for (name, help, value) in rows {
            m.gauge_with(&format!("slurm_{name}"), help, &[("node", &n.name)], value);
        }
    }
    let c = NodeCounts::of(nodes);
    // As Slurm: `slurm_nodes_powering_up` reads the powering-down count.
    let rows: [(&str, &str, u64); 28] = [
        ("nodes", "Total number of nodes", nodes.len() as u64),
        ("nodes_alloc", "Number of nodes in Allocated state", c.alloc),
        (
            "nodes_blocked",
            "Number of nodes in Blocked state",
            c.blocked,
        ),
        (
            "nodes_completing",
            "Number of nodes with Completing flag",
            c.cg,
        ),
        ("nodes_cloud", "Number of Cloud nodes", c.cloud),
        ("nodes_down", "Number of nodes in Down state", c.down),
        ("nodes_drain", "Number of nodes with Drain flag", c.drain),
        ("nodes_drained", "Number of drained nodes", c.drained),
        (
            "nodes_draining",
            "Number of nodes in draining condition (Drain state with active jobs)",
            c.draining,
        ),
        (
            "nodes_dyn_future",
            "Number of future dynamic nodes",
            c.dyn_future,
        ),
        ("nodes_dyn_normal", "Number of dynamic nodes", c.dyn_normal),
        ("nodes_external", "Number of external nodes", c.external),
        ("nodes_fail", "Number of nodes with Fail flag", c.fail),
        ("nodes_future", "Number of nodes in Future state", c.future),
        ("nodes_idle", "Number of nodes in Idle state", c.idle),
        (
            "nodes_invalid_reg",
            "Number of nodes with Invalid Registration flag",
            c.invalid_reg,
        ),
        (
            "nodes_maint",
            "Number of nodes with Maintenance flag",
            c.maint,
        ),
        ("nodes_mixed", "Number of nodes in Mixed state", c.mixed),
        (
            "nodes_noresp",
            "Number of nodes with Not Responding flag",
            c.no_resp,
        ),
        (
            "nodes_planned",
            "Number of nodes with Planned flag",
            c.planned,
        ),
        (
            "nodes_power_down",
            "Number of nodes marked to be powered down",
            c.power_down,
        ),
        (
            "nodes_power_up",
            "Number of nodes marked to be powered up",
            c.power_up,
        ),
        (
            "nodes_powered_down",
            "Number of nodes powered down",
            c.powered_down,
        ),
        (
            "nodes_powering_up",
            "Number of nodes powering up",
            c.powering_down,
        ),
        (
            "nodes_reboot_issued",
            "Number of nodes with Reboot Issued flag",
            c.reboot_issued,
        ),
        (
            "nodes_reboot_req",
            "Number of nodes with Reboot Requested flag",
            c.reboot_requested,
        ),
        ("nodes_resv", "Number of nodes with Reserved flag", c.resv),
        (
            "nodes_unknown",
            "Number of nodes in Unknown state",
            c.unknown,
        ),
    ];
    for (name, help, value) in rows {
        m.gauge(&format!("slurm_{name}"), help, value);
    }
    m
}

/// `GET /metrics/partitions`: how many, then each partition's figures (label
/// `partition`).
pub fn partitions(parts: &[PartStats]) -> MetricSet {
    let mut m = MetricSet::new();
    m.gauge(
        "slurm_partitions",
        "Total number of partitions",
        parts.len(),
    );
    for p in parts {
        let (j, n) = (&p.job, &p.nodes);
        let rows: [(&str, &str, u64); 72] = [
            ("partition_jobs", "Number of jobs in this partition", p.jobs),
            ("partition_jobs_bootfail", "Number of jobs in BootFail state", j.bootfail),
            ("partition_jobs_cancelled", "Number of jobs in Cancelled state", j.cancelled),
            ("partition_jobs_completed", "Number of jobs in Completed state", j.completed),
            ("partition_jobs_completing", "Number of jobs in Completing state", j.completing),
            ("partition_jobs_configuring", "Number of jobs in Configuring state", j.configuring),
            ("partition_jobs_cpus_alloc", "Total number of Cpus allocated by jobs", j.cpus_alloc),
            ("partition_jobs_gpus_alloc", "Total number of GPUs allocated by jobs", j.gpus_alloc),
            ("partition_jobs_deadline", "Number of jobs in Deadline state", j.deadline),
            ("partition_jobs_expediting", "Number of jobs in Expediting state", j.expediting),
            ("partition_jobs_failed", "Number of jobs in Failed state", j.failed),
            ("partition_jobs_fed_requeued", "Number of jobs requeued in a federation", j.fed_requeued),
            ("partition_jobs_finished", "Number of jobs in Finished", j.finished),
            ("partition_jobs_hold", "Number of jobs in Hold state", j.hold),
            ("partition_jobs_max_job_nodes", "Max of the max_nodes required of all pending jobs in that partition", p.max_job_nodes),
            ("partition_jobs_max_job_nodes_nohold", "Max of the max_nodes required of all pending jobs in that partition excluding Held jobs", p.max_job_nodes_nohold),
            ("partition_jobs_memory_alloc", "Total memory bytes allocated by jobs", j.memory_alloc),
            ("partition_jobs_min_job_nodes", "Max of the min_nodes required of all pending jobs in that partition", p.min_job_nodes),
            ("partition_jobs_min_job_nodes_nohold", "Max of the min_nodes required of all pending jobs in that partition excluding Held jobs", p.min_job_nodes_nohold),
            ("partition_jobs_node_failed", "Number of jobs in Node Failed state", j.node_failed),
            ("partition_jobs_outofmemory", "Number of jobs in Out of Memory state", j.oom),
            ("partition_jobs_pending", "Number of jobs in Pending state", j.pending),
            ("partition_jobs_powerup_node", "Number of jobs in PowerUp Node state", j.powerup_node),
            ("partition_jobs_preempted", "Number of jobs in Preempted state", j.preempted),
            ("partition_jobs_requeued", "Number of jobs in Requeued state", j.requeued),
            ("partition_jobs_resizing", "Number of jobs in Resizing state", j.resizing),
            ("partition_jobs_revoked", "Number of revoked jobs", j.revoked),
            ("partition_jobs_running", "Number of jobs in Running state", j.running),
            ("partition_jobs_signaling", "Number of jobs in Signaling state", j.signaling),
            ("partition_jobs_stageout", "Number of jobs in StageOut state", j.stageout),
            ("partition_jobs_started", "Number of jobs started", j.started),
            ("partition_jobs_suspended", "Number of jobs in Suspended state", j.suspended),
            ("partition_jobs_timeout", "Number of jobs in Timeout state", j.timeout),
            ("partition_jobs_wait_part_node_limit", "Jobs wait partition node limit", p.wait_part_node_limit),
            ("partition_nodes_alloc", "Nodes allocated", n.alloc),
            ("partition_nodes_blocked", "Nodes blocked", n.blocked),
            ("partition_nodes_cg", "Nodes in completing state", n.cg),
            ("partition_nodes_cloud", "Cloud nodes", n.cloud),
            ("partition_nodes_cpus_efctv", "Number of effective CPUs on all nodes, excludes CoreSpec", p.cpus_efctv),
            ("partition_nodes_cpus_idle", "Number of idle CPUs on all nodes", p.cpus_idle),
            ("partition_nodes_cpus_alloc", "Number of allocated cpus", p.cpus_alloc),
            ("partition_nodes_down", "Nodes in Down state", n.down),
            ("partition_nodes_drain", "Nodes in Drain state", n.drain),
            ("partition_nodes_drained", "Nodes in Drained state", n.drained),
            ("partition_nodes_draining", "Number of nodes in draining condition (Drain state with active jobs)", n.draining),
            ("partition_nodes_dyn_future", "Dynamic nodes in Future state", n.dyn_future),
            ("partition_nodes_dyn_normal", "Dynamic nodes", n.dyn_normal),
            ("partition_nodes_external", "External nodes", n.external),
            ("partition_nodes_fail", "Nodes in Fail state", n.fail),
            ("partition_nodes_future", "Nodes in Future state", n.future),
            ("partition_nodes_idle", "Nodes in Idle state", n.idle),
            ("partition_nodes_invalid_reg", "Number of nodes with Invalid Registration flag", n.invalid_reg),
            ("partition_nodes_maint", "Nodes in maintenance state", n.maint),
            ("partition_nodes_mem_alloc", "Amount of allocated memory of all nodes", p.mem_alloc),
            ("partition_nodes_mem_avail", "Amount of available memory of all nodes", p.mem_avail),
            ("partition_nodes_mem_free", "Amount of free memory in all nodes", p.mem_free),
            ("partition_nodes_mem_tot", "Total amount of memory of all nodes", p.mem_total),
            ("partition_nodes_mixed", "Nodes in Mixed state", n.mixed),
            ("partition_nodes_no_resp", "Nodes in Not Responding state", n.no_resp),
            ("partition_nodes_planned", "Nodes in Planned state", n.planned),
            ("partition_nodes_power_down", "Nodes marked to Power Down", n.power_down),
            ("partition_nodes_power_up", "Nodes marked to Power Up", n.power_up),
            ("partition_nodes_powered_down", "Powered down nodes", n.powered_down),
            ("partition_nodes_powering_down", "Powering down nodes", n.powering_down),
            ("partition_nodes_powering_up", "Powering up nodes", n.powering_up),
            ("partition_nodes_reboot_issued", "Nodes which initiated reboot", n.reboot_issued),
            ("partition_nodes_reboot_requested", "Nodes with Reboot Requested flag", n.reboot_requested),
            ("partition_nodes_resv", "Nodes with Reserved flag", n.resv),
            ("partition_nodes_unknown", "Nodes in Unknown state", n.unknown),
            ("partition_cpus", "Partition total cpus", p.total_cpus),
            ("partition_gpus", "Partition total gpus", p.total_gpus),
            ("partition_nodes", "Partition total nodes", p.total_nodes),
        ];
        for (name, help, value) in rows {
            m.gauge_with(
                &format!("slurm_{name}"),
                help,
                &[("partition", &p.name)],
                value,
            );
        }
    }
    m
}

/// `GET /metrics/scheduler`: `sdiag`'s figures, the means as slurmctld computes them
/// (integer division by the cycles).
pub fn scheduler(r: &DiagReport) -> MetricSet {
    let (m, b) = (&r.main, &r.backfill);
    let mean = |sum: u64, cycles: u32| sum.checked_div(u64::from(cycles)).unwrap_or(0);
    let time = |t: i64| t.max(0) as u64;
    let rows: [(&str, &str, u64); 58] = [
        ("agent_cnt", "Number of agent threads", 0),
        ("agent_queue_size", "Outgoing RPC retry queue length", 0),
        ("agent_thread_cnt", "Total active agent-created threads", 0),
        (
            "bf_depth_mean",
            "Mean backfill cycle depth",
            mean(b.depth_sum, b.cycles),
        ),
        (
            "bf_mean_cycle",
            "Mean backfill cycle time",
            mean(b.sum_us, b.cycles),
        ),
        (
            "bf_mean_table_sz",
            "Mean backfill table size",
            mean(b.table_size_sum, b.cycles),
        ),
        (
            "bf_queue_len_mean",
            "Mean backfill queue length",
            mean(b.queue_len_sum, b.cycles),
        ),
        (
            "bf_try_depth_mean",
            "Mean depth attempts in backfill",
            mean(b.depth_try_sum, b.cycles),
        ),
        (
            "backfilled_het_jobs",
            "Heterogeneous components backfilled",
            0,
        ),
        (
            "backfilled_jobs",
            "Total backfilled jobs since reset",
            u64::from(b.backfilled_total),
        ),
        ("bf_active", "Backfill scheduler active jobs", 0),
        ("bf_cycle_cnt", "Backfill cycle count", u64::from(b.cycles)),
        (
            "bf_cycle_last",
            "Last backfill cycle time",
            u64::from(b.last_us),
        ),
        (
            "bf_cycle_max",
            "Max backfill cycle time",
            u64::from(b.max_us),
        ),
        ("bf_cycle_tot", "Sum of backfill cycle times", b.sum_us),
        ("bf_depth_tot", "Sum of backfill job depths", b.depth_sum),
        (
            "bf_depth_try_tot",
            "Sum of backfill depth attempts",
            b.depth_try_sum,
        ),
        (
            "bf_last_depth",
            "Last backfill depth",
            u64::from(b.last_depth),
        ),
        (
            "bf_last_depth_try",
            "Last backfill depth attempts",
            u64::from(b.last_depth_try),
        ),
        (
            "bf_queue_len",
            "Backfill queue length",
            u64::from(b.queue_len),
        ),
        (
            "bf_queue_len_tot",
            "Sum of backfill queue lengths",
            b.queue_len_sum,
        ),
        (
            "bf_table_size",
            "Backfill table size",
            u64::from(b.table_size),
        ),
        (
            "bf_table_size_tot",
            "Sum of backfill table sizes",
            b.table_size_sum,
        ),
        (
            "bf_when_last_cycle",
            "Timestamp of last backfill cycle",
            time(b.last_when.unwrap_or(0)),
        ),
        (
            "sdiag_jobs_canceled",
            "Jobs canceled since reset",
            u64::from(r.jobs.canceled),
        ),
        (
            "sdiag_jobs_completed",
            "Jobs completed since reset",
            u64::from(r.jobs.completed),
        ),
        (
            "sdiag_jobs_failed",
            "Jobs failed since reset",
            u64::from(r.jobs.failed),
        ),
        (
            "sdiag_jobs_pending",
            "Jobs pending at timestamp",
            u64::from(r.pending),
        ),
        (
            "sdiag_jobs_running",
            "Jobs running at timestamp",
            u64::from(r.running),
        ),
        (
            "sdiag_jobs_started",
            "Jobs started since reset",
            u64::from(r.jobs.started),
        ),
        (
            "sdiag_jobs_submitted",
            "Jobs submitted since reset",
            u64::from(r.jobs.submitted),
        ),
        (
            "sdiag_job_states_ts",
            "Job states timestamp",
            time(r.states_at),
        ),
        (
            "last_backfilled_jobs",
            "Backfilled jobs since last cycle",
            u64::from(b.backfilled),
        ),
        (
            "sdiag_latency",
            "Measurement latency",
            u64::from(r.clock_latency_us),
        ),
        (
            "schedule_cycle_cnt",
            "Scheduling cycle count",
            u64::from(m.cycles),
        ),
        (
            "schedule_cycle_depth",
            "Processed jobs depth total",
            m.depth_sum,
        ),
        (
            "schedule_cycle_last",
            "Last scheduling cycle time",
            u64::from(m.last_us),
        ),
        (
            "schedule_cycle_max",
            "Max scheduling cycle time",
            u64::from(m.max_us),
        ),
        (
            "schedule_cycle_tot",
            "Sum of scheduling cycle times",
            m.sum_us,
        ),
        (
            "schedule_queue_len",
            "Jobs pending queue length",
            u64::from(m.queue_len),
        ),
        ("sched_exit_end", "End of job queue", 0),
        ("sched_exit_max_depth", "Hit default_queue_depth", 0),
        ("sched_exit_max_job_start", "Hit sched_max_job_start", 0),
        ("sched_exit_lic", "Blocked on licenses", 0),
        ("sched_exit_rpc_cnt", "Hit max_rpc_cnt", 0),
        ("sched_exit_timeout", "Timeout (max_sched_time)", 0),
        ("bf_exit_end", "End of job queue", 0),
        ("bf_exit_max_job_start", "Hit bf_max_job_start", 0),
        ("bf_exit_max_job_test", "Hit bf_max_job_test", 0),
        ("bf_exit_state_changed", "System state changed", 0),
        (
            "bf_exit_table_limit",
            "Hit table size limit (bf_node_space_size)",
            0,
        ),
        ("bf_exit_timeout", "Timeout (bf_max_time)", 0),
        (
            "sched_mean_cycle",
            "Mean scheduling cycle time",
            mean(m.sum_us, m.cycles),
        ),
        (
            "sched_mean_depth_cycle",
            "Mean depth of scheduling cycles",
            mean(m.depth_sum, m.cycles),
        ),
        (
            "server_thread_cnt",
            "Active slurmctld threads count",
            u64::from(r.server_threads),
        ),
        ("slurmdbd_queue_size", "Queued messages to SlurmDBD", 0),
        (
            "last_proc_req_start",
            "Timestamp of last process request start",
            time(r.since),
        ),
        (
            "sched_stats_timestamp",
            "Statistics snapshot timestamp",
            time(r.now),
        ),
    ];
    let mut set = MetricSet::new();
    for (name, help, value) in rows {
        set.gauge(&format!("slurm_{name}"), help, value);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::super::{JobFacts, PartNodes};
    use super::*;
    use sluice_proto::types::JobState;

    // Every metric of Slurm's plugin, in its order (`openmetrics.c`).
    const NODE_METRICS: [&str; 38] = [
        "slurm_node_cpus",
        "slurm_node_cpus_alloc",
        "slurm_node_cpus_effective",
        "slurm_node_cpus_idle",
        "slurm_node_gpus",
        "slurm_node_gpus_alloc",
        "slurm_node_memory_alloc_bytes",
        "slurm_node_memory_effective_bytes",
        "slurm_node_memory_free_bytes",
        "slurm_node_memory_bytes",
        "slurm_nodes",
        "slurm_nodes_alloc",
        "slurm_nodes_blocked",
        "slurm_nodes_completing",
        "slurm_nodes_cloud",
        "slurm_nodes_down",
        "slurm_nodes_drain",
        "slurm_nodes_drained",
        "slurm_nodes_draining",
        "slurm_nodes_dyn_future",
        "slurm_nodes_dyn_normal",
        "slurm_nodes_external",
        "slurm_nodes_fail",
        "slurm_nodes_future",
        "slurm_nodes_idle",
        "slurm_nodes_invalid_reg",
        "slurm_nodes_maint",
        "slurm_nodes_mixed",
        "slurm_nodes_noresp",
        "slurm_nodes_planned",
        "slurm_nodes_power_down",
        "slurm_nodes_power_up",
        "slurm_nodes_powered_down",
        "slurm_nodes_powering_up",
        "slurm_nodes_reboot_issued",
        "slurm_nodes_reboot_req",
        "slurm_nodes_resv",
        "slurm_nodes_unknown",
    ];
    const JOB_METRICS: [&str; 30] = [
        "slurm_jobs_bootfail",
        "slurm_jobs_cancelled",
        "slurm_jobs_completed",
        "slurm_jobs_completing",
        "slurm_jobs_configuring",
        "slurm_jobs_cpus_alloc",
        "slurm_jobs_deadline",
        "slurm_jobs_expediting",
        "slurm_jobs_failed",
        "slurm_jobs_fed_requeued",
        "slurm_jobs_finished",
        "slurm_jobs_gpus_alloc",
        "slurm_jobs_hold",
        "slurm_jobs",
        "slurm_jobs_memory_alloc",
        "slurm_jobs_node_failed",
        "slurm_jobs_nodes_alloc",
        "slurm_jobs_outofmemory",
        "slurm_jobs_pending",
        "slurm_jobs_powerup_node",
        "slurm_jobs_preempted",
        "slurm_jobs_requeued",
        "slurm_jobs_resizing",
        "slurm_jobs_revoked",
        "slurm_jobs_running",
        "slurm_jobs_signaling",
        "slurm_jobs_stageout",
        "slurm_jobs_started",
        "slurm_jobs_suspended",
        "slurm_jobs_timeout",
    ];
    const PARTITION_METRICS: [&str; 73] = [
        "slurm_partitions",
        "slurm_partition_jobs",
        "slurm_partition_jobs_bootfail",
        "slurm_partition_jobs_cancelled",
        "slurm_partition_jobs_completed",
        "slurm_partition_jobs_completing",
        "slurm_partition_jobs_configuring",
        "slurm_partition_jobs_cpus_alloc",
        "slurm_partition_jobs_gpus_alloc",
        "slurm_partition_jobs_deadline",
        "slurm_partition_jobs_expediting",
        "slurm_partition_jobs_failed",
        "slurm_partition_jobs_fed_requeued",
        "slurm_partition_jobs_finished",
        "slurm_partition_jobs_hold",
        "slurm_partition_jobs_max_job_nodes",
        "slurm_partition_jobs_max_job_nodes_nohold",
        "slurm_partition_jobs_memory_alloc",
        "slurm_partition_jobs_min_job_nodes",
        "slurm_partition_jobs_min_job_nodes_nohold",
        "slurm_partition_jobs_node_failed",
        "slurm_partition_jobs_outofmemory",
        "slurm_partition_jobs_pending",
        "slurm_partition_jobs_powerup_node",
        "slurm_partition_jobs_preempted",
        "slurm_partition_jobs_requeued",
        "slurm_partition_jobs_resizing",
        "slurm_partition_jobs_revoked",
        "slurm_partition_jobs_running",
        "slurm_partition_jobs_signaling",
        "slurm_partition_jobs_stageout",
        "slurm_partition_jobs_started",
        "slurm_partition_jobs_suspended",
        "slurm_partition_jobs_timeout",
        "slurm_partition_jobs_wait_part_node_limit",
        "slurm_partition_nodes_alloc",
        "slurm_partition_nodes_blocked",
        "slurm_partition_nodes_cg",
        "slurm_partition_nodes_cloud",
        "slurm_partition_nodes_cpus_efctv",
        "slurm_partition_nodes_cpus_idle",
        "slurm_partition_nodes_cpus_alloc",
        "slurm_partition_nodes_down",
        "slurm_partition_nodes_drain",
        "slurm_partition_nodes_drained",
        "slurm_partition_nodes_draining",
        "slurm_partition_nodes_dyn_future",
        "slurm_partition_nodes_dyn_normal",
        "slurm_partition_nodes_external",
        "slurm_partition_nodes_fail",
        "slurm_partition_nodes_future",
        "slurm_partition_nodes_idle",
        "slurm_partition_nodes_invalid_reg",
        "slurm_partition_nodes_maint",
        "slurm_partition_nodes_mem_alloc",
        "slurm_partition_nodes_mem_avail",
        "slurm_partition_nodes_mem_free",
        "slurm_partition_nodes_mem_tot",
        "slurm_partition_nodes_mixed",
        "slurm_partition_nodes_no_resp",
        "slurm_partition_nodes_planned",
        "slurm_partition_nodes_power_down",
        "slurm_partition_nodes_power_up",
        "slurm_partition_nodes_powered_down",
        "slurm_partition_nodes_powering_down",
        "slurm_partition_nodes_powering_up",
        "slurm_partition_nodes_reboot_issued",
        "slurm_partition_nodes_reboot_requested",
        "slurm_partition_nodes_resv",
        "slurm_partition_nodes_unknown",
        "slurm_partition_cpus",
        "slurm_partition_gpus",
        "slurm_partition_nodes",
    ];
    const USER_ACCOUNT_METRICS: [&str; 60] = [
        "slurm_user_jobs_bootfail",
        "slurm_user_jobs_cancelled",
        "slurm_user_jobs_completed",
        "slurm_user_jobs_completing",
        "slurm_user_jobs_configuring",
        "slurm_user_jobs_cpus_alloc",
        "slurm_user_jobs_deadline",
        "slurm_user_jobs_expediting",
        "slurm_user_jobs_failed",
        "slurm_user_jobs_fed_requeued",
        "slurm_user_jobs_finished",
        "slurm_user_jobs_gpus_alloc",
        "slurm_user_jobs_hold",
        "slurm_user_jobs",
        "slurm_user_jobs_memory_alloc",
        "slurm_user_jobs_node_failed",
        "slurm_user_jobs_nodes_alloc",
        "slurm_user_jobs_outofmemory",
        "slurm_user_jobs_pending",
        "slurm_user_jobs_powerup_node",
        "slurm_user_jobs_preempted",
        "slurm_user_jobs_requeued",
        "slurm_user_jobs_resizing",
        "slurm_user_jobs_revoked",
        "slurm_user_jobs_running",
        "slurm_user_jobs_signaling",
        "slurm_user_jobs_stageout",
        "slurm_user_jobs_started",
        "slurm_user_jobs_suspended",
        "slurm_user_jobs_timeout",
        "slurm_account_jobs_bootfail",
        "slurm_account_jobs_cancelled",
        "slurm_account_jobs_completed",
        "slurm_account_jobs_completing",
        "slurm_account_jobs_configuring",
        "slurm_account_jobs_cpus_alloc",
        "slurm_account_jobs_deadline",
        "slurm_account_jobs_expediting",
        "slurm_account_jobs_failed",
        "slurm_account_jobs_fed_requeued",
        "slurm_account_jobs_finished",
        "slurm_account_jobs_gpus_alloc",
        "slurm_account_jobs_hold",
        "slurm_account_jobs",
        "slurm_account_jobs_memory_alloc",
        "slurm_account_jobs_node_failed",
        "slurm_account_jobs_nodes_alloc",
        "slurm_account_jobs_outofmemory",
        "slurm_account_jobs_pending",
        "slurm_account_jobs_powerup_node",
        "slurm_account_jobs_preempted",
        "slurm_account_jobs_requeued",
        "slurm_account_jobs_resizing",
        "slurm_account_jobs_revoked",
        "slurm_account_jobs_running",
        "slurm_account_jobs_signaling",
        "slurm_account_jobs_stageout",
        "slurm_account_jobs_started",
        "slurm_account_jobs_suspended",
        "slurm_account_jobs_timeout",
    ];
    const SCHEDULER_METRICS: [&str; 58] = [
        "slurm_agent_cnt",
        "slurm_agent_queue_size",
        "slurm_agent_thread_cnt",
        "slurm_bf_depth_mean",
        "slurm_bf_mean_cycle",
        "slurm_bf_mean_table_sz",
        "slurm_bf_queue_len_mean",
        "slurm_bf_try_depth_mean",
        "slurm_backfilled_het_jobs",
        "slurm_backfilled_jobs",
        "slurm_bf_active",
        "slurm_bf_cycle_cnt",
        "slurm_bf_cycle_last",
        "slurm_bf_cycle_max",
        "slurm_bf_cycle_tot",
        "slurm_bf_depth_tot",
        "slurm_bf_depth_try_tot",
        "slurm_bf_last_depth",
        "slurm_bf_last_depth_try",
        "slurm_bf_queue_len",
        "slurm_bf_queue_len_tot",
        "slurm_bf_table_size",
        "slurm_bf_table_size_tot",
        "slurm_bf_when_last_cycle",
        "slurm_sdiag_jobs_canceled",
        "slurm_sdiag_jobs_completed",
        "slurm_sdiag_jobs_failed",
        "slurm_sdiag_jobs_pending",
        "slurm_sdiag_jobs_running",
        "slurm_sdiag_jobs_started",
        "slurm_sdiag_jobs_submitted",
        "slurm_sdiag_job_states_ts",
        "slurm_last_backfilled_jobs",
        "slurm_sdiag_latency",
        "slurm_schedule_cycle_cnt",
        "slurm_schedule_cycle_depth",
        "slurm_schedule_cycle_last",
        "slurm_schedule_cycle_max",
        "slurm_schedule_cycle_tot",
        "slurm_schedule_queue_len",
        "slurm_sched_exit_end",
        "slurm_sched_exit_max_depth",
        "slurm_sched_exit_max_job_start",
        "slurm_sched_exit_lic",
        "slurm_sched_exit_rpc_cnt",
        "slurm_sched_exit_timeout",
        "slurm_bf_exit_end",
        "slurm_bf_exit_max_job_start",
        "slurm_bf_exit_max_job_test",
        "slurm_bf_exit_state_changed",
        "slurm_bf_exit_table_limit",
        "slurm_bf_exit_timeout",
        "slurm_sched_mean_cycle",
        "slurm_sched_mean_depth_cycle",
        "slurm_server_thread_cnt",
        "slurm_slurmdbd_queue_size",
        "slurm_last_proc_req_start",
        "slurm_sched_stats_timestamp",
    ];

    fn job(state: JobState, user: &'static str, account: &'static str) -> JobFacts<'static> {
        JobFacts {
            state,
            held: false,
            partition: "debug",
            user,
            account,
            cpus: 0,
            nodes: 0,
            mem_mib: 0,
            gpus: 0,
            min_nodes: 1,
            max_nodes: 1,
            part_node_limit: false,
            completing: false,
        }
    }

    fn node(name: &str, state: &'static str, alloc: u32) -> NodeStat {
        NodeStat {
            name: name.into(),
            state,
            responding: true,
            cpus: 4,
            cpus_alloc: alloc,
            mem_mib: 8000,
            mem_alloc_mib: 1000 * u64::from(alloc),
            gpus: 2,
            gpus_alloc: u64::from(alloc > 0),
            ..Default::default()
        }
    }

    /// The value of sample `sample` (name and labels as written) in `text`.
    fn value(text: &str, sample: &str) -> String {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(sample)?
                    .strip_prefix(' ')
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("no {sample} in\n{text}"))
    }

    #[test]
    fn every_endpoint_has_slurm_s_metrics_in_slurm_s_order() {
        let nodes = vec![node("n1", "mixed", 1), node("n2", "idle", 0)];
        assert_eq!(
            super::nodes(&nodes).names().collect::<Vec<_>>(),
            NODE_METRICS
        );
        assert_eq!(
            jobs(&JobStats::default()).names().collect::<Vec<_>>(),
            JOB_METRICS
        );
        let p = PartStats::new(
            &PartNodes {
                name: "debug".into(),
                nodes: vec![0, 1],
            },
            &nodes,
        );
        assert_eq!(
            partitions(&[p]).names().collect::<Vec<_>>(),
            PARTITION_METRICS
        );
        let mut ua = UsersAccounts::default();
        ua.add(&job(JobState::Pending, "alice", "phys"));
        assert_eq!(
            users_accounts(&ua).names().collect::<Vec<_>>(),
            USER_ACCOUNT_METRICS
        );
        assert_eq!(
            scheduler(&DiagReport::default())
                .names()
                .collect::<Vec<_>>(),
            SCHEDULER_METRICS
        );
    }

    #[test]
    fn the_jobs_endpoint_reads_as_slurm_s() {
        let mut s = JobStats::default();
        for st in [JobState::Running, JobState::Pending, JobState::Pending] {
            s.add(&JobFacts {
                cpus: 3,
                nodes: 1,
                mem_mib: 500,
                ..job(st, "alice", "phys")
            });
        }
        let text = jobs(&s).render();
        assert!(
            text.starts_with(
                "# HELP slurm_jobs_bootfail Number of jobs in BootFail state\n\
                 # TYPE slurm_jobs_bootfail gauge\n\
                 slurm_jobs_bootfail 0\n\
                 # HELP slurm_jobs_cancelled Number of jobs in Cancelled state\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "# HELP slurm_jobs Total number of jobs\n# TYPE slurm_jobs gauge\nslurm_jobs 3\n"
        ));
        assert_eq!(value(&text, "slurm_jobs_pending"), "2");
        assert_eq!(value(&text, "slurm_jobs_running"), "1");
        assert_eq!(value(&text, "slurm_jobs_cpus_alloc"), "3");
        assert_eq!(value(&text, "slurm_jobs_memory_alloc"), "500");
        // Slurm's own spelling.
        assert!(text.contains("# HELP slurm_jobs_revoked Number of jobs in Rvoked state\n"));
        assert_eq!(text.lines().count(), 30 * 3);
    }

    #[test]
    fn nodes_each_and_in_all() {
        let nodes = vec![
            node("n1", "mixed", 1),
            node("n2", "idle", 0),
            NodeStat {
                responding: false,
                ..node("n3", "down", 0)
            },
            node("n4", "drained", 0),
        ];
        let text = super::nodes(&nodes).render();
        assert!(text.starts_with(
            "# HELP slurm_node_cpus Total number of cpus in the node\n\
             # TYPE slurm_node_cpus gauge\n\
             slurm_node_cpus{node=\"n1\"} 4\n\
             slurm_node_cpus{node=\"n2\"} 4\n"
        ));
        assert_eq!(value(&text, "slurm_node_cpus_alloc{node=\"n1\"}"), "1");
        assert_eq!(value(&text, "slurm_node_cpus_idle{node=\"n1\"}"), "3");
        assert_eq!(value(&text, "slurm_node_memory_bytes{node=\"n1\"}"), "8000");
        assert_eq!(
            value(&text, "slurm_node_memory_alloc_bytes{node=\"n1\"}"),
            "1000"
        );
        assert_eq!(value(&text, "slurm_node_gpus_alloc{node=\"n1\"}"), "1");
        assert_eq!(value(&text, "slurm_nodes"), "4");
        assert_eq!(value(&text, "slurm_nodes_idle"), "2");
        assert_eq!(value(&text, "slurm_nodes_mixed"), "1");
        assert_eq!(value(&text, "slurm_nodes_down"), "1");
        assert_eq!(value(&text, "slurm_nodes_noresp"), "1");
        assert_eq!(value(&text, "slurm_nodes_drained"), "1");
        assert_eq!(value(&text, "slurm_nodes_alloc"), "0");
    }

    #[test]
    fn partitions_users_and_accounts_are_labelled() {
        let nodes = vec![node("n1", "allocated", 4), node("n2", "idle", 0)];
        let mut p = PartStats::new(
            &PartNodes {
                name: "gpu \"a\"".into(),
                nodes: vec![0, 1],
            },
            &nodes,
        );
        p.add_job(&JobFacts {
            min_nodes: 2,
            max_nodes: 3,
            ..job(JobState::Pending, "alice", "phys")
        });
        let text = partitions(&[p]).render();
        assert!(text.starts_with(
            "# HELP slurm_partitions Total number of partitions\n\
             # TYPE slurm_partitions gauge\n\
             slurm_partitions 1\n\
             # HELP slurm_partition_jobs Number of jobs in this partition\n\
             # TYPE slurm_partition_jobs gauge\n\
             slurm_partition_jobs{partition=\"gpu \\\"a\\\"\"} 1\n"
        ));
        let l = "{partition=\"gpu \\\"a\\\"\"}";
        assert_eq!(
            value(&text, &format!("slurm_partition_jobs_pending{l}")),
            "1"
        );
        assert_eq!(
            value(&text, &format!("slurm_partition_jobs_max_job_nodes{l}")),
            "3"
        );
        assert_eq!(
            value(&text, &format!("slurm_partition_nodes_alloc{l}")),
            "1"
        );
        assert_eq!(value(&text, &format!("slurm_partition_nodes_idle{l}")), "1");
        assert_eq!(value(&text, &format!("slurm_partition_cpus{l}")), "8");
        assert_eq!(value(&text, &format!("slurm_partition_gpus{l}")), "4");
        assert_eq!(
            value(&text, &format!("slurm_partition_nodes_cpus_idle{l}")),
            "4"
        );

        let mut ua = UsersAccounts::default();
        ua.add(&job(JobState::Pending, "alice", "phys"));
        ua.add(&job(JobState::Running, "bob", "phys"));
        let text = users_accounts(&ua).render();
        assert_eq!(
            value(&text, "slurm_user_jobs_pending{username=\"alice\"}"),
            "1"
        );
        assert_eq!(
            value(&text, "slurm_user_jobs_running{username=\"bob\"}"),
            "1"
        );
        assert_eq!(value(&text, "slurm_account_jobs{account=\"phys\"}"), "2");
        assert!(text.contains("# HELP slurm_user_jobs_revoked Number of jobs revoked\n"));
    }

    #[test]
    fn scheduler_figures_are_sdiag_s_with_slurm_s_means() {
        let mut r = DiagReport {
            now: 1_700_000_100,
            since: 1_700_000_000,
            states_at: 1_700_000_100,
            pending: 3,
            running: 2,
            server_threads: 1,
            ..Default::default()
        };
        r.jobs.submitted = 5;
        r.main.cycles = 4;
        r.main.sum_us = 1000;
        r.main.depth_sum = 10;
        r.backfill.cycles = 3;
        r.backfill.sum_us = 100;
        r.backfill.backfilled_total = 7;
        r.backfill.backfilled = 2;
        r.backfill.last_when = Some(1_700_000_050);
        let text = scheduler(&r).render();
        assert_eq!(value(&text, "slurm_sdiag_jobs_submitted"), "5");
        assert_eq!(value(&text, "slurm_sdiag_jobs_pending"), "3");
        assert_eq!(value(&text, "slurm_schedule_cycle_cnt"), "4");
        assert_eq!(value(&text, "slurm_sched_mean_cycle"), "250");
        assert_eq!(value(&text, "slurm_sched_mean_depth_cycle"), "2");
        assert_eq!(value(&text, "slurm_bf_mean_cycle"), "33");
        assert_eq!(value(&text, "slurm_backfilled_jobs"), "7");
        assert_eq!(value(&text, "slurm_last_backfilled_jobs"), "2");
        assert_eq!(value(&text, "slurm_bf_when_last_cycle"), "1700000050");
        assert_eq!(value(&text, "slurm_last_proc_req_start"), "1700000000");
        assert_eq!(value(&text, "slurm_sched_stats_timestamp"), "1700000100");
        // No cycles yet: the means are 0, not a division by zero.
        let text = scheduler(&DiagReport::default()).render();
        assert_eq!(value(&text, "slurm_bf_depth_mean"), "0");
    }
}
