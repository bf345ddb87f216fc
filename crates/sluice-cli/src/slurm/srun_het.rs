//! A heterogeneous step (`srun OPTS CMD : OPTS CMD`, `srun --het-group=0,1`): the
//! plans of its components' parts laid out as one step, and the variables its tasks
//! see, as Slurm 22.05's srun sets them.

use std::collections::BTreeMap;

use sluice_proto::types::{JobRecord, StepPlan};

/// The parts' plans as one step: every component's nodes in turn (their index is
/// `SLURM_NODEID`), the tasks numbered on from one component to the next
/// (`SLURM_PROCID`, `SLURM_GTIDS`).
pub(super) struct Layout {
    /// The merged plan: its nodes, tasks (global ids), GPUs and CPUs per node.
    pub plan: StepPlan,
    /// Per node of `plan`: the part (component) it belongs to.
    pub node_part: Vec<usize>,
    /// Per part: its first task's global id.
    pub offsets: Vec<u32>,
}

impl Layout {
    /// `plans`, one per part, in order (the first part's step id is every part's).
    pub fn of(plans: &[StepPlan]) -> Layout {
        let first = &plans[0];
        let mut plan = StepPlan {
            job_id: first.job_id,
            step: first.step,
            nodes: Vec::new(),
            ntasks: 0,
            task_gpus: Vec::new(),
            cpus: Vec::new(),
        };
        let mut node_part = Vec::new();
        let mut offsets = Vec::new();
        let every_cpus = plans.iter().all(|p| p.cpus.len() == p.nodes.len());
        for (i, p) in plans.iter().enumerate() {
            let offset = plan.ntasks;
            offsets.push(offset);
            for (k, (name, socket, tasks)) in p.nodes.iter().enumerate() {
                let global = tasks.iter().map(|t| t + offset).collect();
                plan.nodes.push((name.clone(), socket.clone(), global));
                plan.task_gpus
                    .push(p.task_gpus.get(k).cloned().unwrap_or_default());
                if every_cpus {
                    plan.cpus.push(p.cpus[k]);
                }
                node_part.push(i);
            }
            plan.ntasks += p.ntasks;
        }
        Layout {
            plan,
            node_part,
            offsets,
        }
    }

    /// The part task `task` (a global id) belongs to.
    pub fn part_of_task(&self, task: u32) -> usize {
        self.offsets.iter().rposition(|&o| o <= task).unwrap_or(0)
    }
}

/// Where a part of a heterogeneous step in allocation `job` (one component) may run,
/// as Slurm's srun asks for it: on nodes the parts before did not take (`taken`), so
/// the part's `-x` grows by them; without `-N`, on as few of the nodes left as hold
/// its `-n` tasks (all of them left without `-n`). Returns the node count to ask for
/// and the nodes to exclude.
///
/// Errors (Slurm's srun's): fewer nodes left than the part needs
/// (`Allocation failure of N nodes: ...`), a `-w` naming a node taken.
pub(super) fn local_part_nodes(
    job: &JobRecord,
    opts: &sluice_conf::options::JobOptions,
    taken: &[String],
) -> Result<(Option<u32>, Option<String>), String> {
    let expand = |e: &Option<String>| {
        e.as_deref()
            .filter(|e| !e.is_empty())
            .and_then(|e| sluice_conf::hostlist::expand(e).ok())
            .unwrap_or_default()
    };
    let mut excluded: Vec<String> = expand(&opts.exclude);
    excluded.extend(taken.iter().cloned());
    excluded.sort();
    excluded.dedup();
    let exclude = sluice_conf::hostlist::compress(&excluded);
    let wanted = expand(&opts.nodelist);
    let min_nodes = match (opts.nodes, opts.ntasks) {
        (Some(n), _) => n.0,
        (None, _) if !wanted.is_empty() => wanted.len() as u32,
        (None, Some(_)) => 1,
        (None, None) => job.nodes.len() as u32,
    };
    let left = job.nodes.len().saturating_sub(excluded.len()) as u32;
    // (The first part is an ordinary step's request: the controller answers it.)
    if !taken.is_empty() && left < min_nodes {
        return Err(format!(
            "Allocation failure of {min_nodes} nodes: job size of {}, already allocated {} \
             nodes to previous components.",
            job.nodes.len(),
            excluded.len()
        ));
    }
    if wanted.iter().any(|w| excluded.contains(w)) {
        eprintln!(
            "srun: error: Requested nodelist {} overlaps with excluded {exclude}.",
            opts.nodelist.as_deref().unwrap_or("")
        );
        return Err("Job not submitted.".into());
    }
    let nodes = match (opts.nodes, opts.ntasks) {
        (Some(n), _) => Some(n.0),
        (None, Some(ntasks)) if wanted.is_empty() => {
            // As few of the nodes left as hold the tasks, in the allocation's order.
            let cpt = opts
                .cpus_per_task
                .or(job.desc.cpus_per_task)
                .unwrap_or(1)
                .max(1);
            let mut room = 0;
            let mut count = 0;
            for (name, cpus) in job.nodes.iter().zip(&job.cpus_per_node) {
                if excluded.contains(name) || room >= ntasks {
                    continue;
                }
                room += cpus / cpt;
                count += 1;
            }
            Some(count.max(1))
        }
        _ => None,
    };
    Ok((nodes, (!excluded.is_empty()).then_some(exclude)))
}

/// Per node of `nodes` (`(name, count)`, a node named more than once counting each
/// time): the node list as a hostlist, and the counts in its order (`2,1`, `2(x3)`).
fn per_node(nodes: &[(String, u32)]) -> (String, usize, String) {
    let mut by_name: BTreeMap<&str, u32> = BTreeMap::new();
    for (n, c) in nodes {
        *by_name.entry(n.as_str()).or_default() += c;
    }
    let names: Vec<String> = by_name.keys().map(|n| n.to_string()).collect();
    let list = sluice_conf::hostlist::compress(&names);
    // In the hostlist's own order (`n9` before `n10`).
    let order = sluice_conf::hostlist::expand(&list).unwrap_or(names);
    let counts: Vec<u32> = order
        .iter()
        .map(|n| by_name.get(n.as_str()).copied().unwrap_or(0))
        .collect();
    (
        list,
        order.len(),
        sluice_ctld::state::tasks_per_node_string(&counts),
    )
}

/// The variables of a heterogeneous step's tasks that differ from a one-component
/// step's, as Slurm 22.05's srun sets them: the whole job's id, the nodes, CPUs and
/// tasks of every component together (`SLURM_NTASKS` the total, `SLURM_NODELIST` the
/// union), and the number of components. `own`: srun made the allocation itself, and
/// tells the tasks of it what salloc or sbatch would have (cluster, account, QOS,
/// where it was submitted, and each component's ids, nodes, CPUs, partition, account
/// and QOS as `NAME_PACK_GROUP_n`).
pub(super) fn het_step_variables(
    records: &[JobRecord],
    layout: &Layout,
    own: bool,
    cluster: &str,
) -> Vec<(String, String)> {
    let leader = &records[0];
    let id = leader.het.map_or(leader.id, |h| h.job_id).to_string();
    let job_nodes: Vec<(String, u32)> = records
        .iter()
        .flat_map(|r| {
            r.nodes
                .iter()
                .cloned()
                .zip(r.cpus_per_node.iter().copied().chain(std::iter::repeat(0)))
        })
        .collect();
    let (job_list, job_count, job_cpus) = per_node(&job_nodes);
    let step_nodes: Vec<(String, u32)> = layout
        .plan
        .nodes
        .iter()
        .map(|(n, _, tasks)| (n.clone(), tasks.len() as u32))
        .collect();
    let (step_list, step_count, step_tasks) = per_node(&step_nodes);
    let ntasks = layout.plan.ntasks.to_string();
    let size = records.len().to_string();
    let mut v: Vec<(String, String)> = [
        ("SLURM_JOB_ID", id.clone()),
        ("SLURM_JOBID", id),
        ("SLURM_JOB_NODELIST", job_list),
        ("SLURM_JOB_NUM_NODES", job_count.to_string()),
        ("SLURM_JOB_CPUS_PER_NODE", job_cpus),
        ("SLURM_STEP_NODELIST", step_list.clone()),
        ("SLURM_NODELIST", step_list),
        ("SLURM_STEP_NUM_NODES", step_count.to_string()),
        ("SLURM_NNODES", step_count.to_string()),
        ("SLURM_STEP_NUM_TASKS", ntasks.clone()),
        ("SLURM_NTASKS", ntasks.clone()),
        ("SLURM_NPROCS", ntasks),
        ("SLURM_STEP_TASKS_PER_NODE", step_tasks.clone()),
        ("SLURM_TASKS_PER_NODE", step_tasks),
        ("SLURM_HET_SIZE", size.clone()),
        ("SLURM_PACK_SIZE", size),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if own {
        for (k, value) in [
            ("SLURM_CLUSTER_NAME", cluster.to_string()),
            ("SLURM_JOB_ACCOUNT", leader.account.clone()),
            ("SLURM_JOB_QOS", leader.qos.clone()),
            ("SLURM_SUBMIT_DIR", leader.desc.submit_dir().to_string()),
            ("SLURM_SUBMIT_HOST", leader.desc.submit_host.clone()),
        ] {
            v.push((k.to_string(), value));
        }
        for (n, r) in records.iter().enumerate() {
            for (k, value) in [
                ("SLURM_JOB_ACCOUNT", r.account.clone()),
                (
                    "SLURM_JOB_CPUS_PER_NODE",
                    sluice_ctld::state::tasks_per_node_string(&r.cpus_per_node),
                ),
                ("SLURM_JOB_ID", r.id.to_string()),
                (
                    "SLURM_JOB_NODELIST",
                    sluice_conf::hostlist::compress(&r.nodes),
                ),
                ("SLURM_JOB_PARTITION", r.partition.clone()),
                ("SLURM_JOB_QOS", r.qos.clone()),
            ] {
                v.push((format!("{k}_PACK_GROUP_{n}"), value));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(step: u32, nodes: &[(&str, &[u32])]) -> StepPlan {
        StepPlan {
            job_id: 1,
            step,
            nodes: nodes
                .iter()
                .map(|(n, t)| (n.to_string(), format!("/{n}"), t.to_vec()))
                .collect(),
            ntasks: nodes.iter().map(|(_, t)| t.len() as u32).sum(),
            task_gpus: Vec::new(),
            cpus: nodes.iter().map(|(_, t)| t.len() as u32).collect(),
        }
    }

    #[test]
    fn the_parts_of_a_step_in_one_allocation_take_nodes_of_their_own_as_slurms_srun() {
        use sluice_conf::options::JobOptions;
        // `salloc -N2 -n3`: two CPUs on n1, one on n2.
        let job = JobRecord {
            id: 5,
            nodes: vec!["n1".into(), "n2".into()],
            cpus_per_node: vec![2, 1],
            ..Default::default()
        };
        let n = |ntasks: Option<u32>, nodes: Option<u32>| JobOptions {
            ntasks,
            nodes: nodes.map(|n| (n, n)),
            ..Default::default()
        };
        let taken = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // The first part: as few nodes as hold its tasks, nothing excluded.
        assert_eq!(
            local_part_nodes(&job, &n(Some(2), None), &[]),
            Ok((Some(1), None))
        );
        assert_eq!(
            local_part_nodes(&job, &n(Some(3), None), &[]),
            Ok((Some(2), None))
        );
        // The next: on the nodes left (the controller then finds n2 too small for 2).
        assert_eq!(
            local_part_nodes(&job, &n(Some(2), None), &taken(&["n1"])),
            Ok((Some(1), Some("n1".into())))
        );
        // None left: Slurm's srun's error, counting what `-N` (or, without `-n`, the
        // whole allocation) asks for.
        let failure = |want: u32, gone: u32| {
            Err(format!(
                "Allocation failure of {want} nodes: job size of 2, already allocated \
                 {gone} nodes to previous components."
            ))
        };
        assert_eq!(
            local_part_nodes(&job, &n(Some(1), None), &taken(&["n1", "n2"])),
            failure(1, 2)
        );
        assert_eq!(
            local_part_nodes(&job, &n(None, Some(2)), &taken(&["n1"])),
            failure(2, 1)
        );
        assert_eq!(
            local_part_nodes(&job, &n(None, None), &taken(&["n1"])),
            failure(2, 1)
        );
        // A `-w` naming a node a part before took.
        let named = JobOptions {
            nodelist: Some("n1".into()),
            ..Default::default()
        };
        assert_eq!(
            local_part_nodes(&job, &named, &taken(&["n1"])),
            Err("Job not submitted.".into())
        );
    }

    #[test]
    fn a_heterogeneous_steps_tasks_and_nodes_are_numbered_on_across_components() {
        // One task on n2 (component 0), two on n1 (component 1): as Slurm's srun,
        // n1's tasks are 1 and 2 and n1 is the step's node 1.
        let layout = Layout::of(&[plan(4, &[("n2", &[0])]), plan(4, &[("n1", &[0, 1])])]);
        let tasks: Vec<(&str, Vec<u32>)> = layout
            .plan
            .nodes
            .iter()
            .map(|(n, _, t)| (n.as_str(), t.clone()))
            .collect();
        assert_eq!(tasks, vec![("n2", vec![0]), ("n1", vec![1, 2])]);
        assert_eq!(layout.plan.ntasks, 3);
        assert_eq!(layout.plan.step, 4);
        assert_eq!(layout.plan.cpus, vec![1, 2]);
        assert_eq!(layout.node_part, vec![0, 1]);
        assert_eq!(
            (0..3).map(|t| layout.part_of_task(t)).collect::<Vec<_>>(),
            vec![0, 1, 1]
        );
    }

    #[test]
    fn a_heterogeneous_steps_variables_count_every_component() {
        let component = |id: u64, offset: u32, node: &str, cpus: u32| JobRecord {
            id,
            nodes: vec![node.into()],
            cpus_per_node: vec![cpus],
            account: "root".into(),
            partition: "debug".into(),
            qos: "normal".into(),
            het: Some(sluice_proto::types::HetJob {
                job_id: 7,
                offset,
                size: 2,
            }),
            ..Default::default()
        };
        let records = [component(7, 0, "n2", 1), component(8, 1, "n1", 2)];
        let layout = Layout::of(&[plan(0, &[("n2", &[0])]), plan(0, &[("n1", &[0, 1])])]);
        let inside: BTreeMap<String, String> = het_step_variables(&records, &layout, false, "c")
            .into_iter()
            .collect();
        let get = |k: &str| inside.get(k).map(String::as_str);
        // What real Slurm 22.05 gave these tasks (`srun -n1 ... : -n2 ...` in salloc).
        assert_eq!(get("SLURM_JOB_ID"), Some("7"));
        assert_eq!(get("SLURM_JOB_NODELIST"), Some("n[1-2]"));
        assert_eq!(get("SLURM_JOB_CPUS_PER_NODE"), Some("2,1"));
        assert_eq!(get("SLURM_STEP_TASKS_PER_NODE"), Some("2,1"));
        assert_eq!(get("SLURM_NTASKS"), Some("3"));
        assert_eq!(get("SLURM_NNODES"), Some("2"));
        assert_eq!(get("SLURM_HET_SIZE"), Some("2"));
        assert_eq!(get("SLURM_JOB_ACCOUNT"), None);
        // srun's own allocation: what salloc would have said besides.
        let own: BTreeMap<String, String> = het_step_variables(&records, &layout, true, "c")
            .into_iter()
            .collect();
        assert_eq!(own.get("SLURM_JOB_ID_PACK_GROUP_1").unwrap(), "8");
        assert_eq!(own.get("SLURM_JOB_NODELIST_PACK_GROUP_0").unwrap(), "n2");
        assert_eq!(own.get("SLURM_JOB_QOS").unwrap(), "normal");
        assert!(!own.contains_key("SLURM_JOB_ID_HET_GROUP_1"));
    }
}
