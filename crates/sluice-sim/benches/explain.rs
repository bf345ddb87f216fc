//! Explain benchmark: `cargo bench -p sluice-sim --bench explain` prints a Markdown
//! table for the README: how long `sluice_core::explain` takes for jobs at different
//! depths of a 10,000-job queue on a busy 1,000-node machine.
//!
//! The machine: 1,000 nodes of 64 CPUs, every fourth with 8 GPUs, in one partition,
//! under Slurm's backfill with its defaults. The load: jobs arriving over six hours
//! (one-node CPU and GPU jobs, wide exclusive jobs, multi-node GPU jobs; time limits from
//! 30 minutes to a day), replayed with every job running to its limit, so that the
//! machine is full and the running jobs end at staggered times; then the queue is
//! topped up to 10,000 pending jobs. Each row explains the job at that rank of the queue
//! (prediction only, then with the search for counterfactuals), median of several runs.
//!
//! Run without `--bench` (as `cargo test --benches` does), it goes through the same
//! steps on a small machine as a smoke test.

use std::hint::black_box;
use std::time::{Duration, Instant};

use sluice_core::explain::{explain, explain_with, forecast, ExplainOptions, Forecast, NoStart};
use sluice_core::{
    BackfillParams, Cluster, JobId, JobRequest, JobSpec, JobState, Node, NodeId, Partition,
    PartitionId, Policy, Scheduler, Time,
};

/// SplitMix64, seeded explicitly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// `nodes` nodes of 64 CPUs, every fourth with 8 GPUs, in one partition `batch`.
fn machine(nodes: u32) -> Cluster {
    let mut c = Cluster::default();
    let gpu = c.gres.slot_for("gpu", None).unwrap();
    for i in 0..nodes {
        let mut n = Node::new(format!("n{i:04}"), 64, 512_000);
        if i % 4 == 0 {
            n.capacity.gres[gpu] = 8;
        }
        c.nodes.push(n);
    }
    let mut p = Partition::new("batch", (0..nodes).map(NodeId).collect());
    p.is_default = true;
    c.partitions.push(p);
    c
}

/// A job of the mix, arriving at `at`.
fn job(rng: &mut Rng, id: u64, at: Time) -> JobSpec {
    let kind = rng.range(0, 99);
    let mut r;
    if kind < 50 {
        r = JobRequest::procs(1 << rng.range(0, 6)).on_one_node();
    } else if kind < 75 {
        let gpus = 1u32 << rng.range(0, 3);
        r = JobRequest::procs(8 * gpus).on_one_node();
        r.gres_per_node[0] = gpus;
    } else if kind < 90 {
        let n = rng.range(2, 16) as u32;
        r = JobRequest::procs(64 * n);
        r.min_nodes = n;
        r.max_nodes = n;
        r.exclusive = true;
    } else {
        let n = rng.range(2, 4) as u32;
        r = JobRequest::procs(64 * n);
        r.min_nodes = n;
        r.max_nodes = n;
        r.gres_per_node[0] = 8;
    }
    JobSpec {
        id: JobId(id),
        user: rng.range(1000, 1199) as u32,
        partition: PartitionId(0),
        submit: at,
        begin: at,
        request: r,
        time_limit: rng.range(6, 288) as i64 * 300,
        priority: rng.range(1, 100_000) as u32,
        acct: Default::default(),
    }
}

/// The busy machine at `now`, with `pending` jobs queued.
fn situation(nodes: u32, arrivals: u64, pending: usize) -> (Scheduler, Time) {
    let mut rng = Rng(7);
    let mut s = Scheduler::new(machine(nodes), Policy::Backfill(BackfillParams::default()));
    let span: Time = 6 * 3600;
    let mut jobs: Vec<JobSpec> = (1..=arrivals)
        .map(|i| {
            let at = rng.range(0, span as u64 - 1) as Time;
            job(&mut rng, i, at)
        })
        .collect();
    jobs.sort_by_key(|j| (j.submit, j.id));
    let mut next = 0;
    let mut t: Time = 0;
    while t < span {
        let mut due: Vec<(Time, JobId)> = s
            .jobs()
            .filter(|j| j.state == JobState::Running)
            .map(|j| (j.expected_end().unwrap(), j.id()))
            .filter(|(e, _)| *e <= t)
            .collect();
        due.sort();
        for (_, id) in due {
            s.job_ended(id, t);
        }
        while next < jobs.len() && jobs[next].submit <= t {
            let _ = s.submit(jobs[next].clone(), t);
            next += 1;
        }
        s.schedule(t);
        let end = s
            .jobs()
            .filter(|j| j.state == JobState::Running)
            .map(|j| j.expected_end().unwrap())
            .min();
        t = [end, jobs.get(next).map(|j| j.submit), s.next_wakeup()]
            .into_iter()
            .flatten()
            .filter(|&x| x > t)
            .min()
            .unwrap_or(span)
            .min(span);
    }
    let mut id = arrivals + 1;
    while s.pending_count() < pending {
        s.submit(job(&mut rng, id, span), span).unwrap();
        id += 1;
    }
    s.schedule(span);
    (s, span)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn describe(s: &Scheduler, id: JobId) -> String {
    let r = &s.job(id).unwrap().spec.request;
    let gpus = r.gres_per_node[0];
    let mut out = if r.min_nodes > 1 {
        format!("{} nodes", r.min_nodes)
    } else if r.ntasks == 1 {
        "1 CPU".to_string()
    } else {
        format!("{} CPUs", r.ntasks)
    };
    if gpus > 0 {
        out += &format!(", {gpus} GPUs/node");
    }
    if r.exclusive {
        out += ", exclusive";
    }
    out
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (nodes, arrivals, pending, runs, depths): (u32, u64, usize, usize, &[usize]) = if bench {
        (1_000, 3_000, 10_000, 3, &[1, 10, 100, 1_000, 10_000])
    } else {
        eprintln!("explain bench: smoke test on a small machine (run `cargo bench` to measure)");
        (16, 60, 40, 1, &[1, 40])
    };
    let t0 = Instant::now();
    let (s, now) = situation(nodes, arrivals, pending);
    eprintln!(
        "explain bench: {} running, {} pending, built in {:.1} s",
        s.running_count(),
        s.pending_count(),
        t0.elapsed().as_secs_f64()
    );
    let clone = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                black_box(s.clone());
                t.elapsed()
            })
            .collect(),
    );
    // The controller's forecast: one simulation for the whole queue, made once.
    let defaults = ExplainOptions::default();
    let mut whole: Option<Forecast> = None;
    let made = median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                whole = Some(forecast(
                    &s,
                    now,
                    now + defaults.horizon,
                    defaults.max_passes,
                ));
                t.elapsed()
            })
            .collect(),
    );
    let whole = whole.expect("made");
    let order: Vec<JobId> = s.pending().map(|j| j.id()).collect();
    // SLUICE_EXPLAIN_DEPTHS=1,10 picks the rows (for profiling).
    let chosen: Vec<usize> = std::env::var("SLUICE_EXPLAIN_DEPTHS")
        .map(|v| v.split(',').map(|d| d.parse().expect("depths")).collect())
        .unwrap_or_else(|_| depths.to_vec());
    println!(
        "| rank | job | predicted start | from the forecast (ms) | own simulation (ms) | with counterfactuals (ms) | suggestions |"
    );
    println!("|--:|---|---|--:|--:|--:|---|");
    for &depth in &chosen {
        let id = order[depth.min(order.len()) - 1];
        let time = |options: &ExplainOptions, f: Option<&Forecast>| {
            let mut out = None;
            let d = median(
                (0..runs)
                    .map(|_| {
                        let t = Instant::now();
                        out = explain_with(&s, id, now, options, f);
                        t.elapsed()
                    })
                    .collect(),
            );
            (d, out.expect("pending"))
        };
        let bare = ExplainOptions {
            counterfactuals: false,
            ..Default::default()
        };
        let (read, e_read) = time(&bare, Some(&whole));
        let (predict, e) = time(&bare, None);
        assert_eq!(e_read, e, "the forecast and the job's own simulation agree");
        let (full, e_full) = time(&ExplainOptions::default(), Some(&whole));
        assert_eq!(
            explain(&s, id, now, &ExplainOptions::default()).as_ref(),
            Some(&e_full)
        );
        let start = match &e.start {
            Ok(p) => format!("now + {:.1} h", (p.at - now) as f64 / 3600.0),
            Err(NoStart::Budget { at }) => {
                format!(
                    "not before now + {:.1} h (budget)",
                    (at - now) as f64 / 3600.0
                )
            }
            Err(n) => n.to_string(),
        };
        let mut suggestions: Vec<String> = e_full
            .counterfactuals
            .iter()
            .map(|c| format!("{:?} → +{:.1} h", c.change, (c.at - now) as f64 / 3600.0))
            .collect();
        if e_full.counterfactuals_cut {
            suggestions.push("(search cut short by its budget)".into());
        }
        println!(
            "| {depth} | {} | {start} | {} | {} | {} | {} |",
            describe(&s, id),
            ms(read),
            ms(predict),
            ms(full),
            if suggestions.is_empty() {
                "none".to_string()
            } else {
                suggestions.join("; ")
            }
        );
    }
    println!();
    let (starting, not) = whole.counts();
    println!(
        "{} nodes (every fourth with 8 GPUs), {} running and {} pending jobs, Slurm's backfill \
         defaults; median of {runs} runs; one copy of the scheduler takes {} ms; the forecast \
         ({} passes: {starting} jobs start in it, {not} not before it ends) takes {} ms.",
        nodes,
        s.running_count(),
        s.pending_count(),
        ms(clone),
        whole.passes,
        ms(made)
    );
}
