//! A service job survives its host: on a lab of `head01` and `node01`–`node03` (the
//! seeds' slurm.conf with `SlurmdTimeout=10`), the OpenAI-style stand-in of
//! `examples/service/model_server.py` runs as a service (`--restart=always --port
//! --health-url`, submitted with `--no-requeue`, which a service overrides). Its host
//! is killed (its processes and its link, as a power cut): the node goes DOWN after
//! `SlurmdTimeout`, the service is requeued and started on another host, and answers
//! there. Twice, so the outage (from the kill to `/v1/models` answering again,
//! measured from `head01`) is printed for each move. `sacct -D` shows the runs, the
//! killed ones `NODE_FAIL`.

use std::time::{Duration, Instant};

use crate::harness::Hosts;
use crate::seeds_lab::{
    as_root, here, lay_out, node_states, start_cluster, submit, wait_for, Daemons, WORK,
};

const PORT: u16 = 8000;

/// Which host's server answers `/v1/models` now (asked from `head01` over the lab's
/// network) directly on `hosts`: its host name and pid.
fn serving(h: &Hosts, hosts: &[&str]) -> Option<(String, u64)> {
    let urls: Vec<String> = hosts
        .iter()
        .map(|n| format!("http://{}:{PORT}/v1/models", h.address(n)))
        .collect();
    answered(h, &urls, 0.5)
}

/// The host name and pid in the first answer of `urls` to a GET from `head01` (each
/// waited for up to `patience` seconds).
fn answered(h: &Hosts, urls: &[String], patience: f64) -> Option<(String, u64)> {
    let urls: Vec<String> = urls.iter().map(|u| format!("'{u}'")).collect();
    let script = format!(
        "import json, urllib.request\n\
         for u in [{}]:\n\
         \x20   try:\n\
         \x20       d = json.load(urllib.request.urlopen(u, timeout={patience}))\n\
         \x20       print(d['data'][0]['host'], d['data'][0]['pid']); break\n\
         \x20   except Exception:\n\
         \x20       pass\n",
        urls.join(", ")
    );
    let o = h.run("head01", &["python3", "-c", &script]);
    let mut w = o.stdout.split_whitespace();
    Some((w.next()?.to_string(), w.next()?.parse().ok()?))
}

#[test]
fn a_service_whose_host_dies_is_started_on_another_host_and_answers_again() {
    let Some(h) = Hosts::up_or_skip(
        "a_service_whose_host_dies_is_started_on_another_host",
        &["head01", "node[01-03]"],
    ) else {
        return;
    };
    let nodes = ["node01", "node02", "node03"];
    lay_out(&h, "SlurmdTimeout=10\nKillWait=2\n");
    let daemons = Daemons(&h);
    start_cluster(&h, &nodes);
    let server = here(&h, WORK).join("model_server.py");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/service/model_server.py"
        ),
        &server,
    )
    .unwrap();
    let job = submit(
        &h,
        "head01",
        &format!(
            "-N1 --no-requeue --restart=always --port={PORT} --health-url=/health \
             --health-interval=2 -J llm -o {WORK}/llm-%j.out \
             --wrap 'exec python3 {WORK}/model_server.py --port {PORT}'"
        ),
    );
    let mut outages = Vec::new();
    let mut alive: Vec<&str> = nodes.to_vec();
    let (mut host, _) = wait_for(
        Duration::from_secs(60),
        "the service's first answer",
        || serving(&h, &alive),
    );
    // Its stable address, on the controller's host: the same URL across the moves.
    let show = as_root(&h, "head01", "scontrol", &["show", "job", &job.to_string()]).stdout;
    let url = show
        .lines()
        .find_map(|l| l.trim().strip_prefix("ServiceURL="))
        .unwrap_or_else(|| panic!("no ServiceURL in {show}"))
        .to_string();
    assert!(url.ends_with("/services/llm/"), "{url}");
    let models = [format!("{url}v1/models")];
    assert_eq!(answered(&h, &models, 5.0).map(|a| a.0), Some(host.clone()));
    for run in 1..=2u32 {
        let killed = Instant::now();
        h.kill(&host);
        alive.retain(|n| *n != host);
        // Measured at the stable address (a request there is held up to 5 s while the
        // service runs nowhere, then answered 503).
        let (moved, _) = wait_for(Duration::from_secs(90), "the service elsewhere", || {
            answered(&h, &models, 6.0).filter(|a| a.0 != host)
        });
        assert_eq!(serving(&h, &alive).map(|a| a.0), Some(moved.clone()));
        let outage = killed.elapsed();
        eprintln!(
            "service moved from {host} to {moved} after its host was killed: outage {:.1} s",
            outage.as_secs_f64()
        );
        outages.push(outage);
        assert_ne!(moved, host);
        assert!(node_states(&h)
            .iter()
            .any(|(n, t)| *n == host && t.starts_with("down")));
        // The same job, in its next run, on the new host.
        let q = as_root(
            &h,
            "head01",
            "squeue",
            &["-h", "-o", "%T %N", "-j", &job.to_string()],
        );
        assert_eq!(q.stdout.trim(), format!("RUNNING {moved}"));
        let show = as_root(&h, "head01", "scontrol", &["show", "job", &job.to_string()]).stdout;
        assert!(show.contains(&format!(" Restarts={run} ")), "{show}");
        assert!(show.contains("Service=llm ServiceRestarts=0 "), "{show}");
        host = moved;
    }
    let runs = as_root(
        &h,
        "head01",
        "sacct",
        &[
            "-n",
            "-X",
            "-D",
            "-P",
            "-o",
            "State,NodeList",
            "-j",
            &job.to_string(),
        ],
    )
    .stdout;
    let runs: Vec<&str> = runs.lines().collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(
        runs[..2].iter().all(|r| r.starts_with("NODE_FAIL|")),
        "{runs:?}"
    );
    assert!(runs[2].starts_with(&format!("RUNNING|{host}")), "{runs:?}");
    outages.sort();
    eprintln!(
        "outage on node death: {:?} (SlurmdTimeout=10)",
        outages
            .iter()
            .map(|d| format!("{:.1}s", d.as_secs_f64()))
            .collect::<Vec<_>>()
    );
    let o = as_root(&h, "head01", "scancel", &[&job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    drop(daemons);
    h.down().unwrap();
}
