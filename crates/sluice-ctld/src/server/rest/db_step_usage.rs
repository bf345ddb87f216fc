//! A step's gathered usage in slurmdbd's `STEP` shape: `tres.requested` holds what its
//! tasks read and used (sacct's `TRESUsageIn*`), `tres.consumed` what they wrote
//! (`TRESUsageOut*`), each as `max`, `min`, `average` and `total` TRES lists — the
//! same figures, in the same units, as sacct prints (CPU time in milliseconds, memory
//! and I/O in bytes, energy 0: Sluice measures none).

use serde_json::{json, Value};
use sluice_proto::usage::{gpu_stats, Stat, StepUsage};

use super::db;

/// Which lists: what the tasks read or used, or what they wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    /// `tres.requested` (`TRESUsageIn*`).
    In,
    /// `tres.consumed` (`TRESUsageOut*`).
    Out,
}

/// Where a figure was had: its task and its node.
type Holder = fn(&Stat) -> (u32, &str);

/// The four lists of `usage` in direction `dir`; empty lists for a step without
/// gathered usage.
pub(super) fn lists(usage: Option<&StepUsage>, dir: Direction, tracked: &[String]) -> Value {
    let Some(u) = usage else {
        return json!({"max": [], "min": [], "average": [], "total": []});
    };
    let energy = Stat {
        max: 0,
        min: 0,
        tot: 0,
        ..u.cpu_ms.clone()
    };
    let gpu = gpu_stats(&u.gpus);
    let gpus = u.gpus.len() as u32;
    // (TRES, figures, how many tasks they cover).
    let mut figures: Vec<(&str, &Stat, u32)> = Vec::new();
    match dir {
        Direction::In => {
            figures.push(("cpu", &u.cpu_ms, u.tasks));
            figures.push(("energy", &energy, u.tasks));
            figures.push(("fs/disk", &u.disk_read, u.tasks));
            // GPU figures only where accounting tracks them (slurmdbd keeps only
            // tracked TRES, and an untracked one has no id of its own).
            if let Some((util, mem)) = &gpu {
                for (name, stat) in [("gres/gpumem", mem), ("gres/gpuutil", util)] {
                    if tracked.iter().any(|t| t == name) {
                        figures.push((name, stat, gpus));
                    }
                }
            }
            figures.push(("mem", &u.rss, u.tasks));
            figures.push(("pages", &u.pages, u.tasks));
            figures.push(("vmem", &u.vmem, u.tasks));
        }
        Direction::Out => {
            figures.push(("energy", &energy, u.tasks));
            figures.push(("fs/disk", &u.disk_write, u.tasks));
        }
    }
    // In TRES id order, as slurmdbd's lists are.
    figures.sort_by_key(|(name, _, _)| db::tres_id(name, tracked));
    // Max and min name the task and node that had it (Slurm's `TRES_NCT`).
    let list = |pick: &dyn Fn(&Stat, u32) -> u64, at: Option<Holder>| {
        Value::Array(
            figures
                .iter()
                .map(|(name, stat, tasks)| {
                    let (kind, sub) = db::tres_parts(name);
                    let mut entry = json!({
                        "type": kind,
                        "name": sub,
                        "id": db::tres_id(name, tracked),
                        "count": pick(stat, *tasks),
                    });
                    if let Some(at) = at {
                        let (task, node) = at(stat);
                        entry["task"] = json!(task);
                        entry["node"] = json!(node);
                    }
                    entry
                })
                .collect(),
        )
    };
    json!({
        "max": list(&|s, _| s.max, Some(|s| (s.max_task, s.max_node.as_str()))),
        "min": list(&|s, _| s.min, Some(|s| (s.min_task, s.min_node.as_str()))),
        "average": list(&|s, t| s.ave(t), None),
        "total": list(&|s, _| s.tot, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(v: &Value, pick: &str) -> Vec<(String, u64)> {
        v[pick]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let name = match t["name"].as_str().unwrap() {
                    "" => t["type"].as_str().unwrap().to_string(),
                    n => format!("{}/{}", t["type"].as_str().unwrap(), n),
                };
                (name, t["count"].as_u64().unwrap())
            })
            .collect()
    }

    #[test]
    fn a_steps_usage_is_listed_as_sacct_figures_it() {
        // Two tasks: 3 s and 1 s of CPU, 40 and 20 MiB resident, 5 and 0 bytes written.
        let mib = 1 << 20;
        let mut rss = Stat::one(40 * mib, "n1", 0);
        rss.merge(&Stat::one(20 * mib, "n2", 1));
        let mut cpu = Stat::one(3000, "n1", 0);
        cpu.merge(&Stat::one(1000, "n2", 1));
        let mut written = Stat::one(5, "n1", 0);
        written.merge(&Stat::one(0, "n2", 1));
        let u = StepUsage {
            tasks: 2,
            cpu_ms: cpu,
            rss,
            disk_write: written,
            ..StepUsage::default()
        };
        let tracked = ["cpu".to_string(), "mem".to_string()];
        let read = lists(Some(&u), Direction::In, &tracked);
        // In TRES id order: cpu 1, mem 2, energy 3, fs/disk 6, vmem 7, pages 8.
        assert_eq!(
            counts(&read, "max"),
            [
                ("cpu".into(), 3000),
                ("mem".into(), 40 * mib),
                ("energy".into(), 0),
                ("fs/disk".into(), 0),
                ("vmem".into(), 0),
                ("pages".into(), 0),
            ]
        );
        assert_eq!(counts(&read, "average")[0], ("cpu".into(), 2000));
        assert_eq!(counts(&read, "min")[1], ("mem".into(), 20 * mib));
        assert_eq!(read["max"][0]["id"], 1);
        // Max and min name their task and node; average and total do not.
        assert_eq!(
            (&read["min"][1]["task"], &read["min"][1]["node"]),
            (&json!(1), &json!("n2"))
        );
        assert_eq!(read["total"][0].get("task"), None);
        let wrote = lists(Some(&u), Direction::Out, &tracked);
        assert_eq!(
            counts(&wrote, "total"),
            [("energy".into(), 0), ("fs/disk".into(), 5)]
        );
        // GPU figures only where accounting tracks them.
        let mut g = u.clone();
        g.gpus = vec![sluice_proto::usage::GpuUsage {
            node: "n1".into(),
            samples: 2,
            util_sum: 100,
            mem_max: 7,
            ..Default::default()
        }];
        let names = |tracked: &[String]| -> Vec<String> {
            counts(&lists(Some(&g), Direction::In, tracked), "max")
                .into_iter()
                .map(|(n, _)| n)
                .filter(|n| n.starts_with("gres/"))
                .collect()
        };
        assert!(names(&tracked).is_empty());
        let with_gpus = ["gres/gpuutil".to_string(), "gres/gpumem".to_string()];
        assert_eq!(names(&with_gpus), ["gres/gpuutil", "gres/gpumem"]);
        // No usage gathered: empty lists.
        assert_eq!(lists(None, Direction::Out, &tracked)["max"], json!([]));
    }
}
