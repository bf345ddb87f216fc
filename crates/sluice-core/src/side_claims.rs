//! The GPU book's side claims kept on the profile, the backfill plan and the free-node
//! index (see [`crate::gpus`] for what they are and why), and the GPU choice at a start.
//!
//! A side claim lasts from the moment its GPU is taken until the last of the GPU's jobs'
//! claims ends; [`sync`] moves it whenever that changes (a job takes or gives back the
//! GPU, a holder's claim is stretched or cut). Its hooks in `scheduler.rs` are one line
//! each (start, end, restore, expiry, time limits, overruns); [`place`] is called
//! wherever a job is about to start.

use crate::gpus::Choice;
use crate::ids::{JobId, NodeId};
use crate::job::NodeAlloc;
use crate::policy::conservative;
use crate::profile::Profile;
use crate::scheduler::Scheduler;
use crate::time::{round_up, Time};
use crate::tres::Resources;

/// Brings the side claim of GPU `gpu` of `node` in line with the book at `now`: taken
/// when the GPU is first used, stretched or cut to its jobs' latest claim end, given
/// back when nobody uses it. With `withdraw`, a stretched claim first withdraws the
/// conservative reservations it could collide with (as a stretched job claim does);
/// without, the caller has checked that it fits.
pub(crate) fn sync(s: &mut Scheduler, node: NodeId, gpu: u32, now: Time, withdraw: bool) {
    let want = s.gpus.side(node, gpu).map(|(usage, jobs)| {
        let until = jobs
            .iter()
            .filter_map(|j| s.claim_end.get(j).copied())
            .max()
            .unwrap_or(now);
        (usage, until)
    });
    let have = s.gpus.held.get(&(node, gpu)).copied();
    if want == have {
        return;
    }
    let one = |usage: Resources| vec![NodeAlloc::new(node, 0, usage)];
    match (have, want) {
        (Some((old_usage, old)), Some((usage, new))) if old_usage == usage => {
            if new > old {
                if withdraw {
                    conservative::withdraw_conflicting(s, &one(usage), old, new);
                }
                s.profile.claim(node, old.max(now), new, &usage);
            } else {
                s.profile.release(node, new.max(now), old, &usage);
            }
            s.backfill
                .move_side(node, &usage, Some(old), Some(new), now);
        }
        (have, want) => {
            if let Some((usage, old)) = have {
                s.profile.release(node, now, old, &usage);
                s.backfill.move_side(node, &usage, Some(old), None, now);
                s.free_now.give_back(&s.cluster, &one(usage));
            }
            if let Some((usage, new)) = want {
                if withdraw {
                    conservative::withdraw_conflicting(s, &one(usage), now, new);
                }
                s.profile.claim(node, now, new, &usage);
                s.backfill.move_side(node, &usage, None, Some(new), now);
                s.free_now.take(&s.cluster, &one(usage));
            }
        }
    }
    match want {
        Some(w) => s.gpus.held.insert((node, gpu), w),
        None => s.gpus.held.remove(&(node, gpu)),
    };
}

/// [`sync`] for every GPU `nodes` touch.
pub(crate) fn sync_all(s: &mut Scheduler, nodes: &[NodeAlloc], now: Time, withdraw: bool) {
    for a in nodes {
        for g in a.gpus_touched() {
            sync(s, a.node, g, now, withdraw);
        }
    }
}

/// Job `id` (starting or restored) holds the GPUs `nodes` name: into the book, and
/// its side claims taken. Its own claim end must be known already.
pub(crate) fn take(s: &mut Scheduler, id: JobId, nodes: &[NodeAlloc], now: Time) {
    let exclusive = s.jobs[&id].spec.request.exclusive;
    for a in nodes {
        s.gpus.take(id, a, exclusive);
    }
    sync_all(s, nodes, now, false);
}

/// Job `id` no longer holds the GPUs `nodes` name (it ended, or its claim expired):
/// out of the book, and side claims nobody needs any more given back.
pub(crate) fn give_back(s: &mut Scheduler, id: JobId, nodes: &[NodeAlloc], now: Time) {
    for a in nodes {
        s.gpus.release(id, a);
    }
    sync_all(s, nodes, now, false);
}

/// Chooses the GPUs `id` gets on `nodes` (its allocation, as node selection made it)
/// if it starts at `now`: for each node the first of the book's choices whose side
/// claims fit, with the job's own usage, in the profile — and in `plan`, the backfill
/// plan of a pass under way — until its claim ends. `claimed`: its own usage is on the
/// profile already (a reservation coming due). `None` when some node has no such
/// choice (the job cannot start there now).
pub(crate) fn place(
    s: &Scheduler,
    id: JobId,
    mut nodes: Vec<NodeAlloc>,
    now: Time,
    plan: Option<(&Profile, Time)>,
    claimed: bool,
) -> Option<Vec<NodeAlloc>> {
    let job = &s.jobs[&id];
    let exclusive = job.spec.request.exclusive;
    let end = now + job.spec.time_limit;
    for a in &mut nodes {
        if !s.gpus.involved(a.node, &a.usage, exclusive) {
            continue;
        }
        let own = if claimed {
            Resources::default()
        } else {
            a.usage
        };
        let chosen = s
            .gpus
            .choices(a.node, &a.usage, exclusive, end)
            .into_iter()
            .find(|c| {
                let sides = sides_of(s, a.node, c, exclusive, end, now);
                fits(&s.profile, a.node, &own, &sides, now, end, None)
                    && plan
                        .is_none_or(|(p, res)| fits(p, a.node, &own, &sides, now, end, Some(res)))
            })?;
        a.gpus = chosen.gpus;
        a.shards = chosen.shards;
    }
    Some(nodes)
}

/// The side claims `choice` adds on `node` for a job claiming until `end`: (what, from
/// when), each lasting until `end` — a GPU it is first to use from `now`, a shared GPU
/// whose claim ends earlier from that end.
fn sides_of(
    s: &Scheduler,
    node: NodeId,
    choice: &Choice,
    exclusive: bool,
    end: Time,
    now: Time,
) -> Vec<(Resources, Time)> {
    let mut touched: Vec<u32> = choice.gpus.clone();
    touched.extend(choice.shards.iter().map(|&(g, _)| g));
    touched.sort_unstable();
    touched.dedup();
    let mut out = Vec::new();
    for g in touched {
        match s.gpus.held.get(&(node, g)) {
            Some(&(usage, until)) if until < end => out.push((usage, until.max(now))),
            Some(_) => {}
            None => {
                if let Some(usage) = s.gpus.side_if_taken(node, g, choice, exclusive) {
                    out.push((usage, now));
                }
            }
        }
    }
    out.sort_by_key(|&(_, from)| from);
    out
}

/// Whether `own` over `[now, end)` and `sides` (each from its time until `end`) fit
/// together on `node` of `profile`; with `Some(resolution)`, a backfill plan, whose
/// claims end at the next multiple of it.
fn fits(
    profile: &Profile,
    node: NodeId,
    own: &Resources,
    sides: &[(Resources, Time)],
    now: Time,
    end: Time,
    resolution: Option<Time>,
) -> bool {
    let round = |t: Time| resolution.map_or(t, |r| round_up(t, r));
    let end = round(end);
    let mut total = *own;
    for (usage, from) in sides {
        total = total.plus(usage);
        let from = if *from > now { round(*from) } else { now };
        if from < end && !total.fits_in(&profile.free_during(node, from, end)) {
            return false;
        }
    }
    true
}
