//! One forwarded exchange: a connection to the service's port on its node, the
//! request sent on it, the answer back, bodies streamed both ways as they come (an
//! answer streamed token by token reaches the client token by token), and an upgrade
//! (a WebSocket) joined end to end once the service accepts it.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::headers;

/// A connection to `host:port`, or `None` when it is refused or not made within
/// `within`: the service is restarting, moving, or its node is not answering.
pub async fn connect(host: &str, port: u16, within: Duration) -> Option<TcpStream> {
    match tokio::time::timeout(within, TcpStream::connect((host, port))).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Some(s)
        }
        _ => None,
    }
}

/// Sends `req` (its target, headers and body already the service's) on `stream`, and
/// gives the service's answer with the client's headers. An accepted upgrade joins
/// the client's connection to the service's until either closes.
///
/// Errors: the service closed the connection or answered no HTTP.
pub async fn exchange(
    stream: TcpStream,
    mut req: Request<Body>,
) -> Result<Response<Body>, hyper::Error> {
    let client_side = headers::is_upgrade(req.headers()).then(|| hyper::upgrade::on(&mut req));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!("service connection: {e}");
        }
    });
    let mut resp = sender.send_request(req).await?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_side) = client_side {
            let service_side = hyper::upgrade::on(&mut resp);
            tokio::spawn(async move {
                let (Ok(client), Ok(service)) = (client_side.await, service_side.await) else {
                    return;
                };
                let (mut a, mut b) = (TokioIo::new(client), TokioIo::new(service));
                let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
            });
        }
    }
    let (mut parts, body) = resp.into_parts();
    parts.headers = headers::to_client(std::mem::take(&mut parts.headers));
    Ok(Response::from_parts(parts, Body::new(body)))
}
