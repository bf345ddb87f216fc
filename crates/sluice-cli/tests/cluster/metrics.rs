//! Slurm's metrics endpoints (`MetricsType=metrics/openmetrics`) on the controller's
//! port: read over plain HTTP without a credential, their figures those `squeue`,
//! `sinfo`, `scontrol` and `sdiag` show; Sluice's own (`/metrics/sluice`) beside them;
//! restricted by `PrivateData` as slurmctld restricts them; and scraped by a real
//! Prometheus.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::Cluster;

/// Two nodes of 2 CPUs and 2 GPUs; `debug` has both, `long` the second.
const CONF: &str = "ClusterName=metrics
SlurmctldHost=localhost
MetricsType=metrics/openmetrics
GresTypes=gpu
AccountingStorageTRES=gres/gpu
NodeName=n[1-2] CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
PartitionName=long Nodes=n2 MaxTime=1:00:00 State=UP
";

/// A free loopback port (bound and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One plain HTTP request to `addr` (no credential): its status, content type and body.
fn http(addr: &str, method: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut reply = Vec::new();
    s.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, content_type, body)
}

/// A chunked body's data.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The samples of a metrics text: `name{labels}` as written, and the value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// The jobs of [`populate`].
struct Jobs {
    big: u64,
    waits: u64,
    waits_long: u64,
    submitted: usize,
}

/// Jobs in every state the endpoints count: completed, failed, cancelled, running (one
/// with a GPU, filling n1; one in `long` on n2), pending for resources (a GPU job in
/// `debug`, a job in `long`) and held.
fn populate(c: &Cluster) -> Jobs {
    let done = c.sbatch(&["-J", "done", "--wrap", "true"]);
    let bad = c.sbatch(&["-J", "bad", "--wrap", "exit 3"]);
    assert_eq!(c.wait_ended(done), "COMPLETED");
    assert_eq!(c.wait_ended(bad), "FAILED");
    let big = c.sbatch(&[
        "-J",
        "big",
        "-w",
        "n1",
        "-c",
        "2",
        "--gres=gpu:1",
        "--wrap",
        "sleep 600",
    ]);
    let small = c.sbatch(&[
        "-J",
        "small",
        "-p",
        "long",
        "-c",
        "1",
        "--wrap",
        "sleep 600",
    ]);
    c.wait_for("both to run", || {
        c.state(big) == "RUNNING" && c.state(small) == "RUNNING"
    });
    let waits = c.sbatch(&[
        "-J",
        "waits",
        "-N",
        "2",
        "-c",
        "2",
        "--gres=gpu:2",
        "--wrap",
        "true",
    ]);
    let waits_long = c.sbatch(&["-J", "waitslong", "-p", "long", "-c", "2", "--wrap", "true"]);
    c.sbatch(&["-J", "held", "-H", "--wrap", "true"]);
    let gone = c.sbatch(&["-J", "gone", "-H", "--wrap", "true"]);
    assert_eq!(c.run("scancel", &[&gone.to_string()]).code, 0);
    c.wait_for("the queue's reasons", || {
        let o = c.run("squeue", &["-h", "-t", "PD", "-o", "%r"]);
        let r: Vec<&str> = o.stdout.lines().collect();
        r.len() == 3 && r.iter().all(|r| *r != "None") && r.contains(&"JobHeldUser")
    });
    Jobs {
        big,
        waits,
        waits_long,
        submitted: 8,
    }
}

/// The figures `/metrics/jobs`, `/metrics/partitions` and `/metrics/jobs-users-accts`
/// should show, from `squeue -t all`: sample name (with labels as written) → value.
fn expected_from_squeue(c: &Cluster) -> BTreeMap<String, f64> {
    let o = c.run(
        "squeue",
        &["-h", "-t", "all", "-o", "%i|%T|%P|%u|%a|%C|%D|%r"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut e: BTreeMap<String, f64> = BTreeMap::new();
    let mut add = |k: String, v: f64| *e.entry(k).or_default() += v;
    for l in o.stdout.lines() {
        let f: Vec<&str> = l.split('|').collect();
        let (state, part, user, account) = (f[1], f[2], f[3], f[4]);
        let cpus: f64 = f[5].parse().unwrap();
        let nodes: f64 = f[6].parse().unwrap();
        let held = state == "PENDING" && f[7].starts_with("JobHeld");
        let counter = match state {
            "PENDING" => "pending",
            "RUNNING" => "running",
            "COMPLETED" => "completed",
            "FAILED" => "failed",
            "CANCELLED" => "cancelled",
            other => panic!("unexpected state {other}"),
        };
        let user_l = format!("{{username=\"{user}\"}}");
        let account_l = format!("{{account=\"{account}\"}}");
        let part_l = format!("{{partition=\"{part}\"}}");
        add("slurm_jobs".into(), 1.0);
        add(format!("slurm_jobs_{counter}"), 1.0);
        add(format!("slurm_user_jobs{user_l}"), 1.0);
        add(format!("slurm_user_jobs_{counter}{user_l}"), 1.0);
        add(format!("slurm_account_jobs{account_l}"), 1.0);
        add(format!("slurm_account_jobs_{counter}{account_l}"), 1.0);
        add(format!("slurm_partition_jobs_{counter}{part_l}"), 1.0);
        if !matches!(state, "PENDING" | "RUNNING") {
            add("slurm_jobs_finished".into(), 1.0);
        } else {
            add(format!("slurm_partition_jobs{part_l}"), 1.0);
        }
        if state != "PENDING" {
            add("slurm_jobs_started".into(), 1.0);
        }
        if held {
            add("slurm_jobs_hold".into(), 1.0);
            add(format!("slurm_partition_jobs_hold{part_l}"), 1.0);
        }
        if state == "RUNNING" {
            add("slurm_jobs_cpus_alloc".into(), cpus);
            add("slurm_jobs_nodes_alloc".into(), nodes);
            add(format!("slurm_partition_jobs_cpus_alloc{part_l}"), cpus);
            add(format!("slurm_user_jobs_cpus_alloc{user_l}"), cpus);
        }
    }
    e
}

/// The figures `/metrics/nodes` and the node half of `/metrics/partitions` should show,
/// from `sinfo` and `scontrol show node`.
fn expected_from_sinfo(c: &Cluster) -> BTreeMap<String, f64> {
    let mut e: BTreeMap<String, f64> = BTreeMap::new();
    // Once per node (`sinfo -N` lists a node once per partition).
    let o = c.run("sinfo", &["-h", "-N", "-o", "%N|%t|%C|%m"]);
    let mut seen = std::collections::BTreeSet::new();
    for l in o.stdout.lines() {
        let f: Vec<&str> = l.split('|').collect();
        let node = f[0];
        if !seen.insert(node.to_string()) {
            continue;
        }
        let cpus: Vec<f64> = f[2].split('/').map(|n| n.parse().unwrap()).collect();
        let nl = format!("{{node=\"{node}\"}}");
        *e.entry("slurm_nodes".into()).or_default() += 1.0;
        let state = match f[1] {
            "idle" => "idle",
            "mix" => "mixed",
            "alloc" => "alloc",
            other => panic!("unexpected node state {other}"),
        };
        *e.entry(format!("slurm_nodes_{state}")).or_default() += 1.0;
        e.insert(format!("slurm_node_cpus_alloc{nl}"), cpus[0]);
        e.insert(format!("slurm_node_cpus_idle{nl}"), cpus[1]);
        e.insert(format!("slurm_node_cpus{nl}"), cpus[3]);
        e.insert(
            format!("slurm_node_memory_bytes{nl}"),
            f[3].parse().unwrap(),
        );
        let show = c.run("scontrol", &["show", "node", node]).stdout;
        let word = |key: &str| {
            show.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or_default()
                .to_string()
        };
        e.insert(
            format!("slurm_node_memory_alloc_bytes{nl}"),
            word("AllocMem=").parse().unwrap(),
        );
        let gpus_alloc = word("AllocTRES=")
            .split(',')
            .find_map(|t| t.strip_prefix("gres/gpu="))
            .map_or(0.0, |n| n.parse().unwrap());
        e.insert(format!("slurm_node_gpus_alloc{nl}"), gpus_alloc);
    }
    for part in ["debug", "long"] {
        let o = c.run("sinfo", &["-h", "-N", "-p", part, "-o", "%N|%t|%C"]);
        let pl = format!("{{partition=\"{part}\"}}");
        for l in o.stdout.lines() {
            let f: Vec<&str> = l.split('|').collect();
            let cpus: Vec<f64> = f[2].split('/').map(|n| n.parse().unwrap()).collect();
            *e.entry(format!("slurm_partition_nodes{pl}")).or_default() += 1.0;
            *e.entry(format!("slurm_partition_cpus{pl}")).or_default() += cpus[3];
            *e.entry(format!("slurm_partition_nodes_cpus_alloc{pl}"))
                .or_default() += cpus[0];
            *e.entry(format!("slurm_partition_nodes_cpus_idle{pl}"))
                .or_default() += cpus[1];
            let state = match f[1] {
                "mix" => "mixed",
                "alloc" => "alloc",
                other => other,
            };
            *e.entry(format!("slurm_partition_nodes_{state}{pl}"))
                .or_default() += 1.0;
        }
    }
    e
}

/// `value`s of `sdiag`'s lines starting with `label`.
fn sdiag_figure(text: &str, label: &str) -> f64 {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label} in\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// Every `(sample, value)` of `expected` not equal in `got` (a missing sample reads 0,
/// as a counter of nothing).
fn differences(
    expected: &BTreeMap<String, f64>,
    got: &BTreeMap<String, f64>,
) -> Vec<(String, f64, Option<f64>)> {
    expected
        .iter()
        .filter(|(k, v)| got.get(*k).copied().unwrap_or(0.0) != **v)
        .map(|(k, v)| (k.clone(), *v, got.get(k).copied()))
        .collect()
}

/// All five of Slurm's endpoints and Sluice's, over plain HTTP: the samples of all.
fn scrape_all(addr: &str) -> BTreeMap<String, f64> {
    let mut all = BTreeMap::new();
    for e in [
        "jobs",
        "nodes",
        "partitions",
        "scheduler",
        "jobs-users-accts",
        "sluice",
    ] {
        let (status, content_type, body) = http(addr, "GET", &format!("/metrics/{e}"));
        assert_eq!(
            (status, content_type.as_str()),
            (200, "text/plain"),
            "{e}: {body}"
        );
        all.extend(samples(&body));
    }
    all
}

#[test]
fn the_endpoints_answer_plain_gets_with_what_squeue_and_sinfo_show() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("metrics", CONF, &["--listen", &addr]);
    let jobs = populate(&c);

    // The index, and Slurm's text for each endpoint, HELP and TYPE lines first.
    let (status, _, index) = http(&addr, "GET", "/metrics");
    assert_eq!(status, 200);
    assert!(
        index.starts_with(
            "slurmctld index of metrics endpoints:\n  '/metrics/jobs': get job metrics\n"
        ),
        "{index}"
    );
    let (_, _, text) = http(&addr, "GET", "/metrics/jobs");
    assert!(
        text.starts_with(
            "# HELP slurm_jobs_bootfail Number of jobs in BootFail state\n\
             # TYPE slurm_jobs_bootfail gauge\n\
             slurm_jobs_bootfail 0\n"
        ),
        "{text}"
    );

    // The figures are those the commands show (read when the two agree twice: the
    // queue is still, but a pass may land between two reads).
    let start = Instant::now();
    let (expected, got) = loop {
        let before = (expected_from_squeue(&c), expected_from_sinfo(&c));
        let got = scrape_all(&addr);
        let mut expected = before.0.clone();
        expected.extend(before.1.clone());
        let after = (expected_from_squeue(&c), expected_from_sinfo(&c));
        if (before == after && differences(&expected, &got).is_empty())
            || start.elapsed() > Duration::from_secs(30)
        {
            break (expected, got);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(differences(&expected, &got), Vec::new());
    // What this test made, in figures.
    let v = |k: &str| got.get(k).copied().unwrap_or_else(|| panic!("no {k}"));
    assert_eq!(
        (
            v("slurm_jobs"),
            v("slurm_jobs_pending"),
            v("slurm_jobs_hold"),
            v("slurm_jobs_running"),
            v("slurm_jobs_completed"),
            v("slurm_jobs_failed"),
            v("slurm_jobs_cancelled")
        ),
        (8.0, 3.0, 1.0, 2.0, 1.0, 1.0, 1.0)
    );
    assert_eq!(
        (
            v("slurm_nodes_alloc"),
            v("slurm_nodes_mixed"),
            v("slurm_partitions")
        ),
        (1.0, 1.0, 2.0)
    );
    assert_eq!(v("slurm_node_gpus{node=\"n1\"}"), 2.0);
    assert_eq!(v("slurm_node_gpus_alloc{node=\"n1\"}"), 1.0);
    assert_eq!(
        v("slurm_partition_jobs_max_job_nodes{partition=\"debug\"}"),
        2.0
    );
    assert_eq!(v("slurm_partition_gpus{partition=\"debug\"}"), 4.0);

    // The scheduler's figures are sdiag's.
    let s = c.run("sdiag", &[]).stdout;
    assert_eq!(
        v("slurm_sdiag_jobs_submitted"),
        sdiag_figure(&s, "Jobs submitted:")
    );
    assert_eq!(
        v("slurm_sdiag_jobs_started"),
        sdiag_figure(&s, "Jobs started:")
    );
    assert_eq!(
        v("slurm_sdiag_jobs_canceled"),
        sdiag_figure(&s, "Jobs canceled:")
    );
    assert_eq!(v("slurm_sdiag_jobs_submitted"), jobs.submitted as f64);

    // Sluice's own: n1 has one GPU left, too few for the GPU job waiting in `debug`
    // (two per node); n2's two could serve it, were its CPUs free.
    assert_eq!(v("sluice_gpus_idle"), 3.0);
    assert_eq!(v("sluice_gpus_idle_while_gpu_jobs_wait"), 3.0);
    assert_eq!(v("sluice_gpus_idle_fragmented"), 1.0);
    assert_eq!(
        v("sluice_partition_gpu_jobs_waiting{partition=\"debug\"}"),
        1.0
    );
    assert_eq!(
        v("sluice_partition_gpus_idle_fragmented{partition=\"debug\"}"),
        1.0
    );
    assert_eq!(
        v("sluice_partition_gpus_idle_while_jobs_wait{partition=\"long\"}"),
        0.0
    );
    let holders: Vec<&String> = got
        .keys()
        .filter(|k| k.starts_with("sluice_gpu_job{"))
        .collect();
    assert_eq!(holders.len(), 1, "{holders:?}");
    assert!(holders[0].contains(&format!("job=\"{}\",node=\"n1\"", jobs.big)));
    assert_eq!(
        v("sluice_partition_head_job_id{partition=\"debug\"}"),
        jobs.waits as f64
    );
    assert_eq!(
        v("sluice_partition_head_job_id{partition=\"long\"}"),
        jobs.waits_long as f64
    );
    assert_eq!(v("sluice_audit_events_total{kind=\"submitted\"}"), 8.0);
    assert_eq!(v("sluice_audit_events_total{kind=\"started\"}"), 4.0);
    // The forecast start of `debug`'s next job is `squeue --start`'s.
    c.wait_for("a forecast", || {
        samples(&http(&addr, "GET", "/metrics/sluice").2).contains_key(
            "sluice_partition_head_job_forecast_start_timestamp_seconds{partition=\"debug\"}",
        )
    });
    let forecast = samples(&http(&addr, "GET", "/metrics/sluice").2)
        ["sluice_partition_head_job_forecast_start_timestamp_seconds{partition=\"debug\"}"];
    let shown = c
        .run(
            "squeue",
            &["-h", "--start", "-j", &jobs.waits.to_string(), "-o", "%S"],
        )
        .stdout;
    let o = Command::new("date")
        .args(["-d", shown.trim(), "+%s"])
        .output()
        .unwrap();
    let shown: f64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    assert_eq!(forecast, shown);

    // Nothing else opened: other paths and methods still need the cluster key.
    for (method, path) in [
        ("GET", "/v1/jobs"),
        ("GET", "/v1/diag"),
        ("POST", "/metrics/jobs"),
        ("GET", "/metrics/jobs/"),
        ("GET", "/metrics/nosuch"),
    ] {
        let (status, _, body) = http(&addr, method, path);
        assert_eq!(status, 401, "{method} {path}: {body}");
    }
    // `sluice metrics` reads them as the commands read the controller.
    let o = c.run("sluice", &["metrics", "nodes"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("\nslurm_nodes 2\n"), "{}", o.stdout);

    // Drained while its job runs, n2 is draining (`sinfo`'s `drng`): still mixed, not
    // counted under `drain` (Slurm's rule), and its GPUs no longer idle for a job.
    let o = c.run(
        "scontrol",
        &["update", "NodeName=n2", "State=DRAIN", "Reason=metrics"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_for("n2 draining", || {
        c.run("sinfo", &["-h", "-n", "n2", "-o", "%t"])
            .stdout
            .trim()
            == "drng"
    });
    let nodes = samples(&http(&addr, "GET", "/metrics/nodes").2);
    assert_eq!(
        (
            nodes["slurm_nodes_draining"],
            nodes["slurm_nodes_drain"],
            nodes["slurm_nodes_drained"],
            nodes["slurm_nodes_mixed"]
        ),
        (1.0, 0.0, 0.0, 1.0)
    );
    let parts = samples(&http(&addr, "GET", "/metrics/partitions").2);
    assert_eq!(
        parts["slurm_partition_nodes_draining{partition=\"long\"}"],
        1.0
    );
    let own = samples(&http(&addr, "GET", "/metrics/sluice").2);
    assert_eq!(
        (
            own["sluice_gpus_idle"],
            own["sluice_gpus_idle_while_gpu_jobs_wait"],
            own["sluice_gpus_idle_fragmented"]
        ),
        (1.0, 1.0, 1.0)
    );
}

#[test]
fn private_data_restricts_the_metrics_to_operators_with_a_credential() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let conf = format!("{CONF}PrivateData=jobs\n");
    let c = Cluster::start_args("metrics-private", &conf, &["--listen", &addr]);
    // A plain GET: refused before anything is read; the index alone is answered.
    let (status, _, body) = http(&addr, "GET", "/metrics/jobs");
    assert_eq!(status, 401, "{body}");
    let (status, _, body) = http(&addr, "GET", "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("'/metrics/jobs': get job metrics"), "{body}");
    let (status, _, body) = http(&addr, "GET", "/v1/jobs");
    assert_eq!(status, 401, "{body}");
    // The operator's command (the local socket): answered.
    let o = c.run("sluice", &["metrics", "jobs"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("\nslurm_jobs 0\n"), "{}", o.stdout);
    // Signed with the cluster key, over TCP, as this process's user (an operator when
    // the test runs as root or as the controller's user): answered.
    let key = std::fs::read_to_string(c.dir.join("state/cluster.key")).unwrap();
    let key: Vec<u8> = (0..key.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&key.trim()[i..i + 2], 16).unwrap())
        .collect();
    let text = sluice_proto::Client::tcp(&addr, key)
        .get_text("/metrics/nodes")
        .unwrap();
    assert!(text.contains("\nslurm_nodes 2\n"), "{text}");
    // Another user: refused, with slurmctld's words.
    if nix::unistd::geteuid().is_root() {
        let o = c.run_as(65534, "sluice", &["metrics", "jobs"]);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (1, "", "sluice metrics: error: Operation not permitted\n")
        );
    }
}

/// A Prometheus the test runs, killed (by its pid) when dropped.
struct Prometheus {
    child: Child,
    addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `prometheus` binary on PATH.
fn prometheus_binary() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
}

/// `q` for a URL's query string.
fn url_encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Prometheus {
    /// Starts `bin` scraping `target`'s metrics endpoints every second, its storage in
    /// `dir`, listening on a free loopback port.
    fn start(bin: &std::path::Path, dir: &std::path::Path, target: &str) -> Prometheus {
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut config = String::from(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n",
        );
        for e in [
            "jobs",
            "nodes",
            "partitions",
            "scheduler",
            "jobs-users-accts",
            "sluice",
        ] {
            config.push_str(&format!(
                "  - job_name: 'slurm_{e}'\n    metrics_path: '/metrics/{e}'\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, addr };
        let start = Instant::now();
        loop {
            if TcpStream::connect(&p.addr).is_ok() && http(&p.addr, "GET", "/-/ready").0 == 200 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus did not become ready: {}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The instant query `q` through the HTTP API: each result's labels (without
    /// `job` and `instance`, which Prometheus adds) written as the endpoints write
    /// them, and its value.
    fn query(&self, q: &str) -> BTreeMap<String, f64> {
        self.query_labelled(q, &["job", "instance"])
    }

    /// [`Prometheus::query`], leaving out the labels `drop`.
    fn query_labelled(&self, q: &str, drop: &[&str]) -> BTreeMap<String, f64> {
        let (status, _, body) = http(
            &self.addr,
            "GET",
            &format!("/api/v1/query?query={}", url_encode(q)),
        );
        assert_eq!(status, 200, "{q}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{body}");
        let mut out = BTreeMap::new();
        for r in v["data"]["result"].as_array().cloned().unwrap_or_default() {
            let mut labels: Vec<(String, String)> = r["metric"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| k.as_str() != "__name__" && !drop.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            labels.sort();
            let name = r["metric"]["__name__"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let key = if labels.is_empty() {
                name
            } else {
                let inner: Vec<String> =
                    labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
                format!("{name}{{{}}}", inner.join(","))
            };
            let value: f64 = r["value"][1].as_str().unwrap().parse().unwrap();
            out.insert(key, value);
        }
        out
    }
}

#[test]
fn a_real_prometheus_scrapes_the_cluster_and_agrees_with_squeue_and_sinfo() {
    let Some(bin) = prometheus_binary() else {
        let why = "prometheus is not installed (Debian: apt-get install prometheus)";
        if std::env::var("SLUICE_REQUIRE_PROMETHEUS").as_deref() == Ok("1") {
            panic!("SLUICE_REQUIRE_PROMETHEUS=1 but {why}");
        }
        eprintln!("skipped: {why}");
        return;
    };
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("metrics-prom", CONF, &["--listen", &target]);
    let jobs = populate(&c);
    let prom = Prometheus::start(&bin, &c.dir.join("prometheus"), &target);

    // Every scrape succeeds: Prometheus read each endpoint's text.
    let start = Instant::now();
    loop {
        let up = prom.query_labelled("up", &["instance"]);
        if up.len() == 6 && up.values().all(|v| *v == 1.0) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "scrapes did not all succeed: {up:?}\n{}",
            std::fs::read_to_string(c.dir.join("prometheus/prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // What it stored is what the commands show (once a scrape after the commands'
    // reading has landed: the queue is still, so they settle).
    let names = [
        "slurm_jobs",
        "slurm_jobs_pending",
        "slurm_jobs_running",
        "slurm_jobs_completed",
        "slurm_jobs_failed",
        "slurm_jobs_cancelled",
        "slurm_jobs_hold",
        "slurm_jobs_started",
        "slurm_jobs_finished",
        "slurm_jobs_cpus_alloc",
        "slurm_jobs_nodes_alloc",
        "slurm_partition_jobs",
        "slurm_partition_jobs_pending",
        "slurm_partition_jobs_running",
        "slurm_partition_jobs_hold",
        "slurm_partition_jobs_cpus_alloc",
        "slurm_user_jobs",
        "slurm_user_jobs_pending",
        "slurm_account_jobs",
        "slurm_nodes",
        "slurm_nodes_idle",
        "slurm_nodes_mixed",
        "slurm_nodes_alloc",
        "slurm_node_cpus",
        "slurm_node_cpus_alloc",
        "slurm_node_cpus_idle",
        "slurm_node_memory_bytes",
        "slurm_node_memory_alloc_bytes",
        "slurm_node_gpus_alloc",
        "slurm_partition_nodes",
        "slurm_partition_cpus",
        "slurm_partition_nodes_cpus_alloc",
        "slurm_partition_nodes_cpus_idle",
        "slurm_partition_nodes_mixed",
        "slurm_partition_nodes_alloc",
    ];
    let start = Instant::now();
    let (expected, stored) = loop {
        let mut expected = expected_from_squeue(&c);
        expected.extend(expected_from_sinfo(&c));
        expected.retain(|k, _| names.contains(&k.split('{').next().unwrap()));
        std::thread::sleep(Duration::from_millis(1500));
        let mut stored = BTreeMap::new();
        for n in names {
            stored.extend(prom.query(n));
        }
        if differences(&expected, &stored).is_empty() || start.elapsed() > Duration::from_secs(60) {
            break (expected, stored);
        }
    };
    assert_eq!(differences(&expected, &stored), Vec::new());
    assert_eq!(stored["slurm_jobs_pending"], 3.0);
    assert_eq!(stored["slurm_jobs_running"], 2.0);
    assert_eq!(stored["slurm_jobs_completed"], 1.0);
    assert_eq!(stored["slurm_jobs_failed"], 1.0);
    assert_eq!(
        stored["slurm_partition_jobs_pending{partition=\"debug\"}"],
        2.0
    );

    // Queries over several endpoints' series, as a dashboard makes them.
    let q = prom.query("sum(slurm_partition_jobs_pending)");
    assert_eq!(q.values().copied().collect::<Vec<_>>(), [3.0]);
    let q = prom.query("sum by (partition) (slurm_partition_jobs_running)");
    assert_eq!(q["{partition=\"long\"}"], 1.0);
    assert_eq!(
        prom.query("sluice_gpus_idle_fragmented")["sluice_gpus_idle_fragmented"],
        1.0
    );
    assert_eq!(
        prom.query("sluice_partition_head_job_id")
            ["sluice_partition_head_job_id{partition=\"debug\"}"],
        jobs.waits as f64
    );
    assert_eq!(
        prom.query("sluice_audit_events_total{kind=\"submitted\"}")
            .values()
            .copied()
            .collect::<Vec<_>>(),
        [jobs.submitted as f64]
    );
    // `sdiag`'s count of submissions, scraped.
    let s = c.run("sdiag", &[]).stdout;
    assert_eq!(
        prom.query("slurm_sdiag_jobs_submitted")["slurm_sdiag_jobs_submitted"],
        sdiag_figure(&s, "Jobs submitted:")
    );
    drop(prom);
}
