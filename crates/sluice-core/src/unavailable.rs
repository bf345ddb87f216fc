//! Slurm's reason for a job that its partition's usable nodes could not hold even if
//! they were idle: `Nodes required for job are DOWN, DRAINED or reserved for jobs in
//! higher priority partitions` ([`PendingReason::NodesUnavailable`]).
//!
//! Usable nodes are those that are up (or awaited after a restart, see
//! [`Scheduler::await_node`]) and not kept earlier in the same main pass for a job
//! that could not start (see [`crate::kept`]): a later job of another partition whose
//! nodes are all among them, or down, or drained, gets this reason rather than
//! `Resources`. (Observed on Slurm 22.05: with `-N 2 --exclusive` running on `n[1-2]`,
//! a waiting `-n 4` job of `debug` (`n[1-2]`) is `Resources` and a `-n 4` job of `short`
//! (`n1`) this reason; a `-N 2` job with one of the two nodes drained too.) Jobs that
//! list their nodes (`-w`) keep `Resources` here; [`crate::kept::fit_now`] says first
//! which of their nodes are down, drained or kept.
//!
//! The check looks at the partition's nodes one by one, so it is remembered per
//! partition (job, node states, kept nodes) and a queue that waits in the same way pass
//! after pass pays for it once.

use crate::ids::JobId;
use crate::job::PendingReason;
use crate::kept::Kept;
use crate::scheduler::Scheduler;
use crate::select::{choose_nodes_in, Candidate};
use crate::time::MAX_TIME;

/// The last answer for each partition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memo {
    last: Vec<Option<Answer>>,
}

#[derive(Clone, Debug)]
struct Answer {
    job: JobId,
    node_epoch: u64,
    kept: u64,
    fits: bool,
}

/// Why `id`, which cannot start now, waits: [`PendingReason::Resources`] when its
/// partition's nodes that are up and not `kept` could hold it if idle, else
/// [`PendingReason::NodesUnavailable`].
pub(crate) fn reason(s: &mut Scheduler, id: JobId, kept: &mut Kept) -> PendingReason {
    let job = &s.jobs[&id];
    let part = job.spec.partition;
    let awaited = s
        .cluster
        .partition(part)
        .nodes
        .iter()
        .filter(|n| s.awaited.contains(n))
        .count();
    let all_up =
        s.free_now.up_nodes(part) as usize + awaited == s.cluster.partition(part).nodes.len();
    // Every node usable: the submission check already found room among them.
    if job.spec.request.lists_nodes() || (all_up && !kept.touches(s, part)) {
        return PendingReason::Resources;
    }
    let slot = part.index();
    if s.unavailable.last.len() <= slot {
        s.unavailable.last.resize(slot + 1, None);
    }
    let known = s.unavailable.last[slot]
        .as_ref()
        .filter(|a| a.job == id && a.node_epoch == s.node_epoch && a.kept == kept.fingerprint());
    let fits = match known {
        Some(a) => a.fits,
        None => {
            let fits = fits_usable(s, id, kept);
            s.unavailable.last[slot] = Some(Answer {
                job: id,
                node_epoch: s.node_epoch,
                kept: kept.fingerprint(),
                fits,
            });
            fits
        }
    };
    if fits {
        PendingReason::Resources
    } else {
        PendingReason::NodesUnavailable
    }
}

/// Whether some set of the usable nodes of `id`'s partition could hold it, all idle.
fn fits_usable(s: &Scheduler, id: JobId, kept: &Kept) -> bool {
    let req = &s.jobs[&id].spec.request;
    let part = s.jobs[&id].spec.partition;
    let candidates: Vec<Candidate> = s
        .cluster
        .partition(part)
        .nodes
        .iter()
        .map(|&n| (n, s.cluster.node(n)))
        .filter(|(n, node)| {
            crate::kept::usable(s, *n)
                && (req.features_any == 0 || node.features & req.features_any != 0)
                && req.exclude.binary_search(n).is_err()
                && !kept.holds(*n)
        })
        .map(|(n, _)| s.idle_candidate(req, n))
        .collect();
    choose_nodes_in(
        req,
        &candidates,
        MAX_TIME,
        s.cluster.blocks.as_ref(),
        s.cluster.placement,
    )
    .is_some()
}
