//! An agent on a host of its own (`slurmd`): it hears only requests signed with the
//! cluster key, each once, takes orders only from the controller's uid, and vouches for
//! local callers with credentials it then accepts. Runs as any user (no root needed).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use sluice_noded::{TcpSetup, Transport};
use sluice_proto::auth::{self, Credential, VouchRequest, Vouched, VOUCH_PATH};
use sluice_proto::types::{JobState, TerminateOrder};

const KEY: [u8; 32] = [7; 32];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// One raw HTTP request; its status and body.
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

/// A credential for `uid` signed with `key`, for `method path` with `body`.
fn signed(key: &[u8], uid: u32, method: &str, path: &str, body: &str) -> String {
    let c = Credential {
        uid,
        gid: uid,
        time: now(),
        nonce: auth::nonce(),
    };
    auth::sign(key, &c, method, path, body.as_bytes())
}

#[test]
fn an_agent_hears_only_signed_requests_and_obeys_only_the_controller() {
    let dir = std::env::temp_dir().join(format!("sluice-noded-tcp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let vouch: PathBuf = dir.join("run/auth.sock");
    let setup = TcpSetup {
        listen: addr.parse().unwrap(),
        auth: sluice_proto::auth::Scheme::Key(KEY.to_vec()),
        // Nobody there: its registration is refused, quietly retried.
        controller: "127.0.0.1:1".into(),
        backups: Vec::new(),
        vouch_socket: Some(vouch.clone()),
        job_env: Vec::new(),
        hardware: None,
        conf_hash: None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let spool = dir.clone();
    let agent = std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(sluice_noded::run_with(
                &spool,
                "n1",
                Transport::Tcp(Box::new(setup)),
                async {
                    let _ = stopped.await;
                },
            ))
    });
    let me = nix::unistd::geteuid().as_raw();
    let start = Instant::now();
    loop {
        if TcpStream::connect(&addr).is_ok() && vouch.exists() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the agent did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Unsigned, wrongly keyed, replayed: refused on their credential.
    assert_eq!(
        raw(&addr, "GET", "/v1/ping", None, ""),
        (
            401,
            r#"{"error":"Protocol authentication error (request not signed)","code":"authentication"}"#
                .to_string()
        )
    );
    let wrong = signed(&[8; 32], me, "GET", "/v1/ping", "");
    let (status, body) = raw(&addr, "GET", "/v1/ping", Some(&wrong), "");
    assert_eq!(status, 401);
    assert!(body.contains("invalid credential signature"), "{body}");
    let good = signed(&KEY, me, "GET", "/v1/ping", "");
    assert_eq!(raw(&addr, "GET", "/v1/ping", Some(&good), "").0, 200);
    let (status, body) = raw(&addr, "GET", "/v1/ping", Some(&good), "");
    assert_eq!(status, 401);
    assert!(body.contains("credential replayed"), "{body}");

    // Signed with the key but for a user's uid: an order is refused, only the
    // controller's (this process's, or root's) may end a job.
    let order = serde_json::to_string(&TerminateOrder {
        job_id: 1,
        state: JobState::Cancelled,
        kill_wait: 1,
        run: None,
    })
    .unwrap();
    let user = if me == 4242 { 4243 } else { 4242 };
    let as_user = signed(&KEY, user, "POST", "/v1/terminate", &order);
    let (status, body) = raw(&addr, "POST", "/v1/terminate", Some(&as_user), &order);
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            r#"{"error":"only the controller may end jobs","code":"access_denied"}"#
        )
    );
    let as_controller = signed(&KEY, me, "POST", "/v1/terminate", &order);
    assert_eq!(
        raw(&addr, "POST", "/v1/terminate", Some(&as_controller), &order).0,
        200
    );

    // The vouching socket: a credential for this process's own uid, bound to the one
    // request it asked for, which the agent then hears.
    let v: Vouched = sluice_proto::Client::new(&vouch)
        .post(VOUCH_PATH, &VouchRequest::new("GET", "/v1/ping", b""))
        .unwrap();
    assert!(
        v.credential.starts_with(&format!("{me}:")),
        "{}",
        v.credential
    );
    assert_eq!(
        raw(&addr, "GET", "/v1/ping", Some(&v.credential), "").0,
        200
    );
    let v: Vouched = sluice_proto::Client::new(&vouch)
        .post(VOUCH_PATH, &VouchRequest::new("GET", "/v1/ping", b""))
        .unwrap();
    assert_eq!(
        raw(&addr, "POST", "/v1/terminate", Some(&v.credential), &order).0,
        401
    );
    // The same through the client, as srun signs: it asks the agent, then sends.
    let client = sluice_proto::Client::signed(&addr, sluice_proto::Signer::Vouch(vouch.clone()));
    client.get::<serde_json::Value>("/v1/ping").unwrap();

    // Orders carry their controller's fencing epoch: once one of epoch 5 came, one of
    // epoch 4 (a controller taken over from) is refused, and nothing is done.
    let of = |epoch| sluice_proto::Client::tcp(&addr, KEY.to_vec()).with_epoch(Some(epoch));
    let order: serde_json::Value = serde_json::from_str(&order).unwrap();
    of(5)
        .post::<_, serde_json::Value>("/v1/terminate", &order)
        .unwrap();
    match of(4).post::<_, serde_json::Value>("/v1/terminate", &order) {
        Err(sluice_proto::ClientError::Status { code, message, .. }) => {
            assert_eq!(code, sluice_proto::error::ErrorCode::Fenced);
            assert_eq!(
                message,
                "this node follows a newer controller (epoch 5, the order's 4)"
            );
        }
        other => panic!("an older epoch's order was not refused: {other:?}"),
    }
    of(6)
        .post::<_, serde_json::Value>("/v1/terminate", &order)
        .unwrap();
    assert!(of(5)
        .post::<_, serde_json::Value>("/v1/terminate", &order)
        .is_err());

    stop.send(()).unwrap();
    agent.join().unwrap().unwrap();
    assert!(
        !vouch.exists(),
        "the vouching socket is removed when the agent stops"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
