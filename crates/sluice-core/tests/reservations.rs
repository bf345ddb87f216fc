//! Advance reservations, each a short story with exact start times.
//!
//! A small driver replays the story: jobs end at their time limit (or earlier when
//! `run` says so); the scheduler is asked to decide after every event and at every
//! wake-up it asks for. Users are uids: 1000 is the harness's default, 7 is the
//! reservation's owner.

mod common;

use std::collections::BTreeMap;

use common::*;
use sluice_core::{
    AccessList, Cluster, JobId, NodeId, PendingReason, ReservationRequest, ResvError, ResvEvent,
    Scheduler, Time,
};

/// Drives a scheduler through a story.
struct Story {
    s: Scheduler,
    now: Time,
    /// Running jobs' ends.
    ends: BTreeMap<(Time, u64), ()>,
    starts: BTreeMap<u64, (Time, Vec<u32>)>,
}

impl Story {
    fn new(cluster: Cluster) -> Self {
        Story {
            s: Scheduler::new(cluster, backfill(86_400)),
            now: 0,
            ends: BTreeMap::new(),
            starts: BTreeMap::new(),
        }
    }

    fn pass(&mut self) {
        for d in self.s.schedule(self.now) {
            let sluice_core::Decision::Start { job, at, alloc, .. } = d else {
                panic!("no preemption here: {d:?}");
            };
            let j = self.s.job(job).unwrap();
            let end = at + j.spec.time_limit;
            self.ends.insert((end, job.0), ());
            self.starts
                .insert(job.0, (at, alloc.node_ids().map(|n| n.0).collect()));
        }
    }

    /// Moves time forward to `t`, ending jobs and waking the scheduler on the way.
    fn until(&mut self, t: Time) {
        loop {
            let next_end = self.ends.keys().next().map(|k| k.0);
            let wake = self.s.next_wakeup().filter(|&w| w > self.now);
            let next = [next_end, wake].into_iter().flatten().min();
            match next {
                Some(n) if n <= t => {
                    self.now = n;
                    while let Some(&(e, id)) = self.ends.keys().next() {
                        if e > n {
                            break;
                        }
                        self.ends.remove(&(e, id));
                        self.s.job_ended(JobId(id), n);
                    }
                    self.pass();
                }
                _ => break,
            }
        }
        self.now = t;
        self.pass();
    }

    fn submit(&mut self, j: JobBuilder) {
        self.s.submit(j.spec(), self.now).unwrap();
        self.pass();
    }

    fn submit_to(&mut self, j: JobBuilder, user: u32, resv: &str) {
        let mut spec = j.spec();
        spec.user = user;
        self.s.check_reservation(resv, user, None).unwrap();
        let id = spec.id;
        self.s.submit(spec, self.now).unwrap();
        assert!(self.s.set_job_reservation(id, resv, self.now));
        self.pass();
    }

    fn reserve(&mut self, req: ReservationRequest) -> Result<(), ResvError> {
        let r = self.s.plan_reservation(&req, self.now)?;
        self.s.add_reservation(r, self.now);
        self.pass();
        Ok(())
    }

    fn start(&self, id: u64) -> Option<Time> {
        self.starts.get(&id).map(|s| s.0)
    }

    fn nodes(&self, id: u64) -> Vec<u32> {
        self.starts[&id].1.clone()
    }

    fn reason(&self, id: u64) -> &'static str {
        self.s.job(JobId(id)).unwrap().reason.as_str()
    }
}

/// Reservation `name` for uid 7 on `nodes` over `[start, end)`.
fn resv(name: &str, nodes: &[u32], start: Time, end: Time) -> ReservationRequest {
    ReservationRequest {
        name: name.into(),
        start,
        end,
        nodes: nodes.iter().map(|&n| NodeId(n)).collect(),
        users: AccessList {
            names: vec![7],
            negated: false,
        },
        ..Default::default()
    }
}

#[test]
fn no_job_runs_into_a_reservation_and_the_waiting_one_says_why() {
    // Two nodes of 4 CPUs. Reservation R holds node 0 over [1000, 2000).
    // t=0   job 1 (4 CPUs, 1500 s) would run into R on node 0: it goes to node 1.
    // t=0   job 2 (4 CPUs, 900 s) ends before R: node 0 at once.
    // t=950 job 3 (4 CPUs, 200 s): node 0 is free now but reserved from 1000; it
    //       waits with Slurm's reason, and starts when job 1 ends, at 1500 on node 1.
    let mut st = Story::new(cluster(2, 4));
    st.reserve(resv("R", &[0], 1000, 2000)).unwrap();
    st.submit(job(1).procs(4).one_node().time(1500));
    st.submit(job(2).procs(4).one_node().time(900));
    assert_eq!((st.start(1), st.nodes(1)), (Some(0), vec![1]));
    assert_eq!((st.start(2), st.nodes(2)), (Some(0), vec![0]));
    st.until(950);
    st.submit(job(3).procs(4).one_node().time(200));
    assert_eq!(
        st.reason(3),
        "ReqNodeNotAvail, May be reserved for other job"
    );
    st.until(5000);
    assert_eq!((st.start(3), st.nodes(3)), (Some(1500), vec![1]));
}

#[test]
fn backfill_plans_around_a_reservation() {
    // One node of 4 CPUs; R holds it over [1000, 2000).
    // t=0  job 1 takes 2 CPUs until 600.
    // t=0  job 2 wants all 4 CPUs for 500 s: it waits for job 1 (Resources) and would
    //      run [600, 1100) into R, so its earliest start is R's end, 2000.
    // t=1  job 3 (2 CPUs, 300 s) is backfilled by the next backfill pass (one a
    //      second): it ends at 301, before anything.
    // t=0  job 4 (2 CPUs, 1200 s) would run into R: it waits, and after job 2, at 2500.
    let mut st = Story::new(cluster(1, 4));
    st.reserve(resv("R", &[0], 1000, 2000)).unwrap();
    st.submit(job(1).procs(2).time(600));
    st.submit(job(2).procs(4).time(500));
    st.submit(job(3).procs(2).time(300));
    st.submit(job(4).procs(2).time(1200));
    st.until(10_000);
    assert_eq!(st.start(1), Some(0));
    assert_eq!(st.start(3), Some(1));
    assert_eq!(st.start(2), Some(2000));
    assert_eq!(st.start(4), Some(2500));
}

#[test]
fn a_reserved_job_starts_exactly_at_the_reservation_start() {
    // Two nodes of 4 CPUs; R holds node 1 over [1000, 2000) for uid 7.
    // t=0  job 1 of uid 7 with --reservation=R (4 CPUs, 500 s) waits (reason
    //      Reservation) although both nodes are idle, and starts at 1000 on node 1.
    // t=0  job 2 of uid 7 without --reservation cannot use R: node 0, at once.
    let mut st = Story::new(cluster(2, 4));
    st.reserve(resv("R", &[1], 1000, 2000)).unwrap();
    st.submit_to(job(1).procs(4).one_node().time(500), 7, "R");
    let mut j2 = job(2).procs(4).one_node().time(3000).spec();
    j2.user = 7;
    st.s.submit(j2, 0).unwrap();
    st.pass();
    assert_eq!(st.reason(1), "Reservation");
    assert_eq!((st.start(2), st.nodes(2)), (Some(0), vec![0]));
    st.until(999);
    assert_eq!(st.reason(1), "Reservation");
    st.until(3000);
    assert_eq!((st.start(1), st.nodes(1)), (Some(1000), vec![1]));
}

#[test]
fn a_reserved_job_longer_than_what_is_left_waits_and_one_that_fits_runs_inside() {
    // One node of 4 CPUs; R holds it over [1000, 2000).
    // Job 1 (2 CPUs, 1200 s) would outlive R: it waits with reason Reservation.
    // Job 2 (2 CPUs, 600 s) fits: 1000 until 1600.
    let mut st = Story::new(cluster(1, 4));
    st.reserve(resv("R", &[0], 1000, 2000)).unwrap();
    st.submit_to(job(1).procs(2).time(1200), 7, "R");
    st.submit_to(job(2).procs(2).time(600), 7, "R");
    st.until(1500);
    assert_eq!(st.start(2), Some(1000));
    assert_eq!(st.start(1), None);
    assert_eq!(st.reason(1), "Reservation");
}

#[test]
fn flex_jobs_start_before_the_reservation_and_outside_it() {
    // Two nodes of 4 CPUs; FLEX reservation R holds node 1 over [1000, 2000).
    // t=0  job 1 with --reservation=R (4 CPUs, 3000 s) starts at once, before R and
    //      past its end: the best fit is node 0 (both idle; lowest id).
    // t=0  job 2 with --reservation=R (4 CPUs, 100 s) starts at once on node 1, the
    //      reservation's own node, before its start.
    let mut st = Story::new(cluster(2, 4));
    let mut r = resv("R", &[1], 1000, 2000);
    r.flags.flex = true;
    st.reserve(r).unwrap();
    st.submit_to(job(1).procs(4).one_node().time(3000), 7, "R");
    st.submit_to(job(2).procs(4).one_node().time(100), 7, "R");
    assert_eq!((st.start(1), st.nodes(1)), (Some(0), vec![0]));
    assert_eq!((st.start(2), st.nodes(2)), (Some(0), vec![1]));
}

#[test]
fn a_daily_reservation_moves_forward_one_day_after_its_end() {
    // One node; DAILY R over [1000, 2000). At 2000 it moves to [87400, 88400).
    // t=2500 job 1 with --reservation=R (1 CPU, 500 s) waits for the next window and
    //        starts exactly at 87400. An ordinary job 2 submitted at 2500 asking
    //        85000 s would run into the new window: it waits until that window ends,
    //        88400 (and then ends at 173400, before the window after).
    let day = 86_400;
    let mut st = Story::new(cluster(1, 4));
    let mut r = resv("R", &[0], 1000, 2000);
    r.flags.daily = true;
    st.reserve(r).unwrap();
    st.until(2500);
    let r = st.s.reservation("R").unwrap();
    assert_eq!((r.start, r.end), (1000 + day, 2000 + day));
    assert_eq!(
        st.s.take_reservation_events(),
        vec![ResvEvent::Repeated("R".into(), 1000 + day, 2000 + day)]
    );
    st.submit_to(job(1).procs(1).time(500), 7, "R");
    st.submit(job(2).procs(4).time(85_000));
    st.until(2 * day);
    assert_eq!(st.start(1), Some(1000 + day));
    assert_eq!(st.start(2), Some(2000 + day));
}

#[test]
fn ignore_jobs_lets_a_reservation_be_made_over_a_running_job() {
    // One node of 4 CPUs. Job 1 holds 4 CPUs until 1500.
    // R over [1000, 2000) is refused ("Requested nodes are busy"), and made with
    // IGNORE_JOBS. Job 2 in R (4 CPUs, 400 s) waits for job 1 (reason Resources
    // inside the window) and starts at 1500; job 3, ordinary, waits until R's end.
    let mut st = Story::new(cluster(1, 4));
    st.submit(job(1).procs(4).time(1500));
    assert_eq!(
        st.reserve(resv("R", &[0], 1000, 2000)),
        Err(ResvError::NodesBusy)
    );
    assert_eq!(ResvError::NodesBusy.to_string(), "Requested nodes are busy");
    let mut r = resv("R", &[0], 1000, 2000);
    r.flags.ignore_jobs = true;
    st.reserve(r).unwrap();
    st.submit_to(job(2).procs(4).time(400), 7, "R");
    st.submit(job(3).procs(1).time(100));
    st.until(1200);
    assert_eq!(st.reason(2), "Resources");
    st.until(5000);
    assert_eq!(st.start(2), Some(1500));
    assert_eq!(st.start(3), Some(2000));
}

#[test]
fn maint_reservations_may_overlap_others_and_ordinary_ones_may_not() {
    let mut st = Story::new(cluster(2, 4));
    st.reserve(resv("A", &[0], 1000, 2000)).unwrap();
    assert_eq!(
        st.reserve(resv("B", &[0, 1], 1500, 2500)),
        Err(ResvError::Overlap)
    );
    let mut m = resv("M", &[0, 1], 1500, 2500);
    m.flags.maint = true;
    st.reserve(m).unwrap();
    // Over the MAINT one, an ordinary reservation may be made too (as in Slurm).
    st.reserve(resv("C", &[1], 1800, 1900)).unwrap();
    assert_eq!(
        st.reserve(resv("A", &[1], 5000, 6000)),
        Err(ResvError::Duplicate)
    );
    // No ordinary job runs into MAINT on its nodes: 1600 s from 0 would.
    st.submit(job(1).procs(1).time(1600));
    assert_eq!(st.start(1), None);
    st.until(10_000);
    assert_eq!(st.start(1), Some(2500));
}

#[test]
fn node_count_takes_the_first_free_nodes() {
    // Four nodes; job 1 runs on node 0 until 5000. NodeCnt=2 over [1000, 2000) takes
    // nodes 1 and 2; NodeCnt=4 is refused.
    let mut st = Story::new(cluster(4, 4));
    st.submit(job(1).procs(4).one_node().time(5000));
    let mut r = resv("N", &[], 1000, 2000);
    r.node_count = Some(2);
    st.reserve(r).unwrap();
    let held: Vec<u32> =
        st.s.reservation("N")
            .unwrap()
            .nodes()
            .map(|n| n.0)
            .collect();
    assert_eq!(held, vec![1, 2]);
    let mut r = resv("M", &[], 1000, 2000);
    r.node_count = Some(4);
    assert_eq!(st.reserve(r), Err(ResvError::NodesBusy));
}

#[test]
fn who_may_use_a_reservation() {
    let mut st = Story::new(cluster(1, 4));
    let mut r = resv("R", &[0], 1000, 2000);
    r.users = AccessList {
        names: vec![7],
        negated: true,
    };
    st.reserve(r).unwrap();
    assert_eq!(st.s.check_reservation("R", 1000, None), Ok(()));
    assert_eq!(
        st.s.check_reservation("R", 7, None),
        Err(ResvError::AccessDenied)
    );
    assert_eq!(
        st.s.check_reservation("X", 7, None),
        Err(ResvError::NotFound)
    );
    let mut r = resv("S", &[0], 3000, 4000);
    r.users = AccessList::default();
    r.accounts = AccessList {
        names: vec!["physics".into()],
        negated: false,
    };
    st.reserve(r).unwrap();
    assert_eq!(st.s.check_reservation("S", 1, Some("physics")), Ok(()));
    assert_eq!(
        st.s.check_reservation("S", 1, Some("chem")),
        Err(ResvError::AccessDenied)
    );
    assert_eq!(
        ResvError::AccessDenied.to_string(),
        "Access denied to requested reservation"
    );
}

#[test]
fn purge_comp_deletes_the_reservation_five_minutes_after_its_jobs() {
    // R over [0, 10000) with PURGE_COMP (300 s). Job 1 in it runs [0, 100). R is
    // purged at 400.
    let mut st = Story::new(cluster(1, 4));
    let mut r = resv("R", &[0], 0, 10_000);
    r.flags.purge_comp = Some(300);
    st.reserve(r).unwrap();
    st.submit_to(job(1).procs(1).time(100), 7, "R");
    st.until(399);
    assert!(st.s.reservation("R").is_some());
    st.until(400);
    assert!(st.s.reservation("R").is_none());
    assert_eq!(
        st.s.take_reservation_events(),
        vec![ResvEvent::Purged("R".into())]
    );
}

#[test]
fn a_gpu_reservation_holds_only_gpus() {
    // One node with 8 CPUs and 4 GPUs; R holds 2 of its GPUs over [0, 1000).
    // Job 1 (4 GPUs) waits until 1000; job 2 (1 CPU, 2 GPUs) runs now; job 3 in R
    // (2 GPUs) runs now on the reserved GPUs.
    let mut st = Story::new(gpu_cluster(&[(8, 4)]));
    let mut r = resv("G", &[], 0, 1000);
    r.gpus = Some(2);
    st.reserve(r).unwrap();
    st.submit(job(2).procs(1).gpus(2).time(100));
    st.submit_to(job(3).procs(1).gpus(2).time(100), 7, "G");
    st.submit(job(1).procs(1).gpus(4).time(100));
    assert_eq!(st.start(1), None);
    assert_eq!(st.start(2), Some(0));
    assert_eq!(st.start(3), Some(0));
    st.until(2000);
    assert_eq!(st.start(1), Some(1000));
}

#[test]
fn idle_reserved_capacity_is_counted() {
    // Two nodes with 2 GPUs each; R holds both over [0, 1000). A job in R uses one
    // node and its 2 GPUs over [200, 500). At 1000: 2000 node-s and 4000 GPU-s
    // reserved, 300 node-s and 600 GPU-s used.
    let mut st = Story::new(gpu_cluster(&[(4, 2), (4, 2)]));
    st.reserve(resv("R", &[0, 1], 0, 1000)).unwrap();
    st.until(200);
    assert_eq!(st.s.reservation("R").unwrap().usage.idle_since, Some(0));
    st.submit_to(job(1).procs(1).gpus(2).one_node().time(300), 7, "R");
    assert_eq!(st.start(1), Some(200));
    st.until(201);
    assert_eq!(st.s.reservation("R").unwrap().usage.idle_since, None);
    st.until(999);
    let u = st.s.reservation("R").unwrap().usage.clone();
    assert_eq!(u.idle_since, Some(500));
    assert_eq!((u.reserved_node_s, u.used_node_s), (1998, 300));
    assert_eq!((u.reserved_gpu_s, u.used_gpu_s), (3996, 600));
    assert_eq!((u.idle_node_s(), u.idle_gpu_s()), (1698, 3396));
}

#[test]
fn deleting_a_reservation_frees_its_nodes_and_a_busy_one_is_kept() {
    let mut st = Story::new(cluster(1, 4));
    st.reserve(resv("R", &[0], 0, 1000)).unwrap();
    st.submit(job(1).procs(4).time(100));
    assert_eq!(st.start(1), None);
    st.submit_to(job(2).procs(1).time(100), 7, "R");
    assert_eq!(st.s.delete_reservation("R", 0), Err(ResvError::InUse));
    st.until(100);
    st.s.delete_reservation("R", 100).unwrap();
    st.pass();
    assert_eq!(st.start(1), Some(100));
    assert_eq!(st.s.delete_reservation("R", 100), Err(ResvError::NotFound));
    let _ = PendingReason::Reservation;
}
