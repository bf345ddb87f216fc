//! What a Prometheus scrape of each metrics endpoint costs on a large cluster:
//! `cargo bench -p sluice-cli --bench metrics` prints a table (the README's
//! "Prometheus metrics").
//!
//! A controller on loopback with 1,000 nodes of 64 CPUs (`MetricsType=
//! metrics/openmetrics`), their agents (the real agent, in this process, over the real
//! signed TCP transport) registered and idle under a maintenance reservation, and
//! 10,000 jobs submitted through the API, all queued. Then each endpoint is fetched as
//! Prometheus fetches it, a plain HTTP GET on the controller's port: the median time
//! of 21 scrapes, from the request to the last byte, the answer's size and its
//! samples.
//!
//! `--nodes N` and `--jobs N` change the sizes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sluice_proto::types::JobDescription;

#[allow(dead_code)]
#[path = "common/loopback.rs"]
mod loopback;

use loopback::{median, start_agents, wait_until, Scale};

fn progress(what: impl std::fmt::Display) {
    eprintln!("[metrics bench] {what}");
    let _ = std::io::stderr().flush();
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Job `i`: 1 to 16 nodes, a user's hold on every tenth (a fixed mix).
fn job(i: u64, work: &str) -> JobDescription {
    let nodes = 1 + (i.wrapping_mul(2_654_435_761) % 16) as u32;
    JobDescription {
        name: format!("m{}", i % 100),
        work_dir: work.into(),
        script: "#!/bin/sh\ntrue\n".into(),
        environment: vec![("PATH".into(), "/usr/bin:/bin".into())],
        output: Some("/dev/null".into()),
        nodes: Some((nodes, nodes)),
        time_limit: Some(Some(3600)),
        hold: i.is_multiple_of(10),
        ..JobDescription::default()
    }
}

/// One plain GET of `path`: the body.
fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    body.to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let nodes = arg(&args, "--nodes", 1_000);
    let jobs = arg(&args, "--jobs", 10_000) as u64;
    // One agent per node, each a listener and its connections.
    raise_open_files();
    progress(format_args!("controller with {nodes} nodes × 64 CPUs"));
    let s = Scale::start(nodes, 64, "MetricsType=metrics/openmetrics\n");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let agents = start_agents(&rt, &s, 1, nodes + 1);
    wait_until(
        Duration::from_secs(900),
        "the agents' registrations",
        || s.count("idle") == nodes,
    );
    s.reserve_every_node();
    progress(format_args!("submitting {jobs} jobs"));
    s.queue(jobs, job);
    let addr = format!("127.0.0.1:{}", s.port());
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header(["endpoint", "scrape (median of 21)", "size", "samples"]);
    for e in [
        "jobs",
        "nodes",
        "partitions",
        "scheduler",
        "jobs-users-accts",
        "sluice",
    ] {
        let path = format!("/metrics/{e}");
        let mut body = String::new();
        let ms = median(
            (0..21)
                .map(|_| {
                    let t = Instant::now();
                    body = get(&addr, &path);
                    t.elapsed().as_secs_f64() * 1000.0
                })
                .collect(),
        );
        let samples = body.lines().filter(|l| !l.starts_with('#')).count();
        progress(format_args!("  {path}: {ms:.2} ms, {} bytes", body.len()));
        table.add_row([
            format!("`{path}`"),
            format!("{ms:.2} ms"),
            format!("{:.0} KiB", body.len() as f64 / 1024.0),
            samples.to_string(),
        ]);
    }
    println!(
        "{nodes} nodes × 64 CPUs, {jobs} jobs queued (a tenth held), plain HTTP GETs on loopback:\n"
    );
    println!("{table}");
    progress("stopping");
    let handles: Vec<_> = agents
        .into_iter()
        .map(|(tx, h)| {
            let _ = tx.send(());
            h
        })
        .collect();
    rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(60), async {
            for h in handles {
                let _ = h.await;
            }
        })
        .await;
    });
    drop(s);
}

/// Raises this process's open-file limit to its hard limit.
fn raise_open_files() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}
