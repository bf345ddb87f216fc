//! The controller over TCP (`sluice up --listen`): commands elsewhere reach it with
//! requests signed with the cluster key; unsigned, altered, replayed or wrongly keyed
//! requests are refused and change nothing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

use crate::harness::Cluster;
use crate::SMALL;

/// A free loopback port (bound and released: another process could take it meanwhile,
/// which would fail the test loudly, not wrongly).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends one raw HTTP request; the status code and body.
fn raw(addr: &str, method: &str, path: &str, auth: Option<&str>, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = auth
        .map(|a| format!("x-sluice-auth: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = reply.split_once("\r\n\r\n").map(|b| b.1).unwrap_or("");
    (status, body.to_string())
}

#[test]
fn commands_reach_the_controller_over_tcp_only_with_the_cluster_key() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("tcp", SMALL, &["--listen", &addr]);
    let key_file = c.dir.join("state/cluster.key");
    // A shell that has no access to the state directory: only the address and the key.
    let elsewhere = c.dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = |cmd: &str, args: &[&str], key: &std::path::Path| {
        let o = Command::new(c.dir.join("state/bin").join(cmd))
            .args(args)
            .current_dir(c.work())
            .env("SLUICE_STATE_DIR", &elsewhere)
            .env("SLUICE_CONTROLLER", &addr)
            .env("SLUICE_KEY_FILE", key)
            .env_remove("SLURM_JOB_ID")
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.code().unwrap_or(-1),
        )
    };
    let (out, err, code) = run("sbatch", &["-J", "overtcp", "--wrap", "echo hi"], &key_file);
    assert_eq!((err.as_str(), code), ("", 0));
    let job: u64 = out
        .trim()
        .strip_prefix("Submitted batch job ")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(c.wait_ended(job), "COMPLETED");
    // The job belongs to the uid the signed request spoke for: this process's.
    let me = crate::commands::user();
    let (out, _, _) = run(
        "sacct",
        &[
            "-n",
            "-X",
            "-P",
            "-o",
            "JobName,User,State",
            "-j",
            &job.to_string(),
        ],
        &key_file,
    );
    assert_eq!(out, format!("overtcp|{me}|COMPLETED\n"));

    // Another key: refused, nothing queued.
    let wrong = c.dir.join("wrong.key");
    std::fs::write(&wrong, format!("{}\n", "ab".repeat(32))).unwrap();
    let (out, err, code) = run("sbatch", &["--wrap", "true"], &wrong);
    assert_eq!(
        (out.as_str(), err.as_str(), code),
        (
            "",
            "sbatch: error: Batch job submission failed: Protocol authentication error (invalid credential signature)\n",
            1
        )
    );
    // No key at all: the command says so and sends nothing.
    let (_, err, code) = run("squeue", &[], &c.dir.join("missing.key"));
    assert!(
        err.starts_with(
            "squeue: error: Unable to contact slurm controller (cannot read the cluster key "
        ),
        "{err}"
    );
    assert_eq!(code, 1);

    // Raw requests: unsigned, replayed and altered ones are refused.
    let (status, body) = raw(&addr, "GET", "/v1/jobs", None, "");
    assert_eq!(
        (status, body.as_str()),
        (
            401,
            r#"{"error":"Protocol authentication error (request not signed)","code":"authentication"}"#
        )
    );
    let key = sluice_proto::auth::read_key(&key_file).unwrap();
    let cred = sluice_proto::auth::Credential {
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64,
        nonce: 7,
    };
    let signed = sluice_proto::auth::sign(&key, &cred, "GET", "/v1/partitions", b"");
    let (status, body) = raw(&addr, "GET", "/v1/partitions", Some(&signed), "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""name":"debug""#), "{body}");
    let (status, body) = raw(&addr, "GET", "/v1/partitions", Some(&signed), "");
    assert_eq!(
        (status, body.as_str()),
        (
            401,
            r#"{"error":"Protocol authentication error (credential replayed)","code":"authentication"}"#
        )
    );
    let other = sluice_proto::auth::Credential { nonce: 8, ..cred };
    let signed = sluice_proto::auth::sign(&key, &other, "GET", "/v1/partitions", b"");
    let (status, _) = raw(&addr, "GET", "/v1/jobs", Some(&signed), "");
    assert_eq!(status, 401, "signed for another path");
    // Only the one job exists.
    let (out, _, _) = run("sacct", &["-n", "-X", "-P", "-o", "JobID"], &key_file);
    assert_eq!(out, format!("{job}\n"));
}
