//! What the metrics endpoints need from the loop (`crate::metrics`): the nodes and
//! partitions as `sinfo` sees them, and for `/metrics/sluice` each GPU's holders, the
//! GPU jobs waiting per partition, each partition's next job with its forecast start,
//! and the audit trail's events by kind. One look at the running jobs, the nodes and
//! the queue; nothing is built that the answer does not print.

use std::collections::BTreeSet;

use sluice_core::NodeId;
use sluice_proto::types::JobState;

use super::Controller;
use crate::metrics::{
    GpuStat, GpuWait, HeadJob, IdleGpuJob, LoopFigures, NodeStat, PartNodes, SluiceFigures,
};

/// Every kind of audit event (`AuditWhat::kind`), in the order the metric lists them.
pub const AUDIT_KINDS: [&str; 15] = [
    "submitted",
    "held",
    "released",
    "suspended",
    "resumed",
    "updated",
    "cancelled",
    "requeued",
    "started",
    "planned",
    "reason",
    "preempted",
    "preempting",
    "idle_gpus",
    "ended",
];

impl Controller {
    /// The loop's figures for the metrics at `now`; Sluice's own too when `sluice`.
    pub fn metrics_figures(&self, sluice: bool, now: i64) -> LoopFigures {
        let usage = self.node_usage();
        let maint = self.maint_nodes();
        let reserved: BTreeSet<NodeId> = self
            .sched
            .reservations()
            .filter(|r| r.active_at(now))
            .flat_map(|r| r.nodes())
            .collect();
        let nodes = self
            .conf
            .cluster
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.name.is_empty())
            .map(|(i, n)| {
                let cpus = n.capacity.cpus;
                let used = usage.cpus[i].min(cpus);
                NodeStat {
                    name: n.name.clone(),
                    state: self.node_state_word(i, used, &maint, usage.completing[i] > 0),
                    responding: self.node_responding(&n.name),
                    dynamic: self.node_book.dynamic.contains(&n.name),
                    maint: maint.contains(&NodeId(i as u32)),
                    reserved: reserved.contains(&NodeId(i as u32)),
                    cpus,
                    cpus_alloc: used,
                    mem_mib: n.capacity.mem_mib,
                    mem_alloc_mib: usage.mem[i],
                    mem_free_mib: 0,
                    gpus: self.gpu_slot.map_or(0, |s| u64::from(n.capacity.gres[s])),
                    gpus_alloc: self.gpu_slot.map_or(0, |s| usage.gres[i][s]),
                }
            })
            .collect();
        let partitions = self
            .conf
            .cluster
            .partitions
            .iter()
            .map(|p| PartNodes {
                name: p.name.clone(),
                nodes: p.nodes.iter().map(|n| n.index()).collect(),
            })
            .collect();
        LoopFigures {
            nodes,
            partitions,
            sluice: sluice.then(|| self.sluice_figures(now)),
        }
    }

    fn sluice_figures(&self, now: i64) -> SluiceFigures {
        let cluster = self.sched.cluster();
        // Every GPU, by node and index, with the running jobs holding it.
        let mut per_node: Vec<Vec<GpuStat>> = (0..self.conf.cluster.nodes.len())
            .map(|i| {
                cluster
                    .gpus_of(NodeId(i as u32))
                    .into_iter()
                    .enumerate()
                    .map(|(index, g)| GpuStat {
                        node: i,
                        index: index as u32,
                        gpu_type: g.gpu_type,
                        holders: Vec::new(),
                    })
                    .collect()
            })
            .collect();
        for j in self.jobs.values().filter(|j| j.state == JobState::Running) {
            for share in &j.alloc {
                let Some(gpus) = per_node.get_mut(share.node.index()) else {
                    continue;
                };
                let held = share.gpus.iter().chain(share.shards.iter().map(|(g, _)| g));
                for &g in held {
                    if let Some(gpu) = gpus.get_mut(g as usize) {
                        if !gpu.holders.iter().any(|(id, _)| *id == j.id.0) {
                            gpu.holders.push((j.id.0, j.user.to_string()));
                        }
                    }
                }
            }
        }
        // The queue, in its order: the GPU jobs waiting per partition, and each
        // partition's first job.
        let parts = self.conf.cluster.partitions.len();
        let mut waiting = vec![GpuWait::default(); parts];
        let mut heads: Vec<HeadJob> = Vec::new();
        let mut headed = vec![false; parts];
        for j in self.sched.pending() {
            let p = j.spec.partition.index();
            if p >= parts {
                continue;
            }
            let gpus = self
                .gpu_slot
                .map_or(0, |s| u64::from(j.spec.request.gres_per_node[s]));
            if gpus > 0 {
                let w = &mut waiting[p];
                w.min_per_node = if w.jobs == 0 {
                    gpus
                } else {
                    w.min_per_node.min(gpus)
                };
                w.jobs += 1;
            }
            if !headed[p] {
                headed[p] = true;
                heads.push(HeadJob {
                    partition: p,
                    job: j.id().0,
                    priority: j.spec.priority,
                    submit: j.spec.submit,
                    start: self
                        .jobs
                        .get(&j.id())
                        .and_then(|r| self.core_view(r).planned_start),
                });
            }
        }
        heads.sort_by_key(|h| h.partition);
        SluiceFigures {
            now,
            gpus: per_node.into_iter().flatten().collect(),
            waiting,
            heads,
            idle_gpu_jobs: self
                .jobs
                .values()
                .filter(|j| j.state == JobState::Running)
                .filter_map(|j| {
                    let idle = j.idle_gpus.as_deref()?;
                    Some(IdleGpuJob {
                        job: j.id.0,
                        user: j.user.to_string(),
                        account: j.account.to_string(),
                        idle: idle.idle,
                        held: idle.held,
                        since: idle.since,
                    })
                })
                .collect(),
            audit: AUDIT_KINDS
                .iter()
                .map(|k| (*k, self.audit.counts.get(k).copied().unwrap_or(0)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sluice_core::JobId;
    use sluice_proto::types::{GresRequest, JobDescription};

    use super::*;
    use crate::config::ClusterConfig;
    use crate::state::tests::alice;

    fn gpu_job(gpus: u32) -> JobDescription {
        JobDescription {
            name: "job".into(),
            ntasks: Some(1),
            time_limit: Some(Some(60)),
            work_dir: "/home/alice".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            gres: vec![GresRequest {
                name: "gpu".into(),
                gres_type: None,
                count: gpus,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn gpus_their_holders_the_waiting_jobs_and_the_next_job() {
        let text = "ClusterName=g\nGresTypes=gpu\n\
                    NodeName=g[1-2] CPUs=8 RealMemory=8000 Gres=gpu:4\n\
                    PartitionName=gpu Nodes=g[1-2] Default=YES\n";
        let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
        let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
        let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
        c.agents_up.insert("g1".into());
        c.agents_up.insert("g2".into());
        let mut next = 1;
        let mut submit = |c: &mut Controller, gpus: u32| {
            let p = c
                .prepare(gpu_job(gpus), &alice(), "alice", "alice", 0)
                .expect("accepted");
            let id = JobId(next);
            next += p.ids();
            let jobs = p.jobs(id);
            drop(c.inserted(&jobs, None, 0));
            c.accept(jobs, 0);
            id
        };
        // 3 GPUs on one node, 4 on the other; then a job of 2 waits, and the one GPU
        // left idle cannot serve it.
        let a = submit(&mut c, 3);
        let b = submit(&mut c, 4);
        c.schedule(0);
        let waits = submit(&mut c, 2);
        c.schedule(1);
        c.take_audit();
        let f = c.metrics_figures(true, 5);
        assert_eq!(
            f.nodes
                .iter()
                .map(|n| (n.name.as_str(), n.state, n.gpus, n.gpus_alloc, n.cpus_alloc))
                .collect::<Vec<_>>(),
            [("g1", "mixed", 4, 3, 1), ("g2", "mixed", 4, 4, 1)]
        );
        assert_eq!(f.partitions[0].nodes, [0, 1]);
        let s = f.sluice.expect("asked for");
        let held: Vec<(usize, u32, Vec<u64>)> = s
            .gpus
            .iter()
            .map(|g| (g.node, g.index, g.holders.iter().map(|h| h.0).collect()))
            .collect();
        assert_eq!(
            held,
            [
                (0, 0, vec![a.0]),
                (0, 1, vec![a.0]),
                (0, 2, vec![a.0]),
                (0, 3, vec![]),
                (1, 0, vec![b.0]),
                (1, 1, vec![b.0]),
                (1, 2, vec![b.0]),
                (1, 3, vec![b.0]),
            ]
        );
        assert_eq!(s.gpus[0].holders[0].1, "alice");
        assert_eq!(
            s.waiting,
            [GpuWait {
                jobs: 1,
                min_per_node: 2
            }]
        );
        assert_eq!(
            s.heads
                .iter()
                .map(|h| (h.partition, h.job, h.submit))
                .collect::<Vec<_>>(),
            [(0, waits.0, 0)]
        );
        let audit: std::collections::BTreeMap<&str, u64> = s.audit.iter().copied().collect();
        assert_eq!(audit.len(), AUDIT_KINDS.len());
        assert_eq!((audit["submitted"], audit["started"]), (3, 2));

        // As text: one GPU idle, and fragmented.
        let text = crate::metrics::sluice::metrics(&c.metrics_figures(true, 5)).render();
        assert!(text.contains("\nsluice_gpus_idle 1\n"), "{text}");
        assert!(text.contains("\nsluice_gpus_idle_fragmented 1\n"), "{text}");
        assert!(
            text.contains(&format!(
                "\nsluice_partition_head_job_id{{partition=\"gpu\"}} {}\n",
                waits.0
            )),
            "{text}"
        );
    }

    #[test]
    fn a_submission_counts_once_its_insert_is_durable() {
        // Two held submissions are inserted and their audit records handed to the
        // store; the first's insert is acknowledged, the second's fails (the loop
        // never accepts it). Only the first counts, as the store has only its records.
        let text = "ClusterName=g\nNodeName=n1 CPUs=8 RealMemory=8000\n\
                    PartitionName=p Nodes=n1 Default=YES\n";
        let parsed = sluice_conf::slurm_conf::parse_str(text, Path::new("slurm.conf")).unwrap();
        let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
        let mut c = Controller::new(conf, Path::new("/s"), vec![], vec![], 0);
        let counted = |c: &Controller| {
            let f = c.metrics_figures(true, 5);
            let s = f.sluice.expect("asked for");
            let audit: std::collections::BTreeMap<&str, u64> = s.audit.iter().copied().collect();
            (audit["submitted"], audit["held"])
        };
        let mut inserted = Vec::new();
        for _ in 0..2 {
            let held = JobDescription {
                hold: true,
                gres: vec![],
                ..gpu_job(0)
            };
            let p = c
                .prepare(held, &alice(), "alice", "alice", 0)
                .expect("accepted");
            let jobs = c.allocate(&p);
            drop(c.inserted(&jobs, None, 0));
            assert_eq!(c.take_audit().len(), 2, "submitted and held");
            inserted.push(jobs);
        }
        assert_eq!(counted(&c), (0, 0));
        c.accept(inserted.remove(0), 1);
        assert_eq!(counted(&c), (1, 1));
    }
}
