//! What `scontrol -d show job` adds to a job's record, as Slurm 22.05 prints it: the
//! `DerivedExitCode` line, and for a job that was given nodes its `JOB_GRES` line and
//! one line per run of nodes holding the same processors, memory and GRES
//! (`  Nodes=n[1-2] CPU_IDs=0-3 Mem=2000 GRES=gpu:2(IDX:0-1)`).

use std::collections::BTreeMap;

use sluice_proto::types::{AccountingQuery, JobRecord, MemoryRequest};

/// Each of `jobs`' derived exit codes (`DerivedExitCode`, the highest exit status of
/// its srun steps) as sacct derives them, read from the accounting; none on failure
/// (every job then shows `0:0`).
pub fn derived_exit_codes(
    client: &sluice_proto::Client,
    jobs: &[&JobRecord],
) -> BTreeMap<u64, (i32, i32)> {
    let query = AccountingQuery {
        jobs: jobs.iter().map(|j| j.id).collect(),
        ..Default::default()
    };
    match client.post::<_, sluice_proto::types::Accounting>("/v1/accounting", &query) {
        Ok(acct) => super::sacct::derived_exit_codes(&acct.steps),
        Err(_) => BTreeMap::new(),
    }
}

/// Indices as Slurm's `bit_fmt` writes them: `0-3`, `0,2-3`.
pub fn index_ranges(ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    sluice_proto::types::compact_indices(&ids)
}

/// The GPUs' name as Slurm writes it: `gpu`, or `gpu:TYPE` when `types` (one node's,
/// or the job's) are all of one type.
fn gpu_name(types: &[(String, u32)], count: u32) -> String {
    match types {
        [(t, n)] if *n == count => format!("gpu:{t}"),
        _ => "gpu".into(),
    }
}

/// The `JOB_GRES` value and the per-node lines (as pairs whose key `  Nodes` starts a
/// line) of a job that was given nodes; nothing for one that never was.
pub fn allocation_pairs(j: &JobRecord) -> Vec<(String, String)> {
    if j.nodes.is_empty() {
        return Vec::new();
    }
    let gpus = |i: usize| j.gpus_per_node.get(i).map_or(&[][..], Vec::as_slice);
    let types = |i: usize| j.gpu_types_per_node.get(i).map_or(&[][..], Vec::as_slice);
    let total: u32 = (0..j.nodes.len()).map(|i| gpus(i).len() as u32).sum();
    let mut all_types: Vec<(String, u32)> = Vec::new();
    for i in 0..j.nodes.len() {
        for (t, n) in types(i) {
            match all_types.iter_mut().find(|(have, _)| have == t) {
                Some(e) => e.1 += n,
                None => all_types.push((t.clone(), *n)),
            }
        }
    }
    let mut v: Vec<(String, String)> = vec![(
        "JOB_GRES".into(),
        if total == 0 {
            "(null)".into()
        } else {
            format!("{}:{total}", gpu_name(&all_types, total))
        },
    )];
    // Each node's: processors, memory (MiB) and GRES; the GRES are no longer shown
    // once the job has ended, as Slurm clears them then.
    let cpus = |i: usize| j.cpus_per_node.get(i).copied().unwrap_or(0);
    let per_node: Vec<(String, u64, String)> = (0..j.nodes.len())
        .map(|i| {
            let ids = match j.cpu_ids_per_node.get(i) {
                Some(ids) if !ids.is_empty() => ids.clone(),
                _ => (0..cpus(i)).collect(),
            };
            let mem = match j.memory_request() {
                Some(MemoryRequest::PerCpu(m)) => m * u64::from(cpus(i)),
                Some(MemoryRequest::PerGpu(m)) => m * gpus(i).len() as u64,
                _ => j.mem_per_node,
            };
            let g = gpus(i);
            let gres = if g.is_empty() || j.state.is_finished() {
                String::new()
            } else {
                format!(
                    "{}:{}(IDX:{})",
                    gpu_name(types(i), g.len() as u32),
                    g.len(),
                    index_ranges(g)
                )
            };
            (index_ranges(&ids), mem, gres)
        })
        .collect();
    let mut i = 0;
    while i < per_node.len() {
        let mut k = i;
        while k + 1 < per_node.len() && per_node[k + 1] == per_node[i] {
            k += 1;
        }
        let (ids, mem, gres) = &per_node[i];
        v.push((
            "  Nodes".into(),
            sluice_conf::hostlist::compress(&j.nodes[i..=k]),
        ));
        v.push(("CPU_IDs".into(), ids.clone()));
        v.push(("Mem".into(), mem.to_string()));
        v.push(("GRES".into(), gres.clone()));
        i = k + 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::JobState;

    #[test]
    fn indices_read_as_slurms_bit_fmt() {
        assert_eq!(index_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(index_ranges(&[3, 0, 2]), "0,2-3");
        assert_eq!(index_ranges(&[1]), "1");
        assert_eq!(index_ranges(&[]), "");
    }

    fn job(nodes: &[&str], cpus: &[u32], ids: &[&[u32]], gpus: &[&[u32]]) -> JobRecord {
        JobRecord {
            state: JobState::Running,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            cpus_per_node: cpus.to_vec(),
            cpu_ids_per_node: ids.iter().map(|i| i.to_vec()).collect(),
            gpus_per_node: gpus.iter().map(|g| g.to_vec()).collect(),
            mem_default: Some(MemoryRequest::PerCpu(500)),
            ..Default::default()
        }
    }

    fn text(pairs: &[(String, String)]) -> String {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn nodes_holding_the_same_share_make_one_line_and_others_one_each() {
        let both = job(&["n1", "n2"], &[4, 4], &[&[0, 1, 2, 3], &[0, 1, 2, 3]], &[]);
        assert_eq!(
            text(&allocation_pairs(&both)),
            "JOB_GRES=(null)   Nodes=n[1-2] CPU_IDs=0-3 Mem=2000 GRES="
        );
        let mut gpus = job(
            &["n1", "n2"],
            &[2, 1],
            &[&[0, 1], &[0]],
            &[&[0, 1], &[0, 1]],
        );
        assert_eq!(
            text(&allocation_pairs(&gpus)),
            "JOB_GRES=gpu:4   Nodes=n1 CPU_IDs=0-1 Mem=1000 GRES=gpu:2(IDX:0-1)   \
             Nodes=n2 CPU_IDs=0 Mem=500 GRES=gpu:2(IDX:0-1)"
        );
        // Once it has ended its GPUs are no longer shown per node, as Slurm clears them.
        gpus.state = JobState::Cancelled;
        assert!(text(&allocation_pairs(&gpus)).ends_with("Nodes=n2 CPU_IDs=0 Mem=500 GRES="));
    }

    #[test]
    fn a_job_never_given_nodes_has_no_allocation_lines() {
        assert!(allocation_pairs(&job(&[], &[], &[], &[])).is_empty());
    }
}
