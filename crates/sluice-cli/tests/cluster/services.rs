//! Service jobs on a live cluster (`sbatch --restart ... --port ... --health-url ...`):
//! the OpenAI-style stand-in of `examples/service/model_server.py` is kept up — its
//! process killed, it is started again in place; its health check failing, it is
//! restarted; past its cap of restarts the job ends `FAILED` — and each outage (from
//! the failure to `/v1/models` answering again) is measured and printed. What users see
//! (`scontrol show job`'s `Service=` line, `squeue -O Service`, the audit trail) and the
//! contradictions refused at submission are checked too.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use sluice_proto::audit::{AuditEvent, AuditWhat};
use sluice_proto::service::RestartCause;

use crate::harness::Cluster;

const CONF: &str = "ClusterName=services
SlurmctldHost=localhost
KillWait=1
NodeName=n[1-2] CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=1:00:00 State=UP
";

/// The example server, from the repository.
fn model_server() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/service/model_server.py"
    )
    .into()
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// An HTTP GET of `path` at `addr` (`127.0.0.1:PORT`): the status and body, or None
/// when nothing answers. (The stable address holds a request up to 5 s while its
/// service restarts.)
pub fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let addr: std::net::SocketAddr = addr.parse().ok()?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((code, body))
}

/// Where the model server's `/v1/models` is asked: an address and the path there
/// (`/v1/models` directly, `/services/NAME/v1/models` at the stable address).
pub type Target<'a> = (&'a str, &'a str);

/// The pid of the server answering `/v1/models` at `at`, if one answers.
pub fn serving_pid(at: Target) -> Option<u64> {
    let (code, body) = get(at.0, at.1)?;
    if code != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"][0]["pid"].as_u64()
}

/// Waits (at most `limit`) until a server other than `old` answers at `at`; how long
/// that took from `since`.
pub fn until_answered_by_another(
    at: Target,
    old: u64,
    since: Instant,
    limit: Duration,
) -> Duration {
    loop {
        if serving_pid(at).is_some_and(|p| p != old) {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < limit,
            "no new server at {at:?} within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `scontrol show job`'s `Service=` line's fields.
fn service_line(c: &Cluster, job: u64) -> String {
    let o = c.run("scontrol", &["show", "job", &job.to_string()]);
    o.stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Service="))
        .map(|l| l.trim().to_string())
        .unwrap_or_default()
}

fn events(c: &Cluster, job: u64) -> Vec<AuditEvent> {
    let o = c.run("sluice", &["audit", &job.to_string(), "--json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    o.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_service_is_restarted_in_place_on_death_and_on_failed_health_and_fails_past_its_cap() {
    // With a TCP listener: the service is reached at its stable address too.
    let listen = format!("127.0.0.1:{}", free_port());
    let c = Cluster::start_args("services", CONF, &["--listen", &listen]);
    let port = free_port();
    let direct = format!("127.0.0.1:{port}");
    let direct: Target = (&direct, "/v1/models");
    let stable: Target = (&listen, "/services/llm/v1/models");
    let sick = c.work().join("sick");
    let script = format!(
        "#!/bin/sh\n#SBATCH --restart=always:3\n#SBATCH --port={port}\n\
         #SBATCH --health-url=/health\n#SBATCH --health-interval=1\n#SBATCH --health-retries=2\n\
         exec python3 {} --port {port} --sick-file {}\n",
        model_server(),
        sick.display()
    );
    std::fs::write(c.work().join("llm.sh"), script).unwrap();
    let job = c.sbatch(&["-J", "llm", "-o", "llm.out", "llm.sh"]);
    let start = Instant::now();
    let first = loop {
        if let Some(p) = serving_pid(direct) {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the service never answered"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // No time limit of its own (the partition's MaxTime bounds it); its stable address.
    let show = c.run("scontrol", &["show", "job", &job.to_string()]).stdout;
    assert!(show.contains("TimeLimit=01:00:00"), "{show}");
    assert!(
        show.contains(&format!("\n   ServiceURL=http://{listen}/services/llm/\n")),
        "{show}"
    );
    assert_eq!(serving_pid(stable), Some(first));
    c.wait_for("healthy", || {
        service_line(&c, job) == format!("Service=llm ServiceRestarts=0 Health=healthy Port={port}")
    });
    let q = c.run(
        "squeue",
        &["-h", "-O", "JobID:8,Service:30", "-j", &job.to_string()],
    );
    assert_eq!(
        q.stdout.split_whitespace().collect::<Vec<_>>(),
        [job.to_string(), "llm:healthy:0".into()]
    );

    // Its process dies: started again in place (backoff 1 s).
    let killed = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let death = until_answered_by_another(stable, first, killed, Duration::from_secs(30));
    let second = serving_pid(direct).unwrap();
    println!(
        "outage on process death (at the stable address): {:.2} s",
        death.as_secs_f64()
    );
    c.wait_for("one restart counted", || {
        service_line(&c, job).starts_with("Service=llm ServiceRestarts=1 ")
    });
    // The restart appended to the output the first start opened: both starts are there.
    let out = std::fs::read_to_string(c.work().join("llm.out")).unwrap_or_default();
    assert_eq!(
        out.lines().filter(|l| l.starts_with("started ")).count(),
        2,
        "{out}"
    );
    assert_eq!(c.state(job), "RUNNING");

    // Its health fails: after 2 failed checks (1 s apart) it is restarted (backoff 2 s).
    c.wait_for("healthy again", || {
        service_line(&c, job).contains("Health=healthy")
    });
    std::fs::write(&sick, "").unwrap();
    let sickened = Instant::now();
    c.wait_for("the sick server to be stopped", || {
        serving_pid(direct) != Some(second)
    });
    std::fs::remove_file(&sick).unwrap();
    let health = until_answered_by_another(stable, second, sickened, Duration::from_secs(30));
    println!(
        "outage on health failure (at the stable address): {:.2} s (from the health endpoint's first failure)",
        health.as_secs_f64()
    );
    let third = serving_pid(direct).unwrap();
    c.wait_for("two restarts counted", || {
        service_line(&c, job).starts_with("Service=llm ServiceRestarts=2 ")
    });

    // The same node each time.
    let nodes = c
        .run("squeue", &["-h", "-o", "%N", "-j", &job.to_string()])
        .stdout;
    assert_eq!(nodes.trim(), "n1");

    // The third restart is its last: the fourth death ends it FAILED.
    let killed = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(third as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let fourth = {
        until_answered_by_another(direct, third, killed, Duration::from_secs(30));
        serving_pid(direct).unwrap()
    };
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(fourth as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_eq!(c.wait_ended(job), "FAILED");
    let ex = c.run(
        "sacct",
        &["-n", "-X", "-P", "-o", "ExitCode", "-j", &job.to_string()],
    );
    assert_eq!(ex.stdout.trim(), "0:9");

    // The audit trail: one event per restart, with its cause.
    let restarts: Vec<(u32, RestartCause, i32)> = events(&c, job)
        .into_iter()
        .filter_map(|e| match e.what {
            AuditWhat::ServiceRestarted {
                restart,
                cause,
                signal,
                ..
            } => Some((restart, cause, signal)),
            _ => None,
        })
        .collect();
    assert_eq!(
        restarts,
        [
            (1, RestartCause::Exited, 9),
            (2, RestartCause::Unhealthy, 9),
            (3, RestartCause::Exited, 9)
        ]
    );
    let text = c.run("sluice", &["audit", &job.to_string()]).stdout;
    assert!(
        text.contains("restart 2 in place (run 0): its health check failed"),
        "{text}"
    );
}

#[test]
fn contradictory_service_options_are_refused_and_nothing_is_queued() {
    let c = Cluster::start_with("svc-refused", CONF, &["n1", "n2"]);
    std::fs::write(c.work().join("s.sh"), "#!/bin/sh\nsleep 60\n").unwrap();
    // A live service holds its name (held, so it stays pending).
    let held = c.sbatch(&["-H", "--restart=always", "--service-name=api", "s.sh"]);
    // Values sbatch cannot read exit 255, as Slurm's sbatch does for a bad value;
    // contradictions exit 1.
    let refused: &[(&[&str], &str, i32)] = &[
        (&["--restart=always", "--array=1-2"], "--array", 1),
        (&["--restart=always:0"], "cap of 0", 255),
        (
            &["--restart=always", "--health-url=/health"],
            "has no port",
            1,
        ),
        (&["--port=70000"], "Invalid --port specification", 255),
        (&["--port=443"], "Invalid --port specification", 255),
        (&["--health-cmd=true"], "needs a service", 1),
        (
            &["--restart=on-failure", "--service-name=api"],
            "Service name api is already taken by job",
            1,
        ),
        (&["--restart=always", "-J", "api"], "already taken", 1),
    ];
    for (args, why, code) in refused {
        let mut a = args.to_vec();
        a.push("s.sh");
        let o = c.run("sbatch", &a);
        assert_eq!(o.code, *code, "{a:?}: {}", o.stderr);
        assert!(
            o.stderr.starts_with("sbatch: error: "),
            "{a:?}: {}",
            o.stderr
        );
        assert!(o.stderr.contains(why), "{a:?}: {}", o.stderr);
    }
    let q = c.run("squeue", &["-h", "-o", "%i"]);
    assert_eq!(q.stdout.trim(), held.to_string());
    // The name is free again once its service is gone.
    assert_eq!(c.run("scancel", &[&held.to_string()]).code, 0);
    c.wait_ended(held);
    let again = c.sbatch(&[
        "-H",
        "--no-requeue",
        "--restart=always",
        "--service-name=api",
        "s.sh",
    ]);
    // Other jobs show no service line; `#SBATCH` lines declare one as well.
    let plain = c.sbatch(&["-H", "s.sh"]);
    let show = c
        .run("scontrol", &["show", "job", &plain.to_string()])
        .stdout;
    assert!(!show.contains("Service="), "{show}");
    std::fs::write(
        c.work().join("d.sh"),
        "#!/bin/sh\n#SBATCH --port=9000\n#SBATCH -J web\nsleep 60\n",
    )
    .unwrap();
    let d = c.sbatch(&["-H", "d.sh"]);
    let show = c.run("scontrol", &["show", "job", &d.to_string()]).stdout;
    assert!(
        show.contains("\n   Service=web ServiceRestarts=0 Health=none Port=9000\n"),
        "{show}"
    );
    let show = c
        .run("scontrol", &["show", "job", &again.to_string()])
        .stdout;
    assert!(
        show.contains("Service=api ServiceRestarts=0 Health=none Port=(null)"),
        "{show}"
    );
    // --no-requeue does not hold for a service (it moves when its node dies).
    assert!(show.contains(" Requeue=1 "), "{show}");
}

#[test]
fn a_health_command_restarts_its_service_and_a_cancel_or_a_clean_exit_ends_it() {
    let c = Cluster::start_with("svc-cmd", CONF, &["n1", "n2"]);
    let sick = c.work().join("sick");
    // Each start of the script writes a line: its restarts are counted in the file too.
    std::fs::write(
        c.work().join("cmd.sh"),
        format!(
            "#!/bin/sh\n#SBATCH --restart=on-failure --health-interval=1 --health-retries=2\n\
             echo started >> {}/starts\nexec sleep 300\n",
            c.work().display()
        ),
    )
    .unwrap();
    let health = format!("--health-cmd=test ! -e {}", sick.display());
    let job = c.sbatch(&[&health, "-J", "cmd", "cmd.sh"]);
    c.wait_for("healthy", || {
        service_line(&c, job) == "Service=cmd ServiceRestarts=0 Health=healthy Port=(null)"
    });
    std::fs::write(&sick, "").unwrap();
    c.wait_for("unhealthy", || {
        service_line(&c, job).contains("Health=unhealthy")
    });
    // Two failures in a row: killed and started again.
    c.wait_for("a second start", || {
        std::fs::read_to_string(c.work().join("starts")).is_ok_and(|s| s.lines().count() == 2)
    });
    std::fs::remove_file(&sick).unwrap();
    c.wait_for("restarted and healthy", || {
        service_line(&c, job) == "Service=cmd ServiceRestarts=1 Health=healthy Port=(null)"
    });
    let starts = std::fs::read_to_string(c.work().join("starts")).unwrap();
    assert_eq!(starts, "started\nstarted\n");
    let explain = c.run("sluice", &["explain", &job.to_string()]).stdout;
    assert!(
        explain.contains(
            "service cmd: restarted when it fails; restarted in place 1 time so far, healthy"
        ),
        "{explain}"
    );
    // A cancel ends it: no restart.
    assert_eq!(c.run("scancel", &[&job.to_string()]).code, 0);
    assert_eq!(c.wait_ended(job), "CANCELLED by 0");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        std::fs::read_to_string(c.work().join("starts")).unwrap(),
        "started\nstarted\n"
    );
    // on-failure: a clean exit is the end.
    std::fs::write(c.work().join("once.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    let once = c.sbatch(&["--restart=on-failure", "once.sh"]);
    assert_eq!(c.wait_ended(once), "COMPLETED");
    let line = service_line(&c, once);
    assert!(
        line.starts_with("Service=once.sh ServiceRestarts=0 "),
        "{line}"
    );
}
