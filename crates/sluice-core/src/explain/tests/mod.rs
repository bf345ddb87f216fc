//! Explanation stories: nodes, jobs, events, and the exact explanation expected —
//! why a job waits (`why.rs`), when it starts (`when.rs`), what would start it sooner
//! (`sooner.rs`).
//!
//! Machines are nodes `node01..` (`NodeId(0)..`) of 256,000 MiB with GPUs in GRES slot
//! 0 (`gpu`), in one default partition `gpu`. Jobs belong to alice (uid 1001) unless
//! said otherwise; times are seconds. The policy is Slurm's backfill with its defaults
//! (`bf_interval` 30 s, `bf_resolution` 60 s).

use super::*;
use crate::cluster::{Cluster, Node, Partition};
use crate::ids::{NodeId, PartitionId};
use crate::job::{JobRequest, JobSpec};
use crate::limits::{AssocId, JobAcct};
use crate::policy::{BackfillParams, Policy};
use crate::tres::Resources;

pub(super) const GPU: usize = 0;

/// One node per `(cpus, gpus)`, in the default partition `gpu`.
pub(super) fn machine(nodes: &[(u32, u32)]) -> Cluster {
    let mut c = Cluster::default();
    c.gres.slot_for("gpu", None).unwrap();
    for (i, &(cpus, gpus)) in nodes.iter().enumerate() {
        let mut n = Node::new(format!("node{:02}", i + 1), cpus, 256_000);
        n.capacity.gres[GPU] = gpus;
        c.nodes.push(n);
    }
    let mut p = Partition::new("gpu", (0..nodes.len() as u32).map(NodeId).collect());
    p.is_default = true;
    c.partitions.push(p);
    c
}

/// A one-node, one-CPU, one-hour job of alice's, submitted at 0.
pub(super) fn job(id: u64) -> JobSpec {
    JobSpec {
        id: JobId(id),
        user: 1001,
        partition: PartitionId(0),
        submit: 0,
        begin: 0,
        request: JobRequest::procs(1).on_one_node(),
        time_limit: 3600,
        priority: 1,
        acct: JobAcct::default(),
    }
}

pub(super) trait Shape {
    fn cpus(self, n: u32) -> Self;
    fn gpus(self, n: u32) -> Self;
    fn time(self, secs: i64) -> Self;
    fn prio(self, p: u32) -> Self;
    fn on(self, node: u32) -> Self;
    fn part(self, p: u16) -> Self;
    fn by(self, uid: u32, assoc: u32) -> Self;
}

impl Shape for JobSpec {
    fn cpus(mut self, n: u32) -> Self {
        self.request.ntasks = n;
        self
    }
    fn gpus(mut self, n: u32) -> Self {
        self.request.gres_per_node[GPU] = n;
        self
    }
    fn time(mut self, secs: i64) -> Self {
        self.time_limit = secs;
        self
    }
    fn prio(mut self, p: u32) -> Self {
        self.priority = p;
        self
    }
    /// Pinned to `NodeId(node)` (`-w`).
    fn on(mut self, node: u32) -> Self {
        self.request.nodelist = vec![NodeId(node)];
        self
    }
    fn part(mut self, p: u16) -> Self {
        self.partition = PartitionId(p);
        self
    }
    fn by(mut self, uid: u32, assoc: u32) -> Self {
        self.user = uid;
        self.acct.assoc = Some(AssocId(assoc));
        self
    }
}

pub(super) fn backfill() -> Policy {
    Policy::Backfill(BackfillParams::default())
}

/// A scheduler with `jobs` submitted at 0 and one pass run at 0.
pub(super) fn started(cluster: Cluster, jobs: Vec<JobSpec>) -> Scheduler {
    let mut s = Scheduler::new(cluster, backfill());
    for j in jobs {
        s.submit(j, 0).unwrap();
    }
    s.schedule(0);
    s
}

pub(super) fn explain_at(s: &Scheduler, id: u64, now: Time) -> Explanation {
    explain(s, JobId(id), now, &ExplainOptions::default()).expect("pending")
}

pub(super) fn gpus_free(cpus: u32, gpus: u32) -> Resources {
    let mut r = Resources::cpus(cpus);
    r.mem_mib = 256_000;
    r.gres[GPU] = gpus;
    r
}

pub(super) fn gpu_share(cpus: u32, gpus: u32) -> Resources {
    let mut r = Resources::cpus(cpus);
    r.gres[GPU] = gpus;
    r
}

pub(super) fn ids(n: &[u32]) -> Vec<NodeId> {
    n.iter().map(|&i| NodeId(i)).collect()
}

mod sooner;
mod when;
mod why;
