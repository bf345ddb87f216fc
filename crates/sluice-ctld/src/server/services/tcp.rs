//! The plain TCP forward (sluice.conf's `ServiceTcpPorts`): on each port of the range,
//! the controller's host accepts connections and joins each, byte for byte, to the
//! service that declared that port, where it runs now (held up to [`super::HOLD`]
//! while it runs nowhere or does not answer; closed if it does not come back). For
//! what HTTP alone does not carry (gRPC over HTTP/2, a database's protocol).

use std::net::IpAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::reach;
use crate::server::App;

/// Listens on every port of `first..=last` at `ip` until `stop` changes; a port that
/// cannot be bound is skipped with a warning.
pub(in crate::server) async fn serve_tcp_ports(
    app: App,
    ip: IpAddr,
    (first, last): (u16, u16),
    stop: watch::Receiver<bool>,
) {
    let mut bound = 0;
    for port in first..=last {
        let listener = match TcpListener::bind((ip, port)).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("ServiceTcpPorts: cannot listen on {ip}:{port}: {e}");
                continue;
            }
        };
        bound += 1;
        tokio::spawn(accept(app.clone(), listener, port, stop.clone()));
    }
    tracing::info!("slurmctld: forwarding TCP to services on {bound} ports ({first}-{last})");
}

async fn accept(app: App, listener: TcpListener, port: u16, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => {
                if let Ok((client, _)) = accepted {
                    tokio::spawn(join(app.clone(), client, port));
                }
            }
        }
    }
}

/// Joins `client` to the service on `port`, or closes it.
async fn join(app: App, mut client: TcpStream, port: u16) {
    let Some((to, mut service)) = reach(&app, |l| l.service_on_port(port)).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut service).await {
        tracing::debug!("TCP to service port {port} (job {}): {e}", to.job);
    }
}
