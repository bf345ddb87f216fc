//! The nodes page: each node's state, CPUs and memory in use, and a map of its GPUs —
//! who holds each one, which are idle, which cannot be used (the node is drained or
//! down), and which idle ones are stranded: too few on their node for any GPU job that
//! waits.

use std::collections::BTreeMap;

use sluice_proto::types::{JobRecord, JobState, NodeInfo};

use super::page::esc;
use super::queue::display_id;

/// GPUs configured in a node's `Gres=` (`gpu:a100:4`, `gpu:2(S:0-1)`, `gpu:1,shard:8`).
pub fn gpu_total(gres: &str) -> u32 {
    gres.split(',')
        .filter_map(|g| {
            let g = g.split('(').next().unwrap_or(g);
            (g.split(':').next()? == "gpu").then_some(())?;
            g.rsplit(':').next()?.parse::<u32>().ok()
        })
        .sum()
}

/// GPUs per node a waiting job asks for (`--gres=gpu:N`, `--gpus-per-node`, or
/// `--gpus` spread over its nodes); 0: none.
pub fn gpus_per_node_asked(r: &JobRecord) -> u32 {
    if let Some(g) = r.desc.gres.iter().find(|g| g.name == "gpu") {
        return g.count;
    }
    if let Some((_, n)) = r.desc.gpus_per_node {
        return n;
    }
    if let Some((_, n)) = r.desc.gpus {
        let nodes = r.desc.nodes.map_or(1, |(min, _)| min.max(1));
        return n.div_ceil(nodes);
    }
    0
}

/// What one GPU is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gpu {
    /// Free.
    Idle,
    /// Free, but its node has too few free GPUs for any waiting GPU job.
    Stranded,
    /// Held whole by a job: (job id as shown, user).
    Held(String, String),
    /// Shared (`shard`) by jobs: their ids as shown.
    Shared(Vec<String>),
    /// Its node is drained, down or without its agent.
    Unavailable,
}

/// Each node's GPUs, by node name, from the running jobs' allocations.
pub fn gpu_map(nodes: &[NodeInfo], jobs: &[JobRecord]) -> BTreeMap<String, Vec<Gpu>> {
    let mut map: BTreeMap<String, Vec<Gpu>> = BTreeMap::new();
    for n in nodes {
        let total = gpu_total(&n.gres) as usize;
        let unusable = !n.agent_up || n.state.starts_with("down") || n.state.starts_with("drain");
        let fill = if unusable {
            Gpu::Unavailable
        } else {
            Gpu::Idle
        };
        map.insert(n.name.clone(), vec![fill; total]);
    }
    for r in jobs.iter().filter(|r| r.state == JobState::Running) {
        for (i, node) in r.nodes.iter().enumerate() {
            let Some(gpus) = map.get_mut(node) else {
                continue;
            };
            for &g in r.gpus_per_node.get(i).into_iter().flatten() {
                if let Some(slot) = gpus.get_mut(g as usize) {
                    *slot = Gpu::Held(display_id(r), r.user.clone());
                }
            }
            for &(g, _) in r.shards_per_node.get(i).into_iter().flatten() {
                if let Some(slot) = gpus.get_mut(g as usize) {
                    match slot {
                        Gpu::Shared(ids) => ids.push(display_id(r)),
                        _ => *slot = Gpu::Shared(vec![display_id(r)]),
                    }
                }
            }
        }
    }
    // The fewest GPUs per node any waiting GPU job needs: idle GPUs on a node with
    // fewer free than that can start none of them.
    let smallest = jobs
        .iter()
        .filter(|r| r.state == JobState::Pending)
        .map(gpus_per_node_asked)
        .filter(|&n| n > 0)
        .min();
    if let Some(need) = smallest {
        for gpus in map.values_mut() {
            let idle = gpus.iter().filter(|g| **g == Gpu::Idle).count() as u32;
            if idle > 0 && idle < need {
                for g in gpus.iter_mut().filter(|g| **g == Gpu::Idle) {
                    *g = Gpu::Stranded;
                }
            }
        }
    }
    map
}

fn cell(index: usize, g: &Gpu) -> String {
    let (class, label, title) = match g {
        Gpu::Idle => ("idle", String::new(), "idle".to_string()),
        Gpu::Stranded => (
            "fragment",
            String::new(),
            "idle, but too few free on this node for any waiting GPU job".to_string(),
        ),
        Gpu::Held(job, user) => ("held", job.clone(), format!("job {job} of {user}")),
        Gpu::Shared(jobs) => (
            "shared",
            "S".into(),
            format!("shared by jobs {}", jobs.join(", ")),
        ),
        Gpu::Unavailable => (
            "unavailable",
            String::new(),
            "node not available".to_string(),
        ),
    };
    format!(
        "<div class=\"gpu gpu-{class}\" data-gpu=\"{index}\" data-state=\"{class}\" title=\"GPU {index}: {}\">{}</div>",
        esc(&title),
        esc(&label)
    )
}

/// The page's body.
pub fn render(nodes: &[NodeInfo], jobs: &[JobRecord]) -> String {
    let map = gpu_map(nodes, jobs);
    let all: Vec<&Gpu> = map.values().flatten().collect();
    let count = |f: fn(&Gpu) -> bool| all.iter().filter(|g| f(g)).count();
    let mut out = String::new();
    if !all.is_empty() {
        out.push_str(&format!(
            "<p id=\"gpu-counts\"><span id=\"gpus-total\">{}</span> GPUs: <span id=\"gpus-held\">{}</span> held, <span id=\"gpus-idle\">{}</span> idle (<span id=\"gpus-stranded\">{}</span> of them stranded), <span id=\"gpus-unavailable\">{}</span> unavailable</p>\n",
            all.len(),
            count(|g| matches!(g, Gpu::Held(..) | Gpu::Shared(_))),
            count(|g| matches!(g, Gpu::Idle | Gpu::Stranded)),
            count(|g| *g == Gpu::Stranded),
            count(|g| *g == Gpu::Unavailable),
        ));
        out.push_str("<p class=\"legend\"><span><span class=\"gpu gpu-held\"></span> held by a job</span><span><span class=\"gpu gpu-shared\"></span> shared</span><span><span class=\"gpu gpu-idle\"></span> idle</span><span><span class=\"gpu gpu-fragment\"></span> idle but stranded</span><span><span class=\"gpu gpu-unavailable\"></span> unavailable</span></p>\n");
    }
    out.push_str("<table id=\"nodes\"><thead><tr><th>Node</th><th>State</th><th>Partitions</th><th>CPUs in use</th><th>Memory in use (MiB)</th><th>GPUs</th><th>Reason</th></tr></thead><tbody>\n");
    for n in nodes {
        let gpus: String = map
            .get(&n.name)
            .map(|g| g.iter().enumerate().map(|(i, g)| cell(i, g)).collect())
            .unwrap_or_default();
        let state = if n.agent_up {
            n.state.clone()
        } else {
            format!("{}*", n.state)
        };
        out.push_str(&format!(
            "<tr data-node=\"{0}\"><td>{0}</td><td class=\"node-state\">{1}</td><td>{2}</td><td class=\"num\">{3}/{4}</td><td class=\"num\">{5}/{6}</td><td><div class=\"gpus\">{gpus}</div></td><td>{7}</td></tr>\n",
            esc(&n.name),
            esc(&state),
            esc(&n.partitions.join(",")),
            n.cpus_alloc,
            n.cpus,
            n.memory_alloc,
            n.memory,
            esc(n.reason.as_deref().unwrap_or("")),
        ));
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::GresRequest;

    fn node(name: &str, gres: &str, state: &str) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            gres: gres.into(),
            state: state.into(),
            agent_up: true,
            cpus: 32,
            ..Default::default()
        }
    }

    #[test]
    fn gpus_are_counted_from_the_gres_string() {
        assert_eq!(gpu_total("gpu:a100:4"), 4);
        assert_eq!(gpu_total("gpu:2(S:0-1)"), 2);
        assert_eq!(gpu_total("gpu:1,shard:8"), 1);
        assert_eq!(gpu_total(""), 0);
        assert_eq!(gpu_total("mps:100"), 0);
    }

    #[test]
    fn the_map_says_who_holds_each_gpu_and_which_idle_ones_are_stranded() {
        // Two 4-GPU nodes and a drained one. alice holds GPUs 0 and 2 of g1 and three
        // of g2; bob waits for 2 GPUs per node: g2's last free GPU can serve nobody.
        let nodes = [
            node("g1", "gpu:a100:4", "mixed"),
            node("g2", "gpu:a100:4", "mixed"),
            node("g3", "gpu:a100:2", "drained"),
        ];
        let alice = JobRecord {
            id: 7,
            user: "alice".into(),
            state: JobState::Running,
            nodes: vec!["g1".into(), "g2".into()],
            gpus_per_node: vec![vec![0, 2], vec![0, 1, 2]],
            ..Default::default()
        };
        let mut bob = JobRecord {
            id: 8,
            user: "bob".into(),
            state: JobState::Pending,
            ..Default::default()
        };
        bob.desc.gres = vec![GresRequest {
            name: "gpu".into(),
            gres_type: None,
            count: 2,
        }];
        let map = gpu_map(&nodes, &[alice.clone(), bob.clone()]);
        let held = |j: &str| Gpu::Held(j.into(), "alice".into());
        assert_eq!(map["g1"], [held("7"), Gpu::Idle, held("7"), Gpu::Idle]);
        assert_eq!(map["g2"], [held("7"), held("7"), held("7"), Gpu::Stranded]);
        assert_eq!(map["g3"], [Gpu::Unavailable, Gpu::Unavailable]);
        let html = render(&nodes, &[alice, bob]);
        assert!(html.contains("<span id=\"gpus-total\">10</span> GPUs: <span id=\"gpus-held\">5</span> held, <span id=\"gpus-idle\">3</span> idle (<span id=\"gpus-stranded\">1</span> of them stranded), <span id=\"gpus-unavailable\">2</span> unavailable"));
        assert!(html.contains("title=\"GPU 2: job 7 of alice\">7</div>"));
    }

    #[test]
    fn without_a_waiting_gpu_job_no_gpu_is_stranded() {
        let nodes = [node("g1", "gpu:2", "idle")];
        assert_eq!(gpu_map(&nodes, &[])["g1"], [Gpu::Idle, Gpu::Idle]);
    }
}
