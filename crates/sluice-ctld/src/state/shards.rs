//! Shards (`gres/shard`): a GPU shared by several jobs, each holding some of its
//! shards, and kept from whole-GPU jobs while it is shared.
//!
//! The core decides which GPU a job's shards come from, and keeps a GPU used whole from
//! lending its shards and a shared GPU from being given whole (see `sluice_core::gpus`);
//! a start names them ([`sluice_core::NodeAlloc::shards`]) and the controller records
//! them (`JobRecord::shards_per_node`) for the job's environment (`state/gpu_env.rs`),
//! its device files and the audit trail. What is left here is the request check.
//!
//! A job asking for whole GPUs and shards together is refused, as Slurm refuses GPUs
//! with a sharing GRES (`Invalid generic resource (gres) specification`).

use super::*;

use sluice_core::tres::GresSlot;

/// Slurm's message for a GRES request it cannot make sense of.
const BAD_GRES: &str = "Invalid generic resource (gres) specification";

impl Controller {
    /// Refuses a request for whole GPUs and shards together (Slurm's message).
    pub(super) fn check_shard_request(&self, req: &JobRequest) -> Result<(), String> {
        let shard = self.conf.cluster.shard_slot();
        let asks = |slot: Option<GresSlot>| slot.is_some_and(|s| req.gres_per_node[s] > 0);
        if asks(shard) && asks(self.gpu_slot) {
            return Err(BAD_GRES.into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::GresRequest;

    /// A controller over one node `s1` of `cpus` CPUs with `gres` (`gpu:2,shard:8`).
    fn controller(gres: &str, extra: &str) -> Controller {
        let text = format!(
            "ClusterName=c\nGresTypes=gpu,shard\n\
             NodeName=s1 CPUs=8 RealMemory=8000 Gres={gres} {extra}\n\
             PartitionName=p Nodes=s1 Default=YES MaxTime=1:00:00\n"
        );
        let parsed = sluice_conf::slurm_conf::parse_str(&text, Path::new("slurm.conf")).unwrap();
        let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
        Controller::new(conf, Path::new("/s"), vec![], vec![], 0)
    }

    fn caller() -> Caller {
        Caller {
            uid: 1000,
            gid: 1000,
            admin: false,
        }
    }

    fn asking(name: &str, count: u32) -> JobDescription {
        JobDescription {
            name: "job".into(),
            time_limit: Some(Some(600)),
            work_dir: "/home/alice".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            gres: vec![GresRequest {
                name: name.into(),
                gres_type: None,
                count,
            }],
            ..Default::default()
        }
    }

    /// Submits (ids from 1 in order, as the store gives them).
    fn submit(c: &mut Controller, d: JobDescription, now: i64) -> Result<JobId, String> {
        let p = c
            .prepare(d, &caller(), "alice", "alice", now)
            .map_err(|e| e.message)?;
        let id = JobId(c.jobs.keys().next_back().map_or(1, |k| k.0 + 1));
        c.accept(p.jobs(id), now);
        Ok(id)
    }

    fn end(c: &mut Controller, id: JobId, now: i64) -> Vec<Effect> {
        c.job_ended(
            &JobEnded {
                job_id: id.0,
                run: 0,
                node: "s1".into(),
                state: JobState::Completed,
                exit_code: 0,
                signal: 0,
                end: now,
                usage: None,
            },
            now,
        )
    }

    /// State, reason, whole GPUs and shards of job `id`.
    type Seen = (JobState, String, Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

    fn seen(c: &Controller, id: JobId) -> Seen {
        let r = c.job(id).unwrap();
        (r.state, r.reason, r.gpus_per_node, r.shards_per_node)
    }

    fn running(gpus: Vec<Vec<u32>>, shards: Vec<Vec<(u32, u32)>>) -> Seen {
        (JobState::Running, "None".into(), gpus, shards)
    }

    fn waiting(reason: &str) -> Seen {
        (JobState::Pending, reason.into(), vec![], vec![])
    }

    /// The GPU variables of job `id`'s batch launch among `effects`.
    fn gpu_env(effects: &[Effect], id: JobId) -> Vec<(String, String)> {
        effects
            .iter()
            .find_map(|e| match e {
                Effect::Launch { order, .. } if order.job.id == id.0 => Some(
                    order
                        .environment
                        .iter()
                        .filter(|(k, _)| {
                            k.contains("VISIBLE")
                                || k.contains("SHARDS")
                                || k.contains("GPU")
                                || k.starts_with("ZE_")
                        })
                        .cloned()
                        .collect(),
                ),
                _ => None,
            })
            .expect("launched")
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn shard_jobs_share_a_gpu_that_whole_gpu_jobs_then_leave_alone() {
        // Two GPUs of 4 shards each.
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 2), 0).unwrap();
        let b = submit(&mut c, asking("shard", 1), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, a), running(vec![vec![]], vec![vec![(0, 2)]]));
        assert_eq!(seen(&c, b), running(vec![vec![]], vec![vec![(0, 1)]]));
        assert_eq!(
            gpu_env(&effects, a),
            pairs(&[
                ("CUDA_VISIBLE_DEVICES", "0"),
                ("GPU_DEVICE_ORDINAL", "0"),
                ("ROCR_VISIBLE_DEVICES", "0"),
                ("SLURM_SHARDS_ON_NODE", "2"),
                ("ZE_AFFINITY_MASK", "0"),
            ])
        );
        // A whole GPU: the one nobody shares. A second one waits: GPU 0 is shared.
        let w1 = submit(&mut c, asking("gpu", 1), 1).unwrap();
        let w2 = submit(&mut c, asking("gpu", 1), 1).unwrap();
        c.schedule(1);
        assert_eq!(seen(&c, w1), running(vec![vec![1]], vec![]));
        assert_eq!(seen(&c, w2), waiting("Resources"));
        // GPU 0 is free once both shard jobs have ended; then whole jobs hold both
        // GPUs, and a shard job waits for one.
        end(&mut c, a, 2);
        assert_eq!(seen(&c, w2), waiting("Resources"));
        end(&mut c, b, 3);
        assert_eq!(seen(&c, w2), running(vec![vec![0]], vec![]));
        let s = submit(&mut c, asking("shard", 1), 4).unwrap();
        c.schedule(4);
        assert_eq!(seen(&c, s), waiting("Resources"));
        let effects = end(&mut c, w1, 5);
        assert_eq!(seen(&c, s), running(vec![vec![]], vec![vec![(1, 1)]]));
        assert_eq!(
            gpu_env(&effects, s)[0],
            pairs(&[("CUDA_VISIBLE_DEVICES", "1")])[0]
        );
    }

    #[test]
    fn shards_come_from_one_gpu_when_one_has_room_else_from_several() {
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 3), 0).unwrap();
        let b = submit(&mut c, asking("shard", 3), 0).unwrap();
        let d = submit(&mut c, asking("shard", 2), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, a).3, vec![vec![(0, 3)]]);
        assert_eq!(seen(&c, b).3, vec![vec![(1, 3)]]);
        assert_eq!(seen(&c, d).3, vec![vec![(0, 1), (1, 1)]]);
        assert_eq!(
            gpu_env(&effects, d)[0],
            pairs(&[("CUDA_VISIBLE_DEVICES", "0,1")])[0]
        );
        // Both GPUs shared: no whole GPU until one is free of shards.
        let w = submit(&mut c, asking("gpu", 1), 1).unwrap();
        c.schedule(1);
        assert_eq!(seen(&c, w), waiting("Resources"));
        end(&mut c, d, 2);
        end(&mut c, b, 3);
        assert_eq!(seen(&c, w), running(vec![vec![1]], vec![]));
    }

    #[test]
    fn one_pass_decides_shard_and_whole_gpu_jobs_in_priority_order() {
        // The shard job comes first: it takes GPU 0's shards, and the whole-GPU job,
        // which needs both GPUs, waits for it. One pass, one launch, nothing sent back.
        let mut c = controller("gpu:2,shard:8", "");
        let s = submit(&mut c, asking("shard", 4), 0).unwrap();
        let w = submit(&mut c, asking("gpu", 2), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, s), running(vec![vec![]], vec![vec![(0, 4)]]));
        assert_eq!(seen(&c, w), waiting("Resources"));
        assert_eq!(
            effects
                .iter()
                .filter(|e| matches!(e, Effect::Launch { .. }))
                .count(),
            1
        );
        // It runs once the shard job is gone.
        end(&mut c, s, 1);
        assert_eq!(seen(&c, w), running(vec![vec![0, 1]], vec![]));
    }

    #[test]
    fn impossible_shard_requests_are_refused_with_slurms_words() {
        let mut c = controller("gpu:2,shard:8", "");
        let mut both = asking("shard", 1);
        both.gpus = Some((None, 1));
        assert_eq!(submit(&mut c, both, 0), Err(BAD_GRES.to_string()));
        assert_eq!(
            submit(&mut c, asking("shard", 9), 0),
            Err(NODE_CONFIG.to_string())
        );
        assert_eq!(
            submit(&mut c, asking("tpu", 1), 0),
            Err(BAD_GRES.to_string())
        );
    }

    #[test]
    fn a_restarted_controller_knows_who_shares_which_gpu() {
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 1), 0).unwrap();
        c.schedule(0);
        let records: Vec<JobRecord> = c.accounting().0;
        let conf = c.conf.clone();
        let mut c = Controller::new(conf, Path::new("/s"), records, vec![], 10);
        c.agent_registered("s1", &[(a, 0)], 10);
        // GPU 0 is shared again: the core took the restored job's shards back, so no
        // whole-GPU job gets GPU 0 while it runs.
        assert_eq!(seen(&c, a), running(vec![vec![]], vec![vec![(0, 1)]]));
        let one = submit(&mut c, asking("gpu", 1), 10).unwrap();
        let two = submit(&mut c, asking("gpu", 2), 10).unwrap();
        let s = submit(&mut c, asking("shard", 4), 10).unwrap();
        c.schedule(10);
        assert_eq!(seen(&c, two), waiting("Resources"));
        assert_eq!(seen(&c, one), running(vec![vec![1]], vec![]));
        // GPU 0 has 3 shards left, GPU 1 is used whole.
        assert_eq!(seen(&c, s).0, JobState::Pending);
    }

    #[test]
    fn gpus_per_socket_count_the_sockets_asked() {
        let mut c = controller("gpu:4", "Sockets=2 CoresPerSocket=4");
        c.conf.topology = vec![(2, 4, 1)];
        let mut d = asking("x", 1);
        d.gres.clear();
        d.gpus_per_socket = Some((None, 1));
        d.sockets_per_node = Some(2);
        let id = submit(&mut c, d.clone(), 0).unwrap();
        c.schedule(0);
        assert_eq!(seen(&c, id).2, vec![vec![0, 1]]);
        d.sockets_per_node = Some(3);
        assert_eq!(submit(&mut c, d.clone(), 0), Err(NODE_CONFIG.to_string()));
        d.sockets_per_node = None;
        assert_eq!(
            submit(&mut c, d, 0),
            Err("--gpus-per-socket option requires --sockets-per-node specification".into())
        );
    }

    #[test]
    fn a_step_binds_its_tasks_to_gpus_as_gpu_bind_says() {
        let mut c = controller("gpu:2", "");
        let mut d = asking("gpu", 2);
        d.ntasks = Some(2);
        let id = submit(&mut c, d, 0).unwrap();
        c.schedule(0);
        let step = |bind: Option<&str>, per_task: Option<u32>, c: &mut Controller| {
            let req = StepRequest {
                argv: vec!["true".into()],
                gpu_bind: bind.map(str::to_string),
                gpus_per_task: per_task,
                // Each beside the ones before, which still run.
                overlap: true,
                ..Default::default()
            };
            c.start_step(id, &req, &caller(), 1)
                .map(|(p, _)| p.task_gpus)
        };
        assert_eq!(
            step(Some("map_gpu:1,0"), None, &mut c),
            Ok(vec![vec![vec![1], vec![0]]])
        );
        assert_eq!(
            step(Some("mask_gpu:0x3"), Some(1), &mut c),
            Ok(vec![vec![vec![0, 1], vec![0, 1]]])
        );
        assert_eq!(
            step(None, Some(1), &mut c),
            Ok(vec![vec![vec![0], vec![1]]])
        );
        assert_eq!(
            step(Some("bad"), None, &mut c),
            Err(ApiError::invalid("Invalid --gpu-bind argument: gpu:bad"))
        );
    }

    /// A shard holder's new time limit moves the end of its GPU's sharing, so plans for
    /// that GPU see the new end: a job waiting for both GPUs is planned at 600 s at
    /// first, at 1200 s after `scontrol update`.
    #[test]
    fn a_new_time_limit_moves_the_end_of_a_shared_gpu() {
        let mut c = controller("gpu:2,shard:8", "");
        let id = submit(&mut c, asking("shard", 2), 0).unwrap();
        let w = submit(&mut c, asking("gpu", 2), 0).unwrap();
        c.schedule(0);
        let planned = |c: &Controller| c.sched.job(w).and_then(|j| j.planned_start);
        assert_eq!(planned(&c), Some(600));
        let admin = Caller {
            uid: 0,
            gid: 0,
            admin: true,
        };
        c.update_job(id, &[("TimeLimit".into(), "20:00".into())], &admin, 10)
            .unwrap();
        c.schedule(40);
        assert_eq!(planned(&c), Some(1200));
    }
}
