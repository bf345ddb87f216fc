//! `squeue -S` for jobs: Slurm 22.05's sort keys, applied from the last to the first,
//! each a stable sort, `-` reversing one (`-S -i`: newest first).

use std::cmp::Ordering;
use std::collections::HashMap;

use sluice_proto::types::JobRecord;

use super::sinfo_records::natural;

/// Slurm's value for a count a job did not ask for (`NO_VAL16`): larger than any.
const NOT_ASKED: u32 = 0xfffe;

/// The keys of a `-S` list in the order Slurm's squeue applies them, the last first,
/// each with whether a `-` before it reverses it. `cluster` (one cluster here: every
/// record alike) is passed over, and `b`, Slurm's vestigial GRES key, is said to be
/// invalid and passed over, as Slurm's does.
pub(super) fn keys_last_first(keys: &str) -> Vec<(u8, bool)> {
    const CLUSTER: &[u8] = b"cluster";
    let keys = keys.as_bytes();
    let mut out = Vec::new();
    let mut i = keys.len();
    while i > 0 {
        i -= 1;
        let k = keys[i];
        if matches!(k, b',' | b'+' | b'-') {
            continue;
        }
        if i + 1 >= CLUSTER.len() && keys[i + 1 - CLUSTER.len()..=i].eq_ignore_ascii_case(CLUSTER) {
            i -= CLUSTER.len() - 1;
            continue;
        }
        if k == b'b' {
            eprintln!("squeue: Invalid sort specification: b");
            continue;
        }
        out.push((k, i > 0 && keys[i - 1] == b'-'));
    }
    out
}

/// The first of some nodes in natural order (`n2` before `n10`), as Slurm's hostlist
/// compares node lists: `(true, None)` for none, after every list with some.
pub(super) fn first_node(nodes: &[String]) -> (bool, Option<(String, u64, String)>) {
    let first = nodes.iter().map(|n| natural(n)).min();
    (first.is_none(), first)
}

/// Orders `jobs` by `keys` as Slurm's squeue does, each key a stable sort, the last
/// applied first. Keys: `i` id (an array's tasks by index, a heterogeneous job's
/// components by offset), `j` name, `u` user, `U` uid, `g` group, `G` gid, `P`
/// partition, `t` compact state, `T` state, `p`/`Q` priority (with `tiers`, `-P`'s
/// partition `PriorityTier` first), `M` time used, `l` time limit, `L` time left, `S`
/// start (jobs without one last, either way), `V` submission, `e` end, `D` nodes, `C`
/// CPUs, `m` memory asked for, `N` first node, `B` batch host, `v` reservation, `H`
/// sockets per node, `z` sockets, cores and threads, `cluster` the cluster. As
/// Slurm's, `c d f h n O I J` change nothing here (what they order by, no job asks for
/// or it is the same for all). Any other key is `Err`, nothing sorted.
pub(super) fn sort_jobs(
    jobs: &mut [Box<JobRecord>],
    keys: &str,
    t: i64,
    tiers: &HashMap<String, u16>,
) -> Result<(), char> {
    let keys = keys_last_first(keys);
    const KNOWN: &[u8] = b"ijuUgGPtTpQMlLSVeDCmNBvHzcdfhnOIJ";
    if let Some(&(k, _)) = keys.iter().find(|(k, _)| !KNOWN.contains(k)) {
        return Err(k as char);
    }
    let id = |j: &JobRecord| match j.het {
        Some(h) => (h.job_id, h.offset),
        None => j.list_key(),
    };
    let nodes = |j: &JobRecord| {
        if j.nodes.is_empty() {
            j.min_nodes.max(1) as usize
        } else {
            j.nodes.len()
        }
    };
    let cpus = |j: &JobRecord| -> u32 {
        if j.cpus_per_node.is_empty() {
            j.ntasks * j.cpus_per_task
        } else {
            j.cpus_per_node.iter().sum()
        }
    };
    // Slurm's `_part_get_prio_tier`: 1 for a partition it does not find.
    let tier = |j: &JobRecord| tiers.get(&j.partition).copied().unwrap_or(1);
    // Slurm's INFINITE for no limit: later than any.
    let left = |j: &JobRecord| {
        j.time_limit
            .map_or(i64::from(u32::MAX), |l| l - j.run_secs(t))
    };
    let sockets = |j: &JobRecord| j.desc.sockets_per_node.unwrap_or(NOT_ASKED);
    // A pending job's expected start already past counts as now, as Slurm's.
    let start = |j: &JobRecord| {
        j.start_time.or(j.planned_start).map(|s| match j.state {
            sluice_proto::types::JobState::Pending => s.max(t),
            _ => s,
        })
    };
    for (k, reverse) in keys {
        let by = |a: &JobRecord, b: &JobRecord| -> Ordering {
            match k {
                b'i' => id(a).cmp(&id(b)),
                b'j' => a.desc.name.cmp(&b.desc.name),
                b'u' => a.user.cmp(&b.user),
                b'U' => a.uid.cmp(&b.uid),
                b'g' => a.group.cmp(&b.group),
                b'G' => a.gid.cmp(&b.gid),
                b'P' => a.partition.cmp(&b.partition),
                b't' => a.shown_state_short().cmp(b.shown_state_short()),
                b'T' => a.shown_state().cmp(b.shown_state()),
                b'p' | b'Q' => tier(a).cmp(&tier(b)).then(a.priority.cmp(&b.priority)),
                b'M' => a.run_secs(t).cmp(&b.run_secs(t)),
                // No limit is Slurm's INFINITE, the longest.
                b'l' => a
                    .time_limit
                    .unwrap_or(i64::MAX)
                    .cmp(&b.time_limit.unwrap_or(i64::MAX)),
                b'L' => left(a).cmp(&left(b)),
                b'S' => start(a).cmp(&start(b)),
                b'V' => a.submit_time.cmp(&b.submit_time),
                b'e' => a.end_time.cmp(&b.end_time),
                b'D' => nodes(a).cmp(&nodes(b)),
                b'C' => cpus(a).cmp(&cpus(b)),
                b'm' => super::squeue::memory_asked(a).cmp(&super::squeue::memory_asked(b)),
                b'N' => first_node(&a.nodes).cmp(&first_node(&b.nodes)),
                // The batch host: a job's first node.
                b'B' => a.nodes.first().cmp(&b.nodes.first()),
                b'v' => a.desc.reservation.cmp(&b.desc.reservation),
                b'H' | b'z' => sockets(a).cmp(&sockets(b)),
                _ => Ordering::Equal,
            }
        };
        // Where each job stands before this key (a record does not move in its box).
        let rank: HashMap<*const JobRecord, usize> = if k == b'S' {
            jobs.iter()
                .enumerate()
                .map(|(i, j)| (&**j as *const _, i))
                .collect()
        } else {
            HashMap::new()
        };
        let order = |a: &JobRecord, b: &JobRecord| -> Ordering {
            match (k, start(a).is_none(), start(b).is_none()) {
                // Slurm's: a job without a start goes last, reversed or not; its
                // comparison calls two such jobs out of order, so its merge sort
                // leaves them in the reverse of their order before.
                (b'S', true, true) => rank[&(b as *const _)].cmp(&rank[&(a as *const _)]),
                (b'S', true, false) => Ordering::Greater,
                (b'S', false, true) => Ordering::Less,
                _ if reverse => by(b, a),
                _ => by(a, b),
            }
        };
        jobs.sort_by(|a, b| order(a, b));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::sort_jobs;
    use sluice_proto::types::JobRecord;
    use std::collections::HashMap;

    fn job(id: u64, name: &str, limit: i64, array: Option<(u64, u32)>) -> Box<JobRecord> {
        let mut j = JobRecord {
            id,
            array,
            time_limit: Some(limit),
            ..Default::default()
        };
        j.desc.name = name.into();
        Box::new(j)
    }

    fn order(jobs: &[Box<JobRecord>]) -> Vec<u64> {
        jobs.iter().map(|j| j.id).collect()
    }

    #[test]
    fn keys_apply_from_the_last_to_the_first_and_a_minus_reverses_one() {
        // An array's task 2 took id 14 after task 1 (id 13); 12 stands alone.
        let mut jobs = vec![
            job(14, "bbb", 600, Some((10, 2))),
            job(12, "aaa", 1200, None),
            job(13, "ccc", 600, Some((10, 1))),
        ];
        sort_jobs(&mut jobs, "i", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [13, 14, 12], "by array id, then task");
        sort_jobs(&mut jobs, "-i", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [12, 14, 13]);
        sort_jobs(&mut jobs, "j", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [12, 14, 13]);
        sort_jobs(&mut jobs, "-l,i", 0, &HashMap::new()).unwrap();
        assert_eq!(
            order(&jobs),
            [12, 13, 14],
            "longest limit first, then by id"
        );
        assert_eq!(sort_jobs(&mut jobs, "x", 0, &HashMap::new()), Err('x'));
        assert_eq!(sort_jobs(&mut jobs, "i,A", 0, &HashMap::new()), Err('A'));
        assert_eq!(
            sort_jobs(&mut jobs, "b,c,f,-cluster", 0, &HashMap::new()),
            Ok(())
        );
        assert_eq!(
            order(&jobs),
            [12, 13, 14],
            "keys that order by nothing held"
        );
    }

    #[test]
    fn with_partition_tiers_priority_orders_by_the_tier_first() {
        let mut jobs = vec![job(1, "a", 60, None), job(2, "b", 60, None)];
        jobs[0].partition = "high".into();
        jobs[0].priority = 10;
        jobs[1].partition = "low".into();
        jobs[1].priority = 500;
        sort_jobs(&mut jobs, "-p", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [2, 1], "the jobs' priorities alone");
        let tiers = HashMap::from([("high".to_string(), 5), ("low".to_string(), 1)]);
        sort_jobs(&mut jobs, "-p", 0, &tiers).unwrap();
        assert_eq!(order(&jobs), [1, 2], "the higher tier first, as squeue -P");
    }

    #[test]
    fn nodes_time_left_state_memory_and_group_keys_order_as_slurms() {
        use sluice_proto::types::{JobState, MemoryRequest};
        let mut jobs = vec![
            job(1, "a", 600, None),
            job(2, "b", 600, None),
            job(3, "c", 600, None),
        ];
        jobs[0].nodes = vec!["n10".into()];
        jobs[1].nodes = vec!["n9".into(), "n2".into()];
        // Job 3 pends: no nodes, after every job with some.
        sort_jobs(&mut jobs, "N", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [2, 1, 3], "n2 before n10, natural order");
        sort_jobs(&mut jobs, "-N", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [3, 1, 2]);
        // Time left: job 1 ran 500 s of 600, job 2 none of 600, job 3 has no limit.
        jobs.sort_by_key(|j| j.id);
        jobs[0].state = JobState::Running;
        jobs[0].start_time = Some(1000);
        jobs[2].time_limit = None;
        sort_jobs(&mut jobs, "L", 1500, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [1, 2, 3]);
        // State by its long name: PENDING before RUNNING.
        sort_jobs(&mut jobs, "T,i", 1500, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [2, 3, 1]);
        // Memory asked for; group id.
        jobs.sort_by_key(|j| j.id);
        jobs[0].desc.memory = Some(MemoryRequest::PerNode(4000));
        jobs[1].desc.memory = Some(MemoryRequest::PerNode(100));
        jobs[2].desc.memory = Some(MemoryRequest::PerNode(2000));
        sort_jobs(&mut jobs, "m", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [2, 3, 1]);
        for j in jobs.iter_mut() {
            j.gid = [5, 7, 6][j.id as usize - 1];
        }
        sort_jobs(&mut jobs, "-G", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [2, 3, 1]);
    }

    #[test]
    fn jobs_without_a_start_go_last_either_way_and_keys_come_last_first() {
        let mut jobs = vec![
            job(1, "a", 60, None),
            job(2, "b", 60, None),
            job(3, "c", 60, None),
        ];
        jobs[0].start_time = Some(200);
        jobs[2].start_time = Some(100);
        sort_jobs(&mut jobs, "S", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [3, 1, 2]);
        sort_jobs(&mut jobs, "-S", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [1, 3, 2], "still last, reversed");
        // Those without a start end in the reverse of their order before, as Slurm's.
        jobs[0].start_time = None;
        sort_jobs(&mut jobs, "S", 0, &HashMap::new()).unwrap();
        assert_eq!(order(&jobs), [3, 2, 1]);
        assert_eq!(
            super::keys_last_first("-i,cluster,b,P"),
            [(b'P', false), (b'i', true)],
            "cluster and b passed over"
        );
        assert_eq!(super::keys_last_first("-cluster"), []);
    }
}
