//! Shards (`gres/shard`): a GPU shared by several jobs, each holding some of its
//! shards, and kept from whole-GPU jobs while it is shared.
//!
//! The controller knows which GPU each job's shards come from: on a node, a job takes
//! all its shards from one GPU when one has room (Slurm's default, without
//! `SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ`), preferring a GPU already shared
//! (Slurm's default too: busy sharing devices first, keeping whole GPUs free), each in
//! index order. Unlike Slurm, which then keeps the job waiting, a job no single GPU has
//! room for takes its shards from several (shared GPUs first), since the core counts
//! shards per node, not per GPU.
//!
//! **The rule that keeps the core's counts true.** The core counts a node's `gpu` and
//! `shard` units separately; a GPU used whole still has its shards, a shared GPU is
//! still one free `gpu`. So the controller holds, in the core, one claim per GPU in the
//! other use, as a running job of its own (an id from [`CLAIM_BASE`] on, never a real
//! job's, ended by the controller):
//! - a GPU used whole by a job claims that GPU's shards, until the job ends;
//! - a GPU with shards in use claims that GPU (its `gpu` unit, and its `gpu:TYPE` one),
//!   until its last shard job ends.
//!
//! With those claims, a node's free `gpu` count is exactly its GPUs nobody uses, and its
//! free `shard` count exactly the free shards of its GPUs not used whole: whatever the
//! core starts finds its devices. Within one pass the claims of the jobs it starts are
//! not made yet, so the controller places whole-GPU jobs first (on GPUs nobody uses,
//! which the core's `gpu` count guarantees) and shard jobs last; should a whole-GPU
//! job's claim not fit because shard jobs of the same pass took those shards in the
//! core's count, those shard jobs go back to the queue (nothing of them started) and
//! another pass runs at once.
//!
//! A job asking for whole GPUs and shards together is refused, as Slurm refuses GPUs
//! with a sharing GRES (`Invalid generic resource (gres) specification`). An exclusive
//! job holds its nodes whole, their GPUs and shards with them: it needs no claims.

use super::*;

use sluice_conf::gres_conf;
use sluice_core::tres::GresSlot;
use sluice_core::{Allocation, Resources};

/// First core job id of the claims the controller holds for GPUs; the claim of GPU `g`
/// of node `n` is `CLAIM_BASE + n * 2^20 + g`. Real job ids stay far below.
pub(super) const CLAIM_BASE: u64 = 1 << 62;

/// Slurm's message for a GRES request it cannot make sense of.
const BAD_GRES: &str = "Invalid generic resource (gres) specification";

/// At most this many passes in one [`Controller::schedule`] call: a pass again only
/// when shard jobs went back to the queue (see the module's documentation).
pub(super) const MAX_PASSES: usize = 4;

/// What the controller knows of the nodes' shards: how many each GPU has, who holds
/// them, and the claims it holds in the core.
#[derive(Clone, Debug, Default)]
pub(super) struct ShardBook {
    /// The `shard` slot of the cluster's GRES table; `None`: no shards anywhere.
    slot: Option<GresSlot>,
    /// Per node, per GPU index: its shards ([`gres_conf::shards_per_gpu`]).
    per_gpu: Vec<Vec<u32>>,
    /// Per node, per GPU index: the `gpu:TYPE` slot of its type, if it has one.
    gpu_types: Vec<Vec<Option<GresSlot>>>,
    /// Per (node, GPU): the jobs holding shards of it, with their count and their
    /// expected end (Unix seconds).
    holders: BTreeMap<(usize, u32), BTreeMap<u64, (u32, i64)>>,
    /// Per (node, GPU) with shards used whole: the job using it, and its expected end.
    whole: BTreeMap<(usize, u32), (u64, i64)>,
    /// Claims held in the core, per (node, GPU): their start and end (Unix seconds).
    claims: BTreeMap<(usize, u32), (i64, i64)>,
}

impl ShardBook {
    /// The shards of `conf`'s nodes, none held yet.
    pub(super) fn new(conf: &ClusterConfig) -> Self {
        let table = &conf.cluster.gres;
        let slot = table.find("shard", None);
        let n = conf.cluster.nodes.len();
        let mut per_gpu = vec![Vec::new(); n];
        let mut gpu_types = vec![Vec::new(); n];
        if slot.is_some() {
            for (i, devices) in conf.gres_devices.iter().enumerate().take(n) {
                per_gpu[i] = gres_conf::shards_per_gpu(devices)
                    .into_iter()
                    .map(|s| u32::try_from(s).unwrap_or(u32::MAX))
                    .collect();
                gpu_types[i] = gres_conf::gpu_units(devices)
                    .iter()
                    .map(|d| {
                        d.gres_type
                            .as_deref()
                            .and_then(|t| table.find("gpu", Some(t)))
                    })
                    .collect();
            }
        }
        ShardBook {
            slot,
            per_gpu,
            gpu_types,
            ..Default::default()
        }
    }

    /// Whether some GPU has shards (else the controller's passes run as without them).
    fn active(&self) -> bool {
        self.slot.is_some() && self.per_gpu.iter().flatten().any(|&s| s > 0)
    }

    /// Shards of GPU `gpu` of node `node` (0 for a GPU without).
    fn of(&self, node: usize, gpu: u32) -> u32 {
        self.per_gpu
            .get(node)
            .and_then(|g| g.get(gpu as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Shards of GPU `gpu` of node `node` in use.
    fn used(&self, node: usize, gpu: u32) -> u32 {
        self.holders
            .get(&(node, gpu))
            .map_or(0, |h| h.values().map(|(n, _)| n).sum())
    }
}

/// The core job id of the claim on GPU `gpu` of node `node`.
fn claim_id(node: usize, gpu: u32) -> JobId {
    JobId(CLAIM_BASE + ((node as u64) << 20) + u64::from(gpu))
}

/// Where a job started by a decision takes shards (`true`) or whole GPUs (`false`)
/// on some node; `None` for neither.
fn takes(d: &Decision, shard: GresSlot, gpu: Option<GresSlot>) -> Option<bool> {
    let Decision::Start { alloc, .. } = d else {
        return None;
    };
    if alloc.nodes.iter().any(|a| a.usage.gres[shard] > 0) {
        Some(true)
    } else if gpu.is_some_and(|g| alloc.nodes.iter().any(|a| a.usage.gres[g] > 0)) {
        Some(false)
    } else {
        None
    }
}

impl Controller {
    /// Refuses a request for whole GPUs and shards together (Slurm's message).
    pub(super) fn check_shard_request(&self, req: &JobRequest) -> Result<(), String> {
        let asks = |slot: Option<GresSlot>| slot.is_some_and(|s| req.gres_per_node[s] > 0);
        if asks(self.shards.slot) && asks(self.gpu_slot) {
            return Err(BAD_GRES.into());
        }
        Ok(())
    }

    /// Starts the jobs a core pass decided to start, whole-GPU jobs first and shard jobs
    /// last when the cluster has shards. Returns the effects, and whether some shard
    /// jobs went back to the queue (then another pass should run).
    pub(super) fn start_decisions(
        &mut self,
        mut decisions: Vec<Decision>,
        now: i64,
    ) -> (Vec<Effect>, bool) {
        let mut effects = Vec::new();
        let shard = match self.shards.slot {
            Some(s) if self.shards.active() => s,
            _ => {
                for d in decisions {
                    let Decision::Start {
                        job,
                        at,
                        alloc,
                        pass,
                    } = d
                    else {
                        continue; // preemptions are carried out before (state/preempt.rs)
                    };
                    effects.extend(self.started(job.0, at, &alloc.nodes, pass.as_str()));
                }
                return (effects, false);
            }
        };
        let gpu = self.gpu_slot;
        decisions.sort_by_key(|d| match takes(d, shard, gpu) {
            Some(false) => 0,
            None => 1,
            Some(true) => 2,
        });
        let mut back: BTreeSet<u64> = BTreeSet::new();
        for i in 0..decisions.len() {
            let Decision::Start {
                job,
                at,
                alloc,
                pass,
            } = &decisions[i]
            else {
                continue; // preemptions are carried out before (state/preempt.rs)
            };
            if back.contains(&job.0) {
                continue;
            }
            effects.extend(self.started(job.0, *at, &alloc.nodes, pass.as_str()));
            if takes(&decisions[i], shard, gpu) == Some(false) {
                let later: Vec<(u64, &Allocation)> = decisions[i + 1..]
                    .iter()
                    .filter(|d| takes(d, shard, gpu) == Some(true))
                    .filter_map(|d| match d {
                        Decision::Start { job, alloc, .. } => Some((job.0, alloc)),
                        Decision::Preempt { .. } => None,
                    })
                    .filter(|(id, _)| !back.contains(id))
                    .collect();
                let sent = self.claim_whole_gpus(job.0, &later, now);
                back.extend(sent);
            }
        }
        for &id in &back {
            // Never started (the core let them go already): back to the queue through
            // the usual door.
            self.outside.insert(id);
            self.outside_dirty = true;
        }
        (effects, !back.is_empty())
    }

    /// Claims the shards of the GPUs job `id` (just started) uses whole. Should the
    /// core not have them free, shard jobs of the same pass (`later`, not started yet)
    /// on that node give theirs back, the last first (the core lets them go here);
    /// returns those jobs.
    fn claim_whole_gpus(&mut self, id: u64, later: &[(u64, &Allocation)], now: i64) -> Vec<u64> {
        let mut back = Vec::new();
        let Some(shard) = self.shards.slot else {
            return back;
        };
        let r = &self.jobs[&id];
        if r.desc.exclusive {
            return back;
        }
        let end = expected_end(r);
        let held: Vec<(usize, u32)> = r
            .nodes
            .iter()
            .zip(&r.gpus_per_node)
            .filter_map(|(name, gpus)| self.conf.node_id(name).map(|n| (n.index(), gpus)))
            .flat_map(|(n, gpus)| gpus.iter().map(move |&g| (n, g)))
            .filter(|&(n, g)| self.shards.of(n, g) > 0)
            .collect();
        for (node, gpu) in held {
            self.shards.whole.insert((node, gpu), (id, end));
            let mut usage = Resources::default();
            usage.gres[shard] = self.shards.of(node, gpu);
            let mut candidates: Vec<u64> = later
                .iter()
                .filter(|(j, a)| {
                    !back.contains(j) && a.nodes.iter().any(|x| x.node.index() == node)
                })
                .map(|(j, _)| *j)
                .collect();
            while !self.claim(node, gpu, usage, now, end) {
                let Some(j) = candidates.pop() else { break };
                // Its shards are free in the core's count once it is out of it.
                self.sched.job_ended(JobId(j), now);
                back.push(j);
            }
        }
        back
    }

    /// Takes shards for job `id` starting at `at` on `nodes` (the core's allocation),
    /// claiming the GPUs it is first to share. Returns, per node, (GPU, shards) in GPU
    /// order ([`JobRecord::shards_per_node`]); empty for a job without shards.
    pub(super) fn place_shards(
        &mut self,
        id: u64,
        nodes: &[NodeAlloc],
        at: i64,
    ) -> Vec<Vec<(u32, u32)>> {
        let Some(shard) = self.shards.slot else {
            return Vec::new();
        };
        let r = &self.jobs[&id];
        if r.desc.exclusive || nodes.iter().all(|a| a.usage.gres[shard] == 0) {
            return Vec::new();
        }
        let end = expected_end(r);
        let mut out = Vec::new();
        for a in nodes {
            let node = a.node.index();
            let picked = self.pick_shards(node, a.usage.gres[shard]);
            for &(gpu, n) in &picked {
                let first = !self.shards.holders.contains_key(&(node, gpu));
                self.shards
                    .holders
                    .entry((node, gpu))
                    .or_default()
                    .insert(id, (n, end));
                if first {
                    self.gpus_in_use[node].insert(gpu);
                    let usage = self.gpu_claim(node, gpu);
                    self.claim(node, gpu, usage, at, end);
                } else {
                    self.stretch_claim(node, gpu, at);
                }
            }
            out.push(picked);
        }
        out
    }

    /// Which GPUs of `node` give `want` shards: the first shared GPU with room, else
    /// the first unshared one with room, else (shared GPUs first) as many GPUs as it
    /// takes. GPUs used whole are never taken.
    fn pick_shards(&self, node: usize, want: u32) -> Vec<(u32, u32)> {
        let book = &self.shards;
        let gpus = book.per_gpu.get(node).map_or(0, Vec::len) as u32;
        let shared = |g: u32| book.holders.contains_key(&(node, g));
        let free = |g: u32| book.of(node, g).saturating_sub(book.used(node, g));
        let mut usable: Vec<u32> = (0..gpus)
            .filter(|&g| free(g) > 0 && (shared(g) || !self.gpus_in_use[node].contains(&g)))
            .collect();
        usable.sort_by_key(|&g| (!shared(g), g));
        if let Some(&g) = usable.iter().find(|&&g| free(g) >= want) {
            return vec![(g, want)];
        }
        let mut left = want;
        let mut out = Vec::new();
        for g in usable {
            if left == 0 {
                break;
            }
            let take = free(g).min(left);
            out.push((g, take));
            left -= take;
        }
        out.sort_unstable();
        out
    }

    /// What the claim on a shared GPU holds: its `gpu` unit (and its `gpu:TYPE` one).
    fn gpu_claim(&self, node: usize, gpu: u32) -> Resources {
        let mut usage = Resources::default();
        if let Some(s) = self.gpu_slot {
            usage.gres[s] = 1;
        }
        if let Some(Some(t)) = self
            .shards
            .gpu_types
            .get(node)
            .and_then(|t| t.get(gpu as usize))
        {
            usage.gres[*t] = 1;
        }
        usage
    }

    /// Holds `usage` of node `node` in the core from `start` to `end` for GPU `gpu`;
    /// false when the core does not have it free.
    fn claim(&mut self, node: usize, gpu: u32, usage: Resources, start: i64, end: i64) -> bool {
        let nid = NodeId(node as u32);
        let partition = self
            .conf
            .cluster
            .partitions
            .iter()
            .position(|p| p.nodes.contains(&nid))
            .unwrap_or(0);
        let spec = JobSpec {
            id: claim_id(node, gpu),
            user: u32::MAX,
            partition: PartitionId(u16::try_from(partition).unwrap_or(0)),
            submit: start,
            begin: start,
            request: JobRequest::procs(1).on_one_node(),
            time_limit: (end - start).clamp(1, MAX_TIME_LIMIT),
            priority: 0,
            acct: sluice_core::limits::JobAcct {
                internal: true,
                ..Default::default()
            },
        };
        let alloc = vec![NodeAlloc {
            node: nid,
            tasks: 0,
            usage,
        }];
        let ok = self
            .sched
            .restore_running(spec, start, alloc, start)
            .is_ok();
        if ok {
            self.shards.claims.insert((node, gpu), (start, end));
        }
        ok
    }

    /// Lets the claim on a shared GPU last until its last holder's expected end.
    fn stretch_claim(&mut self, node: usize, gpu: u32, now: i64) {
        let Some(&(start, end)) = self.shards.claims.get(&(node, gpu)) else {
            return;
        };
        let last = self
            .shards
            .holders
            .get(&(node, gpu))
            .and_then(|h| h.values().map(|(_, e)| *e).max())
            .unwrap_or(end);
        if last != end
            && self.sched.set_time_limit(
                claim_id(node, gpu),
                (last - start).clamp(1, MAX_TIME_LIMIT),
                now,
            )
        {
            self.shards.claims.insert((node, gpu), (start, last));
        }
    }

    /// Running job `id`'s time limit changed: its shards and whole GPUs are now held
    /// until `end` (Unix seconds), and the claims that follow them are moved to match,
    /// so that plans for the GPUs see the new end.
    pub(super) fn retime_shards(&mut self, id: u64, end: i64, now: i64) {
        if self.shards.slot.is_none() {
            return;
        }
        let mut shared: Vec<(usize, u32)> = Vec::new();
        for (&key, jobs) in self.shards.holders.iter_mut() {
            if let Some(held) = jobs.get_mut(&id) {
                held.1 = end;
                shared.push(key);
            }
        }
        for (node, gpu) in shared {
            self.stretch_claim(node, gpu, now);
        }
        let whole: Vec<(usize, u32)> = self
            .shards
            .whole
            .iter()
            .filter(|(_, (j, _))| *j == id)
            .map(|(k, _)| *k)
            .collect();
        for (node, gpu) in whole {
            self.shards.whole.insert((node, gpu), (id, end));
            if let Some(&(start, _)) = self.shards.claims.get(&(node, gpu)) {
                if self.sched.set_time_limit(
                    claim_id(node, gpu),
                    (end - start).clamp(1, MAX_TIME_LIMIT),
                    now,
                ) {
                    self.shards.claims.insert((node, gpu), (start, end));
                }
            }
        }
    }

    /// Ends the claim on GPU `gpu` of node `node`, if there is one.
    fn unclaim(&mut self, node: usize, gpu: u32, now: i64) {
        if self.shards.claims.remove(&(node, gpu)).is_some() {
            self.sched.job_ended(claim_id(node, gpu), now);
        }
    }

    /// Job `id` gave its resources back (it ended, or was requeued): its shards are
    /// free again, and so are the claims that were there for it alone.
    pub(super) fn release_shards(&mut self, id: u64, now: i64) {
        if self.shards.slot.is_none() {
            return;
        }
        let r = &self.jobs[&id];
        let mut held: Vec<(usize, u32)> = Vec::new();
        let mut whole: Vec<(usize, u32)> = Vec::new();
        for (i, name) in r.nodes.iter().enumerate() {
            let Some(node) = self.conf.node_id(name).map(|n| n.index()) else {
                continue;
            };
            for &(g, _) in r.shards_per_node.get(i).map_or(&[][..], Vec::as_slice) {
                held.push((node, g));
            }
            for &g in r.gpus_per_node.get(i).map_or(&[][..], Vec::as_slice) {
                if self.shards.whole.get(&(node, g)).map(|w| w.0) == Some(id) {
                    whole.push((node, g));
                }
            }
        }
        for (node, gpu) in whole {
            self.shards.whole.remove(&(node, gpu));
            self.unclaim(node, gpu, now);
        }
        for (node, gpu) in held {
            let Some(h) = self.shards.holders.get_mut(&(node, gpu)) else {
                continue;
            };
            h.remove(&id);
            if h.is_empty() {
                self.shards.holders.remove(&(node, gpu));
                self.gpus_in_use[node].remove(&gpu);
                self.unclaim(node, gpu, now);
            } else {
                self.stretch_claim(node, gpu, now);
            }
        }
    }

    /// After a restart: who holds which shards and GPUs, from the running jobs'
    /// records, and the claims again.
    pub(super) fn restore_shards(&mut self, now: i64) {
        if !self.shards.active() {
            return;
        }
        let running: Vec<u64> = self
            .jobs
            .values()
            .filter(|j| j.state == JobState::Running && !j.desc.exclusive)
            .map(|j| j.id)
            .collect();
        for id in running {
            let r = &self.jobs[&id];
            let end = expected_end(r);
            for (i, name) in r.nodes.iter().enumerate() {
                let Some(node) = self.conf.node_id(name).map(|n| n.index()) else {
                    continue;
                };
                for &(g, n) in r.shards_per_node.get(i).map_or(&[][..], Vec::as_slice) {
                    self.shards
                        .holders
                        .entry((node, g))
                        .or_default()
                        .insert(id, (n, end));
                }
                for &g in r.gpus_per_node.get(i).map_or(&[][..], Vec::as_slice) {
                    if self.shards.of(node, g) > 0 {
                        self.shards.whole.insert((node, g), (id, end));
                    }
                }
            }
        }
        let shared: Vec<((usize, u32), i64)> = self
            .shards
            .holders
            .iter()
            .map(|(k, h)| (*k, h.values().map(|(_, e)| *e).max().unwrap_or(now)))
            .collect();
        for ((node, gpu), end) in shared {
            self.gpus_in_use[node].insert(gpu);
            let usage = self.gpu_claim(node, gpu);
            self.claim(node, gpu, usage, now, end.max(now + 1));
        }
        let whole: Vec<((usize, u32), i64)> =
            self.shards.whole.iter().map(|(k, w)| (*k, w.1)).collect();
        for ((node, gpu), end) in whole {
            if let Some(shard) = self.shards.slot {
                let mut usage = Resources::default();
                usage.gres[shard] = self.shards.of(node, gpu);
                self.claim(node, gpu, usage, now, end.max(now + 1));
            }
        }
    }
}

/// When a running job is expected to end (Unix seconds): its start plus its time
/// limit, as the core plans with it.
fn expected_end(r: &JobRecord) -> i64 {
    let limit = r
        .time_limit
        .unwrap_or(MAX_TIME_LIMIT)
        .clamp(1, MAX_TIME_LIMIT);
    r.start_time.unwrap_or(0).saturating_add(limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_proto::types::GresRequest;

    /// A controller over one node `s1` of `cpus` CPUs with `gres` (`gpu:2,shard:8`).
    fn controller(gres: &str, extra: &str) -> Controller {
        let text = format!(
            "ClusterName=c\nGresTypes=gpu,shard\n\
             NodeName=s1 CPUs=8 RealMemory=8000 Gres={gres} {extra}\n\
             PartitionName=p Nodes=s1 Default=YES MaxTime=1:00:00\n"
        );
        let parsed = sluice_conf::slurm_conf::parse_str(&text, Path::new("slurm.conf")).unwrap();
        let conf = ClusterConfig::from_slurm_conf(&parsed, &[]);
        Controller::new(conf, Path::new("/s"), vec![], vec![], 0)
    }

    fn caller() -> Caller {
        Caller {
            uid: 1000,
            gid: 1000,
            admin: false,
        }
    }

    fn asking(name: &str, count: u32) -> JobDescription {
        JobDescription {
            name: "job".into(),
            time_limit: Some(Some(600)),
            work_dir: "/home/alice".into(),
            script: "#!/bin/sh\ntrue\n".into(),
            gres: vec![GresRequest {
                name: name.into(),
                gres_type: None,
                count,
            }],
            ..Default::default()
        }
    }

    /// Submits (ids from 1 in order, as the store gives them).
    fn submit(c: &mut Controller, d: JobDescription, now: i64) -> Result<u64, String> {
        let p = c
            .prepare(d, &caller(), "alice", "alice", now)
            .map_err(|e| e.message)?;
        let id = c.jobs.keys().next_back().map_or(1, |k| k + 1);
        c.accept(p.records(id), now);
        Ok(id)
    }

    fn end(c: &mut Controller, id: u64, now: i64) -> Vec<Effect> {
        c.job_ended(
            &JobEnded {
                job_id: id,
                run: 0,
                node: "s1".into(),
                state: JobState::Completed,
                exit_code: 0,
                signal: 0,
                end: now,
            },
            now,
        )
    }

    /// State, reason, whole GPUs and shards of job `id`.
    type Seen = (JobState, String, Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>);

    fn seen(c: &Controller, id: u64) -> Seen {
        let r = c.job(id).unwrap();
        (r.state, r.reason, r.gpus_per_node, r.shards_per_node)
    }

    fn running(gpus: Vec<Vec<u32>>, shards: Vec<Vec<(u32, u32)>>) -> Seen {
        (JobState::Running, "None".into(), gpus, shards)
    }

    fn waiting(reason: &str) -> Seen {
        (JobState::Pending, reason.into(), vec![], vec![])
    }

    /// The GPU variables of job `id`'s batch launch among `effects`.
    fn gpu_env(effects: &[Effect], id: u64) -> Vec<(String, String)> {
        effects
            .iter()
            .find_map(|e| match e {
                Effect::Launch { order, .. } if order.job.id == id => Some(
                    order
                        .environment
                        .iter()
                        .filter(|(k, _)| {
                            k.contains("VISIBLE")
                                || k.contains("SHARDS")
                                || k.contains("GPU")
                                || k.starts_with("ZE_")
                        })
                        .cloned()
                        .collect(),
                ),
                _ => None,
            })
            .expect("launched")
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn shard_jobs_share_a_gpu_that_whole_gpu_jobs_then_leave_alone() {
        // Two GPUs of 4 shards each.
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 2), 0).unwrap();
        let b = submit(&mut c, asking("shard", 1), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, a), running(vec![vec![]], vec![vec![(0, 2)]]));
        assert_eq!(seen(&c, b), running(vec![vec![]], vec![vec![(0, 1)]]));
        assert_eq!(
            gpu_env(&effects, a),
            pairs(&[
                ("CUDA_VISIBLE_DEVICES", "0"),
                ("GPU_DEVICE_ORDINAL", "0"),
                ("ROCR_VISIBLE_DEVICES", "0"),
                ("SLURM_SHARDS_ON_NODE", "2"),
                ("ZE_AFFINITY_MASK", "0"),
            ])
        );
        // A whole GPU: the one nobody shares. A second one waits: GPU 0 is shared.
        let w1 = submit(&mut c, asking("gpu", 1), 1).unwrap();
        let w2 = submit(&mut c, asking("gpu", 1), 1).unwrap();
        c.schedule(1);
        assert_eq!(seen(&c, w1), running(vec![vec![1]], vec![]));
        assert_eq!(seen(&c, w2), waiting("Resources"));
        // GPU 0 is free once both shard jobs have ended; then whole jobs hold both
        // GPUs, and a shard job waits for one.
        end(&mut c, a, 2);
        assert_eq!(seen(&c, w2), waiting("Resources"));
        end(&mut c, b, 3);
        assert_eq!(seen(&c, w2), running(vec![vec![0]], vec![]));
        let s = submit(&mut c, asking("shard", 1), 4).unwrap();
        c.schedule(4);
        assert_eq!(seen(&c, s), waiting("Resources"));
        let effects = end(&mut c, w1, 5);
        assert_eq!(seen(&c, s), running(vec![vec![]], vec![vec![(1, 1)]]));
        assert_eq!(
            gpu_env(&effects, s)[0],
            pairs(&[("CUDA_VISIBLE_DEVICES", "1")])[0]
        );
    }

    #[test]
    fn shards_come_from_one_gpu_when_one_has_room_else_from_several() {
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 3), 0).unwrap();
        let b = submit(&mut c, asking("shard", 3), 0).unwrap();
        let d = submit(&mut c, asking("shard", 2), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, a).3, vec![vec![(0, 3)]]);
        assert_eq!(seen(&c, b).3, vec![vec![(1, 3)]]);
        assert_eq!(seen(&c, d).3, vec![vec![(0, 1), (1, 1)]]);
        assert_eq!(
            gpu_env(&effects, d)[0],
            pairs(&[("CUDA_VISIBLE_DEVICES", "0,1")])[0]
        );
        // Both GPUs shared: no whole GPU until one is free of shards.
        let w = submit(&mut c, asking("gpu", 1), 1).unwrap();
        c.schedule(1);
        assert_eq!(seen(&c, w), waiting("Resources"));
        end(&mut c, d, 2);
        end(&mut c, b, 3);
        assert_eq!(seen(&c, w), running(vec![vec![1]], vec![]));
    }

    #[test]
    fn a_pass_starting_whole_and_shard_jobs_together_sends_the_shard_job_back() {
        // One pass decides both in the core's counts (8 shards, 2 GPUs free): whole GPUs
        // first; their shards are no longer free, so the shard job goes back and waits.
        let mut c = controller("gpu:2,shard:8", "");
        let s = submit(&mut c, asking("shard", 4), 0).unwrap();
        let w = submit(&mut c, asking("gpu", 2), 0).unwrap();
        let effects = c.schedule(0);
        assert_eq!(seen(&c, w), running(vec![vec![0, 1]], vec![]));
        assert_eq!(seen(&c, s), waiting("Resources"));
        assert_eq!(
            effects
                .iter()
                .filter(|e| matches!(e, Effect::Launch { .. }))
                .count(),
            1
        );
        // It runs once the whole-GPU job is gone.
        end(&mut c, w, 1);
        assert_eq!(seen(&c, s), running(vec![vec![]], vec![vec![(0, 4)]]));
    }

    #[test]
    fn impossible_shard_requests_are_refused_with_slurms_words() {
        let mut c = controller("gpu:2,shard:8", "");
        let mut both = asking("shard", 1);
        both.gpus = Some((None, 1));
        assert_eq!(submit(&mut c, both, 0), Err(BAD_GRES.to_string()));
        assert_eq!(
            submit(&mut c, asking("shard", 9), 0),
            Err(NODE_CONFIG.to_string())
        );
        assert_eq!(
            submit(&mut c, asking("tpu", 1), 0),
            Err(BAD_GRES.to_string())
        );
    }

    #[test]
    fn a_restarted_controller_knows_who_shares_which_gpu() {
        let mut c = controller("gpu:2,shard:8", "");
        let a = submit(&mut c, asking("shard", 1), 0).unwrap();
        c.schedule(0);
        let records: Vec<JobRecord> = c.jobs.values().cloned().collect();
        let conf = c.conf.clone();
        let mut c = Controller::new(conf, Path::new("/s"), records, vec![], 10);
        c.agent_registered("s1", &[(a, 0)], 10);
        // GPU 0 is shared again: in use, and claimed (its `gpu` unit) in the core.
        assert_eq!(c.gpus_in_use[0], BTreeSet::from([0]));
        assert_eq!(c.shards.claims, BTreeMap::from([((0, 0), (10, 600))]));
        let one = submit(&mut c, asking("gpu", 1), 10).unwrap();
        let two = submit(&mut c, asking("gpu", 2), 10).unwrap();
        let s = submit(&mut c, asking("shard", 4), 10).unwrap();
        c.schedule(10);
        assert_eq!(seen(&c, two), waiting("Resources"));
        assert_eq!(seen(&c, one), running(vec![vec![1]], vec![]));
        // GPU 0 has 3 shards left, GPU 1 is used whole.
        assert_eq!(seen(&c, s).0, JobState::Pending);
    }

    #[test]
    fn gpus_per_socket_count_the_sockets_asked() {
        let mut c = controller("gpu:4", "Sockets=2 CoresPerSocket=4");
        c.conf.topology = vec![(2, 4, 1)];
        let mut d = asking("x", 1);
        d.gres.clear();
        d.gpus_per_socket = Some((None, 1));
        d.sockets_per_node = Some(2);
        let id = submit(&mut c, d.clone(), 0).unwrap();
        c.schedule(0);
        assert_eq!(seen(&c, id).2, vec![vec![0, 1]]);
        d.sockets_per_node = Some(3);
        assert_eq!(submit(&mut c, d.clone(), 0), Err(NODE_CONFIG.to_string()));
        d.sockets_per_node = None;
        assert_eq!(
            submit(&mut c, d, 0),
            Err("--gpus-per-socket option requires --sockets-per-node specification".into())
        );
    }

    #[test]
    fn a_step_binds_its_tasks_to_gpus_as_gpu_bind_says() {
        let mut c = controller("gpu:2", "");
        let mut d = asking("gpu", 2);
        d.ntasks = Some(2);
        let id = submit(&mut c, d, 0).unwrap();
        c.schedule(0);
        let step = |bind: Option<&str>, per_task: Option<u32>, c: &mut Controller| {
            let req = StepRequest {
                argv: vec!["true".into()],
                gpu_bind: bind.map(str::to_string),
                gpus_per_task: per_task,
                ..Default::default()
            };
            c.start_step(id, &req, &caller(), 1)
                .map(|(p, _)| p.task_gpus)
        };
        assert_eq!(
            step(Some("map_gpu:1,0"), None, &mut c),
            Ok(vec![vec![vec![1], vec![0]]])
        );
        assert_eq!(
            step(Some("mask_gpu:0x3"), Some(1), &mut c),
            Ok(vec![vec![vec![0, 1], vec![0, 1]]])
        );
        assert_eq!(
            step(None, Some(1), &mut c),
            Ok(vec![vec![vec![0], vec![1]]])
        );
        assert_eq!(
            step(Some("bad"), None, &mut c),
            Err(ApiError::invalid("Invalid --gpu-bind argument: gpu:bad"))
        );
    }

    /// A shard holder's new time limit moves the claim on its GPU, so plans for that
    /// GPU see the new end: 600 s at first, 1200 s after `scontrol update`.
    #[test]
    fn a_new_time_limit_moves_the_claim_on_a_shared_gpu() {
        let mut c = controller("gpu:2,shard:8", "");
        let id = submit(&mut c, asking("shard", 2), 0).unwrap();
        c.schedule(0);
        let claim = |c: &Controller| c.sched.job(claim_id(0, 0)).map(|j| j.spec.time_limit);
        assert_eq!(claim(&c), Some(600));
        let admin = Caller {
            uid: 0,
            gid: 0,
            admin: true,
        };
        c.update_job(
            id,
            None,
            &[("TimeLimit".into(), "20:00".into())],
            &admin,
            10,
        )
        .unwrap();
        assert_eq!(claim(&c), Some(1200));
    }
}
