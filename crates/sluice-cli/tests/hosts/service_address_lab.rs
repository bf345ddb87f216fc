//! A service's stable address across a move: on a lab of `head01`, `node01` and
//! `node02` (the seeds' slurm.conf with `SlurmdTimeout=10`), the OpenAI-style stand-in
//! of `examples/service/model_server.py` runs as a service (`--restart=always
//! --port=8000`). It is reached through `http://head01:6817/services/llm/` (the
//! controller forwarding to the node's `NodeAddr`, across the lab's network); its host
//! is killed, and the same URL answers again from the other host once the service has
//! moved (the outage, as a client of the URL sees it, printed). Cancelled, the URL
//! answers 503.

use std::time::{Duration, Instant};

use crate::harness::Hosts;
use crate::seeds_lab::{as_root, here, lay_out, start_cluster, submit, wait_for, Daemons, WORK};

const PORT: u16 = 8000;

/// What a GET of `path` under the stable address answers, asked from `head01`: the
/// status and, for a 200 of `/v1/models`, the host that served it.
fn through(h: &Hosts, path: &str) -> (u16, String) {
    let script = format!(
        "import json, urllib.request, urllib.error\n\
         try:\n\
         \x20   r = urllib.request.urlopen('http://{}:6817/services/llm{path}', timeout=10)\n\
         \x20   print(r.status, json.load(r)['data'][0]['host'])\n\
         except urllib.error.HTTPError as e:\n\
         \x20   print(e.code, '-')\n\
         except Exception:\n\
         \x20   print(0, '-')\n",
        h.address("head01")
    );
    let o = h.run("head01", &["python3", "-c", &script]);
    let mut w = o.stdout.split_whitespace();
    let status = w.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, w.next().unwrap_or("-").to_string())
}

#[test]
fn a_service_answers_at_the_same_address_after_its_host_died() {
    let Some(h) = Hosts::up_or_skip(
        "a_service_answers_at_the_same_address_after_its_host_died",
        &["head01", "node[01-02]"],
    ) else {
        return;
    };
    let nodes = ["node01", "node02"];
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
            "-N1 --restart=always --port={PORT} -J llm -o {WORK}/llm-%j.out \
             --wrap 'exec python3 {WORK}/model_server.py --port {PORT}'"
        ),
    );
    let show = as_root(&h, "head01", "scontrol", &["show", "job", &job.to_string()]).stdout;
    assert!(
        show.contains("\n   ServiceURL=http://head01:6817/services/llm/\n"),
        "{show}"
    );
    let first = wait_for(
        Duration::from_secs(60),
        "the service through its address",
        || {
            let (status, host) = through(&h, "/v1/models");
            (status == 200).then_some(host)
        },
    );
    assert!(nodes.contains(&first.as_str()), "{first}");

    let killed = Instant::now();
    h.kill(&first);
    let moved = wait_for(
        Duration::from_secs(90),
        "the same address to answer again",
        || {
            let (status, host) = through(&h, "/v1/models");
            (status == 200).then_some(host)
        },
    );
    let outage = killed.elapsed();
    assert_ne!(moved, first);
    eprintln!(
        "stable address: the service moved from {first} to {moved}; {:.1} s without an answer at http://head01:6817/services/llm/ (SlurmdTimeout=10)",
        outage.as_secs_f64()
    );

    let o = as_root(&h, "head01", "scancel", &[&job.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    wait_for(Duration::from_secs(30), "503 once it ended", || {
        (through(&h, "/v1/models").0 == 503).then_some(())
    });
    drop(daemons);
    h.down().unwrap();
}
