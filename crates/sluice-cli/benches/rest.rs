//! Whether REST clients starve the scheduler: `cargo bench -p sluice-cli --bench rest`
//! prints a table (the README's "REST API and tokens").
//!
//! A controller on loopback with 100 nodes of 64 CPUs (their agents, the real agent in
//! this process over the real signed TCP transport, registered and idle under a
//! maintenance reservation) and 10,000 jobs submitted through the API, all queued.
//! Two windows of the same length follow, each starting from a reset of the
//! controller's statistics (`sdiag --reset`), while a pacer submits a held job every
//! half second so that the scheduler runs passes over the whole queue:
//!
//! - without load: nothing else;
//! - with load: 32 clients, each on its own keep-alive connection with a root token,
//!   doing `GET /slurm/v0.0.44/jobs` back to back.
//!
//! For each window: the requests served per second, their median and p99 latency, the
//! pacer's median submission (answered once the loop has taken it), and the
//! scheduling cycles' count, mean and max as `GET /slurm/v0.0.44/diag` reports them
//! (`schedule_cycle_*` for the main passes, `bf_cycle_*` for backfill, every second
//! here: `bf_interval=1`). No figure is asserted.
//!
//! `--nodes N`, `--jobs N`, `--clients N` and `--seconds N` change the sizes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sluice_proto::client::Client;
use sluice_proto::types::{JobDescription, SubmitReply};

#[allow(dead_code)]
#[path = "common/loopback.rs"]
mod loopback;

use loopback::{median, start_agents, wait_until, Scale};

fn progress(what: impl std::fmt::Display) {
    eprintln!("[rest bench] {what}");
    let _ = std::io::stderr().flush();
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Job `i`: 1 to 16 nodes (at most the cluster's `size`), a user's hold on every tenth
/// (the metrics bench's mix).
fn job(i: u64, work: &str, size: usize) -> JobDescription {
    let nodes = 1 + (i.wrapping_mul(2_654_435_761) % size.min(16) as u64) as u32;
    JobDescription {
        name: format!("r{}", i % 100),
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

/// A keep-alive connection to the controller's port, sending the token's headers.
struct Conn {
    reader: BufReader<TcpStream>,
    headers: String,
}

impl Conn {
    fn open(addr: &str, token: &str) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            reader: BufReader::new(s),
            headers: format!(
                "Host: {addr}\r\nX-SLURM-USER-NAME: root\r\nX-SLURM-USER-TOKEN: {token}\r\n"
            ),
        }
    }

    /// `GET path`: the body (the status must be 200).
    fn get(&mut self, path: &str) -> Vec<u8> {
        write!(
            self.reader.get_mut(),
            "GET {path} HTTP/1.1\r\n{}\r\n",
            self.headers
        )
        .unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{path}: {line}");
        let mut length = None;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            let (k, v) = line.split_once(':').unwrap_or((&line, ""));
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse::<usize>().ok();
            }
        }
        let mut body = vec![0; length.expect("a Content-Length")];
        self.reader.read_exact(&mut body).unwrap();
        body
    }
}

/// Count, mean and max (µs) of a kind of scheduling cycle.
type Cycles = (u64, u64, u64);

/// The scheduling cycles since the last reset, as `GET diag` reports them: the main
/// passes and the backfill cycles.
fn passes(addr: &str, token: &str) -> (Cycles, Cycles) {
    let body = Conn::open(addr, token).get("/slurm/v0.0.44/diag");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let s = &v["statistics"];
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    (
        (
            n("schedule_cycle_total"),
            n("schedule_cycle_mean"),
            n("schedule_cycle_max"),
        ),
        (n("bf_cycle_counter"), n("bf_cycle_mean"), n("bf_cycle_max")),
    )
}

/// One window: `clients` clients listing the jobs for `length` (none: idle), a
/// pacer submitting a held job every half second. Requests, their latencies (ms,
/// sorted), the pacer's median submission (ms) and the passes.
fn window(
    s: &Scale,
    addr: &str,
    token: &str,
    clients: usize,
    length: Duration,
    work: &str,
    first: u64,
) -> (usize, Vec<f64>, f64, (Cycles, Cycles)) {
    let o = s.run("sdiag", &["--reset"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stop = AtomicBool::new(false);
    let mut latencies = Vec::new();
    let mut submits = Vec::new();
    std::thread::scope(|scope| {
        let stop = &stop;
        let pacer = scope.spawn(move || {
            let client = Client::new(s.socket());
            let mut i = first;
            let mut took = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let mut d = job(i, work, 1);
                d.hold = true;
                let t = Instant::now();
                let _: SubmitReply = client.post("/v1/jobs", &d).expect("submission");
                took.push(t.elapsed().as_secs_f64() * 1000.0);
                i += 1;
                std::thread::sleep(Duration::from_millis(500));
            }
            took
        });
        let workers: Vec<_> = (0..clients)
            .map(|_| {
                scope.spawn(move || {
                    let mut conn = Conn::open(addr, token);
                    let mut mine = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let body = conn.get("/slurm/v0.0.44/jobs");
                        mine.push(t.elapsed().as_secs_f64() * 1000.0);
                        assert!(body.len() > 2);
                    }
                    mine
                })
            })
            .collect();
        std::thread::sleep(length);
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            latencies.extend(w.join().unwrap());
        }
        submits = pacer.join().unwrap();
    });
    let passes = passes(addr, token);
    latencies.sort_by(f64::total_cmp);
    (latencies.len(), latencies, median(submits), passes)
}

/// A cycle's mean and max, ms.
fn ms((_, mean, max): Cycles) -> String {
    format!(
        "{:.2} / {:.2} ms",
        mean as f64 / 1000.0,
        max as f64 / 1000.0
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let nodes = arg(&args, "--nodes", 100);
    let jobs = arg(&args, "--jobs", 10_000) as u64;
    let clients = arg(&args, "--clients", 32);
    let seconds = arg(&args, "--seconds", 20) as u64;
    raise_open_files();

    // The token key, readable by the controller's user only.
    let key = std::env::temp_dir().join(format!("sluice-bench-rest-{}.key", std::process::id()));
    std::fs::write(&key, b"0123456789abcdef0123456789abcdef").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    progress(format_args!("controller with {nodes} nodes × 64 CPUs"));
    let s = Scale::start(
        nodes,
        64,
        &format!(
            "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n\
             SchedulerParameters=bf_interval=1\n",
            key.display()
        ),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let agents = start_agents(&rt, &s, 1, nodes + 1);
    wait_until(
        Duration::from_secs(900),
        "the agents' registrations",
        || s.count("idle") == nodes,
    );
    s.reserve_every_node();
    progress(format_args!("submitting {jobs} jobs"));
    s.queue(jobs, |i, work| job(i, work, nodes));
    let work = s.dir.join("work").display().to_string();
    let o = s.run("scontrol", &["token", "lifespan=7200"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let token = String::from_utf8_lossy(&o.stdout)
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("SLURM_JWT=...")
        .to_string();
    let addr = format!("127.0.0.1:{}", s.port());
    let size = Conn::open(&addr, &token).get("/slurm/v0.0.44/jobs").len();

    let length = Duration::from_secs(seconds);
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "REST load",
        "requests/s",
        "median",
        "p99",
        "a submission meanwhile",
        "main passes",
        "mean / max",
        "backfill cycles",
        "mean / max",
    ]);
    let mut first = jobs;
    for (label, n) in [
        ("none".to_string(), 0),
        (format!("{clients} clients × `GET jobs`"), clients),
    ] {
        progress(format_args!("{seconds} s with {n} clients"));
        let (count, lat, submit, (main, bf)) = window(&s, &addr, &token, n, length, &work, first);
        first += 2 * seconds + 2;
        let at = |q: f64| {
            if lat.is_empty() {
                "-".to_string()
            } else {
                let i = ((lat.len() as f64 * q) as usize).min(lat.len() - 1);
                format!("{:.0} ms", lat[i])
            }
        };
        table.add_row([
            label,
            if n == 0 {
                "-".to_string()
            } else {
                format!("{:.1}", count as f64 / length.as_secs_f64())
            },
            at(0.5),
            at(0.99),
            format!("{submit:.1} ms"),
            main.0.to_string(),
            ms(main),
            bf.0.to_string(),
            ms(bf),
        ]);
    }
    println!(
        "{nodes} nodes × 64 CPUs, {jobs} jobs queued (a tenth held; `GET jobs` answers {:.1} MiB), \
         {seconds} s each, a held job submitted every 0.5 s, `bf_interval=1`:\n",
        size as f64 / (1024.0 * 1024.0)
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
    let _ = std::fs::remove_file(&key);
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
