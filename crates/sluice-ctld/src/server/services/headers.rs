//! The headers a forwarded request and its answer carry: the client's own, less the
//! hop-by-hop ones (RFC 9110 §7.6.1) and the credentials meant for the controller,
//! with `Host` set to the service's and the `X-Forwarded-*` headers added.

use std::net::IpAddr;

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Headers that concern one connection only, never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Credentials for the controller (the cluster key's, Slurm's tokens): a service never
/// sees them.
const CONTROLLER_CREDENTIALS: &[&str] = &[
    sluice_proto::auth::AUTH_HEADER,
    "x-slurm-user-token",
    "x-slurm-user-name",
];

/// Whether `h` asks to switch protocols (a WebSocket): `Connection: upgrade` and an
/// `Upgrade` header.
pub fn is_upgrade(h: &HeaderMap) -> bool {
    h.contains_key(header::UPGRADE) && connection_names(h).any(|n| n == "upgrade")
}

/// The names the `Connection` headers list, lowercase.
fn connection_names(h: &HeaderMap) -> impl Iterator<Item = String> + '_ {
    h.get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
}

/// `h` less its hop-by-hop headers (those named and those its `Connection` lists);
/// an upgrade keeps `Connection: upgrade` and its `Upgrade`.
fn end_to_end(h: &mut HeaderMap) {
    let upgrade = is_upgrade(h);
    let upgrade_to = h.get(header::UPGRADE).cloned();
    let listed: Vec<String> = connection_names(h).collect();
    for name in HOP_BY_HOP.iter().copied().map(str::to_string).chain(listed) {
        h.remove(name.as_str());
    }
    if let (true, Some(to)) = (upgrade, upgrade_to) {
        h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        h.insert(header::UPGRADE, to);
    }
}

/// The headers of a request forwarded to `authority` (`host:port`) under `prefix`
/// (`/services/NAME`), from the client at `client`.
pub fn to_service(
    mut h: HeaderMap,
    client: Option<IpAddr>,
    authority: &str,
    prefix: &str,
) -> HeaderMap {
    end_to_end(&mut h);
    for name in CONTROLLER_CREDENTIALS {
        h.remove(*name);
    }
    let original_host = h.remove(header::HOST);
    if let Ok(v) = HeaderValue::from_str(authority) {
        h.insert(header::HOST, v);
    }
    if let Some(ip) = client {
        let xff = HeaderName::from_static("x-forwarded-for");
        let chain = match h.get(&xff).and_then(|v| v.to_str().ok()) {
            Some(before) => format!("{before}, {ip}"),
            None => ip.to_string(),
        };
        if let Ok(v) = HeaderValue::from_str(&chain) {
            h.insert(xff, v);
        }
    }
    if let Some(host) = original_host {
        h.insert(HeaderName::from_static("x-forwarded-host"), host);
    }
    h.insert(
        HeaderName::from_static("x-forwarded-proto"),
        HeaderValue::from_static("http"),
    );
    if let Ok(v) = HeaderValue::from_str(prefix) {
        h.insert(HeaderName::from_static("x-forwarded-prefix"), v);
    }
    h
}

/// The headers of the service's answer as the client gets them.
pub fn to_client(mut h: HeaderMap) -> HeaderMap {
    end_to_end(&mut h);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn pairs(h: &HeaderMap) -> Vec<(String, String)> {
        let mut v: Vec<_> = h
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        v.sort();
        v
    }

    fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn a_request_keeps_its_own_headers_and_gets_the_forwarded_ones() {
        let h = headers(&[
            ("Host", "head01:6817"),
            ("Authorization", "Bearer sk-abc"),
            ("Content-Type", "application/json"),
            ("Content-Length", "12"),
            ("Accept", "text/event-stream"),
            ("Connection", "keep-alive, X-Private"),
            ("Keep-Alive", "timeout=5"),
            ("X-Private", "hop"),
            ("TE", "trailers"),
            ("X-Forwarded-For", "10.1.1.1"),
            ("X-SLURM-USER-TOKEN", "eyJ..."),
            ("X-SLURM-USER-NAME", "alice"),
            ("x-sluice-auth", "0:0:1:2:abc"),
        ]);
        let out = to_service(
            h,
            Some("192.168.7.9".parse().unwrap()),
            "10.0.0.2:8000",
            "/services/llm",
        );
        assert_eq!(
            pairs(&out),
            owned(&[
                ("accept", "text/event-stream"),
                ("authorization", "Bearer sk-abc"),
                ("content-length", "12"),
                ("content-type", "application/json"),
                ("host", "10.0.0.2:8000"),
                ("x-forwarded-for", "10.1.1.1, 192.168.7.9"),
                ("x-forwarded-host", "head01:6817"),
                ("x-forwarded-prefix", "/services/llm"),
                ("x-forwarded-proto", "http"),
            ])
        );
    }

    #[test]
    fn a_websocket_upgrade_keeps_its_upgrade_headers() {
        let h = headers(&[
            ("Host", "head01:6817"),
            ("Connection", "keep-alive, Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13"),
        ]);
        assert!(is_upgrade(&h));
        let out = to_service(h, None, "127.0.0.1:8000", "/services/nb");
        assert_eq!(
            pairs(&out),
            owned(&[
                ("connection", "upgrade"),
                ("host", "127.0.0.1:8000"),
                ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("sec-websocket-version", "13"),
                ("upgrade", "websocket"),
                ("x-forwarded-host", "head01:6817"),
                ("x-forwarded-prefix", "/services/nb"),
                ("x-forwarded-proto", "http"),
            ])
        );
        // `Upgrade` without `Connection: upgrade` is no upgrade, and goes.
        let h = headers(&[("Upgrade", "websocket")]);
        assert!(!is_upgrade(&h));
        assert!(to_client(h).is_empty());
    }

    #[test]
    fn an_answer_loses_its_hop_by_hop_headers_only() {
        let h = headers(&[
            ("Content-Type", "text/event-stream"),
            ("Transfer-Encoding", "chunked"),
            ("Connection", "close"),
            ("Cache-Control", "no-cache"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ]);
        assert_eq!(
            pairs(&to_client(h)),
            owned(&[
                ("cache-control", "no-cache"),
                ("content-type", "text/event-stream"),
                ("set-cookie", "a=1"),
                ("set-cookie", "b=2"),
            ])
        );
    }
}
