//! The stable address of service jobs (`/services/NAME/` on the controller's TCP
//! listener): a job submitted as a service runs a small Python HTTP server, reached
//! through the controller with GET, POST, a streamed answer and an upgrade; its address
//! is in `scontrol show job`; a request while the server is restarted in place, or
//! while the service waits to start, is held until it is back;
//! an unknown name is 404 and an ended service 503. The proxy's overhead is measured.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Cluster;
use crate::rest::{free_port, http, http_text};

/// An OpenAI-style stand-in: `GET` answers what it was asked (path, headers), `POST
/// /v1/completions` echoes its body, `GET /stream` sends three chunks 400 ms apart,
/// `GET /raw` with `Upgrade: echo` switches protocols and sends back what it gets in
/// capitals (a WebSocket's shape without its framing).
/// It writes its pid to `server.pid` once it listens.
const SERVER: &str = r#"
import http.server, json, os, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, obj):
        b = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/raw" and self.headers.get("Upgrade") == "echo":
            self.send_response(101)
            self.send_header("Upgrade", "echo")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:
                d = self.connection.recv(4096)
                if not d: break
                self.connection.sendall(d.upper())
            self.close_connection = True
            return
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(3):
                if i: time.sleep(0.4)
                d = ("data: token%d\n\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        self.answer({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode()
        self.answer({"path": self.path, "echo": body})
s = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
open("server.pid", "w").write(str(os.getpid()))
s.serve_forever()
"#;

/// A service job named `name` declaring `port`, restarted in place whenever its
/// server exits, running the stand-in there (held first if `hold`).
fn submit_service(c: &Cluster, name: &str, port: u16, hold: bool) -> u64 {
    let script = format!(
        "#!/bin/sh\n#SBATCH --restart=always\n#SBATCH --port={port}\nexec python3 server.py {port}\n"
    );
    let file = format!("{name}.sh");
    std::fs::write(c.work().join(&file), script).unwrap();
    let port_arg = format!("--port={port}");
    let mut args = vec!["-J", name, "-t", "10", "-o", "/dev/null", &port_arg];
    if hold {
        args.push("-H");
    }
    args.push(&file);
    c.sbatch(&args)
}

/// Median of `n` timings of `f`, milliseconds.
fn median_ms(n: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..n)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[n / 2]
}

#[test]
fn a_service_is_reached_at_its_stable_address_while_it_lives() {
    let listen = free_port();
    let addr = format!("127.0.0.1:{listen}");
    let c = Cluster::start_args("svcproxy", crate::SMALL, &["--listen", &addr]);
    let port = free_port();
    let direct = format!("127.0.0.1:{port}");
    std::fs::write(c.work().join("server.py"), SERVER).unwrap();
    let id = submit_service(&c, "echo", port, false);
    let plain = c.sbatch(&["-J", "plain", "-t", "5", "--wrap", "sleep 300"]);
    c.wait_for("the server to answer", || {
        TcpStream::connect(&direct).is_ok()
    });

    // Its address is in `scontrol show job`, on a line of its own; a plain job's
    // record has none.
    let show = c.run("scontrol", &["show", "job", &id.to_string()]);
    let url = format!("http://{addr}/services/echo/");
    assert!(
        show.stdout.contains(&format!("\n   ServiceURL={url}\n")),
        "{}",
        show.stdout
    );
    let show_plain = c.run("scontrol", &["show", "job", &plain.to_string()]);
    assert!(
        !show_plain.stdout.contains("ServiceURL"),
        "{}",
        show_plain.stdout
    );
    assert!(show_plain.stdout.contains("JobName=plain"));

    // GET: the path's rest and the query reach the service, with the forwarded
    // headers; the controller's credentials do not.
    let (status, v) = http(
        &addr,
        "GET",
        "/services/echo/v1/models?limit=2",
        &[
            ("X-SLURM-USER-TOKEN", "secret"),
            ("Authorization", "Bearer sk-1"),
        ],
        "",
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["path"], "/v1/models?limit=2");
    let h = &v["headers"];
    assert_eq!(h["host"], direct.as_str());
    assert_eq!(h["x-forwarded-for"], "127.0.0.1");
    assert_eq!(h["x-forwarded-host"], "t");
    assert_eq!(h["x-forwarded-prefix"], "/services/echo");
    assert_eq!(h["x-forwarded-proto"], "http");
    assert_eq!(h["authorization"], "Bearer sk-1");
    assert_eq!(h["x-slurm-user-token"], Value::Null);

    // POST with a body.
    let body = r#"{"model":"m","prompt":"hello"}"#;
    let (status, v) = http(&addr, "POST", "/services/echo/v1/completions", &[], body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["path"].as_str(), v["echo"].as_str()),
        (Some("/v1/completions"), Some(body))
    );

    // A streamed answer flows through as it comes: the first token arrives well
    // before the last is sent (800 ms after it).
    let mut s = TcpStream::connect(&addr).unwrap();
    let asked = Instant::now();
    write!(
        s,
        "GET /services/echo/stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    let mut first = None;
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if first.is_none() && String::from_utf8_lossy(&got).contains("token0") {
            first = Some(asked.elapsed());
        }
    }
    let all = asked.elapsed();
    let text = String::from_utf8_lossy(&got).to_string();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("data: token0") && text.contains("data: token2"),
        "{text}"
    );
    let first = first.expect("a first token");
    assert!(all >= Duration::from_millis(800), "{all:?}");
    assert!(
        all - first >= Duration::from_millis(600),
        "first {first:?}, all {all:?}: not streamed"
    );

    // An upgrade is joined end to end once the service switches protocols.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /services/echo/raw HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(
            s.read(&mut b).unwrap(),
            1,
            "{}",
            String::from_utf8_lossy(&head)
        );
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: echo"), "{head}");
    for word in ["hello", "again"] {
        s.write_all(word.as_bytes()).unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, word.to_uppercase().as_bytes());
    }
    drop(s);

    // Without its slash, redirected; an unknown name is 404.
    let (status, head, _) = http_text(&addr, "GET", "/services/echo", &[], "");
    assert_eq!(status, 308);
    assert!(head.contains("location: /services/echo/"), "{head}");
    let (status, _, text) = http_text(&addr, "GET", "/services/nosuch/x", &[], "");
    assert_eq!((status, text.as_str()), (404, "no service nosuch\n"));
    // Nothing else on the port goes without a credential.
    let (status, _, _) = http_text(&addr, "GET", "/v1/jobs", &[], "");
    assert_eq!(status, 401);

    // The proxy's overhead: median latency of a GET, direct and through the address
    // (a new connection each, as the helper makes).
    let direct_ms = median_ms(41, || {
        assert_eq!(http(&direct, "GET", "/v1/models", &[], "").0, 200);
    });
    let proxied_ms = median_ms(41, || {
        assert_eq!(
            http(&addr, "GET", "/services/echo/v1/models", &[], "").0,
            200
        );
    });
    println!(
        "stable address overhead: median GET {direct_ms:.2} ms direct, {proxied_ms:.2} ms through /services/echo/ (+{:.2} ms)",
        proxied_ms - direct_ms
    );

    // Its server dies: a request made at once is held until the supervisor has
    // restarted it in place (`--restart=always`).
    let pid: i32 = std::fs::read_to_string(c.work().join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::fs::remove_file(c.work().join("server.pid")).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    c.wait_for("the server to be gone", || {
        TcpStream::connect(&direct).is_err()
    });
    let asked = Instant::now();
    let (status, v) = http(&addr, "GET", "/services/echo/again", &[], "");
    assert_eq!((status, v["path"].as_str()), (200, Some("/again")), "{v}");
    let held = asked.elapsed();
    assert!(
        c.work().join("server.pid").exists(),
        "answered by the new server"
    );
    println!("held {held:?} while the server restarted");

    // A service that runs nowhere yet (held): a request waits for it, then is
    // answered 503 with Retry-After; released while a request waits, it answers it.
    let later_port = free_port();
    let later = submit_service(&c, "later", later_port, true);
    let asked = Instant::now();
    let (status, head, text) = http_text(&addr, "GET", "/services/later/", &[], "");
    assert_eq!(
        (status, text.as_str()),
        (503, "service later: not running now\n")
    );
    assert!(head.contains("retry-after: 5"), "{head}");
    assert!(
        asked.elapsed() >= Duration::from_millis(4500),
        "{:?}",
        asked.elapsed()
    );
    let waiting = {
        let addr = addr.clone();
        std::thread::spawn(move || http(&addr, "GET", "/services/later/x", &[], ""))
    };
    std::thread::sleep(Duration::from_millis(300));
    let o = c.run("scontrol", &["release", &later.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let (status, v) = waiting.join().unwrap();
    assert_eq!((status, v["path"].as_str()), (200, Some("/x")), "{v}");

    // Ended: 503 with Retry-After, at once.
    let o = c.run("scancel", &[&id.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_ended(id);
    c.wait_for("the address to say it ended", || {
        http_text(&addr, "GET", "/services/echo/", &[], "").0 == 503
    });
    let (status, head, text) = http_text(&addr, "GET", "/services/echo/v1/models", &[], "");
    assert_eq!((status, text.as_str()), (503, "service echo: ended\n"));
    assert!(head.contains("retry-after: 5"), "{head}");
}

#[test]
fn a_service_port_in_service_tcp_ports_is_forwarded_byte_for_byte() {
    // The controller on 127.0.0.2, the service on 127.0.0.1 (this host's node): the
    // same port on both, as on a controller's host and a node.
    let listen = free_port();
    let addr = format!("127.0.0.2:{listen}");
    let port = free_port();
    let site = format!("ServiceTcpPorts={port}-{port}\n");
    let c = Cluster::start_full(
        "svctcp",
        crate::SMALL,
        &[],
        &["--listen", &addr],
        &[("sluice.conf", &site)],
    );
    std::fs::write(c.work().join("server.py"), SERVER).unwrap();
    let id = submit_service(&c, "tcp", port, false);
    let direct = format!("127.0.0.1:{port}");
    c.wait_for("the server to answer", || {
        TcpStream::connect(&direct).is_ok()
    });
    let show = c.run("scontrol", &["show", "job", &id.to_string()]);
    assert!(
        show.stdout.contains(&format!(
            "\n   ServiceURL=http://{addr}/services/tcp/ ServiceTCP=127.0.0.2:{port}\n"
        )),
        "{}",
        show.stdout
    );
    // Bytes as sent: no header added, the path not rewritten.
    let through = format!("127.0.0.2:{port}");
    let (status, v) = http(&through, "GET", "/as/is", &[], "");
    assert_eq!((status, v["path"].as_str()), (200, Some("/as/is")), "{v}");
    assert_eq!(v["headers"]["x-forwarded-for"], Value::Null);
    assert_eq!(v["headers"]["host"], "t");
    // Ended: the connection is closed without a byte.
    let o = c.run("scancel", &[&id.to_string()]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    c.wait_ended(id);
    c.wait_for("the forward to close at once", || {
        let mut s = TcpStream::connect(&through).unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).map(|n| n == 0).unwrap_or(false)
    });
}
