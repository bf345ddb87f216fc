//! A small blocking HTTP/1.1 client over a Unix socket (or signed TCP, see
//! [`crate::auth`]), for the commands, and for the daemons' messages to each other.
//!
//! Over TCP every request is signed by a [`Signer`]: with the cluster key itself (the
//! daemons, root) or by the local agent, which vouches for this process's uid (users'
//! commands, which never hold the key).
//!
//! The commands are short-lived processes that make one or two requests; a blocking
//! client with no runtime starts in microseconds. It speaks just enough HTTP for the
//! controller and agents: one request per connection, JSON bodies, responses with
//! `Content-Length` or chunked transfer encoding (streams of JSON lines).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::types::ErrorReply;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket could not be reached (no controller running there).
    #[error("cannot reach {}: {source}", socket.display())]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The connection broke.
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
    /// The server answered with an error (its message is Slurm's text).
    #[error("{message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// What went wrong (from the reply, else from the status).
        code: crate::error::ErrorCode,
        /// The server's message.
        message: String,
    },
    /// The answer was not what was expected.
    #[error("unexpected reply: {0}")]
    Decode(String),
    /// No credential could be had for a request over TCP (the local agent that vouches
    /// for callers is not there or refused); nothing was sent.
    #[error("cannot get a credential from {}: {message}", socket.display())]
    Credential {
        /// The vouching socket.
        socket: PathBuf,
        /// Why.
        message: String,
    },
}

/// Who signs a request over TCP.
#[derive(Clone)]
pub enum Signer {
    /// This process, with the cluster key, for its own real uid and gid.
    Key(Arc<Vec<u8>>),
    /// The local agent listening on this socket, which vouches for this process's uid
    /// and gid as its socket sees them ([`crate::auth::VOUCH_PATH`]).
    Vouch(PathBuf),
    /// munged at this socket (`auth/munge`, see [`crate::munge`]).
    Munge(PathBuf),
    /// An auth/jwt token (`scontrol token`), sent as `Authorization: Bearer`: the
    /// controller admits the request as the token's user.
    Token(Arc<String>),
}

impl Signer {
    /// The header line (with its `\r\n`) that carries the credential for `method path`
    /// with `body`.
    fn header(&self, method: &str, path: &str, body: &[u8]) -> Result<String, ClientError> {
        match self {
            Signer::Token(token) => Ok(format!("Authorization: Bearer {token}\r\n")),
            other => Ok(format!(
                "{}: {}\r\n",
                crate::auth::AUTH_HEADER,
                other.credential(method, path, body)?
            )),
        }
    }

    /// The [`crate::auth::AUTH_HEADER`] value for `method path` with `body`.
    fn credential(&self, method: &str, path: &str, body: &[u8]) -> Result<String, ClientError> {
        match self {
            Signer::Token(_) => Err(ClientError::Decode(
                "a token is not a signed credential".into(),
            )),
            Signer::Key(key) => {
                // SAFETY: getuid/getgid cannot fail and touch no memory.
                let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
                let c = crate::auth::Credential {
                    uid,
                    gid,
                    time: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs() as i64)
                        .unwrap_or(0),
                    nonce: crate::auth::nonce(),
                };
                Ok(crate::auth::sign(key, &c, method, path, body))
            }
            Signer::Munge(socket) => {
                crate::munge::encode(socket, method, path, body).map_err(|message| {
                    ClientError::Credential {
                        socket: socket.clone(),
                        message,
                    }
                })
            }
            Signer::Vouch(socket) => {
                let req = crate::auth::VouchRequest::new(method, path, body);
                Client::new(socket)
                    .post::<_, crate::auth::Vouched>(crate::auth::VOUCH_PATH, &req)
                    .map(|v| v.credential)
                    .map_err(|e| ClientError::Credential {
                        socket: socket.clone(),
                        message: match e {
                            ClientError::Connect { source, .. } => {
                                crate::oserror::describe(&source)
                            }
                            other => other.to_string(),
                        },
                    })
            }
        }
    }
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never the key, nor the token.
            Signer::Key(_) => f.write_str("Key"),
            Signer::Token(_) => f.write_str("Token"),
            Signer::Vouch(s) => f.debug_tuple("Vouch").field(s).finish(),
            Signer::Munge(s) => f.debug_tuple("Munge").field(s).finish(),
        }
    }
}

/// How long a TCP connection may take to be made (Slurm's `MessageTimeout` default).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Status, lower-cased headers, and the connection positioned at the body.
type Response = (u16, Vec<(String, String)>, BufReader<Box<dyn Conn>>);

/// A connection: a Unix or TCP stream.
trait Conn: Read + Write + Send {}
impl<T: Read + Write + Send> Conn for T {}

/// The header that carries a controller's fencing epoch: on its answers (which a
/// client that saw a newer one takes for a former controller's), and on its orders to
/// agents (which refuse those of an epoch older than the newest they have seen).
pub const EPOCH_HEADER: &str = "x-sluice-epoch";

/// The header a standby controller's refusals carry (with [`ErrorCode::InStandby`]), so
/// that a client passes on to the next controller without reading the reply.
///
/// [`ErrorCode::InStandby`]: crate::error::ErrorCode::InStandby
pub const STANDBY_HEADER: &str = "x-sluice-standby";

/// How long a TCP connection to one of several controllers may take to be made before
/// the next is tried (a host cut off answers nothing at all).
pub const FAILOVER_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A client for one server socket, or for the first active one of several controllers.
#[derive(Clone, Debug)]
pub struct Client {
    socket: PathBuf,
    /// Who signs requests to a TCP server (`socket` then holds `host:port`); `None`:
    /// `socket` is a Unix socket.
    signer: Option<Signer>,
    /// How long a request may wait for the server to take or answer it (each read and
    /// write); `None`: as long as it takes. A TCP connection is given
    /// [`CONNECT_TIMEOUT`] (or this, if shorter) to be made.
    timeout: Option<Duration>,
    /// The backup controllers (`host:port`), tried in order after `socket` when it
    /// cannot be reached, stands by, or is a former controller ([`Client::controllers`]).
    others: Vec<PathBuf>,
    /// Which controller answered last (an index into `socket` then `others`): asked
    /// first next time.
    preferred: Arc<AtomicUsize>,
    /// How long to keep asking the controllers in turn while none is active (a
    /// takeover under way); `None`: one round.
    patience: Option<Duration>,
    /// The newest fencing epoch seen on answers ([`EPOCH_HEADER`]), shared with
    /// whoever else needs it (an agent's guard); an answer of an older epoch is not
    /// taken, the next controller is asked.
    seen_epoch: Option<Arc<AtomicI64>>,
    /// The epoch sent with every request (a controller's orders to its agents).
    epoch: Option<i64>,
}

impl Client {
    /// A client for the server listening on `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Client {
            socket: socket.into(),
            signer: None,
            timeout: None,
            others: Vec::new(),
            preferred: Arc::default(),
            patience: None,
            seen_epoch: None,
            epoch: None,
        }
    }

    /// A client for the active one of the controllers at `addrs` (`host:port`, the
    /// primary first, as `SlurmctldHost` lists them), whose requests `signer` signs.
    /// Each request goes to the controller that answered last, else to each in order:
    /// one that cannot be reached, that stands by ([`ErrorCode::InStandby`]) or that
    /// answers with an older fencing epoch than one already seen is passed over. A
    /// request is sent again to the next only when nothing of it can have been done
    /// there (no connection, or the standby's refusal), or when it is a `GET`; so a
    /// submission is never made twice. `patience` bounds how long rounds are made
    /// while none is active (Slurm's commands wait for a takeover the same way).
    ///
    /// [`ErrorCode::InStandby`]: crate::error::ErrorCode::InStandby
    pub fn controllers(addrs: &[String], signer: Signer, patience: Option<Duration>) -> Self {
        let mut c = Self::signed(addrs.first().map_or("", String::as_str), signer);
        c.others = addrs.iter().skip(1).map(PathBuf::from).collect();
        c.patience = patience;
        c.seen_epoch = Some(Arc::default());
        c
    }

    /// This client, recording the newest fencing epoch its answers carry in `seen`
    /// (shared), and passing over answers of an older one.
    pub fn with_seen_epoch(mut self, seen: Arc<AtomicI64>) -> Self {
        self.seen_epoch = Some(seen);
        self
    }

    /// This client, sending `epoch` with every request ([`EPOCH_HEADER`]).
    pub fn with_epoch(mut self, epoch: Option<i64>) -> Self {
        self.epoch = epoch;
        self
    }

    /// The addresses asked, in order: `socket`, then the backups.
    pub fn addresses(&self) -> Vec<PathBuf> {
        std::iter::once(self.socket.clone())
            .chain(self.others.iter().cloned())
            .collect()
    }

    /// A client for a TCP listener at `addr` (`host:port`), signing each request for
    /// this process's real uid and gid with the cluster `key`.
    pub fn tcp(addr: &str, key: Vec<u8>) -> Self {
        Self::signed(addr, Signer::Key(Arc::new(key)))
    }

    /// A client for a TCP listener at `addr` (`host:port`) whose requests `signer` signs.
    pub fn signed(addr: &str, signer: Signer) -> Self {
        Client {
            signer: Some(signer),
            ..Self::new(addr)
        }
    }

    /// A client for `endpoint`: a Unix socket when it is a path (starts with `/`), else
    /// a TCP `host:port` whose requests `signer` signs.
    pub fn endpoint(endpoint: &str, signer: &Signer) -> Self {
        if endpoint.starts_with('/') {
            Self::new(endpoint)
        } else {
            Self::signed(endpoint, signer.clone())
        }
    }

    /// This client, waiting at most `timeout` for each read and write (and for a TCP
    /// connection to be made).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether requests go over TCP.
    pub fn is_tcp(&self) -> bool {
        self.signer.is_some()
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `GET path`, decoding a JSON reply.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let body = self.request("GET", path, None)?;
        decode(&body)
    }

    /// `GET path`, the reply as text (the metrics endpoints answer `text/plain`).
    pub fn get_text(&self, path: &str) -> Result<String, ClientError> {
        let body = self.request("GET", path, None)?;
        String::from_utf8(body).map_err(|e| ClientError::Decode(e.to_string()))
    }

    /// `POST path` with a JSON body, decoding a JSON reply.
    pub fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let json = serde_json::to_vec(body).map_err(|e| ClientError::Decode(e.to_string()))?;
        let reply = self.request("POST", path, Some(&json))?;
        decode(&reply)
    }

    /// `POST path` with a JSON body; the reply is a stream of JSON lines, returned as a
    /// reader positioned at the start of the body.
    pub fn post_stream<B: Serialize>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Box<dyn BufRead + Send>, ClientError> {
        let json = serde_json::to_vec(body).map_err(|e| ClientError::Decode(e.to_string()))?;
        let (status, headers, reader) = self.send("POST", path, Some(&json))?;
        let mut body = body_reader(&headers, reader);
        if !(200..300).contains(&status) {
            let mut buf = Vec::new();
            body.read_to_end(&mut buf)?;
            return Err(status_error(status, &buf));
        }
        Ok(Box::new(BufReader::new(body)))
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Vec<u8>, ClientError> {
        let (status, headers, reader) = self.send(method, path, body)?;
        let mut buf = Vec::new();
        body_reader(&headers, reader).read_to_end(&mut buf)?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, &buf));
        }
        Ok(buf)
    }

    fn send(&self, method: &str, path: &str, body: Option<&[u8]>) -> Result<Response, ClientError> {
        if self.others.is_empty() && self.seen_epoch.is_none() {
            return self.send_to(&self.socket, method, path, body);
        }
        let addrs = self.addresses();
        let deadline = self.patience.map(|p| Instant::now() + p);
        let mut delay = Duration::from_millis(100);
        loop {
            let first = self.preferred.load(Ordering::Relaxed).min(addrs.len() - 1);
            let mut last = None;
            for i in (first..addrs.len()).chain(0..first) {
                match self.send_to(&addrs[i], method, path, body) {
                    Ok((status, headers, reader)) => {
                        let epoch = headers
                            .iter()
                            .find(|(k, _)| k == EPOCH_HEADER)
                            .and_then(|(_, v)| v.parse::<i64>().ok());
                        if let (Some(seen), Some(e)) = (&self.seen_epoch, epoch) {
                            let newest = seen.fetch_max(e, Ordering::Relaxed);
                            if e < newest {
                                last = Some(ClientError::Status {
                                    status: 409,
                                    code: crate::error::ErrorCode::Fenced,
                                    message: format!(
                                        "{} is a former controller (epoch {e}, {newest} seen)",
                                        addrs[i].display()
                                    ),
                                });
                                continue;
                            }
                        }
                        if status == 503 && headers.iter().any(|(k, _)| k == STANDBY_HEADER) {
                            last = Some(ClientError::Status {
                                status,
                                code: crate::error::ErrorCode::InStandby,
                                message: "Controller is in standby mode".into(),
                            });
                            continue;
                        }
                        self.preferred.store(i, Ordering::Relaxed);
                        return Ok((status, headers, reader));
                    }
                    // Nothing reached that controller: the next may be the active one.
                    Err(e @ ClientError::Connect { .. }) => last = Some(e),
                    // Sent, and the connection broke: asking again is safe for a read
                    // only (a submission might have been made).
                    Err(e @ (ClientError::Io(_) | ClientError::Decode(_))) if method == "GET" => {
                        last = Some(e)
                    }
                    Err(e) => return Err(e),
                }
            }
            let last = last.expect("at least one controller");
            match deadline {
                Some(d) if Instant::now() + delay < d => {
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                _ => return Err(last),
            }
        }
    }

    /// One request to the server at `socket`.
    fn send_to(
        &self,
        socket: &Path,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, ClientError> {
        let connect_error = |source| ClientError::Connect {
            socket: socket.to_path_buf(),
            source,
        };
        let body = body.unwrap_or(&[]);
        let mut auth = String::new();
        let mut stream: Box<dyn Conn> = match &self.signer {
            None => {
                let stream = UnixStream::connect(socket).map_err(connect_error)?;
                stream.set_read_timeout(self.timeout)?;
                stream.set_write_timeout(self.timeout)?;
                Box::new(stream)
            }
            Some(signer) => {
                // The credential first: without one nothing is sent.
                auth = signer.header(method, path, body)?;
                let addr = socket.to_string_lossy();
                let most = if self.others.is_empty() {
                    CONNECT_TIMEOUT
                } else {
                    FAILOVER_CONNECT_TIMEOUT
                };
                let limit = self.timeout.map_or(most, |t| t.min(most));
                let stream = connect_tcp(&addr, limit).map_err(connect_error)?;
                let _ = stream.set_nodelay(true);
                stream.set_read_timeout(self.timeout)?;
                stream.set_write_timeout(self.timeout)?;
                Box::new(stream)
            }
        };
        if let Some(e) = self.epoch {
            auth.push_str(&format!("{EPOCH_HEADER}: {e}\r\n"));
        }
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| ClientError::Decode(format!("bad status line: {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err(ClientError::Decode("connection closed in headers".into()));
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        Ok((status, headers, reader))
    }
}

/// Connects to `addr` (`host:port`, the host a name or an address), trying each address
/// it resolves to for at most `limit`.
fn connect_tcp(addr: &str, limit: Duration) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = None;
    for a in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, limit) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{addr}: no address found"),
        )
    }))
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, ClientError> {
    serde_json::from_slice(body)
        .map_err(|e| ClientError::Decode(format!("{e}: {}", String::from_utf8_lossy(body))))
}

fn status_error(status: u16, body: &[u8]) -> ClientError {
    let (message, code) = match serde_json::from_slice::<ErrorReply>(body) {
        Ok(r) => (r.error, r.code),
        Err(_) => (String::from_utf8_lossy(body).into_owned(), None),
    };
    let code = code.unwrap_or_else(|| crate::error::ErrorCode::from_http_status(status));
    ClientError::Status {
        status,
        code,
        message,
    }
}

fn body_reader(
    headers: &[(String, String)],
    reader: BufReader<Box<dyn Conn>>,
) -> Box<dyn Read + Send> {
    let header = |k: &str| {
        headers
            .iter()
            .find(|(h, _)| h == k)
            .map(|(_, v)| v.as_str())
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        Box::new(Chunked {
            inner: reader,
            left: 0,
            done: false,
        })
    } else if let Some(n) = header("content-length").and_then(|v| v.parse::<u64>().ok()) {
        Box::new(reader.take(n))
    } else {
        Box::new(reader)
    }
}

/// Decodes a chunked body.
struct Chunked {
    inner: BufReader<Box<dyn Conn>>,
    left: usize,
    done: bool,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(size, 16).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, "bad chunk size")
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "chunk cut short",
            ));
        }
        self.left -= n;
        if self.left == 0 {
            let mut crlf = [0u8; 2];
            self.inner.read_exact(&mut crlf)?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::atomic::AtomicU32;

    /// A server on a free port answering every request with `reply` (`None`: closing
    /// the connection once the request is read); its address and how many requests it
    /// read.
    fn server(reply: Option<&'static str>) -> (String, Arc<AtomicU32>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let hits = Arc::new(AtomicU32::new(0));
        let count = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                count.fetch_add(1, Ordering::SeqCst);
                if let Some(reply) = reply {
                    let _ = s.write_all(reply.as_bytes());
                }
            }
        });
        (addr, hits)
    }

    /// A port nobody listens on.
    fn closed() -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }

    const STANDBY: &str = "HTTP/1.1 503 Service Unavailable\r\nx-sluice-standby: 1\r\n\
        Content-Length: 61\r\n\r\n{\"error\":\"Controller is in standby mode\",\"code\":\"in_standby\"}";
    const ACTIVE_7: &str =
        "HTTP/1.1 200 OK\r\nx-sluice-epoch: 7\r\nContent-Length: 10\r\n\r\n{\"who\":7 }";
    const FORMER_5: &str =
        "HTTP/1.1 200 OK\r\nx-sluice-epoch: 5\r\nContent-Length: 10\r\n\r\n{\"who\":5 }";

    fn key() -> Signer {
        Signer::Key(Arc::new(vec![1; 32]))
    }

    #[test]
    fn the_active_controller_answers_past_one_gone_and_one_standing_by() {
        let gone = closed();
        let (standby, standby_hits) = server(Some(STANDBY));
        let (active, active_hits) = server(Some(ACTIVE_7));
        let c = Client::controllers(&[gone, standby, active], key(), None);
        let v: serde_json::Value = c.get("/v1/ping").unwrap();
        assert_eq!(v["who"], 7);
        assert_eq!(standby_hits.load(Ordering::SeqCst), 1);
        // The one that answered is asked first next time.
        let v: serde_json::Value = c.post("/v1/jobs", &serde_json::json!({})).unwrap();
        assert_eq!(v["who"], 7);
        assert_eq!(standby_hits.load(Ordering::SeqCst), 1);
        assert_eq!(active_hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_former_controllers_answer_is_passed_over_and_a_submission_is_never_sent_twice() {
        let (former, _) = server(Some(FORMER_5));
        let (active, active_hits) = server(Some(ACTIVE_7));
        let seen = Arc::new(AtomicI64::new(7));
        let c = Client::controllers(&[former.clone(), active.clone()], key(), None)
            .with_seen_epoch(seen.clone());
        let v: serde_json::Value = c.get("/v1/ping").unwrap();
        assert_eq!(v["who"], 7, "the epoch-5 answer is a former controller's");
        // A controller that took the request and broke the connection may have
        // carried it out: a POST is not sent to the next one, a GET is.
        let (broken, broken_hits) = server(None);
        let c = Client::controllers(&[broken, active], key(), None);
        let e = c
            .post::<_, serde_json::Value>("/v1/jobs", &serde_json::json!({}))
            .unwrap_err();
        assert!(
            matches!(e, ClientError::Decode(_) | ClientError::Io(_)),
            "{e:?}"
        );
        assert_eq!(broken_hits.load(Ordering::SeqCst), 1);
        assert_eq!(active_hits.load(Ordering::SeqCst), 1, "not sent again");
        let v: serde_json::Value = c.get("/v1/ping").unwrap();
        assert_eq!(v["who"], 7);
        assert_eq!(active_hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn with_patience_a_command_waits_for_a_takeover() {
        let gone = closed();
        let (standby, hits) = server(Some(STANDBY));
        let c = Client::controllers(&[gone, standby], key(), Some(Duration::from_millis(700)));
        match c.get::<serde_json::Value>("/v1/ping") {
            Err(ClientError::Status { code, .. }) => {
                assert_eq!(code, crate::error::ErrorCode::InStandby)
            }
            other => panic!("{other:?}"),
        }
        assert!(
            hits.load(Ordering::SeqCst) >= 3,
            "asked again while waiting"
        );
    }
}
