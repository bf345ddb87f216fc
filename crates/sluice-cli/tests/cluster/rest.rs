//! Tokens (`scontrol token`, Slurm's auth/jwt) and Slurm's REST API on the controller's
//! TCP listener: a user's token lists, submits, shows and cancels the user's own jobs;
//! expired, altered and foreign tokens are refused with 401, another user's job cannot
//! be cancelled, and bad requests get Slurm's errors and change nothing.

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{json, Value};
use sluice_ctld::token::Tokens;

use crate::harness::Cluster;

/// `nobody`: a second user for a test run by root.
pub(crate) const NOBODY: u32 = 65534;

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP request with `headers`; the status and the body as JSON (`Null` if not).
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let (status, _, body) = http_text(addr, method, path, &all, body);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// One HTTP request with `headers`; the status, the head and the body as text.
pub(crate) fn http_text(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    split_reply(s)
}

/// The status, head and body of the reply on `s`, read to its end.
fn split_reply(mut s: TcpStream) -> (u16, String, String) {
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (status, head.to_string(), body.to_string())
}

fn read_reply(s: TcpStream) -> (u16, Value) {
    let (status, _, body) = split_reply(s);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The token's headers, as slurmrestd's clients send them.
pub(crate) fn as_user<'a>(user: &'a str, token: &'a str) -> [(&'a str, &'a str); 2] {
    [("X-SLURM-USER-NAME", user), ("X-SLURM-USER-TOKEN", token)]
}

pub(crate) fn error_numbers(v: &Value) -> Vec<i64> {
    v["errors"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|e| e["error_number"].as_i64())
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The key file, readable by root (the controller's user) only.
pub(crate) fn write_key(name: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::temp_dir().join(format!("sluice-jwt-{}-{name}.key", std::process::id()));
    std::fs::write(&path, b"0123456789abcdef0123456789abcdef").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

pub(crate) fn conf(key: &std::path::Path) -> String {
    format!(
        "{}AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={},max_token_lifespan=3600\n",
        crate::SMALL,
        key.display()
    )
}

#[test]
fn a_users_token_lists_submits_and_cancels_only_its_own_jobs() {
    let key = write_key("rest", 0o600);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("rest", &conf(&key), &["--listen", &addr]);

    // A user's own token, made by the controller (the user cannot read the key).
    let o = c.run_as(NOBODY, "scontrol", &["token"]);
    assert_eq!((o.stderr.as_str(), o.code), ("", 0));
    let token = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("SLURM_JWT=...")
        .to_string();
    let verified = Tokens::load(&key).unwrap().verify(&token, now()).unwrap();
    assert_eq!(verified.user, "nobody");
    assert!(
        (verified.exp - now() - 1800).abs() <= 5,
        "default lifespan 1800 s"
    );
    // Not for someone else, unless root or the SlurmUser asks.
    let o = c.run_as(NOBODY, "scontrol", &["token", "username=root"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "scontrol: error: slurm_fetch_token: error with request: Invalid user id\nError fetching token\n",
            1
        )
    );
    // Not longer than max_token_lifespan, unless root or the SlurmUser asks.
    let o = c.run_as(NOBODY, "scontrol", &["token", "lifespan=7200"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scontrol: error: slurm_fetch_token: error with request: Requested time limit is invalid (missing or exceeds some limit)\nError fetching token\n",
            1
        )
    );
    let o = c.run("scontrol", &["token", "lifespan=7200"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = c.run("scontrol", &["token", "username=nobody", "lifespan=60"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let by_root = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap()
        .to_string();
    let v = Tokens::load(&key).unwrap().verify(&by_root, now()).unwrap();
    assert_eq!(v.user, "nobody");
    assert!((v.exp - now() - 60).abs() <= 5);
    let o = c.run("scontrol", &["token", "lifespan=soon"]);
    assert_eq!(
        (o.stderr.as_str(), o.code),
        (
            "scontrol: error: Invalid numeric value \"soon\" for lifespan.\n",
            1
        )
    );

    // Root's job, which nobody's token must not touch.
    let roots = c.sbatch(&["-J", "roots", "-t", "5", "--wrap", "sleep 300"]);

    // Submit as nobody with the token; the job is nobody's, whatever the body says.
    let script = "#!/bin/sh\nexec /bin/sleep 300\n";
    let body = json!({
        "script": script,
        "job": {
            "name": "viarest", "tasks": 1, "time_limit": 5,
            "current_working_directory": "/tmp", "standard_output": "/dev/null",
            "environment": ["PATH=/bin:/usr/bin"], "user_id": 0,
        }
    })
    .to_string();
    let (status, v) = http(
        &addr,
        "POST",
        "/slurm/v0.0.44/job/submit",
        &as_user("nobody", &token),
        &body,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["errors"], json!([]));
    assert_eq!(v["meta"]["slurm"]["cluster"], "small");
    assert_eq!(v["meta"]["client"]["user"], "nobody");
    let job = v["job_id"].as_u64().unwrap();
    assert_eq!(v["result"]["job_id"].as_u64(), Some(job));
    // The field Sluice does not read is named in a warning.
    assert!(v["warnings"].to_string().contains("#/job/user_id"), "{v}");

    // Listed and shown, with Bearer authentication too.
    let bearer = format!("Bearer {token}");
    let (status, v) = http(
        &addr,
        "GET",
        "/slurm/v0.0.44/jobs",
        &[("Authorization", &bearer)],
        "",
    );
    assert_eq!(status, 200, "{v}");
    let listed: Vec<(u64, String, String)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job_id"].as_u64().unwrap(),
                j["user_name"].as_str().unwrap().to_string(),
                j["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (roots, "root".to_string(), "roots".to_string()),
            (job, "nobody".to_string(), "viarest".to_string())
        ]
    );
    let path = format!("/slurm/v0.0.44/job/{job}");
    let (status, v) = http(&addr, "GET", &path, &as_user("nobody", &token), "");
    assert_eq!(status, 200, "{v}");
    let j = &v["jobs"][0];
    assert_eq!(j["user_id"], NOBODY);
    assert_eq!(
        j["time_limit"],
        json!({"set": true, "infinite": false, "number": 5})
    );
    assert_eq!(j["current_working_directory"], "/tmp");
    c.wait_for("the REST job to run", || {
        let (_, v) = http(&addr, "GET", &path, &as_user("nobody", &token), "");
        v["jobs"][0]["job_state"] == json!(["RUNNING"])
    });

    // Another user's job: refused, and it runs on.
    let (status, v) = http(
        &addr,
        "DELETE",
        &format!("/slurm/v0.0.44/job/{roots}"),
        &as_user("nobody", &token),
        "",
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(error_numbers(&v), [2002]);
    assert_eq!(v["errors"][0]["error"], "Access/permission denied");
    assert_eq!(c.state(roots), "RUNNING");

    // Bad tokens: 401 with Slurm's error, nothing done.
    let tokens = Tokens::load(&key).unwrap();
    let expired = tokens.make("nobody", 60, now() - 3600);
    let foreign = Tokens::with_key(b"another cluster's key").make("nobody", 60, now());
    let mut altered = token.clone().into_bytes();
    let dot = token.find('.').unwrap();
    altered[dot + 5] = if altered[dot + 5] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (bad, errno, error) in [
        (&expired, 6001, "Authentication credential expired"),
        (&foreign, 6000, "Invalid authentication credential"),
        (&altered, 6000, "Invalid authentication credential"),
    ] {
        let (status, v) = http(&addr, "DELETE", &path, &as_user("nobody", bad), "");
        assert_eq!((status, error_numbers(&v)), (401, vec![errno]), "{v}");
        assert_eq!(v["errors"][0]["error"], error);
    }
    // Nobody's token cannot speak for root.
    let (status, _) = http(&addr, "DELETE", &path, &as_user("root", &token), "");
    assert_eq!(status, 401);
    assert_eq!(c.state(job), "RUNNING");

    // Its own job: cancelled.
    let (status, v) = http(&addr, "DELETE", &path, &as_user("nobody", &token), "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["errors"], json!([]));
    assert_eq!(c.wait_ended(job), "CANCELLED by 65534");
    assert_eq!(c.state(roots), "RUNNING");
    let o = c.run("scancel", &[&roots.to_string()]);
    assert_eq!(o.code, 0);
    let _ = std::fs::remove_file(&key);
}

#[test]
fn bad_requests_get_slurms_errors_and_change_nothing() {
    let key = write_key("bad", 0o600);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("restbad", &conf(&key), &["--listen", &addr]);
    let o = c.run("scontrol", &["token"]);
    let token = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap()
        .to_string();
    let me = as_user("root", &token);
    let jobs = |c: &Cluster| c.run("squeue", &["-h", "-t", "all"]).stdout;
    let before = jobs(&c);

    // The resources answer.
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/ping", &me, "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["pings"][0]["responding"], true);
    assert_eq!(v["meta"]["plugin"]["data_parser"], "data_parser/v0.0.44");
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/diag", &me, "");
    assert_eq!(status, 200, "{v}");
    assert!(v["statistics"]["req_time"]["number"].as_i64().unwrap() > 0);
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/nodes", &me, "");
    assert_eq!(status, 200, "{v}");
    let names: Vec<&str> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["n1", "n2"]);
    assert_eq!(v["nodes"][0]["cpus"], 2);
    assert_eq!(v["nodes"][0]["state"], json!(["IDLE"]));
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/node/n2", &me, "");
    assert_eq!((status, v["nodes"][0]["name"].clone()), (200, json!("n2")));
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/node/n9", &me, "");
    assert_eq!((status, error_numbers(&v)), (422, vec![2018]), "{v}");
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/partitions", &me, "");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["partitions"][0]["name"], "debug");
    assert_eq!(v["partitions"][0]["nodes"]["configured"], "n[1-2]");
    assert_eq!(
        v["partitions"][0]["maximums"]["time"],
        json!({"set": true, "infinite": false, "number": 60})
    );
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/partition/nope", &me, "");
    assert_eq!((status, error_numbers(&v)), (422, vec![2000]), "{v}");

    // An unknown version or path.
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.99/ping", &me, "");
    assert_eq!((status, error_numbers(&v)), (404, vec![11008]), "{v}");
    assert_eq!(v["errors"][0]["error"], "Invalid or unknown URL path");
    // A method the path does not take.
    let (status, v) = http(&addr, "PUT", "/slurm/v0.0.44/jobs", &me, "");
    assert_eq!((status, error_numbers(&v)), (405, vec![9007]), "{v}");
    // An unknown job, a job id that is not one.
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/job/999999", &me, "");
    assert_eq!((status, error_numbers(&v)), (404, vec![2017]), "{v}");
    assert_eq!(v["errors"][0]["error"], "Invalid job id specified");
    let (status, v) = http(&addr, "DELETE", "/slurm/v0.0.44/job/999999", &me, "");
    assert_eq!((status, error_numbers(&v)), (404, vec![2017]), "{v}");
    let (status, v) = http(&addr, "GET", "/slurm/v0.0.44/job/abc", &me, "");
    assert_eq!((status, error_numbers(&v)), (422, vec![9000]), "{v}");
    // Bodies that are not JSON, of the wrong types, without a script, refused by the
    // controller.
    let submit = |body: &str| http(&addr, "POST", "/slurm/v0.0.44/job/submit", &me, body);
    let (status, v) = submit("{\"script\": ");
    assert_eq!((status, error_numbers(&v)), (400, vec![9001]), "{v}");
    let (status, v) = submit(r##"{"script": "#!/bin/sh\n", "job": {"tasks": "many"}}"##);
    assert_eq!((status, error_numbers(&v)), (422, vec![9216]), "{v}");
    assert_eq!(v["errors"][0]["source"], "#/job/tasks");
    let (status, v) = submit(r#"{"job": {"name": "x"}}"#);
    assert_eq!((status, error_numbers(&v)), (422, vec![2009]), "{v}");
    let (status, v) = submit(
        r##"{"script": "#!/bin/sh\n", "job": {"partition": "nope", "current_working_directory": "/tmp"}}"##,
    );
    assert_eq!((status, error_numbers(&v)), (422, vec![2000]), "{v}");
    assert_eq!(
        v["errors"][0]["description"],
        "Invalid partition name specified"
    );
    // A body larger than the controller reads: refused from its length alone.
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /slurm/v0.0.44/job/submit HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-SLURM-USER-NAME: root\r\nX-SLURM-USER-TOKEN: {token}\r\nContent-Length: {}\r\n\r\n{{\"script\": \"",
        64 << 20
    )
    .unwrap();
    let (status, v) = read_reply(s);
    assert_eq!((status, error_numbers(&v)), (413, vec![12016]), "{v}");
    // Without a token the TCP listener wants the cluster credential.
    let (status, _) = http(&addr, "GET", "/slurm/v0.0.44/ping", &[], "");
    assert_eq!(status, 401);

    assert_eq!(jobs(&c), before, "nothing was queued");
    let _ = std::fs::remove_file(&key);
}

#[test]
fn a_key_others_can_read_stops_the_controller() {
    let key = write_key("open", 0o644);
    let dir = std::env::temp_dir().join(format!("sluice-t-{}-jwtopen", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("slurm.conf"), conf(&key)).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["up", "--controller-only", "--state-dir"])
        .arg(dir.join("state"))
        .arg("--config")
        .arg(dir.join("slurm.conf"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "auth/jwt: key file is insecure: '{}' mode=0644",
            key.display()
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("is up"),
        "refused before it said it was up: {stderr}"
    );
    let _ = std::fs::remove_file(&key);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_auth_jwt_there_are_no_tokens() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = Cluster::start_args("nojwt", crate::SMALL, &["--listen", &addr]);
    let o = c.run("scontrol", &["token"]);
    assert_eq!(
        (o.stdout.as_str(), o.stderr.as_str(), o.code),
        (
            "",
            "scontrol: error: slurm_fetch_token: error with request: Required plugin type not loaded or initialized\nError fetching token\n",
            1
        )
    );
    // A token, however made, is refused; the API still answers on the Unix socket and
    // to signed requests.
    let token = Tokens::with_key(b"some key").make("root", 60, now());
    let (status, v) = http(
        &addr,
        "GET",
        "/slurm/v0.0.44/ping",
        &as_user("root", &token),
        "",
    );
    assert_eq!((status, error_numbers(&v)), (401, vec![6000]), "{v}");
    // No tokens, no dashboard on the controller's port: the gate refuses its paths.
    let (status, _) = http(&addr, "GET", "/ui", &[], "");
    assert_eq!(status, 401);
}

#[test]
fn slurmrestd_passes_tokens_and_local_users_through_to_the_controller() {
    use std::os::unix::process::CommandExt;
    let key = write_key("restd", 0o600);
    let addr = format!("127.0.0.1:{}", free_port());
    let c = Cluster::start_args("restd", &conf(&key), &["--listen", &addr]);
    let front = format!("127.0.0.1:{}", free_port());
    let socket = c.dir.join("rest.sock");
    // The link `sluice up` made, as a user finds it on PATH.
    let mut restd = std::process::Command::new(c.dir.join("state/bin/slurmrestd"))
        .args(["-a", "rest_auth/local,rest_auth/jwt", &front])
        .arg(format!("unix:{}", socket.display()))
        .env("SLUICE_STATE_DIR", c.dir.join("state"))
        .env("SLUICE_CONTROLLER", &addr)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed if the test fails before it stops slurmrestd itself.
    struct Stop(Option<u32>);
    impl Drop for Stop {
        fn drop(&mut self) {
            if let Some(pid) = self.0 {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let mut stop = Stop(Some(restd.id()));
    c.wait_for("slurmrestd to listen", || {
        socket.exists() && TcpStream::connect(&front).is_ok()
    });
    let o = c.run_as(NOBODY, "scontrol", &["token"]);
    let token = o
        .stdout
        .trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap()
        .to_string();
    // By token, through the TCP socket: the token's user.
    let (status, v) = http(
        &front,
        "GET",
        "/slurm/v0.0.44/ping",
        &as_user("nobody", &token),
        "",
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["meta"]["client"]["user"], "nobody");
    // Without one: refused by the controller.
    let (status, _) = http(&front, "GET", "/slurm/v0.0.44/ping", &[], "");
    assert_eq!(status, 401);
    // Through the Unix socket: slurmrestd's own user (this test's, root).
    let mut s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    write!(
        s,
        "GET /slurm/v0.0.44/jobs HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let body: Value = serde_json::from_str(reply.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["meta"]["client"]["user"], "root");
    assert_eq!(body["jobs"], json!([]));
    // Another user: refused by slurmrestd (rest_auth/local), even when the socket's
    // mode lets it connect.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let other = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
             s.sendall(b'GET /slurm/v0.0.44/ping HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n'); \
             r=b''.join(iter(lambda: s.recv(4096), b'')); print(r.decode())",
        ])
        .arg(&socket)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&other.stdout);
    assert!(
        out.starts_with("HTTP/1.1 401") && out.ends_with("Authentication failure\n"),
        "{out:?} {}",
        String::from_utf8_lossy(&other.stderr)
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(restd.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = restd.wait().unwrap();
    stop.0 = None;
    assert!(status.success());
    let _ = std::fs::remove_file(&key);
}

#[test]
fn the_controller_serves_the_dashboard_to_browsers_logged_in_with_a_token() {
    let key = write_key("dash", 0o600);
    let addr = format!("127.0.0.1:{}", free_port());
    let conf = format!("{}PrivateData=jobs\n", conf(&key));
    let c = Cluster::start_args("dash", &conf, &["--listen", &addr]);
    let submit = |uid: u32| {
        let o = c.run_as(
            uid,
            "sbatch",
            &[
                "--parsable",
                "--hold",
                "-D",
                "/tmp",
                "-o",
                "/dev/null",
                "--wrap",
                "sleep 100",
            ],
        );
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout.trim().to_string()
    };
    let (roots, nobodys) = (submit(0), submit(NOBODY));
    let o = c.run_as(NOBODY, "scontrol", &["token"]);
    let line = o.stdout.trim().to_string();
    let token = line.strip_prefix("SLURM_JWT=").unwrap().to_string();

    // No token yet: the login form, whatever the page.
    let (status, _, body) = http_text(&addr, "GET", "/ui/nodes", &[], "");
    assert_eq!(status, 401);
    assert!(
        body.contains("action=\"/ui/login\"") && body.contains("value=\"/ui/nodes\""),
        "{body}"
    );

    // Logging in with the line `scontrol token` printed: the controller names the user,
    // and the browser goes back where it was going.
    let form = format!("token={}&next=%2Fui%2Fnodes", line.replace('=', "%3D"));
    let form_type = [("Content-Type", "application/x-www-form-urlencoded")];
    let (status, head, _) = http_text(&addr, "POST", "/ui/login", &form_type, &form);
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("location: /ui/nodes"), "{head}");
    assert!(
        head.contains(&format!(
            "set-cookie: sluice_token={token}; HttpOnly; SameSite=Strict; Path=/ui"
        )),
        "{head}"
    );
    assert!(head.contains("set-cookie: sluice_user=nobody;"), "{head}");

    // The queue as nobody's squeue shows it under PrivateData=jobs: their job, not root's.
    let cookie = format!("sluice_token={token}; sluice_user=nobody");
    let (status, _, page) = http_text(&addr, "GET", "/ui", &[("Cookie", &cookie)], "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("as nobody"), "{page}");
    let listed = |page: &str, id: &str| page.contains(&format!("href=\"/ui/job/{id}\""));
    assert!(listed(&page, &nobodys), "{page}");
    assert!(!listed(&page, &roots), "{page}");
    let o = c.run_as(NOBODY, "squeue", &["-h", "-o", "%i"]);
    assert_eq!(o.stdout.trim(), nobodys);
    // Root's job page is not theirs to see either.
    let (status, _, page) = http_text(
        &addr,
        "GET",
        &format!("/ui/job/{roots}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(status, 404, "{page}");
    // The name cookie is only shown: a browser claiming to be root is still nobody.
    let claimed = format!("sluice_token={token}; sluice_user=root");
    let (_, _, page) = http_text(&addr, "GET", "/ui", &[("Cookie", &claimed)], "");
    assert!(listed(&page, &nobodys) && !listed(&page, &roots), "{page}");

    // An altered token: the login form again, saying why.
    let altered = format!("sluice_token={}x; sluice_user=nobody", token);
    let (status, _, page) = http_text(&addr, "GET", "/ui", &[("Cookie", &altered)], "");
    assert_eq!(status, 401);
    assert!(page.contains("log in again"), "{page}");
    // Not a token, a refused one, and a login that would lead elsewhere.
    let (status, _, page) = http_text(
        &addr,
        "POST",
        "/ui/login",
        &form_type,
        "token=hello&next=%2Fui",
    );
    assert_eq!(status, 401);
    assert!(page.contains("That is not a token."), "{page}");
    let forged = Tokens::with_key(b"another cluster's key").make("root", 60, now());
    let (status, _, page) = http_text(
        &addr,
        "POST",
        "/ui/login",
        &form_type,
        &format!("token={forged}&next=%2Fui"),
    );
    assert_eq!(status, 401);
    assert!(page.contains("refused that token"), "{page}");
    let (status, head, _) = http_text(
        &addr,
        "POST",
        "/ui/login",
        &form_type,
        &format!("token={token}&next=https%3A%2F%2Fevil.example%2Fui"),
    );
    assert_eq!(status, 303);
    assert!(head.contains("location: /ui\r\n"), "{head}");
    // Logging out forgets both cookies.
    let (status, head, _) = http_text(&addr, "GET", "/ui/logout", &[("Cookie", &cookie)], "");
    assert_eq!(status, 303);
    assert!(
        head.contains("set-cookie: sluice_token=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0"),
        "{head}"
    );
    let _ = std::fs::remove_file(&key);
}
