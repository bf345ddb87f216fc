//! Service jobs on the agent (`sluice_proto::service`): the supervisor runs a service's
//! batch script again in place when it exits as its restart policy says, or when its
//! health check fails `retries` times in a row (`run.rs`'s `batch`), after a backoff
//! (1 s doubling to 30 s, back to 1 s after a process that ran a minute) and up to its
//! cap; each restart and each change of health is
//! reported to the controller by the watching agent (`supervisors.rs`).
//!
//! Here: the health check's bookkeeping ([`Checks`]) and its HTTP probe.

use std::time::Duration;

use sluice_proto::service::Health;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A health check's failures in a row, and the health they make.
#[derive(Debug, Default)]
pub(crate) struct Checks {
    fails: u32,
    health: Health,
}

impl Checks {
    /// Takes one probe's answer; true when the service must be restarted now
    /// (`retries` failures in a row).
    pub(crate) fn record(&mut self, ok: bool, retries: u32) -> bool {
        if ok {
            self.fails = 0;
            self.health = Health::Healthy;
            return false;
        }
        self.fails += 1;
        // A service not yet healthy stays `starting` until the threshold.
        if self.health == Health::Healthy {
            self.health = Health::Unhealthy;
        }
        if self.fails >= retries {
            self.health = Health::Unhealthy;
            return true;
        }
        false
    }

    /// Its health now.
    pub(crate) fn health(&self) -> Health {
        self.health
    }
}

/// An HTTP GET of `path` on this node's `port`: true on a 2xx answer within `limit`.
pub(crate) async fn http_ok(port: u16, path: &str, limit: Duration) -> bool {
    let ask = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        let req =
            format!("GET {path} HTTP/1.0\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut head = [0u8; 16];
        let mut got = 0;
        while got < 12 {
            let n = s.read(&mut head[got..]).await.ok()?;
            if n == 0 {
                break;
            }
            got += n;
        }
        let line = std::str::from_utf8(&head[..got]).ok()?;
        // `HTTP/1.x 2xx`
        let code = line.split_whitespace().nth(1)?;
        Some(code.len() == 3 && code.starts_with('2'))
    };
    tokio::time::timeout(limit, ask)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_restarted_after_retries_failures_in_a_row_only() {
        let mut c = Checks::default();
        assert_eq!(c.health(), Health::Starting);
        assert!(!c.record(false, 3));
        assert_eq!(c.health(), Health::Starting);
        assert!(!c.record(true, 3));
        assert_eq!(c.health(), Health::Healthy);
        assert!(!c.record(false, 3));
        assert_eq!(c.health(), Health::Unhealthy);
        assert!(!c.record(false, 3));
        assert!(!c.record(true, 3)); // the run of failures is broken
        assert!(!c.record(false, 3));
        assert!(!c.record(false, 3));
        assert!(c.record(false, 3));
        assert_eq!(c.health(), Health::Unhealthy);
    }

    #[tokio::test]
    async fn the_http_probe_wants_a_2xx_answer() {
        let serve = |status: &'static str| async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            tokio::spawn(async move {
                while let Ok((mut s, _)) = l.accept().await {
                    let mut buf = [0u8; 512];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(format!("HTTP/1.0 {status}\r\n\r\n").as_bytes())
                        .await;
                }
            });
            port
        };
        let ok = serve("200 OK").await;
        let bad = serve("503 Service Unavailable").await;
        assert!(http_ok(ok, "/health", Duration::from_secs(2)).await);
        assert!(!http_ok(bad, "/health", Duration::from_secs(2)).await);
        // Nobody listening.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = l.local_addr().unwrap().port();
        drop(l);
        assert!(!http_ok(closed, "/health", Duration::from_secs(2)).await);
    }
}
