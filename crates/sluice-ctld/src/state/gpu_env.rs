//! What a job's and a step's tasks see of their GPUs: the variables of a job holding
//! shards, and `--gpu-bind` (which of a step's GPUs on a node each task sees).

use sluice_conf::gres_conf;
use sluice_conf::options::{GpuBind, GpuBindKind};
use sluice_proto::types::JobRecord;

use crate::config::ClusterConfig;

/// Shards a job asks for per node (`--gres=shard:N`), 0 for none.
pub fn shards_asked(r: &JobRecord) -> u32 {
    r.desc
        .gres
        .iter()
        .filter(|g| g.name == "shard")
        .map(|g| g.count)
        .sum()
}

/// The GPUs (indices) a job uses on its `node`-th node: those it holds whole, else
/// those its shards come from.
pub fn gpus_on_node(r: &JobRecord, node: usize) -> Vec<u32> {
    match r.gpus_per_node.get(node).filter(|g| !g.is_empty()) {
        Some(g) => g.clone(),
        None => r
            .shards_per_node
            .get(node)
            .map(|s| s.iter().map(|(g, _)| *g).collect())
            .unwrap_or_default(),
    }
}

/// The variables of a job holding shards, on its first node (where its batch script
/// runs), as Slurm's `gres/shard` plugin sets them: `SLURM_SHARDS_ON_NODE` (its shards
/// there), and the GPUs its shards come from in `CUDA_VISIBLE_DEVICES`,
/// `ROCR_VISIBLE_DEVICES`, `GPU_DEVICE_ORDINAL` and `ZE_AFFINITY_MASK` (set as for
/// whole GPUs). Empty for a job without shards.
pub fn shard_variables(r: &JobRecord) -> Vec<(&'static str, String)> {
    let shards = shards_asked(r);
    if shards == 0 {
        return Vec::new();
    }
    let mut v = vec![("SLURM_SHARDS_ON_NODE", shards.to_string())];
    let whole = r.gpus_per_node.first().is_some_and(|g| !g.is_empty());
    let gpus = gpus_on_node(r, 0);
    if !whole && !gpus.is_empty() {
        let list = join(&gpus);
        for k in [
            "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "GPU_DEVICE_ORDINAL",
            "ZE_AFFINITY_MASK",
        ] {
            v.push((k, list.clone()));
        }
    }
    v
}

fn join(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Where a node's GPUs sit, for `--gpu-bind=closest` and `single`: its sockets, cores
/// per socket, and per GPU index the cores that may use it (gres.conf's `Cores=`;
/// `None`: any core).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuAffinity {
    /// Sockets of the node.
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Per GPU index: its cores, `None` when any core may use it.
    pub cores: Vec<Option<Vec<u32>>>,
}

impl GpuAffinity {
    /// The GPUs among `gpus` nearest task `task` of `tasks` on the node: tasks are
    /// spread over the sockets in blocks (the first `tasks / sockets` on socket 0...),
    /// and a GPU is near a socket when one of its cores is there (a GPU without
    /// `Cores=` is near every socket). All of `gpus` when none is near.
    fn closest(&self, gpus: &[u32], task: usize, tasks: usize) -> Vec<u32> {
        let sockets = self.sockets.max(1) as usize;
        let socket = (task * sockets / tasks.max(1)) as u32;
        let per = self.cores_per_socket.max(1);
        let near: Vec<u32> = gpus
            .iter()
            .copied()
            .filter(|&g| match self.cores.get(g as usize) {
                Some(Some(cores)) => cores.iter().any(|c| c / per == socket),
                _ => true,
            })
            .collect();
        if near.is_empty() {
            gpus.to_vec()
        } else {
            near
        }
    }
}

/// The [`GpuAffinity`] of node `node` of `conf` (sockets and cores per socket as
/// configured, its GPUs' `Cores=`); a node it does not know has one socket.
pub fn affinity(conf: &ClusterConfig, node: &str) -> GpuAffinity {
    let Some(i) = conf.node_id(node).map(|n| n.index()) else {
        return GpuAffinity::default();
    };
    let (sockets, cores_per_socket, _) = conf.topology.get(i).copied().unwrap_or((1, 1, 1));
    GpuAffinity {
        sockets,
        cores_per_socket,
        cores: conf
            .gres_devices
            .get(i)
            .map(|d| {
                gres_conf::gpu_units(d)
                    .iter()
                    .map(|g| g.cores.clone())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The `index`-th entry of a list of (value, repetitions) runs, the list reused from
/// its start as often as needed.
fn nth_cyclic<T: Copy>(runs: &[(T, u32)], index: usize) -> Option<T> {
    let total: usize = runs.iter().map(|(_, n)| *n as usize).sum();
    if total == 0 {
        return None;
    }
    let mut k = index % total;
    for &(v, n) in runs {
        if k < n as usize {
            return Some(v);
        }
        k -= n as usize;
    }
    None
}

/// Which of a step's GPUs on a node (`gpus`, indices in order) each of its `tasks`
/// tasks there sees, by local task index, under `--gpu-bind` (`bind`) or
/// `--gpus-per-task` (`per_task`; `--gpu-bind` wins, as in Slurm):
/// - neither, or `none`: every task sees all of `gpus`;
/// - `per_task:N` (or `--gpus-per-task=N`): task `k` the `k`-th `N` of them;
/// - `closest`: the GPUs near the task's socket ([`GpuAffinity`]);
/// - `single:N`: one GPU of those near it, the `k / N`-th (cycling);
/// - `map_gpu` / `mask_gpu`: the task's entry of the list (cycling), GPU ids being the
///   node's indices, or with `relative` (cgroup.conf's `ConstrainDevices=yes`, as in
///   Slurm) positions among `gpus`. Ids outside the step's GPUs are dropped; a task
///   left with none gets the first of `gpus`, as Slurm binds it ("Bind request ...
///   does not specify any devices within the allocation").
pub fn task_gpus(
    gpus: &[u32],
    tasks: usize,
    per_task: Option<u32>,
    bind: Option<&GpuBind>,
    relative: bool,
    affinity: &GpuAffinity,
) -> Vec<Vec<u32>> {
    let kind = match bind.map(|b| &b.kind) {
        Some(k) => k.clone(),
        None => match per_task {
            Some(n) if n > 0 => GpuBindKind::PerTask(n),
            _ => GpuBindKind::None,
        },
    };
    let resolve = |ids: Vec<u64>| -> Vec<u32> {
        let mut out: Vec<u32> = if relative {
            ids.iter()
                .filter_map(|&i| usize::try_from(i).ok().and_then(|i| gpus.get(i)).copied())
                .collect()
        } else {
            ids.iter()
                .filter_map(|&i| u32::try_from(i).ok())
                .filter(|i| gpus.contains(i))
                .collect()
        };
        out.sort_unstable();
        out.dedup();
        if out.is_empty() {
            out.extend(gpus.first().copied());
        }
        out
    };
    (0..tasks)
        .map(|k| match &kind {
            GpuBindKind::None => gpus.to_vec(),
            GpuBindKind::PerTask(n) => gpus
                .iter()
                .skip(k * *n as usize)
                .take(*n as usize)
                .copied()
                .collect(),
            GpuBindKind::Closest => affinity.closest(gpus, k, tasks),
            GpuBindKind::Single(n) => {
                let near = affinity.closest(gpus, k, tasks);
                near.get((k / (*n).max(1) as usize) % near.len().max(1))
                    .copied()
                    .into_iter()
                    .collect()
            }
            GpuBindKind::MapGpu(runs) => {
                resolve(nth_cyclic(runs, k).map(u64::from).into_iter().collect())
            }
            GpuBindKind::MaskGpu(runs) => {
                let mask = nth_cyclic(runs, k).unwrap_or(0);
                resolve((0..64).filter(|b| mask & (1u64 << b) != 0).collect())
            }
        })
        .collect()
}

/// The value of `SLURMD_TRES_BIND` for a step: `gpu:` and `--gpu-bind` as given, or
/// `gpu:per_task:N` for `--gpus-per-task=N` alone (what it implies in Slurm).
pub fn tres_bind(gpu_bind: Option<&str>, gpus_per_task: Option<u32>) -> Option<String> {
    match (gpu_bind, gpus_per_task) {
        (Some(b), _) => Some(format!("gpu:{b}")),
        (None, Some(n)) => Some(format!("gpu:per_task:{n}")),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::GresRequest;

    fn bind(v: &str) -> GpuBind {
        GpuBind::parse(v).unwrap()
    }

    fn flat() -> GpuAffinity {
        GpuAffinity {
            sockets: 1,
            cores_per_socket: 8,
            cores: Vec::new(),
        }
    }

    #[test]
    fn each_binding_gives_each_task_its_gpus() {
        let gpus = [0, 1, 2, 3];
        let got = |b: Option<&str>, per_task: Option<u32>, tasks: usize| {
            task_gpus(&gpus, tasks, per_task, b.map(bind).as_ref(), false, &flat())
        };
        assert_eq!(got(None, None, 2), vec![vec![0, 1, 2, 3]; 2]);
        assert_eq!(got(None, Some(2), 2), vec![vec![0, 1], vec![2, 3]]);
        // --gpu-bind wins over --gpus-per-task.
        assert_eq!(got(Some("none"), Some(1), 2), vec![vec![0, 1, 2, 3]; 2]);
        assert_eq!(
            got(Some("map_gpu:1,0"), None, 3),
            vec![vec![1], vec![0], vec![1]]
        );
        assert_eq!(
            got(Some("map_gpu:3*2,2"), None, 4),
            vec![vec![3], vec![3], vec![2], vec![3]]
        );
        assert_eq!(
            got(Some("verbose,mask_gpu:0x3,0xc"), None, 2),
            vec![vec![0, 1], vec![2, 3]]
        );
        assert_eq!(
            got(Some("single:2"), None, 5),
            vec![vec![0], vec![0], vec![1], vec![1], vec![2]]
        );
        assert_eq!(got(Some("closest"), None, 2), vec![vec![0, 1, 2, 3]; 2]);
        assert_eq!(got(Some("per_task:1"), None, 2), vec![vec![0], vec![1]]);
    }

    #[test]
    fn ids_outside_the_step_fall_back_to_its_first_gpu() {
        // The job holds GPUs 2 and 3 of the node.
        let gpus = [2, 3];
        let got =
            |b: &str, relative: bool| task_gpus(&gpus, 2, None, Some(&bind(b)), relative, &flat());
        assert_eq!(got("map_gpu:3,0", false), vec![vec![3], vec![2]]);
        assert_eq!(got("mask_gpu:0x1,0x8", false), vec![vec![2], vec![3]]);
        // ConstrainDevices: ids count the job's GPUs from 0.
        assert_eq!(got("map_gpu:1,0", true), vec![vec![3], vec![2]]);
        assert_eq!(got("map_gpu:5", true), vec![vec![2], vec![2]]);
    }

    #[test]
    fn closest_and_single_follow_the_sockets() {
        // Two sockets of 4 cores; GPUs 0-1 on socket 0, 2-3 on socket 1.
        let affinity = GpuAffinity {
            sockets: 2,
            cores_per_socket: 4,
            cores: vec![
                Some(vec![0, 1, 2, 3]),
                Some(vec![0, 1, 2, 3]),
                Some(vec![4, 5, 6, 7]),
                Some(vec![4, 5, 6, 7]),
            ],
        };
        let gpus = [0, 1, 2, 3];
        let closest = task_gpus(&gpus, 4, None, Some(&bind("closest")), false, &affinity);
        assert_eq!(
            closest,
            vec![vec![0, 1], vec![0, 1], vec![2, 3], vec![2, 3]]
        );
        let single = task_gpus(&gpus, 4, None, Some(&bind("single:1")), false, &affinity);
        assert_eq!(single, vec![vec![0], vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn tres_bind_is_what_slurmd_tells_the_tasks() {
        assert_eq!(
            tres_bind(Some("map_gpu:1,0"), Some(1)).as_deref(),
            Some("gpu:map_gpu:1,0")
        );
        assert_eq!(tres_bind(None, Some(2)).as_deref(), Some("gpu:per_task:2"));
        assert_eq!(tres_bind(None, None), None);
    }

    #[test]
    fn a_shard_job_sees_the_gpu_its_shards_come_from() {
        let mut r = JobRecord::default();
        r.desc.gres = vec![GresRequest {
            name: "shard".into(),
            gres_type: None,
            count: 3,
        }];
        r.gpus_per_node = vec![vec![]];
        r.shards_per_node = vec![vec![(1, 3)]];
        assert_eq!(
            shard_variables(&r),
            vec![
                ("SLURM_SHARDS_ON_NODE", "3".to_string()),
                ("CUDA_VISIBLE_DEVICES", "1".to_string()),
                ("ROCR_VISIBLE_DEVICES", "1".to_string()),
                ("GPU_DEVICE_ORDINAL", "1".to_string()),
                ("ZE_AFFINITY_MASK", "1".to_string()),
            ]
        );
        assert_eq!(gpus_on_node(&r, 0), vec![1]);
        r.desc.gres.clear();
        assert_eq!(shard_variables(&r), vec![]);
    }
}
