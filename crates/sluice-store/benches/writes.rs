//! Job writes per second through the store: `cargo bench -p sluice-store --bench
//! writes` prints a table (the README's "Accounting queries").
//!
//! 32 writers, as concurrent submitters: each inserts a job, then writes it running,
//! then ended (as the controller does), waiting for each write to be on disk; records of
//! about 3.5 KB (a 40-variable environment). With one user, every job's index entries
//! share pages; with 50 users at once, each user's are on pages of their own. Median
//! of 5 runs. Numbers depend on the machine's disk; compare rows of one run.

use std::time::Instant;

use sluice_store::{JobKeys, Store};

const WRITERS: u64 = 32;
const JOBS_EACH: u64 = 500;

fn record(id: u64, user: &str, state: &str) -> String {
    let env: Vec<String> = (0..40)
        .map(|i| format!("[\"VARIABLE_{i}\",\"/some/path/value/{i}/{user}\"]"))
        .collect();
    format!(
        "{{\"id\":{id},\"user\":\"{user}\",\"state\":\"{state}\",\"desc\":{{\"name\":\
         \"analysis\",\"script\":\"#!/bin/bash\\npython analyse.py\\n\",\"environment\":\
         [{}]}},\"more\":\"{}\"}}",
        env.join(","),
        "x".repeat(1000)
    )
}

fn keys(user: &str, state: &str, submit: i64, end: Option<i64>) -> JobKeys {
    JobKeys {
        user: user.into(),
        account: "physics".into(),
        partition: "batch".into(),
        state: state.into(),
        name: "analysis".into(),
        submit,
        end,
        ..JobKeys::default()
    }
}

/// Jobs per second, each written three times, with `users` users submitting.
fn run(users: u64) -> f64 {
    let dir = std::env::temp_dir().join(format!("sluice-bench-writes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (store, writer, _) =
        Store::open(&dir.join("sluice.db"), 1, |_| JobKeys::default()).expect("a new database");
    let start = Instant::now();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let s = store.clone();
            std::thread::spawn(move || {
                for i in 0..JOBS_EACH {
                    let id = 1 + w * JOBS_EACH + i;
                    let user = format!("user{}", id % users);
                    let t = id as i64;
                    let write = |state: &str, end: Option<i64>| {
                        (keys(&user, state, t, end), record(id, &user, state))
                    };
                    s.insert_jobs(id, vec![write("PENDING", None)])
                        .recv()
                        .unwrap()
                        .unwrap();
                    let (k, r) = write("RUNNING", None);
                    s.put_job(id, k, r).recv().unwrap().unwrap();
                    let (k, r) = write("COMPLETED", Some(t + 60));
                    s.put_job(id, k, r).recv().unwrap().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    drop(store);
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
    (WRITERS * JOBS_EACH) as f64 / secs
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("| users submitting | jobs/s (each written 3 times; median of 5) |");
    println!("|--:|--:|");
    for users in [1, 50] {
        let mut rates: Vec<f64> = (0..5).map(|_| run(users)).collect();
        rates.sort_by(f64::total_cmp);
        println!("| {users} | {:.0} |", rates[2]);
    }
}
