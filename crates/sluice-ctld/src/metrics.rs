//! Slurm 25.11's metrics endpoints (`MetricsType=metrics/openmetrics`), and Sluice's
//! own beside them.
//!
//! slurmctld answers `GET /metrics/jobs`, `/metrics/nodes`, `/metrics/partitions`,
//! `/metrics/scheduler` and `/metrics/jobs-users-accts` on its own port, in the text
//! its `metrics/openmetrics` plugin writes ([`text`]); the metrics' names, labels, help
//! texts and order are its (`src/plugins/metrics/openmetrics/openmetrics.c`), and so
//! is what each figure counts (`src/slurmctld/statistics.c`), here from Sluice's state
//! ([`slurm`]). `GET /metrics/sluice` adds what Slurm cannot say, under names of
//! Sluice's own (`sluice_...`, [`sluice`]): GPUs idle while GPU jobs wait and how much
//! of that is fragmented, each GPU's occupant, the forecast start of each partition's
//! next job, and the audit trail's events by kind.
//!
//! The figures are gathered cheaply: the jobs from the snapshot listings read
//! (`state/listing.rs`, no round trip through the loop), the nodes, partitions, GPUs
//! and forecasts in one short request to the loop ([`LoopFigures`]), the scheduler's
//! from `sdiag`'s counters. Who may read them is decided by the server
//! (`server/metrics.rs`), as slurmctld decides it.

pub mod sluice;
pub mod slurm;
pub mod text;

use sluice_proto::types::JobState;

pub use text::MetricSet;

/// The endpoints, as slurmctld binds them, and Sluice's own.
pub const ENDPOINTS: [&str; 7] = [
    "/metrics",
    "/metrics/jobs",
    "/metrics/nodes",
    "/metrics/partitions",
    "/metrics/scheduler",
    "/metrics/jobs-users-accts",
    "/metrics/sluice",
];

/// Whether `path` is one of the [`ENDPOINTS`], exactly as written.
pub fn is_endpoint(path: &str) -> bool {
    ENDPOINTS.contains(&path)
}

/// What `GET /metrics` answers: slurmctld's index, and Sluice's endpoint.
pub const INDEX: &str = "slurmctld index of metrics endpoints:\n  \
'/metrics/jobs': get job metrics\n  \
'/metrics/nodes': get node metrics\n  \
'/metrics/partitions': get partition metrics\n  \
'/metrics/jobs-users-accts': get user and account jobs metrics\n  \
'/metrics/scheduler': get scheduler metrics\n  \
'/metrics/sluice': get Sluice's own metrics (GPUs, forecasts, audit trail)\n";

/// What the job figures read of one job.
#[derive(Clone, Copy, Debug)]
pub struct JobFacts<'a> {
    /// Its state.
    pub state: JobState,
    /// Pending and held (Slurm's `WAIT_HELD` or `WAIT_HELD_USER`).
    pub held: bool,
    /// Its partition.
    pub partition: &'a str,
    /// Its owner's name.
    pub user: &'a str,
    /// Its account.
    pub account: &'a str,
    /// What it holds while it runs: CPUs, nodes, memory (MiB), whole GPUs.
    pub cpus: u64,
    /// See `cpus`.
    pub nodes: u64,
    /// See `cpus`.
    pub mem_mib: u64,
    /// See `cpus`.
    pub gpus: u64,
    /// The nodes it asks, at least and at most (the most: no fewer than the least).
    pub min_nodes: u32,
    /// See `min_nodes`.
    pub max_nodes: u32,
    /// It waits with reason `PartitionNodeLimit`.
    pub part_node_limit: bool,
    /// Its processes are being ended (Slurm's `COMPLETING` flag).
    pub completing: bool,
}

/// Slurm's `jobs_stats_t`: jobs by state, and what the running ones hold. Memory is
/// counted in MiB, as Slurm counts it (though its metrics' names and help say bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct JobStats {
    pub bootfail: u64,
    pub cancelled: u64,
    pub completed: u64,
    pub completing: u64,
    pub configuring: u64,
    pub cpus_alloc: u64,
    pub deadline: u64,
    pub expediting: u64,
    pub failed: u64,
    pub fed_requeued: u64,
    pub finished: u64,
    pub gpus_alloc: u64,
    pub hold: u64,
    pub job_cnt: u64,
    pub memory_alloc: u64,
    pub node_failed: u64,
    pub nodes_alloc: u64,
    pub oom: u64,
    pub pending: u64,
    pub powerup_node: u64,
    pub preempted: u64,
    pub requeued: u64,
    pub resizing: u64,
    pub revoked: u64,
    pub running: u64,
    pub signaling: u64,
    pub stageout: u64,
    pub started: u64,
    pub suspended: u64,
    pub timeout: u64,
}

impl JobStats {
    /// Counts job `j` as slurmctld's `_fill_jobs_statistics` does: each state by its
    /// own counter; started, every state after pending (a job cancelled while it
    /// waited too, as Slurm's `IS_JOB_STARTED`); finished, every state after
    /// running; held, the pending jobs held; what the running jobs hold.
    pub fn add(&mut self, j: &JobFacts) {
        let after = |s: &mut Self| {
            s.started += 1;
            s.finished += 1;
        };
        if j.completing {
            self.completing += 1;
        }
        match j.state {
            JobState::Pending => {
                self.pending += 1;
                if j.held {
                    self.hold += 1;
                }
            }
            JobState::Running => {
                self.running += 1;
                self.started += 1;
                self.cpus_alloc += j.cpus;
                self.nodes_alloc += j.nodes;
                self.memory_alloc += j.mem_mib;
                self.gpus_alloc += j.gpus;
            }
            JobState::Suspended => {
                self.suspended += 1;
                self.started += 1;
            }
            JobState::Completed => {
                self.completed += 1;
                after(self);
            }
            JobState::Failed => {
                self.failed += 1;
                after(self);
            }
            JobState::Cancelled => {
                self.cancelled += 1;
                after(self);
            }
            JobState::Timeout => {
                self.timeout += 1;
                after(self);
            }
            JobState::NodeFail => {
                self.node_failed += 1;
                after(self);
            }
            JobState::Preempted => {
                self.preempted += 1;
                after(self);
            }
            JobState::OutOfMemory => {
                self.oom += 1;
                after(self);
            }
            // A requeued run's own record (Slurm's `JOB_REQUEUE` flag on a run that
            // ended).
            JobState::Requeued => {
                self.requeued += 1;
                after(self);
            }
        }
        self.job_cnt += 1;
    }
}

/// One node, as the loop sees it now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStat {
    /// Its name.
    pub name: String,
    /// Its state as `sinfo` words it: `idle`, `mixed`, `allocated`, `down`, `drained`,
    /// `draining`, `maint`, `completing`, `unknown` (awaiting its agent), `future`,
    /// `cloud` (a cloud node whose agent has not registered: Slurm's powered-down
    /// cloud node).
    pub state: &'static str,
    /// Created by `scontrol create node` (Slurm's dynamic node).
    pub dynamic: bool,
    /// Its agent answers (else Slurm's `NOT_RESPONDING`).
    pub responding: bool,
    /// In a maintenance reservation now (Slurm's `MAINT`).
    pub maint: bool,
    /// In an advance reservation active now (Slurm's `RESERVED`).
    pub reserved: bool,
    /// CPUs, and those allocated.
    pub cpus: u32,
    /// See `cpus`.
    pub cpus_alloc: u32,
    /// Memory, allocated memory and free memory (MiB; free as the node reports it,
    /// 0 when unknown, as Slurm shows it then).
    pub mem_mib: u64,
    /// See `mem_mib`.
    pub mem_alloc_mib: u64,
    /// See `mem_mib`.
    pub mem_free_mib: u64,
    /// GPUs, and those allocated whole.
    pub gpus: u64,
    /// See `gpus`.
    pub gpus_alloc: u64,
}

/// A node's base state, as Slurm counts it (one per node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Idle,
    Mixed,
    Allocated,
    Down,
    Unknown,
    Future,
}

impl NodeStat {
    fn base(&self) -> Base {
        match self.state {
            "down" => Base::Down,
            "unknown" => Base::Unknown,
            "future" => Base::Future,
            "mixed" => Base::Mixed,
            "allocated" => Base::Allocated,
            // Slurm infers MIXED from idle CPUs on a busy node, DRAIN or not.
            "completing" if self.cpus_alloc == 0 => Base::Idle,
            "draining" | "completing" if self.cpus_alloc < self.cpus => Base::Mixed,
            "draining" | "completing" => Base::Allocated,
            // `drained` and `maint` are flags on an idle node, and a powered-down
            // cloud node is idle.
            _ => Base::Idle,
        }
    }

    /// Up, answering, and neither drained nor in maintenance: its idle GPUs could be
    /// given to a job.
    pub fn usable(&self) -> bool {
        self.responding && matches!(self.state, "idle" | "mixed" | "allocated" | "completing")
    }
}

/// Slurm's node counts (`nodes_stats_t`, and a partition's `nodes_*`): one base state
/// per node (future, down, mixed, allocated, idle, unknown) and the flags (completing,
/// drain, drained, draining, maintenance, not responding, reserved, cloud, powered
/// down for a cloud node not started, dynamic; the other power, reboot, fail and
/// external ones never occur here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct NodeCounts {
    pub alloc: u64,
    pub blocked: u64,
    pub cg: u64,
    pub cloud: u64,
    pub down: u64,
    pub drain: u64,
    pub drained: u64,
    pub draining: u64,
    pub dyn_future: u64,
    pub dyn_normal: u64,
    pub external: u64,
    pub fail: u64,
    pub future: u64,
    pub idle: u64,
    pub invalid_reg: u64,
    pub maint: u64,
    pub mixed: u64,
    pub no_resp: u64,
    pub planned: u64,
    pub power_down: u64,
    pub power_up: u64,
    pub powered_down: u64,
    pub powering_down: u64,
    pub powering_up: u64,
    pub reboot_issued: u64,
    pub reboot_requested: u64,
    pub resv: u64,
    pub unknown: u64,
}

impl NodeCounts {
    /// Counts node `n`.
    pub fn add(&mut self, n: &NodeStat) {
        match n.base() {
            Base::Idle => self.idle += 1,
            Base::Mixed => self.mixed += 1,
            Base::Allocated => self.alloc += 1,
            Base::Down => self.down += 1,
            Base::Unknown => self.unknown += 1,
            Base::Future => self.future += 1,
        }
        // Slurm: DRAINING is DRAIN on an allocated or mixed node, DRAINED the rest;
        // a node counts under `drain` only when not draining.
        match n.state {
            "completing" => self.cg += 1,
            "draining" => self.draining += 1,
            "drained" => {
                self.drain += 1;
                self.drained += 1;
            }
            "cloud" => {
                self.cloud += 1;
                self.powered_down += 1;
            }
            _ => {}
        }
        self.dyn_normal += u64::from(n.dynamic);
        self.maint += u64::from(n.maint);
        self.no_resp += u64::from(!n.responding);
        self.resv += u64::from(n.reserved);
    }

    /// The counts of `nodes`.
    pub fn of<'a>(nodes: impl IntoIterator<Item = &'a NodeStat>) -> Self {
        let mut c = NodeCounts::default();
        for n in nodes {
            c.add(n);
        }
        c
    }
}

/// A partition as the loop sees it: its name and its nodes (indices into
/// [`LoopFigures::nodes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartNodes {
    /// Its name.
    pub name: String,
    /// Its nodes.
    pub nodes: Vec<usize>,
}

/// Slurm's `partition_stats_t`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartStats {
    /// Its name.
    pub name: String,
    /// Jobs in it that have not finished.
    pub jobs: u64,
    /// Its jobs by state (the counts `JobStats::add` keeps; `job_cnt` and
    /// `nodes_alloc` unused).
    pub job: JobStats,
    /// Of its pending jobs: the most of the most nodes any asks, and the most of the
    /// least, with and without the held ones (Slurm's autoscaling figures).
    pub max_job_nodes: u64,
    /// See `max_job_nodes`.
    pub max_job_nodes_nohold: u64,
    /// See `max_job_nodes`.
    pub min_job_nodes: u64,
    /// See `max_job_nodes`.
    pub min_job_nodes_nohold: u64,
    /// Its jobs waiting with reason `PartitionNodeLimit`.
    pub wait_part_node_limit: u64,
    /// Its nodes by state.
    pub nodes: NodeCounts,
    /// Sums over its nodes: CPUs allocated, effective, idle; memory allocated,
    /// available, free, in all (MiB).
    pub cpus_alloc: u64,
    /// See `cpus_alloc`.
    pub cpus_efctv: u64,
    /// See `cpus_alloc`.
    pub cpus_idle: u64,
    /// See `cpus_alloc`.
    pub mem_alloc: u64,
    /// See `cpus_alloc`.
    pub mem_avail: u64,
    /// See `cpus_alloc`.
    pub mem_free: u64,
    /// See `cpus_alloc`.
    pub mem_total: u64,
    /// Its CPUs, GPUs and nodes.
    pub total_cpus: u64,
    /// See `total_cpus`.
    pub total_gpus: u64,
    /// See `total_cpus`.
    pub total_nodes: u64,
}

impl PartStats {
    /// Partition `p` with the figures of its nodes among `nodes`, before its jobs.
    pub fn new(p: &PartNodes, nodes: &[NodeStat]) -> Self {
        let mut s = PartStats {
            name: p.name.clone(),
            ..Default::default()
        };
        for n in p.nodes.iter().filter_map(|&i| nodes.get(i)) {
            s.nodes.add(n);
            let cpus = u64::from(n.cpus);
            let alloc = u64::from(n.cpus_alloc);
            s.cpus_alloc += alloc;
            s.cpus_efctv += cpus;
            s.cpus_idle += cpus.saturating_sub(alloc);
            s.mem_alloc += n.mem_alloc_mib;
            s.mem_avail += n.mem_mib;
            s.mem_free += n.mem_free_mib;
            s.mem_total += n.mem_mib;
            s.total_cpus += cpus;
            s.total_gpus += n.gpus;
            s.total_nodes += 1;
        }
        s
    }

    /// Counts job `j` of this partition, as slurmctld's
    /// `_statistics_part_aggregate_job`.
    pub fn add_job(&mut self, j: &JobFacts) {
        self.job.add(j);
        if !j.state.is_finished() {
            self.jobs += 1;
        }
        if j.state == JobState::Pending {
            let (min, max) = (
                u64::from(j.min_nodes),
                u64::from(j.max_nodes.max(j.min_nodes)),
            );
            if !j.held {
                self.max_job_nodes_nohold = self.max_job_nodes_nohold.max(max);
                self.min_job_nodes_nohold = self.min_job_nodes_nohold.max(min);
            }
            self.max_job_nodes = self.max_job_nodes.max(max);
            self.min_job_nodes = self.min_job_nodes.max(min);
            self.wait_part_node_limit += u64::from(j.part_node_limit);
        }
    }
}

/// The job figures by user and by account (Slurm's `users_accts_stats_t`), each in
/// the order its first job came.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsersAccounts {
    /// By user name.
    pub users: Vec<(String, JobStats)>,
    /// By account.
    pub accounts: Vec<(String, JobStats)>,
    by_user: std::collections::HashMap<String, usize>,
    by_account: std::collections::HashMap<String, usize>,
}

impl UsersAccounts {
    /// Counts job `j` under its user and its account.
    pub fn add(&mut self, j: &JobFacts) {
        fn entry<'a>(
            list: &'a mut Vec<(String, JobStats)>,
            index: &mut std::collections::HashMap<String, usize>,
            key: &str,
        ) -> &'a mut JobStats {
            let i = match index.get(key) {
                Some(&i) => i,
                None => {
                    list.push((key.to_string(), JobStats::default()));
                    index.insert(key.to_string(), list.len() - 1);
                    list.len() - 1
                }
            };
            &mut list[i].1
        }
        entry(&mut self.users, &mut self.by_user, j.user).add(j);
        entry(&mut self.accounts, &mut self.by_account, j.account).add(j);
    }
}

/// One GPU and who holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuStat {
    /// Its node (index into [`LoopFigures::nodes`]).
    pub node: usize,
    /// Its index on the node (as `CUDA_VISIBLE_DEVICES` counts them).
    pub index: u32,
    /// Its type, if it has one.
    pub gpu_type: Option<String>,
    /// The running jobs that hold it, whole or in shards: (job id, owner).
    pub holders: Vec<(u64, String)>,
}

/// The GPU jobs waiting in one partition: queued (not held, not waiting on a
/// dependency), asking GPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuWait {
    /// How many.
    pub jobs: u64,
    /// The fewest GPUs per node any of them asks (0 when none waits).
    pub min_per_node: u64,
}

/// A partition's next job: the first of its jobs in the scheduler's queue order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeadJob {
    /// The partition (index into [`LoopFigures::partitions`]).
    pub partition: usize,
    /// The job's id.
    pub job: u64,
    /// Its priority.
    pub priority: u32,
    /// When it was submitted.
    pub submit: i64,
    /// When it is expected to start (the controller's forecast, else the backfill
    /// plan's, as `squeue --start` shows it); `None` when unknown.
    pub start: Option<i64>,
}

/// What only Sluice says, from the loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SluiceFigures {
    /// When.
    pub now: i64,
    /// Every GPU, by node and index.
    pub gpus: Vec<GpuStat>,
    /// Per partition (by index).
    pub waiting: Vec<GpuWait>,
    /// Each partition's next job, for the partitions with one.
    pub heads: Vec<HeadJob>,
    /// Running jobs flagged for idle GPUs, by id.
    pub idle_gpu_jobs: Vec<IdleGpuJob>,
    /// Audit events recorded since the controller started, by kind (every kind).
    pub audit: Vec<(&'static str, u64)>,
}

/// A running job flagged for idle GPUs (`state/idle_gpus.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleGpuJob {
    /// Job id.
    pub job: u64,
    /// Owner.
    pub user: String,
    /// Account.
    pub account: String,
    /// GPUs idle.
    pub idle: u32,
    /// GPUs held.
    pub held: u32,
    /// Idle since (Unix seconds).
    pub since: i64,
}

/// What the metrics need from the loop: the nodes and partitions now and, for
/// `/metrics/sluice`, Sluice's own figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopFigures {
    /// The nodes, in configuration order.
    pub nodes: Vec<NodeStat>,
    /// The partitions, in configuration order.
    pub partitions: Vec<PartNodes>,
    /// Sluice's own, when asked.
    pub sluice: Option<SluiceFigures>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: JobState) -> JobFacts<'static> {
        JobFacts {
            state,
            held: false,
            partition: "debug",
            user: "alice",
            account: "phys",
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

    #[test]
    fn jobs_counted_as_slurm_counts_them() {
        let mut s = JobStats::default();
        let running = JobFacts {
            cpus: 4,
            nodes: 2,
            mem_mib: 2000,
            gpus: 1,
            ..job(JobState::Running)
        };
        s.add(&running);
        s.add(&job(JobState::Pending));
        s.add(&JobFacts {
            held: true,
            ..job(JobState::Pending)
        });
        for st in [
            JobState::Completed,
            JobState::Failed,
            JobState::Cancelled,
            JobState::Timeout,
            JobState::OutOfMemory,
        ] {
            s.add(&job(st));
        }
        assert_eq!(
            (s.job_cnt, s.pending, s.hold, s.running, s.started, s.finished),
            (8, 2, 1, 1, 6, 5)
        );
        assert_eq!(
            (s.completed, s.failed, s.cancelled, s.timeout, s.oom),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(
            (s.cpus_alloc, s.nodes_alloc, s.memory_alloc, s.gpus_alloc),
            (4, 2, 2000, 1)
        );
        // A cancelled job whose processes are being ended counts as completing too.
        assert_eq!(s.completing, 0);
        s.add(&JobFacts {
            completing: true,
            ..job(JobState::Cancelled)
        });
        assert_eq!((s.completing, s.cancelled), (1, 2));
    }

    fn node(state: &'static str, cpus_alloc: u32) -> NodeStat {
        NodeStat {
            name: "n".into(),
            state,
            responding: true,
            cpus: 4,
            cpus_alloc,
            mem_mib: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn nodes_have_one_base_state_and_their_flags() {
        let nodes = [
            node("idle", 0),
            node("mixed", 1),
            node("allocated", 4),
            node("draining", 2),
            node("draining", 4),
            node("drained", 0),
            NodeStat {
                responding: false,
                ..node("down", 0)
            },
            NodeStat {
                maint: true,
                reserved: true,
                ..node("maint", 0)
            },
        ];
        let c = NodeCounts::of(&nodes);
        assert_eq!(
            (c.idle, c.mixed, c.alloc, c.down),
            (3, 2, 2, 1),
            "idle, drained and maint are idle; draining is mixed or allocated"
        );
        assert_eq!((c.drain, c.drained, c.draining), (1, 1, 2));
        assert_eq!((c.maint, c.resv, c.no_resp), (1, 1, 1));
        assert_eq!(
            nodes.iter().filter(|n| n.usable()).count(),
            3,
            "idle, mixed and allocated nodes that answer"
        );
    }

    #[test]
    fn future_awaited_cloud_and_dynamic_nodes_count_as_slurm_counts_them() {
        // A FUTURE node, one awaiting its agent's first registration (UNKNOWN), a cloud
        // node never started (IDLE+CLOUD+POWERED_DOWN), and two nodes `scontrol create
        // node` made, one of them FUTURE.
        let nodes = [
            NodeStat {
                responding: false,
                ..node("future", 0)
            },
            NodeStat {
                responding: false,
                ..node("unknown", 0)
            },
            NodeStat {
                responding: false,
                ..node("cloud", 0)
            },
            NodeStat {
                dynamic: true,
                ..node("idle", 0)
            },
            NodeStat {
                dynamic: true,
                responding: false,
                ..node("future", 0)
            },
        ];
        let c = NodeCounts::of(&nodes);
        assert_eq!(
            (c.future, c.unknown, c.idle, c.down, c.mixed, c.alloc),
            (2, 1, 2, 0, 0, 0)
        );
        assert_eq!((c.cloud, c.powered_down), (1, 1));
        assert_eq!((c.dyn_normal, c.dyn_future), (2, 0));
        assert_eq!(nodes.iter().filter(|n| n.usable()).count(), 1);
    }

    #[test]
    fn a_partition_adds_up_its_nodes_and_its_jobs() {
        let nodes = vec![
            NodeStat {
                gpus: 2,
                mem_alloc_mib: 300,
                ..node("mixed", 1)
            },
            node("idle", 0),
            node("idle", 0),
        ];
        let p = PartNodes {
            name: "gpu".into(),
            nodes: vec![0, 1],
        };
        let mut s = PartStats::new(&p, &nodes);
        assert_eq!(
            (
                s.total_nodes,
                s.total_cpus,
                s.total_gpus,
                s.cpus_idle,
                s.cpus_alloc
            ),
            (2, 8, 2, 7, 1)
        );
        assert_eq!((s.mem_total, s.mem_alloc), (2000, 300));
        s.add_job(&JobFacts {
            min_nodes: 2,
            max_nodes: 4,
            ..job(JobState::Pending)
        });
        s.add_job(&JobFacts {
            held: true,
            min_nodes: 3,
            max_nodes: 0,
            ..job(JobState::Pending)
        });
        s.add_job(&JobFacts {
            part_node_limit: true,
            ..job(JobState::Pending)
        });
        s.add_job(&job(JobState::Completed));
        assert_eq!((s.jobs, s.job.pending, s.job.hold), (3, 3, 1));
        assert_eq!(
            (
                s.max_job_nodes,
                s.max_job_nodes_nohold,
                s.min_job_nodes,
                s.min_job_nodes_nohold
            ),
            (4, 4, 3, 2)
        );
        assert_eq!(s.wait_part_node_limit, 1);
    }

    #[test]
    fn users_and_accounts_in_the_order_they_came() {
        let mut ua = UsersAccounts::default();
        ua.add(&JobFacts {
            user: "bob",
            account: "chem",
            ..job(JobState::Pending)
        });
        ua.add(&job(JobState::Running));
        ua.add(&JobFacts {
            user: "bob",
            ..job(JobState::Completed)
        });
        let users: Vec<(&str, u64)> = ua
            .users
            .iter()
            .map(|(u, s)| (u.as_str(), s.job_cnt))
            .collect();
        assert_eq!(users, [("bob", 2), ("alice", 1)]);
        let accounts: Vec<(&str, u64, u64)> = ua
            .accounts
            .iter()
            .map(|(a, s)| (a.as_str(), s.pending, s.running))
            .collect();
        assert_eq!(accounts, [("chem", 1, 0), ("phys", 0, 1)]);
        assert!(is_endpoint("/metrics/jobs-users-accts"));
        assert!(!is_endpoint("/metrics/jobs/"));
        assert!(!is_endpoint("/v1/jobs"));
    }

    /// Every metric name the endpoints serve (each endpoint given figures enough for
    /// each of its families to appear).
    fn served() -> std::collections::BTreeSet<String> {
        let nodes = vec![NodeStat {
            name: "n1".into(),
            state: "mixed",
            responding: true,
            cpus: 4,
            cpus_alloc: 1,
            gpus: 2,
            ..Default::default()
        }];
        let part = PartNodes {
            name: "gpu".into(),
            nodes: vec![0],
        };
        let mut ua = UsersAccounts::default();
        ua.add(&job(JobState::Pending));
        let figures = LoopFigures {
            nodes: nodes.clone(),
            partitions: vec![part.clone()],
            sluice: Some(SluiceFigures {
                now: 10,
                gpus: vec![GpuStat {
                    node: 0,
                    index: 0,
                    gpu_type: None,
                    holders: vec![(1, "alice".into())],
                }],
                waiting: vec![GpuWait {
                    jobs: 1,
                    min_per_node: 2,
                }],
                heads: vec![HeadJob {
                    partition: 0,
                    job: 2,
                    priority: 1,
                    submit: 0,
                    start: Some(20),
                }],
                idle_gpu_jobs: Vec::new(),
                audit: vec![("submitted", 1)],
            }),
        };
        let sets = [
            slurm::jobs(&JobStats::default()),
            slurm::nodes(&nodes),
            slurm::partitions(&[PartStats::new(&part, &nodes)]),
            slurm::scheduler(&Default::default()),
            slurm::users_accounts(&ua),
            sluice::metrics(&figures),
        ];
        sets.iter()
            .flat_map(|s| s.names().map(str::to_string).collect::<Vec<_>>())
            .collect()
    }

    /// The metric names in PromQL expression `expr`: its words that start as ours or
    /// Slurm's do.
    fn metric_names(expr: &str) -> Vec<String> {
        expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .filter(|w| w.starts_with("slurm_") || w.starts_with("sluice_"))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_grafana_dashboard_queries_only_metrics_the_endpoints_serve() {
        let text = include_str!("../../../contrib/grafana/sluice.json");
        let dash: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        // A dashboard Grafana imports: a title and uid, a schema version, panels with
        // ids, types and places, and the variables the queries use.
        assert_eq!(dash["uid"], "sluice-cluster");
        assert!(dash["title"].is_string());
        assert!(dash["schemaVersion"].as_u64().is_some());
        let variables: Vec<&str> = dash["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(variables, ["datasource", "partition"]);
        let served = served();
        let mut ids = std::collections::BTreeSet::new();
        let mut queried = std::collections::BTreeSet::new();
        for p in dash["panels"].as_array().unwrap() {
            let id = p["id"].as_u64().expect("a panel id");
            assert!(ids.insert(id), "panel id {id} twice");
            assert!(p["type"].is_string() && p["title"].is_string(), "{p}");
            let g = &p["gridPos"];
            assert!(
                g["x"].as_u64().unwrap() + g["w"].as_u64().unwrap() <= 24,
                "{p}"
            );
            for t in p["targets"].as_array().into_iter().flatten() {
                let expr = t["expr"].as_str().expect("a query");
                assert_eq!(t["datasource"]["uid"], "${datasource}", "{expr}");
                for used in expr.split('$').skip(1) {
                    let name: String = used
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    assert!(variables.contains(&name.as_str()), "{expr}: no ${name}");
                }
                let names = metric_names(expr);
                assert!(!names.is_empty(), "{expr} reads no metric");
                for n in names {
                    assert!(
                        served.contains(&n),
                        "the dashboard queries {n}, which nothing serves"
                    );
                    queried.insert(n);
                }
            }
        }
        // It shows each endpoint's figures, Sluice's own included.
        for n in [
            "slurm_jobs_pending",
            "slurm_nodes_idle",
            "slurm_partition_jobs_pending",
            "slurm_user_jobs_pending",
            "slurm_schedule_cycle_last",
            "sluice_gpus_idle_fragmented",
            "sluice_gpu_allocated",
            "sluice_partition_head_job_forecast_wait_seconds",
            "sluice_audit_events_total",
        ] {
            assert!(queried.contains(n), "the dashboard does not show {n}");
        }
    }
}
