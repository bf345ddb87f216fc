//! Which node a job that fits on one node goes to, when several could take it.
//!
//! Every placement rule is a sort key over the candidate nodes: the node with the
//! smallest [`PlacementKey`] wins. The same key orders the scheduler's index of free
//! nodes, the availability profile's choice at a planned start, and node selection, so
//! "start now", backfill plans and the simulator always agree on the node.
//!
//! Jobs spanning nodes are not affected (save under [`Placement::LeastLoaded`], which
//! spreads them over the roomiest nodes): they take the best-fitting runs of
//! consecutive free nodes (see [`crate::select::choose_by_runs`]).

use crate::ids::NodeId;
use crate::tres::{GresSlot, Resources};

/// The rule for choosing among nodes that could each host a whole one-node job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Placement {
    /// GPU-aware best fit (the default): the node with the fewest free GPUs, then the
    /// fewest free processors, then lower `Weight`, then lower id. A GPU job goes where
    /// its GPUs leave the smallest remainder, keeping whole GPU nodes for wide GPU jobs;
    /// a CPU-only job goes to nodes without free GPUs first, leaving GPU nodes' cores to
    /// GPU jobs. Without GPUs it is [`Placement::CpuBestFit`].
    ///
    /// Deviation from Slurm, whose `select/cons_tres` ranks nodes by weight and
    /// processors only; the fragmentation argument is that of Weng et al., "Beware of
    /// Fragmentation" (USENIX ATC 2023).
    #[default]
    BestFit,
    /// Best fit on processors only: fewest free processors, then lower `Weight`, then
    /// lower id. GPUs play no part in the choice.
    CpuBestFit,
    /// First fit: lower `Weight`, then lower id, whatever is free there (the order of
    /// Slurm's node list).
    FirstFit,
    /// Least loaded: the most free processors first, then lower `Weight`, then lower id
    /// (Slurm's `SelectTypeParameters=CR_LLN`): spreads work out.
    LeastLoaded,
}

impl Placement {
    /// All rules, in the order the simulator's comparison reports them.
    pub const ALL: [Placement; 4] = [
        Placement::BestFit,
        Placement::CpuBestFit,
        Placement::FirstFit,
        Placement::LeastLoaded,
    ];

    /// The rule's name on the command line: `best-fit`, `cpu-best-fit`, `first-fit`,
    /// `least-loaded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::BestFit => "best-fit",
            Placement::CpuBestFit => "cpu-best-fit",
            Placement::FirstFit => "first-fit",
            Placement::LeastLoaded => "least-loaded",
        }
    }

    /// The rule named `name` (as [`Placement::as_str`] writes it).
    ///
    /// Errors: the list of valid names, for a message.
    pub fn parse(name: &str) -> Result<Placement, String> {
        Placement::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Placement::ALL.iter().map(|p| p.as_str()).collect();
                format!(
                    "unknown placement '{name}' (expected one of {})",
                    names.join(", ")
                )
            })
    }

    /// The sort key of a node with `free` resources (and `weight`) under this rule; the
    /// smallest key is chosen. `gpu` is the cluster's untyped `gpu` slot, if any.
    ///
    /// Shape: `(level, processors key, weight, node)`. Under [`Placement::BestFit`] the
    /// level is the free GPU count and the processors key the free processors, so a
    /// search may skip whole levels with too few GPUs and, inside a level, nodes with
    /// too few processors (see [`Placement::ranges_by_free`]).
    pub fn key(
        self,
        free: &Resources,
        gpu: Option<GresSlot>,
        weight: u32,
        node: NodeId,
    ) -> PlacementKey {
        match self {
            Placement::BestFit => (gpu.map_or(0, |g| free.gres[g]), free.cpus, weight, node),
            Placement::CpuBestFit => (0, free.cpus, weight, node),
            Placement::FirstFit => (0, 0, weight, node),
            Placement::LeastLoaded => (0, u32::MAX - free.cpus, weight, node),
        }
    }

    /// True when the key's level is the free GPU count and its processors key the free
    /// processors, so that nodes below a job's needs can be skipped by range.
    pub fn ranges_by_free(self) -> bool {
        matches!(self, Placement::BestFit | Placement::CpuBestFit)
    }
}

/// A node's rank under a [`Placement`]: `(level, processors key, weight, node)`.
pub type PlacementKey = (u32, u32, u32, NodeId);

#[cfg(test)]
mod tests {
    use super::*;

    fn free(cpus: u32, gpus: u32) -> Resources {
        let mut r = Resources::cpus(cpus);
        r.gres[0] = gpus;
        r
    }

    /// Three nodes that could each take a 1-GPU, 4-CPU job: A has 8 CPUs and 1 GPU free,
    /// B 4 CPUs and 4 GPUs, C 32 CPUs and no GPU (a CPU job's view).
    #[test]
    fn each_rule_picks_its_node() {
        let nodes = [
            (NodeId(0), free(8, 1), 1),
            (NodeId(1), free(4, 4), 1),
            (NodeId(2), free(32, 0), 1),
        ];
        let pick = |p: Placement| {
            nodes
                .iter()
                .min_by_key(|(n, f, w)| p.key(f, Some(0), *w, *n))
                .unwrap()
                .0
        };
        assert_eq!(pick(Placement::BestFit), NodeId(2), "fewest free GPUs");
        assert_eq!(pick(Placement::CpuBestFit), NodeId(1), "fewest free CPUs");
        assert_eq!(pick(Placement::FirstFit), NodeId(0), "lowest id");
        assert_eq!(pick(Placement::LeastLoaded), NodeId(2), "most free CPUs");
    }

    #[test]
    fn names_round_trip_and_bad_names_list_the_valid_ones() {
        for p in Placement::ALL {
            assert_eq!(Placement::parse(p.as_str()), Ok(p));
        }
        assert_eq!(
            Placement::parse("random"),
            Err(
                "unknown placement 'random' (expected one of best-fit, cpu-best-fit, \
                 first-fit, least-loaded)"
                    .to_string()
            )
        );
    }
}
