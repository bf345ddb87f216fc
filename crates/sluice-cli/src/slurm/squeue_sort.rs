//! `squeue -S` for jobs: Slurm 22.05's sort keys, applied from the last to the first,
//! each a stable sort, `-` reversing one (`-S -i`: newest first).

use std::cmp::Ordering;
use std::collections::HashMap;

use sluice_proto::types::JobRecord;

use super::sinfo_records::natural;

/// Slurm's value for a count a job did not ask for (`NO_VAL16`): larger than any.
const NOT_ASKED: u32 = 0xfffe;

/// Orders `jobs` by `keys` as Slurm's squeue does. Keys: `i` id (an array's tasks by
/// index, a heterogeneous job's components by offset), `j` name, `u` user, `U` uid,
/// `g` group, `G` gid, `P` partition, `t` compact state, `T` state, `p`/`Q` priority
/// (with `tiers`, `-P`'s partition `PriorityTier` first), `M` time used, `l` time
/// limit, `L` time left, `S` start, `V` submission, `e` end, `D` nodes, `C` CPUs, `m`
/// memory asked for, `N` first node, `B` batch host, `v` reservation, `H` sockets per
/// node, `z` sockets, cores and threads, `cluster` the cluster. As Slurm's, `c d f h
/// n O I J` change nothing here (what they order by, no job asks for or it is the same
/// for all), and `b` is said to be invalid and passed over. Any other key is `Err`.
pub(super) fn sort_jobs(
    jobs: &mut [Box<JobRecord>],
    keys: &str,
    t: i64,
    tiers: &HashMap<String, u16>,
) -> Result<(), char> {
    let keys = keys.as_bytes();
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
    let tier = |j: &JobRecord| tiers.get(&j.partition).copied().unwrap_or(0);
    // Slurm's INFINITE for no limit: later than any.
    let left = |j: &JobRecord| {
        j.time_limit
            .map_or(i64::from(u32::MAX), |l| l - j.run_secs(t))
    };
    let sockets = |j: &JobRecord| j.desc.sockets_per_node.unwrap_or(NOT_ASKED);
    // squeue's `%B`: the batch job's first node, an allocation's submitting host.
    let batch_host = |j: &JobRecord| -> String {
        if j.desc.interactive {
            j.desc.submit_host.clone()
        } else {
            j.nodes.first().cloned().unwrap_or_default()
        }
    };
    let mut i = keys.len();
    while i > 0 {
        i -= 1;
        let k = keys[i];
        if matches!(k, b',' | b'+' | b'-') {
            continue;
        }
        let reverse = i > 0 && keys[i - 1] == b'-';
        const CLUSTER: &[u8] = b"cluster";
        if i + 1 >= CLUSTER.len() && keys[i + 1 - CLUSTER.len()..=i].eq_ignore_ascii_case(CLUSTER) {
            // One cluster: every job alike.
            i -= CLUSTER.len() - 1;
            continue;
        }
        let order = |a: &JobRecord, b: &JobRecord| -> Ordering {
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
                b'S' => a
                    .start_time
                    .or(a.planned_start)
                    .cmp(&b.start_time.or(b.planned_start)),
                b'V' => a.submit_time.cmp(&b.submit_time),
                b'e' => a.end_time.cmp(&b.end_time),
                b'D' => nodes(a).cmp(&nodes(b)),
                b'C' => cpus(a).cmp(&cpus(b)),
                b'm' => super::squeue::memory_asked(a).cmp(&super::squeue::memory_asked(b)),
                b'N' => first_node(a).cmp(&first_node(b)),
                b'B' => batch_host(a).cmp(&batch_host(b)),
                b'v' => a.desc.reservation.cmp(&b.desc.reservation),
                b'H' | b'z' => sockets(a).cmp(&sockets(b)),
                _ => Ordering::Equal,
            }
        };
        match k {
            b'b' => {
                // Slurm's vestigial GRES key: said, and passed over.
                eprintln!("squeue: Invalid sort specification: b");
                continue;
            }
            b'c' | b'd' | b'f' | b'h' | b'n' | b'O' | b'I' | b'J' => continue,
            b'i' | b'j' | b'u' | b'U' | b'g' | b'G' | b'P' | b't' | b'T' | b'p' | b'Q' | b'M'
            | b'l' | b'L' | b'S' | b'V' | b'e' | b'D' | b'C' | b'm' | b'N' | b'B' | b'v' | b'H'
            | b'z' => {}
            other => return Err(other as char),
        }
        if reverse {
            jobs.sort_by(|a, b| order(b, a));
        } else {
            jobs.sort_by(|a, b| order(a, b));
        }
    }
    Ok(())
}

/// The first of a job's nodes in natural order (`n2` before `n10`), as Slurm's
/// hostlist compares node lists; a job without nodes after every job with some.
fn first_node(j: &JobRecord) -> (bool, Option<(String, u64, String)>) {
    let first = j.nodes.iter().map(|n| natural(n)).min();
    (first.is_none(), first)
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
}
