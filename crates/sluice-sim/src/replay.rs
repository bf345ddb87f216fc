//! The event loop: virtual time, trace submissions, job ends, and the core's passes.
//!
//! Event order (the reference semantics): events in time order; at equal times
//! submissions come before terminations, and events of the same kind keep the order in
//! which they were created (submissions in file order, terminations in start order).
//! After every submission and every termination the core runs one pass at that
//! instant; jobs it starts begin at that instant. Between events, the core's own
//! wake-ups (planned starts, backfill intervals) get a pass too.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use sluice_core::{Cluster, Decision, EndSemantics, JobId, Pass, Policy, Scheduler, Secs, Time};

use crate::audit::{AuditSink, Auditor};
use crate::fairshare::{FairShareOptions, FairShareSim, FairnessReport};
use crate::fragmentation::FragmentationWatch;
use crate::reservations::{ResvLine, ResvReport};
use crate::setup::SimJob;

/// What happened to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// Trace job id.
    pub id: u64,
    /// User id.
    pub user: u32,
    /// Submission time.
    pub submit: Time,
    /// Start time.
    pub start: Time,
    /// End time.
    pub finish: Time,
    /// Time it ran (seconds): its run time, or its time limit if it was killed there.
    pub run: Secs,
    /// Its estimate (time limit).
    pub est: Secs,
    /// Processors it held.
    pub procs: u32,
    /// GPU thousandths it held (whole GPUs × 1000).
    pub gpu_milli: u64,
    /// Whole GPUs it held over all its nodes.
    pub gpus: u32,
    /// Nodes it ran on.
    pub nodes: u32,
    /// Leaf switches its nodes hang off (0 without a topology).
    pub switches: u32,
    /// Killed at its time limit (state TIMEOUT).
    pub timed_out: bool,
    /// Which pass started it.
    pub pass: Pass,
    /// It started while a job submitted before it was still waiting: it was backfilled,
    /// whichever pass started it.
    pub backfilled: bool,
}

/// A point of the queue/utilisation curves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Time.
    pub t: Time,
    /// Jobs waiting.
    pub pending: u32,
    /// Processors busy.
    pub busy_cpus: u64,
}

/// The outcome of a replay.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    /// Finished jobs, in finishing order.
    pub records: Vec<JobRecord>,
    /// Jobs the core refused at submission, with the reason.
    pub rejected: Vec<(u64, String)>,
    /// Jobs still waiting when nothing was left to happen, with their pending reason
    /// (e.g. `PartitionTimeLimit`: the trace asks for more than the partition allows).
    pub never_started: Vec<(u64, &'static str)>,
    /// Queue length and busy processors after each event (when asked for).
    pub samples: Vec<Sample>,
    /// Submissions, terminations and wake-ups processed.
    pub events: u64,
    /// Total processors of the machine.
    pub total_cpus: u64,
    /// Total GPUs of the machine (thousandths).
    pub total_gpu_milli: u64,
    /// The most GPUs one node has.
    pub max_gpus_per_node: u32,
    /// GPU-seconds idle on nodes too fragmented to host any waiting GPU job while the
    /// free GPUs together could have (see [`crate::fragmentation`]).
    pub fragmented_gpu_seconds: f64,
    /// GPU-seconds idle while some whole-GPU job waited.
    pub idle_gpu_seconds_while_waiting: f64,
    /// Fair-share figures, when fair-share was simulated.
    pub fairness: Option<FairnessReport>,
    /// Advance reservations: reserved and used capacity, by name.
    pub reservations: Vec<ResvReport>,
    /// Runs preempted (see `sluice_core::preempt`): a preempted job's work is lost; a
    /// requeued one runs again from the start for its full run time.
    pub preemptions: u64,
    /// Processor-seconds of work preempted runs had done (lost).
    pub lost_proc_seconds: u64,
    /// Suspensions by preemption (`PreemptMode=SUSPEND`, see `sluice_core::gang`) and by
    /// gang time-slicing (see `sluice_core::timeslice`): the run stops and later goes on
    /// where it stood; nothing is lost.
    pub suspensions: u64,
    /// Runs that started borrowed (above their account's cohort quota, see
    /// `sluice_core::borrow`).
    pub borrowed_starts: u64,
    /// Preemptions that took borrowed capacity back for its owner.
    pub reclaims: u64,
}

/// Options of a replay.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// Record a [`Sample`] after each event (for plots).
    pub samples: bool,
    /// Simulate accounts, decayed usage and multifactor priority (see
    /// [`crate::fairshare`]).
    pub fairshare: Option<FairShareOptions>,
    /// Advance reservations to make (see [`crate::reservations`]).
    pub reservations: Vec<ResvLine>,
    /// Users' accounts (`--accounts`; a user not listed charges `g<gid>`), for
    /// reservations that admit accounts and the audit trail.
    pub accounts: std::collections::BTreeMap<u32, String>,
    /// Accounting limits to enforce (see [`crate::limits`]); the jobs' specs carry
    /// their associations.
    pub limits: Option<sluice_core::limits::AccountLimits>,
    /// Cohorts of accounts that borrow each other's unused quota (see
    /// `sluice_core::borrow`); the jobs' specs carry their associations.
    pub cohorts: Vec<sluice_core::Cohort>,
}

/// How long (seconds of virtual time) a replay with nothing left to submit and nothing
/// running keeps following wake-ups without any job starting: eight days, more than a
/// `WEEKLY` reservation's period, so that a job waiting for its next window still gets
/// it.
const IDLE_HORIZON: Time = 8 * 86_400;

struct Running {
    idx: usize,
    nodes: u32,
    switches: u32,
    start: Time,
    pass: Pass,
    timed_out: bool,
    backfilled: bool,
    /// The sequence number of its end event (earlier ones are stale: preempted).
    end_seq: u64,
    /// Being preempted: requeue (`true`) or cancel at its end.
    preempted: Option<bool>,
    /// When its run ends, unless suspended meanwhile.
    end: Time,
    /// Suspended by preemption: since when.
    suspended: Option<Time>,
    /// Seconds it stood suspended (its record's run time leaves them out).
    suspended_secs: Time,
}

/// How many distinct leaf switches `alloc`'s nodes hang off (0 without a topology).
fn switches_spanned(cluster: &Cluster, alloc: &sluice_core::Allocation) -> u32 {
    let mut s: Vec<u16> = alloc
        .nodes
        .iter()
        .filter_map(|a| cluster.node(a.node).leaf_switch)
        .collect();
    s.sort_unstable();
    s.dedup();
    s.len() as u32
}

/// Replays `jobs` (in trace order) on `cluster` under `policy`. `progress(done, total)`
/// is called now and then with the number of jobs finished or refused so far.
pub fn run(
    cluster: Cluster,
    policy: Policy,
    jobs: Vec<SimJob>,
    options: ReplayOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Replay {
    run_audited(cluster, policy, jobs, options, progress, None)
}

/// [`run`], handing the replay's audit trail (see [`crate::audit`]) to `audit` as it
/// goes, in time order. Without a sink no event is built.
pub fn run_audited(
    cluster: Cluster,
    policy: Policy,
    mut jobs: Vec<SimJob>,
    options: ReplayOptions,
    progress: &mut dyn FnMut(u64, u64),
    audit: Option<&mut dyn AuditSink>,
) -> Replay {
    jobs.sort_by_key(|j| j.spec.submit); // stable: file order among equal times
    let mut audit = audit.map(|sink| Auditor::new(sink, jobs.len()));
    let total = jobs.len() as u64;
    let gpu_slot = cluster.gres.find("gpu", None);
    let mut out = Replay {
        total_cpus: cluster.total_cpus(),
        total_gpu_milli: gpu_slot
            .map(|g| {
                cluster
                    .nodes
                    .iter()
                    .map(|n| n.capacity.gres[g] as u64 * 1000)
                    .sum()
            })
            .unwrap_or(0),
        max_gpus_per_node: gpu_slot
            .and_then(|g| cluster.nodes.iter().map(|n| n.capacity.gres[g]).max())
            .unwrap_or(0),
        ..Default::default()
    };
    let mut frag = FragmentationWatch::new(&cluster);
    let gpus_asked = |j: &SimJob| gpu_slot.map_or(0, |g| j.spec.request.gres_per_node[g]);
    // Jobs never run past their limit here, so a job's resources are free at its
    // expected end even when its termination is processed later in that instant.
    let mut fair = options
        .fairshare
        .clone()
        .map(|o| FairShareSim::new(o, &cluster, &jobs));
    // Finished jobs for the fairness report: (index, processors, start, finish, submit).
    let mut finished: Vec<(usize, u32, Time, Time, Time)> = Vec::new();
    let mut sched = Scheduler::with_end_semantics(cluster, policy, EndSemantics::FreeAtExpectedEnd);
    if let Some(db) = &options.limits {
        sched.set_account_limits(db.clone());
    }
    if !options.cohorts.is_empty() {
        sched.set_cohorts(options.cohorts.clone());
    }
    let mut ends: BinaryHeap<Reverse<(Time, u64, JobId)>> = BinaryHeap::new();
    let mut running: HashMap<JobId, Running> = HashMap::new();
    let mut index: HashMap<JobId, usize> = HashMap::with_capacity(jobs.len());
    let mut end_seq = 0u64;
    let mut next = 0usize;
    let mut clock = Time::MIN;
    // A wake-up pass already run at this time: asking again would change nothing.
    let mut woke_at: Option<Time> = None;
    // Waiting jobs by position in submission order, to tell backfilled starts.
    let mut waiting: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    let mut busy: u64 = 0;
    let mut done = 0u64;
    // Reservations: all made at the first event, in file order.
    let origin = jobs.first().map_or(0, |j| j.spec.submit);
    let mut resv_reports: std::collections::BTreeMap<String, ResvReport> = options
        .reservations
        .iter()
        .map(|l| {
            (
                l.name.clone(),
                ResvReport {
                    name: l.name.clone(),
                    ..Default::default()
                },
            )
        })
        .collect();
    for l in &options.reservations {
        match sched.plan_reservation(&l.request(origin), origin) {
            Ok(r) => sched.add_reservation(r, origin),
            Err(e) => {
                resv_reports.get_mut(&l.name).expect("listed").refused = Some(e.to_string());
            }
        }
    }

    // When something last happened (a submission, a start, an end): a repeating
    // reservation asks for wake-ups forever, so once nothing is left to submit or
    // running, wake-ups stop mattering after IDLE_HORIZON without progress.
    let mut last_progress = Time::MIN;
    loop {
        let ts = jobs.get(next).map(|j| j.spec.submit);
        let te = ends.peek().map(|r| r.0 .0);
        let idle = ts.is_none() && te.is_none();
        let tw = sched
            .next_wakeup()
            .map(|w| w.max(clock))
            .filter(|w| woke_at != Some(*w))
            .filter(|w| !idle || w.saturating_sub(last_progress) <= IDLE_HORIZON);
        let Some(t) = [ts, te, tw].into_iter().flatten().min() else {
            break;
        };
        clock = t;
        out.events += 1;
        if let Some(f) = fair.as_mut().filter(|f| f.due(t)) {
            let mut on: Vec<(usize, u32, Time)> = running
                .values()
                .map(|r| (r.idx, jobs[r.idx].procs, r.start))
                .collect();
            on.sort_unstable(); // a hash map's order must not reach the sums
            f.advance(t, &mut sched, &jobs, &index, &on);
        }
        let decisions = if ts == Some(t) {
            let job = &jobs[next];
            let id = job.spec.id;
            let mut spec = job.spec.clone();
            if let Some(f) = fair.as_ref().filter(|f| f.orders_jobs()) {
                spec.priority = f.priority(next, job, t);
            }
            let user = spec.user;
            let limit = spec.time_limit;
            let min_nodes = spec.request.min_nodes.max(1);
            let asked_cpus = spec.request.min_cpus();
            let result = sched.submit(spec, t);
            next += 1;
            match result {
                Ok(()) => {
                    // The first reservation that admits it (its user, or its account as
                    // fair-share and limits name it), has room for its time limit and
                    // holds enough nodes and processors for it.
                    let account = crate::limits::account_name(&options.accounts, &jobs[next - 1]);
                    let chosen = options.reservations.iter().find_map(|l| {
                        let r = sched.reservation(&l.name)?;
                        let fits = r.flags.flex || t.max(r.start) + limit <= r.end;
                        let cpus: u64 = r.held.iter().map(|(_, h)| u64::from(h.cpus)).sum();
                        let big_enough = r.held.len() as u32 >= min_nodes && cpus >= asked_cpus;
                        (fits && big_enough && r.admits(user, Some(&account)))
                            .then(|| l.name.clone())
                    });
                    if let Some(name) = chosen {
                        sched.set_job_reservation(id, &name, t);
                        resv_reports.get_mut(&name).expect("listed").jobs += 1;
                    }
                    if let Some(a) = audit.as_mut() {
                        a.submitted(t, job, sched.cluster(), account.clone());
                    }
                    index.insert(id, next - 1);
                    waiting.insert(next - 1);
                    frag.waiting(gpus_asked(job));
                    sched.schedule(t)
                }
                Err(e) => {
                    out.rejected.push((id.0, e.to_string()));
                    done += 1;
                    Vec::new()
                }
            }
        } else if te == Some(t) {
            let Reverse((_, seq, id)) = ends.pop().expect("peeked");
            if running.get(&id).is_none_or(|r| r.end_seq != seq) {
                // The end a preemption brought forward already came.
                continue;
            }
            sched
                .job_ended(id, t)
                .expect("a job the simulator started is running");
            let r = running.remove(&id).expect("started");
            let j = &jobs[r.idx];
            if let Some(requeue) = r.preempted {
                if let Some(a) = audit.as_mut() {
                    a.preempt_done(t, r.idx, j, requeue);
                }
                out.preemptions += 1;
                out.lost_proc_seconds += (t - r.start) as u64 * u64::from(j.procs);
                busy -= j.procs as u64;
                if let Some(f) = fair.as_mut() {
                    f.job_ended(r.idx, j.procs, r.start, t);
                }
                if requeue {
                    let mut spec = j.spec.clone();
                    spec.submit = t;
                    spec.begin = t;
                    sched
                        .submit(spec, t)
                        .expect("a job that ran is accepted again");
                    waiting.insert(r.idx);
                    frag.waiting(gpus_asked(j));
                } else {
                    done += 1;
                }
            } else {
                if let Some(a) = audit.as_mut() {
                    a.ended(t, r.idx, j, r.timed_out);
                }
                if let Some(f) = fair.as_mut() {
                    f.job_ended(r.idx, j.procs, r.start, t);
                    finished.push((r.idx, j.procs, r.start, t, j.spec.submit));
                }
                busy -= j.procs as u64;
                out.records.push(JobRecord {
                    id: id.0,
                    user: j.spec.user,
                    submit: j.spec.submit,
                    start: r.start,
                    finish: t,
                    run: t - r.start - r.suspended_secs,
                    est: j.spec.time_limit,
                    procs: j.procs,
                    gpu_milli: j.gpu_milli,
                    gpus: gpus_asked(j) * r.nodes,
                    nodes: r.nodes,
                    switches: r.switches,
                    timed_out: r.timed_out,
                    pass: r.pass,
                    backfilled: r.backfilled,
                });
                done += 1;
            }
            sched.schedule(t)
        } else {
            woke_at = Some(t);
            sched.schedule(t)
        };
        if ts == Some(t) || te == Some(t) {
            woke_at = None;
            last_progress = t;
        }
        if !decisions.is_empty() {
            last_progress = t;
        }
        for d in decisions {
            let (job, at, pass, alloc) = match d {
                Decision::Start {
                    job,
                    at,
                    pass,
                    alloc,
                } => (job, at, pass, alloc),
                Decision::Suspend { job, at } => {
                    // Time-slicing: stopped where it stands; its end waits for its
                    // turn to come back (a job started in this pass is in `running`
                    // already, its start being decided first).
                    let r = running.get_mut(&job).expect("suspended jobs run");
                    r.suspended = Some(at);
                    r.end_seq = end_seq;
                    end_seq += 1;
                    busy -= jobs[r.idx].procs as u64;
                    out.suspensions += 1;
                    continue;
                }
                Decision::Resume { job, at } => {
                    // On from where it stood: its end moves by its suspension.
                    let r = running.get_mut(&job).expect("suspended jobs run");
                    let since = r.suspended.take().expect("suspended");
                    r.suspended_secs += at - since;
                    r.end += at - since;
                    r.end_seq = end_seq;
                    ends.push(Reverse((r.end, end_seq, job)));
                    end_seq += 1;
                    busy += jobs[r.idx].procs as u64;
                    continue;
                }
                Decision::Preempt {
                    victim,
                    by,
                    at,
                    mode,
                    grace,
                    reclaim,
                } => {
                    if let Some(a) = audit.as_mut() {
                        let (v, b) = (&jobs[index[&victim]], &jobs[index[&by]]);
                        let account =
                            |j: &SimJob| crate::limits::account_name(&options.accounts, j);
                        let victim = (v, account(v));
                        let by = (b, account(b));
                        a.preempted(at, sched.cluster(), victim, by, mode, grace, reclaim);
                    }
                    out.reclaims += u64::from(reclaim);
                    let r = running.get_mut(&victim).expect("victims run");
                    if mode == sluice_core::PreemptMode::Suspend {
                        // Stopped where it stands: its end waits for its resume.
                        r.suspended = Some(at);
                        r.end_seq = end_seq;
                        end_seq += 1;
                        busy -= jobs[r.idx].procs as u64;
                        out.suspensions += 1;
                        continue;
                    }
                    r.preempted = Some(mode == sluice_core::PreemptMode::Requeue);
                    r.end_seq = end_seq;
                    ends.push(Reverse((at + grace, end_seq, victim)));
                    end_seq += 1;
                    continue;
                }
            };
            let idx = index[&job];
            let j = &jobs[idx];
            if let Some(a) = audit.as_mut() {
                let priority = sched.job(job).map_or(j.spec.priority, |s| s.spec.priority);
                let resv = sched.job_reservation(job);
                a.started(at, idx, j, sched.cluster(), pass, priority, resv, &alloc);
            }
            out.borrowed_starts += u64::from(sched.borrowed(job));
            frag.not_waiting(gpus_asked(j));
            let ran = j.run.min(j.spec.time_limit);
            waiting.remove(&idx);
            let backfilled = waiting.first().is_some_and(|&first| first < idx);
            busy += j.procs as u64;
            running.insert(
                job,
                Running {
                    idx,
                    nodes: alloc.nodes.len() as u32,
                    switches: switches_spanned(sched.cluster(), &alloc),
                    start: at,
                    pass,
                    timed_out: j.run > j.spec.time_limit,
                    backfilled,
                    end_seq,
                    preempted: None,
                    end: at + ran,
                    suspended: None,
                    suspended_secs: 0,
                },
            );
            ends.push(Reverse((at + ran, end_seq, job)));
            end_seq += 1;
        }
        if let Some(a) = audit.as_mut() {
            a.end_pass();
        }
        for r in sched.take_finished_reservations() {
            if let Some(rep) = resv_reports.get_mut(&r.name) {
                rep.set_usage(&r.usage);
            }
        }
        frag.observe(t, sched.cluster(), sched.profile());
        if options.samples {
            let s = Sample {
                t,
                pending: sched.pending_count() as u32,
                busy_cpus: busy,
            };
            match out.samples.last_mut() {
                Some(last) if last.t == t => *last = s,
                _ => out.samples.push(s),
            }
        }
        if out.events.is_multiple_of(4096) {
            progress(done, total);
        }
    }
    progress(done, total);
    frag.advance(clock);
    out.fairness = fair.map(|f| f.report(&finished));
    for r in sched.reservations() {
        if let Some(rep) = resv_reports.get_mut(&r.name) {
            rep.set_usage(&r.usage);
        }
    }
    out.reservations = resv_reports.into_values().collect();
    out.fragmented_gpu_seconds = frag.fragmented_gpu_seconds;
    out.idle_gpu_seconds_while_waiting = frag.idle_gpu_seconds_while_waiting;
    out.never_started = sched
        .pending()
        .map(|j| (j.spec.id.0, j.reason.as_str()))
        .collect();
    out.never_started.sort();
    out
}
